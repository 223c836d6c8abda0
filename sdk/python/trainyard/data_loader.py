"""A resumable batch loader over a ShardDataset, with bounded background prefetch.

The order of an epoch is a pure function of (seed, epoch, dataset, world size),
so the loader's position is just (epoch, batches handed out): state() is a
small dict for the checkpoint, and load() of it makes the loader yield exactly
the batches an uninterrupted run would have yielded next. Workers (threads or
forked processes) only decode batches whose indices the main process chose.
"""

import atexit
import ctypes
import functools
import os
import random
import signal
import sys
import threading
import time
import traceback
import weakref

from . import runtime
from .data_format import DataError, pack_records

STATE_FORMAT = "trainyard-data"
_PR_SET_PDEATHSIG = 1


def epoch_order(n, seed, epoch, shuffle=True, shuffle_buffer=None, shard_sizes=None):
    """The global record order of `epoch`: a list of indices into the dataset.

    shuffle_buffer None: a full permutation (every record may follow any other).
    shuffle_buffer k: shards in a permuted order, read in sequence through a
    k-record shuffle buffer, as streaming loaders do; each window of the epoch
    then touches few shards, which keeps a bounded ShardCache effective.
    Both are seeded by a str of (seed, epoch): hashed with SHA-512 by random,
    so the same in every process and Python version 3.2+.
    """
    if not shuffle:
        return list(range(n))
    rng = random.Random("trainyard-data:%s:%d" % (seed, epoch))
    if not shuffle_buffer:
        order = list(range(n))
        rng.shuffle(order)
        return order
    sizes = shard_sizes or [n]
    starts = [sum(sizes[:j]) for j in range(len(sizes))]
    shard_order = list(range(len(sizes)))
    rng.shuffle(shard_order)
    buf, out = [], []
    randbelow = rng.randrange
    for j in shard_order:
        for i in range(starts[j], starts[j] + sizes[j]):
            if len(buf) < shuffle_buffer:
                buf.append(i)
            else:
                slot = randbelow(shuffle_buffer)
                out.append(buf[slot])
                buf[slot] = i
    rng.shuffle(buf)
    out.extend(buf)
    return out


def check_state(state, mine, kind, order_keys, split_keys, per_epoch):
    """Validates a saved position against this loader's settings; returns (epoch, batch).

    order_keys must match always (they fix the order). split_keys (world size,
    batch size) may differ only at an epoch boundary, where the new split starts.
    """
    if not isinstance(state, dict) or state.get("format") != kind:
        raise DataError("not a %s state (format %r); pass what this loader's state() returned"
                        % (kind, state.get("format") if isinstance(state, dict) else state))
    for key in order_keys:
        if state.get(key) != mine[key]:
            raise DataError("data state has %s=%r, this loader %r; resuming would not reproduce "
                            "the order. Use the same %s as the run that saved it, or start "
                            "without load() to begin a new order"
                            % (key, state.get(key), mine[key], key))
    epoch, batch = int(state["epoch"]), int(state["batch"])
    changed = [k for k in split_keys if state.get(k) != mine[k]]
    if changed:
        saved_batches = state.get("batches_per_epoch")
        if batch == 0 or (saved_batches is not None and batch >= saved_batches):
            return (epoch if batch == 0 else epoch + 1), 0
        raise DataError(
            "data state was saved with %s mid-epoch (epoch %d, batch %d), but this loader has "
            "%s: the position counts batches of that split, so loading it would repeat or skip "
            "samples. Resume with the same settings, or restart at an epoch boundary: "
            "loader.set_epoch(%d) to redo that epoch or set_epoch(%d) to start the next"
            % (", ".join("%s=%r" % (k, state.get(k)) for k in changed), epoch, batch,
               ", ".join("%s=%r" % (k, mine[k]) for k in changed), epoch, epoch + 1))
    if not 0 <= batch <= per_epoch:
        raise DataError("data state has batch %d, outside 0..%d" % (batch, per_epoch))
    return epoch, batch


def env_rank(rank, world_size):
    """rank/world_size, taken from RANK/WORLD_SIZE where None."""
    if rank is None:
        rank = int(os.environ.get("RANK", "0") or 0)
    if world_size is None:
        world_size = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError("need 0 <= rank < world_size (got rank=%r, world_size=%r)"
                         % (rank, world_size))
    return rank, world_size


