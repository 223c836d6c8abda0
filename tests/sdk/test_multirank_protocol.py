"""A kill at every step of one rank's sharded save: all ranks still agree, and nothing is lost.

Three ranks commit steps 1 and 2. Then one rank saves its shard of step 3 in a child
that SIGKILLs itself just before its K-th file-system call, for K = 1, 2, ... until the
save finishes; either as the last rank (the others saved step 3 before it: its save
completes the step) or as the first (no other rank saved step 3). After each kill the
next attempt opens a manager on every rank: all of them must get the same latest()
step, step 2 or (once it appeared, at every later K) step 3, whose shards all verify and
come from one attempt. Then every rank saves step 3 in the new attempt: step 3 must be
committed from shards of a single attempt, and exactly the newest keep_last steps left.
"""

import json
import os
import shutil
import signal
import tempfile
import unittest

import sdk_test_util
from multirank_child import shard_payload
from trainyard import CheckpointManager

WORLD = 3


def fast_temp_dir():
    """A temporary directory on tmpfs where there is one: the kill points are injected,
    so real fsyncs only cost time here (hundreds of saves per test)."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return tempfile.TemporaryDirectory(prefix="ty-sdk-", dir=shm)
    return tempfile.TemporaryDirectory(prefix="ty-sdk-")


def manager(directory, rank, attempt, keep_last):
    return CheckpointManager(directory, keep_last=keep_last, sharded=True, rank=rank,
                             world_size=WORLD, attempt=attempt)


class MultiRankKillPointTest(unittest.TestCase):
    def check_every_kill_point(self, keep_last, victim, last):
        tmp = fast_temp_dir()
        self.addCleanup(tmp.cleanup)
        committed_at = None
        kill_at = 0
        while True:
            kill_at += 1
            self.assertLess(kill_at, 200, "the save never finished")
            where = "keep_last=%d rank %d saving %s, killed before call %d" % (
                keep_last, victim, "last" if last else "first", kill_at)
            directory = os.path.join(tmp.name, "k%d" % kill_at)
            ranks = [manager(directory, r, 1, keep_last) for r in range(WORLD)]
            for step in (1, 2):
                for r, mgr in enumerate(ranks):
                    mgr.save(step, shard_payload(r, step, 1))
            if last:
                for r, mgr in enumerate(ranks):
                    if r != victim:
                        mgr.save(3, shard_payload(r, 3, 1))
            child = sdk_test_util.start_child(
                "multirank_child.py", ["kill", directory, WORLD, victim, 1, keep_last, 3,
                                       kill_at], sdk_test_util.child_env())
            out, err = child.communicate(timeout=60)
            finished = child.returncode == 0
            if not finished:
                self.assertEqual(child.returncode, -signal.SIGKILL, err)
            # The next attempt: every rank opens the directory and resumes.
            ranks = [manager(directory, r, 2, keep_last) for r in range(WORLD)]
            steps = {mgr.latest().step for mgr in ranks}
            self.assertEqual(len(steps), 1, where + ": ranks disagree: %s" % steps)
            step = steps.pop()
            self.check_committed(ranks, step, where)
            if step == 3:
                self.assertTrue(last, where + ": step 3 without the other ranks' shards")
                committed_at = committed_at or kill_at
            else:
                self.assertEqual(step, 2, where)
                self.assertIsNone(committed_at, where + ": step 3 was committed at call %s "
                                  "and is gone" % committed_at)
            for r, mgr in enumerate(ranks):
                mgr.save(3, shard_payload(r, 3, 2))
            self.assertEqual({mgr.latest().step for mgr in ranks}, {3}, where)
            self.check_committed(ranks, 3, where)
            self.assertEqual(sorted(os.listdir(directory)),
                             ["step-%d" % s for s in [1, 2, 3][-keep_last:]],
                             where + ": leftovers")
            shutil.rmtree(directory)
            if finished:
                self.assertEqual(committed_at is not None, last, where)
                self.assertGreater(kill_at, 8, where + ": too few kill points")
                return

    def check_committed(self, ranks, step, where):
        """Every rank's shard of `step` verifies and holds what one attempt saved."""
        with open(os.path.join(ranks[0].path_for(step), "MANIFEST.json")) as f:
            attempt = json.load(f)["attempt"]
        for r, mgr in enumerate(ranks):
            ck = mgr.get(step)
            self.assertIsNotNone(ck, where)
            self.assertEqual(ck.read_all(), shard_payload(r, step, attempt),
                             where + ": rank %d's shard of step %d" % (r, step))
        for name in os.listdir(ranks[0].path_for(step)):
            self.assertIn(name, ["MANIFEST.json"] + ["rank-%d" % r for r in range(WORLD)],
                          where + ": leftover in step %d" % step)

    def test_last_rank_killed_keep_last_1(self):
        self.check_every_kill_point(1, victim=1, last=True)

    def test_last_rank_killed_keep_last_2(self):
        self.check_every_kill_point(2, victim=2, last=True)

    def test_first_rank_killed_keep_last_1(self):
        self.check_every_kill_point(1, victim=0, last=False)


if __name__ == "__main__":
    unittest.main()
