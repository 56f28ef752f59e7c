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
    """What :func:`correlational_search` found, and how many queries it asked.

    Parameters
    ----------
    found : tuple of tuple of int
        The characters ``U`` whose answer exceeded ``τ`` in absolute value, in the order asked.
    coefficients : tuple of float
        Their estimated Fourier coefficients, ``B`` times the answer.
    queries : int
        Queries the search asked.
    complete : bool
        True when the search stopped because it accounted for the whole factor (or finished the degree at
        which it found something); False when it hit ``max_queries`` or asked every degree up to
        ``max_degree`` without finding anything.

    See Also
    --------
    correlational_search : Produces it.
    simulate_queries : Collects its query counts over many hidden subsets.

    Examples
    --------
    >>> from lowerbounds import SQOracle, correlational_search, sq_hard_instance
    >>> oracle = SQOracle(sq_hard_instance(10, 3, subset=(3, 7)), tolerance=0.05)
    >>> out = correlational_search(oracle, max_degree=2, rng=0)
    >>> out.found, round(out.coefficients[0], 6), out.complete
    (((3, 7),), 1.0, True)
    """

    found: tuple
    coefficients: tuple
    queries: int
    complete: bool


def correlational_search(oracle: SQOracle, *, max_degree: int, rng: SeedLike = None,
                         max_queries: int = MAX_QUERIES) -> SearchOutcome:
    """Run the degree-ascending correlational search against ``oracle``; see the module docstring.

    Parameters
    ----------
    oracle : SQOracle
        Answers the search's :class:`CharacterQuery` queries; its count goes on from where it is.
    max_degree : int
        Largest character size asked (``m − 1`` finds a member of the hard family).
    rng : seed or Generator, optional
        Orders the candidates of each degree.
    max_queries : int
        The search gives up after this many queries (default ``MAX_QUERIES`` = 2 000 000).

    Returns
    -------
    SearchOutcome
        The characters found, their coefficients, the queries asked and whether the search completed.

    See Also
    --------
    SQOracle : The oracle searched.
    simulate_queries : The search over many hidden subsets, against d and m.
    HardFamily.query_lower_bound : What any SQ learner needs on the hard family.

    Examples
    --------
    >>> from lowerbounds import SQOracle, SparseLinearTarget, sq_hard_instance
    >>> hard = correlational_search(SQOracle(sq_hard_instance(10, 3, subset=(3, 7)), tolerance=0.05),
    ...                             max_degree=2, rng=0)
    >>> control = correlational_search(SQOracle(SparseLinearTarget(10, (3, 7)), tolerance=0.05), max_degree=2, rng=0)
    >>> hard.found, hard.queries, control.found, control.queries  # the control is found among 9 singletons
    (((3, 7),), 19, ((3,), (7,)), 4)
    """
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
    """Least-squares slope of ``log(count)`` against ``log(d)``.

    Parameters
    ----------
    ds : array_like
        Dimensions, positive.
    counts : array_like
        Query counts (or other costs) at those dimensions, positive.

    Returns
    -------
    float
        The slope: ``count ∝ d^slope``.

    Raises
    ------
    ValueError
        Fewer than two points, or a non-positive value.

    See Also
    --------
    simulate_queries : Fits it per m on its median counts.
    lowerbounds.attacks.fit_growth : The exponential fit ``seconds ≈ a · base^n`` of the attacks.

    Examples
    --------
    >>> round(fit_slope([8, 16, 32], [28, 120, 496]), 2)  # C(d − 1, 2) grows like d²
    2.07
    """
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
        Dimensions (``d >= 3``) and head counts (``m >= 2``; ``m − 1 < d − 1``); repeats are measured again.
    tolerance : float
        The oracle's ``τ`` (default 0.05).
    adversary : {"reference", "random"}
        The oracle's adversary (default ``"reference"``).
    trials : int
        Hidden subsets (and search orders) per cell; medians are reported.
    family : {"hard", "control"}
        The interpolation family or the sparse-linear negative control (sparsity ``m − 1``).
    rng : int, optional
        Seed of a :class:`numpy.random.SeedSequence`; each ``(m, d)`` cell spawns one child per trial.

    Returns
    -------
    dict
        ``cells`` (one record per (m, d): all counts, median, success count,
        ``C(d−1, m−1)``), ``slopes`` (fitted on medians, per m; ``None``
        with one d), ``predicted`` (``m − 1`` for the hard family, 1 for the
        control) and the settings.

    See Also
    --------
    correlational_search : The learner of each trial.
    HardFamily : The hard family's exact correlations and query lower bound.
    fit_slope : The slope fit.

    Examples
    --------
    >>> hard = simulate_queries([8, 16, 32], [3], trials=15, rng=0)
    >>> control = simulate_queries([8, 16, 32], [3], trials=15, rng=0, family="control")
    >>> [c["median"] for c in hard["cells"]], round(hard["slopes"][3], 1), round(control["slopes"][3], 1)
    ([17.0, 71.0, 234.0], 1.9, 1.0)
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
