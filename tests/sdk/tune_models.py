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


def transformer_case(seed=0, seq=16):
    torch.manual_seed(seed)
    model = SmallTransformer(seq=seq)
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
    for e in sorted(records, key=lambda e: e.start_us()):
        running += e.nbytes()
        peak = max(peak, running)
    for p in params:
        p.grad = None
    model.load_state_dict(saved)
    return base + peak


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
