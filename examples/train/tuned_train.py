"""A data-parallel training job that uses the whole trainyard SDK: data, tune, distributed,
sharded checkpoints, metrics for the doctor.

What it does: every rank joins the job's process group (trainyard.distributed.init(): RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as trainyard sets them; alone, a world of 1)
and trains a small CNN on 32x32 synthetic images (10 classes) on the CPU.

Data (trainyard.data): the images live as raw bytes records in shards under --data. When that
directory holds no dataset, rank 0 writes one (2048 seeded records, the same bytes every time)
and the others wait at a barrier. A data.Loader decodes them in --loader-workers threads (or
forked processes) and prefetches; --decode-delay-ms sleeps in every record's decode, to stand
in for an expensive JPEG decode and starve the loop on purpose. Each rank reads its own
contiguous part of every epoch's seeded permutation, one micro-batch per loader batch.

Tuning (trainyard.tune): on a fresh start rank 0 runs tune() for --global-batch samples per
optimizer step over all ranks: the largest micro-batch whose step fits in --memory-budget-mib
(the stand-in for GPU memory on a CPU), accumulation for the rest, and the precision and layout
that measured fastest. tune() writes its choice as a metrics line (tune_*), which
`trainyard doctor` prints as "tuned by trainyard.tune: ...". Rank 0 sends the plan to the other
ranks (they must all run the same one); a resumed run takes the plan from its checkpoint, so
the micro-batches and the accumulation are those of the run that stopped. --plan FILE (a
probe's tune-plan.json) or TRAINYARD_TUNE_* env vars pin a plan without measuring.

Communication (trainyard.distributed): the model is wrapped in DDP with --compression none,
fp16 or powersgd; the Trainer skips the all-reduce on all but the last micro-batch of an
accumulation (no_sync). model.report() writes one metrics line per optimizer step: loss,
samples, step_time_s, data_wait_s (the loader's wait, summed over the micro-batches) and
comm_bytes / comm_wait_s, plus data_epoch, data_batch and ids (a digest of the record ids the
step trained on, so two runs can be compared sample for sample).

Checkpoints: every rank saves its own shard (CheckpointManager(sharded=True)) every
--checkpoint-every steps in the background and on a notice: model, AdamW, its RNG (dropout),
the loader position (loader.state()), the Trainer's state and, under PowerSGD, the compression
state. A step counts once every rank has committed its shard; torch_state.restore(manager)
loads the newest such step on every rank. PowerSGD's error feedback of all ranks is gathered
into rank 0's shard, so rank 0 sends it to the others on resume.

Preemption: SIGTERM (or the notice file) reaches the ranks at different moments, so at every
optimizer-step boundary they all-reduce the flag (MAX) and stop at the same step: each saves
its shard synchronously, they meet at a barrier (nobody leaves before the step is committed)
and exit 75, which trainyard takes as "checkpointed, requeue me". Determinism: one intra-op
thread, deterministic kernels, seeded data order and dropout, and the whole state restored, so
a resumed run trains on the same samples and reaches the same losses, bit for bit, as a run
that never stopped (same world size and plan).

Run it under trainyard: examples/jobs/tuned-train.yaml (2 workers). By hand, one process:
    /usr/bin/python3 examples/train/tuned_train.py --steps 100 --decode-delay-ms 3
then `trainyard doctor --metrics metrics.jsonl` (set TRAINYARD_METRICS_FILE=metrics.jsonl).
Two local ranks (a rerun after exit 75 needs a new TRAINYARD_ATTEMPT):
    for r in 0 1; do TRAINYARD_ATTEMPT=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 WORLD_SIZE=2 \\
      RANK=$r LOCAL_RANK=$r /usr/bin/python3 examples/train/tuned_train.py & done; wait
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "sdk", "python"))
import trainyard  # noqa: E402
from trainyard import data, distributed, torch_state, tune  # noqa: E402

RECORDS, SIDE, CLASSES = 2048, 32, 10
HEADER = struct.Struct("<IB")  # record id, label; then 3 x SIDE x SIDE uint8 pixels


def write_synthetic_dataset(directory, seed):
    """Seeded images: noise around one fixed template per class, so there is something to learn.
    Written to a side directory and renamed into place: a crash never leaves half a dataset."""
    rng = np.random.default_rng(seed)
    templates = rng.integers(0, 256, size=(CLASSES, 3, SIDE, SIDE)).astype(np.int16)
    labels = rng.integers(0, CLASSES, size=RECORDS)

    def records():
        for i, label in enumerate(labels):
            noise = rng.integers(-80, 81, size=(3, SIDE, SIDE))
            img = np.clip(templates[label] + noise, 0, 255).astype(np.uint8)
            yield HEADER.pack(i, int(label)) + img.tobytes()

    tmp = directory.rstrip("/") + ".writing"
    shutil.rmtree(tmp, ignore_errors=True)
    data.write_dataset(tmp, records(), shard_bytes=1 << 20)
    if os.path.isdir(directory):
        os.rmdir(directory)  # only an empty one: a non-empty directory without index.json fails
    os.rename(tmp, directory)


class Decode:
    """bytes -> (id, label, uint8 image). A class, not a closure: forked workers pickle it.
    The image stays uint8 (a quarter of the bytes to send back); the step normalizes it."""

    def __init__(self, delay_s):
        self.delay_s = delay_s

    def __call__(self, record):
        if self.delay_s:
            time.sleep(self.delay_s)  # the expensive decode of a real pipeline
        rid, label = HEADER.unpack_from(record)
        img = np.frombuffer(record, np.uint8, offset=HEADER.size).reshape(3, SIDE, SIDE)
        return rid, label, img


def collate(samples):
    """numpy in the workers (no torch in a forked child); the loop makes the tensors."""
    ids, labels, imgs = zip(*samples)
    return np.array(ids, np.int64), np.array(labels, np.int64), np.stack(imgs)


def to_input(images):
    """uint8 [B, 3, H, W] tensor (numpy accepted) -> float32 in [0, 1], where the tensor is:
    the loop moves the uint8 batch to the GPU first, a quarter of the bytes of float32."""
    if not isinstance(images, torch.Tensor):
        images = torch.from_numpy(images)
    return images.float().div_(255.0)


def make_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
        # 16x16 -> 4x4: AvgPool2d(4), not AdaptiveAvgPool2d(4), whose CUDA backward is not
        # deterministic (torch.use_deterministic_algorithms refuses it).
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AvgPool2d(4),
        torch.nn.Flatten(), torch.nn.Dropout(0.1), torch.nn.Linear(64 * 16, CLASSES))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="optimizer steps in all")
    ap.add_argument("--global-batch", type=int, default=64,
                    help="samples per optimizer step over all ranks (tune splits it)")
    ap.add_argument("--memory-budget-mib", type=int, default=16,
                    help="memory one rank's step may use, in MiB (on a GPU: leave 0 for its "
                         "free memory)")
    ap.add_argument("--plan", default=None,
                    help="a plan as JSON (Plan.to_json(), or the tune-plan.json that "
                         "`python -m trainyard.tune --probe` writes) instead of tuning")
    ap.add_argument("--compression", choices=("none", "fp16", "powersgd"), default="none")
    ap.add_argument("--data", default=None,
                    help="dataset directory (default: <checkpoint dir>/synthetic-data); written "
                         "when it holds no dataset")
    ap.add_argument("--loader-workers", type=int, default=2)
    ap.add_argument("--prefetch", type=int, default=None,
                    help="micro-batches in flight beyond the one in use (default 2 per worker)")
    ap.add_argument("--loader-worker-type", choices=("thread", "process"), default="thread",
                    help="thread: decode here is numpy and sleep, which release the GIL, and "
                         "threads hand batches over without pickling; process for a decode "
                         "that holds the GIL")
    ap.add_argument("--decode-delay-ms", type=float, default=0.0,
                    help="sleep per record in decode: an input pipeline that cannot keep up")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--checkpoint-every", type=int, default=50,
                    help="steps between background checkpoints (0: on a notice and at the end)")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="default: $TRAINYARD_CHECKPOINT_DIR, else ./tuned-ckpt")
    ap.add_argument("--log-every", type=int, default=20, help="rank 0 prints every N steps")
    ap.add_argument("--yield-at-step", type=int, default=None,
                    help="act as if a notice arrived on rank 0 at this step (testing)")
    return ap.parse_args()


def choose_plan(ctx, model, make_opt, sample, args, saved):
    """The saved plan on resume; else rank 0 reads --plan or tunes (and reports), and tells
    the others."""
    if saved is not None:
        return tune.Plan.from_dict(saved), "the checkpoint's plan"
    box = [None]
    if ctx.rank == 0 and args.plan:
        with open(args.plan) as f:
            box = [json.load(f)]
    elif ctx.rank == 0:
        plan = tune.tune(model, make_opt, sample, global_batch=args.global_batch,
                         world_size=ctx.world_size,
                         memory_budget=(args.memory_budget_mib << 20) or None)
        box = [dict(plan.settings_dict(), target_global_batch=plan.target_global_batch,
                    note=plan.note)]
    dist.broadcast_object_list(box, src=0)
    return tune.Plan.from_dict(box[0]), args.plan or "tuned"


def main():
    args = parse_args()
    job = trainyard.job(signals=("SIGTERM", "SIGINT"))
    ctx = distributed.init(timeout_s=300)
    tag = "tuned_train: rank %d/%d" % (ctx.rank, ctx.world_size)
    # One thread and deterministic kernels: the same inputs give the same bits every time.
    torch.set_num_threads(1)
    # cuBLAS is deterministic only with a fixed workspace (CUDA's reproducibility notes).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)

    # 1. The dataset: rank 0 writes it once, everyone opens it after the barrier.
    ckpt_dir = args.checkpoint_dir or job.checkpoint_dir or "tuned-ckpt"
    data_dir = args.data or os.path.join(ckpt_dir, "synthetic-data")
    if ctx.rank == 0 and not os.path.exists(os.path.join(data_dir, "index.json")):
        print("%s: writing %d synthetic records to %s" % (tag, RECORDS, data_dir), flush=True)
        write_synthetic_dataset(data_dir, args.seed)
    ctx.barrier()
    dataset = data.ShardDataset(data_dir)
    decode = Decode(args.decode_delay_ms / 1000.0)

    # 2. Model, optimizer and the newest checkpoint every rank committed.
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    net = make_model().to(ctx.device)  # tune() measures where the model is

    def make_opt(params):
        return torch.optim.AdamW(params, lr=args.lr)
    opt = make_opt(net.parameters())
    mgr = trainyard.CheckpointManager(ckpt_dir, keep_last=2, sharded=True, rank=ctx.rank,
                                      world_size=ctx.world_size)
    state = torch_state.restore(mgr, model=net, optimizer=opt)  # RNG included; None: fresh
    if state is None:
        torch.manual_seed(args.seed * 1000 + ctx.rank + 1)  # dropout: each rank its own stream
    extra = state["extra"] if state else {}

    # 3. The plan: micro-batch x accumulation x ranks = global batch, precision, layout.
    sample = collate([Decode(0)(dataset[i]) for i in range(8)])
    sample = (to_input(sample[2]), torch.from_numpy(sample[1]))
    plan, source = choose_plan(ctx, net, make_opt, sample, args,
                               extra["trainer"]["plan"] if state else None)
    plan.apply(net)
    if ctx.rank == 0:
        print("%s: plan (%s): %s" % (tag, source, plan.summary().replace("\n", "; ")),
              flush=True)

    # 4. DDP with the chosen compression, the Trainer around it, the loader at its position.
    model = distributed.wrap(net, compression=args.compression, powersgd_rank=2)
    trainer = plan.trainer(model.module, opt)  # the DDP module: no_sync while accumulating
    loader = data.Loader(dataset, batch_size=plan.micro_batch, seed=args.seed, decode=decode,
                         collate=collate, workers=args.loader_workers,
                         worker_type=args.loader_worker_type, prefetch=args.prefetch,
                         rank=ctx.rank, world_size=ctx.world_size)
    step = 0
    if state is not None:
        step = state["step"]
        trainer.load_state_dict(extra["trainer"])
        loader.load(state["data"])
        model.load_comm_state(extra.get("comm"))  # this rank's own error feedback
    print("%s attempt %d: %s of %d (micro-batch %d x %d, %s, compression %s)" % (
        tag, job.attempt, "resuming from step %d" % step if step else "starting from step 0",
        args.steps, plan.micro_batch, plan.accum_steps, plan.precision, args.compression),
        flush=True)

    def save(background):
        """Every rank writes its shard of `step`, with its own PowerSGD error feedback."""
        files = torch_state.state_files(
            model=net, optimizer=opt, step=step, data=loader.state(),
            extra={"trainer": trainer.state_dict(), "comm": model.comm_state(per_rank=True)})
        mgr.save(step, files, background=background)

    def batches():
        while True:  # one epoch after the other; the loader moves to the next one itself
            yield from loader

    feed = batches()
    start_step = step
    while True:
        # Agree on stopping: the MAX all-reduce makes every rank see the notice at one step.
        stop = job.should_stop() or (ctx.rank == 0 and args.yield_at_step is not None
                                     and start_step < args.yield_at_step <= step)
        flag = torch.tensor([1 if stop else 0], dtype=torch.int32, device=ctx.device)  # NCCL: GPU
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() and step < args.steps:
            print("%s: notice at step %d; saving and exiting 75" % (tag, step), flush=True)
            save(background=False)
            mgr.wait()
            loader.close()
            ctx.close()  # a barrier: no rank leaves before every shard is committed
            job.exit_preempted("%s: checkpoint of step %d saved" % (tag, step))
        if step >= args.steps:
            break

        # One optimizer step: accum_steps micro-batches, the all-reduce on the last one.
        t0 = time.perf_counter()
        wait, losses, ids = 0.0, [], hashlib.sha1()
        net.train()
        for _ in range(plan.accum_steps):
            rid, y, x = next(feed)
            wait += loader.last_wait_s  # how long next() blocked on the loader
            ids.update(rid.tobytes())
            x, y = trainer.prepare((torch.from_numpy(x), torch.from_numpy(y)))  # uint8 moved
            x = trainer.prepare(to_input(x))  # float on the device, channels-last if planned
            with trainer.autocast():
                loss = torch.nn.functional.cross_entropy(model(x).float(), y)
            trainer.backward(loss)
            losses.append(loss.item())
        step += 1
        model.report(step=step, loss=sum(losses) / len(losses),
                     step_time_s=time.perf_counter() - t0, data_wait_s=wait,
                     samples=plan.micro_batch * plan.accum_steps, dtype=plan.precision,
                     total_steps=args.steps, data_epoch=loader.epoch, data_batch=loader.batch,
                     ids=ids.hexdigest()[:16])
        if ctx.rank == 0 and (step % args.log_every == 0 or step == args.steps):
            print("step %d loss %.6f data wait %.1f ms" % (step, losses[-1], wait * 1e3),
                  flush=True)
        if args.checkpoint_every > 0 and step % args.checkpoint_every == 0 and step < args.steps:
            save(background=True)

    # The end: a final checkpoint (a notice after the last step resumes here and stops), done.
    if state is None or state["step"] != step:
        save(background=False)
    mgr.wait()
    loader.close()
    ctx.close()
    if ctx.rank == 0:
        digest = hashlib.sha256()
        for name, t in sorted(net.state_dict().items()):
            digest.update(name.encode() + t.detach().contiguous().numpy().tobytes())
        result = {"step": step, "params_sha256": digest.hexdigest(),
                  "world_size": ctx.world_size}
        print("%s: done: %s" % (tag, json.dumps(result)), flush=True)


if __name__ == "__main__":
    main()
