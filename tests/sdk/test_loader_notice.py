"""The notice sent to the process group reaches a DataLoader's workers too; with
trainyard.worker_init_fn they ignore it, and the loop saves and exits 75. Their parent can
still stop them: multiprocessing does at interpreter exit, with SIGTERM, and then joins them.

Skipped when torch is not importable (install python3-torch).
"""

import os
import signal
import subprocess
import sys
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

    def test_persistent_workers_ignore_a_notice_yet_the_program_exits_promptly(self):
        # Epoch 1, then the test sends SIGTERM to the workers (from outside, as the notice
        # comes); epoch 2 must run on the same workers, and the exit, where multiprocessing
        # sends SIGTERM to its daemon workers and joins them, must not wait forever.
        child = subprocess.Popen([sys.executable, "-c", _PERSISTENT_CHILD],
                                 env=sdk_test_util.child_env(), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = child.stdout.readline().split()
            if not line or line[0] != "pids":
                self.fail("no pids line (%r): %s" % (line, child.communicate()[1]))
            first = sorted(int(p) for p in line[1:])
            self.assertEqual(len(first), 2, line)
            for pid in first:
                os.kill(pid, signal.SIGTERM)
            time.sleep(0.3)
            child.stdin.write("go\n")
            child.stdin.flush()
            out, err = child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
            self.fail("the program did not exit within 60 s of its last epoch (workers that "
                      "ignore their parent's SIGTERM hang multiprocessing's exit): %s" % err)
        except BaseException:
            child.kill()
            child.wait()
            raise
        self.assertEqual(child.returncode, 0, err)
        second = [line for line in out.splitlines() if line.startswith("epoch2 ")]
        self.assertEqual(len(second), 1, out + err)
        self.assertEqual(sorted(int(p) for p in second[0].split()[1:]), first, out + err)
        self.assertNotIn("killed by signal", err)
        self.assertNotIn("exited unexpectedly", err)


_PERSISTENT_CHILD = """
import os, sys
import torch
from torch.utils.data import DataLoader, Dataset
import trainyard

class Pids(Dataset):
    def __len__(self):
        return 32
    def __getitem__(self, i):
        return torch.tensor([os.getpid()])

loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True,
                    worker_init_fn=trainyard.worker_init_fn)
pids = sorted({int(p) for b in loader for p in b.flatten()})
print("pids", *pids, flush=True)
sys.stdin.readline()
pids = sorted({int(p) for b in loader for p in b.flatten()})
print("epoch2", *pids, flush=True)
"""


if __name__ == "__main__":
    unittest.main()
