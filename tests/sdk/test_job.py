"""Job: environment, notice parsing, and the notice -> checkpoint -> exit 75 path."""

import datetime
import json
import os
import signal
import unittest

import sdk_test_util
from trainyard import CheckpointManager, EXIT_PREEMPTED, runtime


class EnvAndNoticeTest(unittest.TestCase):
    def test_reads_the_environment(self):
        j = runtime.Job(env={"TRAINYARD_JOB_ID": "42", "TRAINYARD_ATTEMPT": "3", "RANK": "1",
                             "WORLD_SIZE": "4", "LOCAL_RANK": "1",
                             "TRAINYARD_CHECKPOINT_DIR": "/c", "TRAINYARD_RUN_DIR": "/r",
                             "TRAINYARD_PREEMPT_NOTICE": "/r/preempt_notice"}, signals=())
        self.assertTrue(j.managed)
        self.assertEqual((j.job_id, j.attempt, j.rank, j.world_size, j.local_rank),
                         ("42", 3, 1, 4, 1))
        self.assertEqual(j.checkpoint_dir, "/c")
        self.assertEqual(j.metrics_path, "/r/metrics.jsonl")
        self.assertFalse(j.should_stop())

    def test_defaults_outside_trainyard(self):
        j = runtime.Job(env={}, signals=())
        self.assertFalse(j.managed)
        self.assertEqual((j.attempt, j.rank, j.world_size), (1, 0, 1))
        self.assertIsNone(j.checkpoint_dir)
        self.assertIsNone(j.deadline)

    def test_notice_json(self):
        n = runtime.Notice.parse(json.dumps({"reason": "preempted by job 7",
                                             "deadline": "2030-01-02T03:04:05Z",
                                             "graceSeconds": 30}))
        self.assertEqual(n.reason, "preempted by job 7")
        self.assertEqual(n.deadline, datetime.datetime(2030, 1, 2, 3, 4, 5,
                                                       tzinfo=datetime.timezone.utc))
        self.assertEqual(n.grace_seconds, 30)

    def test_notice_is_parsed_leniently(self):
        n = runtime.Notice.parse("preempted: make room\n")
        self.assertEqual((n.reason, n.deadline, n.grace_seconds), ("preempted: make room", None,
                                                                  None))
        n = runtime.Notice.parse('{"reason": "x", "deadline": "soon", "graceSeconds": "30"}')
        self.assertEqual((n.reason, n.deadline, n.grace_seconds), ("x", None, None))
        self.assertEqual(runtime.Notice.parse("[1, 2]").reason, "[1, 2]")

    def test_rfc3339_variants(self):
        utc = datetime.timezone.utc
        self.assertEqual(runtime.parse_time("2030-01-02T03:04:05.123456789Z"),
                         datetime.datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=utc))
        self.assertEqual(runtime.parse_time("2030-01-02T05:04:05+02:00"),
                         datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=utc))
        self.assertIsNone(runtime.parse_time(""))
        self.assertIsNone(runtime.parse_time(17))

    def test_notice_file_makes_should_stop_true(self):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.path, "preempt_notice")
        j = runtime.Job(env={"TRAINYARD_PREEMPT_NOTICE": path}, signals=())
        self.assertFalse(j.should_stop())
        with open(path, "w") as f:
            json.dump({"reason": "r", "deadline": "2030-01-02T03:04:05Z", "graceSeconds": 5}, f)
        self.assertTrue(j.should_stop())
        self.assertEqual(j.deadline.year, 2030)
        self.assertLess(j.seconds_left(), 10 ** 9)


class NoticeEndToEndTest(unittest.TestCase):
    """A child process running a contract-following loop, stopped like the server stops it."""

    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.addCleanup(self.tmp.cleanup)
        self.ckpt = os.path.join(self.tmp.path, "ckpt")
        self.notice = os.path.join(self.tmp.path, "preempt_notice")

    def start(self, attempt, total=2000):
        env = sdk_test_util.child_env(TRAINYARD_JOB_ID=1, TRAINYARD_ATTEMPT=attempt,
                                      TRAINYARD_CHECKPOINT_DIR=self.ckpt,
                                      TRAINYARD_PREEMPT_NOTICE=self.notice,
                                      TRAINYARD_RUN_DIR=self.tmp.path)
        # Its own process group, as under the wrapper: the notice goes to the group.
        return sdk_test_util.start_child("notice_child.py", [total], env,
                                         start_new_session=True)

    def wait_for_step(self, child, step):
        for line in child.stdout:
            if line.strip() == "step %d" % step:
                return
        self.fail("child ended before step %d: %s" % (step, child.stderr.read()))

    def stopped_line(self, out):
        lines = [line for line in out.splitlines() if line.startswith("stopped")]
        self.assertEqual(len(lines), 1, out)
        _, step, info = lines[0].split(" ", 2)
        return int(step), json.loads(info)

    def test_sigterm_checkpoints_at_a_step_boundary_and_exits_75(self):
        child = self.start(attempt=1)
        self.wait_for_step(child, 25)
        with open(self.notice, "w") as f:  # the server writes the file, then signals
            json.dump({"reason": "preempted for job 9", "deadline": "2030-01-01T00:00:00Z",
                       "graceSeconds": 30}, f)
        os.killpg(child.pid, signal.SIGTERM)
        out, err = child.communicate(timeout=60)
        self.assertEqual(child.returncode, EXIT_PREEMPTED, err)
        step, info = self.stopped_line(out)
        self.assertGreaterEqual(step, 25)
        self.assertEqual(info["reason"], "preempted for job 9")
        self.assertEqual(info["deadline"], "2030-01-01T00:00:00+00:00")
        self.assertEqual(info["signal"], signal.SIGTERM)
        self.assertEqual(CheckpointManager(self.ckpt).latest().step, step)

        # The next attempt resumes exactly there (the executor removes a stale notice).
        os.remove(self.notice)
        child = self.start(attempt=2, total=step + 10)
        out, err = child.communicate(timeout=60)
        self.assertEqual(child.returncode, 0, err)
        self.assertIn("start %d 2" % step, out)
        self.assertIn("done %d" % (step + 10), out)
        with open(os.path.join(self.tmp.path, "metrics.jsonl")) as f:
            records = [json.loads(line) for line in f]
        self.assertEqual([r["step"] for r in records], list(range(1, step + 11)))
        self.assertEqual({r["attempt"] for r in records}, {1, 2})

    def test_notice_file_alone_stops_the_loop(self):
        child = self.start(attempt=1)
        self.wait_for_step(child, 5)
        with open(self.notice, "w") as f:
            f.write("not json: preempted")
        out, err = child.communicate(timeout=60)
        self.assertEqual(child.returncode, EXIT_PREEMPTED, err)
        step, info = self.stopped_line(out)
        self.assertEqual(info, {"reason": "not json: preempted", "deadline": None,
                                "signal": None})
        self.assertEqual(CheckpointManager(self.ckpt).latest().step, step)


if __name__ == "__main__":
    unittest.main()
