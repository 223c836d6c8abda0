"""Splitting a global batch into micro-batch x accumulation steps x ranks.

Pure arithmetic (standard library only), so the plan's batch sizes can be
checked without torch. The global batch is what the optimizer sees per step;
the micro-batch is what one forward/backward holds in memory on one rank.
"""


class TuneError(Exception):
    """The tuner cannot give what was asked; the message says what to change."""


class BatchSplit:
    """micro_batch x accum_steps x world_size = global_batch (achieved).

    exact is False when the target could not be met; note then says the
    nearest achievable global batch, why, and what target would be exact.
    """

    def __init__(self, micro_batch, accum_steps, world_size, target, note=""):
        self.micro_batch = micro_batch
        self.accum_steps = accum_steps
        self.world_size = world_size
        self.target = target
        self.note = note

    @property
    def global_batch(self):
        return self.micro_batch * self.accum_steps * self.world_size

    @property
    def exact(self):
        return self.global_batch == self.target

    def __repr__(self):
        return ("BatchSplit(micro_batch=%d, accum_steps=%d, world_size=%d, global_batch=%d, "
                "target=%d)" % (self.micro_batch, self.accum_steps, self.world_size,
                                self.global_batch, self.target))


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TuneError("%s must be an integer >= %d (got %r)" % (name, low, value))


def split_global_batch(global_batch, max_micro_batch, world_size=1, allow_inexact=True,
                       max_slowdown=2.0):
    """Chooses micro-batch and accumulation steps for `global_batch` samples per
    optimizer step over `world_size` ranks, each micro-batch at most `max_micro_batch`
    (the largest that fits).

    Exact when global_batch is a multiple of world_size and the per-rank batch has
    a divisor no smaller than max_micro_batch / max_slowdown: a smaller divisor
    would need more than max_slowdown times the fewest possible accumulation
    steps, so the nearest achievable batch with the fewest steps is used instead
    (and explained in .note), unless allow_inexact is False, which then takes the
    exact divisor however small, or raises when no exact split exists.
    """
    _check_int("global_batch", global_batch, 1)
    _check_int("max_micro_batch", max_micro_batch, 1)
    _check_int("world_size", world_size, 1)
    if global_batch < world_size:
        raise TuneError("global batch %d is smaller than the world size %d: every rank needs at "
                        "least one sample per step; ask for a global batch of at least %d"
                        % (global_batch, world_size, world_size))
    per_rank, rem = divmod(global_batch, world_size)
    fewest = -(-per_rank // max_micro_batch)  # ceil: accumulation steps at the largest micro-batch
    if rem == 0:
        divisor = max(d for d in range(1, min(per_rank, max_micro_batch) + 1)
                      if per_rank % d == 0)
        if divisor * max_slowdown >= max_micro_batch or divisor == per_rank or not allow_inexact:
            return BatchSplit(divisor, per_rank // divisor, world_size, global_batch)
    elif not allow_inexact:
        lo, hi = per_rank * world_size, (per_rank + 1) * world_size
        raise TuneError("global batch %d cannot be split evenly over %d ranks; use %d or %d, or "
                        "pass allow_inexact=True to get the nearest achievable batch"
                        % (global_batch, world_size, lo, hi))
    return _nearest(global_batch, per_rank, rem, fewest, max_micro_batch, world_size,
                    max_slowdown)


def _nearest(global_batch, per_rank, rem, steps, max_micro_batch, world_size, max_slowdown):
    """The achievable global batch nearest the target with `steps` accumulation steps."""
    exact_target = per_rank + (1 if rem * 2 >= world_size else 0)  # nearest per-rank batch
    micro = max(1, min(max_micro_batch, round(exact_target / steps)))
    split = BatchSplit(micro, steps, world_size, global_batch)
    got = split.global_batch
    why, small = [], None
    if rem:
        why.append("%d is not a multiple of the world size %d" % (global_batch, world_size))
    else:
        small = max(d for d in range(1, max_micro_batch + 1) if per_rank % d == 0)
        why.append("the per-rank batch %d has no divisor between %d and the largest micro-batch "
                   "that fits (%d); its largest one, %d, would take %d accumulation steps "
                   "instead of %d" % (per_rank, -int(-max_micro_batch // max_slowdown),
                                      max_micro_batch, small, per_rank // small, steps))
    fix = ("ask for %d (or another multiple of %d)" % (got, steps * world_size) if rem else
           "ask for %d, or pass allow_inexact=False to take the exact split with %d steps"
           % (got, per_rank // small))
    split.note = ("global batch %d cannot be met exactly: %s. Using %d x %d accumulation x %d "
                  "ranks = %d (%+.1f%%). For an exact split, %s"
                  % (global_batch, "; ".join(why), micro, steps, world_size, got,
                     100.0 * (got - global_batch) / global_batch, fix))
    return split
