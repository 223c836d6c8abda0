"""Crash soak of the Slurm executor: rounds of `kill -9` of the real server while clients submit
a mix of jobs to a real loopback Slurm cluster (scripts/slurm-cluster): 1- and 2-GPU jobs,
2-worker gangs (across nodes or packed), low-priority preemptible jobs that trap SIGTERM, save
a step counter and exit 75, high-priority jobs that preempt them, short and longer ones, and a
cancel now and then. The server restarts after every kill and re-adopts its Slurm jobs.

A background thread samples `squeue --json` every 0.3 s over the whole run. At the end, after
every job has ended (or the bound has passed), it checks:
  1. lost:       every job the API acknowledged is in `trainyard ls`;
  2. GPUs:       no GPU held by two attempts at once: in every squeue sample no node's RUNNING
                 trainyard jobs hold more GPUs than it has (nor one GPU index twice), the same
                 over the final squeue's start/end times, and no two attempts of different jobs
                 overlap in time on one node's GPU in trainyard's own records;
  3. duplicates: at most one Slurm job (het leader) per attempt tag trainyard:<inst>:<job>:<n>
                 over the whole run (squeue keeps ended jobs, MinJobAge=3600), and never two
                 attempts of one job RUNNING in Slurm at once;
  4. orphans:    no PENDING/RUNNING trainyard-tagged Slurm job once every job has ended;
  5. stuck:      every job ends (succeeded, failed or cancelled) within the bound.
Usage:

    slurm_crash_soak.py TRAINYARD_BIN [--rounds N] [--seed S] [--nodes K] [--drain-seconds D]

Needs root and Slurm's Debian packages; exits 0 with a note (skipped) otherwise. The default
suite runs a few rounds (tests/CMakeLists.txt); `scripts/soak` runs 50. Stdlib only; prints one
line per round and a summary table, exits 1 on any violation (and keeps the server's state dir
and the cluster's logs for the evidence)."""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import slurm_harness as sh  # noqa: E402

CONFIG = """policy: priority
minRuntimeSeconds: 0
retryBackoff: {initialSeconds: 0.2, maxSeconds: 1}
"""
GPUS_PER_NODE = 2
CLIENTS = 4
MAX_BACKLOG = 12  # jobs not ended above which a round submits little
ENDED = ("succeeded", "failed", "cancelled")
HOLDS = ("RUNNING",)  # a Slurm job in this state holds its GPUs
ACTIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "RESIZING", "SIGNALING", "STOPPED", "REQUEUE_HOLD", "REQUEUE_FED")

# A preemptible job's work: a step counter in its checkpoint dir (one per rank), saved on the
# notice (SIGTERM) before exit 75; the next attempt resumes from it.
LOW = ('f="$TRAINYARD_CHECKPOINT_DIR/step-$RANK"; step=$(cat "$f" 2>/dev/null || echo 0); '
       'trap \'echo $step > "$f"; exit 75\' TERM; '
       'while [ $step -lt {steps} ]; do step=$((step+1)); sleep 0.2; done; echo done step=$step')


def job_spec(name, command, workers=1, gpus=1, priority=100, preemptible=False):
    return {"apiVersion": "trainyard.dev/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"workers": workers, "priority": priority, "preemptible": preemptible,
                     "checkpoint": {"gracePeriodSeconds": 5},
                     "template": {"command": ["sh", "-c", command],
                                  "resources": {"limits": {"nvidia.com/gpu": gpus}}}}}


def random_job(rng):
    """(kind, spec): the mix of the soak."""
    roll = rng.random()
    sleep = lambda lo, hi: f"sleep {rng.uniform(lo, hi):.1f}"  # noqa: E731
    if roll < 0.28:
        workers, gpus = rng.choice([(1, 1), (1, 1), (1, 2), (2, 1)])
        steps = rng.randint(10, 30)  # 2-6 s of work
        return "low", job_spec("low", LOW.format(steps=steps), workers, gpus, priority=10,
                               preemptible=True)
    if roll < 0.42:
        return "high", job_spec("high", sleep(0.3, 2), 1, rng.choice([1, 2]), priority=1000)
    if roll < 0.62:
        return "gpu1", job_spec("one", sleep(0.2, 2))
    if roll < 0.72:
        return "gpu2", job_spec("two", sleep(0.5, 2.5), 1, 2)
    if roll < 0.82:
        return "gang2x1", job_spec("gang", sleep(0.5, 2.5), 2, 1)
    if roll < 0.93:
        return "gang2x2", job_spec("wide", sleep(0.3, 1.5), 2, 2)
    return "long", job_spec("long", sleep(4, 8), 1, rng.choice([1, 1, 2]))


