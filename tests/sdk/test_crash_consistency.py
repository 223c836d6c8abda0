"""SIGKILL at random moments of a save loop never leaves a torn latest checkpoint.

TY_SDK_LONG=1 raises the number of kills from 20 to 100 per mode.
"""

import os
import random
import signal
import time
import unittest

import sdk_test_util
from sdk_test_util import payload
from trainyard import CheckpointManager

KILLS = 100 if os.environ.get("TY_SDK_LONG") == "1" else 20


class CrashConsistencyTest(unittest.TestCase):
    def run_kills(self, mode):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        directory = os.path.join(tmp.path, "ckpt")
        rng = random.Random(int(os.environ.get("TY_SDK_SEED", "0")) or None)
        confirmed = 0  # the newest step a child reported as committed
        torn = 0
        for i in range(KILLS):
            child = sdk_test_util.start_child("crash_child.py", [directory, mode],
                                              sdk_test_util.child_env())
            self.assertEqual(child.stdout.readline().strip(), "ready")
            time.sleep(rng.uniform(0.0, 0.06))
            child.send_signal(signal.SIGKILL)
            out, err = child.communicate(timeout=30)
            self.assertEqual(child.returncode, -signal.SIGKILL, err)
            # Only complete lines: the kill may cut the last one short.
            saved = [int(line[6:]) for line in out.split("\n")[:-1]
                     if line.startswith("saved ")]
            confirmed = max([confirmed] + saved)
            torn += any(name.endswith(".tmp") for name in os.listdir(directory))
            ck = CheckpointManager(directory, keep_last=2).latest()
            # The save in flight may have committed before its "saved" line was printed.
            allowed = {confirmed, confirmed + 1}
            if ck is None:
                self.assertEqual(confirmed, 0, "kill %d: no checkpoint after step %d was "
                                 "reported" % (i, confirmed))
                continue
            self.assertIn(ck.step, allowed, "kill %d" % i)
            self.assertEqual(ck.read_all(), payload(ck.step), "kill %d" % i)
            confirmed = ck.step
        print("\n%s: %d kills, %d landed inside a save (a .tmp dir was left), newest step %d"
              % (mode, KILLS, torn, confirmed))

    def test_sigkill_during_synchronous_saves(self):
        self.run_kills("sync")

    def test_sigkill_during_background_saves(self):
        self.run_kills("background")


if __name__ == "__main__":
    unittest.main()
