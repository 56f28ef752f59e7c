"""The study over heads and tokens: the grid of (m, k) cells, its seed rule, the frontier and the fits.

Used by :func:`learner.study.scaling.scaling_study` when it is given a ``grid``; everything here is ours (the
paper proves a ``(dk)^{O(m³)}`` bound and reports no experiments).

- **The grid.** A list of blocks such as ``"m=1..6,k=2"`` or ``"m=2,k=8,d=24,seeds=3"``: each block is
  the product of its ``m`` and ``k`` values (an integer or a range ``a..b``); ``d`` (default: the
  study's, ``"auto"`` = :func:`learner.sweep.runs.sound_d` per cell) and ``seeds`` (default: the study's)
  apply to every cell of the block. A cell named by two blocks must agree on ``d`` and ``seeds``.
- **Seeds per cell.** An integer, or ``"auto"``: :data:`AUTO_FIRST` seeds first, then
  :data:`AUTO_FULL` where the median time of those first runs (per method and cell) is under
  :data:`AUTO_SECONDS` — so cheap cells get ten layers and dear ones three.
- **The frontier** (:func:`frontier_cells`): per method and cell the success count, the median time,
  the split between the example phases (1–4) and the search (5–6), the failures by reason, and for runs
  the learner stopped before drawing (``status="budget"``) the examples its forecast asked for.
- **The fits** (:func:`fit_shapes`): ``log`` of the median examples and time against four shapes in
  ``(m, k, d)``, with residuals per cell and a leave-one-out error (shapes have 2 or 3 coefficients).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..hints import PathLike
from ..sweep.engine import median as _median
from ..tables import MISSING, fmt, markdown_table

__all__ = ["AUTO_FIRST", "AUTO_FULL", "AUTO_SECONDS", "DEFAULT_GRID", "SHAPES", "failure_reason", "fit_shapes",
           "cells_table", "frontier_cells", "frontier_table", "fits_table", "parse_grid", "plot_frontier", "seeds_for",
           "budgets_table", "cell_label", "side_by_side"]

#: The default study (ours): m = 1..6 at k = 2, k = 2..8 at m = 2, k = 2..4 at m = 3, k = 2..3 at m = 4.
DEFAULT_GRID = ("m=1..6,k=2", "m=2,k=2..8", "m=3,k=2..4", "m=4,k=2..3")
#: ``seeds="auto"``: this many layers per method and cell first, then AUTO_FULL where their median time is
#: under AUTO_SECONDS (ours: 10 layers where a run's median is under about two minutes, at least 3 elsewhere).
AUTO_FIRST, AUTO_FULL, AUTO_SECONDS = 3, 10, 120.0
_KEYS = ("m", "k", "d", "seeds")
_VALUE = re.compile(r"^\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?$")


def _block_values(block, key, text, minimum):
    found = _VALUE.match(text)
    if not found:
        raise ValueError(f"`grid` block {block!r}: {key} must be an integer or a range a..b; got {key}={text!r}.")
    lo = int(found.group(1))
    hi = int(found.group(2)) if found.group(2) is not None else lo
    if lo < minimum or hi < lo:
        what = f"at least {minimum}" + (", and a range a..b needs a <= b" if found.group(2) is not None else "")
        raise ValueError(f"`grid` block {block!r}: {key} must be {what}; got {key}={text!r}.")
    return list(range(lo, hi + 1))


def _one_or_auto(block, key, fields, minimum, default):
    """The block's single value of ``key`` (an integer >= ``minimum`` or "auto"), else ``default``."""
    if key not in fields:
        return default
    if fields[key] == "auto":
        return "auto"
    values = _block_values(block, key, fields[key], minimum)
    if len(values) != 1:
        raise ValueError(f"`grid` block {block!r}: {key} must be one integer or auto; got {key}={fields[key]!r}.")
    return values[0]


def _parse_block(block, d, seeds):
    if not isinstance(block, str) or not block.strip():
        raise ValueError(f"`grid` blocks must be non-empty strings like 'm=1..6,k=2'; got {block!r}.")
    fields = {}
    for part in block.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise ValueError(f"`grid` block {block!r}: each part must be one of {', '.join(k + '=…' for k in _KEYS)}; "
                             f"got {part.strip()!r}.")
        if key in fields:
            raise ValueError(f"`grid` block {block!r}: {key} is given twice.")
        fields[key] = value.strip()
    for key in ("m", "k"):
        if key not in fields:
            raise ValueError(f"`grid` block {block!r}: {key} is missing (every block names m and k).")
    ms = _block_values(block, "m", fields["m"], 1)
    ks = _block_values(block, "k", fields["k"], 2)
    d = _one_or_auto(block, "d", fields, 2, d)
    seeds = _one_or_auto(block, "seeds", fields, 1, seeds)
    return [(m, k, d, seeds) for m in ms for k in ks]


