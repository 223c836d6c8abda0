"""trainyard.distributed across two real processes (gloo on CPU): parameters stay identical on
both ranks under every compression, the bytes per step are what each compression sends, the
metrics lines carry them, and PowerSGD resumes bit for bit from a checkpoint, one taken just
before it starts included."""

import json
import os
import socket
import unittest

import sdk_test_util as util

TIMEOUT_S = 90


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(util.have_torch(), "needs torch")
class TwoRanks(unittest.TestCase):
    def setUp(self):
        self.tmp = util.TempDir()

    def tearDown(self):
        self.tmp.cleanup()

    def run_ranks(self, modes, rank_env):
        procs, outs = [], []
        for rank in range(2):
            out = os.path.join(self.tmp.path, "rank%d.json" % rank)
            env = util.child_env(TRAINYARD_METRICS_FILE=os.path.join(self.tmp.path,
                                                                     "metrics%d.jsonl" % rank),
                                 **rank_env(rank))
            procs.append(util.start_child("dist_train_child.py",
                                          ["--out", out, "--modes", modes, "--ckpt",
                                           os.path.join(self.tmp.path, "ckpt")], env))
            outs.append(out)
        for p in procs:
            _, err = p.communicate(timeout=TIMEOUT_S)
            self.assertEqual(p.returncode, 0, err[-3000:])
        results = []
        for out in outs:
            with open(out) as f:
                results.append(json.load(f))
        return results

    def test_compressions_keep_ranks_identical_and_cut_bytes(self):
        port = free_port()
        r0, r1 = self.run_ranks("none,fp16,powersgd,resume,resume_at_start", lambda rank: {
            "RANK": rank, "WORLD_SIZE": 2, "LOCAL_RANK": rank, "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port, "TRAINYARD_RANK": rank})
        self.assertEqual((r0["source"], r0["backend"], r1["rank"]), ("torchrun", "gloo", 1))
        for mode in ("none", "fp16", "powersgd", "resume", "resume_at_start"):
            self.assertEqual(r0["modes"][mode]["digest"], r1["modes"][mode]["digest"], mode)
            self.assertEqual(r0["modes"][mode]["bytes"], r1["modes"][mode]["bytes"], mode)
        numel = r0["modes"]["none"]["numel"]
        full = 4 * sum(numel.values())
        self.assertEqual(r0["modes"]["none"]["bytes"], [full] * 8)
        self.assertEqual(r0["modes"]["fp16"]["bytes"], [full // 2] * 8)
        # PowerSGD rank 2 from step 3: P and Q of the 64x32, 64x64 and 8x64 weights, biases raw.
        low_rank = 2 * ((64 + 32) + (64 + 64) + (8 + 64)) + 64 + 64 + 8
        self.assertEqual(r0["modes"]["powersgd"]["bytes"], [full] * 2 + [4 * low_rank] * 6)
        self.assertGreater(full / (4 * low_rank), 9)
        # Compression changes the result; each ends near the others.
        self.assertNotEqual(r0["modes"]["none"]["digest"], r0["modes"]["powersgd"]["digest"])
        for mode in ("fp16", "powersgd"):
            a, b = r0["modes"]["none"]["loss"][-1], r0["modes"][mode]["loss"][-1]
            self.assertLess(abs(a - b), 0.25 * a, mode)

        resume = r0["modes"]["resume"]
        self.assertEqual(resume["digest"], r0["modes"]["powersgd"]["digest"])
        self.assertEqual(resume["resumed"], resume["digest"], "resume with state is bitwise")
        self.assertEqual(resume["resumed_per_rank"], resume["digest"],
                         "each rank's own shard (comm_state(per_rank=True)) resumes bitwise")
        self.assertNotEqual(resume["resumed_without_state"], resume["digest"],
                            "without the error feedback the run differs, so the state matters")
        self.assertEqual(resume["resumed"], r1["modes"]["resume"]["resumed"])
        # Saved at step 2, before PowerSGD's first step: the resumed process draws the first Q's
        # in DDP's first bucket layout, the run that never stopped in the rebuilt one.
        at_start = r0["modes"]["resume_at_start"]
        self.assertEqual(at_start["resumed"], at_start["digest"], "resume at PowerSGD's start")
        self.assertEqual(at_start["resumed"], r1["modes"]["resume_at_start"]["resumed"])

        for rank in range(2):
            with open(os.path.join(self.tmp.path, "metrics%d.jsonl" % rank)) as f:
                lines = [json.loads(line) for line in f]
            psgd = [ln for ln in lines if ln.get("mode") == "powersgd"]
            self.assertEqual([ln["step"] for ln in psgd], list(range(1, 9)))
            self.assertEqual([ln["comm_bytes"] for ln in psgd], [full] * 2 + [4 * low_rank] * 6)
            for ln in lines:
                self.assertEqual(ln["rank"], rank)
                for key in ("comm_s", "comm_wait_s", "compute_s", "step_time_s"):
                    self.assertGreaterEqual(ln[key], 0, key)
                self.assertLessEqual(ln["comm_wait_s"], ln["step_time_s"])

    def test_slurm_variables_alone_start_the_group(self):
        port = free_port()
        r0, r1 = self.run_ranks("fp16", lambda rank: {
            "SLURM_PROCID": rank, "SLURM_NTASKS": 2, "SLURM_LOCALID": rank, "SLURM_NNODES": 1,
            "SLURM_JOB_ID": 77, "MASTER_PORT": port})
        self.assertEqual((r0["source"], r0["world_size"], r1["rank"], r1["local_rank"]),
                         ("slurm", 2, 1, 1))
        self.assertEqual(r0["modes"]["fp16"]["digest"], r1["modes"]["fp16"]["digest"])


if __name__ == "__main__":
    unittest.main()
