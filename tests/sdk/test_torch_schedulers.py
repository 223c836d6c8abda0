"""Every LR scheduler in torch.optim.lr_scheduler saves and resumes bitwise.

Skipped when torch is not importable (install python3-torch).
"""

import inspect
import unittest

import sdk_test_util

if sdk_test_util.have_torch():
    import torch
    from torch.optim import lr_scheduler as L
    from trainyard import torch_state

BEFORE, AFTER = 7, 12  # steps before the save, steps compared after it


def _builders():
    """{class name: (optimizer) -> scheduler} with simple arguments."""
    half = lambda epoch: 0.5 ** (epoch // 3)  # noqa: E731
    return {
        "LambdaLR": lambda o: L.LambdaLR(o, half),
        "MultiplicativeLR": lambda o: L.MultiplicativeLR(o, lambda e: 0.95),
        "StepLR": lambda o: L.StepLR(o, step_size=3, gamma=0.5),
        "MultiStepLR": lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
        "ConstantLR": lambda o: L.ConstantLR(o, factor=0.3, total_iters=9),
        "LinearLR": lambda o: L.LinearLR(o, start_factor=0.2, total_iters=10),
        "ExponentialLR": lambda o: L.ExponentialLR(o, gamma=0.9),
        "PolynomialLR": lambda o: L.PolynomialLR(o, total_iters=15, power=1.7),
        "CosineAnnealingLR": lambda o: L.CosineAnnealingLR(o, T_max=6),
        "CosineAnnealingWarmRestarts": lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4,
                                                                                T_mult=2),
        "CyclicLR": lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                         mode="exp_range", gamma=0.97),
        "OneCycleLR": lambda o: L.OneCycleLR(o, max_lr=0.5, total_steps=BEFORE + AFTER + 1),
        "ReduceLROnPlateau": lambda o: L.ReduceLROnPlateau(o, factor=0.5, patience=1),
        "SequentialLR": lambda o: L.SequentialLR(
            o, [L.OneCycleLR(o, max_lr=0.5, total_steps=8), L.MultiStepLR(o, [3, 6])],
            milestones=[8]),
        "ChainedScheduler": lambda o: L.ChainedScheduler(
            [L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2), L.ExponentialLR(o, 0.9)]),
    }


def _is_scheduler(cls):
    bases = [getattr(L, n) for n in ("LRScheduler", "_LRScheduler", "ReduceLROnPlateau")
             if hasattr(L, n)]
    return issubclass(cls, tuple(bases)) and not cls.__name__.lstrip("_") == "LRScheduler"


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): schedulers "
                     "not tested")
class SchedulerResumeTest(unittest.TestCase):
    def setup(self, name):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, opt, _builders()[name](opt)

    @staticmethod
    def step(model, opt, sched, i):
        loss = model(torch.full((2, 3), float(i % 4))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if isinstance(sched, L.ReduceLROnPlateau):
            sched.step([3.0, 2.0, 2.0, 2.5, 2.5, 2.5, 1.0, 1.0, 1.0, 1.2][i % 10])
        else:
            sched.step()

    @staticmethod
    def rates(opt):
        return [(g["lr"].hex(), float(g.get("momentum", 0)).hex()) for g in opt.param_groups]

    def test_every_scheduler_class_has_a_case(self):
        classes = {n for n, c in vars(L).items()
                   if inspect.isclass(c) and c.__module__ == L.__name__ and _is_scheduler(c)}
        self.assertEqual(classes - set(_builders()), set(),
                         "add these schedulers to _builders() so their resume is tested")

    def test_resume_gives_the_same_learning_rates(self):
        for name in sorted(_builders()):
            with self.subTest(scheduler=name):
                model, opt, sched = self.setup(name)
                for i in range(BEFORE):
                    self.step(model, opt, sched, i)
                files = torch_state.state_files(model=model, optimizer=opt, scheduler=sched,
                                                step=BEFORE, rng=False)
                model2, opt2, sched2 = self.setup(name)
                torch_state.restore({k: bytes(v) for k, v in files.items()}, model=model2,
                                    optimizer=opt2, scheduler=sched2, rng=False)
                self.assertEqual(self.rates(opt2), self.rates(opt))
                for i in range(BEFORE, BEFORE + AFTER):
                    self.step(model, opt, sched, i)
                    self.step(model2, opt2, sched2, i)
                    self.assertEqual(self.rates(opt2), self.rates(opt), "step %d" % i)
                self.assertEqual(sched2.state_dict().keys(), sched.state_dict().keys())


if __name__ == "__main__":
    unittest.main()
