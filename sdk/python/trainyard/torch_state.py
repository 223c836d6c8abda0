"""Saving and restoring a PyTorch training state without pickle.

state_files() snapshots model, optimizer, LR scheduler, GradScaler, RNG states
(Python `random`, numpy, torch CPU and CUDA), the data position and the step
into {file name: bytes} for CheckpointManager.save(); restore() puts them
back. Tensors go to safetensors files, everything else to JSON, so loading a
checkpoint never executes code from it and floats round-trip exactly (JSON
floats are written with repr()), which bitwise-identical resume relies on.

Files: model.safetensors (the model's tensors), state.safetensors (all other
tensors: optimizer state, torch RNG states, ...) and state.json.

The snapshot is one copy of each tensor into host memory; the safetensors files
are streamed from those copies when the checkpoint is written (on the
CheckpointManager's thread in background mode), never joined into one buffer.
With a SnapshotBuffers the copies go into the same memory at every save, so a
periodic snapshot allocates nothing (first-touching gigabytes of fresh memory
costs more than the copy itself).
"""

import collections
import json
import logging
import math
import random
import sys
import threading

import torch

from . import safetensors

log = logging.getLogger("trainyard")

MODEL_FILE = "model.safetensors"
TENSORS_FILE = "state.safetensors"
JSON_FILE = "state.json"
FORMAT = "trainyard-torch-state"

_DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
           torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
           torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}
_MARKERS = ("__tensor__", "__tuple__", "__items__", "__float__", "__ndarray__")

try:
    import numpy
except ImportError:  # numpy is optional; its RNG is then not saved
    numpy = None


def _tensor_bytes(t):
    """(dtype name, shape, little-endian bytes) of a tensor, copied to the CPU."""
    dtype, shape, copy = _Copier(None).copy("", t)
    return dtype, shape, _host_view(copy).tobytes()


def _host_view(t):
    """The bytes of a contiguous CPU tensor, without copying them."""
    flat = t.view(torch.int16) if t.dtype == torch.bfloat16 else t  # numpy has no bf16
    return memoryview(flat.numpy()).cast("B") if t.numel() else memoryview(b"")


class SnapshotBuffers:
    """Host memory reused by every snapshot of the same training state.

    Pass the same instance to each state_files() call. A snapshot copies into
    these buffers, so it waits until the checkpoint written from the previous
    snapshot has been committed (CheckpointManager.save() already waits for
    it), and a snapshot that was never saved is simply overwritten by the next.
    Buffers are pinned when CUDA is available, so device-to-host copies are fast.
    """

    def __init__(self):
        self._tensors = {}
        self._idle = threading.Event()
        self._idle.set()
        self.generation = 0

    def _begin(self):
        self._idle.wait()
        self.generation += 1
        return self.generation

    def _buffer(self, key, t):
        b = self._tensors.get(key)
        if b is None or b.shape != t.shape or b.dtype != t.dtype:
            b = torch.empty(t.shape, dtype=t.dtype,
                            pin_memory=torch.cuda.is_available() and t.is_cuda)
            self._tensors[key] = b
        return b


class _Copier:
    """Copies tensors into private host memory: fresh, or a SnapshotBuffers' own."""

    def __init__(self, buffers):
        self.buffers = buffers

    def copy(self, key, t):
        if sys.byteorder != "little":
            raise NotImplementedError("safetensors needs little-endian bytes")
        if t.dtype not in _DTYPES:
            raise TypeError("tensor dtype %s has no safetensors equivalent" % t.dtype)
        t = t.detach()
        if self.buffers is None:
            out = torch.empty(t.shape, dtype=t.dtype)
        else:
            out = self.buffers._buffer(key, t)
        out.copy_(t)
        return _DTYPES[t.dtype], list(t.shape), out


class TensorFile:
    """A safetensors file not yet written: its header and views of snapshot tensors.

    CheckpointManager.save() streams it with chunks(); bytes(f) gives the whole
    file (restore() of an unsaved snapshot, tests).
    """

    def __init__(self, tensors, metadata, buffers, generation):
        self._views = {k: _host_view(t) for k, (_, _, t) in tensors.items()}
        self._tensors = tensors  # keeps the copies alive while the views are in use
        self._prefix, self._order = safetensors.layout(
            {k: (d, s, len(self._views[k])) for k, (d, s, _) in tensors.items()}, metadata)
        self.size = len(self._prefix) + sum(len(v) for v in self._views.values())
        self._buffers = buffers
        self._generation = generation

    def chunks(self):
        self._check_current()
        yield self._prefix
        for k in self._order:
            yield self._views[k]

    def __bytes__(self):
        return b"".join(bytes(c) for c in self.chunks())

    def _check_current(self):
        if self._buffers is not None and self._buffers.generation != self._generation:
            raise RuntimeError("this snapshot's buffers were reused by a newer snapshot; "
                               "save a snapshot before taking the next one")

    # CheckpointManager.save() brackets the write with these, so the next snapshot
    # into the same buffers waits until this one is on disk.
    def begin_write(self):
        self._check_current()
        if self._buffers is not None:
            self._buffers._idle.clear()

    def end_write(self):
        if self._buffers is not None:
            self._buffers._idle.set()


