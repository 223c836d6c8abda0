"""One rank of a small DDP run on CPU (gloo) for test_distributed_ddp.py.

Trains the same small model once per --modes entry (none, fp16, powersgd, resume) with
trainyard.distributed and writes, per mode, the bytes reported for each step, the losses and
a SHA-256 of the final parameters to --out (JSON). "resume" checks PowerSGD's checkpointed
state: it trains STEPS steps while saving at step SAVE_AT, then trains a fresh model from that
checkpoint (with and without the compression state) and records all three digests.
"resume_at_start" does the same saving at START_ITER, the step after which PowerSGD starts, with
the layers registered in the order of use: the resumed process's first step draws PowerSGD's
first Q's in DDP's first bucket layout, where the first layer's weight comes first, and the run
that never stopped in the rebuilt one, where the last layer's does.
"""

import argparse
import hashlib
import json
import os
import time

import torch

import trainyard
from trainyard import distributed, torch_state

STEPS, SAVE_AT, START_ITER, BATCH = 8, 4, 2, 16


class Net(torch.nn.Module):
    """Layers registered in the reverse of their use, so DDP's first buckets (by registration)
    differ from the ones it rebuilds after step 1 (by gradient order)."""

    def __init__(self):
        super().__init__()
        self.c = torch.nn.Linear(64, 8)
        self.b = torch.nn.Linear(64, 64)
        self.a = torch.nn.Linear(32, 64)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class NetInUseOrder(Net):
    def __init__(self):
        torch.nn.Module.__init__(self)
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 8)


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(BATCH, 32, generator=g)
    return x, x[:, :8] * 2.0 - x[:, 8:16]


def digest(model):
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def make(mode, seed=0):
    torch.manual_seed(seed)
    model = NetInUseOrder() if mode == "resume_at_start" else Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, opt


def wrap(model, mode):
    return distributed.wrap(model, compression=mode, powersgd_rank=2,
                            powersgd_start_iter=START_ITER,
                            bucket_cap_mb=0.01)


def train(dm, opt, rank, steps, tag, log):
    for step in steps:
        t0 = time.perf_counter()
        x, y = batch(rank, step)
        loss = torch.nn.functional.mse_loss(dm(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        s = dm.report(step=step + 1, loss=loss.item(), step_time_s=time.perf_counter() - t0,
                      mode=tag)
        log.setdefault("bytes", []).append(s["comm_bytes"])
        log.setdefault("loss", []).append(loss.item())


def resume(ctx, ckpt_dir, save_at, tag):
    out = {}
    model, opt = make(tag)
    dm = wrap(model, "powersgd")
    train(dm, opt, ctx.rank, range(save_at), tag, out)
    files = torch_state.state_files(model=model, optimizer=opt, step=save_at, rng=False,
                                    extra={"comm": dm.comm_state()})
    if ctx.rank == 0:
        trainyard.CheckpointManager(ckpt_dir).save(save_at, files)
    # The same state as every rank's own shard of a sharded checkpoint (no collective).
    sharded_dir = ckpt_dir + "-sharded"
    shard = torch_state.state_files(model=model, optimizer=opt, step=save_at, rng=False,
                                    extra={"comm": dm.comm_state(per_rank=True)})
    trainyard.CheckpointManager(sharded_dir, sharded=True, rank=ctx.rank,
                                world_size=ctx.world_size).save(save_at, shard)
    ctx.barrier()
    train(dm, opt, ctx.rank, range(save_at, STEPS), tag, out)
    out["digest"] = digest(model)
    for key, with_state in (("resumed", True), ("resumed_without_state", False),
                            ("resumed_per_rank", True)):
        model2, opt2 = make(tag, seed=7)
        if key == "resumed_per_rank":
            source = trainyard.CheckpointManager(sharded_dir, sharded=True, rank=ctx.rank,
                                                 world_size=ctx.world_size)
        else:
            source = trainyard.CheckpointManager(ckpt_dir).latest()
        state = torch_state.restore(source, model=model2, optimizer=opt2, rng=False)
        dm2 = wrap(model2, "powersgd")
        if with_state:
            dm2.load_comm_state(state["extra"]["comm"])
        train(dm2, opt2, ctx.rank, range(save_at, STEPS), key, {})
        out[key] = digest(model2)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--modes", default="none,fp16,powersgd")
    ap.add_argument("--ckpt", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ctx = distributed.init(timeout_s=60)
    result = {"rank": ctx.rank, "world_size": ctx.world_size, "local_rank": ctx.local_rank,
              "backend": ctx.backend, "source": ctx.env.source, "modes": {}}
    for mode in args.modes.split(","):
        if mode in ("resume", "resume_at_start"):
            save_at = SAVE_AT if mode == "resume" else START_ITER
            result["modes"][mode] = resume(ctx, os.path.join(args.ckpt, mode), save_at, mode)
            continue
        model, opt = make(mode)
        dm = wrap(model, mode)
        log = {}
        train(dm, opt, ctx.rank, range(STEPS), mode, log)
        log["digest"] = digest(model)
        log["numel"] = {n: p.numel() for n, p in model.named_parameters()}
        result["modes"][mode] = log
    ctx.close()
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
