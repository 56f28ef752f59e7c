"""Phase 5 (and the Θ* of phase 3): the affine hull from the constraints.

Every ``Θ_i`` satisfies ``A vec(Θ) ≈ b``, so the differences ``Θ_i − Θ_j`` are
near-null directions of ``A``: the ``m − 1`` smallest right singular vectors
of the (robustly weighted) constraint matrix span the hull's directions, and
the minimum-norm solution on the remaining directions is the hull's
minimum-norm point ``Θ*``. A clear gap after the ``m − 1`` smallest singular
values identifies ``m`` when it is not given (ours). The weighting is
iteratively reweighted least squares with weights ``1/max(|e_l|, median|e|)``
(an L1-like fit, ours: the prototype's constraints have heavy-tailed errors).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..geometry import min_norm_point

__all__ = ["SpanEstimate", "estimate_span", "hull_solve"]


@dataclass(frozen=True)
class SpanEstimate:
    """The estimated hull: ``Θ*`` (d×d), directions ``V`` (d² × (m−1)), and diagnostics."""

    theta_star: np.ndarray
    directions: np.ndarray
    m: int
    m_estimated: bool
    singular_values: np.ndarray
    gap_ratios: np.ndarray
    seconds: float
    theta_star_error: float | None = None
    principal_cosines: np.ndarray | None = None
    hull_distance: float | None = None

    def summary(self):
        out = {
            "m": self.m,
            "m_estimated": self.m_estimated,
            "smallest_singular_values": self.singular_values.tolist(),
            "gap_ratios": self.gap_ratios.tolist(),
            "theta_star_norm": float(np.linalg.norm(self.theta_star)),
            "seconds": self.seconds,
        }
        if self.theta_star_error is not None:
            out["theta_star_error"] = self.theta_star_error
            out["principal_cosines"] = [] if self.principal_cosines is None else self.principal_cosines.tolist()
            out["hull_distance"] = self.hull_distance
        return out


def _gap_m(S, max_m, gap_min):
    """m from the smallest singular values ``S`` (ascending): 1 + the position of the first clear gap."""
    ratios = S[1 : max_m + 1] / np.maximum(S[:max_m], 1e-300)
    best = int(np.argmax(ratios)) if ratios.size else 0
    return (best + 1 if ratios.size and ratios[best] >= gap_min else 0) + 1, ratios


def hull_solve(A, b, m, *, irls_rounds=3):
    """``(Θ*, V, S)``: min-norm point, hull directions and singular values (ascending) of the weighted system."""
    n_params = A.shape[1]
    w = np.ones(A.shape[0])
    for _ in range(irls_rounds + 1):
        U, S, Vt = np.linalg.svd(A * w[:, None], full_matrices=False)
        r = n_params - (m - 1)
        coef = (U[:, :r].T @ (b * w)) / S[:r]
        theta = Vt[:r].T @ coef
        e = np.abs(A @ theta - b)
        w = 1.0 / np.maximum(e, max(np.median(e), 1e-12))
        w /= w.max()
    return theta, Vt[r:].T, S[::-1]


def estimate_span(constraints, *, m=None, gap_min=3.0, max_m=6, irls_rounds=3, truth=None):
    """Phase 5: the hull ``Θ* + span V`` from :class:`Constraints` (``m`` estimated if None).

    Raises
    ------
    ValueError
        With fewer constraints than unknowns (``d²``): the hull is not determined.
    """
    t0 = time.perf_counter()
    A, b = constraints.A, constraints.b
    n_params = A.shape[1]
    d = round(np.sqrt(n_params))
    if A.shape[0] < n_params:
        raise ValueError(
            f"the constraints do not determine the hull: {A.shape[0]} constraints for d²={n_params} unknowns."
        )
    m_est = m
    theta, V, S = hull_solve(A, b, m if m is not None else 1, irls_rounds=irls_rounds)
    m_gap, ratios = _gap_m(S, max_m, gap_min)
    if m is None:
        m_est = m_gap
        theta, V, S = hull_solve(A, b, m_est, irls_rounds=irls_rounds)
    out = {
        "theta_star": theta.reshape(d, d),
        "directions": V,
        "m": int(m_est),
        "m_estimated": m is None,
        "singular_values": S[: max_m + 2],
        "gap_ratios": ratios,
        "seconds": time.perf_counter() - t0,
    }
    if truth is not None:
        star = min_norm_point(truth.thetas).ravel()
        out["theta_star_error"] = float(np.linalg.norm(theta - star) / np.linalg.norm(star))
        T = truth.thetas.reshape(truth.m, -1)
        if truth.m > 1 and V.shape[1] > 0:
            Q, _ = np.linalg.qr((T[1:] - T[0]).T)
            out["principal_cosines"] = np.linalg.svd(Q.T @ V, compute_uv=False)
        else:
            out["principal_cosines"] = np.empty(0)
        # Largest relative distance of a true head from the estimated hull.
        rel = [(t - theta) - V @ (V.T @ (t - theta)) for t in T]
        out["hull_distance"] = float(max(np.linalg.norm(r) / np.linalg.norm(t) for r, t in zip(rel, T)))
    return SpanEstimate(**out)
