"""examples/train/toy_train.py: preempted by SIGTERM it exits 75, and the rerun finishes."""

import os
import signal
import subprocess
import unittest

import sdk_test_util
from trainyard import CheckpointManager

SCRIPT = os.path.join(sdk_test_util.REPO, "examples", "train", "toy_train.py")


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): example not run")
class ToyTrainExampleTest(unittest.TestCase):
    def test_preempt_and_resume(self):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        env = sdk_test_util.child_env(TRAINYARD_JOB_ID=5, TRAINYARD_ATTEMPT=1,
                                      TRAINYARD_CHECKPOINT_DIR=os.path.join(tmp.path, "ckpt"),
                                      TRAINYARD_RUN_DIR=tmp.path)
        args = [sdk_test_util.PYTHON, SCRIPT, "--steps", "400", "--step-delay", "0.005"]
        child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
        for line in child.stdout:
            if line.startswith("step 100 "):
                break
        os.killpg(child.pid, signal.SIGTERM)
        out, err = child.communicate(timeout=120)
        self.assertEqual(child.returncode, 75, err)
        stopped = CheckpointManager(os.path.join(tmp.path, "ckpt")).latest().step
        self.assertGreaterEqual(stopped, 100)

        env["TRAINYARD_ATTEMPT"] = "2"
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("attempt 2: starting at step %d of 400" % stopped, done.stdout)
        self.assertIn("done at step 400", done.stdout)
        with open(os.path.join(tmp.path, "metrics.jsonl")) as f:
            self.assertGreaterEqual(sum(1 for _ in f), 400)


if __name__ == "__main__":
    unittest.main()
