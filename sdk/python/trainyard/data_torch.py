"""A torch DataLoader over your own Dataset that resumes mid-epoch bitwise-identically.

A plain DataLoader draws its order and its workers' seeds from the global RNG
when it has no generator=, so a resumed run sees other samples; and even with
one, the random augmentation in a worker depends on everything that worker
drew before, which a restart does not replay. Here the order of an epoch comes
from ResumableSampler (a pure function of seed and epoch), and before each
sample the RNGs of Python's random, numpy and torch are seeded from (seed,
epoch, sample index): a sample's augmentation no longer depends on which
worker made it, on the number of workers, or on where the run restarted.
"""

import hashlib
import random

import torch
from torch.utils.data import DataLoader, get_worker_info

from . import runtime
from .data_loader import EpochCursor, check_state, close_at_exit, env_rank
from .sampler import ResumableSampler

try:
    import numpy
except ImportError:  # numpy is optional; its global RNG is then left alone
    numpy = None

STATE_FORMAT = "trainyard-dataloader"
_ORDER_KEYS = ("seed", "n", "shuffle")
_SPLIT_KEYS = ("world_size", "batch_size", "drop_last")


def sample_seed(seed, epoch, index):
    """The 64-bit RNG seed for dataset item `index` in `epoch`."""
    digest = hashlib.blake2b(b"trainyard-sample:%s:%d:%d" % (str(seed).encode(), epoch, index),
                             digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _seed_all(s):
    random.seed(s)
    if numpy is not None:
        numpy.random.seed(s & 0xFFFFFFFF)
    torch.default_generator.manual_seed(s)


class _Seeded(torch.utils.data.Dataset):
    """Looks up (index, seed) keys: seeds the RNGs, then returns dataset[index].

    In the main process (num_workers=0) the training loop's own RNG states are
    put back afterwards, so dropout and the like draw as if no loader ran.
    """

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, key):
        index, s = key
        if get_worker_info() is not None:
            _seed_all(s)
            return self.dataset[index]
        saved = (random.getstate(), numpy.random.get_state() if numpy is not None else None,
                 torch.get_rng_state())
        try:
            _seed_all(s)
            return self.dataset[index]
        finally:
            random.setstate(saved[0])
            if numpy is not None:
                numpy.random.set_state(saved[1])
            torch.set_rng_state(saved[2])


class _Batches:
    """The DataLoader's batch_sampler: the owner's remaining batches, as seeded keys."""

    def __init__(self, owner):
        self.owner = owner

    def __len__(self):
        return self.owner.batches_per_epoch

    def __iter__(self):
        o = self.owner
        order = o.sampler.order(o.epoch)
        for b in range(o.batch, o.batches_per_epoch):
            yield [(i, sample_seed(o.seed, o.epoch, i))
                   for i in order[b * o.batch_size:(b + 1) * o.batch_size]]


class ResumableDataLoader(EpochCursor):
    """Iterates one epoch's remaining batches per iter(); state()/load() save the position.

    Built by resumable_dataloader(). `loader.dataloader` is the torch DataLoader.
    """

    def __init__(self, dataset, batch_size, seed, shuffle, rank, world_size, drop_last,
                 dataloader_kwargs):
        super().__init__()
        self.batch_size = batch_size
        self.seed = seed
        self.drop_last = drop_last
        self.sampler = ResumableSampler(len(dataset), seed=seed, shuffle=shuffle, rank=rank,
                                        world_size=world_size)
        self.epoch = 0
        self.batch = 0
        kw = dict(dataloader_kwargs)
        user_init = kw.pop("worker_init_fn", None)
        kw.setdefault("generator", torch.Generator().manual_seed(hash_seed(seed)))
        self.dataloader = DataLoader(_Seeded(dataset), batch_sampler=_Batches(self),
                                     worker_init_fn=_WorkerInit(user_init), **kw)
        self._active = None
        if self.dataloader.num_workers > 0:
            close_at_exit(self)

    @property
    def batches_per_epoch(self):
        full, rest = divmod(self.sampler.per_epoch, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def _iterate(self, epoch, start):
        # The batch sampler reads epoch and batch itself (_Batches); closing this generator
        # drops a non-persistent DataLoader iterator, whose workers then stop.
        for batch in self._timed(self.dataloader):
            self.batch += 1
            yield batch

    def close(self):
        """Stops the DataLoader's workers (persistent ones too); iterating starts new ones."""
        self._abandon()
        it = getattr(self.dataloader, "_iterator", None)
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()
            self.dataloader._iterator = None

    def set_epoch(self, epoch):
        """Starts `epoch` from its beginning."""
        self._abandon()
        self.epoch, self.batch = int(epoch), 0

    def _settings(self):
        s = self.sampler
        return {"seed": self.seed, "n": s.n, "shuffle": s.shuffle, "world_size": s.world_size,
                "batch_size": self.batch_size, "drop_last": self.drop_last}

    def state(self):
        """The position (batches handed to the loop this epoch), JSON-able, for the checkpoint."""
        st = {"format": STATE_FORMAT, "version": 1, "epoch": self.epoch, "batch": self.batch,
              "rank": self.sampler.rank, "batches_per_epoch": self.batches_per_epoch}
        st.update(self._settings())
        return st

    def load(self, state):
        """Resumes at a saved position; refuses another seed, dataset size or shuffle,
        and another world or batch size mid-epoch."""
        self._abandon()
        self.epoch, self.batch = check_state(state, self._settings(), STATE_FORMAT, _ORDER_KEYS,
                                             _SPLIT_KEYS, self.batches_per_epoch)


def hash_seed(seed):
    return sample_seed(seed, -1, -1) & 0x7FFFFFFFFFFFFFFF


class _WorkerInit:
    """Workers ignore the notice signals (runtime.ignore_notice_signals), then run the
    user's worker_init_fn."""

    def __init__(self, user):
        self.user = user

    def __call__(self, worker_id):
        runtime.ignore_notice_signals()
        if self.user is not None:
            self.user(worker_id)


def resumable_dataloader(dataset, batch_size, seed, shuffle=True, rank=None, world_size=None,
                         drop_last=False, **dataloader_kwargs):
    """A ResumableDataLoader over a map-style `dataset` (len and indexing).

    The order of each epoch and each sample's RNG seeds derive from (seed,
    epoch, index); rank/world_size (default RANK/WORLD_SIZE) split it with
    equal batch counts. Other keywords (num_workers, collate_fn, pin_memory,
    persistent_workers, ...) go to torch's DataLoader; sampler, batch_sampler
    and shuffle may not, the loader owns the order.

        loader = trainyard.data.resumable_dataloader(ds, 32, seed=0, num_workers=4)
        loader.load(restored["data"])               # after a preemption
        for batch in loader: ...
        torch_state.state_files(..., data=loader.state())
    """
    for key in ("sampler", "batch_sampler"):
        if key in dataloader_kwargs:
            raise ValueError("resumable_dataloader() makes the DataLoader's %s itself from "
                             "batch_size, seed, shuffle, rank and world_size; do not pass one"
                             % key)
    rank, world_size = env_rank(rank, world_size)
    return ResumableDataLoader(dataset, batch_size, seed, shuffle, rank, world_size, drop_last,
                               dataloader_kwargs)
