"""Command line of :mod:`learner`: ``python -m learner {demo,learn,sample,info,bench,scaling,peers}``.

Library functions never parse ``argv``; this module does, calls them, and prints.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import time

import numpy as np

from . import __version__
from .assumptions import assumptions
from .inputs import sample_inputs
from .instances import random_layer
from .io import FileFormatError, load_layer, read_metadata, save_examples, save_layer, write_json
from .metrics import attention_statistics
from .parallel import interrupt_on_sigterm
from .study.bench import DEFAULT_CASES, BenchCase, run_benchmark, run_certification_benchmark, run_parallel_benchmark
from .study.frontier import DEFAULT_GRID
from .validation import cli_seed

__all__ = ["OUTPUT_OPTIONS", "build_parser", "check_output_options", "main"]


def _versions():
    return {"learner": __version__, "numpy": np.__version__, "python": platform.python_version()}


def _seed(seed):
    """A SeedSequence from ``--seed`` (fresh entropy when omitted), recorded in every output."""
    return np.random.SeedSequence(seed)


#: The planted layer's flags and their defaults (``sample`` leaves them unset, to tell them apart from --layer).
_LAYER_DEFAULTS = {"m": 2, "d": 8, "logit_scale": 3.0, "w_scale": 1.0}


def _layer_args(p, *, unset=False):
    dflt = {key: None if unset else value for key, value in _LAYER_DEFAULTS.items()}
    p.add_argument("--m", type=int, default=dflt["m"], help="number of heads (default 2)")
    p.add_argument("--d", type=int, default=dflt["d"], help="token dimension (default 8)")
    p.add_argument("--logit-scale", type=float, default=dflt["logit_scale"],
                   help="‖Θ_i‖_F, the std of off-diagonal logits (default 3)")
    p.add_argument("--w-scale", type=float, default=dflt["w_scale"],
                   help="per-entry scale of each head's output (default 1)")
    p.add_argument("--seed", type=cli_seed, default=None, help="integer seed (default: fresh entropy, printed)")


#: Options that name an output (a file, or a directory where their metavar is DIR); inputs are not listed.
OUTPUT_OPTIONS = ("json", "out", "examples", "plot", "plot_dir")


def check_output_options(parser, args):
    """Check every output option of ``args`` before the command runs (a lost record costs the whole run).

    A file's directory must exist and take files; a directory (metavar ``DIR``) is created and must
    take files; a plot needs matplotlib. Raises ValueError naming the option. Shared by the
    ``learner``, ``theory`` and ``lowerbounds`` command lines.
    """
    from .io import check_writable_dir, check_writable_file

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for action in sub.choices[args.command]._actions:
        value = getattr(args, action.dest, None)
        if action.dest not in OUTPUT_OPTIONS or value is None:
            continue
        option = action.option_strings[-1] if action.option_strings else action.dest
        if action.dest.startswith("plot"):
            import importlib.util

            if importlib.util.find_spec("matplotlib") is None:
                raise ValueError(f"{option} needs matplotlib (the `plot` extra: pip install -e '.[plot]'); "
                                 f"got {option} {value!r} without it.")
        check = check_writable_dir if action.metavar == "DIR" else check_writable_file
        check(option, value)


def build_parser():
    """The argparse parser (exposed for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="python -m learner",
        description="Multi-head attention layers of Chen & Li (arXiv 2402.04084): planted "
        "instances, their assumption reports, and benchmarks.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the default job: plant a layer, report its assumptions and attention figures")
    _layer_args(p)
    p.add_argument("--k", type=int, default=4, help="tokens per sequence (default 4)")
    p.add_argument("--n-samples", type=int, default=20000, help="inputs for the figures (default 20000)")
    p.add_argument("--json", metavar="FILE", help="also write the record as JSON")
    p.set_defaults(seed=0)

    p = sub.add_parser("learn", help="the main job: plant a layer and learn it with the six-phase algorithm")
    _layer_args(p, unset=True)  # the defaults are filled in by _learn (unset tells them apart from --torch-layer)
    p.add_argument("--torch-layer", metavar="FILE",
                   help="learn this torch layer instead of a planted one: the state dict of an "
                        "nn.MultiheadAttention(d, m, bias=False), torch.save(mha.state_dict(), FILE), "
                        "with --m its num_heads (extra `torch`)")
    p.add_argument("--k", type=int, default=4, help="tokens per sequence (default 4)")
    p.add_argument("--distribution", choices=("boolean", "gaussian"), default="boolean")
    p.add_argument("--unknown-m", action="store_true", help="do not tell the learner m (it estimates it)")
    p.add_argument("--max-examples", type=int, default=None,
                   help="example budget of each refined sculpting round (default: chosen from m, d, k)")
    p.add_argument("--allow-unsound", action="store_true",
                   help="run even where the setting's soundness conditions fail (learner.assumptions)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (they are shown only when stderr is a terminal)")
    p.add_argument("--workers", type=_workers, default=None,
                   help="local processes for the example-streaming phases; 1 runs in this process "
                        "(default auto: every core; not with --scheduler). The result does not depend on it")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="compute the batches on this Dask scheduler instead (extra `distributed`)")
    p.add_argument("--blas-threads", type=_blas_threads, default=1,
                   help="BLAS threads of this process in the phases it computes alone (default 1, the fastest "
                        "measured on 2 cores; 'default' leaves numpy's own setting); workers always have one")
    p.add_argument("--json", metavar="FILE", help="also write the run's record as JSON")
    p.set_defaults(seed=0)

    p = sub.add_parser("sample", help="write a planted layer and/or labelled examples to disk")
    _layer_args(p, unset=True)
    p.add_argument("--out", metavar="FILE", help="where to write the layer (.npz)")
    p.add_argument("--layer", metavar="FILE", help="label examples with this saved layer instead of a new one")
    p.add_argument("--examples", metavar="FILE", help="also write labelled examples (X, Y=F(X)) here")
    p.add_argument("--n-samples", type=int, default=10000, help="examples to write (default 10000)")
    p.add_argument("--k", type=int, default=4, help="tokens per sequence (default 4)")
    p.add_argument("--distribution", choices=("boolean", "gaussian"), default="boolean")

    p = sub.add_parser("info", help="print the assumption report of a saved layer")
    p.add_argument("path", help="a layer written by `sample`")
    p.add_argument("--k", type=int, default=None, help="sequence length to check k < d against")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")

    p = sub.add_parser("bench", help="benchmark the forward pass against GEMM, einsum and torch")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per figure; medians are printed (default 5)")
    p.add_argument("--quick", action="store_true", help="small sizes only (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0)
    p.add_argument("--parallel", action="store_true",
                   help="only the certification phase in this process against a local pool (speed-up)")
    p.add_argument("--workers", type=int, default=2, help="local workers of --parallel (default 2)")
    p.add_argument("--certification", action="store_true",
                   help="only phase 4's certification (float64 fit against the float32 screen) beside the "
                        "forward pass, with one BLAS thread, at --m/--d/--k")
    p.add_argument("--m", type=int, default=3, help="heads of --certification (default 3)")
    p.add_argument("--d", type=int, default=16, help="token dimension of --certification (default 16)")
    p.add_argument("--k", type=int, default=4, help="tokens per sequence of --certification (default 4)")
    p.add_argument("--tol", type=float, default=0.03,
                   help="certification tolerance of --certification (default 0.03, phase 4's at (3, 16, 4))")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")

    p = sub.add_parser("scaling", help="run time and examples against m: the learner and Adam on the same layers")
    p.add_argument("--m", type=int, nargs="+", default=None, help="numbers of heads (default 1 2 3 4 5)")
    p.add_argument("--d", type=_auto_or_int, default="auto",
                   help="token dimension, or auto: the smallest sound d in 12, 16, ... per (m, k) (default auto)")
    p.add_argument("--k", type=int, nargs="+", default=None,
                   help="tokens per sequence; several values sweep k as well (default 2)")
    p.add_argument("--grid", nargs="+", metavar="BLOCK", default=None,
                   help="instead of --m/--k: blocks of (m, k) cells, e.g. 'm=1..6,k=2' 'm=2,k=8,d=24,seeds=3', "
                        "or the word default (the study over heads and tokens: " + " ".join(DEFAULT_GRID) + ")")
    p.add_argument("--logit-scale", type=float, default=1.0,
                   help="Frobenius norm of each planted Θ_i (default 1; the earlier study used 3)")
    p.add_argument("--seeds", type=_positive_int_or("--seeds", "auto", "auto"), default=None,
                   help="planted layers per setting, or auto: 3, then 10 where their median time is under 2 min "
                        "(default 10; auto with --grid)")
    p.add_argument("--methods", nargs="+", default=["provable", "adam"], help="provable and/or adam (default both)")
    p.add_argument("--distribution", choices=("boolean", "gaussian"), default="boolean")
    p.add_argument("--adam-lr", type=float, nargs="+", default=[1e-2, 3e-2],
                   help="Adam's learning-rate grid; tuned per setting on separate layers (default 0.01 0.03)")
    p.add_argument("--max-examples", type=int, default=None,
                   help="the learner's phase-4 example budget (default: chosen from m, d, k)")
    p.add_argument("--refined-tol", type=float, default=None,
                   help="the learner's phase-4 tolerance (default: chosen from m, d, k); fix it to compare yields")
    p.add_argument("--tune-seeds", type=int, default=1,
                   help="tuning layers per setting and learning rate (default 1)")
    p.add_argument("--success-tol", type=float, default=1e-3,
                   help="common success criterion: relative error of F against the planted layer (default 1e-3)")
    p.add_argument("--workers", type=int, default=None, help="processes of the local pool (default: all CPUs)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler (extra `distributed`)")
    p.add_argument("--serial", action="store_true", help="run in this process (debugging)")
    p.add_argument("--learn-workers", type=int, default=None,
                   help="with --serial: each learner run spreads its batches over this many local processes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true", help="tiny budgets (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every run's seed (default 0)")
    p.add_argument("--summarise-only", action="store_true",
                   help="run nothing: re-summarise the records in --out (all must be there, e.g. docs/sweeps/main)")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory of the sweep; an interrupted sweep resumes from the records in it")

    p = sub.add_parser("peers", help="the learner, numpy Adam and torch Adam side by side on the same layers "
                                     "(extra `torch`)")
    p.add_argument("--m", type=int, nargs="+", default=[1, 2, 3, 4], help="numbers of heads (default 1 2 3 4)")
    p.add_argument("--k", type=int, default=2, help="tokens per sequence (default 2)")
    p.add_argument("--d", type=_auto_or_int, default="auto",
                   help="token dimension, or auto: the scaling study's sound d per m (default auto: 12)")
    p.add_argument("--seeds", type=int, default=3, help="planted layers per m (default 3)")
    p.add_argument("--adam-lr", type=float, default=1e-2, help="numpy Adam's learning rate (default 0.01)")
    p.add_argument("--torch-lr", type=float, default=1e-2, help="torch Adam's initial learning rate (default 0.01)")
    p.add_argument("--epochs", type=int, default=200, help="torch Adam's epochs per restart (default 200)")
    p.add_argument("--batch", type=int, default=256, help="torch Adam's mini-batch (default 256)")
    p.add_argument("--workers", type=int, default=None, help="processes of the local pool (default: all CPUs)")
    p.add_argument("--serial", action="store_true", help="one run at a time, in this process")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true", help="tiny budgets (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every run's seed (default 0)")
    p.add_argument("--summarise-only", action="store_true", help="run nothing: re-summarise the records in --out")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory of the study; an interrupted study resumes from the records in it")
    return parser


def _demo(args):
    ss = _seed(args.seed)
    layer_seed, stats_seed = ss.spawn(2)
    t0 = time.perf_counter()
    layer = random_layer(args.m, args.d, logit_scale=args.logit_scale, w_scale=args.w_scale, rng=layer_seed)
    report = assumptions(layer, k=args.k)
    stats = attention_statistics(layer, args.k, n_samples=args.n_samples, rng=stats_seed)
    elapsed = time.perf_counter() - t0
    print(f"Planted layer: m={layer.m} heads, d={layer.d}, k={args.k}, logit scale {args.logit_scale}, "
          f"seed entropy {ss.entropy}")
    print()
    print(report)
    print()
    print(f"Figures on {stats.n_samples} fresh {stats.distribution} inputs:")
    for i in range(layer.m):
        print(f"  head {i}: mean largest attention weight {stats.mean_max_weight[i]:.3f} "
              f"(uniform {1 / args.k:.3f}), mean entropy / ln k {stats.mean_normalized_entropy[i]:.3f}")
    print(f"  output RMS entry {stats.output_rms:.3f}")
    print(f"  relative error of uniform attention with the same ΣW: {stats.uniform_attention_error:.3f}"
          " (how much the attention matters)")
    print(f"  rows where all heads agree within TV 0.05 / 0.01: {stats.agree_tv05:.4f} / {stats.agree_tv01:.4f}"
          " (what sculpting can certify)")
    print(f"  time {elapsed:.2f} s")
    if args.json:
        write_json(args.json, {
            "command": "demo", "parameters": vars(args), "seed_entropy": ss.entropy,
            "versions": _versions(), "assumptions": report.to_dict(),
            "statistics": stats.__dict__, "seconds": elapsed,
        })
    return 0


def _learn(args):
    import dataclasses

    from .learn import learn
    from .oracle import LayerOracle
    from .phases import LearnConfig

    if args.scheduler is not None and args.workers is not None:
        raise ValueError(f"give either --workers (local processes) or --scheduler (a Dask cluster, whose workers "
                         f"are its own), not both; got --workers {args.workers} --scheduler {args.scheduler!r}.")
    if args.scheduler is not None:
        from .parallel import Workers, dask_client_class

        Workers(scheduler=args.scheduler)  # the address is checked (an empty one is named) before anything runs
        dask_client_class()  # the extra is there, or one line saying how to install it
    workers = None if args.scheduler is not None else ("auto" if args.workers is None else args.workers)
    ss = _seed(args.seed)
    # The third child draws the inputs the errors against the truth are measured on (the first two are as before).
    layer_seed, oracle_seed, error_seed = ss.spawn(3)
    if args.torch_layer is not None:
        from .torch_interop import load_torch_layer

        _need_torch("--torch-layer")
        given = [key for key in ("d", "logit_scale", "w_scale") if getattr(args, key) is not None]
        if given:
            flags = ", ".join(f"--{key.replace('_', '-')} {getattr(args, key)}" for key in given)
            raise ValueError(f"--torch-layer {args.torch_layer} fixes the layer; {flags} would be ignored. "
                             "Drop them or --torch-layer.")
        if args.m is None:
            raise ValueError(f"--torch-layer {args.torch_layer} needs --m, the layer's num_heads (a state dict "
                             "does not record it); got no --m.")
        truth = load_torch_layer(args.torch_layer, num_heads=args.m)
        args.d = truth.d
        source = f"the torch layer {args.torch_layer}:"
    else:
        for key, value in _LAYER_DEFAULTS.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
        truth = random_layer(args.m, args.d, logit_scale=args.logit_scale, w_scale=args.w_scale, rng=layer_seed)
        source = f"a planted layer (logit scale {args.logit_scale}):"
    config = LearnConfig()
    if args.max_examples is not None:
        config = dataclasses.replace(config, max_examples=args.max_examples)
    if args.allow_unsound:
        config = dataclasses.replace(config, allow_unsound=True)
    oracle = LayerOracle(truth, args.k, distribution=args.distribution, rng=oracle_seed)
    print(f"Learning {source} m={args.m}, d={args.d}, k={args.k}, {args.distribution} inputs, "
          f"seed entropy {ss.entropy}"
          + (" (m not given to the learner)" if args.unknown_m else ""))

    from .learn import ALLOW_UNSOUND_HINT, LearnInterrupted

    interrupt_on_sigterm()  # `kill` stops the run like Ctrl-C: workers ended
    try:
        result = learn(oracle, m=None if args.unknown_m else args.m, config=config, truth=truth, rng=error_seed,
                       progress=False if args.no_progress else None,
                       workers=workers, scheduler=args.scheduler, blas_threads=args.blas_threads)
    except LearnInterrupted as exc:
        print(exc.result.report())
        print(f"\ninterrupted: {exc.result.message}", file=sys.stderr)
        return 130
    if result.status == "setting":  # the command's option, not the library's
        result = dataclasses.replace(result, message=result.message.replace(
            ALLOW_UNSOUND_HINT, "Pass --allow-unsound to run anyway."))
    print(result.report())
    ex = result.execution
    rates = ", ".join(f"{name} {p['examples_per_second']:,.0f}" for name, p in ex.get("phases", {}).items()
                      if p.get("examples_per_second"))
    threads = ex.get("blas_threads")
    threads = (f"{threads['alone']} here alone, {threads['while_workers_stream']} while workers stream"
               if isinstance(threads, dict) else threads)
    print(f"batches: {ex.get('backend')} with {ex.get('workers')} worker(s); examples/s: {rates}; "
          f"BLAS threads: {threads}")
    if args.json:
        write_json(args.json, {"command": "learn", "parameters": vars(args), "seed_entropy": ss.entropy,
                               "versions": _versions(), "config": dataclasses.asdict(config),
                               "result": result.to_dict()})
    return 0 if result.success else 1


def _sample(args):
    if not (args.out or args.examples):
        raise SystemExit("sample: nothing to write; give --out FILE and/or --examples FILE.")
    ss = _seed(args.seed)
    layer_seed, input_seed = ss.spawn(2)
    given = [key for key in _LAYER_DEFAULTS if getattr(args, key) is not None]
    if args.layer and given:
        flags = ", ".join(f"--{key.replace('_', '-')} {getattr(args, key)}" for key in given)
        raise ValueError(f"--layer {args.layer} fixes the layer; {flags} would be ignored. Drop them or --layer.")
    for key, value in _LAYER_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    params = {k: v for k, v in vars(args).items() if k != "func"}
    if args.layer:
        layer = load_layer(args.layer)
    else:
        layer = random_layer(args.m, args.d, logit_scale=args.logit_scale, w_scale=args.w_scale, rng=layer_seed)
    meta = {"command": "sample", "parameters": params, "seed_entropy": ss.entropy, "versions": _versions()}
    if args.out:
        save_layer(args.out, layer, metadata=meta)
        print(f"wrote layer m={layer.m}, d={layer.d} to {args.out}")
    if args.examples:
        X = sample_inputs(args.n_samples, args.k, layer.d, distribution=args.distribution, rng=input_seed)
        save_examples(args.examples, X, layer(X), metadata=meta)
        print(f"wrote {args.n_samples} {args.distribution} examples (k={args.k}) to {args.examples}")
    print(f"seed entropy {ss.entropy}")
    return 0


def _info(args):
    layer = load_layer(args.path)
    meta = read_metadata(args.path)
    report = assumptions(layer, k=args.k)
    print(f"{args.path}: {layer!r}, written by {meta.get('created_by')}, schema {meta['schema_version']}")
    user = meta.get("metadata") or {}
    if "seed_entropy" in user:
        print(f"seed entropy {user['seed_entropy']}")
    print(report)
    if args.json:
        write_json(args.json, {"path": args.path, "metadata": user, "assumptions": report.to_dict()})
    return 0


def _bench(args):
    if args.parallel:
        par = run_parallel_benchmark(workers=args.workers, batch=2000 if args.quick else 100_000,
                                     batches=4 if args.quick else 16, repeat=args.repeat, rng=args.seed)
        print(par.table())
        if args.json:
            write_json(args.json, {"command": "bench --parallel", "versions": _versions(), "parallel": par.to_dict()})
        return 0
    if args.certification:
        cert = run_certification_benchmark(args.m, args.d, args.k, batch=2000 if args.quick else 100_000,
                                           repeat=args.repeat, tol=args.tol, rng=args.seed)
        print(cert.table())
        if args.json:
            write_json(args.json, {"command": "bench --certification", "versions": _versions(), "seed": args.seed,
                                   "certification": cert.to_dict()})
        return 0
    cases = DEFAULT_CASES
    cube = (4, 5, 2)
    if args.quick:
        cases = (BenchCase("quick", 500, 4, 8, 2),)
        cube = (2, 4, 2)
    result = run_benchmark(cases, repeat=args.repeat, cube=cube, rng=args.seed)
    print(result.table())
    cert = run_certification_benchmark(batch=2000 if args.quick else 100_000, repeat=args.repeat, rng=args.seed)
    print()
    print(cert.table())
    if args.json:
        write_json(args.json, {"command": "bench", "versions": _versions(), "gemm_gflops": result.gemm_gflops,
                                "rows": [r.__dict__ | {"case": r.case.__dict__} for r in result.rows],
                                "cube_seconds": result.cube_seconds, "repeat": result.repeat,
                                "torch_version": result.torch_version, "certification": cert.to_dict()})
    return 0


def _positive_int_or(flag, word, meaning):
    """An argparse type: a positive integer, or ``word`` (which stands for ``meaning``)."""

    def parse(text):
        if text == word:
            return meaning
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be a positive integer or {word}; got {text!r}")
        return value

    return parse


_workers = _positive_int_or("--workers", "auto", "auto")
_blas_threads = _positive_int_or("--blas-threads", "default", None)


def _auto_or_int(text):
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None


def _scaling(args):
    import signal

    from .study.runs import QUICK_OPTIONS
    from .study.scaling import scaling_study
    from .study.sweep import SweepInterrupted, SweepLocked

    # A batch scheduler or `kill` stops a sweep with SIGTERM: treat it as Ctrl-C (workers stopped, finished runs
    # kept) rather than dying and leaving the pool's processes behind.
    interrupt_on_sigterm()

    if args.scheduler is not None and args.serial:
        raise ValueError("give at most one of --scheduler and --serial.")
    if args.workers is not None and (args.scheduler is not None or args.serial):
        other = f"--scheduler {args.scheduler!r}" if args.scheduler is not None else "--serial"
        raise ValueError(f"--workers sizes the local pool, which {other} does not use; got --workers {args.workers} "
                         f"with {other} (with --serial, --learn-workers spreads each run's batches).")
    backend = "dask" if args.scheduler is not None else "serial" if args.serial else "local"
    if backend == "dask":
        from .parallel import Workers, dask_client_class

        Workers(scheduler=args.scheduler)  # an empty address is named
        dask_client_class()  # the extra is there, or one line saying how to install it
    try:
        grid = args.grid
        if grid == ["default"]:
            grid = list(DEFAULT_GRID)
        seeds = args.seeds if args.seeds is not None else "auto" if grid is not None else 10
        if grid is not None and (args.m is not None or args.k is not None):
            raise ValueError("give either --grid or --m/--k, not both.")
        result = scaling_study(
            args.out, ms=args.m, d=args.d, k=args.k, grid=grid, logit_scale=args.logit_scale, seeds=seeds,
            methods=args.methods,
            distribution=args.distribution, adam_lrs=args.adam_lr, tune_seeds=args.tune_seeds,
            success_tol=args.success_tol, seed=args.seed, backend=backend, workers=args.workers,
            adam_options=QUICK_OPTIONS["adam"] if args.quick else None,
            provable_options=(QUICK_OPTIONS["provable"] if args.quick else {})
            | {name: value for name, value in (("max_examples", args.max_examples), ("refined_tol", args.refined_tol))
               if value is not None},
            scheduler=args.scheduler, progress=not args.no_progress, learn_workers=args.learn_workers,
            run=not args.summarise_only)
    except SweepLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepInterrupted as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command is ending: more Ctrl-Cs change nothing now
        print(f"\n{exc}", file=sys.stderr)
        return 130  # the shell's status for a SIGINT stop
    print_study(result, args.out)
    return 0


def _need_torch(option):
    """torch is installed, or a ValueError (one line on the command line) saying how to install it."""
    from .torch_interop import require_torch

    try:
        require_torch()
    except ImportError as exc:
        raise ValueError(f"{option}: {exc}") from None


def print_study(result, out):
    """A sweep's table, then how many runs ran now or were kept and where the records and summaries are
    (the studies of ``learner`` and ``lowerbounds`` print the same way)."""
    print(result.table())
    print()
    print(f"runs: {result.stats['ran']} run now, {result.stats['skipped']} kept from earlier; records in "
          f"{out}/runs/; " + ", ".join(f"{k} {v}" for k, v in result.files.items()))


def _peers(args):
    import signal

    from .study.peers import QUICK_PEER_OPTIONS, peer_study
    from .study.sweep import SweepInterrupted, SweepLocked

    interrupt_on_sigterm()
    if args.workers is not None and args.serial:
        raise ValueError(f"--workers sizes the local pool, which --serial does not use; got --workers {args.workers} "
                         "with --serial.")
    if not args.summarise_only:
        _need_torch("peers")
    quick = QUICK_PEER_OPTIONS if args.quick else {}
    try:
        result = peer_study(
            args.out, ms=args.m, k=args.k, d=args.d, seeds=args.seeds, seed=args.seed,
            adam_options=quick.get("adam", {}) | {"lr": args.adam_lr},
            torch_options=quick.get("torch-adam", {"epochs": args.epochs, "batch": args.batch}) | {"lr": args.torch_lr},
            provable_options=quick.get("provable"), backend="serial" if args.serial else "local",
            workers=args.workers, progress=not args.no_progress, run=not args.summarise_only)
    except SweepLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepInterrupted as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(f"\n{exc}", file=sys.stderr)
        return 130
    print_study(result, args.out)
    return 0


def main(argv=None):
    """Entry point; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    handler = {"demo": _demo, "learn": _learn, "sample": _sample, "info": _info, "bench": _bench,
               "scaling": _scaling, "peers": _peers}[args.command]
    try:
        check_output_options(parser, args)
        return handler(args)
    except (ValueError, TypeError, FileNotFoundError, FileFormatError, ConnectionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # A Ctrl-C that lands outside the commands' own handling (e.g. a second one while a sweep saves its
        # records, or one before a run starts): one line, the shell's status for SIGINT, no traceback.
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command is ending
        print(f"\ninterrupted: `{args.command}` stopped by Ctrl-C; finished records are kept (see above).",
              file=sys.stderr)
        return 130
    except MemoryError as exc:
        sizes = ", ".join(f"--{name.replace('_', '-')} {getattr(args, name)}" for name in ("m", "d", "k")
                          if getattr(args, name, None) is not None)
        print(f"error: out of memory in `{args.command}`{f' ({sizes})' if sizes else ''}: the arrays of this "
              f"setting do not fit in RAM{f' ({exc})' if str(exc) else ''}; the layer holds 2md² numbers and "
              "the learner's phase 5 memory grows as d⁴ — lower --d or --m.", file=sys.stderr)
        return 2