class StepTimer:
    """Measures how long the training loop waited on the loader, per step.

    A step runs from one next() call to the next. Inside the loop body,
    step_metrics() gives {"data_wait_s": time blocked in the last next(),
    "step_time_s": time since that next() began}, ready for
    trainyard.report(step=..., loss=..., **loader.step_metrics()); the
    server's doctor flags a job whose data wait exceeds 5% of step time.
    """

    def __init__(self):
        self.last_wait_s = 0.0
        self.total_wait_s = 0.0
        self._step_start = None

    def _begin(self):
        self._step_start = time.monotonic()

    def _end(self):
        wait = time.monotonic() - self._step_start
        self.last_wait_s = wait
        self.total_wait_s += wait

    def step_metrics(self):
        if self._step_start is None:
            return {}
        return {"data_wait_s": round(self.last_wait_s, 6),
                "step_time_s": round(time.monotonic() - self._step_start, 6)}

    def _timed(self, iterable):
        """The items of `iterable`, each next() timed as the step's data wait."""
        it = iter(iterable)
        while True:
            self._begin()
            try:
                item = next(it)
            except StopIteration:
                return
            self._end()
            yield item


class WaitTimer(StepTimer):
    """Wraps any iterable (a torch DataLoader, ...) to measure its data wait per step."""

    def __init__(self, iterable):
        super().__init__()
        self.iterable = iterable

    def __iter__(self):
        return self._timed(self.iterable)


class EpochCursor(StepTimer):
    """A loader's position, (epoch, batch): len() is the batches left in the epoch, and
    iter() yields them through the subclass's _iterate(epoch, start_batch), moving on to the
    next epoch once one is finished (not after its last batch, so a state saved right after
    the last batch resumes at the start of the next epoch). Subclasses set epoch, batch and
    _active and define batches_per_epoch and _iterate."""

    def __len__(self):
        """Batches left in the current epoch (all of them once it is finished)."""
        left = self.batches_per_epoch - self.batch
        return left if left > 0 else self.batches_per_epoch

    def __iter__(self):
        self._abandon()
        if self.batch >= self.batches_per_epoch:
            self.epoch += 1
            self.batch = 0
        self._active = self._iterate(self.epoch, self.batch)
        return self._active

    def _abandon(self):
        """Closes the iteration in progress (its prefetched batches are made again)."""
        if self._active is not None:
            self._active.close()
            self._active = None


def _work(dataset, decode, collate, indices):
    records = dataset.read_many(indices)
    return collate([decode(r) for r in records])


class _BatchWork:
    """decode_batch(RecordBatch) per batch; each worker thread or process reads into a
    buffer of its own that it reuses from batch to batch (RecordBatch says when not)."""

    def __init__(self, dataset, decode_batch, mapped=False):
        read_batch = getattr(dataset, "read_batch", None)
        if read_batch is not None and mapped:
            read_batch = functools.partial(read_batch, mapped=True)
        if read_batch is None:
            read_many = getattr(dataset, "read_many", None) or (
                lambda idx: [dataset[i] for i in idx])

            def read_batch(indices, buffer=None):
                return pack_records(read_many(indices), buffer)
        self.read_batch = read_batch
        self.decode_batch = decode_batch
        self._local = threading.local()  # fork copies it: each process has its own

    def __call__(self, indices):
        batch = self.read_batch(indices, getattr(self._local, "buffer", None))
        self._local.buffer = batch.buffer
        try:
            return self.decode_batch(batch)
        finally:
            try:
                batch.release()
            except BufferError:  # decode_batch kept a view: the buffer is not reused
                self._local.buffer = None


PREFETCH_BYTES = 256 << 20  # process workers' default prefetch: batches up to this much


def prefetch_depth(batch_bytes, workers):
    """Batches to keep in flight by default for process workers whose batches take
    batch_bytes each: as many as fit in PREFETCH_BYTES, 2 to 8 per worker."""
    per_worker = PREFETCH_BYTES // max(1, batch_bytes * workers)
    return workers * max(2, min(8, per_worker))


def _identity(x):
    return x


class _InlinePool:
    """No workers: each batch is made when the loop asks for it."""

    def __init__(self, fn):
        self.fn = fn
        self.pending = {}

    def submit(self, b, indices):
        self.pending[b] = indices

    def result(self, b):
        return self.fn(self.pending.pop(b))

    def drain(self):
        self.pending.clear()

    def close(self):
        pass


class _ThreadPool:
    """Threads: good when decoding releases the GIL (zlib, file reads, numpy, PIL)."""

    def __init__(self, fn, workers):
        from concurrent.futures import ThreadPoolExecutor
        self.fn = fn
        self.ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="trainyard-data")
        self.pending = {}

    def submit(self, b, indices):
        self.pending[b] = self.ex.submit(self.fn, indices)

    def result(self, b):
        return self.pending.pop(b).result()

    def drain(self):
        for f in self.pending.values():
            f.cancel()
        for f in self.pending.values():
            if not f.cancelled():
                f.exception()
        self.pending.clear()

    def close(self):
        self.drain()
        self.ex.shutdown(wait=True)


