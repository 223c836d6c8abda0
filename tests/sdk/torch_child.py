"""A tiny deterministic PyTorch training run for the bitwise-resume test.

Uses every piece of state a resume must restore: Adam moments, a StepLR
schedule, dropout (torch RNG), input noise from Python's `random` and from
numpy, and a shuffled ResumableSampler. --stop-at K sends this process
SIGTERM in the middle of step K, exactly as the server's notice would arrive.
Each step appends "<step> <loss as float.hex()>" to --log; at the end the
final parameters are written to --out as safetensors.
"""

import argparse
import os
import random
import signal
import sys

import torch

import trainyard
from trainyard import safetensors, torch_state

try:
    import numpy
except ImportError:
    numpy = None

N, BATCH, SEED = 40, 4, 1234  # 10 steps per epoch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stop-at", type=int, default=-1)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    random.seed(1)
    if numpy is not None:
        numpy.random.seed(2)
    g = torch.Generator().manual_seed(SEED)
    xs = torch.randn(N, 8, generator=g)
    ys = xs @ torch.randn(8, 1, generator=g) + 0.1 * torch.randn(N, 1, generator=g)

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                                torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.5)
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    sampler = trainyard.ResumableSampler(N, seed=SEED)
    job = trainyard.job()
    mgr = trainyard.CheckpointManager(args.ckpt, keep_last=2)

    step = 0
    ck = mgr.latest()
    if ck is not None:
        got = torch_state.restore(ck, model=model, optimizer=opt, scheduler=sched, scaler=scaler)
        step = got["step"]
        sampler.load(got["data"])

    buffers = torch_state.SnapshotBuffers()  # every snapshot reuses the same host memory

    def snapshot():
        return torch_state.state_files(model=model, optimizer=opt, scheduler=sched,
                                       scaler=scaler, step=step, data=sampler.state(),
                                       buffers=buffers)

    model.train()
    with open(args.log, "a") as log:
        while step < args.steps:
            batch = []
            for i in sampler:
                batch.append(i)
                if len(batch) == BATCH:
                    step += 1
                    x = xs[batch] + random.gauss(0.0, 0.01)
                    if numpy is not None:
                        x = x + torch.from_numpy(numpy.random.normal(0, 0.01, (1, 8))).float()
                    loss = torch.nn.functional.mse_loss(model(x), ys[batch])
                    opt.zero_grad()
                    scaler.scale(loss).backward()
                    if step == args.stop_at:
                        os.kill(os.getpid(), signal.SIGTERM)  # the notice, mid-step
                    scaler.step(opt)
                    scaler.update()
                    sched.step()
                    log.write("%d %s\n" % (step, loss.item().hex()))
                    log.flush()
                    batch = []
                    if job.should_stop():
                        mgr.save(step, snapshot())
                        job.exit_preempted()
                    if step % 4 == 0:
                        mgr.save(step, snapshot(), background=True)
                    if step >= args.steps:
                        break
    mgr.wait()
    params = {k: torch_state._tensor_bytes(v) for k, v in model.state_dict().items()}
    with open(args.out, "wb") as f:
        f.write(safetensors.dumps(params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
