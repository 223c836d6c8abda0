"""What gradient compression buys trainyard.distributed's DDP, in one run on this machine.

Two local ranks (gloo on CPU, one thread each) train the same MLP (4 linear layers, about
10.5M parameters at --hidden 2048) on the same regression task (each rank cycles through 8
batches of its own, targets from a fixed random teacher network; Adam by default), once per
compression: none (fp32 all-reduce), fp16 (fp16_compress_hook) and PowerSGD (rank
--powersgd-rank with error feedback and warm start; plain all-reduce for the first
--start-iter steps). The table shows, from the metrics each rank reports:

  bytes/step     what the communication hook handed to all-reduce per step and rank (PowerSGD:
                 its compressed steps), counted per call; the ratio is to "none"
  step, compute  mean wall seconds per step and the part that is not communication
  comm wait      time the training thread waited on communication that backward did not hide
                 (plus compression work on that thread)
  comm busy      time some bucket's communication was in flight, overlapped or not
  loss           mean over both ranks and the last 10 steps, and its difference from "none"

Step times skip the first 3 steps (and PowerSGD's plain steps); the loss curve lists the mean
loss of both ranks every --every steps. The loss check passes when compressed runs end within
--tolerance (relative) of the uncompressed one.

    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_ddp_bench.py              # 60 steps
    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_ddp_bench.py --quick      # 20 steps, 1024
"""

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ("none", "fp16", "powersgd")
DIM = 512  # input and output width


def model_and_data(torch, args, rank):
    torch.manual_seed(0)
    h = args.hidden
    model = torch.nn.Sequential(torch.nn.Linear(DIM, h), torch.nn.ReLU(), torch.nn.Linear(h, h),
                                torch.nn.ReLU(), torch.nn.Linear(h, h), torch.nn.ReLU(),
                                torch.nn.Linear(h, DIM))
    teacher = torch.nn.Sequential(torch.nn.Linear(DIM, 64), torch.nn.Tanh(),
                                  torch.nn.Linear(64, DIM))
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own shard of the data
    xs = torch.randn(8, args.batch, DIM, generator=g)
    with torch.no_grad():
        ys = teacher(xs) * 4
    return model, xs, ys


def rank_main(args):
    import torch
    from trainyard import distributed
    torch.set_num_threads(1)
    ctx = distributed.init(timeout_s=300)
    out = {}
    for mode in MODES:
        model, xs, ys = model_and_data(torch, args, ctx.rank)
        dm = distributed.wrap(model, compression=mode, powersgd_rank=args.powersgd_rank,
                              powersgd_start_iter=args.start_iter)
        opt = (torch.optim.Adam(model.parameters(), lr=args.lr) if args.optimizer == "adam" else
               torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9))
        rows = []
        dm.stats()
        for step in range(args.steps):
            t0 = time.perf_counter()
            loss = torch.nn.functional.mse_loss(dm(xs[step % 8]), ys[step % 8])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            s = dm.report(step=step + 1, loss=loss.item(), step_time_s=time.perf_counter() - t0,
                          compression=mode)
            rows.append(dict(s, loss=loss.item()))
        out[mode] = {"rows": rows, "params": sum(p.numel() for p in model.parameters())}
        ctx.barrier()
    ctx.close()
    with open(args.out, "w") as f:
        json.dump(out, f)


def launch(args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="ty-ddp-bench-")
    procs, outs = [], []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   TRAINYARD_METRICS_FILE=os.path.join(tmp, "metrics%d.jsonl" % rank))
        out = os.path.join(tmp, "rank%d.json" % rank)
        argv = [sys.executable, os.path.abspath(__file__), "--rank-out", out] + args.passthrough
        procs.append(subprocess.Popen(argv, env=env))
        outs.append(out)
    for p in procs:
        if p.wait() != 0:
            sys.exit("a rank failed (exit %d); its output is above" % p.returncode)
    results = [json.load(open(o)) for o in outs]
    return results, tmp


