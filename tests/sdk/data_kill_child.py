"""A training loop over trainyard.data that test_data_kill.py kills at random moments.

argv: DATASET_DIR CKPT_DIR MODE EPOCHS. MODE "shards": data.Loader over the
shard dataset with two forked workers; "torch": data.resumable_dataloader over
a torch Dataset with two DataLoader workers and random augmentation, saved with
torch_state. Resumes from the newest checkpoint, saves one every 3 steps and on
a notice (then exits 75). Prints "resumed STEP", "workers PID...", one
"step N SAMPLES" line per step (after the step) and "done N" at the end.
"""

import json
import sys
import time

import trainyard
from trainyard import data

BATCH = 8
SEED = 7


def shard_loader(directory):
    return data.Loader(data.ShardDataset(directory), BATCH, seed=SEED, shuffle_buffer=64,
                       workers=2, decode=lambda r: r.decode(), collate=" ".join)


def torch_loader():
    import random

    import torch

    class Augmented(torch.utils.data.Dataset):
        def __len__(self):
            return 150

        def __getitem__(self, i):
            noise = torch.rand(2, dtype=torch.float64)
            return torch.tensor([float(i), random.random(), noise[0], noise[1]],
                                dtype=torch.float64)

    return data.resumable_dataloader(Augmented(), BATCH, seed=SEED, num_workers=2,
                                     persistent_workers=True)


def describe(mode, batch):
    if mode == "shards":
        return batch.replace(" ", ",")
    return ",".join(v.hex() for v in batch.flatten().tolist())  # exact bits


def main():
    directory, ckpt_dir, mode, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    job = trainyard.job()
    mgr = trainyard.CheckpointManager(ckpt_dir, keep_last=2)
    loader = shard_loader(directory) if mode == "shards" else torch_loader()
    step = 0
    ck = mgr.latest()
    if ck is not None:
        if mode == "shards":
            doc = json.loads(ck.read("state.json"))
        else:
            from trainyard import torch_state
            doc = torch_state.restore(ck)
        loader.load(doc["data"])
        step = doc["step"]
    print("resumed", step, flush=True)
    total = epochs * loader.batches_per_epoch

    def save():
        if mode == "shards":
            files = {"state.json": json.dumps({"step": step, "data": loader.state()}).encode()}
        else:
            from trainyard import torch_state
            files = torch_state.state_files(step=step, data=loader.state())
        mgr.save(step, files)

    workers = None
    while step < total:
        for batch in loader:
            time.sleep(0.004)  # the step
            step += 1
            if workers is None:
                workers = worker_pids(loader)
                print("workers", *workers, flush=True)
            print("step", step, describe(mode, batch), flush=True)
            if job.should_stop():
                save()
                print("stopped", step, flush=True)
                job.exit_preempted()
            if step % 3 == 0:
                save()
            if step == total:
                break
    print("done", step, flush=True)


def worker_pids(loader):
    if hasattr(loader, "_pool"):
        return [p.pid for p in loader._pool.procs]
    it = getattr(loader.dataloader, "_iterator", None)
    return [w.pid for w in getattr(it, "_workers", [])]


if __name__ == "__main__":
    main()
