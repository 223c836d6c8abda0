"""Crash soak of the control plane: rounds of `kill -9` of the real server while clients submit
adversarial specs (names and teams near their limits and of every allowed character class,
strings of backslashes, quotes and control characters near the size limits, invalid ones that
must be refused), cancel jobs, and high-priority jobs preempt low-priority ones.

After every restart each acknowledged job must still be there; at the end every job must have
ended (none stuck), no GPU may have been held by two attempts at once, and no process of the
server's jobs may be left. Usage:

    crash_soak.py TRAINYARD_BIN [--rounds N] [--seed S]

The default suite runs a few rounds (tests/CMakeLists.txt); `scripts/test --soak` runs 300.
Stdlib only; prints one line per round and a summary, exits 1 on any violation."""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CONFIG = """reconcileIntervalSeconds: 0.05
retryBackoff: {initialSeconds: 0.2, maxSeconds: 1}
policy: priority
minRuntimeSeconds: 0
"""
MAX_BODY = 1 << 20
TEAMS = ["a", "Team_A.b-9", "z" * 63, "0lab", "ml.research"]
BAD_TEAMS = ["has space", "tab\tteam", "", "x" * 64, "-lead", "new\nline", "nul\u0000byte"]


def job_name(rng):
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-."
    n = rng.choice([1, 5, 62, 63])
    middle = "".join(rng.choice(alphabet) for _ in range(max(0, n - 2)))
    name = ("j" + middle + "9")[:n] if n > 1 else "j"
    return name


def adversarial_string(rng, size):
    pieces = ["\\", "\"", "'", "\t", "\u00e9", "\u4e2d", "\U0001F680", "$", "{", "}", "\u001f",
              "\\u0000", "%", "&", "a"]
    return "".join(rng.choice(pieces) for _ in range(size))


def label_value(rng):
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
    n = rng.choice([1, 2, 30, 63])
    if n == 1:
        return "x"
    return "a" + "".join(rng.choice(alphabet) for _ in range(n - 2)) + "Z"


def spec(rng, team, priority, big=False, bad_team=None):
    gpus = rng.choice([1, 1, 2, 4])
    sleep = rng.choice(["0.05", "0.2", "0.5", "1"])
    env = [{"name": "NOTE", "value": adversarial_string(rng, rng.choice([1, 50, 2000]))}]
    args = ["-c", f"sleep {sleep}", "soak"]
    if big:
        # The stored JSON form of backslashes is twice as long: near the request limit.
        args.append("\\" * rng.choice([100_000, 120_000]))
        env.append({"name": "BIG", "value": adversarial_string(rng, 25_000)})
    s = {"apiVersion": "trainyard.dev/v1", "kind": "Job",
         "metadata": {"name": job_name(rng), "labels": {"soak": label_value(rng)}},
         "spec": {"team": bad_team if bad_team is not None else team,
                  "priorityClass": priority, "preemptible": priority != "high",
                  "checkpoint": {"gracePeriodSeconds": rng.choice([0, 1])},
                  "template": {"command": ["sh"], "args": args, "env": env,
                               "resources": {"limits": {"nvidia.com/gpu": gpus}}}}}
    body = json.dumps(s).encode()
    return body if len(body) <= MAX_BODY else None


