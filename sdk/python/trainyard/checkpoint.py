"""Atomic, self-verifying, rolling checkpoints in one directory.

Layout (docs/job-contract.md): each checkpoint is a directory `step-<N>/`
holding the state files and MANIFEST.json (names, sizes, sha256, and a CRC-32 per
8 MiB chunk that the SDK checks when it reads; see _Digests). It is built
as `step-<N>.tmp/`, every file and the directory are fsynced, the manifest is
written last, and the rename to `step-<N>/` is the commit. A step saved again
is swapped in atomically (renameat2 RENAME_EXCHANGE) where the file system
allows, else the old copy is renamed to `step-<N>.old/` first and deleted only
after the new one is in place; opening a manager finishes such a replacement
(the new copy wins when its manifest verifies, else the old one comes back).
A SIGKILL at any moment therefore leaves either the old set of checkpoints or
the new one; a torn or bit-rotted checkpoint fails its manifest check and
latest() falls back to an older one instead of resuming from garbage.

What the checks protect against: torn writes, truncation, blocks zeroed or
garbled by a crash, the file system or the disk, and bit rot. Not against
deliberate tampering: the manifest sits next to the files, so whoever can
rewrite a file can rewrite its hashes too, SHA-256 or not. A CRC-32 per chunk
catches every error burst of up to 32 bits and misses other damage to a chunk
with probability 2^-32; checkpoints whose manifests have only sha256 (written
before chunk_crc32 existed) are checked by SHA-256.
"""

import ctypes
import datetime
import errno
import hashlib
import itertools
import json
import logging
import mmap
import os
import queue
import re
import shutil
import sys
import threading
import time
import zlib

from . import runtime as _job

log = logging.getLogger("trainyard")

MANIFEST = "MANIFEST.json"
FORMAT = "trainyard-checkpoint"
VERSION = 1
_STEP_DIR = re.compile(r"^step-(\d+)$")
_TMP_DIR = re.compile(r"^step-\d+\.tmp$")
_OLD_DIR = re.compile(r"^step-(\d+)\.old$")
_TRASH_PREFIX = ".trash-"
_CHUNK = 1 << 20
_WRITE_CHUNK = 16 << 20
_READ_CHUNK = 8 << 20  # a SHA-256-verified read hashes one chunk while the next is being read
_MAX_READERS = 4  # files read and hashed at once
_CRC_CHUNK = 8 << 20  # bytes per CRC-32 that a manifest entry records (chunk_crc32)
_CHECKERS = max(1, min(4, os.cpu_count() or 1))  # threads reading and checking one file


class CheckpointError(Exception):
    """A checkpoint could not be written or read back."""


