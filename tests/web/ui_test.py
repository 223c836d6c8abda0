"""The web UI in Debian's real Chromium, against the real server with simulated GPUs and real
jobs: the overview loads without console errors and shows the API's numbers, the nav links and
keyboard focus work, the token prompt guards a server that requires tokens, and every page is
saved as a screenshot (wide and narrow).

Usage: ui_test.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]. Skips (exit 0) without
chromium, chromedriver or python3-selenium. Page tests add methods to UiPages or sibling files
using browser.py."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from browser import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.1\n"
SHOTS = None
PAGES = [("#/", "Overview", "overview"), ("#/gpus", "GPUs", "gpus"), ("#/jobs", "Jobs", "jobs"),
         ("#/queues", "Queues", "queues"), ("#/cost", "Cost", "cost")]


def expected_fields(summary):
    """The overview's numbers as the page should write them, from GET /api/v1/summary."""
    f = {f"gpus.{k}": str(summary["gpus"][k]) for k in ("inUse", "free", "idleAllocated")}
    f.update({f"jobs.{state}": str(n) for state, n in summary["jobs"].items()})
    f["queue.pending"] = str(summary["queue"]["pending"])
    f["queue.held"] = str(summary["queue"]["held"])
    f["alerts.firing"] = str(summary["alerts"]["firing"])
    return f


class UiPages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="sim:4xH100-80GB", config=FAST).start()
        # A running job (2 GPUs), one waiting for GPUs (4), one that ended, one cancelled.
        cls.running = cls.s.run("--gpus", "2", "--name", "trainer", "--", "sleep", "120")
        cls.s.wait(cls.running, states=("running",))
        cls.s.wait(cls.s.run("--name", "quick", "--", "true"))
        cls.s.cli("cancel", str(cls.s.run("--gpus", "4", "--name", "later", "--", "sleep", "1")))
        # Last: the queue is first come, first served, so nothing after it would start.
        cls.pending = cls.s.run("--gpus", "4", "--name", "big", "--", "sleep", "1")
        cls.b = browser.Browser(cls.s.url, SHOTS)

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        cls.s.stop()

    def open_overview(self):
        self.b.open("#/")
        self.b.wait_for("[data-field='gpus.inUse']")

    def test_overview_shows_the_apis_numbers_without_console_errors(self):
        self.b.console_errors()
        self.open_overview()
        st, summary = self.s.http("GET", "/api/v1/summary")
        self.assertEqual(st, 200)
        self.assertEqual(summary["jobs"]["running"], 1)
        self.assertEqual(summary["jobs"]["pending"], 1)
        self.assertEqual(summary["gpus"]["inUse"], 2)
        want = expected_fields(summary)
        # The page polls: it shows these numbers at its next refresh at the latest.
        got = self.b.wait_until(
            lambda: (lambda f: f if all(f.get(k) == v for k, v in want.items()) else None)(
                self.b.fields()), timeout=15, message=f"overview fields {want}")
        self.assertEqual(got["gpus.headline"], "2 of 4 GPUs")
        self.assertRegex(got["queue.waitMax"], r"^\d+ (s|min)")
        self.assertEqual(self.b.driver.title, "Overview · trainyard")
        self.assertTrue(self.b.text("#live").startswith("Updated"))
        self.b.wait_for(".chart canvas")
        self.assertEqual(self.b.console_errors(), [])
        self.b.screenshot("overview")

    def test_overview_follows_the_cluster(self):
        self.open_overview()
        before = int(self.b.fields()["jobs.cancelled"])
        self.s.cli("cancel", str(self.s.run("--gpus", "4", "--name", "gone", "--", "true")))
        self.b.wait_until(lambda: self.b.fields().get("jobs.cancelled") == str(before + 1),
                          timeout=15, message="jobs.cancelled to count the new job")

    def test_nav_links_open_each_page(self):
        self.open_overview()
        self.b.console_errors()
        for route, title, name in PAGES:
            link = self.b.wait_for(f"#nav a[href='{route}']")
            link.click()
            self.b.wait_until(lambda: self.b.driver.execute_script("return location.hash") == route,
                              message=f"hash {route}")
            self.b.wait_for("main h1", text=title)
            self.assertEqual(link.get_attribute("aria-current"), "page")
            self.b.screenshot(f"page-{name}")
        self.b.go(f"#/jobs/{self.running}")
        self.b.wait_for("main h1", text=f"Job {self.running}")
        self.b.go("#/no-such-page")
        self.b.wait_for("main h1", text="Page not found")
        self.assertEqual(self.b.console_errors(), [])

    def test_keyboard_focus_is_visible(self):
        self.open_overview()  # a fresh page: focus starts at the top
        self.b.press(browser.Keys.TAB)
        first = self.b.active()
        self.assertEqual(first.text, "trainyard")
        self.b.press(browser.Keys.TAB)
        link = self.b.active()
        self.assertEqual(link.get_dom_attribute("href"), "#/")
        style = self.b.driver.execute_script(
            "const s = getComputedStyle(arguments[0]); return [s.outlineStyle, s.outlineWidth]", link)
        self.assertNotEqual(style[0], "none")
        self.assertGreaterEqual(float(style[1].rstrip("px")), 2)
        self.b.press(browser.Keys.TAB)
        self.b.press(browser.Keys.ENTER)  # the GPUs link, by keyboard
        self.b.wait_for("main h1", text="GPUs")
        self.b.screenshot("keyboard-focus")

    def test_narrow_screen(self):
        narrow = browser.Browser(self.s.url, SHOTS, size=browser.NARROW)
        try:
            narrow.open("#/")
            narrow.wait_for("[data-field='gpus.inUse']")
            width = narrow.driver.execute_script("return document.documentElement.scrollWidth")
            self.assertLessEqual(width, browser.NARROW[0], "the overview scrolls sideways")
            narrow.screenshot("overview-narrow")
        finally:
            narrow.quit()

    def test_assets_are_cached_and_compressed(self):
        self.open_overview()
        timing = self.b.driver.execute_script(
            "return performance.getEntriesByType('resource').filter(e => e.name.includes('/ui/'))"
            ".map(e => [e.name, e.encodedBodySize, e.decodedBodySize])")
        self.assertTrue(any(n.endswith("/ui/app.js") for n, _, _ in timing), timing)
        total = sum(enc for _, enc, _ in timing)
        self.assertLess(total, 300 * 1024, f"first load of the overview: {timing}")
        for name, enc, dec in timing:
            if name.endswith(".js"):
                self.assertLess(enc, dec, f"{name} was not sent compressed")


