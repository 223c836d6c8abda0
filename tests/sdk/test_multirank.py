"""Sharded checkpoints (CheckpointManager(sharded=True)): agreement, pruning, world size,
stale and damaged shards, resume through torch_state. Ranks are managers in this process;
test_multirank_protocol.py and test_multirank_crash.py kill real processes."""

import json
import os
import unittest

import sdk_test_util
from multirank_child import shard_payload
from trainyard import CheckpointError, CheckpointManager


def ranks(directory, world=3, attempt=1, keep_last=1):
    return [CheckpointManager(directory, keep_last=keep_last, sharded=True, rank=r,
                              world_size=world, attempt=attempt) for r in range(world)]


class MultiRankTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.dir = os.path.join(self.tmp.path, "ckpt")

    def tearDown(self):
        self.tmp.cleanup()

    def save(self, mgrs, step, which=None, attempt=1):
        for mgr in mgrs:
            if which is None or mgr.rank in which:
                mgr.save(step, shard_payload(mgr.rank, step, attempt))

    def test_a_step_counts_only_once_every_rank_saved_it(self):
        mgrs = ranks(self.dir)
        self.save(mgrs, 100)
        self.save(mgrs, 200, which=[0, 1])  # rank 2 dies before its save of 200
        self.assertEqual([m.latest().step for m in ranks(self.dir, attempt=2)], [100] * 3)
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-100", "step-200"])

    def test_keep_last_1_removes_a_step_only_after_a_newer_one_is_complete(self):
        mgrs = ranks(self.dir)
        self.save(mgrs, 1)
        for r in range(3):
            mgrs[r].save(2, shard_payload(r, 2, 1))
            self.assertEqual({m.latest().step for m in mgrs}, {1 if r < 2 else 2})
            for m in mgrs:
                self.assertEqual(m.latest().read_all(), shard_payload(m.rank, m.latest().step, 1))
        self.assertEqual(sorted(os.listdir(self.dir)), ["step-2"])

    def test_global_manifest_lists_every_ranks_files(self):
        mgrs = ranks(self.dir, world=2)
        self.save(mgrs, 5)
        with open(os.path.join(self.dir, "step-5", "MANIFEST.json")) as f:
            m = json.load(f)
        self.assertEqual((m["world_size"], m["attempt"], m["step"]), (2, 1, 5))
        self.assertIn("rank-1/a.bin", [e["name"] for e in m["files"]])
        # A single-writer reader sees one checkpoint holding every rank's files.
        ck = CheckpointManager(self.dir).latest()
        self.assertEqual(ck.step, 5)
        self.assertEqual(ck.read("rank-1/who"), b"rank 1 step 5 attempt 1")

    def test_a_different_world_size_is_refused(self):
        self.save(ranks(self.dir, world=3), 7)
        mgr = ranks(self.dir, world=2, attempt=2)[0]
        with self.assertRaisesRegex(CheckpointError, "written by 3 ranks and this job has 2"):
            mgr.latest()
        self.assertEqual(mgr.get(7, rank=2).read("who"), b"rank 2 step 7 attempt 1")

    def test_a_shard_of_an_earlier_attempt_never_joins_a_step(self):
        self.save(ranks(self.dir), 1)
        self.save(ranks(self.dir), 2, which=[0])  # attempt 1: only rank 0 saved step 2
        # Attempt 2: ranks 1 and 2 save step 2 before rank 0 has even opened the directory.
        mgrs = [None] + [CheckpointManager(self.dir, keep_last=1, sharded=True, rank=r,
                                           world_size=3, attempt=2) for r in (1, 2)]
        self.save(mgrs[1:], 2, attempt=2)
        self.assertEqual({m.latest().step for m in mgrs[1:]}, {1})
        mgrs = ranks(self.dir, attempt=2)
        self.assertEqual({m.latest().step for m in mgrs}, {1})
        self.save(mgrs, 2, which=[0], attempt=2)
        self.assertEqual({m.latest().step for m in mgrs}, {2})
        for m in mgrs:
            self.assertEqual(m.latest().read("who"), b"rank %d step 2 attempt 2" % m.rank)

    def test_a_complete_set_left_uncommitted_is_committed_on_open(self):
        mgrs = ranks(self.dir)
        self.save(mgrs, 3)
        os.remove(os.path.join(self.dir, "step-3", "MANIFEST.json"))  # killed just before
        self.assertEqual({m.latest().step for m in ranks(self.dir, attempt=2)}, {3})

    def test_saves_go_forward_and_a_repeated_save_keeps_the_committed_step(self):
        mgrs = ranks(self.dir, keep_last=2)
        self.save(mgrs, 10)
        with self.assertRaises(ValueError):
            mgrs[0].save(5, {"x": b"1"})
        mgrs[0].save(10, {"x": b"different"})
        self.assertEqual(mgrs[0].latest().read_all(), shard_payload(0, 10, 1))

    def test_a_damaged_shard_is_set_aside_and_the_next_attempt_agrees(self):
        self.save(ranks(self.dir, keep_last=2), 1)
        self.save(ranks(self.dir, keep_last=2), 2)
        with open(os.path.join(self.dir, "step-2", "rank-1", "a.bin"), "r+b") as f:
            f.seek(10)
            b = f.read(1)
            f.seek(10)
            f.write(bytes([b[0] ^ 1]))
        mgrs = ranks(self.dir, attempt=2, keep_last=2)
        with self.assertRaisesRegex(CheckpointError, "rank 1: checkpoint step 2 is damaged"):
            mgrs[1].latest()
        self.assertTrue(os.path.isdir(os.path.join(self.dir, "step-2.damaged")))
        self.assertEqual([m.latest().step for m in ranks(self.dir, attempt=3, keep_last=2)],
                         [1, 1, 1])

    def test_plain_manager_ignores_rank_and_world_size(self):
        j = __import__("trainyard").runtime.Job(env={"RANK": "1", "WORLD_SIZE": "4"},
                                                 signals=())
        mgr = CheckpointManager(self.dir, job=j)
        mgr.save(1, {"x": b"1"})
        self.assertEqual(sorted(os.listdir(os.path.join(self.dir, "step-1"))),
                         ["MANIFEST.json", "x"])

    def test_rank_and_world_size_come_from_the_job(self):
        j = __import__("trainyard").runtime.Job(env={"RANK": "1", "WORLD_SIZE": "2"},
                                                 signals=())
        mgr = CheckpointManager(self.dir, job=j, sharded=True)
        self.assertEqual((mgr.rank, mgr.world_size), (1, 2))


@unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
class MultiRankTorchTest(unittest.TestCase):
    def test_each_rank_restores_its_own_state(self):
        import torch
        from trainyard import torch_state
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        mgrs = ranks(os.path.join(tmp.path, "ckpt"), world=2)
        models = [torch.nn.Linear(3, 2) for _ in mgrs]
        for r, (mgr, model) in enumerate(zip(mgrs, models)):
            mgr.save(4, torch_state.state_files(model=model, step=4, extra={"rank": r}))
        for r, mgr in enumerate(ranks(os.path.join(tmp.path, "ckpt"), world=2, attempt=2)):
            fresh = torch.nn.Linear(3, 2)
            got = torch_state.restore(mgr, model=fresh)
            self.assertEqual((got["step"], got["extra"]["rank"]), (4, r))
            self.assertTrue(torch.equal(fresh.weight, models[r].weight))


if __name__ == "__main__":
    unittest.main()
