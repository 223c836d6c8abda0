"""The Jobs page (#/jobs) with 100,000 jobs in the store, in headless Debian Chromium on
loopback: first paint (navigation until the table shows rows) and a filter change (the hash set
until the filtered rows show), N runs each, median and p99; plus the API calls the page makes,
timed straight. A benchmark, not a test: not in ctest. Results: docs/performance.md.

Usage: ui_jobs_bench.py PATH/TO/trainyard [--jobs 100000] [--runs 30]

The jobs are written straight into a fresh state database (one transaction) from a template row
the real server wrote, then the server starts on it: ended jobs in three states, two teams,
names from a small set, placements on four nodes."""
import argparse
import os
import random
import sqlite3
import statistics
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "web"))
import browser  # noqa: E402
from browser import harness  # noqa: E402

FILTERS = [  # (label, hash route, API query): what a filter change shows
    ("state=failed", "#/jobs?state=failed", "state=failed"),
    ("team=b, state=cancelled", "#/jobs?state=cancelled&team=b", "state=cancelled&team=b"),
    ("name=train-7", "#/jobs?name=train-7", "name=train-7"),
    ("sort by name", "#/jobs?sort=name", "sort=name"),
    ("node=node-2", "#/jobs?node=node-2", "node=node-2"),
]


def fill(db, n):
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(jobs)") if r[1] != "id"]
    tmpl = dict(zip(cols, con.execute(f"SELECT {', '.join(cols)} FROM jobs LIMIT 1").fetchone()))
    rnd = random.Random(7)
    start_us = int((time.time() - 30 * 86400) * 1e6)
    rows = []
    for i in range(n):
        r = dict(tmpl)
        state = rnd.choices(["succeeded", "failed", "cancelled"], [80, 12, 8])[0]
        node = f"node-{rnd.randrange(4)}"
        r.update(name=f"train-{rnd.randrange(200)}", team=rnd.choice("ab"), state=state,
                 submitted_us=start_us + i * 20_000_000, queued_since_us=start_us + i * 20_000_000,
                 started_us=start_us + i * 20_000_000 + 5_000_000,
                 finished_us=start_us + i * 20_000_000 + 60_000_000,
                 updated_us=start_us + i * 20_000_000 + 60_000_000,
                 placement_json=f'[{{"device":"","gpu":0,"milli":1000,"node":"{node}","worker":0}}]')
        rows.append(tuple(r[c] for c in cols))
    with con:
        con.executemany(f"INSERT INTO jobs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        rows)
    con.close()


def stats(xs):
    xs = sorted(xs)
    p99 = xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]
    return statistics.median(xs), p99


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trainyard")
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    browser.skip_if_missing()
    harness.BIN = os.path.abspath(a.trainyard)
    s = harness.Server(gpus="sim:4xH100-80GB").start()
    s.wait(s.run("--name", "template", "--", "true"))
    s.stop()
    t = time.time()
    fill(os.path.join(s.state_dir, "state.db"), a.jobs)
    print(f"wrote {a.jobs} jobs in {time.time() - t:.1f} s", flush=True)
    s.start()
    st, body = s.http("GET", "/api/v1/jobs?limit=1")
    assert st == 200 and body["total"] == a.jobs + 1, body.get("total")
    b = browser.Browser(s.url, "/tmp")
    results = []
    try:
        # The API alone: what each of the page's requests costs the server.
        for label, _, query in [("first page", "", "")] + FILTERS:
            ms = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                st, _ = s.http("GET", f"/api/v1/jobs?limit=50&{query}")
                ms.append((time.perf_counter() - t0) * 1000)
                assert st == 200
            results.append((f"API GET /api/v1/jobs?{query or 'limit=50'}", *stats(ms)))
        # First paint: a full load each run (a new query string; the files revalidate by ETag).
        b.open("#/jobs")
        b.wait_for("table.jobs tbody tr[data-id]", timeout=60)
        ms = []
        for i in range(a.runs):
            t0 = time.perf_counter()
            b.driver.get(f"{s.url}/?run={i}#/jobs")
            b.wait_for("table.jobs tbody tr[data-id]", timeout=60)
            ms.append((time.perf_counter() - t0) * 1000)
        results.append(("first paint #/jobs (load until rows show)", *stats(ms)))
        # Filter change, timed inside the page from the hash change to the new rows.
        wait_rows = """
            const done = arguments[arguments.length - 1];
            const old = document.querySelector('table.jobs tbody');
            const t0 = performance.now();
            location.hash = arguments[0];
            (function check() {
              const tb = document.querySelector('table.jobs tbody');
              if (tb && tb !== old && tb.querySelector('tr')) done(performance.now() - t0);
              else requestAnimationFrame(check);
            })();"""
        b.driver.set_script_timeout(60)
        for label, route, query in FILTERS:
            ms = []
            for _ in range(a.runs):
                b.go("#/jobs")
                b.wait_for("table.jobs tbody tr[data-id]", timeout=60)
                ms.append(b.driver.execute_async_script(wait_rows, route))
            _, want = s.http("GET", f"/api/v1/jobs?limit=50&{query}")
            got = b.driver.execute_script(
                "return [...document.querySelectorAll('table.jobs tbody tr[data-id]')]"
                ".map(r => Number(r.dataset.id))")
            assert got == [j["id"] for j in want["items"]], (label, got[:3])
            results.append((f"filter change: {label}", *stats(ms)))
    finally:
        b.quit()
        s.stop()
    print(f"\n{a.jobs:,} jobs, {a.runs} runs each, headless Chromium on loopback\n")
    print(f"| {'measure':<52} | median ms | p99 ms |")
    print(f"|{'-' * 54}|-----------|--------|")
    for label, med, p99 in results:
        print(f"| {label:<52} | {med:9.1f} | {p99:6.1f} |")


if __name__ == "__main__":
    main()
