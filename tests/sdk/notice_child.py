"""A stdlib-only training loop that follows the job contract; driven by test_job.py."""

import json
import sys
import time

import trainyard


def main():
    total = int(sys.argv[1])
    job = trainyard.job()
    mgr = trainyard.CheckpointManager(keep_last=2)
    ck = mgr.latest()
    step = json.loads(ck.read("state.json"))["step"] if ck else 0
    print("start", step, job.attempt, flush=True)
    while step < total:
        time.sleep(0.005)  # the "work" of one step
        step += 1
        trainyard.report(step=step, samples=8, loss=1.0 / step, step_time_s=0.005)
        print("step", step, flush=True)
        if step % 20 == 0:
            mgr.save(step, {"state.json": json.dumps({"step": step}).encode()}, background=True)
        if job.should_stop():  # at a step boundary: the state is consistent here
            mgr.save(step, {"state.json": json.dumps({"step": step}).encode()})
            n = job.notice()
            print("stopped", step, json.dumps({
                "reason": n.reason if n else None,
                "deadline": job.deadline.isoformat() if job.deadline else None,
                "signal": job.stop_signal}), flush=True)
            job.exit_preempted()
    mgr.wait()
    print("done", step, flush=True)


if __name__ == "__main__":
    main()
