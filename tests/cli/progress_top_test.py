"""The real server and CLI with a real SDK job: `ls` shows its step, throughput and ETA, `show`
draws its per-minute GPU history as sparklines, `telemetry -o csv` exports the minutes, and
`top` lists the job's process (with its command line for those who may see it), sorts, and
answers the s and q keys on a terminal."""
import csv
import io
import json
import os
import pty
import select
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.05\n"
REPO = harness.REPO
BLOCKS = set("▁▂▃▄▅▆▇█")


class ProgressAndTop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="sim:3xH100-80GB", config=FAST).start()
        s = cls.s
        cls.sdk = s.run("--gpus", "2", "--name", "sdk-train", "--workdir", REPO,
                        "--env", "PYTHONPATH=" + os.path.join(REPO, "sdk", "python"), "--",
                        "/usr/bin/python3", "tests/cli/progress_train.py", "--steps", "2000")
        cls.plain = s.run("--gpus", "1", "--name", "plain", "--", "sleep", "60")
        s.wait(cls.sdk, states=("running",))
        s.wait(cls.plain, states=("running",))
        deadline = time.time() + 30
        while time.time() < deadline:  # a few lines reported, GPU samples taken, pids seen
            p = s.job(cls.sdk).get("progress")
            _, t = s.http("GET", f"/api/v1/jobs/{cls.sdk}/telemetry?samples=0")
            _, gpus = s.http("GET", "/api/v1/gpus")
            procs = [p for d in gpus["items"] for p in d["processes"] if p["job"] == cls.sdk]
            if p and p["step"] >= 20 and len(t["minutes"]) >= 2 and procs:
                break
            time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def cli(self, *args, env=None, **kw):
        old = dict(os.environ)
        try:
            os.environ.update(env or {})
            return self.s.cli(*args, **kw)
        finally:
            os.environ.clear()
            os.environ.update(old)

    def test_ls_shows_step_rate_and_eta_and_dash_without_metrics(self):
        jobs = {j["id"]: j for j in json.loads(self.cli("ls", "-o", "json").stdout)}
        p = jobs[self.sdk]["progress"]
        self.assertEqual(p["totalSteps"], 2000)
        self.assertGreaterEqual(p["step"], 20)
        self.assertGreater(p["stepsPerSecond"], 2)    # 20 steps/s asked, however slow the CI
        self.assertLess(p["stepsPerSecond"], 25)
        self.assertAlmostEqual(p["samplesPerSecond"], 16 * p["stepsPerSecond"], delta=0.01)
        left = (2000 - p["step"]) / p["stepsPerSecond"]
        self.assertLessEqual(p["etaSeconds"], left + 1)
        self.assertGreater(p["etaSeconds"], left - 10)
        self.assertNotIn("progress", jobs[self.plain])
        lines = self.cli("ls").stdout.splitlines()
        header = lines[0].split()
        self.assertEqual(header[-3:], ["STEP", "RATE", "ETA"])
        row = next(line for line in lines if "sdk-train" in line)
        self.assertRegex(row, r" \d+/2000 \(\d+%\) +\d+ samples/s +(\d+m\d\ds|\d+s)$")
        plain = next(line for line in lines if "plain" in line)
        self.assertRegex(plain, r" - +- +-$")

    def test_show_draws_sparklines_with_labels_and_ascii_fallback(self):
        out = self.cli("show", str(self.sdk), env={"LANG": "C.UTF-8", "LC_ALL": ""}).stdout
        self.assertIn("Progress:", out)
        hist = out[out.index("GPU history"):]
        self.assertIn("GPU 0", hist)
        self.assertIn("GPU 1", hist)
        util = [line for line in hist.splitlines() if line.strip().startswith("util ")]
        self.assertEqual(len(util), 2)
        for line in util:
            self.assertTrue(BLOCKS & set(line), line)
            self.assertRegex(line, r"min \d+% max \d+% mean \d+%")
        self.assertRegex(hist, r"mem .* of 80 GiB")
        for env in ({"LANG": "C", "LC_ALL": ""}, {"LANG": "C.UTF-8", "LC_ALL": ""}):
            args = ["show", str(self.sdk)] + (["--ascii"] if env["LANG"] != "C" else [])
            plain = self.cli(*args, env=env).stdout
            hist = plain[plain.index("GPU history"):]
            self.assertFalse(BLOCKS & set(hist), hist)
            self.assertTrue(hist.isascii(), hist)

    def test_telemetry_csv_has_one_row_per_gpu_and_minute(self):
        raw = subprocess.run([harness.BIN, "telemetry", str(self.sdk), "-o", "csv"],
                             env=dict(os.environ, TRAINYARD_SERVER=self.s.url),
                             capture_output=True, check=True).stdout
        self.assertTrue(raw.endswith(b"\r\n"), raw)  # RFC 4180 line ends
        text = raw.decode()
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        self.assertGreaterEqual(len(rows), 2)
        self.assertEqual(sorted({r["gpu"] for r in rows}), ["0", "1"])
        for r in rows:
            self.assertRegex(r["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$")
            self.assertTrue(r["node"])
            self.assertGreater(float(r["util_percent"]), 0)
            self.assertGreater(float(r["memory_used_mib"]), 0)
            self.assertGreater(float(r["power_w"]), 0)
            self.assertGreater(int(r["samples"]), 0)
        items = json.loads(self.cli("telemetry", str(self.sdk), "-o", "json").stdout)["items"]
        self.assertEqual(len(items), len(rows))
        r = self.cli("telemetry", str(self.sdk), "-o", "xml", check=False)
        self.assertEqual(r.returncode, 2)

    def test_top_lists_processes_sorts_and_hides_commands_of_other_teams(self):
        gpus = json.loads(self.cli("top", "-o", "json").stdout)["items"]
        procs = [p for d in gpus for p in d["processes"]]
        mine = [p for p in procs if p["job"] == self.sdk]
        self.assertTrue(mine, procs)
        self.assertIn("progress_train.py", mine[0]["command"])
        self.assertTrue(mine[0]["user"])
        once = self.cli("top", "--once", "--sort", "job").stdout
        self.assertIn("sort: job", once)
        self.assertRegex(once, r"\n\d+ +%d +\S+ +%d +[\d.]+ GiB .*progress_train\.py"
                         % (mine[0]["pid"], self.sdk))
        rows = once.split("\n\n")[1].splitlines()[1:]
        self.assertEqual([r.split()[0] for r in rows], ["0", "1", "2"])  # job 1's GPUs first
        r = self.cli("top", "--once", "--sort", "bogus", check=False)
        self.assertEqual(r.returncode, 2)
        other = self.cli("token", "create", "--team", "other").stdout.strip()
        seen = json.loads(self.cli("top", "-o", "json", token=other).stdout)["items"]
        for p in (p for d in seen for p in d["processes"]):
            self.assertIsNone(p["command"])
            self.assertIsNone(p["user"])

    def test_top_keys_cycle_the_sort_and_quit(self):
        master, slave = pty.openpty()
        env = dict(os.environ, TRAINYARD_SERVER=self.s.url, LANG="C.UTF-8")
        proc = subprocess.Popen([harness.BIN, "top", "--interval", "0.3"], stdin=slave,
                                stdout=slave, stderr=slave, env=env)
        os.close(slave)
        seen = b""

        def read_until(token, timeout=10):
            nonlocal seen
            deadline = time.time() + timeout
            while token not in seen and time.time() < deadline:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        seen += os.read(master, 65536)
                    except OSError:
                        break
            return token in seen

        try:
            self.assertTrue(read_until(b"sort: index"), seen[-2000:])
            self.assertIn("s: next sort, q: quit", seen.decode(errors="replace"))
            os.write(master, b"s")
            self.assertTrue(read_until(b"sort: util"), seen[-2000:])
            os.write(master, b"q")
            self.assertEqual(proc.wait(timeout=10), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
