"""Data-parallel training under trainyard: torch.distributed set up from the worker's
environment, DDP with optional gradient compression, and communication costs per step.

    from trainyard import distributed, torch_state
    ctx = distributed.init()          # RANK/WORLD_SIZE/... or SLURM_*; alone: world size 1
    model = distributed.wrap(net.to(ctx.device), compression="powersgd", powersgd_rank=2)
    for step in range(start, total):
        t0 = time.perf_counter()
        loss = loss_fn(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
        model.report(step=step + 1, loss=loss, step_time_s=time.perf_counter() - t0)
    files = torch_state.state_files(model=net, optimizer=opt,
                                    extra={"comm": model.comm_state()})  # every rank
    if ctx.rank == 0: manager.save(step, files)
    # resume: torch_state.restore(ck, model=net, optimizer=opt) before wrap(), then
    # model.load_comm_state(restored["extra"]["comm"]) on every rank

report() adds to each metrics line: comm_bytes (bytes the communication hook handed to
all-reduce in this step, counted per call), comm_s (time some bucket's communication was in
flight, overlapped or not), comm_wait_s (time the training thread spent on communication that
did not overlap backward compute) and compute_s (step_time_s - data_wait_s - comm_wait_s).
PowerSGD's state (error feedback, warm-start Q, its RNG and step) goes into checkpoints through
comm_state() / load_comm_state(), per parameter, so a resume may change the bucket layout; the
rebuilt layout goes too, so that a resumed process draws the first Q's as the run that never
stopped did, even when PowerSGD starts in its first step.
torch is imported only when init() or wrap() runs; parse_env() needs the standard library only.
"""

import logging
import os
import re
import threading
import time

log = logging.getLogger("trainyard")

COMPRESSIONS = ("none", "fp16", "bf16", "powersgd")
# Added to each column's norm when PowerSGD orthogonalizes P and Q. torch's default, 0, divides
# by zero when a matrix's gradient is all zero in a step (a branch scaled by zero, a frozen or
# unused layer under find_unused_parameters): the column becomes NaN, and the NaN reaches the
# weights at the next step. 1e-8 is the value torch's documentation suggests; gradient columns
# have norms far above it, and error feedback keeps what the slight shrink leaves out.
POWERSGD_EPSILON = 1e-8
STATE_FORMAT = "trainyard-powersgd"
_BY_HAND = ("torchrun and trainyard set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
            "MASTER_PORT; srun sets SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID")


class DistributedConfigError(ValueError):
    """The environment does not describe a consistent set of workers."""


class DistEnv:
    """Where this worker sits in its job. source: "torchrun" (RANK etc., which trainyard's
    local and Slurm executors both set), "slurm" (srun's SLURM_* only) or "single"."""

    __slots__ = ("rank", "world_size", "local_rank", "master_addr", "master_port", "source")

    def __init__(self, rank=0, world_size=1, local_rank=0, master_addr=None, master_port=None,
                 source="single"):
        self.rank, self.world_size, self.local_rank = rank, world_size, local_rank
        self.master_addr, self.master_port, self.source = master_addr, master_port, source

    def __repr__(self):
        return "DistEnv(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__)


def _int(env, name, why, minimum=0):
    text = env.get(name, "").strip()
    try:
        value = int(text)
    except ValueError:
        raise DistributedConfigError("%s=%r is not an integer; it must be %s" % (name, text, why))
    if value < minimum:
        raise DistributedConfigError("%s=%d must be >= %d: %s" % (name, value, minimum, why))
    return value


def _first_host(nodelist):
    """The first host of a Slurm node list ("n[01-04,7],m2" -> "n01"), or None."""
    m = re.match(r"([^,\[]+)(?:\[([^\]]+)\](\S*?))?(?:,|$)", nodelist.strip())
    if not m:
        return None
    if m.group(2) is None:
        return m.group(1)
    first = re.split(r"[-,]", m.group(2))[0]
    return m.group(1) + first + (m.group(3) or "") if first.isdigit() else None


