"""trainyard.tune's batch arithmetic and Plan: global = micro x accumulation x ranks,
inexact targets explained, bad requests refused, env round trip. No torch needed."""

import unittest

import sdk_test_util  # noqa: F401 - puts the SDK on sys.path

from trainyard.tune import Plan, TuneError, split_global_batch


class SplitGlobalBatchTest(unittest.TestCase):
    def check(self, split, micro, accum, world, target):
        self.assertEqual((split.micro_batch, split.accum_steps, split.world_size),
                         (micro, accum, world))
        self.assertEqual(split.global_batch, micro * accum * world)
        self.assertLessEqual(split.micro_batch, max(micro, 1))
        self.assertEqual(split.target, target)

    def test_fits_whole_needs_no_accumulation(self):
        s = split_global_batch(256, 300)
        self.check(s, 256, 1, 1, 256)
        self.assertTrue(s.exact)
        self.assertEqual(s.note, "")

    def test_uses_largest_divisor_not_above_the_largest_fitting_micro_batch(self):
        self.check(split_global_batch(256, 48), 32, 8, 1, 256)
        self.check(split_global_batch(250, 100), 50, 5, 1, 250)
        self.check(split_global_batch(96, 40, world_size=4), 24, 1, 4, 96)
        self.check(split_global_batch(1024, 100, world_size=8), 64, 2, 8, 1024)

    def test_micro_batch_never_exceeds_what_fits(self):
        for target in range(1, 200):
            for fit in (1, 3, 7, 16, 50):
                for world in (1, 2, 3):
                    if target < world:
                        continue
                    s = split_global_batch(target, fit, world)
                    self.assertLessEqual(s.micro_batch, fit, (target, fit, world))
                    self.assertGreaterEqual(s.micro_batch, 1)
                    if s.exact:
                        self.assertEqual(s.note, "")
                    else:
                        self.assertIn("cannot be met exactly", s.note)
                        # Nearest achievable with the fewest steps: within one step's share.
                        self.assertLessEqual(abs(s.global_batch - target),
                                             s.accum_steps * world, (target, fit, world))

    def test_prime_per_rank_batch_is_inexact_and_says_why(self):
        s = split_global_batch(257, 100)
        self.assertFalse(s.exact)
        self.assertEqual((s.micro_batch, s.accum_steps, s.global_batch), (86, 3, 258))
        self.assertIn("no divisor between 50 and", s.note)
        self.assertIn("257 accumulation steps instead of 3", s.note)
        self.assertIn("ask for 258", s.note)

    def test_prime_per_rank_batch_with_exactness_required_takes_the_slow_exact_split(self):
        s = split_global_batch(257, 100, allow_inexact=False)
        self.check(s, 1, 257, 1, 257)
        self.assertTrue(s.exact)

    def test_target_not_a_multiple_of_world_size_is_inexact(self):
        s = split_global_batch(251, 100, world_size=2)
        self.assertEqual(s.global_batch, 252)
        self.assertIn("not a multiple of the world size 2", s.note)
        with self.assertRaisesRegex(TuneError, "cannot be split evenly over 2 ranks; use 250 or "
                                               "252"):
            split_global_batch(251, 100, world_size=2, allow_inexact=False)

    def test_bad_requests_say_what_to_ask_for(self):
        with self.assertRaisesRegex(TuneError, "smaller than the world size 8.*at least 8"):
            split_global_batch(4, 16, world_size=8)
        with self.assertRaisesRegex(TuneError, r"global_batch must be an integer >= 1 \(got 0\)"):
            split_global_batch(0, 16)
        with self.assertRaisesRegex(TuneError, "max_micro_batch must be an integer"):
            split_global_batch(16, 2.5)


class PlanTest(unittest.TestCase):
    def test_env_round_trip(self):
        plan = Plan(24, 4, world_size=2, precision="bf16", channels_last=True, tf32=True)
        env = plan.env()
        self.assertEqual(env["TRAINYARD_TUNE_MICRO_BATCH"], "24")
        self.assertEqual(env["TRAINYARD_TUNE_CHANNELS_LAST"], "1")
        back = Plan.from_env(env)
        self.assertEqual(back.settings_dict(), plan.settings_dict())
        self.assertEqual(back.global_batch, 192)
        self.assertIn('- {name: TRAINYARD_TUNE_PRECISION, value: "bf16"}', plan.job_spec_env())

    def test_dict_round_trip(self):
        plan = Plan(5, 3, precision="fp16", target_global_batch=16, note="why")
        back = Plan.from_dict(plan.to_dict())
        self.assertEqual(back.to_dict(), plan.to_dict())
        self.assertFalse(back.exact)

    def test_no_env_is_no_plan(self):
        self.assertIsNone(Plan.from_env({}))

    def test_bad_env_names_the_variable(self):
        with self.assertRaisesRegex(TuneError, "TRAINYARD_TUNE_MICRO_BATCH must be an integer"):
            Plan.from_env({"TRAINYARD_TUNE_MICRO_BATCH": "lots"})
        with self.assertRaisesRegex(TuneError, "TRAINYARD_TUNE_ACCUM_STEPS must be >= 1"):
            Plan.from_env({"TRAINYARD_TUNE_MICRO_BATCH": "4", "TRAINYARD_TUNE_ACCUM_STEPS": "0"})
        with self.assertRaisesRegex(TuneError, "PRECISION must be fp32, bf16 or fp16"):
            Plan.from_env({"TRAINYARD_TUNE_MICRO_BATCH": "4", "TRAINYARD_TUNE_PRECISION": "fp8"})
        with self.assertRaisesRegex(TuneError, "TRAINYARD_TUNE_TF32 must be 1 or 0"):
            Plan.from_env({"TRAINYARD_TUNE_MICRO_BATCH": "4", "TRAINYARD_TUNE_TF32": "maybe"})


if __name__ == "__main__":
    unittest.main()
