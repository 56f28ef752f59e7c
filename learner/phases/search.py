"""Phase 6: search inside the hull, least squares for the ``W_i``, joint refinement.

Each head is written ``Θ_i = Θ* + V α_i`` with ``α_i`` in the hull's ``m − 1``
coordinates, within a box of radius ``net_radius·‖Θ*‖_F``. For fixed ``Θ``'s
the layer is linear in the ``W``'s, so every candidate m-tuple is scored by the
linear least-squares fit of the ``W``'s; the best candidates are compared on
held-out examples (the *warm start*). That is the paper's phase 6 (talk:
"Epsilon-net over span to learn F"), whose ε-net is the grid of ``"exhaustive"``
below. Ours: the grid's radius and resolution, the searches other than the
exhaustive one, and the joint refinement that carries the warm start to
floating-point accuracy.

The searches (``search=``):

* ``"exhaustive"`` — every m-tuple of grid points (the paper's enumeration), scored
  from precomputed Gram blocks (one ``md × md`` solve per tuple); ``C(p, m)``
  solves and a ``(p·d)²`` Gram matrix, affordable for m = 2 on the default grid
  (at m = 4, d = 12 a 13³ grid has ~10^12 tuples and a 5.5 GB Gram matrix).
* ``"vp"`` (ours) — variable projection in the hull's coordinates: from
  ``vp_starts`` uniform random tuples in the box, Levenberg–Marquardt on the
  ``m(m − 1)`` coordinates with the ``W``'s eliminated (solved exactly at every
  step), a local optimum per start. Its cost does not depend on a grid.
* ``"swap"`` (ours) — swap
  descent on the grid: from a greedy start and ``swap_starts`` random tuples,
  replace one head at a time by the grid point that lowers the residual most
  (every grid point scored at once through a Schur complement), until no swap
  improves; the grid's features are cached within ``search_memory``.
* ``"auto"`` — exhaustive when at most ``max_tuples`` tuples and the Gram
  matrix fit in ``search_memory``, ``"vp"`` otherwise.

The searches other than the exhaustive one find local optima, not a certified
global one: the held-out comparison and the final held-out error decide success.

The refinement (``refine=``): ``"vp"`` (ours, the default) is Levenberg–Marquardt
on the ``md²`` entries of the ``Θ``'s with the ``W``'s eliminated (Golub–Pereyra
variable projection with Kaufman's Jacobian; one thin QR of the ``(nk) × (md)``
design serves all ``d`` output columns) on about two residuals per parameter;
``"trf"`` (kept for comparison) refines all ``2md²`` parameters with scipy's
trust-region reflective method and the full analytic Jacobian
(:func:`~learner.layer.layer_jacobian`). Both reach relative errors ~1e-30 on noiseless data;
at (m, d, k) = (5, 16, 2) the first took 5 s where the second took ~166 s.

What the refinement costs at large m (ours, measured at (8, 24, 2) on its 576 examples, one BLAS thread, medians
of three): each step forms the normal equations of a 27,648 × 4,608 Jacobian and factorises them. Formed from the
Jacobian's Kronecker structure (``_structured_normal_equations``) they take 5.7 s instead of 36 s densely
(3.1 s on two threads), the factorisation 0.9 s; and the run stops at float64's rounding floor
(``FLOOR_ZONE``) after 7 evaluations, where a stop at 1e-30 alone takes 26, most of them at the floor. Its
products run on the run's threads in fixed blocks (``_products``). From
:data:`~learner.phases.steps.CG_MIN_UNKNOWNS` unknowns on, ``refine_solver="auto"`` solves the steps by
conjugate gradients instead and forms no normal equations (:mod:`learner.phases.steps`: 6.4 s against 88 s at
(10, 24, 2)).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import solve_triangular
from scipy.optimize import least_squares

from .. import arrays
from ..layer import AttentionLayer, attention_patterns, layer_jacobian
from ..layer import head_features as _features
from ..metrics import match_heads, relative_error
from ..oracle import draw_checked
from ..parallel import Workers, as_workers, blas_threads
from ..profiling import section
from ..validation import check_int
from ._config import CHOICES, LearnConfig, as_config, resolve_config
from .noise import NOISE_MIN
from .steps import ProjectedJacobian, block_preconditioner, choose_solver, conjugate_gradient

if TYPE_CHECKING:
    from ..oracle import ArraySource, LayerOracle
    from .noise import NoiseFloor

__all__ = ["REFINEMENTS", "SEARCHES", "Refinement", "SearchResult", "exhaustive_gram", "heldout_relative_error",
           "refine_layer", "refinement_examples", "refit", "score_tuples", "search_heads"]

#: The tuple searches of :func:`search_heads`.
SEARCHES = CHOICES["search"]
#: Below this relative residual (far below any success tolerance) a kept step of Levenberg–Marquardt that
#: gains less than :data:`FLOOR_GAIN` times ends the run: on a zero-residual fit its steps gain orders of
#: magnitude each (Gauss–Newton converges quadratically), so a small gain there is float64's rounding of
#: ``F`` and ``Y``, not the model (ours). Measured at (m, d, k) = (8, 24, 2): 4e-3, 4e-5, 2e-8, 2e-14, 8e-22,
#: 6e-30, 1.3e-30, then twenty evaluations between 1.3e-30 and 1.1e-30 — the floor there lies above 1e-30.
FLOOR_ZONE = 1e-20
#: The gain below which a step at the floor ends the run (ours: ten times, far below the orders of magnitude
#: a Gauss–Newton step gains before the floor; see :data:`FLOOR_ZONE`).
FLOOR_GAIN = 10.0
#: The relative gain per kept step below which a start of the ``"vp"`` search stops (ours). A start only has to
#: land in the basin the refinement then finishes: its residual is held up by the hull's error, so the last
#: orders of magnitude of a tighter stop are spent on the hull, not the layer. On fresh (8, 24, 2) and
#: (10, 24, 2) layers (hulls at tolerances 0.08 and 0.15) 1e-4 took 1.3–3.7 times fewer search evaluations than
#: 1e-8 to warm starts as good, and phase 6 as a whole less time although the refinement sometimes took more
#: evaluations from them (``docs/sweeps/reach-tolerances``).
SEARCH_FTOL = 1e-4
#: Columns per block of the refinement's large products (:func:`_products`; ours): wide enough for the BLAS to run
#: near its peak on one thread, narrow enough to share (8, 24, 2)'s 4,608 columns among the threads.
PRODUCT_BLOCK = 256
#: The joint refinements of :func:`search_heads`: variable projection (Levenberg–Marquardt on the
#: Θ's, W's eliminated) or a trust-region refinement of all parameters (kept for comparison).
REFINEMENTS = CHOICES["refine"]


@dataclass(frozen=True)
class SearchResult:
    """Phase 6's result: the warm start (best net tuple + least squares) and the refined layer.

    The held-out errors are :func:`heldout_relative_error`'s ratios of squared norms, on the ``n_search``
    held-out examples.

    Parameters
    ----------
    layer : AttentionLayer
        The refined layer (the noise-floor refit, when the test passed).
    warm_start : AttentionLayer
        The warm start: the best tuple on held-out examples with its least-squares ``W``'s.
    warm_start_heldout : float
        The warm start's held-out relative error.
    heldout_error : float
        The refined layer's held-out relative error.
    tuples_scored : int
        The search's work: tuples scored by the exhaustive search, grid points scored by the swap descent,
        residual evaluations of the variable-projection search.
    net_points : int
        The grid's points (1 at m = 1, ``net_points`` at m = 2, ``net_points_3d^(m−1)`` beyond).
    nfev : int
        The refinement's residual evaluations (and the noise-floor refit's).
    n_examples : int
        Examples drawn: ``2·n_search`` (scoring and held out).
    seconds : float
        Wall time of the phase.
    refine_seconds : float
        Wall time of the refinement, the noise-floor test and the refit.
    search : str, default "exhaustive"
        The tuple search that ran: ``"exhaustive"``, ``"swap"`` or ``"vp"``.
    search_details : dict
        The search's figures (grid size, starts, scoring examples, memory, best in-sample residual, ...).
    warm_start_error : float, optional
        With the truth: the warm start's :func:`learner.metrics.relative_error` against it.
    warm_start_param_error : float, optional
        With the truth and the same m: the warm start's largest per-head parameter error
        (:func:`learner.metrics.match_heads`'s ``max_error``).
    noise_test : NoiseFloor, optional
        With ``config.noise_floor`` and a held-out error above :data:`~learner.phases.noise.NOISE_MIN`: the
        noise-floor test on the refinement set.
    noise : NoiseFloor, optional
        When that test passed: the noise floor of the refit on more examples.
    refit_examples : int, default 0
        The examples of that refit (0: none).
    residual_sigma : float, optional
        ``sqrt(RSS / (N − 2md²))`` of the refinement's residuals: the noise estimate without the Jacobian.
    """

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
    #: With ``noise_floor`` and a held-out error above NOISE_MIN: the noise-floor test on the refinement set
    #: (:mod:`learner.phases.noise`), and when it passed, the noise floor of the refit on more examples.
    noise_test: NoiseFloor | None = None
    noise: NoiseFloor | None = None
    refit_examples: int = 0
    #: ``sqrt(RSS / (N − 2md²))`` of the refinement's residuals: the noise estimate without the Jacobian.
    residual_sigma: float | None = None

    def summary(self) -> dict[str, Any]:
        """Diagnostics as a JSON-ready dict (the layers left out).

        Returns
        -------
        dict
            The search, its figures, both held-out errors, the refinement's evaluations, examples and times;
            with the truth the warm start's errors; and the noise estimate and tests when there are any.
        """
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
        if self.residual_sigma is not None:
            out["residual_sigma"] = self.residual_sigma
        if self.noise_test is not None:
            out["noise_test"] = self.noise_test.summary()
        if self.noise is not None:
            out["noise_floor"] = self.noise.summary() | {"refit_examples": self.refit_examples}
        return out


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


def heldout_relative_error(layer: AttentionLayer, X: np.ndarray, Y: np.ndarray) -> float:
    """``‖F(X) − Y‖² / ‖Y‖²``: the relative error of ``layer`` on labelled examples (phase 6's score).

    Parameters
    ----------
    layer : AttentionLayer
        The layer scored.
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels (not all zero).

    Returns
    -------
    float
        The ratio of squared norms (not its square root), summed over every example.

    Examples
    --------
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(2, 4, rng=0)
    >>> X = sample_inputs(100, 3, 4, rng=1)
    >>> heldout_relative_error(layer, X, layer(X)), heldout_relative_error(layer, X, 2 * layer(X))
    (0.0, 0.25)
    """
    return float(np.sum((layer(X) - Y) ** 2) / np.sum(Y**2))


@dataclass(frozen=True)
class Refinement:
    """What :func:`refine_layer` returns: the fitted layer and how the fit went.

    Parameters
    ----------
    layer : AttentionLayer
        The fitted layer.
    evaluations : int
        Residual evaluations (the first, at the start, included).
    residual : float
        The final relative residual ``‖F(X) − Y‖²/‖Y‖²``.
    solver : str
        How the steps were solved: ``"normal"`` or ``"cg"``.
    """

    layer: AttentionLayer
    evaluations: int
    residual: float
    solver: str


def refinement_examples(m: int, d: int, k: int, config: LearnConfig) -> int:
    """The examples phase 6's refinement fits (the first of the search's ``n_search``).

    Residuals = ``refine_examples_per_param`` × parameters: enough to pin the parameters in the realizable case,
    few enough for each step to stay cheap. But a head's ``Θ`` enters ``F`` only through the ``k(k − 1)`` logit
    differences of each example, so the examples must also give each head at least ``2d²`` of them: with fewer,
    exact fits that are not the layer exist (ours, measured at (2, 12, 2): 48 examples fit to 1e-31 with held-out
    error 3e-5). At least 32, at most ``n_search``.

    Parameters
    ----------
    m, d, k : int
        Heads, token dimension and tokens per example.
    config : LearnConfig
        Reads ``refine_examples_per_param`` and ``n_search``.

    Returns
    -------
    int
        ``min(n_search, max(32, ⌈refine_examples_per_param·2md²/(kd)⌉, ⌈2d²/(k(k − 1))⌉))``.

    Examples
    --------
    >>> refinement_examples(2, 6, 2, LearnConfig())  # 2d²/(k(k − 1)) = 36 logit differences per head
    36
    """
    return min(config.n_search, max(32, int(np.ceil(config.refine_examples_per_param * 2 * m * d * d / (k * d))),
                                    int(np.ceil(2 * d * d / (k * (k - 1))))))


def refine_layer(thetas: ArrayLike, X: np.ndarray, Y: np.ndarray, *, max_iter: int = 200, ftol: float = 1e-15,
                 max_bytes: int = 2**30, device: Any = None, solver: str = "auto") -> Refinement:
    """Phase 6's refinement from ``thetas``, with its evaluations, final residual and step solver.

    :func:`refit` with the fit's figures (and phase 6's ``ftol``, 1e-15, by default): Levenberg–Marquardt on the
    ``Θ``'s, the ``W``'s solved exactly at every step (ours).

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        The starting ``Θ``'s.
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels.
    max_iter : int
        The cap on residual evaluations.
    ftol : float
        A kept step that lowers the residual by less than this, relative, ends the fit.
    max_bytes : int
        Memory budget of the normal equations' blocks (bytes).
    device : str or learner.arrays.Backend, optional
        A torch device, or its backend: computes on torch tensors there. None: numpy.
    solver : {"auto", "normal", "cg"}
        How each step is solved (:func:`learner.phases.steps.choose_solver`; ``LearnConfig.refine_solver``).

    Returns
    -------
    Refinement
        The layer, the evaluations, the relative residual and the solver.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(2, 4, rng=0)
    >>> X = sample_inputs(200, 2, 4, rng=1)
    >>> fit = refine_layer(layer.thetas * 1.01, X, layer(X))
    >>> fit.solver, bool(fit.residual < 1e-28)
    ('normal', True)
    """
    thetas = np.asarray(thetas, dtype=float)
    backend = arrays.backend(device)
    chosen = choose_solver(solver, thetas.size, on_host=backend.on_host)
    z, ws, evaluations, rel = _refine_vp(thetas, X, Y, max_iter=max_iter, ftol=ftol, max_bytes=max_bytes,
                                         backend=backend, solver=chosen)
    return Refinement(AttentionLayer(z.reshape(thetas.shape), ws), int(evaluations), float(rel), chosen)


def refit(thetas: ArrayLike, X: np.ndarray, Y: np.ndarray, *, max_iter: int = 200, ftol: float = 1e-12,
          max_bytes: int = 2**30, device: Any = None, solver: str = "auto") -> AttentionLayer:
    """The layer of ``len(thetas)`` heads fitted to ``(X, Y)`` by variable projection.

    Levenberg–Marquardt on the ``Θ``'s from ``thetas``, the ``W``'s solved exactly at every step: phase 6's
    refinement (ours), also used to refit a layer without its redundant heads.

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        The starting ``Θ``'s.
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels.
    max_iter : int
        The cap on residual evaluations.
    ftol : float
        A kept step that lowers the residual by less than this, relative, ends the fit.
    max_bytes : int
        Memory budget of the normal equations' blocks (bytes).
    device : str or learner.arrays.Backend, optional
        A torch device name such as ``"cuda"`` (torch extra), or its backend (:func:`learner.arrays.backend`):
        computes on torch tensors there. None: numpy.
    solver : {"auto", "normal", "cg"}
        How each step is solved (:func:`learner.phases.steps.choose_solver`; ``LearnConfig.refine_solver``).

    Returns
    -------
    AttentionLayer
        The fitted layer.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(2, 4, rng=0)
    >>> X = sample_inputs(200, 2, 4, rng=1)
    >>> start = layer.thetas + 0.05 * np.random.default_rng(2).standard_normal(layer.thetas.shape)
    >>> fit = refit(start, X, layer(X))
    >>> bool(heldout_relative_error(fit, X, layer(X)) < 1e-20)
    True
    """
    return refine_layer(thetas, X, Y, max_iter=max_iter, ftol=ftol, max_bytes=max_bytes, device=device,
                        solver=solver).layer


def _refine_vp(theta0, X, Y, *, max_iter, ftol=1e-15, max_bytes=2**30, threads=1, backend=arrays.NUMPY,
               solver="auto"):
    """:func:`_levenberg_marquardt` in the ``Θ``'s on ``backend`` (a :class:`learner.arrays.Backend`) with the step
    solver ``solver`` chooses (:func:`learner.phases.steps.choose_solver`); its ``(params, ws, evaluations,
    relative residual)`` as numpy arrays either way."""
    solver = choose_solver(solver, theta0.size, on_host=backend.on_host)
    if backend.on_host:
        return _levenberg_marquardt(theta0, X, Y, max_iter=max_iter, ftol=ftol, max_bytes=max_bytes, threads=threads,
                                    solver=solver)
    theta0, X, Y = (backend.asarray(a) for a in (theta0, X, Y))
    z, ws, evaluations, rel = _levenberg_marquardt(theta0, X, Y, max_iter=max_iter, ftol=ftol, max_bytes=max_bytes)
    return arrays.to_numpy(z), arrays.to_numpy(ws), evaluations, rel


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


def _vp_solve(thetas, X, Y):
    """Variable projection at fixed ``Θ``'s: the optimal ``W``'s, the residual and the pieces of its Jacobian.

    The design ``D = [P_1X, …, P_mX]`` (rows ``(n, a)``, columns ``(i, c)``) is shared by the ``d``
    output columns, so one thin QR gives every column's least-squares ``W`` and the projector
    ``I − QQᵀ`` onto the residual space. Returns ``(ws, residual, Q, patterns)``; ``residual`` is
    ``DW − Y`` with shape (n·k, d). Torch tensors take :func:`_vp_solve_tensors`.
    """
    if not arrays.backend_of(X).on_host:
        return _vp_solve_tensors(thetas, X, Y)
    n, k, d = X.shape
    m = len(thetas)
    patterns = attention_patterns(thetas, X)  # (n, m, k, k)
    D = np.einsum("nmab,nbc->namc", patterns, X).reshape(n * k, m * d)
    Yf = Y.reshape(n * k, d)
    Q, R = np.linalg.qr(D)
    diag = np.abs(np.diagonal(R))
    if diag.min() > 1e-10 * diag.max():
        W = solve_triangular(R, Q.T @ Yf)
    else:  # heads with (numerically) equal patterns: the W's are not identified; take the min-norm fit
        W = np.linalg.lstsq(D, Yf, rcond=None)[0]
        U, S, _ = np.linalg.svd(D, full_matrices=False)
        Q = U[:, S > 1e-10 * S[0]]
    ws = W.reshape(m, d, d)
    return ws, D @ W - Yf, Q, patterns


def _vp_solve_tensors(thetas, X, Y):
    """:func:`_vp_solve` on torch tensors (the array API where it has the function; ours). The patterns are the
    stable softmax of the logits (the row maximum subtracted); the fallback for patterns that do not identify
    the ``W``'s is the pseudo-inverse's minimum-norm fit."""
    xp = arrays.namespace(X)
    n, k, d = X.shape
    m = thetas.shape[0]
    logits = xp.einsum("nac,icd,nbd->niab", X, thetas, X)
    weights = xp.exp(logits - xp.max(logits, axis=-1, keepdims=True))
    patterns = weights / xp.sum(weights, axis=-1, keepdims=True)
    D = xp.reshape(xp.einsum("nmab,nbc->namc", patterns, X), (n * k, m * d))
    Yf = xp.reshape(Y, (n * k, d))
    Q, R = xp.linalg.qr(D)
    diag = xp.abs(xp.linalg.diagonal(R))
    if float(xp.min(diag)) > 1e-10 * float(xp.max(diag)):
        W = xp.linalg.solve_triangular(R, Q.T @ Yf, upper=True)
    else:
        W = xp.linalg.pinv(D) @ Yf
        U, S, _ = xp.linalg.svd(D, full_matrices=False)
        Q = U[:, S > 1e-10 * S[0]]
    return xp.reshape(W, (m, d, d)), D @ W - Yf, Q, patterns


def _head_gradients(thetas, ws, X, patterns):
    """``G_i[a, c', e] = Σ_b P_i[a,b] (x_b[c'] − x̄_i[a,c']) v_i[b,e]`` for every head, shape (n·k, m·d, d).

    Rows ``(n, a)``, then ``(i, c')`` and ``e``: ``∂F_a[e]/∂Θ_i[c, c'] = x_a[c] G_i[a, c', e]`` (see
    :func:`layer_jacobian`), so the Θ-Jacobian is the Kronecker-like product of each row's input with its ``G``.
    """
    n, k, d = X.shape
    m = len(thetas)
    V = X @ ws[:, None]  # (m, n, k, d): v_i[b] = x_bᵀ W_i
    G = arrays.empty((n, k, m, d, d), X)
    xp = arrays.namespace(X)
    for i in range(m):
        P = patterns[:, i]
        Z = P @ X  # (n, a, c')
        G[:, :, i] = xp.einsum("nab,nbc,nbe->nace", P, X, V[i]) - Z[..., None] * (P @ V[i])[:, :, None, :]
    return G.reshape(n * k, m * d, d)


def _vp_jacobian(thetas, ws, X, patterns, Q, basis):
    """Kaufman's Jacobian of the projected residual w.r.t. the ``Θ``'s coordinates in ``basis``.

    ``∂F_a[e]/∂Θ_i[c, c'] = x_a[c] G_i[a, c', e]`` (:func:`_head_gradients`); the columns are then
    projected onto the residual space of the ``W`` least squares (Kaufman's approximation of the
    variable-projection Jacobian, Golub & Pereyra 2003). ``basis`` (d², r) gives the Jacobian w.r.t.
    ``α_i`` with ``Θ_i = Θ_0 + reshape(basis @ α_i)`` (the ``Θ``'s themselves never form it:
    :func:`_structured_normal_equations`). Returns shape (n·k·d, m·r); rows ``(n, a, e)``.
    """
    n, k, d = X.shape
    m = len(thetas)
    xp = arrays.namespace(X)
    G = _head_gradients(thetas, ws, X, patterns).reshape(n, k, m, d, d)
    XB = xp.einsum("nac,cpr->napr", X, basis.reshape(d, d, -1))  # basis as (c, c', r)
    cols = [xp.einsum("napr,nape->naer", XB, G[:, :, i]).reshape(n * k, d, -1) for i in range(m)]
    J = arrays.backend_of(X).concat(cols, axis=2)  # (n·k, e, cols)
    if Q is not None:
        J -= xp.einsum("Nq,qec->Nec", Q, xp.einsum("Nq,Nec->qec", Q, J))
    return J.reshape(n * k * d, -1)


def _normal_equations(thetas, ws, X, patterns, Q, r, basis=None, max_bytes=2**30, threads=1):
    """``(JᵀJ, Jᵀr)`` for Kaufman's Jacobian ``J``, built in blocks of examples within ``max_bytes``.

    ``J = P⊥ J_Θ`` with ``P⊥ = I − QQᵀ`` acting on the rows ``(n, a)`` of every output column, so
    ``JᵀJ = Σ_blocks J_bᵀJ_b − Σ_e K_eᵀK_e`` with ``K = Σ_blocks Q_bᵀ J_b``, and ``Jᵀr = J_Θᵀ r``
    because the residual ``r`` is already orthogonal to ``Q``. In the ``Θ``'s themselves (no ``basis``)
    the Jacobian is never formed (:func:`_structured_normal_equations`). In hull coordinates, when the
    whole Jacobian fits the budget it is projected and multiplied at once (no subtraction of two large terms).
    """
    if basis is None:
        return _structured_normal_equations(thetas, ws, X, patterns, Q, r, max_bytes, threads)
    n, k, d = X.shape
    rf = r.reshape(-1)
    cols = len(thetas) * basis.shape[1]
    per_example = 8 * k * d * cols
    if n * per_example <= max_bytes:
        J = _vp_jacobian(thetas, ws, X, patterns, Q, basis)
        return J.T @ J, J.T @ rf
    step = max(1, max_bytes // per_example)
    A = arrays.zeros((cols, cols), X)
    g = arrays.zeros((cols,), X)
    K = arrays.zeros((Q.shape[1], d, cols), X)
    xp = arrays.namespace(X)
    for s in range(0, n, step):
        rows = slice(s * k, min(s + step, n) * k)
        J = _vp_jacobian(thetas, ws, X[s : s + step], patterns[s : s + step], None, basis)
        A += J.T @ J
        g += J.T @ rf[rows.start * d : rows.stop * d]
        K += xp.einsum("Nq,Nec->qec", Q[rows], J.reshape(-1, d, cols))
    return A - xp.einsum("qec,qef->cf", K, K), g


def _products(A, B, threads, *, symmetric=False):
    """``AᵀB`` in fixed blocks of :data:`PRODUCT_BLOCK` columns of ``B``, on ``threads`` threads (ours).

    With more than one thread each block is one single-threaded BLAS call on a thread of its own, so the blocks,
    and with them the bits, are the same whatever ``threads``: OpenBLAS's own threads change the last bits of
    some shapes (measured: a (400 × 100)ᵀ(400 × 900) product). ``symmetric`` (``B`` is ``A``): only the blocks on
    and above the diagonal are computed, then mirrored.
    """
    n = B.shape[1]
    out = arrays.empty((A.shape[1], n), A)
    starts = range(0, n, PRODUCT_BLOCK)

    def block(s):
        e = min(s + PRODUCT_BLOCK, n)
        if symmetric:
            out[:e, s:e] = A[:, :e].T @ B[:, s:e]
        else:
            out[:, s:e] = A.T @ B[:, s:e]

    if threads > 1 and len(starts) > 1 and arrays.backend_of(A).shares_threads:  # one block: nothing to share
        from concurrent.futures import ThreadPoolExecutor

        with blas_threads(1), ThreadPoolExecutor(threads) as pool:
            list(pool.map(block, starts))
    else:
        for s in starts:
            block(s)
    if symmetric:
        for s in starts:
            out[s : s + PRODUCT_BLOCK, :s] = out[:s, s : s + PRODUCT_BLOCK].T
    return out


def _structured_normal_equations(thetas, ws, X, patterns, Q, r, max_bytes=2**30, threads=1):
    """``(JᵀJ, Jᵀr)`` in the ``Θ``'s from the Jacobian's structure, without forming it (ours).

    A row ``N = (n, a)`` of ``J_Θ`` for output ``e`` is ``x_N ⊗ G_N[:, e]`` (:func:`_head_gradients`), so
    ``J_ΘᵀJ_Θ = Σ_N (x_N x_Nᵀ) ⊗ (G_N G_Nᵀ)`` — one product of an ``(N, d²)`` and an ``(N, (md)²)`` matrix,
    ``2·N·m²d⁴`` flops instead of the dense ``2·N·d·(md²)²`` — and the projection's part is
    ``Σ_e K_eᵀK_e`` with ``K[q, e] = Σ_N Q[N, q] x_N ⊗ G_N[:, e]``. At (m, d, k) = (8, 24, 2) on the
    refinement's 576 examples that is about 2·10¹¹ flops against 1.3·10¹²; the two agree to ~1e-15
    relative. The per-example arrays go in blocks of examples within ``max_bytes``; the three large products
    run on ``threads`` threads (``_products``: the same bits whatever ``threads``).
    """
    n, k, d = X.shape
    m = len(thetas)
    q = Q.shape[1]
    md, cols = m * d, m * d * d
    per_example = 8 * k * (2 * md * d + md * md + d * d + q * d)
    step = max(1, max_bytes // per_example)
    rr = r.reshape(n * k, d)
    A = arrays.zeros((d * d, md * md), X)
    R = arrays.zeros((q * d, md * d), X)
    g = arrays.zeros((m, d, d), X)
    xp = arrays.namespace(X)
    for s in range(0, n, step):
        rows = slice(s * k, min(s + step, n) * k)
        with section("refinement: head gradients G and G Gᵀ"):
            G = _head_gradients(thetas, ws, X[s : s + step], patterns[s : s + step])  # (N, md, d)
            x = X[s : s + step].reshape(-1, d)
            H = G @ arrays.permute(G, (0, 2, 1))  # (N, md, md)
        N = x.shape[0]
        with section("refinement: J_ΘᵀJ_Θ product", flops=2 * N * d * d * md * md):
            A += _products((x[:, :, None] * x[:, None, :]).reshape(-1, d * d), H.reshape(-1, md * md), threads)
        g += xp.einsum("Nc,Nip->icp", x, xp.einsum("Npe,Ne->Np", G, rr[rows]).reshape(-1, m, d))
        if q:
            with section("refinement: projection's K product", flops=2 * N * q * d * md * d):
                R += _products((Q[rows, :, None] * x[:, None, :]).reshape(-1, q * d), G.reshape(-1, md * d),
                               threads)
    # A[(c, b), (i, c', j, b')] → JᵀJ[(i, c, c'), (j, b, b')]
    A = arrays.permute(A.reshape(d, d, m, d, m, d), (2, 0, 3, 4, 1, 5)).reshape(cols, cols)
    if q:
        # rows (q, e), columns (i, c, c')
        K = arrays.permute(R.reshape(q, d, m, d, d), (0, 4, 2, 1, 3)).reshape(q * d, cols)
        del R
        with section("refinement: projection's KᵀK", flops=q * d * cols * cols):
            A -= _products(K, K, threads, symmetric=True)
    return A, g.reshape(-1)


def _levenberg_marquardt(theta0, X, Y, *, max_iter, ftol=1e-15, basis=None, origin=None, max_bytes=2**30,
                         threads=1, solver="normal"):
    """Levenberg–Marquardt on the ``Θ``'s (or hull coordinates) with the ``W``'s solved exactly at every step.

    Ours: variable projection (Golub & Pereyra 1973; Kaufman's Jacobian) on the layer, which is
    linear in the ``W``'s. The damped normal equations ``(JᵀJ + λ diag JᵀJ) δ = −Jᵀr`` are solved by
    Cholesky, built within ``max_bytes`` (:func:`_normal_equations`); a step is kept only if it lowers
    the residual. Stops at a relative residual below
    1e-30 (float64's floor for ``‖F − Y‖²/‖Y‖²`` is ~1e-32), a kept step that lowers the residual
    by less than ``ftol`` relative or moves the parameters by less than 1e-15 relative, at the rounding
    floor (a kept step below :data:`FLOOR_ZONE` relative that gains less than :data:`FLOOR_GAIN` times), or
    after ``max_iter`` residual evaluations. ``threads`` are the threads of the normal equations' large
    products in the ``Θ``'s (the same bits whatever their number: :func:`_products`); the factorisations keep
    the process's BLAS setting, whose result a multithreaded LAPACK changes in the last bits.
    ``solver="cg"`` (in the ``Θ``'s, on the host) solves each step by preconditioned conjugate gradients on the
    Jacobian's structure instead, never forming the normal equations (:mod:`learner.phases.steps`); its damping is
    scaled by the diagonal of the unprojected Gauss–Newton matrix.
    Returns ``(params, ws, evaluations, relative residual)``.
    """
    if solver == "cg" and basis is None:
        return _levenberg_marquardt_cg(theta0, X, Y, max_iter=max_iter, ftol=ftol)
    m = theta0.shape[0]
    d = X.shape[2]
    yy = max(float((Y**2).sum()), 1e-300)  # all-zero labels: the relative residual stays defined

    def thetas_of(z):
        return z.reshape(m, d, d) if basis is None else origin[None] + (z.reshape(m, -1) @ basis.T).reshape(m, d, d)

    backend = arrays.backend_of(X)
    z = backend.flat_copy(theta0)
    with section("refinement: W's, patterns and QR"):
        ws, r, Q, patterns = _vp_solve(thetas_of(z), X, Y)
    cost = float((r**2).sum())
    evaluations, lam = 1, 1e-3
    while evaluations < max_iter and cost > 1e-30 * yy:
        A, g = _normal_equations(thetas_of(z), ws, X, patterns, Q, r, basis, max_bytes, threads)
        scale = arrays.floor_at(A.diagonal(), 1e-12 * max(float(A.diagonal().max()), 1e-300))
        improved = False
        while evaluations < max_iter and lam < 1e16:
            try:
                damped = A + lam * arrays.diag(scale)
                with section("refinement: Cholesky solve", flops=A.shape[0] ** 3 // 3 + 2 * A.shape[0] ** 2):
                    step = -backend.solve_spd(damped, g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            z_new = z + step
            with section("refinement: W's, patterns and QR"):
                ws_new, r_new, Q_new, p_new = _vp_solve(thetas_of(z_new), X, Y)
            evaluations += 1
            cost_new = float((r_new**2).sum())
            if cost_new < cost:
                small = (arrays.vector_norm(step) <= 1e-15 * max(arrays.vector_norm(z), 1e-300)
                         or cost - cost_new <= ftol * cost
                         or (cost_new <= FLOOR_ZONE * yy and cost_new * FLOOR_GAIN > cost))
                z, ws, r, Q, patterns, cost = z_new, ws_new, r_new, Q_new, p_new, cost_new
                lam = max(lam / 5, 1e-12)
                improved = True
                break
            lam *= 4
        if not improved or small:
            break
    return z, ws, evaluations, cost / yy


def _levenberg_marquardt_cg(theta0, X, Y, *, max_iter, ftol=1e-15):
    """:func:`_levenberg_marquardt` in the ``Θ``'s with every step solved by preconditioned conjugate gradients
    (:mod:`learner.phases.steps`, ours): the same stopping rules, the damping scaled by the diagonal of the
    per-head blocks. Numpy arrays only."""
    m = theta0.shape[0]
    d = X.shape[2]
    yy = max(float((Y**2).sum()), 1e-300)
    z = np.array(theta0, dtype=float).reshape(m, d, d)
    with section("refinement: W's, patterns and QR"):
        ws, r, Q, patterns = _vp_solve(z, X, Y)
    cost = float((r**2).sum())
    evaluations, lam = 1, 1e-3
    n, k = X.shape[:2]
    while evaluations < max_iter and cost > 1e-30 * yy:
        jac = ProjectedJacobian(X, ws, patterns, Q)
        g = jac.rmatvec(r)
        with section("refinement: CG preconditioner blocks", flops=2 * m * n * k * d**4):
            blocks = jac.blocks()
        diag = np.diagonal(blocks, axis1=1, axis2=2).reshape(m, d, d)
        scale = np.maximum(diag, 1e-12 * max(float(diag.max()), 1e-300))
        improved = False
        while evaluations < max_iter and lam < 1e16:
            try:
                with section("refinement: CG preconditioner factors", flops=m * (d**6 // 3 + 2 * d**6)):
                    precondition = block_preconditioner(blocks, scale, lam)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            damping = lam * scale
            with section("refinement: CG iterations") as count:
                step, iterations = conjugate_gradient(lambda v: jac.normal(v) + damping * v,  # noqa: B023
                                                      precondition, -g)
                count.flops = iterations * jac.flops_per_iteration()
            z_new = z + step
            with section("refinement: W's, patterns and QR"):
                ws_new, r_new, Q_new, p_new = _vp_solve(z_new, X, Y)
            evaluations += 1
            cost_new = float((r_new**2).sum())
            if cost_new < cost:
                small = (np.linalg.norm(step) <= 1e-15 * max(float(np.linalg.norm(z)), 1e-300)
                         or cost - cost_new <= ftol * cost
                         or (cost_new <= FLOOR_ZONE * yy and cost_new * FLOOR_GAIN > cost))
                z, ws, r, Q, patterns, cost = z_new, ws_new, r_new, Q_new, p_new, cost_new
                lam = max(lam / 5, 1e-12)
                improved = True
                break
            lam *= 4
        if not improved or small:
            break
    return z.reshape(-1), ws, evaluations, cost / yy


def _vp_start(alpha0, X, Y, max_iter, ftol, directions, theta_star):
    """One start of :func:`_vp_search` (a task for the run's workers): ``(relative residual, evaluations, α)``, on
    the backend of ``X`` (numpy arrays, or torch tensors already on their device: only the start ``alpha0`` is
    moved there); α comes back as a numpy array either way."""
    alpha0 = arrays.backend_of(X).asarray(alpha0)
    z, _, evaluations, rel = _levenberg_marquardt(alpha0, X, Y, max_iter=max_iter, ftol=ftol, basis=directions,
                                                  origin=theta_star)
    return rel, evaluations, arrays.to_numpy(z)


def _vp_search(theta_star, directions, m, X, Y, radius, keep, *, starts, max_iter, rng, ftol=SEARCH_FTOL, workers=None,
               backend=arrays.NUMPY):
    """Multi-start variable projection in the hull's ``m(m − 1)`` coordinates (ours).

    Each start puts the ``m`` heads at uniform random points of the grid's box
    ``[−radius, radius]^(m−1)`` around ``Θ*`` and runs :func:`_levenberg_marquardt` on the
    coordinates ``α_i`` (``Θ_i = Θ* + V α_i``) with the ``W``'s eliminated. Returns
    ``(best parameter tuples, residual evaluations, details)``, the tuples as ``(m, d, d)`` arrays
    ranked by in-sample residual. The starts are independent: they are drawn first, in order, and run on
    ``workers`` (a :class:`~learner.parallel.Workers`; None: here, one after another), each worker with one
    BLAS thread, so the result does not depend on where they ran. On a device ``backend`` (torch) they run here,
    one after another, on that device, where the examples and the hull are copied once for all the starts.
    """
    d = theta_star.shape[0]
    found = []
    evaluations = 0
    alphas = [rng.uniform(-radius, radius, size=(m, m - 1)) for _ in range(starts)]
    on = [backend.asarray(a) for a in (X, Y, directions, theta_star)]  # numpy as it is; a device: copied once
    tasks = (((alpha0, *on[:2], max_iter, ftol, *on[2:]), 0) for alpha0 in alphas)
    with as_workers(workers if backend.on_host else None) as pool, \
            contextlib.closing(pool.ordered("6_search", _vp_start, tasks)) as results:  # type: ignore[type-var]
        for rel, ev, z in results:
            evaluations += ev
            found.append((rel, theta_star[None] + (z.reshape(m, m - 1) @ directions.T).reshape(m, d, d)))
    found.sort(key=lambda f: f[0])
    details = {"vp_starts": starts, "best_in_sample_residual": float(found[0][0]),
               "start_residuals_quartiles": [float(q) for q in np.quantile([f[0] for f in found], [0.25, 0.5, 0.75])]}
    return [f[1] for f in found[:keep]], evaluations, details


def _exhaustive(Phi, Ys, m, keep):
    """Every m-tuple of grid points, scored from the full Gram matrix: ``(best tuples, tuples scored)``."""
    gram = exhaustive_gram(Phi, Ys)
    tuples = np.array(list(itertools.combinations(range(Phi.shape[0]), m)))
    scores = score_tuples(gram, tuples)
    return tuples[np.argsort(scores)[:keep]], len(tuples)


def exhaustive_gram(Phi: np.ndarray, Ys: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """What the exhaustive search precomputes once: the Gram blocks of every pair of grid points.

    Parameters
    ----------
    Phi : ndarray, shape (p, n, k, d)
        Each grid point's features on the search's ``n`` examples.
    Ys : ndarray, shape (n, k, d)
        Their labels.

    Returns
    -------
    G : ndarray, shape (p, d, p, d)
        ``Φ_aᵀ Φ_b`` for every pair of points.
    c : ndarray, shape (p, d, d)
        ``Φ_aᵀ Y``.
    yy : float
        ``‖Y‖²``.
    ridge : float
        The ridge every tuple's solve adds (``1e-10`` times the mean diagonal of ``G``).
    """
    p, _, _, d = Phi.shape
    F = Phi.reshape(p, -1, d).transpose(0, 2, 1).reshape(p * d, -1)  # rows (point, c)
    G = (F @ F.T).reshape(p, d, p, d)
    c = (F @ Ys.reshape(-1, d)).reshape(p, d, d)
    yy = float(np.sum(Ys**2))
    ridge = 1e-10 * np.trace(G.reshape(p * d, p * d)) / (p * d)
    return G, c, yy, float(ridge)


def score_tuples(gram: tuple[np.ndarray, np.ndarray, float, float], tuples: np.ndarray, *,
                 chunk: int = 20000) -> np.ndarray:
    """The exhaustive search's score of each tuple: the relative residual of the least-squares ``W``'s.

    One ``md × md`` solve per tuple, ``chunk`` tuples at a time (the work whose count the paper's ε-net
    multiplies; :mod:`learner.study.pricing` times it).

    Parameters
    ----------
    gram : tuple
        :func:`exhaustive_gram`'s result.
    tuples : ndarray of int, shape (T, m)
        Indices of grid points, one tuple per row.
    chunk : int
        Tuples per batched solve (memory ``chunk·(md)²`` floats).

    Returns
    -------
    ndarray, shape (T,)
        ``(‖Y‖² − explained) / ‖Y‖²`` per tuple.
    """
    G, c, yy, ridge = gram
    d = c.shape[2]
    m = tuples.shape[1]
    scores = np.empty(len(tuples))
    eye = ridge * np.eye(m * d)
    for s in range(0, len(tuples), chunk):
        T = tuples[s : s + chunk]
        Gt = G[T[:, :, None], :, T[:, None, :], :].transpose(0, 1, 3, 2, 4).reshape(len(T), m * d, m * d)
        ct = c[T].reshape(len(T), m * d, d)
        sol = np.linalg.solve(Gt + eye, ct)
        scores[s : s + chunk] = (yy - np.einsum("tpe,tpe->t", sol, ct)) / yy
    return scores


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
    greedy: list[int] = []
    for _ in range(m):
        gain = scorer.explained(greedy)
        if greedy:
            gain[greedy] = -np.inf
        greedy.append(int(np.argmax(gain)))
    found: dict[tuple[int, ...], float] = {}
    total_swaps = 0
    for start in [greedy] + [list(rng.choice(p, size=m, replace=False)) for _ in range(starts)]:
        T, score, swaps = _swap_descent(scorer, m, start)
        total_swaps += swaps
        found[T] = min(score, found.get(T, np.inf))
    ranked = sorted(found, key=found.__getitem__)
    details = {"swap_starts": starts + 1, "swaps": total_swaps, "distinct_optima": len(found),
               "best_in_sample_residual": float(found[ranked[0]])}
    return np.array(ranked[:keep]), scorer.evaluations, details


def search_heads(source: LayerOracle | ArraySource, theta_star: np.ndarray, directions: np.ndarray, m: int,
                 config: LearnConfig | None = None, *, truth: AttentionLayer | None = None,
                 workers: Workers | int | str | None = None, threads: int = 1, device: Any = None) -> SearchResult:
    """Phase 6: the best m-tuple on an ε-net of the hull, then joint least-squares refinement.

    Every setting comes from ``config`` (fields left at None chosen for ``m``,
    :func:`learner.phases.resolve_config`):

    - the net: radius ``net_radius`` × ‖Θ*‖_F, ``net_points`` points on the axis at m = 2 and
      ``net_points_3d`` per axis beyond;
    - the tuple search ``search`` (module docstring; ``"auto"`` is the exhaustive one where ``max_tuples``
      and ``search_memory``, the bytes of its Gram matrix, allow it, the variable-projection search
      otherwise), with ``swap_starts`` and ``vp_starts`` random starts from the seed ``search_seed``; tuples
      are scored on ``n_search`` examples (the swap descent on as many as its feature cache fits in
      ``search_memory``), and as many again are held out to compare the ``keep_tuples`` best;
    - the joint refinement ``refine``: ``"vp"`` (ours) Levenberg–Marquardt on the ``Θ``'s with the ``W``'s
      solved exactly at every step (variable projection), or ``"trf"``, a trust-region refinement of all
      ``2md²`` parameters with the full analytic Jacobian (kept for comparison; no noise-floor test follows
      it), on ``refine_examples_per_param`` residuals per parameter (× 2md²/(kd) examples, at least
      2d²/(k(k−1)) and at most ``n_search``), within ``max_nfev`` residual evaluations;
    - with ``noise_floor``, a held-out relative error above :data:`learner.phases.noise.NOISE_MIN` is tested
      for label noise (:func:`learner.phases.noise.noise_floor`, width ``noise_z`` sd) and, when it passes,
      the layer is refitted on every scoring example the memory budget allows (``noise_test``, ``noise``,
      ``refit_examples`` of the result).

    Parameters
    ----------
    source : LayerOracle or ArraySource
        Where the examples come from (``2·n_search`` of them are drawn).
    theta_star : ndarray (d, d)
        The hull's minimum-norm point (phase 5).
    directions : ndarray (d², m − 1)
        Orthonormal hull directions (phase 5).
    m : int
        Heads.
    config : LearnConfig, optional
        The settings above; None: the defaults, as :func:`learner.learn` runs them.
    truth : AttentionLayer, optional
        Records the warm start's errors.
    workers : Workers, int, "auto" or None
        Where the variable-projection search's starts run (:func:`learner.learn` passes its pool); the result
        is the same wherever they run. None: here, one after another.
    threads : int
        Threads of the refinement's normal-equation products, each with one BLAS thread, in blocks that do not
        depend on their number, so the result does not either (:func:`learner.learn` passes every core its run
        has: the workers are idle then).
    device : str or learner.arrays.Backend, optional
        A torch device (``"cuda"``, ``"cuda:1"``, ``"cpu"``; the torch extra), or its backend
        (:func:`learner.arrays.backend`; :func:`learner.learn` resolves it once per run), on which the
        variable-projection search (its starts one after another there, not on ``workers``, the examples copied
        there once) and refinement compute, on torch tensors (:mod:`learner.arrays`); the exhaustive and swap
        searches, the warm start and the noise-floor refit stay on numpy. None (default): numpy throughout.

    Returns
    -------
    SearchResult
        ``search`` says which search ran; ``search_details`` its figures.

    Raises
    ------
    ValueError
        For ``search="exhaustive"`` beyond ``max_tuples`` or ``search_memory``.
    """
    t0 = time.perf_counter()
    backend = arrays.backend(device)  # before any example: a device torch cannot see is refused at once
    m = check_int("m", m, minimum=1)
    cfg, _ = resolve_config(as_config(config), m)
    n_search, search, refine, search_memory = cfg.n_search, cfg.search, cfg.refine, cfg.search_memory
    net_points, max_nfev = cfg.net_points, cfg.max_nfev
    net_points_3d = cfg.net_points_3d
    assert net_points_3d is not None  # chosen from m by resolve_config just above
    d = theta_star.shape[0]
    Xs, Ys = draw_checked(source, n_search)
    Xh, Yh = draw_checked(source, n_search)
    k = Xs.shape[1]
    radius = cfg.net_radius * max(float(np.linalg.norm(theta_star)), 1e-3)
    p = 1 if m == 1 else net_points if m == 2 else net_points_3d ** (m - 1)  # grid points
    chosen = _choose_search(search, m, p, d, max_tuples=cfg.max_tuples, search_memory=search_memory)
    tuples, scored, details = _search_tuples(
        chosen, theta_star, directions, m, Xs, Ys, n_search=n_search, radius=radius, p=p, net_points=net_points,
        net_points_3d=net_points_3d, keep_tuples=cfg.keep_tuples, max_nfev=max_nfev, search_memory=search_memory,
        swap_starts=cfg.swap_starts, vp_starts=cfg.vp_starts, seed=cfg.search_seed, workers=workers, backend=backend)
    warm_err, warm = _warm_start(tuples, Xs, Ys, Xh, Yh)
    n_ref = refinement_examples(m, d, k, cfg)
    Xr, Yr = Xs[:n_ref], Ys[:n_ref]
    t1 = time.perf_counter()
    if refine == "vp":
        z, ws, nfev, _ = _refine_vp(warm.thetas, Xr, Yr, max_iter=max_nfev, max_bytes=search_memory,
                                    solver=cfg.refine_solver,
                                    threads=threads, backend=backend)
        thetas = z.reshape(m, d, d)
    else:
        thetas, ws, nfev = _refine(warm.thetas, warm.ws, Xr, Yr, max_nfev)
    refined = AttentionLayer(thetas, ws)
    heldout = heldout_relative_error(refined, Xh, Yh)
    rss = float(np.sum((refined(Xr) - Yr) ** 2))
    noise: dict[str, Any] = {"residual_sigma": float(np.sqrt(rss / max(Yr.size - 2 * m * d * d, 1)))}
    if cfg.noise_floor and refine == "vp" and heldout > NOISE_MIN:
        found, extra_nfev = _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh, cfg, hull=(theta_star, directions, radius),
                                         threads=threads)
        if "refit" in found:
            refined, heldout = found.pop("refit")
        noise |= found
        nfev += extra_nfev
    refine_seconds = time.perf_counter() - t1
    extra: dict[str, Any] = {}
    if truth is not None:
        extra["warm_start_error"] = relative_error(truth, warm, k, n_samples=4096, rng=0)
        extra["warm_start_param_error"] = match_heads(truth, warm).max_error if truth.m == m else None
    return SearchResult(
        layer=refined,
        warm_start=warm,
        warm_start_heldout=warm_err,
        heldout_error=heldout,
        tuples_scored=int(scored),
        net_points=p,
        nfev=nfev,
        n_examples=2 * n_search,
        seconds=time.perf_counter() - t0,
        refine_seconds=refine_seconds,
        search=chosen,
        search_details=details,
        **extra,
        **noise,
    )


def _noise_refit(refined, Xs, Ys, Xr, Yr, Xh, Yh, config, *, hull=None, threads=1):
    """The noise-floor test of the refined layer; when it passes, the refit on more scoring examples.

    ``config`` gives the test's width (``noise_z``), the refit's ``max_nfev`` and the memory (``search_memory``:
    a quarter of it for each of the test's Jacobians, all of it for the refit's normal equations). Returns
    ``(SearchResult fields, residual evaluations)``: the test, and when it passed the noise floor of the refit
    and ``"refit"``, the refit layer and its held-out error.
    """
    from .noise import candidate_thetas, noise_floor

    max_bytes, max_nfev = config.search_memory, config.max_nfev
    budget = max_bytes // 4  # the Jacobians of the test: a quarter of the search's memory each
    m, d = refined.m, refined.d
    k = Xs.shape[1]
    if Xr.shape[0] * 8 * k * d * 2 * m * d * d > budget:  # the refinement's Jacobian would not fit: no test
        return {}, 0
    test = noise_floor(refined, Xr, Yr, Xh, Yh, config, max_bytes=budget,
                       candidates=candidate_thetas(refined, hull))
    if not test.consistent:
        return {"noise_test": test}, 0
    n_fit = int(min(Xs.shape[0], max(Xr.shape[0], budget // (8 * k * d * 2 * m * d * d))))
    solver = choose_solver(config.refine_solver, refined.thetas.size)
    z_fit, ws, nfev, _ = _levenberg_marquardt(refined.thetas, Xs[:n_fit], Ys[:n_fit], max_iter=max_nfev, ftol=1e-12,
                                              max_bytes=max_bytes, threads=threads, solver=solver)
    refit = AttentionLayer(z_fit.reshape(m, d, d), ws)
    # The features were tried on the refinement set (a few residuals per parameter, a small design); the
    # refit's own test is the held-out ratio, and it carries the features' verdict.
    floor = noise_floor(refit, Xs[:n_fit], Ys[:n_fit], Xh, Yh, config, max_bytes=budget, candidates=([], []))
    floor = dataclasses.replace(floor, structure_p=test.structure_p, structure_features=test.structure_features,
                                structure_worst=test.structure_worst)  # the features' verdict, made above
    return {"noise_test": test, "noise": floor, "refit_examples": n_fit,
            "refit": (refit, heldout_relative_error(refit, Xh, Yh))}, nfev


def _choose_search(search, m, p, d, *, max_tuples, search_memory):
    """The search that runs: ``search``, or for ``"auto"`` the exhaustive one where its limits allow it."""
    n_tuples = math.comb(p, m)
    gram_bytes = 8 * (p * d) ** 2
    exhaustive_ok = n_tuples <= max_tuples and gram_bytes <= search_memory
    if search == "exhaustive" and not exhaustive_ok:
        raise ValueError(f"the exhaustive search needs C({p}, {m}) = {n_tuples:.3g} tuples and a "
                         f"{gram_bytes / 2**30:.3g} "
                         f"GiB Gram matrix; the limits are max_tuples={max_tuples:g} and search_memory="
                         f"{search_memory / 2**30:.3g} GiB. Use search='swap' or 'auto', or a coarser grid.")
    if m == 1:  # one point, Θ* itself: nothing to search
        return "exhaustive"
    if search == "auto":
        return "exhaustive" if exhaustive_ok else "vp"
    return search


def _search_tuples(chosen, theta_star, directions, m, Xs, Ys, *, n_search, radius, p, net_points, net_points_3d,
                   keep_tuples, max_nfev, search_memory, swap_starts, vp_starts, seed, workers=None,
                   backend=arrays.NUMPY):
    """Run the ``chosen`` tuple search; its best tuples of Θ's (best first), the tuples scored, its figures."""
    d = theta_star.shape[0]
    k = Xs.shape[1]
    details = {"grid_points": p, "tuples_in_grid": float(math.comb(p, m))}
    if chosen == "vp":
        # Residuals n·k·d at least twice the unknowns of the W least squares and the coordinates.
        n_fit = min(n_search, max(32, int(np.ceil(2 * (m * d * d + m * (m - 1)) / (k * d)))))
        found, scored, sd = _vp_search(theta_star, directions, m, Xs[:n_fit], Ys[:n_fit], radius, keep_tuples,
                                       starts=vp_starts, max_iter=max_nfev, rng=np.random.default_rng(seed),
                                       workers=workers, backend=backend)
        return found, scored, details | sd | {"scoring_examples": int(n_fit)}
    alphas = _grid(m, net_points, net_points_3d) * radius
    points = theta_star[None] + (alphas @ directions.T).reshape(-1, d, d) if m > 1 else theta_star[None]
    if chosen == "exhaustive":
        Phi = np.stack([_features(t, Xs) for t in points])  # (p, n, k, d)
        best, scored = _exhaustive(Phi, Ys, m, keep_tuples)
        details["memory_bytes"] = 8 * (p * d) ** 2 + Phi.nbytes
        return (points[T] for T in best), scored, details
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
    return (points[T] for T in best), scored, details


def _warm_start(tuples, Xs, Ys, Xh, Yh):
    """Each tuple's W's by least squares; the layer with the smallest held-out error and that error."""
    candidates = []
    for thetas in tuples:
        ws = _fit_ws([_features(t, Xs) for t in thetas], Ys)
        layer = AttentionLayer(thetas, ws)
        candidates.append((heldout_relative_error(layer, Xh, Yh), layer))
    return min(candidates, key=lambda c: c[0])
