"""trainyard.distributed's PowerSGD against torch's own powerSGD_hook on 2 real processes (gloo
on CPU, loopback): with the same rank, start, minimum compression rate, error feedback, warm
start, seed and orthogonalization epsilon (torch's PowerSGDState takes it), the two train a
small model (conv, linears, LayerNorm, biases) to bitwise-identical parameters on both ranks.
Each rank draws its own batches, so the error-feedback buffers differ between ranks and the
all-reduces of P and Q matter. Configurations in powersgd_child.py: one bucket with torch's
hook registered bare; several buckets rebuilt after step 1; rank 1 from step 5."""

import json
import os
import socket
import unittest

import sdk_test_util as util

TIMEOUT_S = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(util.have_torch(), "needs torch")
class PowerSGDAsTorchOnTwoRanks(unittest.TestCase):
    def setUp(self):
        self.tmp = util.TempDir()

    def tearDown(self):
        self.tmp.cleanup()

    def run_ranks(self):
        port, procs, outs = free_port(), [], []
        for rank in range(2):
            out = os.path.join(self.tmp.path, "rank%d.json" % rank)
            env = util.child_env(RANK=rank, WORLD_SIZE=2, LOCAL_RANK=rank,
                                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            procs.append(util.start_child("powersgd_child.py", ["--out", out], env))
            outs.append(out)
        try:
            for p in procs:
                _, err = p.communicate(timeout=TIMEOUT_S)
                self.assertEqual(p.returncode, 0, err[-3000:])
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        results = []
        for out in outs:
            with open(out) as f:
                results.append(json.load(f))
        return results

    def test_trains_bit_for_bit_like_torchs_hook(self):
        r0, r1 = self.run_ranks()
        plain = r0["plain"]["trainyard"]["digest"]
        self.assertEqual(plain, r1["plain"]["trainyard"]["digest"])
        for name, prank, start, buckets in (("one-bucket", 2, 3, 1), ("buckets", 2, 3, None),
                                            ("rank1-late", 1, 5, 1)):
            for r in (r0, r1):
                ty, th = r[name]["trainyard"], r[name]["torch"]
                self.assertEqual(ty["digest"], th["digest"], (name, r[name]))
                self.assertEqual(ty["losses"], th["losses"], name)
                for key in ("iter", "compressed", "uncompressed", "buckets", "epsilon"):
                    self.assertEqual(ty[key], th[key], (name, key))
                self.assertTrue(ty["error_feedback"] and ty["warm_start"], name)
                self.assertEqual(ty["iter"], 10, name)
                self.assertLess(ty["compressed"], ty["uncompressed"], name)  # it compressed
                if buckets is not None:
                    self.assertEqual(ty["buckets"], buckets, name)
                else:
                    self.assertGreater(ty["buckets"], 1, name)
                if name == "one-bucket":  # PowerSGD changed the training (same model)
                    self.assertNotEqual(ty["digest"], r["plain"]["trainyard"]["digest"])
                    self.assertNotEqual(ty["losses"][3:], r["plain"]["trainyard"]["losses"][3:])
                    self.assertEqual(ty["losses"][:3], r["plain"]["trainyard"]["losses"][:3])
            # Both ranks end with the same parameters.
            self.assertEqual(r0[name]["trainyard"]["digest"], r1[name]["trainyard"]["digest"],
                             name)
            # The ranks saw different data (so error feedback differs between them).
            self.assertNotEqual(r0[name]["trainyard"]["losses"], r1[name]["trainyard"]["losses"])


if __name__ == "__main__":
    unittest.main()
