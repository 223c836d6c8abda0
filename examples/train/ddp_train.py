"""A small PyTorch DistributedDataParallel training job that follows the trainyard job contract.

What it does: every rank (RANK of WORLD_SIZE) joins a gloo process group through env://
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, as trainyard sets them on every node), builds the
same seeded synthetic regression data set (4096 samples, 16 features), and trains a small MLP
with dropout under DistributedDataParallel on the CPU. Each rank reads its own share of every
epoch's permutation through trainyard.ResumableSampler (every WORLD_SIZE-th index), so the data
order is a pure function of (seed, epoch, position).

Checkpoints (docs/job-contract.md): rank 0 alone writes to TRAINYARD_CHECKPOINT_DIR with the
SDK's CheckpointManager (every --checkpoint-every steps in the background, and at the end): the
model, the AdamW and LR scheduler state, the sampler position, and the torch RNG state of every
rank (gathered to rank 0, since dropout draws from each rank's own generator). At start rank 0
picks the newest checkpoint that verifies and broadcasts its step; every rank loads that one.

Preemption: the SDK's notice flag (SIGTERM, or the notice file) arrives at slightly different
moments on different ranks and nodes, so at every step boundary the ranks all-reduce it (MAX):
they all see the same answer at the same step. Then rank 0 saves synchronously, all ranks meet
at a barrier (nobody leaves before the checkpoint is committed), and every rank exits 75
through job.exit_preempted(), which trainyard takes as "checkpointed, requeue me".

Determinism: an interrupted-and-resumed run reaches exactly the same parameters and losses as
an uninterrupted run with the same world size. torch.manual_seed per rank, one intra-op thread,
torch.use_deterministic_algorithms(True), the data order from the sampler, and model, optimizer,
scheduler, RNG and sampler position restored bit for bit (the SDK stores floats and tensors
exactly). gloo's all-reduce of two float32 values is a + b on both ranks, which does not depend
on the order, so DDP's averaged gradients are identical too. A different world size changes
the batches and the reduction, so resuming with another one is refused.

Output: rank 0 prints progress, and with --out writes the final result as JSON, e.g.
{"step": 200, "loss": 0.0412..., "eval_loss": 0.0398..., "params_sha256": "...", "world_size": 2}
(loss: the last step's training loss averaged over ranks; eval_loss: the whole data set
without dropout). Each rank prints its node (SLURMD_NODENAME under Slurm) and the step it
starts from: "ddp_train: rank 0/2 on node n1 (host h) attempt 2: resuming from step 40".

Elastic runs (--global-batch G): every step trains on the next G samples of one global order,
each rank on its contiguous G / WORLD_SIZE of them, so the step's averaged gradient is that of
the same G samples whatever the world size, and a checkpoint resumes at any world size that
divides G (examples/jobs/elastic-train.yaml: the goodput policy resizes the job between 1 and 4
workers at its checkpoints). The trajectory then matches a run at another size up to the order
of floating-point sums; a rank's dropout stream, which has no counterpart at another size, is
seeded afresh from (seed, step, rank) when the size changes, and the job says so.

Run it under trainyard: examples/jobs/ddp-slurm.yaml (2 workers on a Slurm executor). By hand,
as two local processes on loopback (checkpoints in ./ddp-ckpt unless --checkpoint-dir or
TRAINYARD_CHECKPOINT_DIR says otherwise):
    for r in 0 1; do MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 WORLD_SIZE=2 RANK=$r \\
      /usr/bin/python3 examples/train/ddp_train.py --steps 200 --out final.json & done; wait
Ctrl-C is handled as a notice: both ranks stop at the same step and exit 75; run the same
command again and it continues from the checkpoint. --yield-at-step N does the same without a
signal (rank 0 raises the flag at step N), for checking resume by hand.
"""

import argparse
import datetime
import hashlib
import json
import logging
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "sdk", "python"))
import trainyard  # noqa: E402
from trainyard import torch_state  # noqa: E402

N, FEATURES, HIDDEN = 4096, 16, 64


def make_data(seed):
    """The same synthetic regression set on every rank and every attempt."""
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(N, FEATURES, generator=g)
    w1 = 0.25 * torch.randn(FEATURES, 4, generator=g)
    ys = torch.sin(xs @ w1).sum(dim=1, keepdim=True) + 0.05 * torch.randn(N, 1, generator=g)
    return xs, ys


