"""Phase 3: refining ``ΣW_i`` from rows that a single token dominates.

Where ``Θ*`` (the hull's minimum-norm point, a proxy for every head) puts a
large margin on one token ``j*``, every head attends to ``j*`` and
``y_a ≈ x_{j*}ᵀ ΣW``; regressing ``y_a`` on ``x_{j*}`` gives ``ΣW`` far more
accurately than phase 1 (the paper's, talk: "Using a crude affine hull
estimate"). Ours: rows must also pass a *vertex residual* test — ``y_a`` close
to ``x_jᵀŴ`` for the token ``j`` that ``Θ*`` picks — and the regression is
repeated with the rows of smallest residual (trimmed least squares), because
at moderate logit scales ``Θ*``'s margin alone admits rows where some head
still spreads its attention.
"""

from __future__ import annotations

import time

import numpy as np

from ..layer import softmax
from .crude_sum import SumEstimate, _sum_error

__all__ = ["refine_sum_w"]


def refine_sum_w(source, w_sum, theta_star=None, *, n_samples=400_000, rounds=8, keep=0.02, batch=100_000,
                 truth=None):
    """Phase 3: trimmed regression of ``y_a`` on the dominant token's ``x_{j*}``.

    Parameters
    ----------
    source : example source
    w_sum : ndarray (d, d)
        The current estimate (phase 1's, or a previous round's).
    theta_star : ndarray (d, d), optional
        The hull's min-norm point. When given, ``j*`` is ``Θ*``'s heaviest token
        and only rows where it also has the smallest vertex residual are used;
        otherwise ``j*`` is the token of smallest vertex residual.
    n_samples, rounds, keep, batch :
        Examples drawn, regression rounds, fraction of rows kept per round
        (halved after the first three rounds), streaming batch.

    Returns
    -------
    SumEstimate
    """
    t0 = time.perf_counter()
    parts = [source.draw(min(batch, n_samples - s)) for s in range(0, n_samples, batch)]
    X = np.concatenate([p[0] for p in parts])
    Y = np.concatenate([p[1] for p in parts])
    n, k, d = X.shape
    allowed = np.ones((n, k, k), dtype=bool)
    if theta_star is not None:
        logits = np.einsum("nac,ce,nbe->nab", X, theta_star, X)
        pick = softmax(logits, axis=-1).argmax(axis=-1)  # (n, a)
        allowed = np.arange(k)[None, None, :] == pick[..., None]
    ynorm = np.linalg.norm(Y, axis=2)
    ynorm = np.where(ynorm > 0, ynorm, np.inf)
    history = []
    est = np.asarray(w_sum, dtype=float)
    for r in range(rounds):
        B = X @ est  # (n, j, d)
        # ‖y_a − b_j‖² = ‖y_a‖² − 2 y_a·b_j + ‖b_j‖², without an (n, k, k, d) array.
        sq = (Y**2).sum(axis=2)[:, :, None] - 2 * Y @ B.transpose(0, 2, 1) + (B**2).sum(axis=2)[:, None, :]
        R = np.sqrt(np.maximum(sq, 0.0)) / ynorm[:, :, None]
        R = np.where(allowed, R, np.inf)
        j = R.argmin(axis=2)
        res = R.min(axis=2)
        frac = keep if r < 3 else keep / 2
        cut = np.quantile(res[np.isfinite(res)], frac) if np.isfinite(res).any() else np.inf
        ii, aa = np.nonzero(res <= cut)
        est = np.linalg.lstsq(X[ii, j[ii, aa]], Y[ii, aa], rcond=None)[0]
        history.append({"round": r, "rows": int(ii.size), "cut": float(cut), "error": _sum_error(est, truth)})
    return SumEstimate(est, n, time.perf_counter() - t0, _sum_error(est, truth), {"rounds": history})
