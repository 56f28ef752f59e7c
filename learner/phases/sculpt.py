"""Phases 2 and 4: sculpting the affine hull of the ``Θ_i`` from certified rows.

If in row ``a`` every head has the same pattern ``p``, then
``y_a = pᵀ X ΣW``. For each example and row we fit ``p`` (with ``Σp = 1``) to
``y_a ≈ pᵀ X Ŵ``; with ``k < d`` a disagreement between heads leaves the row
space of ``XŴ``, so a small relative residual certifies (approximate)
agreement. A certified row gives, for tokens ``j`` with non-negligible weight
and the row's heaviest token ``j0``, the affine constraints

.. math:: \\langle \\Theta, x_a (x_j - x_{j_0})^\\top \\rangle = \\ln(p_j / p_{j_0})

satisfied by every ``Θ_i`` at once, hence by the affine hull. The paper's
(talk, "Sculpting the affine hull"). Ours: the equality-constrained least
squares fit (the simplex's inequalities are checked, not imposed: a certified
row must have every used weight ``>= min_weight``), the thresholds, and
skipping examples whose ``XŴ`` is numerically rank-deficient (repeated or
dependent tokens).

Note (ours): zero-residual disagreements exist whenever ``m(k−1) > d`` (count
the unknowns of ``Σ_i p_iᵀXW_i = qᵀXΣW``), e.g. m = 3, k = 4, d = 8, so the
certificate is then only approximate even in exact arithmetic.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_positive_float

__all__ = [
    "CertificationPremise",
    "Constraints",
    "certification_premise",
    "certify_rows",
    "crude_sculpt",
    "fit_patterns",
    "refined_sculpt",
]


@dataclass(frozen=True)
class Constraints:
    """Affine constraints ``A vec(Θ) ≈ b`` from certified rows, with diagnostics.

    ``A`` has shape (N, d²) (row-major ``vec``), ``b`` shape (N,), ``residual``
    the certifying row's relative residual per constraint. ``errors`` (when the
    truth is known) is ``max_i |A_l vec(Θ_i) − b_l|`` per constraint.
    """

    A: np.ndarray
    b: np.ndarray
    residual: np.ndarray
    n_examples: int
    rows_seen: int
    rows_certified: int
    tol: float
    min_weight: float
    seconds: float
    errors: np.ndarray | None = None

    @property
    def count(self):
        return int(self.b.shape[0])

    def summary(self):
        """Diagnostics as a JSON-ready dict."""
        out = {
            "examples": self.n_examples,
            "rows_seen": self.rows_seen,
            "rows_certified": self.rows_certified,
            "constraints": self.count,
            "constraints_per_1000_examples": 1000 * self.count / max(self.n_examples, 1),
            "rank": int(np.linalg.matrix_rank(self.A)) if self.count else 0,
            "tol": self.tol,
            "min_weight": self.min_weight,
            "seconds": self.seconds,
        }
        if self.errors is not None and self.count:
            out["constraint_error_median"] = float(np.median(self.errors))
            out["constraint_error_p90"] = float(np.quantile(self.errors, 0.9))
        return out


def fit_patterns(X, Y, w_sum):
    """Per row, the ``p`` with ``Σp = 1`` minimising ``‖y_a − pᵀXŴ‖``.

    Returns ``(P, residual, well_posed)``: ``P[n, a, j]``, the relative residual
    per row, and per example whether ``XŴ`` has full row rank (repeated or
    dependent tokens make the fit ambiguous; such examples get a tiny ridge and
    should not certify anything).
    """
    n, k, _ = X.shape
    B = X @ w_sum  # (n, k, d): row j is x_jᵀ Ŵ
    G = B @ B.transpose(0, 2, 1)
    scale = np.maximum(np.trace(G, axis1=1, axis2=2) / k, 1e-300)
    sign, logdet = np.linalg.slogdet(G)
    well_posed = (sign > 0) & (logdet > k * np.log(scale) + np.log(1e-8))
    G = G + (1e-9 * scale)[:, None, None] * np.eye(k)
    # min ‖y_a − Bᵀp‖ s.t. 1ᵀp = 1:  p = u − λ v with G u = B y_a, G v = 1.
    rhs = np.concatenate([B @ Y.transpose(0, 2, 1), np.ones((n, k, 1))], axis=2)
    sol = np.linalg.solve(G, rhs)
    u, v = sol[:, :, :k], sol[:, :, k:]
    P = (u - ((u.sum(axis=1) - 1.0) / v.sum(axis=1))[:, None, :] * v).transpose(0, 2, 1)
    ynorm = np.linalg.norm(Y, axis=2)
    res = np.linalg.norm(Y - P @ B, axis=2) / np.where(ynorm > 0, ynorm, np.inf)
    return P, res, well_posed


def certify_rows(X, Y, w_sum, *, tol, min_weight):
    """Certify rows of a batch and turn them into constraints.

    Returns ``(A, b, residual, rows_certified)``.
    """
    d = X.shape[2]
    P, res, well_posed = fit_patterns(X, Y, w_sum)
    # Certified: a well-posed fit, small residual, a proper distribution (no weight below -1e-3).
    ok = well_posed[:, None] & (res < tol) & (P.min(axis=2) > -1e-3)
    ii, aa = np.nonzero(ok)
    if ii.size == 0:
        return np.empty((0, d * d)), np.empty(0), np.empty(0), 0
    p = P[ii, aa]  # (c, k)
    j0 = p.argmax(axis=1)
    p0 = p[np.arange(ii.size), j0]
    use = (p >= min_weight) & (np.arange(p.shape[1])[None, :] != j0[:, None])
    xa = X[ii, aa]  # (c, d)
    diff = X[ii] - X[ii, j0][:, None, :]  # (c, k, d)
    rows = np.einsum("nc,nje->njce", xa, diff)[use].reshape(-1, d * d)
    rhs_b = np.log(p[use] / np.broadcast_to(p0[:, None], use.shape)[use])
    resid = np.broadcast_to(res[ii, aa][:, None], use.shape)[use]
    return rows, rhs_b, resid, int(ii.size)


def _sculpt(source, w_sum, *, tol, min_weight, target, max_examples, batch, truth):
    t0 = time.perf_counter()
    tol = check_positive_float("tol", tol)
    min_weight = check_positive_float("min_weight", min_weight)
    max_examples = check_int("max_examples", max_examples)
    parts_A, parts_b, parts_r = [], [], []
    count = drawn = seen = certified = 0
    while count < target and drawn < max_examples:
        X, Y = source.draw(min(batch, max_examples - drawn))
        drawn += X.shape[0]
        seen += X.shape[0] * X.shape[1]
        A, b, r, c = certify_rows(X, Y, w_sum, tol=tol, min_weight=min_weight)
        parts_A.append(A)
        parts_b.append(b)
        parts_r.append(r)
        count += b.shape[0]
        certified += c
    d = w_sum.shape[0]
    A = np.concatenate(parts_A) if parts_A else np.empty((0, d * d))
    b = np.concatenate(parts_b) if parts_b else np.empty(0)
    r = np.concatenate(parts_r) if parts_r else np.empty(0)
    errors = None
    if truth is not None:
        errors = np.abs(A @ truth.thetas.reshape(truth.m, -1).T - b[:, None]).max(axis=1) if b.size else np.empty(0)
    return Constraints(A, b, r, drawn, seen, certified, tol, min_weight, time.perf_counter() - t0, errors)


def crude_sculpt(source, w_sum, *, tol=0.05, min_weight=0.1, target=192, max_examples=20_000_000,
                 batch=100_000, truth=None):
    """Phase 2: constraints from rows certified against the crude ``ΣW`` estimate.

    Draws batches from ``source`` until ``target`` constraints or
    ``max_examples`` examples. Returns :class:`Constraints`.
    """
    return _sculpt(source, np.asarray(w_sum, dtype=float), tol=tol, min_weight=min_weight,
                   target=check_int("target", target), max_examples=max_examples, batch=batch, truth=truth)


def refined_sculpt(source, w_sum, *, tol=0.015, min_weight=0.1, target=384, max_examples=20_000_000,
                   batch=100_000, truth=None):
    """Phase 4: the same sculpting with the refined ``ΣW`` and a tighter tolerance."""
    return _sculpt(source, np.asarray(w_sum, dtype=float), tol=tol, min_weight=min_weight,
                   target=check_int("target", target), max_examples=max_examples, batch=batch, truth=truth)


@dataclass(frozen=True)
class CertificationPremise:
    """How well the residual test certifies agreement, measured against the true patterns.

    ``disagreement`` is, per row, ``max_i ½‖p_i − p̂‖_1`` (total variation between
    each head's true pattern and the fitted one). ``certified_quantile`` is its
    ``quantile`` over certified rows; ``holds`` is whether that is at most
    ``bound``.
    """

    tol: float
    bound: float
    quantile: float
    rows: int
    certified: int
    certified_quantile: float
    uncertified_median: float
    holds: bool


def certification_premise(layer, k, *, tol=0.01, bound=0.1, quantile=0.95, n_samples=200_000, rng=None):
    """Check the premise of sculpting: rows that pass the residual test have nearly equal patterns.

    With the *true* ``ΣW``, fit every row as phase 2 does and compare the fitted
    pattern with each head's true pattern. Statement (ours, measured on planted
    layers): with residual ``< tol = 0.01``, 95 % of certified rows have every
    head within total variation ``0.1`` of the fit. It needs ``W``'s that tell
    the heads apart: with ``W_1 = W_2`` every row fits exactly (``y_a = p̄ᵀXΣW``)
    and the test certifies rows whose patterns disagree (the negative control).
    """
    from ..inputs import sample_inputs
    from ..layer import AttentionLayer

    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
    rng = np.random.default_rng(rng)
    X = sample_inputs(n_samples, k, layer.d, rng=rng)
    Y = layer(X)
    w_sum = layer.ws.sum(axis=0)
    P_fit, res, well_posed = fit_patterns(X, Y, w_sum)
    P_true = layer.attention(X)  # (n, m, a, j)
    tv = 0.5 * np.abs(P_true - P_fit[:, None]).sum(axis=3).max(axis=1)  # (n, a)
    cert = well_posed[:, None] & (res < tol) & (P_fit.min(axis=2) > -1e-3)
    cq = float(np.quantile(tv[cert], quantile)) if cert.any() else float("nan")
    return CertificationPremise(
        tol=tol, bound=bound, quantile=quantile, rows=int(res.size), certified=int(cert.sum()),
        certified_quantile=cq, uncertified_median=float(np.median(tv[~cert])),
        holds=bool(cert.any() and cq <= bound),
    )