def summarize(results, args):
    table, curves = [], {}
    for mode in MODES:
        rows = [r[mode]["rows"] for r in results]
        first = args.start_iter if mode == "powersgd" else 0
        timed = range(max(3, first), args.steps)
        mean = lambda key: statistics.mean(rows[0][i][key] for i in timed)  # noqa: E731
        losses = [statistics.mean(r[i]["loss"] for r in rows) for i in range(args.steps)]
        curves[mode] = losses
        table.append({"mode": mode, "params": results[0][mode]["params"],
                      "bytes": statistics.median(rows[0][i]["comm_bytes"] for i in
                                                 range(first, args.steps)),
                      "step": mean("step_time_s"), "compute": mean("compute_s"),
                      "wait": mean("comm_wait_s"), "busy": mean("comm_s"),
                      "loss": statistics.mean(losses[-10:])})
    return table, curves


def print_report(table, curves, args, wall):
    base = table[0]
    print("DDP, 2 ranks, gloo on CPU (%s, %d cores, torch threads 1 per rank); %d steps, "
          "batch %d per rank, %.1fM parameters, %s lr %g; PowerSGD rank %d from step %d" % (
              platform.processor() or platform.machine(), os.cpu_count(), args.steps, args.batch,
              base["params"] / 1e6, args.optimizer, args.lr, args.powersgd_rank,
              args.start_iter + 1))
    print()
    print("| compression | bytes/step | none / this | step s | compute s | comm wait s | "
          "comm busy s | loss (last 10) | vs none |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in table:
        print("| %s | %s | %.1fx | %.3f | %.3f | %.3f | %.3f | %.5f | %+.2f%% |" % (
            t["mode"], "{:,}".format(int(t["bytes"])), base["bytes"] / t["bytes"], t["step"],
            t["compute"], t["wait"], t["busy"], t["loss"],
            100 * (t["loss"] - base["loss"]) / base["loss"]))
    print()
    marks = list(range(0, args.steps, args.every)) + [args.steps - 1]
    print("loss curve (mean of both ranks), step: " + " ".join("%6d" % (i + 1) for i in marks))
    for mode in MODES:
        print("  %-10s " % mode + " " * 21 + " ".join("%6.4f" % curves[mode][i] for i in marks))
    print()
    ok = True
    for t in table[1:]:
        rel = abs(t["loss"] - base["loss"]) / base["loss"]
        ok &= rel <= args.tolerance
        print("loss check %s: |%.5f - %.5f| / %.5f = %.2f%% %s %.0f%% tolerance" % (
            t["mode"], t["loss"], base["loss"], base["loss"], 100 * rel,
            "<=" if rel <= args.tolerance else ">", 100 * args.tolerance))
    ratio = base["bytes"] / table[-1]["bytes"]
    print("bytes check powersgd: %.1fx fewer bytes per step than none (target >= 10x): %s" % (
        ratio, "ok" if ratio >= 10 else "MISSED"))
    print("wall time %.0f s; load average %s" % (wall, " ".join("%.2f" % x for x in
                                                                os.getloadavg())))
    return ok and ratio >= 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--optimizer", choices=("adam", "sgd"), default="adam",
                    help="sgd: momentum 0.9 (pass --lr 0.1)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--powersgd-rank", type=int, default=2)
    ap.add_argument("--start-iter", type=int, default=10)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--quick", action="store_true", help="20 steps, --hidden 1024")
    ap.add_argument("--rank-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.steps, args.hidden, args.start_iter, args.every = 20, 1024, 5, 5
    if args.rank_out:
        args.out = args.rank_out
        rank_main(args)
        return
    args.passthrough = [a for a in sys.argv[1:] if a != "--quick"]
    if args.quick:
        args.passthrough += ["--steps", "20", "--hidden", "1024", "--start-iter", "5"]
    t0 = time.perf_counter()
    results, tmp = launch(args)
    table, curves = summarize(results, args)
    ok = print_report(table, curves, args, time.perf_counter() - t0)
    print("metrics lines: %s/metrics{0,1}.jsonl" % tmp)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
