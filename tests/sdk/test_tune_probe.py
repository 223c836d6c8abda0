"""`python -m trainyard.tune --probe`: measures in its own process, writes the plan as
JSON and prints the job-spec env lines; a plan pinned by those variables is what
tune() returns in the training job. A model that cannot fit exits 2 with the reason.
"""

import json
import os
import subprocess
import unittest

import sdk_test_util

SETUP = os.path.join(sdk_test_util.HERE, "tune_models.py") + ":probe_setup"


def run_probe(*args):
    return subprocess.run([sdk_test_util.PYTHON, "-m", "trainyard.tune", "--probe", "--setup",
                           SETUP] + [str(a) for a in args], env=sdk_test_util.child_env(),
                          capture_output=True, text=True, timeout=120)


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): tune not tested")
class TuneProbeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()

    def tearDown(self):
        self.tmp.cleanup()

    def test_probe_writes_plan_and_env_lines(self):
        out = os.path.join(self.tmp.path, "plan.json")
        got = run_probe("--global-batch", 96, "--budget-mib", 4, "--out", out)
        self.assertEqual(got.returncode, 0, got.stderr)
        with open(out) as f:
            plan = json.load(f)
        self.assertEqual(plan["global_batch"], 96)
        self.assertEqual(plan["micro_batch"] * plan["accum_steps"], 96)
        self.assertEqual(plan["measured"]["budget_bytes"], 4 << 20)
        self.assertIn("fp32", plan["measured"]["candidates"])
        for name, value in plan["env"].items():
            self.assertIn('- {name: %s, value: "%s"}' % (name, value), got.stdout)

        from trainyard.tune import Plan  # sdk_test_util put the SDK on sys.path
        pinned = Plan.from_env(plan["env"])
        self.assertEqual(pinned.settings_dict(), Plan.from_dict(plan).settings_dict())

    def test_model_that_cannot_fit_exits_2_with_the_reason(self):
        got = run_probe("--global-batch", 16, "--budget-mib", 0.2,
                        "--out", os.path.join(self.tmp.path, "plan.json"))
        self.assertEqual(got.returncode, 2, got.stderr)
        self.assertIn("does not fit even at micro-batch 1", got.stderr)
        self.assertNotIn("Traceback", got.stderr)

    def test_bad_setup_names_the_problem(self):
        got = subprocess.run([sdk_test_util.PYTHON, "-m", "trainyard.tune", "--probe", "--setup",
                              "no_colon", "--global-batch", "8"], env=sdk_test_util.child_env(),
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(got.returncode, 2)
        self.assertIn("--setup must be MODULE:FUNCTION or FILE.py:FUNCTION", got.stderr)


if __name__ == "__main__":
    unittest.main()
