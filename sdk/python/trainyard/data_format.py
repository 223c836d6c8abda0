"""The trainyard shard format: records in large files, with an index and checksums.

Standard library only. A dataset is a directory with shard files and index.json.
See trainyard.data for why this layout and not tar or MDS.

Shard file (little-endian), written once and never modified:

    b"TYSHARD1"                          8-byte magic
    record 0 .. record n-1               stored bytes, back to back (compressed
                                         one by one when the codec is not "none",
                                         so any record is readable on its own)
    index: n x (u64 offset, u32 stored length, u32 crc32 of the stored bytes)
    trailer, 32 bytes: u64 index offset, u32 n, u32 codec id,
                       u32 crc32 of the index, u32 crc32 of these 20 bytes,
                       b"TYSHEND1"

index.json lists every shard with its record count, byte size and index crc32,
plus the codec, and "fingerprint": the sha256 of all of that. The fingerprint
checks index.json itself and names the dataset in a loader's saved position.
A shard that is missing, truncated, replaced or bit-rotted fails one of these
checks with a DataError naming the file; nothing is skipped silently.
"""

import bisect
import hashlib
import json
import lzma
import os
import struct
import sys
import threading
import zlib

from . import crc32 as _crc

MAGIC = b"TYSHARD1"
END_MAGIC = b"TYSHEND1"
INDEX_FILE = "index.json"
FORMAT = "trainyard-shards"
VERSION = 1
CODECS = {"none": 0, "zlib": 1, "lzma": 2}
_CODEC_NAMES = {v: k for k, v in CODECS.items()}
_ENTRY = struct.Struct("<QII")
_TRAILER = struct.Struct("<QIIII8s")
_COALESCE_GAP = 256 << 10  # records closer than this are read with one pread
_GAP_SINK = 64 << 10  # read_batch reads a gap up to this long rather than seek past it
_IOV_MAX = 512  # buffers per preadv call (Linux allows 1024)


class DataError(Exception):
    """A dataset, shard, cache or saved loader position that cannot be used as is."""


def _compress(codec, data, level):
    if codec == "zlib":
        return zlib.compress(data, 6 if level is None else level)
    if codec == "lzma":
        return lzma.compress(data, preset=6 if level is None else level)
    return data


def _decompress(codec, data):
    if codec == "zlib":
        return zlib.decompress(data)
    if codec == "lzma":
        return lzma.decompress(data)
    return data


def _fingerprint(doc):
    body = {k: doc[k] for k in ("format", "version", "codec", "records", "shards")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


class ShardWriter:
    """Writes records (bytes) into shards of about `shard_bytes` each, then index.json.

    codec: "none", "zlib" or "lzma", applied to each record; level: its level.
    The dataset exists once close() (or leaving the `with` block) has written
    index.json atomically; a crash before leaves no index, so readers refuse it.
    """

    def __init__(self, directory, codec="none", shard_bytes=64 << 20, level=None):
        if codec not in CODECS:
            raise ValueError("codec must be one of %s (got %r)" % (sorted(CODECS), codec))
        if shard_bytes < 1:
            raise ValueError("shard_bytes must be >= 1 (got %r)" % (shard_bytes,))
        self.directory = directory
        self.codec = codec
        self.level = level
        self.shard_bytes = shard_bytes
        os.makedirs(directory, exist_ok=True)
        if os.path.exists(os.path.join(directory, INDEX_FILE)):
            raise DataError("%s already holds a dataset (%s exists); write into an empty "
                            "directory or delete the old one first"
                            % (directory, INDEX_FILE))
        self._shards = []
        self._file = None
        self._entries = []
        self._offset = 0
        self.records = 0

    def write(self, record):
        """Appends one record (bytes-like)."""
        if self._file is None:
            self._open_shard()
        stored = _compress(self.codec, bytes(record), self.level)
        self._file.write(stored)
        self._entries.append(_ENTRY.pack(self._offset, len(stored), zlib.crc32(stored)))
        self._offset += len(stored)
        self.records += 1
        if self._offset >= self.shard_bytes:
            self._close_shard()

    def _open_shard(self):
        name = "shard-%05d.tys" % len(self._shards)
        self._path = os.path.join(self.directory, name)
        self._file = open(self._path + ".tmp", "wb")
        self._file.write(MAGIC)
        self._offset = len(MAGIC)
        self._entries = []

    def _close_shard(self):
        index = b"".join(self._entries)
        head = struct.pack("<QIII", self._offset, len(self._entries), CODECS[self.codec],
                           zlib.crc32(index))
        self._file.write(index)
        self._file.write(_TRAILER.pack(*struct.unpack("<QIII", head), zlib.crc32(head),
                                       END_MAGIC))
        self._file.flush()
        os.fsync(self._file.fileno())
        size = self._file.tell()
        self._file.close()
        self._file = None
        os.replace(self._path + ".tmp", self._path)
        self._shards.append({"name": os.path.basename(self._path), "records": len(self._entries),
                             "bytes": size, "index_crc32": zlib.crc32(index)})

    def close(self):
        """Finishes the last shard and writes index.json (tmp file, fsync, rename)."""
        if self._file is not None:
            self._close_shard()
        doc = {"format": FORMAT, "version": VERSION, "codec": self.codec,
               "records": self.records, "shards": self._shards}
        doc["fingerprint"] = _fingerprint(doc)
        path = os.path.join(self.directory, INDEX_FILE)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)
        return doc

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif self._file is not None:
            self._file.close()


