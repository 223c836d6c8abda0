#!/usr/bin/env python3
"""Start latency, Slurm executor vs local executor: from the scheduler's decision (the job's
Transition event to `placed`, stamped when the plan is applied, before anything is launched)
to the rank's process running (its command's first action writes time.time()-like `date
+%s.%N` to a file). Both servers run on this machine, side by side in one run: one with
`--gpus sim:4xH100-80GB` (local executor), one driving a private loopback Slurm cluster
(scripts/slurm-cluster: real slurmctld/slurmd/sbatch/srun, 2 nodes x 2 GRES h100). Jobs are
submitted one at a time (the next only after the previous one ended), alternating between the
two servers, so both see the same machine load. Same clock on both sides (one machine).

Usage (root; Debian's slurmctld, slurmd, slurm-client, munge):
  /usr/bin/python3 bench/slurm_start_latency.py build/ci/cli/trainyard [-n 20] [--poll 0.3]
Prints a Markdown table: median, p99 (nearest rank) and max per executor, and the ratio.
Stops the cluster and both servers on the way out, also on failure."""
import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "server"))
import harness  # noqa: E402
import slurm_harness as sh  # noqa: E402


def api_time(text):
    """'2026-11-26T00:21:43.348Z' -> seconds since the epoch."""
    t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def percentile(values, p):
    v = sorted(values)
    rank = max(1, min(len(v), math.ceil(p * len(v))))
    return v[rank - 1]


def spec(name, out_file):
    return json.dumps({
        "apiVersion": "trainyard.dev/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"workers": 1,
                 "template": {"command": ["sh", "-c", f"date +%s.%N > {out_file}"],
                              "resources": {"limits": {"nvidia.com/gpu": 1}}}}})


def one_job(server, out_dir, name):
    """Submits one job, waits for it to end; returns (placed->process s, submit->placed s)."""
    out_file = os.path.join(out_dir, name)
    path = os.path.join(server.state_dir, f"{name}.json")
    with harness.private_file(path) as f:
        f.write(spec(name, out_file))
    job_id = server.submit_file(path)
    j = server.wait(job_id, timeout=120)
    if j["state"] != "succeeded":
        raise RuntimeError(f"{name}: job {job_id} ended {j['state']}: {j}")
    events = j["events"]
    placed = [e for e in events if e["type"] == "Transition" and e["to"] == "placed"]
    submitted = [e for e in events if e["type"] == "Submitted"]
    if not placed or not os.path.exists(out_file):
        raise RuntimeError(f"{name}: no placed event or no start file: {events}")
    with open(out_file) as f:
        started = float(f.read().split()[0])
    t_placed = api_time(placed[0]["time"])
    t_submit = api_time(submitted[0]["time"]) if submitted else t_placed
    return started - t_placed, t_placed - t_submit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trainyard", help="path to the trainyard binary")
    ap.add_argument("-n", type=int, default=20, help="jobs per executor (default 20)")
    ap.add_argument("--poll", type=float, default=0.3,
                    help="the Slurm executor's pollSeconds (default 0.3)")
    args = ap.parse_args()
    harness.BIN = os.path.realpath(args.trainyard)
    why = sh.available()
    if why:
        print(f"slurm_start_latency: cannot run: {why}", file=sys.stderr)
        return 2

    out_dir = tempfile.mkdtemp(prefix="ty-start-latency-")
    os.chmod(out_dir, 0o1777)  # workers may run as other users
    common = "reconcileIntervalSeconds: 0.1\n"
    cluster = local = slurm = None
    results = {"local": [], "slurm": []}
    queued = {"local": [], "slurm": []}
    try:
        cluster = sh.SlurmCluster().start()
        # slurm_server's config already sets reconcileIntervalSeconds: 0.1.
        slurm = sh.slurm_server(cluster, "", poll_seconds=args.poll).start()
        local = harness.Server(gpus="sim:4xH100-80GB", config=common).start()
        # One warm-up job each (first sbatch, first srun, page cache), not counted.
        one_job(local, out_dir, "warm-local")
        one_job(slurm, out_dir, "warm-slurm")
        for i in range(args.n):
            for kind, server in (("local", local), ("slurm", slurm)):
                lat, q = one_job(server, out_dir, f"{kind}-{i:03d}")
                results[kind].append(lat)
                queued[kind].append(q)
                print(f"  {kind:5s} job {i + 1:2d}: placed -> running {lat * 1e3:8.1f} ms",
                      file=sys.stderr, flush=True)
    finally:
        for s in (local, slurm):
            if s is not None:
                s.stop()
                shutil.rmtree(s.state_dir, ignore_errors=True)
                shutil.rmtree(getattr(s, "shared_dir", ""), ignore_errors=True)
        if cluster is not None:
            cluster.stop(clean=True)
        shutil.rmtree(out_dir, ignore_errors=True)

    print(f"\nStart latency: placed event -> rank's process running, {args.n} one-GPU jobs per "
          f"executor, one at a time (reconcile every 0.1 s; Slurm pollSeconds {args.poll}).\n")
    print("| executor | median ms | p99 ms | max ms | min ms | submit -> placed median ms |")
    print("|---|---|---|---|---|---|")
    for kind in ("local", "slurm"):
        v = results[kind]
        print(f"| {kind} | {statistics.median(v) * 1e3:.1f} | {percentile(v, 0.99) * 1e3:.1f} | "
              f"{max(v) * 1e3:.1f} | {min(v) * 1e3:.1f} | "
              f"{statistics.median(queued[kind]) * 1e3:.1f} |")
    ratio_med = statistics.median(results["slurm"]) / statistics.median(results["local"])
    ratio_p99 = percentile(results["slurm"], 0.99) / percentile(results["local"], 0.99)
    print(f"\nslurm / local: median x{ratio_med:.1f}, p99 x{ratio_p99:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
