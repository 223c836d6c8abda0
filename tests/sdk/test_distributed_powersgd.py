"""trainyard.distributed's PowerSGD is torch's powerSGD_hook, unchanged but for a small
orthogonalization epsilon (a layer with an all-zero gradient made NaNs with torch's default 0,
checked below): error feedback and warm start are on, and the counting, timing and one-bucket-at-a-time wrapping train bit for
bit like the bare hook on a model of two buckets.

The wrapping is needed on gloo: powerSGD_hook's callbacks run on gloo's worker threads (2 by
default) and block there on their next all-reduce, so two buckets in flight can take both
threads and deadlock even in one process (the bare hook hung in 3 of 8 such runs). The bare
hook here gets a group of its own with 8 threads; one process, so order cannot differ."""

import json
import subprocess
import sys
import unittest

import sdk_test_util as util

TIMEOUT_S = 120

_CHILD = r"""
import datetime, hashlib, json
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
from trainyard import distributed

torch.set_num_threads(1)
distributed.init(timeout_s=60)

def train(bare):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 64))  # 1.3 MB: DDP makes two buckets
    if bare:
        opts = dist.ProcessGroupGloo._Options()
        opts._devices = [dist.ProcessGroupGloo.create_default_device()]
        opts._threads, opts._timeout = 8, datetime.timedelta(seconds=60)
        group = dist.ProcessGroupGloo(dist.HashStore(), 0, 1, opts)
        net = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
        state = powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=2,
                                            start_powerSGD_iter=3, min_compression_rate=2,
                                            random_seed=0,
                                            orthogonalization_epsilon=distributed.POWERSGD_EPSILON)
        net.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    else:
        net = distributed.wrap(model, compression="powersgd", powersgd_rank=2,
                               powersgd_start_iter=3)
        state = net._state
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    for _ in range(12):
        x = torch.randn(8, 64, generator=g)
        (net(x) - x.flip(1)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    h = hashlib.sha256()
    for _, t in sorted(model.state_dict().items()):
        h.update(t.numpy().tobytes())
    return {"digest": h.hexdigest(), "buckets": len(state.error_dict),
            "error_feedback": state.use_error_feedback, "warm_start": state.warm_start,
            "compressed": state.total_numel_after_compression,
            "uncompressed": state.total_numel_before_compression}

print(json.dumps({"trainyard": train(False), "bare": train(True)}), flush=True)
# The result is out. torch 1.13's gloo groups can abort at interpreter exit ("terminate called
# without an active exception": a worker thread still joinable when the group is destroyed
# during teardown; seen once in a loaded CI run), which says nothing about the training above.
import os
os._exit(0)
"""


@unittest.skipUnless(util.have_torch(), "needs torch")
class PowerSGDAsTorch(unittest.TestCase):
    def test_wrapped_hook_trains_bit_for_bit_like_the_bare_hook(self):
        out = subprocess.run([sys.executable, "-c", _CHILD], env=util.child_env(),
                             capture_output=True, text=True, timeout=TIMEOUT_S)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        r = json.loads(out.stdout.strip().splitlines()[-1])
        ty, bare = r["trainyard"], r["bare"]
        self.assertEqual(ty["buckets"], 2, r)  # the serialized path waits on a bucket
        self.assertTrue(ty["error_feedback"] and ty["warm_start"], r)
        self.assertGreater(ty["uncompressed"], 10 * ty["compressed"], r)  # it did compress
        self.assertEqual(ty["digest"], bare["digest"], r)
        self.assertEqual(ty["compressed"], bare["compressed"], r)


_ZERO_GRAD_CHILD = r"""
import json
import torch
from trainyard import distributed

torch.set_num_threads(1)
distributed.init(timeout_s=60)

class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.gate = torch.nn.Linear(64, 64), torch.nn.Linear(64, 64)

    def forward(self, x):  # the gate's weight gets an all-zero gradient every step
        return self.a(x) + 0.0 * self.gate(x)

torch.manual_seed(0)
model = Gated()
net = distributed.wrap(model, compression="powersgd", powersgd_rank=2, powersgd_start_iter=2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for _ in range(6):
    loss = net(torch.randn(8, 64)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    losses.append(loss.item())
finite = all(bool(torch.isfinite(p).all()) for p in model.parameters())
print(json.dumps({"losses": losses, "finite": finite,
                  "compressed": net._state.total_numel_after_compression}), flush=True)
import os
os._exit(0)
"""


@unittest.skipUnless(util.have_torch(), "needs torch")
class PowerSGDZeroGradient(unittest.TestCase):
    def test_a_layer_with_an_all_zero_gradient_stays_finite(self):
        # With torch's default epsilon 0 the gate's weight turned NaN at the first compressed
        # step and the loss one step later.
        out = subprocess.run([sys.executable, "-c", _ZERO_GRAD_CHILD], env=util.child_env(),
                             capture_output=True, text=True, timeout=TIMEOUT_S)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        r = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertGreater(r["compressed"], 0, r)
        self.assertTrue(r["finite"], r)
        self.assertTrue(all(l == l for l in r["losses"]), r)


if __name__ == "__main__":
    unittest.main()
