"""Command line of :mod:`theory`: ``python -m theory {list,check,all,yield-study}``."""

from __future__ import annotations

import argparse
import ast
import logging
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from learner.argparsing import (
    CommandParser,
    check_output_options,
    cli_seed,
    command_parser,
    declare_files,
    declare_options,
    end_in_one_line,
    flag_message,
    harden,
    limit_options,
)
from learner.io import write_json
from learner.tables import markdown_table
from learner.validation import Real

from ._core import CheckResult
from .registry import CHECKS, get, run_case
from .yield_study import DEFAULT_MAX_SECONDS, yield_study

__all__ = ["build_parser", "main", "verdict_table"]


def _param(text):
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--param takes key=value; got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


#: The largest Monte Carlo sizes of ``yield-study`` (ours), measured on the committed main study (50 runs, 2 cores):
#: its time estimate for the predictions gave 13.8 hours at 10⁸ examples (about 17 minutes a run), and the
#: simulations took 42 s at 4·10⁵ examples against 2 s at none (about 2·10⁻⁶ s an example and run, with no estimate
#: of their own), so 10⁷ are about 20 s a run. --max-seconds (0: none) still refuses predictions estimated longer.
YIELD_STUDY_LIMITS = {
    "n_geometry": (10**8, " (ours: about 17 minutes a run at 10⁸ examples, on the committed main study)"),
    "n_simulate": (10**7, " (ours: about 20 s a run at 10⁷ examples, on the committed main study)"),
}


