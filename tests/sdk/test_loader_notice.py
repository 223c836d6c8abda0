"""The notice sent to the process group reaches a DataLoader's workers too; with
trainyard.worker_init_fn they ignore it, and the loop saves and exits 75.

Skipped when torch is not importable (install python3-torch).
"""

import os
import signal
import subprocess
import time
import unittest

import sdk_test_util
from trainyard import CheckpointManager


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): DataLoader "
                     "workers not tested")
class LoaderNoticeTest(unittest.TestCase):
    def test_notice_to_the_group_with_two_loader_workers_saves_and_exits_75(self):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        directory = os.path.join(tmp.path, "ckpt")
        child = sdk_test_util.start_child("loader_child.py", [directory, "shielded"],
                                          sdk_test_util.child_env(), start_new_session=True)
        try:
            for _ in range(5):  # the workers are up and feeding batches
                line = child.stdout.readline()
                if not line.startswith("step "):
                    self.fail("no step line (%r): %s" % (line, child.communicate()[1]))
            os.killpg(child.pid, signal.SIGTERM)  # the server's notice: the whole group
            out, err = child.communicate(timeout=60)
        except BaseException:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
        self.assertEqual(child.returncode, 75, err)
        stopped = [line for line in out.splitlines() if line.startswith("stopped ")]
        self.assertEqual(len(stopped), 1, out + err)
        step = int(stopped[0].split()[1])
        ck = CheckpointManager(directory, keep_last=1).latest()
        self.assertIsNotNone(ck, err)
        self.assertEqual(ck.step, step)
        self.assertEqual(ck.read("step"), b"%d" % step)
        self.assertNotIn("killed by signal", err)


if __name__ == "__main__":
    unittest.main()
