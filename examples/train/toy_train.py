"""A toy PyTorch training job that follows the trainyard job contract.

Synthetic regression data, a small MLP, a few seconds on a CPU (it uses a GPU
when CUDA shows one). It resumes
from the newest verified checkpoint in TRAINYARD_CHECKPOINT_DIR, saves in the
background at an interval from Young's rule, and on a preemption notice saves
at the next step boundary and exits 75 so trainyard requeues it.

Run by hand (checkpoints go to ./toy-ckpt unless TRAINYARD_CHECKPOINT_DIR is set):
    PYTHONPATH=sdk/python python3 examples/train/toy_train.py --steps 300
Press Ctrl-C (handled as a notice here) and run it again: it continues.
"""

import argparse
import logging
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "sdk", "python"))
import trainyard  # noqa: E402
from trainyard import torch_state  # noqa: E402

N, BATCH, SEED = 4096, 64, 7


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600, help="optimizer steps in all")
    ap.add_argument("--step-delay", type=float, default=0.01,
                    help="extra seconds per step, to stand in for a bigger model")
    ap.add_argument("--data-delay", type=float, default=0.0,
                    help="extra seconds to fetch each batch, to stand in for a slow input "
                         "pipeline (reported as data_wait_s; the doctor calls it input-bound)")
    ap.add_argument("--mtbf", type=float, default=600.0,
                    help="expected seconds between interruptions, if the cluster gives none")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    job = trainyard.job(signals=("SIGTERM", "SIGINT"))
    ckpt_dir = job.checkpoint_dir or "toy-ckpt"
    mgr = trainyard.CheckpointManager(ckpt_dir, keep_last=3)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(SEED)
    xs = torch.randn(N, 32, generator=g)
    ys = torch.sin(xs @ torch.randn(32, 1, generator=g))
    xs, ys = xs.to(device), ys.to(device)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 1)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    sampler = trainyard.ResumableSampler(N, seed=SEED)

    step = 0
    ck = mgr.latest()
    if ck is not None:
        state = torch_state.restore(ck, model=model, optimizer=opt, scheduler=sched)
        step = state["step"]
        sampler.load(state["data"])
    print("attempt %d: starting at step %d of %d on %s (checkpoints in %s)"
          % (job.attempt, step, args.steps, device, mgr.directory), flush=True)

    buffers = torch_state.SnapshotBuffers()  # every save copies into the same host memory

    def save(background):
        files = torch_state.state_files(model=model, optimizer=opt, scheduler=sched, step=step,
                                        data=sampler.state(), buffers=buffers)
        mgr.save(step, files, background=background)

    loss = None
    interval_s = None  # set after the first save, from its measured cost
    last_save = time.monotonic()
    while step < args.steps:
        batch = []
        t_data = time.monotonic()
        for i in sampler:
            batch.append(i)
            if len(batch) < BATCH:
                continue
            time.sleep(args.data_delay)
            t0 = time.monotonic()
            idx = torch.tensor(batch, device=device)
            loss = torch.nn.functional.mse_loss(model(xs[idx]), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            time.sleep(args.step_delay)
            step += 1
            now = time.monotonic()
            trainyard.report(step=step, samples=len(batch), loss=loss.item(),
                             data_wait_s=t0 - t_data, step_time_s=now - t_data, dtype="fp32",
                             lr=sched.get_last_lr()[0])
            if step % 50 == 0:
                print("step %d loss %.4f" % (step, loss.item()), flush=True)
            batch = []

            if job.should_stop():  # a notice: save now, at a consistent step boundary
                save(background=False)
                left = job.seconds_left()
                job.exit_preempted("notice at step %d; checkpoint saved, %s" % (
                    step, "deadline unknown" if left is None else "%.0f s to spare" % left))
            if interval_s is None or now - last_save >= interval_s:
                save(background=True)
                last_save = now
                if interval_s is None:
                    mgr.wait()
                    interval_s = trainyard.young_interval(mgr.last_save_s, args.mtbf)
            if step >= args.steps:
                break
            t_data = time.monotonic()
    mgr.wait()
    save(background=False)
    print("done at step %d%s" % (step, "" if loss is None else ", final loss %.4f" % loss.item()),
          flush=True)


if __name__ == "__main__":
    main()
