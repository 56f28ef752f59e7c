"""The study commands of ``python -m learner``: ``bench``, ``scaling`` and ``peers`` (ours).

:func:`add_commands` adds them to the command line's sub-parsers (``learner.cli`` builds the rest);
each sets ``handler``, the function that runs it. They print a sweep's result with
:func:`learner.sweep.records.print_study` (as ``lowerbounds``' ``learn-hard`` does), and :func:`run_study` turns a
sweep that is locked or interrupted into the command's exit status.
"""

from __future__ import annotations

import argparse
import inspect
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..argparsing import cli_seed, declare_options, limit_options
from ..baselines import OPTION_RULES, fit_torch
from ..io import write_json
from ..parallel import DEFAULT_POOL, interrupt_on_sigterm, kill_live_pools, set_ctrl_c
from ..phases import CONFIG_RULES
from ..sweep.methods import METHODS, method_names, quick_options
from ..sweep.methods import get as get_method
from ..sweep.records import command_record, print_study
from ..sweep.runs import QUICK_OPTIONS, STUDY_LOGIT_SCALE
from ..torch_interop import need_torch
from ..validation import SIZE_LIMITS, Integer, Rule
from .bench import (
    DEFAULT_CASES,
    PARALLEL_BENCH_WORKERS,
    BenchCase,
    run_benchmark,
    run_certification_benchmark,
    run_parallel_benchmark,
    run_phase_profile,
    run_refinement_benchmark,
    run_search_benchmark,
    run_span_benchmark,
)
from .budget import BUDGET_METHODS, budget_walk
from .frontier import DEFAULT_GRID
from .growth import BOOTSTRAP, FRONTIER_BUDGET, GROWTH_LINES, GROWTH_OPTIONS, growth_study
from .peers import peer_methods, peer_study, race_study
from .scaling import scaling_study, study_methods
from .trained import TRAINED_ADAM_SECONDS, TRAINED_MAX_EXAMPLES, trained_study

__all__ = ["add_commands", "run_study"]

#: torch Adam's budgets in ``peers``: fit_torch's own defaults (``epochs`` and ``batch``).
TORCH_DEFAULTS = {name: inspect.signature(fit_torch).parameters[name].default for name in ("epochs", "batch")}
#: torch Adam's budgets under ``--quick``.
QUICK_TORCH = get_method("torch-adam").quick
#: The local pool's options: a number of processes.
POOL_RULES: dict[str, Rule] = {"workers": Integer(), "learn_workers": Integer()}
#: ``--workers`` of the studies: the local pool's processes (default: every core this process may run on).
WORKERS_HELP = f"processes of the local pool (default {DEFAULT_POOL}: every core this process may run on)"
_T = TypeVar("_T")


