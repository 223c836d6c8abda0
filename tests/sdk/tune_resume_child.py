"""A deterministic run with gradient accumulation for the tune resume test.

A small CNN (dropout, batch norm) trained with Adam by a tune Trainer at
micro-batch 4 x 3 accumulation in --precision, on --device (cpu, or cuda, where
fp16 runs with a GradScaler and the CUDA random state drives the dropout). --stop-at K sends this process
SIGTERM right after micro-batch K's backward, which may be in the middle of an
accumulation; the loop saves (model, optimizer, scaler, trainer state with the
summed gradients, RNG) and exits 75. A later attempt resumes from it. At the
end the parameters are written to --out as safetensors.
"""

import argparse
import os
import signal
import sys

import torch

import trainyard
from trainyard import safetensors, torch_state
from trainyard.tune import Plan

MICRO, ACCUM, N = 4, 3, 48


def build():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        # AvgPool2d(4) on 8x8 images is AdaptiveAvgPool2d(2), with a deterministic CUDA backward.
        torch.nn.Dropout(0.2), torch.nn.AvgPool2d(4), torch.nn.Flatten(),
        torch.nn.Linear(32, 5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--micro-batches", type=int, required=True)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--stop-at", type=int, default=-1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    g = torch.Generator().manual_seed(7)
    xs = torch.randn(N, 3, 8, 8, generator=g)
    ys = torch.randint(0, 5, (N,), generator=g)
    model = build().to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    plan = Plan(MICRO, ACCUM, precision=args.precision, channels_last=True)
    plan.apply(model)
    trainer = plan.trainer(model, opt)
    job = trainyard.job()
    mgr = trainyard.CheckpointManager(args.ckpt, keep_last=2)

    done = 0  # micro-batches consumed
    ck = mgr.latest()
    if ck is not None:
        got = torch_state.restore(ck, model=model, optimizer=opt, scaler=trainer.scaler)
        trainer.load_state_dict(got["extra"]["trainer"])
        done = got["step"]

    model.train()
    while done < args.micro_batches:
        idx = [(done * MICRO + i) % N for i in range(MICRO)]
        x, y = trainer.prepare((xs[idx], ys[idx]))
        with trainer.autocast():
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        trainer.backward(loss)
        done += 1
        if done == args.stop_at:
            os.kill(os.getpid(), signal.SIGTERM)  # the notice, between two micro-batches
        if job.should_stop():
            mgr.save(done, torch_state.state_files(model=model, optimizer=opt,
                                                   scaler=trainer.scaler, step=done,
                                                   extra={"trainer": trainer.state_dict()}))
            job.exit_preempted()
    params = {k: torch_state._tensor_bytes(v.cpu()) for k, v in model.state_dict().items()}
    with open(args.out, "wb") as f:
        f.write(safetensors.dumps(params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
