"""A job that runs trainyard.tune on a small model (CPU, a memory budget), then reports 60
steps with the chosen precision: what `trainyard show` and `trainyard doctor` must then show."""
import time

import torch

import trainyard
from trainyard import tune

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
batch = (torch.randn(4, 64), torch.randint(0, 8, (4,)))
plan = tune.tune(model, lambda p: torch.optim.SGD(p, lr=0.1), batch, global_batch=64,
                 memory_budget=8 << 20, time_steps=2)
print(plan.summary(), flush=True)
for step in range(1, 61):
    trainyard.report(step=step, loss=1.0 / step, step_time_s=0.01, data_wait_s=0.0,
                     dtype=plan.precision)
    time.sleep(0.005)
