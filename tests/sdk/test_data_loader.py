"""trainyard.data.Loader: deterministic shuffle, equal batches per rank, in-process resume
with every worker kind, refusal of foreign states, bounded prefetch, data-wait metrics,
process workers' batches as views of their shared memory."""

import gc
import os
import threading
import time
import unittest
from unittest import mock

import sdk_test_util
from trainyard import data, data_loader

N = 203


def decode(record):
    return int(record[1:])


def same(a, b):
    """Equal values, dtypes, kinds (torch or numpy) and nesting."""
    import numpy
    import torch
    if isinstance(a, torch.Tensor):
        return (type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(a, b))
    if isinstance(a, numpy.ndarray):
        return (type(b) is numpy.ndarray and a.dtype == b.dtype and a.shape == b.shape
                and numpy.array_equal(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b)))
    return type(a) is type(b) and a == b


def arrays_of(batch):
    """A batch of the usual kinds, each array large enough to travel in shared memory,
    its values a function of the batch's record ids."""
    import numpy
    import torch
    ids = [int(bytes(r)[1:]) for r in batch]
    return {"ids": ids,
            "x": torch.tensor(ids, dtype=torch.float32).repeat_interleave(1000).reshape(-1, 1000),
            "bf": torch.tensor(ids, dtype=torch.bfloat16).repeat_interleave(3000),
            "a": [numpy.repeat(numpy.array(ids, dtype=">i8"), 700), numpy.array(ids)],
            "pair": (torch.full((2000,), ids[0], dtype=torch.int16), "first %d" % ids[0])}


def expected(ids):
    return arrays_of([b"s%d" % i for i in ids])


