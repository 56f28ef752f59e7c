"""Phase 6: ε-net search inside the hull, least squares for the ``W_i``, joint refinement.

Each head is written ``Θ_i = Θ* + V α_i`` with ``α_i`` on a grid (the ε-net) of
radius ``net_radius·‖Θ*‖_F`` in the hull's ``m − 1`` coordinates. For fixed
``Θ``'s the layer is linear in the ``W``'s, so every m-tuple of net points is
scored by the linear least-squares fit of the ``W``'s (from precomputed Gram
blocks, so a tuple costs one ``md × md`` solve); the best tuples are compared
on held-out examples. That is the paper's phase 6 (talk: "Epsilon-net over
span to learn F"). Ours: the grid's radius and resolution, the exhaustive
search over tuples of a grid (rather than a worst-case ε-net), and the joint
refinement of all parameters by nonlinear least squares (scipy's trust-region
reflective method) with an analytic Jacobian, which carries the warm start to
floating-point accuracy.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from ..layer import AttentionLayer, attention_patterns
from ..metrics import match_heads, relative_error

__all__ = ["SearchResult", "layer_jacobian", "search_heads"]


@dataclass(frozen=True)
class SearchResult:
    """Phase 6's result: the warm start (best net tuple + least squares) and the refined layer."""

    layer: AttentionLayer
    warm_start: AttentionLayer
    warm_start_heldout: float
    heldout_error: float
    tuples_scored: int
    net_points: int
    nfev: int
    n_examples: int
    seconds: float
    refine_seconds: float
    warm_start_error: float | None = None
    warm_start_param_error: float | None = None

    def summary(self):
        out = {
            "tuples_scored": self.tuples_scored,
            "net_points": self.net_points,
            "warm_start_heldout_relative_error": self.warm_start_heldout,
            "heldout_relative_error": self.heldout_error,
            "refinement_evaluations": self.nfev,
            "examples": self.n_examples,
            "seconds": self.seconds,
            "refine_seconds": self.refine_seconds,
        }
        if self.warm_start_error is not None:
            out["warm_start_relative_error"] = self.warm_start_error
            out["warm_start_param_error"] = self.warm_start_param_error
        return out


def _features(theta, X):
    """Φ = softmax(XΘXᵀ) X, shape (n, k, d): the regressors of W for a head with this Θ."""
    return attention_patterns(theta[None], X)[:, 0] @ X


def _grid(m, points_1d, points_2d):
    if m == 1:
        return np.zeros((1, 0))
    if m == 2:
        return np.linspace(-1, 1, points_1d)[:, None]
    axis = np.linspace(-1, 1, points_2d)
    return np.array(list(itertools.product(axis, repeat=m - 1)))


def _fit_ws(Phis, Y):
    """Least-squares W's for given features (list of (n, k, d)) and residual sum of squares."""
    D = np.concatenate([p.reshape(-1, p.shape[-1]) for p in Phis], axis=1)
    W, *_ = np.linalg.lstsq(D, Y.reshape(-1, Y.shape[-1]), rcond=None)
    d = Y.shape[-1]
    return W.reshape(len(Phis), d, d)


def _heldout(layer, X, Y):
    return float(np.sum((layer(X) - Y) ** 2) / np.sum(Y**2))


def layer_jacobian(thetas, ws, X):
    """Residual Jacobian of ``F(X)`` w.r.t. (Θ_1..Θ_m, W_1..W_m), shape (n·k·d, 2md²).

    ``∂F_a/∂W_i = (P_i X)_a ⊗ I`` and, with ``v_b = x_bᵀW_i`` and ``x̄ = Σ_b P_i[a,b] x_b``,
    ``∂F_a[e]/∂Θ_i[c, c'] = x_a[c] Σ_b P_i[a,b](x_b[c'] − x̄[c']) v_b[e]``.
    """
    n, k, d = X.shape
    m = len(thetas)
    J = np.zeros((n, k, d, 2, m, d, d))
    eye = np.eye(d)
    patterns = attention_patterns(thetas, X)  # (n, m, k, k)
    for i in range(m):
        P = patterns[:, i]
        Z = P @ X  # (n, a, c)
        V = X @ ws[i]  # (n, b, e)
        PV = P @ V  # (n, a, e)
        C = np.einsum("nab,nbc,nbe->nace", P, X, V) - Z[:, :, :, None] * PV[:, :, None, :]
        J[:, :, :, 0, i] = np.einsum("nac,nape->naecp", X, C)
        J[:, :, :, 1, i] = Z[:, :, None, :, None] * eye[None, None, :, None, :]
    return J.reshape(n * k * d, 2 * m * d * d)


