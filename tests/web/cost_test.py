"""The web UI's cost page (#/cost) in Debian's real Chromium, against a real `trainyard server
--provider simcloud` that buys spot nodes for two teams' jobs; one node is reclaimed through
POST /api/v1/nodes/{name}/interrupt so lost work is non-zero. The page's totals, team, pool and
job rows equal GET /api/v1/cost over the window it shows; the CSV it downloads has the same
numbers; a team token sees only its team; job links open the job; no console errors; screenshots
wide and narrow.

Usage: cost_test.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]. Skips (exit 0) without
chromium, chromedriver or python3-selenium."""
import csv
import json
import os
import sys
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from browser import harness  # noqa: E402

SHOTS = None
CATALOG = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                       "..", "shared", "catalog"))
CONFIG = f"""policy: fifo
reconcileIntervalSeconds: 0.1
capacity:
  provider: simcloud
  catalog: {CATALOG}
  seed: 1
  interruptionRatePerHour: 0
  provisioningDelay: 1
  noticeSeconds: 1
  zoneBackoff: 600
  pools:
    - {{name: v100-spot, kind: spot, provider: aws, instanceType: p3.2xlarge, region: us-east-1,
       minNodes: 0, maxNodes: 3, idleTimeout: 60}}
teams:
  - name: vision
  - name: nlp
"""
NUMBERS = ("cost_usd", "gpu_hours", "idle_gpu_hours", "idle_cost_usd", "lost_gpu_hours",
           "lost_cost_usd", "interruptions")


def get(server, path, token):
    req = urllib.request.Request(server.url + path)
    req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


class CostPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="none", config=CONFIG,
                               extra=["--provider", "simcloud"]).start()
        cls.admin = cls.s.admin_token()
        env = {"token": cls.admin}
        cls.vision = cls.s.run("--team", "vision", "--gpus", "1", "--name", "spot-vision",
                               "--", "sleep", "300", **env)
        cls.nlp = cls.s.run("--team", "nlp", "--gpus", "1", "--name", "spot-nlp",
                            "--", "sleep", "300", **env)
        cls.s.wait(cls.vision, states=("running",), **env)
        cls.s.wait(cls.nlp, states=("running",), **env)
        time.sleep(1.5)
        st, nodes = cls.s.http("GET", "/api/v1/nodes", token=cls.admin)
        assert st == 200, nodes
        # The node under the vision job: reclaimed after its notice, the job is requeued.
        held = [n["name"] for n in nodes["items"] if n.get("cloud")]
        assert held, nodes
        node = cls.node_of(cls.vision) or held[0]
        st, body = cls.s.http("POST", f"/api/v1/nodes/{node}/interrupt", body=b"",
                              token=cls.admin)
        assert st == 200, body
        deadline = time.time() + 20
        while time.time() < deadline:
            st, c = cls.s.http("GET", "/api/v1/cost?since=-1h", token=cls.admin)
            if c["total"]["lost_cost_usd"] > 0:
                break
            time.sleep(0.2)
        assert c["total"]["lost_cost_usd"] > 0, c
        st, tok = cls.s.http("POST", "/api/v1/tokens",
                             body=json.dumps({"team": "vision", "name": "ui"}).encode(),
                             token=cls.admin)
        assert st in (200, 201), tok
        cls.team_token = tok["token"]
        cls.downloads = harness.scratch_dir("ty-cost-dl-")
        cls.b = browser.Browser(cls.s.url, SHOTS)
        cls.b.driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                                     {"behavior": "allow", "downloadPath": cls.downloads})
        cls.b.open("#/")
        cls.b.driver.execute_script("sessionStorage.setItem('trainyard.token', arguments[0])",
                                    cls.admin)

    @classmethod
    def node_of(cls, job_id):
        st, body = cls.s.http("GET", f"/api/v1/jobs/{job_id}", token=cls.admin)
        text = json.dumps(body)
        for name in ("v100-spot-1", "v100-spot-2", "v100-spot-3"):
            if name in text:
                return name
        return None

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        cls.s.stop()

    def values(self, b=None):
        """{data-field: (text, data-value)} of the page, read in one script."""
        return (b or self.b).driver.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('[data-field]')]"
            ".map(e => [e.dataset.field, [e.innerText, e.dataset.value]]))")

    def open_cost(self, b, route="#/cost"):
        b.go("#/")
        b.go(route)
        b.wait_for("[data-field='total.cost']")
        b.wait_for(".chart canvas")
        return b.driver.execute_script(
            "const c = document.querySelector('.cards'); return [c.dataset.since, c.dataset.until]")

    def report(self, since, until, token, fmt=""):
        q = urllib.parse.urlencode({"since": since, "until": until})
        return get(self.s, f"/api/v1/cost?{q}{fmt}", token)

    def assert_row(self, v, prefix, row, fields):
        for field, key in fields:
            self.assertIn(f"{prefix}.{field}", v)
            self.assertAlmostEqual(float(v[f"{prefix}.{field}"][1]), row[key], places=12,
                                   msg=f"{prefix}.{field}")

    def test_admin_sees_the_apis_numbers_and_downloads_them_as_csv(self):
        self.b.console_errors()
        since, until = self.open_cost(self.b)
        st, _, body = self.report(since, until, self.admin)
        rep = json.loads(body)
        v = self.values()
        t = rep["total"]
        self.assertGreater(t["lost_cost_usd"], 0)
        self.assertEqual(t["interruptions"], 1)
        self.assert_row(v, "total", t, [("cost", "cost_usd"), ("gpuHours", "gpu_hours"),
                                        ("lostCost", "lost_cost_usd"),
                                        ("lostGpuHours", "lost_gpu_hours"),
                                        ("interruptions", "interruptions"),
                                        ("idleCost", "idle_cost_usd")])
        self.assertAlmostEqual(float(v["total.idleShare"][1]),
                               100 * t["idle_cost_usd"] / t["cost_usd"], places=9)
        self.assertEqual(v["total.interruptions"][0], "1")
        self.assertTrue(v["total.cost"][0].startswith("$"), v["total.cost"])
        self.assertEqual({r["team"] for r in rep["teams"]}, {"vision", "nlp"})
        for r in rep["teams"]:
            self.assert_row(v, f"team.{r['team']}", r, [("cost", "cost_usd"),
                                                        ("lostCost", "lost_cost_usd")])
        for r in rep["pools"]:
            self.assert_row(v, f"pool.{r['pool']}", r, [("cost", "cost_usd"),
                                                        ("idleCost", "idle_cost_usd")])
        for r in rep["jobs"]:
            self.assert_row(v, f"job.{r['job']}", r, [("cost", "cost_usd"),
                                                      ("lostCost", "lost_cost_usd")])
        # The vision job lost work to the reclaim; the nlp one did not.
        self.assertGreater(float(v[f"job.{self.vision}.lostCost"][1]), 0)
        self.assertEqual(float(v[f"job.{self.nlp}.lostCost"][1]), 0)
        # Two charts (teams, pools) with a series per team.
        legends = self.b.driver.execute_script(
            "return [...document.querySelectorAll('#cost-teams ~ .chart .u-legend .u-label')]"
            ".map(e => e.textContent)")
        self.assertEqual(sorted(legends), ["Time", "nlp", "vision"])

        # The CSV download: the same report, number for number.
        for f in os.listdir(self.downloads):
            os.remove(os.path.join(self.downloads, f))
        self.b.driver.find_element(browser.By.XPATH, "//button[text()='Download CSV']").click()
        path = self.b.wait_until(
            lambda: next((os.path.join(self.downloads, f) for f in os.listdir(self.downloads)
                          if f.endswith(".csv")), None), message="the downloaded CSV")
        time.sleep(0.3)
        with open(path) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(os.path.basename(path), "trainyard-cost-7d.csv")
        total = next(r for r in rows if r["kind"] == "total")
        for key in NUMBERS:
            self.assertAlmostEqual(float(total[key]), t[key], places=12, msg=key)
        self.assertAlmostEqual(float(total["cost_usd"]), float(v["total.cost"][1]), places=12)
        by_job = {r["key"]: r for r in rows if r["kind"] == "job"}
        for r in rep["jobs"]:
            self.assertAlmostEqual(float(by_job[r["job"]]["cost_usd"]),
                                   float(v[f"job.{r['job']}.cost"][1]), places=12)
            self.assertEqual(by_job[r["job"]]["name"], r["name"])
        self.assertEqual({r["key"] for r in rows if r["kind"] == "team"}, {"vision", "nlp"})
        self.assertEqual(self.b.console_errors(), [])
        self.b.screenshot("cost")

        # A job link opens the job's page.
        self.b.driver.find_element(browser.By.CSS_SELECTOR, f"a[href='#/jobs/{self.vision}']").click()
        self.b.wait_until(lambda: self.b.driver.execute_script("return location.hash")
                          == f"#/jobs/{self.vision}", message="the job's route")

    def test_period_selector_and_series_match_the_report(self):
        self.b.console_errors()  # what other pages logged before (another test may have left it elsewhere)
        since, until = self.open_cost(self.b, "#/cost?period=today")
        current = self.b.driver.execute_script(
            "return document.querySelector('.period a[aria-current]').textContent")
        self.assertEqual(current, "Today (UTC)")
        self.assertEqual(since, time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))
        # The hourly series sums to the report over the same window.
        q = urllib.parse.urlencode({"since": since, "until": until, "step": "hour"})
        _, ctype, body = get(self.s, f"/api/v1/cost/series?{q}", self.admin)
        series = json.loads(body)
        _, _, rep = self.report(since, until, self.admin)
        rep = json.loads(rep)
        self.assertAlmostEqual(sum(series["total_cost_usd"]), rep["total"]["cost_usd"], places=9)
        self.assertAlmostEqual(sum(series["lost_cost_usd"]), rep["total"]["lost_cost_usd"],
                               places=12)
        self.assertAlmostEqual(float(self.values()["total.cost"][1]), rep["total"]["cost_usd"],
                               places=12)
        # Keyboard: the period links are links (Tab reaches them; Enter follows).
        link = self.b.driver.find_element(browser.By.LINK_TEXT, "30 days")
        link.send_keys(browser.Keys.ENTER)
        self.b.wait_until(lambda: "period=30d" in self.b.driver.execute_script(
            "return location.hash"), message="30 days")
        self.b.wait_for("[data-field='total.cost']")
        self.assertEqual(self.b.console_errors(), [])

    def test_a_team_token_sees_only_its_team(self):
        b = browser.Browser(self.s.url, SHOTS)
        try:
            b.open("#/")
            b.driver.execute_script("sessionStorage.setItem('trainyard.token', arguments[0])",
                                    self.team_token)
            since, until = self.open_cost(b)
            v = self.values(b)
            _, _, body = self.report(since, until, self.team_token)
            rep = json.loads(body)
            self.assertEqual(rep["scope"], "team")
            self.assertAlmostEqual(float(v["total.cost"][1]), rep["total"]["cost_usd"], places=12)
            self.assertFalse([k for k in v if "nlp" in k or k.startswith("pool.")], v)
            self.assertNotIn(f"job.{self.nlp}.cost", v)
            self.assertIn(f"job.{self.vision}.cost", v)
            self.assertNotIn("total.idleShare", v)
            self.assertFalse(b.driver.find_element(browser.By.ID, "cost-pools").is_displayed())
            self.assertNotIn("spot-nlp", b.driver.find_element(browser.By.TAG_NAME, "main").text)
            # The CSV route refuses another team.
            q = urllib.parse.urlencode({"team": "nlp", "format": "csv"})
            with self.assertRaises(urllib.error.HTTPError) as e:
                get(self.s, f"/api/v1/cost?{q}", self.team_token)
            self.assertEqual(e.exception.code, 403)
            self.assertEqual(b.console_errors(), [])
            b.screenshot("cost-team")
        finally:
            b.quit()

    def test_narrow_screen(self):
        b = browser.Browser(self.s.url, SHOTS, size=browser.NARROW)
        try:
            b.open("#/")
            b.driver.execute_script("sessionStorage.setItem('trainyard.token', arguments[0])",
                                    self.admin)
            self.open_cost(b)
            sideways = b.driver.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            self.assertLessEqual(sideways, 0)
            b.screenshot("cost-narrow")
        finally:
            b.quit()


if __name__ == "__main__":
    SHOTS = browser.start("usage: cost_test.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]")
    if not os.path.isdir(CATALOG):
        print(f"skipped: the simcloud server needs the price catalog at {CATALOG}")
        sys.exit(0)
    unittest.main()