_SHM_MIN = 4096  # arrays smaller than this travel pickled


class _Shm:
    """Where an array of a batch lies in a worker's shared memory: its bytes at
    `offset` in the batch's slot, and how to rebuild it."""

    __slots__ = ("offset", "nbytes", "dtype", "shape", "torch")

    def __init__(self, offset, nbytes, dtype, shape, torch):
        self.offset, self.nbytes, self.dtype, self.shape, self.torch = (
            offset, nbytes, dtype, shape, torch)

    def __getstate__(self):
        return (self.offset, self.nbytes, self.dtype, self.shape, self.torch)

    def __setstate__(self, state):
        self.offset, self.nbytes, self.dtype, self.shape, self.torch = state


class _SharedOut:
    """A worker's side of its result memory: a memfd the parent also holds (fork
    inherits it), in `slots` slots, one per result. The arrays of a batch (numpy arrays,
    CPU torch tensors, in tuples, lists and dicts) are copied into a free slot and only
    their places are pickled; the parent hands the consumer views of the slot, no copy,
    instead of a new shared-memory file per tensor and its descriptor passed over a socket
    (torch's way, which costs about a millisecond per batch). The slot stays taken until
    the parent reports it free (release()), once the consumer has dropped every array of
    that result. With every slot still held (a consumer that keeps its batches) pack()
    declines and the batch travels pickled: memory stays bounded by the slots and what the
    consumer keeps. A batch larger than the slots makes them larger, in a new region at the
    end of the file; the parent's views of an older region stay valid, and it is never
    written again."""

    def __init__(self, fd, slots):
        self.fd = fd
        self.slots = slots
        self.slot_size = 0
        self.base = 0  # where the current region of slots begins in the file
        self.free = []  # offsets of the current region's slots the parent does not hold
        self.map = None

    def release(self, offsets):
        for offset in offsets:
            if offset >= self.base:  # an older region's slot is not reused
                self.free.append(offset)

    def pack(self, batch):
        """(slot offset, slot size, layout, bytes of its arrays) for the parent's unpack();
        None when the batch has no array to share or no slot is free (it is then sent
        pickled)."""
        arrays = []
        size = [0]
        layout = self._collect(batch, arrays, size)
        if not arrays:
            return None
        if size[0] > self.slot_size:
            self._grow(size[0])
        if not self.free:
            return None
        start = self.free.pop()  # the slot released last: likeliest still in the cache
        for ref, obj in arrays:
            self._write(start + ref.offset, ref.nbytes, ref.torch, obj)
        return start, self.slot_size, layout, size[0]

    def _collect(self, obj, arrays, size):
        # A method, not a nested function calling itself: that would be a reference cycle,
        # keeping the batch's arrays alive until the garbage collector runs.
        torch = sys.modules.get("torch")
        numpy = sys.modules.get("numpy")
        if torch is not None and isinstance(obj, torch.Tensor):
            if (obj.device.type == "cpu" and not obj.requires_grad and not obj.is_sparse
                    and obj.numel() * obj.element_size() >= _SHM_MIN):
                return self._place(obj, True, arrays, size)
            return obj
        if numpy is not None and isinstance(obj, numpy.ndarray):
            if obj.dtype.hasobject or obj.nbytes < _SHM_MIN:
                return obj
            return self._place(obj, False, arrays, size)
        if isinstance(obj, dict):
            return {k: self._collect(v, arrays, size) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
            return type(obj)(self._collect(v, arrays, size) for v in obj)
        return obj

    def _place(self, obj, is_torch, arrays, size):
        nbytes = obj.numel() * obj.element_size() if is_torch else obj.nbytes
        ref = _Shm(size[0], nbytes, obj.dtype if is_torch else obj.dtype.str,
                   tuple(obj.shape), is_torch)
        size[0] += (nbytes + 63) // 64 * 64
        arrays.append((ref, obj))
        return ref

    def _grow(self, need):
        import mmap
        self.slot_size = (need * 5 // 4 + (1 << 20) - 1) >> 20 << 20
        self.base = os.fstat(self.fd).st_size
        end = self.base + self.slots * self.slot_size
        os.ftruncate(self.fd, end)
        if self.map is not None:
            self.map.close()  # this side exports no views of it
        self.map = mmap.mmap(self.fd, end)
        self.free = [self.base + k * self.slot_size for k in reversed(range(self.slots))]

    def _write(self, offset, nbytes, is_torch, obj):
        # Plain memory copies on this thread (torch's copy_ would hand a large one to its
        # intra-op threads, whose waiting costs more than the copy).
        if is_torch:
            torch = sys.modules["torch"]
            src = obj.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
        else:
            numpy = sys.modules["numpy"]
            src = numpy.ascontiguousarray(obj).reshape(-1).view(numpy.uint8)
        self.map[offset:offset + nbytes] = memoryview(src)


class _SharedIn:
    """The parent's side of a worker's result memory: a batch's arrays are views of its
    slot, no copy. One owner array per result spans the slot and every array is a view of
    it, so it lives as long as any of them; when it dies its slot's offset joins `freed`,
    which the pool passes on to the worker with its next request."""

    def __init__(self, fd):
        self.fd = fd
        self.map = None
        self.freed = []

    def unpack(self, placed):
        start, size, layout, _ = placed
        owner = self._slot(start, size)
        # Bound to the list, not to this object: a finalizer keeps its callback alive.
        weakref.finalize(owner, self.freed.append, start).atexit = False
        return self._build(layout, owner)

    def _build(self, obj, owner):
        # A method, not a nested function calling itself: that would be a reference cycle,
        # keeping the owner, and the slot, until the garbage collector runs.
        if isinstance(obj, _Shm):
            return self._view(owner, obj)
        if isinstance(obj, dict):
            return {k: self._build(v, owner) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
            return type(obj)(self._build(v, owner) for v in obj)
        return obj

    def _slot(self, start, size):
        import mmap

        import numpy
        if self.map is None or len(self.map) < start + size:
            # The old mapping is dropped, not closed (views of it may be held): it is
            # unmapped when the last of them goes.
            self.map = mmap.mmap(self.fd, os.fstat(self.fd).st_size)
        return numpy.frombuffer(self.map, numpy.uint8, size, start)

    @staticmethod
    def _view(owner, ref):
        raw = owner[ref.offset:ref.offset + ref.nbytes]
        if ref.torch:
            return sys.modules["torch"].from_numpy(raw).view(ref.dtype).reshape(ref.shape)
        return raw.view(ref.dtype).reshape(ref.shape)

    def take_freed(self):
        """The slots released since the last call."""
        freed = self.freed
        n = len(freed)  # a finalizer may append meanwhile, on any thread
        taken = freed[:n]
        del freed[:n]
        return taken

    def close(self):
        # Not map.close(): batches the consumer holds keep the mapping, and the memfd's
        # pages, until they go.
        self.map = None
        os.close(self.fd)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def _keep_heap(libc):
    """Lets this worker's malloc keep freed memory for the next batch. With glibc's defaults
    a batch's large arrays (a decoded batch of 64 3x32x32 floats is 786 KB) were mapped and
    unmapped, or the heap trimmed, batch after batch, and every batch paid page faults for
    its memory again: 23 against 17 CPU us per 44 KB record in the benchmark's worker. The
    worker's memory stays bounded by its largest batches."""
    try:
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(_M_TRIM_THRESHOLD, 128 << 20)
    except AttributeError:  # not glibc
        pass


def _process_main(conn, fn, shm=None):
    """A forked worker: batches in, results out, in order; dies with its parent."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        _keep_heap(libc)
    except (OSError, AttributeError):  # not Linux: a parent's SIGKILL may orphan it
        pass
    from multiprocessing.reduction import ForkingPickler
    runtime.ignore_notice_signals()  # the main process acts on the notice (runtime.py)
    torch = sys.modules.get("torch")
    if torch is not None:
        # As DataLoader's workers do: one intra-op thread each, so that n workers do not
        # run n thread pools the size of the machine against each other.
        torch.set_num_threads(1)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        b, indices, freed = msg
        try:
            if freed:
                shm.release(freed)
            batch = fn(indices)
            placed = shm.pack(batch) if shm is not None else None
            out = ("ok", b, batch) if placed is None else ("shm", b, placed)
        except Exception as e:
            out = ("err", b, "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
        # Protocol 5 as threads would: protocol 4 loses a numpy array's byte order.
        conn.send_bytes(ForkingPickler.dumps(out, 5))


class _ProcessPool:
    """Forked processes; batch b goes to worker b % n, which answers in order.

    Results travel through a socket pair, their arrays through a shared memory file
    per worker (_SharedOut; Linux): the batch handed out is made of views of the worker's
    slot, not copies. Each request tells the worker which of its slots the consumer has
    released since the last one, so freeing costs no message of its own. Without a free
    slot, or without memfd, a batch is pickled by multiprocessing's ForkingPickler (torch
    tensors then go through shared memory as in DataLoader). A worker blocks while its
    socket is full: memory stays bounded.
    """

    def __init__(self, fn, workers, prefetch=2):
        import multiprocessing
        from multiprocessing.reduction import ForkingPickler
        self._loads = ForkingPickler.loads
        ctx = multiprocessing.get_context("fork")
        self.conns, self.procs, self.shared = [], [], []
        self.slots = -(-(prefetch + 1) // workers) + 3
        self.batch_bytes = 0  # the size of the last result: its arrays and its pickle
        for _ in range(workers):
            mine, theirs = ctx.Pipe(duplex=True)
            fd = os.memfd_create("trainyard-data") if hasattr(os, "memfd_create") else None
            # Slots for this worker's share of the prefetched results (batch b goes to
            # worker b % n), the one the loop holds, the one it held until its next()
            # returned, and one more for a consumer that keeps a batch a step longer;
            # fewer would send batches pickled.
            out = _SharedOut(fd, self.slots) if fd is not None else None
            p = ctx.Process(target=_process_main, args=(theirs, fn, out), daemon=True,
                            name="trainyard-data")
            p.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(p)
            self.shared.append(_SharedIn(fd) if fd is not None else None)
        self.outstanding = [0] * workers  # requests each worker has not answered yet
        self.stale = [0] * workers  # of those, the oldest ones whose answers nobody wants
        self.pending = set()

    def submit(self, b, indices):
        w = b % len(self.conns)
        shared = self.shared[w]
        self.conns[w].send((b, indices, shared.take_freed() if shared is not None else None))
        self.outstanding[w] += 1
        self.pending.add(b)

    def _recv(self, w):
        try:
            buf = self.conns[w].recv_bytes()
        except (EOFError, OSError):
            p = self.procs[w]
            p.join(1)
            raise DataError("loader worker %d (pid %d) died (exit code %s); if it was killed "
                            "for memory, lower prefetch or batch_size"
                            % (w, p.pid, p.exitcode)) from None
        self.outstanding[w] -= 1
        msg = self._loads(buf)
        self.batch_bytes = len(buf) + (msg[2][3] if msg[0] == "shm" else 0)
        return msg

    def result(self, b):
        w = b % len(self.conns)
        kind, got, value = self._recv(w)
        while self.stale[w]:  # answers to an abandoned iteration come first (in order)
            self.stale[w] -= 1
            if kind == "shm":  # never handed out: its slot is free again
                self.shared[w].freed.append(value[0])
            kind, got, value = self._recv(w)
        self.pending.discard(got)
        if got != b:
            raise DataError("loader worker %d answered batch %d for %d" % (w, got, b))
        if kind == "err":
            raise DataError("loader worker %d failed on batch %d: %s" % (w, b, value))
        if kind == "shm":
            return self.shared[w].unpack(value)
        return value

    def drain(self):
        """Forgets the requests in flight without waiting for them: their answers are
        skipped as they arrive, while the workers go on to the next requests."""
        self.stale = list(self.outstanding)
        self.pending.clear()

    def close(self):
        for w, (conn, p) in enumerate(zip(self.conns, self.procs)):
            if self.outstanding[w]:
                p.kill()  # its queued batches are not wanted: do not wait for them
            else:
                try:
                    conn.send(None)
                except OSError:
                    pass
            conn.close()
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        for shared in self.shared:
            if shared is not None:
                shared.close()
        self.conns, self.procs, self.shared = [], [], []


def close_at_exit(loader):
    """Calls loader.close() at exit, before multiprocessing joins its children.

    Loader workers ignore SIGTERM (the notice), so multiprocessing's exit hook,
    which terminates daemon children with SIGTERM and joins them, would wait
    forever for workers still running. atexit runs hooks in reverse order, and
    this one is registered after multiprocessing was imported, so it runs first.
    """
    ref = weakref.ref(loader)

    def close():
        obj = ref()
        if obj is not None:
            obj.close()
    atexit.register(close)


def pin(obj):
    """obj with every CPU tensor in it moved to pinned (page-locked) memory."""
    torch = sys.modules["torch"]
    if isinstance(obj, torch.Tensor):
        return obj.pin_memory()
    if isinstance(obj, dict):
        return {k: pin(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(pin(v) for v in obj)
    return obj


def want_pinning(pin_memory):
    """pin_memory, or where None: torch is already imported and CUDA is available."""
    if pin_memory is not None:
        return bool(pin_memory)
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_available())
