"""The growth study: run time and examples against m at fixed (d, k), per phase, with the model chosen out of sample.

The study's question is how the learner's cost grows with the number of heads m. Everything that could change with m
besides m itself is held fixed (ours): the token dimension and tokens per sequence of each *line* of cells, phase 4's
tolerance (:data:`GROWTH_OPTIONS`: 0.1 in every cell, not the pilot's choice) and phase 6's search (variable
projection in every cell; at m = 1 the hull has one point and every search is the same). The lines
(:data:`GROWTH_LINES`) are m = 1..6 at (d, k) = (16, 2), m = 1..10 at (24, 2) and m = 1..13 at (32, 2) (each the
largest m that :func:`learner.assumptions.check_setting` calls sound at its d), a k axis at d = 24, and the
paper's enumeration at m = 2 and 3 (``exhaustive``, which holds the price of phase 6 to measured runs).

The analysis (:func:`growth_of`) fits, for the total and for each phase, time and examples, five shapes of
``log(median)`` against m (:data:`GROWTH_SHAPES`), chooses the one with the smallest leave-one-cell-out error (each
cell's median predicted from the others: the error of predicting an m the fit has not seen), and resamples the line
(bootstrap: the cells, then the runs within each cell drawn) for intervals on the per-head factor and on the
curvature of ``log(median)`` in m (whether growth speeds up or slows), and the runs within each cell for how often
each shape would have been chosen. The study design, the shapes and the intervals are ours; the paper proves a
``(dk)^{O(m³)}`` bound and reports no experiments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..tables import fmt, markdown_table
from ..validation import Integer, Real, Seed, declare
from .frontier import failure_reason

__all__ = ["BOOTSTRAP", "CHECK_LINES", "FRONTIER_BUDGET", "GROWTH_LINES", "GROWTH_OPTIONS", "GROWTH_SHAPES", "LEVEL",
           "LINE_OPTIONS", "NEGLIGIBLE", "PHASES", "QUANTITIES", "RUN_BUDGET", "TIE", "budgeted_frontier",
           "cells_markdown", "choose_shape", "fit_growth_shapes", "frontier_markdown", "growth_of", "growth_sentence",
           "growth_study", "growth_summary", "growth_table", "headline", "k_axis_table", "line_end", "line_values",
           "per_head_factor", "plot_growth", "pricing_of", "quick_blocks", "summary_markdown"]

#: The learner's options in every cell of the study (ours): phase 4's tolerance fixed at 0.1 rather than the
#: pilot's choice (which moves from 0.015 at m <= 2 to 0.08 and then 0.1 as the forecast grows), and phase 6's
#: search fixed at variable projection (``"auto"`` enumerates the grid at m <= 2).
GROWTH_OPTIONS: dict[str, Any] = {"refined_tol": 0.1, "search": "vp"}

#: The lines of cells (ours): name -> the grid blocks of :func:`learner.study.frontier.parse_grid`. Ten layers per
#: cell where a run takes under about a minute on two workers, three where runs take many minutes: at d = 32 the
#: first layer took 2.5 minutes at m = 9 and 17 and 31 at m = 12 and 13 (two rounds of phases 3–5 there), and on the
#: k axis 12 minutes at (m, k) = (8, 3) and 16 at (6, 4) (on this machine).
GROWTH_LINES: dict[str, tuple[str, ...]] = {
    "d16": ("m=1..6,k=2,d=16,seeds=10",),
    "d24": ("m=1..10,k=2,d=24,seeds=10",),
    "d32": ("m=1..13,k=2,d=32,seeds=3",),
    "k": ("m=2,k=3..4,d=24,seeds=10", "m=4,k=3..4,d=24,seeds=10", "m=6,k=3..4,d=24,seeds=3",
          "m=8,k=3..4,d=24,seeds=3"),
    "exhaustive": ("m=2..3,k=2,d=24,seeds=3",),
}
#: The options a line adds to :data:`GROWTH_OPTIONS` (ours): ``exhaustive`` runs the paper's enumeration of the
#: net (``search="exhaustive"``) where it fits in minutes here, m = 2 and 3 at d = 24 (790,244 tuples at m = 3),
#: to hold the price of :mod:`learner.study.pricing` to measured runs.
LINE_OPTIONS: dict[str, dict[str, Any]] = {"exhaustive": {"search": "exhaustive", "max_tuples": 1_000_000}}
#: Lines that check something rather than measure a growth: not fitted.
CHECK_LINES = frozenset({"exhaustive"})

#: The learner's phases as its records name them (``timings`` and ``diagnostics`` keys).
PHASES = ("1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt", "5_span", "6_search")


def _phase_seconds(phase: str) -> Callable[[Mapping[str, Any]], float | None]:
    return lambda rec: (rec.get("timings") or {}).get(phase)


def _phase_examples(phase: str) -> Callable[[Mapping[str, Any]], float | None]:
    return lambda rec: ((rec.get("diagnostics") or {}).get(phase) or {}).get("examples")


#: What is fitted (name -> the value of one run record): the run's total seconds and examples drawn, and each
#: phase's seconds and examples (phase 5 draws none).
QUANTITIES: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "seconds": lambda rec: (rec.get("timings") or {}).get("total"),
    "examples": lambda rec: rec.get("examples_drawn"),
    **{f"seconds {p}": _phase_seconds(p) for p in PHASES},
    **{f"examples {p}": _phase_examples(p) for p in PHASES if p != "5_span"},
}

#: The shapes of ``log(median)`` against m (ours): name -> the features of m besides the constant. At fixed
#: (d, k), ``exp(b·m·log(dk))`` is ``exp(b'·m)`` and ``(dk)^(b·m³)`` is ``exp(b'·m³)``: the paper's bound is the
#: cubic shape's kind of growth.
GROWTH_SHAPES: dict[str, Callable[[float], list[float]]] = {
    "exp(b·m)": lambda m: [m],
    "exp(b·m²)": lambda m: [m * m],
    "exp(b·m³)": lambda m: [m**3],
    "m^b": lambda m: [math.log(m)],
    "exp(b·m + c·m²)": lambda m: [m, m * m],
}

#: Bootstrap resamples (ours: enough for the 2.5 % and 97.5 % quantiles to move by well under their spread).
BOOTSTRAP = 1000
#: The intervals' coverage (ours: the usual two-sided 95 %).
LEVEL = 0.95
#: Leave-one-out errors closer than this are a tie, won by the shape listed first (ours: a constant quantity fits
#: every shape to rounding; exp(b·m), listed first, is then chosen with b = 0).
TIE = 1e-9
#: A curvature interval inside ±NEGLIGIBLE (natural log per head²) is no change (ours: a constant quantity's
#: curvature is rounding, about 1e-14).
NEGLIGIBLE = 1e-9


def line_values(records: Iterable[Mapping[str, Any]], quantity: str, *, d: int, k: int,
                success_tol: float = 1e-3) -> dict[int, list[float]]:
    """``{m: values}`` of one quantity over the successful runs of the line (d, k).

    Parameters
    ----------
    records : iterable of mapping
        Run records of the study (``spec["role"] == "eval"`` only are counted).
    quantity : str
        A key of :data:`QUANTITIES`.
    d, k : int
        The line.
    success_tol : float
        The common success criterion (:func:`learner.study.frontier.failure_reason`): a failed run's time
        measures where it stopped, not what learning costs.

    Returns
    -------
    dict
        ``{m: [value, ...]}`` sorted by m, positive values only; cells without one are left out.
    """
    if quantity not in QUANTITIES:
        raise ValueError(f"`quantity` must be one of {sorted(QUANTITIES)}; got quantity={quantity!r}.")
    get = QUANTITIES[quantity]
    out: dict[int, list[float]] = {}
    for rec in records:
        spec = rec["spec"]
        if spec["role"] != "eval" or spec["d"] != d or spec["k"] != k:
            continue
        if failure_reason(rec, success_tol) is not None:
            continue
        value = get(rec)
        if value is not None and value > 0:
            out.setdefault(int(spec["m"]), []).append(float(value))
    return dict(sorted(out.items()))


def _design(shape: str, ms: Iterable[float]) -> np.ndarray:
    return np.array([[1.0, *GROWTH_SHAPES[shape](m)] for m in ms])


def _fit(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    if len(y) < x.shape[1] or np.linalg.matrix_rank(x) < x.shape[1]:
        return None
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return coef


def _loo(x: np.ndarray, y: np.ndarray) -> float | None:
    """Leave-one-out rms: each point predicted by the least-squares fit to the others, from the one fit to all
    (residual ``r_i / (1 − h_ii)``, ``h`` the hat matrix); None with too few points or a fold of lower rank
    (``h_ii`` = 1: the point alone fixes a coefficient)."""
    n, p = x.shape
    if n <= p or np.linalg.matrix_rank(x) < p:
        return None
    q, _ = np.linalg.qr(x)
    h = np.sum(q * q, axis=1)
    if np.any(h > 1 - 1e-9):
        return None
    residual = y - q @ (q.T @ y)
    return float(np.sqrt(np.mean(np.square(residual / (1 - h)))))


def per_head_factor(shape: str, coefficients: Sequence[float] | np.ndarray, m: float) -> float:
    """The fitted factor from ``m − 1`` heads to ``m``: ``exp(f(m) − f(m − 1))`` under ``shape``.

    Parameters
    ----------
    shape : str
        A key of :data:`GROWTH_SHAPES`.
    coefficients : sequence of float
        ``(a, b[, c])`` of the fit of ``log(value) = a + b·f₁(m) [+ c·f₂(m)]``.
    m : float
        The number of heads reached (at least 2).

    Returns
    -------
    float

    Examples
    --------
    >>> round(per_head_factor("exp(b·m)", [0.0, math.log(3.0)], 7), 12)
    3.0
    >>> round(per_head_factor("m^b", [0.0, 2.0], 4), 12)  # (4/3)^2
    1.777777777778
    """
    if m < 2:
        raise ValueError(f"`m` must be at least 2 (the factor from m − 1 heads to m); got m={m!r}.")
    f = GROWTH_SHAPES[shape]
    step = np.array(f(m)) - np.array(f(m - 1))
    return float(math.exp(float(np.dot(np.asarray(coefficients)[1:], step))))


def fit_growth_shapes(values: Mapping[int, Sequence[float] | np.ndarray]) -> list[dict[str, Any]]:
    """Fit every shape of :data:`GROWTH_SHAPES` to ``log`` of the cell medians of ``values``.

    Parameters
    ----------
    values : mapping
        ``{m: [value, ...]}`` (:func:`line_values`).

    Returns
    -------
    list of dict
        One per shape, in the order of :data:`GROWTH_SHAPES`: ``shape``, ``cells``, ``coefficients`` (None with
        too few cells), ``rms`` and ``loo_rms`` (natural log; None where not defined), ``first_factor`` and
        ``last_factor`` (:func:`per_head_factor` at the line's second and last m).

    Examples
    --------
    >>> fits = {f["shape"]: f for f in fit_growth_shapes({m: [2.0 * 3.0**m] for m in range(1, 7)})}
    >>> round(fits["exp(b·m)"]["last_factor"], 9), round(fits["exp(b·m)"]["loo_rms"], 9)
    (3.0, 0.0)
    """
    ms = sorted(m for m, v in values.items() if len(v))
    y = np.log([float(np.median(values[m])) for m in ms]) if ms else np.zeros(0)
    out = []
    for shape in GROWTH_SHAPES:
        x = _design(shape, ms) if ms else np.zeros((0, 1 + len(GROWTH_SHAPES[shape](1.0))))
        coef = _fit(x, y) if ms else None
        row: dict[str, Any] = {"shape": shape, "cells": len(ms), "coefficients": None, "rms": None,
                               "loo_rms": None, "first_factor": None, "last_factor": None}
        if coef is not None:
            res = y - x @ coef
            row |= {"coefficients": [float(c) for c in coef], "rms": float(np.sqrt(np.mean(res**2))),
                    "loo_rms": _loo(x, y)}
            if len(ms) >= 2:
                row |= {"first_factor": per_head_factor(shape, coef, ms[1]),
                        "last_factor": per_head_factor(shape, coef, ms[-1])}
        out.append(row)
    return out


def choose_shape(fits: Sequence[Mapping[str, Any]]) -> str | None:
    """The shape with the smallest leave-one-out error (the first listed on a tie, :data:`TIE`).

    Parameters
    ----------
    fits : sequence of mapping
        :func:`fit_growth_shapes`' rows (``shape`` and ``loo_rms`` are read).

    Returns
    -------
    str or None
        The shape's name, or None when no row has a leave-one-out error.

    Examples
    --------
    >>> choose_shape([{"shape": "a", "loo_rms": 0.3}, {"shape": "b", "loo_rms": 0.2}, {"shape": "c", "loo_rms": None}])
    'b'
    """
    scored = [f for f in fits if f.get("loo_rms") is not None]
    if not scored:
        return None
    best = min(f["loo_rms"] for f in scored)
    return next(f["shape"] for f in scored if f["loo_rms"] <= best + TIE)


def _interval(samples: Sequence[float]) -> list[float] | None:
    """The two-sided percentile interval at :data:`LEVEL` (None without samples)."""
    s = np.asarray([v for v in samples if v is not None and np.isfinite(v)], dtype=float)
    if not len(s):
        return None
    tail = (1 - LEVEL) / 2
    return [float(np.quantile(s, tail)), float(np.quantile(s, 1 - tail))]


def _resampled_log_medians(arrays: Sequence[np.ndarray], rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n, cells)``: the log of each cell's median over its runs drawn with replacement, ``n`` times."""
    out = np.empty((n, len(arrays)))
    for j, a in enumerate(arrays):
        out[:, j] = np.log(np.median(a[rng.integers(0, len(a), (n, len(a)))], axis=1))
    return out


def _bootstrap(values: Mapping[int, Sequence[float]], rng: np.random.Generator, n: int) -> dict[str, Any]:
    """``n`` resamples of the line, for the intervals and for how stable the choice of shape is.

    Two resamplings (ours). For the choice: the runs within each cell (would the noise of the cell medians change
    the shape chosen?); the cells are the line's, so each shape's leave-one-out errors come from its one hat
    matrix. For the intervals: the cells (with replacement) and then the runs within each cell drawn, so that a
    shape that misses some cells gets a wider interval, not only the spread of the medians; a resample of fewer
    distinct cells than a shape has coefficients does not count for that shape. All resamples at once (ours).
    """
    ms = sorted(values)
    arrays = [np.asarray(values[m], dtype=float) for m in ms]
    top, c = ms[-1], len(ms)
    # the choice
    Y = _resampled_log_medians(arrays, rng, n)
    loo = {}
    for shape in GROWTH_SHAPES:
        x = _design(shape, ms)
        if c <= x.shape[1] or np.linalg.matrix_rank(x) < x.shape[1]:
            continue
        q, _ = np.linalg.qr(x)
        h = np.sum(q * q, axis=1)
        if np.any(h > 1 - 1e-9):
            continue
        residual = Y - (Y @ q) @ q.T
        loo[shape] = np.sqrt(np.mean(np.square(residual / (1 - h)), axis=1))
    chosen: dict[str, float] = {}
    if loo:
        names = list(loo)
        errors = np.stack([loo[name] for name in names], axis=1)
        first = np.argmax(errors <= errors.min(axis=1, keepdims=True) + TIE, axis=1)
        counts = np.bincount(first, minlength=len(names))
        chosen = {name: int(counts[i]) / n for i, name in enumerate(names) if counts[i]}
    # the intervals
    cells = rng.integers(0, c, (n, c))
    y = np.empty((n, c))
    for i in range(c):
        y[:, i] = _resampled_log_medians(arrays, rng, n)[np.arange(n), cells[:, i]]
    distinct = np.array([len(set(row)) for row in cells.tolist()])
    last: dict[str, list[float]] = {}
    curvature: list[float] = []
    for shape in GROWTH_SHAPES:
        base = _design(shape, ms)
        scale = np.abs(base).max(axis=0)  # columns of order 1: the normal equations stay well conditioned
        x = (base / scale)[cells]  # (n, c, p)
        ok = distinct >= base.shape[1]
        xt = np.swapaxes(x[ok], 1, 2)
        coef = np.linalg.solve(xt @ x[ok], (xt @ y[ok][..., None]))[..., 0] / scale
        step = np.array(GROWTH_SHAPES[shape](top)) - np.array(GROWTH_SHAPES[shape](top - 1))
        last[shape] = list(np.exp(coef[:, 1:] @ step))
        if shape == "exp(b·m + c·m²)":
            curvature = list(coef[:, 2])
    return {"resamples": n, "chosen": {s: chosen[s] for s in GROWTH_SHAPES if s in chosen},
            "last_factor": {s: _interval(v) for s, v in last.items()}, "curvature": _interval(curvature),
            "counted": {s: len(v) for s, v in last.items()}}


def _direction(interval: Sequence[float] | None) -> str:
    if interval is None:
        return "not measured"
    lo, hi = interval
    return ("speeds up" if lo > NEGLIGIBLE else "slows" if hi < -NEGLIGIBLE
            else "shows neither speeding up nor slowing")


def growth_of(values: Mapping[int, Sequence[float]], *, seed: int = 0, resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """The growth of one quantity along one line: fits, the chosen shape, bootstrap intervals and the direction.

    Parameters
    ----------
    values : mapping
        ``{m: [value, ...]}`` over the successful runs (:func:`line_values`).
    seed : int
        Seed of the bootstrap (the analysis is reproducible).
    resamples : int
        Bootstrap resamples (default :data:`BOOTSTRAP`).

    Returns
    -------
    dict
        ``ms``, ``medians``, ``runs`` (per cell), ``fits`` (:func:`fit_growth_shapes`), ``chosen`` (the shape of
        smallest leave-one-out error), ``chosen_share`` (the share of resamples that choose it), ``last_factor``
        and its ``last_factor_interval`` (the chosen shape's factor from ``m_max − 1`` to ``m_max``),
        ``curvature`` (``c`` of ``exp(b·m + c·m²)``) and its ``curvature_interval``, and ``direction``: "speeds
        up" where the curvature's interval lies above 0, "slows" below, otherwise that neither is shown.
    """
    ms = sorted(m for m, v in values.items() if len(v))
    clean = {m: list(values[m]) for m in ms}
    fits = fit_growth_shapes(clean)
    chosen = choose_shape(fits)
    boot = _bootstrap(clean, np.random.default_rng(seed), resamples) if chosen is not None else None
    by = {f["shape"]: f for f in fits}
    quad = by["exp(b·m + c·m²)"]["coefficients"]
    return {
        "ms": ms, "medians": [float(np.median(clean[m])) for m in ms], "runs": [len(clean[m]) for m in ms],
        "fits": fits, "chosen": chosen,
        "chosen_share": None if boot is None or chosen is None else boot["chosen"].get(chosen, 0.0),
        "chosen_shares": None if boot is None else boot["chosen"],
        "last_factor": None if chosen is None else by[chosen]["last_factor"],
        "last_factor_interval": None if boot is None or chosen is None else boot["last_factor"][chosen],
        "curvature": None if quad is None else quad[2],
        "curvature_interval": None if boot is None else boot["curvature"],
        "direction": _direction(None if boot is None else boot["curvature"]),
        "resamples": 0 if boot is None else resamples, "level": LEVEL,
    }


def growth_sentence(name: str, g: Mapping[str, Any]) -> str:
    """One sentence on one quantity's growth: the shape chosen, the factor per head with its interval, the direction.

    Parameters
    ----------
    name : str
        What was measured and where (``"time at (d, k) = (24, 2)"``).
    g : mapping
        :func:`growth_of`'s result.

    Returns
    -------
    str
    """
    if g["chosen"] is None:
        return f"{name}: too few cells to choose a shape."
    by = {f["shape"]: f for f in g["fits"]}
    ranked = sorted((f for f in g["fits"] if f["loo_rms"] is not None), key=lambda f: f["loo_rms"])
    runner = ranked[1] if len(ranked) > 1 else None
    lo_hi = g["last_factor_interval"]
    ci = f" [{lo_hi[0]:.2f}, {lo_hi[1]:.2f}]" if lo_hi else ""
    c_iv = g["curvature_interval"]
    curv = (f"curvature of log in m {g['curvature']:.3g} [{c_iv[0]:.3g}, {c_iv[1]:.3g}]"
            if c_iv and g["curvature"] is not None else "curvature not measured")
    second = f"; next {runner['shape']} ({runner['loo_rms']:.2f})" if runner else ""
    return (f"{name}, m = {g['ms'][0]}–{g['ms'][-1]}: {g['chosen']} is chosen out of sample (leave-one-out rms "
            f"{by[g['chosen']]['loo_rms']:.2f}{second}; chosen in {100 * (g['chosen_share'] or 0):.0f} % of "
            f"{g['resamples']} resamples); ×{g['last_factor']:.2f}{ci} for the last head; the growth "
            f"{g['direction']} ({curv}, {100 * g['level']:.0f} % intervals).")


def growth_table(rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str:
    """A Markdown table of growth results: one row per (line, quantity).

    Parameters
    ----------
    rows : sequence of (str, str, mapping)
        ``(line, quantity, growth_of(...))``.

    Returns
    -------
    str
    """
    head = ["line", "quantity", "m", "chosen shape", "LOO rms (chosen)", "best other (LOO rms)", "chosen in",
            "× last head [95 %]", "curvature [95 %]", "growth"]
    body = []
    for line, quantity, g in rows:
        fits = {f["shape"]: f for f in g["fits"]}
        ranked = sorted((f for f in g["fits"] if f["loo_rms"] is not None), key=lambda f: f["loo_rms"])
        other = next((f for f in ranked if f["shape"] != g["chosen"]), None)
        iv, civ = g["last_factor_interval"], g["curvature_interval"]
        body.append([
            line, quantity, f"{g['ms'][0]}–{g['ms'][-1]}" if g["ms"] else "–", g["chosen"] or "–",
            fmt(fits[g["chosen"]]["loo_rms"] if g["chosen"] else None, ".2f"),
            f"{other['shape']} ({other['loo_rms']:.2f})" if other else "–",
            "–" if g["chosen_share"] is None else f"{100 * g['chosen_share']:.0f} %",
            "–" if g["last_factor"] is None else f"{g['last_factor']:.2f}" + (
                f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else ""),
            "–" if g["curvature"] is None else f"{g['curvature']:.3g}" + (
                f" [{civ[0]:.3g}, {civ[1]:.3g}]" if civ else ""),
            _SHORT.get(g["direction"], g["direction"])])
    return markdown_table(head, body)


#: The growth column's words (the sentences say it in full).
_SHORT = {"shows neither speeding up nor slowing": "neither shown"}


# --------------------------------------------------------------------------- the lines and their summary


def _line_of(name: str) -> tuple[int, list[int]]:
    """The line's d and ks, from its grid blocks."""
    from .frontier import parse_grid

    cells = parse_grid(GROWTH_LINES[name])
    ds = {d for _, d, _, _ in cells}
    if len(ds) != 1:
        raise ValueError(f"a line of the growth study has one d; {name!r} has {sorted(ds)}.")
    return ds.pop(), sorted({k for _, _, k, _ in cells})


def _cell_rows(records: Sequence[Mapping[str, Any]], success_tol: float) -> list[dict[str, Any]]:
    """Per (d, k, m): runs, successes, medians of time, examples and each phase, and the tolerances and searches
    that ran (what the study holds fixed, as the records show it)."""
    groups: dict[tuple[int, int, int], list[Mapping[str, Any]]] = {}
    for rec in records:
        spec = rec["spec"]
        if spec["role"] == "eval":
            groups.setdefault((spec["d"], spec["k"], spec["m"]), []).append(rec)
    rows = []
    for (d, k, m), recs in sorted(groups.items()):
        ok = [r for r in recs if failure_reason(r, success_tol) is None]
        diag = [r.get("diagnostics") or {} for r in recs]
        tols = sorted({p4["tol"] for p4 in (g.get("4_refined_sculpt") or {} for g in diag) if p4.get("tol")})
        searches = sorted({s for s in ((g.get("6_search") or {}).get("search") for g in diag) if s})
        statuses: dict[str, int] = {}
        for r in recs:
            if failure_reason(r, success_tol) is not None:
                statuses[str(r.get("status"))] = statuses.get(str(r.get("status")), 0) + 1

        def med(values):
            v = [x for x in values if x is not None]
            return float(np.median(v)) if v else None

        rows.append({
            "d": d, "k": k, "m": m, "runs": len(recs), "successes": len(ok),
            "median_seconds": med([QUANTITIES["seconds"](r) for r in ok]),
            "max_seconds": max((t for t in map(QUANTITIES["seconds"], ok) if t is not None), default=None),
            "median_examples": med([QUANTITIES["examples"](r) for r in ok]),
            "phase_seconds": {p: med([QUANTITIES[f"seconds {p}"](r) for r in ok]) for p in PHASES},
            # What the run spent outside the six phases: the setting's check, the pool, the held-out error.
            "rest_seconds": med([_rest(r) for r in ok]),
            "tolerances": tols, "searches": searches, "failures": statuses,
            "tuples_in_grid": med([(g.get("6_search") or {}).get("tuples_in_grid") for g in diag]),
        })
    return rows


def _rest(record: Mapping[str, Any]) -> float | None:
    t = record.get("timings") or {}
    if t.get("total") is None:
        return None
    return float(t["total"]) - sum(float(t.get(p) or 0.0) for p in PHASES)


def growth_summary(records_by_line: Mapping[str, Sequence[Mapping[str, Any]]], *, success_tol: float = 1e-3,
                   seed: int = 0, resamples: int = BOOTSTRAP,
                   prices: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The growth of every quantity along every line, the cells, and the statement of the law.

    Parameters
    ----------
    records_by_line : mapping
        ``{line name: run records}``; the names are keys of :data:`GROWTH_LINES`, summarised in its order.
    success_tol : float
        The common success criterion.
    seed : int
        The bootstrap's seed.
    resamples : int
        Bootstrap resamples per quantity.
    prices : sequence of mapping
        The exhaustive search priced per cell (:func:`learner.study.pricing.price_cells`), for ``pricing``.

    Returns
    -------
    dict
        ``pricing`` (:func:`pricing_of`); ``growth``: ``[{"line", "d", "k", "quantity", ...growth_of}]``;
        ``cells`` per line (per m: runs,
        successes, median seconds and examples, each phase's median seconds and the rest, the tolerances and
        searches that ran, the failures by status and the median ε-net tuple count);
        ``headline`` (:func:`headline`); ``statements``: the sentences of :func:`growth_sentence` for the total
        time and examples of each line at
        k = 2; ``options``, ``success_tol``.
    """
    growth, cells, statements = [], {}, []
    unknown = [name for name in records_by_line if name not in GROWTH_LINES]
    if unknown:
        raise ValueError(f"the growth study's lines are {sorted(GROWTH_LINES)}; got {unknown[0]!r}.")
    order = list(GROWTH_LINES)  # the lines in one order, however they were given (the command's, the page's)
    for name in sorted(records_by_line, key=order.index):
        records = records_by_line[name]
        d, ks = _line_of(name)
        cells[name] = _cell_rows(records, success_tol)
        if name in CHECK_LINES:
            continue
        for k in ks:
            for quantity in QUANTITIES:
                values = line_values(records, quantity, d=d, k=k, success_tol=success_tol)
                if len(values) < 2:
                    continue
                g = growth_of(values, seed=seed, resamples=resamples)
                growth.append({"line": name, "d": d, "k": k, "quantity": quantity, **g})
                if quantity in ("seconds", "examples") and k == 2:
                    what = "time" if quantity == "seconds" else "examples"
                    statements.append(growth_sentence(f"{what} at (d, k) = ({d}, {k})", g))
    out = {"growth": growth, "cells": cells, "statements": statements, "options": dict(GROWTH_OPTIONS),
            "line_options": {name: LINE_OPTIONS[name] for name in records_by_line if name in LINE_OPTIONS},
            "pricing": pricing_of(records_by_line, prices, success_tol=success_tol),
            "success_tol": success_tol, "resamples": resamples, "level": LEVEL,
            "note": "study design, shapes and intervals ours; the paper proves a (dk)^{O(m³)} bound and reports no "
                    "experiments"}
    return out | {"headline": headline(out)}


def _search_only(record: Mapping[str, Any]) -> float | None:
    """Phase 6's seconds before its refinement: the net's features, Gram matrix and scoring, or vp's starts."""
    p6 = (record.get("diagnostics") or {}).get("6_search") or {}
    if p6.get("seconds") is None or p6.get("refine_seconds") is None:
        return None
    return float(p6["seconds"]) - float(p6["refine_seconds"])


def pricing_of(records_by_line: Mapping[str, Sequence[Mapping[str, Any]]], prices: Sequence[Mapping[str, Any]], *,
               success_tol: float = 1e-3) -> dict[str, Any]:
    """The paper's phase 6 priced beside ours, and the price held to the exhaustive runs that fit here.

    Parameters
    ----------
    records_by_line : mapping
        ``{line: run records}``.
    prices : sequence of mapping
        :func:`learner.study.pricing.price_cells`' records.
    success_tol : float
        The common success criterion.

    Returns
    -------
    dict
        ``rows``: per priced (m, d, k) on a measured line: ``ours_search_s`` (the median of phase 6 over the
        successful runs), ``rest_s`` (the median of the run without phase 6), ``paper_search_s`` and its
        ``paper_interval`` (the price), ``pipeline_s`` = rest + price (the paper-faithful pipeline: our phases 1–5,
        then the enumeration; its interval ``pipeline_interval``) and ``tuples``. ``checks``: per cell of the
        ``exhaustive`` line: ``measured_s`` (the median of phase 6 before its refinement), ``priced_s``, their
        ``ratio``, and the runs' successes.
    """
    by_cell = {(r["m"], r["d"], r["k"]): r for r in prices}
    rows, checks = [], []
    for name, records in records_by_line.items():
        ok = [r for r in records if r["spec"]["role"] == "eval" and failure_reason(r, success_tol) is None]
        if name in CHECK_LINES:
            cells = sorted({(r["spec"]["m"], r["spec"]["d"], r["spec"]["k"]) for r in records
                            if r["spec"]["role"] == "eval"})
            for cell in cells:
                mine = [r for r in ok if (r["spec"]["m"], r["spec"]["d"], r["spec"]["k"]) == cell]
                runs = sum(1 for r in records if r["spec"]["role"] == "eval"
                           and (r["spec"]["m"], r["spec"]["d"], r["spec"]["k"]) == cell)
                measured = [v for v in map(_search_only, mine) if v is not None]
                price = by_cell.get(cell)
                med = float(np.median(measured)) if measured else None
                checks.append({"m": cell[0], "d": cell[1], "k": cell[2], "successes": len(mine), "runs": runs,
                               "measured_s": med, "priced_s": None if price is None else price["seconds"],
                               "ratio": None if price is None or not med else price["seconds"] / med})
            continue
        for (m, d, k), price in sorted(by_cell.items()):
            mine = [r for r in ok if (r["spec"]["m"], r["spec"]["d"], r["spec"]["k"]) == (m, d, k)]
            if not mine:
                continue
            ours = float(np.median([(r["timings"] or {}).get("6_search") or 0.0 for r in mine]))
            rest = float(np.median([r["timings"]["total"] - ((r["timings"] or {}).get("6_search") or 0.0)
                                    for r in mine]))
            lo, hi = price["interval"]
            rows.append({"line": name, "m": m, "d": d, "k": k, "ours_search_s": ours, "rest_s": rest,
                         "paper_search_s": price["seconds"], "paper_interval": [lo, hi],
                         "pipeline_s": rest + price["seconds"], "pipeline_interval": [rest + lo, rest + hi],
                         "tuples": price["tuples"], "per_tuple_seconds": price["per_tuple_seconds"]})
    return {"rows": rows, "checks": checks}


#: The budgeted frontier's time per layer (the study's question, ours: ten minutes of the two-core machine).
FRONTIER_BUDGET = 600.0


@declare(k=Integer(), budget=Real(), tol=Real())
def budgeted_frontier(records: Iterable[Mapping[str, Any]], *, ds: Sequence[int], k: int = 2,
                      budget: float = FRONTIER_BUDGET, tol: float = 1e-3) -> list[dict[str, Any]]:
    """Per method and d: the largest m whose median layer reached a relative error of ``tol`` within ``budget`` s.

    A layer's time is :func:`learner.study.peers.seconds_to` (the learner: its run, if its layer is within
    ``tol``; a baseline: its first validation below ``tol``); a layer that never got there, or got there after
    ``budget``, counts as never. A cell passes when the median of its layers' times is within ``budget`` (at two
    layers both must be). The frontier is *exact* when a larger m was measured (and failed), and a lower bound
    otherwise: the records say nothing beyond their largest m.

    Parameters
    ----------
    records : iterable of mapping
        Run records of registered study methods; only measured runs (role ``eval``) at ``k`` and a d of ``ds``
        count.
    ds : sequence of int
        The token dimensions reported, each a row per method (``m`` None where nothing was measured or passed).
    k : int
        Tokens per sequence.
    budget : float
        Seconds per layer.
    tol : float
        The relative error that counts as learned.

    Returns
    -------
    list of dict
        ``method``, ``d``, ``k``, ``m`` (None if no cell passed), ``seconds`` (that cell's median time),
        ``layers`` and ``within`` (its layers, and how many were within the budget), ``exact`` (a larger m was
        measured) and ``measured`` (the m measured, ascending).
    """
    from ..baselines import milestone_key
    from .peers import seconds_to

    cells: dict[tuple[str, int, int], list[float]] = {}
    for rec in records:
        s = rec["spec"]
        if s["role"] != "eval" or s["k"] != k or s["d"] not in ds:
            continue
        timed = ((rec.get("diagnostics") or {}).get("fit") or {}).get("seconds_to")
        if timed is not None and milestone_key(tol) not in timed:  # a baseline times its milestones only
            raise ValueError(f"`tol` must be a milestone the baselines timed ({sorted(timed)}); got tol={tol}.")
        t = seconds_to(rec, tol)
        cells.setdefault((s["method"], s["d"], s["m"]), []).append(math.inf if t is None or t > budget else t)
    rows = []
    for method in sorted({c[0] for c in cells}):
        for d in ds:
            ms = sorted(m for (meth, dd, m) in cells if (meth, dd) == (method, d))
            passed = [m for m in ms if float(np.median(cells[(method, d, m)])) <= budget]
            best = max(passed) if passed else None
            times = cells[(method, d, best)] if best is not None else []
            rows.append({"method": method, "d": d, "k": k, "m": best,
                         "seconds": float(np.median(times)) if times else None, "layers": len(times),
                         "within": sum(1 for t in times if t <= budget),
                         "exact": best is not None and best < max(ms), "measured": ms})
    return rows


def frontier_markdown(rows: Sequence[Mapping[str, Any]], names: Mapping[str, str] | None = None) -> str:
    """:func:`budgeted_frontier`'s rows as a table: a row per d, a column per method.

    Each entry is the largest m, its cell's median seconds and how many of its layers were within the budget;
    ``≥`` marks a lower bound (no larger m measured), "none of m = …" a method whose every measured cell failed,
    and "not measured" a d without records.

    Parameters
    ----------
    rows : sequence of mapping
        :func:`budgeted_frontier`'s rows.
    names : mapping, optional
        Column headings per method name, in the columns' order (methods it does not name follow, under their
        names).

    Returns
    -------
    str
        The Markdown table.
    """
    names = dict(names or {})
    present = list(dict.fromkeys(r["method"] for r in rows))
    methods = [m for m in names if m in present] + [m for m in present if m not in names]
    ds = sorted({r["d"] for r in rows})
    by = {(r["method"], r["d"]): r for r in rows}

    def entry(r):
        if r is None or not r["measured"]:
            return "not measured"
        if r["m"] is None:
            return f"none of m = {', '.join(map(str, r['measured']))}"
        return f"{'' if r['exact'] else '≥ '}{r['m']} ({fmt(r['seconds'], '.3g')} s; {r['within']}/{r['layers']})"

    return markdown_table(["d", *(names.get(m, m) for m in methods)],
                          [[d, *(entry(by.get((m, d))) for m in methods)] for d in ds])


def _phase_label(p: str) -> str:
    return f"phase {p[0]}"


def cells_markdown(cells: Sequence[Mapping[str, Any]]) -> str:
    """The cells of one line as a Markdown table (medians over the successful runs).

    Parameters
    ----------
    cells : sequence of mapping
        ``growth_summary(...)["cells"][line]``.

    Returns
    -------
    str
    """
    head = ["d", "k", "m", "successes", "median s", "median examples",
            *[_phase_label(p) + " s" for p in PHASES], "rest s", "phase 4 tol", "search", "failures"]
    rows = [[c["d"], c["k"], c["m"], f"{c['successes']}/{c['runs']}", fmt(c["median_seconds"], ".3g"),
             fmt(c["median_examples"], ",.0f"), *[fmt(c["phase_seconds"][p], ".3g") for p in PHASES],
             fmt(c["rest_seconds"], ".3g"),
             ", ".join(f"{t:g}" for t in c["tolerances"]) or "–", ", ".join(c["searches"]) or "–",
             ", ".join(f"{s} {n}" for s, n in c["failures"].items()) or "–"] for c in cells]
    return markdown_table(head, rows)


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """``growth.md``: the statements, the growth table, and each line's cells.

    Parameters
    ----------
    summary : mapping
        :func:`growth_summary`'s result.

    Returns
    -------
    str
    """
    parts = ["# Run time against m at fixed (d, k)", "",
             f"Phase 4's tolerance and phase 6's search fixed in every cell ({summary['options']}); medians over the "
             f"successful runs (relative error at most {summary['success_tol']:g}); shapes of log(median) against "
             f"m chosen by leave-one-cell-out error; {100 * summary['level']:.0f} % bootstrap intervals over "
             f"{summary['resamples']} resamples. Study design ours.", ""]
    parts += [f"**The law.** {summary['headline']}", "", "Per line:", ""]
    parts += [f"- {s}" for s in summary["statements"]] + [""]
    parts += [growth_table([(g["line"] + (f", k = {g['k']}" if g["k"] != 2 else ""), g["quantity"], g)
                            for g in summary["growth"]]), ""]
    pricing = summary.get("pricing") or {}
    if pricing.get("rows"):
        from .pricing import _seconds_text

        parts += ["## The paper's phase 6, priced", "",
                  "The enumeration of every m-tuple of a net of 41 points (m = 2) or 13 per hull axis (m ≥ 3), "
                  "priced as tuples × the measured cost of scoring one (learner.study.pricing; the interval is the "
                  "timings' range). The paper-faithful pipeline is our phases 1–5 and the rest of the run, then the "
                  "enumeration in place of our phase 6.", "",
                  markdown_table(["line", "m", "tuples", "µs per tuple", "ours: phase 6", "paper: enumeration",
                                  "paper-faithful run [interval]", "ours: whole run"],
                                 [[r["line"], r["m"], f"{r['tuples']:.3g}", f"{1e6 * r['per_tuple_seconds']:.3g}",
                                   _seconds_text(r["ours_search_s"]), _seconds_text(r["paper_search_s"]),
                                   f"{_seconds_text(r['pipeline_s'])} [{_seconds_text(r['pipeline_interval'][0])}, "
                                   f"{_seconds_text(r['pipeline_interval'][1])}]",
                                   _seconds_text(r["rest_s"] + r["ours_search_s"])] for r in pricing["rows"]]), ""]
    if pricing.get("checks"):
        parts += ["The price held to the exhaustive search's own runs (phase 6 before its refinement, median over "
                  "the successful runs):", "",
                  markdown_table(["m", "d", "k", "successes", "measured s", "priced s", "priced / measured"],
                                 [[c["m"], c["d"], c["k"], f"{c['successes']}/{c['runs']}", fmt(c["measured_s"], ".3g"),
                                   fmt(c["priced_s"], ".3g"), fmt(c["ratio"], ".2f")] for c in pricing["checks"]]),
                  ""]
    if "k" in summary["cells"]:
        parts += ["## The k axis", "", "Median seconds and examples per learned layer at d = 24 against the tokens per "
                  "sequence k (k = 2 from the d24 line; successes over runs in brackets; a run the learner refuses "
                  "as unsound counts as a run without success):", "", k_axis_table(summary["cells"]), ""]
    ends = [line_end(name, cells, k=k) for name, cells in summary["cells"].items() if name not in CHECK_LINES
            for k in sorted({c["k"] for c in cells})]
    parts += ["## Where each line ends", "", *[f"- {e['sentence']}" for e in ends if e], ""]
    for name, cells in summary["cells"].items():
        parts += [f"## The cells of {name}", "", cells_markdown(cells), ""]
    return "\n".join(parts)


def k_axis_table(cells_by_line: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """The k line's cells beside the cells of the same d at k = 2 from the other lines: a row per m, per k the
    median seconds and examples and the successes over the runs.

    Parameters
    ----------
    cells_by_line : mapping
        ``growth_summary``'s ``cells``; it must hold a ``"k"`` line.

    Returns
    -------
    str
        The Markdown table (``–`` where a cell was not run; ``refused: unsound`` where the learner refused every
        run of a cell before its first example).
    """
    k_cells = cells_by_line["k"]
    d = k_cells[0]["d"]
    ms = sorted({c["m"] for c in k_cells})
    by = {(c["m"], c["k"]): c for name, cells in cells_by_line.items() if name not in CHECK_LINES for c in cells
          if c["d"] == d and c["m"] in ms}
    ks = sorted({k for _, k in by})

    def entry(c):
        if c is None:
            return "–"
        if not c["successes"]:
            refused = set(c.get("failures") or {}) == {"setting"}
            return f"{'refused: unsound' if refused else 'none'} ({c['successes']}/{c['runs']})"
        return f"{fmt(c['median_seconds'], '.3g')} s, {c['median_examples']:,.0f} ({c['successes']}/{c['runs']})"

    return markdown_table(["m", *[f"k = {k}" for k in ks]], [[m, *[entry(by.get((m, k))) for k in ks]] for m in ms])


#: The time a run of a line may take (the study's design, ours: an hour of the two-core machine per run).
RUN_BUDGET = 3600.0


def line_end(name: str, cells: Sequence[Mapping[str, Any]], *, k: int = 2) -> dict[str, Any] | None:
    """Where a line ends at ``k`` and what stops it: the largest m the learner calls sound at its (d, k)
    (:func:`learner.assumptions.max_sound_m`; beyond it the learner refuses before its first example), or the run
    budget :data:`RUN_BUDGET`, or a grid whose next m after the last learned one is past the sound m, or a next
    cell within the sound m that the learner failed, or none of these (the line was not run further); with the
    slowest run and the costliest phase of its last cell.

    Parameters
    ----------
    name : str
        The line's name, a key of :data:`GROWTH_LINES`.
    cells : sequence of mapping
        Its cells (``growth_summary``'s ``cells[name]``).
    k : int
        Tokens per sequence: the line's cells at this k.

    Returns
    -------
    dict or None
        ``line``, ``d``, ``k``, ``m`` (the last m with a successful run), ``sound_m``, ``stopped_by``
        (``"sound"``, ``"budget"``, ``"grid"``, ``"failed"`` or ``"not run further"``), ``slowest_s``, ``phase``
        and ``phase_share`` (of the median run), and ``sentence``; None when no cell at ``k`` has a successful run.
    """
    from ..assumptions import max_sound_m

    done = [c for c in cells if c["k"] == k and c["successes"]]
    if not done:
        return None
    last = max(done, key=lambda c: c["m"])
    d, m = last["d"], last["m"]
    sound = max_sound_m(d, k)
    slowest = last.get("max_seconds")
    after = sorted((c for c in cells if c["k"] == k and c["m"] > m), key=lambda c: c["m"])
    beyond = after[0] if after else None
    stopped = ("budget" if slowest is not None and slowest > RUN_BUDGET else "sound" if m >= sound else
               "not run further" if beyond is None else "grid" if beyond["m"] > sound else "failed")
    failures = ", ".join(f"{why} {n}" for why, n in sorted(((beyond or {}).get("failures") or {}).items()))
    phases = {p: s for p, s in (last.get("phase_seconds") or {}).items() if s is not None}
    phase = max(phases, key=lambda p: phases[p]) if phases else None
    share = phases[phase] / last["median_seconds"] if phase and last.get("median_seconds") else None
    why = {"sound": f"the largest m the learner calls sound at (d, k) = ({d}, {k}); beyond it the learner refuses "
                    "before its first example",
           "budget": f"its slowest run took more than the line's budget of {RUN_BUDGET:.0f} s",
           "grid": f"short of the sound m = {sound}, which its grid skips; its next m = {beyond and beyond['m']} "
                   "is past it, and the learner refuses that before its first example",
           "failed": f"at its next m = {beyond and beyond['m']} (within the sound m = {sound}) the learner learned "
                     f"none of its {beyond and beyond.get('runs')} layers ({failures or 'no failure recorded'})",
           "not run further": f"short of the sound m = {sound}: the line was not run further"}[stopped]
    sentence = (f"{name}{'' if k == 2 else f' at k = {k}'} ends at m = {m}: {why}. Its slowest run took "
                f"{fmt(slowest, '.3g')} s"
                + (f"; {_phase_label(phase)} is the costliest phase ({100 * share:.0f} % of the median run)."
                   if phase and share is not None else "."))
    return {"line": name, "d": d, "k": k, "m": m, "sound_m": sound, "stopped_by": stopped, "slowest_s": slowest,
            "phase": phase, "phase_share": share, "sentence": sentence}


def _legend_below(ax: Any, handles: Sequence[Any], ncol: int) -> None:
    """``handles`` in a legend under ``ax``'s axis label (half an inch below the axes), off the data."""
    from matplotlib.transforms import ScaledTranslation

    below = ax.transAxes + ScaledTranslation(0, -0.5, ax.figure.dpi_scale_trans)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, ncol=ncol,
              fontsize=9, frameon=False, columnspacing=1.2)


def plot_growth(summary: Mapping[str, Any], path: Any) -> Any:
    """``growth.png``: per line at k = 2, the median seconds of the run and of each phase against m (log scale),
    and the examples, with the chosen shape's fit to the totals drawn through them; with a priced phase 6, ours
    against the paper-faithful pipeline. Two panels a row, each panel's legend below it; a phase has one colour
    in every panel.

    Parameters
    ----------
    summary : mapping
        :func:`growth_summary`'s result.
    path : str or path-like
        The PNG file (written atomically).

    Returns
    -------
    pathlib.Path
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import save_figure

    lines = [g for g in summary["growth"] if g["k"] == 2 and g["quantity"] in ("seconds", "examples")]
    names = sorted({g["line"] for g in lines})
    priced = (summary.get("pricing") or {}).get("rows") or []
    panels = max(len(names), 1) + 1 + bool(priced)
    rows = (panels + 1) // 2
    fig, grid = plt.subplots(rows, 2, figsize=(11, 4.9 * rows + 0.3), squeeze=False, layout="constrained")
    axes = list(grid.ravel()[:panels])
    for spare in grid.ravel()[panels:]:
        spare.set_visible(False)
    phases = sorted({g["quantity"][8:] for g in summary["growth"] if g["k"] == 2
                     and g["quantity"].startswith("seconds ")})
    for ax, name in zip(axes, names, strict=False):
        for g in (g for g in summary["growth"] if g["line"] == name and g["k"] == 2
                  and g["quantity"].startswith("seconds ")):
            ax.plot(g["ms"], g["medians"], marker=".", lw=1, color=f"C{phases.index(g['quantity'][8:]) % 9 + 1}",
                    label=_phase_label(g["quantity"][8:]))
        total = next(g for g in lines if g["line"] == name and g["quantity"] == "seconds")
        _draw_fit(ax, total, "k", "run")
        ax.set_yscale("log")
        ax.set_xlabel("heads m")
        ax.set_ylabel("median seconds (successful runs)")
        ax.set_title(f"d = {total['d']}, k = 2: time per run and per phase", fontsize=10)
        ax.grid(True, alpha=0.3)
        _legend_below(ax, ax.get_legend_handles_labels()[0], ncol=3)
    if priced:
        _plot_pricing(axes[-1], priced)
    ax = axes[-1 - bool(priced)]
    for i, name in enumerate(names):
        g = next(g for g in lines if g["line"] == name and g["quantity"] == "examples")
        _draw_fit(ax, g, f"C{i}", f"d = {g['d']}")
    ax.set_yscale("log")
    ax.set_xlabel("heads m")
    ax.set_ylabel("median examples drawn")
    ax.set_title("examples per run, k = 2", fontsize=10)
    ax.grid(True, alpha=0.3)
    _legend_below(ax, ax.get_legend_handles_labels()[0], ncol=2)
    fig.supxlabel("points: medians over the successful runs; lines through them: the growth shape named in the "
                  "legend, chosen out of sample", fontsize=10)
    out = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return out


def _plot_pricing(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """Ours against the paper-faithful pipeline, per line: the whole run's median seconds, and our phases 1–5 with
    the enumeration priced (its interval shaded), against m. A colour per line, a style per pipeline."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    for i, line in enumerate(sorted({r["line"] for r in rows})):
        mine = sorted((r for r in rows if r["line"] == line), key=lambda r: r["m"])
        ms = [r["m"] for r in mine]
        color = f"C{i}"
        ax.plot(ms, [r["rest_s"] + r["ours_search_s"] for r in mine], marker="o", color=color)
        ax.plot(ms, [r["pipeline_s"] for r in mine], marker="s", ls="--", color=color)
        ax.fill_between(ms, [r["pipeline_interval"][0] for r in mine], [r["pipeline_interval"][1] for r in mine],
                        color=color, alpha=0.2)
        handles.append(Patch(color=color, label=line))
    handles += [Line2D([], [], color="0.25", marker="o", label="ours (measured)"),
                Line2D([], [], color="0.25", marker="s", ls="--",
                       label="the paper's phase 6 (priced; shaded: interval)")]
    ax.axhline(365.25 * 86400, color="grey", lw=0.8, ls=":")
    ax.text(1, 365.25 * 86400 * 3, "one year", fontsize=9, color="grey")
    ax.set_yscale("log")
    ax.set_xlabel("heads m")
    ax.set_ylabel("seconds per run")
    ax.set_title("ours against the paper's phase 6 (13 points per hull axis)", fontsize=10)
    ax.grid(True, alpha=0.3)
    _legend_below(ax, handles, ncol=2)


def _draw_fit(ax: Any, g: Mapping[str, Any], color: str, label: str) -> None:
    """The medians of ``g`` as points and its chosen shape's fit as a line, one legend entry for both."""
    fit = next((f for f in g["fits"] if f["shape"] == g["chosen"]), None)
    if fit is None or fit["coefficients"] is None:
        ax.plot(g["ms"], g["medians"], marker="o", ls="none", color=color, label=f"{label} (median)")
        return
    ax.plot(g["ms"], g["medians"], marker="o", ls="none", color=color)
    grid = np.linspace(min(g["ms"]), max(g["ms"]), 100)
    ax.plot(grid, np.exp(_design(g["chosen"], grid) @ np.asarray(fit["coefficients"])), color=color, lw=1.5)
    ax.plot([], [], marker="o", color=color, lw=1.5, label=f"{label}: {g['chosen']}")


def quick_blocks(name: str) -> tuple[str, ...]:
    """The smoke test's cells of a line: its first two m at its first k and d, one layer each (not a measurement).

    Parameters
    ----------
    name : str
        A key of :data:`GROWTH_LINES`.

    Returns
    -------
    tuple of str
        One grid block.

    Examples
    --------
    >>> quick_blocks("d32")
    ('m=1..2,k=2,d=32,seeds=1',)
    """
    from .frontier import parse_grid

    cells = parse_grid(GROWTH_LINES[name])
    m0, d, k = min(m for m, _, _, _ in cells), cells[0][1], min(k for _, _, k, _ in cells)
    return (f"m={m0}..{m0 + 1},k={k},d={d},seeds=1",)


@declare(seed=Seed(), learn_workers=Integer(), resamples=Integer(), success_tol=Real())
def growth_study(out: Any, *, lines: Sequence[str] = tuple(GROWTH_LINES), seed: int = 0, learn_workers: int = 2,
                 progress: bool = False, run: bool = True, plot: bool = True, resamples: int = BOOTSTRAP,
                 success_tol: float = 1e-3, quick: bool = False) -> dict[str, Any]:
    """Run the growth study's lines (each a :func:`~learner.study.scaling.scaling_study` in ``out/<line>``,
    resumable), then write ``growth.json``, ``growth.md`` and ``growth.png`` into ``out``.

    Each line runs one learner run at a time (``backend="serial"``) on ``learn_workers`` local processes, with
    :data:`GROWTH_OPTIONS`; the planted layers are the studies' (:func:`learner.random_layer` at logit scale 1,
    seeded by cell and index).

    Parameters
    ----------
    out : path
        The study's folder.
    lines : sequence of str
        Keys of :data:`GROWTH_LINES` (default all, in its order).
    seed : int
        Entropy of every run's seed and the bootstrap's seed.
    learn_workers : int
        Local processes of each run (default 2).
    progress, run, plot
        As in :func:`~learner.study.scaling.scaling_study`; ``run=False`` re-summarises the records.
    resamples : int
        Bootstrap resamples per quantity.
    success_tol : float
        The common success criterion.
    quick : bool
        A smoke test, not a measurement: each line's first two m, one layer each (:func:`quick_blocks`), on the
        learner's tiny budgets (``learner.sweep.runs.QUICK_OPTIONS``).

    Returns
    -------
    dict
        :func:`growth_summary`'s result, with ``files`` (what was written).
    """
    from ..io import atomic_write, check_writable_dir, write_json
    from ..sweep.records import study_path
    from ..sweep.runs import QUICK_OPTIONS
    from .pricing import REPEATS
    from .scaling import scaling_study

    unknown = [name for name in lines if name not in GROWTH_LINES]
    if unknown or not lines:
        raise ValueError(f"`lines` must be names of {sorted(GROWTH_LINES)}; got lines={list(lines)!r}.")
    out = check_writable_dir("out", out)
    if run:
        out.mkdir(parents=True, exist_ok=True)
    records = {}
    for name in lines:
        result = scaling_study(study_path(out, name), grid=quick_blocks(name) if quick else GROWTH_LINES[name],
                               methods=["provable"], backend="serial", learn_workers=learn_workers,
                               provable_options=({**QUICK_OPTIONS["provable"]} if quick else {}) | GROWTH_OPTIONS
                               | LINE_OPTIONS.get(name, {}),
                               progress=progress, seed=seed, run=run, plot=plot, success_tol=success_tol)
        records[name] = result.records
    from .frontier import parse_grid
    from .pricing import price_cells

    priced = sorted({(m, d, k) for name in lines
                     for m, d, k, _ in parse_grid(quick_blocks(name) if quick else GROWTH_LINES[name]) if k == 2})
    prices = price_cells(out, priced, run=run, seed=seed, repeats=2 if quick else REPEATS)
    summary = growth_summary(records, success_tol=success_tol, seed=seed, resamples=resamples, prices=prices)
    files = {"growth_json": str(write_json(study_path(out, "growth.json"), summary))}
    text = summary_markdown(summary)
    md = study_path(out, "growth.md")
    atomic_write(md, lambda fh: fh.write(text.encode("utf-8")))
    files["growth_md"] = str(md)
    if plot:
        files["growth_png"] = str(plot_growth(summary, study_path(out, "growth.png")))
    return summary | {"files": files}


def headline(summary: Mapping[str, Any]) -> str:
    """The growth law in one sentence, from a summary: per measured line at k = 2, the shape chosen for the time
    per run, its factor for the last head with the interval, and whether growth speeds up or slows; then the same
    for the examples. What the README, the site's index and the results page state (one home: this function).

    Parameters
    ----------
    summary : mapping
        :func:`growth_summary`'s result.

    Returns
    -------
    str
        The sentence, or a sentence saying that no line has enough cells.

    Examples
    --------
    >>> g = {"line": "d24", "d": 24, "k": 2, "quantity": "seconds", "chosen": "exp(b·m)", "ms": [1, 10],
    ...      "last_factor": 1.3, "last_factor_interval": [1.2, 1.4], "direction": "slows", "level": 0.95}
    >>> summary = {"growth": [g], "options": {"refined_tol": 0.1, "search": "vp"}}
    >>> print(headline(summary))  # doctest: +NORMALIZE_WHITESPACE
    At fixed (d, k = 2), with phase 4's tolerance (0.1) and phase 6's search (vp) fixed, the time per learned layer
    grows like exp(b·m) at d = 24 (m = 1–10; ×1.30 [1.20, 1.40] for the last head; the growth slows) (95 %
    bootstrap intervals; shapes chosen by leave-one-cell-out error; study design ours).
    """
    parts = {}
    for quantity, what in (("seconds", "the time per learned layer grows"), ("examples", "the examples it draws grow")):
        rows = sorted((g for g in summary["growth"] if g["quantity"] == quantity and g["k"] == 2
                       and g.get("chosen")), key=lambda g: g["d"])
        said = []
        for g in rows:
            lo, hi = g["last_factor_interval"] or (math.nan, math.nan)
            said.append(f"like {g['chosen']} at d = {g['d']} (m = {g['ms'][0]}–{g['ms'][-1]}; ×{g['last_factor']:.2f} "
                        f"[{lo:.2f}, {hi:.2f}] for the last head; the growth {g['direction']})")
        if said:
            parts[what] = "; ".join(said)
    if not parts:
        return "No line of the growth study has enough cells to state a law."
    opts = summary.get("options") or {}
    pieces = [f"{what} {text}" for what, text in parts.items()]
    return (f"At fixed (d, k = 2), with phase 4's tolerance ({opts.get('refined_tol')}) and phase 6's search "
            f"({opts.get('search')}) fixed, " + ", and ".join(pieces)
            + f" ({100 * summary['growth'][0]['level']:.0f} % bootstrap intervals; shapes chosen by "
            "leave-one-cell-out error; study design ours).")
