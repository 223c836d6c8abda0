"""A stand-in training loop for tests/cli/progress_top_test.py: reports a step every
--step-delay seconds through the SDK (with total_steps, so the server can give an ETA) and
flushes each line, so the server sees progress at once."""
import argparse
import time

import trainyard
from trainyard import metrics

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--step-delay", type=float, default=0.05)
parser.add_argument("--samples", type=int, default=16)
args = parser.parse_args()
for step in range(1, args.steps + 1):
    time.sleep(args.step_delay)
    trainyard.report(step=step, samples=args.samples, loss=1.0 / step,
                     step_time_s=args.step_delay, total_steps=args.steps)
    metrics.flush()
print("done at step", args.steps, flush=True)