def add_commands(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``bench``, ``scaling``, ``peers``, ``race`` and the grids to the sub-parsers of ``python -m learner``.

    The grids are ``noise-study`` and ``sharpness``. Each command's parser sets ``handler``, the function that
    runs the parsed arguments and returns the exit status.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The sub-parsers of the ``python -m learner`` parser (what ``add_subparsers()`` returned).
    """
    _add_bench(sub)
    _add_scaling(sub)
    _add_peers(sub)
    _add_race(sub)
    _add_growth(sub)
    _add_budget(sub)
    _add_trained(sub)
    _add_grids(sub)


def _add_bench(sub):
    p = sub.add_parser("bench", help="benchmark the forward pass against GEMM, einsum and torch")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per figure; medians are printed (default 5)")
    p.add_argument("--quick", action="store_true", help="small sizes only (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="seed of the layers and inputs timed (default 0)")
    p.add_argument("--parallel", action="store_true",
                   help="only the certification phase in this process against a local pool (speed-up)")
    p.add_argument("--workers", type=int, default=None,
                   help=f"local workers of --parallel and --search (default {PARALLEL_BENCH_WORKERS}: one process "
                        "against two)")
    p.add_argument("--certification", action="store_true",
                   help="only phase 4's certification (float64 fit against the float32 screen) beside the "
                        "forward pass, with one BLAS thread, at --m/--d/--k")
    p.add_argument("--span", action="store_true",
                   help="only phase 5's hull solve: SVDs through a QR against the thin SVD, 200,000 constraints × "
                        "144 unknowns (phase 5's shape at m = 1, d = 12), one BLAS thread")
    p.add_argument("--search", action="store_true",
                   help="only phase 6 at (m, d, k) = (7, 20, 2): one process with one BLAS thread against --workers "
                        "(the search's starts on the pool, the refinement's products on as many threads)")
    p.add_argument("--refinement", action="store_true",
                   help="only phase 6's refinement, its steps by the normal equations against conjugate gradients, "
                        "one BLAS thread, at --m/--d/--k (default (8, 24, 2))")
    p.add_argument("--profile", action="store_true",
                   help="only where phases 4 and 6 spend their time in oracle mode, each step against the GEMM rate "
                        "and phase 4 against its labels, one BLAS thread, at --m/--d/--k (default (10, 24, 2))")
    p.add_argument("--m", type=int, default=None,
                   help="heads of --certification (default 3), --refinement (8) and --profile (10)")
    p.add_argument("--d", type=int, default=None,
                   help="token dimension of --certification (default 16), --refinement and --profile (24)")
    p.add_argument("--k", type=int, default=None,
                   help="tokens per sequence of --certification (default 4), --refinement and --profile (2)")
    p.add_argument("--tol", type=float, default=None,
                   help="certification tolerance of --certification (default 0.03, phase 4's at (3, 16, 4)) and "
                        "--profile (0.08)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    # --m/--d/--k/--tol are --certification's (--m/--d/--k also --refinement's); --workers is --parallel's and
    # --search's (--repeat is every benchmark's).
    declare_options(p, run_certification_benchmark, run_parallel_benchmark, run_benchmark)
    _limit(p, "m", "d", "k", "repeat", "workers")
    p.set_defaults(handler=_bench)


def _add_scaling(sub):
    p = sub.add_parser("scaling", help="run time and examples against m: the learner and Adam on the same layers")
    p.add_argument("--m", type=int, nargs="+", default=None, help="numbers of heads (default 1 2 3 4 5)")
    p.add_argument("--d", default="auto",
                   help="token dimension, or auto: the smallest sound d in 12, 16, ... per (m, k) (default auto)")
    p.add_argument("--k", type=int, nargs="+", default=None,
                   help="tokens per sequence; several values sweep k as well (default 2)")
    p.add_argument("--grid", nargs="+", metavar="BLOCK", default=None,
                   help="instead of --m/--k: blocks of (m, k) cells, e.g. 'm=1..6,k=2' 'm=2,k=8,d=24,seeds=3', "
                        "or the word default (the study over heads and tokens: " + " ".join(DEFAULT_GRID) + ")")
    p.add_argument("--logit-scale", type=float, default=STUDY_LOGIT_SCALE,
                   help=f"Frobenius norm of each planted Θ_i (default {STUDY_LOGIT_SCALE:g}, the studies' family: "
                        "learner.sweep.runs.STUDY_LOGIT_SCALE; random_layer's own default is 3)")
    p.add_argument("--noise", type=float, default=0.0,
                   help="standard deviation of the oracles' label noise (default 0: exact labels); the layers "
                        "and inputs are those of every other --noise")
    p.add_argument("--seeds", default=None,
                   help="planted layers per setting, or auto: 3, then 10 where their median time is under 2 min "
                        "(default 10; auto with --grid)")
    p.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help=f"registered methods without an optional extra ({', '.join(QUICK_OPTIONS)}; default: those "
                        "the study in --out ran, or for a new study every one)")
    p.add_argument("--distribution", choices=("boolean", "gaussian"), default="boolean")
    p.add_argument("--adam-lr", type=float, nargs="+", default=[1e-2, 3e-2],
                   help="Adam's learning-rate grid; tuned per setting on separate layers (default 0.01 0.03)")
    p.add_argument("--max-examples", type=int, default=None,
                   help="the learner's phase-4 example budget (default: chosen from m)")
    p.add_argument("--refined-tol", type=float, default=None,
                   help="the learner's phase-4 tolerance (default: its pilot's choice); fix it to compare yields")
    p.add_argument("--tune-seeds", type=int, default=1,
                   help="tuning layers per setting and learning rate (default 1)")
    p.add_argument("--success-tol", type=float, default=1e-3,
                   help="common success criterion: relative error of F against the planted layer (default 1e-3)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler (extra `distributed`)")
    p.add_argument("--learn-workers", type=int, default=None,
                   help="with --serial: each learner run spreads its batches over this many local processes")
    _add_study_options(p, serial_help="run in this process (debugging)",
                       summarise_help="run nothing: re-summarise the records in --out (all must be there, e.g. "
                                      "docs/sweeps/main)",
                       out_help="directory of the sweep; an interrupted sweep resumes from the records in it")
    declare_options(p, scaling_study, rename={"ms": "m", "adam_lrs": "adam_lr"},
                    rules={name: CONFIG_RULES[name] for name in ("max_examples", "refined_tol")} | POOL_RULES)
    _limit(p, "m", "d", "k", "seeds", "max_examples", "workers", tune_seeds="seeds", learn_workers="workers")
    p.set_defaults(handler=_scaling)


def _add_grids(sub):
    from .grids import NOISE_CELLS, NOISE_SIGMAS, SHARPNESS_D, SHARPNESS_SCALES, noise_study, sharpness_study

    p = sub.add_parser("noise-study", help="parameter and relative error against label noise σ: the learner and "
                                           "Adam on the same layers and examples (study design ours)")
    p.add_argument("--sigma", type=float, nargs="+", default=list(NOISE_SIGMAS),
                   help=f"noise levels (default {' '.join(f'{x:g}' for x in NOISE_SIGMAS)})")
    p.add_argument("--cells", nargs="+", metavar="BLOCK", default=list(NOISE_CELLS),
                   help=f"grid blocks as in `scaling --grid` (default {' '.join(NOISE_CELLS)})")
    q = sub.add_parser("sharpness", help="success over logit scale × d × k, m = 2: the learner and Adam (study design "
                                          "ours); the map of docs/sweeps/reach-sharpness")
    q.add_argument("--logit-scale", type=float, nargs="+", default=list(SHARPNESS_SCALES),
                   help=f"logit scales (default {' '.join(f'{x:g}' for x in SHARPNESS_SCALES)})")
    q.add_argument("--d", type=int, nargs="+", default=list(SHARPNESS_D),
                   help=f"token dimensions (default {' '.join(map(str, SHARPNESS_D))}); k = 2 and 3")
    q.add_argument("--adam-seeds", type=int, default=1,
                   help="Adam's layers per cell and point: the first of the learner's (default 1; 0: the learner "
                        "only)")
    for parser, func, seeds in ((p, noise_study, 2), (q, sharpness_study, 6)):
        parser.add_argument("--seeds", type=int, default=seeds,
                            help=f"planted layers per cell and point (default {seeds})")
        _add_study_options(parser, serial_help="run in this process (debugging)",
                           out_help="the study's folder: one scaling study per point, then summary.md/json")
        declare_options(parser, func, rename={"sigmas": "sigma", "scales": "logit_scale", "ds": "d"},
                        rules=POOL_RULES)
        _limit(parser, "seeds", "workers")
    _limit(q, "d", adam_seeds="seeds")
    p.set_defaults(handler=_noise_study)
    q.set_defaults(handler=_sharpness)


def _grid_common(args):
    if args.workers is not None and args.serial:
        raise ValueError(f"--workers sizes the local pool, which --serial does not use; got --workers {args.workers} "
                         "with --serial.")
    return {"seeds": args.seeds, "seed": args.seed, "backend": "serial" if args.serial else "local",
            "workers": args.workers, "progress": not args.no_progress, "run": not args.summarise_only,
            "quick": args.quick}


def _run_grid(args, study):
    """Run a grid study (``study()``), then print its summary; the exit status of :func:`run_study`."""
    result = run_study(study)
    if isinstance(result, int):
        return result
    print((Path(args.out) / "summary.md").read_text())
    return 0


def _noise_study(args):
    from .grids import noise_study

    def study():
        try:
            return noise_study(args.out, sigmas=args.sigma, cells=args.cells, **_grid_common(args))
        except ValueError as exc:  # the library names its parameter; here the flag
            if str(exc).startswith("`cells`"):
                raise ValueError(str(exc).replace("`cells`", "`--cells`", 1)) from None
            raise

    return _run_grid(args, study)


def _sharpness(args):
    from .grids import sharpness_study

    return _run_grid(args, lambda: sharpness_study(args.out, scales=args.logit_scale, ds=args.d,
                                                   adam_seeds=_adam_seeds(args), **_grid_common(args)))


def _adam_seeds(args):
    """``--adam-seeds``: Adam runs on the first of the learner's ``--seeds`` layers, so it may not ask for more."""
    if args.adam_seeds > args.seeds:
        raise ValueError(f"--adam-seeds {args.adam_seeds} exceeds --seeds {args.seeds}: Adam runs on the first "
                         "--adam-seeds of the learner's layers; give at most --seeds.")
    return args.adam_seeds


def _add_peers(sub):
    p = sub.add_parser("peers", help="the learner, numpy Adam and torch Adam side by side on the same layers "
                                     "(extra `torch`)")
    p.add_argument("--m", type=int, nargs="+", default=[1, 2, 3, 4], help="numbers of heads (default 1 2 3 4)")
    p.add_argument("--k", type=int, default=2, help="tokens per sequence (default 2)")
    p.add_argument("--d", default="auto",
                   help="token dimension, or auto: the scaling study's sound d per m (default auto: 12)")
    p.add_argument("--seeds", type=int, default=3, help="planted layers per m (default 3)")
    p.add_argument("--methods", nargs="+", default=None, choices=method_names(), metavar="METHOD",
                   help=f"registered methods to run ({', '.join(method_names())}; default: those the study in --out "
                        "ran, or for a new study every one this machine can run)")
    p.add_argument("--adam-lr", type=float, default=1e-2,
                   help="numpy Adam's learning rate (default 0.01)")
    p.add_argument("--torch-lr", type=float, default=1e-2,
                   help="torch Adam's initial learning rate (default 0.01)")
    p.add_argument("--epochs", type=int, default=None,
                   help=f"torch Adam's epochs per restart (default {TORCH_DEFAULTS['epochs']}; with --quick "
                        f"{QUICK_TORCH['epochs']}; given explicitly, it applies with --quick too)")
    p.add_argument("--batch", type=int, default=None,
                   help=f"torch Adam's mini-batch (default {TORCH_DEFAULTS['batch']}; with --quick "
                        f"{QUICK_TORCH['batch']}; given explicitly, it applies with --quick too)")
    _add_study_options(p)
    # The study's own parameters, then each baseline's: --adam-lr is fit_gradient's lr, --torch-lr and
    # --epochs/--batch fit_torch's.
    rules: dict[str, Rule] = {"adam_lr": OPTION_RULES["lr"], "torch_lr": OPTION_RULES["lr"],
                              "epochs": OPTION_RULES["epochs"], "batch": OPTION_RULES["batch"]}
    declare_options(p, peer_study, rename={"ms": "m"}, rules=rules | POOL_RULES)
    _limit(p, "m", "k", "d", "seeds", "epochs", "batch", "workers")
    p.set_defaults(handler=_peers)


def _limit(p, *names, **renamed):
    """Give the options ``names`` (and ``renamed``: an option's dest to the limit it shares) their size limits
    (:data:`learner.validation.SIZE_LIMITS`)."""
    limit_options(p, {name: SIZE_LIMITS[name] for name in names}
                  | {dest: SIZE_LIMITS[name] for dest, name in renamed.items()})


def _add_study_options(p, *, serial_help="one run at a time, in this process",
                       summarise_help="run nothing: re-summarise the records in --out",
                       out_help="directory of the study; an interrupted study resumes from the records in it"):
    """The options every study shares, declared here once: where the runs go (``--workers``, ``--serial``), the
    progress bar, the smoke budgets, the seed, re-summarising, and the folder. A study words the help of
    ``--serial``, ``--summarise-only`` and ``--out`` for itself."""
    p.add_argument("--workers", type=int, default=None, help=WORKERS_HELP)
    p.add_argument("--serial", action="store_true", help=serial_help)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true", help="tiny budgets (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every run's seed (default 0)")
    p.add_argument("--summarise-only", action="store_true", help=summarise_help)
    p.add_argument("--out", metavar="DIR", required=True, help=out_help)


def _add_race(sub):
    p = sub.add_parser("race", help="the learner, numpy Adam and torch Adam on the frontier's cells, each Adam's "
                                    "learning rate tuned per cell: time and examples to 1e-3 and 1e-8 "
                                    "(extra `torch`)")
    p.add_argument("--grid", nargs="+", default=None, metavar="BLOCK",
                   help="cells as blocks such as 'm=1..6,k=2' (default: the frontier's fifteen cells)")
    p.add_argument("--seeds", type=int, default=3, help="planted layers per cell (default 3)")
    p.add_argument("--lrs", type=float, nargs="+", default=[1e-2, 3e-2],
                   help="learning rates each Adam is tuned over, per cell (default 0.01 0.03)")
    p.add_argument("--search-methods", nargs="+", default=None, choices=list(method_names()),
                   help="the methods searched (default every study method this machine can run: "
                        f"{_methods_help()})")
    p.add_argument("--search-rounds", type=int, default=0,
                   help="search each method's fewest examples per cell: at most this many sizes of a fixed set, "
                        "bisecting the ladder of halvings (default 0: no search; 4 settled the frontier's cells)")
    _add_study_options(p)
    declare_options(p, race_study, rules=POOL_RULES)
    _limit(p, "seeds", "search_rounds", "workers")
    p.set_defaults(handler=_race)


def _add_growth(sub):

    p = sub.add_parser("growth", help="run time and examples against m at fixed (d, k), per phase, with phase 4's "
                                      "tolerance and phase 6's search fixed: the shape of the growth chosen out of "
                                      "sample, with intervals (study design ours)")
    p.add_argument("--lines", nargs="+", default=list(GROWTH_LINES), choices=list(GROWTH_LINES),
                   help="the lines of cells run, in order: " + "; ".join(
                       f"{name} = {' '.join(blocks)}" for name, blocks in GROWTH_LINES.items())
                   + f" (default all; every cell with {GROWTH_OPTIONS})")
    p.add_argument("--learn-workers", type=int, default=2,
                   help="local processes of each run; the runs go one at a time (default 2)")
    p.add_argument("--resamples", type=int, default=BOOTSTRAP,
                   help=f"bootstrap resamples per quantity (default {BOOTSTRAP})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true",
                   help="each line's first two m, one layer each, tiny budgets (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every run's seed and of the bootstrap "
                                                            "(default 0)")
    p.add_argument("--summarise-only", action="store_true",
                   help="run nothing: re-summarise the records in --out (every run must be there)")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory of the study (one folder per line); an interrupted study resumes from its records")
    declare_options(p, growth_study)
    limit_options(p, {"learn_workers": SIZE_LIMITS["workers"],
                      "resamples": (100_000, " (ours: each resample refits every shape of every quantity)")})
    p.set_defaults(handler=_growth)


def _growth(args):
    def study():
        return growth_study(args.out, lines=args.lines, seed=args.seed, learn_workers=args.learn_workers,
                            progress=not args.no_progress, run=not args.summarise_only, resamples=args.resamples,
                            quick=args.quick)

    result = run_study(study)
    if isinstance(result, int):
        return result
    for sentence in result["statements"]:
        print(f"- {sentence}")
    print()
    print("files: " + ", ".join(f"{k} {v}" for k, v in result["files"].items()))
    return 0


def _start_pairs(values):
    """``--start``'s ``[METHOD:]D=M`` pairs as ``{d: m}``, or ``{d: {method: m}}`` where a method is named (a
    ValueError naming the option and the value otherwise)."""
    every: dict[int, int] = {}
    per: dict[int, dict[str, int]] = {}
    for value in values or ():
        head, sep, m = value.partition("=")
        method, colon, d = head.rpartition(":")
        if not sep or not d.strip().isdigit() or not m.strip().isdigit() or int(m) < 1 or (colon and not method):
            raise ValueError(f"`--start` must be pairs [METHOD:]D=M of positive integers (e.g. 32=8 or "
                             f"adam:32=8); got {value!r}.")
        if (int(d) in every) if colon else (int(d) in per):
            raise ValueError(f"`--start` gives d = {d} both for every method and "
                             f"{f'for {method}' if colon else 'per method'}; got {value!r}.")
        if colon:
            per.setdefault(int(d), {})[method] = int(m)
        else:
            every[int(d)] = int(m)
    return {**every, **per}


def _add_budget(sub):
    p = sub.add_parser("budget", help="the budgeted frontier: the largest m each Adam learns within a time budget "
                                      "per layer at fixed d, walking m from a start up to the learner's sound m "
                                      "(k = 2; walk ours)")
    p.add_argument("--ds", type=int, nargs="+", default=[16, 24, 32], help="token dimensions (default 16 24 32)")
    p.add_argument("--methods", nargs="+", default=list(BUDGET_METHODS), choices=list(BUDGET_METHODS),
                   help=f"the baselines walked (default {' '.join(BUDGET_METHODS)})")
    p.add_argument("--start", nargs="+", default=None, metavar="[METHOD:]D=M",
                   help="the first m per d, e.g. 32=8, or per method and d, e.g. adam:32=8 torch-adam:32=13 "
                        "(default: each d's cap, the largest m the learner calls sound)")
    p.add_argument("--seeds", type=int, default=3, help="measured layers per cell (default 3)")
    p.add_argument("--lrs", type=float, nargs="+", default=[1e-2, 3e-2],
                   help="learning rates each Adam is tuned over, per cell (default 0.01 0.03)")
    p.add_argument("--budget", type=float, default=FRONTIER_BUDGET,
                   help=f"seconds per layer (default {FRONTIER_BUDGET:g})")
    p.add_argument("--workers", type=int, default=2, help="runs at a time, one thread each (default 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true", help="tiny budgets (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every run's seed (default 0)")
    p.add_argument("--summarise-only", action="store_true",
                   help="run nothing: re-summarise the records in --out (each visited cell's runs must be there)")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory of the walk; an interrupted walk resumes from the records in it")
    declare_options(p, budget_walk)
    _limit(p, "seeds", "workers", ds="d")
    p.set_defaults(handler=_budget)


def _budget(args):
    start = _start_pairs(args.start)
    quick = quick_options() if args.quick else {}
    options = {name: {key: v for key, v in quick.get(name, {}).items() if key != "lr"} for name in args.methods}

    def study():
        return budget_walk(args.out, ds=args.ds, methods=args.methods, start=start, seeds=args.seeds, lrs=args.lrs,
                           budget=args.budget, options=options, seed=args.seed, workers=args.workers,
                           progress=not args.no_progress, run=not args.summarise_only)

    result = run_study(study)
    if isinstance(result, int):
        return result
    for cell in result["cells"]:
        print(f"- {cell['method']} at (m, d) = ({cell['m']}, {cell['d']}), lr {cell['lr']:g}: "
              f"{'passed' if cell['passed'] else 'failed'}")
    print()
    print(Path(args.out, "summary.md").read_text(encoding="utf-8"), end="")
    return 0


def _add_trained(sub):
    from ..trained import TASKS

    p = sub.add_parser("trained", help="trained heads: layers trained by torch Adam on tasks, the paper's conditions "
                                       "on them, and the learner and Adam learning them (study ours)")
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS),
                   help=f"the tasks (default {' '.join(TASKS)})")
    p.add_argument("--seeds", type=int, default=3, help="trained layers per task and setting (default 3)")
    p.add_argument("--steps", type=int, default=1500, help="the training's Adam steps (default 1500)")
    p.add_argument("--max-examples", type=int, default=TRAINED_MAX_EXAMPLES,
                   help=f"the learner's example budget per run (default {TRAINED_MAX_EXAMPLES:,})")
    p.add_argument("--adam-seconds", type=float, default=TRAINED_ADAM_SECONDS,
                   help=f"torch Adam's time limit per refit (default {TRAINED_ADAM_SECONDS:g})")
    p.add_argument("--workers", type=int, default=2, help="the learner's local workers (default 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true",
                   help="one small setting, one layer per task, tiny budgets (a smoke test, not a measurement)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every layer's seed (default 0)")
    p.add_argument("--summarise-only", action="store_true", help="run nothing: re-summarise the records in --out")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="directory of the study; an interrupted study resumes from the records in it")
    declare_options(p, trained_study)
    _limit(p, "seeds", "workers", "max_examples", "steps")
    p.set_defaults(handler=_trained)


