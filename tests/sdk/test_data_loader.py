"""trainyard.data.Loader: deterministic shuffle, equal batches per rank, in-process resume
with every worker kind, refusal of foreign states, bounded prefetch, data-wait metrics."""

import os
import threading
import time
import unittest

import sdk_test_util
from trainyard import data

N = 203


def decode(record):
    return int(record[1:])


class LoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = sdk_test_util.TempDir()
        cls.dir = os.path.join(cls.tmp.path, "ds")
        data.write_dataset(cls.dir, (b"s%d" % i for i in range(N)), shard_bytes=100)
        cls.ds = data.ShardDataset(cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def loader(self, **kw):
        kw.setdefault("workers", 0)
        kw.setdefault("decode", decode)
        loader = data.Loader(self.ds, kw.pop("batch_size", 8), **kw)
        self.addCleanup(loader.close)
        return loader

    def test_order_is_a_function_of_seed_and_epoch(self):
        for buf in (None, 16):
            with self.subTest(shuffle_buffer=buf):
                a = data.epoch_order(N, 1, 0, shuffle_buffer=buf, shard_sizes=[100, 103])
                self.assertEqual(a, data.epoch_order(N, 1, 0, shuffle_buffer=buf,
                                                     shard_sizes=[100, 103]))
                self.assertEqual(sorted(a), list(range(N)))
                self.assertNotEqual(a, data.epoch_order(N, 1, 1, shuffle_buffer=buf,
                                                        shard_sizes=[100, 103]))
                self.assertNotEqual(a, data.epoch_order(N, 2, 0, shuffle_buffer=buf,
                                                        shard_sizes=[100, 103]))
                self.assertNotEqual(a, list(range(N)))
        self.assertEqual(data.epoch_order(N, 1, 0, shuffle=False), list(range(N)))

    def test_every_rank_gets_the_same_number_of_batches_and_no_sample_twice(self):
        for world in (1, 2, 3, 5, 8):
            for drop_last in (True, False):
                with self.subTest(world=world, drop_last=drop_last):
                    seen, counts = [], set()
                    for rank in range(world):
                        batches = list(self.loader(seed=3, shuffle_buffer=32, rank=rank,
                                                   world_size=world, drop_last=drop_last))
                        counts.add(len(batches))
                        seen += [i for b in batches for i in b]
                    self.assertEqual(len(counts), 1, counts)
                    self.assertEqual(len(seen), len(set(seen)))
                    self.assertGreaterEqual(len(seen), N - world * 8 if drop_last else N - world)

    def test_resume_mid_epoch_gives_the_uninterrupted_batches_with_each_worker_kind(self):
        kw = dict(seed=5, shuffle_buffer=40, batch_size=7)
        whole = self.loader(**kw)
        reference = list(whole) + list(whole)  # two epochs
        for workers, kind in ((0, "process"), (2, "thread"), (2, "process")):
            for stop in (1, 13, 28, 29, 50):
                with self.subTest(workers=workers, kind=kind, stop=stop):
                    first = self.loader(workers=workers, worker_type=kind, **kw)
                    got = []
                    while len(got) < stop:
                        for b in first:
                            got.append(b)
                            if len(got) == stop:
                                break
                    state = first.state()
                    first.close()
                    second = self.loader(workers=workers, worker_type=kind, **kw)
                    second.load(state)
                    while len(got) < len(reference):
                        got += list(second)
                    self.assertEqual(got, reference)

    def test_a_state_from_another_seed_dataset_or_world_size_is_refused(self):
        src = self.loader(seed=1, world_size=2, rank=0)
        it = iter(src)
        next(it)
        state = src.state()
        with self.assertRaisesRegex(data.DataError, "seed=1, this loader 2"):
            self.loader(seed=2, world_size=2, rank=0).load(state)
        with self.assertRaisesRegex(data.DataError, "world_size=2 mid-epoch.*set_epoch"):
            self.loader(seed=1, world_size=4, rank=0).load(state)
        other = dict(state, dataset="f" * 64)
        with self.assertRaisesRegex(data.DataError, "has dataset="):
            self.loader(seed=1, world_size=2, rank=0).load(other)
        # Another rank of the same world size resumes at the same batch.
        peer = self.loader(seed=1, world_size=2, rank=1)
        peer.load(state)
        self.assertEqual(peer.batch, 1)
        # At an epoch boundary a new world size starts the next epoch.
        done = dict(state, batch=state["batches_per_epoch"])
        grown = self.loader(seed=1, world_size=4, rank=0)
        grown.load(done)
        self.assertEqual((grown.epoch, grown.batch), (1, 0))

    def test_prefetch_keeps_at_most_prefetch_batches_ahead_of_the_loop(self):
        made = []
        lock = threading.Lock()

        def counting(record):
            with lock:
                made.append(record)
            return record

        loader = self.loader(workers=2, worker_type="thread", prefetch=3, decode=counting,
                             batch_size=4)
        ahead = []
        for k, _ in enumerate(loader, 1):
            time.sleep(0.01)  # a slow step: the workers catch up and must wait
            with lock:
                ahead.append(len(made) / 4 - k)
        self.assertLessEqual(max(ahead), 3)
        self.assertGreaterEqual(max(ahead), 2)

    def test_step_metrics_report_the_time_spent_waiting_for_data(self):
        def slow(record):
            time.sleep(0.02)
            return record

        loader = self.loader(decode=slow, batch_size=2)
        it = iter(loader)
        self.assertEqual(loader.step_metrics(), {})
        next(it)
        time.sleep(0.05)
        m = loader.step_metrics()
        self.assertGreaterEqual(m["data_wait_s"], 0.04)
        self.assertGreaterEqual(m["step_time_s"], m["data_wait_s"] + 0.05)
        timed = data.WaitTimer([1, 2])
        self.assertEqual(list(timed), [1, 2])
        self.assertLess(timed.total_wait_s, 0.01)

    def test_a_failing_decode_in_a_worker_process_names_the_batch(self):
        def bad(record):
            raise ValueError("cannot decode %r" % record)

        with self.assertRaisesRegex(data.DataError, "worker 0 failed on batch 0.*cannot decode"):
            next(iter(self.loader(workers=2, decode=bad)))


if __name__ == "__main__":
    unittest.main()
