"""A real trainyard.tune run inside a job on the real server: `show` prints the plan it chose
(its metrics line with tune_* fields), and the doctor's stats carry the same choice. Usage:
show_tuned_test.py PATH/TO/trainyard"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402

REPO = harness.REPO


class ShowTuned(unittest.TestCase):
    def test_show_and_doctor_report_the_tuned_plan(self):
        s = harness.Server(gpus="sim:1xH100-80GB", config="reconcileIntervalSeconds: 0.05\n")
        s.start()
        try:
            job = s.run("--name", "tuned", "--workdir", REPO,
                        "--env", "PYTHONPATH=" + os.path.join(REPO, "sdk", "python"), "--",
                        "/usr/bin/python3", "tests/cli/tuned_job.py")
            done = s.wait(job, timeout=120)
            self.assertEqual(done["state"], "succeeded", s.logs(job))
            tuned = done["metrics"]["tuned"]
            micro, accum = tuned["tune_micro_batch"], tuned["tune_accum_steps"]
            self.assertGreaterEqual(micro, 1)
            self.assertEqual(micro * accum, tuned["tune_global_batch"])
            self.assertEqual(tuned["tune_target_global_batch"], 64)
            self.assertNotIn("step", tuned)  # only the plan's fields
            text = s.cli("show", str(job)).stdout
            self.assertIn(f"micro-batch {micro} x {accum} accumulation x 1 rank(s) = "
                          f"{tuned['tune_global_batch']} (target 64)", text)
            doctor = json.loads(s.cli("doctor", str(job), "-o", "json").stdout)
            self.assertEqual(doctor["stats"]["tune"]["micro_batch"], micro)
            self.assertEqual(doctor["stats"]["tune"]["accum_steps"], accum)
            self.assertIn(f"tuned by trainyard.tune: micro-batch {micro} x {accum}",
                          s.cli("doctor", str(job)).stdout)
        finally:
            s.stop()


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
