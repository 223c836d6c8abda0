"""The job page (#/jobs/ID) and the UI's actions in Debian's real Chromium, against the real
server with simulated GPUs and real jobs: a running gang (output per rank), a pending job with
the scheduler's reason, a job preempted and resumed (two attempts), a data-starved job whose
step metrics give a doctor finding and that wrote a checkpoint. The page shows what the API
returns; Cancel (with its confirm step), Hold and Release act; the Submit page creates a job and
shows a refused spec's located error; an admin creates a team token; another team's token sees
nothing of the job. Screenshots of each go to the output folder.

Usage: job_page_test.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]. Skips (exit 0)
without chromium, chromedriver or python3-selenium."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from browser import harness  # noqa: E402

CONFIG = "reconcileIntervalSeconds: 0.1\npolicy: priority\nminRuntimeSeconds: 0\n"
SHOTS = None

# 60 steps of which half the time waits for data, then a verified checkpoint of step 60.
STARVED = r"""
import hashlib, json, os, time
f = open(os.environ["TRAINYARD_METRICS_FILE"], "a")
t0 = time.time() - 120
for i in range(1, 61):
    f.write(json.dumps({"time": t0 + 2 * i, "step": i, "samples": 32, "loss": 2.0 / i,
                        "data_wait_s": 0.05, "step_time_s": 0.1, "dtype": "float32",
                        "total_steps": 60}) + "\n")
f.flush()
d = os.path.join(os.environ["TRAINYARD_CHECKPOINT_DIR"], "step-60")
os.makedirs(d, exist_ok=True)
data = b"weights" * 1000
open(os.path.join(d, "model.bin"), "wb").write(data)
json.dump({"format": "trainyard-checkpoint", "step": 60, "created": "2026-11-26T06:00:00Z",
           "files": [{"name": "model.bin", "size": len(data),
                      "sha256": hashlib.sha256(data).hexdigest()}]},
          open(os.path.join(d, "MANIFEST.json"), "w"))
