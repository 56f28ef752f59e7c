"""Command line of :mod:`lowerbounds`: ``python -m lowerbounds {sq,sq-simulate}``.

Library functions never parse ``argv``; this module does, calls them, and prints.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from learner import FileFormatError, save_layer, write_json

from .family import HardFamily
from .simulate import simulate_queries
from .sq import sq_hard_instance

__all__ = ["build_parser", "main"]


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m lowerbounds",
                                     description="Hard instances behind the lower bounds (constructions ours).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sq", help="write one SQ-hard two-token instance (layer + metadata)")
    p.add_argument("--d", type=int, default=16, help="token dimension (default 16)")
    p.add_argument("--m", type=int, default=3, help="heads; the hidden subset has m − 1 coordinates (default 3)")
    p.add_argument("--variant", choices=("interpolation", "steps"), default="interpolation")
    p.add_argument("--subset", type=int, nargs="+", default=None, help="hidden coordinates (default: drawn with --seed)")
    p.add_argument("--seed", type=int, default=None, help="integer seed for the hidden subset (default: fresh, printed)")
    p.add_argument("--out", metavar="FILE", help="where to write the layer (.npz with JSON metadata)")
    p.add_argument("--tolerance", type=float, default=0.05, help="τ for the printed query lower bound (default 0.05)")
    p = sub.add_parser("sq-simulate", help="queries a correlational SQ learner needs, against d, for several m")
    p.add_argument("--d", type=int, nargs="+", default=[16, 24, 32, 48, 64], help="dimensions (default 16 24 32 48 64)")
    p.add_argument("--m", type=int, nargs="+", default=[2, 3, 4], help="head counts (default 2 3 4)")
    p.add_argument("--tolerance", type=float, default=0.05, help="oracle tolerance τ (default 0.05)")
    p.add_argument("--adversary", choices=("reference", "random"), default="reference")
    p.add_argument("--trials", type=int, default=25, help="hidden subsets per cell; medians reported (default 25)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", metavar="FILE", help="log-log plot of median queries against d (needs matplotlib)")
    p.add_argument("--json", metavar="FILE", help="also write the record as JSON")
    return parser


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
    print(f"  a learner asking queries ψ(X)·F_1o/B at τ={args.tolerance} needs >= {fam.query_lower_bound(args.tolerance):.4g}"
          " of them (ours, Bessel's inequality)")
    print(f"  paper's conditions violated (learner.assumptions): {', '.join(report.failed) or 'none'}")
    if args.out:
        save_layer(args.out, inst.layer, metadata=meta)
        print(f"  wrote {args.out}")
    return 0


def _simulate(args):
    runs = {fam: simulate_queries(args.d, args.m, tolerance=args.tolerance, adversary=args.adversary,
                                  trials=args.trials, family=fam, rng=args.seed) for fam in ("hard", "control")}
    print(f"correlational SQ search, τ={args.tolerance}, adversary={args.adversary}, {args.trials} hidden subsets "
          "per cell (median queries)")
    print("family   m  " + "  ".join(f"d={d:<7d}" for d in args.d) + "  slope  predicted")
    for fam, run in runs.items():
        for m in args.m:
            cells = [c for c in run["cells"] if c["m"] == m]
            row = "  ".join(f"{c['median']:<9.0f}" for c in cells)
            bad = sum(c["trials"] - c["successes"] for c in cells)
            note = "" if not bad else f"  ({bad} runs did not recover S)"
            print(f"{fam:<8} {m:<2d} {row}  {run['slopes'][m]:5.2f}  {run['predicted'][m]}{note}")
    print("predicted: m − 1 for the hard family (C(d−1, m−1) candidates, all orthogonal); about 1 for the "
          "sparse-linear control (found coordinate by coordinate)")
    if args.json:
        write_json(args.json, {"command": "sq-simulate", "seed": args.seed, "runs": runs})
    if args.plot:
        _plot(runs, args)
        print(f"wrote {args.plot}")
    return 0


def _plot(runs, args):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ValueError("--plot needs matplotlib: pip install 'provable-attention[plot]'") from exc
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for fam, style in (("hard", "-o"), ("control", "--x")):
        for m in args.m:
            cells = [c for c in runs[fam]["cells"] if c["m"] == m]
            ax.loglog([c["d"] for c in cells], [c["median"] for c in cells], style,
                      label=f"{fam} m={m} (slope {runs[fam]['slopes'][m]:.2f})")
    ax.set_xlabel("d")
    ax.set_ylabel("median queries")
    ax.set_title(f"SQ correlational search, τ={args.tolerance}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.plot)
    plt.close(fig)


def main(argv=None):
    """Entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    handler = {"sq": _sq, "sq-simulate": _simulate}[args.command]
    try:
        return handler(args)
    except (ValueError, TypeError, FileNotFoundError, FileFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