def _trained(args):
    if not args.summarise_only:
        need_torch("trained")
    quick = {"settings": [(1, 6, 2)], "seeds": 1, "steps": 50, "checkpoints": (0, 10), "max_examples": 200_000,
             "adam_seconds": 2.0} if args.quick else {}
    params = {"seeds": args.seeds, "steps": args.steps, "max_examples": args.max_examples,
              "adam_seconds": args.adam_seconds} | quick

    def study():
        return trained_study(args.out, tasks=args.tasks, workers=args.workers, seed=args.seed,
                             progress=not args.no_progress, run=not args.summarise_only, **params)

    result = run_study(study)
    if isinstance(result, int):
        return result
    print(Path(args.out, "summary.md").read_text(encoding="utf-8"), end="")
    return 0


def _methods_help():
    """The registered methods for ``--search-methods``' help, those that run only where a device is present marked:
    said without asking (asking imports torch, seconds that every command's help would pay)."""
    return " ".join(f"{name}{' (where present)' if mt.present is not None else ''}" for name, mt in METHODS.items())


def _torch_study_checks(args, command, methods=None):
    """What ``peers`` and ``race`` check before running: the pool options agree, and torch is there to run (for
    ``methods``, when given, only if one of them needs it)."""
    if args.workers is not None and args.serial:
        raise ValueError(f"--workers sizes the local pool, which --serial does not use; got --workers {args.workers} "
                         "with --serial.")
    if not args.summarise_only and (methods is None or any(get_method(n).extra == "torch" for n in methods
                                                           if n in METHODS)):
        need_torch(command)


