"""Tuning a training step to the device: micro-batch, accumulation, precision, layout.

    from trainyard import tune
    plan = tune.tune(model, lambda p: torch.optim.AdamW(p, lr=3e-4), sample_batch,
                     global_batch=256)
    print(plan.summary())
    plan.apply(model)                        # TF32, channels-last
    trainer = plan.trainer(model, optimizer)  # autocast, GradScaler, accumulation

tune() finds the largest micro-batch whose whole step (forward, backward,
optimizer step) fits in memory, splits the global batch into micro-batch x
accumulation x ranks, times the precisions and layouts the device supports,
and reports its choice and the measured speed-up as a metrics line. A probe
(`python -m trainyard.tune --probe ...`) writes the choice as JSON and as
TRAINYARD_TUNE_* env vars for the job spec; tune() then returns that plan
without measuring. Everything but the Plan value needs torch.
"""

from .batch import BatchSplit, TuneError, split_global_batch
from .plan import ENV_PREFIX, Plan

__all__ = ["BatchSplit", "ENV_PREFIX", "Plan", "Trainer", "TuneError", "split_global_batch",
           "tune"]


def __getattr__(name):
    # torch is imported only when the measuring parts are used.
    if name == "tune":
        from .core import tune
        return tune
    if name == "Trainer":
        from .trainer import Trainer
        return Trainer
    raise AttributeError("module 'trainyard.tune' has no attribute %r" % name)
