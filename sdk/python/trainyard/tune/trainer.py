"""A training-loop helper that runs a Plan: autocast around the forward pass,
loss scaling for fp16, and an optimizer step every `accum_steps` micro-batches.

    trainer = plan.trainer(model, optimizer)
    for x, y in loader:                      # micro-batches of plan.micro_batch
        x, y = trainer.prepare((x, y))       # to the device, channels-last images
        with trainer.autocast():             # DDP: no gradient sync until the last one
            loss = loss_fn(model(x), y)
        if trainer.backward(loss):           # True when the optimizer stepped
            scheduler.step()

Its state (position inside the accumulation, the gradients summed so far, the
GradScaler, the plan) goes into a checkpoint through
torch_state.state_files(extra={"trainer": trainer.state_dict()}), so a job
stopped between two micro-batches resumes bitwise identically.
"""

import contextlib
import logging

import torch

from . import amp
from .batch import TuneError

log = logging.getLogger("trainyard")


class Trainer:
    """Accumulation, autocast and loss scaling for one model and optimizer."""

    def __init__(self, model, optimizer, plan, scaler=None):
        self.model = model
        self.optimizer = optimizer
        self.plan = plan
        params = list(model.parameters())
        self.device = params[0].device if params else torch.device("cpu")
        want_scaler = plan.precision == "fp16"
        if want_scaler and self.device.type != "cuda":
            raise TuneError("precision fp16 needs a CUDA device (its loss scaling runs there); "
                            "use bf16 or fp32 on %s" % self.device.type)
        self.scaler = scaler if scaler is not None else amp.make_scaler(want_scaler)
        self.micro_step = 0  # micro-batches since the last optimizer step
        self.steps = 0       # optimizer steps taken (restored from checkpoints)

    @property
    def at_boundary(self):
        """True when the next backward() ends an accumulation and steps the optimizer."""
        return self.micro_step + 1 >= self.plan.accum_steps

    def prepare(self, batch):
        """`batch` on the model's device; 4-D images channels-last when the plan says so."""
        return amp.move_batch(batch, self.device, self.plan.channels_last)

    def _no_sync(self):
        if not self.at_boundary and hasattr(self.model, "no_sync"):
            return self.model.no_sync()  # DDP: all-reduce only on the last micro-batch
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def autocast(self):
        """Runs the forward pass in the plan's precision (and, for DDP, without
        gradient sync unless this micro-batch ends the accumulation)."""
        with self._no_sync(), amp.autocast(self.device, self.plan.precision):
            yield

    def backward(self, loss):
        """Backward of loss / accum_steps (scaled for fp16); every accum_steps-th call
        also steps the optimizer and clears the gradients. Returns True then."""
        with self._no_sync():
            self.scaler.scale(loss / self.plan.accum_steps).backward()
        self.micro_step += 1
        if self.micro_step < self.plan.accum_steps:
            return False
        self._step()
        return True

    def flush(self):
        """Steps on a partial accumulation (end of data): the gradients are rescaled
        to the mean over the micro-batches seen. Returns True when it stepped."""
        if self.micro_step == 0:
            return False
        factor = self.plan.accum_steps / self.micro_step
        with torch.no_grad():
            for p in self.model.parameters():
                if p.grad is not None:
                    p.grad.mul_(factor)
        self._step()
        return True

    def _step(self):
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.micro_step = 0
        self.steps += 1

    def state_dict(self):
        """JSON-able state with tensors, for torch_state.state_files(extra=...): the
        plan, the position in the accumulation, the scaler and, mid-accumulation,
        the gradients summed so far (without them a resume would lose those
        micro-batches)."""
        grads = {}
        if self.micro_step:
            grads = {name: p.grad for name, p in self.model.named_parameters()
                     if p.grad is not None}
        return {"plan": self.plan.settings_dict(), "micro_step": self.micro_step,
                "steps": self.steps, "scaler": self.scaler.state_dict(), "grads": grads}

    def load_state_dict(self, state):
        """Restores state_dict()'s output. Refuses a checkpoint taken mid-accumulation
        under a different plan: its summed gradients belong to other micro-batches."""
        saved = state["plan"]
        mine = self.plan.settings_dict()
        if saved != mine:
            diff = ", ".join("%s %r -> %r" % (k, saved.get(k), mine[k]) for k in mine
                             if saved.get(k) != mine[k])
            if state["micro_step"]:
                raise TuneError(
                    "the checkpoint was taken in the middle of a gradient accumulation under "
                    "another plan (%s); resume with the saved plan: "
                    "Plan.from_dict(state['plan']), or pin it with the TRAINYARD_TUNE_* env "
                    "vars" % diff)
            log.warning("trainyard: resuming under a different plan (%s); training is no "
                        "longer identical to an uninterrupted run", diff)
        self.micro_step = int(state["micro_step"])
        self.steps = int(state["steps"])
        if self.scaler.is_enabled() and state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        params = dict(self.model.named_parameters())
        for p in params.values():
            p.grad = None
        for name, grad in state["grads"].items():
            if name not in params:
                raise TuneError("the checkpoint has a gradient for %r, which this model does "
                                "not have; is it the same model?" % name)
            p = params[name]
            p.grad = torch.empty_like(p).copy_(grad)  # the parameter's own layout