def _tensor_from(dtype, shape, data):
    """A tensor over `data`: a view of it when it is writable memory of our own and
    aligned for the dtype (Checkpoint.load()'s buffers), else a copy."""
    dt = _TORCH_DTYPES[dtype]
    if len(data) == 0:
        return torch.empty(shape, dtype=dt)
    view = memoryview(data)
    itemsize = safetensors.ITEMSIZE[dtype]
    if view.readonly or not view.c_contiguous or _address(view) % itemsize:
        view = bytearray(view)
    return torch.frombuffer(view, dtype=dt).reshape(shape)


def _address(view):
    """The address of a writable buffer's first byte."""
    import ctypes
    return ctypes.addressof(ctypes.c_char.from_buffer(view))


def _encode(obj, tensors, key, copier=None):
    """JSON-able form of `obj`; tensors are copied into `tensors` under `key`
    as (dtype, shape, host tensor)."""
    if isinstance(obj, torch.Tensor):
        base, n = key, 1
        while key in tensors:  # "a.b" nested and "a.b" flat must not overwrite each other
            key, n = "%s#%d" % (base, n), n + 1
        tensors[key] = (copier or _Copier(None)).copy("state/" + key, obj)
        return {"__tensor__": key}
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"__float__": repr(obj)}
    if numpy is not None and isinstance(obj, numpy.ndarray):
        return {"__ndarray__": obj.dtype.str, "shape": list(obj.shape),
                "data": obj.ravel().tolist()}
    if numpy is not None and isinstance(obj, numpy.generic):
        return _encode(obj.item(), tensors, key, copier)
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, tensors, "%s.%d" % (key, i), copier)
                              for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, tensors, "%s.%d" % (key, i), copier) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: _encode(v, tensors, "%s.%s" % (key, k), copier) for k, v in obj.items()}
        return {"__items__": [[_encode(k, tensors, "%s.k%d" % (key, i), copier),
                               _encode(v, tensors, "%s.%s" % (key, k), copier)]
                              for i, (k, v) in enumerate(obj.items())]}
    raise TypeError("cannot store %s at %s without pickle; convert it to JSON-able values"
                    % (type(obj).__name__, key))


def _decode(obj, tensors):
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        return _tensor_from(*tensors[obj["__tensor__"]])
    if "__tuple__" in obj:
        return tuple(_decode(v, tensors) for v in obj["__tuple__"])
    if "__items__" in obj:
        return {_decode(k, tensors): _decode(v, tensors) for k, v in obj["__items__"]}
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__ndarray__" in obj:
        if numpy is None:
            raise RuntimeError("this checkpoint holds numpy arrays; install numpy")
        return numpy.array(obj["data"], dtype=numpy.dtype(obj["__ndarray__"])).reshape(
            obj["shape"])
    return {k: _decode(v, tensors) for k, v in obj.items()}


def _rng_state(tensors, copier):
    state = {"python": _encode(random.getstate(), tensors, "rng.python", copier)}
    if numpy is not None:
        state["numpy"] = _encode(numpy.random.get_state(), tensors, "rng.numpy", copier)
    tensors["rng.torch"] = copier.copy("rng.torch", torch.get_rng_state())
    if torch.cuda.is_available():
        states = torch.cuda.get_rng_state_all()
        for i, s in enumerate(states):
            tensors["rng.cuda.%d" % i] = copier.copy("rng.cuda.%d" % i, s)
        state["cuda_devices"] = len(states)
    return state


def _set_rng_state(state, tensors):
    random.setstate(_decode(state["python"], tensors))
    if "numpy" in state:
        if numpy is not None:
            numpy.random.set_state(_decode(state["numpy"], tensors))
        else:
            log.warning("trainyard: checkpoint has a numpy RNG state but numpy is missing")
    torch.set_rng_state(_tensor_from(*tensors["rng.torch"]))
    saved = state.get("cuda_devices", 0)
    if saved and torch.cuda.is_available():
        n = min(saved, torch.cuda.device_count())
        if n != saved:
            log.warning("trainyard: checkpoint has CUDA RNG states for %d devices, %d visible; "
                        "restoring %d", saved, torch.cuda.device_count(), n)
        for i in range(n):
            torch.cuda.set_rng_state(_tensor_from(*tensors["rng.cuda.%d" % i]), device=i)
    elif saved:
        log.warning("trainyard: checkpoint has CUDA RNG states but CUDA is not available")


