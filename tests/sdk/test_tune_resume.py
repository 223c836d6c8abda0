"""tune's Trainer across a preemption: stopped in the middle of a gradient
accumulation, saved, resumed in a new process, the parameters end bitwise equal
to an uninterrupted run's (the summed gradients, the position in the
accumulation and the scaler are in the checkpoint).
"""

import os
import unittest

import sdk_test_util

MICRO_BATCHES = 18  # six optimizer steps of 3 micro-batches


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): tune not tested")
class TuneResumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = sdk_test_util.TempDir()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def train(self, name, precision, stops, device="cpu"):
        """Runs to MICRO_BATCHES on `device`, preempted after each micro-batch in `stops`;
        returns the final parameters' safetensors bytes."""
        workdir = os.path.join(self.tmp.path, name)
        os.makedirs(workdir)
        out = os.path.join(workdir, "out")
        args = ["--ckpt", os.path.join(workdir, "ckpt"), "--out", out,
                "--micro-batches", MICRO_BATCHES, "--precision", precision, "--device", device]
        for attempt, stop in enumerate(stops + [None], start=1):
            # cuBLAS is deterministic only with a fixed workspace (CUDA's reproducibility notes).
            env = sdk_test_util.child_env(TRAINYARD_ATTEMPT=attempt,
                                          CUBLAS_WORKSPACE_CONFIG=":4096:8")
            child = sdk_test_util.start_child(
                "tune_resume_child.py", args + (["--stop-at", stop] if stop else []), env)
            _, err = child.communicate(timeout=120)
            want = 75 if stop else 0
            self.assertEqual(child.returncode, want, "attempt %d (stop after micro-batch %s):\n%s"
                             % (attempt, stop, err))
        with open(out, "rb") as f:
            return f.read()

    def test_fp32_resume_mid_accumulation_is_bitwise_identical(self):
        ref = self.train("fp32-ref", "fp32", [])
        # Accumulations of 3: after its 2nd micro-batch; after a 1st, then at an end.
        for stops in ([5], [4, 9]):
            with self.subTest(stops=stops):
                got = self.train("fp32-" + "-".join(map(str, stops)), "fp32", stops)
                self.assertEqual(got, ref, "final parameter bytes differ")

    def test_bf16_autocast_resume_mid_accumulation_is_bitwise_identical(self):
        ref = self.train("bf16-ref", "bf16", [])
        got = self.train("bf16-7", "bf16", [7])
        self.assertEqual(got, ref, "final parameter bytes differ")

    @unittest.skipUnless(sdk_test_util.have_cuda(), "no CUDA device: the GPU resume is not tested")
    def test_on_cuda_fp16_with_its_grad_scaler_and_bf16_resume_bitwise_identically(self):
        # fp16 needs the GradScaler, whose scale and growth tracker must come back with the
        # summed gradients; the dropout draws from the CUDA generator, which must come back too.
        ref = {p: self.train("cuda-%s-ref" % p, p, [], "cuda") for p in ("fp16", "bf16")}
        self.assertEqual(self.train("cuda-fp16-ref2", "fp16", [], "cuda"), ref["fp16"],
                         "two uninterrupted CUDA runs differ: the run is not deterministic, so "
                         "the resume check would mean nothing")
        for precision, stops in (("fp16", [5]), ("fp16", [4, 9]), ("bf16", [7])):
            with self.subTest(precision=precision, stops=stops):
                got = self.train("cuda-%s-%s" % (precision, "-".join(map(str, stops))),
                                 precision, stops, "cuda")
                self.assertEqual(got, ref[precision], "final parameter bytes differ")

if __name__ == "__main__":
    unittest.main()
