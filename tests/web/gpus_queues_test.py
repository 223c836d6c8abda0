"""The GPUs page (#/gpus) and the Queues page (#/queues) in Debian's real Chromium, against the
real server with simulated GPUs, two teams with quotas in one cohort and real jobs: GPU tiles
show the API's samples and jobs, MIG instances sit inside their GPU's tile, nodes show pool,
zone, state and price, the queue rows equal GET /api/v1/queues (borrowed, lent, fair-share
order, pending and running, budget), links lead to the jobs, a team token sees only its row,
no console errors, and screenshots wide and narrow.

Usage: gpus_queues_test.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]. Skips (exit 0)
without chromium, chromedriver or python3-selenium."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from browser import harness  # noqa: E402

SHOTS = None
# Samples every 2 s: the test compares a tile with the API when both show the same sample.
CONFIG = """reconcileIntervalSeconds: 0.1
telemetry: {interval: 2}
policy: fair
teams:
  - name: vision
    weight: 2
    cohort: research
    quota: {H100-80GB: 2}
    budget: {usd: 50, period: day}
  - name: nlp
    cohort: research
    quota: {H100-80GB: 2}
"""
MIG_JOB = """apiVersion: trainyard.dev/v1
kind: Job
metadata: {name: slice}
spec:
  template:
    command: [sleep, "60"]
    resources: {limits: {nvidia.com/mig-1g.5gb: 1}}
"""


def gib(n):
    """fmt.bytes() of the UI for sizes of a GiB or more."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, i = float(n), 0
    while abs(v) >= 1024 and i < len(units) - 1:
        v, i = v / 1024, i + 1
    return f"{int(v)} B" if i == 0 else f"{v:.1f} {units[i]}"


def gpus_text(n):
    v = float(n)
    s = f"{v:.1f}".rstrip("0").rstrip(".")
    return f"{s} {'GPU' if v == 1 else 'GPUs'}"


def per_model(m, empty):
    if not m:
        return empty
    return ", ".join(f"{'all models' if k == '*' else k}: {gpus_text(v)}" for k, v in m.items())


