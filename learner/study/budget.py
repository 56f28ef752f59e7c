"""The budgeted frontier's walk: the largest m a gradient baseline learns within a time budget per layer, at fixed d.

For each method and token dimension d (k = 2), :func:`budget_walk` runs one cell of m at a time: each Adam first at
every learning rate of the grid on one tuning layer (seeded apart from the measured layers, as the race tunes),
then ``seeds`` measured layers at the rate with the lowest median validation error, every run stopped by the
baseline itself once it has run ``budget`` seconds (``max_seconds``). A cell passes when its median layer reached
a relative error of 1e-3 within the budget (:func:`learner.study.growth.budgeted_frontier`). From a start m the
walk goes up while cells pass and down while they fail, and stops where the verdict turns, at m = 1, or at the
*cap*: the largest m the learner calls sound at that d (:func:`learner.assumptions.max_sound_m`), so that the
baselines are compared with the learner over the settings the learner claims. The walk, the cap and the rule are
ours; the paper analyses no gradient method.

The runs are the race's (:func:`learner.study.peers.race_study`: the same planted layers and oracle seeds, the
registry's study options such as torch's one thread) with ``max_seconds`` added, so their ids are their own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..hints import PathLike
from ..validation import Each, Integer, Real, Seed, declare

__all__ = ["BUDGET_METHODS", "budget_walk", "walk_steps"]

log = logging.getLogger(__name__)

#: The baselines the walk runs (ours: the race's two Adams; the learner's frontier is read from the growth lines).
BUDGET_METHODS = ("adam", "torch-adam")
#: The study kind of the walk's claim on its folder.
BUDGET_KIND = "budget-study"


def walk_steps(start: int, cap: int, passes: Callable[[int], bool]) -> dict[int, bool]:
    """The cells a walk visits: from ``start``, up while ``passes(m)`` and down while not, until the verdict turns,
    m = 1 or ``cap``.

    Parameters
    ----------
    start : int
        The first m (clipped to ``[1, cap]``).
    cap : int
        The largest m visited.
    passes : callable
        ``passes(m) -> bool``: runs the cell (or reads its records) and says whether it passed.

    Returns
    -------
    dict
        ``{m: passed}`` in the order visited. The frontier is the largest m that passed (exact when m + 1 was
        visited and failed, a lower bound at the cap), or none when m = 1 failed.

    Examples
    --------
    >>> walk_steps(4, 10, lambda m: m <= 6)
    {4: True, 5: True, 6: True, 7: False}
    >>> walk_steps(9, 10, lambda m: m <= 6)
    {9: False, 8: False, 7: False, 6: True}
    >>> walk_steps(12, 10, lambda m: True)
    {10: True}
    """
    if cap < 1:
        raise ValueError(f"`cap` must be at least 1; got cap={cap}.")
    m = min(max(int(start), 1), cap)
    seen: dict[int, bool] = {}
    while True:
        seen[m] = ok = bool(passes(m))
        step = m + 1 if ok else m - 1
        if step < 1 or step > cap or step in seen:
            return seen
        m = step


def _starts(start: Mapping[Any, Any] | None, methods: Sequence[str], ds: Sequence[int]) -> dict[tuple[str, int], int]:
    """``start`` as ``{(method, d): first m}``: a d's single m goes to every method (ValueError naming ``start``
    for a d not in ``ds``, a method the walk does not run, or an m that is not a positive integer)."""
    out: dict[tuple[str, int], int] = {}
    for d, value in (start or {}).items():
        if int(d) not in set(ds):
            raise ValueError(f"`start` must name only d of `ds` ({list(ds)}); got start={dict(start or {})}.")
        per = dict(value) if isinstance(value, Mapping) else {method: value for method in methods}
        stray = sorted(set(per) - set(methods))
        if stray:
            raise ValueError(f"`start` at d = {d} names methods the walk does not run: {stray}; the methods are "
                             f"{list(methods)}.")
        for method, m in per.items():
            if isinstance(m, bool) or not isinstance(m, int) or m < 1:
                raise ValueError(f"`start` must give positive integer m; got {m!r} for {method} at d = {d}.")
            out[(method, int(d))] = m
    return out


@declare(ds=Each(Integer()), seeds=Integer(), lrs=Each(Real()), budget=Real(), seed=Seed(), workers=Integer())
def budget_walk(out: PathLike, *, ds: Sequence[int] = (16, 24, 32), methods: Sequence[str] = BUDGET_METHODS,
                start: Mapping[int, int | Mapping[str, int]] | None = None, seeds: int = 3,
                lrs: Sequence[float] = (1e-2, 3e-2), budget: float | None = None,
                options: Mapping[str, Mapping[str, Any]] | None = None, seed: int = 0, workers: int = 2,
                progress: bool = False, run: bool = True) -> dict[str, Any]:
    """Walk each method's budgeted frontier at each d; resumable from the records in ``out``.

    Parameters
    ----------
    out : str or path-like
        The walk's folder: ``study.json`` (its claim), ``runs/`` (one record per run) and ``summary.json``.
    ds : sequence of int
        Token dimensions (k = 2).
    methods : sequence of str
        Gradient baselines of the registry whose learning rate is tuned (default :data:`BUDGET_METHODS`).
    start : mapping, optional
        ``{d: first m}`` for every method, or ``{d: {method: first m}}`` per method; a d or a method not named
        starts at its cap.
    seeds : int
        Measured layers per cell.
    lrs : sequence of float
        Each baseline's learning-rate grid, tuned per cell on one layer.
    budget : float, optional
        Seconds per layer (default :data:`learner.study.growth.FRONTIER_BUDGET`).
    options : mapping, optional
        Per method, keyword arguments on top of its registry entry's ``study_options`` (not ``lr``, tuned, nor
        ``max_seconds``, the budget).
    seed : int
        Entropy of every run's seed (the race's: the same layers as a race with this seed).
    workers : int
        Runs at a time on the local pool (one thread each).
    progress : bool
        A progress bar per sweep.
    run : bool
        False: run nothing and summarise the records there (each visited cell's records must be there).

    Returns
    -------
    dict
        ``rows`` (:func:`~learner.study.growth.budgeted_frontier` over the measured runs), ``cells`` (per method
        and d, the m visited with their verdicts and chosen learning rate), ``parameters`` and ``note``; also
        written to ``out/summary.json``.
    """
    from ..assumptions import max_sound_m
    from ..io import check_writable_dir, versions
    from ..sweep.engine import claim_study, run_sweep, sweep_lock
    from ..sweep.methods import check_methods, get, method_names
    from ..sweep.records import write_summary
    from ..sweep.runs import STUDY_LOGIT_SCALE, RunSpec, plan_runs
    from .growth import FRONTIER_BUDGET, budgeted_frontier, frontier_markdown
    from .scaling import _choose_lr, _setting_label

    budget = FRONTIER_BUDGET if budget is None else float(budget)
    if budget <= 0:
        raise ValueError(f"`budget` must be positive; got budget={budget}.")
    methods = check_methods("methods", list(methods))
    untuned = [m for m in methods if m not in method_names(tuned_lr=True)]
    if untuned:
        raise ValueError(f"`methods` must be gradient baselines with a tuned learning rate; got {untuned}.")
    lrs = [float(x) for x in lrs]
    starts = _starts(start, methods, ds)
    caps = {d: max_sound_m(d, 2) for d in ds}
    unsound = [d for d, cap in caps.items() if cap < 1]
    if unsound:
        raise ValueError(f"`ds` must be dimensions where the learner calls some m sound at k = 2 (the walk's cap); "
                         f"got ds={list(ds)}, with none at d = {unsound}.")
    given = {name: dict(value or {}) for name, value in (options or {}).items()}
    unknown = sorted(set(given) - set(methods))
    if unknown:
        raise ValueError(f"`options` name methods the walk does not run: {unknown}; the methods are {methods}.")
    for name, value in given.items():
        if {"lr", "max_seconds"} & set(value):
            raise ValueError(f"`options` of {name} must not set 'lr' (tuned) or 'max_seconds' (the budget); "
                             f"got {sorted(value)}.")
    base = {name: dict(get(name).study_options) | given.get(name, {}) | {"max_seconds": budget}
            for name in methods}
    for name in methods:
        get(name).check_options(base[name])
    if run:
        for name in methods:
            get(name).require()  # the extra (torch) is there before the folder is claimed
    out = Path(check_writable_dir("out", out))
    parameters = {"ds": list(ds), "k": 2, "methods": list(methods),
                  "start": {f"{method}:{d}": m for (method, d), m in sorted(starts.items())},
                  "caps": {str(d): c for d, c in caps.items()}, "seeds": seeds, "lrs": lrs, "budget": budget,
                  "options": base, "seed": seed}
    common: dict[str, Any] = {"entropy": seed, "logit_scale": STUDY_LOGIT_SCALE}
    ex: dict[str, Any] = {"backend": "local", "workers": workers, "progress": progress, "run": run}
    records: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    with sweep_lock(out, create=run):
        claim_study(out, BUDGET_KIND, RunSpec.RECORD_KIND, parameters, write=run)
        for method in methods:
            for d in ds:
                def passes(m, method=method, d=d):
                    tune = [s for lr in lrs
                            for s in plan_runs(ms=[m], d=d, k=2, seeds=1, methods=[method], role="tune",
                                               options={method: base[method] | {"lr": lr}}, **common)]
                    tuned, _ = run_sweep(tune, out, **ex)
                    lr = _choose_lr(tuned, lrs)[_setting_label(m, d, 2)]["lr"]
                    specs = plan_runs(ms=[m], d=d, k=2, seeds=seeds, methods=[method],
                                      options={method: base[method] | {"lr": lr}}, **common)
                    got, _ = run_sweep(specs, out, **ex)
                    records.extend(got)
                    (row,) = budgeted_frontier(got, ds=[d], budget=budget)
                    log.info("budget walk: %s at (m, d) = (%d, %d), lr %g: %s", method, m, d, lr,
                             "passed" if row["m"] == m else "failed")
                    cells.append({"method": method, "d": d, "m": m, "lr": lr, "passed": row["m"] == m})
                    return row["m"] == m

                walk_steps(starts.get((method, d), caps[d]), caps[d], passes)
        summary: dict[str, Any] = {"rows": budgeted_frontier(records, ds=list(ds), budget=budget), "cells": cells,
                   "parameters": parameters, "versions": versions(),
                   "note": "walk, cap and rule ours; the paper analyses no gradient method. A cell passes when its "
                           f"median layer reached a relative error of 1e-3 within {budget:g} s; the walk stops at "
                           "the cap, the largest m the learner calls sound at d."}
        table = frontier_markdown(summary["rows"], {"adam": "numpy Adam", "torch-adam": "torch Adam"})
        write_summary(out, summary, table + "\n")
    return summary