class Soak:
    def __init__(self, binary, rounds, seed):
        harness.BIN = binary
        self.rounds, self.rng = rounds, random.Random(seed)
        self.server = harness.Server(config=CONFIG)
        self.acked = {}  # id -> team
        self.cancelled = set()
        self.refused_bad = 0
        self.violations = []
        self.lock = threading.Lock()

    def request(self, method, path, body=None, token=None):
        req = urllib.request.Request(self.server.url + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", "Bearer " + (token or self.admin))
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def client(self, k, stop, rng):
        submitted = 0
        while not stop.is_set() and submitted < 3:  # bounds the queue the rounds build up
            roll = rng.random()
            try:
                if roll < 0.08:
                    bad = rng.choice(BAD_TEAMS)
                    body = spec(rng, "a", "normal", bad_team=bad)
                    code, reply = self.request("POST", "/api/v1/jobs", body)
                    if code == 201:
                        self.violations.append(f"spec with team {bad!r} was accepted")
                    elif code >= 500:
                        self.violations.append(f"bad team {bad!r} gave {code}: {reply}")
                    else:
                        with self.lock:
                            self.refused_bad += 1
                    continue
                if roll < 0.15 and self.acked:
                    with self.lock:
                        jid = rng.choice(list(self.acked))
                    code, reply = self.request("POST", f"/api/v1/jobs/{jid}/cancel")
                    if code == 200:
                        with self.lock:
                            self.cancelled.add(jid)
                    elif code >= 500:
                        self.violations.append(f"cancel {jid} gave {code}: {reply}")
                    continue
                team = rng.choice(TEAMS)
                priority = rng.choice(["low", "low", "normal", "high"])
                body = spec(rng, team, priority, big=roll > 0.93)
                if body is None:
                    continue
                submitted += 1
                code, reply = self.request("POST", "/api/v1/jobs", body, token=self.tokens[team])
                if code == 201:
                    with self.lock:
                        self.acked[reply["id"]] = team
                elif code >= 500:
                    self.violations.append(f"submit gave {code}: {reply}")
            except (OSError, http.client.HTTPException):
                return  # the server died under us: nothing acknowledged
            except Exception as e:  # a reply the API must never give (not JSON, wrong shape)
                self.violations.append(f"client {k}: {e!r}")
                return

    def check_acked_present(self, round_, since):
        """Every job acknowledged in this round, and a sample of the older ones."""
        with self.lock:
            ids = list(self.acked)
        recent = ids[since:]
        older = self.rng.sample(ids[:since], min(50, since))
        for jid in recent + older:
            code, job = self.request("GET", f"/api/v1/jobs/{jid}")
            if code != 200:
                self.violations.append(f"round {round_}: acknowledged job {jid} lost ({code})")

    def run(self):
        s = self.server.start()
        self.admin = s.admin_token()
        self.tokens = {}
        for team in TEAMS:
            code, reply = self.request("POST", "/api/v1/tokens",
                                       json.dumps({"team": team}).encode())
            assert code == 201, (team, code, reply)
            self.tokens[team] = reply["token"]
        for bad in BAD_TEAMS:
            code, reply = self.request("POST", "/api/v1/tokens", json.dumps({"team": bad}).encode())
            if code == 201:
                self.violations.append(f"token for team {bad!r} was created")
        started = time.time()
        for round_ in range(1, self.rounds + 1):
            since = len(self.acked)
            stop = threading.Event()
            threads = [threading.Thread(target=self.client,
                                        args=(k, stop, random.Random(self.rng.random())))
                       for k in range(3)]
            for t in threads:
                t.start()
            time.sleep(self.rng.uniform(0.1, 0.8))
            s.kill9()
            stop.set()
            for t in threads:
                t.join()
            s.start()
            self.check_acked_present(round_, since)
            print(f"round {round_}/{self.rounds}: {len(self.acked)} acknowledged, "
                  f"{len(self.cancelled)} cancelled, {len(self.violations)} violations, "
                  f"{time.time() - started:.0f}s", flush=True)
            if self.violations:
                break
        self.finish()

    def finish(self):
        s = self.server
        # The rounds may leave a long queue on 4 GPUs (hundreds of jobs after 300 rounds): it is
        # drained while it makes progress. A job is stuck when nothing has ended for 120 s, not
        # when a fixed time is up; 60 minutes bound the whole drain.
        ended = ("succeeded", "failed", "cancelled")
        jobs = {}
        open_ids = set(self.acked)
        deadline = time.time() + 3600
        last_progress = time.time()
        while time.time() < deadline and time.time() - last_progress < 120:
            for jid in list(open_ids):
                jobs[jid] = self.request("GET", f"/api/v1/jobs/{jid}")[1]
                if jobs[jid]["state"] in ended:
                    open_ids.discard(jid)
                    last_progress = time.time()
            if not open_ids:
                break
            time.sleep(0.5)
        drain_started = time.time()
        jobs = {jid: self.request("GET", f"/api/v1/jobs/{jid}")[1] for jid in self.acked}
        print(f"drain: {len(open_ids)} job(s) not ended ({time.time() - drain_started:.0f}s to "
              "read them all back)", flush=True)
        stuck = [(jid, j["state"], j.get("reason")) for jid, j in jobs.items()
                 if j["state"] not in ("succeeded", "failed", "cancelled")]
        if stuck:
            self.violations.append(f"{len(stuck)} job(s) stuck, e.g. {stuck[:3]}")
        if len(self.acked) < 2 * self.rounds:
            self.violations.append(f"only {len(self.acked)} jobs acknowledged in {self.rounds} "
                                   "rounds: the soak's own submissions are being refused")
        failed = [(jid, j["reason"]) for jid, j in jobs.items() if j["state"] == "failed"]
        if failed:
            self.violations.append(f"{len(failed)} job(s) failed, e.g. {failed[:3]}")
        intervals = []
        for j in jobs.values():
            for a in j["attempts"]:
                if a["started"] is None:
                    continue
                for p in a["placement"]:
                    intervals.append((p.get("device"), a["started"], a["ended"] or "9999", j["id"]))
        intervals.sort()
        for a, b in zip(intervals, intervals[1:]):
            if a[0] == b[0] and a[2] > b[1]:
                self.violations.append(f"GPU {a[0]} held by jobs {a[3]} and {b[3]} at once")
        s.stop()
        orphans = processes_under(s.state_dir)
        if orphans:
            self.violations.append(f"{len(orphans)} orphaned process(es): {orphans[:5]}")
        print(f"summary: {self.rounds} rounds of kill -9, {len(self.acked)} acknowledged jobs, "
              f"{len(self.cancelled)} cancelled, {self.refused_bad} bad specs refused, "
              f"{sum(1 for j in jobs.values() if j['state'] == 'succeeded')} succeeded, "
              f"{len(stuck)} stuck, {len(failed)} failed, {len(orphans)} orphans")
        for v in self.violations[:20]:
            print("VIOLATION:", v)
        print(f"{0 if self.violations else 1} passed, {1 if self.violations else 0} failed")
        return not self.violations


def processes_under(state_dir):
    """Processes whose command line or working directory points into the state dir."""
    out = []
    root = os.path.realpath(state_dir)
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if root in cmd or cwd.startswith(root):
            out.append((int(pid), cmd[:80]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("TY_SOAK_SEED", "1")))
    a = ap.parse_args()
    soak = Soak(a.binary, a.rounds, a.seed)
    try:
        soak.run()
    finally:
        soak.server.stop()
    sys.exit(1 if soak.violations else 0)


if __name__ == "__main__":
    main()
