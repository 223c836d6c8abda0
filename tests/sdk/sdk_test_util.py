"""Shared helpers for the SDK tests: paths, child environments, deterministic payloads."""

import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SDK = os.path.join(REPO, "sdk", "python")
PYTHON = sys.executable or "/usr/bin/python3"

if SDK not in sys.path:
    sys.path.insert(0, SDK)


def have_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def have_cuda():
    """True when torch is installed and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def child_env(**extra):
    """The environment for a child: the SDK importable, no trainyard vars leaking in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRAINYARD_") and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = SDK + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_child(script, args, env, **kw):
    return subprocess.Popen([PYTHON, os.path.join(HERE, script)] + [str(a) for a in args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kw)


def payload(step):
    """Deterministic files for checkpoint `step`, of varying sizes (up to ~300 KB), so
    a random kill often lands inside a save."""
    seed = hashlib.sha256(b"step-%d" % step).digest()
    size = 1000 + (step * 7919) % 300000
    blob = (seed * (size // len(seed) + 1))[:size]
    return {"a.bin": blob, "b.json": b'{"step": %d}' % step,
            "nested/c.bin": seed * (1 + step % 5)}


class TempDir:
    """A temporary directory as a context manager that also works in setUp."""

    def __init__(self):
        self._td = tempfile.TemporaryDirectory(prefix="ty-sdk-")
        self.path = self._td.name

    def cleanup(self):
        self._td.cleanup()


def versioned_payload(step, version):
    """payload(step) with a version marker, so a re-saved step differs from the old copy."""
    files = payload(step)
    files["version"] = b"%d" % version
    return files
