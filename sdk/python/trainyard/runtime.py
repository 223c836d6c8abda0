"""The worker side of the trainyard job contract: environment, notice, exit codes.

See docs/job-contract.md. A notice (SIGTERM by default, and a file at
TRAINYARD_PREEMPT_NOTICE) means "save a checkpoint and exit 75 before the
deadline"; SIGKILL follows the grace period. The signal handler only sets a
flag, because doing real work (I/O, CUDA calls, locks) inside a Python signal
handler can deadlock or corrupt state in the middle of a training step.
"""

import datetime
import json
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger("trainyard")

EXIT_DONE = 0
EXIT_PREEMPTED = 75  # EX_TEMPFAIL: "checkpointed, requeue me"; not counted as a failure

_current = None
_current_lock = threading.Lock()


def _env_int(env, name, default):
    value = env.get(name, "")
    try:
        return int(value)
    except ValueError:
        return default


def parse_time(text):
    """Parses an RFC 3339 timestamp ("2025-01-02T03:04:05Z", offsets, fractions).

    Returns an aware datetime in UTC, or None when the text is not a timestamp:
    the notice must never crash the job that is trying to save itself.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    s = text.strip().replace("z", "Z")
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    # fromisoformat before 3.11 accepts only 0, 3 or 6 fraction digits.
    if "." in s:
        head, rest = s.split(".", 1)
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        s = head + "." + (digits + "000000")[:6] + rest
    try:
        t = datetime.datetime.fromisoformat(s)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc)


class Notice:
    """What the notice file says: why, until when, and how long the grace is.

    The file is read leniently: JSON {"reason", "deadline", "graceSeconds"} is
    the documented form; any other text becomes the reason with no deadline.
    """

    def __init__(self, reason="", deadline=None, grace_seconds=None, raw=""):
        self.reason = reason
        self.deadline = deadline
        self.grace_seconds = grace_seconds
        self.raw = raw

    @classmethod
    def parse(cls, text):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            return cls(reason=text.strip(), raw=text)
        grace = doc.get("graceSeconds")
        if isinstance(grace, bool) or not isinstance(grace, (int, float)):
            grace = None
        reason = doc.get("reason", "")
        return cls(reason=reason if isinstance(reason, str) else str(reason),
                   deadline=parse_time(doc.get("deadline")), grace_seconds=grace, raw=text)

    def __repr__(self):
        return "Notice(reason=%r, deadline=%r, grace_seconds=%r)" % (
            self.reason, self.deadline, self.grace_seconds)


class Job:
    """One worker's view of its job, built from the environment.

    Outside trainyard (no TRAINYARD_JOB_ID) it still works: attempt 1, rank 0
    of 1, and no checkpoint dir unless TRAINYARD_CHECKPOINT_DIR is set, so the
    same script runs by hand.
    """

    def __init__(self, env=None, signals=(signal.SIGTERM,)):
        env = os.environ if env is None else env
        self.job_id = env.get("TRAINYARD_JOB_ID") or None
        self.attempt = _env_int(env, "TRAINYARD_ATTEMPT", 1)
        self.rank = _env_int(env, "RANK", _env_int(env, "TRAINYARD_RANK", 0))
        self.world_size = _env_int(env, "WORLD_SIZE", 1)
        self.local_rank = _env_int(env, "LOCAL_RANK", 0)
        self.run_dir = env.get("TRAINYARD_RUN_DIR") or None
        self.checkpoint_dir = env.get("TRAINYARD_CHECKPOINT_DIR") or None
        self.notice_path = env.get("TRAINYARD_PREEMPT_NOTICE") or None
        self.metrics_path = env.get("TRAINYARD_METRICS_FILE") or (
            os.path.join(self.run_dir, "metrics.jsonl") if self.run_dir else None)
        self.stop_signal = None  # the signal number that asked us to stop, if any
        self._stop = threading.Event()
        self._notice = None
        self._installed = []
        for sig in signals:
            self._install(sig)

    @property
    def managed(self):
        """True when started by trainyard (TRAINYARD_JOB_ID is set)."""
        return self.job_id is not None

    def _install(self, sig):
        if threading.current_thread() is not threading.main_thread():
            log.warning("trainyard: job() called off the main thread; signal %s is not handled, "
                        "relying on the notice file", sig)
            return
        signal.signal(sig, self._on_signal)
        self._installed.append(sig)

    def _on_signal(self, signum, frame):
        # Only a flag: the training loop acts on it at the next step boundary.
        self.stop_signal = signum
        self._stop.set()

    def request_stop(self):
        """Acts as if a notice arrived (tests, or a loop that decides to yield)."""
        self._stop.set()

    def should_stop(self):
        """True once a notice signal arrived or the notice file exists.

        Cheap enough to call every step: one flag check and at most one stat().
        """
        if self._stop.is_set():
            return True
        if self.notice_path and os.path.exists(self.notice_path):
            self._stop.set()
            return True
        return False

    def notice(self):
        """The parsed notice file, or None when there is none (yet)."""
        if self._notice is None and self.notice_path:
            try:
                with open(self.notice_path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                return None
            self._notice = Notice.parse(text)
        return self._notice

    @property
    def deadline(self):
        """When SIGKILL is due (aware UTC datetime), or None when unknown."""
        n = self.notice()
        return n.deadline if n else None

    def seconds_left(self):
        """Seconds until the deadline, or None when unknown. May be negative."""
        d = self.deadline
        if d is None:
            return None
        return d.timestamp() - time.time()

    def exit_preempted(self, message=None):
        """Flushes metrics and exits 75: the server requeues the job without a failure.

        Call it only after the checkpoint is committed; the next attempt
        resumes from TRAINYARD_CHECKPOINT_DIR.
        """
        from . import metrics
        if message:
            log.warning("trainyard: %s", message)
        metrics.flush()
        sys.exit(EXIT_PREEMPTED)


def job(signals=("SIGTERM",), env=None):
    """Returns this process's Job, creating it (and its signal handlers) once.

    `signals` names the notice signals to handle; add "SIGUSR1" when the
    server's notice signal was changed, or "SIGINT" to treat Ctrl-C as a notice
    during interactive runs.
    """
    global _current
    with _current_lock:
        if _current is None:
            sigs = [getattr(signal, s) if isinstance(s, str) else s for s in signals]
            _current = Job(env=env, signals=sigs)
        return _current


def current():
    """The Job created by job(), or None; never installs handlers."""
    return _current


def ignore_notice_signals(signals=None):
    """Makes this process ignore the notice signals unless its parent sends them (call it in
    a child process).

    The notice goes to the whole process group, so a worker process started by the
    training program (a DataLoader worker) gets it too; torch's workers die of SIGTERM,
    and the main process then raises "DataLoader worker ... is killed by signal" in
    the middle of its final save. The main process alone should act on the notice;
    children are stopped by it as they would be at the end of training, and SIGKILL
    at the deadline still reaches them. `signals`: numbers or names; by default the
    ones this process's Job handles (inherited over fork), else SIGTERM.

    The parent's own SIGTERM still stops the child: multiprocessing sends it to daemon
    children at interpreter exit and then joins them (a DataLoader with persistent_workers
    would otherwise hang the exit), and DataLoader sends it to workers that do not stop.
    On Linux a thread tells the sender apart (sigwaitinfo's si_pid); elsewhere the signals
    are ignored outright.
    """
    if signals is None:
        signals = (_current._installed if _current is not None and _current._installed
                   else (signal.SIGTERM,))
    sigs = {getattr(signal, s) if isinstance(s, str) else s for s in signals}
    if hasattr(signal, "sigwaitinfo") and hasattr(signal, "pthread_sigmask"):
        _obey_parent_only(sigs)
        return
    for sig in sigs:
        signal.signal(sig, signal.SIG_IGN)


_watched = {}  # pid -> signals a _parent_watch thread handles in this process


def _parent_pids():
    """Who may stop this child: its parent, and (forkserver) the process that asked for it."""
    import multiprocessing
    pids = {os.getppid()}
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid:
        pids.add(parent.pid)
    return pids


def _obey_parent_only(sigs):
    # Blocked in this thread and every thread it starts, so the signals stay pending until
    # the watcher takes them; a thread started earlier would run the no-op handler instead.
    for sig in sigs:
        signal.signal(sig, _ignore)
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    pid = os.getpid()
    new = sigs - _watched.get(pid, set())
    if not new:
        return
    _watched.setdefault(pid, set()).update(new)
    threading.Thread(target=_parent_watch, args=(new, _parent_pids()), daemon=True,
                     name="trainyard-notice-shield").start()


def _ignore(signum, frame):
    pass


def _parent_watch(sigs, parents):
    while True:
        info = signal.sigwaitinfo(sigs)
        if info.si_pid in parents:
            # Exit 0, not death by the signal: torch's SIGCHLD handler raises "DataLoader
            # worker ... is killed by signal" in the parent when it sees the latter.
            os._exit(0)


def worker_init_fn(worker_id=None):
    """A DataLoader worker_init_fn that ignores the notice signals:
    `DataLoader(..., num_workers=2, worker_init_fn=trainyard.worker_init_fn)`.
    With a worker_init_fn of your own, call ignore_notice_signals() in it instead."""
    ignore_notice_signals()