def check_seeds(seeds: object, name: str = "seeds") -> int | str:
    """``seeds`` as a positive int or the word ``"auto"``, else a ValueError naming ``name``."""
    if isinstance(seeds, str) and seeds == "auto":
        return seeds
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise ValueError(f"`{name}` must be a positive integer or 'auto'; got {name}={seeds!r}.")
    return int(seeds)


def parse_grid(blocks: Iterable[str], *, d: int | str = "auto", seeds: int | str = "auto",
               sound_d: Callable[[int, int], int] | None = None) -> list[tuple[int, int, int, int | str]]:
    """The cells of ``blocks`` as sorted ``(m, d, k, seeds)``; ValueError naming the block and field.

    ``d`` and ``seeds`` are the defaults of cells whose block gives none; ``sound_d(m, k)`` resolves
    ``d="auto"`` (e.g. :func:`learner.sweep.runs.sound_d` for the study's distribution).

    Parameters
    ----------
    blocks : iterable of str
        At least one block such as ``"m=1..6,k=2"`` or ``"m=2,k=8,d=24,seeds=3"`` (a single string is refused):
        every block names ``m`` (>= 1) and ``k`` (>= 2), each an integer or a range ``a..b``, and may name one
        ``d`` (>= 2, or ``auto``) and one ``seeds`` (>= 1, or ``auto``) for all its cells.
    d : int or "auto"
        The token dimension of cells whose block names none: an integer >= 2, or ``"auto"`` (default) for
        ``sound_d(m, k)``. Every cell needs ``k < d``.
    seeds : int or "auto"
        The seed rule of cells whose block names none: a positive integer, or ``"auto"`` (default; see
        :func:`seeds_for`).
    sound_d : callable or None
        ``sound_d(m, k) -> d``, which resolves ``d="auto"``; required when any cell's ``d`` is ``"auto"``.

    Returns
    -------
    list of tuple
        One ``(m, d, k, seeds)`` per distinct cell, sorted by ``(m, k)``; a cell named by several blocks appears
        once.

    Raises
    ------
    ValueError
        When a block is malformed, a value is out of range, a cell has ``k >= d``, or two blocks give one cell
        different ``d`` or ``seeds``: the message names the block and the field.

    Examples
    --------
    >>> parse_grid(["m=1..2,k=2", "m=2,k=2..3,seeds=3"], d=12, seeds=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `grid`: cell (m=2, k=2) is given twice with different seeds: 10 in 'm=1..2,k=2', 3 in ...
    >>> parse_grid(["m=1..2,k=2", "m=2,k=3,seeds=3"], d=12, seeds=10)
    [(1, 12, 2, 10), (2, 12, 2, 10), (2, 12, 3, 3)]
    """
    if isinstance(blocks, str) or not hasattr(blocks, "__iter__"):
        raise ValueError(f"`grid` must be a list of blocks like ['m=1..6,k=2']; got grid={blocks!r}.")
    blocks = list(blocks)
    if not blocks:
        raise ValueError("`grid` must name at least one block; got an empty list.")
    if not (isinstance(d, str) and d == "auto"):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
            raise ValueError(f"`d` must be an integer >= 2 or 'auto'; got d={d!r}.")
    seeds = check_seeds(seeds)
    cells: dict[tuple[int, int], tuple[int, int | str]] = {}
    where: dict[tuple[int, int], str] = {}
    for block in blocks:
        for m, k, dd, ss in _parse_block(block, d, seeds):
            if dd == "auto":
                if sound_d is None:
                    raise ValueError(f"`grid` block {block!r}: d=auto needs `sound_d`; give d.")
                dd = sound_d(m, k)
            if dd <= k:
                raise ValueError(f"`grid` block {block!r}: the learner needs k < d; got k={k}, d={dd} "
                                 f"at (m={m}, k={k}).")
            old = cells.get((m, k))
            if old is not None:
                for name, a, b in (("d", old[0], dd), ("seeds", old[1], ss)):
                    if a != b:
                        raise ValueError(f"`grid`: cell (m={m}, k={k}) is given twice with different {name}: "
                                         f"{a} in {where[(m, k)]!r}, {b} in {block!r}.")
                continue
            cells[(m, k)], where[(m, k)] = (dd, ss), block
    return [(m, dd, k, ss) for (m, k), (dd, ss) in sorted(cells.items())]


