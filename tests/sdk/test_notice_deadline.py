"""A save that outlasts the notice's grace period: the SDK warns, the kill at the deadline
loses only that save, and the previous checkpoint is still what latest() returns."""

import datetime
import json
import os
import signal
import time
import unittest

import sdk_test_util
from trainyard import CheckpointManager

SAVE_S = 2.0
GRACE_S = 0.5


class NoticeDeadlineTest(unittest.TestCase):
    def test_save_longer_than_grace_is_killed_and_previous_checkpoint_loads(self):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        ckpt = os.path.join(tmp.path, "ckpt")
        notice = os.path.join(tmp.path, "preempt_notice")
        child = sdk_test_util.start_child(
            "slow_save_child.py", [SAVE_S],
            sdk_test_util.child_env(TRAINYARD_CHECKPOINT_DIR=ckpt,
                                    TRAINYARD_PREEMPT_NOTICE=notice, TRAINYARD_JOB_ID=7))
        self.assertEqual(child.stdout.readline().strip(), "saved 1")
        # What the executor does: the notice file (atomically), the signal, and SIGKILL once
        # the grace period is over.
        deadline = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
            seconds=GRACE_S)
        with open(notice + ".tmp", "w") as f:
            json.dump({"reason": "preempted for job 9",
                       "deadline": deadline.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       "graceSeconds": GRACE_S}, f)
        os.rename(notice + ".tmp", notice)
        child.send_signal(signal.SIGTERM)
        time.sleep(GRACE_S)
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate(timeout=30)
        self.assertEqual(child.returncode, -signal.SIGKILL, out + err)
        self.assertIn("saving ", out)
        self.assertNotIn("saved 2", out.replace("saved 1", ""))
        self.assertIn("will likely be killed first", err)
        self.assertIn("the previous checkpoint stays loadable: step 1", err)
        # The save in flight left only a .tmp directory; step 1 is still the newest that loads.
        self.assertTrue(any(n.endswith(".tmp") for n in os.listdir(ckpt)), os.listdir(ckpt))
        ck = CheckpointManager(ckpt).latest()
        self.assertIsNotNone(ck)
        self.assertEqual(ck.step, 1)
        self.assertEqual(ck.read("state.txt"), b"step 1\n")


if __name__ == "__main__":
    unittest.main()
