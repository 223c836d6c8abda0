"""Records/s of trainyard.data.Loader against torch's DataLoader, at the same worker count.

Records are 10-100 KB "images" (a 4-byte height/width header and uint8 pixels);
each is decoded and lightly transformed (random 32x32 crop, random flip, float
scaling) into a tensor, and batches are stacked. Contenders, one fresh process
each, after one warm-up epoch (files are in the page cache for all of them):

  dataloader-files          DataLoader over one file per record, decode() per record
  dataloader-shards         DataLoader over the same records in trainyard shards
  trainyard-process         data.Loader, forked workers, decode_batch(): the same crops,
                            flips and scaling for a whole RecordBatch with numpy gathers
                            (checked at start to give decode()'s tensors for the same draws)
  trainyard-thread          the same with worker threads
  trainyard-process-mapped  trainyard-process with mapped=True: decode_batch reads the records
                            where they lie in the page cache (shards mapped into memory,
                            each record's crc32 checked there), no copy
  trainyard-thread-mapped   the same with worker threads
  trainyard-thread-records  data.Loader, worker threads, decode() per record and collate
  trainyard-process-prefetch2  trainyard-process with prefetch=2 per worker (DataLoader's
                            default depth, and data.Loader's before its process workers sized
                            their queue by bytes): shows what the deeper default queue buys
  trainyard-thread-prefetch4   (only with --only) trainyard-thread with 4 per worker, not 2

Every trainyard contender checks every record's crc32, as the format requires; it is computed
by trainyard.crc32's fastest implementation here (isa-l or libdeflate when installed, else
zlib), printed in the header.

Prints the median of --runs epochs per contender (times --rounds: the contenders take
turns, so a busy spell on a shared machine hits them all), the ratios the SDK aims for
(>= 3x files, >= 1.5x shards), the CPU time of the main process and its workers per
record (steadier than records/s where other work competes for the CPUs), peak RSS of
the main process and of a worker, and for trainyard's process workers the share of their
lives spent waiting for the loop's next request (median over rounds; warm-up epoch included).

The first table reads local files from the page cache, where opening a file costs a few
microseconds. Training data usually sits on a network filesystem or an object store, where
each open costs a round trip; the second table adds --file-latency-ms (default 2, NFS-like)
before every open: of each small file (dataloader-files) and of each shard (the shard
contenders, which open a few 64 MB shards). It is a sleep, so it costs no CPU, and it is the
same per open for every contender. All DataLoaders get the same worker count as data.Loader,
persistent_workers, the default prefetch_factor and pin_memory off (CPU only).

    /usr/bin/python3 bench/sdk_data_bench.py            # 4,000 records, ~2-3 min
    /usr/bin/python3 bench/sdk_data_bench.py --rounds 5 --file-latency-ms 0
    /usr/bin/python3 bench/sdk_data_bench.py --file-latency-ms 0   # local table only
    /usr/bin/python3 bench/sdk_data_bench.py --full     # 100,000 records (~5.5 GB)
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sdk", "python"))

CONTENDERS = ("dataloader-files", "dataloader-shards", "trainyard-process", "trainyard-thread",
              "trainyard-process-mapped", "trainyard-thread-mapped", "trainyard-thread-records",
              "trainyard-process-prefetch2")
EXTRA = ("trainyard-thread-prefetch4",)  # run only when named with --only


def make_records(root, n):
    """Writes n records as files and as shards under root (once; reused on later runs)."""
    from trainyard import data
    files, shards = os.path.join(root, "files"), os.path.join(root, "shards")
    if os.path.exists(os.path.join(shards, "index.json")):
        return files, shards
    os.makedirs(files, exist_ok=True)
    rng = random.Random(0)
    with data.ShardWriter(shards, shard_bytes=64 << 20) as w:
        for i in range(n):
            side = rng.randint(58, 182)  # 10-100 KB of 3-channel pixels
            rec = bytes([side, 0, side, 0]) + rng.randbytes(side * side * 3)
            with open(os.path.join(files, "%07d.bin" % i), "wb") as f:
                f.write(rec)
            w.write(rec)
    return files, shards


def decode(record):
    """Bytes -> a 3x32x32 float tensor: random crop, random flip, scaling."""
    h, w = record[0] | record[1] << 8, record[2] | record[3] << 8
    return decode_at(record, random.randrange(h - 32), random.randrange(w - 32),
                     random.random() < 0.5)


def decode_at(record, y, x, flip):
    import numpy
    import torch
    h, w = record[0] | record[1] << 8, record[2] | record[3] << 8
    img = numpy.frombuffer(record, dtype=numpy.uint8, offset=4).reshape(h, w, 3)
    crop = img[y:y + 32, x:x + 32]
    if flip:
        crop = crop[:, ::-1]
    return torch.from_numpy(numpy.ascontiguousarray(crop.transpose(2, 0, 1))).float() / 255.0


_rng = []


def decode_batch(batch):
    """What decode() and collate() make of the records of a data.RecordBatch, for all of
    them at once: the same crops, flips and scaling (the same distributions; the random
    draws come from numpy), done by numpy gathers over the batch's one buffer."""
    import numpy
    if not _rng:
        _rng.append(numpy.random.default_rng())
    buf = numpy.frombuffer(batch.data, dtype=numpy.uint8)
    off = numpy.array(batch.offsets, dtype=numpy.int64)
    h = buf[off].astype(numpy.int64) | buf[off + 1].astype(numpy.int64) << 8
    w = buf[off + 2].astype(numpy.int64) | buf[off + 3].astype(numpy.int64) << 8
    r = _rng[0].random((3, len(off)))
    return decode_batch_at(batch, (r[0] * (h - 32)).astype(numpy.int64),
                           (r[1] * (w - 32)).astype(numpy.int64), r[2] < 0.5)


