"""The tuner's choice as a value: batch split and step settings, to apply in a
training loop, write into a job spec (env vars), or read back from either.

Plan is standard-library only; apply() and trainer() import torch.
"""

import json

from .batch import TuneError

ENV_PREFIX = "TRAINYARD_TUNE_"
_ENV_FIELDS = (("MICRO_BATCH", "micro_batch", int), ("ACCUM_STEPS", "accum_steps", int),
               ("WORLD_SIZE", "world_size", int), ("PRECISION", "precision", str),
               ("CHANNELS_LAST", "channels_last", bool), ("TF32", "tf32", bool))


def _env_bool(name, text):
    if text in ("1", "true", "True", "yes"):
        return True
    if text in ("0", "false", "False", "no", ""):
        return False
    raise TuneError("%s must be 1 or 0 (got %r)" % (name, text))


class Plan:
    """micro_batch x accum_steps x world_size samples per optimizer step, run in
    `precision` ("fp32", "bf16" or "fp16"), channels-last or not, TF32 or not.

    target_global_batch: what was asked (global_batch differs when note says why);
    measured: what the tuner measured (trials, candidates, step times), or None
    for a plan pinned from the environment or a checkpoint.
    """

    def __init__(self, micro_batch, accum_steps, world_size=1, precision="fp32",
                 channels_last=False, tf32=False, target_global_batch=None, note="",
                 measured=None):
        self.micro_batch = int(micro_batch)
        self.accum_steps = int(accum_steps)
        self.world_size = int(world_size)
        self.precision = precision
        self.channels_last = bool(channels_last)
        self.tf32 = bool(tf32)
        self.target_global_batch = target_global_batch or self.global_batch
        self.note = note
        self.measured = measured

    @property
    def global_batch(self):
        return self.micro_batch * self.accum_steps * self.world_size

    @property
    def exact(self):
        return self.global_batch == self.target_global_batch

    def settings_dict(self):
        return {"micro_batch": self.micro_batch, "accum_steps": self.accum_steps,
                "world_size": self.world_size, "precision": self.precision,
                "channels_last": self.channels_last, "tf32": self.tf32}

    def to_dict(self):
        d = self.settings_dict()
        d.update({"global_batch": self.global_batch,
                  "target_global_batch": self.target_global_batch, "exact": self.exact,
                  "note": self.note, "env": self.env()})
        if self.measured is not None:
            d["measured"] = self.measured
        return d

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d):
        return cls(d["micro_batch"], d["accum_steps"], d.get("world_size", 1),
                   d.get("precision", "fp32"), d.get("channels_last", False), d.get("tf32", False),
                   d.get("target_global_batch"), d.get("note", ""), d.get("measured"))

    def env(self):
        """The plan as TRAINYARD_TUNE_* variables for a job spec's env."""
        out = {}
        for suffix, field, kind in _ENV_FIELDS:
            value = getattr(self, field)
            out[ENV_PREFIX + suffix] = ("1" if value else "0") if kind is bool else str(value)
        return out

    def job_spec_env(self):
        """YAML lines to paste under a job spec's `template.env:`."""
        return "".join("  - {name: %s, value: \"%s\"}\n" % kv for kv in sorted(self.env().items()))

    @classmethod
    def from_env(cls, env):
        """The plan pinned by TRAINYARD_TUNE_* variables, or None when
        TRAINYARD_TUNE_MICRO_BATCH is unset."""
        if not env.get(ENV_PREFIX + "MICRO_BATCH"):
            return None
        values = {}
        for suffix, field, kind in _ENV_FIELDS:
            name = ENV_PREFIX + suffix
            text = env.get(name)
            if text is None:
                continue
            if kind is bool:
                values[field] = _env_bool(name, text)
            elif kind is int:
                try:
                    values[field] = int(text)
                except ValueError:
                    raise TuneError("%s must be an integer (got %r)" % (name, text)) from None
                if values[field] < 1:
                    raise TuneError("%s must be >= 1 (got %s)" % (name, text))
            else:
                values[field] = text
        values.setdefault("accum_steps", 1)
        if values.get("precision", "fp32") not in ("fp32", "bf16", "fp16"):
            raise TuneError("%sPRECISION must be fp32, bf16 or fp16 (got %r)"
                            % (ENV_PREFIX, values["precision"]))
        return cls(**values)

    def apply(self, model):
        """Sets TF32 (process-wide) and the model's memory format; returns the model."""
        import torch
        from . import amp
        amp.set_tf32(self.tf32)
        if self.channels_last:
            model.to(memory_format=torch.channels_last)
        return model

    def trainer(self, model, optimizer, scaler=None):
        """A Trainer running this plan's autocast, loss scaling and accumulation."""
        from .trainer import Trainer
        return Trainer(model, optimizer, self, scaler=scaler)

    def summary(self):
        lines = ["micro-batch %d x %d accumulation x %d ranks = global batch %d%s"
                 % (self.micro_batch, self.accum_steps, self.world_size, self.global_batch,
                    "" if self.exact else " (asked %d)" % self.target_global_batch),
                 "precision %s, channels-last %s, TF32 %s"
                 % (self.precision, "on" if self.channels_last else "off",
                    "on" if self.tf32 else "off")]
        if self.note:
            lines.append(self.note)
        m = self.measured
        if m:
            lines.append(m.get("precision_reason", ""))
            if m.get("speedup"):
                lines.append("measured %.4f s per optimizer step, %.2fx faster than %s"
                             % (m["step_time_s"], m["speedup"], m["naive"]))
        return "\n".join(line for line in lines if line)

    def __repr__(self):
        return "Plan(%s)" % ", ".join("%s=%r" % kv for kv in self.settings_dict().items())
