"""Sharded training data and a fast loader that resumes mid-epoch exactly.

    from trainyard import data
    data.write_dataset("/data/train", (encode(x) for x in samples), codec="zlib")
    ds = data.ShardDataset("/mnt/bucket/train",
                           cache=data.ShardCache("/local/cache", max_bytes=50 << 30))
    loader = data.Loader(ds, batch_size=64, seed=1, decode=decode, workers=4)
    loader.load(restored["data"])                  # after a preemption
    for batch in loader:
        ...train...
        trainyard.report(step=step, loss=loss, **loader.step_metrics())
        files = torch_state.state_files(model, opt, step=step, data=loader.state())

Format: our own (data_format.py), not WebDataset tar or MosaicML MDS. Tar has
no index (random access, and so a global shuffle or a mid-epoch seek, needs a
side file or a scan), checksums only its headers, pads each record to 512
bytes and compresses whole files; MDS has an index but compresses whole shards
(a random read decompresses the shard), checks whole-shard hashes only if
configured, and needs mosaicml-streaming to read natively. Ours is stdlib only:
per-record compression (zlib, lzma) keeps random access, and a crc32 per
record, a crc32 of each shard's index and a sha256 over index.json catch a
torn or corrupted file at the record that is read. Converting tar or MDS data
is one loop over their readers into write_dataset().

Resume: the order of an epoch is a pure function of (seed, epoch, dataset,
world size) (data_loader.epoch_order), and each rank takes an equal contiguous
part of it, so every rank runs the same number of batches. state() is
{epoch, batch, ...settings}; loading it into a loader with the same settings
yields exactly the batches an uninterrupted run would have, and a state from
another dataset, seed or shuffle is refused (another world or batch size:
only at an epoch boundary). Save state() after the step that used the batch
last returned; batches prefetched beyond it are simply made again.

Torch users with their own Dataset: data_torch.resumable_dataloader(), also
exported here when torch is installed (imported only on use).
"""

import functools

from .data_cache import ShardCache
from .data_format import (DataError, RecordBatch, ShardDataset, ShardReader, ShardWriter,
                          pack_records, read_index, write_dataset)
from .data_loader import (STATE_FORMAT, EpochCursor, StepTimer, WaitTimer, _BatchWork,
                          _identity, _InlinePool, _ProcessPool, _ThreadPool, _work, check_state,
                          close_at_exit, env_rank, epoch_order, pin, prefetch_depth,
                          want_pinning)

__all__ = ["DataError", "Loader", "RecordBatch", "ShardCache", "ShardDataset", "ShardReader",
           "ShardWriter", "StepTimer", "WaitTimer", "epoch_order", "pack_records", "read_index",
           "resumable_dataloader", "write_dataset"]

_ORDER_KEYS = ("dataset", "seed", "shuffle", "shuffle_buffer")
_SPLIT_KEYS = ("world_size", "batch_size", "drop_last")