def build_parser() -> CommandParser:
    """The argparse parser of ``python -m theory``.

    Returns
    -------
    CommandParser
        The parser with the subcommands ``list``, ``check``, ``all`` and ``yield-study``; the options of
        ``yield-study`` carry :func:`~theory.yield_study.yield_study`'s rules
        (:func:`learner.argparsing.declare_options`), and every integer or float option is checked as the
        toolkit's validation checks it (:func:`learner.argparsing.harden`).
    """
    parser = command_parser(
        prog="python -m theory",
        description="Numerical checks of the lemmas behind the learner of Chen & Li (arXiv 2402.04084).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the checks")

    p = sub.add_parser("check", help="run one check at default sizes (or its negative control)")
    p.add_argument("name", choices=sorted(CHECKS))
    p.add_argument("--control", action="store_true", help="run the negative control instead (expected to fail)")
    p.add_argument("--seed", type=cli_seed, default=0, help="seed (default 0)")
    p.add_argument("--param", type=_param, action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument for the case builder, e.g. --param n=128 (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON")
    p.add_argument("--plot", metavar="FILE", help="also write the check's figure (PNG; needs matplotlib)")

    p = sub.add_parser("all", help="run every check and every negative control; print one table of verdicts")
    p.add_argument("--seed", type=cli_seed, default=0, help="seed (default 0)")
    p.add_argument("--json", metavar="FILE", help="write all results as JSON")
    declare_files(p.add_argument("--plot-dir", metavar="DIR", help="also write every check's figure into DIR"),
                  [f"{name}.png" for name, spec in CHECKS.items() if spec.plot])  # the names _all writes

    p = sub.add_parser("yield-study", help="the learner's certification yield in scaling sweeps: measured, "
                                          "predicted from the planted layers, and fitted against (m−1)(k−1)")
    p.add_argument("sweeps", nargs="+", metavar="DIR", help="directories written by `python -m learner scaling`")
    p.add_argument("--geometry", choices=("conditional", "independent"), default="conditional",
                   help="pattern at agreement in the prediction (default conditional)")
    p.add_argument("--density", choices=("gaussian", "slice"), default="gaussian",
                   help="law of the disagreements in the prediction: one Gaussian, or given the row token and its "
                        "slices (default gaussian)")
    p.add_argument("--n-geometry", type=int, default=20_000, help="Monte Carlo examples per prediction (default 20000)")
    # Not yield_study's max_seconds (dest time_limit): 0 here means no limit, which the function spells None.
    p.add_argument("--max-seconds", dest="time_limit", metavar="MAX_SECONDS", type=float, default=DEFAULT_MAX_SECONDS,
                   help=f"refuse a study estimated to take longer (default {DEFAULT_MAX_SECONDS:g}; 0: no limit)")
    p.add_argument("--fit-tol", type=float, default=None, help="fit the runs at this tolerance (default: most common)")
    p.add_argument("--n-simulate", type=int, default=100_000,
                   help="examples of each run's simulation of the certification rule at the true ΣW, the prediction "
                        "where it certifies at least 100 rows (0: the window model only; default 100000)")
    p.add_argument("--seed", type=cli_seed, default=0, help="seed of the predictions' Monte Carlo (default 0)")
    p.add_argument("--json", metavar="FILE", help="write every run's figures and the fits as JSON")
    p.add_argument("--plot", metavar="FILE", help="write the yield figure (PNG; needs matplotlib)")
    # --geometry, --density, --n-geometry and --fit-tol by yield_study's declared rules; --seed is its rng (cli_seed).
    declare_options(p, yield_study, rules={"time_limit": Real(allow_zero=True)})
    limit_options(p, YIELD_STUDY_LIMITS)
    return harden(parser)


def verdict_table(rows: Iterable[tuple[CheckResult, bool]]) -> str:
    """Markdown table of (result, expected_to_hold) pairs.

    Parameters
    ----------
    rows : iterable of (CheckResult, bool)
        Each result with whether it was expected to hold (True for a default case, False for a negative control).

    Returns
    -------
    str
        One row per result: check, case, claim, measured value (with its interval when not exact), bound, whether
        it holds, what was expected (marked ``UNEXPECTED`` when the verdict differs) and the seconds taken.
    """
    cells = []
    for result, expected in rows:
        lo, hi = result.interval
        measured = f"{result.measured:.3g}" if lo == hi else f"{result.measured:.3g} [{lo:.3g}, {hi:.3g}]"
        case = "default" if expected else "negative control"
        ok = "yes" if result.holds else "no"
        exp = ("holds" if expected else "fails") + ("" if result.holds == expected else " — UNEXPECTED")
        cells.append([result.name, case, result.claim, measured, f"{result.relation} {result.bound:.3g}", ok, exp,
                      f"{result.seconds:.1f}"])
    return markdown_table(["check", "case", "claim", "measured", "bound", "holds", "expected", "time (s)"], cells)


def _check(args):
    spec = get(args.name)
    which = "control" if args.control else "default"
    result = run_case(spec.name, which, rng=args.seed, **dict(args.param))
    print(result.summary())
    print(f"source: {result.source}")
    print(f"seed entropy {result.seed_entropy}; {result.seconds:.2f} s")
    if args.json:
        write_json(args.json, result.to_dict())
    if args.plot:
        print(f"plotting: {spec.plot_help} (run -v to log progress)")
        spec.make_plot(args.plot, rng=args.seed)
        print(f"wrote {args.plot}")
    expected = not args.control
    return 0 if result.holds == expected else 1


def _all(args):
    from tqdm import tqdm

    rows = []
    t0 = time.perf_counter()
    jobs = [(name, which) for name in CHECKS for which in ("default", "control")]
    for name, which in tqdm(jobs, desc="theory checks", unit="case", disable=None):
        rows.append((run_case(name, which, rng=args.seed), which == "default"))
    elapsed = time.perf_counter() - t0
    if args.plot_dir:
        out = Path(args.plot_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, spec in CHECKS.items():
            if spec.plot:
                spec.make_plot(out / f"{name}.png", rng=args.seed)
                print(f"wrote {out / f'{name}.png'}")
    print(verdict_table(rows))
    unexpected = [r.name for r, exp in rows if r.holds != exp]
    print(f"\n{len(rows)} cases in {elapsed:.1f} s; "
          + ("every check held and every negative control failed, as expected." if not unexpected
             else f"UNEXPECTED verdicts: {', '.join(unexpected)}"))
    if args.json:
        write_json(args.json, {"seed": args.seed, "results": [dict(r.to_dict(), expected_to_hold=e) for r, e in rows]})
    return 1 if unexpected else 0


def _yield_study(args):
    from .yield_study import plot_yield

    try:
        study = yield_study(args.sweeps, geometry=args.geometry, density=args.density, n_geometry=args.n_geometry,
                            fit_tol=args.fit_tol, rng=args.seed, progress=sys.stderr.isatty(),
                            max_seconds=args.time_limit or None, n_simulate=args.n_simulate)
    except ValueError as exc:
        if not str(exc).startswith("`n_geometry`="):
            raise
        # The estimate's refusal, in the command line's words.
        raise ValueError(str(exc).replace("`n_geometry`=", "--n-geometry ").replace("max_seconds=", "--max-seconds ")
                         .replace("max_seconds (None for no limit)", "--max-seconds (0 for no limit)")
                         .replace("lower n_geometry", "lower --n-geometry")) from None
    print(study.table())
    print(f"\n{len(study.runs)} learner runs from {', '.join(args.sweeps)}; {study.seconds:.1f} s"
          + (f"; {len(study.skipped)} records skipped as unreadable or invalid (see the warnings)"
             if study.skipped else ""))
    if args.json:
        write_json(args.json, study.to_dict() | {"sweeps": args.sweeps, "seed": args.seed})
        print(f"wrote {args.json}")
    if args.plot:
        print(f"wrote {plot_yield(study, args.plot)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m theory``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 when every verdict is the expected one (and for ``list``), 1 when one is not, 2 when
        an input is refused (a ValueError, TypeError or FileNotFoundError) or memory runs out, 130 on Ctrl-C;
        each of the last two reported on standard error as one line. A usage error exits with status 2 through
        argparse (``SystemExit``) instead of returning.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    try:
        check_output_options(parser, args)
        if args.command == "list":
            return _list()
        return {"check": _check, "all": _all, "yield-study": _yield_study}[args.command](args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"error: {flag_message(parser, args.command, str(exc))}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, MemoryError) as exc:  # one line, as `python -m learner` ends
        return end_in_one_line(parser, args, exc)


def _list():
    for name, spec in CHECKS.items():
        print(f"{name:<24} {spec.summary}")
        if spec.plot:
            print(f"{'':<24} plot: {spec.plot_help}")
    return 0