class GpusAndQueues(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="sim:4xH100-80GB", config=CONFIG).start()
        # vision: 3 GPUs (one borrowed from nlp's quota); nlp: 1 running, 2 more waiting.
        cls.big = cls.s.run("--team", "vision", "--gpus", "3", "--name", "big", "--", "sleep", "60")
        cls.s.wait(cls.big, states=("running",))
        cls.one = cls.s.run("--team", "nlp", "--gpus", "1", "--name", "one", "--", "sleep", "60")
        cls.s.wait(cls.one, states=("running",))
        cls.two = cls.s.run("--team", "nlp", "--gpus", "2", "--name", "two", "--", "sleep", "1")
        cls.b = browser.Browser(cls.s.url, SHOTS)

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        cls.s.stop()

    def api(self, path, token=None):
        st, body = self.s.http("GET", path, token=token)
        self.assertEqual(st, 200, body)
        return body

    def test_gpu_tiles_show_the_apis_samples(self):
        self.b.console_errors()
        self.b.open("#/gpus")
        self.b.wait_for(".gpu-tile")

        def matching():
            page = self.b.driver.execute_script(
                "return [...document.querySelectorAll('.gpu-tile')].map(t => [t.dataset.uuid,"
                " t.dataset.time])")
            g = self.api("/api/v1/gpus")
            fields = self.b.fields()
            times = {d["uuid"]: d["time"] for d in g["items"]}
            if len(page) == 4 and all(times.get(u) == t for u, t in page):
                return g, fields
            return None
        g, f = self.b.wait_until(matching, timeout=20, message="tiles showing the API's sample")
        busy = 0
        for d in g["items"]:
            u = d["uuid"]
            self.assertEqual(f[f"{u}.util"], f"{d['gpuUtilPercent']:.0f} %")
            self.assertEqual(f[f"{u}.mem"], f"{gib(d['memoryUsedBytes'])} / {gib(d['memoryTotalBytes'])}")
            self.assertEqual(f[f"{u}.temp"], f"{d['temperatureC']:.0f} °C")
            self.assertEqual(f[f"{u}.power"], f"{d['powerW']:.0f} W / {d['powerLimitW']:.0f} W")
            ids = [j["id"] for j in d["jobs"]]
            for j in ids:
                self.assertIn(f"job {j}", f[f"{u}.jobs"])
            busy += 1 if ids else 0
            idle = bool(ids) and d["gpuUtilPercent"] < 5
            self.assertEqual(f"{u}.idle" in f, idle, u)
        self.assertEqual(busy, 4)  # 3 GPUs of vision's job and 1 of nlp's
        summary = self.api("/api/v1/summary")
        self.assertEqual(f["gpus.inUse"], str(summary["gpus"]["inUse"]))
        self.assertEqual(f["gpus.free"], str(summary["gpus"]["free"]))
        # Nodes: pool, zone, state, model, use and price as the API has them.
        for n in self.api("/api/v1/nodes")["items"]:
            name = n["name"]
            self.assertEqual(f[f"node.{name}.pool"], n["pool"])
            self.assertEqual(f[f"node.{name}.zone"], n["zone"] or "—")
            self.assertEqual(f[f"node.{name}.state"], n["state"])
            self.assertEqual(f[f"node.{name}.model"], n["gpuModel"])
            self.assertEqual(f[f"node.{name}.use"], f"{n['gpusInUse']} of {gpus_text(n['gpus'])}")
            self.assertEqual(f[f"node.{name}.price"], "$0.00/h")
        # A job link on a tile opens the job.
        self.b.wait_for(f".gpu-tile a[href='#/jobs/{self.big}']").click()
        self.b.wait_for("main h1", text=str(self.big))
        self.b.go("#/gpus")
        self.b.wait_for(".gpu-tile")
        self.assertEqual(self.b.console_errors(), [])
        self.b.screenshot("gpus")

    def test_queue_rows_equal_the_api(self):
        self.b.console_errors()
        self.b.open("#/queues")
        self.b.wait_for("tr[data-team='nlp']")
        q = self.api("/api/v1/queues")
        rows = {r["name"]: r for r in q["items"]}
        self.assertEqual(rows["vision"]["borrowed"], {"H100-80GB": 1.0})
        self.assertEqual(rows["nlp"]["lent"], {"H100-80GB": 1.0})
        self.assertEqual(rows["nlp"]["pending"], 1)
        self.assertEqual(rows["nlp"]["fairShare"]["position"], 1)
        self.assertEqual(rows["vision"]["fairShare"]["position"], 2)
        f = self.b.wait_until(lambda: (lambda f: f if f.get("nlp.pending") == "1" else None)(
            self.b.fields()), message="nlp's pending job on the page")
        self.assertEqual(f["policy"], "fair")
        for name in ("vision", "nlp"):
            r = rows[name]
            self.assertEqual(f[f"{name}.weight"], f"{r['weight']:g}")
            self.assertEqual(f[f"{name}.position"], f"{r['fairShare']['position']} of {r['fairShare']['of']}")
            share = r["fairShare"]["dominantShare"] * 100
            self.assertEqual(f[f"{name}.share"], f"{share:.1f}".rstrip("0").rstrip(".") + " %")
            self.assertEqual(f[f"{name}.quota"], per_model(r["quota"], "unlimited"))
            self.assertEqual(f[f"{name}.gpusInUse"], gpus_text(r["gpusInUse"]))
            self.assertEqual(f[f"{name}.borrowed"], per_model(r["borrowed"], "none"))
            self.assertEqual(f[f"{name}.lent"], per_model(r["lent"], "none"))
            self.assertEqual(f[f"{name}.pending"], str(r["pending"]))
            self.assertEqual(f[f"{name}.running"], str(r["running"]))
        self.assertEqual(f["vision.spend"], f"${rows['vision']['budget']['spentUsd']:.2f} of $50.00 today (UTC)")
        self.assertEqual(self.b.console_errors(), [])
        self.b.screenshot("queues")
        # The pending count links to the team's pending jobs.
        self.b.wait_for("a[data-field='nlp.pending']").click()
        self.b.wait_until(lambda: self.b.driver.execute_script("return location.hash")
                          == "#/jobs?team=nlp&state=pending", message="the job list's hash")
        self.b.wait_for("main h1", text="Jobs")

    def test_a_team_token_sees_only_its_row(self):
        token = self.s.cli("token", "create", "--team", "nlp").stdout.strip()
        own = self.api("/api/v1/queues", token=token)["items"]
        self.assertEqual([r["name"] for r in own], ["nlp"])
        b = browser.Browser(self.s.url, SHOTS, size=browser.NARROW)
        try:
            b.open("#/queues")
            b.driver.execute_script("sessionStorage.setItem('trainyard.token', arguments[0])", token)
            b.driver.refresh()
            b.wait_for("tr[data-team='nlp']")
            teams = b.driver.execute_script(
                "return [...document.querySelectorAll('tr[data-team]')].map(r => r.dataset.team)")
            self.assertEqual(teams, ["nlp"])
            self.assertEqual(b.fields()["nlp.lent"], per_model(own[0]["lent"], "none"))
            width = b.driver.execute_script("return document.documentElement.scrollWidth")
            self.assertLessEqual(width, browser.NARROW[0], "the queues page scrolls sideways")
            b.screenshot("queues-team-narrow")
            b.go("#/gpus")
            b.wait_for(".gpu-tile")
            width = b.driver.execute_script("return document.documentElement.scrollWidth")
            self.assertLessEqual(width, browser.NARROW[0], "the GPUs page scrolls sideways")
            b.screenshot("gpus-narrow")
            self.assertEqual(b.console_errors(), [])
        finally:
            b.quit()


class MigTile(unittest.TestCase):
    """A MIG-enabled GPU: the job's instance is drawn inside the GPU's tile."""

    def test_mig_instance_inside_its_gpu(self):
        s = harness.Server(gpus="sim:1xH100-80GB,1xA100-40GB:mig",
                           config="reconcileIntervalSeconds: 0.1\n").start()
        b = browser.Browser(s.url, SHOTS)
        try:
            path = os.path.join(s.state_dir, "mig.yaml")
            with open(path, "w") as f:
                f.write(MIG_JOB)
            job = s.submit_file(path)
            s.wait(job, states=("running",))
            st, nodes = s.http("GET", "/api/v1/nodes")
            dev = next(d for n in nodes["items"] for d in n["devices"] if d["mig"])
            share = dev["shares"][0]
            self.assertEqual((share["job"], share["migProfile"]), (job, "1g.5gb"))
            b.open("#/gpus")
            seg = b.wait_for(f".gpu-tile[data-uuid='{dev['uuid']}'] "
                             f"[data-field='mig.{job}.{share['migStart']}']")
            self.assertIn("1g.5gb", seg.text)
            self.assertIn(f"job {job}", seg.text)
            free = b.text(f".gpu-tile[data-uuid='{dev['uuid']}'] .mig-seg.free")
            self.assertEqual(free, f"{7 - share['computeSlices']} of 7 slices free")
            self.assertEqual(b.console_errors(), [])
            b.screenshot("gpus-mig")
        finally:
            b.quit()
            s.stop()


if __name__ == "__main__":
    SHOTS = browser.start(__doc__)
    unittest.main(verbosity=2)
