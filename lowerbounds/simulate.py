"""Query-complexity simulator: an SQ learner against :class:`~lowerbounds.oracle.SQOracle` (ours).

The learner is a degree-ascending *correlational search*: for degrees
``l = 1, 2, …, m − 1`` it asks one :class:`CharacterQuery` per candidate set
``U ⊆ [d] \\ {t}`` of size ``l`` (in a seeded random order), keeps every ``U``
whose answer exceeds ``τ`` in absolute value (such an answer cannot come from a
zero correlation), and stops once the found coefficients account for the
whole unit-norm factor ``g`` (``Σ (B a)² >= 1 − 10⁻⁶``, with ``B`` the label bound;
under the random adversary the estimate is noisy, so the search may stop
early or finish the degree at which it found something, then stop). On the
hard family every degree below ``m − 1`` answers zero and the hidden set is one
of ``C(d − 1, m − 1)``, so it needs ``~C(d − 1, m − 1)/2`` queries: slope ``m − 1``
on log-log axes (the lower bound of :class:`HardFamily` says no SQ learner
escapes this by more than the factor ``(Bτ)²/2``). The negative control
(:class:`SparseLinearTarget`, same sparsity) is found among the ``d − 1``
degree-1 candidates: slope about 1 for every m.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from learner.hints import SeedLike
from learner.validation import Each, Integer, Real, check_int, check_rng, declare

from .oracle import CharacterQuery, SparseLinearTarget, SQOracle
from .sq import sq_hard_instance

__all__ = ["SearchOutcome", "correlational_search", "fit_slope", "simulate_queries"]

#: The search gives up after this many queries (ours, not tuned: a guard on time; a run that hits it is reported
#: as failed).
MAX_QUERIES = 2_000_000


@dataclass(frozen=True)
class SearchOutcome:
    found: tuple
    coefficients: tuple
    queries: int
    complete: bool


def correlational_search(oracle: SQOracle, *, max_degree: int, rng: SeedLike = None,
                         max_queries: int = MAX_QUERIES) -> SearchOutcome:
    """Run the degree-ascending correlational search against ``oracle``; see the module docstring."""
    max_degree = check_int("max_degree", max_degree)
    target = oracle.target
    coords = [j for j in range(target.d) if j != target.t]
    gen = check_rng(rng)
    tau, B = oracle.tolerance, oracle.label_bound
    found: list[tuple[int, ...]]
    coefs: list[float]
    found, coefs, mass = [], [], 0.0
    start = oracle.queries
    for degree in range(1, max_degree + 1):
        cands = list(combinations(coords, degree))
        for idx in gen.permutation(len(cands)):
            if oracle.queries - start >= max_queries:
                return SearchOutcome(tuple(found), tuple(coefs), oracle.queries - start, False)
            a = oracle.query(CharacterQuery(cands[idx]))
            if abs(a) > tau:
                found.append(tuple(cands[idx]))
                coefs.append(a * B)
                mass += (B * a) ** 2
                if mass >= 1.0 - 1e-6:
                    return SearchOutcome(tuple(found), tuple(coefs), oracle.queries - start, True)
        if found:  # every candidate of this degree asked: all detectable characters are in hand
            return SearchOutcome(tuple(found), tuple(coefs), oracle.queries - start, True)
    return SearchOutcome(tuple(found), tuple(coefs), oracle.queries - start, False)


def fit_slope(ds: ArrayLike, counts: ArrayLike) -> float:
    """Least-squares slope of ``log(count)`` against ``log(d)``."""
    ds = np.asarray(ds, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if ds.size < 2 or np.any(ds <= 0) or np.any(counts <= 0):
        raise ValueError(f"need at least two positive (d, count) pairs; got d={ds.tolist()}, counts={counts.tolist()}.")
    return float(np.polyfit(np.log(ds), np.log(counts), 1)[0])


# ds and ms need not be distinct: a repeated value is measured again.
@declare(ds=Each(Integer(3), distinct=False), ms=Each(Integer(2), distinct=False), tolerance=Real(),
         trials=Integer())
def simulate_queries(ds: Sequence[int], ms: Sequence[int], *, tolerance: float = 0.05, adversary: str = "reference",
                     trials: int = 25, family: str = "hard", rng: int | None = None) -> dict[str, Any]:
    """Queries the search needs, per ``(m, d)``, over ``trials`` random hidden subsets.

    Parameters
    ----------
    ds, ms : sequences of int
        Dimensions and head counts (``m >= 2``; ``m − 1 < d − 1``).
    tolerance, adversary :
        Passed to :class:`SQOracle`.
    trials : int
        Hidden subsets (and search orders) per cell; medians are reported.
    family : {"hard", "control"}
        The interpolation family or the sparse-linear negative control (sparsity ``m − 1``).
    rng : seed

    Returns
    -------
    dict
        ``cells`` (one record per (m, d): all counts, median, success count,
        ``C(d−1, m−1)``), ``slopes`` (fitted on medians, per m) and the settings.
    """
    if family not in ("hard", "control"):
        raise ValueError(f"`family` must be 'hard' or 'control'; got family={family!r}.")
    seq = np.random.SeedSequence(rng)
    cells, slopes = [], {}
    for m in ms:
        med = []
        for d in ds:
            if m - 1 >= d - 1:
                raise ValueError(f"m − 1 = {m - 1} hidden coordinates need d − 1 > m − 1; got d={d}.")
            counts, ok = [], 0
            for child in seq.spawn(trials):
                gen = np.random.default_rng(child)
                S = tuple(sorted(gen.choice(np.arange(1, d), size=m - 1, replace=False).tolist()))
                target = sq_hard_instance(d, m, S) if family == "hard" else SparseLinearTarget(d, S)
                oracle = SQOracle(target, tolerance=tolerance, adversary=adversary, rng=gen)
                out = correlational_search(oracle, max_degree=m - 1, rng=gen)
                counts.append(out.queries)
                expected = {S} if family == "hard" else {(j,) for j in S}
                ok += int(out.complete and set(out.found) == expected)
            median = float(np.median(counts))
            med.append(median)
            cells.append({"m": m, "d": d, "counts": counts, "median": median, "successes": ok, "trials": trials,
                          "candidates": comb(d - 1, m - 1)})
        slopes[m] = fit_slope(ds, med) if len(ds) >= 2 else None
    return {"family": family, "tolerance": tolerance, "adversary": adversary, "ds": ds, "ms": ms,
            "cells": cells, "slopes": slopes, "predicted": {m: (m - 1 if family == "hard" else 1) for m in ms}}
