"""End to end: a real PyTorch DDP job (examples/train/ddp_train.py, gloo on the CPU) on a real
loopback Slurm cluster (scripts/slurm-cluster, nodes n1 and n2 with 2 GPUs each) driven by
`trainyard server` with the Slurm executor and the `priority` policy.

The job has 2 workers that each ask for 2 GPUs, a whole node, so the scheduler must put one
rank on n1 and one on n2; each rank prints SLURMD_NODENAME, which the test reads back from the
logs (the hostname is the same machine for both nodes on loopback). After the job has trained
past its first checkpoint, a non-preemptible job with priority 1000 that needs 2 GPUs arrives:
the DDP job gets the notice (scancel --signal=TERM to every rank, and the notice file), both
ranks stop at the same step, rank 0 saves, both exit 75, and the job goes back to pending. Its
attempt 2 must resume from that step on both ranks and finish, and its final result (last
step's loss, whole-data loss, SHA-256 of the parameters) must equal, bit for bit, that of an
uninterrupted reference run of the same script with the same world size, run directly as two
local processes with torch.distributed on loopback (no trainyard, no Slurm).

Usage: slurm_ddp_test.py PATH/TO/trainyard. Skips (exit 0, saying why) without root and Slurm
(slurm_harness.available()) or without torch for /usr/bin/python3. Set TY_KEEP=1 to keep the
cluster's and the server's directories for inspection.
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import slurm_harness  # noqa: E402
from slurm_harness import SlurmCluster, slurm_server, wait_for  # noqa: E402

PYTHON = "/usr/bin/python3"
SCRIPT = os.path.join(harness.REPO, "examples", "train", "ddp_train.py")
SDK = os.path.join(harness.REPO, "sdk", "python")
STEPS = 120
DELAY = 0.15          # seconds per step under Slurm: ~18 s of training, time to preempt it
PREEMPT_AFTER = 25    # steps; the first background checkpoint is at 20
TRAIN_ARGS = ["--steps", str(STEPS), "--checkpoint-every", "20"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reference_run(workdir):
    """The uninterrupted run: two local processes, rank 0 and 1, on loopback."""
    port = free_port()
    out = os.path.join(workdir, "reference.json")
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2",
                   RANK=str(rank), PYTHONPATH=SDK)
        for k in [k for k in env if k.startswith("TRAINYARD_")]:
            del env[k]
        logf = open(os.path.join(workdir, f"reference-rank{rank}.log"), "w")
        procs.append((subprocess.Popen(
            [PYTHON, SCRIPT] + TRAIN_ARGS + ["--checkpoint-dir", os.path.join(workdir, "ref-ckpt"),
                                             "--out", out, "--timeout", "120"],
            env=env, stdout=logf, stderr=subprocess.STDOUT), logf))
    try:
        for p, logf in procs:
            rc = p.wait(timeout=150)
            logf.close()
            if rc != 0:
                with open(logf.name) as f:
                    raise AssertionError(f"reference rank exited {rc}:\n{f.read()}")
    finally:
        for p, logf in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            logf.close()
    with open(out) as f:
        return json.load(f)


def ddp_spec(out_path):
    return {"apiVersion": "trainyard.dev/v1", "kind": "Job",
            "metadata": {"name": "ddp-train"},
            "spec": {"workers": 2, "priorityClass": "normal", "preemptible": True,
                     "backoffLimit": 0,
                     "checkpoint": {"gracePeriodSeconds": 60},
                     "template": {
                         "command": [PYTHON, SCRIPT],
                         "args": TRAIN_ARGS + ["--step-delay", str(DELAY), "--out", out_path],
                         "env": {"PYTHONPATH": SDK},
                         # 2 GPUs each, a whole node: one rank per node.
                         "resources": {"limits": {"nvidia.com/gpu": 2, "cpu": 1,
                                                  "memory": "1Gi"}}}}}


def urgent_spec():
    return {"apiVersion": "trainyard.dev/v1", "kind": "Job",
            "metadata": {"name": "urgent"},
            "spec": {"priority": 1000, "preemptible": False,
                     "template": {
                         "command": ["sh", "-c", "echo urgent on $SLURMD_NODENAME; sleep 3"],
                         "resources": {"limits": {"nvidia.com/gpu": 2, "cpu": 1,
                                                  "memory": "256Mi"}}}}}


def submit(server, spec, workdir):
    path = os.path.join(workdir, spec["metadata"]["name"] + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return server.submit_file(path)


def logs(server, job_id, attempt, rank):
    r = server.cli("logs", str(job_id), "--attempt", str(attempt), "--rank", str(rank),
                   check=False)
    return r.stdout if r.returncode == 0 else ""


def node_of(text):
    m = re.search(r"ddp_train: rank \d+/\d+ on node (\S+)", text)
    return m.group(1) if m else None


def start_step_of(text):
    m = re.search(r"attempt \d+: (?:resuming from|starting from) step (\d+)", text)
    return int(m.group(1)) if m else None


def notice_step_of(text):
    m = re.search(r"notice at step (\d+)", text)
    return int(m.group(1)) if m else None


def last_step_of(text):
    steps = re.findall(r"^step (\d+) loss", text, re.M)
    return int(steps[-1]) if steps else 0


def spurious_interruptions(server, j, trained):
    """Attempts other than the preempted one and the final one: there must be none (an executor
    that ended a freshly started Slurm job, taking a stale squeue answer for a requeue, once made
    such attempts)."""
    extra = []
    for a in j["attempts"][:-1]:
        if a["attempt"] == trained:
            continue
        statuses = [p.get("status", "") for p in a.get("processes") or []]
        extra.append((a["attempt"], a["outcome"], a["exitCode"], statuses))
    assert not extra, f"attempts nobody preempted were ended: {extra}"
    return []


def diagnostics(cluster, server, job_ids):
    """What a failure needs: the jobs as trainyard sees them, Slurm's output per attempt, the
    server log's tail, the Slurm daemons' logs."""
    out = []
    for jid in job_ids:
        try:
            j = server.job(jid)
            out.append(f"--- job {jid}: state {j['state']} attempt {j['attempt']} "
                       f"reason {j.get('reason')!r} waiting {j.get('waiting')!r}")
            for a in j.get("attempts") or []:
                out.append(f"  attempt {a['attempt']}: {a['outcome']} exit {a['exitCode']} "
                           f"{[p.get('status') for p in a.get('processes') or []]}")
            for a in range(1, j["attempt"] + 1):
                for r in range(j.get("workers", 1)):
                    out.append(f"--- logs job {jid} attempt {a} rank {r}\n"
                               + logs(server, jid, a, r)[-3000:])
        except Exception as e:  # diagnostics must not hide the failure
            out.append(f"--- job {jid}: {e}")
    shared = getattr(server, "shared_dir", None)
    if shared:
        for path in sorted(glob.glob(os.path.join(shared, "jobs", "*", "attempt-*",
                                                  "slurm-*.out"))):
            with open(path, errors="replace") as f:
                out.append(f"--- {path}\n" + f.read()[-3000:])
    try:
        out.append("--- server log (tail)\n" + "".join(
            server.server_log().splitlines(True)[-80:]))
    except Exception as e:
        out.append(f"--- server log: {e}")
    try:
        out.append("--- squeue\n" + cluster.run("squeue", "-a", "-t", "all", check=False).stdout)
        out.append(cluster.log_tail(30))
    except Exception as e:
        out.append(f"--- slurm: {e}")
    return "\n".join(out)


def main():
    why = slurm_harness.available()
    if why is None:
        r = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True, text=True)
        if r.returncode != 0:
            why = f"{PYTHON} cannot import torch (apt-get install python3-torch)"
    if why is not None:
        print(f"SKIP slurm_ddp_test: {why}", flush=True)
        return 0

    t_start = time.time()
    keep = os.environ.get("TY_KEEP") == "1"
    workdir = tempfile.mkdtemp(prefix="ty-ddp-")
    os.chmod(workdir, 0o711)
    # The job's result file: its workers may run as a team's own user.
    outdir = os.path.join(workdir, "out")
    os.mkdir(outdir)
    os.chmod(outdir, 0o1777)
    ddp_out = os.path.join(outdir, "ddp.json")

    log("reference: an uninterrupted run as two local processes (gloo on loopback)")
    reference = reference_run(workdir)
    log(f"reference result: {reference}")

    cluster = SlurmCluster(nodes=2, gpus_per_node=2)
    server = None
    job_ids = []
    ok = False
    try:
        log(f"starting the Slurm cluster in {cluster.dir}")
        cluster.start()
        server = slurm_server(cluster, config_extra="policy: priority\nminRuntimeSeconds: 0\n").start()
        log(f"server at {server.url}, state {server.state_dir}, shared {server.shared_dir}")

        ddp = submit(server, ddp_spec(ddp_out), workdir)
        job_ids.append(ddp)
        log(f"submitted DDP job {ddp}")

        # Train past the first checkpoint (at step 20), then bring in the urgent job. The
        # attempt that trains is normally attempt 1; see spurious_interruptions() for why it
        # may be a later one.
        def training_attempt():
            j = server.job(ddp)
            if j["state"] != "running":
                return None
            a = j["attempt"]
            return a if last_step_of(logs(server, ddp, a, 0)) >= PREEMPT_AFTER else None
        trained = wait_for(training_attempt, timeout=90, interval=0.3,
                           what=f"the DDP job to reach step {PREEMPT_AFTER}")
        urgent = submit(server, urgent_spec(), workdir)
        job_ids.append(urgent)
        log(f"attempt {trained} reached step {PREEMPT_AFTER}; submitted urgent job {urgent} "
            f"(priority 1000, 2 GPUs, not preemptible)")

        # Placement: each rank prints its Slurm node.
        nodes = [node_of(logs(server, ddp, trained, r)) for r in (0, 1)]
        log(f"attempt {trained}: rank 0 on {nodes[0]}, rank 1 on {nodes[1]}")
        assert set(nodes) == {"n1", "n2"}, f"ranks should run on n1 and n2, got {nodes}"
        # ... where trainyard's scheduler put them.
        placed = {p["worker"]: p["node"]
                  for p in server.job(ddp)["attempts"][trained - 1]["placement"]}
        assert placed == {0: nodes[0], 1: nodes[1]}, f"placement {placed}, ran on {nodes}"

        # The preemption: the job goes back to pending with the next attempt.
        j = wait_for(lambda: (lambda j: j if j["attempt"] > trained else None)(server.job(ddp)),
                     timeout=90, what="the DDP job to be preempted and requeued")
        log(f"DDP job after the preemption: state {j['state']}, attempt {j['attempt']}, "
            f"waiting: {j.get('waiting')!r}")
        # It cannot run again before the urgent job (3 s on one of the two nodes) is done.
        assert j["state"] == "pending", f"the preempted job should wait, it is {j['state']}"
        pre = j["attempts"][trained - 1]
        log(f"attempt {trained} ended: outcome {pre['outcome']!r}, exit code {pre['exitCode']}")
        assert pre["outcome"] == "preempted" and pre["exitCode"] == 75, pre
        notice = [notice_step_of(logs(server, ddp, trained, r)) for r in (0, 1)]
        log(f"attempt {trained}: notice seen at steps {notice} (rank 0, rank 1)")
        assert notice[0] is not None and notice[0] == notice[1], \
            f"both ranks must stop at the same step, got {notice}"
        assert notice[0] >= PREEMPT_AFTER

        u = server.wait(urgent, timeout=90)
        assert u["state"] == "succeeded", f"urgent job ended {u['state']}"
        log(f"urgent job: {logs(server, urgent, u['attempt'], 0).strip()}")

        j = server.wait(ddp, timeout=150)
        assert j["state"] == "succeeded", f"DDP job ended {j['state']}: {j.get('reason')}"
        final = j["attempt"]
        spurious = spurious_interruptions(server, j, trained)
        assert final == trained + 1 + sum(1 for a in spurious if a > trained), \
            f"the attempt after the preemption should finish the job: {j['attempts']}"
        starts = [start_step_of(logs(server, ddp, final, r)) for r in (0, 1)]
        nodes2 = [node_of(logs(server, ddp, final, r)) for r in (0, 1)]
        log(f"attempt {final}: ranks on {nodes2}, resumed from steps {starts}")
        assert starts == [notice[0], notice[0]], \
            f"attempt {final} should resume both ranks from step {notice[0]}, got {starts}"
        assert set(nodes2) == {"n1", "n2"}, f"attempt {final} ranks should run on n1 and n2"

        with open(ddp_out) as f:
            result = json.load(f)
        log(f"preempted and resumed result: {result}")
        assert result == reference, \
            f"resumed run differs from the uninterrupted one:\n {result}\n {reference}"
        log(f"PASS: identical final loss {result['loss']!r}, eval loss "
            f"{result['eval_loss']!r}, parameters {result['params_sha256'][:16]}...; "
            f"{time.time() - t_start:.0f} s in all"
            + (f"; {len(spurious)} attempts ended by the executor at their start (see WARNING)"
               if spurious else ""))
        ok = True
    except BaseException:
        if server is not None and server.proc is not None:
            print(diagnostics(cluster, server, job_ids), flush=True)
        raise
    finally:
        if server is not None:
            server.stop()
        cluster.stop(clean=not keep and ok)
        if keep or not ok:
            log(f"kept: cluster {cluster.dir}, work {workdir}"
                + (f", server {server.state_dir}, shared {server.shared_dir}" if server else ""))
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            if server is not None:
                shutil.rmtree(server.state_dir, ignore_errors=True)
                shutil.rmtree(server.shared_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else harness.BIN
    sys.exit(main())
