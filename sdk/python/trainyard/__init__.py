"""trainyard's training SDK: the worker side of the job contract (docs/job-contract.md).

    import trainyard
    job = trainyard.job()                       # env + notice handling
    ckpt = trainyard.CheckpointManager(keep_last=3)
    ...
    if job.should_stop():
        ckpt.save(step, files)
        job.exit_preempted()                    # exit 75: requeue, resume later

PyTorch helpers live in trainyard.torch_state and are imported only on use,
so the rest works with the standard library alone.
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


def __getattr__(name):
    # `trainyard.torch_state` without importing torch for users who do not need it.
    if name == "torch_state":
        import importlib
        return importlib.import_module(".torch_state", __name__)
    raise AttributeError("module 'trainyard' has no attribute %r" % name)