def parse_time(t):
    if t is None:
        return None
    if isinstance(t, (int, float)):
        return float(t)
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def expand_hostlist(s):
    """n1,n[2-3,5] -> [n1, n2, n3, n5]."""
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", s or ""):
        m = re.match(r"(.*)\[(.*)\]$", part)
        if not m:
            out.append(part)
            continue
        for r in m.group(2).split(","):
            a, _, b = r.partition("-")
            for i in range(int(a), int(b or a) + 1):
                out.append(f"{m.group(1)}{i:0{len(a)}d}")
    return out


def gres_gpus(detail):
    """'gpu:h100:2(IDX:0-1)' -> (2, {0, 1})."""
    m = re.match(r"gpu(?::[^:(]+)?:(\d+)(?:\(IDX:([^)]*)\))?", detail or "")
    if not m:
        return 0, set()
    idx = set()
    for r in (m.group(2) or "").split(","):
        if r and r != "N/A":
            a, _, b = r.partition("-")
            idx.update(range(int(a), int(b or a) + 1))
    return int(m.group(1)), idx


def tres_gpus(tres):
    """'gres:gpu:2', 'gres/gpu:h100=2' -> 2."""
    m = re.search(r"gpu(?:[:=][A-Za-z0-9_.-]+)?[:=](\d+)", tres or "")
    return int(m.group(1)) if m else 0


def state_of(j):
    s = j.get("job_state")
    return s if isinstance(s, str) else (s[0] if s else "")


def is_leader(j):
    return j.get("het_job_offset", 0) in (0, None)


def leader_of(j):
    return j.get("het_job_id") or j["job_id"]


class Sampler(threading.Thread):
    """Samples squeue --json every `interval` s: per node, the GPUs of RUNNING trainyard jobs."""

    def __init__(self, cluster, gpus_per_node, interval=0.3):
        super().__init__(daemon=True)
        self.cluster, self.gpus, self.interval = cluster, gpus_per_node, interval
        self.stop = threading.Event()
        self.samples = self.failures = 0
        self.max_per_node = {}
        self.over = []        # (when, node, gpus, jobs)
        self.index_twice = []  # (when, node, idx, jobs)
        self.attempts_at_once = []  # (when, job, {attempt: leader})
        self.seen_leaders = {}  # comment -> set of leader ids ever seen

    def run(self):
        while not self.stop.is_set():
            try:
                jobs = self.cluster.jobs()
            except Exception:  # noqa: BLE001 (squeue timing out under load: try again)
                self.failures += 1
                self.stop.wait(self.interval)
                continue
            self.check(jobs)
            self.stop.wait(self.interval)

    def check(self, jobs):
        when = time.time()
        self.samples += 1
        gpus_on, idx_on, running_attempts = {}, {}, {}
        for j in jobs:
            comment = j.get("comment") or ""
            if not comment.startswith("trainyard:"):
                continue
            if is_leader(j):
                self.seen_leaders.setdefault(comment, set()).add(j["job_id"])
            if state_of(j) not in HOLDS:
                continue
            _, inst, job, attempt = comment.split(":", 3)
            running_attempts.setdefault((inst, job), {})[attempt] = leader_of(j)
            nodes = expand_hostlist(j.get("nodes"))
            for k, detail in enumerate(j.get("gres_detail") or []):
                if k >= len(nodes):
                    break
                n, idx = gres_gpus(detail)
                gpus_on.setdefault(nodes[k], []).append((j["job_id"], comment, n))
                for i in idx:
                    idx_on.setdefault((nodes[k], i), []).append((j["job_id"], comment))
        for node, held in gpus_on.items():
            total = sum(n for _, _, n in held)
            self.max_per_node[node] = max(self.max_per_node.get(node, 0), total)
            if total > self.gpus:
                self.over.append((when, node, total, held))
        for (node, i), held in idx_on.items():
            if len(held) > 1:
                self.index_twice.append((when, node, i, held))
        for job, attempts in running_attempts.items():
            if len(attempts) > 1:
                self.attempts_at_once.append((when, job, attempts))