def write_dataset(directory, records, **kw):
    """Writes an iterable of bytes records as a dataset; returns its index document."""
    with ShardWriter(directory, **kw) as w:
        for r in records:
            w.write(r)
    return w.close()


def read_index(directory):
    """index.json of a dataset, checked against its fingerprint."""
    path = os.path.join(directory, INDEX_FILE)
    fix = ("rewrite the dataset with trainyard.data.ShardWriter, or restore %s from the "
           "source it was copied from" % path)
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise DataError("%s not found: %s is not a trainyard dataset (or it was never "
                        "finished: ShardWriter.close() writes it)" % (path, directory)) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError("%s is not valid JSON (%s); it is torn or corrupted: %s"
                        % (path, e, fix)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DataError("%s is not a %s index; %s" % (path, FORMAT, fix))
    if doc.get("version") != VERSION:
        raise DataError("%s has version %r; this trainyard reads version %d"
                        % (path, doc.get("version"), VERSION))
    try:
        ok = _fingerprint(doc) == doc.get("fingerprint")
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise DataError("%s fails its checksum (fingerprint does not match its content): it "
                        "was edited or corrupted; %s" % (path, fix))
    return doc


class ShardReader:
    """Random access to the records of one shard file, each checked against its crc32.

    `expected` is the shard's entry in index.json; the file must match it. Reads
    use os.pread, so one reader is safe to share between threads and across fork.
    """

    def __init__(self, path, expected=None, codec=None):
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        try:
            self._load(expected, codec)
        except BaseException:
            os.close(self._fd)
            raise

    def _bad(self, what):
        return DataError("shard %s is %s; re-copy it from the dataset's source or rewrite the "
                         "dataset (trainyard.data.ShardWriter)" % (self.path, what))

    def _load(self, expected, codec):
        size = os.fstat(self._fd).st_size
        if expected is not None and size != expected["bytes"]:
            raise self._bad("torn: %d bytes, index.json says %d" % (size, expected["bytes"]))
        if size < len(MAGIC) + _TRAILER.size:
            raise self._bad("torn: only %d bytes" % size)
        trailer = os.pread(self._fd, _TRAILER.size, size - _TRAILER.size)
        index_off, count, codec_id, index_crc, trailer_crc, end = _TRAILER.unpack(trailer)
        if end != END_MAGIC or zlib.crc32(trailer[:20]) != trailer_crc:
            raise self._bad("torn or corrupted: its trailer is damaged")
        if os.pread(self._fd, len(MAGIC), 0) != MAGIC:
            raise self._bad("not a trainyard shard (bad magic)")
        if index_off + count * _ENTRY.size + _TRAILER.size != size:
            raise self._bad("corrupted: its trailer does not match the file size")
        self.index = os.pread(self._fd, count * _ENTRY.size, index_off)
        if zlib.crc32(self.index) != index_crc:
            raise self._bad("corrupted: its record index fails its crc32")
        if expected is not None and (count != expected["records"]
                                     or index_crc != expected["index_crc32"]):
            raise self._bad("not the shard index.json lists (%d records, index crc32 %08x; "
                            "index.json says %d, %08x)" % (count, index_crc, expected["records"],
                                                           expected["index_crc32"]))
        self.codec = _CODEC_NAMES.get(codec_id)
        if self.codec is None or (codec is not None and codec != self.codec):
            raise self._bad("written with codec id %d, index.json says %r" % (codec_id, codec))
        self.count = count

    def __len__(self):
        return self.count

    def _check(self, i, stored, crc):
        if _crc.crc32(stored) != crc:
            raise self._bad("corrupted: record %d fails its crc32" % i)
        return self._decoded(i, stored)

    def _decoded(self, i, stored):
        try:
            return _decompress(self.codec, stored)
        except (zlib.error, lzma.LZMAError) as e:
            raise self._bad("corrupted: record %d does not decompress (%s)" % (i, e)) from None

    def read(self, i):
        """Record `i` (0-based within this shard) as bytes."""
        if not 0 <= i < self.count:
            raise IndexError("record %d out of range for %s (%d records)"
                             % (i, self.path, self.count))
        offset, length, crc = _ENTRY.unpack_from(self.index, i * _ENTRY.size)
        stored = os.pread(self._fd, length, offset)
        if len(stored) != length:
            raise self._bad("torn: record %d is cut short" % i)
        return self._check(i, stored, crc)

    def read_many(self, locals_):
        """Records at these positions, in the given order; neighbours share one pread."""
        entries = sorted((_ENTRY.unpack_from(self.index, i * _ENTRY.size), k, i)
                         for k, i in enumerate(locals_))
        out = [None] * len(entries)
        run = []
        for entry in entries + [None]:
            if run and (entry is None or entry[0][0] - (run[-1][0][0] + run[-1][0][1])
                        > _COALESCE_GAP):
                start = run[0][0][0]
                end = run[-1][0][0] + run[-1][0][1]
                data = os.pread(self._fd, end - start, start)
                if len(data) != end - start:
                    raise self._bad("torn: records are cut short")
                blob = memoryview(data)
                with _crc.Pieces(data) as crc_at:
                    for (offset, length, crc), k, i in run:
                        if crc_at(offset - start, length) != crc:
                            raise self._bad("corrupted: record %d fails its crc32" % i)
                        out[k] = self._decoded(i, blob[offset - start:offset - start + length])
                run = []
            if entry is not None:
                run.append(entry)
        return out

    def _read_into(self, entries, out):
        """Reads records (codec "none") straight into the writable buffer `out` and checks
        each one's crc32 there; `entries` is a list of (offset, length, crc32, position in
        out, record number) from this shard's index, sorted here. Records that follow each
        other in the file (or nearly: gaps up to _GAP_SINK are read into a scratch buffer)
        share one preadv, each landing where it belongs: no copy besides the read."""
        entries.sort()
        sink = None
        iov, start, end = [], None, None
        for offset, length, crc, pos, i in entries:
            if iov and (offset < end or offset - end > _GAP_SINK or len(iov) >= _IOV_MAX):
                self._preadv_exactly(iov, start, end)
                iov = []
            if not iov:
                start = end = offset
            elif offset > end:
                if sink is None:
                    sink = memoryview(bytearray(_GAP_SINK))
                iov.append(sink[:offset - end])
            iov.append(out[pos:pos + length])
            end = offset + length
        if iov:
            self._preadv_exactly(iov, start, end)
        with _crc.Pieces(out) as crc_at:
            for offset, length, crc, pos, i in entries:
                if crc_at(pos, length) != crc:
                    raise self._bad("corrupted: record %d fails its crc32" % i)

    def _preadv_exactly(self, iov, start, end):
        got = _preadv(self._fd, iov, start)
        if got < end - start:  # a short read: finish it one buffer at a time
            pos = start
            for buf in iov:
                n = len(buf)
                done = min(n, max(0, got - (pos - start)))
                while done < n:
                    more = _preadv(self._fd, [buf[done:]], pos + done)
                    if not more:
                        raise self._bad("torn: records are cut short")
                    done += more
                pos += n

    def close(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _preadv(fd, buffers, offset):
    if hasattr(os, "preadv"):
        return os.preadv(fd, buffers, offset)
    got = 0
    for buf in buffers:  # no preadv (macOS before 11): pread and copy
        data = os.pread(fd, len(buf), offset + got)
        buf[:len(data)] = data
        got += len(data)
        if len(data) < len(buf):
            break
    return got


def _grown(buffer, size):
    """`buffer` (a bytearray) when it can take `size` bytes and nothing else holds a view
    of it, else a new bytearray: a batch never overwrites memory someone still reads."""
    if buffer is not None and len(buffer) >= size:
        try:
            buffer.append(0)  # a bytearray cannot change size while a view of it exists
            del buffer[-1]
            return buffer
        except BufferError:
            pass
    buffer = bytearray(max(size, 1))
    buffer.append(0)  # once: the spare room makes the check above cost no copy
    del buffer[-1]
    return buffer


class RecordBatch:
    """The records of one batch back to back in one buffer, in the order asked for.

    data: a writable memoryview of all the bytes; offsets, lengths: lists of ints,
    record k is data[offsets[k]:offsets[k] + lengths[k]] (also batch[k], a memoryview,
    no copy). A decode_batch can turn all of them into arrays at once (numpy.frombuffer
    over data, then gathers), without Python work per record. The memory is reused by a
    later batch only once no view of it is left, so keeping one is safe (but holds the
    whole batch's bytes).

    From read_batch(..., mapped=True) instead: data is a read-only view of all the dataset's
    shards mapped into memory one after the other, and offsets point into it (records are
    where they lie in their files, not back to back); nothing is copied. A decode_batch
    that uses offsets and lengths, as above, works with either.
    """

    __slots__ = ("buffer", "data", "offsets", "lengths")

    def __init__(self, buffer, offsets, lengths, data=None):
        self.buffer = buffer
        if data is None:
            total = offsets[-1] + lengths[-1] if offsets else 0
            data = memoryview(buffer)[:total]
        self.data = data
        self.offsets = offsets
        self.lengths = lengths

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, k):
        o = self.offsets[k]
        return self.data[o:o + self.lengths[k]]

    def __iter__(self):
        return (self.data[o:o + n] for o, n in zip(self.offsets, self.lengths))

    def release(self):
        """Drops this batch's own views, so its buffer can be reused."""
        self.data.release()


def pack_records(records, buffer=None):
    """A RecordBatch holding copies of `records` (bytes-like), for datasets that have
    no read_batch of their own."""
    lengths = [len(r) for r in records]
    offsets, total = [], 0
    for n in lengths:
        offsets.append(total)
        total += n
    buffer = _grown(buffer, total)
    out = memoryview(buffer)
    for o, r in zip(offsets, records):
        out[o:o + len(r)] = r
    out.release()
    return RecordBatch(buffer, offsets, lengths)


_PAGE = 4096
_MAP_FIXED = 0x10  # Linux, every architecture


class _MappedShards:
    """Every shard of a dataset mapped read-only into one range of address space, shard j
    at starts[j] (page-aligned), so that one buffer holds any record of any shard: a
    RecordBatch can then point at its records in the page cache instead of copying them.

    The range is reserved at once (PROT_NONE, no memory) and a shard is mapped over its
    part (MAP_FIXED) when a read first needs it. The range is unmapped when the last view
    of it is gone (a finalizer on the buffer object that every view holds), so a view kept
    by a decode_batch never outlives its memory. Shards are immutable: a writer replaces
    files (rename), which leaves a mapping of the old file intact; truncating a mapped shard
    in place would make a read of its lost pages fault (SIGBUS)."""

    def __init__(self, sizes):
        import ctypes
        import mmap
        import weakref
        libc = ctypes.CDLL(None, use_errno=True)
        self._mmap, munmap = libc.mmap, libc.munmap
        self._mmap.restype = ctypes.c_void_p
        self._mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_long)
        munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        self.starts, total = [], 0
        for size in sizes:
            self.starts.append(total)
            total += (size + _PAGE - 1) // _PAGE * _PAGE
        self.total = max(total, _PAGE)
        base = self._mmap(None, self.total, 0,  # PROT_NONE
                          mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE",
                                                                          0x4000), -1, 0)
        if base in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap of %d bytes of address space failed"
                          % self.total)
        self.base = base
        self._array = (ctypes.c_char * self.total).from_address(base)
        weakref.finalize(self._array, munmap, base, self.total)
        self._view = memoryview(self._array).cast("B").toreadonly()
        self._mapped = set()
        self._lock = threading.Lock()
        self._prot_read, self._shared = mmap.PROT_READ, mmap.MAP_SHARED

    def map(self, j, fd, size):
        """Maps shard j (open as fd, `size` bytes) into its place, once."""
        if j in self._mapped:
            return
        with self._lock:
            if j in self._mapped or size == 0:
                self._mapped.add(j)
                return
            import ctypes
            want = self.base + self.starts[j]
            got = self._mmap(want, size, self._prot_read, self._shared | _MAP_FIXED, fd, 0)
            if got != want:
                raise OSError(ctypes.get_errno(), "mmap of a shard failed")
            self._mapped.add(j)

    def view(self):
        """A new read-only memoryview of the whole range (its own release())."""
        return memoryview(self._view)

    def __getstate__(self):
        raise TypeError("a mapped dataset range does not pickle")


