"""Certification yield of the sculpting phases, predicted from the density of the logit disagreements at 0.

The learner's phases 2 and 4 (:mod:`learner.phases.sculpt`) fit every output
row ``y_a`` as ``pᵀ X ΣW`` with ``Σp = 1`` and certify the rows whose relative
residual is below ``tol``; a certified row gives one affine constraint on the
``Θ_i`` per token ``j ≠ j0`` with weight ``p_j >= min_weight``. A row certifies
(approximately) when every head has the same pattern, i.e. when the
``n = (m−1)(k−1)`` logit disagreements

.. math:: D_{i,j} = x_a^\\top (\\Theta_i - \\Theta_1)(x_j - x_a), \\qquad i = 2..m,\\ j \\ne a,

are all close to 0. This module predicts how many constraints per example the
learner gets: the density of ``D`` at 0 from its exact first two moments (a
Gaussian, local-CLT approximation) times the volume of the window of ``D``
that passes the residual test, averaged over the geometry of the example:

.. math:: \\mathbb{E}[\\text{constraints per example}] \\approx
          k\\, \\varphi_{\\mu, \\Sigma}(0)\\;
          \\mathbb{E}_X\\Big[N_{use}(X)\\, \\operatorname{vol}\\{D \\in \\mathbb{R}^n :
          \\|M_X D\\| \\le \\mathrm{tol}\\}\\Big],
          \\qquad \\operatorname{vol} = \\frac{V_n\\, \\mathrm{tol}^n}{\\sqrt{\\det M_X^\\top M_X}},

where ``M_X`` is the linearised residual map of the row fit at agreement and
``V_n`` the volume of the unit ``n``-ball, and compares the prediction with a
Monte Carlo measurement that calls the learner's own
:func:`learner.phases.sculpt.certify_rows` with the true ``ΣW``.

What is the paper's and what is ours: that sculpting certifies the rows where
the heads agree, and that agreement is a ``D ≈ 0`` event, is the talk's
("Sculpting the affine hull", arXiv 2402.04084), and the need for a local CLT
to control such small-window events is the talk's too (its slide on
approximation errors). Ours: the yield model, the exact moment formulas (unconditional, and
given the row token and its slices), the window map
``M_X`` (the linearisation of the learner's residual), the approximation that
ignores the correlation between ``D ≈ 0`` and the geometry of ``X`` (or, with
``geometry="conditional"``, corrects the pattern for it by Gaussian
conditioning), the confidence intervals, and the factor the check allows.

Measured (ours; logit scale 1, ``tol = 0.015``, ``min_weight = 0.02``, three
layers each): the conditional geometry is within 1.3× of the learner's yield
for ``m <= 3`` and ``k <= 5``, and under-predicts by 2–3.6× at ``m = 4, 5``;
the independent geometry over-predicts by 1.3× at ``m = 2, k = 2``, 3× at
``m = 3`` and by orders of magnitude once ``n >= 4``.

The single Gaussian misses because ``D`` is a mixture: over the row token
``x_a`` and, above all, over the Hamming distance ``r`` of the other tokens to
it. Near-duplicate tokens (small ``r``) make ``D`` small and the window wide at
once, and at large ``n`` they carry most of the yield. ``density="slice"``
(ours) models ``D`` given ``x_a`` and ``r`` by the Gaussian with its exact
conditional moments (:func:`conditional_disagreement_moments`, a local CLT on
the slices of the cube) and integrates it over the window; how close it comes
to the simulated rule, where the single Gaussian under-predicts, is measured in
:func:`predicted_yield`, Notes (records in ``docs/sweeps/yield-model/``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, gammaln, ndtri

from learner.hints import SeedLike
from learner.layer import AttentionLayer
from learner.phases.forecast import pilot_forecast, window_exponent
from learner.phases.forecast import poisson_interval as _poisson_interval
from learner.validation import (
    DISTRIBUTIONS,
    Choice,
    Integer,
    Real,
    Scale,
    check_int,
    check_real_array,
    check_rng,
    declare,
)

from ._core import CheckResult, Timer, finish
from .one_step import _check_layer

__all__ = [
    "DEFAULT_FACTOR",
    "DENSITIES",
    "GEOMETRIES",
    "YieldMeasurement",
    "YieldPrediction",
    "check_pilot_forecast",
    "check_yield_prediction",
    "conditional_disagreement_moments",
    "control_pilot_forecast",
    "control_yield_prediction",
    "default_pilot_forecast",
    "default_yield_prediction",
    "disagreement_moments",
    "integer_layer",
    "measured_yield",
    "predicted_yield",
]

#: Default factor the check allows between measurement and prediction (ours). The model
#: replaces a discrete, non-Gaussian D by a Gaussian, linearises the residual and
#: approximates the geometry at agreement; each is an O(1) relative error at these sizes,
#: and a factor 3 (``|log ratio| <= 1.10``) still separates the lattice control, whose atom at
#: D = 0 puts the measurement 6–17× above the model at (m, d, k) = (2, 12, 2).
DEFAULT_FACTOR = 3.0

#: Rank test of the window map (ours): singular values below this fraction of the largest
#: mean a direction of D that the residual does not see at all (numerically), so the
#: linearised window is unbounded; such examples are skipped and counted.
_RANK_RTOL = 1e-10

#: Well-posedness of the row fit, as :func:`learner.phases.sculpt.certify_rows` decides it:
#: det(B Bᵀ) > 1e-8 · (tr(B Bᵀ)/k)^k for B = XΣW (ours: the learner's threshold, copied).
_WELL_POSED_RTOL = 1e-8

#: How :func:`predicted_yield` samples the geometry at agreement.
GEOMETRIES = ("independent", "conditional")

#: How :func:`predicted_yield` models the law of the disagreements ``D`` (see there).
DENSITIES = ("gaussian", "slice")

#: Points per example, from the Gaussian and as many uniform in the window, of the window integral of
#: ``density="slice"`` (ours, not tuned: only the variance depends on it, and the standard error includes it).
_WINDOW_DRAWS = 32

#: Examples per block of the geometry average (ours, not tuned; memory ~ block·(m−1)(k−1)·d floats).
_GEOMETRY_BATCH = 4096

#: Examples per oracle draw in :func:`measured_yield` (ours, not tuned: the learner's default batch).
_MEASURE_BATCH = 100_000


# --------------------------------------------------------------------------- #
# validation
# --------------------------------------------------------------------------- #


def _check_thetas(thetas):
    T = check_real_array("thetas", thetas, ndim=3)
    m, d, d2 = T.shape
    if m < 1 or d < 1 or d != d2:
        raise ValueError(f"`thetas` must have shape (m, d, d) with m, d >= 1; got shape {T.shape}.")
    return T


def _check_k(k, d=None):
    """``k`` as an int >= 2; given the layer's ``d``, also ``k < d``, as :func:`learner.learn` requires.

    The learner refuses ``k >= d`` before drawing an example (:func:`learner.assumptions.setting_conditions`,
    ``k_below_d``: no residual then tells agreeing heads from disagreeing ones); there is no yield of
    its to model or measure, so the model, the measurement and the check refuse it too, up front and
    in the learner's words (ours).
    """
    k = check_int("k", k, minimum=1)
    if k < 2:
        raise ValueError(f"`k` must be at least 2 (a row needs another token to disagree on); got k={k}.")
    if d is not None and k >= d:
        raise ValueError(f"`k` must be smaller than `d` for certification; got k={k}, d={d}.")
    return k


#: The rules of the parameters the model, the measurement and the checks share.
_FRACTION = Real(below=1)  # min_weight, failure_probability: in (0, 1)
_DISTRIBUTION = Choice(DISTRIBUTIONS)


def _entropy(rng):
    seq = getattr(rng.bit_generator, "seed_seq", None)
    return getattr(seq, "entropy", None)


# --------------------------------------------------------------------------- #
# moments of the disagreements
# --------------------------------------------------------------------------- #


@declare(row=Integer(0), distribution=_DISTRIBUTION)
def disagreement_moments(thetas: ArrayLike, k: int, *, row: int = 0,
                         distribution: str = "boolean") -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and covariance of the ``n = (m−1)(k−1)`` logit disagreements of one row.

    .. math:: D_{i,j} = x_a^\\top \\Delta_i (x_j - x_a), \\quad \\Delta_i = \\Theta_i - \\Theta_1,
              \\qquad \\mathbb{E} D_{i,j} = -\\operatorname{tr} \\Delta_i,

    .. math:: \\operatorname{Cov}(D_{i,j}, D_{i',j'}) = [j = j']\\,\\langle \\Delta_i, \\Delta_{i'} \\rangle_F
              + \\sum_{c < e} S_i[c,e]\\, S_{i'}[c,e]
              + \\kappa \\sum_c \\Delta_i[c,c]\\, \\Delta_{i'}[c,c],

    with ``a`` the row, ``i = 2..m``, ``j ≠ a`` the other tokens,
    ``S_i = Δ_i + Δ_iᵀ``, and ``κ = 0`` for uniform Boolean tokens, ``κ = 2``
    for standard Gaussian tokens.

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        The attention matrices ``Θ_1..Θ_m`` (``Θ_1`` is the reference head).
    k : int
        Tokens per example, ``k >= 2``.
    row : int
        The row ``a``, ``0 <= row < k``. The moments do not depend on it (the
        tokens are exchangeable); it only names the tokens ``j ≠ a``.
    distribution : {"boolean", "gaussian"}
        Token entries uniform on ``{±1}`` or standard normal, all independent.

    Returns
    -------
    mean : ndarray, shape (n,)
        ``E D``: ``−tr Δ_i`` for each of head ``i``'s ``k − 1`` disagreements.
    cov : ndarray, shape (n, n)
        Entry ``(i − 2)(k − 1) + t`` is ``D_{i,j}`` for the ``t``-th token
        ``j ≠ a`` in increasing order. ``n = 0`` for one head (empty arrays).

    See Also
    --------
    predicted_yield : Uses these moments for the density of ``D`` at 0.
    theory.local_clt.slice_moments : The same kind of exact moments for ``⟨a, x⟩`` on a slice.

    Notes
    -----
    Derivation (ours), by Fourier (Boolean) or Hermite (Gaussian) expansion.
    ``D_{i,j}`` is a polynomial of degree 2 in the entries ``x_{t,c}``:

    .. math:: D_{i,j} = \\sum_{c,e} \\Delta_i[c,e]\\, x_{a,c} x_{j,e}
              - \\sum_{c<e} S_i[c,e]\\, x_{a,c} x_{a,e} - \\sum_c \\Delta_i[c,c]\\, x_{a,c}^2 .

    For ``±1`` entries ``x_{a,c}² = 1``, so the last sum is the constant
    ``−tr Δ_i`` and the other monomials are distinct characters, orthonormal
    with mean 0: the mean is the constant and the covariance the sum of
    coefficient products over shared monomials (``x_{a,c}x_{j,e}`` is shared
    only when ``j = j'``). For Gaussian entries ``x² = 1 + He_2(x)`` with
    ``E He_2² = 2``, and the products ``x_{a,c}x_{j,e}``, ``x_{a,c}x_{a,e}``
    (``c ≠ e``) and ``He_2(x_{a,c})`` are orthogonal, which adds the ``κ = 2``
    term. The tests compare both with exact enumeration of the cube and with
    Monte Carlo.

    Examples
    --------
    >>> import numpy as np
    >>> thetas = np.array([[[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [0.0, 0.5]]])
    >>> mean, cov = disagreement_moments(thetas, 2)
    >>> mean.tolist(), cov.tolist()       # ‖Δ‖² = 5.25, S[0,1]² = 4
    ([-1.5], [[9.25]])
    >>> disagreement_moments(thetas, 2, distribution="gaussian")[1].tolist()   # + 2·(1 + 0.25)
    [[11.75]]
    """
    T = _check_thetas(thetas)
    k = _check_k(k)
    if row >= k:
        raise ValueError(f"`row` must be a token index in [0, k); got row={row}, k={k}.")
    return _relative_moments(T[1:] - T[:1], k, distribution)