def _race(args):
    _torch_study_checks(args, "race")
    quick = quick_options() if args.quick else {}

    def study():
        try:
            return race_study(
                args.out, grid=args.grid, seeds=args.seeds, lrs=args.lrs, seed=args.seed,
                search_rounds=args.search_rounds, search_methods=args.search_methods,
                adam_options={key: v for key, v in quick.get("adam", {}).items() if key != "lr"},
                torch_options=quick.get("torch-adam"), provable_options=quick.get("provable"),
                backend="serial" if args.serial else "local", workers=args.workers, progress=not args.no_progress,
                run=not args.summarise_only)
        except ValueError as exc:  # the library names its parameter; here the flag
            if str(exc).startswith("`grid`"):
                raise ValueError(str(exc).replace("`grid`", "`--grid`", 1)) from None
            raise

    result = run_study(study)
    if isinstance(result, int):
        return result
    print_study(result, args.out)
    return 0


#: The defaults of bench's options that belong to some benchmarks only, per benchmark (None on the parser, so that
#: a value typed for another benchmark, which would be ignored, is refused instead).
_BENCH_DEFAULTS: dict[str, dict[str, Any]] = {"--certification": {"m": 3, "d": 16, "k": 4, "tol": 0.03},
                                               "--refinement": {"m": 8, "d": 24, "k": 2},
                                               "--profile": {"m": 10, "d": 24, "k": 2, "tol": 0.08}}