print("starved job done at step 60", flush=True)
time.sleep(2.5)
"""

# Attempt 1 runs until its notice; attempt 2 ends at once.
PREEMPTIBLE = ("echo attempt $TRAINYARD_ATTEMPT; if [ \"$TRAINYARD_ATTEMPT\" = 1 ]; then "
               "trap 'echo saved; exit 0' TERM; while :; do sleep 0.1; done; fi; echo resumed")


class JobPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        s = cls.s = harness.Server(gpus="sim:4xH100-80GB", config=CONFIG).start()
        # Preempted and resumed: a low-priority job on all 4 GPUs, then a high-priority one.
        cls.preempted = s.run("--gpus", "4", "--name", "low", "--priority-class", "low",
                              "--grace", "5", "--", "sh", "-c", PREEMPTIBLE)
        s.wait(cls.preempted, states=("running",))
        s.wait(s.run("--gpus", "4", "--name", "urgent", "--priority-class", "high", "--",
                     "sleep", "0.3"))
        cls.starved = s.run("--gpus", "1", "--name", "starved",
                            "--label", "trainyard.dev/sim-gpu-profile=data-bound", "--",
                            "/usr/bin/python3", "-c", STARVED)
        assert s.wait(cls.preempted, timeout=30)["state"] == "succeeded"
        # A running gang of two workers, one that the page cancels, and one that waits.
        cls.gang = s.run("--gpus", "1", "--workers", "2", "--name", "gang", "--", "sh", "-c",
                         "echo hello from rank $RANK of $WORLD_SIZE; sleep 120")
        cls.victim = s.run("--gpus", "1", "--name", "victim", "--", "sh", "-c",
                           "echo victim up; sleep 120")
        s.wait(cls.gang, states=("running",))
        s.wait(cls.victim, states=("running",))
        assert s.wait(cls.starved, timeout=30)["state"] == "succeeded"
        cls.pending = s.run("--gpus", "4", "--name", "waits", "--", "true")
        cls.b = browser.Browser(s.url, SHOTS)

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        for jid in (cls.gang, cls.victim):  # their workers would outlive a stopped server
            cls.s.cli("cancel", str(jid), check=False)
        for jid in (cls.gang, cls.victim):
            cls.s.wait(jid, timeout=15)
        cls.s.stop()

    def full_screenshot(self, b, name):
        """The whole page, not only the window: the window grows to the page's height."""
        w, hgt = b.driver.get_window_size()["width"], b.driver.get_window_size()["height"]
        full = b.driver.execute_script("return document.documentElement.scrollHeight")
        b.driver.set_window_size(w, max(hgt, full + 120))
        time.sleep(0.3)
        b.screenshot(name)
        b.driver.set_window_size(w, hgt)

    def api(self, path, method="GET", body=None, token=None):
        st, data = self.s.http(method, path, body=body, token=token)
        self.assertEqual(st, 200, f"{method} {path}: {data}")
        return data

    def shown(self, css, text="", b=None):
        """Waits for a visible element matching `css` (containing `text`), checked in one script
        call: the page redraws parts of itself every few seconds, which would make a WebElement
        held across two calls stale."""
        b = b or self.b
        return b.wait_until(lambda: b.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].some(e => e.offsetParent !== null"
            " && e.innerText.includes(arguments[1]))", css, text), message=f"{css} {text!r}")

    def open_job(self, jid):
        self.b.open(f"#/jobs/{jid}")
        try:
            self.shown("[data-field='state']")
        except AssertionError:
            self.b.screenshot(f"failed-job-{jid}")
            raise AssertionError("the job page did not load: " + self.b.driver.execute_script(
                "return document.body.innerText").replace("\n", " | ")[:600])
        return self.b.wait_until(lambda: self.b.fields(), message="fields")

    def field(self, name, want, timeout=15):
        return self.b.wait_until(lambda: self.b.fields().get(name) == want, timeout=timeout,
                                 message=f"{name} == {want!r} (now {self.b.fields().get(name)!r})")

    def test_running_gang_state_placement_logs_per_rank_and_charts(self):
        self.b.console_errors()
        self.open_job(self.gang)
        job = self.api(f"/api/v1/jobs/{self.gang}")
        self.field("state", "running")
        f = self.b.fields()
        self.assertEqual(f["name"], "gang")
        self.assertEqual(f["team"], job["team"])
        self.assertEqual(f["workers"], "2")
        want = "; ".join(sorted({f"{p['node']} GPUs " + ",".join(
            str(q["gpu"]) for q in job["placement"] if q["node"] == p["node"])
            for p in job["placement"]}))
        self.assertEqual(f["placementSummary"], want)
        rows = self.b.driver.find_elements(browser.By.CSS_SELECTOR, "[data-table='placement'] tbody tr")
        self.assertEqual(len(rows), len(job["placement"]))
        self.assertEqual([r.text.split()[0] for r in rows], [str(p["worker"]) for p in job["placement"]])
        # The log view shows rank 0's output, then rank 1's after picking it.
        self.b.wait_until(lambda: "hello from rank 0 of 2" in self.b.fields().get("log", ""),
                          message="rank 0's output")
        sel = browser.Select(self.b.wait_for("#log-rank"))
        self.assertEqual([o.text for o in sel.options], ["0", "1"])
        sel.select_by_value("1")
        self.b.wait_until(lambda: "hello from rank 1 of 2" in self.b.fields().get("log", ""),
                          message="rank 1's output")
        self.assertIn("following", self.b.text("#log-status"))
        # Per-GPU charts exist (one series per device, drawn on canvases).
        self.b.wait_for("#chart-gpu-util canvas")
        self.b.wait_for("#chart-gpu-mem canvas")
        labels = self.b.driver.execute_script(
            "return [...document.querySelectorAll('#chart-gpu-util .u-legend .u-series th')]"
            ".map(e => e.innerText.trim()).filter(Boolean)")
        self.assertEqual(labels[1:], [f"{p['node']} GPU {p['gpu']}" for p in job["placement"]])
        # The timeline lists the API's events.
        events = self.api(f"/api/v1/jobs/{self.gang}/events")["items"]
        ev_rows = self.b.driver.find_elements(browser.By.CSS_SELECTOR, "[data-table='events'] tbody tr")
        self.assertEqual(len(ev_rows), len(events))
        self.shown(".timeline .seg")
        self.assertEqual(self.b.console_errors(), [])
        self.full_screenshot(self.b, "job-running-gang")

    def test_pending_job_says_why_it_waits_and_holds_and_releases(self):
        self.open_job(self.pending)
        self.field("state", "pending")
        job = self.api(f"/api/v1/jobs/{self.pending}")
        self.assertIn("waiting", job)
        self.b.wait_until(lambda: self.b.fields().get("waiting") not in (None, "", "—"),
                          message="the waiting reason")
        got = self.b.fields()["waiting"]
        # The reason is the scheduler's, which may be refreshed between two reads.
        job = self.api(f"/api/v1/jobs/{self.pending}")
        self.assertTrue(got.startswith(job["waiting"].split(";")[0]), (got, job["waiting"]))
        self.assertIn("GPU", got)
        self.assertEqual(self.b.fields()["estimatedStartBasis"], job.get("estimatedStartBasis", "—"))
        self.b.screenshot("job-pending")
        self.b.wait_for("#hold-job").click()
        self.b.wait_for("#release-job")
        self.assertTrue(self.api(f"/api/v1/jobs/{self.pending}")["held"])
        self.field("held", "yes (release it to let it start)")
        self.b.screenshot("job-held")
        self.b.wait_for("#release-job").click()
        self.b.wait_for("#hold-job")
        self.assertFalse(self.api(f"/api/v1/jobs/{self.pending}")["held"])

    def test_preempted_job_shows_both_attempts(self):
        self.open_job(self.preempted)
        self.field("state", "succeeded")
        job = self.api(f"/api/v1/jobs/{self.preempted}")
        self.assertEqual(len(job["attempts"]), 2)
        f = self.b.fields()
        self.assertEqual(f["attempt"], "2")
        for a in job["attempts"]:
            self.assertEqual(f[f"attempt.{a['attempt']}.outcome"], a["outcome"])
        self.assertEqual(f["attempt.1.outcome"], "preempted")
        # Ended: no actions; placement kept; the log of attempt 1 is there to pick.
        self.assertEqual(self.b.driver.find_elements(browser.By.CSS_SELECTOR, ".job-actions button"), [])
        self.assertNotEqual(f["placementSummary"], "—")
        self.b.wait_until(lambda: "resumed" in self.b.fields().get("log", ""), message="attempt 2's log")
        browser.Select(self.b.wait_for("#log-attempt")).select_by_value("1")
        self.b.wait_until(lambda: "saved" in self.b.fields().get("log", ""), message="attempt 1's log")
        self.b.wait_until(lambda: "complete" in self.b.text("#log-status"), message="complete")
        self.assertFalse(self.b.driver.find_element(browser.By.ID, "log-follow").is_displayed())
        self.b.screenshot("job-preempted")

    def test_starved_job_doctor_metrics_checkpoints_and_cost(self):
        self.b.console_errors()
        self.open_job(self.starved)
        self.field("state", "succeeded")
        doctor = self.api(f"/api/v1/jobs/{self.starved}/doctor")
        rules = [x["rule"] for x in doctor["findings"]]
        self.assertIn("input-bound", rules)
        self.shown("[data-rule='input-bound']")
        self.assertEqual(self.b.fields()["doctor.verdict"], doctor["verdict"])
        shown = self.b.driver.execute_script(
            "return [...document.querySelectorAll('.finding')].map(e => e.dataset.rule)")
        self.assertEqual(shown, rules)
        finding = self.b.text("[data-rule='input-bound']")
        action = next(x["action"] for x in doctor["findings"] if x["rule"] == "input-bound")
        self.assertIn("Suggested fix: " + action.split("\n")[0], finding)
        metrics = self.api(f"/api/v1/jobs/{self.starved}/metrics")
        self.assertEqual(metrics["lines"], 60)
        self.assertAlmostEqual(metrics["dataWaitPercent"][-1], 50.0)
        for chart in ("loss", "throughput", "data-wait"):
            self.b.wait_for(f"#chart-{chart} canvas")
        ck = self.api(f"/api/v1/jobs/{self.starved}/checkpoints")["items"]
        self.assertEqual([c["step"] for c in ck], [60])
        self.assertTrue(ck[0]["verified"])
        rows = self.b.wait_until(lambda: self.b.driver.find_elements(
            browser.By.CSS_SELECTOR, "[data-table='checkpoints'] tbody tr"), message="checkpoints")
        self.assertEqual(rows[0].text.split()[0], "60")
        self.assertIn("yes", rows[0].text)
        cost = self.api("/api/v1/cost?since=-1d")
        line = next(j for j in cost["jobs"] if j["job"] == str(self.starved))
        self.b.wait_until(lambda: self.b.fields().get("gpuHours") == f"{line['gpu_hours']:.3f} h",
                          message=f"GPU-hours {line['gpu_hours']}")
        self.assertRegex(self.b.fields()["cost"], r"^\$[\d.,]+$")
        self.assertEqual(self.b.console_errors(), [])
        self.full_screenshot(self.b, "job-data-starved")

    def test_zz_cancel_asks_then_cancels(self):
        self.open_job(self.victim)
        self.field("state", "running")
        self.b.wait_for("#cancel-job").click()
        self.b.wait_for("#cancel-q")
        self.b.screenshot("job-cancel-confirm")
        self.b.wait_for("#cancel-no").click()
        self.b.wait_until(lambda: not self.b.driver.find_element(browser.By.ID, "cancel-q").is_displayed(),
                          message="the confirm step to close")
        self.assertEqual(self.api(f"/api/v1/jobs/{self.victim}")["state"], "running")
        self.b.wait_for("#cancel-job").click()
        self.b.wait_for("#cancel-yes").click()
        self.field("state", "cancelled", timeout=20)
        self.assertEqual(self.api(f"/api/v1/jobs/{self.victim}")["state"], "cancelled")
        self.assertEqual(self.b.driver.find_elements(browser.By.ID, "cancel-job"), [])
        self.b.screenshot("job-cancelled")

    def test_submit_page_creates_a_job_and_locates_errors(self):
        self.b.open("#/submit")
        text = self.b.wait_for("#spec-text")
        bad = ("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: bad}\nspec:\n"
               "  workers: 0\n  template:\n    command: [true]\n")
        text.clear()
        text.send_keys(bad)
        self.b.wait_for("#spec-submit").click()
        err = self.b.wait_for("[data-field='specError']")
        st, body = self.s.http("POST", "/api/v1/jobs?file=job.yaml", body=bad.encode())
        self.assertEqual(st, 400)
        self.assertEqual(err.text, body["error"]["message"])
        self.assertTrue(err.text.startswith("job.yaml:5:12: spec.workers"), err.text)
        self.assertEqual(self.b.fields()["specErrorLine"], "workers: 0")
        self.assertEqual(self.b.driver.execute_script(
            "const t = document.getElementById('spec-text');"
            "return t.value.slice(t.selectionStart, t.selectionEnd)"), "  workers: 0")
        self.b.screenshot("submit-error")
        good = ("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: from-the-page}\n"
                "spec:\n  template:\n    command: [sh, -c, 'echo submitted']\n")
        text.clear()
        text.send_keys(good)
        self.b.wait_for("#spec-submit").click()
        self.b.wait_until(lambda: self.b.driver.execute_script("return location.hash")
                          .startswith("#/jobs/"), message="the new job's page")
        jid = int(self.b.driver.execute_script("return location.hash").split("/")[-1])
        self.assertEqual(self.api(f"/api/v1/jobs/{jid}")["name"], "from-the-page")
        self.shown("[data-field='name']", "from-the-page")
        self.b.screenshot("submit-created")

    def test_admin_creates_a_team_token_shown_once(self):
        self.b.open("#/submit")
        self.b.wait_for("#token-team").send_keys("research")
        self.b.wait_for("#token-name").send_keys("alice")
        self.b.wait_for("#token-create").click()
        token = self.b.wait_for("#token-secret").text
        self.assertRegex(token, r"^ty_[0-9a-f]{64}$")
        self.b.driver.execute_script("arguments[0].scrollIntoView()", self.b.wait_for("#token-copy"))
        page = self.api("/api/v1/jobs", token=token)
        self.assertEqual(page["items"], [])  # team research has no jobs: the token is its team's
        st, _ = self.s.http("GET", f"/api/v1/jobs/{self.gang}", token=token)
        self.assertEqual(st, 403)
        self.b.screenshot("token-created")

    def test_another_teams_token_sees_nothing(self):
        st, t = self.s.http("POST", "/api/v1/tokens", body=b'{"team": "vision"}')
        self.assertEqual(st, 201)
        self.b.open("#/")
        self.b.driver.execute_script("sessionStorage.setItem('trainyard.token', arguments[0])", t["token"])
        try:
            self.b.open(f"#/jobs/{self.gang}")
            self.shown(".denied", "may not see this job")
            denied = self.b.wait_for(".denied")
            self.assertIn("belongs to team 'default'", denied.text)
            self.assertIn("team 'vision'", denied.text)
            self.assertEqual(self.b.driver.execute_script(
                "return document.querySelector('.job-body').hidden"), True)
            self.assertNotIn("gang", self.b.text("main h1"))
            fields = self.b.fields()
            self.assertNotIn("name", fields)
            self.assertFalse(any("hello from rank" in v for v in fields.values()))
            self.b.press(browser.Keys.ESCAPE)  # the 403 also opened the token prompt
            self.b.screenshot("job-other-team")
        finally:
            self.b.driver.execute_script("sessionStorage.removeItem('trainyard.token')")
            self.b.driver.refresh()  # closes the token prompt the 403 opened

    def test_narrow_screen(self):
        narrow = browser.Browser(self.s.url, SHOTS, size=browser.NARROW)
        try:
            narrow.open(f"#/jobs/{self.starved}")
            self.shown("[data-rule='input-bound']", b=narrow)
            narrow.wait_for("#chart-loss canvas")
            time.sleep(0.3)  # charts resize to the column
            wide = narrow.driver.execute_script(
                "const w = document.documentElement.clientWidth;"
                "return [document.documentElement.scrollWidth, w, [...document.querySelectorAll('main *')]"
                ".filter(e => e.getBoundingClientRect().right > w + 1 && !e.closest('.scroll-x'))"
                ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right)]")
            self.assertLessEqual(wide[0], wide[1], f"the job page scrolls sideways: {wide[2]}")
            self.full_screenshot(narrow, "job-narrow")
            narrow.go("#/submit")
            narrow.wait_for("#spec-text")
            width = narrow.driver.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            self.assertLessEqual(width[0], width[1], "the submit page scrolls sideways")
            narrow.screenshot("submit-narrow")
        finally:
            narrow.quit()


if __name__ == "__main__":
    SHOTS = browser.start(__doc__)
    from selenium.webdriver.support.ui import Select  # noqa: E402
    browser.Select = Select
    unittest.main(verbosity=2)
