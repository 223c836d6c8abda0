"""Starts the real `trainyard server` on a free port with a temporary state directory and
simulated GPUs, and drives it with the real CLI. Used by the end-to-end tests; stdlib only."""
import atexit
import ctypes
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

BIN = os.environ.get("TRAINYARD_BIN", "trainyard")


def private_file(path, mode="w"):
    """Opens a file only its owner may read: the state directory is open to jobs (run as other
    users when the server is root) for passing through, and the test's own files there are not
    theirs to read."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC), 0o600), mode)


def scratch_dir(prefix):
    """A new temporary directory, removed when the test process exits: each server's state was
    left behind before, about 1 GB in /tmp after a day of runs. TY_TEST_KEEP_TMP=1 keeps them,
    for a look after a failure."""
    path = tempfile.mkdtemp(prefix=prefix)
    if os.environ.get("TY_TEST_KEEP_TMP") != "1":
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def stop_when_parent_dies():
    """In the child before exec: SIGTERM when the test process ends on any path (a failed
    assertion, ctest's timeout, kill -9), so no server outlives the test that started it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Set by tests of isolation itself: never fall back to running workers as root.
KEEP_ISOLATION = False


def repo_reachable_by_workers():
    """False when the server is root (workers run as other users) and some directory above the
    repository does not let other users pass."""
    if os.geteuid() != 0:
        return True
    path = REPO
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


class Server:
    """`prefix` runs the server under another command, such as setpriv to drop root."""

    def __init__(self, gpus="sim:4xH100-80GB", config=None, extra=(), state_dir=None, prefix=()):
        self.state_dir = state_dir or scratch_dir("ty-e2e-")
        self.gpus, self.extra, self.proc, self.url = gpus, list(extra), None, None
        self.prefix = list(prefix)
        self.config_path = None
        if not KEEP_ISOLATION and not repo_reachable_by_workers() and \
                (config is None or "workers:" not in config):
            # Jobs of these tests run the repository's scripts; a checkout that other users
            # cannot enter would fail them for a reason that is not under test.
            print(f"note: {REPO} is not reachable by other users; workers run as root here",
                  flush=True)
            config = (config or "") + "workers: {user: root}\n"
        if config is not None:
            self.config_path = os.path.join(self.state_dir, "config.yaml")
            with private_file(self.config_path) as f:
                f.write(config)

    def start(self):
        addr = os.path.join(self.state_dir, "server.addr")
        if os.path.exists(addr):
            os.remove(addr)
        cmd = self.prefix + [BIN, "server", "--listen", "127.0.0.1:0", "--state",
                             os.path.join(self.state_dir, "state.db"), "--gpus", self.gpus] + self.extra
        if self.config_path:
            cmd += ["--config", self.config_path]
        self.log = private_file(os.path.join(self.state_dir, "server.log"), "a")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=stop_when_parent_dies)
        deadline = time.time() + 20
        while time.time() < deadline:
            if os.path.exists(addr):
                with open(addr) as f:
                    self.url = f.read().strip()
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: " + self.server_log())
            time.sleep(0.05)
        raise RuntimeError("server did not start")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill9()
        if getattr(self, "log", None):
            self.log.close()

    def server_log(self):
        with open(os.path.join(self.state_dir, "server.log")) as f:
            return f.read()

    def admin_token(self):
        with open(os.path.join(self.state_dir, "admin.token")) as f:
            return f.read().strip()

    # ---- CLI ----
    def cli(self, *args, token=None, check=True, stdin=None, timeout=60):
        env = dict(os.environ, TRAINYARD_SERVER=self.url)
        env.pop("TRAINYARD_TOKEN", None)
        if token:
            env["TRAINYARD_TOKEN"] = token
        r = subprocess.run([BIN] + list(args), env=env, capture_output=True, text=True,
                           input=stdin, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"trainyard {' '.join(args)} -> {r.returncode}\n{r.stderr}")
        return r

    def submit_file(self, path, **kw):
        return int(self.cli("submit", "-q", "-f", path, **kw).stdout.strip())

    def run(self, *args, **kw):
        return int(self.cli("run", "-q", *args, **kw).stdout.strip())

    def job(self, job_id, **kw):
        return json.loads(self.cli("show", str(job_id), "-o", "json", **kw).stdout)

    def logs(self, job_id, *args, token=None):
        """The worker's output; "" while the job has not started (`logs` then exits 1 and says
        so), so that callers may poll."""
        r = self.cli("logs", str(job_id), *args, token=token, check=False)
        if r.returncode == 1 and "has not started yet" in r.stderr:
            return ""
        if r.returncode != 0:
            raise AssertionError(f"trainyard logs {job_id} {' '.join(args)} -> {r.returncode}\n"
                                 f"{r.stderr}")
        return r.stdout

    def wait(self, job_id, states=("succeeded", "failed", "cancelled"), timeout=30, **kw):
        deadline = time.time() + timeout
        while time.time() < deadline:
            j = self.job(job_id, **kw)
            if j["state"] in states:
                return j
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} did not reach {states}: {self.job(job_id, **kw)}")

    # ---- raw HTTP ----
    def http(self, method, path, body=None, token=None, content_type="application/json"):
        req = urllib.request.Request(self.url + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


# A fast reconcile loop and short retry back-off, for tests that wait on job changes.
FAST = "reconcileIntervalSeconds: 0.05\nretryBackoff: {initialSeconds: 0.2, maxSeconds: 1}\n"


def wait_for(what, fn, timeout=20, interval=0.1):
    """fn()'s first true value, polled every `interval` s; AssertionError naming `what` after
    `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


class ServerTestCase(unittest.TestCase):
    """A test class with one server for all its tests, `cls.s`, started with the class's CONFIG
    (default FAST) and GPUS, and stopped after them."""
    CONFIG = FAST
    GPUS = "sim:4xH100-80GB"

    @classmethod
    def setUpClass(cls):
        cls.s = Server(gpus=cls.GPUS, config=cls.CONFIG).start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
