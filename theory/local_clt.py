"""Local CLT on Boolean slices: ⟨a, x⟩ for x uniform on a fixed-Hamming-weight slice.

The talk (arXiv 2402.04084, its slide on approximation errors) says that
the ordinary CLT only controls probabilities of ⟨a, x⟩ to within ``1/sqrt(n)``
for Boolean examples, which would bottleneck the learner; a *local* CLT on
slices of the cube is needed instead, and this is where the paper's
non-arithmetic assumption on the attention matrices comes in. This module
computes the exact distribution of ``S = ⟨a, x⟩`` on a slice by dynamic
programming and compares the probability of every short window
``[t, t + δ)`` with its Gaussian mass.

What is the paper's and what is ours: the need for a local CLT on slices and
the role of non-arithmetic coefficients are the talk's. The statistic (a
sup over windows of fixed width δ, relative to the peak Gaussian window mass),
the window widths, the thresholds, the slice-moment formulas as used here and
the quantisation scheme are ours.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

from learner.assumptions import lattice_distance
from learner.hints import PathLike
from learner.io import save_figure
from learner.validation import Choice, Each, Integer, Real, check_real_array, declare

from ._core import CheckResult, SeedOrGenerator, Timer, finish, require_matplotlib, seeded

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_DELTA_FACTOR",
    "MAX_CELLS",
    "LocalCLTSweep",
    "SliceDistribution",
    "brute_force_distribution",
    "check_local_clt",
    "control_local_clt",
    "default_local_clt",
    "local_clt_sweep",
    "plot_local_clt",
    "slice_distribution",
    "slice_moments",
]

#: Budget of the dynamic programme (ours, a guard on memory): (counts) × (grid points) float64 cells.
#: 2**25 cells are 256 MiB; one temporary of at most the same size keeps the
#: peak near 512 MiB.
MAX_CELLS = 2**25

#: Default bound on the relative local error (ours). A window of width δ below
#: the lattice spacing that falls between two atoms near the mode has
#: probability 0 against a Gaussian mass of about δ·φ_max, i.e. a relative
#: error of about 1 (the arithmetic controls measure 7–11). Gaussian
#: coefficients with δ = σ/(4√n) measured, over 20 seeds (6 at n = 64; upper
#: ends, quantisation included): 0.11–0.35 at n = 16, 0.04–0.07 at n = 32,
#: 0.035–0.043 at n = 64. 0.25 sits 4× below the lattice floor and ~6× above
#: the default case (n = 64); at n = 16 the O(1/n) corrections can exceed it.
DEFAULT_BOUND = 0.25

#: Default window width in units of σ/√n (ours): δ = σ/(4√n). On the cube with
#: coefficients of size σ/√n one coordinate flip moves S by about 2σ/√n, so
#: these windows resolve a quarter of a single flip — far below the ordinary
#: CLT's resolution, and below the lattice spacing of the arithmetic controls
#: (about 2.4σ/√n for entries in {1, 2, 3}).
DEFAULT_DELTA_FACTOR = 0.25

#: Automatic quantum (ours): the worst-case quantisation error n·quantum/2 is
#: at most δ/40, so the conservative bracket widens each window by at most
#: 2e ≤ δ/20 (5% of the peak window mass).
_E_FRACTION = 1 / 40

_EPS = float(np.finfo(np.float64).eps)


# --------------------------------------------------------------------------- #
# validation
# --------------------------------------------------------------------------- #


def _check_a(a: ArrayLike) -> np.ndarray:
    arr = check_real_array("a", a, ndim=1)
    if arr.size == 0:
        raise ValueError("`a` must hold at least one coefficient; got an empty array.")
    return arr


def _check_weight(weight, n):
    if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, numbers.Integral):
        raise TypeError(f"`weight` must be an integer; got weight={weight!r}.")
    weight = int(weight)
    if not 0 <= weight <= n:
        raise ValueError(f"`weight` must be in [0, n] for a slice of {{±1}}^n; got weight={weight}, n={n}.")
    return weight


# --------------------------------------------------------------------------- #
# moments and distributions
# --------------------------------------------------------------------------- #


def slice_moments(a: ArrayLike, weight: int) -> tuple[float, float]:
    """Mean and variance of ``S = ⟨a, x⟩`` for ``x`` uniform on a slice of the cube.

    .. math:: \\mathbb{E} S = \\mu \\sum_j a_j, \\qquad
              \\operatorname{Var} S = (1 - \\mu^2)\\,\\frac{n}{n-1}
              \\Big(\\sum_j a_j^2 - \\frac{(\\sum_j a_j)^2}{n}\\Big),
              \\qquad \\mu = \\frac{2w - n}{n}

    where ``x`` is uniform on ``{x ∈ {±1}^n : exactly w coordinates are +1}``.
    They follow from ``E x_j = μ``, ``Var x_j = 1 − μ²`` and, since
    ``Σ_j x_j = 2w − n`` is constant, ``Cov(x_i, x_j) = −(1 − μ²)/(n − 1)`` for
    ``i ≠ j``. Only the centred part ``a − mean(a)`` moves ``S`` on a slice.

    Parameters
    ----------
    a : array_like, shape (n,)
        Coefficients (finite reals).
    weight : int
        Number of +1 coordinates, ``0 <= weight <= n``.

    Returns
    -------
    (float, float)
        ``(E S, Var S)``; the variance is 0 for ``n = 1``, ``weight ∈ {0, n}``
        or a constant ``a``.

    See Also
    --------
    slice_distribution : The whole distribution of ``S`` on the slice.
    check_local_clt : Compares it with the Gaussian of these moments.

    Notes
    -----
    Standard sampling-without-replacement moments; the derivation and its
    use here are ours (checked against enumeration in the tests).

    Examples
    --------
    >>> mean, var = slice_moments([1.0, 2.0, 3.0, 4.0], 2)   # S ∈ {±4, ±2, 0, 0}: Var S = 40/6
    >>> mean, round(var, 12)
    (0.0, 6.666666666667)
    """
    a = _check_a(a)
    n = a.size
    weight = _check_weight(weight, n)
    mu = (2 * weight - n) / n
    total = math.fsum(a)
    mean = mu * total
    if n == 1:
        return mean, 0.0
    centred = math.fsum((a - total / n) ** 2)
    return mean, (1 - mu * mu) * n / (n - 1) * centred


@dataclass(frozen=True)
class SliceDistribution:
    """The distribution of ``S = ⟨a, x⟩`` on a slice, possibly of a quantised ``a``.

    Returned by :func:`slice_distribution` and :func:`brute_force_distribution`.

    Parameters
    ----------
    values : ndarray, shape (N,)
        Sorted support of ``S_q = ⟨q, x⟩`` (``q = a`` in exact mode).
    probabilities : ndarray, shape (N,)
        Their probabilities (positive, summing to 1 up to rounding).
    n, weight : int
        Length of ``a`` and Hamming weight of the slice.
    quantum : float or None
        Grid spacing of the quantised coefficients (None for enumeration).
    error_bound : float
        ``e`` with ``|S − S_q| <= e`` for every point of the slice; 0 in exact mode.
    mean, variance : float
        ``E S`` and ``Var S`` of the *unquantised* ``a`` (:func:`slice_moments`).
    """

    values: np.ndarray
    probabilities: np.ndarray
    n: int
    weight: int
    quantum: float | None
    error_bound: float
    mean: float
    variance: float

    @property
    def exact(self) -> bool:
        """True when ``S_q = S`` on the whole slice (``error_bound == 0``)."""
        return self.error_bound == 0.0

    @declare(delta=Real())
    def window_bounds(self, t: ArrayLike, delta: float) -> tuple[np.ndarray | float, np.ndarray | float]:
        """Bracket ``P(S ∈ [t, t + δ))`` using the quantisation bound ``e``.

        Parameters
        ----------
        t : float or array_like
            Left ends of the windows.
        delta : float
            Window width δ > 0 (same units as ``a``).

        Returns
        -------
        lower : float or ndarray
            ``P(S_q ∈ [t+e, t+δ−e))`` (0 where the shrunk window is empty), of the shape of ``t``.
        upper : float or ndarray
            ``P(S_q ∈ [t−e, t+δ+e))``. Both equal ``P(S ∈ [t, t + δ))`` in exact mode.

        Examples
        --------
        >>> lower, upper = slice_distribution([1, 2, 3, 4], 2).window_bounds([-0.5, 0.0], 1.0)
        >>> (lower * 6).tolist(), bool((lower == upper).all())   # S = 0 has 2 of the C(4, 2) = 6 points
        ([2.0, 2.0], True)
        """
        t = np.asarray(t, dtype=np.float64)
        e = self.error_bound
        return self._window(t + e, t + delta - e), self._window(t - e, t + delta + e)

    def _window(self, lo, hi):
        cum = np.concatenate(([0.0], np.cumsum(self.probabilities)))
        left = np.searchsorted(self.values, lo, side="left")
        right = np.searchsorted(self.values, np.maximum(hi, lo), side="left")
        return cum[right] - cum[left]


def _frozen(arr):
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    arr.setflags(write=False)
    return arr


def _grid(a, quantum):
    """Integer coefficients ``k`` and quantum ``h`` with ``a ≈ k·h``, and the error bound ``e``."""
    if quantum is None:
        if not np.all(a == np.round(a)):
            raise ValueError(
                "`a` has non-integer entries; pass `quantum` (the grid spacing to round them to). "
                f"First non-integer entry: {a[a != np.round(a)][0]!r}."
            )
        quantum = 1.0
    with np.errstate(over="ignore"):  # a huge ratio is refused just below
        k = np.round(a / quantum)
    if not np.abs(k).sum() <= 2**52:
        raise ValueError(
            f"`quantum` is too small for these coefficients: Σ|a_j|/quantum > 2**52; got quantum={quantum!r}."
        )
    k = k.astype(np.int64)
    e = math.fsum(np.abs(a - k * quantum))
    if e > 0:  # the bound holds in real arithmetic; cover float64 rounding of k·h and of S too
        e += 4 * _EPS * math.fsum(np.abs(a) + np.abs(k * quantum))
    return k, float(quantum), float(e)


def _cells(k, weight):
    rows = min(weight, k.size - weight) + 1
    return rows * (int(np.abs(k).sum()) + 1)


def _subset_sums(k, weight):
    """Distribution of ``T = Σ_{j ∈ P} k_j`` for ``P`` a uniform ``weight``-subset: ``(T values, probs)``.

    Coordinates are processed one at a time; the state is (number of chosen
    coordinates so far, T). Coordinate ``j`` joins ``P`` with probability
    ``(w − c)/(n − j)`` given ``c`` chosen so far, so every entry stays a
    probability (no overflow of binomial counts).
    """
    n = k.size
    neg = int(k[k < 0].sum())
    width = int(k[k > 0].sum()) - neg + 1
    prob = np.zeros((weight + 1, width))
    prob[0, -neg] = 1.0
    lo_col = hi_col = -neg  # active columns (inclusive)
    for j, kj in enumerate(k.tolist()):
        left = n - j
        c_lo, c_hi = max(0, weight - left), min(j, weight)
        rows = np.arange(c_lo, c_hi + 1, dtype=np.float64)
        p_plus = ((weight - rows) / left)[:, None]
        block = prob[c_lo : c_hi + 1, lo_col : hi_col + 1]
        moved = block * p_plus
        block *= 1.0 - p_plus
        top = min(c_hi + 1, weight)  # rows beyond `weight` carry probability 0
        prob[c_lo + 1 : top + 1, lo_col + kj : hi_col + kj + 1] += moved[: top - c_lo]
        if kj > 0:
            hi_col += kj
        else:
            lo_col += kj
    final = prob[weight]
    t_values = np.arange(width) + neg
    keep = final > 0
    return t_values[keep], final[keep]


@declare(quantum=Real(none=True))
def slice_distribution(a: ArrayLike, weight: int, *, quantum: float | None = None) -> SliceDistribution:
    """Exact distribution of ``S = ⟨a, x⟩``, ``x`` uniform on a slice, by dynamic programming.

    .. math:: S = \\sum_{j=1}^n a_j x_j, \\qquad
              x \\sim \\operatorname{Unif}\\{x \\in \\{\\pm 1\\}^n : |\\{j : x_j = +1\\}| = w\\}

    With ``P`` the set of +1 coordinates, ``S = 2 Σ_{j∈P} a_j − Σ_j a_j``; the
    programme tracks (size of ``P`` so far, partial sum) over a grid.

    Parameters
    ----------
    a : array_like, shape (n,)
        Coefficients.
    weight : int
        Number of +1 coordinates ``w``, ``0 <= w <= n``.
    quantum : float, optional
        Grid spacing ``h``. Each ``a_j`` is rounded to ``q_j = h·round(a_j/h)``.
        Default: ``a`` must be integer-valued and ``h = 1``.

    Returns
    -------
    SliceDistribution
        Support and probabilities of ``S_q = ⟨q, x⟩`` and the bound ``e``.

    Raises
    ------
    ValueError
        Bad ``a``, ``weight`` or ``quantum``; non-integer ``a`` without
        ``quantum``; a grid larger than :data:`MAX_CELLS`.

    See Also
    --------
    brute_force_distribution : The same by enumeration, the tests' reference.
    slice_moments : Its mean and variance in closed form.
    check_local_clt : Holds its windows against the Gaussian's.

    Notes
    -----
    How real coefficients are handled (ours): if ``a`` lies on the grid
    (integers with the default, or exact multiples of ``quantum``) the result
    is exact up to float64 rounding of the probabilities (relative ``~n·eps``).
    Otherwise ``|a_j − q_j| <= h/2``, so ``|S − S_q| <= e := Σ_j |a_j − q_j| <=
    n·h/2`` on every point of the slice (plus a float slack of
    ``4·eps·Σ(|a_j| + |q_j|)``), and therefore

    .. math:: P(S_q \\in [t+e, t+\\delta-e)) \\le P(S \\in [t, t+\\delta))
              \\le P(S_q \\in [t-e, t+\\delta+e)),

    which :meth:`SliceDistribution.window_bounds` returns. Cost: the grid has
    ``Σ|a_j|/h + 1`` points and ``min(w, n − w) + 1`` counts (the slice is
    mirrored when ``w > n/2``); time ``O(n · cells)``, memory about twice
    ``8 · cells`` bytes, capped by :data:`MAX_CELLS`.

    Examples
    --------
    >>> dist = slice_distribution([1, 2, 3, 4], 2)
    >>> dist.values, dist.probabilities * 6
    (array([-4., -2.,  0.,  2.,  4.]), array([1., 1., 2., 1., 1.]))
    """
    a = _check_a(a)
    n = a.size
    weight = _check_weight(weight, n)
    k, h, e = _grid(a, quantum)
    cells = _cells(k, weight)
    if cells > MAX_CELLS:
        raise ValueError(
            f"the dynamic programme needs {cells} cells (counts × grid points), over the budget of "
            f"{MAX_CELLS}; use a coarser `quantum` or a smaller `n`; got n={n}, weight={weight}, quantum={h!r}."
        )
    # For w > n/2 track the (n − w) minus-coordinates instead: S = ⟨a, x⟩ = ⟨−a, −x⟩.
    kk, ww = (-k, n - weight) if 2 * weight > n else (k, weight)
    t_values, probs = _subset_sums(kk, ww)
    s_int = 2 * t_values - int(kk.sum())
    mean, variance = slice_moments(a, weight)
    return SliceDistribution(
        values=_frozen(s_int * h),
        probabilities=_frozen(probs),
        n=n,
        weight=weight,
        quantum=h,
        error_bound=e,
        mean=mean,
        variance=variance,
    )


def brute_force_distribution(a: ArrayLike, weight: int) -> SliceDistribution:
    """Distribution of ``S = ⟨a, x⟩`` on a slice by enumerating all ``C(n, w)`` points (``n <= 16``).

    The reference for :func:`slice_distribution` in the tests. Equal sums
    (exact float equality) are merged; ``S`` is summed in float64.

    Parameters
    ----------
    a : array_like, shape (n,)
        Coefficients (finite reals), at most 16 of them.
    weight : int
        Number of +1 coordinates, ``0 <= weight <= n``.

    Returns
    -------
    SliceDistribution
        Exact mode: ``quantum`` None, ``error_bound`` 0, the moments from :func:`slice_moments`.

    Raises
    ------
    ValueError
        Bad ``a`` or ``weight``, or ``n > 16``.

    See Also
    --------
    slice_distribution : The same by dynamic programming, for any ``n``.

    Examples
    --------
    >>> brute_force_distribution([1, 2, 3, 4], 2).probabilities * 6
    array([1., 1., 2., 1., 1.])
    """
    a = _check_a(a)
    n = a.size
    weight = _check_weight(weight, n)
    if n > 16:
        raise ValueError(f"`a` is too long for enumeration (at most 16 coordinates); got n={n}.")
    sums = []
    for plus in itertools.combinations(range(n), weight):
        x = -np.ones(n)
        x[list(plus)] = 1.0
        sums.append(float(np.dot(a, x)))
    values, counts = np.unique(np.array(sums), return_counts=True)
    mean, variance = slice_moments(a, weight)
    return SliceDistribution(
        values=_frozen(values),
        probabilities=_frozen(counts / math.comb(n, weight)),
        n=n,
        weight=weight,
        quantum=None,
        error_bound=0.0,
        mean=mean,
        variance=variance,
    )


# --------------------------------------------------------------------------- #
# the local error
# --------------------------------------------------------------------------- #


class _Gauss:
    """Gaussian window mass ``G(t) = P(N(m, σ²) ∈ [t, t + δ))``, computed without cancellation in the tails."""

    def __init__(self, mean, sigma, delta):
        self.mean, self.sigma, self.delta = mean, sigma, delta
        self.mode = mean - delta / 2  # G is unimodal with its maximum here

    def __call__(self, t):
        x1 = (np.asarray(t, dtype=np.float64) - self.mean) / self.sigma
        x2 = x1 + self.delta / self.sigma
        upper_tail = x1 + x2 > 0
        return np.where(upper_tail, ndtr(-x1) - ndtr(-x2), ndtr(x2) - ndtr(x1))


def _signed_sups(values, probs, alpha, beta, gauss):
    """``sup_t (P(t) − G(t))`` and ``sup_t (G(t) − P(t))``, ``P(t) = P(S_q ∈ [t + α, t + β))``.

    Exact over all real t: ``P`` is a step function of t whose steps sit at
    ``s − β`` (atom s enters) and ``s − α`` (it leaves); between two steps it is
    constant while ``G`` is unimodal, so the sups are attained (as limits) at
    the steps, at the mode of ``G`` or at ±∞. Returns the two sups and the t
    where each is (approached): of several such t (sups equal in floating
    point), the smallest; a zero sup of ``P − G`` is reported at ``+∞``.
    """
    t_star = gauss.mode
    g_star = float(gauss(t_star))
    if beta <= alpha:  # empty window: P ≡ 0
        return 0.0, math.inf, g_star, t_star
    enter, leave = values - beta, values - alpha
    u = np.union1d(enter, leave)
    cum = np.concatenate(([0.0], np.cumsum(probs)))
    # c[i] = P on the open interval (u[i], u[i+1]), u[len] = +inf (where P = 0)
    c = cum[np.searchsorted(enter, u, side="right")] - cum[np.searchsorted(leave, u, side="right")]
    g_left = gauss(u)
    g_right = np.append(g_left[1:], 0.0)
    u_right = np.append(u[1:], math.inf)
    # P − G: largest at the end of the interval where G is smaller
    pg = c - np.minimum(g_left, g_right)
    i = int(np.argmax(pg))
    sup_pg = max(0.0, float(pg[i]))
    t_pg = (u[i] if g_left[i] <= g_right[i] else u_right[i]) if sup_pg > 0 else math.inf
    # G − P: G's maximum over the interval is at an end or at the mode
    gmax = np.maximum(g_left, g_right)
    inside = int(np.searchsorted(u, t_star, side="right")) - 1
    if inside >= 0 and u[inside] < t_star:
        gmax[inside] = g_star
    gp = gmax - c
    j = int(np.argmax(gp))
    sup_gp, t_gp = float(gp[j]), (t_star if gmax[j] == g_star else (u[j] if g_left[j] >= g_right[j] else u_right[j]))
    head = g_star if t_star < u[0] else float(g_left[0])  # interval (−∞, u[0]), P = 0
    if head >= sup_gp:  # ties to the smaller t
        sup_gp, t_gp = head, min(t_star, float(u[0]))
    return sup_pg, t_pg, sup_gp, t_gp


def _kolmogorov(dist, sigma):
    """``sup_t |P(S_q <= t) − Φ((t − E S)/σ)|``, exact over the atoms of ``S_q``."""
    cum = np.concatenate(([0.0], np.cumsum(dist.probabilities)))
    phi = ndtr((dist.values - dist.mean) / sigma)
    return float(max(np.max(np.abs(cum[1:] - phi)), np.max(np.abs(cum[:-1] - phi))))


def _slice_spacing(a, quantum):
    """Lattice spacing of S on the slice when ``a`` lies exactly on the grid ``quantum·ℤ``, else None.

    Swapping a +1 and a −1 coordinate moves S by ``2(a_i − a_j)``, so S lives on
    a coset of ``2·gcd(a_i − a_j)·ℤ`` (a common shift of all ``a_j`` does not
    matter on a slice).
    """
    k, h, e = _grid(a, quantum)
    if e > 0:
        return None
    g = math.gcd(*(k - k.min()).tolist())
    return 2.0 * h * g if g else None


def _auto_quantum(a, weight, delta):
    if np.all(a == np.round(a)):
        return None  # exact on the integer grid
    n = a.size
    h = 2 * _E_FRACTION * delta / n
    rows = min(weight, n - weight) + 1
    while rows * (float(np.abs(a).sum()) / h + n + 1) > MAX_CELLS:  # coarsen to fit the budget
        h *= 1.25
    return h


@declare(delta=Real(), bound=Real(), quantum=Real(none=True))
def check_local_clt(a: ArrayLike, weight: int, *, delta: float, bound: float = DEFAULT_BOUND,
                    quantum: float | None = None) -> CheckResult:
    """Check the local CLT at scale δ: ``sup_t |P(S ∈ [t, t+δ)) − G([t, t+δ))| / (δ φ_max) <= bound``.

    .. math:: \\varepsilon_{loc} = \\frac{1}{\\delta\\,\\varphi_{max}}
              \\sup_{t \\in \\mathbb{R}} \\Big| P(S \\in [t, t+\\delta))
              - \\int_t^{t+\\delta} \\frac{e^{-(s - m)^2 / 2\\sigma^2}}{\\sigma\\sqrt{2\\pi}}\\,ds \\Big|,
              \\qquad \\varphi_{max} = \\frac{1}{\\sigma \\sqrt{2\\pi}}

    with ``S = ⟨a, x⟩``, ``x`` uniform on the slice of Hamming weight ``w``,
    ``m = E S`` and ``σ² = Var S`` from :func:`slice_moments`.

    Parameters
    ----------
    a : array_like, shape (n,)
        Coefficients.
    weight : int
        Number of +1 coordinates, ``0 <= weight <= n``.
    delta : float
        Window width δ > 0 (same units as ``a``).
    bound : float
        What the relative local error is held against (default
        :data:`DEFAULT_BOUND` = 0.25, ours).
    quantum : float, optional
        Grid spacing for :func:`slice_distribution`. Default: exact for
        integer-valued ``a``; otherwise the spacing with worst-case
        quantisation error ``n·quantum/2 = δ/40``, coarsened if the grid
        would exceed :data:`MAX_CELLS`.

    Returns
    -------
    CheckResult
        ``measured`` = the relative local error of the (quantised) distribution;
        ``interval`` brackets the true value for the unquantised ``a`` (equal
        ends in exact mode); ``failure_probability`` is None (no sampling).
        ``holds`` requires the upper end ``<= bound``. ``details`` holds the
        Kolmogorov error of the ordinary CLT, what it alone would certify for
        windows of width δ, δ in units of σ and of σ/√n, the lattice spacing of
        ``S`` for integer ``a``, and :func:`learner.lattice_distance` of ``a``
        and of ``a − min a`` (on a slice only differences ``a_i − a_j``
        matter).

    Raises
    ------
    ValueError
        Bad inputs; ``Var S = 0`` (``weight ∈ {0, n}`` or constant ``a``: the
        statement is vacuous); a grid over the budget.

    See Also
    --------
    slice_distribution : The exact distribution the statistic is computed from.
    local_clt_sweep : The statistic against ``n``, for each kind of coefficients.
    learner.assumptions.lattice_distance : How far ``a`` is from arithmetic.

    Notes
    -----
    The sup over t is exact: the window probability is a step function of t
    with steps where an atom enters or leaves, the Gaussian mass is unimodal
    in t, so the sup is attained at the steps or the mode (all are
    evaluated). Normalising by ``δ φ_max`` — about the Gaussian mass of the
    heaviest window — makes 0 perfect agreement and about 1 the error of an
    empty window at the mode, which a lattice of spacing > δ forces.

    Quantisation: with ``e`` the bound of :func:`slice_distribution`, the true
    window probability lies between those of the shrunk and widened windows,
    so the interval is ``[sup max(P_lo − G, G − P_hi, 0), sup max(P_hi − G,
    G − P_lo)] / (δ φ_max)``: the verdict is conservative.

    The paper's (talk's): a local CLT on slices is needed and holds for
    non-arithmetic coefficients. Ours: this statistic and normalisation, the
    bound, the default window width, the quantisation scheme.

    References
    ----------
    S. Chen and Y. Li, "Provably learning a multi-head attention layer",
    arXiv:2402.04084.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal(16) / 4
    >>> check_local_clt(a, 8, delta=0.1, bound=0.5).holds
    True
    >>> check_local_clt(np.arange(1, 17) / 4, 8, delta=0.1).holds    # a on a lattice of spacing 1/4
    False
    """
    timer = Timer()
    a = _check_a(a)
    n = a.size
    weight = _check_weight(weight, n)
    mean, variance = slice_moments(a, weight)
    if not variance > 0:
        raise ValueError(
            f"S = ⟨a, x⟩ is constant on this slice (Var S = 0), so the local CLT is vacuous; "
            f"got n={n}, weight={weight}, spread of a = {float(np.ptp(a))!r}."
        )
    sigma = math.sqrt(variance)
    if quantum is None:
        quantum = _auto_quantum(a, weight, delta)
    dist = slice_distribution(a, weight, quantum=quantum)
    e = dist.error_bound
    gauss = _Gauss(mean, sigma, delta)
    scale = delta / (sigma * math.sqrt(2 * math.pi))
    v, p = dist.values, dist.probabilities
    pg, t_pg, gp, t_gp = _signed_sups(v, p, 0.0, delta, gauss)
    measured = max(pg, gp) / scale
    worst_t = t_pg if pg >= gp else t_gp
    if e > 0:
        hi_pg, _, hi_gp, _ = _signed_sups(v, p, -e, delta + e, gauss)  # P_hi
        lo_pg, _, lo_gp, _ = _signed_sups(v, p, e, delta - e, gauss)  # P_lo
        interval = (max(lo_pg, hi_gp, 0.0) / scale, max(hi_pg, lo_gp) / scale)
    else:
        interval = None
    kolmogorov = _kolmogorov(dist, sigma)
    k_slack = e / (sigma * math.sqrt(2 * math.pi))  # |K(S) − K(S_q)| <= e·φ_max
    spacing = _slice_spacing(a, dist.quantum)
    return finish(
        name="local_clt",
        claim=(
            "on a Boolean slice, P(⟨a, x⟩ ∈ [t, t+δ)) matches the Gaussian mass uniformly in t, "
            "relative to the peak window mass δ·φ_max"
        ),
        source=(
            "talk (arXiv 2402.04084): a local CLT on slices is needed beyond the CLT's 1/√n and holds for "
            "non-arithmetic coefficients; ours: the statistic, normalisation, bound, window width, slice "
            "moments and quantisation"
        ),
        parameters={
            "n": n,
            "weight": weight,
            "delta": delta,
            "bound": bound,
            "quantum": dist.quantum,
        },
        measured=measured,
        bound=bound,
        interval=interval,
        failure_probability=None,  # a certain bracket from quantisation, not sampling
        timer=timer,
        details={
            "mean": mean,
            "sigma": sigma,
            "delta_over_sigma": delta / sigma,
            "delta_over_sigma_per_sqrt_n": delta * math.sqrt(n) / sigma,
            "quantisation_error": e,
            "quantisation_error_over_delta": e / delta,
            "exact": dist.exact,
            "support_size": int(v.size),
            "worst_t": worst_t,
            "window_mass_scale": scale,
            "kolmogorov": kolmogorov,
            "kolmogorov_quantisation_slack": k_slack,
            "sqrt_n_kolmogorov": math.sqrt(n) * kolmogorov,
            "clt_window_bound": float(2 * (kolmogorov + k_slack) / scale),
            "lattice_spacing": spacing,
            "spacing_over_delta": None if spacing is None else spacing / delta,
            "lattice_distance": lattice_distance(a),
            "lattice_distance_of_differences": lattice_distance(a - a.min()),
        },
    )


# --------------------------------------------------------------------------- #
# cases, sweep and plot
# --------------------------------------------------------------------------- #

_KINDS = ("nonarithmetic", "arithmetic", "skewed")


#: The rules of the cases' and the sweep's parameters: n >= 4 coefficients, a positive delta_factor.
_N = Integer(4)
_DELTA_FACTOR = Real()


def _coefficients(kind, n, rng):
    """Coefficients of one kind, scaled so that Var S = 1 on their slice: ``(a, weight, quantum)``.

    ``nonarithmetic``: i.i.d. N(0, 1), weight n/2 (S is then symmetric about
    its mean, so the Kolmogorov error is O(1/n), not 1/√n). ``arithmetic``:
    i.i.d. uniform on {1, 2, 3}, weight n/2; they stay exact multiples of the
    scale ``s``, so the programme runs exactly on that grid. ``skewed``:
    i.i.d. Exp(1), weight n/4 — non-arithmetic with a skewed S, where the
    Kolmogorov error is of order 1/√n.
    """
    weight = n // 4 if kind == "skewed" else n // 2
    while True:
        if kind == "nonarithmetic":
            raw = rng.standard_normal(n)
        elif kind == "skewed":
            raw = rng.exponential(size=n)
        else:
            raw = rng.integers(1, 4, size=n).astype(np.float64)
        _, var = slice_moments(raw, weight)
        if var > 0:  # a constant draw (probability 3^(1−n) for "arithmetic") has Var S = 0
            break
    s = 1 / math.sqrt(var)
    return raw * s, weight, (s if kind == "arithmetic" else None)


def _case(kind, n, delta_factor, bound, rng):
    rng, entropy = seeded(rng)
    a, weight, quantum = _coefficients(kind, n, rng)
    delta = delta_factor / math.sqrt(n)  # σ = 1 by construction
    result = check_local_clt(a, weight, delta=delta, bound=bound, quantum=quantum)
    params = {**result.parameters, "kind": kind, "delta_factor": delta_factor}
    return replace(result, parameters=params, seed_entropy=entropy)


@declare(n=_N, delta_factor=_DELTA_FACTOR)
def default_local_clt(*, n: int = 64, delta_factor: float = DEFAULT_DELTA_FACTOR,
                      rng: SeedOrGenerator = None) -> CheckResult:
    """Positive case: Gaussian (non-arithmetic) ``a`` scaled to σ = 1, weight ``n/2``, δ = σ/(4√n).

    Parameters
    ----------
    n : int
        Number of coefficients, ``>= 4`` (default 64).
    delta_factor : float
        Window width in units of σ/√n, positive: δ = ``delta_factor``/√n with σ = 1 (default
        :data:`DEFAULT_DELTA_FACTOR`).
    rng : None, int, SeedSequence or Generator
        Seed of the coefficients; its entropy is recorded in the result.

    Returns
    -------
    CheckResult
        The result of :func:`check_local_clt` at :data:`DEFAULT_BOUND`; its ``parameters`` add ``kind`` and
        ``delta_factor``.

    Examples
    --------
    >>> default_local_clt(n=16, rng=0).holds
    True
    """
    return _case("nonarithmetic", n, delta_factor, DEFAULT_BOUND, rng)


@declare(n=_N, delta_factor=_DELTA_FACTOR)
def control_local_clt(*, n: int = 64, delta_factor: float = DEFAULT_DELTA_FACTOR,
                      rng: SeedOrGenerator = None) -> CheckResult:
    """Negative control: ``a`` uniform on {1, 2, 3}·s (σ = 1), same n, weight and δ; must fail.

    On the slice ``S`` lives on a lattice of spacing ``2s·gcd(a_i − a_j) ≈ 2.4/√n``,
    about 10× the window width, so windows between atoms are empty.

    Parameters
    ----------
    n : int
        Number of coefficients, ``>= 4`` (default 64).
    delta_factor : float
        Window width in units of σ/√n, positive: δ = ``delta_factor``/√n with σ = 1 (default
        :data:`DEFAULT_DELTA_FACTOR`).
    rng : None, int, SeedSequence or Generator
        Seed of the coefficients; its entropy is recorded in the result.

    Returns
    -------
    CheckResult
        The result of :func:`check_local_clt` at :data:`DEFAULT_BOUND`; its ``parameters`` add ``kind`` and
        ``delta_factor``.

    Examples
    --------
    >>> control_local_clt(n=16, rng=0).holds
    False
    """
    return _case("arithmetic", n, delta_factor, DEFAULT_BOUND, rng)


@dataclass(frozen=True)
class LocalCLTSweep:
    """Relative local error and Kolmogorov error of one kind of coefficients against ``n``.

    Returned by :func:`local_clt_sweep`; every tuple has one entry per ``n``.

    Parameters
    ----------
    kind : str
        ``"nonarithmetic"``, ``"arithmetic"`` or ``"skewed"``.
    ns : tuple of int
        The numbers of coefficients swept, in the order given.
    weights : tuple of int
        Hamming weight of the slice per n.
    delta_factor : float
        δ = ``delta_factor``·σ/√n with σ = 1.
    local_error : tuple of float
        ``measured`` of :func:`check_local_clt` per n.
    local_error_upper : tuple of float
        Upper end of its interval (quantisation included).
    kolmogorov : tuple of float
        ``sup_t |P(S <= t) − Φ(t)|`` per n.
    sqrt_n_kolmogorov : tuple of float
        ``√n`` times the Kolmogorov error (about constant when it is of order ``1/√n``).
    results : tuple of CheckResult
        The full result of :func:`check_local_clt` per n.
    seed_entropy : int or None
        Entropy of the sweep's seed (None when it cannot be recovered from a Generator passed in).
    seconds : float
        Wall-clock time of the sweep.
    """

    kind: str
    ns: tuple
    weights: tuple
    delta_factor: float
    local_error: tuple
    local_error_upper: tuple
    kolmogorov: tuple
    sqrt_n_kolmogorov: tuple
    results: tuple
    seed_entropy: int | None
    seconds: float


@declare(ns=Each(_N, distinct=False), kind=Choice(_KINDS), delta_factor=_DELTA_FACTOR)
def local_clt_sweep(*, ns: Iterable[int] = (16, 32, 64), kind: str = "nonarithmetic",
                    delta_factor: float = DEFAULT_DELTA_FACTOR, rng: SeedOrGenerator = None) -> LocalCLTSweep:
    """The relative local error and the Kolmogorov error against ``n`` for one kind of coefficients.

    Each ``n`` draws fresh coefficients, scaled so that σ = 1, and runs
    :func:`check_local_clt` with δ = ``delta_factor``/√n:

    - ``"nonarithmetic"``: i.i.d. Gaussian, weight n/2 (the default case);
    - ``"arithmetic"``: i.i.d. uniform on {1, 2, 3}, weight n/2 (the control);
    - ``"skewed"``: i.i.d. Exp(1), weight n/4 — non-arithmetic, but S is
      skewed, so the ordinary CLT's Kolmogorov error really is of order
      1/√n while the local error stays small.

    Parameters
    ----------
    ns : iterable of int
        Numbers of coefficients, each ``>= 4`` (default 16, 32, 64).
    kind : {"nonarithmetic", "arithmetic", "skewed"}
        The kind of coefficients.
    delta_factor : float
        Window width in units of σ/√n, positive (default :data:`DEFAULT_DELTA_FACTOR`).
    rng : None, int, SeedSequence or Generator
        Seed of the sweep; each ``n`` draws from its own spawned child.

    Returns
    -------
    LocalCLTSweep
        The errors per ``n`` and the full results, held against :data:`DEFAULT_BOUND`.

    See Also
    --------
    check_local_clt : The check run at each ``n``.
    plot_local_clt : The sweep of every kind, plotted.

    Examples
    --------
    >>> sweep = local_clt_sweep(ns=(8, 16), kind="arithmetic", rng=0)
    >>> all(err > 1 for err in sweep.local_error)
    True
    """
    rng, entropy = seeded(rng)
    timer = Timer()
    ns = tuple(ns)
    results = tuple(_case(kind, n, delta_factor, DEFAULT_BOUND, child)
                    for n, child in zip(ns, rng.spawn(len(ns)), strict=True))
    return LocalCLTSweep(
        kind=kind,
        ns=ns,
        weights=tuple(r.parameters["weight"] for r in results),
        delta_factor=float(delta_factor),
        local_error=tuple(r.measured for r in results),
        local_error_upper=tuple(r.interval[1] for r in results),
        kolmogorov=tuple(r.details["kolmogorov"] for r in results),
        sqrt_n_kolmogorov=tuple(r.details["sqrt_n_kolmogorov"] for r in results),
        results=results,
        seed_entropy=entropy,
        seconds=timer.elapsed(),
    )


def plot_local_clt(path: PathLike, *, ns: Sequence[int] = (16, 32, 64),
                   rng: SeedOrGenerator = None) -> tuple[LocalCLTSweep, ...]:
    """Write a log-log PNG: relative local error against n for each kind, Kolmogorov errors beside.

    Needs matplotlib (the ``plot`` extra); without it, a ValueError saying so before any computation.

    Parameters
    ----------
    path : str or PathLike
        Where to write the PNG.
    ns : sequence of int
        Numbers of coefficients, each ``>= 4`` (default 16, 32, 64).
    rng : None, int, SeedSequence or Generator
        Seed; each kind's sweep draws from its own spawned child.

    Returns
    -------
    tuple of LocalCLTSweep
        The sweeps drawn, ``(nonarithmetic, arithmetic, skewed)``.
    """
    matplotlib = require_matplotlib("plot_local_clt")
    rng, _ = seeded(rng)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweeps = tuple(local_clt_sweep(ns=ns, kind=kind, rng=child)
                   for kind, child in zip(_KINDS, rng.spawn(len(_KINDS)), strict=True))
    fig, ax = plt.subplots(figsize=(8, 5.6), layout="constrained")
    local: list[Any] = []  # a colour per kind, a line style per error
    kolmogorov: list[Any] = []
    for sweep, color in zip(sweeps, ("tab:blue", "tab:red", "tab:green"), strict=True):
        point = np.asarray(sweep.local_error)
        lower = np.asarray([r.interval[0] for r in sweep.results])
        upper = np.asarray(sweep.local_error_upper)
        local.append(ax.errorbar(sweep.ns, point, yerr=[point - lower, upper - point], fmt="o-", color=color,
                                 capsize=3, label=f"local error, {sweep.kind} a"))
        kolmogorov += ax.loglog(sweep.ns, sweep.kolmogorov, "s--", color=color, alpha=0.6,
                                label=f"Kolmogorov error, {sweep.kind} a")
    ns_arr = np.asarray(ns, dtype=np.float64)
    local += ax.loglog(ns_arr, 1 / np.sqrt(ns_arr), ":", color="gray", label="1/√n")
    kolmogorov.append(ax.axhline(DEFAULT_BOUND, color="black", lw=0.8, label=f"bound {DEFAULT_BOUND}"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ns_arr, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set_xlabel("n")
    ax.set_ylabel("error")
    ax.set_title(f"local CLT on Boolean slices, δ = {sweeps[0].delta_factor:g}·σ/√n (bars: quantisation)")
    # below the axes, off the data: the local errors and 1/√n in one column, the Kolmogorov errors and the bound
    fig.legend(handles=local + kolmogorov, loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    save_figure(fig, path, dpi=100)
    plt.close(fig)
    return sweeps
