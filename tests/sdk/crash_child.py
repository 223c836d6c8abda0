"""Saves checkpoints in a loop until killed; the crash-consistency test SIGKILLs it."""

import sys

import sdk_test_util
from trainyard import CheckpointManager


def main():
    mgr = CheckpointManager(sys.argv[1], keep_last=2)
    ck = mgr.latest()
    step = ck.step + 1 if ck else 1
    background = len(sys.argv) > 2 and sys.argv[2] == "background"
    print("ready", flush=True)
    while True:
        mgr.save(step, sdk_test_util.payload(step), background=background)
        if background:
            mgr.wait()
        sys.stdout.write("saved %d\n" % step)  # one write: a kill cannot split the line
        sys.stdout.flush()
        step += 1


if __name__ == "__main__":
    main()
