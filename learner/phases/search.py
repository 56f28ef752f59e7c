"""Phase 6: ε-net search inside the hull, least squares for the ``W_i``, joint refinement.

Each head is written ``Θ_i = Θ* + V α_i`` with ``α_i`` on a grid (the ε-net) of
radius ``net_radius·‖Θ*‖_F`` in the hull's ``m − 1`` coordinates. For fixed
``Θ``'s the layer is linear in the ``W``'s, so every m-tuple of net points is
scored by the linear least-squares fit of the ``W``'s (from precomputed Gram
blocks, so a tuple costs one ``md × md`` solve); the best tuples are compared
on held-out examples. That is the paper's phase 6 (talk: "Epsilon-net over
span to learn F"). Ours: the grid's radius and resolution, the search over
tuples of a grid (rather than a worst-case ε-net), and the joint refinement of
all parameters by nonlinear least squares (scipy's trust-region reflective
method) with an analytic Jacobian, which carries the warm start to
floating-point accuracy.

Two searches over the tuples (``search=``):

* ``"exhaustive"`` — every m-tuple of grid points (the paper's enumeration);
  ``C(p, m)`` solves and a ``(p·d)²`` Gram matrix, affordable up to m = 3 on
  the default grids (at m = 4, d = 12: ~10^12 tuples and 5.5 GB).
* ``"swap"`` (ours) — swap descent: from a greedy start and ``swap_starts``
  random starting tuples, replace one head at a time by the grid point that
  lowers the least-squares residual most (every grid point is scored at once
  through a Schur complement, one ``d × d`` solve each), until no single swap
  improves. Each pass costs ``O(p)`` small solves, so the cost grows mildly
  with m; the features of every grid point are cached within the stated memory
  budget ``search_memory`` (the scoring examples are cut to fit it). It finds
  a local optimum, not a certified global one: the held-out comparison and
  the final held-out error are what decide success.
* ``"auto"`` — exhaustive when at most ``max_tuples`` tuples and the Gram
  matrix fit in ``search_memory``, swap descent otherwise.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from ..layer import AttentionLayer, attention_patterns
from ..metrics import match_heads, relative_error

__all__ = ["SEARCHES", "SearchResult", "layer_jacobian", "search_heads"]

#: The tuple searches of :func:`search_heads`.
SEARCHES = ("auto", "exhaustive", "swap")


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
    search: str = "exhaustive"
    search_details: dict = field(default_factory=dict)
    warm_start_error: float | None = None
    warm_start_param_error: float | None = None

    def summary(self):
        out = {
            "search": self.search,
            "tuples_scored": self.tuples_scored,
            "net_points": self.net_points,
            **self.search_details,
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


def _grid(m, points_1d, points_nd):
    if m == 1:
        return np.zeros((1, 0))
    if m == 2:
        return np.linspace(-1, 1, points_1d)[:, None]
    axis = np.linspace(-1, 1, points_nd)
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


def _exhaustive(Phi, Ys, m, keep):
    """Every m-tuple of grid points, scored from the full Gram matrix: ``(best tuples, tuples scored)``."""
    p, _, _, d = Phi.shape
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
    return tuples[np.argsort(scores)[:keep]], len(tuples)


class _SwapScorer:
    """Least-squares scores of tuples of grid points from cached features (swap descent, ours)."""

    def __init__(self, Phi, Ys):
        p, n, k, d = Phi.shape
        self.d, self.p = d, p
        self.PhiT = np.ascontiguousarray(Phi.reshape(p, n * k, d).transpose(0, 2, 1))  # (p, d, N)
        Yf = Ys.reshape(-1, d)
        self.c = self.PhiT @ Yf  # (p, d, d): Φ_qᵀ Y
        self.G_self = self.PhiT @ self.PhiT.transpose(0, 2, 1)  # (p, d, d)
        self.yy = float(np.sum(Yf**2))
        self.ridge = 1e-10 * float(np.trace(self.G_self, axis1=1, axis2=2).mean()) / d
        self._cross = {}
        self.evaluations = 0

    def cross(self, o):
        """``Φ_qᵀ Φ_o`` for every grid point q, shape (p, d, d); cached per point o."""
        if o not in self._cross:
            self._cross[o] = (self.PhiT.reshape(self.p * self.d, -1) @ self.PhiT[o].T).reshape(self.p, self.d, self.d)
        return self._cross[o]

    def explained(self, others):
        """For every grid point q, ``tr(c_Tᵀ G_T⁻¹ c_T)`` of the tuple ``others ∪ {q}`` (Schur complement)."""
        d = self.d
        eye = self.ridge * np.eye(d)
        self.evaluations += self.p
        if not others:
            sol = np.linalg.solve(self.G_self + eye, self.c)
            return np.einsum("pce,pce->p", sol, self.c)
        o = list(others)
        G_o = np.block([[self.cross(b)[a] for b in o] for a in o])  # block (a, b) = Φ_aᵀΦ_b
        G_o = G_o + self.ridge * np.eye(len(o) * d)
        c_o = np.concatenate([self.c[a] for a in o])  # ((m-1)d, d)
        C = np.concatenate([self.cross(a).transpose(0, 2, 1) for a in o], axis=1)  # (p, (m-1)d, d): Φ_aᵀΦ_q
        Ginv_C = np.linalg.solve(G_o, C.transpose(1, 0, 2).reshape(len(o) * d, -1)).reshape(len(o) * d, self.p, d)
        Ginv_C = Ginv_C.transpose(1, 0, 2)
        Ginv_c = np.linalg.solve(G_o, c_o)
        base = float(np.sum(c_o * Ginv_c))
        S = self.G_self - np.einsum("pic,pie->pce", C, Ginv_C) + eye
        r = self.c - np.einsum("pic,ie->pce", C, Ginv_c)
        return base + np.einsum("pce,pce->p", r, np.linalg.solve(S, r))

    def score(self, T):
        """Relative residual of the least-squares fit with the tuple T."""
        rest = list(T[1:])
        return (self.yy - self.explained(rest)[T[0]]) / self.yy


def _swap_descent(scorer, m, start, max_passes=50):
    """Swap one head at a time for the best grid point until no swap lowers the residual."""
    T = list(start)
    best = scorer.score(T)
    swaps = 0
    for _ in range(max_passes):
        improved = False
        for i in range(m):
            others = T[:i] + T[i + 1 :]
            gain = scorer.explained(others)
            gain[others] = -np.inf  # a point twice is a degenerate tuple
            q = int(np.argmax(gain))
            new = (scorer.yy - gain[q]) / scorer.yy
            if q != T[i] and new < best * (1 - 1e-9):
                T[i], best, improved = q, new, True
                swaps += 1
        if not improved:
            break
    return tuple(sorted(T)), best, swaps


def _swap_search(Phi, Ys, m, keep, *, starts, rng):
    """Greedy start plus ``starts`` random starts, each swap-descended: ``(best tuples, evaluations, details)``."""
    scorer = _SwapScorer(Phi, Ys)
    p = scorer.p
    greedy = []
    for _ in range(m):
        gain = scorer.explained(greedy)
        if greedy:
            gain[greedy] = -np.inf
        greedy.append(int(np.argmax(gain)))
    found = {}
    total_swaps = 0
    for start in [greedy] + [list(rng.choice(p, size=m, replace=False)) for _ in range(starts)]:
        T, score, swaps = _swap_descent(scorer, m, start)
        total_swaps += swaps
        found[T] = min(score, found.get(T, np.inf))
    ranked = sorted(found, key=found.get)
    details = {"swap_starts": starts + 1, "swaps": total_swaps, "distinct_optima": len(found),
               "best_in_sample_residual": float(found[ranked[0]])}
    return np.array(ranked[:keep]), scorer.evaluations, details


def search_heads(source, theta_star, directions, m, *, net_radius=2.0, net_points=41, net_points_3d=13,
                 n_search=2000, keep_tuples=20, examples_per_param=1.5, max_nfev=200, search="auto",
                 max_tuples=100_000, search_memory=2**30, swap_starts=8, seed=0, truth=None, k=None):
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
        Swap descent scores on as many of them as its feature cache fits in ``search_memory``.
    keep_tuples : int
        Best in-sample tuples compared on held-out examples.
    examples_per_param, max_nfev :
        Refinement set size (× 2md²/(kd), at least n_search) and iteration cap.
    search : {"auto", "exhaustive", "swap"}
        Which tuple search (module docstring); ``"auto"`` picks by ``max_tuples`` and ``search_memory``.
    max_tuples, search_memory : int
        Limits of the exhaustive search (tuples; bytes of its Gram matrix) and the swap
        descent's feature cache (bytes).
    swap_starts, seed :
        Random starting tuples of the swap descent (besides the greedy one) and their seed.
    truth : AttentionLayer, optional
        Records the warm start's errors.

    Returns
    -------
    SearchResult
        ``search`` says which search ran; ``search_details`` its figures.

    Raises
    ------
    ValueError
        For an unknown ``search``, or ``"exhaustive"`` beyond ``max_tuples`` or ``search_memory``.
    """
    t0 = time.perf_counter()
    if search not in SEARCHES:
        raise ValueError(f"`search` must be one of {SEARCHES}; got {search!r}.")
    d = theta_star.shape[0]
    Xs, Ys = source.draw(n_search)
    Xh, Yh = source.draw(n_search)
    k = Xs.shape[1]
    radius = net_radius * max(float(np.linalg.norm(theta_star)), 1e-3)
    alphas = _grid(m, net_points, net_points_3d) * radius
    points = theta_star[None] + (alphas @ directions.T).reshape(-1, d, d) if m > 1 else theta_star[None]
    p = points.shape[0]
    n_tuples = math.comb(p, m)
    gram_bytes = 8 * (p * d) ** 2
    exhaustive_ok = n_tuples <= max_tuples and gram_bytes <= search_memory
    if search == "exhaustive" and not exhaustive_ok:
        raise ValueError(f"the exhaustive search needs C({p}, {m}) = {n_tuples:.3g} tuples and a {gram_bytes / 2**30:.3g} "
                         f"GiB Gram matrix; the limits are max_tuples={max_tuples:g} and search_memory="
                         f"{search_memory / 2**30:.3g} GiB. Use search='swap' or 'auto', or a coarser grid.")
    chosen = "exhaustive" if search == "exhaustive" or (search == "auto" and exhaustive_ok) else "swap"
    details = {"grid_points": p, "tuples_in_grid": float(n_tuples)}
    if chosen == "exhaustive":
        Phi = np.stack([_features(t, Xs) for t in points])  # (p, n, k, d)
        best, scored = _exhaustive(Phi, Ys, m, keep_tuples)
        details["memory_bytes"] = gram_bytes + Phi.nbytes
    else:
        # The feature cache (p, n, k, d) must fit the budget: score on fewer examples if needed, but
        # never fewer than twice the unknowns of the W least squares (m·d² from n·k·d equations).
        n_fit = min(n_search, search_memory // (8 * p * k * d))
        n_min = int(np.ceil(2 * m * d * d / (k * d)))
        if n_fit < n_min:
            raise ValueError(f"the swap search's feature cache for {p} grid points needs at least "
                             f"{8 * p * k * d * n_min / 2**30:.3g} GiB (n={n_min} examples) but search_memory="
                             f"{search_memory / 2**30:.3g} GiB: raise search_memory or use a coarser grid.")
        Phi = np.stack([_features(t, Xs[:n_fit]) for t in points])
        best, scored, sd = _swap_search(Phi, Ys[:n_fit], m, keep_tuples, starts=swap_starts,
                                        rng=np.random.default_rng(seed))
        details |= sd | {"scoring_examples": int(n_fit), "memory_bytes": int(Phi.nbytes)}
    candidates = []
    for T in best:
        thetas = points[T]
        ws = _fit_ws([_features(t, Xs) for t in thetas], Ys)
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
        tuples_scored=int(scored),
        net_points=p,
        nfev=nfev,
        n_examples=2 * n_search,
        seconds=time.perf_counter() - t0,
        refine_seconds=refine_seconds,
        search=chosen,
        search_details=details,
        **extra,
    )
