"""Finding the largest micro-batch whose full training step fits.

Power-of-two growth from 1 until a step does not fit (or the cap is reached),
then binary search between the last size that fit and the first that did not,
stopping when the gap is within `tolerance` of the size that fit. Assumes the
step's memory grows with the batch size, which holds for the models this is
for (activations are linear in the batch).
"""

from . import memory
from .batch import TuneError
from .runner import mib


class Trial:
    """One tried size: its peak bytes, or why it did not fit."""

    def __init__(self, micro_batch, peak_bytes=None, failure=None):
        self.micro_batch = micro_batch
        self.peak_bytes = peak_bytes
        self.failure = failure

    @property
    def fits(self):
        return self.failure is None

    def to_dict(self):
        return {"micro_batch": self.micro_batch, "peak_bytes": self.peak_bytes,
                "fits": self.fits, "failure": self.failure}


def largest_micro_batch(runner, settings, cap, tolerance=0.0):
    """(largest size <= cap that fits, the Measurement there, [Trial]) under
    runner.limit; raises TuneError when not even micro-batch 1 fits."""
    trials, best, bad = [], None, None
    size = 1
    while True:
        m = _try(runner, settings, size, trials)
        if m is None:
            bad = size
            break
        best = m
        if size >= cap:
            break
        size = min(size * 2, cap)
    if best is None:
        raise TuneError(_no_fit_message(runner, trials[0]))
    while bad is not None and bad - best.micro_batch > max(1, tolerance * best.micro_batch):
        mid = (best.micro_batch + bad) // 2
        m = _try(runner, settings, mid, trials)
        if m is None:
            bad = mid
        else:
            best = m
    return best.micro_batch, best, trials


def _try(runner, settings, size, trials):
    try:
        m = runner.evaluate(size, settings)
    except memory.OutOfMemory as e:
        trials.append(Trial(size, e.peak_bytes, str(e)))
        return None
    trials.append(Trial(size, m.peak_bytes))
    return m


def _no_fit_message(runner, trial):
    params, grads, opt = runner.live_parts()
    parts = "parameters %s, gradients %s, optimizer state %s" % (
        mib(params), mib(grads), mib(opt) if opt is not None else "unknown (it ran out too)")
    need = (" needs %s;" % mib(trial.peak_bytes)) if trial.peak_bytes else ""
    return ("the model does not fit even at micro-batch 1: the full step (forward, backward, "
            "optimizer step)%s the limit is %s (%s). Of that, %s are there before any "
            "activation. Free memory (smaller model, fewer optimizer states, e.g. SGD or "
            "8-bit Adam), use activation checkpointing or sharding (FSDP/ZeRO), lower "
            "margin=, or run on a device with more memory. Trial said: %s"
            % (need, mib(runner.limit), runner.limit_text, parts, trial.failure))
