"""scripts/gpu-validate without a GPU: the tests' fake NVML stands in for the driver (as
libnvidia-ml.so.1 on LD_LIBRARY_PATH) and a small script for nvidia-smi, so the machine, NVML
and jobs sections run end to end and the report says what they saw: the server's readings of the
fake's H100 beside the fake nvidia-smi's, a data-starved tuned_train.py job found input-bound on
the CPU, the GPU-bound job skipped for want of CUDA, and telemetry_bench --nvml over the fake.
Keeps the script that checks real GPUs from rotting between the rare runs on one.
Usage: gpu_validate_test.py PATH/TO/trainyard PATH/TO/libty_fake_nvml.so [PATH/TO/telemetry_bench]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
FAKE_SMI = """#!/bin/sh
case "$*" in
  *query-gpu=index*) echo "0, GPU-11111111-2222-3333-4444-555555555555, 00000000:18:00.0, \
NVIDIA H100 80GB HBM3, 97, 41, 61440, 81559, 71, 512.34, 700.00, 1980, 2619, 0x4";;
  *query-gpu*) echo "name, driver_version"; echo "NVIDIA H100 80GB HBM3, fake";;
  *query-compute-apps*) ;;
  *) echo "fake nvidia-smi";;
esac
"""
ARGS = {}


class GpuValidateWithoutAGpu(unittest.TestCase):
    def test_sections_run_against_the_fake_driver(self):
        tmp = tempfile.mkdtemp(prefix="ty-gpu-validate-")
        self.addCleanup(shutil.rmtree, tmp, True)
        smi = os.path.join(tmp, "nvidia-smi")
        with open(smi, "w") as f:
            f.write(FAKE_SMI)
        os.chmod(smi, 0o755)
        os.symlink(ARGS["fake_nvml"], os.path.join(tmp, "libnvidia-ml.so.1"))
        out = os.path.join(tmp, "out")
        cmd = [PYTHON, os.path.join(REPO, "scripts", "gpu-validate"), "--bin", ARGS["bin"],
               "--python", PYTHON, "--out", out, "--skip", "sdk", "--skip", "tune"]
        if ARGS.get("bench"):
            cmd += ["--telemetry-bench", ARGS["bench"]]
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"], LD_LIBRARY_PATH=tmp)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        with open(os.path.join(out, "report.md")) as f:
            report = f.read()
        print(report[:3000], flush=True)
        self.assertNotIn("failed:**", report)
        # NVML: the server read the fake's H100, beside the fake nvidia-smi's numbers.
        self.assertIn("| uuid | GPU-11111111-2222-3333-4444-555555555555 | "
                      "GPU-11111111-2222-3333-4444-555555555555 |", report)
        self.assertIn("| memory.total | 81559 | 81559 |", report)
        self.assertIn("| clocks_throttle_reasons.active | 0x4 | 4 |", report)
        self.assertRegex(report, r"\d+ DCGM series names in /metrics")
        # The starved job is input-bound; the fixed one is reported too.
        self.assertRegex(report, r"job \d+: input-bound: the training loop waits for input data")
        self.assertIn("### Job `tuned-fixed` (succeeded", report)
        self.assertIn("the GPU-bound job and its trace: skipped", report)
        for name in ("metrics-tuned-slow.jsonl", "show-tuned-slow.txt", "top-idle.json"):
            self.assertTrue(os.path.getsize(os.path.join(out, name)) > 0, name)
        if ARGS.get("bench"):
            self.assertRegex(report, r"sample/nvml/driver_median: [\d.]+ us CPU per sample")


if __name__ == "__main__":
    ARGS["bin"] = os.path.abspath(sys.argv.pop(1))
    ARGS["fake_nvml"] = os.path.abspath(sys.argv.pop(1))
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        ARGS["bench"] = os.path.abspath(sys.argv.pop(1))
    if subprocess.run([PYTHON, "-c", "import torch, numpy"], capture_output=True).returncode:
        print("skipped: %s has no torch/numpy (apt-get install python3-torch)" % PYTHON)
        sys.exit(0)
    unittest.main(verbosity=2)