def _check_name(name):
    """Refuses names that could escape the checkpoint directory or hide the manifest."""
    parts = name.split("/") if isinstance(name, str) else [""]
    if (not name or name.startswith("/") or "\\" in name or "\0" in name
            or any(p in ("", ".", "..") for p in parts) or name == MANIFEST):
        raise ValueError("checkpoint file name %r is not a plain relative path" % (name,))
    return name


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Digests:
    """What a manifest entry records about a file's bytes, fed to it in order: the size,
    the SHA-256 of the whole file (the job contract's field, which `trainyard
    checkpoints` checks) and a CRC-32 of every _CRC_CHUNK bytes (chunk_crc32, what the
    SDK checks when it reads: chunks can be read and checked in parallel, and a CRC-32
    costs less than half a SHA-256). The CRCs are computed on a thread of their own,
    beside the SHA-256 and the write (zlib and hashlib release the GIL), from views that
    the caller keeps unchanged until fields() returns."""

    def __init__(self):
        self._sha = hashlib.sha256()
        self._crcs = []
        self._crc = 0
        self._fill = 0  # bytes in the current chunk
        self.size = 0
        self._queue = queue.Queue(maxsize=8)
        self._failure = []
        self._thread = None  # started by the first large piece; small files need none

    def update(self, view):
        if self._thread is None and len(view) < _CHUNK:
            self._crc_update(view)
        else:
            if self._thread is None:
                self._thread = threading.Thread(target=self._crc_loop, name="trainyard-crc",
                                                daemon=True)
                self._thread.start()
            self._queue.put(view)
        self._sha.update(view)
        self.size += len(view)

    def _crc_update(self, view):
        pos = 0
        while pos < len(view):
            take = min(len(view) - pos, _CRC_CHUNK - self._fill)
            self._crc = zlib.crc32(view[pos:pos + take], self._crc)
            self._fill += take
            pos += take
            if self._fill == _CRC_CHUNK:
                self._crcs.append(self._crc)
                self._crc, self._fill = 0, 0

    def _crc_loop(self):
        while True:
            view = self._queue.get()
            if view is None:
                return
            if not self._failure:
                try:
                    self._crc_update(view)
                except BaseException as e:  # re-raised by fields()
                    self._failure.append(e)

    def close(self):
        """Stops the CRC thread (fields() does too); safe to call more than once."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def fields(self):
        """{"size", "sha256", "chunk_size", "chunk_crc32"} for the manifest entry."""
        self.close()
        if self._failure:
            raise self._failure[0]
        crcs = self._crcs + ([self._crc] if self._fill else [])
        return {"size": self.size, "sha256": self._sha.hexdigest(), "chunk_size": _CRC_CHUNK,
                "chunk_crc32": crcs}


def _write_durably(path, data):
    """Writes bytes-like `data`, or the chunks() of a streamable value, hashing as it
    goes; fsyncs the file. Returns the manifest entry's fields (_Digests.fields())."""
    d = _Digests()
    try:
        with open(path, "wb") as f:
            for chunk in data.chunks() if hasattr(data, "chunks") else (data,):
                view = memoryview(chunk).cast("B")
                # hashlib, zlib and write() release the GIL on large buffers, so a
                # background save barely slows the training thread; slices keep each
                # call bounded.
                for i in range(0, len(view), _WRITE_CHUNK):
                    part = view[i:i + _WRITE_CHUNK]
                    d.update(part)
                    f.write(part)
            f.flush()
            os.fsync(f.fileno())
        return d.fields()
    finally:
        d.close()


def _hash_file(path, fsync=False):
    """The manifest entry's fields (_Digests.fields()) of a file, streamed so large
    files need no memory."""
    d = _Digests()
    try:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                d.update(chunk)
            if fsync:
                os.fsync(f.fileno())
        return d.fields()
    finally:
        d.close()


def _identity(st):
    """What changes when a file is replaced or written through the file system."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_MADV_POPULATE_WRITE = 23  # Linux >= 5.14; not in Python 3.11's mmap module


def _new_buffer(size):
    """Writable memory for a whole file. Anonymous mmap for large files: not zero-filled
    by Python (bytearray(n) is) and alive as long as any view of it. Faulting in fresh
    memory costs more than reading the file into it (4 KiB pages: about 150 ms for 500 MB
    here, the read from the page cache 45 ms), so the mapping asks for transparent huge
    pages and has the kernel fault it all in at once (MADV_POPULATE_WRITE); where either
    is refused it falls back to MAP_POPULATE's 4 KiB pages."""
    if size < _READ_CHUNK:
        return memoryview(bytearray(size))
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    huge = getattr(mmap, "MADV_HUGEPAGE", None)
    if huge is not None and sys.platform.startswith("linux"):
        m = mmap.mmap(-1, size, flags=flags)
        try:
            m.madvise(huge)
            m.madvise(_MADV_POPULATE_WRITE)
            return memoryview(m)
        except OSError:  # THP disabled, an older kernel: fault in as below instead
            m.close()
    return memoryview(mmap.mmap(-1, size, flags=flags | getattr(mmap, "MAP_POPULATE", 0)))


def _read_hashing(f, size, into=None):
    """Reads `size` bytes of the open file `f` and hashes them, the read of one chunk
    overlapping the hash of the previous (readinto and hashlib release the GIL, so
    this uses two cores). `into`: a writable buffer of `size` bytes that receives the
    data; None only hashes, through scratch buffers. The hash is of the very bytes
    left in `into`. Returns (bytes read, sha256 hex)."""
    h = hashlib.sha256()
    if size <= 2 * _READ_CHUNK:
        view = into if into is not None else memoryview(bytearray(size))
        n = f.readinto(view) if size else 0
        while 0 < n < size:  # readinto may return less than asked
            got = f.readinto(view[n:])
            if not got:
                break
            n += got
        h.update(view[:n])
        return n, h.hexdigest()
    full = queue.Queue()
    free = queue.Queue()
    if into is None:
        for _ in range(3):
            free.put(memoryview(bytearray(_READ_CHUNK)))
    failure = []

    def reader():
        try:
            pos = 0
            while pos < size:
                want = min(_READ_CHUNK, size - pos)
                scratch = free.get() if into is None else None
                buf = (scratch if into is None else into[pos:])[:want]
                got = f.readinto(buf)
                if not got:
                    break
                full.put((scratch, buf[:got]))
                pos += got
        except BaseException as e:  # re-raised by the hashing thread
            failure.append(e)
        finally:
            full.put(None)

    t = threading.Thread(target=reader, name="trainyard-read", daemon=True)
    t.start()
    n = 0
    while True:
        item = full.get()
        if item is None:
            break
        scratch, part = item
        h.update(part)
        n += len(part)
        if scratch is not None:
            free.put(scratch)
    t.join()
    if failure:
        raise failure[0]
    return n, h.hexdigest()