class Loader(EpochCursor):
    """Batches of decoded records for this rank, prefetched in the background.

    dataset: a ShardDataset (or its directory). decode(bytes) -> sample runs in
    the workers; collate(list of samples) -> batch too (default: the list).
    decode_batch(RecordBatch) -> batch, instead of decode and collate: one call per
    batch, its records read into one buffer that the worker reuses (no bytes object
    per record; see data_format.RecordBatch), for decoding and transforming them all
    at once with numpy or torch. Where per-record Python work dominates (small records,
    light transforms) this is several times faster. mapped=True with decode_batch: the
    batch's records are not copied at all; its data is a read-only view of the shards
    mapped into memory and its offsets point into it (ShardDataset.read_batch), each
    record's crc32 checked there on every read. Uncompressed datasets on 64-bit Linux;
    elsewhere records are copied as without it.
    shuffle_buffer: None for a full permutation per epoch, k for permuted
    shards through a k-record buffer (data_loader.epoch_order). rank /
    world_size: default RANK / WORLD_SIZE; the tail that does not split evenly
    is dropped, as is a short last batch unless drop_last=False.
    workers: 0 makes batches in the loop; worker_type "process" (forked, the
    default: decode may hold the GIL) or "thread". prefetch: batches in flight
    or ready beyond the one the loop holds; this bounds the loader's memory. By
    default thread workers keep 2 per worker; process workers as many as fit in
    256 MiB (PREFETCH_BYTES), 2 to 8 per worker, sized by the first batch: small
    batches come fast, and a deeper queue keeps the workers busy while the loop
    waits for a CPU (2 per worker left them idle on a loaded machine: see
    docs/performance.md). A process worker's arrays (numpy, CPU tensors) arrive as
    writable views of its shared memory, not copies; the worker writes there again
    once every array of the batch is dropped, and sends batches pickled (slower)
    while all of its slots (its share of prefetch, plus 3) are held (a loop that
    keeps its batches).
    pin_memory: None pins tensors in batches when torch is imported and CUDA is
    available.

    Not thread-safe: one loop iterates it. Calling iter() again, load() or
    set_epoch() abandons the current iteration (its prefetched batches are
    dropped).
    """

    def __init__(self, dataset, batch_size, seed=0, shuffle=True, shuffle_buffer=None,
                 rank=None, world_size=None, drop_last=True, decode=None, collate=None,
                 workers=2, worker_type="process", prefetch=None, pin_memory=None,
                 decode_batch=None, mapped=False):
        super().__init__()
        if isinstance(dataset, str):
            dataset = ShardDataset(dataset)
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1 (got %r)" % (batch_size,))
        if worker_type not in ("process", "thread"):
            raise ValueError("worker_type must be 'process' or 'thread' (got %r)"
                             % (worker_type,))
        self.dataset = dataset
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.shuffle_buffer = shuffle_buffer or None
        self.rank, self.world_size = env_rank(rank, world_size)
        self.drop_last = drop_last
        self.workers = workers
        self.worker_type = worker_type
        # prefetch: the most batches ahead of the loop; _ahead: how many it keeps now.
        if prefetch is not None:
            self.prefetch = self._ahead = max(1, prefetch)
        elif worker_type == "process" and workers > 0:
            self.prefetch, self._ahead = 8 * workers, None  # set by the first batch
        else:
            self.prefetch = self._ahead = 2 * max(1, workers)
        self.pin_memory = want_pinning(pin_memory)
        if decode_batch is not None:
            if decode is not None or collate is not None:
                raise ValueError("decode_batch replaces decode and collate; pass one or the "
                                 "other")
            self._fn = _BatchWork(dataset, decode_batch, mapped)
        else:
            if mapped:
                raise ValueError("mapped=True needs decode_batch (records reach decode() as "
                                 "bytes, which are copies)")
            read_many = getattr(dataset, "read_many", None) or (
                lambda idx: [dataset[i] for i in idx])
            self._fn = functools.partial(_work, _Reads(read_many), decode or _identity,
                                         collate or list)
        self.epoch = 0
        self.batch = 0
        self._order = (None, None)
        self._pool = None
        self._active = None

    # -- the order ------------------------------------------------------------------

    @property
    def per_rank(self):
        """Records this rank gets per epoch."""
        return len(self.dataset) // self.world_size

    @property
    def batches_per_epoch(self):
        """Batches per epoch, the same on every rank."""
        full, rest = divmod(self.per_rank, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def rank_order(self, epoch):
        """This rank's record indices for `epoch`, in order."""
        if self._order[0] != epoch:
            sizes = [s["records"] for s in getattr(self.dataset, "shards", [])] or None
            order = epoch_order(len(self.dataset), self.seed, epoch, self.shuffle,
                                self.shuffle_buffer, sizes)
            # Contiguous parts, not every world_size-th record: with a shuffle buffer
            # each rank then reads its own few shards, not all of them.
            self._order = (epoch, order[self.rank * self.per_rank:
                                        (self.rank + 1) * self.per_rank])
        return self._order[1]

    def batch_indices(self, epoch, b):
        """The record indices of batch `b` of `epoch` on this rank."""
        return self.rank_order(epoch)[b * self.batch_size:(b + 1) * self.batch_size]

    # -- iteration --------------------------------------------------------------------

    def _iterate(self, epoch, start):
        pool = self._get_pool()
        end = self.batches_per_epoch
        submitted = start
        try:
            for b in range(start, end):
                self._begin()
                while submitted < min(end, b + 1 + (self._ahead or 2 * self.workers)):
                    pool.submit(submitted, self.batch_indices(epoch, submitted))
                    submitted += 1
                batch = pool.result(b)
                if self._ahead is None:
                    self._ahead = prefetch_depth(pool.batch_bytes, self.workers)
                if self.pin_memory:
                    batch = pin(batch)
                self.batch = b + 1
                self._end()
                yield batch
        finally:
            pool.drain()

    def _get_pool(self):
        if self._pool is None:
            if self.workers <= 0:
                self._pool = _InlinePool(self._fn)
            elif self.worker_type == "thread":
                self._pool = _ThreadPool(self._fn, self.workers)
            else:
                self._pool = _ProcessPool(self._fn, self.workers, self.prefetch)
                close_at_exit(self)
        return self._pool

    def set_epoch(self, epoch):
        """Starts `epoch` from its beginning."""
        self._abandon()
        self.epoch, self.batch = int(epoch), 0

    # -- position ---------------------------------------------------------------------

    def _settings(self):
        return {"dataset": getattr(self.dataset, "fingerprint", "records:%d" % len(self.dataset)),
                "seed": self.seed, "shuffle": self.shuffle, "shuffle_buffer": self.shuffle_buffer,
                "world_size": self.world_size, "batch_size": self.batch_size,
                "drop_last": self.drop_last}

    def state(self):
        """The position as a small JSON-able dict, for the checkpoint.

        Counts the batches handed to the loop in this epoch: save it after the
        step on the last batch returned (prefetched batches are not counted).
        """
        s = {"format": STATE_FORMAT, "version": 1, "epoch": self.epoch, "batch": self.batch,
             "rank": self.rank, "records": len(self.dataset),
             "batches_per_epoch": self.batches_per_epoch}
        s.update(self._settings())
        return s

    def load(self, state):
        """Resumes at a saved position; refuses one that would not reproduce the order.

        Any rank's state loads on any rank of the same world size (all are at the
        same batch). A state from another world size, batch size or drop_last
        loads only at an epoch boundary; one from another dataset, seed or
        shuffle setting never does.
        """
        self._abandon()
        self.epoch, self.batch = check_state(state, self._settings(), STATE_FORMAT, _ORDER_KEYS,
                                             _SPLIT_KEYS, self.batches_per_epoch)

    def close(self):
        """Stops the workers. The loader can iterate again (it starts new ones)."""
        self._abandon()
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Reads:
    """A picklable callable around read_many, for spawned workers and partial()."""

    def __init__(self, read_many):
        self.read_many = read_many


def __getattr__(name):
    # resumable_dataloader needs torch; import it only when asked for.
    if name in ("resumable_dataloader", "ResumableDataLoader"):
        from . import data_torch
        return getattr(data_torch, name)
    raise AttributeError("module 'trainyard.data' has no attribute %r" % name)