def seeds_for(rule: int | Literal["auto"], first_times: Iterable[float | None]) -> int:
    """Layers to run for one method and cell: ``rule`` itself, or what ``"auto"`` decides from the first runs.

    Parameters
    ----------
    rule : int or "auto"
        The cell's seed rule (as :func:`parse_grid` returns it).
    first_times : iterable of float or None
        The seconds of the cell's first :data:`AUTO_FIRST` runs of the method; None for a run that did not
        finish, which is left out. Read only for ``"auto"``.

    Returns
    -------
    int
        ``rule`` when it is an integer; for ``"auto"``, :data:`AUTO_FULL` when the median of the finished first
        runs is under :data:`AUTO_SECONDS`, else :data:`AUTO_FIRST` (also when none finished).

    Examples
    --------
    >>> seeds_for(5, []), seeds_for("auto", [30.0, 50.0, 400.0]), seeds_for("auto", [130.0, 50.0, 400.0])
    (5, 10, 3)
    >>> seeds_for("auto", [])   # nothing finished: no reason to run more
    3
    """
    if rule != "auto":
        return rule
    times = [t for t in first_times if t is not None]
    return AUTO_FULL if times and float(np.median(times)) < AUTO_SECONDS else AUTO_FIRST


def failure_reason(record: Mapping[str, Any], success_tol: float) -> str | None:
    """Why a run is not a success under the common criterion, in one word; None for a success.

    ``budget`` (the learner's forecast exceeded its budget, or Adam's time or examples ran out),
    ``examples`` (phase 4 ended with too few constraints), ``gap`` (phase 5: no clear hull),
    ``search`` (phase 6 found no layer that fits), ``error`` (the run raised), ``inaccurate`` (a layer
    was returned but its error exceeds the criterion), else the status.

    Parameters
    ----------
    record : mapping
        One run record of a sweep (its ``outcome``, ``status`` and ``errors`` are read).
    success_tol : float
        The common success criterion: a finished run succeeds when its ``relative_error`` is at most this.

    Returns
    -------
    str or None
        None for a success; else ``"error"`` for a run that did not finish, ``"budget"``, ``"examples"``,
        ``"gap"``, ``"search"``, ``"inaccurate"`` or ``"setting"`` from the record's status, any other status as
        it is, or ``"unknown"`` for a finished failure without a status.

    Examples
    --------
    >>> rec = {"outcome": "finished", "status": "5_span", "errors": {"relative_error": 0.2}}
    >>> failure_reason(rec, 1e-3), failure_reason({"outcome": "error"}, 1e-3)
    ('gap', 'error')
    >>> failure_reason(rec | {"errors": {"relative_error": 1e-6}}, 1e-3) is None
    True
    """
    if record.get("outcome") != "finished":
        return "error"
    rel = (record.get("errors") or {}).get("relative_error")
    if rel is not None and rel <= success_tol:
        return None
    status = record.get("status", "")
    if status.startswith("budget"):
        return "budget"
    named = {"4_refined_sculpt": "examples", "5_span": "gap", "6_search": "search", "gradient": "inaccurate",
             "setting": "setting"}
    return named.get(status, status or "unknown")


def _forecast_examples(record):
    p4 = (record.get("diagnostics") or {}).get("4_refined_sculpt") or {}
    fc = p4.get("forecast") or {}
    return fc.get("predicted_examples")


def _phase_split(record):
    t = record.get("timings") or {}
    early = sum(v for key, v in t.items() if key[:1] in "1234" and isinstance(v, (int, float)))
    late = sum(v for key, v in t.items() if key[:1] in "56" and isinstance(v, (int, float)))
    return early, late


