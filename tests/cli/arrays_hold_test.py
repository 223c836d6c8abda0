"""End-to-end tests of job arrays, hold/release and update: the real `trainyard server` with
simulated GPUs, driven by the real CLI and raw HTTP. An array's %N limit holds while its tasks
run, each task sees its index, a hold survives a restart, and a changed priority class is used.
Usage: arrays_hold_test.py PATH/TO/trainyard [unittest args]"""
import json
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.05\nretryBackoff: {initialSeconds: 0.2, maxSeconds: 1}\n"


def array_id(run_output):
    m = re.match(r"array (\d+) submitted: (\d+) tasks", run_output)
    if not m:
        raise AssertionError("unexpected run output: " + run_output)
    return int(m.group(1)), int(m.group(2))


def tasks(s, aid):
    return json.loads(s.cli("ls", "--array", str(aid), "-o", "json").stdout)


class Arrays(harness.ServerTestCase):
    CONFIG = FAST

    def test_limit_holds_while_tasks_run_and_each_sees_its_index(self):
        out = self.s.cli("run", "--array", "0-5%2", "--name", "sweep", "--gpus", "1", "--",
                         "sh", "-c", "echo IDX=$TRAINYARD_ARRAY_INDEX AJ=$TRAINYARD_ARRAY_JOB_ID;"
                         " sleep 0.7").stdout
        aid, n = array_id(out)
        self.assertEqual(n, 6)
        self.assertIn("at most 2 running at once", out)
        seen_limit_reason, most_running = False, 0
        deadline = time.time() + 40
        while time.time() < deadline:
            items = tasks(self.s, aid)
            running = [t for t in items if t["state"] == "running"]
            most_running = max(most_running, len(running))
            self.assertLessEqual(len(running), 2, items)
            seen_limit_reason |= any("array limit" in t.get("waiting", "") for t in items)
            if all(t["state"] == "succeeded" for t in items):
                break
            time.sleep(0.1)
        items = tasks(self.s, aid)
        self.assertEqual(sorted(t["name"] for t in items), [f"sweep-{i}" for i in range(6)])
        self.assertTrue(all(t["state"] == "succeeded" for t in items), items)
        self.assertEqual(most_running, 2)
        self.assertTrue(seen_limit_reason)
        for t in items:
            idx = t["array"]["index"]
            self.assertEqual(t["array"]["jobId"], aid)
            self.assertIn(f"IDX={idx} AJ={aid}", self.s.logs(t["id"]))

    def test_bad_array_specs_are_refused_with_the_reason(self):
        r = self.s.cli("run", "--array", "5-2", "--", "true", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("trainyard run: --array \"5-2\": the range 5-2 ends before it starts",
                      r.stderr)
        r = self.s.cli("run", "--array", "0-10000", "--", "true", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("too many tasks: at most 10000", r.stderr)
        # The same rule for a spec file's field, with the file and line.
        path = os.path.join(self.s.state_dir, "bad-array.yaml")
        with open(path, "w") as f:
            f.write("apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: a}\nspec:\n"
                    "  array: 1-2%0\n  template: {command: [\"true\"]}\n")
        r = self.s.cli("submit", "-f", path, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad-array.yaml:5:10: spec.array", r.stderr)

    def test_cancel_of_the_array_cancels_every_task(self):
        out = self.s.cli("run", "--array", "0-4%1", "--name", "long", "--", "sleep", "30").stdout
        aid, _ = array_id(out)
        deadline = time.time() + 20
        while not any(t["state"] == "running" for t in tasks(self.s, aid)):
            self.assertLess(time.time(), deadline)
            time.sleep(0.1)
        out = self.s.cli("cancel", "--array", str(aid)).stdout
        self.assertIn(f"array {aid}: 4 tasks cancelled, 1 cancelling", out)
        for t in tasks(self.s, aid):
            self.assertEqual(self.s.wait(t["id"])["state"], "cancelled")


class HoldAndUpdate(unittest.TestCase):
    def test_hold_survives_a_restart_and_update_changes_the_class(self):
        s = harness.Server(config=FAST).start()
        try:
            blocker = s.run("--gpus", "4", "--name", "blocker", "--", "sleep", "60")
            s.wait(blocker, states=("running",))
            jid = s.run("--gpus", "1", "--name", "later", "--", "echo", "ran")
            self.assertIn(f"job {jid} held", s.cli("hold", str(jid)).stdout)
            r = s.cli("hold", str(blocker), check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"job {blocker} is running; only a pending job can be held", r.stderr)
            s.stop()
            s = harness.Server(config=FAST, state_dir=s.state_dir).start()
            s.cli("cancel", str(blocker))
            s.wait(blocker)
            time.sleep(0.5)  # several cycles with free GPUs
            job = s.job(jid)
            self.assertEqual(job["state"], "pending")
            self.assertTrue(job["held"])
            self.assertIn("held by user", job["waiting"])
            out = s.cli("update", "later", "--priority", "high").stdout
            self.assertIn(f"job {jid} priority class high (priority 1000)", out)
            status, body = s.http("PATCH", f"/api/v1/jobs/{jid}", b'{"priorityClass": "low"}')
            self.assertEqual(status, 200, body)
            self.assertEqual(body["priority"], 0)
            self.assertEqual(s.job(jid)["spec"]["spec"]["priorityClass"], "low")
            s.cli("release", str(jid))
            self.assertEqual(s.wait(jid)["state"], "succeeded")
            r = s.cli("update", str(jid), "--priority", "high", check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn("has already ended (succeeded); only a pending job can be updated",
                          r.stderr)
            status, body = s.http("POST", f"/api/v1/jobs/{jid}/hold", b"{}")
            self.assertEqual(status, 409, body)
        finally:
            s.stop()


if __name__ == "__main__":
    harness.BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
