"""A small safetensors writer and reader on raw bytes (no torch, no numpy needed).

Format (huggingface/safetensors): u64 little-endian header length N, N bytes
of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{str: str}}, then the tensor bytes, little-endian and row-major, offsets
relative to the first data byte. Tensors are stored in a standard format
rather than pickled so a checkpoint can be read without running code from it.
"""

import json
import struct

ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
            "I8": 1, "U8": 1, "BOOL": 1}
MAX_HEADER = 100 << 20


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def layout(tensors, metadata=None):
    """The file's first bytes (length and JSON header) and the order of the tensors.

    `tensors` is {name: (dtype, shape, nbytes)}. The tensor bytes follow the
    returned prefix in the returned order, so a writer can stream them from
    wherever they live without joining them into one buffer first.
    """
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    # Larger items first keeps every tensor aligned to its item size, so readers can
    # view the bytes in place.
    order = sorted(tensors, key=lambda k: (-ITEMSIZE.get(tensors[k][0], 1), k))
    offset = 0
    for name in order:
        dtype, shape, nbytes = tensors[name]
        if name == "__metadata__":
            raise ValueError("tensor name __metadata__ is reserved")
        if dtype not in ITEMSIZE:
            raise ValueError("%s: unsupported dtype %r" % (name, dtype))
        shape = [int(d) for d in shape]
        if any(d < 0 for d in shape):
            raise ValueError("%s: negative dimension in %r" % (name, shape))
        if nbytes != _numel(shape) * ITEMSIZE[dtype]:
            raise ValueError("%s: %d bytes for %s %r" % (name, nbytes, dtype, shape))
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, order


def dumps(tensors, metadata=None):
    """Serializes {name: (dtype, shape, data)} where data is little-endian bytes."""
    views = {name: memoryview(data).cast("B") for name, (_, _, data) in tensors.items()}
    prefix, order = layout({name: (dtype, shape, len(views[name]))
                            for name, (dtype, shape, _) in tensors.items()}, metadata)
    return b"".join([prefix] + [bytes(views[name]) for name in order])


def loads(blob):
    """Parses bytes into ({name: (dtype, shape, memoryview)}, metadata), checking that
    the header is sane and the byte ranges tile the data exactly."""
    view = memoryview(blob).cast("B")
    if len(view) < 8:
        raise ValueError("safetensors: shorter than its 8-byte header length")
    (n,) = struct.unpack("<Q", view[:8])
    if n > MAX_HEADER or 8 + n > len(view):
        raise ValueError("safetensors: header length %d does not fit the file" % n)
    header = json.loads(bytes(view[8:8 + n]).decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("safetensors: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data = view[8 + n:]
    tensors = {}
    spans = []
    for name, info in header.items():
        dtype, shape = info.get("dtype"), info.get("shape")
        begin, end = info.get("data_offsets", (None, None))
        if dtype not in ITEMSIZE or not isinstance(shape, list):
            raise ValueError("safetensors: %s has dtype %r shape %r" % (name, dtype, shape))
        if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end
                <= len(data)) or end - begin != _numel(shape) * ITEMSIZE[dtype]:
            raise ValueError("safetensors: %s has bad data_offsets %r" % (name, [begin, end]))
        spans.append((begin, end))
        tensors[name] = (dtype, shape, data[begin:end])
    pos = 0
    for begin, end in sorted(spans):
        if begin != pos:
            raise ValueError("safetensors: tensor byte ranges overlap or leave gaps")
        pos = end
    if pos != len(data):
        raise ValueError("safetensors: %d trailing bytes after the tensors" % (len(data) - pos))
    return tensors, metadata
