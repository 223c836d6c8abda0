"""report(): parseable JSON lines, buffered, and never an exception into the loop."""

import json
import math
import os
import unittest

import sdk_test_util
from trainyard import Reporter, metrics, young_interval


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.addCleanup(self.tmp.cleanup)
        self.path = os.path.join(self.tmp.path, "metrics.jsonl")

    def read(self):
        with open(self.path) as f:
            return [json.loads(line) for line in f]

    def test_lines_parse_with_fields_and_units(self):
        r = Reporter(self.path, env={"RANK": "2", "TRAINYARD_ATTEMPT": "3"})
        r.report(step=1, samples=32, loss=0.5, data_wait_s=0.01, step_time_s=0.2,
                 dtype="bf16", lr=1e-3, time="ignored")
        r.report(step=2, loss=float("nan"), tokens=[1, 2])
        self.assertFalse(os.path.exists(self.path), "buffered until flush")
        r.flush()
        a, b = self.read()
        self.assertEqual({k: a[k] for k in a if k != "time"},
                         {"rank": 2, "attempt": 3, "step": 1, "samples": 32, "loss": 0.5,
                          "data_wait_s": 0.01, "step_time_s": 0.2, "dtype": "bf16",
                          "lr": 1e-3})
        self.assertIsInstance(a["time"], float)
        self.assertLessEqual(a["time"], b["time"])
        self.assertIsNone(b["loss"])
        self.assertEqual(b["tokens"], [1, 2])

    def test_flushes_on_size_and_appends(self):
        r = Reporter(self.path, flush_bytes=200, env={})
        for step in range(20):
            r.report(step=step, loss=1.0)
        self.assertGreater(len(self.read()), 0)
        r.flush()
        again = Reporter(self.path, env={})  # e.g. the next attempt
        again.report(step=99)
        again.flush()
        self.assertEqual([x["step"] for x in self.read()], list(range(20)) + [99])

    def test_total_steps_given_once_is_on_every_later_line(self):
        r = Reporter(self.path, env={})
        r.report(step=0)
        r.report(step=1, total_steps=500)
        r.report(step=2)
        r.report(step=3, total_steps=800)  # a longer run decided mid-way
        r.flush()
        self.assertEqual([x.get("total_steps") for x in self.read()], [None, 500, 500, 800])

    def test_never_raises(self):
        r = Reporter(os.path.join(self.tmp.path, "no", "such", "dir", "m.jsonl"), flush_bytes=1,
                     env={})
        with self.assertLogs("trainyard", "WARNING"):
            r.report(step=1, weird=object())
            r.flush()
        r.report(step=2)  # warned once; still quiet

    def test_disabled_without_a_path(self):
        Reporter(None, env={}).report(step=1)
        self.assertIsNone(metrics.default_path({}))
        self.assertEqual(metrics.default_path({"TRAINYARD_RUN_DIR": "/r"}), "/r/metrics.jsonl")
        self.assertEqual(metrics.default_path({"TRAINYARD_RUN_DIR": "/r",
                                               "TRAINYARD_METRICS_FILE": "/m"}), "/m")


class YoungIntervalTest(unittest.TestCase):
    def setUp(self):
        self.old = os.environ.pop("TRAINYARD_MTBF_SECONDS", None)

    def tearDown(self):
        os.environ.pop("TRAINYARD_MTBF_SECONDS", None)
        if self.old is not None:
            os.environ["TRAINYARD_MTBF_SECONDS"] = self.old

    def test_formula_and_log(self):
        with self.assertLogs("trainyard", "INFO") as logs:
            self.assertAlmostEqual(young_interval(10, 3600), math.sqrt(2 * 10 * 3600))
        self.assertIn("save cost 10.000 s", logs.output[0])

    def test_env_mtbf_wins(self):
        os.environ["TRAINYARD_MTBF_SECONDS"] = "7200"
        with self.assertLogs("trainyard", "INFO") as logs:
            self.assertAlmostEqual(young_interval(2, 100), math.sqrt(2 * 2 * 7200))
        self.assertIn("TRAINYARD_MTBF_SECONDS", logs.output[0])

    def test_errors(self):
        with self.assertRaises(ValueError):
            young_interval(1)
        with self.assertRaises(ValueError):
            young_interval(-1, 10)
        os.environ["TRAINYARD_MTBF_SECONDS"] = "soon"
        with self.assertLogs("trainyard", "WARNING"):
            self.assertAlmostEqual(young_interval(1, 50), 10.0)


if __name__ == "__main__":
    unittest.main()
