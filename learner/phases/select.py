"""After phase 6: how many heads (ours, not the paper's: the paper is given m).

Three decisions on top of phase 6's fit, each a function of phase 4's constraints, phase 5's hull and a
phase-6 callable (``phase6(span) -> SearchResult``), so that they are tested on constructed hulls and fits:

- :func:`select_m` — m unknown: phase 6 for each m the singular-value gap allows, smallest first; the first
  layer that reaches the floor and meets the paper's conditions is kept.
- :func:`probe_more_heads` — m given, and a residual that is not label noise: whether m + 1 heads reach the
  floor on the same constraints (a clause for the failure message).
- :func:`drop_redundant` — m given too large: empty heads dropped, coinciding heads merged, the smaller
  layer refitted on fresh examples and kept when it fits as well and meets the conditions.

:func:`reaches_floor` is the rule all three use: a fit reached the planted layer when its held-out error is
within ``success_tol``, or its residual is label noise alone (:mod:`learner.phases.noise`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ..assumptions import assumptions
from ..oracle import draw_checked
from ._config import LearnConfig, as_config, resolve_config
from .noise import STRUCTURE_ALPHA
from .search import heldout_relative_error, refit
from .span import HullUndetermined, estimate_span

__all__ = ["CANDIDATE_GAP", "DUPLICATE_TOL", "EMPTY_TOL", "REDUNDANT_SLACK", "candidate_ms", "drop_redundant",
           "probe_more_heads", "reaches_floor", "redundant_heads", "select_m"]

log = logging.getLogger(__name__)

#: Unknown m: phase 6 also tries every m whose singular-value ratio is at least this (ours: ratios off the
#: true m stayed at most 1.45 in every run at m <= 4; LearnConfig.gap_min).
CANDIDATE_GAP = 1.5

#: With m given too large, the smaller layer is kept when its held-out error is at most this many times the
#: given m's (or within success_tol) (ours, not tuned: a margin for the scatter of two held-out errors).
REDUNDANT_SLACK = 2

#: Redundant heads (m given too large, ours): two heads are one when their Θ's are this close (relative
#: Frobenius distance), a head is empty when its ‖W‖_F is this small against the largest.
DUPLICATE_TOL, EMPTY_TOL = 1e-3, 1e-6

#: Phase 6 as the decisions call it: a hull (phase 5's result) in, phase 6's result out.
Search = Callable[[Any], Any]


def reaches_floor(p6: Any, success_tol: float) -> bool:
    """Whether phase 6's layer reached the planted one: held-out error within ``success_tol`` or at the noise
    floor (:mod:`learner.phases.noise`).

    Parameters
    ----------
    p6 : SearchResult
        Phase 6's result (anything with ``heldout_error`` and ``noise``).
    success_tol : float
        The largest held-out relative error that counts as success (``LearnConfig.success_tol``).

    Returns
    -------
    bool
        True when ``p6.heldout_error <= success_tol``, or when the noise-floor test passed (``p6.noise`` is
        set only then).
    """
    return bool(p6.heldout_error <= success_tol or p6.noise is not None)


def candidate_ms(gap_ratios: Any, gap_m: int, plan_m: int) -> list[int]:
    """The m's :func:`select_m` tries, smallest first: 1, the gap rule's ``gap_m``, and every m <= ``plan_m`` whose
    singular-value ratio (``gap_ratios[m − 2]``) is at least :data:`CANDIDATE_GAP`.

    Parameters
    ----------
    gap_ratios : sequence of float
        Phase 5's ratios of consecutive smallest singular values; ``gap_ratios[j]`` marks m = j + 2.
    gap_m : int
        The m of the gap rule (phase 5's own).
    plan_m : int
        The largest m the run plans for.

    Returns
    -------
    list of int
        The candidate m's, distinct and increasing.

    Examples
    --------
    >>> candidate_ms([1.2, 3.4, 1.6, 1.1], gap_m=3, plan_m=4)
    [1, 3, 4]
    """
    ratios = list(gap_ratios)
    return sorted({1, gap_m} | {c for c in range(2, plan_m + 1)
                                if len(ratios) >= c - 1 and ratios[c - 2] >= CANDIDATE_GAP})


def select_m(p4: Any, p5: Any, phase6: Search, config: LearnConfig | None = None, *, plan_m: int | None = None,
             truth: Any = None) -> tuple[Any, Any, list[dict]]:
    """Unknown m: phase 6 for each m the gap allows, smallest first; the first whose layer reaches the
    floor and meets the paper's conditions is kept.

    The candidates are :func:`candidate_ms`. The gap rule alone misreads some one-head layers at (d, k) = (8, 4)
    as two heads (a weakly determined direction gives a ratio of 3.23): the data then decide, since a one-head
    fit of a one-head layer reaches the floor and is smaller. The gap rule's m uses phase 5's own hull
    ``p5``; the others are spanned from phase 4's constraints ``p4``.

    Parameters
    ----------
    p4 : Constraints
        Phase 4's constraints, from which the hulls of the other m's are estimated.
    p5 : SpanEstimate
        Phase 5's hull, with the gap rule's m and its ``gap_ratios``.
    phase6 : callable
        Phase 6: ``phase6(span) -> SearchResult``.
    config : LearnConfig, optional
        Reads ``success_tol`` (:func:`reaches_floor`) and the hulls' settings (:func:`learner.phases.estimate_span`);
        None: the defaults.
    plan_m : int, optional
        The largest m the run plans for (:meth:`LearnConfig.plan`; None: ``config.max_m``).
    truth : AttentionLayer, optional
        The planted layer: the hulls record their errors against it.

    Returns
    -------
    span : SpanEstimate
        The kept m's hull (the gap rule's when none is kept).
    p6 : SearchResult
        Its phase 6.
    tried : list of dict
        Every m tried, in order, with its held-out relative error and verdict (``"kept"``, ``"does not
        reach the floor"``, the conditions it violates, or an undetermined hull).
    """
    cfg = as_config(config)
    plan_m = cfg.plan(None, plan_m)
    cfg, _ = resolve_config(cfg, max(plan_m, 1))
    tried: list[dict[str, Any]] = []
    results: dict[int, tuple[Any, Any]] = {}
    for c in candidate_ms(p5.gap_ratios, p5.m, plan_m):
        if c == p5.m:
            span = p5
        else:
            try:
                span = estimate_span(p4, cfg, m=c, plan_m=plan_m, truth=truth)
            except HullUndetermined as exc:
                tried.append({"m": c, "verdict": f"hull undetermined: {exc}"})
                continue
        p6 = phase6(span)
        results[c] = (span, p6)
        if not reaches_floor(p6, cfg.success_tol):
            verdict = "does not reach the floor"
        else:
            report = assumptions(p6.layer)
            verdict = ("kept" if report.ok else
                       f"reaches the floor but violates the conditions ({', '.join(report.failed)})")
        tried.append({"m": c, "heldout_relative_error": p6.heldout_error, "verdict": verdict})
        log.info("unknown m: m = %d, held-out relative error %.3g: %s", c, p6.heldout_error, verdict)
        if verdict == "kept":
            break
    # The gap rule's m is always searched (it is a candidate, and its hull is phase 5's own): the fallback.
    kept = next((row["m"] for row in tried if row.get("verdict") == "kept"), p5.m)
    span, p6 = results[kept]
    return span, p6, tried


def probe_more_heads(p4: Any, p6: Any, phase6: Search, config: LearnConfig | None = None, *,
                     m: int | None) -> tuple[dict | None, str]:
    """With m given and a residual that is not noise (structure p-value below
    :data:`~learner.phases.noise.STRUCTURE_ALPHA`): whether m + 1 heads (at most ``config.max_m``) reach the floor, by
    phase 6 on phase 4's constraints.

    Parameters
    ----------
    p4 : Constraints
        Phase 4's constraints, from which the hull of m + 1 heads is estimated.
    p6 : SearchResult
        Phase 6's result with m heads (its ``noise_test`` decides whether to probe).
    phase6 : callable
        Phase 6: ``phase6(span) -> SearchResult``.
    config : LearnConfig, optional
        Reads ``max_m`` (the largest m the probe may try), ``success_tol`` (:func:`reaches_floor`) and the hull's
        settings (:func:`learner.phases.estimate_span`); None: the defaults.
    m : int or None
        The given m; None (m estimated): no probe.

    Returns
    -------
    probe : dict or None
        The probe's record (m, held-out relative error, whether it reaches the floor); None when no probe ran
        (no structure in the residual, m + 1 above ``config.max_m``, or an undetermined hull).
    clause : str
        The clause the failure message adds: "" unless the probe reaches the floor.
    """
    cfg = as_config(config)
    test = p6.noise_test
    if m is None or test is None or test.structure_p >= STRUCTURE_ALPHA or m + 1 > cfg.max_m:
        return None, ""
    try:
        span = estimate_span(p4, cfg, m=m + 1)
    except HullUndetermined:
        return None, ""
    probe = phase6(span)
    reached = reaches_floor(probe, cfg.success_tol)
    record = {"m": m + 1, "heldout_relative_error": probe.heldout_error, "reaches_floor": reached}
    if not reached:
        return record, ""
    return record, (f"; the residual shows more heads: with m = {m + 1} phase 6 reaches held-out relative error "
                    f"{probe.heldout_error:.3g} on the same constraints (give m = {m + 1}, or no m)")


def redundant_heads(thetas: np.ndarray, ws: np.ndarray) -> tuple[list[list[int]], list[str]]:
    """The heads of a layer grouped into distinct ones: ``(groups, notes)``. A head whose ‖W‖_F is at most
    :data:`EMPTY_TOL` of the largest is left out (empty); a head whose Θ is within :data:`DUPLICATE_TOL`
    (relative Frobenius distance) of a kept group's first head joins that group.

    Parameters
    ----------
    thetas : ndarray, shape (m, d, d)
        The heads' ``Θ_i``.
    ws : ndarray, shape (m, d, d)
        The heads' ``W_i``.

    Returns
    -------
    groups : list of list of int
        The distinct heads, each a list of head indices (its first one leads).
    notes : list of str
        Why a head was left out or merged, one note per such head.

    Examples
    --------
    >>> import numpy as np
    >>> thetas = np.stack([np.eye(2), 2 * np.eye(2), np.eye(2)])
    >>> ws = np.stack([np.eye(2), np.eye(2), 0 * np.eye(2)])
    >>> redundant_heads(thetas, ws)[0]
    [[0], [1]]
    >>> redundant_heads(thetas, np.stack([np.eye(2)] * 3))
    ([[0, 2], [1]], ['head 2 duplicates head 0 (‖ΔΘ‖/‖Θ‖ = 0; merged)'])
    """
    m = len(thetas)
    w_norms = np.linalg.norm(ws.reshape(m, -1), axis=1)
    notes: list[str] = []
    keep: list[list[int]] = []
    largest = float(w_norms.max())
    for i in range(m):
        if w_norms[i] <= EMPTY_TOL * largest:
            notes.append(f"head {i} is empty (‖W‖_F = {w_norms[i]:.2g})")
            continue
        twin = next((j for j in keep if np.linalg.norm(thetas[i] - thetas[j[0]])
                     <= DUPLICATE_TOL * max(float(np.linalg.norm(thetas[i])), 1e-300)), None)
        if twin is not None:
            twin.append(i)
            notes.append(f"head {i} duplicates head {twin[0]} (‖ΔΘ‖/‖Θ‖ = "
                         f"{np.linalg.norm(thetas[i] - thetas[twin[0]]) / np.linalg.norm(thetas[i]):.2g}; merged)")
        else:
            keep.append([i])
    return keep, notes


def drop_redundant(layer: Any, source: Any,
                   config: LearnConfig | None = None) -> tuple[tuple[Any, float, str] | None, dict | None]:
    """With m given too large: the layer without its redundant heads (:func:`redundant_heads`; merged heads take
    the mean Θ, the refit gives their W), refitted by variable projection on ``config.n_search`` fresh examples
    and scored on as many more.

    Parameters
    ----------
    layer : AttentionLayer
        Phase 6's layer with the given m.
    source : LayerOracle or ArraySource
        Where the fresh examples come from (``2·n_search`` of them are drawn when a head is redundant).
    config : LearnConfig, optional
        Reads ``n_search`` (examples of the refit, and as many held out), ``max_nfev`` (the refit's cap on
        residual evaluations), ``search_memory`` (its memory budget, bytes) and ``success_tol`` (a held-out
        relative error within it keeps the smaller layer); None: the defaults.

    Returns
    -------
    kept : (AttentionLayer, float, str) or None
        ``(layer, held-out error, note)`` when the smaller layer's held-out error is within ``success_tol`` or
        :data:`REDUNDANT_SLACK` times the given layer's and it meets the paper's conditions, else None.
    record : dict or None
        The notes, the heads kept and both held-out errors; None when no head is redundant (or every head is
        empty).
    """
    cfg = as_config(config)
    n_search, success_tol = cfg.n_search, cfg.success_tol
    thetas = layer.thetas
    keep, notes = redundant_heads(thetas, layer.ws)
    if len(keep) == layer.m or not keep:
        return None, None
    start = np.stack([thetas[g].mean(axis=0) for g in keep])
    X, Y = draw_checked(source, n_search)
    Xh, Yh = draw_checked(source, n_search)
    reduced = refit(start, X, Y, max_iter=cfg.max_nfev, max_bytes=cfg.search_memory, solver=cfg.refine_solver)
    heldout = heldout_relative_error(reduced, Xh, Yh)
    full = heldout_relative_error(layer, Xh, Yh)
    record = {"notes": notes, "heads_kept": len(keep), "heldout_relative_error": heldout,
              "given_m_heldout_relative_error": full}
    if not (heldout <= success_tol or heldout <= REDUNDANT_SLACK * full) or not assumptions(reduced).ok:
        return None, record
    return (reduced, heldout, "; ".join(notes)), record
