"""trainyard.tune on CPU under a memory budget: the micro-batch it finds is within
10% of the true largest that fits (found by a linear scan with an independent peak
count), for a small CNN and a small transformer; the model is left as it was; bad
input gets errors that say what to do; the choice is reported as a metrics line;
the Trainer's accumulation matches one large batch.
"""

import json
import os
import unittest

import sdk_test_util

if sdk_test_util.have_torch():
    import torch

    import tune_models
    from trainyard import metrics
    from trainyard.tune import Plan, TuneError, tune

CNN_LIMIT = 4 << 20      # the true largest CNN micro-batch is about 48
TRANSFORMER_LIMIT = 5 << 20  # about 36 for the transformer
MARGIN = 0.1


def budget_for(limit):
    return int(limit / (1 - MARGIN)) + 1


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): tune not tested")
class TuneSearchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(1)
        cls.tmp = sdk_test_util.TempDir()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_tune(self, model, sample, global_batch, limit, **kw):
        path = os.path.join(self.tmp.path, "metrics-%d.jsonl" % id(model))
        reporter = metrics.Reporter(path, env={})
        plan = tune(model, tune_models.adam, sample, global_batch,
                    memory_budget=budget_for(limit), margin=MARGIN, time_steps=1,
                    reporter=reporter, env={}, **kw)
        with open(path) as f:
            lines = [json.loads(line) for line in f]
        return plan, lines

    def check_largest(self, case, limit, global_batch):
        model, sample = case()
        plan, lines = self.run_tune(model, sample, global_batch, limit)
        self.assertLessEqual(plan.measured["limit_bytes"], limit)
        found = plan.measured["largest_micro_batch"]
        true = tune_models.true_largest(model, tune_models.adam, sample,
                                        plan.measured["limit_bytes"], stop=found * 2)
        self.assertGreater(true, 8, "the budget should allow a real search")
        self.assertLessEqual(found, true, "the found size does not fit")
        self.assertGreaterEqual(found, 0.9 * true, "found %d, largest that fits %d"
                                % (found, true))
        # The tuner's peak at each size it tried agrees with the independent count.
        for trial in plan.measured["trials"][:6]:
            indep = tune_models.step_peak_bytes(model, tune_models.adam, sample,
                                                trial["micro_batch"])
            self.assertAlmostEqual(trial["peak_bytes"] / indep, 1.0, delta=0.02, msg=trial)
        return plan, lines

    def test_cnn_micro_batch_is_within_10_percent_of_the_largest_that_fits(self):
        plan, lines = self.check_largest(tune_models.cnn_case, CNN_LIMIT, 97)
        # 97 is prime: no divisor near the largest micro-batch, so the nearest batch is used.
        self.assertFalse(plan.exact)
        self.assertIn("global batch 97 cannot be met exactly", plan.note)
        self.assertEqual(plan.global_batch, plan.micro_batch * plan.accum_steps)
        self.assertLessEqual(abs(plan.global_batch - 97), plan.accum_steps)
        # One metrics line with the choice, in the job contract's format.
        self.assertEqual(len(lines), 1)
        line = lines[0]
        self.assertIsInstance(line["time"], float)
        self.assertNotIn("step", line)  # not a training step: progress and ETA ignore it
        self.assertEqual(line["dtype"], plan.precision)
        self.assertEqual(line["tune_micro_batch"], plan.micro_batch)
        self.assertEqual(line["tune_accum_steps"], plan.accum_steps)
        self.assertEqual(line["tune_global_batch"], plan.global_batch)
        self.assertEqual(line["tune_target_global_batch"], 97)
        self.assertGreater(line["tune_speedup"], 0)
        self.assertGreater(line["tune_step_time_s"], 0)

    def test_transformer_micro_batch_is_within_10_percent_of_the_largest_that_fits(self):
        plan, _ = self.check_largest(tune_models.transformer_case, TRANSFORMER_LIMIT, 512)
        self.assertTrue(plan.exact)
        self.assertEqual(plan.global_batch, 512)
        self.assertEqual(512 % plan.micro_batch, 0)
        self.assertFalse(plan.channels_last, "no convolutions: channels-last is not tried")

    def test_model_rng_and_flags_are_as_before(self):
        model, sample = tune_models.cnn_case()
        model.eval()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        rng = torch.get_rng_state()
        tf32 = torch.backends.cuda.matmul.allow_tf32
        self.run_tune(model, sample, 64, CNN_LIMIT, max_micro_batch=8)
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)
            self.assertTrue(v.is_contiguous(), k)
        self.assertFalse(model.training)
        self.assertTrue(torch.equal(torch.get_rng_state(), rng))
        self.assertEqual(torch.backends.cuda.matmul.allow_tf32, tf32)
        self.assertTrue(all(p.grad is None for p in model.parameters()))

    def test_model_that_does_not_fit_at_batch_one_says_what_to_do(self):
        model, sample = tune_models.transformer_case()
        with self.assertRaises(TuneError) as cm:
            self.run_tune(model, sample, 64, 200 << 10)
        msg = str(cm.exception)
        self.assertIn("does not fit even at micro-batch 1", msg)
        self.assertIn("optimizer state", msg)
        self.assertIn("activation checkpointing", msg)
        self.assertIn("budget less a 10% margin", msg)

    def test_bad_requests_fail_before_measuring(self):
        model, sample = tune_models.cnn_case()
        with self.assertRaisesRegex(TuneError, "smaller than the world size 4"):
            self.run_tune(model, sample, 2, CNN_LIMIT, world_size=4)
        with self.assertRaisesRegex(TuneError, "cannot be split evenly over 4 ranks"):
            self.run_tune(model, sample, 10, CNN_LIMIT, world_size=4, allow_inexact=False)
        with self.assertRaisesRegex(TuneError, r"margin must be in \[0, 1\)"):
            tune(model, tune_models.adam, sample, 8, margin=1.5, env={})
        bad = (torch.randn(4, 3, 8, 8), torch.randint(0, 10, (5,)))
        with self.assertRaisesRegex(TuneError, "share their first .batch. dimension"):
            tune(model, tune_models.adam, bad, 8, memory_budget=CNN_LIMIT, env={})

    def test_plan_pinned_in_env_is_returned_without_measuring(self):
        model, sample = tune_models.cnn_case()
        env = {"TRAINYARD_TUNE_MICRO_BATCH": "6", "TRAINYARD_TUNE_ACCUM_STEPS": "2",
               "TRAINYARD_TUNE_PRECISION": "bf16"}
        plan = tune(model, tune_models.adam, sample, 12, env=env, report=False)
        self.assertEqual((plan.micro_batch, plan.accum_steps, plan.precision), (6, 2, "bf16"))
        self.assertIsNone(plan.measured)
        self.assertTrue(plan.exact)
        other = tune(model, tune_models.adam, sample, 16, env=env, report=False)
        self.assertFalse(other.exact)
        self.assertIn("gives a global batch of 12 (6 x 2 x 1 ranks), not the 16 asked", other.note)


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): tune not tested")
class TrainerTest(unittest.TestCase):
    def make(self):
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        return model, torch.optim.SGD(model.parameters(), lr=0.1)

    def test_accumulated_step_equals_one_large_batch(self):
        x, y = torch.randn(12, 6), torch.randn(12, 2)
        big, big_opt = self.make()
        torch.nn.functional.mse_loss(big(x), y).backward()
        big_opt.step()
        small, opt = self.make()
        trainer = Plan(4, 3).trainer(small, opt)
        stepped = []
        for i in range(3):
            with trainer.autocast():
                loss = torch.nn.functional.mse_loss(small(x[4 * i:4 * i + 4]), y[4 * i:4 * i + 4])
            stepped.append(trainer.backward(loss))
        self.assertEqual(stepped, [False, False, True])
        self.assertEqual((trainer.steps, trainer.micro_step), (1, 0))
        for a, b in zip(big.parameters(), small.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)

    def test_mid_accumulation_state_under_another_plan_is_refused(self):
        model, opt = self.make()
        trainer = Plan(4, 3).trainer(model, opt)
        with trainer.autocast():
            loss = model(torch.randn(4, 6)).pow(2).mean()
        trainer.backward(loss)
        state = trainer.state_dict()
        self.assertEqual(state["micro_step"], 1)
        other = Plan(4, 2).trainer(*self.make())
        with self.assertRaisesRegex(TuneError, "middle of a gradient accumulation under another "
                                               "plan .accum_steps 3 -> 2."):
            other.load_state_dict(state)
        same = Plan(4, 3).trainer(*self.make())
        same.load_state_dict(state)
        self.assertEqual(same.micro_step, 1)

    def test_fp16_on_cpu_is_refused(self):
        with self.assertRaisesRegex(TuneError, "fp16 needs a CUDA device"):
            Plan(4, 1, precision="fp16").trainer(*self.make())


if __name__ == "__main__":
    unittest.main()
