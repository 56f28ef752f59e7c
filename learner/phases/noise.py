"""Phase 6's noise floor: the label noise estimated from the fit's own residuals, and whether the fit reached it.

All of this is ours (the paper assumes exact labels). When the refined layer's held-out relative error is
above :data:`NOISE_MIN` (far above float64's rounding), the labels may carry noise; the learner then asks
whether the residual is what i.i.d. label noise of one level ``σ`` would leave behind, linearising the
layer at the fit (``J`` is :func:`learner.layer.layer_jacobian` on the refinement's ``N``
residuals, of rank ``p``):

- **The estimate.** ``σ̂² = RSS / (N − p)``, the least-squares estimate with the ``p`` fitted directions
  taken out.
- **The test.** If the layer is right and only noise is left, the held-out mean square is
  ``σ²(1 + h)`` with ``h = tr((JᵀJ)⁺ J_hᵀJ_h) / N_h`` (the parameters' error seen on fresh inputs:
  ``J_h`` is the Jacobian on ``N_h`` held-out residuals). The statistic ``ρ = MSE_h / (σ̂²(1 + h))`` is
  then 1 within ``sd = sqrt(2/(N − p) + 2/N_h + 2Σλ²/(1 + h)²)``: the two chi-square fluctuations and that
  of the parameters' error seen on fresh inputs, a quadratic form whose eigenvalues ``λ`` (of
  ``(JᵀJ)^(−1/2) J_hᵀJ_h (JᵀJ)^(−1/2) / N_h``, summing to ``h``) are large when a few directions carry the
  leverage (without that term a right layer at (2, 8, 2), ``h`` = 0.72, fell just outside a 4-sd band:
  ``ρ`` = 1.207 against 1 ± 0.207); the fit is *at the
  noise floor* when ``|ρ − 1| <= z·sd`` *and* the residual has no structure (next item). ``h`` is large on
  the refinement set (≈ 5 at (2, 8, 2): the parameters' error seen on fresh inputs is five times the
  noise, which is why the refit below pays).
- **The structure test.** Noise is independent of the inputs; a layer that misses the planted one leaves
  a residual that is a function of them. On the refinement set the residual is regressed on the features
  ``softmax(XΘXᵀ)X`` of candidate patterns (:func:`candidate_thetas`: uniform attention, each fitted head
  at half and twice its scale, attention to the token itself, the hull's centre and random points of
  phase 6's search box), each block taken off the fitted directions: under noise alone the explained sum
  of squares over ``σ̂²`` is chi-square with the block's rank, and the smallest p-value times the number
  of candidates (Bonferroni) must be at least :data:`STRUCTURE_ALPHA`. The magnitude test alone has
  little power when the refinement has many residuals per parameter (measured: one head fitted to a
  two-head layer at (2, 6, 2) on 72 examples gave ``ρ`` = 0.83–1.45, inside 1 ± 0.2 in 16 of 20
  layers); with the features, 20 of 20 such misfits were refused (p from 9e-5 down to 1e-48) and 20 of
  20 right layers at σ = 10⁻³ passed (ρ 0.86–1.17, p ≥ 0.055).
- **The expectation.** The parameters' covariance is ``σ̂² (JᵀJ)⁺``; a head's expected relative error
  is the root of its block's trace over its norm (``Θ_i`` and ``W_i`` apart), and the expected parameter
  error is the largest of these — the quantity :func:`learner.metrics.match_heads` measures as
  ``max_error``.

The refit: once the fit is at the floor, the learner refits on every scoring example phase 6 drew
(within a memory budget) from the refined layer, which lowers the parameters' error by the square root
of the larger count, and reports ``σ̂`` and the expectation from that refit's Jacobian.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..hints import SeedLike
from ..layer import AttentionLayer, head_features, layer_jacobian
from ._config import LearnConfig, as_config

__all__ = ["NOISE_MIN", "NOISE_Z", "STRUCTURE_ALPHA", "NoiseFloor", "candidate_thetas", "noise_floor"]

#: Held-out relative errors above this are analysed for noise (ours: the 358 successful runs recorded under
#: docs/sweeps end at most at 7.8e-29 in float64, so a residual 10⁸ times above that is not rounding).
NOISE_MIN = 1e-20

#: The structure test's level (after Bonferroni over the candidate features). Ours: a false alarm about once in
#: 10⁴ fits, as NOISE_Z; the misfits measured above had p <= 9e-5, the right layers p >= 0.055.
STRUCTURE_ALPHA = 1e-4

#: The test's width in standard deviations: ``LearnConfig.noise_z``'s default, its one home (ours: 4 sd of a
#: chi-square ratio is exceeded by chance about once in 10⁴ fits, while a missed layer falls below by tens of sd
#: in the cases measured).
NOISE_Z: float = LearnConfig.noise_z


@dataclass(frozen=True)
class NoiseFloor:
    """The noise estimated from a fit's residuals, the test that the fit reached it, the expected error.

    What :func:`noise_floor` returns; the quantities are those of the module docstring (all ours).

    Parameters
    ----------
    sigma : float
        ``σ̂ = sqrt(RSS / (N − p))``: the label noise's standard deviation estimated from the fit's residuals,
        in the labels' units.
    rank : int
        ``p``: the rank of the fit's Jacobian, the directions the fit took out of the residual.
    residuals : int
        ``N``: the residuals of the fit (examples × k × d).
    heldout_residuals : int
        ``N_h``: the held-out residuals of the test (examples × k × d).
    heldout_mse : float
        ``MSE_h``: the mean square of the held-out residuals.
    leverage : float
        ``h = tr((JᵀJ)⁺ J_hᵀJ_h) / N_h``: the parameters' error seen on fresh inputs, in units of ``σ²``.
    rho : float
        ``ρ = MSE_h / (σ̂²(1 + h))``: 1 within ``sd`` when only noise is left (``inf`` when ``σ̂ = 0``).
    sd : float
        The standard deviation of ``ρ`` under noise alone.
    z : float
        The test's width in standard deviations: the magnitude test passes when ``|ρ − 1| <= z·sd``.
    expected_param_error : float
        The largest expected relative error of a head's ``Θ_i`` or ``W_i`` from the parameters' covariance
        ``σ̂²(JᵀJ)⁺`` (the quantity :func:`learner.metrics.match_heads` measures as ``max_error``).
    relative_noise : float
        ``σ̂² / mean(Y²)``: the noise's variance relative to the labels' mean square on the fit's examples.
    structure_p : float, default 1.0
        The structure test's p-value, after Bonferroni over the candidate features (1: no feature tried);
        the residual has structure when it is below :data:`STRUCTURE_ALPHA`.
    structure_features : int, default 0
        The candidate attention patterns whose features were tried.
    structure_worst : str, default ""
        The name of the candidate with the smallest p-value ("" when none was tried).
    """

    sigma: float
    rank: int
    residuals: int
    heldout_residuals: int
    heldout_mse: float
    leverage: float
    rho: float
    sd: float
    z: float
    expected_param_error: float
    relative_noise: float
    structure_p: float = 1.0
    structure_features: int = 0
    structure_worst: str = ""

    @property
    def consistent(self) -> bool:
        """Whether the residual is the one noise of level ``sigma`` leaves: the held-out mean square within
        ``|ρ − 1| <= z·sd`` and no candidate feature explaining more of it than chance (``structure_p >=``
        :data:`STRUCTURE_ALPHA`)."""
        return bool(abs(self.rho - 1.0) <= self.z * self.sd and self.structure_p >= STRUCTURE_ALPHA)

    def summary(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict, with :attr:`consistent` added.

        Returns
        -------
        dict
            Every field by name, and ``"consistent"``.
        """
        return asdict(self) | {"consistent": self.consistent}

    def test_clause(self) -> str:
        """The test in words: the held-out mean square against the noise's prediction, and the features.

        Returns
        -------
        str
            One clause, for logs and failure messages.
        """
        within = abs(self.rho - 1.0) <= self.z * self.sd
        return (f"held-out mean square {self.heldout_mse:.3g} against σ̂²(1 + h) with h = {self.leverage:.3g}: ratio "
                f"{self.rho:.3f}, {'within' if within else 'outside'} 1 ± {self.z:g}·{self.sd:.2g}; "
                f"{self.structure_features} attention features explain "
                + ("no more of the residual than chance" if self.structure_p >= STRUCTURE_ALPHA else
                   f"more of the residual than noise would let them (the best, {self.structure_worst}, at "
                   f"p = {self.structure_p:.2g} after Bonferroni, below {STRUCTURE_ALPHA:g})"))

    def describe(self) -> str:
        """One sentence: the estimate, the test and the expectation.

        Returns
        -------
        str
            ``σ̂`` with its residuals and rank, :meth:`test_clause`, and the expected parameter error.
        """
        return (f"σ̂ = {self.sigma:.3g} from {self.residuals:,} residuals ({self.rank} fitted directions); "
                f"{self.test_clause()}; expected parameter error {self.expected_param_error:.3g}")


