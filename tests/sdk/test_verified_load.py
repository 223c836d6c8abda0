"""Verified loading: Checkpoint.load()/read() hash while reading, damage is caught before
any data is handed out or any object is touched, and restore() falls back or raises."""

import hashlib
import json
import os
import unittest
import zlib

import sdk_test_util
from sdk_test_util import payload
from trainyard import CheckpointError, CheckpointManager
from trainyard.checkpoint import Checkpoint
from trainyard import checkpoint as ckpt_module

BIG = 3 * ckpt_module._READ_CHUNK + 12345  # read and hashed in overlapping chunks
CHUNK = ckpt_module._CRC_CHUNK


def as_old_manifest(step_dir):
    """Rewrites a checkpoint's manifest as manifests were before chunk_crc32: sha256 only."""
    path = os.path.join(step_dir, "MANIFEST.json")
    with open(path) as f:
        m = json.load(f)
    for e in m["files"]:
        del e["chunk_size"], e["chunk_crc32"]
    with open(path, "w") as f:
        json.dump(m, f)


def edit_manifest(step_dir, fn):
    path = os.path.join(step_dir, "MANIFEST.json")
    with open(path) as f:
        m = json.load(f)
    fn(m)
    with open(path, "w") as f:
        json.dump(m, f)


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 1]))


class VerifiedLoadTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.dir = os.path.join(self.tmp.path, "ckpt")
        self.mgr = CheckpointManager(self.dir, keep_last=3)
        self.big = os.urandom(BIG)

    def tearDown(self):
        self.tmp.cleanup()

    def test_load_returns_writable_buffers_with_the_saved_bytes(self):
        files = dict(payload(1), big=self.big)
        self.mgr.save(1, files)
        got = self.mgr.latest(verify=False).load()
        self.assertEqual({k: bytes(v) for k, v in got.items()}, files)
        self.assertFalse(got["big"].readonly)

    def test_manifest_records_the_whole_sha256_and_a_crc32_per_chunk(self):
        self.mgr.save(1, {"big": self.big, "empty": b""})
        entries = {e["name"]: e for e in self.mgr.latest().manifest["files"]}
        big = entries["big"]
        self.assertEqual(big["sha256"], hashlib.sha256(self.big).hexdigest())  # the contract's
        self.assertEqual(big["chunk_size"], CHUNK)
        self.assertEqual(big["chunk_crc32"], [zlib.crc32(self.big[i:i + CHUNK])
                                              for i in range(0, BIG, CHUNK)])
        self.assertEqual(entries["empty"]["chunk_crc32"], [])

    def test_chunk_crcs_of_a_file_streamed_in_pieces_that_straddle_chunks(self):
        pieces = [b"h" * 100, self.big[:CHUNK + 5], b"s" * 7, self.big[CHUNK + 5:], b"t" * 3]

        class Streamed:
            size = sum(len(p) for p in pieces)

            def chunks(self):
                return iter(pieces)

        self.mgr.save(1, {"f": Streamed()})
        whole = b"".join(pieces)
        (e,) = self.mgr.latest().manifest["files"]
        self.assertEqual(e["chunk_crc32"], [zlib.crc32(whole[i:i + CHUNK])
                                            for i in range(0, len(whole), CHUNK)])
        self.assertEqual(e["sha256"], hashlib.sha256(whole).hexdigest())
        self.assertEqual(bytes(self.mgr.latest().load()["f"]), whole)

    def test_a_writer_callables_files_get_chunk_crcs_too(self):
        def writer(tmp):
            with open(os.path.join(tmp, "big"), "wb") as f:
                f.write(self.big)
        self.mgr.save(1, writer)
        (e,) = self.mgr.latest().manifest["files"]
        self.assertEqual(len(e["chunk_crc32"]), 4)
        self.assertEqual(bytes(self.mgr.latest().load()["big"]), self.big)

    def test_damage_anywhere_in_a_large_file_is_caught_by_load_read_and_verify(self):
        self.mgr.save(1, {"big": self.big})
        for offset in (0, CHUNK - 1, CHUNK + 7, 2 * CHUNK, BIG - 1):
            flip(os.path.join(self.dir, "step-1", "big"), offset)
            ck = self.mgr.get(1, verify=False)
            begin = offset // CHUNK * CHUNK
            where = "crc32 mismatch in bytes %d-%d" % (begin, min(BIG, begin + CHUNK))
            with self.assertRaisesRegex(CheckpointError, where):
                ck.load()
            with self.assertRaisesRegex(CheckpointError, where):
                ck.read("big")
            self.assertIn(where, ck.verify())
            flip(os.path.join(self.dir, "step-1", "big"), offset)
        self.assertEqual(bytes(self.mgr.get(1).load()["big"]), self.big)

    def test_checkpoints_with_sha256_only_manifests_still_load_and_verify(self):
        files = dict(payload(1), big=self.big)
        self.mgr.save(1, files)
        step_dir = os.path.join(self.dir, "step-1")
        as_old_manifest(step_dir)
        self.assertIsNone(self.mgr.get(1, verify=False).verify())
        got = self.mgr.get(1, verify=False).load()
        self.assertEqual({k: bytes(v) for k, v in got.items()}, files)
        for offset in (0, ckpt_module._READ_CHUNK + 7, BIG - 1):
            flip(os.path.join(step_dir, "big"), offset)
            ck = self.mgr.get(1, verify=False)
            with self.assertRaisesRegex(CheckpointError, "sha256 mismatch"):
                ck.load()
            with self.assertRaisesRegex(CheckpointError, "sha256 mismatch"):
                ck.read("big")
            self.assertIn("sha256 mismatch", ck.verify())
            flip(os.path.join(step_dir, "big"), offset)

    def test_malformed_chunk_crcs_make_the_manifest_bad(self):
        self.mgr.save(1, {"big": self.big})
        step_dir = os.path.join(self.dir, "step-1")
        for bad in (lambda e: e["chunk_crc32"].pop(),  # one CRC too few for the size
                    lambda e: e.update(chunk_size=0),
                    lambda e: e.update(chunk_crc32=["0"] * 4),
                    lambda e: e.pop("chunk_size")):
            self.mgr.save(1, {"big": self.big})
            edit_manifest(step_dir, lambda m: bad(m["files"][0]))
            self.assertIn("bad manifest entry", Checkpoint(1, step_dir).check())
            with self.assertRaisesRegex(CheckpointError, "bad manifest entry"):
                Checkpoint(1, step_dir).load()

    def test_a_wrong_crc_in_the_manifest_is_caught(self):
        self.mgr.save(1, {"big": self.big})
        step_dir = os.path.join(self.dir, "step-1")
        edit_manifest(step_dir, lambda m: m["files"][0]["chunk_crc32"].__setitem__(
            3, m["files"][0]["chunk_crc32"][3] ^ 1))
        with self.assertRaisesRegex(CheckpointError, "crc32 mismatch in bytes %d-" % (3 * CHUNK)):
            Checkpoint(1, step_dir).load()

    def test_load_without_huge_pages_falls_back_to_plain_pages(self):
        self.mgr.save(1, {"big": self.big})
        real = ckpt_module._MADV_POPULATE_WRITE
        ckpt_module._MADV_POPULATE_WRITE = 0x7fff  # no such advice: madvise fails
        try:
            got = self.mgr.get(1).load()["big"]
        finally:
            ckpt_module._MADV_POPULATE_WRITE = real
        self.assertEqual(bytes(got), self.big)
        self.assertFalse(got.readonly)

    def test_truncated_file_is_caught(self):
        self.mgr.save(1, {"big": self.big})
        os.truncate(os.path.join(self.dir, "step-1", "big"), BIG - 1)
        with self.assertRaisesRegex(CheckpointError, "size"):
            self.mgr.get(1, verify=False).load()

    def test_a_file_changed_after_verify_is_hashed_again(self):
        self.mgr.save(1, {"x": b"abcdef"})
        ck = self.mgr.latest()  # verified: the next read need not hash
        self.assertEqual(ck.read("x"), b"abcdef")
        path = os.path.join(self.dir, "step-1", "x")
        st = os.stat(path)
        with open(path, "r+b") as f:
            f.write(b"X")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        with self.assertRaises(CheckpointError):
            ck.read("x")

    def test_load_latest_falls_back_past_a_damaged_checkpoint(self):
        self.mgr.save(1, {"big": self.big})
        self.mgr.save(2, {"big": self.big[::-1]})
        flip(os.path.join(self.dir, "step-2", "big"), 5)
        with self.assertLogs("trainyard", "WARNING"):
            ck, files = self.mgr.load_latest()
        self.assertEqual((ck.step, bytes(files["big"])), (1, self.big))
        self.assertEqual(CheckpointManager(os.path.join(self.tmp.path, "none")).load_latest(),
                         (None, {}))


@unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
class VerifiedRestoreTest(unittest.TestCase):
    def setUp(self):
        import torch
        self.torch = torch
        self.tmp = sdk_test_util.TempDir()
        self.mgr = CheckpointManager(os.path.join(self.tmp.path, "ckpt"), keep_last=3)

    def tearDown(self):
        self.tmp.cleanup()

    def make(self, seed):
        self.torch.manual_seed(seed)
        model = self.torch.nn.Linear(64, 64)
        opt = self.torch.optim.Adam(model.parameters())
        model(self.torch.randn(2, 64)).sum().backward()
        opt.step()
        return model, opt

    def test_damage_is_caught_before_any_object_is_touched(self):
        from trainyard import torch_state
        model, opt = self.make(1)
        self.mgr.save(1, torch_state.state_files(model=model, optimizer=opt, step=1))
        flip(os.path.join(self.mgr.path_for(1), torch_state.TENSORS_FILE), 100)
        fresh, fresh_opt = self.make(2)
        before = fresh.weight.detach().clone()
        with self.assertRaises(CheckpointError):
            torch_state.restore(self.mgr.latest(verify=False), model=fresh, optimizer=fresh_opt)
        self.assertTrue(self.torch.equal(fresh.weight, before))
        with self.assertLogs("trainyard", "WARNING"):
            self.assertIsNone(torch_state.restore(self.mgr, model=fresh, optimizer=fresh_opt))

    def test_restore_of_a_checkpoint_with_a_sha256_only_manifest(self):
        from trainyard import torch_state
        for step in (1, 2):
            model, opt = self.make(step)
            self.mgr.save(step, torch_state.state_files(model=model, optimizer=opt, step=step))
            as_old_manifest(self.mgr.path_for(step))
        fresh, fresh_opt = self.make(3)
        self.assertEqual(torch_state.restore(self.mgr, model=fresh, optimizer=fresh_opt)["step"],
                         2)
        want, _ = self.make(2)
        self.assertTrue(self.torch.equal(fresh.weight, want.weight))
        flip(os.path.join(self.mgr.path_for(2), torch_state.MODEL_FILE), 200)
        with self.assertLogs("trainyard", "WARNING") as logs:
            got = torch_state.restore(self.mgr, model=fresh, optimizer=fresh_opt)
        self.assertEqual(got["step"], 1)
        self.assertIn("sha256 mismatch", "\n".join(logs.output))

    def test_restore_from_the_manager_takes_the_newest_good_one_without_copies(self):
        from trainyard import torch_state
        for step in (1, 2):
            model, opt = self.make(step)
            self.mgr.save(step, torch_state.state_files(model=model, optimizer=opt, step=step))
        flip(os.path.join(self.mgr.path_for(2), torch_state.MODEL_FILE), 200)
        fresh, fresh_opt = self.make(3)
        with self.assertLogs("trainyard", "WARNING"):
            got = torch_state.restore(self.mgr, model=fresh, optimizer=fresh_opt)
        self.assertEqual(got["step"], 1)
        want, _ = self.make(1)
        self.assertTrue(self.torch.equal(fresh.weight, want.weight))
        # The optimizer's moments are views of the memory the file was read into.
        ck, files = self.mgr.load_latest([torch_state.TENSORS_FILE])
        buf = files[torch_state.TENSORS_FILE]
        tensors, _ = torch_state.safetensors.loads(buf)
        t = torch_state._tensor_from(*next(iter(tensors.values())))
        start = torch_state._address(buf)
        self.assertTrue(start <= t.data_ptr() < start + len(buf))


if __name__ == "__main__":
    unittest.main()