def frontier_cells(records: Iterable[Mapping[str, Any]], *, success_tol: float,
                   seed_rules: Mapping[tuple[int, int, int], int | str] | None = None) -> list[dict[str, Any]]:
    """Per (method, m, k): what the frontier figure and table show, from measured (``role="eval"``) records.

    ``seed_rules`` maps ``(m, d, k)`` to the cell's seed rule (int or ``"auto"``), reported with the count
    of layers run. Times are medians over finished runs (what a user pays, successful or not); examples
    medians over finished runs that drew past the pilot (a run stopped for budget draws only its pilot:
    its forecast is reported instead, ``predicted_examples``).

    Parameters
    ----------
    records : iterable of mapping
        Run records of a sweep; only those whose ``spec["role"]`` is ``"eval"`` are counted (tuning runs are not).
    success_tol : float
        The common success criterion, as :func:`failure_reason` applies it.
    seed_rules : mapping or None
        ``{(m, d, k): rule}``, each cell's seed rule, reported as ``seed_rule`` (None where not given).

    Returns
    -------
    list of dict
        One dict per (method, m, d, k), sorted: ``method``, ``m``, ``d``, ``k``, ``n`` = (m−1)(k−1), ``runs``,
        ``successes``, ``seed_rule``, the medians ``median_seconds`` and ``median_examples`` (and their
        ``_success`` variants over the successful runs), ``median_seconds_phases_1_4`` and
        ``median_seconds_phases_5_6`` (the learner's only; None for others), ``median_relative_error``,
        ``failures`` (``{reason: count}``), ``predicted_examples`` (the median forecast of the runs stopped for
        budget) and ``beyond_budget`` (every run of the cell stopped for budget). A median over no value is
        None.
    """
    groups: dict[tuple[str, int, int, int], list[Mapping[str, Any]]] = {}
    for rec in records:
        spec = rec["spec"]
        if spec["role"] == "eval":
            groups.setdefault((spec["method"], spec["m"], spec["d"], spec["k"]), []).append(rec)
    cells = []
    for (method, m, d, k), recs in sorted(groups.items()):
        finished = [r for r in recs if r.get("outcome") == "finished"]
        reasons = [failure_reason(r, success_tol) for r in recs]
        ok = [r for r, why in zip(recs, reasons, strict=True) if why is None]
        counts: dict[str, int] = {}
        for why in reasons:
            if why is not None:
                counts[why] = counts.get(why, 0) + 1
        budget = [r for r, why in zip(recs, reasons, strict=True) if why == "budget"]
        split = [_phase_split(r) for r in finished]
        rule = (seed_rules or {}).get((m, d, k))
        cells.append({
            "method": method, "m": m, "d": d, "k": k, "n": (m - 1) * (k - 1), "runs": len(recs),
            "successes": len(ok), "seed_rule": rule,
            "median_seconds": _median([r["timings"].get("total") for r in finished]),
            "median_seconds_success": _median([r["timings"].get("total") for r in ok]),
            # A run stopped for budget drew only its pilot (errors have no count): not what learning costs.
            "median_examples": _median([r["examples_drawn"] for r, why in zip(recs, reasons, strict=True)
                                        if why not in ("budget", "error")]),
            "median_examples_success": _median([r["examples_drawn"] for r in ok]),
            "median_seconds_phases_1_4": _median([s[0] for s in split]) if method == "provable" else None,
            "median_seconds_phases_5_6": _median([s[1] for s in split]) if method == "provable" else None,
            "median_relative_error": _median([(r.get("errors") or {}).get("relative_error") for r in finished]),
            "failures": counts,
            "predicted_examples": _median([_forecast_examples(r) for r in budget]),
            "beyond_budget": bool(budget) and len(budget) == len(recs),
        })
    return cells


# --------------------------------------------------------------------------- the fits

#: The shapes of ``log(value)`` fitted (ours): name -> features of (m, k, d) besides the constant.
SHAPES = {
    "a + b·(m−1)(k−1)": lambda m, k, d: [(m - 1) * (k - 1)],
    "a + b·m + c·k": lambda m, k, d: [m, k],
    "a + b·m·log(dk)": lambda m, k, d: [m * math.log(d * k)],
    "a + b·m³·log(dk)": lambda m, k, d: [m**3 * math.log(d * k)],
}


def _lstsq(x, y):
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return coef