class Soak:
    def __init__(self, binary, rounds, seed, nodes, drain_seconds):
        # A private copy: every restart runs the same binary even if the build dir is rebuilt
        # meanwhile. Workers (other users) run it as their wrapper: the dir lets them pass.
        self.bin_dir = tempfile.mkdtemp(prefix="ty-soak-bin-")
        os.chmod(self.bin_dir, 0o755)
        harness.BIN = os.path.join(self.bin_dir, "trainyard")
        shutil.copy2(binary, harness.BIN)
        self.rounds, self.rng, self.drain_seconds = rounds, random.Random(seed), drain_seconds
        self.nodes = nodes
        self.cluster = sh.SlurmCluster(nodes=nodes, gpus_per_node=GPUS_PER_NODE)
        self.server = None
        self.sampler = None
        self.acked = {}  # id -> kind
        self.cancelled = set()
        self.kinds = {}
        self.violations = []  # (check, text)
        self.rows = {}  # check -> (count, detail)
        self.lock = threading.Lock()
        self.started = time.time()

    def violation(self, check, text):
        with self.lock:
            self.violations.append((check, text))

    def request(self, method, path, body=None, timeout=10):
        req = urllib.request.Request(self.server.url + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", "Bearer " + self.admin)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def client(self, k, stop, rng, submissions):
        for _ in range(submissions):
            if stop.wait(rng.uniform(0, 0.6)):
                return
            try:
                if rng.random() < 0.12 and self.acked:
                    with self.lock:
                        jid = rng.choice(list(self.acked)[-12:])
                    code, reply = self.request("POST", f"/api/v1/jobs/{jid}/cancel")
                    if code == 200:
                        with self.lock:
                            self.cancelled.add(jid)
                    elif code >= 500:
                        self.violation("api", f"cancel {jid} gave {code}: {reply}")
                    continue
                kind, spec = random_job(rng)
                code, reply = self.request("POST", "/api/v1/jobs", json.dumps(spec).encode())
                if code == 201:
                    with self.lock:
                        self.acked[reply["id"]] = kind
                        self.kinds[kind] = self.kinds.get(kind, 0) + 1
                elif code >= 500:
                    self.violation("api", f"submit gave {code}: {reply}")
            except (OSError, http.client.HTTPException):
                return  # the server died under us: nothing acknowledged
            except Exception as e:  # noqa: BLE001 (a reply the API must never give)
                self.violation("api", f"client {k}: {e!r}")
                return

    def check_acked_present(self, round_, since):
        with self.lock:
            ids = list(self.acked)
        for jid in ids[since:] + self.rng.sample(ids[:since], min(20, since)):
            code, _ = self.request("GET", f"/api/v1/jobs/{jid}")
            if code != 200:
                self.violation("lost", f"round {round_}: acknowledged job {jid} gave {code}")

    def run(self):
        self.cluster.start()
        self.sampler = Sampler(self.cluster, GPUS_PER_NODE)
        self.sampler.start()
        self.server = sh.slurm_server(self.cluster, CONFIG)
        s = self.server.start()
        self.admin = s.admin_token()
        backlog = 0
        for round_ in range(1, self.rounds + 1):
            since = len(self.acked)
            stop = threading.Event()
            # A bounded backlog keeps the rounds' kills among running work, not a long queue.
            per_client = [self.rng.choice([1, 2, 2]) if backlog < MAX_BACKLOG else
                          self.rng.choice([0, 0, 1]) for _ in range(CLIENTS)]
            threads = [threading.Thread(target=self.client,
                                        args=(k, stop, random.Random(self.rng.random()), n))
                       for k, n in enumerate(per_client)]
            for t in threads:
                t.start()
            # The server runs a random while: launches, preemptions, ends; then dies mid-way.
            time.sleep(self.rng.uniform(0.2, 3.5))
            s.kill9()
            stop.set()
            for t in threads:
                t.join()
            time.sleep(self.rng.choice([0, 0, 0.5, 1.5]))  # jobs end while no server runs
            s.start()
            self.check_acked_present(round_, since)
            backlog = sum(1 for j in self.all_jobs() if j["state"] not in ENDED)
            print(f"round {round_}/{self.rounds}: {len(self.acked)} acknowledged, "
                  f"{backlog} not ended, "
                  f"{len(self.cancelled)} cancelled, {len(self.violations)} violations, "
                  f"{time.time() - self.started:.0f}s", flush=True)
        self.finish()

    # ---- the end ----
    def all_jobs(self):
        out = json.loads(self.server.cli("ls", "--limit", "1000", "-o", "json").stdout)
        return out["items"] if isinstance(out, dict) else out

    def show(self, jid):
        return json.loads(self.server.cli("show", str(jid), "-o", "json", timeout=30).stdout)

    def finish(self):
        s, c = self.server, self.cluster
        last_round = time.time()
        deadline = last_round + self.drain_seconds
        states = {}
        while time.time() < deadline:
            states = {j["id"]: j["state"] for j in self.all_jobs()}
            if all(st in ENDED for st in states.values()):
                break
            time.sleep(1)
        drained = time.time() - last_round
        stuck = {jid: st for jid, st in states.items() if st not in ENDED}
        print(f"drain: {drained:.0f}s after the last round, {len(stuck)} job(s) not ended",
              flush=True)
        evidence = {}
        for jid in sorted(stuck):
            j = self.show(jid)
            evidence[jid] = j
            self.violation("stuck", f"job {jid} ({self.acked.get(jid)}) still {j['state']} "
                                    f"{drained:.0f}s after the last round: {j.get('reason')}")
        if stuck:  # end them so that the other checks can run on an idle cluster
            for jid in stuck:
                s.cli("cancel", str(jid), check=False)
            sh.wait_for(lambda: all(j["state"] in ENDED for j in self.all_jobs()), timeout=60,
                        what="the stuck jobs to end after a cancel", interval=1)

        # (1) lost
        listed = self.all_jobs()
        assert len(listed) < 1000, "more jobs than `ls --limit 1000` shows"
        listed_ids = {j["id"] for j in listed}
        lost = sorted(set(self.acked) - listed_ids)
        for jid in lost:
            self.violation("lost", f"acknowledged job {jid} ({self.acked[jid]}) not in ls")
        self.rows["1 acknowledged jobs lost"] = (len(lost), f"{len(self.acked)} acknowledged")

        # (4) orphans: give the server's sweep and Slurm's completion a moment, then look.
        try:
            sh.wait_for(lambda: not c.active_jobs(), timeout=45, interval=1,
                        what="no active trainyard-tagged Slurm jobs")
        except AssertionError:
            pass
        orphans = c.active_jobs()
        for o in orphans:
            self.violation("orphan", f"Slurm job {o['job_id']} ({o.get('comment')}) still "
                                     f"{state_of(o)} after every trainyard job ended")
        self.rows["4 orphaned Slurm jobs"] = (len(orphans), "active tagged jobs at the end")
        self.sampler.stop.set()
        self.sampler.join()
        final = c.jobs()
        self.sampler.check(final)

        # (3) duplicates: one het leader per attempt tag, over the final squeue and all samples.
        leaders = {}
        for j in final:
            comment = j.get("comment") or ""
            if comment.startswith("trainyard:") and is_leader(j):
                leaders.setdefault(comment, set()).add(j["job_id"])
        for comment, ids in self.sampler.seen_leaders.items():
            leaders.setdefault(comment, set()).update(ids)
        dups = {cm: ids for cm, ids in leaders.items() if len(ids) > 1}
        for cm, ids in sorted(dups.items()):
            self.violation("duplicate", f"{cm}: Slurm jobs {sorted(ids)}")
        twice = {}
        for when, job, attempts in self.sampler.attempts_at_once:
            twice.setdefault(job, (when, attempts))
        for job, (when, attempts) in sorted(twice.items()):
            self.violation("duplicate", f"job {job[1]}: attempts {attempts} (attempt: Slurm "
                                        f"job) RUNNING at once in Slurm at {when:.1f}")
        self.rows["3 duplicate Slurm jobs per attempt"] = (
            len(dups), f"{len(leaders)} attempt tags in Slurm")
        self.rows["3b attempts of one job running at once"] = (
            len(twice), "from the squeue samples")

        # (2) GPUs: Slurm's samples, Slurm's final start/end times, trainyard's attempts.
        for when, node, total, held in self.sampler.over[:20]:
            self.violation("gpu", f"squeue at {when:.1f}: {node} held {total} GPUs: {held}")
        for when, node, i, held in self.sampler.index_twice[:20]:
            self.violation("gpu", f"squeue at {when:.1f}: {node} GPU {i} held by {held}")
        self.rows["2a GPUs over a node's count (squeue samples)"] = (
            len(self.sampler.over) + len(self.sampler.index_twice),
            f"{self.sampler.samples} samples, max per node "
            f"{max(self.sampler.max_per_node.values(), default=0)}/{GPUS_PER_NODE}")
        over_final = self.check_final_intervals(final)
        self.rows["2b GPUs over a node's count (final squeue times)"] = (
            over_final, f"{sum(1 for j in final if (j.get('comment') or '').startswith('trainyard:'))}"
                        " tagged Slurm job records")
        jobs = {j["id"]: self.show(j["id"]) for j in listed}
        overlaps, attempts = self.check_trainyard_placements(jobs)
        self.rows["2c GPUs of two attempts at once (trainyard)"] = (
            overlaps, f"{attempts} attempts with a placement")
        mismatched, checked = self.check_attempts_match_slurm(jobs, final)
        self.rows["2d attempts whose Slurm job is not theirs"] = (
            mismatched, f"{checked} attempts naming their Slurm job")
        self.rows["5 jobs stuck"] = (len(stuck), f"all ended {drained:.0f}s after the last round"
                                     if not stuck else f"bound {self.drain_seconds}s")

        # Not violations, but worth a look: failures and how jobs ended.
        ends = {}
        for j in jobs.values():
            ends[j["state"]] = ends.get(j["state"], 0) + 1
        failed = [(jid, self.acked.get(jid), j.get("reason")) for jid, j in jobs.items()
                  if j["state"] == "failed"]
        preempted = sum(1 for j in jobs.values() for a in j["attempts"]
                        if "preempt" in (a.get("outcome") or ""))
        self.report(ends, failed, preempted, evidence)

    def check_final_intervals(self, final):
        """From Slurm's own start/end times (seconds) of every tagged job record, the GPUs in use
        on each node never exceed its count (half-open intervals)."""
        events = {}
        now = time.time()
        for j in final:
            if not (j.get("comment") or "").startswith("trainyard:"):
                continue
            start, end = j.get("start_time") or 0, j.get("end_time") or 0
            if start <= 0 or state_of(j) == "PENDING":
                continue
            if state_of(j) in ACTIVE:
                end = max(end, now)
            n = tres_gpus(j.get("tres_per_node"))
            for node in expand_hostlist(j.get("nodes")):
                if end > start and n:
                    events.setdefault(node, []).extend([(start, n, j["job_id"]),
                                                        (end, -n, j["job_id"])])
        count = 0
        for node, ev in events.items():
            ev.sort(key=lambda e: (e[0], e[1]))  # ends before starts at the same second
            held = 0
            for t, n, jid in ev:
                held += n
                if n > 0 and held > GPUS_PER_NODE:
                    count += 1
                    self.violation("gpu", f"final squeue: {node} held {held} GPUs at {t} "
                                          f"(Slurm job {jid} started)")
        return count

    def check_trainyard_placements(self, jobs):
        intervals = {}
        attempts = 0
        for j in jobs.values():
            for a in j.get("attempts", []):
                if a.get("started") is None or not a.get("placement"):
                    continue
                attempts += 1
                start = parse_time(a["started"])
                end = parse_time(a["ended"]) if a.get("ended") else float("inf")
                for p in a["placement"]:
                    if p.get("gpu", -1) is None or p.get("gpu", -1) < 0:
                        continue
                    intervals.setdefault((p["node"], p["gpu"]), []).append(
                        (start, end, j["id"], a["attempt"]))
        count = 0
        for (node, gpu), iv in intervals.items():
            iv.sort()
            open_ = []
            for start, end, jid, att in iv:
                open_ = [o for o in open_ if o[1] > start]
                for o in open_:
                    if o[2] != jid:
                        count += 1
                        self.violation("gpu", f"trainyard: {node} GPU {gpu} held by job {o[2]} "
                                              f"attempt {o[3]} and job {jid} attempt {att} at once")
                open_.append((start, end, jid, att))
        return count, attempts

    def check_attempts_match_slurm(self, jobs, final):
        by_id = {j["job_id"]: j for j in final}
        count = checked = 0
        for j in jobs.values():
            for a in j.get("attempts", []):
                for b in {p.get("batch_job") for p in a.get("processes") or []} - {None, 0}:
                    checked += 1
                    sj = by_id.get(b)
                    tag = f":{j['id']}:{a['attempt']}"
                    if sj is None or not (sj.get("comment") or "").endswith(tag):
                        count += 1
                        self.violation("gpu", f"job {j['id']} attempt {a['attempt']} names Slurm "
                                              f"job {b}, which is "
                                              f"{sj.get('comment') if sj else 'not in squeue'}")
        return count, checked

    def report(self, ends, failed, preempted, evidence):
        wall = time.time() - self.started
        print(f"\nsummary: {self.rounds} rounds of kill -9 on {self.nodes} Slurm nodes x "
              f"{GPUS_PER_NODE} GPUs, {len(self.acked)} acknowledged jobs "
              f"({', '.join(f'{k} {v}' for k, v in sorted(self.kinds.items()))}), "
              f"{len(self.cancelled)} cancels, {preempted} preempted attempts, ended: "
              f"{', '.join(f'{k} {v}' for k, v in sorted(ends.items()))}; "
              f"{self.sampler.samples} squeue samples ({self.sampler.failures} failed); "
              f"wall {wall:.0f}s")
        width = max(len(k) for k in self.rows)
        print(f"  {'check'.ljust(width)}  violations  detail")
        for k, (n, detail) in sorted(self.rows.items()):
            print(f"  {k.ljust(width)}  {n:>10}  {detail}")
        if failed:
            print(f"note: {len(failed)} job(s) failed, e.g. {failed[:3]}")
        for check, v in self.violations[:40]:
            print(f"VIOLATION [{check}]: {v}")
        for jid, j in list(evidence.items())[:5]:
            print(f"evidence: job {jid}: " + json.dumps(j)[:3000])
        if self.violations:
            print(f"evidence kept: server state and log in {self.server.state_dir}, "
                  f"cluster logs in {self.cluster.dir}/log")
        print(f"{0 if self.violations else 1} passed, {1 if self.violations else 0} failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("TY_SOAK_SEED", "1")))
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--drain-seconds", type=int, default=240,
                    help="bound for every job to end after the last round")
    a = ap.parse_args()
    why = sh.available()
    if why:
        print(f"skipped: {why}")
        return 0
    # A TERM (a timeout) still stops the server and the cluster (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    soak = Soak(os.path.abspath(a.binary), a.rounds, a.seed, a.nodes, a.drain_seconds)
    try:
        soak.run()
    except BaseException:
        soak.violation("harness", "the soak itself stopped early (traceback above)")
        raise
    finally:
        if soak.sampler:
            soak.sampler.stop.set()
        if soak.server:
            soak.server.stop()
        soak.cluster.stop(clean=not soak.violations)
        shutil.rmtree(soak.bin_dir, ignore_errors=True)
    return 1 if soak.violations else 0


if __name__ == "__main__":
    sys.exit(main())
