"""Per-step metrics as JSON lines, for the server (later) and for people (now).

report() must never slow or break the training loop: lines are buffered and
written in one append when the buffer is large or old enough, at exit, and
before a preempted exit; any error is logged once and the lines are dropped.
"""

import atexit
import json
import logging
import math
import os
import threading
import time

log = logging.getLogger("trainyard")

FLUSH_BYTES = 64 << 10
FLUSH_INTERVAL_S = 5.0
_RESERVED = ("time", "rank", "attempt")


def default_path(env=None):
    """TRAINYARD_METRICS_FILE, else <TRAINYARD_RUN_DIR>/metrics.jsonl, else None."""
    env = os.environ if env is None else env
    if env.get("TRAINYARD_METRICS_FILE"):
        return env["TRAINYARD_METRICS_FILE"]
    if env.get("TRAINYARD_RUN_DIR"):
        return os.path.join(env["TRAINYARD_RUN_DIR"], "metrics.jsonl")
    return None


def _plain(value):
    """A JSON-safe value: tensors/numpy scalars become numbers, NaN/inf become null."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (TypeError, ValueError, RuntimeError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


class Reporter:
    """Buffers metric lines and appends them to one file."""

    def __init__(self, path, flush_bytes=FLUSH_BYTES, flush_interval_s=FLUSH_INTERVAL_S,
                 env=None):
        env = os.environ if env is None else env
        self.path = path
        self.flush_bytes = flush_bytes
        self.flush_interval_s = flush_interval_s
        self._fixed = {}
        for field, var in (("rank", "RANK"), ("attempt", "TRAINYARD_ATTEMPT")):
            try:
                self._fixed[field] = int(env[var])
            except (KeyError, ValueError):
                pass
        self._total_steps = None
        self._lines = []
        self._size = 0
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()
        self._warned = False

    def report(self, step=None, samples=None, loss=None, data_wait_s=None, step_time_s=None,
               dtype=None, total_steps=None, **extra):
        if self.path is None:
            return
        try:
            rec = {"time": round(time.time(), 6)}
            rec.update(self._fixed)
            if total_steps is not None:
                # Kept and written on every later line: readers look only at the newest lines.
                self._total_steps = int(total_steps)
            if self._total_steps is not None:
                rec["total_steps"] = self._total_steps
            for key, value in (("step", step), ("samples", samples), ("loss", loss),
                               ("data_wait_s", data_wait_s), ("step_time_s", step_time_s),
                               ("dtype", dtype)):
                if value is not None:
                    rec[key] = _plain(value)
            for key, value in extra.items():
                if key not in _RESERVED:
                    rec[key] = _plain(value)
            line = json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n"
            with self._lock:
                self._lines.append(line)
                self._size += len(line)
                due = (self._size >= self.flush_bytes
                       or time.monotonic() - self._last_flush >= self.flush_interval_s)
            if due:
                self.flush()
        except Exception as e:  # never into the training loop
            self._warn(e)

    def flush(self):
        try:
            with self._lock:
                lines, self._lines, self._size = self._lines, [], 0
                self._last_flush = time.monotonic()
                if not lines or self.path is None:
                    return
                # One write of whole lines with O_APPEND: readers never see half a line
                # from this process, and lines from earlier attempts are kept.
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    data = "".join(lines).encode("utf-8")
                    while data:
                        data = data[os.write(fd, data):]
                finally:
                    os.close(fd)
        except Exception as e:
            self._warn(e)

    def _warn(self, err):
        if not self._warned:
            self._warned = True
            log.warning("trainyard: metrics to %s are dropped: %s", self.path, err)


_default = None
_default_lock = threading.Lock()


def reporter():
    """The process-wide Reporter for default_path(), flushed at exit."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Reporter(default_path())
            atexit.register(_default.flush)
        return _default


def report(step=None, samples=None, loss=None, data_wait_s=None, step_time_s=None, dtype=None,
           total_steps=None, **extra):
    """Appends one metrics line (buffered). Never raises.

    step: optimizer steps done; samples: samples this step trained on (this
    worker); loss: training loss; data_wait_s / step_time_s: seconds spent
    waiting for input / in the whole step; dtype: compute dtype ("bf16", ...);
    total_steps: the steps the run means to reach (given once, it is repeated
    on every later line; `trainyard ls` then shows an ETA);
    extra: more JSON-able fields.
    """
    try:
        r = reporter()
    except Exception as e:  # pragma: no cover - only on a broken environment
        log.warning("trainyard: metrics disabled: %s", e)
        return
    r.report(step=step, samples=samples, loss=loss, data_wait_s=data_wait_s,
             step_time_s=step_time_s, dtype=dtype, total_steps=total_steps, **extra)


def flush():
    """Writes buffered lines now (done at exit and by Job.exit_preempted())."""
    if _default is not None:
        _default.flush()