def fit_shapes(points: Iterable[tuple[int, int, int, float | None]]) -> list[dict[str, Any]]:
    """Least squares of ``log(value)`` on each shape of :data:`SHAPES`, over ``points`` = ``[(m, k, d, value)]``.

    Parameters
    ----------
    points : iterable of (int, int, int, float or None)
        ``(m, k, d, value)`` per cell; a value that is None or not positive is left out.

    Returns
    -------
    list of dict
        One dict per shape, in the order of :data:`SHAPES`: ``shape`` (its name), ``points`` (cells fitted),
        ``coefficients`` (a, b[, c]), ``rms`` (residual, natural log), ``max_abs`` (largest absolute residual),
        ``loo_rms`` (leave-one-out prediction error: each cell predicted by the fit to the others; None with
        too few cells or a fold of lower rank) and ``residuals`` (``{"m", "k", "d", "residual"}`` per cell).
        With fewer cells than coefficients, or a rank-deficient design, the figures are None and
        ``residuals`` is empty.

    Examples
    --------
    >>> pts = [(m, 2, 12, 3.0 * 10 ** (m - 1)) for m in (1, 2, 3, 4)]
    >>> f = {r["shape"]: r for r in fit_shapes(pts)}
    >>> round(f["a + b·(m−1)(k−1)"]["rms"], 9), round(math.exp(f["a + b·(m−1)(k−1)"]["coefficients"][1]), 6)
    (0.0, 10.0)
    """
    pts = [(m, k, d, v) for m, k, d, v in points if v is not None and v > 0]
    out = []
    for name, features in SHAPES.items():
        x = np.array([[1.0, *features(m, k, d)] for m, k, d, _ in pts]) if pts else np.zeros((0, 1))
        y = np.log([v for *_, v in pts]) if pts else np.zeros(0)
        row = {"shape": name, "points": len(pts), "coefficients": None, "rms": None, "max_abs": None,
               "loo_rms": None, "residuals": []}
        p = x.shape[1] if pts else len(features(1, 2, 3)) + 1
        if len(pts) >= p and np.linalg.matrix_rank(x) == p:
            coef = _lstsq(x, y)
            res = y - x @ coef
            row |= {"coefficients": [float(c) for c in coef], "rms": float(np.sqrt(np.mean(res**2))),
                    "max_abs": float(np.max(np.abs(res))),
                    "residuals": [{"m": m, "k": k, "d": d, "residual": float(r)}
                                  for (m, k, d, _), r in zip(pts, res, strict=True)]}
            loo: list[float] = []
            for i in range(len(pts)):
                keep = np.arange(len(pts)) != i
                if np.linalg.matrix_rank(x[keep]) < p:  # a fold of lower rank: no leave-one-out error
                    loo = []
                    break
                loo.append(float(y[i] - x[i] @ _lstsq(x[keep], y[keep])))
            if loo and len(pts) > p:
                row["loo_rms"] = float(np.sqrt(np.mean(np.square(loo))))
        out.append(row)
    return out