#: Every such option.
_BENCH_OPTIONS = ("m", "d", "k", "tol")


def _bench_options(args):
    """Refuse an option of ``bench`` that the chosen benchmark would ignore, then fill in the defaults."""
    modes = [flag for flag, on in (("--parallel", args.parallel), ("--search", args.search), ("--span", args.span),
                                   ("--certification", args.certification), ("--refinement", args.refinement),
                                   ("--profile", args.profile)) if on]
    if len(modes) > 1:
        raise ValueError("give at most one of --parallel, --search, --span, --certification, --refinement and "
                         "--profile; "
                         f"got {' '.join(modes)}.")
    defaults = _BENCH_DEFAULTS.get(modes[0], {}) if modes else {}
    given = [f"--{key}" for key in _BENCH_OPTIONS if getattr(args, key) is not None and key not in defaults]
    if given:
        takers = [mode for mode, keys in _BENCH_DEFAULTS.items() if all(g[2:] in keys for g in given)]
        named = ", ".join(takers[:-1]) + f" or {takers[-1]}" if len(takers) > 1 else "".join(takers)
        raise ValueError(f"{', '.join(given)}: options of {named or 'other benchmarks'} only, which "
                         f"{' '.join(modes) or 'the default benchmark'} would ignore; add "
                         f"{named or 'the benchmark they belong to'} or drop them.")
    if args.workers is not None and not (args.parallel or args.search):
        raise ValueError(f"--workers sizes the pool of --parallel and --search only, which "
                         f"{' '.join(modes) or 'the default benchmark'} would ignore; got --workers {args.workers}.")
    for key in _BENCH_OPTIONS:
        if getattr(args, key) is None:
            setattr(args, key, defaults.get(key, _BENCH_DEFAULTS["--certification"][key]))
    if args.workers is None:
        args.workers = PARALLEL_BENCH_WORKERS


