"""trainyard.crc32: every implementation it may pick computes zlib.crc32 exactly, and a
shard read through each of them still catches a damaged record (in a child process per
implementation: the choice is made at import, from TRAINYARD_CRC32)."""

import json
import os
import random
import subprocess
import sys
import unittest
import zlib

import sdk_test_util
from trainyard import crc32

_CHILD = r"""
import json, os, random, sys, zlib
from trainyard import crc32, data
rng = random.Random(7)
bufs = [rng.randbytes(n) for n in (0, 1, 5, 64, 100, 4096, 44000, 100003)]
agree = all(crc32.crc32(b) == zlib.crc32(b) for b in bufs)
big = bytearray(rng.randbytes(200000))
with crc32.Pieces(big) as at:
    pieces = all(at(o, n) == zlib.crc32(big[o:o + n])
                 for o, n in ((0, 0), (0, 200000), (1, 9999), (77, 44000), (199999, 1)))
with crc32.Pieces(bytes(big)) as at:
    pieces = pieces and at(5, 1000) == zlib.crc32(big[5:1005])
d = sys.argv[1]
ds = data.ShardDataset(d)
ok = bytes(ds.read_batch([0, 3, 2])[1]) == b"r3" * 3000
caught = []
path = os.path.join(d, ds.shards[0]["name"])
with open(path, "r+b") as f:  # flip one bit in the middle of record 1
    f.seek(8 + 6000 + 3000)
    b = f.read(1)
    f.seek(8 + 6000 + 3000)
    f.write(bytes([b[0] ^ 0x10]))
for how in ("read", "read_many", "read_batch"):
    ds = data.ShardDataset(d)
    try:
        {"read": lambda: ds[1], "read_many": lambda: ds.read_many([0, 1]),
         "read_batch": lambda: ds.read_batch([2, 1])}[how]()
    except data.DataError as e:
        caught.append(how if "record 1 fails its crc32" in str(e) else str(e))
print(json.dumps({"impl": crc32.IMPLEMENTATION, "agree": agree, "pieces": pieces, "ok": ok,
                  "caught": caught}))
"""


class Crc32Test(unittest.TestCase):
    def test_pieces_bounds_are_checked(self):
        buf = bytearray(100)
        with crc32.Pieces(buf) as at:
            self.assertEqual(at(10, 20), zlib.crc32(buf[10:30]))
            with self.assertRaises(IndexError):
                at(90, 11)
        buf.append(1)  # the export ended with the block: the bytearray can grow again

    def test_every_implementation_agrees_and_catches_a_damaged_record(self):
        tmp = sdk_test_util.TempDir()
        self.addCleanup(tmp.cleanup)
        seen = set()
        for impl in ("zlib", "isa-l", "libdeflate"):
            with self.subTest(impl=impl):
                d = os.path.join(tmp.path, impl)
                from trainyard import data
                data.write_dataset(d, [(b"r%d" % i) * 3000 for i in range(6)])
                out = subprocess.run([sys.executable, "-c", _CHILD, d], capture_output=True,
                                     text=True, timeout=120,
                                     env=sdk_test_util.child_env(TRAINYARD_CRC32=impl))
                self.assertEqual(out.returncode, 0, out.stderr[-2000:])
                r = json.loads(out.stdout.strip().splitlines()[-1])
                # An implementation whose library is not installed falls back to zlib.
                self.assertIn(r["impl"], (impl, "zlib"), r)
                seen.add(r["impl"])
                self.assertTrue(r["agree"] and r["pieces"] and r["ok"], r)
                self.assertEqual(r["caught"], ["read", "read_many", "read_batch"], r)
        self.assertIn("zlib", seen)

    def test_a_disagreeing_implementation_is_not_used(self):
        self.assertFalse(crc32._agrees(lambda crc, buf, n: zlib.crc32(buf) ^ (n == 4096)))
        rng = random.Random(3)
        b = rng.randbytes(5000)
        self.assertEqual(crc32.crc32(b), zlib.crc32(b))


if __name__ == "__main__":
    unittest.main()
