"""One rank of test_distributed_powersgd_ranks.py: the same small model trained on 2 gloo ranks
with torch's own powerSGD_hook and with trainyard.distributed's PowerSGD, per configuration.

Each rank draws its own batches, so the ranks' gradients and error-feedback buffers differ.
Writes, per configuration and hook, a SHA-256 of the final parameters and PowerSGD's state
counters to --out (JSON).

Configurations (--configs):
  one-bucket   every gradient in one DDP bucket: torch's hook is registered bare, as its
               documentation shows, with nothing around it.
  buckets      small buckets (several per step, rebuilt after step 1 because the layers are
               registered in the reverse of their use): torch's hook with one wait on the
               previous bucket's future before each call, which gloo needs (two buckets in
               flight can start their collectives in another order on each rank); it changes
               no arithmetic.
  rank1-late   rank 1, PowerSGD from step 5, min_compression_rate 1.5, one bucket.
  plain        compression "none" (trainyard's all-reduce hook), to check that PowerSGD
               changed the result.
"""

import argparse
import hashlib
import json
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

from trainyard import distributed

STEPS, BATCH = 10, 16
CONFIGS = {  # name: (width, PowerSGD rank, start iter, min compression rate, bucket_cap_mb,
    #                  serialize)
    "one-bucket": (256, 2, 3, 2, 25, False),
    "buckets": (512, 2, 3, 2, 0.02, True),
    "rank1-late": (256, 1, 5, 1.5, 25, False),
}


class Net(torch.nn.Module):
    """A conv (4-D weight, compressed as out x in*kh*kw), linears, a LayerNorm and biases
    (1-D, sent uncompressed); registered in the reverse of their use. Width 256: 0.4 MB, one
    bucket in every layout; width 512: 1.3 MB, more than DDP's first bucket after its rebuild
    (1 MB), so a small cap gives several buckets in both layouts."""

    def __init__(self, width):
        super().__init__()
        self.head = torch.nn.Linear(width, 10)
        self.norm = torch.nn.LayerNorm(width)
        self.mid = torch.nn.Linear(width, width)
        self.proj = torch.nn.Linear(8 * 4 * 4, width)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = torch.nn.functional.avg_pool2d(h, 2).flatten(1)
        h = torch.relu(self.proj(h))
        return self.head(self.norm(torch.relu(self.mid(h))))


def digest(model):
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def torch_ddp(model, prank, start, rate, cap, serialize):
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap)
    state = powerSGD_hook.PowerSGDState(
        process_group=None, matrix_approximation_rank=prank, start_powerSGD_iter=start,
        min_compression_rate=rate, use_error_feedback=True, warm_start=True,
        orthogonalization_epsilon=distributed.POWERSGD_EPSILON, random_seed=0)
    if not serialize:
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
        return ddp, state
    previous = [None]

    def one_at_a_time(st, bucket):
        if previous[0] is not None:
            previous[0].wait()
        previous[0] = powerSGD_hook.powerSGD_hook(st, bucket)
        return previous[0]
    ddp.register_comm_hook(state, one_at_a_time)
    return ddp, state


def train(rank, hook, width, prank, start, rate, cap, serialize, compression="powersgd"):
    torch.manual_seed(0)
    model = Net(width)
    if hook == "torch":
        net, state = torch_ddp(model, prank, start, rate, cap, serialize)
    else:
        net = distributed.wrap(model, compression=compression, powersgd_rank=prank,
                               powersgd_start_iter=start, powersgd_min_compression_rate=rate,
                               powersgd_seed=0, bucket_cap_mb=cap)
        state = net._state
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    losses = []
    for _ in range(STEPS):
        x = torch.randn(BATCH, 3, 8, 8, generator=g)
        y = torch.randint(0, 10, (BATCH,), generator=g)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    out = {"digest": digest(model), "losses": losses}
    if compression == "powersgd":
        out.update(iter=state.iter, error_feedback=state.use_error_feedback,
                   warm_start=state.warm_start, epsilon=state.orthogonalization_epsilon,
                   buckets=len(state.error_dict),
                   compressed=state.total_numel_after_compression,
                   uncompressed=state.total_numel_before_compression)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default="one-bucket,buckets,rank1-late,plain")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ctx = distributed.init(timeout_s=60)
    result = {}
    for name in args.configs.split(","):
        if name == "plain":
            result[name] = {"trainyard": train(ctx.rank, "trainyard", 256, 2, 3, 2, 25, False,
                                               compression="none")}
            continue
        cfg = CONFIGS[name]
        result[name] = {hook: train(ctx.rank, hook, *cfg) for hook in ("torch", "trainyard")}
        ctx.barrier()
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(args.out + ".tmp", args.out)
    ctx.close()
    # The result is out. torch 1.13's gloo groups can abort at interpreter exit (a worker
    # thread still joinable at teardown; see test_distributed_powersgd.py), which would say
    # nothing about the training above.
    os._exit(0)


if __name__ == "__main__":
    main()