def decode_batch_at(batch, y, x, flip):
    import numpy
    import torch
    from numpy.lib.stride_tricks import as_strided
    buf = numpy.frombuffer(batch.data, dtype=numpy.uint8)
    n = len(batch)
    off = numpy.array(batch.offsets, dtype=numpy.int64)
    w = buf[off + 2].astype(numpy.int64) | buf[off + 3].astype(numpy.int64) << 8
    # Every crop row is 32 pixels of 3 bytes at `rows`; viewed channel by channel, one
    # gather of all the rows gives (record, row, channel, pixel).
    first = off + 4 + (y * w + x) * 3
    rows = first[:, None] + numpy.arange(32)[None, :] * (w * 3)[:, None]
    planes = as_strided(buf, shape=(max(0, len(buf) - 95), 3, 32), strides=(1, 1, 3))
    crops = numpy.empty((n, 3, 32, 32), dtype=numpy.uint8)
    crops[...] = planes[rows].transpose(0, 2, 1, 3)
    # A flip reverses each row's 32 bytes: 4 uint64 in reverse order, each byte-swapped.
    words = crops.view(numpy.uint64)
    flipped = numpy.flatnonzero(flip)
    words[flipped] = words[flipped][..., ::-1].byteswap()
    # Scaled in numpy: the same float32 division as torch's, on this thread only (torch
    # would spread 200k elements over its intra-op threads, which spin while they wait).
    out = numpy.empty((n, 3, 32, 32), dtype=numpy.float32)
    numpy.divide(crops, numpy.float32(255.0), out=out, dtype=numpy.float32)
    return torch.from_numpy(out)


