"""The safetensors writer/reader, checked against the format written out by hand."""

import json
import struct
import unittest

import sdk_test_util
from trainyard import safetensors


class SafetensorsTest(unittest.TestCase):
    def test_layout_matches_the_spec(self):
        blob = safetensors.dumps({"b": ("U8", [3], b"\x01\x02\x03"),
                                  "a": ("F32", [2], struct.pack("<2f", 1.5, -2.0))},
                                 {"k": "v"})
        (n,) = struct.unpack("<Q", blob[:8])
        self.assertEqual(n % 8, 0, "header padded to 8 bytes")
        header = json.loads(blob[8:8 + n])
        self.assertEqual(header["__metadata__"], {"k": "v"})
        self.assertEqual(header["a"], {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})
        self.assertEqual(header["b"], {"dtype": "U8", "shape": [3], "data_offsets": [8, 11]})
        self.assertEqual(struct.unpack("<2f", blob[8 + n:8 + n + 8]), (1.5, -2.0))

    def test_round_trip_including_scalars_and_empty(self):
        tensors = {"s": ("I64", [], struct.pack("<q", -7)), "e": ("BF16", [0, 4], b""),
                   "m": ("I16", [2, 2], struct.pack("<4h", 1, 2, 3, 4))}
        got, meta = safetensors.loads(safetensors.dumps(tensors))
        self.assertEqual(meta, {})
        self.assertEqual({k: (d, s, bytes(b)) for k, (d, s, b) in got.items()}, tensors)

    def test_rejects_bad_files(self):
        good = safetensors.dumps({"a": ("F32", [1], b"\0\0\0\0")})
        for bad in (good[:5], good[:-1], good + b"x", struct.pack("<Q", 1 << 40) + good[8:]):
            with self.assertRaises(ValueError):
                safetensors.loads(bad)
        with self.assertRaises(ValueError):
            safetensors.dumps({"a": ("F32", [2], b"\0\0\0\0")})
        with self.assertRaises(ValueError):
            safetensors.dumps({"a": ("C64", [1], b"\0" * 8)})


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): torch interop "
                     "not tested")
class TorchInteropTest(unittest.TestCase):
    def test_all_dtypes_round_trip_bitwise(self):
        import torch
        from trainyard import torch_state
        g = torch.Generator().manual_seed(0)
        state = {str(dt): torch.randn(3, 5, generator=g).to(dt)
                 for dt in (torch.float64, torch.float32, torch.float16, torch.bfloat16,
                            torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                            torch.bool)}
        state["scalar"] = torch.tensor(3.25)
        state["empty"] = torch.zeros(0, 2)
        state["strided"] = torch.arange(12.0).reshape(3, 4).t()
        files = torch_state.state_files(extra=state, rng=False)
        got = torch_state.restore(files, rng=False)["extra"]
        for k, t in state.items():
            self.assertEqual(got[k].dtype, t.dtype, k)
            self.assertEqual(got[k].shape, t.shape, k)
            self.assertTrue(torch.equal(got[k], t), k)

    def test_snapshot_is_a_copy_streamed_from_reused_buffers(self):
        import tempfile
        import torch
        import trainyard
        from trainyard import torch_state
        w = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3, dtype=torch.bfloat16)}

        class Model:
            def state_dict(self):
                return w

        buffers = torch_state.SnapshotBuffers()
        first = torch_state.state_files(model=Model(), step=1, rng=False, buffers=buffers)
        w["w"].add_(100)  # training goes on: the snapshot must not see it
        self.assertIsInstance(first[torch_state.MODEL_FILE], torch_state.TensorFile)
        got, _ = safetensors.loads(bytes(first[torch_state.MODEL_FILE]))
        self.assertEqual(bytes(got["w"][2]), torch.arange(6.0).numpy().tobytes())
        with tempfile.TemporaryDirectory() as d:
            mgr = trainyard.CheckpointManager(d)
            mgr.save(1, first, background=True)
            # The next snapshot reuses the same memory, so it waits for the write first.
            second = torch_state.state_files(model=Model(), step=2, rng=False, buffers=buffers)
            self.assertEqual(mgr.latest().step, 1)
            back = torch_state.restore(mgr.latest(), rng=False)
            self.assertEqual(back["step"], 1)
            raw, _ = safetensors.loads(mgr.latest().read(torch_state.MODEL_FILE))
            self.assertEqual(bytes(raw["w"][2]), torch.arange(6.0).numpy().tobytes())
            # The first snapshot's memory now holds the second: saving it is refused.
            with self.assertRaises(RuntimeError):
                mgr.save(3, first)
            mgr.save(2, second)
            raw, _ = safetensors.loads(mgr.latest().read(torch_state.MODEL_FILE))
            self.assertEqual(bytes(raw["w"][2]), (torch.arange(6.0) + 100).numpy().tobytes())
            self.assertEqual(mgr.latest().verify(), None)


if __name__ == "__main__":
    unittest.main()