def _relative_moments(mats, k, distribution):
    """Mean and covariance of ``x_aᵀ A_i (x_j − x_a)`` for stacked ``A_i`` (q, d, d).

    See :func:`disagreement_moments`.
    """
    kappa = 2.0 if distribution == "gaussian" else 0.0
    q = mats.shape[0]
    n = q * (k - 1)
    if n == 0:
        return np.zeros(0), np.zeros((0, 0))
    S = mats + mats.transpose(0, 2, 1)
    diag = np.diagonal(mats, axis1=1, axis2=2)  # (q, d)
    cross = np.einsum("icd,jcd->ij", mats, mats)  # monomials x_{a,c} x_{j,e}: shared only when j = j'
    iu = np.triu_indices(mats.shape[1], 1)
    upper = S[:, iu[0], iu[1]]
    pure = upper @ upper.T  # monomials x_{a,c} x_{a,e}, c < e: shared by every j
    square = kappa * (diag @ diag.T)  # He_2(x_{a,c}) (Gaussian only)
    cov = np.kron(cross, np.eye(k - 1)) + np.kron(pure + square, np.ones((k - 1, k - 1)))
    mean = np.repeat(-np.trace(mats, axis1=1, axis2=2), k - 1)
    return mean, cov


def _log_density_at_zero(mean, cov):
    """``log φ_{μ,Σ}(0)``; 0 for ``n = 0`` (no disagreements: a certain event)."""
    n = mean.size
    if n == 0:
        return 0.0
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        L = None
    scale = float(np.max(np.diag(cov))) if n else 0.0
    if L is None or not np.min(np.diag(L)) ** 2 > 1e-12 * scale:
        raise ValueError(
            "the disagreements have a singular covariance (some heads' differences Θ_i − Θ_1 are linearly "
            "dependent, or a head repeats Θ_1), so their density at 0 is not defined; "
            f"got eigenvalues of Σ down to {float(np.linalg.eigvalsh(cov)[0])!r}."
        )
    z = np.linalg.solve(L, mean)
    return float(-0.5 * n * math.log(2 * math.pi) - np.log(np.diag(L)).sum() - 0.5 * z @ z)


def _log_unit_ball(n):
    return 0.5 * n * math.log(math.pi) - float(gammaln(n / 2 + 1))


# --------------------------------------------------------------------------- #
# the law of the disagreements given the row token and its slices
# --------------------------------------------------------------------------- #


def _binomial_half(d):
    """``P(r) = C(d, r) / 2^d`` for ``r = 0..d``: the Hamming distance between two independent uniform tokens."""
    r = np.arange(d + 1)
    return np.exp(gammaln(d + 1) - gammaln(r + 1) - gammaln(d - r + 1) - d * math.log(2.0))


def _conditional_law(thetas, xa, k, r=None):
    """Per example, the law of ``D`` given the row token ``x_a`` and, with ``r``, the slices ``r_j``.

    Returns ``(mean, cov, slope, regular)``: ``mean`` (b, k − 1, q) and ``cov``
    (b, k − 1, q, q) are the mean and covariance of each token's block
    ``D_{·,j}`` (blocks of different tokens are uncorrelated), ``slope`` (b, q)
    the regression ``β`` of head 1's relative logit ``L_{1,j}`` on ``D_{·,j}``
    (the same for every ``j``) and ``regular`` whether the covariance is
    nonsingular (``slope`` is 0 where it is not). See
    :func:`conditional_disagreement_moments`.
    """
    deltas = thetas[1:] - thetas[:1]
    nb, d = xa.shape
    q = deltas.shape[0]
    U = np.einsum("bc,ice->bie", xa, deltas)  # u_i = Δ_iᵀ x_a: D_{i,j} = u_i·(x_j − x_a)
    v = xa @ thetas[0]  # L_{1,j} = v·(x_j − x_a)
    if r is None:
        # x_j independent of x_a, mean 0, covariance I.
        scatter = U @ U.transpose(0, 2, 1)
        cross = np.einsum("bie,be->bi", U, v)
        mean = np.broadcast_to(-np.einsum("bie,be->bi", U, xa)[:, None, :], (nb, k - 1, q))
        cov = np.broadcast_to(scatter[:, None], (nb, k - 1, q, q))
    else:
        # x_j = x_a ⊙ (1 − 2·1_S), S a uniform r_j-subset: D_{·,j} = Σ_{s∈S} a_s, sampled without replacement.
        A = -2.0 * U * xa[:, None, :]  # a_s, (b, q, d)
        w = -2.0 * v * xa  # head 1's logit increments, (b, d)
        centred = A - A.mean(axis=2, keepdims=True)
        scatter = centred @ centred.transpose(0, 2, 1) / d
        cross = np.einsum("bis,bs->bi", centred, w - w.mean(axis=1, keepdims=True)) / d
        mean = r[..., None] * A.mean(axis=2)[:, None, :]
        cov = (r * (d - r) / (d - 1))[..., None, None] * scatter[:, None]
    eig = np.linalg.eigvalsh(scatter)
    regular = eig[:, 0] > 1e-12 * np.maximum(eig[:, -1], 0.0)  # the Cholesky test of _log_density_at_zero
    slope = np.zeros((nb, q))
    if regular.any():
        slope[regular] = np.linalg.solve(scatter[regular], cross[regular][..., None])[..., 0]
    return mean, cov, slope, regular


