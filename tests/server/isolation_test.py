"""End-to-end isolation of jobs: a root server runs each team's workers as a user of its own,
so a job cannot read the server's state or secrets or another team's files, cannot signal
another team's processes, and cannot make the server read such files for it through links. A
server that is not root says so loudly, and `trainyard server --check` reports it.

Usage: isolation_test.py PATH/TO/trainyard [unittest args]. Needs root (skipped otherwise, with
the reason printed) and setpriv (util-linux) for the unprivileged server."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.KEEP_ISOLATION = True

FAST = "reconcileIntervalSeconds: 0.05\nretryBackoff: {initialSeconds: 0.2, maxSeconds: 1}\n"
NOBODY = 65534

# Each attempt prints "denied: NAME" or "BREACH: NAME"; the positive controls must be allowed, so
# a script that silently stopped running commands cannot pass.
ATTEMPT = 'try() { if sh -c "$2" >/dev/null 2>&1; then echo "BREACH: $1"; else echo "denied: $1"; fi; }\n' \
          'may() { if sh -c "$2" >/dev/null 2>&1; then echo "allowed: $1"; else echo "REFUSED: $1"; fi; }\n'

ATTACKS = [
    ("admin-token", 'cat "$STATE/admin.token"'),
    ("admin-token-via-run-dir", 'cat "$TRAINYARD_RUN_DIR/../../../../admin.token"'),
    ("list-state-dir-via-run-dir", 'ls "$TRAINYARD_RUN_DIR/../../.."'),
    ("store", 'cat "$STATE/state.db"'),
    ("store-wal", 'cat "$STATE/state.db-wal"'),
    ("uid-map", 'cat "$STATE/worker-uids.json"'),
    ("list-state-dir", 'ls "$STATE"'),
    ("list-jobs", 'ls "$STATE/jobs"'),
    ("write-state-dir", 'touch "$STATE/planted"'),
    ("b-log", 'cat "$STATE/jobs/$B/attempt-1/rank-0/output.log"'),
    ("b-run-dir", 'ls "$STATE/jobs/$B/attempt-1/rank-0"'),
    ("b-checkpoint-list", 'ls "$STATE/checkpoints/$B"'),
    ("b-checkpoint-file", 'cat "$STATE/checkpoints/$B/step-1/model"'),
    ("b-checkpoint-write", 'touch "$STATE/checkpoints/$B/planted"'),
    ("b-run-dir-write", 'touch "$STATE/jobs/$B/attempt-1/rank-0/planted"'),
    ("b-work-write", 'touch "$STATE/jobs/$B/attempt-1/rank-0/work/planted"'),
    ("b-metrics-write", 'echo x >> "$STATE/jobs/$B/attempt-1/rank-0/metrics.jsonl"'),
    ("b-environ", 'cat "/proc/$BPID/environ"'),
    ("signal-b-worker", 'kill -0 "$BPID"'),
    ("term-b-worker", 'kill -TERM "$BPID"'),
    ("kill-b-group", 'kill -9 "-$BPGID"'),
    ("own-pid-file", 'echo 1 > "$TRAINYARD_RUN_DIR/pid"'),
    ("own-exit-status", 'echo "exited 0" > "$TRAINYARD_RUN_DIR/exit_status"'),
    ("own-log", 'echo forged >> "$TRAINYARD_RUN_DIR/output.log"'),
    ("anonymous-api", '/usr/bin/python3 -c "import urllib.request as u; u.urlopen(\\"$API/api/v1/jobs\\")"'),
]
CONTROLS = [
    ("own-checkpoint", 'mkdir -p "$TRAINYARD_CHECKPOINT_DIR/mine" && touch "$TRAINYARD_CHECKPOINT_DIR/mine/f"'),
    ("own-work-dir", 'touch own-file && test "$(pwd)" = "$TRAINYARD_RUN_DIR/work"'),
    ("own-tmp", 'touch "$TMPDIR/t"'),
    ("own-metrics", 'echo "{\\"step\\": 1}" >> "$TRAINYARD_METRICS_FILE"'),
    ("read-own-log", 'cat "$TRAINYARD_RUN_DIR/output.log"'),
    ("list-own-run-dir", 'ls "$TRAINYARD_RUN_DIR"'),
    ("signal-own-group", 'kill -0 "-$(cut -d" " -f5 /proc/$$/stat)"'),
    ("reach-api-healthz", '/usr/bin/python3 -c "import urllib.request as u; u.urlopen(\\"$API/healthz\\")"'),
]


def script(lines):
    for _, name, cmd in lines:
        assert "'" not in cmd, name  # each command is one single-quoted word of the script
    return ATTEMPT + "".join(f"{kind} {name} '{cmd}'\n" for kind, name, cmd in lines) + "echo finished\n"


def require_root():
    if os.geteuid() != 0:
        reason = f"needs root to run workers as other users (this is uid {os.geteuid()})"
        print("SKIP isolation tests:", reason, flush=True)
        raise unittest.SkipTest(reason)


class Isolation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        cls.s = harness.Server(config=FAST, extra=["--require-auth"]).start()
        cls.admin = cls.s.admin_token()
        cls.ta = cls.s.cli("token", "create", "--team", "a", token=cls.admin).stdout.strip()
        cls.tb = cls.s.cli("token", "create", "--team", "b", token=cls.admin).stdout.strip()
        cls.state = cls.s.state_dir

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "s"):
            cls.s.stop()

    def wait_for_log(self, jid, text, token, timeout=20):
        deadline = time.time() + timeout
        while True:
            log = self.s.logs(jid, token=token)
            if text in log:
                return log
            self.assertLess(time.time(), deadline, f"job {jid} never printed {text!r}: {log}")
            time.sleep(0.1)

    def start_b(self):
        """Team B: a checkpoint, a log line and its pid, then it sleeps."""
        b = self.s.run("--name", "b-victim", "--", "sh", "-c",
                       'mkdir -p "$TRAINYARD_CHECKPOINT_DIR/step-1" && '
                       'echo b-weights > "$TRAINYARD_CHECKPOINT_DIR/step-1/model" && '
                       'echo "b-secret-line pid=$$"; exec sleep 120', token=self.tb)
        log = self.wait_for_log(b, "b-secret-line", self.tb)
        pid = int(re.search(r"pid=(\d+)", log).group(1))
        pgid = self.s.job(b, token=self.tb)["attempts"][0]["processes"][0]["pid"]
        return b, pid, pgid

    def test_a_job_reaches_nothing_of_the_server_or_of_another_team(self):
        b, bpid, bpgid = self.start_b()
        a = self.s.run("--name", "a-attacker",
                       "--env", "STATE=" + self.state, "--env", f"B={b}",
                       "--env", f"BPID={bpid}", "--env", f"BPGID={bpgid}", "--env", "API=" + self.s.url,
                       "--", "sh", "-c",
                       "echo uid=$(id -u) groups=$(id -G)\n" +
                       script([("try", n, c) for n, c in ATTACKS] + [("may", n, c) for n, c in CONTROLS]),
                       token=self.ta)
        job = self.s.wait(a, token=self.ta)
        out = self.s.cli("logs", str(a), token=self.ta).stdout
        self.assertEqual(job["state"], "succeeded", out)
        self.assertIn("finished", out)
        self.assertNotIn("BREACH", out)
        self.assertNotIn("REFUSED", out)
        for name, _ in ATTACKS:
            self.assertIn(f"denied: {name}\n", out)
        for name, _ in CONTROLS:
            self.assertIn(f"allowed: {name}\n", out)
        uid_a = int(re.search(r"uid=(\d+)", out).group(1))
        self.assertNotEqual(uid_a, 0)
        self.assertIn(f"groups={uid_a}\n", out)  # its own group, and no other
        # B was not touched: still running, its checkpoint and log as it left them.
        jb = self.s.job(b, token=self.tb)
        self.assertEqual(jb["state"], "running")
        os.kill(bpid, 0)
        with open(os.path.join(self.state, "checkpoints", str(b), "step-1", "model")) as f:
            self.assertEqual(f.read(), "b-weights\n")
        self.assertFalse(os.path.exists(os.path.join(self.state, "checkpoints", str(b), "planted")))
        self.assertFalse(os.path.exists(os.path.join(self.state, "planted")))
        self.assertNotIn("\nforged\n", self.s.cli("logs", str(a), token=self.ta).stdout)
        uid_b = os.stat(os.path.join(self.state, "checkpoints", str(b))).st_uid
        self.assertNotIn(uid_b, (0, uid_a))
        self.s.cli("cancel", str(b), token=self.tb)
        self.assertEqual(self.s.wait(b, token=self.tb)["state"], "cancelled")

    def test_links_to_the_admin_token_never_reach_an_api_reply_or_a_log(self):
        token = self.admin
        size = len(token) + 1
        manifest = ('{"format": "trainyard-checkpoint", "version": 1, "step": 2, "created": "x", '
                    '"files": [{"name": "up/admin.token", "size": %d, "sha256": ""}]}' % size)
        c = self.s.run(
            "--name", "linker", "--env", "STATE=" + self.state, "--", "sh", "-c",
            'ln -sf "$STATE/admin.token" "$TRAINYARD_METRICS_FILE" && echo metrics-linked || echo metrics-kept\n'
            'ck="$TRAINYARD_CHECKPOINT_DIR"\n'
            'mkdir -p "$ck/step-1" "$ck/step-2" && ln -s "$STATE/admin.token" "$ck/step-1/MANIFEST.json"\n'
            'ln -s "$STATE" "$ck/step-2/up" && printf \'%s\' \'' + manifest + '\' > "$ck/step-2/MANIFEST.json"\n'
            'ln -s "$STATE" "$ck/step-3"\n'
            'echo "{\\"step\\": 7, \\"loss\\": 0.5}" >> "$TRAINYARD_METRICS_FILE"\n'
            'echo planted; exec sleep 60', token=self.ta)
        self.wait_for_log(c, "planted", self.ta)
        # Another job names the state dir itself as its checkpoint.dir, so the server would list it.
        d = self.s.run("--name", "namer", "--checkpoint-dir", self.state, "--", "sh", "-c",
                       "echo named; exec sleep 60", token=self.ta)
        self.wait_for_log(d, "named", self.ta)
        log_c = self.s.cli("logs", str(c), token=self.ta).stdout
        self.assertIn("metrics-kept", log_c)  # the run dir is root's: no link can replace the file
        replies = []
        for jid in (c, d):
            for tok in (self.ta, self.admin):
                for path in (f"/api/v1/jobs/{jid}", f"/api/v1/jobs/{jid}/checkpoints",
                             f"/api/v1/jobs/{jid}/doctor", f"/api/v1/jobs/{jid}/events",
                             f"/api/v1/jobs/{jid}/telemetry"):
                    code, body = self.s.http("GET", path, token=tok)
                    replies.append(json.dumps(body))
                replies.append(self.s.cli("show", str(jid), token=tok).stdout)
                replies.append(self.s.cli("logs", str(jid), token=tok).stdout)
        with urllib.request.urlopen(self.s.url + "/metrics", timeout=10) as m:
            replies.append(m.read().decode())
        replies.append(self.s.server_log())
        everything = "\n".join(replies)
        self.assertNotIn(token, everything)
        self.assertNotIn(token[8:40], everything)
        # The job's real metrics line is still read, and the linked checkpoints are not loadable.
        shown = self.s.job(c, token=self.ta)
        self.assertEqual(shown["metrics"]["last"]["step"], 7, shown)
        self.assertNotIn("checkpoint", shown)
        code, ck = self.s.http("GET", f"/api/v1/jobs/{c}/checkpoints", token=self.ta)
        self.assertEqual(code, 200)
        self.assertTrue(all(not i["verified"] for i in ck["items"]), ck)
        code, ck = self.s.http("GET", f"/api/v1/jobs/{d}/checkpoints", token=self.ta)
        self.assertEqual((code, ck["items"]), (200, []), ck)
        for jid in (c, d):
            self.s.cli("cancel", str(jid), token=self.ta)
            self.s.wait(jid, token=self.ta)

    def test_state_dir_modes(self):
        def mode(*parts):
            return os.stat(os.path.join(self.state, *parts)).st_mode & 0o7777
        self.assertEqual(mode(), 0o711)
        self.assertEqual(mode("jobs"), 0o711)
        self.assertEqual(mode("checkpoints"), 0o711)
        for name in ("admin.token", "state.db", "server.lock", "worker-uids.json"):
            self.assertEqual(mode(name), 0o600, name)
        with open(os.path.join(self.state, "worker-uids.json")) as f:
            uids = json.load(f)["teams"]
        self.assertIn("a", uids)
        self.assertNotEqual(uids["a"], uids.get("b"))

    def test_check_reports_what_it_finds(self):
        ok = subprocess.run([harness.BIN, "server", "--check", "--require-auth", "--state",
                             os.path.join(self.state, "state.db")], capture_output=True, text=True, timeout=60)
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        self.assertIn("ok    workers run as a user of their team's own", ok.stdout)
        self.assertIn("no high-severity findings", ok.stdout)
        anon = subprocess.run([harness.BIN, "server", "--check", "--listen", "0.0.0.0:8765", "--state",
                               os.path.join(self.state, "state.db")], capture_output=True, text=True, timeout=60)
        self.assertEqual(anon.returncode, 1, anon.stdout)
        self.assertIn("HIGH  the API listens on 0.0.0.0:8765 in plain HTTP", anon.stdout)
        self.assertIn("fix: listen on 127.0.0.1", anon.stdout)


class AnonymousLoopback(unittest.TestCase):
    """Without --require-auth, loopback requests without a token act as admin for the operator,
    never for a job: the server refuses a worker's socket by its owner."""

    def test_a_job_cannot_act_as_anonymous_admin_but_the_operator_can(self):
        require_root()
        s = harness.Server(config=FAST).start()
        try:
            code, _ = s.http("GET", "/api/v1/jobs")
            self.assertEqual(code, 200, "the operator's anonymous request on loopback")
            probe = ("import json,sys,urllib.request as u,urllib.error as e\n"
                     "for m,p,b in [('GET','/api/v1/jobs',None),"
                     "('POST','/api/v1/tokens',b'{\"admin\": true}')]:\n"
                     "  r=u.Request(sys.argv[1]+p,data=b,method=m)\n"
                     "  try:\n    print('BREACH', m, p, u.urlopen(r).status)\n"
                     "  except e.HTTPError as x:\n    print('denied', m, p, x.code)\n")
            jid = s.run("--name", "anon-probe", "--", "/usr/bin/python3", "-c", probe, s.url)
            j = s.wait(jid)
            log = s.logs(jid)
            self.assertEqual(j["state"], "succeeded", log)
            self.assertIn("denied GET /api/v1/jobs 401", log)
            self.assertIn("denied POST /api/v1/tokens 401", log)
            self.assertNotIn("BREACH", log)
        finally:
            s.stop()


