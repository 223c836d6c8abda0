"""How much memory one training step needs, and what counts as running out.

CUDA: the caching allocator's own high-water mark, torch.cuda.max_memory_reserved()
(what the process really holds, fragmentation included), and a real
out-of-memory error also counts. CPU: there is no allocator high-water mark in
torch, and tracemalloc does not see torch's allocator, so the step runs under
torch.profiler with profile_memory=True, which records every allocation and free
of torch's CPU allocator in order; the peak is the tensors alive when the step
starts (parameters, buffers, gradients, optimizer state, the batch; each storage
counted once) plus the highest running sum of those records. Memory that does not
go through torch's allocator (oneDNN scratch space, the Python heap) is not
counted; the safety margin is there for it.
"""

import gc
import os

import torch

# Messages that mean "out of memory" in torch's errors (the checks Lightning's
# BatchSizeFinder uses, plus cuBLAS's allocation failure).
_OOM_TEXT = ("CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
             "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED", "DefaultCPUAllocator: can't allocate",
             "out of memory")


class OutOfMemory(Exception):
    """A trial step did not fit: a real allocation failure or a peak over the budget."""

    def __init__(self, message, peak_bytes=None):
        super().__init__(message)
        self.peak_bytes = peak_bytes


def is_oom(err):
    """True when `err` is torch (or Python) running out of memory."""
    if isinstance(err, MemoryError):
        return True
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(err, oom_type):
        return True
    return isinstance(err, RuntimeError) and any(t in str(err) for t in _OOM_TEXT)


def release(device):
    """Frees what a failed or finished trial left: cycles held by a traceback,
    then the CUDA cache, so the next trial starts from the same memory."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def default_budget(device):
    """Bytes a step may use when the caller gives no budget: on CUDA the device's
    free memory plus what this process's allocator already holds; on CPU the
    kernel's MemAvailable."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def tensor_bytes(tensors):
    """Bytes of the storages behind `tensors` (None skipped), each storage once."""
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        key = (t.device, storage.data_ptr())
        if key not in seen:
            seen.add(key)
            total += storage.nbytes()
    return total


def optimizer_tensors(optimizer):
    for state in optimizer.state.values():
        for v in state.values():
            if isinstance(v, torch.Tensor):
                yield v


def measure_peak(run, device, live):
    """Runs `run()` once and returns the bytes it needed at its peak.

    live: a function returning the tensors alive before the step (CPU only; the
    CUDA allocator knows them itself).
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        run()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_reserved(device)
    base = tensor_bytes(live())
    return base + _peak_of_records(_allocation_records(run))


def _allocation_records(run):
    """The profiler's "[memory]" records of run(): one per allocation (+bytes) and
    free (-bytes) through torch's allocators.

    Drives torch.autograd.profiler.profile's trace directly and reads the raw
    results: the public context manager also builds its event tree on exit, which
    takes over ten times as long as a small step itself. Falls back to the public
    torch.profiler API where those internals differ.
    """
    try:
        prof = torch.autograd.profiler.profile(profile_memory=True, use_kineto=True)
        begin, end = (prof._prepare_trace, prof._start_trace), torch.autograd._disable_profiler
    except (AttributeError, TypeError):
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as public:
            run()
        events = public.profiler.kineto_results.events()
    else:
        for call in begin:
            call()
        try:
            run()
        finally:
            events = end().events()
    return [e for e in events if e.name() == "[memory]"]


def _start(event):
    """An event's start: start_ns() in torch 2.x, start_us() in older releases."""
    start_ns = getattr(event, "start_ns", None)
    return start_ns() if start_ns is not None else event.start_us() * 1000


def _peak_of_records(records):
    """The highest running sum of the CPU allocation records."""
    records = sorted(records, key=_start)  # stable: records of one instant keep their order
    cur = peak = 0
    for e in records:
        if str(e.device_type()).endswith("CPU"):
            cur += e.nbytes()
            peak = max(peak, cur)
    return peak
