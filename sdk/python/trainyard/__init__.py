"""trainyard's training SDK: the worker side of the job contract (docs/job-contract.md).

    import trainyard
    job = trainyard.job()                       # env + notice handling
    ckpt = trainyard.CheckpointManager(keep_last=3)
    ...
    if job.should_stop():
        ckpt.save(step, files)
        job.exit_preempted()                    # exit 75: requeue, resume later

Modules imported on first use (torch only where they need it):
    trainyard.torch_state   model/optimizer/scheduler/RNG state as checkpoint files
    trainyard.data          sharded records, a prefetching loader that resumes mid-epoch
    trainyard.tune          micro-batch, accumulation, mixed precision for this device
    trainyard.distributed   torch.distributed from the job's variables, DDP, compression

so `import trainyard` works with the standard library alone. docs/training.md shows
them together in one training loop.
"""

from .checkpoint import Checkpoint, CheckpointError, CheckpointManager
from .interval import young_interval
from .runtime import (EXIT_DONE, EXIT_PREEMPTED, Job, Notice, ignore_notice_signals, job,
                      worker_init_fn)
from .metrics import Reporter, report
from .sampler import ResumableSampler

__version__ = "0.1.0"

__all__ = ["Checkpoint", "CheckpointError", "CheckpointManager", "EXIT_DONE", "EXIT_PREEMPTED",
           "Job", "Notice", "Reporter", "ResumableSampler", "ignore_notice_signals", "job", "report",
           "worker_init_fn", "young_interval"]


_LAZY = ("torch_state", "data", "tune", "distributed")


def __getattr__(name):
    # `trainyard.data` and the rest without importing them (or torch) for users who do not.
    if name in _LAZY:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'trainyard' has no attribute %r" % name)
