"""data.resumable_dataloader: a resumed run is bitwise identical to an uninterrupted one,
random augmentation in DataLoader workers included, whatever the number of workers; the
training loop's own RNG is left alone; foreign states are refused.

Skipped when torch is not importable (install python3-torch).
"""

import random
import unittest

import sdk_test_util
from trainyard import data

try:
    import numpy
    import torch
except ImportError:
    torch = None


if torch is not None:
    class Augmented(torch.utils.data.Dataset):
        """An index plus three random draws, as a random crop or flip would make."""

        def __len__(self):
            return 103

        def __getitem__(self, i):
            return torch.tensor([float(i), random.random(), float(numpy.random.rand()),
                                 float(torch.rand(1))], dtype=torch.float64)


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): the resumable "
                     "DataLoader is not tested")
class ResumableDataLoaderTest(unittest.TestCase):
    def run_epochs(self, workers, stop=None, state=None, epochs=2):
        loader = data.resumable_dataloader(Augmented(), 8, seed=5, num_workers=workers)
        self.addCleanup(loader.close)
        if state is not None:
            loader.load(state)
        out = []
        while len(out) < epochs * loader.batches_per_epoch:
            for batch in loader:
                out.append(batch)
                if len(out) == stop:
                    return out, loader.state()
        return out, None

    def assertSameBatches(self, a, b):
        self.assertEqual(len(a), len(b))
        for k, (x, y) in enumerate(zip(a, b)):
            self.assertTrue(torch.equal(x, y), "batch %d differs" % k)

    def test_resume_mid_epoch_is_bitwise_identical_with_workers(self):
        reference, _ = self.run_epochs(0)
        self.assertEqual(len(reference), 26)
        with_workers, _ = self.run_epochs(2)
        self.assertSameBatches(with_workers, reference)
        for stop in (5, 13, 17):
            first, state = self.run_epochs(2, stop=stop)
            rest, _ = self.run_epochs(2, state=state, epochs=2 - state["epoch"])
            self.assertSameBatches(first + rest[:len(reference) - stop], reference)

    def test_the_training_loops_rng_is_untouched_without_workers(self):
        torch.manual_seed(1)
        random.seed(1)
        expected = (torch.rand(3), random.random())
        torch.manual_seed(1)
        random.seed(1)
        self.run_epochs(0, stop=3)
        self.assertTrue(torch.equal(torch.rand(3), expected[0]))
        self.assertEqual(random.random(), expected[1])

    def test_a_foreign_state_is_refused(self):
        _, state = self.run_epochs(0, stop=3)
        other = data.resumable_dataloader(Augmented(), 8, seed=6)
        with self.assertRaisesRegex(data.DataError, "seed=5, this loader 6"):
            other.load(state)
        with self.assertRaisesRegex(data.DataError, "world_size=1 mid-epoch"):
            data.resumable_dataloader(Augmented(), 8, seed=5, rank=0, world_size=2).load(state)
        with self.assertRaisesRegex(ValueError, "sampler itself"):
            data.resumable_dataloader(Augmented(), 8, seed=5, sampler=[1])

    def test_ranks_get_equal_batch_counts(self):
        counts = {len(data.resumable_dataloader(Augmented(), 8, seed=5, rank=r, world_size=3))
                  for r in range(3)}
        self.assertEqual(counts, {5})  # 103 // 3 = 34 samples: 4 full batches and one of 2


if __name__ == "__main__":
    unittest.main()