def _read_verified(f, e, into=None):
    """Reads the file of manifest entry `e` (open as `f`, its size already checked) into
    `into` (None: only checks it) and verifies it: by its chunk CRC-32s where the manifest
    has them, else by its SHA-256 (manifests written before chunk_crc32). None, or what is
    wrong."""
    if "chunk_crc32" in e:
        return _read_checked(f.fileno(), e["size"], e["chunk_size"], e["chunk_crc32"], into)
    n, digest = _read_hashing(f, e["size"], into)
    if n != e["size"]:
        return "shorter than its size"
    return "sha256 mismatch" if digest != e["sha256"] else None


def _read_checked(fd, size, chunk, crcs, into=None):
    """Reads `size` bytes of the file open as `fd` and checks the CRC-32 of every `chunk`
    bytes against `crcs`, on up to _CHECKERS threads at once: each reads one chunk
    (preadv) and checks it while it is still in the CPU's cache (preadv and zlib.crc32
    release the GIL). `into`: a writable buffer of `size` bytes that receives the data;
    None only checks, through one scratch buffer per thread. The CRCs are of the very
    bytes left in `into`. Returns None, or what is wrong."""
    count = len(crcs)
    ticket = itertools.count()  # next() is atomic under the GIL
    problems, errors = [], []

    def work():
        try:
            scratch = None if into is not None else memoryview(bytearray(min(chunk, size)))
            while not problems and not errors:
                i = next(ticket)
                if i >= count:
                    return
                begin, end = i * chunk, min(size, (i + 1) * chunk)
                buf = into[begin:end] if into is not None else scratch[:end - begin]
                n = 0
                while n < end - begin:
                    got = _pread_into(fd, buf[n:], begin + n)
                    if not got:
                        problems.append((begin, "shorter than its size"))
                        return
                    n += got
                if zlib.crc32(buf) != crcs[i]:
                    problems.append((begin, "crc32 mismatch in bytes %d-%d" % (begin, end)))
                    return
        except BaseException as e:  # re-raised by the calling thread
            errors.append(e)

    helpers = [threading.Thread(target=work, name="trainyard-read", daemon=True)
               for _ in range(min(_CHECKERS, count) - 1)]
    for t in helpers:
        t.start()
    work()
    for t in helpers:
        t.join()
    if errors:
        raise errors[0]
    return min(problems)[1] if problems else None


def _pread_into(fd, buf, offset):
    if hasattr(os, "preadv"):
        return os.preadv(fd, [buf], offset)
    data = os.pread(fd, len(buf), offset)
    buf[:len(data)] = data
    return len(data)


def _check_entry(e):
    """Raises TypeError or ValueError when a manifest entry's fields have the wrong shape."""
    _check_name(e["name"])
    if not isinstance(e["size"], int) or not isinstance(e["sha256"], str):
        raise TypeError("size or sha256 has the wrong type")
    if "chunk_crc32" in e:  # written since 2026-11-26; older manifests have sha256 only
        chunk, crcs = e.get("chunk_size"), e["chunk_crc32"]
        if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk <= 0:
            raise ValueError("chunk_size must be a positive int")
        if not isinstance(crcs, list) or len(crcs) != -(-e["size"] // chunk) or not all(
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1 << 32
                for c in crcs):
            raise ValueError("chunk_crc32 must hold one CRC-32 per chunk_size bytes")


def _parallel(fn, items):
    """[fn(item)] for each item, up to _MAX_READERS at a time, in order."""
    items = list(items)
    if len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(_MAX_READERS, len(items))) as pool:
        return list(pool.map(fn, items))


