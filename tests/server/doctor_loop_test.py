"""The doctor loop end to end: examples/jobs/tuned-train.yaml (examples/train/tuned_train.py, 2
workers) as real jobs on the real server with simulated GPUs. A run whose decode is slow is
found input-bound, with the trainyard.data.Loader line and trainyard.tune's choice; the run with
the delay gone and more loader workers is not, and its data wait share is lower. A run
preempted by a high-priority job exits 75 and its next attempt trains on the same samples to
the same losses as the run that never stopped. Needs python3-torch; prints "skipped:" without.
Usage: doctor_loop_test.py PATH/TO/trainyard"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SPEC = os.path.join(harness.REPO, "examples", "jobs", "tuned-train.yaml")
PYTHON = "/usr/bin/python3"
# 60 steps: the doctor's step rules need 50 metric lines.
COMMON = ["--steps", "60", "--global-batch", "64", "--memory-budget-mib", "16",
          "--compression", "powersgd"]
SLOW = COMMON + ["--decode-delay-ms", "3", "--loader-workers", "1"]
FIXED = COMMON + ["--decode-delay-ms", "0", "--loader-workers", "4", "--prefetch", "16"]
LOADER_FIX = "with trainyard: loader = trainyard.data.Loader("


def have_torch():
    probe = subprocess.run([PYTHON, "-c", "import torch, numpy"], capture_output=True)
    return probe.returncode == 0


def spec_text(name, args):
    """The example spec with this checkout's path, another name and the test's args."""
    with open(SPEC) as f:
        text = f.read().replace("/path/to/trainyard", harness.REPO)
    text = re.sub(r"(?m)^  name: tuned-train$", "  name: " + name, text)
    text, n = re.subn(r"(?m)^    args: .*\n", "    args: %s\n" % json.dumps(args), text)
    assert n == 1, "examples/jobs/tuned-train.yaml has no one-line args: to replace"
    return text


def read_metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class DoctorLoop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Two GPUs: the 2-worker job holds both, so a high-priority job must preempt it.
        cls.s = harness.Server(gpus="sim:2xH100-80GB", config=harness.FAST + (
            "policy: priority\nminRuntimeSeconds: 0\n")).start()
        cls.runs = {}

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def run_dir(self, jid, attempt, rank=0):
        return os.path.join(self.s.state_dir, "jobs", str(jid), "attempt-%d" % attempt,
                            "rank-%d" % rank)

    def submit(self, name, args):
        r = self.s.cli("submit", "-q", "-f", "-", stdin=spec_text(name, args))
        return int(r.stdout.strip())

    def finished(self, jid):
        job = self.s.wait(jid, timeout=150)
        if job["state"] != "succeeded":
            logs = "\n".join(self.s.logs(jid, "--rank", str(r)) for r in (0, 1))
            self.fail("job %d %s:\n%s" % (jid, job["state"], logs[-4000:]))
        return job

    def run_once(self, name, args):
        """One finished job per name (both tests use the fixed run): its id and metrics path."""
        if name not in self.runs:
            jid = self.submit(name, args)
            self.finished(jid)
            self.runs[name] = (jid, os.path.join(self.run_dir(jid, 1), "metrics.jsonl"))
        return self.runs[name]

    def doctor(self, *args):
        return self.s.cli("doctor", *args).stdout

    def doctor_json(self, metrics):
        return json.loads(self.doctor("--metrics", metrics, "-o", "json"))

    def test_doctor_finds_the_starved_loader_and_the_fix_clears_it(self):
        # 1. A decode of 3 ms per record with one loader worker: the step waits on data.
        slow_id, slow_metrics = self.run_once("tuned-slow", SLOW)
        text = self.doctor("--metrics", slow_metrics)
        print("--- trainyard doctor --metrics (slow decode)\n" + text, flush=True)
        self.assertIn("[warning] input-bound", text)
        self.assertIn(LOADER_FIX, text)
        self.assertRegex(text, r"tuned by trainyard\.tune: micro-batch \d+ x \d+ accumulation "
                               r"x 2 rank\(s\) = 64 \(target 64\)")
        by_server = self.doctor(str(slow_id))
        print("--- trainyard doctor %d\n%s" % (slow_id, by_server), flush=True)
        self.assertIn("[warning] input-bound", by_server)
        self.assertIn(LOADER_FIX, by_server)
        self.assertIn("tuned by trainyard.tune: micro-batch", by_server)
        slow = self.doctor_json(slow_metrics)["stats"]

        # 2. The fix the doctor named: no decode delay, four loader workers.
        fixed_id, fixed_metrics = self.run_once("tuned-fixed", FIXED)
        d = self.doctor_json(fixed_metrics)
        print("--- trainyard doctor --metrics (fixed)\n" + self.doctor("--metrics", fixed_metrics),
              flush=True)
        self.assertTrue(d["stats"]["enough_steps"], d["stats"])
        self.assertNotIn("input-bound", [f["rule"] for f in d["findings"]], d)
        self.assertNotIn("input-bound", self.doctor(str(fixed_id)))
        print("data wait share: %.4f -> %.4f" % (slow["data_wait_share"],
                                                 d["stats"]["data_wait_share"]), flush=True)
        self.assertLess(d["stats"]["data_wait_share"], slow["data_wait_share"] / 2)

    def test_preempted_run_resumes_on_the_same_samples(self):
        fixed_id, fixed_metrics = self.run_once("tuned-fixed", FIXED)
        # The reference run's plan (its tune_* line), pinned with --plan, so that only the
        # preemption differs. (A spec's env may not set TRAINYARD_TUNE_*: the server keeps
        # TRAINYARD_* to itself.)
        tuned = [m for m in read_metrics(fixed_metrics) if "tune_micro_batch" in m][0]
        plan = {"micro_batch": tuned["tune_micro_batch"], "accum_steps": tuned["tune_accum_steps"],
                "world_size": tuned["tune_world_size"], "precision": tuned["dtype"],
                "channels_last": tuned["tune_channels_last"], "tf32": tuned["tune_tf32"]}
        plan_dir = tempfile.mkdtemp(prefix="ty-doctor-loop-")
        self.addCleanup(shutil.rmtree, plan_dir, True)
        os.chmod(plan_dir, 0o755)  # the workers may run as another user
        plan_file = os.path.join(plan_dir, "tune-plan.json")
        with open(plan_file, "w") as f:
            json.dump(plan, f)
        os.chmod(plan_file, 0o644)
        jid = self.submit("tuned-preempted", FIXED + ["--plan", plan_file, "--checkpoint-every",
                                                      "10", "--log-every", "5"])
        first_log = os.path.join(self.run_dir(jid, 1), "output.log")

        def at_step_5():
            try:
                with open(first_log) as f:
                    return "step 5 " in f.read()
            except FileNotFoundError:
                return False
        harness.wait_for("step 5 of the first attempt", at_step_5, timeout=90)
        urgent = self.s.run("--priority-class", "high", "--gpus", "2", "--name", "urgent",
                            "--", "true")
        self.assertEqual(self.s.wait(urgent, timeout=60)["state"], "succeeded")
        job = self.finished(jid)

        # Attempt 1 stopped at a step boundary and exited 75; attempt 2 resumed there.
        self.assertEqual((job["attempt"], job["attempts"][0]["outcome"],
                          job["attempts"][0]["exitCode"]), (2, "preempted", 75), job["attempts"])
        with open(first_log) as f:
            stopped = int(re.search(r"notice at step (\d+); saving and exiting 75",
                                    f.read()).group(1))
        self.assertLess(stopped, 60)
        with open(os.path.join(self.run_dir(jid, 2), "output.log")) as f:
            self.assertIn("attempt 2: resuming from step %d of 60" % stopped, f.read())
        # Every step of both attempts, on both ranks, trained on the same records (ids) to the
        # same loss as the run that was never stopped.
        for rank in (0, 1):
            ref = {m["step"]: m for m in read_metrics(
                os.path.join(self.run_dir(fixed_id, 1, rank), "metrics.jsonl")) if "step" in m}
            got = []
            for attempt in (1, 2):
                got += [m for m in read_metrics(os.path.join(
                    self.run_dir(jid, attempt, rank), "metrics.jsonl")) if "step" in m]
            self.assertEqual([m["step"] for m in got], list(range(1, 61)), rank)
            self.assertEqual(max(m["step"] for m in got if m["attempt"] == 1), stopped)
            for m in got:
                self.assertEqual((m["ids"], m["loss"], m["data_epoch"], m["data_batch"]),
                                 (ref[m["step"]]["ids"], ref[m["step"]]["loss"],
                                  ref[m["step"]]["data_epoch"], ref[m["step"]]["data_batch"]),
                                 "rank %d step %d" % (rank, m["step"]))


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    if not have_torch():
        print("skipped: %s has no torch/numpy (apt-get install python3-torch)" % PYTHON)
        sys.exit(0)
    started = time.time()
    try:
        unittest.main(verbosity=2)
    finally:
        print("doctor_loop_test: %.1f s" % (time.time() - started), flush=True)
