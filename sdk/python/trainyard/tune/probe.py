"""Probe mode: measure once (a short dry-run job, or by hand) and write the
recommendation, so the training job's spec can pin it:

    python -m trainyard.tune --probe --setup train.py:tune_setup --global-batch 256

`--setup` names a function that returns (model, make_optimizer, sample_batch) or
(model, make_optimizer, sample_batch, loss_fn), or a dict with those keys. The
probe writes the Plan as JSON and prints the env lines for the job spec; with
those TRAINYARD_TUNE_* variables set, tune() in the training job returns the
same plan without measuring again.
"""

import argparse
import importlib
import importlib.util
import os
import sys

from .batch import TuneError


def load_setup(spec):
    """The function named by "package.module:function" or "path/to/file.py:function"."""
    if ":" not in spec:
        raise TuneError("--setup must be MODULE:FUNCTION or FILE.py:FUNCTION (got %r)" % spec)
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py"):
        if not os.path.isfile(where):
            raise TuneError("--setup: no file %s" % where)
        mod_spec = importlib.util.spec_from_file_location("trainyard_tune_setup", where)
        module = importlib.util.module_from_spec(mod_spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise TuneError("--setup: %s has no function %r" % (where, name))
    return fn


def _unpack(got):
    if isinstance(got, dict):
        try:
            return got["model"], got["make_optimizer"], got["sample_batch"], got.get("loss_fn")
        except KeyError as e:
            raise TuneError("the setup function's dict lacks %s; it needs model, make_optimizer "
                            "and sample_batch (loss_fn optional)" % e) from None
    if isinstance(got, (tuple, list)) and len(got) in (3, 4):
        return tuple(got) + (None,) * (4 - len(got))
    raise TuneError("the setup function must return (model, make_optimizer, sample_batch[, "
                    "loss_fn]) or a dict with those keys (got %s)" % type(got).__name__)


def probe(setup, global_batch, out=None, device=None, **tune_args):
    """Runs tune() on what setup() returns, writes the Plan's JSON to `out`
    (default: $TRAINYARD_RUN_DIR/tune-plan.json, else ./tune-plan.json) and
    returns (plan, path)."""
    import torch
    from .core import tune
    model, make_optimizer, sample, loss_fn = _unpack(setup())
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    plan = tune(model, make_optimizer, sample, global_batch, loss_fn=loss_fn, env={},
                **tune_args)
    if out is None:
        out = os.path.join(os.environ.get("TRAINYARD_RUN_DIR") or ".", "tune-plan.json")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(plan.to_json())
    os.replace(tmp, out)
    return plan, out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m trainyard.tune",
                                 description="Measure the best micro-batch, accumulation and "
                                             "precision for a model and write them for the job "
                                             "spec.")
    ap.add_argument("--probe", action="store_true", required=True,
                    help="measure and write the recommendation (the only mode)")
    ap.add_argument("--setup", required=True, help="MODULE:FUNCTION or FILE.py:FUNCTION that "
                    "returns (model, make_optimizer, sample_batch[, loss_fn])")
    ap.add_argument("--global-batch", type=int, required=True,
                    help="samples per optimizer step over all ranks")
    ap.add_argument("--world-size", type=int, default=None, help="ranks (default $WORLD_SIZE)")
    ap.add_argument("--budget-mib", type=float, default=None,
                    help="memory one rank may use (default: free GPU memory, or available RAM)")
    ap.add_argument("--margin", type=float, default=0.10, help="share of the budget kept free")
    ap.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda if any)")
    ap.add_argument("--exact", action="store_true",
                    help="refuse an inexact global batch instead of using the nearest")
    ap.add_argument("--out", default=None, help="where the JSON goes")
    args = ap.parse_args(argv)
    try:
        plan, path = probe(load_setup(args.setup), args.global_batch, out=args.out,
                           device=args.device, world_size=args.world_size,
                           memory_budget=int(args.budget_mib * 2 ** 20) if args.budget_mib
                           else None, margin=args.margin, allow_inexact=not args.exact)
    except TuneError as e:
        print("trainyard.tune: %s" % e, file=sys.stderr)
        return 2
    print(plan.summary())
    print("\nwrote %s; to pin this plan, add to the job spec's template.env:" % path)
    print(plan.job_spec_env(), end="")
    return 0
