"""CheckpointManager: round trip, manifest checks and fallback, pruning, leftovers."""

import json
import os
import unittest

import sdk_test_util
from sdk_test_util import payload
from trainyard import CheckpointManager, runtime
from trainyard import checkpoint as ckpt_module


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.dir = os.path.join(self.tmp.path, "ckpt")

    def tearDown(self):
        self.tmp.cleanup()

    def test_round_trip_with_dict(self):
        mgr = CheckpointManager(self.dir, keep_last=3)
        self.assertIsNone(mgr.latest())
        path = mgr.save(7, payload(7), metadata={"note": "x"})
        self.assertEqual(path, os.path.join(self.dir, "step-7"))
        ck = mgr.latest()
        self.assertEqual(ck.step, 7)
        self.assertEqual(ck.read_all(), payload(7))
        self.assertEqual(ck.metadata, {"note": "x"})
        with open(os.path.join(path, "MANIFEST.json")) as f:
            m = json.load(f)
        self.assertEqual(m["format"], "trainyard-checkpoint")
        self.assertEqual(m["step"], 7)
        self.assertTrue(m["created"].endswith("Z"))
        self.assertEqual([e["name"] for e in m["files"]], ["a.bin", "b.json", "nested/c.bin"])
        self.assertEqual(m["files"][0]["size"], len(payload(7)["a.bin"]))
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-7"])

    def test_round_trip_with_writer_callback(self):
        mgr = CheckpointManager(self.dir)

        def writer(tmp):
            self.assertTrue(tmp.endswith("step-3.tmp"))
            with open(os.path.join(tmp, "w.bin"), "wb") as f:
                f.write(b"written by callback")

        mgr.save(3, writer)
        self.assertEqual(mgr.latest().read("w.bin"), b"written by callback")
        self.assertIsNone(mgr.latest().verify())

    def test_background_save_snapshots_the_bytes(self):
        mgr = CheckpointManager(self.dir)
        buf = bytearray(b"before")
        mgr.save(1, {"x": buf}, background=True)
        buf[:] = b"after!"  # the snapshot was taken on the caller's thread
        mgr.wait()
        self.assertEqual(mgr.latest().read("x"), b"before")
        self.assertIsNotNone(mgr.last_stall_s)
        self.assertIsNotNone(mgr.last_save_s)

    def test_background_error_is_raised_by_wait(self):
        mgr = CheckpointManager(self.dir)
        real = ckpt_module._write_durably

        def disk_full(path, data):
            raise OSError(28, "No space left on device")

        ckpt_module._write_durably = disk_full
        try:
            with self.assertLogs("trainyard", "ERROR"):
                mgr.save(1, {"x": b"1"}, background=True)
                with self.assertRaises(ckpt_module.CheckpointError):
                    mgr.wait()
        finally:
            ckpt_module._write_durably = real
        mgr.wait()  # the error was reported once
        self.assertIsNone(mgr.latest())
        mgr.save(2, {"x": b"2"})  # and the next save cleans up and works
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-2"])

    def test_keeps_last_n_and_never_the_one_just_written(self):
        mgr = CheckpointManager(self.dir, keep_last=2)
        for step in (10, 20, 30):
            mgr.save(step, {"s": b"%d" % step})
        self.assertEqual(mgr.steps(), [20, 30])
        mgr.save(5, {"s": b"5"})  # e.g. a rewind: 5 is older but just written
        self.assertEqual(mgr.steps(), [5, 30])

    def test_saving_a_step_again_replaces_it(self):
        mgr = CheckpointManager(self.dir)
        mgr.save(4, {"s": b"old"})
        mgr.save(4, {"s": b"new"})
        self.assertEqual(mgr.latest().read("s"), b"new")
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-4"])

    def damage_and_check_fallback(self, damage):
        mgr = CheckpointManager(self.dir, keep_last=3)
        mgr.save(1, payload(1))
        mgr.save(2, payload(2))
        damage(os.path.join(self.dir, "step-2"))
        with self.assertLogs("trainyard", "WARNING"):
            ck = mgr.latest()
        self.assertEqual(ck.step, 1)
        self.assertEqual(ck.read_all(), payload(1))

    def test_flipped_byte_falls_back(self):
        def flip(d):
            with open(os.path.join(d, "a.bin"), "r+b") as f:
                f.seek(100)
                b = f.read(1)
                f.seek(100)
                f.write(bytes([b[0] ^ 1]))
        self.damage_and_check_fallback(flip)

    def test_truncated_file_falls_back(self):
        self.damage_and_check_fallback(lambda d: os.truncate(os.path.join(d, "a.bin"), 10))

    def test_missing_file_falls_back(self):
        self.damage_and_check_fallback(lambda d: os.remove(os.path.join(d, "nested", "c.bin")))

    def test_missing_manifest_falls_back(self):
        self.damage_and_check_fallback(lambda d: os.remove(os.path.join(d, "MANIFEST.json")))

    def test_garbled_manifest_falls_back(self):
        def garble(d):
            with open(os.path.join(d, "MANIFEST.json"), "w") as f:
                f.write('{"format": "trainyard-checkpoint", "step": 2, "fil')
        self.damage_and_check_fallback(garble)

    def test_manifest_of_another_step_falls_back(self):
        def rename(d):
            os.rename(os.path.join(self.dir, "step-1"), os.path.join(self.dir, "step-3"))
        mgr = CheckpointManager(self.dir)
        mgr.save(1, payload(1))
        mgr.save(2, payload(2))
        rename(None)
        with self.assertLogs("trainyard", "WARNING"):
            self.assertEqual(mgr.latest().step, 2)

    def test_leftover_tmp_and_trash_are_ignored_and_cleaned(self):
        mgr = CheckpointManager(self.dir)
        mgr.save(1, payload(1))
        os.makedirs(os.path.join(self.dir, "step-2.tmp"))
        open(os.path.join(self.dir, "step-2.tmp", "a.bin"), "wb").close()
        os.makedirs(os.path.join(self.dir, ".trash-step-0-1-2"))
        os.makedirs(os.path.join(self.dir, "unrelated"))
        self.assertEqual(mgr.latest().step, 1)
        CheckpointManager(self.dir)
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-1", "unrelated"])

    def test_interrupted_replacement_keeps_the_old_copy_when_the_new_is_torn(self):
        mgr = CheckpointManager(self.dir, keep_last=1)
        mgr.save(2, payload(2))
        os.rename(os.path.join(self.dir, "step-2"), os.path.join(self.dir, "step-2.old"))
        os.makedirs(os.path.join(self.dir, "step-2.tmp"))  # no manifest: not complete
        with self.assertLogs("trainyard", "WARNING"):
            mgr = CheckpointManager(self.dir, keep_last=1)
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-2"])
        self.assertEqual(mgr.latest().read_all(), payload(2))

    def test_interrupted_replacement_promotes_a_complete_new_copy(self):
        mgr = CheckpointManager(self.dir, keep_last=1)
        mgr.save(2, {"v": b"old"})
        old = os.path.join(self.dir, "step-2.old")
        os.rename(os.path.join(self.dir, "step-2"), old)
        mgr.save(2, {"v": b"new"})  # recovers first: step-2 comes back, then is replaced
        self.assertEqual(mgr.latest().read("v"), b"new")
        os.rename(os.path.join(self.dir, "step-2"), os.path.join(self.dir, "step-2.tmp"))
        os.makedirs(old)
        with self.assertLogs("trainyard", "WARNING"):
            mgr = CheckpointManager(self.dir, keep_last=1)
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-2"])
        self.assertEqual(mgr.latest().read("v"), b"new")

    def test_refuses_names_that_escape(self):
        mgr = CheckpointManager(self.dir)
        for bad in ("../x", "/abs", "a//b", "MANIFEST.json", ""):
            with self.assertRaises(ValueError, msg=bad):
                mgr.save(1, {bad: b"x"})

    def test_directory_from_env(self):
        old = os.environ.get("TRAINYARD_CHECKPOINT_DIR")
        os.environ["TRAINYARD_CHECKPOINT_DIR"] = self.dir
        try:
            self.assertEqual(CheckpointManager().directory, os.path.abspath(self.dir))
        finally:
            if old is None:
                del os.environ["TRAINYARD_CHECKPOINT_DIR"]
            else:
                os.environ["TRAINYARD_CHECKPOINT_DIR"] = old

    def test_save_after_notice_is_synchronous(self):
        j = runtime.Job(env={}, signals=())
        mgr = CheckpointManager(self.dir, job=j)
        j.request_stop()
        mgr.save(9, {"x": b"9"}, background=True)
        self.assertIsNone(mgr._thread)
        self.assertEqual(mgr.latest().step, 9)


if __name__ == "__main__":
    unittest.main()