def _bench(args):
    _bench_options(args)
    if args.parallel:
        par = run_parallel_benchmark(workers=args.workers, batch=2000 if args.quick else 100_000,
                                     batches=4 if args.quick else 16, repeat=args.repeat, rng=args.seed)
        print(par.table())
        if args.json:
            write_json(args.json, command_record("bench --parallel", parallel=par.to_dict()))
        return 0
    if args.search:
        cell = (3, 10, 2) if args.quick else (7, 20, 2)
        found = run_search_benchmark(*cell, workers=args.workers, repeat=args.repeat, rng=args.seed)
        print(found.table())
        if args.json:
            write_json(args.json, command_record("bench --search", seed=args.seed, search=found.to_dict()))
        return 0
    if args.span:
        span = run_span_benchmark(rows=5000 if args.quick else 200_000, repeat=args.repeat, rng=args.seed)
        print(span.table())
        if args.json:
            write_json(args.json, command_record("bench --span", seed=args.seed, span=span.to_dict()))
        return 0
    if args.profile:
        cell = (4, 12, 2) if args.quick else (args.m, args.d, args.k)
        prof = run_phase_profile(*cell, tol=args.tol, examples=100_000 if args.quick else 2_000_000, rng=args.seed)
        print(prof.table())
        if args.json:
            write_json(args.json, command_record("bench --profile", seed=args.seed, profile=prof.to_dict()))
        return 0
    if args.refinement:
        cell = (3, 8, 2) if args.quick else (args.m, args.d, args.k)
        ref = run_refinement_benchmark(*cell, repeat=args.repeat, rng=args.seed)
        print(ref.table())
        if args.json:
            write_json(args.json, command_record("bench --refinement", seed=args.seed, refinement=ref.to_dict()))
        return 0
    if args.certification:
        cert = run_certification_benchmark(args.m, args.d, args.k, batch=2000 if args.quick else 100_000,
                                           repeat=args.repeat, tol=args.tol, rng=args.seed)
        print(cert.table())
        if args.json:
            write_json(args.json, command_record("bench --certification", seed=args.seed,
                                                 certification=cert.to_dict()))
        return 0
    cases: tuple[BenchCase, ...] = DEFAULT_CASES
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
        write_json(args.json, command_record(
            "bench", gemm_gflops=result.gemm_gflops, rows=[r.__dict__ | {"case": r.case.__dict__} for r in result.rows],
            cube_seconds=result.cube_seconds, repeat=result.repeat, torch_version=result.torch_version,
            certification=cert.to_dict()))
    return 0