def conditional_disagreement_moments(thetas: ArrayLike, k: int, row_token: ArrayLike, *,
                                     distances: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and covariance of the ``n = (m−1)(k−1)`` disagreements given the row token (and its slices).

    Given the row token ``x_a`` the other tokens are independent of it, so with
    ``u_i = Δ_i^T x_a`` every ``D_{i,j} = u_i·(x_j − x_a)`` is affine in one
    token ``x_j`` and blocks of different tokens are uncorrelated:

    .. math:: \\mathbb{E}[D_{i,j} \\mid x_a] = -u_i \\cdot x_a, \\qquad
              \\operatorname{Cov}(D_{i,j}, D_{i',j'} \\mid x_a) = [j = j']\\, u_i \\cdot u_{i'},

    for any tokens with mean 0 and identity covariance (uniform ``{±1}`` or
    standard normal entries). With ``distances``, Boolean tokens are further
    conditioned on their slices: ``r_j`` coordinates of ``x_j`` differ from
    ``x_a``, at a uniform ``r_j``-subset ``S_j``, so
    ``D_{·,j} = Σ_{s ∈ S_j} a_s`` with ``a_s = −2 x_{a,s} (u_{i,s})_i ∈ ℝ^{m−1}``
    and, by sampling without replacement,

    .. math:: \\mathbb{E}[D_{·,j} \\mid x_a, r_j] = r_j\\, \\bar a, \\qquad
              \\operatorname{Cov}(D_{·,j} \\mid x_a, r_j) = \\frac{r_j (d - r_j)}{d - 1}\\, P,
              \\qquad P = \\frac{1}{d} \\sum_{s=1}^{d} (a_s - \\bar a)(a_s - \\bar a)^\\top,

    with ``ā`` the mean of the ``a_s`` over the ``d`` coordinates.

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        The attention matrices ``Θ_1..Θ_m`` (``Θ_1`` is the reference head).
    k : int
        Tokens per example, ``k >= 2``.
    row_token : array_like, shape (d,)
        The row's token ``x_a``; entries ``±1`` when ``distances`` are given.
    distances : array_like of int, shape (k − 1,), optional
        The Hamming distances ``r_j`` of the other tokens to ``x_a``, in
        ``[0, d]``, in increasing order of ``j ≠ a``. None: condition on
        ``x_a`` only.

    Returns
    -------
    mean : ndarray, shape (n,)
    cov : ndarray, shape (n, n)
        In the order of :func:`disagreement_moments` (entry ``(i − 2)(k − 1) + t``
        is ``D_{i,j}`` for the ``t``-th token ``j ≠ a``). ``r_j ∈ {0, d}`` gives
        a zero block (``x_j = ±x_a`` fixes ``D_{·,j}``).

    Raises
    ------
    ValueError
        Bad shapes, a ``row_token`` off the cube with ``distances``, or a distance outside ``[0, d]``.

    See Also
    --------
    disagreement_moments : The unconditional moments (these averaged over ``x_a`` and ``r``).
    theory.local_clt.slice_moments : The same sampling-without-replacement moments for one ``⟨a, x⟩``.
    predicted_yield : ``density="slice"`` uses them.

    Notes
    -----
    Ours: the derivation above (the ``a_s`` are the coordinates' contributions
    when a token flips them). Averaging the slice moments over
    ``r_j ~ Binomial(d, 1/2)`` gives the moments given ``x_a`` (law of total
    covariance: ``E[r(d − r)/(d − 1)] = d/4`` and ``Var r = d/4``), and those
    averaged over ``x_a`` give :func:`disagreement_moments`; the tests check both
    by enumeration.

    Examples
    --------
    >>> thetas = np.array([np.zeros((2, 2)), [[1.0, 2.0], [0.0, 0.5]]])
    >>> mean, cov = conditional_disagreement_moments(thetas, 2, [1.0, 1.0])   # u = (1, 2.5)
    >>> mean.tolist(), cov.tolist()
    ([-3.5], [[7.25]])
    >>> conditional_disagreement_moments(thetas, 2, [1.0, 1.0], distances=[1])[1].tolist()   # D ∈ {−2, −5}
    [[2.25]]
    """
    T = _check_thetas(thetas)
    k = _check_k(k)
    m, d, _ = T.shape
    xa = check_real_array("row_token", row_token, ndim=1)
    if xa.shape != (d,):
        raise ValueError(f"`row_token` must have shape (d,) = ({d},); got shape {xa.shape}.")
    r = None
    if distances is not None:
        if not np.all(np.abs(xa) == 1):
            raise ValueError("`row_token` must have entries ±1 when `distances` are given (slices of the Boolean "
                             f"cube); got entries {sorted(set(xa.tolist()) - {-1.0, 1.0})[:3]!r} off the cube.")
        r = check_real_array("distances", distances, ndim=1)
        if r.shape != (k - 1,) or not np.all(r == np.round(r)) or r.min() < 0 or r.max() > d:
            raise ValueError(f"`distances` must be k − 1 = {k - 1} integers in [0, d] = [0, {d}]; "
                             f"got {r.tolist()!r}.")
        r = r[None]
    q = m - 1
    if q == 0:
        return np.zeros(0), np.zeros((0, 0))
    mean, cov, _, _ = _conditional_law(T, xa[None], k, r)
    full = np.zeros((q, k - 1, q, k - 1))
    for j in range(k - 1):
        full[:, j, :, j] = cov[0, j]
    return mean[0].T.reshape(-1), full.reshape(q * (k - 1), q * (k - 1))


def _slice_examples(nb, k, d, rng):
    """Boolean examples drawn slice first: ``(X, r, weight)`` with row 0 the row token.

    ``x_0`` is uniform; each ``r_j`` is drawn from the defensive mixture
    ``(Binomial(d, 1/2) + uniform on 1..d−1) / 2`` and ``x_j`` flips a uniform
    ``r_j``-subset of ``x_0``'s coordinates; ``weight = Π_j Binomial(r_j)/mixture(r_j)``
    (at most ``2^{k−1}``) makes every average over the examples unbiased for
    uniform tokens. Ours: the slices near ``x_0`` (few flipped coordinates) carry
    most of the yield when ``n`` is large, and the mixture samples them at a
    rate that does not fall like ``2^{-d}``.
    """
    pmf = _binomial_half(d)
    proposal = 0.5 * pmf
    proposal[1:d] += 0.5 / (d - 1)
    xa = rng.choice(np.array([-1.0, 1.0]), size=(nb, d))
    r = rng.choice(d + 1, size=(nb, k - 1), p=proposal / proposal.sum())
    ranks = rng.random((nb, k - 1, d)).argsort(axis=2).argsort(axis=2)
    flip = ranks < r[..., None]  # a uniform r_j-subset
    X = np.concatenate([xa[:, None, :], np.where(flip, -xa[:, None, :], xa[:, None, :])], axis=1)
    weight = np.prod(pmf[r] / proposal[r], axis=1)
    return X, r, weight


def _window_probability(V, s, mean, cov, tol, draws, rng):
    """``P(‖M_X D‖ <= tol)`` for ``D`` with independent Gaussian blocks ``N(mean_j, cov_j)``: one estimate per example.

    ``V`` (b, n, n) and ``s`` (b, n) are the left singular vectors and the
    singular values of ``M_Xᵀ`` (so the window is ``{D : ‖s ⊙ Vᵀ D‖ <= tol}``);
    ``mean`` (b, k − 1, q) and ``cov`` (b, k − 1, q, q) the blocks, in
    the token-major layout (``D`` flat is head-major, as ``M_X``'s rows).
    Multiple importance sampling with the balance heuristic (ours): ``draws``
    points from the Gaussian and ``draws`` uniform in the window, each scored
    ``φ(D)·1_W(D) / ((φ(D) + 1_W(D)/vol)/2)``, which lies in ``[0, 2]``; so the
    estimate is accurate both when the window is small (``≈ φ(0)·vol``) and when
    it holds most of the Gaussian's mass (``≈ 1``).
    """
    nb, n = s.shape
    km1, q = mean.shape[1:]
    log_vol = _log_unit_ball(n) + n * math.log(tol) - np.log(s).sum(axis=1)
    L = np.linalg.cholesky(cov)  # (b, k − 1, q, q)
    L_inv = np.linalg.inv(L)
    gauss = mean[:, None] + np.einsum("bjil,btjl->btji", L, rng.standard_normal((nb, draws, km1, q)))
    u = rng.standard_normal((nb, draws, n))
    u *= rng.random((nb, draws, 1)) ** (1 / n) / np.linalg.norm(u, axis=2, keepdims=True)  # uniform in the ball
    flat = tol * np.einsum("bij,btj->bti", V / s[:, None, :], u)  # uniform in the window
    uniform = flat.reshape(nb, draws, q, km1).transpose(0, 1, 3, 2)
    points = np.concatenate([gauss, uniform], axis=1)  # (b, 2·draws, k − 1, q)
    flat = points.transpose(0, 1, 3, 2).reshape(nb, 2 * draws, n)
    inside = ((np.einsum("bij,bti->btj", V, flat) * s[:, None, :]) ** 2).sum(axis=2) <= tol * tol
    z = np.einsum("bjil,btjl->btji", L_inv, points - mean[:, None])
    log_det = np.log(np.diagonal(L, axis1=2, axis2=3)).sum(axis=(1, 2))
    log_phi = -0.5 * n * math.log(2 * math.pi) - log_det[:, None] - 0.5 * (z**2).sum(axis=(2, 3))
    score = np.where(inside, 2.0 * expit(log_phi + log_vol[:, None]), 0.0)
    return score.mean(axis=1)


# --------------------------------------------------------------------------- #
# the window of one row
# --------------------------------------------------------------------------- #


def _softmax_rows(z):
    z = z - z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return z


def _window(X, thetas, ws, w_sum, *, min_weight, regression=None, logits=None):
    """Per example, the window map of row 0 at agreement and what a certified row would give.

    Returns ``(Mt, p, n_use, well_posed)``: ``Mt[b]`` of shape (n, d) is
    ``M_Xᵀ`` (row ``(i − 2)(k − 1) + j − 1`` is ``P⊥ ∂y_0/∂D_{i,j} / ‖y_0‖``),
    ``p`` the common pattern ``softmax_j(x_0ᵀ Θ_1 x_j)``, ``n_use`` the tokens
    ``j ≠ argmax p`` with ``p_j >= min_weight`` and ``well_posed`` the
    learner's test on ``B = X ΣW``. With ``regression`` (shape (k − 1, n)),
    the common logits relative to token 0 are ``L_1 − regression · D`` instead
    of head 1's ``L_1`` (see :func:`predicted_yield`, ``geometry="conditional"``).
    With ``logits`` (shape (b, k), overwritten), the common pattern is their softmax.
    """
    nb, k, d = X.shape
    x0 = X[:, 0]
    if logits is None:
        logits = np.einsum("bc,bjc->bj", x0 @ thetas[0], X)
        if regression is not None:
            rel = X[:, 1:] - x0[:, None, :]  # (b, k−1, d)
            D = np.einsum("bc,ice,bje->bij", x0, thetas[1:] - thetas[:1], rel).reshape(nb, -1)
            logits = logits - logits[:, :1]
            logits[:, 1:] -= D @ regression.T
    p = _softmax_rows(logits)
    B = X @ w_sum  # rows b_j = x_jᵀ ΣW
    gram = B @ B.transpose(0, 2, 1)
    scale = np.maximum(np.trace(gram, axis1=1, axis2=2) / k, 1e-300)
    sign, logdet = np.linalg.slogdet(gram)
    well_posed = (sign > 0) & (logdet > k * np.log(scale) + math.log(_WELL_POSED_RTOL))
    y = np.einsum("bj,bjd->bd", p, B)
    ynorm = np.sqrt(np.einsum("bd,bd->b", y, y))
    j0 = p.argmax(axis=1)
    use = (p >= min_weight) & (np.arange(k)[None, :] != j0[:, None])
    n_use = use.sum(axis=1)
    q = thetas.shape[0] - 1
    if q == 0:
        return np.zeros((nb, 0, d)), p, n_use, well_posed
    # J_p e_j = p_j (e_j − p) for the tokens j = 1..k−1; its pull-back through X: (b, j, d).
    Z = p[:, 1:, None] * (X[:, 1:] - np.einsum("bt,btd->bd", p, X)[:, None, :])
    G = np.einsum("bjc,ice->bije", Z, ws[1:]).reshape(nb, q * (k - 1), d)  # ∂y_0/∂D_{i,j}
    Q, _ = np.linalg.qr((B[:, 1:] - B[:, :1]).transpose(0, 2, 1))  # (b, d, k−1): span{b_j − b_1}
    G -= (G @ Q) @ Q.transpose(0, 2, 1)
    safe = np.where(ynorm > 0, ynorm, np.inf)
    return G / safe[:, None, None], p, n_use, well_posed


# --------------------------------------------------------------------------- #
# prediction and measurement
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class YieldPrediction:
    """The window model's prediction of the sculpting yield.

    Returned by :func:`predicted_yield`.

    Parameters
    ----------
    constraints_per_1000 : float
        Predicted constraints per 1000 examples.
    standard_error : float
        Standard error of ``constraints_per_1000`` from the Monte Carlo average
        over the geometry (with ``density="gaussian"`` the density at 0 is exact;
        with ``"slice"`` the error includes the window integral's draws).
    rows_per_1000 : float
        Predicted certified rows per 1000 examples (the same without ``N_use``).
    density_at_zero : float
        The model's density of the disagreements at 0 (1 for ``n = 0``):
        ``φ_{μ,Σ}(0)`` with ``density="gaussian"``; with ``"slice"`` the average
        over the sampled examples of the conditional density ``φ(0 | x_a, r)``,
        over the slices with ``0 < r_j < d`` (``x_j ≠ ±x_a``).
    mean_window_volume : float
        ``E_X[vol{‖M_X D‖ <= tol}]`` over the well-posed, full-rank examples (1 for ``n = 0``).
    mean_weighted_volume : float
        ``E_X[N_use · vol · 1{well-posed}]`` over the examples not skipped.
    n : int
        Number of disagreements ``(m−1)(k−1)``.
    rank_deficient_fraction : float
        Fraction of the sampled examples whose window map has rank ``< n``
        (skipped: their linearised window is unbounded).
    ill_posed_fraction : float
        Fraction whose row fit is not well-posed (they certify nothing).
    singular_fraction : float
        With ``density="slice"``: fraction of well-posed examples whose conditional covariance of ``D``
        is singular (skipped: no density; e.g. ``Δ_iᵀ x_a = 0`` for a sparse integer ``Θ``); 0 with ``"gaussian"``.
    n_geometry : int
        Examples sampled for the geometry average.
    tol, min_weight : float
        The residual threshold and the smallest weight of a token that gives a constraint, as given.
    distribution, geometry, density : str
        The token distribution (``"boolean"`` or ``"gaussian"``), how the pattern at agreement was drawn
        (``"independent"`` or ``"conditional"``) and the law of ``D`` (``"gaussian"`` or ``"slice"``).
    seed_entropy : int or None
        Entropy of the seed of the geometry average (None when it cannot be recovered from a Generator).
    seconds : float
        Wall-clock time of the prediction.
    """

    constraints_per_1000: float
    standard_error: float
    rows_per_1000: float
    density_at_zero: float
    mean_window_volume: float
    mean_weighted_volume: float
    n: int
    rank_deficient_fraction: float
    ill_posed_fraction: float
    singular_fraction: float
    n_geometry: int
    tol: float
    min_weight: float
    distribution: str
    geometry: str
    density: str
    seed_entropy: int | None
    seconds: float


@declare(tol=Real(), min_weight=_FRACTION, distribution=_DISTRIBUTION, geometry=Choice(GEOMETRIES),
         density=Choice(DENSITIES), n_geometry=Integer(2), batch=Integer(none=True))
def predicted_yield(layer: AttentionLayer, k: int, *, tol: float, min_weight: float, distribution: str = "boolean",
                    geometry: str = "conditional", density: str = "gaussian", n_geometry: int = 20_000,
                    batch: int | None = None, rng: SeedLike = None) -> YieldPrediction:
    """Predict the constraints per 1000 examples that sculpting certifies, from the density of ``D`` at 0.

    .. math:: \\frac{\\text{constraints}}{\\text{example}} \\approx k\\, \\varphi_{\\mu,\\Sigma}(0)\\,
              \\mathbb{E}_X\\Big[N_{use}(X)\\, \\frac{V_n\\, \\mathrm{tol}^n}{\\sqrt{\\det M_X^\\top M_X}}\\Big],
              \\qquad M_X = \\frac{P_\\perp [\\partial y_a / \\partial D_{i,j}]_{i,j}}{\\|y_a\\|},

    with ``μ, Σ`` from :func:`disagreement_moments`, ``∂y_a/∂D_{i,j} = (J_p e_j)ᵀ X W_i``,
    ``J_p = diag(p) − p pᵀ`` at the common pattern ``p = softmax_j(x_aᵀ Θ_1 x_j)``,
    ``P_⊥`` the projector off ``span{b_j − b_1}`` (``b_j = x_jᵀ ΣW``, the rows of
    ``X ΣW``), ``N_use`` the tokens ``j ≠ argmax p`` with ``p_j >= min_weight``,
    ``V_n`` the volume of the unit ``n``-ball and ``n = (m−1)(k−1)``.

    Parameters
    ----------
    layer : AttentionLayer
        The planted layer (``layer.thetas``, ``layer.ws``).
    k : int
        Tokens per example, ``2 <= k < d`` (the learner certifies only below ``d``).
    tol : float
        The relative-residual threshold of the row fit (> 0).
    min_weight : float
        Smallest weight of a token that gives a constraint, in (0, 1).
    distribution : {"boolean", "gaussian"}
        Token entries uniform on ``{±1}`` or standard normal.
    geometry : {"independent", "conditional"}
        How the common pattern at agreement is drawn. ``"independent"``:
        head 1's pattern for an unconditioned ``X`` (the simpler model; it
        over-predicts, by 10⁴× at n = 6). ``"conditional"`` (default): the pattern of the logits
        ``L̃ = L_1 − Cov(L_1, D) Σ^{-1} D`` (``L_1`` head 1's logits relative to
        token ``a``), which in the Gaussian model of ``(L_1, D)`` has the law of
        ``L_1`` given ``D = 0`` — for incoherent ``Θ_i`` about the heads' mean
        logits. See Notes, approximation (3). With ``density="slice"`` the
        conditioning is the slice's (see Notes, the slice model).
    density : {"gaussian", "slice"}
        The law of ``D``. ``"gaussian"`` (default): one Gaussian with the exact
        unconditional moments, its density at 0 times the window's volume (the
        formula above). ``"slice"``: given each example's row token ``x_a``
        and, for Boolean tokens, the Hamming distance ``r_j`` of every other
        token to it, a Gaussian with the exact conditional moments
        (:func:`conditional_disagreement_moments`), whose probability of the
        window is integrated (see Notes). Measured closer to the simulated
        rule on 112 of 116 Boolean layers (both within 2.5 % on the other 4)
        and 12 of 14 with Gaussian tokens; the default stays ``"gaussian"``
        (see Notes for the figures).
    n_geometry : int
        Examples for the Monte Carlo average over ``X`` (row ``a = 0``).
    batch : int, optional
        Examples per block (memory ~ ``batch·n·d`` floats); default 4096.
    rng : None, int, SeedSequence or Generator
        Seed of the examples of the geometry average.

    Returns
    -------
    YieldPrediction
        The predicted constraints and rows per 1000 examples with the standard error, and the density and
        window volumes they are made of.

    Raises
    ------
    ValueError
        Bad inputs, or a singular covariance of ``D`` (e.g. two equal heads; with ``density="slice"``, a
        conditional covariance singular on almost every sampled example, as when ``m − 1 >= d``).

    See Also
    --------
    measured_yield : The yield the learner's own certification gives.
    check_yield_prediction : Holds the two against each other.
    disagreement_moments : The moments of ``D`` behind the density.
    conditional_disagreement_moments : The conditional moments behind ``density="slice"``.

    Notes
    -----
    All ours. Why the window: at agreement every head has pattern ``p`` and
    ``y_a = pᵀ X ΣW`` fits exactly; to first order a disagreement adds
    ``Σ D_{i,j} ∂y_a/∂D_{i,j}`` to ``y_a`` (head ``i``'s logits relative to
    token ``a`` are head 1's plus ``D_{i,·}``), and the fit removes its part in
    ``span{b_j − b_1}``, so the relative residual is ``‖M_X D‖``. The row
    certifies when ``D`` falls in the ellipsoid ``‖M_X D‖ <= tol``, whose
    probability is ``φ(0)·vol`` when the density of ``D`` is smooth and nearly
    constant over it (a local CLT at the scale of the window).

    Approximations: (1) the density of ``D`` is replaced by the Gaussian with
    its exact moments. There is no lattice for generic ``Θ`` but ``D`` is a
    bilinear form, a Gaussian scale mixture, whose density at 0 exceeds the
    Gaussian's (Jensen): measured (Boolean, ``k = 2``) +5 % at ``(m, d) = (2, 12)``,
    +25 % at ``(3, 12)``, +2 % at ``(2, 20)``, more for Gaussian tokens; for
    integer ``Θ`` agreement is an atom and the model fails outright
    (:func:`control_yield_prediction`). (2) The residual is linearised;
    measured, the ratio of measurement to prediction stays within a factor
    1.7 across ``tol = 0.0015``–``0.15`` at ``(m, d, k) = (2, 12, 2)``,
    ``(3, 12, 2)``, ``(2, 12, 3)`` (one layer each), so a 10× wider ``tol``
    is no negative control. (3) With ``geometry="independent"`` the
    geometry ``X`` is sampled unconditionally, ignoring that ``D ≈ 0`` forces
    the heads' logits to agree: for incoherent ``Θ_i`` the common logits then
    have about ``1/m`` of one head's variance, so the true certified rows have
    flatter patterns than head 1's alone. Peaked rows have wide windows
    (``vol ∝ Π (p_j p_{j0})^{-1}`` roughly), so this overestimates, by more as
    ``m`` grows (measured 1.3× at ``m = 2``, 3× at ``m = 3``, 10× at
    ``m = 4``, ``k = 2``). ``geometry="conditional"`` corrects the pattern
    (not the rest of ``X``) by Gaussian conditioning. Rows are exchangeable,
    so row 0 stands for all ``k``. Examples whose window map has rank ``< n`` (the
    linearised window is unbounded) are skipped and counted; the average is
    over the rest. ``n = 0`` (one head): density 1, volume 1, every
    well-posed row certifies (the same with either density).

    The slice model (``density="slice"``, ours):

    .. math:: \\frac{\\text{constraints}}{\\text{example}} \\approx k\\, \\mathbb{E}_{x_a, r}\\Big[N_{use}(X)
              \\int_{\\|M_X D\\| \\le \\mathrm{tol}} \\varphi_{\\mu(x_a, r),\\, \\Sigma(x_a, r)}(D)\\, dD\\Big],

    with ``μ(x_a, r), Σ(x_a, r)`` the exact moments of ``D`` given the row
    token and the slices ``r = (r_j)`` (:func:`conditional_disagreement_moments`;
    tokens ``x_j = ±x_a`` certify nothing and are left out). Three things the
    single Gaussian misses, in the order they matter at large ``n``:
    (a) near-duplicate tokens. A token at Hamming distance ``r`` from ``x_a``
    makes ``D_{·,j}`` a sum of ``r`` terms, with covariance
    ``∝ r(d − r)/(d − 1)``, while ``‖x_j − x_a‖ = 2√r`` scales the window map,
    so the window grows as ``r`` falls (``vol ∝ r^{−n/2}`` roughly): the
    density at 0 and the window are correlated through ``r``. Measured at
    ``(m, d, k) = (10, 24, 2)``, tol 0.1 (2 M examples): 88 % of the rule's
    constraints came from ``r <= 8``, 7.6 % of the examples; the slice model
    gives the same profile in ``r``. (b) On those slices the window is as wide
    as the spread of ``D``, and ``φ(0)·vol`` exceeds 1 (the slice density at 0
    times the volume over-predicts 8× at ``m = 7`` and 5·10³× at ``m = 10``),
    so the probability of the window is integrated: it is at most 1 and equals
    ``φ(0)·vol`` for small windows. (c) ``D`` is a mixture over ``x_a`` of
    Gaussians of different spread, whose density at 0 exceeds the Gaussian's
    with the averaged covariance (Jensen); conditioning on ``x_a`` alone
    (with the density at 0 times the volume) closes about half of the gap at
    ``m = 10`` and no more. The slices are drawn from the mixture
    ``(Binomial(d, 1/2) + uniform on 1..d−1)/2`` with importance weights (so
    that near-duplicate slices, which carry the yield at large ``n``, are
    sampled), the integral by importance sampling (32 Gaussian and 32
    uniform points in the window per example, balance heuristic), and the
    estimate is the weighted ratio with its delta-method standard error.
    With ``geometry="conditional"`` the pattern is that of
    ``L̃_j = L_{1,j} − βᵀ D_{·,j}``, ``β`` the regression of head 1's logit
    increments on the ``a_s`` over the coordinates (the same for every slice),
    and tokens stay on the cube; for Gaussian tokens there are no slices, the
    law of ``D`` given ``x_a`` is exactly Gaussian, and each ``x_j`` is
    replaced by ``x_j − Uᵀ(UUᵀ)^{−1} D_{·,j}`` (``U`` with rows ``Δ_iᵀ x_a``),
    an exact draw given ``x_a`` and ``D_{·,j} = 0``, whose head-1 pattern is
    ``L̃``. (Moving Boolean tokens the same way takes them off the cube and
    over-predicted by 1.3–1.4× at ``m = 10``; correcting only the pattern of
    Gaussian tokens under-predicted by 1.1–4×.) Examples whose conditional
    covariance is singular are skipped and counted (``singular_fraction``).

    Measured (ours, ``docs/sweeps/yield-model/``; the rule simulated with the true ``ΣW``, :func:`measured_yield`,
    against each model, geometry ``"conditional"``): on the learner's own
    layers of the growth study (``k = 2``, ``d = 24``, logit scale 1, tol 0.1,
    ``min_weight`` 0.02, ten layers per ``m``) the slice model is within
    0.97–1.21 of the rule at every ``m = 1..10``, drifting from 1.0 at
    ``m <= 5`` to 1.1 at ``m = 10`` (the Gaussian: 2.1×, 3.0×, 4.0×, 5.7×
    below at ``m = 7..10``, geometric means), and closer than the Gaussian on
    86 of the 90 layers with ``m >= 2`` (both within 2.5 % on the other 4);
    the learner's own phase-4 yields (estimated ``ΣW``) are 0.93–1.18 of the
    slice model's. On 26 other Boolean layers
    (``m <= 5``, ``k <= 4``, ``d = 12, 16``, tol 0.015–0.03; ``k = 3, 4`` at
    ``d = 24``, tol 0.1; ``m = 7, 8, 10`` at ``d = 20, 24``) it is within
    0.76–1.09 everywhere and closer than the Gaussian on every layer. With
    Gaussian tokens it is within 0.81–1.01 up to ``m = 7`` and over-predicts
    2.3–2.4× at ``(10, 24, 2)``, tol 0.1; the Gaussian model was closer on 2 of
    those 14 layers, where its own standard error was 40–90 % of its value.
    For an integer ``Θ`` the slice model fails as the Gaussian does (agreement
    is an atom).

    Examples
    --------
    >>> from learner import random_layer
    >>> layer = random_layer(1, 8, logit_scale=1.0, rng=0)
    >>> pred = predicted_yield(layer, 2, tol=0.015, min_weight=0.02, n_geometry=2000, rng=1)
    >>> pred.n, pred.density_at_zero, round(pred.constraints_per_1000 / 2000, 1)   # m = 1: ~2 per example
    (0, 1.0, 1.0)
    >>> layer = random_layer(3, 12, logit_scale=1.0, rng=0)
    >>> slice_ = predicted_yield(layer, 2, tol=0.015, min_weight=0.02, density="slice", n_geometry=5000, rng=1)
    >>> gauss = predicted_yield(layer, 2, tol=0.015, min_weight=0.02, n_geometry=5000, rng=1)
    >>> slice_.density_at_zero > gauss.density_at_zero, slice_.constraints_per_1000 > gauss.constraints_per_1000
    (True, True)
    """
    t0 = time.perf_counter()
    layer = _check_layer(layer)
    k = _check_k(k, layer.d)
    batch = _GEOMETRY_BATCH if batch is None else batch
    rng = check_rng(rng)
    from learner import sample_inputs

    thetas, ws = layer.thetas, layer.ws
    w_sum = ws.sum(axis=0)
    if density == "slice" and layer.m > 1:
        return _slice_prediction(layer, k, tol=tol, min_weight=min_weight, distribution=distribution,
                                 geometry=geometry, n_geometry=n_geometry, batch=batch, rng=rng, t0=t0)
    mean, cov = disagreement_moments(thetas, k, distribution=distribution)
    n = mean.size
    log_density = _log_density_at_zero(mean, cov)
    regression = None
    if geometry == "conditional" and n:
        # Moments of (L_1, D): head 1's relative logits and the disagreements, jointly.
        _, joint = _relative_moments(np.concatenate([thetas[:1], thetas[1:] - thetas[:1]]), k, distribution)
        regression = np.linalg.solve(cov, joint[k - 1 :, : k - 1]).T  # (k − 1, n): Cov(L_1, D) Σ^{-1}
    log_unit = _log_unit_ball(n) + n * math.log(tol)
    f_sum = f_sq = v_sum = 0.0
    n_full = n_ill = n_deficient = 0
    done = 0
    while done < n_geometry:
        nb = min(batch, n_geometry - done)
        X = sample_inputs(nb, k, layer.d, distribution=distribution, rng=rng)
        Mt, _, n_use, well_posed = _window(X, thetas, ws, w_sum, min_weight=min_weight, regression=regression)
        if n:
            s = np.linalg.svd(Mt, compute_uv=False)  # (b, n), descending
            full = np.isfinite(s).all(axis=1) & (s[:, -1] > _RANK_RTOL * s[:, 0])
            with np.errstate(divide="ignore"):
                logvol = log_unit - np.log(s).sum(axis=1)
        else:
            full = np.ones(nb, dtype=bool)
            logvol = np.zeros(nb)
        # An ill-posed row certifies nothing (its volume is irrelevant); a well-posed row
        # with an unbounded linear window is skipped.
        deficient = well_posed & ~full
        keep = ~deficient
        vol = np.where(well_posed & full, np.exp(np.where(full, logvol, 0.0)), 0.0)
        f = vol * n_use
        f_sum += float(f[keep].sum())
        f_sq += float((f[keep] ** 2).sum())
        v_sum += float(vol[well_posed & full].sum())
        n_full += int((well_posed & full).sum())
        n_ill += int((~well_posed).sum())
        n_deficient += int(deficient.sum())
        done += nb
    n_kept = n_geometry - n_deficient
    if n_kept < 2:
        raise ValueError(
            f"the window map has rank < n = {n} for {n_deficient} of {n_geometry} sampled examples, "
            "so the linearised window is unbounded almost everywhere (zero-residual disagreements exist when "
            f"m(k−1) > d); got m={layer.m}, d={layer.d}, k={k}."
        )
    mean_f = f_sum / n_kept
    var_f = max(f_sq / n_kept - mean_f**2, 0.0) * n_kept / (n_kept - 1)
    phi0 = math.exp(log_density)
    per_example = k * phi0
    mean_vol = v_sum / n_full if n_full else float("nan")
    return YieldPrediction(
        constraints_per_1000=1000 * per_example * mean_f,
        standard_error=1000 * per_example * math.sqrt(var_f / n_kept),
        rows_per_1000=1000 * per_example * v_sum / n_kept,
        density_at_zero=phi0,
        mean_window_volume=mean_vol,
        mean_weighted_volume=mean_f,
        n=n,
        rank_deficient_fraction=n_deficient / n_geometry,
        ill_posed_fraction=n_ill / n_geometry,
        singular_fraction=0.0,
        n_geometry=n_geometry,
        tol=tol,
        min_weight=min_weight,
        distribution=distribution,
        geometry=geometry,
        density=density,
        seed_entropy=_entropy(rng),
        seconds=time.perf_counter() - t0,
    )


def _density_at_zero(mean, cov, n):
    """The Gaussian densities at 0 of laws with these means and covariances (per example: blocks per token)."""
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, -mean[..., None])[..., 0]
    return np.exp(-0.5 * n * math.log(2 * math.pi) - np.log(np.diagonal(L, axis1=2, axis2=3)).sum(axis=(1, 2))
                  - 0.5 * (z**2).sum(axis=(1, 2)))


def _slice_skipped_error(m, d, k, n, n_geometry, n_deficient, n_singular):
    """Why the slice model skipped almost every example: a singular conditional law, or an unbounded window."""
    if n_singular >= n_deficient:
        return ValueError(
            "the disagreements have a singular conditional covariance given the row token on "
            f"{n_singular} of {n_geometry} sampled examples (some heads' differences Θ_i − Θ_1 are linearly "
            "dependent, or a head repeats Θ_1, or m − 1 >= d), so their density is not defined; "
            f"got m={m}, d={d}."
        )
    return ValueError(
        f"the window map has rank < n = {n} for {n_deficient} of {n_geometry} sampled examples, "
        "so the linearised window is unbounded almost everywhere (zero-residual disagreements exist when "
        f"m(k−1) > d); got m={m}, d={d}, k={k}."
    )


def _add_slice_batch(sums, *, weight, keep, P, n_use, vol, dens, active, law, well_posed, deficient, singular):
    """Add one batch's importance-weighted sums to ``sums`` (see :func:`_slice_prediction`)."""
    g = np.where(keep, weight * P * n_use, 0.0)
    wk = np.where(keep, weight, 0.0)
    sums["g"] += float(g.sum())
    sums["g2"] += float((g**2).sum())
    sums["gw"] += float((g * wk).sum())
    sums["w"] += float(wk.sum())
    sums["w2"] += float((wk**2).sum())
    sums["rows"] += float((wk * P).sum())
    sums["wvol"] += float((wk * vol * n_use).sum())
    sums["vol"] += float((weight * vol)[active].sum())
    sums["vol_w"] += float(weight[active].sum())
    sums["dens"] += float((weight * dens)[law].sum())
    sums["dens_w"] += float(weight[law].sum())
    sums["ill"] += float(weight[~well_posed].sum())
    sums["deficient"] += float(weight[deficient].sum())
    sums["singular"] += float(weight[singular].sum())


def _slice_prediction(layer, k, *, tol, min_weight, distribution, geometry, n_geometry, batch, rng, t0):
    """:func:`predicted_yield` with ``density="slice"`` and ``n >= 1`` (see its Notes)."""
    from learner import sample_inputs

    thetas, ws = layer.thetas, layer.ws
    w_sum = ws.sum(axis=0)
    d, q = layer.d, layer.m - 1
    n = q * (k - 1)
    deltas = thetas[1:] - thetas[:1]
    # Weighted sums (importance weights ω over the slices): yield, its square and cross terms for the
    # ratio estimator's standard error, rows, volumes, density at 0, and the skipped and ill-posed mass.
    sums = dict.fromkeys(("g", "g2", "gw", "w", "w2", "rows", "wvol", "vol", "vol_w", "dens", "dens_w",
                          "ill", "deficient", "singular"), 0.0)
    n_deficient = n_singular = n_active = 0
    done = 0
    while done < n_geometry:
        nb = min(batch, n_geometry - done)
        if distribution == "boolean":
            X, r, weight = _slice_examples(nb, k, d, rng)
            sliced = np.all((r > 0) & (r < d), axis=1)  # x_j = ±x_a: a fixed D and an ill-posed fit
        else:
            X, r, weight = sample_inputs(nb, k, d, distribution=distribution, rng=rng), None, np.ones(nb)
            sliced = np.ones(nb, dtype=bool)
        xa = X[:, 0]
        rel = X[:, 1:] - xa[:, None, :]
        mean, cov, slope, regular = _conditional_law(thetas, xa, k, r)
        logits = np.zeros((nb, k))
        logits[:, 1:] = np.einsum("bc,ce,bje->bj", xa, thetas[0], rel)  # head 1's, relative to token 0
        if geometry == "conditional":
            D = np.einsum("bc,ice,bje->bji", xa, deltas, rel)
            logits[:, 1:] -= np.einsum("bi,bji->bj", slope, D)
            if r is None and regular.any():
                # Gaussian tokens: x_j − Uᵀ(UUᵀ)⁻¹ D_{·,j} is an exact draw of x_j given x_a and D_{·,j} = 0
                # (U has rows u_i = Δ_iᵀ x_a); its head-1 logits are the corrected ones above.
                U = np.einsum("bc,ice->bie", xa[regular], deltas)
                coef = np.linalg.solve((U @ U.transpose(0, 2, 1))[:, None], D[regular][..., None])[..., 0]
                X[regular, 1:] -= np.einsum("bie,bji->bje", U, coef)
        Mt, _, n_use, well_posed = _window(X, thetas, ws, w_sum, min_weight=min_weight, logits=logits)
        V, s, _ = np.linalg.svd(Mt, full_matrices=False)  # Mt = V diag(s) Rᵀ, descending s
        full = np.isfinite(s).all(axis=1) & (s[:, -1] > _RANK_RTOL * s[:, 0])
        law = sliced & regular
        # Skipped: an unbounded linear window, or no density; an ill-posed row (or x_j = ±x_a) certifies nothing.
        deficient = well_posed & ~full
        singular = well_posed & full & sliced & ~regular
        keep = ~(deficient | singular)
        active = well_posed & full & law
        P = np.zeros(nb)
        vol = np.zeros(nb)
        if active.any():
            P[active] = _window_probability(V[active], s[active], mean[active], cov[active], tol, _WINDOW_DRAWS, rng)
            vol[active] = np.exp(_log_unit_ball(n) + n * math.log(tol) - np.log(s[active]).sum(axis=1))
        dens = np.zeros(nb)
        if law.any():
            dens[law] = _density_at_zero(mean[law], cov[law], n)
        _add_slice_batch(sums, weight=weight, keep=keep, P=P, n_use=n_use, vol=vol, dens=dens, active=active,
                         law=law, well_posed=well_posed, deficient=deficient, singular=singular)
        n_deficient += int(deficient.sum())
        n_singular += int(singular.sum())
        n_active += int(active.sum())
        done += nb
    # Too few examples with a window and a law to average over: the ill-posed ones certify nothing either way, so
    # counting them as kept would predict a yield where the law is undefined (two equal heads, say).
    if n_active < 2 and (n_deficient or n_singular):
        raise _slice_skipped_error(layer.m, d, k, n, n_geometry, n_deficient, n_singular)
    # The ratio estimator Σg/Σω over the examples kept, with its delta-method standard error.
    ratio = sums["g"] / sums["w"]
    var = max(sums["g2"] - 2 * ratio * sums["gw"] + ratio**2 * sums["w2"], 0.0) / sums["w"] ** 2
    return YieldPrediction(
        constraints_per_1000=1000 * k * ratio,
        standard_error=1000 * k * math.sqrt(var),
        rows_per_1000=1000 * k * sums["rows"] / sums["w"],
        density_at_zero=sums["dens"] / sums["dens_w"] if sums["dens_w"] else float("nan"),
        mean_window_volume=sums["vol"] / sums["vol_w"] if sums["vol_w"] else float("nan"),
        mean_weighted_volume=sums["wvol"] / sums["w"],
        n=n,
        rank_deficient_fraction=sums["deficient"] / n_geometry,
        ill_posed_fraction=sums["ill"] / n_geometry,
        singular_fraction=sums["singular"] / n_geometry,
        n_geometry=n_geometry,
        tol=tol,
        min_weight=min_weight,
        distribution=distribution,
        geometry=geometry,
        density="slice",
        seed_entropy=_entropy(rng),
        seconds=time.perf_counter() - t0,
    )


@dataclass(frozen=True)
class YieldMeasurement:
    """The sculpting yield measured with the learner's own certification and the true ``ΣW``.

    Returned by :func:`measured_yield`.

    Parameters
    ----------
    constraints_per_1000 : float
        Constraints per 1000 examples.
    interval : (float, float)
        Confidence interval for it (see :func:`measured_yield`).
    failure_probability : float
        Probability that ``interval`` misses the true yield (under the Poisson model).
    constraints, rows_certified, n_examples : int
        Constraints and certified rows counted, over this many examples.
    tol, min_weight : float
        The residual threshold and the smallest weight of a token that gives a constraint, as given.
    distribution : str
        The token distribution, ``"boolean"`` or ``"gaussian"``.
    seed_entropy : int or None
        Entropy of the seed of the examples (None when it cannot be recovered from a Generator).
    seconds : float
        Wall-clock time of the measurement.
    """

    constraints_per_1000: float
    interval: tuple[float, float]
    failure_probability: float
    constraints: int
    rows_certified: int
    n_examples: int
    tol: float
    min_weight: float
    distribution: str
    seed_entropy: int | None
    seconds: float


@declare(tol=Real(), min_weight=_FRACTION, n_examples=Integer(), distribution=_DISTRIBUTION,
         failure_probability=_FRACTION, batch=Integer(none=True))
def measured_yield(layer: AttentionLayer, k: int, *, tol: float, min_weight: float, n_examples: int,
                   distribution: str = "boolean", failure_probability: float = 0.05, batch: int | None = None,
                   rng: SeedLike = None) -> YieldMeasurement:
    """Measure the constraints per 1000 examples that :func:`learner.phases.sculpt.certify_rows` gives.

    Draws ``n_examples`` fresh examples from a :class:`learner.LayerOracle` of
    ``layer`` and certifies their rows against the *true* ``ΣW = Σ_i W_i``,
    with the learner's residual test, well-posedness test and weight
    threshold.

    Parameters
    ----------
    layer : AttentionLayer
        The planted layer: the oracle's and the source of the true ``ΣW``.
    k : int
        Tokens per example, ``2 <= k < d`` (the learner certifies only below ``d``).
    tol : float
        Relative-residual threshold (> 0).
    min_weight : float
        Smallest weight of a token that gives a constraint, in (0, 1).
    n_examples : int
        Examples drawn, ``>= 1``.
    distribution : {"boolean", "gaussian"}
        Token entries uniform on ``{±1}`` or standard normal.
    failure_probability : float
        Of the confidence interval, in (0, 1).
    batch : int, optional
        Examples per oracle draw (default 100 000).
    rng : None, int, SeedSequence or Generator
        Seed of the oracle's examples.

    Returns
    -------
    YieldMeasurement
        The constraints and certified rows counted, per 1000 examples with the confidence interval.

    See Also
    --------
    predicted_yield : The window model's prediction of the same yield.
    check_yield_prediction : Holds the two against each other.
    learner.phases.sculpt.certify_rows : The certification it counts.

    Notes
    -----
    The interval (ours): certified rows are rare and nearly independent, so
    their count ``R`` is treated as Poisson and given Garwood's exact
    interval; it is scaled by the observed constraints per certified row
    ``C/R`` (treated as known; ``k − 1``, the most a row gives, when ``R = 0``).
    Rows of one example share tokens, so their certifications are not exactly
    independent; at the sizes used here the effect is small.

    Examples
    --------
    >>> from learner import random_layer
    >>> layer = random_layer(1, 16, logit_scale=1.0, rng=0)
    >>> meas = measured_yield(layer, 2, tol=0.015, min_weight=0.02, n_examples=1000, rng=1)
    >>> meas.rows_certified, meas.constraints <= 2000      # one head: every well-posed row certifies
    (2000, True)
    """
    t0 = time.perf_counter()
    layer = _check_layer(layer)
    k = _check_k(k, layer.d)
    batch = _MEASURE_BATCH if batch is None else batch
    rng = check_rng(rng)
    from learner import LayerOracle
    from learner.phases.sculpt import certify_rows

    oracle = LayerOracle(layer, k, distribution=distribution, rng=rng)
    w_sum = layer.ws.sum(axis=0)
    constraints = rows = 0
    while oracle.n_drawn < n_examples:
        X, Y = oracle.draw(min(batch, n_examples - oracle.n_drawn))
        _, b, *_, certified = certify_rows(X, Y, w_sum, tol=tol, min_weight=min_weight)
        constraints += int(b.shape[0])
        rows += int(certified)
    per_row = constraints / rows if rows else float(k - 1)
    lo, hi = _poisson_interval(rows, failure_probability)
    scale = 1000 / n_examples
    return YieldMeasurement(
        constraints_per_1000=scale * constraints,
        interval=(scale * per_row * lo, scale * per_row * hi),
        failure_probability=failure_probability,
        constraints=constraints,
        rows_certified=rows,
        n_examples=n_examples,
        tol=tol,
        min_weight=min_weight,
        distribution=distribution,
        seed_entropy=_entropy(rng),
        seconds=time.perf_counter() - t0,
    )


# --------------------------------------------------------------------------- #
# the check
# --------------------------------------------------------------------------- #


@declare(factor=Real(), failure_probability=_FRACTION)
def check_yield_prediction(layer: AttentionLayer, k: int, *, tol: float = 0.015, min_weight: float = 0.02,
                           n_examples: int = 200_000, n_geometry: int = 20_000, factor: float = DEFAULT_FACTOR,
                           distribution: str = "boolean", geometry: str = "conditional", density: str = "gaussian",
                           failure_probability: float = 0.05, rng: SeedLike = None) -> CheckResult:
    """Check that the measured sculpting yield is within a factor ``factor`` of the window model's prediction.

    .. math:: \\Big|\\log \\frac{\\text{measured}}{\\text{predicted}}\\Big| \\le \\log(\\text{factor})

    with ``measured`` from :func:`measured_yield` and ``predicted`` from
    :func:`predicted_yield`, both in constraints per 1000 examples.

    Parameters
    ----------
    layer : AttentionLayer
        The planted layer.
    k : int
        Tokens per example, ``2 <= k < d`` (the learner certifies only below ``d``).
    tol, min_weight : float
        The learner's phase-4 thresholds (defaults 0.015 and 0.02, as in
        :class:`learner.LearnConfig`).
    n_examples : int
        Examples for the measurement.
    n_geometry : int
        Examples for the prediction's average over the geometry.
    factor : float
        Allowed ratio, > 1 (default :data:`DEFAULT_FACTOR` = 3, ours).
    distribution : {"boolean", "gaussian"}
        Token entries uniform on ``{±1}`` or standard normal.
    geometry : {"independent", "conditional"}
        Passed to :func:`predicted_yield`.
    density : {"gaussian", "slice"}
        Passed to :func:`predicted_yield` (default ``"gaussian"``).
    failure_probability : float
        Of the whole interval, split evenly between measurement and prediction.
    rng : None, int, SeedSequence or Generator
        Seed; the prediction and the measurement draw from two spawned children.

    Returns
    -------
    CheckResult
        ``measured = |log(measured/predicted)|``, ``bound = log(factor)``,
        relation ``"<="``. ``interval`` is the range of ``|log ratio|`` over
        the measurement's Poisson interval and the prediction's normal
        interval (``z`` standard errors); its top is infinite when nothing
        certified. ``details`` hold both yields and intervals, the rows
        certified, the density at 0, the mean window volume, ``n`` and the
        skipped fractions.

    Raises
    ------
    ValueError
        Bad inputs (see :func:`predicted_yield` and :func:`measured_yield`),
        ``factor <= 1``, ``k >= d`` (refused before any example is drawn, as the learner does).

    See Also
    --------
    predicted_yield : The prediction.
    measured_yield : The measurement.
    check_pilot_forecast : The learner's own forecast of the yield, checked the same way.
    theory.local_clt.check_local_clt : The local CLT the model's density at 0 leans on.

    Notes
    -----
    The paper's (talk's): sculpting certifies the rows where the heads'
    patterns agree. Ours: the yield model, the window map, the approximations
    listed in :func:`predicted_yield`, the intervals and the factor. The
    prediction's interval is a normal approximation to an average of a
    heavy-tailed variable (the window volume grows without bound as the
    pattern saturates), so it is an estimate, not a bound.

    Examples
    --------
    >>> from learner import random_layer
    >>> layer = random_layer(2, 12, logit_scale=1.0, rng=0)
    >>> check_yield_prediction(layer, 2, n_examples=20_000, n_geometry=5000, rng=1).holds
    True
    """
    timer = Timer()
    layer = _check_layer(layer)
    k = _check_k(k, layer.d)
    if factor <= 1:
        raise ValueError(f"`factor` must be greater than 1; got factor={factor!r}.")
    rng = check_rng(rng)
    entropy = _entropy(rng)
    geometry_rng, oracle_rng = rng.spawn(2)
    pred = predicted_yield(layer, k, tol=tol, min_weight=min_weight, distribution=distribution, geometry=geometry,
                           density=density, n_geometry=n_geometry, rng=geometry_rng)
    meas = measured_yield(layer, k, tol=tol, min_weight=min_weight, n_examples=n_examples,
                          distribution=distribution, failure_probability=failure_probability / 2, rng=oracle_rng)
    z = float(ndtri(1 - failure_probability / 4))  # two-sided, half of the failure budget
    predicted, measured_yield_ = pred.constraints_per_1000, meas.constraints_per_1000
    p_lo = max(predicted - z * pred.standard_error, 0.0)
    p_hi = predicted + z * pred.standard_error
    m_lo, m_hi = meas.interval
    ratio = measured_yield_ / predicted if predicted > 0 else math.inf
    log_ratio = math.log(ratio) if 0 < ratio < math.inf else math.inf
    lo_log = math.log(m_lo / p_hi) if m_lo > 0 and p_hi > 0 else -math.inf
    hi_log = math.log(m_hi / p_lo) if m_hi > 0 and p_lo > 0 else math.inf
    low = 0.0 if lo_log <= 0 <= hi_log else min(abs(lo_log), abs(hi_log))
    high = max(abs(lo_log), abs(hi_log))
    return finish(
        name="yield_prediction",
        claim=(f"the sculpting yield measured with the learner's certification is within a factor {factor:g} "
               + ("of the Gaussian-density prediction k·φ(0)·E[N_use·vol{‖M_X D‖ <= tol}]" if density == "gaussian"
                  else "of the slice model's prediction k·E[N_use·P(‖M_X D‖ <= tol | x_a, r)]")),
        source=(
            "talk (arXiv 2402.04084, 'Sculpting the affine hull'): sculpting certifies the rows where the heads' "
            "patterns agree (D ≈ 0), and such small-window events need a local CLT; ours: the yield model, the "
            f"exact moments of D, the linearised window map M_X, the approximations (density '{density}': Gaussian "
            f"with exact moments{' given the row token and its slices' if density == 'slice' else ''}, linearised "
            f"residual, geometry '{geometry}' of D ≈ 0), the intervals and the factor"
        ),
        parameters={
            "m": layer.m, "d": layer.d, "k": k, "tol": tol, "min_weight": min_weight, "n_examples": n_examples,
            "n_geometry": n_geometry, "factor": factor, "distribution": distribution, "geometry": geometry,
            "density": density, "failure_probability": failure_probability,
        },
        measured=abs(log_ratio),
        bound=math.log(factor),
        interval=(low, high),
        failure_probability=failure_probability,
        seed_entropy=entropy,
        timer=timer,
        details={
            "predicted_per_1000": predicted,
            "predicted_standard_error": pred.standard_error,
            "predicted_interval": [p_lo, p_hi],
            "measured_per_1000": measured_yield_,
            "measured_interval": list(meas.interval),
            "ratio": ratio,
            "predicted_rows_per_1000": pred.rows_per_1000,
            "measured_rows_per_1000": 1000 * meas.rows_certified / meas.n_examples,
            "density_at_zero": pred.density_at_zero,
            "singular_fraction": pred.singular_fraction,
            "mean_window_volume": pred.mean_window_volume,
            "n_disagreements": pred.n,
            "rank_deficient_fraction": pred.rank_deficient_fraction,
            "ill_posed_fraction": pred.ill_posed_fraction,
            "constraints": meas.constraints,
            "rows_certified": meas.rows_certified,
            "predict_seconds": pred.seconds,
            "measure_seconds": meas.seconds,
        },
    )


# --------------------------------------------------------------------------- #
# instances and cases
# --------------------------------------------------------------------------- #


@declare(m=Integer(), d=Integer(), nonzeros=Integer(), w_scale=Scale())
def integer_layer(m: int, d: int, *, nonzeros: int = 2, w_scale: float = 1.0, rng: SeedLike = None) -> AttentionLayer:
    """A layer whose ``Θ_i`` have ``nonzeros`` entries ``±1`` (else 0) and Gaussian ``W_i`` (for controls).

    Every ``D_{i,j}`` is then an even integer on the Boolean cube, so
    agreement ``D = 0`` is an atom, not a small-window event. Positions and
    signs are uniform, so ``‖Θ_i‖_F = √nonzeros``, the standard deviation of
    an off-diagonal logit (as ``logit_scale`` in :func:`learner.random_layer`);
    the ``W_i`` are scaled as there (``‖W_i‖_F = w_scale·√d``). Ours.

    Parameters
    ----------
    m, d : int
        Heads and dimension, ``>= 1``.
    nonzeros : int
        Nonzero entries of each ``Θ_i``, ``1 <= nonzeros <= d²`` (default 2).
    w_scale : float
        ``‖W_i‖_F / √d``, positive (default 1).
    rng : None, int, SeedSequence or Generator
        Seed of the positions, the signs and the ``W_i``.

    Returns
    -------
    AttentionLayer
        The layer.

    Raises
    ------
    ValueError
        If ``nonzeros > d²`` or a size is not positive.

    Examples
    --------
    >>> layer = integer_layer(2, 6, rng=0)
    >>> sorted(set(layer.thetas.ravel().tolist())), int(np.abs(layer.thetas).sum())
    ([-1.0, 0.0, 1.0], 4)
    """
    from learner import AttentionLayer

    rng = check_rng(rng)
    if nonzeros > d * d:
        raise ValueError(f"`nonzeros` must be at most d² = {d * d}; got nonzeros={nonzeros}, d={d}.")
    thetas = np.zeros((m, d * d))
    for row in thetas:
        row[rng.choice(d * d, size=nonzeros, replace=False)] = rng.choice([-1.0, 1.0], size=nonzeros)
    ws = rng.standard_normal((m, d, d))
    ws *= w_scale * math.sqrt(d) / np.linalg.norm(ws, axis=(1, 2), keepdims=True)
    return AttentionLayer(thetas.reshape(m, d, d), ws)


def _case(make_layer, k, geometry, density, n_examples, n_geometry, rng):
    rng = check_rng(rng)
    entropy = _entropy(rng)
    layer_rng, check_seed = rng.spawn(2)
    result = check_yield_prediction(make_layer(layer_rng), k, geometry=geometry, density=density,
                                    n_examples=n_examples, n_geometry=n_geometry, rng=check_seed)
    return replace(result, seed_entropy=entropy)


def default_yield_prediction(*, m: int = 2, d: int = 12, k: int = 2, geometry: str = "conditional",
                             density: str = "gaussian", n_examples: int = 100_000, n_geometry: int = 20_000,
                             rng: SeedLike = None) -> CheckResult:
    """Positive case: ``learner.random_layer(m, d, logit_scale=1.0)`` at the learner's phase-4 thresholds.

    At (m, d, k) = (2, 12, 2) the measured yield (about 70 constraints per 1000 examples) is 1.04–1.10 of the
    prediction with the default ``geometry="conditional"``, 0.74–0.84 of it with ``geometry="independent"``,
    and 0.97–1.00 of it with ``density="slice"`` (seeds 0–3).

    Parameters
    ----------
    m, d, k : int
        Heads, dimension and tokens per example (defaults 2, 12, 2; ``2 <= k < d``).
    geometry : {"independent", "conditional"}
        Passed to :func:`predicted_yield` (default ``"conditional"``).
    density : {"gaussian", "slice"}
        Passed to :func:`predicted_yield` (default ``"gaussian"``).
    n_examples : int
        Examples of the measurement (default 100 000).
    n_geometry : int
        Examples of the prediction's geometry average (default 20 000).
    rng : None, int, SeedSequence or Generator
        Seed; the layer and the check draw from two spawned children, and its entropy is recorded.

    Returns
    -------
    CheckResult
        The result of :func:`check_yield_prediction` at its default thresholds and factor.

    Examples
    --------
    >>> default_yield_prediction(n_examples=20_000, n_geometry=5000, rng=0).holds
    True
    """
    from learner import random_layer

    return _case(lambda r: random_layer(m, d, logit_scale=1.0, rng=r), k, geometry, density, n_examples, n_geometry,
                 rng)


def control_yield_prediction(*, m: int = 2, d: int = 12, k: int = 2, nonzeros: int = 2, geometry: str = "conditional",
                             density: str = "gaussian", n_examples: int = 20_000, n_geometry: int = 20_000,
                             rng: SeedLike = None) -> CheckResult:
    """Negative control: integer ``Θ_i`` (:func:`integer_layer`), where the local CLT fails; must fail.

    ``D`` lives on ``2ℤ``: exact agreement is an atom of probability about
    ``2·φ(0)`` per disagreement, where every row fits exactly, while the
    model credits only ``φ(0)`` times a window of width ``~ tol/‖M_X‖ ≪ 2``.
    Measured 6–17× above the prediction at (2, 12, 2), and 5.3–9.5× above the
    slice model's (``density="slice"``, seeds 0–3: its Gaussian on each slice
    misses the atom just the same). The atom gives 500–1100
    constraints per 1000 examples, so the default 20 000 examples already pin
    the yield to ~2 %.

    Parameters
    ----------
    m, d, k : int
        Heads, dimension and tokens per example (defaults 2, 12, 2; ``2 <= k < d``).
    nonzeros : int
        Nonzero entries ``±1`` of each ``Θ_i`` (default 2).
    geometry : {"independent", "conditional"}
        Passed to :func:`predicted_yield` (default ``"conditional"``).
    density : {"gaussian", "slice"}
        Passed to :func:`predicted_yield` (default ``"gaussian"``).
    n_examples : int
        Examples of the measurement (default 20 000).
    n_geometry : int
        Examples of the prediction's geometry average (default 20 000).
    rng : None, int, SeedSequence or Generator
        Seed; the layer and the check draw from two spawned children, and its entropy is recorded.

    Returns
    -------
    CheckResult
        The result of :func:`check_yield_prediction` at its default thresholds and factor.

    Examples
    --------
    >>> control_yield_prediction(n_examples=20_000, n_geometry=5000, rng=0).holds
    False
    """
    return _case(lambda r: integer_layer(m, d, nonzeros=nonzeros, rng=r), k, geometry, density, n_examples,
                 n_geometry, rng)


# --------------------------------------------------------------------------- #
# the learner's pilot forecast against a measurement at another tolerance
# --------------------------------------------------------------------------- #


@declare(pilot_tol=Real(), tol=Real(), min_weight=_FRACTION, n_pilot=Integer(), factor=Real(),
         distribution=_DISTRIBUTION, failure_probability=_FRACTION)
def check_pilot_forecast(layer: AttentionLayer, k: int, *, pilot_tol: float = 0.03, tol: float = 0.015,
                         min_weight: float = 0.02, n_pilot: int = 100_000, n_examples: int = 100_000,
                         factor: float = DEFAULT_FACTOR, distribution: str = "boolean",
                         failure_probability: float = 0.05, rng: SeedLike = None) -> CheckResult:
    """Check the learner's pilot forecast: the window law from ``pilot_tol`` predicts the yield at ``tol``.

    .. math:: \\Big|\\log \\frac{\\hat\\lambda_{\\mathrm{tol}}}{\\lambda_{\\mathrm{tol}}}\\Big|
              \\le \\log(\\text{factor}),
              \\qquad \\hat\\lambda_{\\mathrm{tol}} = \\frac{C_T}{N}\\Big(\\frac{\\mathrm{tol}}{T}\\Big)^{n},

    with ``C_T`` the constraints a pilot of ``N = n_pilot`` examples certifies at ``T = pilot_tol``
    (:func:`learner.phases.forecast.pilot_forecast`, forced to extrapolate), ``n = (m−1)(k−1)`` and
    ``λ_tol`` the yield :func:`measured_yield` measures at ``tol`` on independent examples. The
    check also requires the pilot's own test of the window law (``model_ok``): where the pilot
    rejects it, the learner does not extrapolate, and the check fails (infinite interval).

    Parameters
    ----------
    layer : AttentionLayer
        The planted layer.
    k : int
        Tokens per example, ``2 <= k < d`` (the learner certifies only below ``d``).
    pilot_tol, tol : float
        The pilot's tolerance and the one forecast (``tol < pilot_tol``).
    min_weight : float
        Smallest weight of a token that gives a constraint, in (0, 1).
    n_pilot, n_examples : int
        Examples of the pilot and of the measurement.
    factor : float
        Allowed ratio, > 1 (default 3, as :func:`check_yield_prediction`).
    distribution : {"boolean", "gaussian"}
        Token entries uniform on ``{±1}`` or standard normal.
    failure_probability : float
        Of the whole interval, split evenly between forecast and measurement.
    rng : None, int, SeedSequence or Generator
        Seed; the pilot and the measurement draw from two spawned children.

    Returns
    -------
    CheckResult
        ``details`` hold the forecast and measured yields and intervals, the pilot's exponent
        and its interval, and ``model_ok``.

    Notes
    -----
    Ours: the window law, the pilot and its exponent test (:mod:`learner.phases.forecast`). The pilot
    certifies with the true ``ΣW`` here (the learner's pilot uses its estimate).

    Examples
    --------
    >>> from learner import random_layer
    >>> check_pilot_forecast(random_layer(3, 12, logit_scale=1.0, rng=0), 2, rng=1).holds
    True
    """
    timer = Timer()
    layer = _check_layer(layer)
    k = _check_k(k, layer.d)
    if not tol < pilot_tol < 1:
        raise ValueError("`tol` must be below `pilot_tol`, and both below 1; "
                         f"got tol={tol!r}, pilot_tol={pilot_tol!r}.")
    if factor <= 1:
        raise ValueError(f"`factor` must be greater than 1; got factor={factor!r}.")
    rng = check_rng(rng)
    entropy = _entropy(rng)
    pilot_rng, oracle_rng = rng.spawn(2)
    from learner import LayerOracle
    from learner.phases.sculpt import certify_rows

    oracle = LayerOracle(layer, k, distribution=distribution, rng=pilot_rng)
    w_sum = layer.ws.sum(axis=0)
    residuals = []
    while oracle.n_drawn < n_pilot:
        X, Y = oracle.draw(min(_MEASURE_BATCH, n_pilot - oracle.n_drawn))
        residuals.append(certify_rows(X, Y, w_sum, tol=pilot_tol, min_weight=min_weight)[2])
    n = window_exponent(layer.m, k)
    # min_count above any count: the forecast at tol is the window law's whenever the pilot accepts it.
    fc = pilot_forecast(np.concatenate(residuals), n_pilot, target=1, n=n, candidates=(tol, pilot_tol),
                        min_count=2**62, failure_probability=failure_probability / 2)
    row = fc.at(tol)
    meas = measured_yield(layer, k, tol=tol, min_weight=min_weight, n_examples=n_examples, distribution=distribution,
                          failure_probability=failure_probability / 2, rng=oracle_rng)
    f_lo, f_hi = row.interval
    m_lo, m_hi = meas.interval
    forecast, measured_ = row.per_1000, meas.constraints_per_1000
    log_ratio = math.log(forecast / measured_) if forecast > 0 and measured_ > 0 else math.inf
    lo_log = math.log(f_lo / m_hi) if f_lo > 0 and m_hi > 0 else -math.inf
    hi_log = math.log(f_hi / m_lo) if f_hi > 0 and m_lo > 0 else math.inf
    low = 0.0 if lo_log <= 0 <= hi_log else min(abs(lo_log), abs(hi_log))
    high = max(abs(lo_log), abs(hi_log)) if fc.model_ok else math.inf
    return finish(
        name="pilot_forecast",
        claim=(f"the learner's pilot at tol {pilot_tol:g}, extrapolated by the window law tol^n, forecasts the "
               f"yield at tol {tol:g} within a factor {factor:g}, and the pilot's exponent test accepts the law"),
        source=("ours: the window law (the volume factor tol^n of the yield model) "
                "and the pilot (learner.phases.forecast)"),
        parameters={"m": layer.m, "d": layer.d, "k": k, "pilot_tol": pilot_tol, "tol": tol, "min_weight": min_weight,
                    "n_pilot": n_pilot, "n_examples": n_examples, "factor": factor, "distribution": distribution,
                    "failure_probability": failure_probability},
        measured=abs(log_ratio),
        bound=math.log(factor),
        interval=(low, high),
        failure_probability=failure_probability,
        seed_entropy=entropy,
        timer=timer,
        details={"forecast_per_1000": forecast, "forecast_interval": list(row.interval), "method": row.method,
                 "measured_per_1000": measured_, "measured_interval": list(meas.interval),
                 "pilot_constraints": fc.at(pilot_tol).constraints, "n_disagreements": n,
                 "exponent": fc.exponent, "exponent_interval": list(fc.exponent_interval), "model_ok": fc.model_ok},
    )


def _pilot_case(make_layer, k, n_pilot, n_examples, rng):
    rng = check_rng(rng)
    entropy = _entropy(rng)
    layer_rng, check_seed = rng.spawn(2)
    result = check_pilot_forecast(make_layer(layer_rng), k, n_pilot=n_pilot, n_examples=n_examples, rng=check_seed)
    return replace(result, seed_entropy=entropy)


def default_pilot_forecast(*, m: int = 3, d: int = 12, k: int = 2, n_pilot: int = 100_000, n_examples: int = 100_000,
                           rng: SeedLike = None) -> CheckResult:
    """Positive case: ``learner.random_layer(m, d, logit_scale=1.0)``, pilot at 0.03, forecast at 0.015.

    At (3, 12, 2) the pilot's exponent is 1.9–2.1 (n = 2) and the forecast within 10 % of the
    measurement (ours, measured).

    Parameters
    ----------
    m, d, k : int
        Heads, dimension and tokens per example (defaults 3, 12, 2; ``2 <= k < d``).
    n_pilot : int
        Examples of the pilot (default 100 000).
    n_examples : int
        Examples of the measurement (default 100 000).
    rng : None, int, SeedSequence or Generator
        Seed; the layer and the check draw from two spawned children, and its entropy is recorded.

    Returns
    -------
    CheckResult
        The result of :func:`check_pilot_forecast` at its default tolerances (0.03 and 0.015) and factor.

    Examples
    --------
    >>> default_pilot_forecast(rng=0).holds
    True
    """
    from learner import random_layer

    return _pilot_case(lambda r: random_layer(m, d, logit_scale=1.0, rng=r), k, n_pilot, n_examples, rng)


def control_pilot_forecast(*, m: int = 3, d: int = 12, k: int = 2, nonzeros: int = 2, n_pilot: int = 20_000,
                           n_examples: int = 20_000, rng: SeedLike = None) -> CheckResult:
    """Negative control: integer ``Θ_i`` (:func:`integer_layer`); the atom at ``D = 0`` makes the yield
    nearly independent of tol (exponent ~0), the pilot rejects the window law, and the check fails.

    Parameters
    ----------
    m, d, k : int
        Heads, dimension and tokens per example (defaults 3, 12, 2; ``2 <= k < d``).
    nonzeros : int
        Nonzero entries ``±1`` of each ``Θ_i`` (default 2).
    n_pilot : int
        Examples of the pilot (default 20 000).
    n_examples : int
        Examples of the measurement (default 20 000).
    rng : None, int, SeedSequence or Generator
        Seed; the layer and the check draw from two spawned children, and its entropy is recorded.

    Returns
    -------
    CheckResult
        The result of :func:`check_pilot_forecast` at its default tolerances (0.03 and 0.015) and factor.

    Examples
    --------
    >>> control_pilot_forecast(rng=0).holds
    False
    """
    return _pilot_case(lambda r: integer_layer(m, d, nonzeros=nonzeros, rng=r), k, n_pilot, n_examples, rng)