def _rendezvous(env, e, addr_hint, port_hint):
    if e.world_size == 1:
        return e
    e.master_addr = env.get("MASTER_ADDR", "").strip() or addr_hint
    if not e.master_addr:
        raise DistributedConfigError(
            "MASTER_ADDR is not set (RANK=%d, WORLD_SIZE=%d): it must name the host where rank 0 "
            "listens, the same on every rank; trainyard sets it for gangs, by hand export "
            "MASTER_ADDR=<rank 0's host>" % (e.rank, e.world_size))
    if env.get("MASTER_PORT", "").strip():
        e.master_port = _int(env, "MASTER_PORT", "a TCP port free on rank 0's host", 1)
    elif port_hint:
        e.master_port = port_hint
    else:
        raise DistributedConfigError(
            "MASTER_PORT is not set (RANK=%d, WORLD_SIZE=%d): trainyard sets it for gangs of 2 "
            "or more workers; by hand export MASTER_PORT=29500 (a free port on rank 0's host, the "
            "same on every rank)" % (e.rank, e.world_size))
    if e.master_port > 65535:
        raise DistributedConfigError("MASTER_PORT=%d is not a TCP port (1..65535)" % e.master_port)
    return e


def _torchrun_env(env):
    for name in ("RANK", "WORLD_SIZE"):
        if not env.get(name, "").strip():
            other = "WORLD_SIZE" if name == "RANK" else "RANK"
            raise DistributedConfigError(
                "%s is not set but %s=%s is: set both (%s), or unset %s to run as one process"
                % (name, other, env.get(other), _BY_HAND, other))
    world = _int(env, "WORLD_SIZE", "the number of workers", 1)
    rank = _int(env, "RANK", "this worker's index, 0..WORLD_SIZE-1")
    if rank >= world:
        raise DistributedConfigError("RANK=%d is out of range for WORLD_SIZE=%d: ranks are 0..%d"
                                     % (rank, world, world - 1))
    if env.get("TRAINYARD_RANK", "").strip() and env["TRAINYARD_RANK"].strip() != str(rank):
        raise DistributedConfigError(
            "RANK=%d but TRAINYARD_RANK=%s: trainyard sets both to the same value; the job's "
            "command or env changed RANK" % (rank, env["TRAINYARD_RANK"]))
    if env.get("LOCAL_RANK", "").strip():
        local = _int(env, "LOCAL_RANK", "this worker's index on its node")
    elif world == 1:
        local = 0
    else:
        raise DistributedConfigError(
            "LOCAL_RANK is not set (RANK=%d, WORLD_SIZE=%d): set it to this worker's index among "
            "the workers on its node (%s)" % (rank, world, _BY_HAND))
    _check_local(local, rank, env.get("LOCAL_WORLD_SIZE", "").strip(), "LOCAL_RANK", "RANK")
    return _rendezvous(env, DistEnv(rank, world, local, source="torchrun"), None, None)


def _check_local(local, rank, local_world, local_name, rank_name):
    if local > rank:
        raise DistributedConfigError(
            "%s=%d > %s=%d: a worker's index on its node cannot exceed its global rank; the "
            "launcher's variables disagree" % (local_name, local, rank_name, rank))
    if local_world.isdigit() and local >= int(local_world):
        raise DistributedConfigError("%s=%d is out of range for %s workers on this node"
                                     % (local_name, local, local_world))