def make_model(dropout=0.1):
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.GELU(),
                               torch.nn.Dropout(dropout), torch.nn.Linear(HIDDEN, HIDDEN),
                               torch.nn.GELU(), torch.nn.Linear(HIDDEN, 1))


def params_sha256(model):
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def write_json_atomically(path, doc):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="optimizer steps in all")
    ap.add_argument("--step-delay", type=float, default=0.0,
                    help="extra seconds per step, to stand in for a bigger model (and leave "
                         "time to be preempted)")
    ap.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    ap.add_argument("--global-batch", type=int, default=None,
                    help="samples per step over all ranks, split evenly among them: the run "
                         "may then resume at any world size that divides it (elastic jobs); "
                         "replaces --batch")
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--dropout", type=float, default=0.1,
                    help="dropout probability (0: an elastic run then follows the same "
                         "trajectory at every world size, up to the order of sums)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--checkpoint-every", type=int, default=20,
                    help="steps between background checkpoints (0: only on a notice and at the "
                         "end)")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="default: $TRAINYARD_CHECKPOINT_DIR, else ./ddp-ckpt")
    ap.add_argument("--out", default=None, help="rank 0 writes the final result here as JSON")
    ap.add_argument("--yield-at-step", type=int, default=None,
                    help="act as if a notice arrived on rank 0 at this step (testing)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds a collective may wait for a missing peer")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    job = trainyard.job(signals=("SIGTERM", "SIGINT"))
    rank, world = job.rank, job.world_size
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world)
    node = os.environ.get("SLURMD_NODENAME") or "-"
    tag = "ddp_train: rank %d/%d" % (rank, world)

    elastic = args.global_batch is not None
    if elastic and (args.global_batch < 1 or args.global_batch % world):
        raise SystemExit("%s: --global-batch %d does not split evenly among %d workers; choose "
                         "a global batch that every worker count from the job's minWorkers to "
                         "its maxWorkers divides" % (tag, args.global_batch, world))
    per_rank = args.global_batch // world if elastic else args.batch

    # One thread and deterministic kernels: the same inputs give the same bits every time.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout))

    xs, ys = make_data(args.seed)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = make_model(args.dropout)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, args.steps))
    # Elastic: one global order on every rank, each takes its slice of each global batch.
    sampler = (trainyard.ResumableSampler(N, seed=args.seed) if elastic else
               trainyard.ResumableSampler(N, seed=args.seed, rank=rank, world_size=world))
    torch.manual_seed(args.seed * 1000 + rank + 1)  # dropout: each rank its own stream

    # Rank 0 chooses the checkpoint (the newest that verifies) and tells the others its step.
    ckpt_dir = args.checkpoint_dir or job.checkpoint_dir or "ddp-ckpt"
    mgr = trainyard.CheckpointManager(ckpt_dir, keep_last=3) if rank == 0 else None
    chosen = torch.tensor([-1], dtype=torch.int64)
    if rank == 0:
        latest = mgr.latest()
        if latest is not None:
            chosen[0] = latest.step
    dist.broadcast(chosen, src=0)
    step, loss_avg = 0, None
    if chosen.item() >= 0:
        ck = (mgr.get(chosen.item()) if rank == 0 else
              trainyard.Checkpoint(chosen.item(), os.path.join(os.path.abspath(ckpt_dir),
                                                               "step-%d" % chosen.item())))
        problem = "missing" if ck is None else ck.verify()
        if problem:
            raise SystemExit("%s: checkpoint step %d is unusable: %s"
                             % (tag, chosen.item(), problem))
        state = torch_state.restore(ck, model=model, optimizer=opt, scheduler=sched)
        saved_gb = state["extra"].get("global_batch")
        saved_world = len(state["extra"]["torch_rng"])
        if saved_gb != args.global_batch:
            raise SystemExit("%s: checkpoint step %d was written with --global-batch %s; "
                             "resuming with %s would change the run"
                             % (tag, chosen.item(), saved_gb, args.global_batch))
        if not elastic and saved_world != world:
            raise SystemExit("%s: checkpoint was written with world size %d; resuming with %d "
                             "would not reproduce the run (use --global-batch for a run that "
                             "may change size)" % (tag, saved_world, world))
        step = state["step"]
        sampler.load(state["data"])
        loss_avg = state["extra"]["loss"]
        what = "resuming from step %d" % step
        if saved_world == world:
            torch.set_rng_state(state["extra"]["torch_rng"][rank])
        else:
            torch.manual_seed(args.seed * 1000003 + step * 1009 + rank + 1)
            what += " (world size %d -> %d: each rank's dropout stream seeded afresh)" % (
                saved_world, world)
    else:
        what = "starting from step 0"
    print("%s on node %s (host %s) attempt %d: %s of %d" % (
        tag, node, socket.gethostname(), job.attempt, what, args.steps), flush=True)

    ddp = DistributedDataParallel(model)
    buffers = torch_state.SnapshotBuffers() if rank == 0 else None

    def save(background):
        """Collective: every rank sends its RNG state; rank 0 writes the checkpoint."""
        rng = torch.get_rng_state()
        gathered = [torch.empty_like(rng) for _ in range(world)]
        dist.all_gather(gathered, rng)
        if rank == 0:
            files = torch_state.state_files(model=model, optimizer=opt, scheduler=sched,
                                            step=step, data=sampler.state(),
                                            extra={"torch_rng": gathered, "loss": loss_avg,
                                                   "global_batch": args.global_batch},
                                            buffers=buffers)
            mgr.save(step, files, background=background)

    def shutdown():
        """Leaves the process group without torch 1.13's exit deadlock: a gloo worker thread
        drops its last finished work item after the collective returned, and when that frees a
        tensor that Python had let go of, it needs the GIL; if the group is destroyed then (the
        DDP reducer's destructor joins the workers while holding the GIL, as at interpreter
        exit), both wait forever. A barrier, then a pause without the GIL lets the workers go
        idle; the group is destroyed afterwards."""
        dist.barrier()
        time.sleep(0.2)
        dist.destroy_process_group()

    it = None

    def next_batch():
        nonlocal it
        while True:
            if it is None:
                it = iter(sampler)  # moves to the next epoch once this one is used up
            want = args.global_batch if elastic else args.batch
            batch = [i for _, i in zip(range(want), it)]
            if len(batch) == want:
                return batch[rank * per_rank:(rank + 1) * per_rank] if elastic else batch
            it = None  # end of the epoch; a short remainder is dropped

    start_step = step
    while True:
        # Agree on stopping: the notice reaches the ranks at different moments, the MAX
        # all-reduce makes every rank see it at the same step.
        stop = job.should_stop() or (rank == 0 and args.yield_at_step is not None
                                     and start_step < args.yield_at_step <= step)
        flag = torch.tensor([1 if stop else 0], dtype=torch.int32)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() and step < args.steps:
            reason = job.notice().reason if job.notice() else "notice signal"
            print("%s: notice at step %d (%s); saving and exiting 75" % (tag, step, reason),
                  flush=True)
            if rank == 0:
                mgr.wait()
            save(background=False)
            shutdown()  # a barrier: no rank leaves before rank 0 committed the checkpoint
            job.exit_preempted("%s: checkpoint of step %d saved" % (tag, step))
        if step >= args.steps:
            break

        t0 = time.monotonic()
        idx = torch.tensor(next_batch())
        ddp.train()
        loss = torch.nn.functional.mse_loss(ddp(xs[idx]), ys[idx])
        opt.zero_grad()
        loss.backward()  # DDP averages the gradients over the ranks here
        opt.step()
        sched.step()
        step += 1
        loss_avg = loss.detach().clone()
        dist.all_reduce(loss_avg)
        loss_avg = loss_avg.item() / world
        if args.step_delay > 0:
            time.sleep(args.step_delay)
        trainyard.report(step=step, samples=len(idx), loss=loss_avg,
                         step_time_s=time.monotonic() - t0, dtype="fp32",
                         lr=sched.get_last_lr()[0])
        if rank == 0 and (step % 10 == 0 or step == args.steps):
            print("step %d loss %.6f" % (step, loss_avg), flush=True)
        if args.checkpoint_every > 0 and step % args.checkpoint_every == 0 and step < args.steps:
            save(background=True)

    # The end: a final checkpoint (a notice after the last step then resumes to here and
    # stops at once), and the result.
    if rank == 0:
        mgr.wait()
    if chosen.item() != step:
        save(background=False)
    shutdown()
    if rank == 0:
        model.eval()
        with torch.no_grad():
            eval_loss = torch.nn.functional.mse_loss(model(xs), ys).item()
        result = {"step": step, "loss": loss_avg, "eval_loss": eval_loss,
                  "params_sha256": params_sha256(model), "world_size": world}
        print("%s: done: %s" % (tag, json.dumps(result, sort_keys=True)), flush=True)
        if args.out:
            write_json_atomically(args.out, result)


if __name__ == "__main__":
    main()
