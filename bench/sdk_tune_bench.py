"""How well and how fast trainyard.tune picks a micro-batch and settings on CPU.

For a small CNN and a small transformer, each under a memory budget (CPU memory
stands in for GPU memory; the step's peak is torch's CPU allocator as recorded
by the profiler, see trainyard/tune/memory.py), it measures:

  tune s      wall time of tune() (search, candidate timing, naive timing)
  found       the largest micro-batch tune() found fitting under budget - margin
  true        the largest that fits, by a linear scan 1, 2, 3, ... with an
              independent peak count (tests/sdk/tune_models.py); found/true is
              the target "within 10%" (>= 0.90, <= 1.00)
  plan        micro-batch x accumulation and the chosen settings
  chosen      seconds per optimizer step (global batch) running the plan with its
              Trainer, median of --steps optimizer steps after one warm-up
  naive       the same global batch at the sample batch's size (8) in fp32 and the
              default layout, accumulated: what one runs without tuning
  fp32 same   the plan's micro-batch and accumulation, but fp32 and the default
              layout: separates the precision/layout gain from the batch-size gain

Ratios are naive/chosen and fp32-same/chosen (higher is better). One thread
(torch.set_num_threads(1)), as the machine's cores are shared.

    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_tune_bench.py
    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_tune_bench.py --steps 3 --only cnn
"""

import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "sdk"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sdk", "python"))

import tune_models  # noqa: E402
from trainyard.tune import Plan, tune  # noqa: E402

GLOBAL_BATCH = 256
MARGIN = 0.10
CASES = {
    # name: (case builder, budget in MiB)
    "cnn": (lambda: tune_models.cnn_case(image=32), 24),
    "transformer": (lambda: tune_models.transformer_case(seq=32), 24),
}


def loss_fn(model, batch):
    out = model(batch[0])
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(),
                                             batch[1].reshape(-1))


def step_seconds(model, sample, plan, steps):
    """Median seconds per optimizer step of `plan` run by its Trainer."""
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    plan.apply(model)
    opt = tune_models.adam(model.parameters())
    trainer = plan.trainer(model, opt)
    n = sample[0].shape[0]
    idx = torch.arange(plan.micro_batch) % n
    batch = trainer.prepare((sample[0][idx], sample[1][idx]))
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        for _ in range(plan.accum_steps):
            with trainer.autocast():
                loss = loss_fn(model, batch)
            trainer.backward(loss)
        if i:  # the first step is warm-up (allocations, optimizer state)
            times.append(time.perf_counter() - t0)
    model.to(memory_format=torch.contiguous_format)
    model.load_state_dict(saved)
    return statistics.median(times)


def run_case(name, steps):
    build, budget_mib = CASES[name]
    model, sample = build()
    started = time.perf_counter()
    plan = tune(model, tune_models.adam, sample, GLOBAL_BATCH, loss_fn=loss_fn,
                memory_budget=budget_mib << 20, margin=MARGIN, report=False, env={})
    tune_s = time.perf_counter() - started
    found = plan.measured["largest_micro_batch"]
    true = tune_models.true_largest(model, tune_models.adam, sample, plan.measured["limit_bytes"],
                                    stop=2 * found + 2)
    chosen = step_seconds(model, sample, plan, steps)
    naive_size = sample[0].shape[0]
    naive = step_seconds(model, sample, Plan(naive_size, GLOBAL_BATCH // naive_size), steps)
    same = step_seconds(model, sample, Plan(plan.micro_batch, plan.accum_steps), steps)
    settings = plan.precision + ("+cl" if plan.channels_last else "")
    return [name, "%d" % budget_mib, "%.1f" % tune_s, "%d" % found, "%d" % true,
            "%.2f" % (found / true), "%dx%d %s" % (plan.micro_batch, plan.accum_steps, settings),
            "%.3f" % chosen, "%.3f" % naive, "%.2f" % (naive / chosen), "%.3f" % same,
            "%.2f" % (same / chosen)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=5, help="timed optimizer steps per setting")
    ap.add_argument("--only", choices=sorted(CASES), help="one model")
    args = ap.parse_args()
    torch.set_num_threads(1)
    head = ["model", "budget MiB", "tune s", "found", "true", "found/true", "plan",
            "chosen s/step", "naive s/step", "naive/chosen", "fp32 same s/step", "same/chosen"]
    rows = [run_case(n, args.steps) for n in ([args.only] if args.only else sorted(CASES))]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    print("global batch %d, margin %d%%, torch %s, %d thread, load average %.2f"
          % (GLOBAL_BATCH, MARGIN * 100, torch.__version__, torch.get_num_threads(),
             os.getloadavg()[0]))


if __name__ == "__main__":
    main()