def _slurm_env(env):
    tasks_var = "SLURM_STEP_NUM_TASKS" if env.get("SLURM_STEP_NUM_TASKS") else "SLURM_NTASKS"
    if not env.get(tasks_var, "").strip():
        raise DistributedConfigError(
            "SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is: start one "
            "task per worker with srun (`srun --ntasks=4 python train.py`)")
    world = _int(env, tasks_var, "the number of Slurm tasks", 1)
    rank = _int(env, "SLURM_PROCID", "this task's index, 0..%s-1" % tasks_var)
    if rank >= world:
        raise DistributedConfigError("SLURM_PROCID=%d is out of range for %s=%d"
                                     % (rank, tasks_var, world))
    if world > 1 and not env.get("SLURM_LOCALID", "").strip():
        raise DistributedConfigError("SLURM_LOCALID is not set: start the tasks with srun, which "
                                     "sets it, or set LOCAL_RANK and the other torchrun variables")
    local = _int(env, "SLURM_LOCALID", "this task's index on its node") if world > 1 else 0
    _check_local(local, rank, env.get("SLURM_NTASKS_PER_NODE", "").strip(), "SLURM_LOCALID",
                 "SLURM_PROCID")
    nodes = env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES") or ""
    addr = "127.0.0.1" if nodes.strip() == "1" else _first_host(
        env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "")
    job = env.get("SLURM_JOB_ID", "").strip()
    port = 20000 + int(job) % 20000 if job.isdigit() else None  # the same on every task
    if world > 1 and not addr and not env.get("MASTER_ADDR", "").strip():
        raise DistributedConfigError(
            "cannot tell rank 0's host from SLURM_STEP_NODELIST/SLURM_JOB_NODELIST: export "
            "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)")
    return _rendezvous(env, DistEnv(rank, world, local, source="slurm"), addr, port)


def parse_env(env=None):
    """The DistEnv that `env` (default os.environ) describes; DistributedConfigError names the
    variable at fault and the fix. torchrun's variables win over Slurm's (torchrun under srun)."""
    env = os.environ if env is None else env
    if env.get("RANK", "").strip() or env.get("WORLD_SIZE", "").strip():
        return _torchrun_env(env)
    if env.get("SLURM_PROCID", "").strip():
        return _slurm_env(env)
    return DistEnv()


class Context:
    """The initialized process group: rank, world_size, local_rank, device, backend."""

    def __init__(self, env, backend, device):
        self.env, self.backend, self.device = env, backend, device
        self.rank, self.world_size, self.local_rank = env.rank, env.world_size, env.local_rank

    @property
    def is_main(self):
        return self.rank == 0

    def barrier(self):
        import torch.distributed as dist
        dist.barrier()

    def close(self):
        """Leaves the process group; collective. The barrier first lets every rank's last
        messages arrive: destroying a gloo group under a peer still talking to it can abort
        that peer at exit (seen with torch 1.13)."""
        import torch.distributed as dist
        if dist.is_initialized():
            if dist.get_world_size() > 1:
                dist.barrier()
            dist.destroy_process_group()


def _device(torch, e, backend, managed):
    if backend != "nccl":
        return torch.device("cpu")
    count = torch.cuda.device_count()
    # trainyard shows each worker only its own GPUs; torchrun shows every GPU of the node.
    if managed or count == 1:
        index = 0
    elif e.local_rank < count:
        index = e.local_rank
    else:
        raise DistributedConfigError(
            "LOCAL_RANK=%d but this process sees %d GPU(s): start at most one worker per visible "
            "GPU, or give each worker its own GPUs in CUDA_VISIBLE_DEVICES" % (e.local_rank, count))
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def init(backend=None, timeout_s=600, env=None):
    """Joins the job's process group (once per process) and returns its Context.

    backend: "nccl" when CUDA is available, else "gloo". The CUDA device is set from the
    local rank. A single worker (no variables) gets a world of 1 with no network rendezvous.
    """
    import datetime
    import torch
    import torch.distributed as dist
    env = os.environ if env is None else env
    e = parse_env(env)
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl" and not torch.cuda.is_available():
        raise DistributedConfigError("backend nccl needs CUDA, which this process does not see; "
                                     "use backend=\"gloo\" on CPUs")
    device = _device(torch, e, backend, bool(env.get("TRAINYARD_JOB_ID")))
    if dist.is_initialized():
        if (dist.get_rank(), dist.get_world_size()) != (e.rank, e.world_size):
            raise DistributedConfigError(
                "torch.distributed is already initialized as rank %d of %d, but the environment "
                "says %d of %d" % (dist.get_rank(), dist.get_world_size(), e.rank, e.world_size))
        return Context(e, dist.get_backend(), device)
    timeout = datetime.timedelta(seconds=timeout_s)
    if e.world_size == 1:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                                timeout=timeout)
        return Context(e, backend, device)
    host = "[%s]" % e.master_addr if ":" in e.master_addr else e.master_addr
    try:
        dist.init_process_group(backend, init_method="tcp://%s:%d" % (host, e.master_port),
                                rank=e.rank, world_size=e.world_size, timeout=timeout)
    except RuntimeError as err:
        raise RuntimeError(
            "rendezvous at %s:%d as rank %d of %d failed (%s): check that all %d workers started "
            "with the same MASTER_ADDR/MASTER_PORT and that rank 0's host accepts connections on "
            "that port" % (e.master_addr, e.master_port, e.rank, e.world_size, err,
                           e.world_size)) from err
    return Context(e, backend, device)