class DatasetCase(unittest.TestCase):
    """A class of tests over one dataset of N records "s0".."s<N-1>", in shards of 100 bytes."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = sdk_test_util.TempDir()
        cls.dir = os.path.join(cls.tmp.path, "ds")
        data.write_dataset(cls.dir, (b"s%d" % i for i in range(N)), shard_bytes=100)
        cls.ds = data.ShardDataset(cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class LoaderTest(DatasetCase):
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
        mapped = dict(decode=None, mapped=True,
                      decode_batch=lambda b: [decode(bytes(r)) for r in b])
        for workers, kind, extra in ((0, "process", {}), (2, "thread", {}), (2, "process", {}),
                                     (2, "thread", mapped), (2, "process", mapped)):
            for stop in (1, 13, 28, 29, 50):
                with self.subTest(workers=workers, kind=kind, stop=stop, mapped=bool(extra)):
                    first = self.loader(workers=workers, worker_type=kind, **kw, **extra)
                    got = []
                    while len(got) < stop:
                        for b in first:
                            got.append(b)
                            if len(got) == stop:
                                break
                    state = first.state()
                    first.close()
                    second = self.loader(workers=workers, worker_type=kind, **kw, **extra)
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

    def test_prefetch_depth_fills_the_byte_budget_between_2_and_8_batches_per_worker(self):
        mib = 1 << 20
        self.assertEqual(data_loader.prefetch_depth(1 * mib, 2), 16)  # small: 8 per worker
        self.assertEqual(data_loader.prefetch_depth(200 * mib, 4), 8)  # large: 2 per worker
        self.assertEqual(data_loader.prefetch_depth(20 * mib, 2), 12)  # 256 MiB / 40 MiB = 6
        self.assertEqual(data_loader.prefetch_depth(0, 3), 24)

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_process_workers_keep_more_batches_ahead_when_batches_are_small(self):
        def ahead_after(loader, steps=6):
            """Batches requested beyond the one the loop holds, after `steps` steps."""
            it = iter(loader)
            for _ in range(steps):
                next(it)
            n = len(loader._pool.pending)
            it.close()
            loader.close()
            return n

        kw = dict(seed=3, batch_size=2, decode=None, decode_batch=arrays_of, workers=2,
                  worker_type="process")
        # A batch here is 36 KB of arrays: 8 per worker fit in the budget.
        self.assertEqual(ahead_after(self.loader(**kw)), 16)
        self.assertEqual(ahead_after(self.loader(prefetch=3, **kw)), 3)  # as asked
        self.assertEqual(ahead_after(self.loader(**dict(kw, worker_type="thread"))), 4)
        # A budget of 250 KB holds 3 such batches per worker; one of 100 KB, 2 (the least).
        for budget, ahead in ((250_000, 6), (100_000, 4)):
            with mock.patch.object(data_loader, "PREFETCH_BYTES", budget):
                self.assertEqual(ahead_after(self.loader(**kw)), ahead)

    def test_abandoning_or_closing_does_not_wait_for_the_batches_in_flight(self):
        def slow(batch):
            time.sleep(0.5)
            return [int(bytes(r)[1:]) for r in batch]

        kw = dict(seed=5, batch_size=3, decode=None, decode_batch=slow, workers=2,
                  worker_type="process", prefetch=8)
        loader = self.loader(**kw)
        it = iter(loader)
        next(it)
        # 8 batches were asked for beyond it, 4 per worker: 2 s of work each.
        t = time.monotonic()
        loader.set_epoch(1)
        self.assertLess(time.monotonic() - t, 0.4)
        # The next epoch starts right: the abandoned batches' answers are skipped.
        want = self.loader(seed=5, batch_size=3).rank_order(1)[:6]
        it = iter(loader)
        self.assertEqual(next(it) + next(it), want)
        procs = list(loader._pool.procs)
        t = time.monotonic()
        loader.close()
        self.assertLess(time.monotonic() - t, 1.0)
        self.assertFalse(any(p.is_alive() for p in procs))

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

    def test_decode_batch_gives_what_decode_and_collate_give_with_each_worker_kind(self):
        def decode_batch(batch):
            return [int(bytes(r)[1:]) for r in batch]

        def by_offsets(batch):  # the documented way, right for copied and mapped batches
            return [int(bytes(batch.data[o:o + n])[1:])
                    for o, n in zip(batch.offsets, batch.lengths)]

        want = list(self.loader(seed=2, batch_size=9, drop_last=False))
        for workers, kind in ((0, "thread"), (2, "thread"), (2, "process")):
            for mapped in (False, True):
                for fn in (decode_batch, by_offsets):
                    with self.subTest(workers=workers, kind=kind, mapped=mapped, fn=fn):
                        got = list(self.loader(seed=2, batch_size=9, drop_last=False,
                                               decode=None, decode_batch=fn, workers=workers,
                                               worker_type=kind, mapped=mapped))
                        self.assertEqual(got, want)
        with self.assertRaisesRegex(ValueError, "decode_batch replaces decode"):
            self.loader(decode_batch=decode_batch)
        with self.assertRaisesRegex(ValueError, "mapped=True needs decode_batch"):
            self.loader(mapped=True)

    def test_decode_batch_over_a_dataset_without_read_batch(self):
        class Plain:
            def __len__(self):
                return 10

            def __getitem__(self, i):
                return b"r%d" % i

        loader = data.Loader(Plain(), 4, shuffle=False, workers=0,
                             decode_batch=lambda b: [bytes(r) for r in b])
        self.assertEqual(list(loader), [[b"r0", b"r1", b"r2", b"r3"],
                                        [b"r4", b"r5", b"r6", b"r7"]])

    def test_a_decode_batch_that_keeps_views_of_the_records_gets_unchanged_bytes(self):
        views = []

        def keep(batch):
            views.append(list(batch))  # memoryviews into the batch's buffer, kept
            return len(batch)

        for mapped in (False, True):
            views.clear()
            loader = self.loader(seed=4, decode=None, decode_batch=keep, workers=1,
                                 worker_type="thread", mapped=mapped)
            list(loader)
            loader.close()
            got = [int(bytes(v)[1:]) for vs in views for v in vs]
            self.assertEqual(got, loader.rank_order(0)[:len(got)])

    def count_slot_results(self):
        """{"slot": batches the parent took as views of a worker's slot}."""
        counts = {"slot": 0}
        unpack = data_loader._SharedIn.unpack

        def counting(shared, placed):
            counts["slot"] += 1
            return unpack(shared, placed)
        patcher = mock.patch.object(data_loader._SharedIn, "unpack", counting)
        patcher.start()
        self.addCleanup(patcher.stop)
        return counts

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_process_workers_hand_arrays_over_through_shared_memory(self):
        import numpy
        import torch

        def decode_batch(batch):
            ids = [int(bytes(r)[1:]) for r in batch]
            n = max(ids) + 1  # sizes vary from batch to batch: the slots must grow
            return {"x": torch.arange(n * 1000, dtype=torch.float32).reshape(n, 1000),
                    "bf": torch.full((n, 3000), 0.5, dtype=torch.bfloat16),
                    "ids": numpy.array(ids * 1000, dtype=numpy.int64),
                    "small": numpy.array(ids), "name": "batch %d" % ids[0],
                    "pair": (torch.ones(2000, dtype=torch.int16), [numpy.zeros((3, 700))])}

        kw = dict(seed=6, batch_size=5, decode=None, decode_batch=decode_batch, prefetch=3)
        want = list(self.loader(workers=0, **kw))
        loader = self.loader(workers=2, worker_type="process", **kw)
        got = list(loader)
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertTrue(same(g, w))
        self.assertTrue(all(s is not None for s in loader._pool.shared))

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_process_and_thread_workers_give_the_same_batches_over_an_epoch(self):
        import numpy
        import torch
        counts = self.count_slot_results()
        kw = dict(seed=7, batch_size=6, drop_last=False, decode=None, decode_batch=arrays_of)
        want = list(self.loader(workers=2, worker_type="thread", **kw))
        for workers, prefetch in ((2, None), (1, 1), (3, 2)):
            with self.subTest(workers=workers, prefetch=prefetch):
                counts["slot"] = 0
                loader = self.loader(workers=workers, worker_type="process", prefetch=prefetch,
                                     **kw)
                got = 0
                for b, w in zip(loader, want):  # each batch dropped before the next
                    self.assertTrue(same(b, w))
                    self.assertEqual(b["ids"], loader.rank_order(0)[got * 6:got * 6 + 6])
                    self.assertTrue(b["a"][0].flags.writeable)
                    self.assertNotIsInstance(b["a"][0].base, type(None))  # a view: no copy
                    got += 1
                self.assertEqual(got, len(want))
                # Every batch came as views of a slot the consumer had released: none
                # had to travel pickled.
                self.assertEqual(counts["slot"], len(want))
        self.assertIsInstance(want[0]["x"], torch.Tensor)
        self.assertIsInstance(want[0]["a"][1], numpy.ndarray)

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_a_consumer_that_keeps_every_batch_gets_them_all_unchanged(self):
        counts = self.count_slot_results()
        for workers, prefetch in ((2, None), (1, 1)):
            with self.subTest(workers=workers, prefetch=prefetch):
                counts["slot"] = 0
                loader = self.loader(seed=8, batch_size=4, decode=None, decode_batch=arrays_of,
                                     workers=workers, prefetch=prefetch)
                kept = list(loader)  # 50 batches, far more than the workers' slots
                self.assertEqual(len(kept), 50)
                order = loader.rank_order(0)
                for k, b in enumerate(kept):
                    self.assertTrue(same(b, expected(order[k * 4:k * 4 + 4])), k)
                # The slots were used until all were held, then batches went pickled.
                slots = workers * loader._pool.slots
                self.assertEqual(counts["slot"], slots)

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_batches_kept_after_close_stay_readable(self):
        counts = self.count_slot_results()
        loader = self.loader(seed=9, batch_size=4, decode=None, decode_batch=arrays_of,
                             workers=2)
        kept = []
        for b in loader:
            kept.append(b)
            if len(kept) == 5:
                break
        self.assertEqual(counts["slot"], 5)
        loader.close()
        del loader
        gc.collect()
        junk = [bytearray(1 << 20) for _ in range(16)]  # reuses freed memory, if any
        order = self.loader(seed=9, batch_size=4).rank_order(0)
        for k, b in enumerate(kept):
            self.assertTrue(same(b, expected(order[k * 4:k * 4 + 4])), k)
            b["x"].add_(1)  # still writable
        del junk

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_a_batch_that_outgrows_the_slots_leaves_held_batches_intact(self):
        import numpy

        def growing(batch):
            ids = [int(bytes(r)[1:]) for r in batch]
            # 100 KB more per batch: the slots (1 MiB at first) grow every few batches.
            return numpy.full(20000 * (max(ids) + 1), ids[0], dtype=numpy.int32)

        loader = self.loader(shuffle=False, batch_size=5, decode=None, decode_batch=growing,
                             workers=2, prefetch=2)
        kept = []
        for b in loader:
            kept.append(b)
            if len(kept) % 3 == 0:
                kept[-2] = None  # some released, some held, across the growths
        for k, b in enumerate(kept):
            if b is not None:
                self.assertEqual(len(b), 20000 * (k * 5 + 5), k)
                self.assertTrue((b == k * 5).all(), k)
        loader.close()
        self.assertTrue((kept[0] == 0).all())

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_a_batch_modified_in_place_does_not_change_later_batches(self):
        import torch
        kw = dict(seed=10, batch_size=4, decode=None, decode_batch=arrays_of)
        order = self.loader(**kw).rank_order(0)
        for workers, prefetch in ((2, None), (1, 1)):
            with self.subTest(workers=workers, prefetch=prefetch):
                for k, b in enumerate(self.loader(workers=workers, prefetch=prefetch, **kw)):
                    self.assertTrue(same(b, expected(order[k * 4:k * 4 + 4])), k)
                    b["x"].fill_(-1)
                    b["bf"].mul_(0)
                    b["a"][0][:] = 12345
                    b["pair"][0].copy_(torch.zeros(2000, dtype=torch.int16))

    @unittest.skipUnless(sdk_test_util.have_torch(), "torch is not installed")
    def test_process_workers_run_torch_on_one_thread_each(self):
        import torch
        got = list(self.loader(workers=2, worker_type="process", batch_size=50,
                               decode=None, decode_batch=lambda b: torch.get_num_threads()))
        self.assertEqual(set(got), {1})

    def test_shared_memory_slots_are_reused_once_released_and_grow_without_moving_results(
            self):
        import numpy
        from trainyard.data_loader import _SharedIn, _SharedOut
        if not hasattr(os, "memfd_create"):
            self.skipTest("no memfd_create")
        fd = os.memfd_create("test")
        out, into = _SharedOut(fd, 3), _SharedIn(os.dup(fd))
        self.addCleanup(os.close, fd)

        def send(k, n):
            placed = out.pack(numpy.full(n, k, dtype=numpy.uint8))
            return placed and into.unpack(placed)

        held = [send(k, 10000) for k in range(3)]
        self.assertIsNone(send(3, 10000))  # every slot held: the batch goes pickled
        self.assertIsNone(out.pack([1, 2, 3]))  # nothing to share: pickled as it is
        first = held[0][:10]  # a view keeps its slot
        held[0] = None
        gc.collect()
        self.assertEqual(into.take_freed(), [])
        del first
        freed = into.take_freed()
        self.assertEqual(len(freed), 1)
        out.release(freed)
        held[0] = send(4, 10000)  # in the slot released
        self.assertEqual(into.take_freed(), [])
        # Larger than the slots: a new region, while the old one's views live on.
        big = send(5, 3 << 20)
        self.assertIsNotNone(big)
        held[1] = None
        out.release(into.take_freed())  # an old region's slot: not written again
        more = [send(6 + k, 10000) for k in range(2)]
        self.assertIsNone(send(8, 10000))
        for a, k in zip(held + [big] + more, (4, None, 2, 5, 6, 7)):
            if k is not None:
                self.assertEqual((int(a.min()), int(a.max())), (k, k))
        into.close()  # views still held: no BufferError, and they stay readable
        gc.collect()
        self.assertEqual((len(big), int(big.min()), int(big.max())), (3 << 20, 5, 5))
        big[:] = 1

    def test_a_failing_decode_in_a_worker_process_names_the_batch(self):
        def bad(record):
            raise ValueError("cannot decode %r" % record)

        with self.assertRaisesRegex(data.DataError, "worker 0 failed on batch 0.*cannot decode"):
            next(iter(self.loader(workers=2, decode=bad)))



@unittest.skipUnless(sdk_test_util.have_cuda(), "no CUDA device: pinned batches are not tested")
class LoaderOnCudaTest(DatasetCase):
    def loader(self, **kw):
        loader = data.Loader(self.ds, 6, seed=7, drop_last=False, decode=None,
                             decode_batch=arrays_of, workers=2, **kw)
        self.addCleanup(loader.close)
        return loader

    def test_batches_are_pinned_by_default_and_reach_the_gpu_unchanged(self):
        import torch
        want = list(self.loader(worker_type="thread", pin_memory=False))
        self.assertFalse(want[0]["x"].is_pinned())
        for kind in ("thread", "process"):
            with self.subTest(worker_type=kind):
                loader = self.loader(worker_type=kind)  # pin_memory=None: pinned under CUDA
                self.assertTrue(loader.pin_memory)
                got = 0
                for b, w in zip(loader, want):
                    self.assertTrue(same(b, w))
                    for t in (b["x"], b["bf"], b["pair"][0]):
                        self.assertTrue(t.is_pinned())
                    on_gpu = b["x"].to("cuda", non_blocking=True)
                    torch.cuda.synchronize()
                    self.assertTrue(torch.equal(on_gpu.cpu(), w["x"]))
                    got += 1
                self.assertEqual(got, len(want))


if __name__ == "__main__":
    unittest.main()
