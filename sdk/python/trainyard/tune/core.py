"""tune(): measure, choose and report a Plan for one model on this device.

Phases: (1) check the request before spending time; (2) find the largest
micro-batch whose full step fits in the memory limit, with the device's
preferred settings; (3) split the global batch over micro-batch, accumulation
and ranks; (4) time each candidate setting at that micro-batch and keep the
preferred one unless another is at least `min_gain` faster; (5) time the naive
settings for the speed-up; (6) restore the model and report the choice.
"""

import math
import os
import time

from . import amp, memory
from .batch import TuneError, split_global_batch
from .plan import ENV_PREFIX, Plan
from .runner import StepRunner, mib
from .search import largest_micro_batch


def tune(model, make_optimizer, sample_batch, global_batch, *, loss_fn=None, world_size=None,
         memory_budget=None, margin=0.10, max_micro_batch=None, tolerance=0.05,
         allow_inexact=True, time_steps=3, min_gain=0.05, report=True, reporter=None, env=None):
    """Chooses micro-batch, gradient accumulation, precision, memory format and TF32
    for training `model` with `global_batch` samples per optimizer step.

    make_optimizer(params) -> a fresh optimizer (its state is part of the memory);
    sample_batch: a tensor or tuple/list/dict of tensors, rows repeated to build
    any micro-batch; loss_fn(model, batch) -> loss (default: runner.default_loss);
    world_size: ranks sharing the global batch (default $WORLD_SIZE, else 1);
    memory_budget: bytes one rank may use (default: the GPU's free memory, or the
    host's available memory on CPU), of which `margin` is kept free;
    tolerance: binary search stops when within this fraction of the largest size.
    A size fits when one step's peak, measured with the gradients and optimizer
    state of an earlier step still alive (as in the middle of an accumulation),
    stays within budget x (1 - margin) and nothing runs out of memory. The peak
    is the CUDA allocator's high-water mark, or on CPU torch's allocations as the
    profiler records them (trainyard.tune.memory says what that leaves out).
    A plan pinned by TRAINYARD_TUNE_* variables in `env` (default os.environ) is
    returned without measuring, so a probe's recommendation sticks.
    """
    env = os.environ if env is None else env
    pinned = Plan.from_env(env)
    if pinned is not None:
        pinned.target_global_batch = global_batch
        if not pinned.exact:
            pinned.note = ("the plan pinned by %s* gives a global batch of %d (%d x %d x %d "
                           "ranks), not the %d asked; update the job spec's env or the target"
                           % (ENV_PREFIX, pinned.global_batch, pinned.micro_batch,
                              pinned.accum_steps, pinned.world_size, global_batch))
        return pinned
    started = time.monotonic()
    # (1) Bad requests fail before any measuring.
    world_size = world_size or _env_world_size(env)
    split_global_batch(global_batch, 1, world_size, allow_inexact)
    if not 0 <= margin < 1:
        raise TuneError("margin must be in [0, 1) (got %r): it is the share of the budget "
                        "kept free" % (margin,))
    runner = StepRunner(model, make_optimizer, sample_batch, loss_fn, limit_bytes=0)
    device = runner.device
    budget = int(memory_budget) if memory_budget else memory.default_budget(device)
    limit = runner.limit = int(budget * (1 - margin))
    runner.limit_text = "%s budget less a %d%% margin" % (mib(budget), round(margin * 100))
    cap = -(-global_batch // world_size)
    if max_micro_batch:
        cap = min(cap, max_micro_batch)
    precisions, tf32_ok, why = amp.device_precisions(device)
    conv = amp.has_conv(model)
    try:
        # (2) The preferred settings decide the size: AMP on GPUs, fp32 on CPU.
        preferred = amp.Settings(precisions[0], channels_last=conv and device.type == "cuda",
                                 tf32=tf32_ok)
        largest, _, trials = largest_micro_batch(runner, preferred, cap, tolerance)
        # (3)
        split = split_global_batch(global_batch, largest, world_size, allow_inexact)
        # (4)
        measured = _time_candidates(runner, split.micro_batch,
                                    _candidates(precisions, conv, tf32_ok), time_steps)
        if preferred.name() not in measured:
            raise TuneError("the step stopped fitting at micro-batch %d on re-measuring; the "
                            "memory use is not stable; raise margin=" % split.micro_batch)
        chosen = _choose(measured, preferred, split.accum_steps, min_gain)
        # (5) Naive: fp32, default layout, at the sample batch's size.
        naive = _naive(runner, measured, min(runner.sample_size, largest), time_steps)
    finally:
        # (6)
        runner.restore()
    naive_size = naive.micro_batch
    naive_steps = math.ceil(global_batch / world_size / naive_size)
    chosen_m = measured[chosen.name()]
    per_sample = chosen_m.global_step_s(split.accum_steps) / (split.micro_batch * split.accum_steps)
    naive_per_sample = naive.global_step_s(naive_steps) / (naive_size * naive_steps)
    info = {
        "device": str(device), "budget_bytes": budget, "limit_bytes": limit, "margin": margin,
        "largest_micro_batch": largest, "peak_bytes": chosen_m.peak_bytes,
        "trials": [t.to_dict() for t in trials],
        "candidates": {k: _candidate_dict(v, split.accum_steps) for k, v in measured.items()},
        "precision_reason": _reason(why, chosen, preferred, measured, split.accum_steps),
        "step_time_s": chosen_m.global_step_s(split.accum_steps),
        "naive": "fp32 at micro-batch %d x %d" % (naive_size, naive_steps),
        "naive_step_time_s": naive.global_step_s(naive_steps),
        "speedup": naive_per_sample / per_sample,
        "tune_seconds": time.monotonic() - started}
    plan = Plan(split.micro_batch, split.accum_steps, world_size, chosen.precision,
                chosen.channels_last, chosen.tf32, global_batch, split.note, info)
    if report:
        _report(plan, reporter)
    return plan


def _env_world_size(env):
    try:
        return max(1, int(env.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _candidates(precisions, conv, tf32_ok):
    out = []
    for p in precisions:
        for cl in ((True, False) if conv else (False,)):
            out.append(amp.Settings(p, channels_last=cl, tf32=tf32_ok))
    return out


def _time_candidates(runner, size, candidates, time_steps):
    """{settings name: Measurement} for the candidates that fit at `size`."""
    measured = {}
    for s in candidates:
        try:
            measured[s.name()] = runner.evaluate(size, s, time_steps=time_steps)
        except memory.OutOfMemory:
            continue
    return measured


def _choose(measured, preferred, accum_steps, min_gain):
    """The fastest settings if at least min_gain faster than the preferred ones,
    else the preferred (timing noise must not flip the choice)."""
    fastest = min(measured.values(), key=lambda m: m.global_step_s(accum_steps))
    base = measured[preferred.name()].global_step_s(accum_steps)
    if fastest.global_step_s(accum_steps) < base * (1 - min_gain):
        return fastest.settings
    return preferred


def _naive(runner, measured, size, time_steps):
    naive = amp.Settings("fp32")
    if size == next(iter(measured.values())).micro_batch and naive.name() in measured:
        return measured[naive.name()]
    try:
        return runner.evaluate(size, naive, time_steps=time_steps)
    except memory.OutOfMemory:
        # fp32 does not fit where the chosen precision does: compare at batch 1.
        return runner.evaluate(1, naive, time_steps=time_steps)


def _candidate_dict(m, accum_steps):
    return {"micro_batch": m.micro_batch, "peak_bytes": m.peak_bytes, "fb_s": m.fb_s,
            "opt_s": m.opt_s, "step_time_s": m.global_step_s(accum_steps)}


def _reason(why, chosen, preferred, measured, accum_steps):
    times = ", ".join("%s %.4f s" % (k, v.global_step_s(accum_steps))
                      for k, v in measured.items())
    if chosen == preferred:
        verdict = "kept %s" % chosen.name()
    else:
        verdict = "chose %s over %s (faster)" % (chosen.name(), preferred.name())
    return "%s. Measured per optimizer step: %s; %s" % (why, times, verdict)


def _report(plan, reporter):
    """One metrics line: the choice and the measured speed-up (docs/job-contract.md)."""
    from .. import metrics
    m = plan.measured
    fields = dict(dtype=plan.precision, tune_micro_batch=plan.micro_batch,
                  tune_accum_steps=plan.accum_steps, tune_world_size=plan.world_size,
                  tune_global_batch=plan.global_batch,
                  tune_target_global_batch=plan.target_global_batch,
                  tune_channels_last=plan.channels_last, tune_tf32=plan.tf32,
                  tune_largest_micro_batch=m["largest_micro_batch"],
                  tune_peak_bytes=m["peak_bytes"], tune_limit_bytes=m["limit_bytes"],
                  tune_step_time_s=m["step_time_s"], tune_naive_step_time_s=m["naive_step_time_s"],
                  tune_speedup=m["speedup"], tune_seconds=m["tune_seconds"])
    if reporter is not None:
        reporter.report(**fields)
        reporter.flush()
    else:
        metrics.report(**fields)
        metrics.flush()
