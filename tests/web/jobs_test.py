"""The Jobs page (#/jobs) in Debian's real Chromium, against the real server with simulated GPUs
and a few dozen real jobs in several states and two teams: the rows are what GET /api/v1/jobs
returns for the same filter, sort and page; the filter is kept in the URL (the back button
works); a team token sees only its team; a row opens #/jobs/ID; no console errors; screenshots
wide and narrow.

Usage: jobs_test.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]. Skips (exit 0) without
chromium, chromedriver or python3-selenium."""
import os
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from browser import harness  # noqa: E402

try:
    from selenium.webdriver.support.ui import Select
except ImportError:  # browser.skip_if_missing() reports it
    Select = None

FAST = "reconcileIntervalSeconds: 0.1\n"
SHOTS = None


class JobsPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        s = cls.s = harness.Server(gpus="sim:4xH100-80GB", config=FAST).start()
        ended = []
        for i in range(8):  # quick ones that succeed, teams a and b
            ended.append(s.run("--gpus", "1", "--name", f"ok-{i}", "--team", "ab"[i % 2],
                               "--label", f"tier={'gold' if i % 2 == 0 else 'tin'}", "--", "true"))
        ended.append(s.run("--gpus", "1", "--name", "broken", "--team", "a", "--backoff-limit", "0", "--", "false"))
        for j in ended:
            s.wait(j)
        cls.running = [s.run("--gpus", "2", "--name", f"trainer-{t}", "--team", t, "--",
                             "sleep", "300") for t in "ab"]
        for j in cls.running:
            s.wait(j, states=("running",))
        # The GPUs are full: these wait (first come, first served).
        cls.pending = [s.run("--gpus", "1", "--name", f"wait-{i}", "--team", "ab"[i % 2], "--",
                             "sleep", "1") for i in range(14)]
        for j in cls.pending[:3]:
            s.cli("cancel", str(j))
        cls.tb = s.cli("token", "create", "--team", "b").stdout.strip()
        cls.b = browser.Browser(s.url, SHOTS)

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        cls.s.stop()

    def api_ids(self, query, token=None):
        st, body = self.s.http("GET", "/api/v1/jobs?" + query, token=token)
        self.assertEqual(st, 200, body)
        return [j["id"] for j in body["items"]], body

    def rows(self):
        return self.b.driver.execute_script(
            "return [...document.querySelectorAll('table.jobs tbody tr[data-id]')]"
            ".map(r => Number(r.dataset.id))")

    def wait_rows(self, want, message):
        return self.b.wait_until(lambda: self.rows() == want or None, timeout=15,
                                 message=f"{message}: rows {want}")

    def hash_query(self):
        h = self.b.driver.execute_script("return location.hash")
        self.assertTrue(h.startswith("#/jobs"), h)
        return dict(urllib.parse.parse_qsl(h.partition("?")[2]))

    def test_first_page_is_the_apis_newest_first_with_states_and_waiting(self):
        self.b.console_errors()
        self.b.open("#/jobs")
        want, body = self.api_ids("limit=50")
        self.assertEqual(body["total"], 25)
        self.wait_rows(want, "newest first")
        self.assertEqual(self.b.text("[data-field='total']"), "25 jobs")
        # The pending job's row names why it waits; a running one shows its GPUs and state.
        row = self.b.wait_for(f"tr[data-id='{self.pending[-1]}']")
        self.assertIn("pending", row.text)
        self.assertRegex(row.find_element(browser.By.CSS_SELECTOR, "[data-field='waiting']").text,
                         r"\w")
        run = self.b.wait_for(f"tr[data-id='{self.running[0]}']")
        self.assertIn("2 GPUs", run.text)
        self.assertIn("running", run.text)
        stamp = run.find_element(browser.By.CSS_SELECTOR, "time")
        self.assertTrue(stamp.get_attribute("title").endswith("UTC"))
        self.assertEqual(self.b.console_errors(), [])
        self.b.screenshot("jobs")

    def test_filters_change_the_rows_to_the_apis_and_stay_in_the_url(self):
        self.b.open("#/jobs")
        self.b.wait_for("table.jobs tbody tr[data-id]")
        select = Select(self.b.wait_for("select[name='state']"))
        select.select_by_value("pending")
        want, _ = self.api_ids("state=pending&limit=50")
        self.assertEqual(len(want), 11)
        self.wait_rows(want, "state=pending")
        self.assertEqual(self.hash_query(), {"state": "pending"})
        team = self.b.wait_for("input[name='team']")
        team.send_keys("b")
        team.send_keys(browser.Keys.ENTER)
        want_b, _ = self.api_ids("state=pending&team=b&limit=50")
        self.assertTrue(want_b and len(want_b) < len(want))
        self.wait_rows(want_b, "state=pending&team=b")
        self.assertEqual(self.hash_query(), {"state": "pending", "team": "b"})
        # The back button returns to the state-only filter.
        self.b.driver.back()
        self.wait_rows(want, "back to state=pending")
        # Name, label selector and a link from elsewhere: the URL is the filter.
        self.b.go("#/jobs?name=trainer-a")
        self.wait_rows(self.api_ids("name=trainer-a")[0], "name=trainer-a")
        self.b.go("#/jobs?labels=tier%3Dgold")
        gold, body = self.api_ids("labelSelector=tier%3Dgold&limit=50")
        self.assertEqual(len(gold), 4)
        self.wait_rows(gold, "labels tier=gold")
        self.b.go("#/jobs?state=running&node=nowhere")
        self.wait_rows([], "a node without jobs")
        self.b.wait_for("table.jobs td", text="No jobs match")
        self.b.screenshot("jobs-filtered")

    def test_sort_by_name_both_ways(self):
        self.b.open("#/jobs")
        self.b.wait_for("table.jobs tbody tr[data-id]")
        self.b.wait_for("button[data-sort='name']").click()
        self.wait_rows(self.api_ids("sort=name&order=asc&limit=50")[0], "name ascending")
        th = self.b.wait_for("button[data-sort='name']").find_element(browser.By.XPATH, "..")
        self.assertEqual(th.get_attribute("aria-sort"), "ascending")
        names = self.b.driver.execute_script(
            "return [...document.querySelectorAll('table.jobs tbody [data-field=name]')]"
            ".map(e => e.textContent)")
        self.assertEqual(names, sorted(names))
        self.b.wait_for("button[data-sort='name']").click()
        self.wait_rows(self.api_ids("sort=name&order=desc&limit=50")[0], "name descending")
        self.b.wait_for("button[data-sort='team']").click()
        self.wait_rows(self.api_ids("sort=team&order=asc&limit=50")[0], "team ascending")
        self.b.wait_for("button[data-sort='state']").click()
        self.wait_rows(self.api_ids("sort=state&order=asc&limit=50")[0], "state ascending")
        self.assertEqual(self.hash_query(), {"sort": "state"})

    def test_paging_next_and_previous_with_a_small_page(self):
        self.b.open("#/jobs?sort=name&limit=4")
        p1, b1 = self.api_ids("sort=name&limit=4")
        self.wait_rows(p1, "page 1")
        self.b.wait_for("a[data-page='next']").click()
        p2, b2 = self.api_ids("sort=name&limit=4&cursor=" + urllib.parse.quote(b1["nextCursor"]))
        self.wait_rows(p2, "page 2")
        self.b.wait_for("[data-field='page']", text="Page 2")
        self.b.wait_for("a[data-page='next']").click()
        p3, _ = self.api_ids("sort=name&limit=4&cursor=" + urllib.parse.quote(b2["nextCursor"]))
        self.wait_rows(p3, "page 3")
        self.assertFalse(set(p1) & set(p2) or set(p2) & set(p3))
        self.b.wait_for("a[data-page='prev']").click()
        self.wait_rows(p2, "back to page 2")
        self.b.wait_for("a[data-page='prev']").click()
        self.wait_rows(p1, "back to page 1")
        self.assertEqual(self.b.driver.find_elements(browser.By.CSS_SELECTOR, "a[data-page='prev']"), [])
        self.b.screenshot("jobs-paged")

    def test_a_team_token_sees_only_its_team(self):
        try:
            self.b.open("#/jobs")
            self.b.driver.execute_script("sessionStorage.setItem('trainyard.token', arguments[0])",
                                         self.tb)
            self.b.driver.refresh()
            want, body = self.api_ids("limit=50", token=self.tb)
            self.assertTrue(all(j["team"] == "b" for j in body["items"]))
            self.wait_rows(want, "team b's jobs")
            teams = self.b.driver.execute_script(
                "return [...document.querySelectorAll('table.jobs tbody [data-field=team]')]"
                ".map(e => e.textContent)")
            self.assertEqual(set(teams), {"b"})
            self.b.wait_for("[data-field='total']", text=f"{body['total']} jobs")
        finally:
            self.b.driver.execute_script("sessionStorage.removeItem('trainyard.token')")

    def test_a_row_opens_the_job_and_narrow_screen_fits(self):
        self.b.open("#/jobs")
        link = self.b.wait_for(f"tr[data-id='{self.running[1]}'] a[data-field='id']")
        link.click()
        self.b.wait_until(lambda: self.b.driver.execute_script("return location.hash")
                          == f"#/jobs/{self.running[1]}", message="the job's route")
        self.b.wait_for("main h1", text=str(self.running[1]))
        narrow = browser.Browser(self.s.url, SHOTS, size=browser.NARROW)
        try:
            narrow.open("#/jobs?state=pending")
            narrow.wait_for("table.jobs tbody tr[data-id]")
            wide = narrow.driver.execute_script(
                "return document.documentElement.scrollWidth > window.innerWidth")
            self.assertFalse(wide, "the page scrolls sideways at 390 px")
            narrow.screenshot("jobs-narrow")
            self.assertEqual(narrow.console_errors(), [])
        finally:
            narrow.quit()


if __name__ == "__main__":
    SHOTS = browser.start(__doc__)
    unittest.main(verbosity=2)
