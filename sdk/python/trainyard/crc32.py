"""CRC-32 of buffers: zlib's checksum (the gzip/PNG polynomial, what zlib.crc32 computes),
computed by the fastest implementation this machine has.

The shard format checks every record with this CRC-32 when it is read, and zlib's own
crc32 (Debian 12's zlib 1.2.13 has no carry-less-multiply code) runs at about 4 GB/s: a
third of the CPU a loader spends on a 44 KB record. Two Debian libraries compute the very
same CRC-32 with carry-less multiplication, found at import and used through ctypes (which
releases the GIL during the call, as zlib.crc32 does above 5 KB):

    isa-l        libisal.so.2 (package libisal2), crc32_gzip_refl: AVX-512 with VPCLMULQDQ
                 where the CPU has it, PCLMULQDQ otherwise
    libdeflate   libdeflate.so.0 (package libdeflate0), libdeflate_crc32: PCLMULQDQ

Each candidate must agree with zlib.crc32 on a set of buffers (lengths 0 to 70,000 bytes at
every alignment up to 64) before it is used; otherwise, or where neither library is
installed, zlib.crc32 does the work. Nothing changes in what is stored or compared, only
which code computes it. TRAINYARD_CRC32=zlib|isa-l|libdeflate picks one (an unavailable one
falls back to zlib).
"""

import ctypes
import os
import random
import zlib

_CANDIDATES = (("isa-l", "libisal.so.2", "crc32_gzip_refl", ctypes.c_uint64),
               ("libdeflate", "libdeflate.so.0", "libdeflate_crc32", ctypes.c_size_t))


def _agrees(fn):
    rng = random.Random(1)
    data = rng.randbytes(70064)
    for n in (0, 1, 2, 3, 7, 15, 16, 17, 31, 63, 64, 65, 127, 255, 256, 1000, 4093, 4096, 65537,
              70000):
        for start in (0, 1, 3, 8, 13, 32, 63):
            piece = data[start:start + n]
            if fn(0, piece, len(piece)) != zlib.crc32(piece):
                return False
    return True


def _load():
    choice = os.environ.get("TRAINYARD_CRC32", "auto").strip().lower() or "auto"
    if choice == "zlib":
        return "zlib", None
    for name, lib, symbol, length_type in _CANDIDATES:
        if choice not in ("auto", name):
            continue
        try:
            fn = getattr(ctypes.CDLL(lib), symbol)
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_uint32
        fn.argtypes = (ctypes.c_uint32, ctypes.c_void_p, length_type)
        try:
            if _agrees(fn):
                return name, fn
        except (OSError, ctypes.ArgumentError):
            continue
    return "zlib", None


IMPLEMENTATION, _FN = _load()


def crc32(data):
    """zlib.crc32(data) for any bytes-like `data`."""
    if _FN is not None and type(data) is bytes:
        return _FN(0, data, len(data))
    return zlib.crc32(data)


class Pieces:
    """CRC-32s of pieces of one buffer, without a Python object per piece:

        with Pieces(buffer) as crc_at:
            ok = crc_at(offset, length) == expected

    `buffer`: bytes, or a writable buffer (bytearray, a writable memoryview, mmap). While the
    block runs the buffer is exported (a bytearray cannot be resized; a memoryview of it
    cannot be released)."""

    __slots__ = ("_buffer", "_anchor", "_view")

    def __init__(self, buffer):
        self._buffer = buffer
        self._anchor = self._view = None

    def __enter__(self):
        b, fn = self._buffer, _FN
        if fn is None or len(b) == 0:
            return self._slow()
        if type(b) is bytes:
            self._anchor = ctypes.c_char_p(b)  # points into b itself, no copy
            base = ctypes.cast(self._anchor, ctypes.c_void_p).value
        else:
            try:
                self._anchor = (ctypes.c_char * len(b)).from_buffer(b)
            except (TypeError, ValueError):  # read-only or not contiguous
                return self._slow()
            base = ctypes.addressof(self._anchor)

        def crc_at(offset, length):
            if offset < 0 or length < 0 or offset + length > len(b):
                raise IndexError("piece %d+%d outside a buffer of %d bytes"
                                 % (offset, length, len(b)))
            return fn(0, base + offset, length)
        return crc_at

    def _slow(self):
        self._view = memoryview(self._buffer)
        view = self._view

        def crc_at(offset, length):
            if offset < 0 or length < 0 or offset + length > len(view):
                raise IndexError("piece %d+%d outside a buffer of %d bytes"
                                 % (offset, length, len(view)))
            return zlib.crc32(view[offset:offset + length])
        return crc_at

    def __exit__(self, *exc):
        self._anchor = None  # ends the export
        if self._view is not None:
            self._view.release()
            self._view = None
