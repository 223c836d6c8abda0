"""How long the Python SDK's checkpoints take, next to a plain torch.save, in one run.

For each state size (a dict of float32 tensors of up to 64 MB each) it measures:

  torch.save     baseline: torch.save(state, file), flush, fsync of the file
  sync           CheckpointManager.save(step, torch_state.state_files(...,
                 buffers=...)): the snapshot (one copy of each tensor into reused
                 host memory), writing and SHA-256 streamed from it, fsync,
                 manifest, directory fsyncs and the rename (the commit)
  bg stall       the same with background=True: how long the caller is blocked
                 (the snapshot; writing and hashing move to a thread)
  bg total       from the call until wait() returns (committed), the caller idle
  first stall    the background stall of a job's first save, whose snapshot
                 memory is fresh (later saves reuse it: sync and bg rows are
                 such later saves, after one untimed warm-up save)
  notice         from the notice (notice file written atomically, then SIGTERM to
                 this process, as the server does) to a committed checkpoint: a loop
                 of 10 ms steps checks Job.should_stop() after each step, then saves
                 synchronously, as examples/train/toy_train.py does

Each repetition runs the modes one after another on a fresh checkpoint directory in
$TMPDIR (or /tmp), which is deleted afterwards; the table shows medians of the
repetitions, and the 1-minute load average after each size (other work on the machine
shows there). The target: the background stall is at most 10% of the synchronous save.

    PYTHONPATH=sdk/python python3 bench/sdk_checkpoint_bench.py            # 100 MB, 500 MB, 2 GB
    PYTHONPATH=sdk/python python3 bench/sdk_checkpoint_bench.py --quick    # 10 MB, 50 MB
    PYTHONPATH=sdk/python python3 bench/sdk_checkpoint_bench.py --sizes 100 --reps 5
    PYTHONPATH=sdk/python python3 bench/sdk_checkpoint_bench.py --only load --sizes 500

Loading (its own table, before the saving one): the state is written once with
torch.save and once with the SDK, then loaded into a model of the same shape, from
the page cache:

  torch.load       baseline: torch.load(file) and load_state_dict (a copy into the
                   model's tensors)
  verified         torch_state.restore(manager, model=...): the newest checkpoint,
                   every file checked while it is read (its 8 MiB chunks' CRC-32s
                   from the manifest, chunks on several threads), the tensors views
                   of the memory read into, then load_state_dict
  sha256 manifest  the same from a checkpoint whose manifest has SHA-256s only (as
                   written before chunk CRCs): each file hashed while it is read
  latest+restore   manager.latest() (hashes every file) then restore(checkpoint):
                   the file is read twice, hashed once
  unverified       latest(verify=False) and restore(..., verify=False): no hashes
  peak             how far the process's peak RSS rose during the load (VmHWM,
                   reset before each load through /proc/self/clear_refs), i.e. the
                   memory the load needed beyond the model's own tensors
"""

import argparse
import gc
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time

import torch

import trainyard
from trainyard import torch_state

TENSOR_MB = 64
STEP_S = 0.01  # the notice loop's stand-in for a training step


class Weights:
    """Stands in for a model: state_dict() for saving; load_state_dict() copies into
    the model's own tensors, as nn.Module's does."""

    def __init__(self, tensors):
        self.tensors = tensors

    def state_dict(self):
        return self.tensors

    def load_state_dict(self, sd, strict=True):
        with torch.no_grad():
            for k, t in self.tensors.items():
                t.copy_(sd[k])


