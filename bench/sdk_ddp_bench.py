"""What gradient compression buys trainyard.distributed's DDP, in one run on this machine.

Two local ranks (gloo on CPU, one thread each) train the same MLP (4 linear layers, about
10.5M parameters at --hidden 2048) on the same regression task (each rank cycles through 8
batches of its own, targets from a fixed random teacher network), once per optimizer and
compression. The default optimizer is SGD with momentum 0.9 and lr 0.5, as PowerSGD was
designed and evaluated for (Vogels et al., 2019), at a learning rate where this task learns in
60 steps (loss 1.2 -> ~0.5; at lr 0.1 it barely moves, which made any compression look
harmless); compressions none (fp32 all-reduce), fp16 (fp16_compress_hook) and PowerSGD (rank
--powersgd-rank with error feedback and warm start; plain all-reduce for the first
--start-iter steps, 10% of the run by default). --also-adam (on by default) adds Adam (lr
3e-4) with none and PowerSGD, shown but not checked.

PowerSGD does not reach the 5% tolerance here at rank 2, with either optimizer: each step's
gradient has rank up to 16 per layer (batch 16, white-noise inputs), and a rank-r
approximation with error feedback passes r directions a step, so 54 compressed steps lag
behind. The gap shrinks with the rank (SGD, 60 steps, measured on 2 loaded cores: rank 2
+77% at 315x fewer bytes, rank 8 +27% at 93x, rank 16 +12% at 48x; Adam: rank 2 +85%,
rank 8 +29%); it is the approximation, not the wrapping (test_distributed_powersgd.py checks
trainyard's hook against torch's bit for bit). Inputs near a 32-dim subspace made it worse
(none learns faster: +237% at rank 2). Judge PowerSGD on your own model over a few hundred
steps. The table shows, from each rank's metrics:

  bytes/step     what the communication hook handed to all-reduce per step and rank (PowerSGD:
                 its compressed steps), counted per call; the ratio is to "none"
  step, compute  mean wall seconds per step and the part that is not communication
  comm wait      time the training thread waited on communication that backward did not hide
                 (plus compression work on that thread)
  comm busy      time some bucket's communication was in flight, overlapped or not
  loss           mean over both ranks and the last 10 steps, and its difference from "none"
                 with the same optimizer

Step times skip the first 3 steps (and PowerSGD's plain steps); the loss curve lists the mean
loss of both ranks every --every steps. The loss check passes when the default optimizer's
compressed runs end within --tolerance (relative) of its uncompressed one.

    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_ddp_bench.py              # ~4 min
    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_ddp_bench.py --powersgd-rank 16
    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_ddp_bench.py --no-also-adam
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
ADAM_MODES = ("none", "powersgd")  # fp16 tracks none closely; it would only add run time
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


def runs(args):
    """[(key, optimizer, lr, mode)] in the order the ranks train them."""
    out = [("%s/%s" % (args.optimizer, m), args.optimizer, args.lr, m) for m in args.modes]
    if args.also_adam and args.optimizer != "adam":
        out += [("adam/%s" % m, "adam", args.adam_lr, m) for m in ADAM_MODES if m in args.modes]
    return out


def rank_main(args):
    import torch
    from trainyard import distributed
    torch.set_num_threads(1)
    ctx = distributed.init(timeout_s=300)
    out = {}
    for key, optimizer, lr, mode in runs(args):
        model, xs, ys = model_and_data(torch, args, ctx.rank)
        dm = distributed.wrap(model, compression=mode, powersgd_rank=args.powersgd_rank,
                              powersgd_start_iter=args.start_iter)
        opt = (torch.optim.Adam(model.parameters(), lr=lr) if optimizer == "adam" else
               torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9))
        rows = []
        dm.stats()
        for step in range(args.steps):
            t0 = time.perf_counter()
            loss = torch.nn.functional.mse_loss(dm(xs[step % 8]), ys[step % 8])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            s = dm.report(step=step + 1, loss=loss.item(), step_time_s=time.perf_counter() - t0,
                          compression=mode, optimizer=optimizer)
            rows.append(dict(s, loss=loss.item()))
        out[key] = {"rows": rows, "params": sum(p.numel() for p in model.parameters())}
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
    for key, optimizer, lr, mode in runs(args):
        rows = [r[key]["rows"] for r in results]
        first = args.start_iter if mode == "powersgd" else 0
        timed = range(max(3, first), args.steps)
        mean = lambda k: statistics.mean(rows[0][i][k] for i in timed)  # noqa: E731
        losses = [statistics.mean(r[i]["loss"] for r in rows) for i in range(args.steps)]
        curves[key] = losses
        table.append({"key": key, "optimizer": optimizer, "lr": lr, "mode": mode,
                      "params": results[0][key]["params"],
                      "bytes": statistics.median(rows[0][i]["comm_bytes"] for i in
                                                 range(first, args.steps)),
                      "step": mean("step_time_s"), "compute": mean("compute_s"),
                      "wait": mean("comm_wait_s"), "busy": mean("comm_s"),
                      "loss": statistics.mean(losses[-10:])})
    return table, curves


def _base(table, t):
    return next(b for b in table if b["optimizer"] == t["optimizer"] and b["mode"] == "none")


def print_report(table, curves, args, wall):
    print("DDP, 2 ranks, gloo on CPU (%s, %d cores, torch threads 1 per rank); %d steps, "
          "batch %d per rank, %.1fM parameters; PowerSGD rank %d from step %d (plain "
          "all-reduce before: %d%% of the run)" % (
              platform.processor() or platform.machine(), os.cpu_count(), args.steps, args.batch,
              table[0]["params"] / 1e6, args.powersgd_rank, args.start_iter + 1,
              round(100 * args.start_iter / args.steps)))
    print()
    print("| optimizer | compression | bytes/step | none / this | step s | compute s | "
          "comm wait s | comm busy s | loss (last 10) | vs none |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in table:
        base = _base(table, t)
        name = ("SGD m0.9 lr %g" % t["lr"]) if t["optimizer"] == "sgd" else \
            ("Adam lr %g" % t["lr"])
        print("| %s | %s | %s | %.1fx | %.3f | %.3f | %.3f | %.3f | %.5f | %+.2f%% |" % (
            name, t["mode"], "{:,}".format(int(t["bytes"])), base["bytes"] / t["bytes"],
            t["step"], t["compute"], t["wait"], t["busy"], t["loss"],
            100 * (t["loss"] - base["loss"]) / base["loss"]))
    print()
    marks = list(range(0, args.steps, args.every)) + [args.steps - 1]
    print("loss curve (mean of both ranks), step: " + " ".join("%6d" % (i + 1) for i in marks))
    for t in table:
        print("  %-15s " % t["key"] + " " * 16 +
              " ".join("%6.4f" % curves[t["key"]][i] for i in marks))
    print()
    ok = True
    for t in table:
        if t["mode"] == "none":
            continue
        base = _base(table, t)
        rel = abs(t["loss"] - base["loss"]) / base["loss"]
        gated = t["optimizer"] == args.optimizer
        ok &= rel <= args.tolerance or not gated
        print("loss check %s: |%.5f - %.5f| / %.5f = %.2f%% %s %.0f%% tolerance%s" % (
            t["key"], t["loss"], base["loss"], base["loss"], 100 * rel,
            "<=" if rel <= args.tolerance else ">", 100 * args.tolerance,
            "" if gated else " (reported, not checked: PowerSGD is not designed for Adam)"))
    psgd = [t for t in table if t["mode"] == "powersgd" and t["optimizer"] == args.optimizer]
    ratio = _base(table, psgd[0])["bytes"] / psgd[0]["bytes"] if psgd else float("inf")
    if psgd:
        print("bytes check powersgd: %.1fx fewer bytes per step than none (target >= 10x): %s"
              % (ratio, "ok" if ratio >= 10 else "MISSED"))
    print("wall time %.0f s; load average %s" % (wall, " ".join("%.2f" % x for x in
                                                                os.getloadavg())))
    return ok and ratio >= 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--optimizer", choices=("adam", "sgd"), default="sgd",
                    help="the optimizer the loss check gates on (sgd: momentum 0.9)")
    ap.add_argument("--lr", type=float, help="default 0.5 for sgd, 3e-4 for adam")
    ap.add_argument("--also-adam", action=argparse.BooleanOptionalAction, default=True,
                    help="also train with Adam (none and powersgd), shown but not checked")
    ap.add_argument("--adam-lr", type=float, default=3e-4)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of "
                    + ",".join(MODES) + "; none is always run (it is the reference)")
    ap.add_argument("--powersgd-rank", type=int, default=2)
    ap.add_argument("--start-iter", type=int,
                    help="plain all-reduce steps before PowerSGD (default 10%% of --steps, >= 2)")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--quick", action="store_true", help="20 steps, --hidden 1024")
    ap.add_argument("--rank-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.steps, args.hidden, args.every = 20, 1024, 5
    if args.lr is None:
        args.lr = 0.5 if args.optimizer == "sgd" else 3e-4
    if args.start_iter is None:
        args.start_iter = max(2, round(args.steps / 10))
    args.modes = ["none"] + [m for m in args.modes.split(",") if m in MODES and m != "none"]
    if args.rank_out:
        args.out = args.rank_out
        rank_main(args)
        return
    args.passthrough = [a for a in sys.argv[1:] if a != "--quick"]
    if args.quick:
        args.passthrough += ["--steps", "20", "--hidden", "1024"]
    t0 = time.perf_counter()
    results, tmp = launch(args)
    table, curves = summarize(results, args)
    ok = print_report(table, curves, args, time.perf_counter() - t0)
    print("metrics lines: %s/metrics{0,1}.jsonl" % tmp)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
