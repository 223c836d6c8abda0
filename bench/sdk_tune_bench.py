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

--device cuda runs the same two models on the GPU, where the peak is the CUDA
allocator's high-water mark (max_memory_reserved) and "true" is found by an
exact bisection with its own step (tune_models.cuda_step_peak) instead of the
linear scan. Budgets and the global batch are larger there (CUDA_CASES), a
"tf32 same" column separates TF32 from bf16, and one more row tunes a larger
transformer against the whole GPU's free memory, where the search ends on a
real out-of-memory error or the margin; its naive column is left out (it would
take thousands of micro-batches).

    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_tune_bench.py
    PYTHONPATH=sdk/python /usr/bin/python3 bench/sdk_tune_bench.py --steps 3 --only cnn
    PYTHONPATH=sdk/python python3 bench/sdk_tune_bench.py --device cuda --json out.json
"""

import argparse
import json
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
# On a GPU: name -> (case builder, budget in MiB (0: the GPU's free memory), global batch,
# time the naive setting).
CUDA_CASES = {
    "cnn": (lambda: tune_models.cnn_case(image=32), 1024, 8192, True),
    "transformer": (lambda: tune_models.transformer_case(seq=32), 1024, 8192, True),
    "transformer-large": (lambda: tune_models.transformer_case(seq=256, dim=256, heads=8,
                                                               layers=4), 0, 16384, False),
}


def loss_fn(model, batch):
    out = model(batch[0])
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(),
                                             batch[1].reshape(-1))


def sync(model):
    device = next(model.parameters()).device
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_seconds(model, sample, plan, steps):
    """Median seconds per optimizer step of `plan` run by its Trainer; the model's state,
    layout and the TF32 flags are put back, also when the step runs out of memory."""
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        plan.apply(model)
        opt = tune_models.adam(model.parameters())
        trainer = plan.trainer(model, opt)
        n = sample[0].shape[0]
        idx = torch.arange(plan.micro_batch) % n
        batch = trainer.prepare((sample[0][idx], sample[1][idx]))
        times = []
        for i in range(steps + 1):
            sync(model)
            t0 = time.perf_counter()
            for _ in range(plan.accum_steps):
                with trainer.autocast():
                    loss = loss_fn(model, batch)
                trainer.backward(loss)
            sync(model)
            if i:  # the first step is warm-up (allocations, optimizer state)
                times.append(time.perf_counter() - t0)
        return statistics.median(times)
    finally:
        opt = trainer = batch = loss = None
        for p in model.parameters():
            p.grad = None
        model.to(memory_format=torch.contiguous_format)
        model.load_state_dict(saved)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def cuda_true_largest(model, sample, plan, limit, found, cap):
    """The largest micro-batch up to `cap` whose step (the plan's precision and layout) peaks
    within `limit`, by exact bisection with tune_models.cuda_step_peak (its own step, not
    tune's)."""
    def fits(n):
        if n > cap:
            return False
        return tune_models.cuda_step_peak(model, tune_models.adam, sample, n, plan.precision,
                                          plan.channels_last, plan.tf32) <= limit
    good, bad = 0, max(1, found)
    if fits(bad):
        good, bad = bad, bad + 1
        while fits(bad):  # grow until a size does not fit
            good, bad = bad, 2 * bad
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def run_cuda_case(name, steps, records):
    build, budget_mib, global_batch, time_naive = CUDA_CASES[name]
    model, sample = build()
    model = model.cuda()
    torch.cuda.empty_cache()
    started = time.perf_counter()
    plan = tune(model, tune_models.adam, sample, global_batch, loss_fn=loss_fn,
                memory_budget=budget_mib << 20 if budget_mib else None, margin=MARGIN,
                report=False, env={})
    tune_s = time.perf_counter() - started
    found = plan.measured["largest_micro_batch"]
    true = cuda_true_largest(model, sample, plan, plan.measured["limit_bytes"], found,
                             global_batch)
    chosen = step_seconds(model, sample, plan, steps)
    naive = None
    if time_naive:
        naive_size = sample[0].shape[0]
        naive = step_seconds(model, sample, Plan(naive_size, global_batch // naive_size), steps)

    def same(tf32):
        try:
            return step_seconds(model, sample, Plan(plan.micro_batch, plan.accum_steps, tf32=tf32),
                                steps)
        except torch.cuda.OutOfMemoryError:
            return None
        finally:
            torch.cuda.empty_cache()
    same_tf32, same_fp32 = same(True), same(False)
    budget = "%d" % budget_mib if budget_mib else "GPU %d" % (plan.measured["budget_bytes"] >> 20)
    records.append({"model": name, "budget_bytes": plan.measured["budget_bytes"],
                    "global_batch": global_batch, "tune_s": tune_s, "found": found, "true": true,
                    "plan": plan.to_dict(),
                    "chosen_s": chosen, "naive_s": naive, "tf32_same_s": same_tf32,
                    "fp32_same_s": same_fp32, "trials": plan.measured["trials"],
                    "candidates": plan.measured["candidates"],
                    "precision_reason": plan.measured["precision_reason"]})

    def ratio(a):
        return "%.2f" % (a / chosen) if a else "-"

    settings = plan.precision + ("+cl" if plan.channels_last else "") + \
        ("+tf32" if plan.tf32 else "")
    return [name, budget, "%d" % global_batch, "%.1f" % tune_s, "%d" % found, "%d" % true,
            "%.2f" % (found / true if true else 0),
            "%dx%d %s" % (plan.micro_batch, plan.accum_steps, settings), "%.4f" % chosen,
            "%.4f" % naive if naive else "-", ratio(naive),
            "%.4f" % same_tf32 if same_tf32 else "OOM", ratio(same_tf32),
            "%.4f" % same_fp32 if same_fp32 else "OOM", ratio(same_fp32)]


def print_table(head, rows):
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def main_cuda(args):
    if not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no CUDA device")
    props = torch.cuda.get_device_properties(0)
    head = ["model", "budget MiB", "global", "tune s", "found", "true", "found/true", "plan",
            "chosen s/step", "naive s/step", "naive/chosen", "tf32 same s/step", "tf32/chosen",
            "fp32 same s/step", "fp32/chosen"]
    rows, records = [], []
    for name in ([args.only] if args.only else list(CUDA_CASES)):
        try:
            rows.append(run_cuda_case(name, args.steps, records))
        except Exception as e:  # noqa: BLE001 - report the case and go on with the next
            import traceback
            traceback.print_exc()
            rows.append([name, "failed: %s" % str(e).splitlines()[0][:80]] + [""] * (len(head) - 2))
        torch.cuda.empty_cache()
    print_table(head, rows)
    print("%s (%d MiB, sm_%d%d), torch %s, CUDA %s, margin %d%%"
          % (props.name, props.total_memory >> 20, props.major, props.minor, torch.__version__,
             torch.version.cuda, MARGIN * 100))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": props.name, "torch": torch.__version__,
                       "cuda": torch.version.cuda, "rows": records}, f, indent=1)


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
    ap.add_argument("--only", choices=sorted(set(CASES) | set(CUDA_CASES)), help="one model")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--json", default=None, help="--device cuda: also write the rows here")
    args = ap.parse_args()
    if args.device == "cuda":
        return main_cuda(args)
    if args.only and args.only not in CASES:
        ap.error("--only %s is a --device cuda case" % args.only)
    torch.set_num_threads(1)
    head = ["model", "budget MiB", "tune s", "found", "true", "found/true", "plan",
            "chosen s/step", "naive s/step", "naive/chosen", "fp32 same s/step", "same/chosen"]
    rows = [run_case(n, args.steps) for n in ([args.only] if args.only else sorted(CASES))]
    print_table(head, rows)
    print("global batch %d, margin %d%%, torch %s, %d thread, load average %.2f"
          % (GLOBAL_BATCH, MARGIN * 100, torch.__version__, torch.get_num_threads(),
             os.getloadavg()[0]))


if __name__ == "__main__":
    main()
