"""A sampler whose order is a pure function of (seed, epoch), so it can resume mid-epoch.

Each epoch's permutation comes from its own random.Random seeded with the seed
and the epoch, never from a global RNG; restoring (epoch, index) after a
preemption therefore yields exactly the indices the uninterrupted run would
have yielded next.
"""


class ResumableSampler:
    """Yields dataset indices for one epoch per iteration, resumable at any index.

    Works as a torch.utils.data Sampler (it only needs __iter__ and __len__).
    With rank/world_size, each rank takes every world_size-th index of the
    shared permutation (the tail that does not divide evenly is dropped, so all
    ranks run the same number of steps).

    `index` counts indices handed out in the current epoch. A DataLoader with
    workers reads ahead of the training loop; save `state(consumed=...)` with
    the number of samples the loop actually trained on in this epoch.
    """

    def __init__(self, n, seed=0, shuffle=True, rank=0, world_size=1):
        if n < 0 or world_size < 1 or not 0 <= rank < world_size:
            raise ValueError("need n >= 0 and 0 <= rank < world_size")
        self.n = n
        self.seed = seed
        self.shuffle = shuffle
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0
        self.index = 0

    @property
    def per_epoch(self):
        """Indices this rank gets per epoch."""
        return self.n // self.world_size

    def order(self, epoch):
        """This rank's indices for `epoch`, in order."""
        import random
        order = list(range(self.n))
        if self.shuffle:
            # A str seed is hashed with SHA-512, so it is the same in every process
            # (unlike hash()), and distinct (seed, epoch) pairs never collide.
            random.Random("trainyard:%s:%d" % (self.seed, epoch)).shuffle(order)
        usable = self.per_epoch * self.world_size
        return order[self.rank:usable:self.world_size]

    def set_epoch(self, epoch):
        """Starts `epoch` from its beginning."""
        self.epoch = epoch
        self.index = 0

    def __iter__(self):
        # An epoch that was finished moves on here, not when the last index is
        # handed out: a state saved right after an epoch's last batch then
        # resumes at the start of the next epoch.
        if self.index >= self.per_epoch:
            self.epoch += 1
            self.index = 0
        order = self.order(self.epoch)
        while self.index < len(order):
            i = order[self.index]
            self.index += 1
            yield i

    def __len__(self):
        """Indices left in the current epoch (all of them once it is finished)."""
        left = self.per_epoch - self.index
        return left if left > 0 else self.per_epoch

    def state(self, consumed=None):
        """A JSON-able position: epoch, index in the epoch, and what fixes the order."""
        index = self.index if consumed is None else consumed
        if not 0 <= index <= self.per_epoch:
            raise ValueError("consumed must be within 0..%d" % self.per_epoch)
        return {"epoch": self.epoch, "index": index, "seed": self.seed, "n": self.n,
                "shuffle": self.shuffle, "rank": self.rank, "world_size": self.world_size}

    def load(self, state):
        """Resumes at a saved position; refuses one from a different order or world size.

        A state saved by any rank of the same world size loads (all ranks are at the
        same index). One from another world size loads only at an epoch boundary (the
        new split starts there); mid-epoch it is refused, not re-sharded, since its
        index counts that split's share of the permutation.
        """
        for key in ("seed", "n", "shuffle"):
            if key in state and state[key] != getattr(self, key):
                raise ValueError("sampler state has %s=%r, this sampler %r; resuming would "
                                 "not reproduce the order" % (key, state[key], getattr(self, key)))
        saved_world = state.get("world_size", self.world_size)
        if saved_world != self.world_size:
            epoch, index = int(state["epoch"]), int(state["index"])
            if index == 0 or index >= self.n // saved_world:  # at an epoch boundary
                self.set_epoch(epoch if index == 0 else epoch + 1)
                return
            raise ValueError(
                "sampler state was saved with world_size=%r (epoch %s, index %s of each rank's "
                "share), but this sampler has world_size=%d: the index counts positions in a "
                "%r-way split of the permutation, so loading it would repeat or skip samples. "
                "Resume with the same number of ranks, or restart the data order at an epoch "
                "boundary instead of calling load(): sampler.set_epoch(%s) to redo that epoch "
                "or set_epoch(%s) to start the next one."
                % (saved_world, state.get("epoch"), state.get("index"), self.world_size,
                   saved_world, state.get("epoch"), _next(state.get("epoch"))))
        self.epoch = int(state["epoch"])
        self.index = int(state["index"])


def _next(epoch):
    return epoch + 1 if isinstance(epoch, int) else "epoch + 1"