def _jacobian_rows(layer, X, max_bytes):
    """The layer's full Jacobian on as many of the examples ``X`` as ``max_bytes`` allows (at least one)."""
    k, d = X.shape[1], X.shape[2]
    per_example = 8 * k * d * 2 * layer.m * d * d
    n = max(1, min(X.shape[0], int(max_bytes // per_example)))
    return layer_jacobian(layer.thetas, layer.ws, X[:n]), n


def candidate_thetas(layer: AttentionLayer, hull: tuple[np.ndarray, np.ndarray, float] | None = None, *,
                     points: int = 48, rng: SeedLike = 0) -> tuple[list[str], list[np.ndarray]]:
    """The attention patterns whose features the structure test tries.

    Uniform attention (``Θ = 0``), each fitted head at half and twice its scale, attention to the token itself
    (``4·I``), and — given the hull ``(Θ*, directions, radius)`` of phase 5 — ``Θ*`` and ``points`` uniform
    random points of the search box ``Θ* + V α``, ``α ∈ [−radius, radius]^(m−1)`` (none when the hull has no
    direction). All ours.

    Parameters
    ----------
    layer : AttentionLayer
        The fitted layer, whose heads are tried at half and twice their scale.
    hull : (ndarray, ndarray, float), optional
        ``(Θ*, directions, radius)``: the hull's minimum-norm point (d × d), its orthonormal directions
        (d² × (m − 1)) and the search box's radius (in the units of ``Θ``). None: no hull candidates.
    points : int
        Random points of the box to try.
    rng : int, Generator or None
        Seed of the random points (the default 0 makes the candidates repeat).

    Returns
    -------
    names : list of str
        A name per candidate (``"uniform attention"``, ``"head 0 at 0.5×"``, ``"hull point 3"``, ...).
    thetas : list of ndarray
        The candidates' ``Θ``, each d × d, in the same order.

    Examples
    --------
    >>> from learner import random_layer
    >>> names, thetas = candidate_thetas(random_layer(2, 4, rng=0))
    >>> names
    ['uniform attention', 'head 0 at 0.5×', 'head 0 at 2×', 'head 1 at 0.5×', 'head 1 at 2×', 'self-attention 4·I']
    >>> thetas[-1].shape
    (4, 4)
    """
    d = layer.d
    names, thetas = ["uniform attention"], [np.zeros((d, d))]
    for i, theta in enumerate(layer.thetas):
        for s in (0.5, 2.0):
            names.append(f"head {i} at {s:g}×")
            thetas.append(s * theta)
    names.append("self-attention 4·I")
    thetas.append(4.0 * np.eye(d))
    if hull is not None:
        theta_star, directions, radius = hull
        names.append("Θ*")
        thetas.append(theta_star)
        if directions.shape[1]:
            alphas = np.random.default_rng(rng).uniform(-radius, radius, size=(points, directions.shape[1]))
            for j, a in enumerate(alphas):
                names.append(f"hull point {j}")
                thetas.append(theta_star + (directions @ a).reshape(d, d))
    return names, thetas


def _structure(layer, X, r, basis, sigma2, candidates):
    """Bonferroni p-value of the candidate attention features' fit to the residual ``r`` (shape (n, k, d)),
    each block's features taken off the fitted directions ``basis`` (orthonormal columns, rows (n, a, e)):
    under noise alone ``‖P r‖² / σ²`` is chi-square with the block's rank."""
    from scipy.stats import chi2

    names, thetas = candidates
    n, k, d = X.shape
    rf = r.ravel()
    best_p, worst = 1.0, ""
    for name, theta in zip(names, thetas, strict=True):
        phi = head_features(theta, X).reshape(n * k, d)  # regressors of one output column
        # block columns (c, e): phi[:, c] on the rows of output e
        B = np.zeros((n * k, d, d * d))
        for e in range(d):
            B[:, e, np.arange(d) * d + e] = phi
        B = B.reshape(n * k * d, d * d)
        B -= basis @ (basis.T @ B)
        U, sv, _ = np.linalg.svd(B, full_matrices=False)
        U = U[:, sv > sv[0] * 1e-8] if sv[0] > 0 else U[:, :0]
        if not U.shape[1]:
            continue
        stat = float(np.sum((U.T @ rf) ** 2)) / sigma2
        p = float(chi2.sf(stat, U.shape[1]))
        if p < best_p:
            best_p, worst = p, name
    return min(1.0, best_p * max(len(thetas), 1)), worst


def noise_floor(layer: AttentionLayer, X: np.ndarray, Y: np.ndarray, Xh: np.ndarray, Yh: np.ndarray,
                config: LearnConfig | None = None, *, max_bytes: int | None = None,
                candidates: tuple[Sequence[str], Sequence[np.ndarray]] | None = None) -> NoiseFloor:
    """The :class:`NoiseFloor` of ``layer`` fitted to ``(X, Y)`` and scored on held-out ``(Xh, Yh)``.

    ``X`` must be the examples the layer was fitted to (its residual is then orthogonal to the fitted
    directions); the held-out Jacobian is taken on as many of ``Xh`` as ``max_bytes`` allows, the held-out
    mean square on all of them. The estimate, the test and the expectation are the module docstring's (ours).

    Parameters
    ----------
    layer : AttentionLayer
        The fitted layer.
    X : ndarray, shape (n, k, d)
        The inputs it was fitted to.
    Y : ndarray, shape (n, k, d)
        Their labels.
    Xh : ndarray, shape (n_h, k, d)
        Held-out inputs.
    Yh : ndarray, shape (n_h, k, d)
        Their labels.
    config : LearnConfig, optional
        Reads ``noise_z``, the test's width in standard deviations (recorded in the result;
        :attr:`NoiseFloor.consistent` applies it), and ``search_memory``; None: the defaults.
    max_bytes : int, optional
        Memory budget of each Jacobian (the full Jacobian on ``X`` must fit it; bytes). None: a quarter of
        ``config.search_memory``, phase 6's budget for each of its test's Jacobians.
    candidates : (sequence of str, sequence of ndarray), optional
        The structure test's candidate patterns ``(names, thetas)``; None: :func:`candidate_thetas` of
        ``layer`` without a hull. ``([], [])`` skips the structure test (``structure_p`` 1).

    Returns
    -------
    NoiseFloor
        The estimate ``σ̂``, the test's statistics and the expected parameter error.

    Raises
    ------
    ValueError
        When the Jacobian on all of ``X`` does not fit ``max_bytes``.

    Examples
    --------
    One head refitted to labels with noise of level 10⁻³: the estimate finds the level, and the fit is at
    the floor.

    >>> import numpy as np
    >>> from learner import random_layer, sample_inputs
    >>> from learner.phases.search import refit
    >>> rng = np.random.default_rng(1)
    >>> X, Xh = sample_inputs(100, 2, 3, rng=2), sample_inputs(100, 2, 3, rng=3)
    >>> def noisy(layer, X):
    ...     return layer(X) + 1e-3 * rng.standard_normal(X.shape)
    >>> one = random_layer(1, 3, rng=0)
    >>> Y, Yh = noisy(one, X), noisy(one, Xh)
    >>> floor = noise_floor(refit(one.thetas, X, Y), X, Y, Xh, Yh)
    >>> round(floor.sigma, 4), floor.rank, floor.residuals, floor.consistent
    (0.001, 18, 600, True)

    One head fitted to a two-head layer: the held-out ratio alone is within its band, but the residual is a
    function of the inputs, and the structure test refuses it.

    >>> two = random_layer(2, 3, rng=0)
    >>> Y, Yh = noisy(two, X), noisy(two, Xh)
    >>> miss = noise_floor(refit(two.thetas[:1], X, Y), X, Y, Xh, Yh)
    >>> abs(miss.rho - 1) <= miss.z * miss.sd, miss.structure_p < STRUCTURE_ALPHA, miss.consistent
    (True, True, False)
    """
    cfg = as_config(config)
    z = cfg.noise_z
    if max_bytes is None:
        max_bytes = cfg.search_memory // 4
    r = (layer(X) - Y).ravel()
    J, n_used = _jacobian_rows(layer, X, max_bytes)
    if n_used < X.shape[0]:
        raise ValueError(f"the fit's Jacobian on {X.shape[0]} examples exceeds max_bytes={max_bytes}; "
                         f"it fits {n_used}.")
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    keep = s > s[0] * max(J.shape) * np.finfo(float).eps
    rank = int(keep.sum())
    N = r.size
    dof = max(N - rank, 1)
    sigma2 = float(r @ r) / dof
    # (JᵀJ)⁺ = V S⁻² Vᵀ on the kept directions
    Vk = Vt[keep].T / s[keep]
    Jh, _ = _jacobian_rows(layer, Xh, max_bytes)
    # In whitened coordinates the parameters' error is N(0, σ² I) and its held-out excess is δᵀ(AᵀA/N_h)δ with
    # A = J_h V S⁻¹: h is the trace of AᵀA/N_h and the excess's variance 2σ⁴ times the sum of its squared
    # eigenvalues, which is large when a few directions carry the leverage.
    lam = np.linalg.svd(Jh @ Vk, compute_uv=False) ** 2 / Jh.shape[0]
    leverage = float(lam.sum())
    rh = (layer(Xh) - Yh).ravel()
    mse_h = float(rh @ rh) / rh.size
    denominator = sigma2 * (1.0 + leverage)
    rho = mse_h / denominator if denominator > 0 else float("inf")
    sd = float(np.sqrt(2.0 / dof + 2.0 / rh.size + 2.0 * float(np.sum(lam**2)) / (1.0 + leverage) ** 2))
    # Expected relative error per block: sqrt(σ̂² tr((JᵀJ)⁺)_block) / ‖block‖.
    var = sigma2 * np.sum(Vk**2, axis=1)  # diagonal of σ̂²(JᵀJ)⁺, parameters in layer_jacobian's order
    m, d = layer.m, layer.d
    var = var.reshape(2, m, d * d).sum(axis=2)  # (Θ or W, head)
    norms = np.stack([np.linalg.norm(layer.thetas.reshape(m, -1), axis=1), np.linalg.norm(layer.ws.reshape(m, -1),
                                                                                             axis=1)])
    expected = float(np.max(np.sqrt(var) / np.maximum(norms, 1e-300)))
    relative_noise = sigma2 / max(float(np.mean(Y**2)), 1e-300)
    if candidates is None:
        candidates = candidate_thetas(layer)
    structure_p, worst = _structure(layer, X, r.reshape(X.shape), U[:, keep], sigma2, candidates)
    return NoiseFloor(sigma=float(np.sqrt(sigma2)), rank=rank, residuals=int(N), heldout_residuals=int(rh.size),
                      heldout_mse=mse_h, leverage=leverage, rho=float(rho), sd=sd, z=float(z),
                      expected_param_error=expected, relative_noise=float(relative_noise),
                      structure_p=structure_p, structure_features=len(candidates[0]), structure_worst=worst)