class ClosedAncestor(unittest.TestCase):
    def test_a_state_dir_workers_cannot_reach_stops_the_server_and_check_says_why(self):
        require_root()
        top = tempfile.mkdtemp(prefix="ty-closed-")  # mode 0700: closed to every other user
        try:
            state = os.path.join(top, "state")
            os.mkdir(state)
            s = harness.Server(state_dir=state)
            with self.assertRaises(RuntimeError) as ctx:
                s.start()
            s.stop()
            self.assertIn("cannot isolate workers", str(ctx.exception))
            self.assertIn(f"chmod o+x {top}", str(ctx.exception))
            r = subprocess.run([harness.BIN, "server", "--check", "--require-auth", "--state",
                                os.path.join(state, "state.db")], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(f"HIGH  workers cannot be isolated: uid 1900000 gid 1900000 cannot pass through {top}",
                          r.stdout)
            os.chmod(top, 0o711)
            r = subprocess.run([harness.BIN, "server", "--check", "--require-auth", "--state",
                                os.path.join(state, "state.db")], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout)
        finally:
            shutil.rmtree(top, ignore_errors=True)


class Unprivileged(unittest.TestCase):
    """The same server started as an ordinary user: it runs jobs as that user and says loudly
    that it cannot isolate them."""

    def test_non_root_server_warns_and_check_reports_it(self):
        require_root()  # to become someone else
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            self.skipTest("setpriv (util-linux) is not installed")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        top = tempfile.mkdtemp(prefix="ty-unpriv-")
        os.chmod(top, 0o755)
        state = os.path.join(top, "state")
        os.mkdir(state)
        os.chown(state, NOBODY, NOBODY)
        s = harness.Server(state_dir=state, prefix=prefix).start()
        try:
            log = s.server_log()
            self.assertIn(f"WARNING: running as uid {NOBODY}, not root", log)
            self.assertIn("--check", log)
            self.assertIn(f"workers: as this server's user, uid {NOBODY}", log)
            jid = s.run("--name", "plain", "--", "sh", "-c", "echo uid=$(id -u)")
            self.assertEqual(s.wait(jid)["state"], "succeeded")
            self.assertIn(f"uid={NOBODY}", s.logs(jid))
            r = subprocess.run(prefix + [harness.BIN, "server", "--check", "--state",
                                         os.path.join(state, "state.db")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(f"HIGH  the server runs as uid {NOBODY}", r.stdout)
            self.assertIn("fix: run `trainyard server` as root", r.stdout)
        finally:
            s.stop()
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
