"""Helpers for the web UI's browser tests: a headless Debian Chromium driven by chromedriver
(python3-selenium), pointed at a real `trainyard server` (tests/server/harness.py). A page test
opens a route, waits for an element, reads the browser's console, and saves a screenshot.

Without chromium, chromedriver or selenium, missing() says what is absent and the test prints
"skipped: ..." and exits 0 (ctest's SKIP_REGULAR_EXPRESSION); scripts/setup installs them."""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402,F401  (re-exported for page tests)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDE = (1280, 800)
NARROW = (390, 844)

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
    from selenium.common.exceptions import StaleElementReferenceException
except ImportError:  # reported by missing()
    webdriver = Service = By = Keys = WebDriverWait = None
    StaleElementReferenceException = Exception


def missing():
    """What the browser tests need and this machine lacks ("" when nothing)."""
    lacks = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if webdriver is None:
        lacks.append("python3-selenium")
    return ", ".join(lacks)


def skip_if_missing():
    what = missing()
    if what:
        print(f"skipped: the web UI tests need {what} (scripts/setup installs chromium, "
              "chromium-driver and python3-selenium)")
        sys.exit(0)


def chromium_that_ends_with_its_driver(folder):
    """A launcher for Chromium that gets SIGTERM when chromedriver, its parent, ends: with the
    driver's own parent-death signal, a test that dies on any path leaves no browser behind."""
    path = os.path.join(folder, ".chromium-launcher")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\nexec setpriv --pdeathsig TERM {CHROMIUM} "$@"\n')
        os.chmod(path, 0o755)
    return path


class Browser:
    """One headless Chromium window. `shots` is the folder screenshots go to."""

    def __init__(self, base_url, shots, size=WIDE):
        self.base_url, self.shots = base_url.rstrip("/"), shots
        os.makedirs(shots, exist_ok=True)
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium_that_ends_with_its_driver(shots)
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--no-first-run", "--disable-extensions", f"--window-size={size[0]},{size[1]}",
                    "--force-device-scale-factor=1", "--lang=en-US"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # chromedriver ends with the test process on any path (it takes its Chromium along).
        service = Service(CHROMEDRIVER, popen_kw={"preexec_fn": harness.stop_when_parent_dies})
        self.driver = webdriver.Chrome(service=service, options=opts)
        self.driver.set_window_size(*size)
        self.driver.set_page_load_timeout(30)

    def quit(self):
        self.driver.quit()

    def open(self, route="#/"):
        """Loads the UI at `route` (a hash route like "#/jobs")."""
        self.driver.get(f"{self.base_url}/{route}")

    def go(self, route):
        """Changes the hash in the page already loaded, as a link does."""
        self.driver.execute_script("location.hash = arguments[0]", route)

    def wait_for(self, css, timeout=15, text=None):
        """The first element matching `css` once it is displayed (and contains `text`).

        A page that renders again replaces its elements between the search and the check;
        such a stale element is looked for again at the next poll, not an error."""
        def found(d):
            for el in d.find_elements(By.CSS_SELECTOR, css):
                if el.is_displayed() and (text is None or text in el.text):
                    return el
            return False
        return WebDriverWait(self.driver, timeout, poll_frequency=0.1,
                             ignored_exceptions=(StaleElementReferenceException,)).until(
            found, f"no visible {css}" + (f" containing {text!r}" if text else ""))

    def wait_until(self, predicate, timeout=15, message="condition"):
        """Polls `predicate()` until it is truthy; returns its value."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {message} (last: {last!r})")

    def text(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css).text

    def fields(self):
        """The page's values that carry data-field names: {name: text}."""
        # Read in one script: a polling page may replace its elements between two calls.
        return self.driver.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('[data-field]')]"
            ".map(e => [e.dataset.field, e.innerText]))")

    def console_errors(self):
        """Console messages of level SEVERE since the last call (errors, failed loads). The
        server serves /favicon.ico, so a new window's own request for it is no such error."""
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def press(self, key, times=1):
        """Sends `key` to the focused element, as a keyboard user does."""
        for _ in range(times):
            self.driver.switch_to.active_element.send_keys(key)

    def active(self):
        return self.driver.switch_to.active_element

    def screenshot(self, name):
        path = os.path.join(self.shots, f"{name}.png")
        self.driver.save_screenshot(path)
        return path


def start(doc):
    """A page test's command line: `TEST.py PATH/TO/trainyard [SCREENSHOT_DIR] [unittest args]`.
    Points the harness at the binary, exits 0 with "skipped: ..." when the browser is missing,
    and returns where screenshots go; unittest gets the rest of the arguments."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    skip_if_missing()
    shots = screenshot_dir(sys.argv.pop(1) if len(sys.argv) > 1 and not
                           sys.argv[1].startswith("-") else None)
    print(f"screenshots: {shots}", flush=True)
    return shots


def screenshot_dir(argv_dir=None):
    """Where screenshots go: the argument, else $TY_UI_SCREENSHOTS, else ./ui-screenshots."""
    return argv_dir or os.environ.get("TY_UI_SCREENSHOTS") or os.path.abspath("ui-screenshots")

