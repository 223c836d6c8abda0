"""End-to-end tests of the control plane: the real `trainyard server` binary with simulated
GPUs, driven by the real CLI and raw HTTP. Usage: e2e_test.py PATH/TO/trainyard [unittest args]"""
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.05\nretryBackoff: {initialSeconds: 0.2, maxSeconds: 1}\n"


def write(dirname, name, text):
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class Basics(harness.ServerTestCase):
    CONFIG = FAST

    def test_job_sees_only_its_gpus(self):
        jid = self.s.run("--gpus", "2", "--name", "cvd", "--", "sh", "-c",
                         "echo CVD=$CUDA_VISIBLE_DEVICES; echo ID=$TRAINYARD_JOB_ID/$TRAINYARD_ATTEMPT")
        job = self.s.wait(jid)
        self.assertEqual(job["state"], "succeeded")
        log = self.s.logs(jid)
        devices = [line[4:] for line in log.splitlines() if line.startswith("CVD=")][0].split(",")
        self.assertEqual(len(devices), 2)
        self.assertEqual(len(set(devices)), 2)
        placed = [a["device"] for a in job["attempts"][0]["placement"]]
        self.assertEqual(sorted(devices), sorted(placed))
        self.assertTrue(all(d.startswith("GPU-sim-") for d in devices))
        self.assertIn(f"ID={jid}/1", log)

    def test_gang_gets_torchrun_variables(self):
        jid = self.s.run("--gpus", "1", "--workers", "2", "--name", "gang", "--", "sh", "-c",
                         "echo R=$RANK W=$WORLD_SIZE L=$LOCAL_RANK M=$MASTER_ADDR:$MASTER_PORT")
        self.assertEqual(self.s.wait(jid)["state"], "succeeded")
        lines = [self.s.logs(jid, "--rank", str(r)).strip() for r in (0, 1)]
        self.assertTrue(lines[0].startswith("R=0 W=2 L=0 M=127.0.0.1:"), lines[0])
        self.assertTrue(lines[1].startswith("R=1 W=2 L=1 M=127.0.0.1:"), lines[1])
        self.assertEqual(lines[0].split("M=")[1], lines[1].split("M=")[1])  # one rendezvous

    def test_logs_follow_until_the_end(self):
        jid = self.s.run("--name", "follow", "--", "sh", "-c",
                         "for i in 1 2 3 4 5; do echo line $i; sleep 0.1; done")
        out = self.s.cli("logs", "-f", str(jid)).stdout
        self.assertEqual(out.split(), "line 1 line 2 line 3 line 4 line 5".split())

    def test_cancel_running_job_gets_notice_then_cancelled(self):
        jid = self.s.run("--name", "cancelme", "--grace", "5", "--", "sh", "-c",
                         "trap 'echo notice: $(cat $TRAINYARD_PREEMPT_NOTICE); exit 0' TERM; "
                         "echo started; while true; do sleep 0.05; done")
        self.s.wait(jid, states=("running",))
        deadline = time.time() + 10
        while "started" not in self.s.logs(jid) and time.time() < deadline:
            time.sleep(0.05)
        r = self.s.cli("cancel", str(jid))
        self.assertIn("cancelling", r.stdout)
        job = self.s.wait(jid)
        self.assertEqual(job["state"], "cancelled")
        notice = json.loads(self.s.logs(jid).split("notice: ")[1].splitlines()[0])
        self.assertIn("cancelled by", notice["reason"])
        self.assertEqual(notice["graceSeconds"], 5)
        self.assertTrue(notice["deadline"].endswith("Z"))
        self.assertEqual(job["attempts"][0]["outcome"], "cancelled")

    def test_cancel_pending_job_and_already_ended(self):
        jid = self.s.run("--gpus", "4", "--name", "blocker", "--", "sleep", "30")
        self.s.wait(jid, states=("running",))
        waiting = self.s.run("--gpus", "1", "--name", "waits", "--", "true")
        time.sleep(0.3)
        job = self.s.job(waiting)
        self.assertEqual(job["state"], "pending")
        self.assertIn("GPU", job["waiting"])  # the scheduler's reason names what is missing
        shown = self.s.cli("show", str(waiting)).stdout
        self.assertIn("Waiting:", shown)
        # logs of a job that never ran says so, and why it waits; -f waits and says when it
        # ended without running.
        logs = self.s.cli("logs", str(waiting), check=False)
        self.assertEqual(logs.returncode, 1)
        self.assertIn("has not started yet", logs.stderr)
        self.assertIn("GPU", logs.stderr)
        follower = subprocess.Popen([harness.BIN, "logs", "-f", str(waiting)],
                                    env={**{k: v for k, v in os.environ.items()
                                            if k != "TRAINYARD_TOKEN"},
                                         "TRAINYARD_SERVER": self.s.url},
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        self.s.cli("cancel", str(waiting), str(jid))
        out, err = follower.communicate(timeout=30)
        self.assertEqual(follower.returncode, 1, err)
        self.assertIn("waiting for it to start", err)
        self.assertIn("ended cancelled without running", err)
        self.assertEqual(self.s.wait(waiting)["state"], "cancelled")
        self.assertEqual(self.s.wait(jid)["state"], "cancelled")
        again = self.s.cli("cancel", str(waiting), check=False)
        self.assertEqual(again.returncode, 1)
        self.assertIn("already ended", again.stderr)

    def test_failed_job_is_retried_with_backoff_up_to_the_limit(self):
        jid = self.s.run("--name", "flaky", "--backoff-limit", "2", "--", "sh", "-c",
                         "echo attempt $TRAINYARD_ATTEMPT; exit 3")
        job = self.s.wait(jid, timeout=30)
        self.assertEqual(job["state"], "failed")
        self.assertEqual(job["failures"], 3)
        self.assertEqual([a["outcome"] for a in job["attempts"]], ["failed"] * 3)
        self.assertEqual([a["exitCode"] for a in job["attempts"]], [3, 3, 3])
        self.assertIn("backoffLimit 2 reached", job["reason"])
        self.assertIn("attempt 2", self.s.logs(jid, "--attempt", "2"))
        events = json.loads(self.s.cli("show", str(jid), "-o", "json").stdout)["events"]
        self.assertEqual(sum("retry" in e["reason"] for e in events), 2)

    def test_dependency_waits_for_success_and_fails_on_failure(self):
        a = self.s.run("--name", "dep-a", "--", "sleep", "0.5")
        b = self.s.run("--name", "dep-b", "--depends-on", "dep-a", "--", "true")
        jb = self.s.wait(b)
        ja = self.s.job(a)
        self.assertEqual(jb["state"], "succeeded")
        self.assertGreaterEqual(jb["attempts"][0]["started"], ja["attempts"][0]["ended"])
        bad = self.s.run("--name", "dep-bad", "--backoff-limit", "0", "--", "false")
        c = self.s.run("--name", "dep-c", "--depends-on", str(bad), "--", "true")
        jc = self.s.wait(c)
        self.assertEqual(jc["state"], "failed")
        self.assertIn(f"dependency {bad} ended failed", jc["reason"])
        r = self.s.cli("run", "--name", "x", "--depends-on", "no-such-job", "--", "true", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no job named 'no-such-job'", r.stderr)

    def test_ls_filters_and_outputs(self):
        jid = self.s.run("--name", "listed", "--team", "vision", "--", "true")
        self.s.wait(jid)
        table = self.s.cli("ls", "--team", "vision").stdout.splitlines()
        self.assertEqual(table[0].split()[:4], ["ID", "NAME", "TEAM", "STATE"])
        self.assertTrue(any(l.split()[0] == str(jid) for l in table[1:]))
        items = json.loads(self.s.cli("ls", "--state", "succeeded", "-o", "json").stdout)
        self.assertTrue(items and all(j["state"] == "succeeded" for j in items))
        self.assertIn("name: listed", self.s.cli("ls", "--name", "listed", "-o", "yaml").stdout)
        wide = self.s.cli("ls", "-o", "wide").stdout.splitlines()[0]
        self.assertIn("NODE:GPUS", wide)
        nodes = json.loads(self.s.cli("nodes", "-o", "json").stdout)["items"]
        self.assertEqual(nodes[0]["gpus"], 4)
        self.assertTrue(nodes[0]["simulated"])
        self.assertIn("simulated", self.s.cli("nodes").stdout)
        self.assertIn("vision", self.s.cli("queues").stdout)

    def test_missing_executable_fails_with_127(self):
        jid = self.s.run("--name", "nope", "--backoff-limit", "0", "--", "/no/such/binary")
        job = self.s.wait(jid)
        self.assertEqual(job["state"], "failed")
        self.assertEqual(job["attempts"][0]["exitCode"], 127)
        self.assertIn("/no/such/binary", self.s.logs(jid))

    def test_api_errors_are_json_with_status(self):
        code, body = self.s.http("GET", "/api/v1/jobs/999999")
        self.assertEqual(code, 404)
        self.assertEqual(body["error"]["code"], "NotFound")
        code, body = self.s.http("GET", "/api/v1/nope")
        self.assertEqual(code, 404)
        code, body = self.s.http("GET", "/api/v1/jobs?limit=abc")
        self.assertEqual((code, body["error"]["field"]), (400, "limit"))
        code, body = self.s.http("POST", "/api/v1/jobs", b"x" * (2 << 20))
        self.assertEqual(code, 413)
        code, body = self.s.http("POST", "/api/v1/jobs?file=j.yaml", b"apiVersion: trainyard.dev/v1\nkind: Job\n")
        self.assertEqual(code, 400)
        self.assertTrue(body["error"]["message"].startswith("j.yaml:"), body)
        code, body = self.s.http("GET", "/healthz")
        self.assertEqual((code, body["status"]), (200, "ok"))

    def test_more_gpus_than_the_machine_has_is_refused(self):
        r = self.s.cli("run", "--gpus", "8", "--", "true", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("largest node has 4", r.stderr)


class Specs(unittest.TestCase):
    """Each malformed spec gives the documented error: file, line, field, fix."""

    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(config=FAST).start()
        cls.dir = cls.s.state_dir

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def submit_text(self, text):
        path = write(self.dir, "job.yaml", text)
        return self.s.cli("submit", "-f", path, check=False)

    HEAD = "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata:\n  name: bad\nspec:\n"

    def test_wrong_type_names_line_and_field(self):
        r = self.submit_text(self.HEAD + "  template:\n    command: [true]\n    resources:\n"
                             "      limits:\n        nvidia.com/gpu: two\n")
        self.assertEqual(r.returncode, 2)
        self.assertRegex(r.stderr, r"job\.yaml:10:25: .*nvidia\.com/gpu must be .*got \"?two")

    def test_unknown_field_is_refused(self):
        r = self.submit_text(self.HEAD + "  worker: 2\n  template: {command: [true]}\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("job.yaml:6:", r.stderr)
        self.assertIn("worker", r.stderr)

    def test_wrong_api_version_and_syntax_errors(self):
        r = self.submit_text("apiVersion: v2\nkind: Job\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("job.yaml:1:", r.stderr)
        r = self.submit_text("apiVersion: [\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("job.yaml:", r.stderr)

    def test_example_specs_are_accepted(self):
        examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "jobs")
        for name in sorted(os.listdir(examples)):
            if not name.endswith(".yaml") or name == "big.yaml" or "deps" in name:
                continue
            r = self.s.cli("submit", "-f", os.path.join(examples, name), check=False)
            self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")
        ids = [j["id"] for j in json.loads(self.s.cli("ls", "-o", "json").stdout)]
        for jid in ids:
            self.s.cli("cancel", str(jid), check=False)


class Preemption(unittest.TestCase):
    def test_low_priority_job_checkpoints_and_resumes(self):
        s = harness.Server(config=FAST + "policy: priority\nminRuntimeSeconds: 0\n").start()
        try:
            low = s.run("--gpus", "4", "--name", "low", "--priority-class", "low", "--grace", "10",
                        "--", "sh", "-c",
                        "ck=$TRAINYARD_CHECKPOINT_DIR/step; n=$(cat $ck 2>/dev/null || echo 0); "
                        "echo resumed from $n; echo MTBF=$TRAINYARD_MTBF_SECONDS; "
                        "trap 'echo $n > $ck; echo saved $n; exit 0' TERM; "
                        "while [ $n -lt 60 ]; do n=$((n+1)); sleep 0.05; done; echo finished $n")
            s.wait(low, states=("running",))
            time.sleep(0.6)
            high = s.run("--gpus", "4", "--name", "high", "--priority-class", "high", "--", "sleep", "0.3")
            jh = s.wait(high)
            self.assertEqual(jh["state"], "succeeded")
            jl = s.wait(low, timeout=40)
            self.assertEqual(jl["state"], "succeeded")
            self.assertEqual(jl["attempt"], 2)
            self.assertEqual(jl["attempts"][0]["outcome"], "preempted")
            first = s.logs(low, "--attempt", "1")
            saved = int(first.split("saved ")[1].split()[0])
            self.assertGreater(saved, 0)
            second = s.logs(low, "--attempt", "2")
            self.assertIn(f"resumed from {saved}", second)
            self.assertIn("finished 60", second)
            # The MTBF for Young's rule: the 4 h prior before any interruption, then
            # (prior + observed run time) / (1 + interruptions) after the preemption.
            self.assertIn("MTBF=14400\n", first)
            mtbf2 = int(second.split("MTBF=")[1].split()[0])
            self.assertTrue(7100 < mtbf2 < 7300, second)
            self.assertGreaterEqual(jh["attempts"][0]["started"], jl["attempts"][0]["ended"])
            events = s.job(low)["attempts"]
            self.assertEqual(len(events), 2)
        finally:
            s.stop()


class SdkPreemption(unittest.TestCase):
    """examples/train/toy_train.py (the Python SDK) through a real preemption and resume."""

    def test_toy_train_checkpoints_on_notice_and_resumes_from_it(self):
        import re
        import subprocess
        if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                          capture_output=True).returncode != 0:
            self.skipTest("torch is not importable by /usr/bin/python3: toy_train.py needs it")
        repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
        s = harness.Server(config=FAST + "policy: priority\nminRuntimeSeconds: 0\n").start()
        try:
            low = s.run("--gpus", "4", "--name", "toy-low", "--priority-class", "low", "--grace", "20",
                        "--workdir", repo, "--env", "PYTHONPATH=" + os.path.join(repo, "sdk", "python"),
                        "--", "/usr/bin/python3", "examples/train/toy_train.py",
                        "--steps", "200", "--step-delay", "0.02")
            s.wait(low, states=("running",))
            deadline = time.time() + 20
            while "step 50 loss" not in s.logs(low):  # it has trained (and checkpointed) a while
                self.assertLess(time.time(), deadline, s.logs(low))
                time.sleep(0.1)
            high = s.run("--gpus", "4", "--name", "high", "--priority-class", "high", "--", "sleep", "0.3")
            jh = s.wait(high)
            self.assertEqual(jh["state"], "succeeded")
            jl = s.wait(low, timeout=40)
            first = s.logs(low, "--attempt", "1")
            second = s.logs(low, "--attempt", "2")
            self.assertEqual(jl["state"], "succeeded", first + second)
            self.assertEqual(jl["attempt"], 2)
            self.assertEqual(jl["attempts"][0]["outcome"], "preempted")
            self.assertEqual(jl["attempts"][0]["exitCode"], 75)  # saved, then exit_preempted()
            self.assertIn("attempt 1: starting at step 0 of 200", first)
            saved = int(re.search(r"notice at step (\d+); checkpoint saved", first).group(1))
            self.assertGreaterEqual(saved, 50)
            self.assertIn(f"attempt 2: starting at step {saved} of 200", second)  # not from 0
            self.assertIn("done at step 200", second)
            self.assertGreaterEqual(jh["attempts"][0]["started"], jl["attempts"][0]["ended"])
        finally:
            s.stop()


class SpotCapacity(unittest.TestCase):
    """--provider simcloud: the autoscaler buys a spot node for a checkpointing SDK job, the node
    is reclaimed (forced through the admin-only interrupt route), the job checkpoints on the
    notice, is requeued, resumes on a replacement bought in another zone and succeeds; the cost
    report bills it, with the lost work, and jobs + idle add up to the bill."""

    def test_interrupted_spot_job_resumes_on_a_node_in_another_zone_and_is_billed(self):
        import re
        if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                          capture_output=True).returncode != 0:
            self.skipTest("torch is not importable by /usr/bin/python3: toy_train.py needs it")
        repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
        catalog = os.path.join(repo, "..", "shared", "catalog")
        if not os.path.isdir(catalog):
            self.skipTest(catalog + " not found")
        config = FAST + (
            "capacity:\n"
            f"  catalog: {catalog}\n"
            "  interruptionRatePerHour: 0\n"  # only the forced reclaim below
            "  provisioningDelay: 2\n"
            "  noticeSeconds: 15\n"
            "  pools:\n"
            "    - {name: v100-spot, kind: spot, provider: aws, instanceType: p3.2xlarge,\n"
            "       region: us-east-1, minNodes: 0, maxNodes: 2, idleTimeout: 300}\n")
        s = harness.Server(gpus="none", config=config, extra=["--provider", "simcloud"]).start()
        try:
            jid = s.run("--gpus", "1", "--name", "toy-spot", "--team", "vision", "--grace", "15",
                        "--workdir", repo, "--env", "PYTHONPATH=" + os.path.join(repo, "sdk", "python"),
                        "--", "/usr/bin/python3", "examples/train/toy_train.py",
                        "--steps", "200", "--step-delay", "0.02")
            s.wait(jid, states=("running",), timeout=30)
            nodes = {n["name"]: n for n in json.loads(s.cli("nodes", "-o", "json").stdout)["items"]}
            first = nodes["v100-spot-1"]
            self.assertEqual(first["state"], "ready")
            self.assertEqual(first["pool"], "v100-spot")
            self.assertGreater(first["pricePerHour"], 0)
            self.assertIn("v100-spot", s.cli("nodes").stdout)
            deadline = time.time() + 30
            while "step 50 loss" not in s.logs(jid):  # it has trained a while
                self.assertLess(time.time(), deadline, s.logs(jid))
                time.sleep(0.1)
            status, body = s.http("POST", "/api/v1/nodes/v100-spot-1/interrupt", b"")
            self.assertEqual(status, 200, body)
            # The replacement is bought at once (the job is requeued within the notice), elsewhere.
            deadline = time.time() + 30
            while True:
                j = s.job(jid)
                if j["attempt"] == 2 and j["state"] == "running":
                    break
                self.assertLess(time.time(), deadline, j)
                time.sleep(0.1)
            nodes = {n["name"]: n for n in json.loads(s.cli("nodes", "-o", "json").stdout)["items"]}
            self.assertIn("v100-spot-2", nodes, nodes)
            self.assertNotEqual(nodes["v100-spot-2"]["zone"], first["zone"])
            j = s.wait(jid, timeout=60)
            first_log, second_log = s.logs(jid, "--attempt", "1"), s.logs(jid, "--attempt", "2")
            self.assertEqual(j["state"], "succeeded", first_log + second_log)
            self.assertEqual(j["attempts"][0]["outcome"], "interrupted")
            self.assertEqual(j["attempts"][0]["exitCode"], 75)
            saved = int(re.search(r"notice at step (\d+); checkpoint saved", first_log).group(1))
            self.assertGreaterEqual(saved, 50)
            self.assertIn(f"attempt 2: starting at step {saved} of 200", second_log)
            events = s.cli("show", str(jid)).stdout
            self.assertIn("reclaimed by the provider", events)
            self.assertIn("requested node v100-spot-2", events)

            report = json.loads(s.cli("cost", "-o", "json").stdout)
            job = [r for r in report["jobs"] if r["job"] == str(jid)][0]
            self.assertEqual(job["team"], "vision")
            self.assertGreater(job["cost_usd"], 0)
            self.assertGreater(job["lost_gpu_hours"], 0)
            self.assertEqual(job["interruptions"], 1)
            jobs_and_idle = sum(r["cost_usd"] for r in report["jobs"]) + report["total"]["idle_cost_usd"]
            self.assertAlmostEqual(jobs_and_idle, report["total"]["cost_usd"], places=9)
            self.assertEqual([p["pool"] for p in report["pools"]], ["v100-spot"])
            table = s.cli("cost").stdout
            self.assertIn("__idle__", table)
            self.assertIn("toy-spot", table)
            csv = s.cli("cost", "-o", "csv").stdout.splitlines()
            self.assertTrue(csv[0].startswith("kind,key,name,team,cost_usd"), csv[0])
            self.assertTrue(any(line.startswith(f"job,{jid},toy-spot,vision,") for line in csv), csv)
        finally:
            s.stop()


class Telemetry(unittest.TestCase):
    """GPU telemetry of a running job: /metrics (checked by promtool when it is installed), the
    GPU and job telemetry routes, and `trainyard top`."""

    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(config=FAST + "telemetry: {interval: 0.2}\n").start()
        cls.jid = cls.s.run("--gpus", "1", "--name", "busy", "--team", "vision", "--",
                            "sh", "-c", "sleep 60")
        job = cls.s.wait(cls.jid, states=("running",))
        cls.device = job["placement"][0]["device"]
        cls.gpu = job["placement"][0]["gpu"]

    @classmethod
    def tearDownClass(cls):
        cls.s.cli("cancel", str(cls.jid), check=False)
        cls.s.stop()

    def scrape(self):
        # No token: /metrics is open like /healthz, as Prometheus scrapes it.
        with urllib.request.urlopen(self.s.url + "/metrics", timeout=10) as r:
            return r.headers.get("Content-Type"), r.read().decode()

    def job_lines(self, timeout=15):
        """The exposition once the job's GPU lines carry its hpc_job label."""
        deadline = time.time() + timeout
        while True:
            ctype, text = self.scrape()
            if f'hpc_job="{self.jid}"' in text or time.time() > deadline:
                return ctype, text
            time.sleep(0.2)

    def test_metrics_label_the_running_jobs_gpu_and_pass_promtool(self):
        ctype, text = self.job_lines()
        self.assertEqual(ctype, "text/plain; version=0.0.4")
        gpu_lines = [l for l in text.splitlines()
                     if l.startswith("DCGM_") and f'UUID="{self.device}"' in l]
        self.assertTrue(gpu_lines, text)
        for line in gpu_lines:
            self.assertIn(f'hpc_job="{self.jid}"', line)
            self.assertIn('team="vision"', line)
            self.assertIn(f'gpu="{self.gpu}"', line)
            self.assertIn(f'device="nvidia{self.gpu}"', line)
            self.assertIn("Hostname=", line)
            self.assertIn("hostname=", line)
        # dcgm-exporter's defaults: XID 0 when none (not absent), the profiling activities as
        # 0..1 ratios (simulated H100s have GPM), energy and violation counters.
        def value(family):
            line = [l for l in gpu_lines if l.startswith(family + "{")]
            self.assertEqual(len(line), 1, family)
            return float(line[0].rsplit(" ", 1)[1])
        self.assertEqual(value("DCGM_FI_DEV_XID_ERRORS"), 0)
        tensor = value("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
        self.assertTrue(0 <= tensor <= value("DCGM_FI_PROF_SM_ACTIVE") <= 1, tensor)
        self.assertGreaterEqual(value("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), 0)
        self.assertGreaterEqual(value("DCGM_FI_DEV_THERMAL_VIOLATION"), 0)
        self.assertIn("# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n", text)
        self.assertIn("# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge\n", text)
        others = [l for l in text.splitlines() if l.startswith("DCGM_") and self.device not in l]
        self.assertTrue(others)
        self.assertFalse(any("hpc_job=" in l for l in others), others[:3])
        for family in ("trainyard_jobs", "trainyard_queue_wait_seconds", "trainyard_gpu_allocated",
                       "trainyard_gpu_capacity", "trainyard_schedule_cycle_seconds",
                       "trainyard_api_request_duration_seconds"):
            self.assertIn(f"# TYPE {family} ", text)
            self.assertIn(f"# HELP {family} ", text)
        self.assertIn('trainyard_jobs{state="running"} 1', text)
        self.assertIn('trainyard_queue_wait_seconds_bucket{le="+Inf"}', text)
        self.assertRegex(text, r'trainyard_gpu_capacity\{node="[^"]+",model="H100-80GB"\} 4\n')
        # Routes are patterns: the job id of a request never becomes a label value.
        self.s.http("GET", f"/api/v1/jobs/{self.jid}")
        _, text = self.scrape()
        self.assertIn('route="/api/v1/jobs/{id}"', text)
        self.assertNotIn(f'route="/api/v1/jobs/{self.jid}"', text)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool is not installed (Debian package prometheus)")
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True)
        # promtool's lint objects to two things dcgm-exporter does and trainyard copies on
        # purpose: the label modelName (camelCase) and counters without the _total suffix (ECC,
        # energy, PCIe replays, violations, remapped rows, NVLink bandwidth: dcgm-exporter's
        # names; DCGM_FI_DEV_PCIE_REPLAY_COUNTER also says "counter"). Nothing else may be wrong,
        # and a parse error would be reported here too.
        problems = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()
                    and not l.endswith("label names should be written in 'snake_case' not 'camelCase'")
                    and not (l.startswith("DCGM_FI_DEV_") and '"_total" suffix' in l)
                    and l != "DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include "
                             "type 'counter'"]
        self.assertEqual(problems, [], r.stdout + r.stderr)

    def test_gpu_and_job_telemetry_routes(self):
        self.job_lines()
        code, gpus = self.s.http("GET", "/api/v1/gpus")
        self.assertEqual(code, 200)
        self.assertEqual(len(gpus["items"]), 4)
        mine = [d for d in gpus["items"] if d["uuid"] == self.device][0]
        self.assertEqual([j["id"] for j in mine["jobs"]], [self.jid])
        self.assertEqual(mine["jobs"][0]["team"], "vision")
        self.assertEqual(mine["memoryTotalBytes"], 80 << 30)
        code, t = self.s.http("GET", f"/api/v1/jobs/{self.jid}/telemetry?samples=3")
        self.assertEqual(code, 200)
        self.assertTrue(1 <= len(t["samples"]) <= 3, t)
        self.assertTrue(all(x["device"] == self.device for x in t["samples"]))
        self.assertGreaterEqual(t["summary"]["samples"], 1)
        self.assertEqual(t["summary"]["devices"], 1)
        code, err = self.s.http("GET", f"/api/v1/jobs/{self.jid}/telemetry?samples=-1")
        self.assertEqual((code, err["error"]["field"]), (400, "samples"))
        self.assertEqual(self.s.http("GET", "/api/v1/jobs/999/telemetry")[0], 404)
        self.assertIn("utilization", self.s.job(self.jid))
        self.assertIn("GPU use:", self.s.cli("show", str(self.jid)).stdout)

    def test_top_once_shows_the_job_on_its_gpu_row(self):
        self.job_lines()
        out = self.s.cli("top", "--once").stdout
        self.assertNotIn("\x1b", out)
        rows = [l for l in out.splitlines()
                if "H100-80GB" in l and l.split()[0] == str(self.gpu)]
        self.assertEqual(len(rows), 1, out)
        self.assertIn(f"{self.jid} busy (vision)", rows[0])
        self.assertIn("H100-80GB", rows[0])
        self.assertIn("/80.0 GiB", rows[0])
        job_rows = [l.split() for l in out.splitlines()
                    if "H100-80GB" not in l and l.split()[1:3] == ["busy", "vision"]]
        self.assertEqual(len(job_rows), 1, out)
        self.assertEqual(job_rows[0][0], str(self.jid))
        self.assertEqual(job_rows[0][3], "1")  # one GPU
        raw = json.loads(self.s.cli("top", "-o", "json").stdout)
        self.assertEqual(len(raw["items"]), 4)

    def test_top_says_when_the_server_is_unreachable(self):
        r = subprocess.run([harness.BIN, "top", "--once", "--server", "http://127.0.0.1:9"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 5)
        self.assertIn("cannot reach the trainyard server", r.stderr)


class Mig(unittest.TestCase):
    def test_mig_slice_sees_its_mig_device_uuid(self):
        s = harness.Server(gpus="sim:1xH100-80GB:mig", config=FAST).start()
        try:
            spec = ("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: slice}\nspec:\n"
                    "  template:\n    command: [sh, -c, 'echo $CUDA_VISIBLE_DEVICES']\n"
                    "    resources: {limits: {nvidia.com/mig-1g.10gb: 1}}\n")
            path = write(s.state_dir, "mig.yaml", spec)
            ids = [s.submit_file(path) for _ in range(3)]
            devices = []
            for jid in ids:
                self.assertEqual(s.wait(jid)["state"], "succeeded")
                devices.append(s.logs(jid).strip())
            self.assertTrue(all(d.startswith("MIG-sim-0-1g.10gb-") for d in devices), devices)
        finally:
            s.stop()


class Auth(unittest.TestCase):
    def test_tokens_and_team_isolation(self):
        s = harness.Server(config=FAST, extra=["--require-auth"]).start()
        try:
            admin = s.admin_token()
            r = s.cli("ls", check=False)
            self.assertEqual(r.returncode, 4)
            self.assertIn("requires a token", r.stderr)
            r = s.cli("ls", token="ty_wrong", check=False)
            self.assertEqual(r.returncode, 4)
            # Prometheus scrapes without a token; the GPU view is not open.
            with urllib.request.urlopen(s.url + "/metrics", timeout=10) as m:
                self.assertEqual(m.status, 200)
            self.assertEqual(s.http("GET", "/api/v1/gpus")[0], 401)
            ta = s.cli("token", "create", "--team", "a", token=admin).stdout.strip()
            tb = s.cli("token", "create", "--team", "b", token=admin).stdout.strip()
            r = s.cli("token", "create", "--team", "c", token=ta, check=False)
            self.assertEqual(r.returncode, 4)
            ja = s.run("--name", "mine", "--", "sleep", "5", token=ta)
            self.assertEqual(s.job(ja, token=ta)["team"], "a")
            r = s.cli("show", str(ja), token=tb, check=False)
            self.assertEqual(r.returncode, 4)
            self.assertIn("belongs to team 'a'", r.stderr)
            r = s.cli("cancel", str(ja), token=tb, check=False)
            self.assertEqual(r.returncode, 4)
            r = s.cli("run", "--team", "a", "--", "true", token=tb, check=False)
            self.assertEqual(r.returncode, 4)
            self.assertEqual(json.loads(s.cli("ls", "-o", "json", token=tb).stdout), [])
            self.assertEqual(len(json.loads(s.cli("ls", "-o", "json", token=admin).stdout)), 1)
            s.cli("cancel", str(ja), token=ta)
            self.assertEqual(s.wait(ja, token=admin)["state"], "cancelled")
            with open(os.path.join(s.state_dir, "state.db"), "rb") as f:
                db = f.read()
            self.assertNotIn(ta.encode(), db)  # only hashes are stored
        finally:
            s.stop()


def gpu_intervals(jobs):
    """(device, start, end, job) for every attempt that ran."""
    out = []
    for j in jobs:
        for a in j["attempts"]:
            if a["started"] is None:
                continue
            for p in a["placement"]:
                out.append((p.get("device"), a["started"], a["ended"] or "9999", j["id"]))
    return out


class CrashSafety(unittest.TestCase):
    def test_kill9_during_burst_loses_nothing_and_never_double_books(self):
        s = harness.Server(config=FAST).start()
        rng = random.Random(int(os.environ.get("TY_E2E_SEED", "7")))
        acked, lock = [], threading.Lock()
        body = lambda i: json.dumps({"apiVersion": "trainyard.dev/v1", "kind": "Job",
                                     "metadata": {"name": f"burst-{i}"},
                                     "spec": {"template": {"command": ["true"],
                                              "resources": {"limits": {"nvidia.com/gpu": rng.choice([1, 2])}}}}}).encode()
        try:
            for round_ in range(3):
                stop = threading.Event()

                def client(k):
                    i = 0
                    while not stop.is_set() and i < 40:  # bounds the work left to run
                        try:
                            code, reply = s.http("POST", "/api/v1/jobs", body(k * 100000 + i))
                        except Exception:
                            return  # the server died under us: unacknowledged
                        if code == 201:
                            with lock:
                                acked.append(reply["id"])
                        i += 1

                threads = [threading.Thread(target=client, args=(k + 10 * round_,)) for k in range(4)]
                for t in threads:
                    t.start()
                time.sleep(rng.uniform(0.3, 1.2))
                s.kill9()
                stop.set()
                for t in threads:
                    t.join()
                s.start()
                for jid in acked:
                    code, job = s.http("GET", f"/api/v1/jobs/{jid}")
                    self.assertEqual(code, 200, f"acknowledged job {jid} lost after kill -9")
            self.assertGreater(len(acked), 20)
            deadline = time.time() + 120
            while time.time() < deadline:
                code, page = s.http("GET", "/api/v1/jobs?limit=1000&state=pending")
                code2, running = s.http("GET", "/api/v1/jobs?limit=1000&state=running")
                if not page["items"] and not running["items"]:
                    break
                time.sleep(0.3)
            jobs = [s.http("GET", f"/api/v1/jobs/{jid}")[1] for jid in acked]
            self.assertTrue(all(j["state"] == "succeeded" for j in jobs),
                            [(j["id"], j["state"], j["reason"]) for j in jobs if j["state"] != "succeeded"][:5])
            iv = sorted(gpu_intervals(jobs))
            for a, b in zip(iv, iv[1:]):
                if a[0] == b[0]:
                    self.assertLessEqual(a[2], b[1], f"GPU {a[0]} double-booked: jobs {a[3]} and {b[3]}")
        finally:
            s.stop()

    def test_running_job_survives_restart_and_its_outcome_is_recorded(self):
        s = harness.Server(config=FAST).start()
        try:
            keep = s.run("--gpus", "1", "--name", "survivor", "--", "sh", "-c", "sleep 1.5; echo done; exit 0")
            gone = s.run("--gpus", "1", "--name", "ends-while-down", "--backoff-limit", "0", "--",
                         "sh", "-c", "sleep 0.5; exit 4")
            s.wait(keep, states=("running",))
            s.wait(gone, states=("running",))
            pid = s.job(keep)["attempts"][0]["processes"][0]["pid"]
            s.kill9()
            time.sleep(1.0)  # `gone` exits while no server is running
            os.kill(pid, 0)  # the survivor's wrapper is still alive
            s.start()
            jk = s.wait(keep)
            jg = s.wait(gone)
            self.assertEqual((jk["state"], jk["attempt"]), ("succeeded", 1))
            self.assertIn("done", s.logs(keep))
            self.assertEqual(jg["state"], "failed")
            self.assertEqual(jg["attempts"][0]["exitCode"], 4)
            events = json.loads(s.cli("show", str(keep), "-o", "json").stdout)["events"]
            self.assertTrue(any(e["type"] == "Adopted" for e in events))
        finally:
            s.stop()


class WebhookReceiver:
    """A tiny HTTP server on a free loopback port that records the JSON bodies POSTed to it."""

    def __init__(self):
        import http.server

        bodies = self.bodies = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                bodies.append((self.path, json.loads(self.rfile.read(n))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/hook" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


IDLE_JOB = """apiVersion: trainyard.dev/v1
kind: Job
metadata:
  name: {name}
  labels: {{trainyard.dev/sim-gpu-profile: {profile}}}
spec:
  template:
    command: [sleep, "60"]
    resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


class Alerts(unittest.TestCase):
    def wait_for(self, what, fn, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.1)
        self.fail("timed out waiting for " + what)

    def test_idle_gpu_alert_reaches_cli_events_metrics_and_webhook_then_resolves(self):
        hook = WebhookReceiver()
        config = FAST + ("telemetry: {interval: 0.2}\n"
                         "alerts:\n"
                         "  idle: {idleFor: 1s, resolveAfter: 1s}\n"
                         "  webhook: {url: \"%s\", timeoutSeconds: 2}\n" % hook.url)
        s = harness.Server(config=config).start()
        try:
            idle = s.submit_file(write(s.state_dir, "idle.yaml", IDLE_JOB.format(name="sleepy", profile="idle")))
            busy = s.submit_file(write(s.state_dir, "busy.yaml", IDLE_JOB.format(name="busy", profile="healthy")))
            s.wait(idle, states=("running",))
            s.wait(busy, states=("running",))

            def idle_alerts():
                items = json.loads(s.cli("alerts", "-o", "json").stdout)["items"]
                return [a for a in items if a["rule"] == "job-gpu-idle"]
            alerts = self.wait_for("the idle alert", idle_alerts)
            self.assertEqual([a["subject"]["jobs"][0]["id"] for a in alerts], [idle])
            a = alerts[0]
            self.assertEqual((a["severity"], a["state"]), ("warning", "firing"))
            self.assertIn("0.0% utilization, below 5% for 1s", a["summary"])
            table = s.cli("alerts").stdout
            self.assertIn("job-gpu-idle", table)
            self.assertIn("job %d (sleepy)" % idle, table)

            events = s.job(idle)["events"]
            fired = [e for e in events if e["type"] == "Alert"]
            self.assertEqual(len(fired), 1, events)
            self.assertIn("job-gpu-idle", fired[0]["reason"])
            self.assertFalse(any(e["type"] == "Alert" for e in s.job(busy)["events"]))
            self.assertIn("job-gpu-idle", s.cli("show", str(idle)).stdout)

            metrics = urllib.request.urlopen(s.url + "/metrics", timeout=10).read().decode()
            self.assertIn('trainyard_alerts_firing{rule="job-gpu-idle",severity="warning"} 1', metrics)

            posted = self.wait_for("the webhook POST", lambda: list(hook.bodies))
            path, body = posted[0]
            self.assertEqual(path, "/hook")
            self.assertEqual(body["status"], "firing")
            self.assertEqual(body["alerts"][0]["labels"]["alertname"], "job-gpu-idle")
            self.assertEqual(body["alerts"][0]["labels"]["hpc_job"], str(idle))
            self.assertEqual(body["alert"]["id"], a["id"])

            # The job leaves the GPU: the alert resolves, in the events, the list and the webhook.
            s.cli("cancel", str(idle))
            s.wait(idle, states=("cancelled",))
            self.wait_for("the resolution event", lambda: any(
                e["type"] == "AlertResolved" for e in s.job(idle)["events"]))
            self.assertEqual(idle_alerts(), [])
            everything = json.loads(s.cli("alerts", "--all", "-o", "json").stdout)["items"]
            self.assertIn(("job-gpu-idle", "resolved"), [(x["rule"], x["state"]) for x in everything])
            self.wait_for("the resolved POST", lambda: any(
                b["status"] == "resolved" for _, b in hook.bodies))
            self.assertEqual(len([b for _, b in hook.bodies if b["status"] == "firing"]), 1)
        finally:
            s.stop()
            hook.close()

    def test_bad_alerts_config_is_refused_with_file_and_line(self):
        for text, expect in [("alerts:\n  idle: {idleFor: soon}\n", "alerts.idle.idleFor must be a duration"),
                             ("alerts:\n  bogus: 1\n", 'unknown field "alerts.bogus"'),
                             ("alerts:\n  webhook: {url: ftp://x}\n", "alerts.webhook.url must be")]:
            s = harness.Server(config=text)
            with self.assertRaises(RuntimeError) as ctx:
                s.start()
            s.stop()
            self.assertIn("config.yaml:", str(ctx.exception))
            self.assertIn(expect, str(ctx.exception))


class Doctor(unittest.TestCase):
    def test_doctor_reads_the_jobs_step_metrics_and_says_what_to_change(self):
        s = harness.Server(config=FAST).start()
        try:
            # 60 steps that wait on data for half of each step, in fp32 on an H100.
            line = ('{"time": 1748779212.5, "step": %d, "samples": 32, "loss": 0.5, '
                    '"data_wait_s": 0.05, "step_time_s": 0.1, "dtype": "float32"}')
            script = ("for i in $(seq 1 60); do printf '%s\\n' $i >> $TRAINYARD_METRICS_FILE; "
                      "done" % line)
            starved = s.run("--gpus", "1", "--name", "starved", "--", "sh", "-c", script)
            self.assertEqual(s.wait(starved)["state"], "succeeded")
            d = json.loads(s.cli("doctor", str(starved), "-o", "json").stdout)
            rules = [f["rule"] for f in d["findings"]]
            self.assertIn("input-bound", rules, d)
            self.assertIn("fp32-on-tensor-cores", rules, d)
            text = s.cli("doctor", str(starved)).stdout
            self.assertIn("input-bound", text)
            self.assertIn("num_workers", text)
            # A job that reported nothing yet gets no diagnosis, only "not enough data".
            quiet = s.run("--gpus", "1", "--name", "quiet", "--", "true")
            s.wait(quiet)
            d = json.loads(s.cli("doctor", str(quiet), "-o", "json").stdout)
            self.assertEqual(d["findings"], [], d)
            self.assertIn("not enough data", d["verdict"])
            missing = s.cli("doctor", "99999", check=False)
            self.assertEqual(missing.returncode, 3, missing.stderr)
        finally:
            s.stop()


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