class _CountingGroup:
    """A process group that sums the bytes of every tensor all-reduced through it. DDP hooks
    call dist.all_reduce(t, group=g), which calls g.allreduce([t], opts): that is the count."""

    def __init__(self, group, on_bytes):
        self._group, self._on_bytes = group, on_bytes

    def allreduce(self, tensors, opts=None):
        self._on_bytes(sum(t.numel() * t.element_size() for t in tensors))
        return self._group.allreduce(tensors, opts) if opts is not None else \
            self._group.allreduce(tensors)

    def __getattr__(self, name):
        return getattr(self._group, name)


class _StepClock:
    """Communication calls of the current step: (hook called, hook returned, is last bucket,
    future done). Callbacks finish on the backend's threads, hence the lock."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset(time.perf_counter())

    def reset(self, now):
        self.bytes, self.calls, self.since = 0, [], now

    def add_bytes(self, n):
        with self._lock:
            self.bytes += n

    def call(self, started, returned, last):
        rec = [started, returned, last, None]
        with self._lock:
            self.calls.append(rec)
        return rec

    def done(self, rec):
        with self._lock:
            rec[3] = time.perf_counter()

    def take(self, now):
        """(bytes, comm_s, comm_wait_s) since the last take(), and a fresh step."""
        with self._lock:
            nbytes, calls = self.bytes, [c for c in self.calls if c[3] is not None]
            self.reset(now)
        busy, end = 0.0, None
        for start, _, _, finish in sorted(calls):  # union of in-flight intervals
            if end is None or start > end:
                busy, end = busy + finish - start, finish
            elif finish > end:
                busy, end = busy + finish - end, finish
        lasts = [c for c in calls if c[2]]
        wait = sum(c[1] - c[0] for c in calls if not c[2])  # compression work on our thread
        if lasts:  # after the last bucket's gradients, backward only waits for the network
            wait += max(0.0, max(c[3] for c in calls) - lasts[-1][0])
        return nbytes, busy, wait


def _check_compression(torch, dist, compression):
    if compression not in COMPRESSIONS:
        raise ValueError("compression=%r: choose one of %s" % (compression, ", ".join(COMPRESSIONS)))
    backend = dist.get_backend()
    if compression == "bf16" and backend == "gloo":
        raise ValueError("compression=\"bf16\" is not supported by the gloo backend in torch %s "
                         "(its all-reduce rejects bfloat16: \"Invalid scalar type\"); use "
                         "compression=\"fp16\" or \"powersgd\" on gloo" % torch.__version__)
    if compression == "bf16" and backend == "nccl":
        nccl = torch.cuda.nccl.version()
        if isinstance(nccl, int):  # older torch: 2906 for 2.9.6
            nccl = (nccl // 1000, nccl // 100 % 10, nccl % 100)
        if not torch.cuda.is_bf16_supported() or tuple(nccl) < (2, 9, 6):
            raise ValueError("compression=\"bf16\" needs a GPU with bfloat16 and NCCL >= 2.9.6 "
                             "(have NCCL %s); use \"fp16\"" % ".".join(map(str, nccl)))


def wrap(model, compression="none", powersgd_rank=1, powersgd_start_iter=10,
         powersgd_min_compression_rate=2, powersgd_seed=0, **ddp_kwargs):
    """Wraps `model` (already on ctx.device) in DistributedDataParallel with a counting
    communication hook; init() must have run. compression: "none" (fp32 all-reduce), "fp16",
    "bf16" (NCCL only) or "powersgd" (PowerSGD with error feedback and warm start:
    powersgd_rank is the approximation rank; the first powersgd_start_iter steps, at least 2,
    are plain all-reduce; torch's docs suggest about 10% of training, or 1K steps). fp16
    halves the bytes and its loss followed uncompressed training in bench/sdk_ddp_bench.py;
    try it first. PowerSGD was designed for SGD with momentum: at rank 2 the benchmark's
    runs (an MLP, and a 10.9M transformer on text, up to 8,000 steps) ended 6-17% above
    uncompressed training (error feedback's backlog of unsent gradient grows, momentum
    amplifies the late directions; a lower or decaying learning rate narrows the gap); raise
    the rank and compare a few hundred steps against "none" first. ddp_kwargs go to
    DistributedDataParallel."""
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if not dist.is_initialized():
        raise RuntimeError("call trainyard.distributed.init() before wrap()")
    device = next(model.parameters()).device
    _check_compression(torch, dist, compression)
    if device.type == "cuda" and "device_ids" not in ddp_kwargs:
        ddp_kwargs["device_ids"] = [device.index]
    ddp = torch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)
    clock = _StepClock()
    group = _CountingGroup(dist.distributed_c10d._get_default_group(), clock.add_bytes)
    if compression == "powersgd":
        if powersgd_start_iter < 2:
            raise ValueError("powersgd_start_iter=%d: PowerSGD with error feedback needs >= 2 "
                             "(DDP rebuilds its buckets after step 1)" % powersgd_start_iter)
        state = powerSGD_hook.PowerSGDState(
            process_group=group, matrix_approximation_rank=powersgd_rank,
            start_powerSGD_iter=powersgd_start_iter,
            min_compression_rate=powersgd_min_compression_rate, random_seed=powersgd_seed,
            orthogonalization_epsilon=POWERSGD_EPSILON)
        hook = powerSGD_hook.powerSGD_hook
    else:
        state = group
        hook = {"none": default_hooks.allreduce_hook, "fp16": default_hooks.fp16_compress_hook,
                "bf16": default_hooks.bf16_compress_hook}[compression]
    return DistributedModel(ddp, model, compression, state, hook, clock)


class DistributedModel:
    """A DDP model with its communication hook, per-step communication stats and (for
    PowerSGD) checkpointable compression state. Call it like the model; .module is the DDP."""

    def __init__(self, ddp, model, compression, state, hook, clock):
        self.module, self.model, self.compression = ddp, model, compression
        self._state, self._clock = state, clock
        self._seen_rebuild = ddp._has_rebuilt_buckets if hasattr(ddp, "_has_rebuilt_buckets") \
            else True
        self._psgd = _PowerSGDStore(self, state, self._seen_rebuild) \
            if compression == "powersgd" else None
        ddp.register_comm_hook(state, self._timed(hook))
        if self._psgd is not None and not self._seen_rebuild:
            ddp.register_forward_hook(self._after_forward)

    def __call__(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _after_forward(self, module, inputs, output):
        if not self._seen_rebuild and getattr(module, "_has_rebuilt_buckets", True):
            self._seen_rebuild = True
            self._psgd.buckets_rebuilt()

    def _timed(self, hook):
        import torch.distributed as dist
        clock, psgd = self._clock, self._psgd
        # PowerSGD starts its second and third all-reduce in callbacks, which gloo runs on its
        # own threads as work completes: two buckets' collectives can then start in another
        # order on each rank, and gloo pairs them by order (seen: "op.preamble.length <=
        # op.nbytes" aborts). The callbacks also block a gloo thread on their next
        # all-reduce, so two buckets in flight can hold both of gloo's default threads and
        # deadlock, even with one rank (test_distributed_powersgd.py). One bucket at a time
        # keeps the order and frees the threads, and trains bit for bit like the bare hook
        # where that one runs; NCCL runs callbacks inline.
        serialize = psgd is not None and dist.get_backend() != "nccl"
        previous = [None]

        def timed_hook(state, bucket):
            started = time.perf_counter()
            if serialize and previous[0] is not None:
                previous[0].wait()
            if psgd is not None:
                psgd.before_hook(bucket)
            fut = hook(state, bucket)
            rec = clock.call(started, time.perf_counter(), bucket.is_last())

            def done(f):
                clock.done(rec)
                return f.value()
            previous[0] = fut.then(done)
            return previous[0]
        return timed_hook

    def stats(self, step_time_s=None, data_wait_s=None):
        """This step's communication numbers (and a fresh count for the next step):
        comm_bytes, comm_s, comm_wait_s, compute_s. step_time_s defaults to the time since
        the previous stats()/report() call."""
        now = time.perf_counter()
        since = self._clock.since
        nbytes, busy, wait = self._clock.take(now)
        total = now - since if step_time_s is None else float(step_time_s)
        wait = min(wait, total)
        compute = max(0.0, total - wait - (data_wait_s or 0.0))
        return {"comm_bytes": nbytes, "comm_s": round(busy, 6), "comm_wait_s": round(wait, 6),
                "compute_s": round(compute, 6), "step_time_s": round(total, 6)}

    def report(self, step=None, step_time_s=None, data_wait_s=None, **fields):
        """stats() plus the caller's fields as one metrics line (trainyard.report()).
        Returns the stats."""
        from . import metrics
        s = self.stats(step_time_s, data_wait_s)
        metrics.report(step=step, data_wait_s=data_wait_s, **dict(s, **fields))
        return s

    def comm_state(self, per_rank=False):
        """The compression state to checkpoint, as torch_state's `extra` accepts it. None
        without PowerSGD (nothing to keep).

        per_rank=False: collective under PowerSGD; call it on every rank at the same step, and
        rank 0's result holds every rank's error-feedback buffers (save rank 0's).
        per_rank=True: for sharded checkpoints (CheckpointManager(sharded=True)), where every
        rank saves and restores its own shard: this rank's buffers only, no collective."""
        return self._psgd.state_dict(per_rank) if self._psgd is not None else None

    def load_comm_state(self, saved):
        """Restores comm_state() from a checkpoint, on every rank, before the next step."""
        if self._psgd is not None:
            self._psgd.load_state_dict(saved)
        elif saved is not None:
            log.warning("trainyard: the checkpoint holds %s state, but this run does not use "
                        "PowerSGD; it is ignored", saved.get("format"))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class _PowerSGDStore:
    """PowerSGDState's buffers as per-parameter tensors, so that they survive a checkpoint and
    a change of DDP's bucket layout (DDP rebuilds its buckets after a process's first step; a
    resumed run starts with compression on, in the first layout). The hook keeps one flat error
    tensor per bucket (this rank's residual, bucket order) and one flat Q per bucket (the
    compressed matrices' Q's, grouped by shape as powerSGD_hook lays them out).

    The hook draws a bucket's first Q's from one seed of state.rng per bucket, in the bucket's
    order. A run that never stops draws them in DDP's rebuilt layout (start_powerSGD_iter >= 2),
    but a process resumed from a checkpoint of step start_powerSGD_iter draws them in its first
    step, in DDP's first layout (parameter order, not gradient order): other seeds and other Q's
    per matrix, and other losses from then on. So the rebuilt layout (parameter names per bucket)
    is kept and checkpointed, and such a process draws the Q's as the hook did in it."""

    def __init__(self, dm, state, rebuilt):
        self.state = state
        self._names = {p.data_ptr(): n for n, p in dm.model.named_parameters()}
        self._shapes = {n: tuple(p.shape) for n, p in dm.model.named_parameters()}
        self._layouts = {}  # bucket index -> [(name, offset, numel, shape)]
        self._pending_err, self._pending_q = {}, {}  # name -> flat tensor, not yet in a bucket
        self._rebuilt = rebuilt  # DDP's buckets are in their final (gradient-order) layout
        self._final = {}  # bucket index -> parameter names, of the final layout

    def _layout(self, bucket):
        buf = bucket.buffer()
        base, size = buf.data_ptr(), buf.element_size()
        out = []
        for p, g in zip(bucket.parameters(), bucket.gradients()):
            out.append((self._names[p.data_ptr()], (g.data_ptr() - base) // size, g.numel(),
                        tuple(g.shape)))
        return out

    def _q_segments(self, layout):
        """[(name, offset, length)] of each compressed matrix's Q, Q's total, P's total."""
        rank, rate = self.state.matrix_approximation_rank, self.state.min_compression_rate
        groups = {}  # powerSGD_hook walks matrices grouped by shape, in order of first sight
        for name, _, _, shape in layout:
            n = shape[0] if shape else 1
            m = _numel(shape) // n if n else 0
            r = min(n, m, rank)
            if (n + m) * r * rate < n * m:
                groups.setdefault((n, m), []).append((name, n * r, m * r))
        segments, q_total, p_total = [], 0, 0
        for items in groups.values():
            for name, p_len, q_len in items:
                segments.append((name, q_total, q_len))
                q_total, p_total = q_total + q_len, p_total + p_len
        return segments, q_total, p_total

    def before_hook(self, bucket):
        st = self.state
        b = bucket.index()
        if self._rebuilt and b not in self._final:
            self._final[b] = [name for name, _, _, _ in self._layout(bucket)]
        if st.iter < st.start_powerSGD_iter or b in self._layouts:
            return
        layout = self._layout(bucket)
        self._layouts[b] = layout
        if st.warm_start and not self._rebuilt and b not in st.q_memory_dict:
            self._draw_q_as_rebuilt(layout)
        if self._pending_err or self._pending_q:
            self._assemble(b, layout, bucket.buffer())

    def _draw_q_as_rebuilt(self, layout):
        """The first Q's as powerSGD_hook draws them in the final layout: per bucket, in bucket
        order, one seed from state.rng (taken even when the bucket compresses nothing), then
        torch.randn for each compressed matrix in the hook's order. Nothing when the Q's of
        `layout` are known, or the final layout is not (then the hook draws)."""
        import torch
        if not self._final or all(name in self._pending_q
                                  for name, _, _ in self._q_segments(layout)[0]):
            return
        for b in sorted(self._final):
            gen = torch.Generator().manual_seed(int(self.state.rng.randint(1_000_000_000)))
            final = [(name, 0, 0, self._shapes[name]) for name in self._final[b]]
            for name, _, _ in self._q_segments(final)[0]:
                shape = self._shapes[name]
                m = _numel(shape) // shape[0] if shape else 1
                r = min(shape[0] if shape else 1, m, self.state.matrix_approximation_rank)
                self._pending_q.setdefault(name, torch.randn(1, m, r, generator=gen).reshape(-1))

    def _assemble(self, b, layout, buf):
        import torch
        st = self.state
        errs = [(off, n, self._pending_err.pop(name, None)) for name, off, n, _ in layout]
        if st.use_error_feedback and any(e is not None for _, _, e in errs):
            err = torch.zeros(buf.numel(), dtype=buf.dtype, device=buf.device)
            for off, n, e in errs:
                if e is not None and e.numel() == n:
                    err[off:off + n].copy_(e.reshape(-1))
            st.error_dict[b] = err
        segments, q_total, p_total = self._q_segments(layout)
        qs = [(self._pending_q.pop(name, None), n) for name, _, n in segments]
        if st.warm_start and qs and all(q is not None and q.numel() == n for q, n in qs):
            st.q_memory_dict[b] = torch.cat([q.reshape(-1) for q, _ in qs]).to(buf.device, buf.dtype)
            st.p_memory_dict[b] = torch.zeros(p_total, dtype=buf.dtype, device=buf.device)

    def _per_param(self):
        """({name: this rank's error}, {name: Q}) from the buckets' buffers and what waits."""
        st = self.state
        errs, qs = dict(self._pending_err), dict(self._pending_q)
        for b, layout in self._layouts.items():
            err = st.error_dict.get(b)
            if err is not None:
                for name, off, n, _ in layout:
                    errs[name] = err[off:off + n].detach().clone()
            q = st.q_memory_dict.get(b)
            segments, q_total, _ = self._q_segments(layout)
            if q is not None and q.numel() == q_total:
                for name, off, n in segments:
                    qs[name] = q[off:off + n].detach().clone()
        return errs, qs

    def buckets_rebuilt(self):
        """DDP's new buckets hold other parameters: move the state out of the old ones (the
        previous step is over when the next forward runs, so nothing is in flight)."""
        self._rebuilt = True
        self._final.clear()  # before_hook records the new layout
        if self._layouts:
            self._pending_err, self._pending_q = self._per_param()
            self.state.error_dict.clear()
            self.state.p_memory_dict.clear()
            self.state.q_memory_dict.clear()
            self._layouts.clear()

    def state_dict(self, per_rank=False):
        import torch
        import torch.distributed as dist
        st = self.state
        errs, qs = self._per_param()
        world, rank = dist.get_world_size(), dist.get_rank()
        doc = {"format": STATE_FORMAT, "version": 1, "world_size": world, "iter": st.iter,
               "rng": st.rng.get_state(),
               "stats": [st.total_numel_before_compression, st.total_numel_after_compression,
                         st.next_stats_report],
               "config": {"rank": st.matrix_approximation_rank,
                          "min_compression_rate": st.min_compression_rate,
                          "error_feedback": st.use_error_feedback, "warm_start": st.warm_start},
               "q": {k: v.cpu() for k, v in sorted(qs.items())}, "error": None,
               "buckets": [self._final[b] for b in sorted(self._final)]}
        names = sorted(errs)
        if per_rank:
            doc["own_error"] = {"rank": rank, "tensors": {n: errs[n].cpu() for n in names}}
        elif names:  # the same names on every rank: PowerSGD ran the same steps everywhere
            flat = torch.cat([errs[n].reshape(-1) for n in names])
            parts = [torch.empty_like(flat) for _ in range(world)] if rank == 0 else None
            dist.gather(flat, parts, dst=0)
            if rank == 0:
                doc["error"] = [dict(zip(names, [t.cpu() for t in p.split(
                    [errs[n].numel() for n in names])])) for p in parts]
        return doc

    def load_state_dict(self, saved):
        import torch.distributed as dist
        st = self.state
        if saved is None:
            log.warning("trainyard: the checkpoint has no PowerSGD state: error feedback starts "
                        "from zero and Q is drawn afresh")
            return
        if not isinstance(saved, dict) or saved.get("format") != STATE_FORMAT:
            raise ValueError("not a %s state: pass what comm_state() returned" % STATE_FORMAT)
        st.iter = int(saved["iter"])
        st.rng.set_state(tuple(saved["rng"]))
        (st.total_numel_before_compression, st.total_numel_after_compression,
         st.next_stats_report) = saved["stats"]
        for d in (st.error_dict, st.p_memory_dict, st.q_memory_dict, self._layouts):
            d.clear()
        same_rank = saved["config"]["rank"] == st.matrix_approximation_rank
        self._pending_q = dict(saved["q"]) if same_rank else {}
        if not self._rebuilt:  # a checkpoint before this process's buckets are rebuilt
            self._final = {b: list(names) for b, names in enumerate(saved.get("buckets") or [])
                           if all(name in self._shapes for name in names)}
        if not same_rank:
            log.warning("trainyard: PowerSGD rank %s in the checkpoint, %s now: Q is drawn afresh",
                        saved["config"]["rank"], st.matrix_approximation_rank)
        errors, world = saved.get("error"), dist.get_world_size()
        self._pending_err = {}
        own = saved.get("own_error")
        if own is not None:  # comm_state(per_rank=True): this rank's own shard
            if saved.get("world_size") == world and own.get("rank") == dist.get_rank():
                self._pending_err = dict(own["tensors"])
            else:
                log.warning("trainyard: the PowerSGD error feedback is rank %s's of %s workers, "
                            "this is rank %d of %d: it is dropped (starts from zero)",
                            own.get("rank"), saved.get("world_size"), dist.get_rank(), world)
        elif errors is not None and len(errors) == world:
            self._pending_err = dict(errors[dist.get_rank()])
        elif errors is not None:
            log.warning("trainyard: the checkpoint's PowerSGD error feedback is from %d workers, "
                        "this run has %d: it is dropped (starts from zero)", len(errors), world)
