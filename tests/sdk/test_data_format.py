"""trainyard.data's shard format: round trip, random access, and that every kind of
damage (torn or missing shard, bit rot in a record or an index, an edited index.json)
is reported with the file's name instead of being skipped."""

import json
import os
import unittest

import sdk_test_util
from trainyard import data, data_format


def records(n):
    return [(b"record-%d:" % i) * (1 + i % 37) for i in range(n)]


class FormatTest(unittest.TestCase):
    def setUp(self):
        self.tmp = sdk_test_util.TempDir()
        self.addCleanup(self.tmp.cleanup)
        self.dir = os.path.join(self.tmp.path, "ds")

    def write(self, n=500, **kw):
        kw.setdefault("shard_bytes", 4000)
        return data.write_dataset(self.dir, records(n), **kw)

    def shard_path(self, j=1):
        return os.path.join(self.dir, data.read_index(self.dir)["shards"][j]["name"])

    def test_round_trip_with_every_codec_and_random_access(self):
        for codec in ("none", "zlib", "lzma"):
            with self.subTest(codec=codec):
                self.dir = os.path.join(self.tmp.path, codec)
                doc = self.write(codec=codec)
                self.assertGreater(len(doc["shards"]), 1)
                ds = data.ShardDataset(self.dir)
                self.assertEqual(len(ds), 500)
                self.assertEqual([ds[i] for i in range(500)], records(500))
                picks = [499, 3, 250, 4, 3, 0]
                self.assertEqual(ds.read_many(picks), [records(500)[i] for i in picks])

    def test_empty_records_and_an_empty_dataset(self):
        data.write_dataset(self.dir, [b"", b"x", b""])
        self.assertEqual([r for r in data.ShardDataset(self.dir).read_many([0, 1, 2])],
                         [b"", b"x", b""])
        other = os.path.join(self.tmp.path, "empty")
        data.write_dataset(other, [])
        self.assertEqual(len(data.ShardDataset(other)), 0)

    def test_writer_refuses_to_overwrite_a_dataset(self):
        self.write()
        with self.assertRaisesRegex(data.DataError, "already holds a dataset"):
            data.ShardWriter(self.dir)

    def test_missing_shard_is_named_when_the_dataset_opens(self):
        self.write()
        path = self.shard_path()
        os.unlink(path)
        with self.assertRaisesRegex(data.DataError, "shard %s is missing" % path):
            data.ShardDataset(self.dir)

    def test_torn_shard_is_named_when_the_dataset_opens(self):
        self.write()
        path = self.shard_path()
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 10)
        with self.assertRaisesRegex(data.DataError, "shard %s is torn.*re-copy" % path):
            data.ShardDataset(self.dir)

    def test_bit_rot_in_a_record_fails_that_record_only(self):
        self.write(codec="zlib")
        ds = data.ShardDataset(self.dir)
        path = self.shard_path(0)
        with open(path, "r+b") as f:
            f.seek(len(data_format.MAGIC) + 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x40]))
        with self.assertRaisesRegex(data.DataError, "%s is corrupted: record 0 fails its crc32"
                                    % path):
            ds[0]
        with self.assertRaisesRegex(data.DataError, "record 0 fails"):
            ds.read_many([1, 0])
        self.assertEqual(ds[1], records(500)[1])

    def test_read_batch_gives_the_records_back_to_back_with_every_codec(self):
        for codec in ("none", "zlib", "lzma"):
            with self.subTest(codec=codec):
                self.dir = os.path.join(self.tmp.path, "batch-" + codec)
                self.write(codec=codec)
                ds = data.ShardDataset(self.dir)
                # Across shards, out of order, a record twice, neighbours in one shard.
                picks = [499, 3, 250, 4, 3, 0, 1, 2, 498]
                batch = ds.read_batch(picks)
                want = [records(500)[i] for i in picks]
                self.assertEqual([bytes(r) for r in batch], want)
                self.assertEqual(len(batch), len(picks))
                self.assertEqual(bytes(batch.data), b"".join(want))
                self.assertEqual(batch.lengths, [len(r) for r in want])
                self.assertEqual(batch.offsets[1], len(want[0]))
                self.assertEqual(bytes(ds.read_batch([]).data), b"")
                for bad in (500, -1):
                    with self.assertRaises(IndexError):
                        ds.read_batch([0, bad])

    def test_read_batch_reuses_its_buffer_only_when_no_view_of_it_is_left(self):
        self.write()
        ds = data.ShardDataset(self.dir)
        first = ds.read_batch([30, 31, 32])  # larger than the batches below
        buffer = first.buffer
        first.release()
        second = ds.read_batch([4, 5], buffer)
        self.assertIs(second.buffer, buffer)  # nothing held it: reused
        kept = second[0]  # a view someone keeps
        second.release()
        third = ds.read_batch([6, 7], buffer)
        self.assertIsNot(third.buffer, buffer)
        self.assertEqual(bytes(kept), records(500)[4])  # not overwritten
        self.assertEqual([bytes(r) for r in third], records(500)[6:8])

    def test_read_batch_catches_a_damaged_record(self):
        self.write()
        ds = data.ShardDataset(self.dir)
        path = self.shard_path(0)
        with open(path, "r+b") as f:
            f.seek(len(data_format.MAGIC) + 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x40]))
        with self.assertRaisesRegex(data.DataError, "%s is corrupted: record 0 fails its crc32"
                                    % path):
            ds.read_batch([2, 1, 0])
        self.assertEqual([bytes(r) for r in ds.read_batch([2, 1])], records(500)[1:3][::-1])

    def test_read_batch_reads_records_far_apart_and_many_at_once(self):
        big = [bytes([i % 251]) * (100 << 10) for i in range(6)]  # gaps beyond the sink
        data.write_dataset(self.dir, big + [b"x%d" % i for i in range(1500)],
                           shard_bytes=64 << 20)
        ds = data.ShardDataset(self.dir)
        for picks in ([0, 2, 5] + list(range(6, 1506)),  # more buffers than a preadv takes
                      [0, 2, 5] + list(range(6, 1506, 2))):  # small gaps read into a sink
            self.assertEqual([bytes(r) for r in ds.read_batch(picks)], ds.read_many(picks))

    def test_mapped_read_batch_points_into_the_shards_and_checks_every_record(self):
        self.write()
        ds = data.ShardDataset(self.dir)
        picks = [499, 3, 250, 4, 3, 0, 1, 2, 498]
        batch = ds.read_batch(picks, mapped=True)
        self.assertEqual([bytes(r) for r in batch], [records(500)[i] for i in picks])
        self.assertEqual(batch.lengths, [len(records(500)[i]) for i in picks])
        self.assertTrue(batch.data.readonly)
        for k in range(len(batch)):  # the documented way to find record k
            o, n = batch.offsets[k], batch.lengths[k]
            self.assertEqual(bytes(batch.data[o:o + n]), records(500)[picks[k]])
        with self.assertRaises(TypeError):
            batch.data[batch.offsets[0]] = 0
        kept = batch[1]
        batch.release()
        ds.close()  # the mapping stays while a view of it lives
        self.assertEqual(bytes(kept), records(500)[3])
        self.assertEqual(len(data.ShardDataset(self.dir).read_batch([], mapped=True)), 0)
        with self.assertRaises(IndexError):
            data.ShardDataset(self.dir).read_batch([0, 500], mapped=True)
        other = os.path.join(self.tmp.path, "zlib")
        data.write_dataset(other, records(50), codec="zlib", shard_bytes=4000)
        got = data.ShardDataset(other).read_batch([7, 1], mapped=True)  # copied: compressed
        self.assertEqual([bytes(r) for r in got], [records(50)[7], records(50)[1]])

    def test_mapped_read_batch_copies_when_the_address_space_cannot_be_had(self):
        self.write()
        real = data_format._MappedShards

        def refuse(sizes):
            raise OSError(12, "Cannot allocate memory")
        data_format._MappedShards = refuse
        try:
            ds = data.ShardDataset(self.dir)
            with self.assertLogs("trainyard", "WARNING"):
                batch = ds.read_batch([7, 2], mapped=True)
        finally:
            data_format._MappedShards = real
        self.assertFalse(batch.data.readonly)  # a copy
        self.assertEqual([bytes(r) for r in batch], [records(500)[7], records(500)[2]])

    def test_mapped_read_batch_catches_a_damaged_record(self):
        self.write()
        path = self.shard_path(1)
        ds = data.ShardDataset(self.dir)
        first = ds.starts[1]  # record 0 of shard 1
        ds.read_batch([first, 0], mapped=True)  # mapped before the damage
        with open(path, "r+b") as f:
            f.seek(len(data_format.MAGIC) + 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x40]))
        for fresh in (False, True):
            with self.subTest(fresh=fresh):
                if fresh:
                    ds = data.ShardDataset(self.dir)
                with self.assertRaisesRegex(data.DataError, "%s is corrupted: record 0 fails "
                                            "its crc32" % path):
                    ds.read_batch([0, first], mapped=True)
                self.assertEqual([bytes(r) for r in ds.read_batch([first + 1], mapped=True)],
                                 [records(500)[first + 1]])

    def test_damaged_shard_index_or_trailer_is_detected(self):
        self.write()
        path = self.shard_path(-1)
        size = os.path.getsize(path)
        for where, message in ((size - 40, "index fails its crc32"),
                               (size - 20, "trailer is damaged")):
            with self.subTest(where=where):
                with open(path, "r+b") as f:
                    f.seek(where)
                    byte = f.read(1)
                    f.seek(where)
                    f.write(bytes([byte[0] ^ 1]))
                ds = data.ShardDataset(self.dir)
                with self.assertRaisesRegex(data.DataError, message):
                    ds[len(ds) - 1]
                with open(path, "r+b") as f:  # undo
                    f.seek(where)
                    f.write(byte)

    def test_a_shard_swapped_for_another_of_the_same_size_is_refused(self):
        data.write_dataset(self.dir, [b"aaaa", b"bbbb"], shard_bytes=1)  # a shard each
        a, b = data.read_index(self.dir)["shards"]
        self.assertEqual(a["bytes"], b["bytes"])
        with open(os.path.join(self.dir, b["name"]), "rb") as f:
            other = f.read()
        with open(os.path.join(self.dir, a["name"]), "wb") as f:
            f.write(other)
        with self.assertRaisesRegex(data.DataError, "not the shard index.json lists"):
            data.ShardDataset(self.dir)[0]

    def test_edited_or_torn_index_json_is_refused(self):
        self.write()
        path = os.path.join(self.dir, data_format.INDEX_FILE)
        with open(path) as f:
            text = f.read()
        doc = json.loads(text)
        doc["shards"][0]["records"] += 1
        with open(path, "w") as f:
            json.dump(doc, f)
        with self.assertRaisesRegex(data.DataError, "%s fails its checksum" % path):
            data.ShardDataset(self.dir)
        with open(path, "w") as f:
            f.write(text[:len(text) // 2])
        with self.assertRaisesRegex(data.DataError, "%s is not valid JSON.*torn" % path):
            data.ShardDataset(self.dir)
        os.unlink(path)
        with self.assertRaisesRegex(data.DataError, "index.json not found"):
            data.ShardDataset(self.dir)


if __name__ == "__main__":
    unittest.main()