def run_study(run: Callable[[], _T], *, sigterm: bool = True) -> _T | int:
    """Run ``run()`` (a study), returning its result, or the exit status when it is locked out or interrupted.

    A batch scheduler or ``kill`` stops a sweep with SIGTERM: with ``sigterm`` it is treated as
    Ctrl-C (workers stopped, finished runs kept) rather than ending the process and leaving the pool's
    processes behind. A ``ValueError`` naming the parameter ``out`` is raised again naming ``--out``, the option
    typed; any other error propagates.

    Parameters
    ----------
    run : callable
        Called with no arguments; runs the study and returns its result.
    sigterm : bool
        Whether to install :func:`learner.parallel.interrupt_on_sigterm` first, so that SIGTERM interrupts the
        study as Ctrl-C does (default True).

    Returns
    -------
    object or int
        What ``run()`` returned; or 2 when the study's directory is locked by another sweep (the lock's owner is
        printed to stderr), or 130 (the shell's status for SIGINT) when it was interrupted (finished runs are kept).
    """
    from ..errors import SweepInterrupted, SweepLocked

    if sigterm:
        interrupt_on_sigterm()
    try:
        return run()
    except ValueError as exc:  # the library names its parameter `out`; here the option typed
        text = str(exc)
        if "`out`" not in text:
            raise
        raise ValueError(text.replace("`out`", "--out").replace("got out=", "got --out ")) from None
    except SweepLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepInterrupted as exc:
        set_ctrl_c(signal.SIG_IGN)  # the command is ending: more Ctrl-Cs change nothing now
        kill_live_pools()
        print(f"\n{exc}", file=sys.stderr)
        return 130