def fits_of(cells: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The fits of the learner's (and Adam's) medians: ``{method: {"seconds": [...], "examples": [...]}}``.

    Over the cells with at least one success, on the medians over the successful runs (a failed run's
    time and examples measure where it stopped, not what learning costs). Adam's examples are its
    fixed training and validation sets and are not fitted.
    """
    fits = {}
    for method in sorted({c["method"] for c in cells}):
        mine = [c for c in cells if c["method"] == method and c["successes"] > 0]
        entry = {"cells": [[c["m"], c["k"]] for c in mine],
                 "seconds": fit_shapes([(c["m"], c["k"], c["d"], c["median_seconds_success"]) for c in mine])}
        if method == "provable":
            entry["examples"] = fit_shapes([(c["m"], c["k"], c["d"], c["median_examples_success"]) for c in mine])
        fits[method] = entry
    return fits


# --------------------------------------------------------------------------- the table and the figure


def _fmt_seconds(s):
    if s is None:
        return MISSING
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def _fmt_count(x):
    if x is None:
        return MISSING
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.0f}"


def cell_label(cell: Mapping[str, Any]) -> str:
    """The text of one heatmap cell: median time and successes, or the forecast of a run beyond the budget.

    Parameters
    ----------
    cell : mapping
        One cell of :func:`frontier_cells` (``beyond_budget``, ``successes``, ``runs``, ``median_seconds`` and
        ``predicted_examples`` are read).

    Returns
    -------
    str
        Two lines, the median time and ``successes/runs``; for a cell beyond the budget, three lines:
        ``beyond budget``, ``successes/runs`` and the forecast examples.

    Examples
    --------
    >>> print(cell_label({"beyond_budget": False, "median_seconds": 42.3, "successes": 9, "runs": 10}))
    42 s
    9/10
    """
    if cell["beyond_budget"]:
        forecast = _fmt_count(cell["predicted_examples"])
        return f"beyond budget\n{cell['successes']}/{cell['runs']}\nforecast {forecast} ex."
    return f"{_fmt_seconds(cell['median_seconds'])}\n{cell['successes']}/{cell['runs']}"


def frontier_table(cells: Iterable[Mapping[str, Any]], method: str) -> str:
    """A Markdown grid, m down and k across: median time and successes per cell (empty where no cell).

    Parameters
    ----------
    cells : iterable of mapping
        Cells of :func:`frontier_cells`.
    method : str
        The method whose cells are shown (``"provable"``, ``"adam"``, ...).

    Returns
    -------
    str
        The Markdown table (each cell's :func:`cell_label` on one line), or ``"(no METHOD runs)"`` when
        ``method`` has no cell.
    """
    mine = {(c["m"], c["k"]): c for c in cells if c["method"] == method}
    if not mine:
        return f"(no {method} runs)"
    ms = sorted({m for m, _ in mine})
    ks = sorted({k for _, k in mine})
    rows = []
    for m in ms:
        row = [f"**{m}**"]
        for k in ks:
            c = mine.get((m, k))
            row.append("" if c is None else cell_label(c).replace("\n", ", "))
        rows.append(row)
    return markdown_table(["m \\ k", *ks], rows)


def side_by_side(groups: Mapping[str, Iterable[Mapping[str, Any]]], *,
                 methods: Collection[str] = ("provable", "adam")) -> str:
    """A Markdown table comparing frontiers cell by cell.

    Per (m, d, k) present in every group and each method: successes, median time and median examples under each
    group's name, then, with two groups, the ratio of the second group's median time to the first's.

    Parameters
    ----------
    groups : mapping of str to iterable of mapping
        ``{name: cells}``, each a list of :func:`frontier_cells`; the names head the columns, in order.
    methods : collection of str
        The methods compared (default the learner, ``"provable"``, and ``"adam"``).

    Returns
    -------
    str
        The Markdown table, one row per (m, d, k) and method present in every group, ordered by m, k, d.
    """
    names = list(groups)
    index = {name: {(c["method"], c["m"], c["d"], c["k"]): c for c in cells} for name, cells in groups.items()}
    keys = sorted(set.intersection(*(set(idx) for idx in index.values())), key=lambda t: (t[1], t[3], t[2], t[0]))
    keys = [t for t in keys if t[0] in methods]
    header = ["(m, d, k)", "method", *(f"{n}: successes, median time, examples" for n in names)]
    if len(names) == 2:
        header.append(f"time {names[1]} / {names[0]}")
    rows = []
    for method, m, d, k in keys:
        row = [f"({m}, {d}, {k})", method]
        for n in names:
            c = index[n][(method, m, d, k)]
            row.append(f"{c['successes']}/{c['runs']}, {_fmt_seconds(c['median_seconds'])}, "
                       f"{_fmt_count(c['median_examples'])}")
        if len(names) == 2:
            a, b = (index[n][(method, m, d, k)]["median_seconds"] for n in names)
            row.append(fmt(b / a if a and b else None, ".2g"))
        rows.append(row)
    return markdown_table(header, rows)


def budgets_table(fixed: Sequence[Mapping[str, Any]], adaptive: Sequence[Mapping[str, Any]], *,
                  baseline: str = "adam") -> str:
    """A Markdown table of the learner's cells under two configurations (ours): fixed and data-driven budgets.

    Per (m, d, k) in both: successes, median examples and median seconds of each, the ratio of the medians of
    examples (fixed over adaptive), and ``baseline``'s median seconds from ``adaptive``'s cells with the
    learner's time over it.

    Parameters
    ----------
    fixed : sequence of mapping
        Cells of :func:`frontier_cells` of the study with fixed budgets.
    adaptive : sequence of mapping
        Cells of :func:`frontier_cells` of the study with data-driven budgets (the learner's defaults).
    baseline : str
        The method whose median time, from ``adaptive``'s cells, the learner's is compared with (default
        ``"adam"``).

    Returns
    -------
    str
        The Markdown table, one row per (m, d, k) where the learner ran in both studies, ordered by m, k, d.
    """
    def index(cells, method):
        return {(c["m"], c["d"], c["k"]): c for c in cells if c["method"] == method}

    old, new, base = index(fixed, "provable"), index(adaptive, "provable"), index(adaptive, baseline)
    header = ["(m, d, k)", "fixed budgets: successes, examples, time", "data-driven: successes, examples, time",
              "examples, fixed / data-driven", f"{baseline}: median time", f"time, learner / {baseline}"]
    rows = []
    for key in sorted(set(old) & set(new), key=lambda t: (t[0], t[2], t[1])):
        a, b = old[key], new[key]
        ratio = (a["median_examples"] / b["median_examples"]
                 if a["median_examples"] and b["median_examples"] else None)
        c = base.get(key)
        speed = (b["median_seconds"] / c["median_seconds"]
                 if c and c["median_seconds"] and b["median_seconds"] else None)
        rows.append([f"{key}", f"{a['successes']}/{a['runs']}, {_fmt_count(a['median_examples'])}, "
                     f"{_fmt_seconds(a['median_seconds'])}", f"{b['successes']}/{b['runs']}, "
                     f"{_fmt_count(b['median_examples'])}, {_fmt_seconds(b['median_seconds'])}", fmt(ratio, ".3g"),
                     MISSING if c is None else _fmt_seconds(c["median_seconds"]), fmt(speed, ".2g")])
    return markdown_table(header, rows)


def fits_table(fits: Mapping[str, Mapping[str, Any]]) -> str:
    """The fits as Markdown: one row per (method, quantity, shape).

    Parameters
    ----------
    fits : mapping
        ``{method: {"seconds": [...], "examples": [...]}}`` as ``fits_of`` returns it, each list from
        :func:`fit_shapes`.

    Returns
    -------
    str
        The Markdown table: coefficients, rms and largest residual, leave-one-out rms and cells per row.
    """
    header = ["method", "log of median", "shape", "coefficients", "rms residual", "largest residual",
              "leave-one-out rms", "cells"]
    rows = []
    for method, entry in fits.items():
        for what in ("seconds", "examples"):
            for f in entry.get(what, []):
                coef = MISSING if f["coefficients"] is None else ", ".join(f"{c:.3g}" for c in f["coefficients"])
                rows.append([method, what, f["shape"], coef, fmt(f["rms"], ".2f"), fmt(f["max_abs"], ".2f"),
                             fmt(f["loo_rms"], ".2f"), f["points"]])
    return markdown_table(header, rows)


_NAMES = {"provable": "learner", "adam": "Adam"}


def _frontier_heatmap(fig, ax, cells, method, scale, width):
    """One method's heatmap of log10 median time on ``ax``, each cell labelled (wrapped to the cell's
    ``width`` in inches); returns the cells drawn as :func:`plot_frontier` lists them."""
    import textwrap

    from matplotlib.patches import Rectangle

    ms, ks, lo, hi, cmap = scale
    grid = np.full((len(ms), len(ks)), np.nan)
    mine = [c for c in cells if c["method"] == method]
    for c in mine:
        if c["median_seconds"]:
            grid[ms.index(c["m"]), ks.index(c["k"])] = math.log10(c["median_seconds"])
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=lo, vmax=hi, origin="lower", aspect="auto")
    chars = max(6, int(width * 72 / 5.5))  # characters of 9 pt text that fit across a cell
    drawn = []
    for c in mine:
        i, j = ms.index(c["m"]), ks.index(c["k"])
        state = "beyond budget" if c["beyond_budget"] else "success" if c["successes"] else "no success"
        if state != "success":
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="red", lw=1.5))
        label = cell_label(c)
        # beyond the budget: the hatching and the legend say so, the cell keeps the count and the forecast
        shown = (f"{c['successes']}/{c['runs']}\n≈{_fmt_count(c['predicted_examples'])}" if c["beyond_budget"]
                 else label)
        value = grid[i, j]
        dark = not np.isnan(value) and (value - lo) / (hi - lo) < 0.55
        ax.text(j, i, "\n".join(textwrap.fill(line, chars, break_long_words=False) for line in shown.split("\n")),
                ha="center", va="center", fontsize=9, linespacing=1.1, color="white" if dark else "black")
        drawn.append((method, c["m"], c["k"], label, state))
    ax.set_xticks(range(len(ks)), [str(k) for k in ks])
    ax.set_yticks(range(len(ms)), [str(m) for m in ms])
    ax.set_xlabel("tokens k")
    ax.set_ylabel("heads m")
    ax.set_title(f"{_NAMES.get(method, method)}: median time per run (successes/runs)", fontsize=10)
    fig.colorbar(image, ax=ax, label="log10 seconds", shrink=0.9)
    return drawn


def _frontier_against_n(ax, cells, methods):
    """Each method's median seconds (and the learner's examples and forecasts) per cell against n; each series
    its own colour."""
    others = iter(f"C{i}" for i in range(4, 10))
    colours = {mt: {"provable": "C0", "adam": "C1"}.get(mt) or next(others, "0.3") for mt in methods}
    for method, marker in zip(methods, "osDvP<>", strict=False):
        mine = [c for c in cells if c["method"] == method]
        ns = [c["n"] for c in mine]
        ax.scatter(ns, [c["median_seconds"] or np.nan for c in mine], marker=marker, color=colours[method],
                   label=f"{_NAMES.get(method, method)}: seconds")
        if method == "provable":
            ax.scatter(ns, [c["median_examples"] or np.nan for c in mine], marker="^", color="C2",
                       label="learner: examples drawn")
            fc = [(c["n"], c["predicted_examples"]) for c in mine if c["predicted_examples"]]
            if fc:
                ax.scatter(*zip(*fc, strict=True), marker="^", facecolors="none", edgecolors="C3",
                           label="learner: forecast of runs beyond the budget")
    ax.set_yscale("log")
    ax.set_xlabel("disagreements n = (m−1)(k−1)")
    ax.set_ylabel("median per cell")
    ax.set_title("median per cell against n (yield model: theory yield-study)", fontsize=10)
    ax.grid(True, alpha=0.3)


def plot_frontier(cells: Sequence[Mapping[str, Any]], path: PathLike, *,
                  methods: Iterable[str] = ("provable", "adam")) -> tuple[Path, list[tuple[str, int, int, str, str]]]:
    """The frontier figure: per method a heatmap of log10 median time (m down, k across) with each cell's
    text (:func:`cell_label`); cells without a success are hatched, cells beyond the budget hatched and
    labelled with the forecast; then the examples and time per run against (m−1)(k−1).

    The heatmaps stand two to a row, the panel against n below them across the figure's width (beside the
    heatmap when there is one method), and its legend below that, outside the data.

    Parameters
    ----------
    cells : sequence of mapping
        Cells of :func:`frontier_cells`.
    path : str or path-like
        The PNG file written (atomically; its folder must exist).
    methods : iterable of str
        The methods given a heatmap, in order (default ``"provable"`` then ``"adam"``); those without a cell are
        skipped.

    Returns
    -------
    path : pathlib.Path
        The file written.
    drawn : list of tuple
        ``(method, m, k, label, state)`` of every cell drawn, with state ``"success"``, ``"no success"`` or
        ``"beyond budget"`` (what the tests check).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..io import atomic_write

    methods = [mt for mt in methods if any(c["method"] == mt for c in cells)]
    ms = sorted({c["m"] for c in cells})
    ks = sorted({c["k"] for c in cells})
    times = [c["median_seconds"] for c in cells if c["median_seconds"]]
    lo, hi = (math.log10(min(times)), math.log10(max(times))) if times else (0.0, 1.0)
    hi = max(hi, lo + 1e-9)
    if len(methods) == 1:
        mosaic: list[Any] = [[methods[0], "n"]]
        size = (11.0, 4.8)
    else:
        rows = [(methods[i:i + 2] + ["."])[:2] for i in range(0, len(methods), 2)]  # ".": left empty
        mosaic = [*rows, ["n", "n"]]
        size = (11.5, 4.4 * len(mosaic) + 0.5)
    fig, panels = plt.subplot_mosaic(mosaic, figsize=size, layout="constrained")
    cell_width = (size[0] / len(mosaic[0]) - 1.7) / max(1, len(ks))  # the colour bar and labels take 1.7 in
    drawn = []
    for method in methods:
        drawn += _frontier_heatmap(fig, panels[method], cells, method, (ms, ks, lo, hi, plt.get_cmap("viridis")),
                                   cell_width)
    _frontier_against_n(panels["n"], cells, methods)
    handles, labels = panels["n"].get_legend_handles_labels()
    if any(state != "success" for *_, state in drawn):
        handles.append(Rectangle((0, 0), 1, 1, fill=False, hatch="///", edgecolor="red", lw=1.5))
        labels.append("hatched: no success, or beyond the budget (≈ its forecast examples)")
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(handles), 3), frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    path = Path(path)
    atomic_write(path, lambda fh: fh.write(buf.getvalue()))
    return path, drawn


