"""Step settings (precision, memory format, TF32) and the torch calls that apply them.

Works on torch 1.13 and newer: torch.amp.GradScaler where it exists, else
torch.cuda.amp.GradScaler.
"""

import contextlib

import torch

PRECISIONS = ("fp32", "bf16", "fp16")


class Settings:
    """How a step runs: autocast precision, channels-last activations, TF32 matmuls."""

    def __init__(self, precision="fp32", channels_last=False, tf32=False):
        if precision not in PRECISIONS:
            raise ValueError("precision must be one of %s (got %r)" % (", ".join(PRECISIONS),
                                                                       precision))
        self.precision = precision
        self.channels_last = bool(channels_last)
        self.tf32 = bool(tf32)

    @property
    def scaled(self):
        """fp16 gradients underflow without loss scaling; bf16 has fp32's range."""
        return self.precision == "fp16"

    def name(self):
        parts = [self.precision]
        if self.channels_last:
            parts.append("channels_last")
        if self.tf32:
            parts.append("tf32")
        return "+".join(parts)

    def to_dict(self):
        return {"precision": self.precision, "channels_last": self.channels_last,
                "tf32": self.tf32}

    def __eq__(self, other):
        return isinstance(other, Settings) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return "Settings(%s)" % self.name()


def autocast(device, precision):
    """The autocast context for `precision` on `device` (a no-op for fp32)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.type, dtype=dtype)


def make_scaler(enabled):
    """A GradScaler, enabled only for fp16 (on CUDA)."""
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        return amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def set_tf32(on):
    """Turns TF32 matmuls and convolutions on or off; returns the previous (matmul, cudnn)."""
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = bool(on)
    torch.backends.cudnn.allow_tf32 = bool(on)
    return before


def restore_tf32(before):
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def memory_format(channels_last):
    return torch.channels_last if channels_last else torch.contiguous_format


def move_batch(batch, device, channels_last):
    """`batch` (a tensor, or a tuple/list/dict of them) on `device`; 4-D floating
    tensors (images) in channels-last layout when asked."""
    if isinstance(batch, torch.Tensor):
        t = batch.to(device, non_blocking=True)
        if channels_last and t.dim() == 4 and t.is_floating_point():
            t = t.contiguous(memory_format=torch.channels_last)
        return t
    if isinstance(batch, dict):
        return {k: move_batch(v, device, channels_last) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(move_batch(v, device, channels_last) for v in batch)
    return batch


def has_conv(model):
    """True when the model has a 2-D convolution, where channels-last can pay off."""
    return any(isinstance(m, (torch.nn.Conv2d, torch.nn.ConvTranspose2d)) for m in model.modules())


def device_precisions(device):
    """(precisions worth trying, TF32 available, why) for `device`.

    CUDA: bf16 autocast without a scaler on bf16-capable GPUs (Ampere and newer),
    else fp16 with a GradScaler on tensor-core GPUs (Volta, Turing); TF32 on
    Ampere and newer. CPU: fp32, and bf16 autocast only if it measures faster
    (CPUs without AVX512-BF16 or AMX usually run it slower).
    """
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        name = torch.cuda.get_device_name(device)
        tf32 = major >= 8
        if major >= 8 and torch.cuda.is_bf16_supported():
            return ["bf16", "fp32"], tf32, ("%s (sm_%d%d) supports bf16: bf16 autocast, no loss "
                                            "scaling; TF32 for the fp32 rest"
                                            % (name, major, minor))
        if major >= 7:
            return ["fp16", "fp32"], tf32, ("%s (sm_%d%d) has fp16 tensor cores but no bf16: "
                                            "fp16 autocast with a GradScaler"
                                            % (name, major, minor))
        return ["fp32"], False, "%s (sm_%d%d) has no tensor cores: fp32" % (name, major, minor)
    return ["fp32", "bf16"], False, ("CPU: fp32 unless bf16 autocast measures faster by "
                                     "min_gain (default 5%; it needs AVX512-BF16 or AMX to "
                                     "pay off)")