def _scaling(args):

    if args.scheduler is not None and args.serial:
        raise ValueError("give at most one of --scheduler and --serial.")
    if args.learn_workers is not None and args.learn_workers > 1 and not args.serial:
        raise ValueError(f"--learn-workers {args.learn_workers} spreads one run's batches over a pool, which needs "
                         "--serial (one run at a time); add --serial or drop --learn-workers.")
    if args.workers is not None and (args.scheduler is not None or args.serial):
        other = f"--scheduler {args.scheduler!r}" if args.scheduler is not None else "--serial"
        raise ValueError(f"--workers sizes the local pool, which {other} does not use; got --workers {args.workers} "
                         f"with {other} (with --serial, --learn-workers spreads each run's batches).")
    backend = "dask" if args.scheduler is not None else "serial" if args.serial else "local"
    if backend == "dask":
        from ..parallel import Workers, check_scheduler, dask_client_class

        Workers(scheduler=args.scheduler)  # an empty address is named
        dask_client_class()  # the extra is there, or one line saying how to install it
        check_scheduler(args.scheduler, "--scheduler")  # reachable, before --out is claimed
    grid = list(DEFAULT_GRID) if args.grid == ["default"] else args.grid
    if grid is not None and (args.m is not None or args.k is not None):
        raise ValueError("give either --grid or --m/--k, not both.")
    seeds = args.seeds if args.seeds is not None else "auto" if grid is not None else 10
    provable = (dict(QUICK_OPTIONS["provable"]) if args.quick else {}) | {
        name: value for name, value in (("max_examples", args.max_examples), ("refined_tol", args.refined_tol))
        if value is not None}
    # Every other method's --quick budgets come from its registry entry.
    others = ({name: dict(QUICK_OPTIONS[name]) for name in study_methods(args.out, args.methods)
               if name not in ("provable", "adam") and name in QUICK_OPTIONS} if args.quick else None)

    def study():
        try:
            return scaling_study(
                args.out, ms=args.m, d=args.d, k=args.k, grid=grid, logit_scale=args.logit_scale, noise=args.noise,
                seeds=seeds, methods=args.methods, distribution=args.distribution, adam_lrs=args.adam_lr,
                tune_seeds=args.tune_seeds, success_tol=args.success_tol, seed=args.seed, backend=backend,
                workers=args.workers, adam_options=QUICK_OPTIONS["adam"] if args.quick else None,
                provable_options=provable, options=others, scheduler=args.scheduler, progress=not args.no_progress,
                learn_workers=args.learn_workers, run=not args.summarise_only)
        except ValueError as exc:  # the library names its parameter; here the option typed
            if str(exc).startswith("`d` must fit"):
                flag = "--d" if grid is None else "a d of --grid"
                raise ValueError(str(exc).replace("`d`", flag, 1).replace("got d=", f"got {flag} ")) from None
            raise

    result = run_study(study)
    if isinstance(result, int):
        return result
    print_study(result, args.out)
    return 0


def _peers(args):
    methods = args.methods or peer_methods(args.out)
    _torch_study_checks(args, "peers", methods)
    # Each method starts from its registry entry's --quick budgets (with --quick); torch Adam without --quick from
    # fit_torch's own epochs and batch, recorded in the study's options. The flags given apply on top of them.
    quick = quick_options() if args.quick else {}
    options = {name: dict(quick.get(name, {})) for name in methods}
    flags = {"adam": {"lr": args.adam_lr}, "torch-adam": {"lr": args.torch_lr} | {
        name: getattr(args, name) for name in ("epochs", "batch") if getattr(args, name) is not None}}
    for name, given in flags.items():
        if name in options:
            options[name] = (options[name] or (TORCH_DEFAULTS if name == "torch-adam" else {})) | given
    unused = [f"--{flag}" for flag in ("epochs", "batch") if getattr(args, flag) is not None
              and "torch-adam" not in options]
    if unused:
        raise ValueError(f"{' and '.join(unused)} set torch Adam's budgets, and torch-adam does not run here "
                         f"(--methods {' '.join(methods)}); add it, or drop {' and '.join(unused)}.")
    result = run_study(lambda: peer_study(
        args.out, ms=args.m, k=args.k, d=args.d, seeds=args.seeds, seed=args.seed, methods=methods,
        options=options, backend="serial" if args.serial else "local",
        workers=args.workers, progress=not args.no_progress, run=not args.summarise_only))
    if isinstance(result, int):
        return result
    print_study(result, args.out)
    return 0