def cells_table(cells: Iterable[Mapping[str, Any]]) -> str:
    """Every cell as a Markdown row: seeds (and the rule), successes, failures by reason, medians, phase split.

    Parameters
    ----------
    cells : iterable of mapping
        Cells of :func:`frontier_cells`.

    Returns
    -------
    str
        The Markdown table, the learner's cells first, then by m and k.
    """
    header = ["method", "m", "d", "k", "n", "layers (rule)", "successes", "failures", "median time",
              "phases 1–4 / 5–6", "median examples", "forecast (runs beyond budget)", "median rel. err"]
    rows = []
    for c in sorted(cells, key=lambda c: (c["method"] != "provable", c["m"], c["k"])):
        why = ", ".join(f"{k} {v}" for k, v in sorted(c["failures"].items())) or MISSING
        split = MISSING if c["median_seconds_phases_1_4"] is None else (
            f"{_fmt_seconds(c['median_seconds_phases_1_4'])} / {_fmt_seconds(c['median_seconds_phases_5_6'])}")
        rows.append([c["method"], c["m"], c["d"], c["k"], c["n"], f"{c['runs']} ({fmt(c['seed_rule'])})",
                     f"{c['successes']}/{c['runs']}", why, _fmt_seconds(c["median_seconds"]), split,
                     _fmt_count(c["median_examples"]), _fmt_count(c["predicted_examples"]),
                     fmt(c["median_relative_error"], ".1g")])
    return markdown_table(header, rows)
