"""Phase 5 (and the Θ* of phase 3): the affine hull from the constraints.

Every ``Θ_i`` satisfies ``A vec(Θ) ≈ b``, so the differences ``Θ_i − Θ_j`` are
near-null directions of ``A``: the ``m − 1`` smallest right singular vectors
of the (robustly weighted) constraint matrix span the hull's directions, and
the minimum-norm solution on the remaining directions is the hull's
minimum-norm point ``Θ*``. A clear gap after the ``m − 1`` smallest singular
values identifies ``m`` when it is not given (ours).

Weighting (all ours). ``"precision"`` (the default) weights constraint ``l``
by its expected precision,

.. math:: w_l \\propto \\Big(\\frac{\\|x_j - x_{j_0}\\|}{\\max(r_l, r_{min}) \\, (1/p_j + 1/p_{j_0})}\\Big)^{3/2},

where ``r_l`` is the certifying row's relative residual and ``p_j, p_{j0}`` the
fitted weights of the two tokens. The residual bounds the heads' disagreement
in *output* space; a logit disagreement ``δ`` on the tokens ``(j, j0)`` moves the
output by about ``δ·‖x_j − x_{j0}‖/(1/p_j + 1/p_{j0})``, so the logit error a
residual allows grows like ``r (1/p_j + 1/p_{j0}) / ‖x_j − x_{j0}‖`` (measured in
oracle mode at (m, d, k) = (3, 16, 4) and (6, 16, 2): exponents 0.85–0.91,
0.80–0.90 and −0.83 to −0.91; at k = 2 pairs one bit apart have a median
disagreement of 1.02 against 0.55 eight bits apart). The power 3/2 also
discounts the heavy tail (best of 1, 1.5, 2 on the hull's principal cosines).
Against a weight without the distance (power 1), it raised the
singular-value ratio at (6, 16, 2) from 1.41–1.57 to 2.0–2.5 and the smallest
principal cosine from 0.959–0.976 to 0.991–0.997 (oracle mode, tol 0.03–0.05,
seeds 0–3), and at (3, 16, 4) by 0.2–0.4 in the ratio. The two uses of the
constraints are kept apart: the hull's *directions* need only that the heads
agree on a constraint, so they come from the precision-weighted matrix alone;
the *right-hand sides* also carry outliers, so ``Θ*`` is fitted with
iteratively reweighted least squares (weights ``1/max(|e_l|, median|e|)``, an
L1-like fit) on top of the precision weights. Reweighting or trimming the
directions by their consistency with a first hull raised the ratio by 0.2–0.9
without improving the directions (it would make the gap test misleading), so it
is not done. ``"irls"`` uses the IRLS weights for both uses and ``"none"`` no
weighting; both are kept for comparison.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..geometry import min_norm_point
from ..layer import AttentionLayer
from ._config import CHOICES, LearnConfig, as_config, resolve_config

__all__ = ["SOLVERS", "WEIGHTINGS", "HullUndetermined", "SpanEstimate", "estimate_span", "hull_solve",
           "precision_weights", "token_distances"]


class HullUndetermined(ValueError):
    """The constraints do not pin the hull: too few of them, or too few independent ones."""

#: The weighting schemes of :func:`hull_solve`.
WEIGHTINGS = CHOICES["hull_weighting"]


@dataclass(frozen=True)
class SpanEstimate:
    """The estimated hull: ``Θ*`` (d×d), directions ``V`` (d² × (m−1)), and diagnostics: phase 5's result.

    Parameters
    ----------
    theta_star : ndarray, shape (d, d)
        ``Θ*``, the hull's minimum-norm point.
    directions : ndarray, shape (d², m − 1)
        ``V``: orthonormal directions of the hull (row-major ``vec``).
    m : int
        The heads the hull is for (given, or estimated from the gap).
    m_estimated : bool
        Whether ``m`` was estimated.
    singular_values : ndarray
        The smallest singular values of the weighted constraint matrix, ascending (at most ``max_m + 2``).
    gap_ratios : ndarray
        Ratios of consecutive smallest singular values; ``gap_ratios[j]`` marks m = j + 2.
    seconds : float
        Wall time.
    weighting : str, default "irls"
        The weighting of the constraints used (:data:`WEIGHTINGS`).
    theta_star_error : float, optional
        With the truth: ``‖Θ* − Θ*_true‖_F / ‖Θ*_true‖_F``, against the minimum-norm point of the true heads'
        affine hull.
    principal_cosines : ndarray, optional
        With the truth: the cosines of the principal angles between ``V`` and the true hull's directions.
    hull_distance : float, optional
        With the truth: the largest relative distance of a true head from the estimated hull.
    rank_deficit : int, default 0
        Directions the constraints left unpinned (see the comment on the field).
    """

    theta_star: np.ndarray
    directions: np.ndarray
    m: int
    m_estimated: bool
    singular_values: np.ndarray
    gap_ratios: np.ndarray
    seconds: float
    weighting: str = "irls"
    theta_star_error: float | None = None
    principal_cosines: np.ndarray | None = None
    hull_distance: float | None = None
    #: Directions of Θ the constraints left unpinned (0: the hull is determined); nonzero only when
    #: :func:`estimate_span` was allowed a deficit, and Θ* then has no component along them (the pseudo-inverse's
    #: convention).
    rank_deficit: int = 0

    def summary(self) -> dict[str, Any]:
        """Diagnostics as a JSON-ready dict (the hull itself left out but for ``‖Θ*‖_F``).

        Returns
        -------
        dict
            m and whether it was estimated, the singular values and ratios, the weighting, ``‖Θ*‖_F`` and the
            time; the rank deficit when there is one; with the truth the errors.
        """
        out = {
            "m": self.m,
            "m_estimated": self.m_estimated,
            "smallest_singular_values": self.singular_values.tolist(),
            "gap_ratios": self.gap_ratios.tolist(),
            "weighting": self.weighting,
            "theta_star_norm": float(np.linalg.norm(self.theta_star)),
            "seconds": self.seconds,
        }
        if self.rank_deficit:
            out["rank_deficit"] = self.rank_deficit
        if self.theta_star_error is not None:
            out["theta_star_error"] = self.theta_star_error
            out["principal_cosines"] = [] if self.principal_cosines is None else self.principal_cosines.tolist()
            out["hull_distance"] = self.hull_distance
        return out


def _gap_m(S, max_m, gap_min):
    """``(m, ratios)`` from the smallest singular values ``S`` (ascending): m is 2 + the position of the largest
    ratio if it is at least ``gap_min`` (a gap after the ``m − 1`` smallest values), else 1, and never more than
    ``max_m``. ``ratios`` (the diagnostics' ``gap_ratios``) runs one past the cap, to show the ratio there."""
    ratios = S[1 : max_m + 1] / np.maximum(S[:max_m], 1e-300)
    allowed = ratios[: max(max_m - 1, 0)]  # ratio j marks m = j + 2, which must stay within max_m
    best = int(np.argmax(allowed)) if allowed.size else 0
    return (best + 1 if allowed.size and allowed[best] >= gap_min else 0) + 1, ratios


def token_distances(constraints: Any) -> np.ndarray:  # a sculpt.Constraints (sculpt imports this module)
    """``‖x_j − x_{j0}‖`` per constraint, from the constraint itself.

    ``A_l = x_a (x_j − x_{j0})ᵀ``, so ``‖A_l‖_F = ‖x_a‖·‖x_j − x_{j0}‖``; with Boolean
    tokens ``‖x_a‖ = √d`` and this is exact; with Gaussian tokens it is off by the
    factor ``‖x_a‖/√d = 1 ± O(1/√d)``.

    Parameters
    ----------
    constraints : Constraints
        Phases 2 or 4's constraints (only ``A`` is read).

    Returns
    -------
    ndarray, shape (N,)
        ``‖A_l‖_F / √d`` per constraint.
    """
    d = round(np.sqrt(constraints.A.shape[1]))
    return np.linalg.norm(constraints.A, axis=1) / np.sqrt(d)


def precision_weights(constraints: Any, *, floor: float = 0.05, power: float = 1.5) -> np.ndarray:  # a Constraints
    """Expected precision of each constraint, at most 1:
    ``(‖x_j − x_{j0}‖/(max(r_l, floor·tol)·(1/p_j + 1/p_{j0})))^power``.

    ``floor`` (× the certifying tolerance) keeps a row that happens to fit
    exactly from outweighing every other (ours); see the module docstring for
    the distance and the power.

    Parameters
    ----------
    constraints : Constraints
        Constraints with their token weights ``p_token`` and ``p_ref`` (from
        :func:`~learner.phases.sculpt.certify_rows`).
    floor : float
        The smallest residual used, as a multiple of the certifying tolerance ``constraints.tol`` (and at
        least 10⁻¹²).
    power : float
        The exponent.

    Returns
    -------
    ndarray, shape (N,)
        The weights, scaled so that the largest is 1 (empty for no constraint).

    Raises
    ------
    ValueError
        When the constraints carry no token weights.
    """
    c = constraints
    if c.p_token is None or c.p_ref is None:
        raise ValueError("`constraints` carry no token weights (p_token, p_ref); they come from certify_rows.")
    r = np.maximum(c.residual, max(floor * c.tol, 1e-12))
    w = (token_distances(c) / (r * (1.0 / c.p_token + 1.0 / c.p_ref))) ** power
    return w / w.max() if w.size else w


def _irls_weights(A, b, theta, base):
    e = np.abs(A @ theta - b)
    w = base / np.maximum(e, max(np.median(e), 1e-12))
    return w / w.max()


def _numerical_rank(S, shape):
    """Singular values above numpy's ``matrix_rank`` tolerance, ``S.max()·max(shape)·eps``."""
    top = float(np.max(S)) if S.size else 0.0
    return int((S > top * max(shape) * np.finfo(float).eps).sum()) if top > 0 else 0


#: The ways :func:`hull_solve` computes its SVDs: ``"qr"`` (the default) through the triangle of a QR of the
#: constraints, ``"svd"`` the thin SVD of the constraint matrix itself (the reference).
SOLVERS = ("qr", "svd")


def _svd(M, rhs, solver):
    """``(S, Vt, Uᵀ·rhs)`` of the thin SVD ``M = U S Vt`` (``Uᵀ·rhs`` None without ``rhs``).

    ``solver="qr"`` (ours) never forms ``U``: a Householder QR of ``[M | rhs]`` (``mode="r"``) gives the
    triangle ``R`` of ``M`` and ``Qᵀ·rhs``; the SVD of the ``p × p`` triangle ``R = U_R S Vt`` has ``M``'s singular
    values and right vectors, and ``Uᵀ·rhs = U_Rᵀ (Qᵀ·rhs)``. Both steps are backward stable, so ``S`` agrees
    with ``"svd"``'s to rounding; on a tall matrix (the constraints: ``N ≫ p = d²``) it skips the ``N × p``
    factor ``U``. Matrices with fewer rows than ``2p`` go to the thin SVD either way.
    """
    n, p = M.shape
    if solver == "svd" or n < 2 * p:
        U, S, Vt = np.linalg.svd(M, full_matrices=False)
        return S, Vt, (None if rhs is None else U.T @ rhs)
    R = np.asarray(np.linalg.qr(M if rhs is None else np.column_stack([M, rhs]), mode="r"))  # (asarray: the stub)
    U_R, S, Vt = np.linalg.svd(R[:p, :p])
    return S, Vt, (None if rhs is None else U_R.T @ R[:p, p])


def _min_norm_solution(A, b, w, r, solver="qr"):
    """``(θ, S, Vt)``: min-norm least-squares solution of ``(A·w) θ = b·w`` on the top ``r`` singular directions.

    Directions beyond the matrix's numerical rank are left out (the pseudo-inverse's
    convention): whether the rank suffices is :func:`estimate_span`'s check.
    """
    S, Vt, c = _svd(A * w[:, None], b * w, solver)
    r = min(r, _numerical_rank(S, A.shape))
    return Vt[:r].T @ (c[:r] / S[:r]), S, Vt


def hull_solve(A: np.ndarray, b: np.ndarray, m: int, *, weights: ArrayLike | None = None, irls_rounds: int = 3,
               directions_from: str = "irls", solver: str = "qr") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Θ*, V, S)``: min-norm point, hull directions and singular values (ascending).

    ``weights`` (default all ones) multiply every row. With
    ``directions_from="irls"`` the directions and singular values come from the
    last IRLS round's weighted matrix (the ``"irls"`` weighting); with ``"weights"``
    they come from ``weights`` alone and only ``Θ*`` is reweighted. ``solver`` is one of
    :data:`SOLVERS`; both give the same result to rounding (``"svd"`` is the reference the
    ``bench --span`` benchmark times ``"qr"`` against).

    Parameters
    ----------
    A : ndarray, shape (N, d²)
        The constraint matrix.
    b : ndarray, shape (N,)
        The right-hand sides.
    m : int
        Heads: the hull has ``m − 1`` directions.
    weights : array_like, shape (N,), optional
        Row weights (default all ones).
    irls_rounds : int
        Rounds of iteratively reweighted least squares for ``Θ*`` (weights ``1/max(|e_l|, median|e|)``
        on top of ``weights``).
    directions_from : {"irls", "weights"}
        Where the directions come from (see above); any other value acts as ``"irls"``.
    solver : {"qr", "svd"}
        How the SVDs are computed.

    Returns
    -------
    theta_star : ndarray, shape (d²,)
        ``vec(Θ*)``, the min-norm point on the directions the hull does not span.
    directions : ndarray, shape (d², m − 1)
        The right singular vectors of the ``m − 1`` smallest singular values.
    singular_values : ndarray
        All singular values, ascending.

    Raises
    ------
    ValueError
        For an unknown ``solver``.
    """
    if solver not in SOLVERS:
        raise ValueError(f"`solver` must be one of {SOLVERS}; got {solver!r}.")
    n_params = A.shape[1]
    base = np.ones(A.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    r = n_params - (m - 1)
    w = base
    if directions_from == "weights":
        S, Vt, _ = _svd(A * base[:, None], None, solver)
        V = Vt[r:].T
        # Θ* on the complement of the hull's directions: project them out of A.
        A_perp = A - (A @ V) @ V.T
        theta = _min_norm_solution(A_perp, b, w, r, solver)[0]
        for _ in range(irls_rounds):
            w = _irls_weights(A, b, theta, base)
            theta = _min_norm_solution(A_perp, b, w, r, solver)[0]
        return theta, V, S[::-1]
    theta, S, Vt = _min_norm_solution(A, b, w, r, solver)
    for _ in range(irls_rounds):
        w = _irls_weights(A, b, theta, base)
        theta, S, Vt = _min_norm_solution(A, b, w, r, solver)
    return theta, Vt[r:].T, S[::-1]


def estimate_span(constraints: Any, config: LearnConfig | None = None, *, m: int | None = None,
                  plan_m: int | None = None, truth: AttentionLayer | None = None, allow_deficit: bool = False,
                  irls_rounds: int = 3) -> SpanEstimate:  # constraints: a sculpt.Constraints
    """Phase 5: the hull ``Θ* + span V`` from :class:`Constraints` (``m`` estimated if None).

    The constraints are weighted by ``config.hull_weighting``, one of :data:`WEIGHTINGS` (see the module
    docstring). ``allow_deficit`` (with ``m`` given) returns the estimate of constraints whose rank falls short
    of what the hull needs, instead of raising: Θ* is then the min-norm point, with nothing along the unpinned
    directions, and ``rank_deficit`` counts them (ours: phase 6's refinement fits Θ to the labels themselves,
    which do see those directions).

    Parameters
    ----------
    constraints : Constraints
        Phases 2 or 4's constraints (``A``, ``b``, and for ``"precision"`` the residuals and token weights).
    config : LearnConfig, optional
        Reads ``hull_weighting``, ``gap_min`` (the ratio of consecutive smallest singular values at least which
        marks the hull's dimension when m is estimated; below it, m = 1; None: chosen for the heads planned,
        :func:`learner.phases.resolve_config`) and ``max_m``; None: the defaults, as :func:`learner.learn` runs
        them.
    m : int, optional
        Heads; None estimates m from the singular-value gap (at most the heads planned).
    plan_m : int, optional
        The most heads planned for (:meth:`LearnConfig.plan`: ``m``, else ``config.max_m``): the largest m
        estimated; the diagnostics keep ``plan_m + 2`` singular values.
    truth : AttentionLayer, optional
        The planted layer: the result records ``theta_star_error``, ``principal_cosines`` and
        ``hull_distance``.
    allow_deficit : bool
        With m given: return a rank-deficient estimate instead of raising (see above).
    irls_rounds : int
        Rounds of iteratively reweighted least squares for ``Θ*`` (none with ``"none"``).

    Returns
    -------
    SpanEstimate
        ``Θ*``, the directions, m and the diagnostics.

    Raises
    ------
    HullUndetermined
        (a ValueError) With fewer constraints than unknowns (``d²``), or constraints of too
        low a rank: the hull is not determined.
    ValueError
        For constraints without token weights under ``"precision"``.

    Examples
    --------
    Exact constraints satisfied by two planted heads (``b = A vec(Θ_1) = A vec(Θ_2)``): the gap marks
    m = 2 and the hull holds both heads.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from learner import LearnConfig
    >>> rng = np.random.default_rng(0)
    >>> d, base, step = 3, rng.standard_normal(9), rng.standard_normal(9)
    >>> A = rng.standard_normal((60, 9))
    >>> A -= np.outer(A @ step, step) / (step @ step)  # A·(Θ_2 − Θ_1) = 0
    >>> hull = estimate_span(SimpleNamespace(A=A, b=A @ base), LearnConfig(hull_weighting="irls"))
    >>> hull.m, hull.m_estimated, hull.directions.shape
    (2, True, (9, 1))
    >>> bool(abs(hull.directions[:, 0] @ step) / np.linalg.norm(step) > 1 - 1e-12)
    True
    """
    t0 = time.perf_counter()
    cfg = as_config(config)
    max_m = cfg.plan(m, plan_m)
    cfg, _ = resolve_config(cfg, max(max_m, 1))
    gap_min, weighting = cfg.gap_min, cfg.hull_weighting
    A, b = constraints.A, constraints.b
    n_params = A.shape[1]
    d = round(np.sqrt(n_params))
    if A.shape[0] < n_params:
        raise HullUndetermined(
            f"the constraints do not determine the hull: {A.shape[0]} constraints for d²={n_params} unknowns."
        )
    opts: dict[str, Any] = {"irls_rounds": irls_rounds}
    if weighting == "precision":
        opts |= {"weights": precision_weights(constraints), "directions_from": "weights"}
    elif weighting == "none":
        opts["irls_rounds"] = 0
    m_est: int = m  # type: ignore[assignment]  # set below when m is None
    theta, V, S = hull_solve(A, b, m if m is not None else 1, **opts)
    m_gap, ratios = _gap_m(S, max_m, gap_min)
    if m is None:
        m_est = m_gap
        theta, V, S = hull_solve(A, b, m_est, **opts)
    rank = _numerical_rank(S, A.shape)
    deficit = max(n_params - (m_est - 1) - rank, 0)
    if deficit and not (allow_deficit and m is not None):
        raise HullUndetermined(
            f"the constraints do not determine the hull: {A.shape[0]} constraints of rank {rank} for "
            f"d²={n_params} unknowns, and a hull of dimension {m_est - 1} (m = {m_est}) needs rank "
            f"{n_params - (m_est - 1)} (too few distinct inputs certify: e.g. a small Boolean cube).")
    out = {
        "theta_star": theta.reshape(d, d),
        "directions": V,
        "m": int(m_est),
        "m_estimated": m is None,
        "singular_values": S[: max_m + 2],
        "gap_ratios": ratios,
        "seconds": time.perf_counter() - t0,
        "weighting": weighting,
        "rank_deficit": int(deficit),
    }
    if truth is not None:
        star = min_norm_point(truth.thetas).ravel()  # type: ignore[union-attr]  # exact=False: an array
        out["theta_star_error"] = float(np.linalg.norm(theta - star) / np.linalg.norm(star))
        T = truth.thetas.reshape(truth.m, -1)
        if truth.m > 1 and V.shape[1] > 0:
            Q, _ = np.linalg.qr((T[1:] - T[0]).T)
            out["principal_cosines"] = np.linalg.svd(Q.T @ V, compute_uv=False)
        else:
            out["principal_cosines"] = np.empty(0)
        # Largest relative distance of a true head from the estimated hull.
        rel = [(t - theta) - V @ (V.T @ (t - theta)) for t in T]
        out["hull_distance"] = float(max(np.linalg.norm(r) / np.linalg.norm(t) for r, t in zip(rel, T, strict=True)))
    return SpanEstimate(**out)