def _now_rfc3339():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def _remove_tree(path):
    """Renames to a hidden trash name first, so a crash mid-delete never leaves a
    half-deleted `step-<N>/` that looks like a checkpoint."""
    parent, base = os.path.split(path)
    trash = os.path.join(parent, "%s%s-%d-%d" % (_TRASH_PREFIX, base, os.getpid(),
                                                 time.monotonic_ns()))
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2 = []  # [function or None], looked up on first use


def _exchange(a, b):
    """Swaps two existing paths atomically (Linux renameat2 RENAME_EXCHANGE).

    False when the OS, C library or file system cannot; the caller then falls
    back to two renames.
    """
    if not _renameat2:
        fn = None
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                               ctypes.c_uint]
                fn.restype = ctypes.c_int
            except (AttributeError, OSError):  # glibc before 2.28, musl, ...
                fn = None
        _renameat2.append(fn)
    fn = _renameat2[0]
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), a, None, b)


class Checkpoint:
    """One committed checkpoint directory (or, with sharded managers, one rank's shard).

    Every read is verified: read() and load() check the bytes they return (each chunk's
    CRC-32, or the whole file's SHA-256 where the manifest has no chunk_crc32) and raise
    CheckpointError on a mismatch, so damaged data is never handed out. A file that
    verify() already hashed through this object is not hashed again when its
    identity (device, inode, size, mtime, ctime) is unchanged.
    """

    def __init__(self, step, path):
        self.step = step
        self.path = path
        self._manifest = None
        self._verified = {}  # name -> identity of the file when its hash matched

    @property
    def manifest(self):
        if self._manifest is None:
            with open(os.path.join(self.path, MANIFEST), encoding="utf-8") as f:
                self._manifest = json.load(f)
        return self._manifest

    @property
    def files(self):
        return [e["name"] for e in self.manifest["files"]]

    @property
    def metadata(self):
        return self.manifest.get("metadata") or {}

    def file_path(self, name):
        return os.path.join(self.path, _check_name(name))

    def read(self, name):
        """The bytes of one file, verified against the manifest."""
        return bytes(self._load(name, small=True))

    def read_all(self):
        """{name: bytes} for every file in the manifest."""
        return {name: self.read(name) for name in self.files}

    def load(self, names=None, verify=True):
        """{name: writable memoryview} of the named files (default: all), read in
        parallel and checked while they are read (the chunks of one file on several
        threads, each checked while it is in the CPU's cache); nothing is returned
        unless every file matches the manifest (else CheckpointError). The memory is the
        buffer the file was read into, not a copy: views of it (torch.frombuffer) stay
        valid.
        verify=False skips the hashes (sizes are still checked)."""
        names = self.files if names is None else list(names)
        return dict(zip(names, _parallel(lambda n: self._load(n, verify=verify), names)))

    def _entry(self, name):
        entries = self._entries()
        if isinstance(entries, str):
            raise CheckpointError("%s: %s" % (self.path, entries))
        for e in entries:
            if e["name"] == name:
                return e
        raise CheckpointError("%s: no file %r in the manifest" % (self.path, name))

    def _load(self, name, small=False, verify=True):
        e = self._entry(name)
        path = self.file_path(name)
        try:
            with open(path, "rb", buffering=0) as f:
                st = os.fstat(f.fileno())
                if st.st_size != e["size"]:
                    raise CheckpointError("%s: size %d, manifest says %d"
                                          % (path, st.st_size, e["size"]))
                if not verify or self._verified.get(name) == _identity(st):
                    return f.read() if small else _read_plain(f, e["size"])
                into = memoryview(bytearray(e["size"])) if small else _new_buffer(e["size"])
                problem = _read_verified(f, e, into)
        except OSError as err:
            raise CheckpointError("%s: %s" % (path, err.strerror or err)) from err
        if problem:
            raise CheckpointError("%s: %s" % (path, problem))
        return into

    def _entries(self):
        """The manifest's file entries, checked for shape, or a string saying what is wrong."""
        try:
            m = self.manifest
        except (OSError, ValueError) as e:
            return "manifest unreadable: %s" % e
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            return "manifest is not a %s manifest" % FORMAT
        if m.get("step") != self.step:
            return "manifest step %r != directory step %d" % (m.get("step"), self.step)
        files = m.get("files")
        if not isinstance(files, list):
            return "manifest has no file list"
        for e in files:
            try:
                _check_entry(e)
            except (KeyError, TypeError, ValueError) as err:
                return "bad manifest entry %r: %s" % (e, err)
        return files

    def check(self):
        """Like verify() without hashing: the manifest, and every file's presence and
        size. None when all is well, else what is wrong."""
        entries = self._entries()
        if isinstance(entries, str):
            return entries
        for e in entries:
            try:
                size = os.stat(os.path.join(self.path, e["name"])).st_size
            except OSError as err:
                return "%s: %s" % (e["name"], err.strerror or err)
            if size != e["size"]:
                return "%s: size %d, manifest says %d" % (e["name"], size, e["size"])
        return None

    def verify(self):
        """None when every file matches the manifest, else what is wrong. The files
        are hashed in parallel, each while it is read."""
        entries = self._entries()
        if isinstance(entries, str):
            return entries
        problems = _parallel(self._verify_file, entries)
        return next((p for p in problems if p), None)

    def _verify_file(self, e):
        name = e["name"]
        try:
            with open(os.path.join(self.path, name), "rb", buffering=0) as f:
                st = os.fstat(f.fileno())
                if st.st_size != e["size"]:
                    return "%s: size %d, manifest says %d" % (name, st.st_size, e["size"])
                problem = _read_verified(f, e)
        except OSError as err:
            return "%s: %s" % (name, err.strerror or err)
        if problem:
            return "%s: %s" % (name, problem)
        self._verified[name] = _identity(st)
        return None

    def __repr__(self):
        return "Checkpoint(step=%d, path=%r)" % (self.step, self.path)