def check_decode_batch(shards):
    """decode_batch() gives what decode() and torch.stack give for the same draws."""
    import numpy
    import torch

    from trainyard import data
    ds = data.ShardDataset(shards)
    picks = list(range(0, len(ds), max(1, len(ds) // 50)))
    for mapped in (False, True):
        batch = ds.read_batch(picks, mapped=mapped)
        rng = numpy.random.default_rng(1)
        hw = [(r[0] | r[1] << 8, r[2] | r[3] << 8) for r in map(bytes, batch)]
        y = numpy.array([rng.integers(0, h - 32) for h, _ in hw])
        x = numpy.array([rng.integers(0, w - 32) for _, w in hw])
        flip = rng.random(len(picks)) < 0.5
        want = torch.stack([decode_at(bytes(r), int(y[k]), int(x[k]), bool(flip[k]))
                            for k, r in enumerate(batch)])
        got = decode_batch_at(batch, y, x, flip)
        if not torch.equal(got, want):
            raise SystemExit("decode_batch does not match decode (mapped=%s): the comparison "
                             "would be unfair" % mapped)


def add_open_latency(data_format, seconds):
    """Every shard open (ShardReader) waits `seconds` first, as on a network filesystem."""
    init = data_format.ShardReader.__init__

    def slow_init(self, *args, **kwargs):
        time.sleep(seconds)
        init(self, *args, **kwargs)
    data_format.ShardReader.__init__ = slow_init


def worker_pids(loader):
    """The worker processes of a DataLoader (persistent workers) or a data.Loader."""
    it = getattr(loader, "_iterator", None)
    procs = getattr(it, "_workers", None) or getattr(getattr(loader, "_pool", None), "procs",
                                                        None) or []
    return [p.pid for p in procs]


def cpu_seconds(pids):
    """User + system CPU seconds of these processes (all their threads), from /proc."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def anon_mb(pid):
    """The process's anonymous resident memory now (RssAnon): its own allocations, without
    the file pages it maps (page cache, which the kernel reclaims at need)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def timed_worker(main, out_dir):
    """data_loader._process_main, timing each worker's waits for its next request; on its way
    out it writes (seconds waited, seconds alive) to a file in out_dir."""
    def run(conn, fn, shm=None):
        start, waited = time.perf_counter(), [0.0]

        class Timed:
            def recv(self):
                t = time.perf_counter()
                try:
                    return conn.recv()
                finally:
                    waited[0] += time.perf_counter() - t

            def __getattr__(self, name):
                return getattr(conn, name)
        try:
            return main(Timed(), fn, shm)
        finally:
            with open(os.path.join(out_dir, str(os.getpid())), "w") as f:
                f.write("%f %f" % (waited[0], time.perf_counter() - start))
    return run


def worker_wait_share(out_dir):
    """The share of their lives the timed workers spent waiting for a request."""
    waited = alive = 0.0
    for name in os.listdir(out_dir):
        with open(os.path.join(out_dir, name)) as f:
            w, a = map(float, f.read().split())
        waited, alive = waited + w, alive + a
    return waited / alive if alive else None


def run_one(kind, files, shards, workers, batch, runs, latency_s=0.0):
    """In a fresh process: warm-up epoch, then `runs` timed epochs; prints JSON."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    from trainyard import data, data_format, data_loader
    if latency_s:
        add_open_latency(data_format, latency_s)
    wait_dir = tempfile.TemporaryDirectory(prefix="ty-data-bench-wait-")
    data_loader._process_main = timed_worker(data_loader._process_main, wait_dir.name)

    class Files(Dataset):
        def __init__(self):
            self.names = sorted(os.listdir(files))

        def __len__(self):
            return len(self.names)

        def __getitem__(self, i):
            if latency_s:
                time.sleep(latency_s)  # the open's round trip
            with open(os.path.join(files, self.names[i]), "rb") as f:
                return decode(f.read())

    class Shards(Dataset):
        def __init__(self):
            self.ds = data.ShardDataset(shards)

        def __len__(self):
            return len(self.ds)

        def __getitem__(self, i):
            return decode(self.ds[i])

    def collate(samples):
        return torch.stack(samples)

    if kind.startswith("dataloader"):
        ds = Files() if kind == "dataloader-files" else Shards()
        loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                            collate_fn=collate, persistent_workers=workers > 0,
                            pin_memory=False, drop_last=True)
    elif kind.endswith("-records"):  # the loader's default prefetch, as a user gets it
        loader = data.Loader(shards, batch, seed=0, decode=decode, collate=collate,
                             workers=workers, worker_type=kind.split("-")[1])
    else:
        loader = data.Loader(shards, batch, seed=0, decode_batch=decode_batch,
                             workers=workers, worker_type=kind.split("-")[1],
                             prefetch=(2 * workers if kind.endswith("-prefetch2") else
                                       4 * workers if kind.endswith("-prefetch4") else None),
                             mapped=kind.endswith("-mapped"))
    times, cpus = [], []
    count = 0
    for epoch in range(runs + 1):
        pids = [os.getpid()] + worker_pids(loader)
        c = cpu_seconds(pids)
        t = time.perf_counter()
        count = 0
        for b in loader:
            count += b.shape[0]
        if epoch:
            times.append(time.perf_counter() - t)
            cpus.append(cpu_seconds(pids) - c)
    main_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    main_anon = anon_mb(os.getpid())
    if hasattr(loader, "close"):
        loader.close()
    del loader
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    wait = worker_wait_share(wait_dir.name)
    wait_dir.cleanup()
    print(json.dumps({"kind": kind, "records": count, "times": times, "cpus": cpus,
                      "main_rss_mb": main_rss, "main_anon_mb": main_anon,
                      "worker_rss_mb": child_rss, "waits": [] if wait is None else [wait]}))


def table(args, n, files, shards, latency_ms):
    results = {}
    for _ in range(args.rounds):  # contenders take turns, so a busy spell hits them all
        for kind in args.only or CONTENDERS:
            out = subprocess.run([sys.executable, __file__, "--child",
                                  files + os.pathsep + shards, "--only", kind, "--workers",
                                  str(args.workers), "--batch", str(args.batch), "--runs",
                                  str(args.runs), "--file-latency-ms", str(latency_ms)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if kind in results:
                results[kind]["times"] += r["times"]
                results[kind]["cpus"] += r["cpus"]
                results[kind]["waits"] += r["waits"]
                for k in ("main_rss_mb", "main_anon_mb", "worker_rss_mb"):
                    results[kind][k] = max(results[kind][k], r[k])
            else:
                results[kind] = r
    base = {k: statistics.median(r["times"]) for k, r in results.items()}
    where = ("local files (page cache)" if not latency_ms else
             "%g ms per file or shard open (network filesystem stand-in)" % latency_ms)
    print("\n%d records, batch %d, %d workers, median of %d epochs (%d rounds of %d), %d CPUs, "
          "load average %.1f; %s" % (n, args.batch, args.workers, args.runs * args.rounds,
                                     args.rounds, args.runs, os.cpu_count(),
                                     os.getloadavg()[0], where))
    print("%-27s %10s %9s %9s %11s %12s %13s %14s %12s" % (
        "loader", "records/s", "vs files", "vs shards", "CPU us/rec", "main RSS MB",
        "main anon MB", "worker RSS MB", "worker wait"))
    for kind, r in results.items():
        rate = r["records"] / base[kind]

        def ratio(other):
            return ("%8.2fx" % (base[other] / base[kind])) if other in base else "%9s" % "-"
        cpu = 1e6 * statistics.median(r["cpus"]) / r["records"]
        wait = "%.0f%%" % (100 * statistics.median(r["waits"])) if r["waits"] else "-"
        print("%-27s %10.0f %9s %9s %11.1f %12.0f %13.0f %14.0f %12s" % (
            kind, rate, ratio("dataloader-files"), ratio("dataloader-shards"), cpu,
            r["main_rss_mb"], r["main_anon_mb"], r["worker_rss_mb"], wait))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=4000)
    ap.add_argument("--full", action="store_true", help="100,000 records (about 5.5 GB)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3, help="timed epochs per contender and round")
    ap.add_argument("--rounds", type=int, default=1,
                    help="times each contender runs, in turns (fresh process each)")
    ap.add_argument("--dir", help="where to keep the generated data (default: a temp dir)")
    ap.add_argument("--file-latency-ms", type=float, default=2.0,
                    help="per-open delay for the second table (0: local table only)")
    ap.add_argument("--only", choices=CONTENDERS + EXTRA, action="append")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = 100000 if args.full else args.records
    if args.child:
        files, shards = args.child.split(os.pathsep)
        run_one(args.only[0], files, shards, args.workers, args.batch, args.runs,
                args.file_latency_ms / 1000.0)
        return
    tmp = None
    root = args.dir
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="ty-data-bench-")
        root = tmp.name
    t = time.perf_counter()
    files, shards = make_records(root, n)
    from trainyard import crc32
    print("data: %d records in %s (%.1f s to write); crc32 by %s" % (
        n, root, time.perf_counter() - t, crc32.IMPLEMENTATION))
    check_decode_batch(shards)
    latencies = [0.0] + ([args.file_latency_ms] if args.file_latency_ms > 0 else [])
    for latency in latencies:
        table(args, n, files, shards, latency)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