def _can_map():
    return sys.platform.startswith("linux") and struct.calcsize("P") == 8


class ShardDataset:
    """The records of a dataset directory as one sequence of bytes, by global index.

    directory: a local dataset, or with `cache` a slower one (remote storage,
    a network file system) whose shards are copied into the ShardCache on first
    use. Opening checks index.json and that every shard exists with the listed
    size. Also a map-style torch Dataset (len and indexing), for DataLoader.
    """

    def __init__(self, directory, cache=None, max_open=64):
        self.directory = directory
        self.cache = cache
        self.max_open = max_open
        doc = read_index(directory)
        self.codec = doc["codec"]
        self.shards = doc["shards"]
        self.fingerprint = doc["fingerprint"]
        self.starts = []
        total = 0
        for s in self.shards:
            self.starts.append(total)
            total += s["records"]
        self.n = total
        if total != doc["records"]:
            raise DataError("%s: shards hold %d records, but it says %d; rewrite the dataset"
                            % (os.path.join(directory, INDEX_FILE), total, doc["records"]))
        for s in self.shards:
            self._check_present(s)
        self._readers = {}
        self._region = None
        self._region_lock = threading.Lock()

    def _check_present(self, s):
        path = os.path.join(self.directory, s["name"])
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            raise DataError("shard %s is missing (listed in %s with %d records); restore it from "
                            "the dataset's source or rewrite the dataset"
                            % (path, INDEX_FILE, s["records"])) from None
        if size != s["bytes"]:
            raise DataError("shard %s is torn: %d bytes, %s says %d; re-copy it from the "
                            "dataset's source or rewrite the dataset"
                            % (path, size, INDEX_FILE, s["bytes"]))

    def __len__(self):
        return self.n

    def locate(self, i):
        """(shard number, record number within it) of global record `i`."""
        if not 0 <= i < self.n:
            raise IndexError("record %d out of range (dataset has %d)" % (i, self.n))
        j = bisect.bisect_right(self.starts, i) - 1
        return j, i - self.starts[j]

    def reader(self, j):
        """The ShardReader of shard `j`, opened (and fetched into the cache) on first use."""
        r = self._readers.get(j)
        if r is not None:
            return r
        if len(self._readers) >= self.max_open:
            # Not closed here: a thread may be reading from it; it closes when unused.
            self._readers.pop(next(iter(self._readers)))
        s = self.shards[j]
        for attempt in range(3):
            path = os.path.join(self.directory, s["name"])
            if self.cache is not None:
                path = self.cache.fetch(path, "%s-%s" % (self.fingerprint[:16], s["name"]),
                                        s["bytes"])
            try:
                r = ShardReader(path, expected=s, codec=self.codec)
                break
            except FileNotFoundError:
                if self.cache is None or attempt == 2:
                    self._check_present(s)
                    raise
                # Evicted by another process between fetch and open: fetch again.
        self._readers[j] = r
        return r

    def __getitem__(self, i):
        j, k = self.locate(i)
        return self.reader(j).read(k)

    def read_many(self, indices):
        """Records at these global indices, in order; one coalesced read per shard."""
        by_shard = {}
        for pos, i in enumerate(indices):
            j, k = self.locate(i)
            by_shard.setdefault(j, []).append((pos, k))
        out = [None] * len(indices)
        for j, items in by_shard.items():
            for (pos, _), rec in zip(items, self.reader(j).read_many([k for _, k in items])):
                out[pos] = rec
        return out

    def read_batch(self, indices, buffer=None, mapped=False):
        """The records at these global indices as one RecordBatch. Uncompressed records
        are read straight into its buffer (Linux: preadv, several records per call where
        they are close in the file) and checked there: no bytes object per record.
        buffer: a bytearray from an earlier RecordBatch (its .buffer) to reuse.

        mapped=True (uncompressed datasets, 64-bit Linux; elsewhere it reads as above): no
        copy at all. The batch's data is a read-only view of the dataset's shards mapped
        into memory (_MappedShards), its offsets where the records lie there; each record's
        crc32 is checked right there, on every read, as when it is copied."""
        if self.codec != "none":
            return pack_records(self.read_many(indices), buffer)
        if mapped and _can_map() and self._mapped_region() is not None:
            return self._read_mapped(indices)
        lengths, offsets, by_shard, indexes = [], [], {}, {}
        total = 0
        starts, unpack, size, find = self.starts, _ENTRY.unpack_from, _ENTRY.size, \
            bisect.bisect_right
        for i in indices:  # locate() and the index lookup, inlined: this runs per record
            if not 0 <= i < self.n:
                self.locate(i)  # raises IndexError
            j = find(starts, i) - 1
            k = i - starts[j]
            index = indexes.get(j)
            if index is None:
                index = indexes[j] = self.reader(j).index
            offset, length, crc = unpack(index, k * size)
            lengths.append(length)
            offsets.append(total)
            entries = by_shard.get(j)
            if entries is None:
                entries = by_shard[j] = []
            entries.append((offset, length, crc, total, k))
            total += length
        buffer = _grown(buffer, total)
        out = memoryview(buffer)
        try:
            for j, entries in by_shard.items():
                self.reader(j)._read_into(entries, out)
        finally:
            out.release()
        return RecordBatch(buffer, offsets, lengths)

    def _mapped_region(self):
        """The dataset's _MappedShards, or None when its address space cannot be reserved
        (then batches are copied, as without mapped=True)."""
        region = self._region
        if region is None:
            with self._region_lock:
                if self._region is None:
                    try:
                        self._region = _MappedShards([s["bytes"] for s in self.shards])
                    except OSError as e:
                        import logging
                        logging.getLogger("trainyard").warning(
                            "trainyard: cannot map %s into memory (%s); reading records by "
                            "copying them instead", self.directory, e)
                        self._region = False
                region = self._region
        return region or None

    def _read_mapped(self, indices):
        region = self._mapped_region()
        offsets, lengths, checks, indexes = [], [], [], {}
        starts, unpack, size, find = self.starts, _ENTRY.unpack_from, _ENTRY.size, \
            bisect.bisect_right
        places = region.starts
        for i in indices:  # locate() and the index lookup, inlined: this runs per record
            if not 0 <= i < self.n:
                self.locate(i)  # raises IndexError
            j = find(starts, i) - 1
            k = i - starts[j]
            index = indexes.get(j)
            if index is None:
                r = self.reader(j)
                region.map(j, r._fd, self.shards[j]["bytes"])
                index = indexes[j] = r.index
            offset, length, crc = unpack(index, k * size)
            offsets.append(places[j] + offset)
            lengths.append(length)
            checks.append((crc, j, k))
        view = region.view()
        fn = _crc._FN
        if fn is not None:
            base = region.base
            for o, n, (crc, j, k) in zip(offsets, lengths, checks):
                if fn(0, base + o, n) != crc:
                    raise self.reader(j)._bad("corrupted: record %d fails its crc32" % k)
        else:
            for o, n, (crc, j, k) in zip(offsets, lengths, checks):
                if zlib.crc32(view[o:o + n]) != crc:
                    raise self.reader(j)._bad("corrupted: record %d fails its crc32" % k)
        return RecordBatch(region, offsets, lengths, view)

    def close(self):
        for r in self._readers.values():
            r.close()
        self._readers = {}
        self._region = None  # unmapped once no batch holds a view of it

    def __getstate__(self):  # pickled into spawned workers: open files stay behind
        state = dict(self.__dict__)
        state["_readers"] = {}
        state["_region"] = None
        state["_region_lock"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._region_lock = threading.Lock()
