"""trainyard.data.ShardCache: shards come from slow storage once, the cache stays under its
size limit by evicting the least recently used, and two processes can share it."""

import os
import subprocess
import time
import unittest

import sdk_test_util
from trainyard import data


class CacheTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.addCleanup(self.tmp.cleanup)
        self.remote = os.path.join(self.tmp.path, "remote")
        self.cache_dir = os.path.join(self.tmp.path, "cache")
        # 10 shards of 10 records of 1000 bytes each.
        self.doc = data.write_dataset(self.remote, (bytes([i % 251]) * 1000 for i in range(100)),
                                      shard_bytes=10000)
        self.shard_bytes = self.doc["shards"][0]["bytes"]

    def dataset(self, shards_kept, delay_s=0.0):
        cache = data.ShardCache(self.cache_dir, max_bytes=shards_kept * self.shard_bytes,
                                delay_s=delay_s)
        return data.ShardDataset(self.remote, cache=cache), cache

    def test_a_shard_is_copied_once_and_the_cache_stays_under_its_limit(self):
        ds, cache = self.dataset(3, delay_s=0.05)
        t = time.monotonic()
        self.assertEqual(ds[5], bytes([5]) * 1000)
        self.assertGreaterEqual(time.monotonic() - t, 0.05)  # the slow copy
        self.assertEqual((cache.hits, cache.misses), (0, 1))
        ds.close()
        ds, cache = self.dataset(3, delay_s=0.05)
        t = time.monotonic()
        self.assertEqual(ds[7], bytes([7]) * 1000)
        self.assertLess(time.monotonic() - t, 0.05)  # from the cache
        self.assertEqual((cache.hits, cache.misses), (1, 0))
        for i in range(0, 100, 10):
            self.assertEqual(ds[i], bytes([i]) * 1000)
            self.assertLessEqual(cache.size(), 3 * self.shard_bytes)
        self.assertEqual(cache.evictions, 7)
        self.assertEqual(len(os.listdir(self.cache_dir)), 3)

    def test_eviction_takes_the_least_recently_used_shard(self):
        ds, cache = self.dataset(2)
        ds[0]                       # shard 0
        time.sleep(0.01)
        ds[10]                      # shard 1
        time.sleep(0.01)
        ds.close()
        ds, cache = self.dataset(2)
        ds[0]                       # shard 0 used again: shard 1 is now the oldest
        time.sleep(0.01)
        ds[20]                      # shard 2 evicts shard 1
        names = sorted(n.split("-", 1)[1] for n in os.listdir(self.cache_dir))
        self.assertEqual(names, ["shard-00000.tys", "shard-00002.tys"])

    def test_two_processes_sharing_the_cache_read_every_record_intact(self):
        script = ("import sys; from trainyard import data\n"
                  "c = data.ShardCache(sys.argv[2], max_bytes=int(sys.argv[3]))\n"
                  "for rnd in range(3):\n"
                  "    ds = data.ShardDataset(sys.argv[1], cache=c)\n"
                  "    for i in range(100):\n"
                  "        assert ds[i] == bytes([i % 251]) * 1000, i\n"
                  "    ds.close()\n"
                  "print('ok', c.misses, c.evictions)\n")
        args = [sdk_test_util.PYTHON, "-c", script, self.remote, self.cache_dir,
                str(4 * self.shard_bytes)]
        procs = [subprocess.Popen(args, env=sdk_test_util.child_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertTrue(out.startswith("ok "), out)
        self.assertFalse([n for n in os.listdir(self.cache_dir) if n.startswith(".tmp")])
        self.assertLessEqual(data.ShardCache(self.cache_dir, 1 << 30).size(),
                             4 * self.shard_bytes)

    def test_errors_name_the_shard_and_the_fix(self):
        with self.assertRaisesRegex(data.DataError, "more than the whole cache.*raise max_bytes"):
            data.ShardDataset(self.remote, cache=data.ShardCache(self.cache_dir, 100))[0]
        ds, _ = self.dataset(3)
        os.unlink(os.path.join(self.remote, "shard-00004.tys"))
        with self.assertRaisesRegex(data.DataError, "shard-00004.tys is missing"):
            ds[40]


if __name__ == "__main__":
    unittest.main()
