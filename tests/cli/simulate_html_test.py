"""`trainyard simulate --html FILE` end to end: a small Philly run on the Tiresias testbed writes
one self-contained HTML page; Debian's headless Chromium opens it from a file:// URL with no
console errors and no network requests, draws its charts, and its table has the numbers of the
text table printed by the same run, of summary.json and of the per-job CSVs. A screenshot goes
to the output folder.

Usage: simulate_html_test.py PATH/TO/trainyard SOURCE_DIR [SCREENSHOT_DIR]. Skips (exit 0)
without chromium, chromedriver or python3-selenium."""
import csv
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "web"))
import browser  # noqa: E402

POLICIES = ["fifo", "srtf", "tiresias"]


def duration(s):
    """sim::format_duration_s."""
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{s / 60:.1f}m"
    if s < 86400 * 2:
        return f"{s / 3600:.2f}h"
    return f"{s / 86400:.2f}d"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, src = sys.argv[1], sys.argv[2]
    shots = browser.screenshot_dir(sys.argv[3] if len(sys.argv) > 3 else None)
    browser.skip_if_missing()
    tmp = browser.harness.scratch_dir("ty-sim-html-")
    trace = os.path.join(tmp, "trace.csv")
    with open(os.path.join(src, "tests", "data", "philly-sample.csv")) as f, open(trace, "w") as out:
        for i, line in enumerate(f):
            if i > 300:
                break
            out.write(line)
    page = os.path.join(tmp, "report.html")
    r = subprocess.run([binary, "simulate", "--trace", trace, "--cluster",
                        os.path.join(src, "examples", "clusters", "tiresias-testbed.yaml"),
                        "--policy", ",".join(POLICIES), "--out", os.path.join(tmp, "out"),
                        "--html", page], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"simulate exited {r.returncode}: {r.stderr}")
    if f"wrote {page}" not in r.stdout:
        fail(f"no 'wrote {page}' line: {r.stdout}")
    size = os.path.getsize(page)
    if size > 400_000:
        fail(f"the page is {size} bytes; the series should be downsampled")
    html = open(page).read()
    if re.search(r"<(script|link|img)[^>]+(src|href)=", html):
        fail("the page loads another file")

    # The text table of the same run: header, then a row per policy.
    lines = r.stdout.splitlines()
    head_at = next(i for i, l in enumerate(lines) if l.startswith("policy "))
    text_head = re.split(r"\s{2,}", lines[head_at].strip())
    text_rows = {l.split()[0]: l.split() for l in lines[head_at + 1:head_at + 1 + len(POLICIES)]}
    with open(os.path.join(tmp, "out", "summary.json")) as f:
        summary = json.load(f)

    b = browser.Browser("file://", shots)
    try:
        b.driver.get("file://" + page)
        b.wait_for("#policy-table")
        b.wait_until(lambda: b.driver.execute_script("return document.body.dataset.ready"),
                     message="the report drawn")
        head = b.driver.execute_script(
            "return [...document.querySelectorAll('#policy-table thead th')].map(e => e.textContent)")
        cells = b.driver.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('#policy-table tbody tr')]"
            ".map(tr => [tr.dataset.row, [...tr.children].map(c => c.textContent)]))")
        if head != text_head:
            fail(f"table header {head} != the text table's {text_head}")
        if sorted(cells) != sorted(POLICIES):
            fail(f"rows {sorted(cells)}")
        for p in POLICIES:
            if cells[p] != text_rows[p]:
                fail(f"{p}: html {cells[p]} != text {text_rows[p]}")
            s = summary["policies"][p]
            col = {h: v for h, v in zip(head, cells[p])}
            total = s["jobs_finished"] + s["jobs_unfinished"]
            want = {"finished": f"{s['jobs_finished']}/{total}", "avg JCT": duration(s["avg_jct_s"]),
                    "p99 JCT": duration(s["p99_jct_s"]), "avg queue": duration(s["avg_queue_s"]),
                    "makespan": duration(s["makespan_s"]),
                    "GPU alloc": f"{s['gpu_allocation'] * 100:.1f}%",
                    "Jain": f"{s['jain_index_over_teams']:.3f}"}
            for k, v in want.items():
                if col[k] != v:
                    fail(f"{p} {k}: html {col[k]} != summary.json {v}")
            with open(os.path.join(tmp, "out", f"jobs-{p}.csv")) as f:
                jobs = list(csv.DictReader(f))
            if len(jobs) != s["jobs_finished"]:
                fail(f"{p}: jobs-{p}.csv has {len(jobs)} jobs, the table {col['finished']}")
        canvases = b.driver.execute_script("return document.querySelectorAll('canvas').length")
        if canvases < 3:
            fail(f"{canvases} charts drawn, want 3")
        legends = b.driver.execute_script(
            "return [...document.querySelectorAll('#r-cdf ~ .chart .u-legend .u-label, "
            "section[aria-labelledby=r-cdf] .u-legend .u-label')].map(e => e.textContent)")
        for p in POLICIES:
            if p not in legends:
                fail(f"the CDF's legend lacks {p}: {legends}")
        requests = b.driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        if requests:
            fail(f"the page made requests: {requests}")
        errors = b.console_errors()
        if errors:
            fail(f"console errors: {errors}")
        b.screenshot("simulate-report")
    finally:
        b.quit()
    print(f"simulate --html test passed ({size} bytes; screenshot in {shots})")


if __name__ == "__main__":
    main()
