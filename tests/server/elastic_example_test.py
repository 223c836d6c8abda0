"""An elastic job end to end: examples/jobs/elastic-train.yaml (examples/train/ddp_train.py with
--global-batch, 1 to 4 workers) on the real server with the goodput policy and 4 simulated GPUs.
Alone, the job runs with 4 workers; when a second elastic job arrives, the first is stopped at a
checkpoint (notice, exit 75) and restarted with 2 workers, resuming where it stopped (and grows
back to 4 the same way once the second has finished); both finish. The resized run ends with the same loss as the same training run uninterrupted on one
process (to the order of float sums), so the resize lost no step and repeated none.
Needs python3-torch; prints "skipped:" without.
Usage: elastic_example_test.py PATH/TO/trainyard"""
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SPEC = os.path.join(harness.REPO, "examples", "jobs", "elastic-train.yaml")
SCRIPT = os.path.join(harness.REPO, "examples", "train", "ddp_train.py")
PYTHON = "/usr/bin/python3"
TRAIN = ["--steps", "240", "--global-batch", "48", "--dropout", "0", "--checkpoint-every", "10"]


def have_torch():
    return subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


def spec_text(name, args):
    """The example spec with this checkout's path, another name and the test's args."""
    with open(SPEC) as f:
        text = f.read().replace("/path/to/trainyard", harness.REPO)
    text, n = re.subn(r"(?m)^  name: elastic-train$", "  name: " + name, text)
    assert n == 1, "examples/jobs/elastic-train.yaml has no metadata name to replace"
    text, n = re.subn(r"(?m)^    args: .*\n", "    args: %s\n" % json.dumps(args), text)
    assert n == 1, "examples/jobs/elastic-train.yaml has no one-line args: to replace"
    return text


def result_of(log_text):
    m = re.search(r"ddp_train: rank 0/\d+: done: (\{.*\})", log_text)
    return json.loads(m.group(1)) if m else None


class ElasticExample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="sim:4xH100-80GB", config=harness.FAST + (
            "policy: goodput\nminRuntimeSeconds: 2\n")).start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def log(self, jid, attempt, rank=0):
        path = os.path.join(self.s.state_dir, "jobs", str(jid), "attempt-%d" % attempt,
                            "rank-%d" % rank, "output.log")
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def submit(self, name, args):
        r = self.s.cli("submit", "-q", "-f", "-", stdin=spec_text(name, args))
        return int(r.stdout.strip())

    def finished(self, jid):
        job = self.s.wait(jid, timeout=200)
        if job["state"] != "succeeded":
            logs = "\n".join(self.log(jid, a, r) for a in range(1, job["attempt"] + 1)
                             for r in range(4))
            self.fail("job %d %s:\n%s\n%s" % (jid, job["state"], json.dumps(job)[:2000],
                                               logs[-4000:]))
        return job

    def reference(self):
        """The same training uninterrupted on one process, outside trainyard."""
        d = harness.scratch_dir("ty-elastic-ref-")
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29637", WORLD_SIZE="1",
                   RANK="0", PYTHONPATH=os.path.join(harness.REPO, "sdk", "python"))
        for k in [k for k in env if k.startswith("TRAINYARD_")]:
            del env[k]
        out = os.path.join(d, "ref.json")
        subprocess.run([PYTHON, SCRIPT] + TRAIN + ["--checkpoint-dir", os.path.join(d, "ck"),
                                                   "--out", out],
                       env=env, check=True, capture_output=True, timeout=180)
        with open(out) as f:
            return json.load(f)

    def test_resized_at_a_checkpoint_and_ends_as_an_unresized_run(self):
        first = self.submit("elastic-a", TRAIN + ["--step-delay", "0.05"])
        harness.wait_for("elastic-a at step 30 on 4 workers",
                         lambda: re.search(r"(?m)^step 30 loss", self.log(first, 1)) is not None,
                         timeout=120)
        self.assertIn("ddp_train: rank 0/4 ", self.log(first, 1))
        self.assertIn("ddp_train: rank 3/4 ", self.log(first, 1, 3))
        second = self.submit("elastic-b", ["--steps", "60", "--global-batch", "48",
                                           "--dropout", "0", "--checkpoint-every", "10"])
        job_a = self.finished(first)
        job_b = self.finished(second)
        print("elastic-a attempts: %s" % json.dumps(job_a["attempts"]), flush=True)

        # Attempt 1 (4 workers) was stopped by a notice and saved; attempt 2 (2 workers, beside
        # elastic-b) resumed from that step. Once elastic-b has finished, the job may grow back
        # to 4 workers the same way.
        attempts = job_a["attempts"]
        self.assertGreaterEqual(len(attempts), 2, attempts)
        self.assertEqual([len(a["placement"]) for a in attempts[:2]], [4, 2], attempts)
        self.assertIn("ddp_train: rank 3/4 ", self.log(first, 1, 3))
        self.assertIn("ddp_train: rank 0/2 ", self.log(first, 2))
        self.assertEqual(self.log(first, 2, 2), "", "attempt 2 has only 2 ranks")
        stopped = None
        for a in attempts:
            n, text = a["attempt"], self.log(first, a["attempt"])
            world = len(a["placement"])
            self.assertIn("ddp_train: rank 0/%d " % world, text)
            if stopped is not None:
                prev = len(attempts[n - 2]["placement"])
                resumed = "resuming from step %d" % stopped
                if prev != world:
                    resumed += " (world size %d -> %d" % (prev, world)
                self.assertIn(resumed, text)
            if a["outcome"] == "preempted":
                self.assertEqual(a["exitCode"], 75, a)
                stopped = int(re.search(r"notice at step (\d+) \(preempted \(resized",
                                        text).group(1))
            else:
                self.assertEqual((a["outcome"], n), ("succeeded", len(attempts)), attempts)
        first_stop = int(re.search(r"notice at step (\d+)", self.log(first, 1)).group(1))
        self.assertGreaterEqual(first_stop, 30)
        last_log = self.log(first, len(attempts))

        # The resized run lost no step and repeated none: it ends where the same training run
        # uninterrupted on one process ends.
        got = result_of(last_log)
        self.assertIsNotNone(got, last_log[-2000:])
        ref = self.reference()
        print("resized run: %s\nuninterrupted, 1 process: %s" % (got, ref), flush=True)
        self.assertEqual((got["step"], got["world_size"]), (240, len(attempts[-1]["placement"])))
        self.assertAlmostEqual(got["eval_loss"], ref["eval_loss"],
                               delta=1e-4 * abs(ref["eval_loss"]))
        # And it learned: well below its loss at step 10.
        early = float(re.search(r"(?m)^step 10 loss (\S+)", self.log(first, 1)).group(1))
        self.assertLess(got["eval_loss"], 0.5 * early)
        # The second job ran with the GPUs the first gave up.
        self.assertIsNotNone(result_of(self.log(second, job_b["attempt"])))


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    if not have_torch():
        print("skipped: %s has no torch (apt-get install python3-torch)" % PYTHON)
        sys.exit(0)
    started = time.time()
    try:
        unittest.main(verbosity=2)
    finally:
        print("elastic_example_test: %.1f s" % (time.time() - started), flush=True)
