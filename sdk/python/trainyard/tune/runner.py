"""Trial training steps on the user's model: memory peak and step time at one
micro-batch size and one Settings.

The trials train the model on repeated sample rows, so the runner keeps a CPU
copy of the model's state and the RNG states, and restore() puts them back:
after tuning, the model, the random streams and the TF32 flags are as before.
"""

import statistics
import time

import torch

from . import amp, memory
from .batch import TuneError


def default_loss(model, batch):
    """Loss for a batch `(inputs, targets)`: cross-entropy for integer targets, else
    mean squared error; a lone tensor is fed to the model and its mean square taken
    (a stand-in with the same forward and backward cost)."""
    f = torch.nn.functional
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        out, target = model(batch[0]), batch[1]
        if not target.is_floating_point():
            return f.cross_entropy(out.reshape(-1, out.shape[-1]).float(), target.reshape(-1))
        return f.mse_loss(out.float(), target.float())
    return model(batch).float().pow(2).mean()


def _tensors(batch):
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (tuple, list)):
        return [t for v in batch for t in _tensors(v)]
    return []


def batch_size_of(sample):
    sizes = {t.shape[0] for t in _tensors(sample) if t.dim() > 0}
    if len(sizes) != 1:
        raise TuneError("sample_batch must be a tensor or a tuple/list/dict of tensors that "
                         "share their first (batch) dimension (got first dimensions %s)"
                         % (sorted(sizes) or "none"))
    return sizes.pop()


def _take(batch, index):
    if isinstance(batch, torch.Tensor):
        return batch[index] if batch.dim() > 0 else batch
    if isinstance(batch, dict):
        return {k: _take(v, index) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_take(v, index) for v in batch)
    return batch


class Measurement:
    """One trial: peak bytes, and medians of forward+backward and optimizer-step seconds."""

    def __init__(self, micro_batch, settings, peak_bytes, fb_s=None, opt_s=None):
        self.micro_batch = micro_batch
        self.settings = settings
        self.peak_bytes = peak_bytes
        self.fb_s = fb_s
        self.opt_s = opt_s

    def global_step_s(self, accum_steps):
        """Seconds per optimizer step with `accum_steps` micro-batches of this size."""
        return accum_steps * self.fb_s + self.opt_s


