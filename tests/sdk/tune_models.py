"""Small models for the tune tests and benchmark, and an independent peak count.

step_peak_bytes() measures one training step its own way (not through
trainyard.tune), so a linear scan with it gives the true largest micro-batch
that the tuner's search is checked against.
"""

import torch


class SmallCNN(torch.nn.Module):
    def __init__(self, width=16, classes=10):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.BatchNorm2d(width), torch.nn.ReLU(),
            torch.nn.Conv2d(width, 2 * width, 3, padding=1, stride=2), torch.nn.ReLU(),
            torch.nn.Conv2d(2 * width, 2 * width, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(2 * width, classes))

    def forward(self, x):
        return self.net(x)


class SmallTransformer(torch.nn.Module):
    """A causal-free language model: embedding, encoder layers, vocabulary head."""

    def __init__(self, vocab=64, dim=32, heads=4, layers=2, seq=16):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Parameter(torch.zeros(seq, dim))
        layer = torch.nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


def cnn_case(seed=0, image=16):
    torch.manual_seed(seed)
    model = SmallCNN()
    sample = (torch.randn(8, 3, image, image), torch.randint(0, 10, (8,)))
    return model, sample


def transformer_case(seed=0, seq=16, dim=32, heads=4, layers=2):
    torch.manual_seed(seed)
    model = SmallTransformer(dim=dim, heads=heads, layers=layers, seq=seq)
    tokens = torch.randint(0, 64, (8, seq + 1))
    return model, (tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())


def adam(params):
    return torch.optim.Adam(params, lr=1e-3)


def _loss(model, batch):
    out = model(batch[0])
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), batch[1].reshape(-1))


def _storage_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is not None:
            s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def step_peak_bytes(model, make_optimizer, sample, size):
    """Peak bytes of one fp32 training step at batch `size` with gradients and
    optimizer state alive (after one warm-up step that keeps its gradients): the
    storages alive at its start plus the profiler's highest running allocation sum."""
    n = sample[0].shape[0]
    idx = torch.arange(size) % n
    batch = (sample[0][idx], sample[1][idx])
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    opt = make_optimizer(model.parameters())
    model.train()
    _loss(model, batch).backward()
    opt.step()
    params = list(model.parameters())
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    base = _storage_bytes(params + list(model.buffers()) + [p.grad for p in params] + state
                          + list(batch))
    # The raw trace (the public context manager's event tree is slow to build).
    prof = torch.autograd.profiler.profile(profile_memory=True, use_kineto=True)
    prof._prepare_trace()
    prof._start_trace()
    _loss(model, batch).backward()
    opt.step()
    records = [e for e in torch.autograd._disable_profiler().events() if e.name() == "[memory]"]
    running = peak = 0
    def start(e):  # start_ns() in torch 2.x, start_us() before
        return e.start_ns() if hasattr(e, "start_ns") else e.start_us() * 1000
    for e in sorted(records, key=start):
        running += e.nbytes()
        peak = max(peak, running)
    for p in params:
        p.grad = None
    model.load_state_dict(saved)
    return base + peak


def cuda_step_peak(model, make_optimizer, sample, size, precision="fp32", channels_last=False,
                   tf32=False):
    """CUDA: the caching allocator's high-water mark (bytes reserved) of one training step at
    batch `size` with autocast `precision` and the layout given, gradients and optimizer state
    of a warm-up step alive; infinity when it runs out of memory. Its own step, written apart
    from trainyard.tune's runner, for checking the tuner's search on a GPU."""
    device = next(model.parameters()).device
    n = sample[0].shape[0]
    idx = torch.arange(size) % n
    x, y = sample[0][idx].to(device), sample[1][idx].to(device)
    fmt = torch.channels_last if channels_last and x.dim() == 4 else torch.contiguous_format
    x = x.contiguous(memory_format=fmt)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
    model.to(memory_format=fmt)
    model.train()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    opt = make_optimizer(model.parameters())

    def step():
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(),
                                                     y.reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    try:
        step()  # warm-up: optimizer state made, gradients kept
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_reserved(device)
    except torch.cuda.OutOfMemoryError:
        peak = float("inf")
    finally:
        opt = None
        for p in model.parameters():
            p.grad = None
        model.to(memory_format=torch.contiguous_format)
        model.load_state_dict(saved)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
        import gc
        gc.collect()
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
    return peak


def true_largest(model, make_optimizer, sample, limit, stop=10 ** 6):
    """The largest batch whose step peak is within `limit`, by scanning 1, 2, 3, ..."""
    size = 0
    while size < stop and step_peak_bytes(model, make_optimizer, sample, size + 1) <= limit:
        size += 1
    return size


def probe_setup():
    """For `python -m trainyard.tune --probe --setup tune_models.py:probe_setup`."""
    torch.set_num_threads(1)
    model, sample = cnn_case()
    return model, adam, sample
