"""End-to-end tests of the Slurm habits of the CLI against the real `trainyard server` with
simulated GPUs: `run --time` in sbatch's forms, pending jobs' estimated start (`squeue --start`)
and reasons that name the jobs holding the GPUs, and ended jobs that keep their placement, across
a restart. Usage: slurm_habits_test.py PATH/TO/trainyard [unittest args]"""
import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.05\n"


def parse_time(text):
    return datetime.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


wait_for = harness.wait_for


class TimeLimit(harness.ServerTestCase):
    CONFIG = FAST

    def test_run_time_takes_the_forms_sbatch_takes(self):
        for text, seconds in [("2h", 7200), ("90m", 5400), ("3600s", 3600), ("90", 5400),
                              ("01:30:00", 5400), ("1-00:00:00", 86400), ("30:15", 1815)]:
            jid = self.s.run("--name", "limit", "--time", text, "--", "true")
            spec = self.s.job(jid)["spec"]["spec"]
            self.assertEqual(spec.get("activeDeadlineSeconds"), seconds, text)

    def test_run_time_refuses_what_it_cannot_read(self):
        for bad in ("2 hours", "1:2:3:4", "0", "-5"):
            r = self.s.cli("run", "--time", bad, "--", "true", check=False)
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
            self.assertIn(f"trainyard run: --time: time limit '{bad}'", r.stderr)
            if ":" in bad or " " in bad:
                self.assertIn("sbatch --time", r.stderr)


class StartEstimates(unittest.TestCase):
    """4 simulated GPUs: A (2 GPUs, --time 2m) and B (2 GPUs, no limit) run; C (2 GPUs) waits
    for A's limit; D (4 GPUs) waits behind C for GPUs B holds without a limit."""

    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(config=FAST).start()
        s = cls.s
        cls.a = s.run("--gpus", "2", "--name", "limited", "--time", "2m", "--", "sleep", "600")
        cls.b = s.run("--gpus", "2", "--name", "unlimited", "--", "sleep", "600")
        for jid in (cls.a, cls.b):
            s.wait(jid, states=("running",))
        cls.c = s.run("--gpus", "2", "--name", "next", "--time", "10m", "--", "sleep", "600")
        cls.d = s.run("--gpus", "4", "--name", "big", "--", "true")

    @classmethod
    def tearDownClass(cls):
        for jid in (cls.a, cls.b, cls.c, cls.d):
            cls.s.cli("cancel", str(jid), check=False)
        cls.s.stop()

    def estimated(self, jid):
        return wait_for(f"an estimate for job {jid}",
                        lambda: (lambda j: j if "estimatedStartBasis" in j else None)(
                            self.s.job(jid)))

    def test_next_job_starts_when_the_limit_of_the_running_job_ends(self):
        c = self.estimated(self.c)
        a = self.s.job(self.a)
        self.assertEqual(c["state"], "pending")
        self.assertEqual(c["estimatedStartBasis"], "replay")
        self.assertIsNotNone(c["estimatedStart"])
        self.assertAlmostEqual(parse_time(c["estimatedStart"]), parse_time(a["started"]) + 120,
                               delta=2)
        self.assertIn(f"job {self.a} ends by runtime limit", c["estimatedStartReason"])

    def test_job_behind_a_holder_without_limit_has_no_time_and_says_why(self):
        d = self.estimated(self.d)
        self.assertEqual(d["estimatedStartBasis"], "unknown")
        self.assertIsNone(d["estimatedStart"])
        self.assertIn(f"job {self.b}", d["estimatedStartReason"])
        self.assertIn("no runtime limit", d["estimatedStartReason"])

    def test_reason_names_the_jobs_holding_the_gpus(self):
        waiting = wait_for("a reason naming holders",
                           lambda: (lambda w: w if "held by" in w else None)(
                               self.s.job(self.c).get("waiting", "")))
        self.assertIn("waiting for 2 x H100-80GB", waiting)
        self.assertRegex(waiting, rf"job {self.a} \(team default, 2 GPUs, limit ends in [12]m\)")
        self.assertIn(f"job {self.b} (team default, 2 GPUs, no runtime limit)", waiting)

    def test_list_and_show_print_the_estimate(self):
        self.estimated(self.c)
        self.estimated(self.d)
        out = self.s.cli("ls", "-o", "wide").stdout
        header = out.splitlines()[0].split()
        self.assertIn("START", header)
        col = header.index("START")
        rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
        a = self.s.job(self.a)
        self.assertAlmostEqual(parse_time(rows[str(self.c)][col]), parse_time(a["started"]) + 120,
                               delta=2)
        self.assertEqual(rows[str(self.d)][col], "unknown")
        self.assertEqual(rows[str(self.a)][col], "-")
        shown = self.s.cli("show", str(self.c)).stdout
        self.assertRegex(shown, r"Starts:\s+\d{4}-\d\d-\d\dT[0-9:]+Z \(in ")

    def test_ls_start_lists_pending_jobs_soonest_first(self):
        self.estimated(self.c)
        self.estimated(self.d)
        lines = self.s.cli("ls", "--start").stdout.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "NAME", "TEAM", "GPUS", "AGE", "START", "REASON"])
        ids = [line.split()[0] for line in lines[1:]]
        self.assertEqual(ids, [str(self.c), str(self.d)])  # a known time before an unknown one
        self.assertEqual(lines[2].split()[5], "unknown")
        r = self.s.cli("ls", "--start", "--state", "running", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--start lists pending jobs", r.stderr)


class EndedPlacement(unittest.TestCase):
    def test_ended_job_keeps_its_placement_across_a_restart(self):
        s = harness.Server(config=FAST).start()
        try:
            jid = s.run("--gpus", "2", "--name", "placed", "--", "true")
            done = s.wait(jid)
            self.assertEqual(done["state"], "succeeded")
            self.assertEqual(len(done["placement"]), 2)
            gpus = sorted(p["gpu"] for p in done["placement"])
            shown = s.cli("show", str(jid)).stdout
            self.assertIn("Placement (last attempt):", shown)
            self.assertNotIn("(none)", shown)
            s.stop()
            s.start()
            again = s.job(jid)
            self.assertEqual(sorted(p["gpu"] for p in again["placement"]), gpus)
            out = s.cli("ls", "-o", "wide").stdout.splitlines()
            col = out[0].split().index("NODE:GPUS")
            row = next(line.split() for line in out[1:] if line.split()[0] == str(jid))
            self.assertTrue(row[col].endswith(":" + ",".join(str(g) for g in gpus)), row)
        finally:
            s.stop()


if __name__ == "__main__":
    harness.BIN = sys.argv.pop(1)
    unittest.main()