class StepRunner:
    """Runs trial steps of (model, optimizer factory, loss) on repeated sample rows."""

    def __init__(self, model, make_optimizer, sample_batch, loss_fn, limit_bytes):
        self.model = model
        self.make_optimizer = make_optimizer
        self.sample = sample_batch
        self.sample_size = batch_size_of(sample_batch)
        self.loss_fn = loss_fn or default_loss
        self.limit = limit_bytes
        params = list(model.parameters())
        if not params:
            raise TuneError("the model has no parameters to train; tune() needs a model whose "
                            "step updates parameters")
        self.device = params[0].device
        self._saved = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        self._rng = torch.get_rng_state()
        self._cuda_rng = (torch.cuda.get_rng_state(self.device) if self.device.type == "cuda"
                          else None)
        self._training = model.training
        self._tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        self.trials = 0
        self.limit_text = "memory limit"

    def restore(self):
        """Puts back the model's state, layout and mode, the RNG states and the TF32 flags."""
        self.model.to(memory_format=torch.contiguous_format)
        self.model.load_state_dict(self._saved)
        self.model.train(self._training)
        torch.set_rng_state(self._rng)
        if self._cuda_rng is not None:
            torch.cuda.set_rng_state(self._cuda_rng, self.device)
        amp.restore_tf32(self._tf32)
        memory.release(self.device)

    def _batch(self, size, settings):
        index = torch.arange(size) % self.sample_size
        return amp.move_batch(_take(self.sample, index), self.device, settings.channels_last)

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _forward_backward(self, batch, settings, scaler):
        with amp.autocast(self.device, settings.precision):
            loss = self.loss_fn(self.model, batch)
        scaler.scale(loss).backward()

    def _optimizer_step(self, opt, scaler):
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    def evaluate(self, size, settings, time_steps=0):
        """Measures a step at micro-batch `size`: one warm-up step that keeps its
        gradients (so the measured step runs with gradients and optimizer state
        alive, as in the middle of gradient accumulation), one measured step, then
        `time_steps` timed steps. Raises memory.OutOfMemory when it does not fit."""
        self.trials += 1
        self.model.train()
        self.model.to(memory_format=amp.memory_format(settings.channels_last))
        amp.set_tf32(settings.tf32)
        failure = None
        opt = batch = None
        try:
            opt = self.make_optimizer(self.model.parameters())
            scaler = amp.make_scaler(settings.scaled and self.device.type == "cuda")
            batch = self._batch(size, settings)
            self._forward_backward(batch, settings, scaler)
            scaler.step(opt)
            scaler.update()

            def step():  # zero_grad stays outside: frees of older memory are not recorded
                self._forward_backward(batch, settings, scaler)
                scaler.step(opt)
                scaler.update()

            def live():
                params = list(self.model.parameters())
                return (params + list(self.model.buffers()) + [p.grad for p in params]
                        + list(memory.optimizer_tensors(opt)) + _tensors(batch))

            peak = memory.measure_peak(step, self.device, live)
            opt.zero_grad(set_to_none=True)
            if peak > self.limit:
                failure = memory.OutOfMemory(
                    "the step needs %s at micro-batch %d, over the limit of %s"
                    % (mib(peak), size, mib(self.limit)), peak)
            else:
                result = Measurement(size, settings, peak)
                if time_steps:
                    result.fb_s, result.opt_s = self._time(opt, scaler, batch, settings,
                                                           time_steps)
        except Exception as e:  # noqa: BLE001 - only out-of-memory is swallowed
            if not memory.is_oom(e):
                raise
            failure = memory.OutOfMemory("%s at micro-batch %d: %s"
                                         % (type(e).__name__, size, str(e).splitlines()[0]))
        finally:
            # Drop everything the trial made (the traceback of an OOM holds the
            # activations), so the next trial starts from the same memory.
            opt = batch = None
            for p in self.model.parameters():
                p.grad = None
            memory.release(self.device)
        if failure is not None:
            raise failure
        return result

    def _time(self, opt, scaler, batch, settings, steps, min_seconds=0.25, max_steps=50):
        """Medians over at least `steps` steps and `min_seconds` (small steps jitter)."""
        fb, op = [], []
        started = time.perf_counter()
        while len(fb) < steps or (time.perf_counter() - started < min_seconds
                                  and len(fb) < max_steps):
            self._sync()
            t0 = time.perf_counter()
            self._forward_backward(batch, settings, scaler)
            self._sync()
            t1 = time.perf_counter()
            self._optimizer_step(opt, scaler)
            self._sync()
            fb.append(t1 - t0)
            op.append(time.perf_counter() - t1)
        return statistics.median(fb), statistics.median(op)

    def live_parts(self, make_optimizer_state=True):
        """(parameter, gradient, optimizer state) bytes, for messages; the optimizer
        state is measured by one real step at micro-batch 1 on fp32."""
        params = list(self.model.parameters())
        p_bytes = memory.tensor_bytes(params)
        opt_bytes = None
        if make_optimizer_state:
            opt = self.make_optimizer(params)
            try:
                with torch.no_grad():
                    for p in params:
                        p.grad = torch.zeros_like(p)
                opt.step()
                opt_bytes = memory.tensor_bytes(memory.optimizer_tensors(opt))
            except Exception as e:  # noqa: BLE001 - a message helper never fails the caller
                if not memory.is_oom(e):
                    raise
            finally:
                opt = None
                for p in params:
                    p.grad = None
                memory.release(self.device)
        return p_bytes, p_bytes, opt_bytes


def mib(n):
    return "%.1f MiB" % (n / 2.0 ** 20)
