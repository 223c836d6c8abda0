"""A real loopback Slurm cluster (scripts/slurm-cluster) and a trainyard server driving it, for
the Slurm end-to-end tests. Needs root and Debian's slurmctld, slurmd, slurm-client and munge;
`available()` says why not when they are missing. Stdlib only."""
import os
import shutil
import subprocess
import time

from harness import REPO, Server, scratch_dir

SCRIPT = os.path.join(REPO, "scripts", "slurm-cluster")

# Clusters and servers started by this process, stopped on every way out: a normal exit, an
# exception that skips a tearDown, or SIGTERM from ctest's timeout.
_LIVE = []


def _stop_all():
    while _LIVE:
        thing = _LIVE.pop()
        try:
            thing.stop()
        except Exception:  # noqa: BLE001 - stopping the rest matters more
            pass


def _on_sigterm(signum, frame):
    _stop_all()
    os._exit(128 + signum)


def _track(thing):
    import atexit
    import signal
    if not _LIVE and not getattr(_track, "installed", False):
        atexit.register(_stop_all)
        signal.signal(signal.SIGTERM, _on_sigterm)
        _track.installed = True
    _LIVE.append(thing)


def available():
    """None when a loopback cluster can run here, else why not."""
    if os.geteuid() != 0:
        return "needs root (slurmd runs jobs as their users)"
    for tool in ("slurmctld", "slurmd", "sbatch", "munged"):
        if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
            return f"{tool} is not installed (scripts/setup installs Slurm)"
    return None


class SlurmCluster:
    def __init__(self, nodes=2, gpus_per_node=2, gres_type="h100", cpus=8, memory_mb=8000):
        self.dir = scratch_dir("ty-slurm-")
        self.args = ["--nodes", str(nodes), "--gpus-per-node", str(gpus_per_node),
                     "--gres-type", gres_type, "--cpus", str(cpus), "--memory-mb", str(memory_mb)]
        self.conf = os.path.join(self.dir, "slurm.conf")

    def start(self):
        _track(self)
        r = subprocess.run([SCRIPT, "start", self.dir] + self.args, capture_output=True,
                           text=True, timeout=90)
        if r.returncode != 0:
            raise RuntimeError("slurm-cluster start failed:\n" + r.stdout + r.stderr)
        return self

    def stop(self, clean=False):
        if self in _LIVE:
            _LIVE.remove(self)
        subprocess.run([SCRIPT, "stop", self.dir] + (["--clean"] if clean else []),
                       capture_output=True, text=True, timeout=60)

    def env(self):
        return dict(os.environ, SLURM_CONF=self.conf)

    def run(self, *args, check=True, timeout=30):
        r = subprocess.run(list(args), env=self.env(), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(args)} -> {r.returncode}\n{r.stdout}{r.stderr}")
        return r

    def jobs(self):
        """Slurm's jobs as squeue --json reports them (all states while MinJobAge keeps them)."""
        import json
        return json.loads(self.run("squeue", "--json").stdout)["jobs"]

    def active_jobs(self, comment_prefix="trainyard:"):
        states = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")
        out = []
        for j in self.jobs():
            state = j["job_state"] if isinstance(j["job_state"], str) else j["job_state"][0]
            if state in states and j.get("comment", "").startswith(comment_prefix):
                out.append(j)
        return out

    def pid(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return int(f.read().split()[0])

    def daemon_pids(self, pattern):
        r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
        return [int(p) for p in r.stdout.split()]

    def log_tail(self, n=40):
        out = []
        logdir = os.path.join(self.dir, "log")
        for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else []:
            with open(os.path.join(logdir, name), errors="replace") as f:
                out.append(f"--- {name}\n" + "".join(f.readlines()[-n:]))
        return "\n".join(out)


def slurm_server(cluster, config_extra="", shared_dir=None, poll_seconds=0.3, gpu_sampler=None,
                 **kw):
    """A trainyard server whose executor is `cluster`. Its shared dir is under /tmp, which
    workers running as other users can pass through."""
    shared = shared_dir or scratch_dir("ty-shared-")
    os.chmod(shared, 0o711)
    config = (f"reconcileIntervalSeconds: 0.1\n"
              f"executor:\n  kind: slurm\n  partition: gpu\n  sharedDir: {shared}\n"
              f"  slurmConf: {cluster.conf}\n  pollSeconds: {poll_seconds}\n"
              f"  commandTimeoutSeconds: 5\n"
              + (f"  gpuSampler: \"{gpu_sampler}\"\n" if gpu_sampler else "")) + config_extra
    server = Server(config=config, **kw)
    server.shared_dir = shared
    _track(server)
    return server


def wait_for(predicate, timeout=30, what="condition", interval=0.1):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def ctld_env(cluster):
    return dict(cluster.env(), TRAINYARD_SLURM_CLUSTER=cluster.dir)


def kill_ctld(cluster, sig=None):
    """Stops slurmctld with `sig` (default SIGTERM: a restart; SIGKILL: a crash, which may lose
    the last seconds of its state)."""
    import signal
    os.kill(cluster.pid("slurmctld.pid"), sig or signal.SIGTERM)
    wait_for(lambda: cluster.run("sinfo", check=False, timeout=30).returncode != 0, timeout=20,
             what="slurmctld to stop answering")


def start_ctld(cluster):
    subprocess.run(["slurmctld", "-f", cluster.conf], env=ctld_env(cluster),
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=30)
    wait_for(lambda: cluster.run("sinfo", check=False, timeout=30).returncode == 0, timeout=30,
             what="slurmctld to answer again")


def restart_slurmd(cluster, node):
    """Stops one node's slurmd (SIGTERM) and starts it again; its running jobs carry on."""
    import signal
    pid = cluster.pid(f"slurmd-{node}.pid")
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=20, what=f"slurmd {node} to stop")
    subprocess.run(["slurmd", "-f", cluster.conf, "-N", node], env=ctld_env(cluster),
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=30)
