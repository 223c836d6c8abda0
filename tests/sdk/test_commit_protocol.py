"""A kill at every step of a checkpoint commit leaves the old or the new set, never less.

A child saves one checkpoint and SIGKILLs itself just before its K-th file-system call,
for K = 1, 2, ... until a save finishes; after each kill a fresh CheckpointManager must
find exactly the old set of checkpoints or the new one, with their own bytes, and once
the new set has appeared (the commit point), every later kill must keep it.
"""

import os
import signal
import unittest

import sdk_test_util
from sdk_test_util import versioned_payload
from trainyard import CheckpointManager


class CommitProtocolKillTest(unittest.TestCase):
    def check_every_kill_point(self, keep_last, new_step, mode):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        old_steps = [1, 2][-keep_last:]
        new_steps = sorted(set(old_steps + [new_step]))[-keep_last:]
        committed_at = None
        kill_at = 0
        while True:
            kill_at += 1
            self.assertLess(kill_at, 200, "the save never finished")
            directory = os.path.join(tmp.path, "k%d" % kill_at)
            setup = CheckpointManager(directory, keep_last=keep_last)
            for step in (1, 2):
                setup.save(step, versioned_payload(step, 1))
            child = sdk_test_util.start_child(
                "commit_kill_child.py",
                [directory, keep_last, new_step, 2, kill_at, mode], sdk_test_util.child_env())
            out, err = child.communicate(timeout=60)
            finished = child.returncode == 0
            if not finished:
                self.assertEqual(child.returncode, -signal.SIGKILL, err)
            where = "keep_last=%d step=%d %s, killed before call %d" % (
                keep_last, new_step, mode, kill_at)
            mgr = CheckpointManager(directory, keep_last=keep_last)
            steps = mgr.steps()
            # A kill after the commit but before pruning may leave older steps beyond
            # keep_last: those are still the committed ones, and the next save prunes them.
            if (self.holds(mgr, new_step, 2) and set(new_steps) <= set(steps)
                    and set(steps) <= set(old_steps + [new_step])):
                for step in set(steps) - {new_step}:
                    self.assertTrue(self.holds(mgr, step, 1), where + ": step %d lost" % step)
                committed_at = committed_at or kill_at
            else:
                self.assertEqual(steps, old_steps, where + ": neither the old nor the new set")
                for step in old_steps:
                    self.assertTrue(self.holds(mgr, step, 1), where + ": step %d lost" % step)
                self.assertIsNone(committed_at, where + ": back to the old set after the "
                                  "new one appeared at call %s" % committed_at)
            latest = mgr.latest()
            self.assertIsNotNone(latest, where + ": no loadable checkpoint")
            self.assertEqual(sorted(os.listdir(directory)),
                             ["step-%d" % s for s in sorted(steps)], where + ": leftovers")
            if finished:
                self.assertEqual(committed_at is not None, True, where)
                self.assertGreater(kill_at, 5, where + ": too few kill points")
                return

    def holds(self, mgr, step, version):
        ck = mgr.get(step)
        return ck is not None and ck.read_all() == versioned_payload(step, version)

    def test_resaving_a_step_keep_last_1(self):
        for mode in ("exchange", "plain"):
            with self.subTest(mode=mode):
                self.check_every_kill_point(1, 2, mode)

    def test_resaving_a_step_keep_last_2(self):
        for mode in ("exchange", "plain"):
            with self.subTest(mode=mode):
                self.check_every_kill_point(2, 2, mode)

    def test_saving_a_new_step_keep_last_1(self):
        for mode in ("exchange", "plain"):
            with self.subTest(mode=mode):
                self.check_every_kill_point(1, 3, mode)

    def test_saving_a_new_step_keep_last_2(self):
        for mode in ("exchange", "plain"):
            with self.subTest(mode=mode):
                self.check_every_kill_point(2, 3, mode)


if __name__ == "__main__":
    unittest.main()
