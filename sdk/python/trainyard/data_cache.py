"""A local cache of shards copied from slower storage, bounded in size, evicting LRU.

Several processes (the ranks of a node, loader workers) may share one cache
directory: a shard is copied to a private temporary name and renamed into
place, so a reader never sees a half-copied file; two processes fetching the
same shard at once both copy it and the second rename wins with identical
bytes. A file evicted while another process has it open stays readable to that
process (POSIX unlink semantics). Recency is the file's mtime, refreshed on
every hit, so all sharing processes see one LRU order.
"""

import os
import shutil
import time

from .data_format import DataError

_TMP_PREFIX = ".tmp-"


class ShardCache:
    """Copies files into `directory` on first use and keeps at most `max_bytes` there.

    delay_s: seconds slept before each copy, standing in for a slow remote store
    in tests and benchmarks. Counters hits / misses / evictions are per process.
    """

    def __init__(self, directory, max_bytes, delay_s=0.0):
        if max_bytes < 1:
            raise ValueError("max_bytes must be >= 1 (got %r)" % (max_bytes,))
        self.directory = directory
        self.max_bytes = max_bytes
        self.delay_s = delay_s
        self.hits = self.misses = self.evictions = 0
        os.makedirs(directory, exist_ok=True)
        self._remove_stale_tmp()

    def fetch(self, source, name, size):
        """The local path of `name`, a copy of `source` that must be `size` bytes."""
        if size > self.max_bytes:
            raise DataError("shard %s is %d bytes, more than the whole cache (max_bytes=%d in "
                            "%s); raise max_bytes to a few shards' size or more"
                            % (source, size, self.max_bytes, self.directory))
        path = os.path.join(self.directory, name)
        try:
            if os.stat(path).st_size == size:
                os.utime(path)  # most recently used
                self.hits += 1
                return path
            os.unlink(path)  # torn by a crash of the machine: fetch it again
        except FileNotFoundError:
            pass
        self.misses += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        tmp = os.path.join(self.directory, "%s%d-%d-%s" % (_TMP_PREFIX, os.getpid(),
                                                            time.monotonic_ns(), name))
        try:
            shutil.copyfile(source, tmp)
            copied = os.stat(tmp).st_size
            if copied != size:
                raise DataError("shard %s is %d bytes, its index.json says %d: the source is "
                                "torn; re-copy it or rewrite the dataset"
                                % (source, copied, size))
            os.replace(tmp, path)
        except FileNotFoundError:
            raise DataError("shard %s is missing from the dataset's source (listed in its "
                            "index.json); restore it or rewrite the dataset" % source) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self._evict(keep=path)
        return path

    def _entries(self):
        out = []
        for e in os.scandir(self.directory):
            if e.name.startswith(_TMP_PREFIX):
                continue
            try:
                st = e.stat()
            except FileNotFoundError:  # evicted by another process just now
                continue
            out.append((st.st_mtime_ns, e.name, st.st_size))
        return out

    def size(self):
        """Bytes held in the cache now (all processes' files)."""
        return sum(size for _, _, size in self._entries())

    def _evict(self, keep):
        entries = sorted(self._entries())
        total = sum(size for _, _, size in entries)
        for _, name, size in entries:
            if total <= self.max_bytes:
                break
            path = os.path.join(self.directory, name)
            if path == keep:
                continue
            try:
                os.unlink(path)
                self.evictions += 1
            except FileNotFoundError:  # another process evicted it first
                pass
            total -= size

    def _remove_stale_tmp(self):
        """Deletes temporary copies left by processes that died mid-copy."""
        for e in os.scandir(self.directory):
            if not e.name.startswith(_TMP_PREFIX):
                continue
            try:
                pid = int(e.name[len(_TMP_PREFIX):].split("-", 1)[0])
                os.kill(pid, 0)
            except ProcessLookupError:
                try:
                    os.unlink(e.path)
                except FileNotFoundError:
                    pass
            except (ValueError, PermissionError):
                pass