def make_state(mb):
    """{name: float32 tensor}, TENSOR_MB per tensor, mb megabytes (2**20 bytes) in all."""
    g = torch.Generator().manual_seed(0)
    state, left, i = {}, mb << 20, 0
    while left > 0:
        n = min(left, TENSOR_MB << 20)
        state["layer%03d.weight" % i] = torch.randn(n // 4, generator=g)
        left -= n
        i += 1
    return state


def fresh_dir(root, tag):
    return tempfile.mkdtemp(prefix="ckpt-%s-" % tag, dir=root)


def run_torch_save(state, root):
    d = fresh_dir(root, "torch")
    try:
        t0 = time.perf_counter()
        with open(os.path.join(d, "state.pt"), "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        return {"torch": time.perf_counter() - t0}
    finally:
        shutil.rmtree(d)


def run_sync(state, root):
    d = fresh_dir(root, "sync")
    try:
        mgr = trainyard.CheckpointManager(d, keep_last=3)
        model = Weights(state)
        buffers = torch_state.SnapshotBuffers()
        mgr.save(1, torch_state.state_files(model=model, step=1, buffers=buffers))  # warm-up
        t0 = time.perf_counter()
        files = torch_state.state_files(model=model, step=2, buffers=buffers)
        t_snap = time.perf_counter() - t0
        mgr.save(2, files)
        total = time.perf_counter() - t0
        del files
        assert mgr.latest(verify=False).step == 2
        return {"snapshot": t_snap, "sync": total}
    finally:
        shutil.rmtree(d)


def run_background(state, root):
    d = fresh_dir(root, "bg")
    try:
        mgr = trainyard.CheckpointManager(d, keep_last=3)
        model = Weights(state)
        buffers = torch_state.SnapshotBuffers()
        t0 = time.perf_counter()
        mgr.save(1, torch_state.state_files(model=model, step=1, buffers=buffers),
                 background=True)
        first = time.perf_counter() - t0
        mgr.wait()
        t0 = time.perf_counter()
        mgr.save(2, torch_state.state_files(model=model, step=2, buffers=buffers),
                 background=True)
        stall = time.perf_counter() - t0
        mgr.wait()
        total = time.perf_counter() - t0
        assert mgr.latest(verify=False).step == 2
        return {"stall": stall, "bg_total": total, "first_stall": first}
    finally:
        shutil.rmtree(d)


def run_notice(state, root):
    d = fresh_dir(root, "notice")
    notice = os.path.join(d, "preempt_notice")
    ckpt_dir = os.path.join(d, "ckpt")
    old = signal.getsignal(signal.SIGTERM)
    try:
        job = trainyard.Job(env={"TRAINYARD_PREEMPT_NOTICE": notice},
                            signals=(signal.SIGTERM,))
        mgr = trainyard.CheckpointManager(ckpt_dir, keep_last=3, job=job)
        model = Weights(state)
        buffers = torch_state.SnapshotBuffers()
        mgr.save(0, torch_state.state_files(model=model, step=0, buffers=buffers))  # periodic
        sent = {}

        def give_notice():  # what the server does: the file (atomically), then the signal
            sent["t"] = time.perf_counter()
            tmp = notice + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps({"reason": "benchmark", "graceSeconds": 30}) + "\n")
            os.rename(tmp, notice)
            os.kill(os.getpid(), signal.SIGTERM)

        timer = threading.Timer(0.05, give_notice)
        timer.start()
        step = 0
        while True:
            time.sleep(STEP_S)  # a training step
            step += 1
            if job.should_stop():
                mgr.save(step, torch_state.state_files(model=model, step=step, buffers=buffers))
                break
        done = time.perf_counter()
        timer.join()
        assert mgr.latest(verify=False).step == step
        return {"notice": done - sent["t"]}
    finally:
        signal.signal(signal.SIGTERM, old)
        shutil.rmtree(d)


MODES = (run_torch_save, run_sync, run_background, run_notice)


def _rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def _reset_peak():
    """Resets the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0);
    False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def load_modes(state, root):
    """Writes the state once with torch.save and once with the SDK, then returns the
    load modes: each loads it into a model of the same shape, from the page cache."""
    d = fresh_dir(root, "load")
    pt = os.path.join(d, "state.pt")
    with open(pt, "wb") as f:
        torch.save(state, f)
    mgr = trainyard.CheckpointManager(os.path.join(d, "ckpt"), keep_last=1)
    mgr.save(1, torch_state.state_files(model=Weights(state), step=1))
    old = trainyard.CheckpointManager(os.path.join(d, "old"), keep_last=1)
    old.save(1, torch_state.state_files(model=Weights(state), step=1))
    manifest = os.path.join(old.path_for(1), "MANIFEST.json")
    with open(manifest) as f:
        m = json.load(f)
    for e in m["files"]:
        e.pop("chunk_size", None)
        e.pop("chunk_crc32", None)
    with open(manifest, "w") as f:
        json.dump(m, f)
    target = Weights({k: torch.empty_like(v) for k, v in state.items()})

    def torch_load():
        target.load_state_dict(torch.load(pt))

    def verified_one_pass():
        assert torch_state.restore(mgr, model=target)["step"] == 1

    def verified_sha256():
        assert torch_state.restore(old, model=target)["step"] == 1

    def latest_then_restore():
        torch_state.restore(mgr.latest(), model=target)

    def unverified():
        torch_state.restore(mgr.latest(verify=False), model=target, verify=False)

    modes = {"torch.load": torch_load, "verified": verified_one_pass,
             "sha256 manifest": verified_sha256, "latest+restore": latest_then_restore,
             "unverified": unverified}
    return d, target, modes


def run_loads(state, root, reps):
    """{mode: (median seconds, median peak RSS growth in bytes or None)}."""
    d, target, modes = load_modes(state, root)
    try:
        for fn in modes.values():  # warm the page cache and the allocator
            fn()
        times = {m: [] for m in modes}
        peaks = {m: [] for m in modes}
        for rep in range(reps):
            for name, fn in modes.items():
                gc.collect()
                can_peak = _reset_peak()
                before = _rss_kib("VmRSS")
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
                if can_peak:
                    peaks[name].append((_rss_kib("VmHWM") - before) * 1024)
        out = {m: (statistics.median(times[m]),
                   statistics.median(peaks[m]) if peaks[m] else None) for m in modes}
        out["load"] = os.getloadavg()[0]
        return out
    finally:
        shutil.rmtree(d)


def fmt_mb(x):
    return "n/a" if x is None else "%.0f MB" % (x / (1 << 20))


def print_load_table(rows, reps):
    print()
    print("Loading into a model of the same shape, files in the page cache (peak: growth of the "
          "process's peak RSS during the load, VmHWM after a reset)")
    print()
    print("| state | torch.load + load_state_dict | restore(manager): verified, one pass "
          "| ÷ torch.load | the same, SHA-256-only manifest | ÷ torch.load "
          "| latest() + restore(ck) | ÷ torch.load | unverified restore "
          "| ÷ torch.load | peak: torch.load | peak: verified | peak: unverified "
          "| load avg (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mb, r in rows:
        base = r["torch.load"][0]
        print("| %s | %s | %s | %.2f× | %s | %.2f× | %s | %.2f× | %s | %.2f× "
              "| %s | %s | %s | %.1f |" % (
            "%d MB" % mb if mb < 1024 else "%g GB" % (mb / 1024), fmt_s(base),
            fmt_s(r["verified"][0]), r["verified"][0] / base,
            fmt_s(r["sha256 manifest"][0]), r["sha256 manifest"][0] / base,
            fmt_s(r["latest+restore"][0]), r["latest+restore"][0] / base,
            fmt_s(r["unverified"][0]), r["unverified"][0] / base,
            fmt_mb(r["torch.load"][1]), fmt_mb(r["verified"][1]), fmt_mb(r["unverified"][1]),
            r["load"]))
    print("\nmedians of %d repetitions per size" % reps)


def fmt_s(x):
    return "%.2f s" % x if x >= 1 else "%.0f ms" % (x * 1000)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 and 50 MB only")
    ap.add_argument("--sizes", type=int, nargs="+", help="state sizes in MB")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per size (median)")
    ap.add_argument("--only", choices=("save", "load"), help="run one section only")
    args = ap.parse_args()
    sizes = args.sizes or ([10, 50] if args.quick else [100, 500, 2048])
    root = os.environ.get("TMPDIR") or tempfile.gettempdir()
    print("# %s, python %s, torch %s, %d CPUs, checkpoints under %s"
          % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), platform.python_version(),
             torch.__version__, os.cpu_count(), root), flush=True)

    rows, load_rows = [], []
    for mb in sizes:
        state = make_state(mb)
        if args.only != "save":
            load_rows.append((mb, run_loads(state, root, args.reps)))
            print("  %d MB load: %s" % (mb, ", ".join("%s %s" % (k, fmt_s(v[0])) for k, v in
                                                      load_rows[-1][1].items() if k != "load")),
                  file=sys.stderr, flush=True)
        if args.only == "load":
            del state
            gc.collect()
            continue
        runs = []
        for rep in range(args.reps):
            r = {}
            for mode in MODES:
                gc.collect()
                r.update(mode(state, root))
            runs.append(r)
            print("  %d MB rep %d: %s" % (mb, rep + 1, ", ".join(
                "%s %s" % (k, fmt_s(v)) for k, v in r.items())), file=sys.stderr, flush=True)
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        med["mb"] = mb
        med["load"] = os.getloadavg()[0]
        rows.append(med)
        del state
        gc.collect()

    if load_rows:
        print_load_table(load_rows, args.reps)
    if not rows:
        return
    print()
    print("| state | torch.save + fsync (baseline) | SDK sync save | sync ÷ torch.save "
          "| snapshot (part of sync) | background stall | background total "
          "| stall ÷ sync | stall <= 10% of sync | first save's stall (fresh memory) "
          "| notice to committed | load avg (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in rows:
        ratio = m["stall"] / m["sync"]
        print("| %s | %s | %s | %.2f× | %s | %s | %s | %.0f%% | %s | %s | %s | %.1f |" % (
            "%d MB" % m["mb"] if m["mb"] < 1024 else "%g GB" % (m["mb"] / 1024),
            fmt_s(m["torch"]), fmt_s(m["sync"]), m["sync"] / m["torch"], fmt_s(m["snapshot"]),
            fmt_s(m["stall"]), fmt_s(m["bg_total"]), 100 * ratio,
            "met" if ratio <= 0.10 else "missed", fmt_s(m["first_stall"]), fmt_s(m["notice"]),
            m["load"]))
    print("\nmedians of %d repetitions per size" % args.reps)


if __name__ == "__main__":
    main()
