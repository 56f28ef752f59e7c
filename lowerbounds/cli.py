"""Command line of :mod:`lowerbounds`: ``python -m lowerbounds {sq,sq-simulate,lwe,lwe-attack,learn-hard,families}``.

Library functions never parse ``argv``; this module does, calls them, and prints. The subcommands of a family
(``sq`` and ``sq-simulate`` of the SQ family, ``lwe`` and ``lwe-attack`` of the LWE-style one) are those its entry
in :mod:`lowerbounds.registry` adds; ``learn-hard`` and ``families`` read the registry too.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from learner import FileFormatError, enumerate_cube, save_layer, write_json
from learner.argparsing import (
    CommandParser,
    check_output_options,
    cli_seed,
    cli_type,
    command_parser,
    declare_options,
    end_in_one_line,
    flag_message,
    harden,
    limit_options,
    rules_of,
)
from learner.io import save_figure
from learner.sweep.records import print_study
from learner.tables import fmt
from learner.validation import SIZE_LIMITS, Each, Integer

from .attacks import time_attacks
from .family import HardFamily
from .instance import MAX_G_EVALUATIONS
from .lattice import cost_table
from .lwr import (
    DEFAULT_SHARPNESS,
    NAMED_LWR,
    LWRParams,
    attention_samples,
    lwr_hard_instance,
    lwr_predictor,
    named_lwr_instance,
    predictor_accuracy,
    sample_lwr,
)
from .registry import FAMILIES, HardFamilyEntry, family_names
from .simulate import simulate_queries
from .sq import sq_hard_instance

__all__ = ["build_parser", "main"]


#: Size limits of the lower bounds' options, ``{dest: (maximum, how it was sized)}`` (ours), beside the model's
#: (:data:`learner.validation.SIZE_LIMITS`): checked while the options are read, before any work.
LIMITS: dict[str, tuple[float, str]] = {
    # sq and sq-simulate: C(d − 1, m − 1) candidate subsets; sq-simulate measured 0.7 s per trial on its default
    # grid (d <= 64, m <= 4, 39 711 candidates at the largest cell): d = 256 at m = 4 is 2.7 M candidates.
    "sq_d": (256, " (ours: the search's C(d − 1, m − 1) candidates reach millions at d = 256)"),
    "sq_m": (8, " (ours: C(255, 7) candidates at m = 8 are 10¹³)"),
    "trials": (1000, " (ours: a trial of the default grid takes 0.7 s, so 1000 take 12 min)"),
    # lwe: the checks' two forward passes measured 26 s at n = 200 (q = 7), their cost growing as n²(q − 1).
    "lwe_n": (200, " (ours: the instance's checks take 26 s at n = 200, growing as n²)"),
    "q": (31, " (ours: heads ≈ n(q − 1)/2, and exhaustive search tries q^n secrets)"),
    # the exact sharpness table: 5·10⁶ mpmath head-terms measured about 3 min (lowerbounds.instance).
    "max_evaluations": (10**8, " (ours: 5·10⁶ head-terms take about 3 min, so 10⁸ take an hour)"),
    # lwe-attack: exhaustive search tries q^n secrets (7⁸ = 5.8 M at the default largest n); the linear attack's
    # memory is checked against the machine's; fpylll's lattice reduction grows exponentially in n.
    "exhaustive_n": (10, " (ours: exhaustive search tries q^n secrets, 2.8·10⁸ at q = 7, n = 10)"),
    "linear_n": (4096, " (ours: the linear attack's matrices grow as n², 12.5 GiB at n = 4096)"),
    "lattice_n": (40, " (ours: lattice reduction's time grows exponentially in n; the default stops at 12)"),
    "cost_n": (10**8, " (ours: the cost table is closed-form; 10⁸ is far beyond any attack)"),
    "repeats": (1000, " (ours: the defaults' attacks take seconds per secret, so 1000 secrets take an hour)"),
    # learn-hard runs the learner and Adam on each member: the learner's phase-5 memory grows as d⁴.
    "hard_d": (64, " (ours: the learner's phase-5 memory grows as d⁴, 134 MB at d = 64)"),
    "lwr_n": (10, " (ours: exhaustive search tries q^n secrets, 2.8·10⁸ at q = 7, n = 10)"),
    "subsets": (1000, " (ours: each subset is a run of every method: 1000 per cell take hours)"),
    "max_seconds": (86_400, " (ours: a day per run)"),
    "examples": (10**8, " (ours: 10⁸ two-token examples at d = 64 hold 100 GB)"),
}


#: The largest exhaustive search (q^n secrets) and LWE checks (n²(q − 1), heads times dimension) run, at the limits'
#: own defaults: q = 7 with n = 10 and n = 200 (ours; see :data:`LIMITS`).
EXHAUSTIVE_LIMIT = 7**10
# ours: n²(q − 1) at n = 200, q = 7, where the checks measured 26 s (the lwe_n entry of LIMITS)
LWE_WORK_LIMIT = 200**2 * 6


def _check_lwe_work(flag, n, q):
    """Refuse, before any work, an (n, q) whose checks (heads ≈ n(q − 1)/2 over d = n + 2) exceed the measured
    n = 200, q = 7 (26 s), naming ``flag`` and the values."""
    if n * n * (q - 1) > LWE_WORK_LIMIT:
        raise ValueError(f"`{flag}` asks for an instance of about {n * (q - 1) // 2:,} heads in dimension {n + 2}, "
                         f"beyond the n = 200, q = 7 its checks take 26 s at (ours: n²(q − 1) <= {LWE_WORK_LIMIT:,}); "
                         f"got {flag} {n} with --q {q}.")


def _limit(p, **limits):
    """Give each option (``dest=name``) the size limit ``name`` of :data:`LIMITS` or, failing that, of
    :data:`learner.validation.SIZE_LIMITS`."""
    limit_options(p, {dest: LIMITS.get(name) or SIZE_LIMITS[name] for dest, name in limits.items()})


def build_parser() -> CommandParser:
    """The command line's parser: the registered families' subcommands (``sq``, ``sq-simulate``, ``lwe``,
    ``lwe-attack``), then ``learn-hard`` and ``families``.

    Each subcommand's flags carry the rules of the library parameters they feed, so a bad value is refused by
    the parser with the flag's name.

    Returns
    -------
    CommandParser
        The hardened parser (:func:`learner.argparsing.harden`).
    """
    parser = command_parser(prog="python -m lowerbounds",
                                     description="Hard instances behind the lower bounds (constructions ours).")
    sub = parser.add_subparsers(dest="command", required=True)
    for entry in FAMILIES.values():
        entry.add_commands(sub)
    _add_learn_hard(sub)
    _add_families(sub)
    return harden(parser)


def sq_commands(sub: Any) -> None:
    """The SQ family's subcommands, ``sq`` and ``sq-simulate`` (its registry entry's ``commands``).

    Parameters
    ----------
    sub : argparse subparsers
        ``python -m lowerbounds``'s subcommands.
    """
    _add_sq(sub)
    _add_sq_simulate(sub)


def lwr_commands(sub: Any) -> None:
    """The LWE-style family's subcommands, ``lwe`` and ``lwe-attack`` (its registry entry's ``commands``).

    Parameters
    ----------
    sub : argparse subparsers
        ``python -m lowerbounds``'s subcommands.
    """
    _add_lwe(sub)
    _add_lwe_attack(sub)


def _add_families(sub):
    p = sub.add_parser("families", help="the registered hard families: how their members are indexed, the "
                                        "methods that apply, their subcommands")
    p.set_defaults(handler=_families)


def _families(args):
    for entry in FAMILIES.values():
        commands = _commands_of(entry)
        print(f"{entry.name:<10} {entry.cells:<8} methods: {', '.join(entry.methods)}"
              + (f"; commands: {', '.join(commands)}" if commands else ""))
        print(f"           {entry.summary}")
    return 0


def _commands_of(entry: HardFamilyEntry) -> list[str]:
    """The names of the subcommands ``entry`` adds to the command line, in the order it adds them."""
    sub = command_parser(prog="python -m lowerbounds").add_subparsers()
    entry.add_commands(sub)
    return list(sub.choices)


def _add_sq(sub):
    p = sub.add_parser("sq", help="write one SQ-hard two-token instance (layer + metadata)")
    p.set_defaults(handler=_sq)
    p.add_argument("--d", type=int, default=16, help="token dimension (default 16)")
    p.add_argument("--m", type=int, default=3, help="heads; the hidden subset has m − 1 coordinates (default 3)")
    p.add_argument("--variant", choices=("interpolation", "steps"), default="interpolation")
    p.add_argument("--subset", type=int, nargs="+", default=None,
                   help="hidden coordinates (default: drawn with --seed)")
    p.add_argument("--seed", type=cli_seed, default=None,
                   help="integer seed for the hidden subset (default: fresh entropy, printed)")
    p.add_argument("--out", metavar="FILE", help="where to write the layer (.npz with JSON metadata)")
    p.add_argument("--tolerance", type=float, default=0.05, help="τ for the printed query lower bound (default 0.05)")
    # --seed seeds a SeedSequence (cli_seed), not one function's parameter.
    declare_options(p, sq_hard_instance, HardFamily, HardFamily.query_lower_bound)
    _limit(p, d="sq_d", m="sq_m", subset="sq_d")  # a hidden coordinate is below d


def _add_sq_simulate(sub):
    p = sub.add_parser("sq-simulate", help="queries a correlational SQ learner needs, against d, for several m")
    p.set_defaults(handler=_simulate)
    p.add_argument("--d", type=int, nargs="+", default=[16, 24, 32, 48, 64], help="dimensions (default 16 24 32 48 64)")
    p.add_argument("--m", type=int, nargs="+", default=[2, 3, 4], help="head counts (default 2 3 4)")
    p.add_argument("--tolerance", type=float, default=0.05, help="oracle tolerance τ (default 0.05)")
    p.add_argument("--adversary", choices=("reference", "random"), default="reference")
    p.add_argument("--trials", type=int, default=25, help="hidden subsets per cell; medians reported (default 25)")
    p.add_argument("--seed", type=cli_seed, default=0, help="seed of the hidden subsets and the queries (default 0)")
    p.add_argument("--plot", metavar="FILE", help="log-log plot of median queries against d (needs matplotlib)")
    p.add_argument("--json", metavar="FILE", help="also write the record as JSON")
    declare_options(p, simulate_queries, rename={"ds": "d", "ms": "m"})
    _limit(p, d="sq_d", m="sq_m", trials="trials")


def _add_lwe(sub):
    p = sub.add_parser("lwe", help="write one LWE-style (learning with rounding) two-token instance and check it")
    p.set_defaults(handler=_lwe)
    p.add_argument("--n", type=int, default=None, help="secret dimension (default 6; d = n + 2)")
    p.add_argument("--q", type=int, default=None, help="modulus, >= 3 (default 7)")
    p.add_argument("--secret", type=int, nargs="+", default=None, help="w in Z_q^n (default: drawn with --seed)")
    p.add_argument("--name", choices=sorted(NAMED_LWR), default=None, help="a named member instead (one-slab)")
    p.add_argument("--sharpness", type=float, default=DEFAULT_SHARPNESS, help=f"λ (default {DEFAULT_SHARPNESS})")
    p.add_argument("--max-evaluations", type=cli_type("--max-evaluations", Integer(0)), default=None,
                   help="refuse an exact sharpness table of more mpmath head-terms m(Σw+1) than this "
                        f"(default {MAX_G_EVALUATIONS:.0e}, about 3 min); 0 for no limit")
    p.add_argument("--seed", type=cli_seed, default=None,
                   help="integer seed for the secret and the checks (default: fresh entropy, printed)")
    p.add_argument("--out", metavar="FILE", help="where to write the layer (.npz with JSON metadata)")
    # --max-evaluations is the command line's own (0 stands for lwr_hard_instance's None: no limit), so of
    # lwr_hard_instance's rules --sharpness alone is given here.
    declare_options(p, LWRParams, rules={"sharpness": rules_of(lwr_hard_instance)["sharpness"]})
    _limit(p, n="lwe_n", q="q", secret="q", max_evaluations="max_evaluations")


def _add_lwe_attack(sub):
    p = sub.add_parser("lwe-attack", help="attack timings against n, a lattice cost table, and a plot")
    p.set_defaults(handler=_lwe_attack)
    p.add_argument("--q", type=int, default=7, help="modulus (default 7)")
    p.add_argument("--n", type=int, nargs="+", default=[2, 3, 4, 5, 6, 7, 8],
                   help="n for exhaustive search (default 2..8)")
    p.add_argument("--linear-n", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256],
                   help="n for linear algebra on the unrounded variant (default 8..256)")
    p.add_argument("--lattice-n", type=int, nargs="*", default=[4, 6, 8, 10, 12],
                   help="n for the fpylll lattice attack, skipped without fpylll (default 4..12)")
    p.add_argument("--cost-n", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512],
                   help="n for the lattice cost model's table (default 16..512)")
    p.add_argument("--repeats", type=int, default=3, help="fresh secrets per n; medians reported (default 3)")
    p.add_argument("--attention", action="store_true",
                   help="also run our learner and the gradient baseline on the one-slab member (minutes)")
    p.add_argument("--seed", type=cli_seed, default=0, help="seed of the secrets and the attacks (default 0)")
    p.add_argument("--plot", metavar="FILE", help="semi-log plot of attack time against n (needs matplotlib)")
    p.add_argument("--json", metavar="FILE", help="also write the record as JSON")
    # --n, --linear-n and --lattice-n are time_attacks' ns, --cost-n cost_table's (--q is both's). An empty
    # --lattice-n skips that attack, so it takes the entries' rule alone (the list's is: non-empty).
    ns = rules_of(time_attacks)["ns"]
    assert isinstance(ns, Each), "time_attacks declares ns as a list of sizes"
    declare_options(p, time_attacks, rename={"ns": "n"},
                    rules={"linear_n": ns, "lattice_n": ns.rule, "cost_n": rules_of(cost_table)["ns"]})
    _limit(p, q="q", n="exhaustive_n", linear_n="linear_n", lattice_n="lattice_n", cost_n="cost_n", repeats="repeats")


def _add_learn_hard(sub):
    from .learnhard import DEFAULTS, METHODS, learn_hard_study

    p = sub.add_parser("learn-hard", help="Adam and the learner on the hard families: examples and time against d, m")
    p.set_defaults(handler=_learn_hard)
    p.add_argument("--out", metavar="DIR", required=True, help="directory of the study (records, summary, figure)")
    p.add_argument("--d", type=int, nargs="+", default=None,
                   help="token dimensions of the SQ family and its control (default 8 12 16 24)")
    p.add_argument("--m", type=int, nargs="+", default=None, help="heads (default 2 3 4)")
    p.add_argument("--subsets", type=int, default=None,
                   help="distinct hidden subsets per (m, d) cell, shared with the control; at most "
                        "C(d − 1, m − 1) (default 5)")
    p.add_argument("--lwr-n", type=int, nargs="+", default=None, help="LWR secret dimensions (default 2..8)")
    p.add_argument("--q", type=int, default=DEFAULTS["q"], help="LWR modulus (default 7)")
    p.add_argument("--lwr-secrets", type=int, default=DEFAULTS["lwr_secrets"], help="secrets per n (default 1)")
    p.add_argument("--families", nargs="+", default=None, choices=family_names(), metavar="FAMILY",
                   help=f"registered families ({', '.join(family_names())}; `families` lists them); default all")
    p.add_argument("--methods", nargs="+", default=list(METHODS),
                   help="adam, provable and/or exhaustive (default all)")
    p.add_argument("--start", type=int, default=None, help="first training-set size (default 1000)")
    p.add_argument("--max-examples", type=int, default=None,
                   help="largest training set (plus validation) per run (default 32000)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="time budget per run in seconds (default 40)")
    p.add_argument("--target", type=float, default=DEFAULTS["target"],
                   help="relative error of F on fresh inputs that counts as learned (default 1e-3)")
    p.add_argument("--provable-seeds", type=int, default=DEFAULTS["provable_seeds"],
                   help="members per cell the paper's learner runs on (default 1)")
    p.add_argument("--workers", type=int, default=None, help="processes of the local pool (default: all CPUs)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler (extra `distributed`)")
    p.add_argument("--serial", action="store_true", help="run in this process (debugging)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes and budgets, a smoke test in seconds (flags given explicitly still apply)")
    p.add_argument("--seed", type=cli_seed, default=0, help="entropy of every run's seed (default 0)")
    declare_options(p, learn_hard_study, rename={"ds": "d", "ms": "m", "lwr_ns": "lwr_n"})
    _limit(p, d="hard_d", m="sq_m", subsets="subsets", lwr_n="lwr_n", q="q", lwr_secrets="subsets", start="examples",
           max_examples="examples", max_seconds="max_seconds", provable_seeds="subsets", workers="workers")


def _sq(args):
    seed = np.random.SeedSequence(args.seed)
    inst = sq_hard_instance(args.d, args.m, args.subset, variant=args.variant, rng=seed)
    fam = HardFamily(args.d, args.m, variant=args.variant)
    report = inst.assumption_report()
    meta = inst.metadata | {"seed": seed.entropy, "family": fam.summary(tolerance=args.tolerance),
                            "assumptions_failed": report.failed}
    print(f"SQ-hard instance ({args.variant}), d={args.d}, m={args.m}, k=2, hidden S={list(inst.subset)} "
          f"(seed {seed.entropy})")
    print(f"  {inst.metadata['construction']}")
    print(f"  formula: {inst.metadata['formula']}")
    print(f"  family: {fam.size} members; correlation by overlap "
          + ", ".join(f"{j}: {fam.overlap_correlation(j):.3g}" for j in range(fam.r + 1)))
    bound = fam.query_lower_bound(args.tolerance)
    print(f"  a learner asking queries ψ(X)·F_1o/B at τ={args.tolerance} needs >= {bound:.4g}"
          " of them (ours, Bessel's inequality)")
    print(f"  paper's conditions violated (learner.assumptions): {', '.join(report.failed) or 'none'}")
    if args.out:
        save_layer(args.out, inst.layer, metadata=meta)
        print(f"  wrote {args.out}")
    return 0


def _slope_text(slope, width=5):
    """A fitted slope, or a dash where there is none (a slope needs at least two values of d)."""
    return fmt(slope, f"{width}.2f", missing="—".center(width))


def _simulate(args):
    runs = {fam: simulate_queries(args.d, args.m, tolerance=args.tolerance, adversary=args.adversary,
                                  trials=args.trials, family=fam, rng=args.seed) for fam in ("hard", "control")}
    if args.json:  # first, so that nothing measured is lost to a later failure
        write_json(args.json, {"command": "sq-simulate", "seed": args.seed, "runs": runs})
    print(f"correlational SQ search, τ={args.tolerance}, adversary={args.adversary}, {args.trials} hidden subsets "
          "per cell (median queries)")
    print("family   m  " + "  ".join(f"d={d:<7d}" for d in args.d) + "  slope  predicted")
    for fam, run in runs.items():
        for m in args.m:
            cells = [c for c in run["cells"] if c["m"] == m]
            row = "  ".join(f"{c['median']:<9.0f}" for c in cells)
            bad = sum(c["trials"] - c["successes"] for c in cells)
            note = "" if not bad else f"  ({bad} runs did not recover S)"
            print(f"{fam:<8} {m:<2d} {row}  {_slope_text(run['slopes'][m])}  {run['predicted'][m]}{note}")
    print("predicted: m − 1 for the hard family (C(d−1, m−1) candidates, all orthogonal); about 1 for the "
          "sparse-linear control (found coordinate by coordinate)")
    if len(set(args.d)) < 2:
        print("slope: — (a slope in d needs at least two values of --d)")
    if args.json:
        print(f"wrote {args.json}")
    if args.plot:
        _plot(runs, args)
        print(f"wrote {args.plot}")
    return 0


def _lwe(args):
    seed = np.random.SeedSequence(args.seed)
    gen = np.random.default_rng(seed)
    fixed = [f"--{flag}" for flag in ("n", "q", "secret", "max_evaluations") if getattr(args, flag) is not None]
    if args.name is not None and fixed:
        raise ValueError(f"--name {args.name} fixes the instance; {', '.join(f.replace('_', '-') for f in fixed)} "
                         "would be ignored. Drop them or --name.")
    args.n, args.q = 6 if args.n is None else args.n, 7 if args.q is None else args.q
    if args.max_evaluations is None:
        args.max_evaluations = MAX_G_EVALUATIONS
    if args.name is None:
        _check_lwe_work("--n", args.n, args.q)
    if args.name is not None:
        inst = named_lwr_instance(args.name, sharpness=args.sharpness)
    else:
        params = LWRParams(args.n, args.q)
        secret = params.draw_secret(rng=gen) if args.secret is None else params.check_secret(args.secret)
        inst = lwr_hard_instance(secret, args.q, sharpness=args.sharpness,
                                 max_evaluations=args.max_evaluations if args.max_evaluations != 0 else None)
    lay = inst.layout
    print(f"LWE-style instance (learning with rounding, construction ours; hardness assumed), n={lay.n}, q={lay.q}, "
          f"d={lay.d}, k=2, m={lay.m} heads, C={lay.total:g} (seed {seed.entropy})")
    print(f"  secret w = {list(inst.secret)} (Σw = {sum(inst.secret)}), thresholds τ = {list(lay.thresholds)}")
    print(f"  {inst.metadata['formula']}")
    print(f"  sharpness λ = {lay.sharpness:g}: |F_1o − formula| <= {inst.sharpness_error:.3g} on the signal half "
          "(exact, over the reachable sums)")
    checks = {"sharpness_error": inst.sharpness_error}
    if lay.d <= 8:
        X = np.concatenate(list(enumerate_cube(2, lay.d)))
        half = inst.on_signal_half(X)
        err = float(np.abs(inst.layer(X)[:, 0, lay.o] - inst.formula(X))[half].max())
        checks["enumeration_max_error"] = err
        print(f"  enumeration over all 4^{lay.d} inputs: max error on the signal half {err:.3g}")
    if lay.m * lay.d >= 2_000:  # the two forward passes below take seconds (26 s at n = 200): say so first
        print(f"  checking the reduction through the layer on 2 × 10 000 inputs (m = {lay.m}, d = {lay.d}) ...",
              flush=True)
    draw = sample_lwr(inst.params, 10_000, secret=inst.secret, rng=gen)
    X, Y = attention_samples(draw.public, lay, rng=gen)
    checks["reduction_max_error"] = float(np.abs(inst.layer(X) - Y).max())
    test = sample_lwr(inst.params, 10_000, secret=inst.secret, rng=gen).public
    checks["true_layer_lwr_accuracy"] = predictor_accuracy(lwr_predictor(inst.layer, lay, rng=gen), test)
    print(f"  reduction on 10 000 LWR samples: max |F(X) − Y| = {checks['reduction_max_error']:.3g}; "
          f"the layer as LWR predictor: accuracy {checks['true_layer_lwr_accuracy']:.4f}")
    report = inst.assumption_report()
    print(f"  paper's conditions violated (learner.assumptions): {', '.join(report.failed) or 'none'}")
    if args.out:
        meta = inst.metadata | {"seed": seed.entropy, "checks": checks, "assumptions_failed": report.failed}
        save_layer(args.out, inst.layer, metadata=meta)
        print(f"  wrote {args.out}")
    return 0


def _lwe_attack(args):
    from learner.validation import check_memory

    from .attacks import attention_attack, linear_attack_bytes
    from .lattice import REFERENCE_ESTIMATES, fpylll_available, primal_usvp_cost

    if args.q ** max(args.n) > EXHAUSTIVE_LIMIT:  # before the first attack: q^n secrets to try
        raise ValueError(f"`--n` asks exhaustive search for {args.q}^{max(args.n)} secrets, more than the "
                         f"7^10 = {EXHAUSTIVE_LIMIT:,} it is given (ours); got --n {max(args.n)} with --q {args.q}.")
    # Before the first attack: the linear attack's matrices at the largest --linear-n must fit in memory.
    check_memory("--linear-n", linear_attack_bytes(max(args.linear_n), args.q),
                 f"the linear-algebra attack at n = {max(args.linear_n)}", max(args.linear_n))
    record = {"command": "lwe-attack", "q": args.q, "seed": args.seed, "repeats": args.repeats}
    seeds = np.random.SeedSequence(args.seed).spawn(4)
    runs = {"exhaustive": time_attacks(args.n, args.q, attacks=("exhaustive",), repeats=args.repeats, rng=seeds[0]),
            "linear": time_attacks(args.linear_n, args.q, attacks=("linear",), repeats=args.repeats, rng=seeds[1])}
    if args.lattice_n:
        if fpylll_available():
            runs["lattice"] = time_attacks(args.lattice_n, args.q, attacks=("lattice",), repeats=args.repeats,
                                           rng=seeds[2])
        else:
            print("lattice attack skipped: fpylll is not installed (pip install 'provable-attention[lattice]')")
    record["runs"] = runs
    print(f"attacks on 1-bit LWR with binary public vectors, q={args.q}; median of {args.repeats} fresh secrets "
          "(m = heads of a typical secret, Σw ≈ n(q − 1)/2)")
    print(f"{'attack':<11} {'n':>4} {'m':>4} {'median s':>10} {'solved':>7} {'samples':>8}  note")
    for name, run in runs.items():
        for r in run["rows"]:
            note = ""
            if "rounded_control_successes" in r:
                note = f"unrounded labels; on rounded labels {r['rounded_control_successes']}/{r['repeats']}"
            print(f"{name:<11} {r['n']:>4} {r['m_typical']:>4} {r['median_seconds']:>10.4f} "
                  f"{r['successes']:>3}/{r['repeats']:<3} {r['samples']:>8}  {note}")
    for name, run in runs.items():
        g = run["growth"][name]
        print(f"fitted growth of {name} time: × {g['base']:.3g} per unit of n, or n^{g['power']:.2f} "
              f"({g['points']} points above 2 ms)")
    rows = cost_table(args.cost_n, args.q)
    record["cost_table"] = [r.__dict__ for r in rows]
    print(f"primal uSVP cost model (ours, ADPS16 condition + GSA; rounding modelled as uniform error, binary "
          f"public vectors treated as uniform mod q — an assumption), q={args.q}:")
    print(f"{'n':>5} {'heads(max)':>10} {'beta':>6} {'dim':>6} {'log2 core-SVP':>14} {'log2 q^n':>9}")
    for r in rows:
        beta = "-" if r.beta is None else f"{r.beta}{'*' if r.at_floor else ''}"
        dim, core = fmt(r.dimension, missing="-"), fmt(r.log2_core_svp, ".1f", missing="-")
        print(f"{r.n:>5} {r.heads:>10} {beta:>6} {dim:>6} {core:>14} {r.log2_exhaustive:>9.1f}")
    print("  (* = at the model's smallest block size; heads(max) = switches up to n(q − 1))")
    checks = []
    for name, ref in REFERENCE_ESTIMATES.items():
        got = primal_usvp_cost(ref.n, ref.q, ref.sigma_s, ref.sigma_e, m=ref.m)
        checks.append({"name": name, "reference_beta": ref.beta, "model_beta": got.beta,
                       "reference_dimension": ref.dimension, "model_dimension": got.dimension})
        print(f"  model check, {name}: β = {got.beta} (reference {ref.beta}), d = {got.dimension} "
              f"(reference {ref.dimension}); {ref.source}")
    record["model_checks"] = checks
    if args.attention:
        from .lwr import named_lwr_instance

        inst = named_lwr_instance("one-slab")
        record["attention"] = []
        for method, n_samples in (("provable", 4_000_000), ("gradient", 25_000)):
            out = attention_attack(inst, method=method, rng=seeds[3], n_samples=n_samples)
            record["attention"].append(out.to_dict())
            print(f"one-slab member (n=2, q=3, m=2) — {out.message}; {out.seconds:.1f} s, {out.samples:,} examples")
    if args.json:
        write_json(args.json, record)
        print(f"wrote {args.json}")
    if args.plot:
        _plot_attacks(runs, args)
        print(f"wrote {args.plot}")
    return 0


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ValueError("--plot needs matplotlib: pip install 'provable-attention[plot]'") from exc
    return plt


def _plot_attacks(runs, args):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 5), layout="constrained")
    for (name, run), style in zip(runs.items(), ("-o", "--s", ":^"), strict=False):
        ns = [r["n"] for r in run["rows"]]
        ax.semilogy(ns, [r["median_seconds"] for r in run["rows"]], style,
                    label=f"{name} (× {run['growth'][name]['base']:.2g} per n)")
    ax.set_xlabel("n (secret dimension; heads m ≈ n for a typical secret)")
    ax.set_ylabel("median seconds")
    ax.set_title(f"attacks on 1-bit LWR, binary public vectors, q={args.q}")
    fig.legend(loc="outside lower center", ncol=2, frameon=False)  # below the axes, off the data
    save_figure(fig, args.plot)
    plt.close(fig)


def _plot(runs, args):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 5), layout="constrained")
    for fam, style in (("hard", "-o"), ("control", "--x")):
        for m in args.m:  # a colour per line: the family by its style, m by the colour cycle
            cells = [c for c in runs[fam]["cells"] if c["m"] == m]
            ax.loglog([c["d"] for c in cells], [c["median"] for c in cells], style,
                      label=f"{fam} m={m} (slope {_slope_text(runs[fam]['slopes'][m], 0)})")
    ax.set_xlabel("d")
    ax.set_ylabel("median queries")
    ax.set_title(f"SQ correlational search, τ={args.tolerance}")
    fig.legend(loc="outside lower center", ncol=2, frameon=False)  # below the axes, off the data
    save_figure(fig, args.plot)
    plt.close(fig)


def _check_backend_options(args):
    """Refuse ``learn-hard``'s backend flags that would be dropped or fail only after the study has started.

    An empty ``--scheduler`` would fall back to the local pool, and ``--workers``
    means nothing on a Dask cluster (its workers are its own); without Dask the
    import would fail inside the sweep with a traceback.
    """
    if args.serial and args.workers is not None:
        raise ValueError(f"--workers sizes the local pool, which --serial does not use; got --workers {args.workers} "
                         "with --serial.")
    if args.scheduler is None:
        return
    if not args.scheduler.strip():
        raise ValueError(f"--scheduler must be a Dask scheduler address (e.g. tcp://host:8786); "
                         f"got an empty address --scheduler {args.scheduler!r}.")
    if args.serial:
        raise ValueError("give at most one of --scheduler and --serial.")
    if args.workers is not None:
        raise ValueError(f"give at most one of --workers and --scheduler: the Dask cluster's workers are its own; "
                         f"got --workers {args.workers} --scheduler {args.scheduler}.")
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ValueError("--scheduler needs Dask: pip install 'provable-attention[distributed]'") from None
    from learner.parallel import check_scheduler

    check_scheduler(args.scheduler, "--scheduler")  # an unreachable scheduler is one line, before --out is claimed


def _learn_hard(args):

    from learner.errors import SweepInterrupted, SweepLocked
    from learner.parallel import interrupt_on_sigterm

    from .learnhard import DEFAULTS, QUICK, learn_hard_study

    interrupt_on_sigterm()  # like Ctrl-C: workers stopped, finished runs kept
    _check_backend_options(args)
    backend = "dask" if args.scheduler is not None else "serial" if args.serial else "local"
    base = QUICK if args.quick else DEFAULTS
    given = {"ds": args.d, "ms": args.m, "subsets": args.subsets, "lwr_ns": args.lwr_n, "start": args.start,
             "max_examples": args.max_examples, "max_seconds": args.max_seconds}
    kw: dict[str, Any] = {k: v if v is not None else base[k] for k, v in given.items()}
    kw |= {"q": args.q, "lwr_secrets": args.lwr_secrets, "families": args.families, "methods": args.methods,
           "target": args.target, "provable_seeds": args.provable_seeds}
    if args.quick:
        kw |= {"adam_options": QUICK["adam"], "provable_options": QUICK["provable"],
               "provable_lwr_samples": QUICK["provable_lwr_samples"]}
    try:
        result = learn_hard_study(args.out, seed=args.seed, backend=backend, workers=args.workers,
                                  scheduler=args.scheduler, progress=not args.no_progress, **kw)
    except SweepLocked as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepInterrupted as exc:
        print(f"\n{exc}", file=sys.stderr)
        return 130
    print_study(result, args.out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m lowerbounds``: parse ``argv``, run the subcommand, print its results.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 2 for a bad value or file (one ``error:`` line on stderr, naming the
        flag), a locked study directory or memory run out (one line), 130 for Ctrl-C (one line) or an
        interrupted ``learn-hard`` sweep.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_output_options(parser, args)
        return args.handler(args)
    except (ValueError, TypeError, FileNotFoundError, FileFormatError, ConnectionError) as exc:
        print(f"error: {flag_message(parser, args.command, str(exc))}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, MemoryError) as exc:  # one line, as `python -m learner` ends
        return end_in_one_line(parser, args, exc)

