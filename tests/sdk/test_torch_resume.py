"""Bitwise-identical resume with PyTorch: preempted at step k, resumed, equals uninterrupted.

Skipped when torch is not importable (install python3-torch).
"""

import os
import unittest

import sdk_test_util

STEPS = 30  # three epochs of 10 steps
# Inside the first epoch, the last step of an epoch (state saved right at the epoch
# boundary), the first step of the next one, mid-epoch later, and twice in one run.
STOPS = [[3], [10], [11], [17], [4, 20]]


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): bitwise resume "
                     "not tested")
class TorchBitwiseResumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = sdk_test_util.TempDir()
        cls.reference = cls.train(os.path.join(cls.tmp.path, "ref"), [])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def train(cls, workdir, stops):
        """Runs to STEPS, preempted at each step in `stops`; returns (loss log, params)."""
        os.makedirs(workdir)
        files = {k: os.path.join(workdir, k) for k in ("ckpt", "log", "out")}
        args = ["--ckpt", files["ckpt"], "--steps", STEPS, "--log", files["log"],
                "--out", files["out"]]
        for attempt, stop in enumerate(stops + [None], start=1):
            env = sdk_test_util.child_env(TRAINYARD_ATTEMPT=attempt)
            child = sdk_test_util.start_child(
                "torch_child.py", args + (["--stop-at", stop] if stop else []), env)
            out, err = child.communicate(timeout=300)
            want = 75 if stop else 0
            if child.returncode != want:
                raise AssertionError("attempt %d (stop at %s) exited %d, want %d:\n%s"
                                     % (attempt, stop, child.returncode, want, err))
        with open(files["log"]) as f:
            log = f.read().splitlines()
        with open(files["out"], "rb") as f:
            return log, f.read()

    def test_reference_run_is_complete(self):
        log, _ = self.reference
        self.assertEqual([int(line.split()[0]) for line in log], list(range(1, STEPS + 1)))

    def test_resume_is_bitwise_identical(self):
        ref_log, ref_params = self.reference
        for stops in STOPS:
            with self.subTest(stops=stops):
                log, params = self.train(
                    os.path.join(self.tmp.path, "stop-" + "-".join(map(str, stops))), stops)
                self.assertEqual(log, ref_log, "per-step losses differ")
                self.assertEqual(params, ref_params, "final parameter bytes differ")


if __name__ == "__main__":
    unittest.main()