def _without_code(state):
    """A scheduler's state_dict without its callables, nested schedulers' included.

    OneCycleLR keeps its annealing function (a bound method), CyclicLR its scale
    function (a WeakMethod, or the user's scale_fn), LambdaLR-style schedulers may
    hold functions: code, not state. The scheduler that restore() loads into was
    built from the same arguments and already has them, and load_state_dict()
    only overwrites the keys it is given.
    """
    if isinstance(state, dict):
        return {k: _without_code(v) for k, v in state.items()
                if not (callable(v) and not isinstance(v, (type, torch.Tensor)))}
    if isinstance(state, list):
        return [_without_code(v) for v in state]
    return state


def _like(value, template):
    """`value` with each dict turned back into a Counter where the fresh object's own
    state has one (MultiStepLR's milestones; JSON keeps only the dict)."""
    if isinstance(value, dict) and isinstance(template, dict):
        if isinstance(template, collections.Counter):
            return collections.Counter(value)
        return {k: _like(v, template.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(template, list):
        return [_like(v, template[i] if i < len(template) else None)
                for i, v in enumerate(value)]
    return value


def state_files(model=None, optimizer=None, scheduler=None, scaler=None, step=None, data=None,
                extra=None, rng=True, buffers=None):
    """Snapshots the training state into {file name: bytes or TensorFile} for
    CheckpointManager.save(): every tensor is copied to host memory now, so the
    result can be written in the background while training goes on.

    data: the data position, e.g. ResumableSampler.state(); extra: any JSON-able
    values (tensors allowed) to get back from restore(); buffers: a
    SnapshotBuffers to copy into (reused at every save) instead of fresh memory.
    """
    generation = buffers._begin() if buffers is not None else 0
    copier = _Copier(buffers)
    model_tensors, tensors = {}, {}
    doc = {"format": FORMAT, "version": 1, "torch": torch.__version__, "step": step,
           "data": data}
    if model is not None:
        other = {}
        for k, v in model.state_dict().items():
            if isinstance(v, torch.Tensor):
                model_tensors[k] = copier.copy("model/" + k, v)
            else:
                other[k] = v
        doc["model_other"] = _encode(other, tensors, "model_other", copier)
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("scaler", scaler)):
        if obj is not None:
            sd = obj.state_dict()
            doc[name] = _encode(_without_code(sd) if name == "scheduler" else sd, tensors, name,
                                copier)
    if extra is not None:
        doc["extra"] = _encode(extra, tensors, "extra", copier)
    if rng:
        doc["rng"] = _rng_state(tensors, copier)
    meta = {"format": FORMAT}
    files = {TENSORS_FILE: TensorFile(tensors, meta, buffers, generation),
             JSON_FILE: json.dumps(doc, sort_keys=True).encode("utf-8")}
    if model is not None:
        files[MODEL_FILE] = TensorFile(model_tensors, meta, buffers, generation)
    return files


def restore(source, model=None, optimizer=None, scheduler=None, scaler=None, rng=True,
            strict=True, verify=True):
    """Loads a state written by state_files() into the given objects.

    source: a CheckpointManager (its newest checkpoint whose files verify; older ones
    are tried when one is damaged), a Checkpoint (from CheckpointManager.latest()) or
    {name: bytes}. The files are read in parallel, each hashed while it is read, and
    all of them are verified before any object is touched; tensors are views of the
    memory the files were read into (no second copy). verify=False skips the hashes
    of a Checkpoint's files.
    Returns {"step", "data", "extra"} for the loop to continue from, or None when a
    CheckpointManager has no checkpoint yet.
    """
    names = [JSON_FILE, TENSORS_FILE] + ([MODEL_FILE] if model is not None else [])
    if hasattr(source, "load_latest"):
        ck, files = source.load_latest(names)
        if ck is None:
            return None
    elif hasattr(source, "load"):
        files = source.load(names, verify=verify)
    else:
        files = {n: bytes(source[n]) if isinstance(source[n], TensorFile) else source[n]
                 for n in names}
    doc = json.loads(bytes(files[JSON_FILE]).decode("utf-8"))
    if doc.get("format") != FORMAT:
        raise ValueError("%s is not a %s file" % (JSON_FILE, FORMAT))
    tensors, _ = safetensors.loads(files.pop(TENSORS_FILE))
    if model is not None:
        raw, _ = safetensors.loads(files.pop(MODEL_FILE))
        sd = {k: _tensor_from(*v) for k, v in raw.items()}
        del raw
        sd.update(_decode(doc.get("model_other", {}), tensors))
        model.load_state_dict(sd, strict=strict)
        del sd  # the file's memory goes once the model holds its own copy
    for name, obj in (("optimizer", optimizer), ("scheduler", scheduler), ("scaler", scaler)):
        if obj is None:
            continue
        if name not in doc:
            raise KeyError("checkpoint has no %s state" % name)
        state = _decode(doc[name], tensors)
        obj.load_state_dict(_like(state, obj.state_dict()) if name == "scheduler" else state)
    if rng and "rng" in doc:
        _set_rng_state(doc["rng"], tensors)
    return {"step": doc.get("step"), "data": doc.get("data"),
            "extra": _decode(doc.get("extra"), tensors)}