def _refine(thetas, ws, X, Y, max_nfev):
    m, d, _ = thetas.shape

    def unpack(z):
        z = z.reshape(2, m, d, d)
        return z[0], z[1]

    def resid(z):
        t, w = unpack(z)
        return (AttentionLayer(t, w)(X) - Y).ravel()

    def jac(z):
        t, w = unpack(z)
        return layer_jacobian(t, w, X)

    z0 = np.concatenate([thetas.ravel(), ws.ravel()])
    # Trust-region reflective rather than MINPACK's "lm": in identical fresh processes "lm" returned
    # last-bit different parameters in 1 of 5 runs (its compiled loops depend on where the arrays
    # sit in memory), which its iterations amplified to 1e-12 relative on an unconverged run; "trf"
    # (numpy and LAPACK) gave identical results 5 of 5 and the same 1e-31 accuracy at (1, 8, 4)
    # and (2, 8, 4). Bit-reproducible runs are what lets a sweep's records match across backends.
    sol = least_squares(resid, z0, jac=jac, method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=max_nfev)
    t, w = unpack(sol.x)
    return t.copy(), w.copy(), int(sol.nfev)


def search_heads(source, theta_star, directions, m, *, net_radius=2.0, net_points=41, net_points_3d=13,
                 n_search=2000, keep_tuples=20, examples_per_param=1.5, max_nfev=200, truth=None, k=None):
    """Phase 6: the best m-tuple on an ε-net of the hull, then joint least-squares refinement.

    Parameters
    ----------
    source : example source
    theta_star : ndarray (d, d)
    directions : ndarray (d², m − 1)
        Orthonormal hull directions (phase 5).
    m : int
    net_radius, net_points, net_points_3d :
        Grid radius (× ‖Θ*‖_F) and points per axis (for m − 1 = 1, and for m − 1 >= 2).
    n_search : int
        Examples for scoring tuples; as many again are held out for choosing among them.
    keep_tuples : int
        Best in-sample tuples compared on held-out examples.
    examples_per_param, max_nfev :
        Refinement set size (× 2md²/(kd), at least n_search) and iteration cap.
    truth : AttentionLayer, optional
        Records the warm start's errors.

    Returns
    -------
    SearchResult
    """
    t0 = time.perf_counter()
    d = theta_star.shape[0]
    Xs, Ys = source.draw(n_search)
    Xh, Yh = source.draw(n_search)
    k = Xs.shape[1]
    radius = net_radius * max(float(np.linalg.norm(theta_star)), 1e-3)
    alphas = _grid(m, net_points, net_points_3d) * radius
    points = theta_star[None] + (alphas @ directions.T).reshape(-1, d, d) if m > 1 else theta_star[None]
    Phi = np.stack([_features(t, Xs) for t in points])  # (p, n, k, d)
    p = Phi.shape[0]
    F = Phi.reshape(p, -1, d).transpose(0, 2, 1).reshape(p * d, -1)  # rows (point, c)
    G = (F @ F.T).reshape(p, d, p, d)
    c = (F @ Ys.reshape(-1, d)).reshape(p, d, d)
    yy = float(np.sum(Ys**2))
    tuples = np.array(list(itertools.combinations(range(p), m)))
    scores = np.empty(len(tuples))
    ridge = 1e-10 * np.trace(G.reshape(p * d, p * d)) / (p * d)
    for s in range(0, len(tuples), 20000):
        T = tuples[s : s + 20000]
        Gt = G[T[:, :, None], :, T[:, None, :], :].transpose(0, 1, 3, 2, 4).reshape(len(T), m * d, m * d)
        ct = c[T].reshape(len(T), m * d, d)
        sol = np.linalg.solve(Gt + ridge * np.eye(m * d), ct)
        scores[s : s + 20000] = (yy - np.einsum("tpe,tpe->t", sol, ct)) / yy
    best = tuples[np.argsort(scores)[:keep_tuples]]
    candidates = []
    for T in best:
        thetas = points[T]
        ws = _fit_ws([Phi[j] for j in T], Ys)
        layer = AttentionLayer(thetas, ws)
        candidates.append((_heldout(layer, Xh, Yh), layer))
    warm_err, warm = min(candidates, key=lambda c: c[0])
    # Residuals = examples_per_param × parameters: enough to pin the parameters
    # in the realizable case, few enough for the dense trust-region steps to stay cheap.
    n_ref = min(n_search, max(32, int(np.ceil(examples_per_param * 2 * m * d * d / (k * d)))))
    Xr, Yr = Xs[:n_ref], Ys[:n_ref]
    t1 = time.perf_counter()
    thetas, ws, nfev = _refine(warm.thetas, warm.ws, Xr, Yr, max_nfev)
    refined = AttentionLayer(thetas, ws)
    refine_seconds = time.perf_counter() - t1
    extra = {}
    if truth is not None:
        extra["warm_start_error"] = relative_error(truth, warm, k, n_samples=4096, rng=0)
        extra["warm_start_param_error"] = match_heads(truth, warm).max_error if truth.m == m else None
    return SearchResult(
        layer=refined,
        warm_start=warm,
        warm_start_heldout=warm_err,
        heldout_error=_heldout(refined, Xh, Yh),
        tuples_scored=len(tuples),
        net_points=p,
        nfev=nfev,
        n_examples=2 * n_search,
        seconds=time.perf_counter() - t0,
        refine_seconds=refine_seconds,
        **extra,
    )
