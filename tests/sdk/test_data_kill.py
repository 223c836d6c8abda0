"""Mid-epoch resume through real kills: a loop over trainyard.data is SIGKILLed at random
moments (every third time after a SIGTERM notice to its process group, with a random
grace period), resumes from its newest checkpoint, and every step of every run must
train on exactly the samples of the same step of an uninterrupted run.

8 kill points per loader by default; TY_SDK_SOAK=1 runs 50. TY_SDK_SEED fixes the
kill times. The torch loader's case is test_data_torch_kill.py.
"""

import os
import random
import shutil
import signal
import time
import unittest

import data_kill_child
import sdk_test_util
from trainyard import CheckpointManager, data

KILLS = 50 if os.environ.get("TY_SDK_SOAK") == "1" else 8
EPOCHS = 2


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


class KillHarness(unittest.TestCase):
    kills = KILLS

    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.addCleanup(self.tmp.cleanup)
        self.dataset = os.path.join(self.tmp.path, "ds")
        data.write_dataset(self.dataset, (b"s%d" % i for i in range(203)), codec="zlib",
                           shard_bytes=300)

    def run_child(self, ckpt, mode, kill_after=None, notice=False):
        """One run, killed after `kill_after` s if given: ({step: samples}, finished, worker pids)."""
        latest = CheckpointManager(ckpt, keep_last=2).latest()
        start = latest.step if latest is not None else 0
        child = sdk_test_util.start_child("data_kill_child.py",
                                          [self.dataset, ckpt, mode, EPOCHS],
                                          sdk_test_util.child_env(), start_new_session=True)
        try:
            first = child.stdout.readline()
            if first.strip() != "resumed %d" % start:  # stderr only now: reading it waits
                self.fail("expected 'resumed %d', got %r: %s" % (start, first, child.stderr.read()))
            if kill_after is not None:
                time.sleep(kill_after)
                if notice:  # the server's notice, then SIGKILL at the deadline
                    os.killpg(child.pid, signal.SIGTERM)
                    time.sleep(self.rng.uniform(0.0, 0.05))
                os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate(timeout=60)
        except BaseException:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
        # A notice that lands while a finished run shuts down (handlers reset) ends it.
        finished = (-signal.SIGTERM,) if "\ndone " in out else ()
        self.assertIn(child.returncode, (0, 75, -signal.SIGKILL) + finished, err)
        lines = out.split("\n")[:-1]  # a kill may cut the last line short
        steps = {}
        pids = []
        for line in lines:
            parts = line.split()
            if parts[0] == "step":
                steps[int(parts[1])] = parts[2]
            elif parts[0] == "workers":
                pids = [int(p) for p in parts[1:]]
        if steps:
            self.assertEqual(min(steps), start + 1, "did not resume after step %d" % start)
        return steps, "done" in out, pids

    def run_kills(self, mode, run_s):
        self.rng = random.Random(int(os.environ.get("TY_SDK_SEED", "0")) or None)
        ckpt = os.path.join(self.tmp.path, "ckpt-" + mode)
        reference, done, _ = self.run_child(ckpt, mode)  # uninterrupted
        self.assertTrue(done)
        shutil.rmtree(ckpt)
        self.assertEqual(len(reference), max(reference))
        mid_epoch = 0
        for kill in range(self.kills):
            steps, done, pids = self.run_child(ckpt, mode, self.rng.uniform(0.0, run_s),
                                               notice=kill % 3 == 2)
            for step, samples in steps.items():
                self.assertEqual(samples, reference[step], "kill %d, step %d" % (kill, step))
            if steps and max(steps) % (len(reference) // EPOCHS):
                mid_epoch += 1
            deadline = time.monotonic() + 5
            while any(_alive(p) for p in pids) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertFalse([p for p in pids if _alive(p)], "loader workers outlived kill %d"
                             % kill)
            if done:  # finished before the kill: start a new run
                shutil.rmtree(ckpt)
        steps, done, _ = self.run_child(ckpt, mode)  # the run finishes
        self.assertTrue(done)
        for step, samples in steps.items():
            self.assertEqual(samples, reference[step], "final run, step %d" % step)
        print("\n%s: %d kills, %d stopped mid-epoch; every step matched the uninterrupted run"
              % (mode, self.kills, mid_epoch))



class ShardLoaderKillTest(KillHarness):
    def test_shard_loader_resumes_the_same_samples_after_random_kills(self):
        self.run_kills("shards", 0.3)


if __name__ == "__main__":
    unittest.main()
