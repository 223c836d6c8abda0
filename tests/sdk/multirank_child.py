"""Child of the multi-rank checkpoint tests: one rank of a job, in its own process.

    multirank_child.py kill DIR WORLD RANK ATTEMPT KEEP STEP KILL_AT
        saves its shard of STEP and SIGKILLs itself just before the KILL_AT-th
        file-system call of the save (rename, fsync, unlink, rmdir, mkdir); prints
        "done N" when the save finished first.
    multirank_child.py loop DIR WORLD RANK ATTEMPT KEEP [background]
        resumes from latest() (prints "start STEP ATTEMPT", or "bad ..." when its shard
        is not what was saved), then saves step after step until killed ("saved N").

Shard contents are shard_payload(rank, step, attempt): the test can tell which attempt
wrote each shard of a committed step.
"""

import os
import signal
import sys

import sdk_test_util
from trainyard import CheckpointManager
from trainyard import checkpoint as ckpt_module

calls = 0


def shard_payload(rank, step, attempt):
    files = sdk_test_util.payload(step * 10 + rank)
    files["who"] = b"rank %d step %d attempt %d" % (rank, step, attempt)
    return files


def open_manager(args):
    directory, world, rank, attempt, keep = args[:5]
    return CheckpointManager(directory, keep_last=int(keep), sharded=True, rank=int(rank),
                             world_size=int(world), attempt=int(attempt))


def kill_mode(args):
    mgr = open_manager(args)
    step, kill_at = int(args[5]), int(args[6])

    def wrap(owner, name):
        real = getattr(owner, name)

        def faulty(*a, **kw):
            global calls
            calls += 1
            if calls == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*a, **kw)
        setattr(owner, name, faulty)

    for name in ("rename", "replace", "fsync", "unlink", "rmdir", "mkdir"):
        wrap(os, name)
    mgr.save(step, shard_payload(mgr.rank, step, mgr.attempt))
    print("done %d" % calls, flush=True)


def loop_mode(args):
    mgr = open_manager(args)
    background = len(args) > 5 and args[5] == "background"
    ck = mgr.latest()
    if ck is None:
        step = 0
        print("start 0 0", flush=True)
    else:
        step = ck.step
        got = ck.read_all()
        attempt = int(got["who"].split()[-1])
        want = shard_payload(mgr.rank, step, attempt)
        print(("start %d %d" % (step, attempt)) if got == want else "bad shard of step %d"
              % step, flush=True)
    while True:
        step += 1
        mgr.save(step, shard_payload(mgr.rank, step, mgr.attempt), background=background)
        if background:
            mgr.wait()
        sys.stdout.write("saved %d\n" % step)  # one write: a kill cannot split the line
        sys.stdout.flush()


if __name__ == "__main__":
    {"kill": kill_mode, "loop": loop_mode}[sys.argv[1]](sys.argv[2:])
