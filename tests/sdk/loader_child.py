"""A training loop over a torch DataLoader with two worker processes; test_loader_notice.py
sends SIGTERM to its whole process group, as the server's notice does.

argv: CKPT_DIR MODE. MODE "shielded" passes trainyard.worker_init_fn to the DataLoader,
"plain" does not. Prints "step N" per step, "stopped N" after the checkpoint of step N
is committed, then exits 75.
"""

import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import trainyard


class Slow(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.tensor([float(i)])


def main():
    directory, mode = sys.argv[1], sys.argv[2]
    job = trainyard.job()
    mgr = trainyard.CheckpointManager(directory, keep_last=1)
    init = trainyard.worker_init_fn if mode == "shielded" else None
    loader = DataLoader(Slow(), batch_size=4, num_workers=2, worker_init_fn=init)
    step = 0
    for batch in loader:
        time.sleep(0.01)  # the step
        step += 1
        print("step", step, flush=True)
        if job.should_stop():
            time.sleep(0.5)  # a slow save: the workers must still be alive after it
            mgr.save(step, {"step": b"%d" % step, "sum": b"%r" % float(batch.sum())})
            print("stopped", step, flush=True)
            job.exit_preempted()
    print("done", step, flush=True)


if __name__ == "__main__":
    main()