def _read_plain(f, size):
    """A file already verified through the same Checkpoint: read without hashing."""
    into = _new_buffer(size)
    n = 0
    while n < size:
        got = f.readinto(into[n:])
        if not got:
            raise CheckpointError("%s: shorter than its size" % f.name)
        n += got
    return into


class CheckpointManager:
    """Writes, finds and prunes checkpoints under one directory.

    One manager (one process) should write a directory. With several ranks, pass
    sharded=True on every rank (sharded.py): each rank saves its own shard, a step
    counts once every rank's shard is durable, and latest() gives every rank the
    same step. rank, world_size and attempt default to the job's environment.
    """

    def __new__(cls, *args, sharded=False, **kwargs):
        if sharded and cls is CheckpointManager:
            from .sharded import ShardedCheckpointManager
            return super().__new__(ShardedCheckpointManager)
        return super().__new__(cls)

    def __init__(self, directory=None, keep_last=3, job=None, sharded=False):
        self._job = job
        if directory is None:
            j = job or _job.current()
            directory = (j.checkpoint_dir if j else None) or os.environ.get(
                "TRAINYARD_CHECKPOINT_DIR")
        if not directory:
            raise ValueError("no checkpoint directory: pass one or set TRAINYARD_CHECKPOINT_DIR")
        if keep_last is not None and keep_last < 1:
            raise ValueError("keep_last must be >= 1 or None (keep all)")
        self.directory = os.path.abspath(directory)
        self.keep_last = keep_last
        self.last_stall_s = None  # seconds the caller was blocked by the last save
        self.last_save_s = None  # seconds from the last save() call to its commit
        self._thread = None
        self._error = None
        os.makedirs(self.directory, exist_ok=True)
        self._clean_leftovers()

    # ---- finding -----------------------------------------------------------------------
    def steps(self):
        """Steps of the committed-looking `step-<N>` directories, ascending (unverified)."""
        out = []
        for name in os.listdir(self.directory):
            m = _STEP_DIR.match(name)
            if m and os.path.isdir(os.path.join(self.directory, name)):
                out.append(int(m.group(1)))
        return sorted(out)

    def path_for(self, step):
        return os.path.join(self.directory, "step-%d" % step)

    def get(self, step, verify=True):
        """The checkpoint for `step`, or None when missing or (with verify) damaged."""
        ck = Checkpoint(step, self.path_for(step))
        if not os.path.isdir(ck.path):
            return None
        if verify:
            problem = ck.verify()
            if problem:
                log.warning("trainyard: checkpoint %s is damaged (%s)", ck.path, problem)
                return None
        return ck

    def latest(self, verify=True):
        """The newest checkpoint whose manifest verifies, or None.

        Damaged ones are skipped with a warning, so a torn or corrupted newest
        checkpoint costs some steps instead of the run.
        """
        for step in reversed(self.steps()):
            ck = self.get(step, verify=verify)
            if ck is not None:
                return ck
        return None

    def load_latest(self, names=None):
        """(checkpoint, {name: buffer}) for the newest checkpoint whose files verify,
        or (None, {}). One pass: each file is hashed while it is read into the memory
        returned (Checkpoint.load()), so resuming costs about one read of the
        checkpoint; a damaged one is skipped with a warning, as in latest(). `names`:
        the files wanted (default all); the others are checked for size only."""
        for step in reversed(self.steps()):
            ck = Checkpoint(step, self.path_for(step))
            problem = ck.check()
            if problem is None:
                try:
                    return ck, ck.load(names)
                except CheckpointError as e:
                    problem = str(e)
            log.warning("trainyard: checkpoint %s is damaged (%s)", ck.path, problem)
        return None, {}

    # ---- writing -----------------------------------------------------------------------
    def save(self, step, files, background=False, metadata=None):
        """Commits checkpoint `step` and returns its final path.

        `files` is {name: bytes-like or streamable} or a callable writer(tmp_dir)
        that writes the files itself. A streamable value has chunks() (bytes-like
        pieces, written in order) and size, and must not change until written,
        like torch_state's TensorFile over its snapshot copies. With
        background=True and a dict, bytes-like values are copied here (the
        snapshot), streamable ones are taken as they are, and everything is
        written, fsynced and committed on a thread; call wait() before relying
        on it. A writer callable always runs here, since
        it reads live state; only hashing, fsync and the commit move to the
        thread. After a notice every save is synchronous: the process is about
        to exit and the checkpoint must be on disk first.
        """
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise ValueError("step must be a non-negative int, got %r" % (step,))
        started = time.monotonic()
        self.wait()
        if self._notice_given():
            if background:
                log.info("trainyard: notice given; saving step %d synchronously", step)
                background = False
            self._warn_if_late(step)
        self._clean_leftovers()
        tmp = self._tmp_path(step)
        if callable(files):
            os.makedirs(tmp)
            files(tmp)
            snapshot = None
        else:
            snapshot = {}
            for name, data in files.items():
                # Streamable values are already private copies; bytes() copies mutable buffers.
                snapshot[_check_name(name)] = data if hasattr(data, "chunks") else bytes(data)
        metadata = json.loads(json.dumps(metadata)) if metadata is not None else None
        streamed = [d for d in (snapshot or {}).values() if hasattr(d, "begin_write")]
        for d in streamed:
            d.begin_write()

        def commit():
            try:
                self._commit(step, tmp, snapshot, metadata)
            finally:
                for d in streamed:
                    d.end_write()
            self.last_save_s = time.monotonic() - started

        if background:
            self._thread = threading.Thread(target=self._background, args=(commit,),
                                            name="trainyard-checkpoint-%d" % step)
            self._thread.start()
        else:
            commit()
        self.last_stall_s = time.monotonic() - started
        return self.path_for(step)

    def wait(self):
        """Blocks until a background save is committed; raises its error, if any."""
        t = self._thread
        if t is not None:
            t.join()
            self._thread = None
        err, self._error = self._error, None
        if err is not None:
            raise CheckpointError("background checkpoint save failed: %s" % err) from err

    def _background(self, commit):
        try:
            commit()
        except BaseException as e:  # reported by wait(); a thread cannot raise to the caller
            log.error("trainyard: background checkpoint save failed: %s", e)
            self._error = e

    def _warn_if_late(self, step):
        """Says when the last save's duration exceeds the time the notice leaves: trainyard
        kills the job at the deadline, and the checkpoint being written is then lost (the
        previous one stays loadable, since a save commits only by its final rename)."""
        j = self._job or _job.current()
        left = j.seconds_left() if j is not None else None
        if left is None:
            return
        previous = self.steps()
        fallback = "step %d" % previous[-1] if previous else "none (the job restarts from scratch)"
        if self.last_save_s is not None and self.last_save_s > left:
            log.warning("trainyard: saving step %d after the notice, but the last save took "
                        "%.1f s and the deadline is %.1f s away: it will likely be killed first; "
                        "the previous checkpoint stays loadable: %s. Raise the job's grace "
                        "period (checkpoint.gracePeriodSeconds) or checkpoint more often.",
                        step, self.last_save_s, left, fallback)
        else:
            log.info("trainyard: saving step %d after the notice; %.1f s to the deadline",
                     step, left)

    def _notice_given(self):
        j = self._job or _job.current()
        return j is not None and j.should_stop()

    def _commit(self, step, tmp, snapshot, metadata):
        if snapshot is not None:
            if os.path.exists(tmp):
                shutil.rmtree(tmp)
            os.makedirs(tmp)
            entries = []
            for name in sorted(snapshot):
                path = os.path.join(tmp, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                entries.append(dict(_write_durably(path, snapshot[name]), name=name))
        else:
            entries = self._hash_tree(tmp)
        for root, dirs, _ in os.walk(tmp, topdown=False):
            for d in dirs:
                _fsync_dir(os.path.join(root, d))
        manifest = {"format": FORMAT, "version": VERSION, "step": step,
                    "created": _now_rfc3339(), "files": entries}
        manifest.update(self._manifest_fields())
        if metadata is not None:
            manifest["metadata"] = metadata
        _write_durably(os.path.join(tmp, MANIFEST),
                       (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
        _fsync_dir(tmp)
        self._publish(step, tmp)
        self._prune(keep=step)

    def _tmp_path(self, step):
        return self.path_for(step) + ".tmp"

    def _manifest_fields(self):
        """Fields a subclass adds to each manifest it writes."""
        return {}

    def _publish(self, step, tmp):
        """Puts the complete `tmp` in place as `step-<N>/`. At no instant is neither a
        complete old nor a complete new copy there under a name that _recover() keeps."""
        final = self.path_for(step)
        if not os.path.exists(final):
            os.rename(tmp, final)  # the commit
            _fsync_dir(self.directory)
            return
        # The same step saved again. The old copy is deleted only once the new one is
        # `step-<N>/`, so a kill in between leaves one of them for _recover().
        if _exchange(tmp, final):  # the commit; the old copy is now at the tmp name
            _fsync_dir(self.directory)
            _remove_tree(tmp)
            return
        old = final + ".old"
        os.rename(final, old)
        _fsync_dir(self.directory)
        os.rename(tmp, final)  # the commit
        _fsync_dir(self.directory)
        _remove_tree(old)

    def _recover(self):
        """Finishes a replacement that a crash interrupted between its two renames:
        `step-<N>.old/` with no `step-<N>/` means the new copy was not yet in place.
        The new copy wins when its manifest verifies (its save had reached the commit
        phase), else the old one is put back; either is a complete checkpoint."""
        for name in sorted(os.listdir(self.directory)):
            m = _OLD_DIR.match(name)
            if not m:
                continue
            step = int(m.group(1))
            old, final = os.path.join(self.directory, name), self.path_for(step)
            tmp = final + ".tmp"
            if not os.path.exists(final):
                if os.path.isdir(tmp) and Checkpoint(step, tmp).verify() is None:
                    log.warning("trainyard: finishing the interrupted save of step %d", step)
                    os.rename(tmp, final)
                else:
                    log.warning("trainyard: step %d was being saved again when the process "
                                "died; keeping the previous copy", step)
                    os.rename(old, final)
                _fsync_dir(self.directory)
            _remove_tree(old)

    @staticmethod
    def _hash_tree(tmp):
        entries = []
        for root, dirs, names in os.walk(tmp):
            dirs.sort()
            for n in sorted(names):
                path = os.path.join(root, n)
                rel = os.path.relpath(path, tmp).replace(os.sep, "/")
                if rel == MANIFEST:
                    raise CheckpointError("the writer must not create %s itself" % MANIFEST)
                if not os.path.isfile(path) or os.path.islink(path):
                    raise CheckpointError("%s is not a regular file" % rel)
                entries.append(dict(_hash_file(path, fsync=True), name=rel))
        return sorted(entries, key=lambda e: e["name"])

    def _prune(self, keep):
        """Deletes the oldest checkpoints beyond keep_last, never `keep` itself."""
        if self.keep_last is None:
            return
        others = [s for s in reversed(self.steps()) if s != keep]
        for step in others[self.keep_last - 1:]:
            _remove_tree(self.path_for(step))

    def _clean_leftovers(self):
        """Finishes interrupted replacements, then removes `.tmp` dirs of interrupted
        saves and trash of interrupted deletes."""
        if self._thread is not None:
            return  # a background save owns its .tmp dir
        self._recover()
        for name in os.listdir(self.directory):
            if _TMP_DIR.match(name) or name.startswith(_TRASH_PREFIX):
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
