"""GET /api/v1/summary, the web UI overview's numbers, against the real server: counts match the
jobs submitted, waits grow, and a team token sees only its team; and the UI's embedded files
(GET /, /ui/...: gzip, ETag and 304, security headers). Usage: summary_e2e_test.py
PATH/TO/trainyard"""
import os
import sys
import gzip
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CONFIG = """reconcileIntervalSeconds: 0.1
teams:
  - name: vision
    budget: {usd: 50, period: day}
  - name: nlp
"""


class Summary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="sim:4xH100-80GB", config=CONFIG).start()
        cls.running = cls.s.run("--team", "vision", "--gpus", "3", "--", "sleep", "120")
        cls.s.wait(cls.running, states=("running",))
        cls.s.wait(cls.s.run("--team", "nlp", "--", "true"))
        cls.pending = cls.s.run("--team", "nlp", "--gpus", "2", "--", "sleep", "1")
        cls.tokens = {}
        for team in ("vision", "nlp"):
            st, body = cls.s.http("POST", "/api/v1/tokens", body=f'{{"team": "{team}"}}'.encode())
            assert st == 201, body
            cls.tokens[team] = body["token"]

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def get(self, token=None):
        st, body = self.s.http("GET", "/api/v1/summary", token=token)
        self.assertEqual(st, 200, body)
        return body

    def test_admin_sees_the_whole_cluster(self):
        s = self.get()
        self.assertEqual(s["scope"], "all")
        self.assertEqual(s["gpus"]["total"], 4)
        self.assertEqual(s["gpus"]["inUse"], 3)
        self.assertEqual(s["gpus"]["free"], 1)
        self.assertEqual(s["jobs"]["running"], 1)
        self.assertEqual(s["jobs"]["pending"], 1)
        self.assertEqual(s["jobs"]["succeeded"], 1)
        self.assertEqual(s["queue"]["pending"], 1)
        first = s["queue"]["waitMaxSeconds"]
        self.assertGreaterEqual(first, 0)
        self.assertEqual(s["queue"]["waitMedianSeconds"], first)  # one pending job
        time.sleep(1.1)
        self.assertGreater(self.get()["queue"]["waitMaxSeconds"], first)
        self.assertEqual([b["team"] for b in s["spend"]["budgets"]], ["vision"])
        self.assertEqual(s["spend"]["budgets"][0]["budgetUsd"], 50)
        self.assertEqual(s["spend"]["budgets"][0]["period"], "day")
        self.assertTrue(s["spend"]["since"].endswith("T00:00:00Z"))
        self.assertEqual(s["alerts"]["firing"], s["alerts"]["critical"] + s["alerts"]["warning"])

    def test_a_team_token_sees_its_team(self):
        vision = self.get(self.tokens["vision"])
        self.assertEqual(vision["scope"], "team")
        self.assertEqual(vision["jobs"]["running"], 1)
        self.assertEqual(vision["jobs"]["pending"], 0)
        self.assertEqual(vision["jobs"]["succeeded"], 0)
        self.assertEqual(vision["queue"]["pending"], 0)
        self.assertIsNone(vision["queue"]["waitMaxSeconds"])
        self.assertEqual(len(vision["spend"]["budgets"]), 1)
        nlp = self.get(self.tokens["nlp"])
        self.assertEqual(nlp["jobs"]["running"], 0)
        self.assertEqual(nlp["jobs"]["succeeded"], 1)
        self.assertEqual(nlp["queue"]["pending"], 1)
        self.assertEqual(nlp["spend"]["budgets"], [])
        self.assertEqual(nlp["gpus"]["total"], 4)  # the cluster's GPUs, as /nodes shows them

    def test_a_bad_token_is_refused(self):
        st, body = self.s.http("GET", "/api/v1/summary", token="ty_" + "0" * 64)
        self.assertEqual(st, 401, body)


    def fetch(self, path, **headers):
        req = urllib.request.Request(self.s.url + path, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def test_ui_files_are_served_without_a_token(self):
        st, h, body = self.fetch("/")
        self.assertEqual(st, 200)
        self.assertEqual(h["Content-Type"], "text/html; charset=utf-8")
        self.assertIn(b'src="/ui/app.js"', body)
        self.assertEqual(h["X-Content-Type-Options"], "nosniff")
        self.assertIn("default-src 'self'", h["Content-Security-Policy"])
        self.assertNotIn("Content-Encoding", h)
        st, h, packed = self.fetch("/ui/app.js", **{"Accept-Encoding": "br, gzip;q=0.8"})
        self.assertEqual((st, h["Content-Encoding"]), (200, "gzip"))
        self.assertTrue(h["Content-Type"].startswith("text/javascript"))
        _, _, raw = self.fetch("/ui/app.js", **{"Accept-Encoding": "gzip;q=0"})
        self.assertEqual(gzip.decompress(packed), raw)
        self.assertNotEqual(h["ETag"], self.fetch("/ui/app.js")[1]["ETag"])
        st, h304, body = self.fetch("/ui/app.js", **{"Accept-Encoding": "gzip",
                                                     "If-None-Match": h["ETag"]})
        self.assertEqual((st, body), (304, b""))
        st, _, _ = self.fetch("/ui/app.css", **{"If-None-Match": '"nope"'})
        self.assertEqual(st, 200)
        self.assertEqual(self.fetch("/ui/missing.js")[0], 404)
        # The icon, also where browsers look for it unasked.
        st, h, icon = self.fetch("/favicon.ico")
        self.assertEqual((st, h["Content-Type"]), (200, "image/svg+xml"))
        self.assertIn(b"<svg", icon)


if __name__ == "__main__":
    harness.BIN = sys.argv.pop(1)
    unittest.main(verbosity=2)
