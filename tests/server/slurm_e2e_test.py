"""trainyard on a real Slurm cluster: a private 2-node loopback Slurm (scripts/slurm-cluster:
real slurmctld, slurmd, sbatch, squeue, scancel; never a mock) driven by the real server.

Gangs across nodes (uneven too) with the environment of the local executor, GPUs held by jobs
submitted to Slurm directly, preemption with the notice on every rank and exit 75, a checkpoint
dir that survives the move, kill -9 of the server while Slurm jobs run (re-adopted by their Slurm
job, never submitted twice, real exit codes of jobs that ended meanwhile), a Slurm job cancelled
by hand, a node set down, slurmctld killed and restarted, and a GRES type with no mapping.

Usage: slurm_e2e_test.py PATH/TO/trainyard [unittest args]. Needs root and Slurm's Debian
packages; skipped (with the reason) otherwise."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import slurm_harness as sh  # noqa: E402

FAST = "policy: priority\nminRuntimeSeconds: 0\nretryBackoff: {initialSeconds: 0.5, maxSeconds: 2}\n"


def job_spec(name, command, workers=1, gpus=1, priority=100, preemptible=True, extra=""):
    return json.dumps({
        "apiVersion": "trainyard.dev/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"workers": workers, "priority": priority, "preemptible": preemptible,
                 "checkpoint": {"gracePeriodSeconds": 20},
                 "template": {"command": ["sh", "-c", command],
                              "resources": {"limits": {"nvidia.com/gpu": gpus}}}}})


class SlurmE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = sh.available()
        if why:
            raise unittest.SkipTest(why)
        cls.cluster = sh.SlurmCluster().start()
        try:
            cls.server = sh.slurm_server(cls.cluster, FAST).start()
        except BaseException:
            cls.cluster.stop()  # tearDownClass does not run when setUpClass fails
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.cluster.stop()

    def tearDown(self):
        # Every test leaves the cluster empty of trainyard's work.
        s = self.server
        for j in json.loads(s.cli("ls", "-o", "json").stdout):
            if j["state"] not in ("succeeded", "failed", "cancelled"):
                s.cli("cancel", str(j["id"]), check=False)
        sh.wait_for(lambda: not self.cluster.active_jobs(), timeout=40,
                    what="no active trainyard jobs in Slurm")
        # A job Slurm lists as completed may hold its node's GRES a moment longer (slurmd's
        # epilog); the next test would see those GPUs as held by someone else.
        sh.wait_for(lambda: not any(self.gres_in_use().values()), timeout=40,
                    what="no GPUs in use on any node")

    def gres_in_use(self):
        """GPUs Slurm counts as in use, per node (sinfo --json gres_used)."""
        r = self.cluster.run("sinfo", "--json", check=False)
        if r.returncode != 0:
            return {"(sinfo failed)": 1}  # not known to be idle: ask again
        info = json.loads(r.stdout)
        used = {}
        for n in info["nodes"]:
            text = n.get("gres_used") or ""
            # "gpu:h100:2(IDX:0-1)" or "gpu:h100:0(IDX:N/A)"
            used[n["name"]] = sum(int(part.split("(")[0].rsplit(":", 1)[-1])
                                  for part in text.split(",") if part.startswith("gpu"))
        return used

    def slurm_state(self, job_id):
        for j in self.cluster.jobs():
            if str(j["job_id"]) == str(job_id):
                state = j["job_state"]
                return state if isinstance(state, str) else state[0]
        return None

    def submit(self, spec):
        path = os.path.join(self.server.state_dir, "spec.json")
        with harness.private_file(path) as f:
            f.write(spec)
        return self.server.submit_file(path)

    def slurm_ids_of(self, job_id, attempt):
        return [j["job_id"] for j in self.cluster.jobs()
                if j.get("comment", "").endswith(f":{job_id}:{attempt}") and
                j.get("het_job_offset", 0) in (0, None)]

    def slurm_says(self, job_id):
        """The Slurm job's state and each node's GRES in use, as Slurm answers now."""
        jobs = {str(j["job_id"]): j for j in self.cluster.jobs()}
        j = jobs.get(str(job_id), {})
        info = json.loads(self.cluster.run("sinfo", "--json").stdout)
        return {"job": job_id, "state": j.get("job_state"), "reason": j.get("state_reason"),
                "nodes": j.get("nodes"),
                "gres_used": {n["name"]: n.get("gres_used") for n in info["nodes"]}}

    def nodes(self):
        out = json.loads(self.server.cli("nodes", "-o", "json").stdout)
        return {n["name"]: n for n in out["items"]}

    def test_1_nodes_come_from_slurm(self):
        nodes = self.nodes()
        self.assertEqual(sorted(nodes), ["n1", "n2"])
        for n in nodes.values():
            self.assertEqual(n["gpuModel"], "H100-80GB")  # GRES type h100 through the table
            self.assertEqual(n["gpus"], 2)
            self.assertEqual(n["cpuMilli"], 8000)
            self.assertEqual(n["state"], "ready")
            self.assertEqual(n["labels"].get("slurm.partition/gpu"), "true")

    def test_2_uneven_gang_across_nodes(self):
        # 3 workers x 2 GPUs... cannot fit; 3 x 1 GPU packs 2 on one node and 1 on the other.
        jid = self.submit(job_spec(
            "gang", "echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE node=$SLURMD_NODENAME "
                    "cvd=$CUDA_VISIBLE_DEVICES master=$MASTER_ADDR:$MASTER_PORT uid=$(id -u) "
                    "ckpt=$TRAINYARD_CHECKPOINT_DIR", workers=3))
        j = self.server.wait(jid, timeout=60)
        self.assertEqual(j["state"], "succeeded", j)
        lines = {}
        for r in range(3):
            out = self.server.logs(jid, "--rank", str(r))
            fields = dict(kv.split("=", 1) for kv in out.split())
            lines[r] = fields
            self.assertEqual(fields["rank"], str(r))
            self.assertEqual(fields["world"], "3")
            self.assertTrue(fields["master"].startswith("127.0.0.1:"), fields)
            self.assertTrue(fields["ckpt"].startswith(self.server.shared_dir), fields)
            if os.geteuid() == 0 and harness.repo_reachable_by_workers():
                self.assertNotEqual(fields["uid"], "0", "workers run as the team's user")
        by_node = {}
        for r, f in lines.items():
            by_node.setdefault(f["node"], []).append(f)
        self.assertEqual(sorted(len(v) for v in by_node.values()), [1, 2], lines)
        for ranks in by_node.values():
            devices = [f["cvd"] for f in ranks]
            self.assertEqual(len(set(devices)), len(devices), "two ranks on one GPU")
            self.assertEqual(sorted(int(f["local"]) for f in ranks), list(range(len(ranks))))
        self.assertEqual(len(self.slurm_ids_of(jid, 1)), 1, "one Slurm job per attempt")

    def test_3_gpus_held_outside_trainyard_count_as_busy(self):
        c = self.cluster
        foreign = c.run("sbatch", "--parsable", "-w", "n1", "--gres=gpu:2", "-J", "someone-else",
                        "--output=/dev/null",
                        "--wrap", "sleep 300").stdout.strip().split(";")[0]
        try:
            # Generous timeouts: a loaded 2-core machine runs other Slurm tests beside this one.
            # Slurm's backfill starts the job up to a second after sbatch; only then are n1's
            # GPUs someone else's.
            sh.wait_for(lambda: self.slurm_state(foreign) == "RUNNING", timeout=60,
                        what="the job submitted to Slurm directly running")
            sh.wait_for(lambda: self.nodes()["n1"].get("gpusHeldOutside") == 2, timeout=60,
                        what="n1's GPUs held outside trainyard")
            # Two workers of two GPUs each need both nodes whole: must wait.
            jid = self.submit(job_spec("wide", "echo ran on $SLURMD_NODENAME", workers=2, gpus=2))
            time.sleep(2)
            j = self.server.job(jid)
            self.assertEqual(j["state"], "pending", (j, self.nodes(), self.slurm_says(foreign)))
            # A job that fits beside the foreign one goes to n2.
            small = self.submit(job_spec("beside", "echo ran on $SLURMD_NODENAME", gpus=2))
            done = self.server.wait(small, timeout=90)
            self.assertEqual(done["state"], "succeeded", done)
            self.assertIn("ran on n2", self.server.logs(small))
            j = self.server.job(jid)
            self.assertEqual(j["state"], "pending", (j, self.nodes(), self.slurm_says(foreign)))
        finally:
            c.run("scancel", foreign, check=False)
        j = self.server.wait(jid, timeout=90)
        self.assertEqual(j["state"], "succeeded", j)

    def test_4_preemption_reaches_every_rank_and_resumes(self):
        low = self.submit(job_spec(
            "low",
            'f="$TRAINYARD_CHECKPOINT_DIR/step-$RANK"; step=$(cat "$f" 2>/dev/null || echo 0); '
            'echo "resume rank=$RANK step=$step node=$SLURMD_NODENAME"; '
            'trap \'echo "notice rank=$RANK $(cat $TRAINYARD_RUN_DIR/preempt_notice)"; '
            'echo $step > "$f"; exit 75\' TERM; '
            'while [ $step -lt 40 ]; do step=$((step+1)); sleep 0.2; done; echo done rank=$RANK',
            workers=2, gpus=2, priority=10))
        sh.wait_for(lambda: self.server.job(low)["state"] == "running", timeout=40,
                    what="low running")
        time.sleep(2)
        high = self.submit(job_spec("high", "echo urgent on $SLURMD_NODENAME; sleep 1", gpus=2,
                                    priority=1000, preemptible=False))
        self.assertEqual(self.server.wait(high, timeout=60)["state"], "succeeded")
        j = self.server.wait(low, timeout=90)
        self.assertEqual(j["state"], "succeeded", j)
        self.assertGreaterEqual(j["attempt"], 2, j)
        self.assertEqual(j["failures"], 0, "a preemption is not a failure")
        for r in range(2):
            first = self.server.logs(low, "--rank", str(r), "--attempt", "1")
            self.assertIn(f"notice rank={r}", first, "the notice reached every rank on every node")
            self.assertIn('"reason":"preempted for job', first)
            second = self.server.logs(low, "--rank", str(r), "--attempt", "2")
            step = int(second.split("step=")[1].split()[0])
            self.assertGreater(step, 0, "attempt 2 resumed from the checkpoint dir: " + second)
            self.assertIn(f"done rank={r}", second)

    def test_5_kill9_readopts_by_slurm_job_and_keeps_real_exit_codes(self):
        s = self.server
        long = self.submit(job_spec("survivor", "sleep 6; echo survived", workers=2, gpus=1))
        ends = self.submit(job_spec("ends-while-down", "sleep 1; exit 3", gpus=1))
        sh.wait_for(lambda: s.job(long)["state"] == "running" and s.job(ends)["state"] == "running",
                    timeout=40, what="both running")
        before = self.slurm_ids_of(long, 1)
        s.kill9()
        time.sleep(3)  # `ends` exits with 3 while no server runs
        s.start()
        j = s.wait(long, timeout=60)
        self.assertEqual(j["state"], "succeeded", j)
        self.assertEqual(j["attempt"], 1, "re-adopted, not restarted")
        self.assertEqual(self.slurm_ids_of(long, 1), before, "no second Slurm job for the attempt")
        self.assertEqual(len(self.slurm_ids_of(long, 2)), 0)
        e = s.wait(ends, states=("pending", "failed"), timeout=30)
        sh.wait_for(lambda: s.job(ends).get("attempts"), timeout=20, what="attempt 1 recorded")
        first = s.job(ends)["attempts"][0]
        self.assertEqual(first["exitCode"], 3, s.job(ends))
        # The failure's own event says why (the job's `reason` may already be its retry's).
        _, events = s.http("GET", f"/api/v1/jobs/{ends}/events")
        self.assertTrue(any("code 3" in e["reason"] for e in events["items"]), events)

    def test_6_cancelled_by_hand_in_slurm(self):
        jid = self.submit(job_spec("victim", "sleep 60", gpus=1))
        sh.wait_for(lambda: self.slurm_ids_of(jid, 1) and self.server.job(jid)["state"] == "running",
                    timeout=40, what="running in Slurm")
        self.cluster.run("scancel", str(self.slurm_ids_of(jid, 1)[0]))
        j = self.server.wait(jid, timeout=30)
        self.assertEqual(j["state"], "cancelled", j)
        self.assertIn("cancelled outside trainyard", j["reason"])

    def test_7_node_set_down_requeues_its_jobs(self):
        c = self.cluster
        jid = self.submit(job_spec("on-a-node", "echo on $SLURMD_NODENAME; sleep 60", gpus=2))
        # Running in Slurm, not only submitted (a node that fails before the start ends the
        # attempt as not-started instead).
        sh.wait_for(lambda: "on n" in self.server.logs(jid), timeout=40, what="the rank's output")
        node = self.server.job(jid)["placement"][0]["node"]
        try:
            c.run("scontrol", "update", f"nodename={node}", "state=down", "reason=e2e")
            sh.wait_for(lambda: self.server.job(jid)["attempt"] >= 2, timeout=40,
                        what="requeued after the node went down")
            j = self.server.job(jid)
            self.assertEqual(j["failures"], 0, j)
            self.assertEqual(j["attempts"][0]["outcome"], "interrupted", j["attempts"][0])
            self.assertTrue(any("interrupted: Slurm" in e["reason"] for e in j["events"]),
                            j["events"])
        finally:
            c.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        self.server.cli("cancel", str(jid))

    def test_8_slurmctld_restart_while_jobs_run(self):
        s, c = self.server, self.cluster
        jid = self.submit(job_spec("through-restart", "sleep 25; echo finished", gpus=1))
        sh.wait_for(lambda: s.job(jid)["state"] == "running", timeout=40, what="running")
        node = s.job(jid)["placement"][0]["node"]
        sh.restart_slurmd(c, node)
        time.sleep(1)
        self.assertEqual(s.job(jid)["state"], "running", "a slurmd restart keeps the job")
        sh.kill_ctld(c)
        # The server keeps running and answering; new work waits.
        time.sleep(2)
        self.assertEqual(s.job(jid)["state"], "running")
        queued = self.submit(job_spec("while-down", "echo ok", gpus=1))
        time.sleep(1)
        self.assertEqual(s.job(queued)["state"], "pending")
        sh.start_ctld(c)
        j = s.wait(jid, timeout=60)
        self.assertEqual(j["state"], "succeeded", j)
        self.assertEqual(j["attempt"], 1, "the job ran through both restarts")
        self.assertEqual(s.wait(queued, timeout=60)["state"], "succeeded")
        self.assertIn("finished", s.logs(jid))


    def test_9_server_restarts_while_slurm_is_down(self):
        s, c = self.server, self.cluster
        jid = self.submit(job_spec("outlives-both", "echo started; sleep 30; echo finished",
                                   workers=2, gpus=1))
        sh.wait_for(lambda: "started" in s.logs(jid), timeout=40, what="running in Slurm")
        before = self.slurm_ids_of(jid, 1)
        s.kill9()
        sh.kill_ctld(c)
        s.start()  # Slurm does not answer: the server starts anyway and adopts what it stored
        self.assertEqual(s.job(jid)["state"], "running")
        time.sleep(2)
        self.assertEqual(s.job(jid)["state"], "running", "never taken for lost while Slurm is away")
        sh.start_ctld(c)
        j = s.wait(jid, timeout=60)
        self.assertEqual(j["state"], "succeeded", j)
        self.assertEqual(j["attempt"], 1, j)
        self.assertEqual(self.slurm_ids_of(jid, 1), before)
        self.assertEqual(self.slurm_ids_of(jid, 2), [])


    def test_10_slurm_that_will_not_start_it_requeues_with_the_reason(self):
        s, c = self.server, self.cluster
        c.run("scontrol", "update", "partitionname=gpu", "state=down")
        try:
            jid = self.submit(job_spec("refused", "echo finally", gpus=1))
            sh.wait_for(lambda: any("Slurm did not start job" in e["reason"]
                                    for e in s.job(jid)["events"]), timeout=40,
                        what="the refusal in the job's events")
            j = s.job(jid)
            self.assertEqual(j["failures"], 0, "not the job's failure")
            self.assertEqual(j["attempts"][0]["outcome"], "not-started", j["attempts"][0])
            self.assertTrue(any("PartitionDown" in e["reason"] for e in j["events"]), j["events"])
        finally:
            c.run("scontrol", "update", "partitionname=gpu", "state=up", check=False)
        j = s.wait(jid, timeout=60)
        self.assertEqual(j["state"], "succeeded", j)
        self.assertIn("finally", s.logs(jid))
        self.assertEqual(j["failures"], 0)


class SlurmTelemetry(unittest.TestCase):
    """GPU telemetry of Slurm nodes: each rank's wrapper samples the GPUs Slurm gave it (here
    synthetic ones) into the shared directory; the server's recorder reads them as the
    scheduler's slots, so /metrics, the job's telemetry and `top` cover both nodes."""

    def test_gpus_of_both_nodes_reach_metrics_top_and_the_job(self):
        why = sh.available()
        if why:
            self.skipTest(why)
        c = sh.SlurmCluster().start()
        s = sh.slurm_server(c, FAST + "telemetry: {interval: 0.2}\n",
                            gpu_sampler="sim:2xH100-80GB")
        try:
            s.start()
            path = os.path.join(s.state_dir, "spec.json")
            with harness.private_file(path) as f:
                f.write(job_spec("watched", "echo up on $SLURMD_NODENAME; sleep 8", workers=2,
                                 gpus=2))
            jid = s.submit_file(path)

            def metrics():
                import urllib.request
                with urllib.request.urlopen(s.url + "/metrics", timeout=10) as r:
                    return r.read().decode()

            def job_lines():
                return [l for l in metrics().splitlines()
                        if l.startswith("DCGM_FI_DEV_GPU_UTIL{") and f'hpc_job="{jid}"' in l]
            lines = sh.wait_for(lambda: len(job_lines()) == 4 and job_lines(), timeout=40,
                                what="4 GPUs of the job in /metrics")
            hosts = sorted(set(l.split('Hostname="')[1].split('"')[0] for l in lines))
            self.assertEqual(hosts, ["n1", "n2"], lines)
            self.assertTrue(all('UUID="slurm-n' in l for l in lines), lines)
            top = json.loads(s.cli("top", "--once", "-o", "json").stdout)
            self.assertIn(str(jid), json.dumps(top))
            tel = json.loads(s.cli("show", str(jid), "-o", "json").stdout)
            self.assertEqual(tel["state"], "running", tel)
            status, body = s.http("GET", f"/api/v1/jobs/{jid}/telemetry")
            self.assertEqual(status, 200, body)
            self.assertGreater(len(body.get("samples", [])), 0, body)
            self.assertEqual(s.wait(jid, timeout=60)["state"], "succeeded")
        finally:
            s.stop()
            c.stop()


class SlurmUnmappedGres(unittest.TestCase):
    def test_gres_type_without_mapping(self):
        why = sh.available()
        if why:
            self.skipTest(why)
        c = sh.SlurmCluster(nodes=1, gres_type="mystery9000").start()
        s = sh.slurm_server(c, FAST)
        try:
            s.start()
            nodes = json.loads(s.cli("nodes", "-o", "json").stdout)["items"]
            self.assertEqual(len(nodes), 1)
            self.assertNotEqual(nodes[0]["state"], "ready")
            self.assertIn("mystery9000", nodes[0]["problem"])
            self.assertIn("gresTypes", nodes[0]["problem"])
        finally:
            s.stop()
            c.stop()


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
