"""Saves one checkpoint and SIGKILLs itself just before the K-th file-system call of it.

argv: DIR KEEP_LAST STEP VERSION KILL_AT RENAME_MODE. The fault-injecting layer wraps
the os calls a commit makes (rename, fsync, unlink, rmdir, mkdir) and the directory
exchange; RENAME_MODE "plain" makes the exchange unavailable, as on file systems
without it. Prints "done N" (N = calls made) when the save finished before call K.
"""

import os
import signal
import sys

import sdk_test_util
from trainyard import CheckpointManager
from trainyard import checkpoint as ckpt_module

calls = 0


def main():
    directory, keep, step, version, kill_at, mode = sys.argv[1:7]
    kill_at = int(kill_at)
    mgr = CheckpointManager(directory, keep_last=int(keep))
    if mode == "plain" and hasattr(ckpt_module, "_exchange"):
        ckpt_module._exchange = lambda a, b: False

    def wrap(owner, name):
        real = getattr(owner, name)

        def faulty(*args, **kwargs):
            global calls
            calls += 1
            if calls == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        setattr(owner, name, faulty)

    for name in ("rename", "replace", "fsync", "unlink", "rmdir", "mkdir"):
        wrap(os, name)
    if hasattr(ckpt_module, "_exchange"):
        wrap(ckpt_module, "_exchange")
    mgr.save(int(step), sdk_test_util.versioned_payload(int(step), int(version)))
    print("done %d" % calls, flush=True)


if __name__ == "__main__":
    main()