class UiTokenPrompt(unittest.TestCase):
    """A server that requires tokens: the UI asks for one and keeps it for the tab."""

    def test_prompt_then_overview(self):
        s = harness.Server(gpus="sim:2xH100-80GB", config=FAST, extra=["--require-auth"]).start()
        b = browser.Browser(s.url, SHOTS)
        try:
            b.open("#/")
            dialog = b.wait_for("#token-dialog")
            self.assertIn("token", dialog.text.lower())
            b.wait_for("#error", text="401")
            b.screenshot("token-prompt")
            field = b.wait_for("#token-input")
            field.send_keys("ty_" + "0" * 64 + browser.Keys.ENTER)
            b.wait_for("#token-dialog", text="")  # refused again: the prompt comes back
            b.wait_until(lambda: b.driver.find_element(browser.By.ID, "token-dialog")
                         .get_attribute("open") is not None, message="the prompt to reopen")
            field = b.wait_for("#token-input")
            field.send_keys(s.admin_token() + browser.Keys.ENTER)
            b.wait_for("[data-field='gpus.inUse']")
            self.assertEqual(b.fields()["gpus.free"], "2")
            stored = b.driver.execute_script("return sessionStorage.getItem('trainyard.token')")
            self.assertEqual(stored, s.admin_token())
        finally:
            b.quit()
            s.stop()


if __name__ == "__main__":
    SHOTS = browser.start(__doc__)
    unittest.main(verbosity=2)
