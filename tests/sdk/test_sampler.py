"""ResumableSampler: an interrupted and resumed run sees the uninterrupted order."""

import json
import random
import unittest

import sdk_test_util  # noqa: F401  (puts the SDK on sys.path)
from trainyard import ResumableSampler


def stream(sampler, count):
    """The next `count` indices across epochs, the way a training loop consumes them."""
    out = []
    while len(out) < count:
        for i in sampler:
            out.append(i)
            if len(out) == count:
                break
    return out


class ResumableSamplerTest(unittest.TestCase):
    def test_each_epoch_is_a_permutation_that_depends_on_seed_and_epoch(self):
        s = ResumableSampler(50, seed=3)
        e0, e1 = list(s), list(s)
        self.assertEqual(sorted(e0), list(range(50)))
        self.assertEqual(sorted(e1), list(range(50)))
        self.assertNotEqual(e0, e1)
        self.assertEqual(e0, ResumableSampler(50, seed=3).order(0))
        self.assertNotEqual(e0, ResumableSampler(50, seed=4).order(0))

    def test_does_not_touch_the_global_rng(self):
        random.seed(1)
        expected = random.random()
        random.seed(1)
        list(ResumableSampler(100, seed=1))
        self.assertEqual(random.random(), expected)

    def test_resume_equals_uninterrupted_order(self):
        n, total = 23, 23 * 4 + 5
        full = stream(ResumableSampler(n, seed=11), total)
        for cut in [0, 1, 7, 22, 23, 24, 46, 50, total - 1]:
            a = ResumableSampler(n, seed=11)
            head = stream(a, cut)
            state = json.loads(json.dumps(a.state()))  # as saved in a checkpoint
            b = ResumableSampler(n, seed=11)
            b.load(state)
            self.assertEqual(head + stream(b, total - cut), full, "cut at %d" % cut)

    def test_state_right_after_an_epoch_resumes_at_the_next_epoch(self):
        a = ResumableSampler(5, seed=0)
        list(a)
        self.assertEqual((a.state()["epoch"], a.state()["index"]), (0, 5))
        b = ResumableSampler(5, seed=0)
        b.load(a.state())
        self.assertEqual(list(b), ResumableSampler(5, seed=0).order(1))
        self.assertEqual(b.epoch, 1)

    def test_consumed_overrides_read_ahead(self):
        a = ResumableSampler(10, seed=2)
        it = iter(a)
        first = [next(it) for _ in range(6)]  # a loader read 6 ahead, training used 4
        b = ResumableSampler(10, seed=2)
        b.load(a.state(consumed=4))
        self.assertEqual(first[:4] + list(b), a.order(0))

    def test_ranks_split_one_permutation(self):
        parts = [ResumableSampler(10, seed=5, rank=r, world_size=3).order(2) for r in range(3)]
        self.assertEqual([len(p) for p in parts], [3, 3, 3])
        self.assertEqual(len(set(sum(parts, []))), 9)

    def test_unshuffled_and_len(self):
        s = ResumableSampler(4, shuffle=False)
        self.assertEqual(len(s), 4)
        self.assertEqual(list(s), [0, 1, 2, 3])
        s.load({"epoch": 3, "index": 1})
        self.assertEqual(len(s), 3)

    def test_refuses_a_state_from_another_world_size(self):
        saved = ResumableSampler(100, seed=3, rank=0, world_size=4)
        for _ in zip(range(5), saved):
            pass
        state = json.loads(json.dumps(saved.state()))
        resized = ResumableSampler(100, seed=3, rank=1, world_size=2)
        with self.assertRaises(ValueError) as cm:
            resized.load(state)
        msg = str(cm.exception)
        for part in ("world_size=4", "world_size=2", "set_epoch(", "same number of ranks"):
            self.assertIn(part, msg)
        self.assertEqual((resized.epoch, resized.index), (0, 0))  # left untouched

    def test_a_state_from_another_world_size_at_an_epoch_boundary_loads(self):
        saved = ResumableSampler(100, seed=3, world_size=4)
        saved.set_epoch(2)
        resized = ResumableSampler(100, seed=3, rank=1, world_size=2)
        resized.load(saved.state())
        self.assertEqual(list(resized), resized.order(2))
        list(saved)  # the whole epoch: the state points past its end
        resized.load(saved.state())
        self.assertEqual(list(resized), resized.order(3))

    def test_a_state_from_another_rank_of_the_same_world_size_loads(self):
        saved = ResumableSampler(100, seed=3, rank=0, world_size=4)
        for _ in zip(range(5), saved):
            pass
        other = ResumableSampler(100, seed=3, rank=2, world_size=4)
        other.load(saved.state())  # rank 0 saves, every rank resumes from its state
        self.assertEqual(list(other), other.order(0)[5:])

    def test_refuses_a_state_from_another_order(self):
        with self.assertRaises(ValueError):
            ResumableSampler(10, seed=1).load(ResumableSampler(10, seed=2).state())
        with self.assertRaises(ValueError):
            ResumableSampler(10, seed=1).load(ResumableSampler(11, seed=1).state())


if __name__ == "__main__":
    unittest.main()
