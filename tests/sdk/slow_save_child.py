"""A loop whose every checkpoint takes SAVE_S seconds to write; driven by test_notice_deadline.py.

It commits step 1 at start (slowly), then runs steps until a notice arrives and saves again,
synchronously, as a contract-following job does: with a grace period shorter than SAVE_S that
second save cannot finish before the deadline.
"""

import logging
import sys
import time

import trainyard

SAVE_S = float(sys.argv[1])


def writer_for(step):
    def write(tmp_dir):
        with open(tmp_dir + "/state.txt", "w") as f:
            f.write("step %d\n" % step)
        time.sleep(SAVE_S)  # stands in for gigabytes of state
    return write


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    job = trainyard.job()
    mgr = trainyard.CheckpointManager(keep_last=3)
    mgr.save(1, writer_for(1))
    print("saved 1", flush=True)
    step = 1
    while True:
        time.sleep(0.01)
        step += 1
        if job.should_stop():
            print("saving %d" % step, flush=True)
            mgr.save(step, writer_for(step))
            print("saved %d" % step, flush=True)
            job.exit_preempted()


if __name__ == "__main__":
    main()
