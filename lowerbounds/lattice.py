"""Lattice attacks on 1-bit learning with rounding (LWR) with binary public vectors: a cost model and a real attack.

The hard family behind the paper's computational lower bound is an LWE-style
problem; the toolkit's instance is 1-bit LWR with *binary* public vectors:

.. math:: w \\in \\mathbb{Z}_q^n, \\quad b \\in \\{0, 1\\}^n \\text{ uniform}, \\quad
          \\ell = \\mathbb{1}\\big[(\\langle w, b \\rangle \\bmod q) \\ge q/2\\big],

so the integer ``y = ⟨w, b⟩ mod q`` lies in the lower half ``I_0 = [0, ⌈q/2⌉ − 1]``
(label 0) or the upper half ``I_1 = [⌈q/2⌉, q − 1]`` (label 1). Hardness is an
assumption; this module shows what breaks small ``n``:

* :func:`primal_usvp_cost` — our own implementation of the primal uSVP estimate
  under the geometric series assumption with the ADPS16 success condition, as
  lattice-estimator's ``LWE.primal_usvp`` (GSA shape) and ``LWE.estimate.rough``
  (core-SVP ``0.292 β``) compute it. It reproduces :data:`REFERENCE_ESTIMATES`
  exactly (β, d, δ to six decimals).
* :func:`lwr_cost` — the same model for 1-bit LWR, read as LWE with a uniform
  secret and the rounding error of :func:`lwr_error_stddev`.
* :func:`lattice_attack` — Kannan embedding of the samples in normal form,
  LLL then progressive BKZ (fpylll, optional: ``pip install -e ".[lattice]"``),
  candidates verified against every label.
* :func:`cost_table` — rows for the command line: heads (label transitions),
  block size, dimension, core-SVP and exhaustive-search cost per ``n``.

Measured (ours; defaults, 5 secrets per cell, 4000 samples, 2 CPU cores, fpylll
0.6.4 without pruning strategies): with ``q = 7`` the attack recovers every
secret for ``n <= 14`` within 0.4 s, 2–4 of 5 for ``n = 16, 18`` (about 3 s),
and at most 1 of 5 for ``n = 20–24`` (failures take 7–18 s); the model asks
for β = 58 at ``n = 14`` and β = 83 at ``n = 20``. With ``q = 31`` and
``q = 97`` it succeeds only up to ``n = 6`` (there the labels rarely determine
the secret) and fails from ``n = 8`` (model β = 53 and 70), where ``q^n`` is
``2^40`` and ``2^53``. With *uniform* public vectors mod 7 (same code) it
fails from ``n = 12–14``: binary public vectors are weaker than the model's
uniform ones (see :func:`lattice_attack`, Notes).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike

from learner.hints import SeedLike
from learner.validation import Each, Integer, check_int, check_positive_float, check_rng, declare

from .lwr import switch_count

__all__ = [
    "REFERENCE_ESTIMATES",
    "CostRow",
    "LatticeOutcome",
    "ReferenceEstimate",
    "UsvpCost",
    "cost_table",
    "fpylll_available",
    "lattice_attack",
    "lwr_cost",
    "lwr_error_stddev",
    "primal_usvp_cost",
    "root_hermite_factor", "BETA_MIN", "BETA_MAX"]

#: Smallest block size the model searches (ours, as lattice-estimator). Below it the GSA and the ADPS16
#: condition are not predictive (for β = 2 the condition "succeeds" in lattices
#: whose shortest vector is not the target), and lattice-estimator starts here too.
BETA_MIN = 40
#: Largest block size the model searches (ours, not tuned: core-SVP 2^1196, far beyond any attack); beyond it
#: the result is reported as a failure.
BETA_MAX = 4096
#: Core-SVP exponents per unit of β (ours to use, the standard published values): classical sieving (BDGL16, as
#: used by ADPS16) and quantum (Laarhoven).
CORE_SVP_CLASSICAL = 0.292
CORE_SVP_QUANTUM = 0.265  # ours to use: Laarhoven's quantum sieving exponent

# δ for β ≤ 40 (ours to use): lattice-estimator's table (fpylll BKZ in dimension 320, averaged
# over 32 random q-ary lattices), read as a step function exactly as it does.
_SMALL_BETA_DELTA = ((2, 1.02190), (5, 1.01862), (10, 1.01616), (15, 1.01485), (20, 1.01420), (25, 1.01342),
                     (28, 1.01331), (40, 1.01295))


@dataclass(frozen=True)
class ReferenceEstimate:
    """A published primal-uSVP estimate (lattice-estimator, GSA + ADPS16) to check the model against.

    Parameters
    ----------
    n, q : int
        LWE secret dimension and modulus.
    sigma_s, sigma_e : float
        Standard deviations of the secret and of the error.
    m : int
        Samples available.
    beta : int
        The published block size.
    dimension : int
        The published embedding dimension.
    delta : float
        The published root-Hermite factor δ(β), to six decimals.
    log2_core_svp : float
        The published core-SVP cost ``0.292 β``, to one decimal.
    source : str
        Where the numbers are printed.
    """

    n: int
    q: int
    sigma_s: float
    sigma_e: float
    m: int
    beta: int
    dimension: int
    delta: float
    log2_core_svp: float
    source: str


#: Reference values. Kyber512: lattice-estimator README (https://github.com/malb/lattice-estimator),
#: ``LWE.estimate.rough(schemes.Kyber512)`` and ``LWE.primal_usvp(schemes.Kyber512)``. Kyber768:
#: ``LWE.estimate.rough(schemes.Kyber768)`` as printed in M. Albrecht, "Estimating the Difficulty of
#: Breaking Lattice-Based Cryptography" (FHE.org 2024 tutorial slides; not in the README). Deviation:
#: the README prints σ = 1.22 for Kyber512; the scheme's centred binomial η = 3 has σ = √(3/2) = 1.2247,
#: which is what the estimator computes with (σ = 1.22 literally gives d = 985, β unchanged). Kyber768
#: uses η = 2, σ = 1.
REFERENCE_ESTIMATES = {
    "Kyber512": ReferenceEstimate(n=512, q=3329, sigma_s=math.sqrt(1.5), sigma_e=math.sqrt(1.5), m=512, beta=406,
                                  dimension=998, delta=1.003941, log2_core_svp=118.6,
                                  source="lattice-estimator README, LWE.estimate.rough(schemes.Kyber512)"),
    "Kyber768": ReferenceEstimate(n=768, q=3329, sigma_s=1.0, sigma_e=1.0, m=768, beta=624, dimension=1427,
                                  delta=1.002902, log2_core_svp=182.2,
                                  source="LWE.estimate.rough(schemes.Kyber768), Albrecht FHE.org 2024 slides"),
}


@dataclass(frozen=True)
class UsvpCost:
    """Result of :func:`primal_usvp_cost` (see there for the model).

    When no β <= :data:`BETA_MAX` succeeds, ``success`` is False and
    ``beta``, ``dimension``, ``samples``, ``delta`` and the costs are None.

    Parameters
    ----------
    success : bool
        Whether some block size up to :data:`BETA_MAX` succeeds.
    n, q : int
        Secret dimension and modulus.
    sigma_s, sigma_e : float
        Standard deviations of the secret and of the error, after the normal form.
    m : int or None
        Samples after the normal form; None for unlimited samples.
    normal_form : bool
        Whether the normal form was applied (``σ_s > σ_e`` given).
    beta : int or None
        The smallest block size that succeeds.
    dimension : int or None
        ``d = samples + n + 1``, the smallest embedding dimension that succeeds with ``beta``.
    samples : int or None
        The LWE samples in the lattice.
    delta : float or None
        δ(β) (:func:`root_hermite_factor`).
    xi : float
        The Bai–Galbraith scale ``σ_e/σ_s`` (1 when ``σ_s >= σ_e``).
    tau : float
        The embedding constant, ``σ_e``.
    log2_classical : float or None
        Core-SVP cost ``0.292 β`` (ADPS16).
    log2_quantum : float or None
        Quantum core-SVP cost ``0.265 β``.
    at_floor : bool
        β = :data:`BETA_MIN` already succeeds: the model only says "β <= 40".
    message : str
        One line saying what the model found.
    """

    success: bool
    n: int
    q: int
    sigma_s: float
    sigma_e: float
    m: int | None
    normal_form: bool
    beta: int | None
    dimension: int | None
    samples: int | None
    delta: float | None
    xi: float
    tau: float
    log2_classical: float | None
    log2_quantum: float | None
    at_floor: bool
    message: str


@dataclass(frozen=True)
class LatticeOutcome:
    """Result of :func:`lattice_attack`.

    Parameters
    ----------
    success : bool
        Whether a secret reproducing every given label was found.
    secret : tuple of int or None
        The recovered ``w`` (entries in ``0..q−1``) when ``success``; it reproduces every given label but may
        differ from the planted secret when the samples do not determine it.
    matches_secret : bool or None
        Whether ``secret`` equals the planted one, when the caller passed ``secret=`` (else None).
    seconds : float
        Wall time from the reduction's start.
    dimension : int
        The embedding dimension ``samples + 1``.
    block_size : int
        The largest BKZ block size run (2 stands for LLL alone).
    samples : int
        How many distinct samples went in (``n`` for the normal form, the rest as lattice rows).
    repair_steps : int or None
        The ``|v|_1 <= 2`` of the move from the lattice's candidate to the secret (0: the lattice gave it
        exactly; see :func:`lattice_attack`, Notes); None without a secret.
    message : str
        One line saying what happened.
    """

    success: bool
    secret: tuple | None
    matches_secret: bool | None
    seconds: float
    dimension: int
    block_size: int
    samples: int
    repair_steps: int | None
    message: str


@dataclass(frozen=True)
class CostRow:
    """One row of :func:`cost_table`.

    Parameters
    ----------
    n, q : int
        Secret dimension and modulus.
    heads : int
        The transitions of ``y ↦ label(y)`` over ``y ∈ [0, n(q−1)]`` (the range of ``⟨w, b⟩`` over the
        integers): one head per jump of the label.
    beta : int or None
        Block size from :func:`lwr_cost` (None when it fails).
    dimension : int or None
        Embedding dimension from :func:`lwr_cost` (None when it fails).
    log2_core_svp : float or None
        ``0.292 β`` (None when the model fails).
    log2_exhaustive : float
        ``n log2 q``: trying every secret.
    at_floor : bool
        As in :class:`UsvpCost`: the model only says ``β <= 40``.
    """

    n: int
    q: int
    heads: int
    beta: int | None
    dimension: int | None
    log2_core_svp: float | None
    log2_exhaustive: float
    at_floor: bool


def root_hermite_factor(beta: int) -> float:
    """Root-Hermite factor δ(β) reached by BKZ with block size β.

    .. math:: \\delta(\\beta) = \\Big( (\\pi\\beta)^{1/\\beta} \\frac{\\beta}{2\\pi e} \\Big)^{1/(2(\\beta - 1))}
              \\qquad (\\beta > 40),

    the asymptotic formula of Chen's thesis (2013). For ``β <= 40`` it returns
    lattice-estimator's measured table as a step function (``δ(40) = 1.01295``;
    the formula is not meant for small β).

    Parameters
    ----------
    beta : int
        Block size, ``>= 2``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(root_hermite_factor(406), 6), root_hermite_factor(40)
    (1.003941, 1.01295)
    """
    beta = check_int("beta", beta, minimum=2)
    if beta > 40:
        return _delta_formula(beta)
    for (b, d), (b_next, _) in pairwise(_SMALL_BETA_DELTA):
        if b <= beta < b_next:
            return d
    return _SMALL_BETA_DELTA[-1][1]


def _delta_formula(beta):
    return ((math.pi * beta) ** (1.0 / beta) * beta / (2 * math.pi * math.e)) ** (1.0 / (2 * (beta - 1)))


def primal_usvp_cost(n: int, q: int, sigma_s: float, sigma_e: float, *, m: int | None = None) -> UsvpCost:
    """Primal uSVP estimate (GSA + ADPS16 success condition) for LWE.

    LWE samples ``A s + e mod q`` with ``s ∈ Z_q^n`` (standard deviation
    ``σ_s``) and error ``e`` (``σ_e``). The embedding lattice uses ``m'`` of the
    samples and has dimension ``d = m' + n + 1`` and volume
    ``Vol = q^{m'} ξ^n τ`` (Bai–Galbraith scale ``ξ = σ_e/σ_s`` when
    ``σ_s < σ_e``, else 1; embedding constant ``τ = σ_e``). BKZ-β succeeds when

    .. math:: \\sqrt{\\sigma_e^2 (\\beta - 1) + \\tau^2} \\le \\delta(\\beta)^{2\\beta - d - 1}\\, \\mathrm{Vol}^{1/d},

    with δ from :func:`root_hermite_factor`. The result is the smallest
    ``β >= 40`` for which some ``d`` works, and for it the smallest such ``d``.

    Parameters
    ----------
    n : int
        Secret dimension.
    q : int
        Modulus, ``>= 2``.
    sigma_s, sigma_e : float
        Standard deviations of the secret and of the error (positive).
    m : int, optional
        Samples available; None for unlimited.

    Returns
    -------
    UsvpCost
        ``log2_classical = 0.292 β`` (core-SVP, ADPS16), ``log2_quantum = 0.265 β``.

    Raises
    ------
    ValueError, TypeError
        For a non-integer or too small ``n, q, m`` or a non-positive σ.

    See Also
    --------
    lwr_cost : The same model for 1-bit LWR.
    root_hermite_factor : δ(β).
    REFERENCE_ESTIMATES : The published values it reproduces.

    Notes
    -----
    What is lattice-estimator's (``LWE.primal_usvp`` with the GSA shape; the
    code is ours):

    * Normal form when the secret is larger than the error (``σ_s > σ_e``,
      e.g. a uniform secret): with ``m >= 2n`` samples (or unlimited), ``n`` of
      them turn the secret into an error-distributed one (``σ_s := σ_e``,
      ``m := m − n``); with fewer, secret and error swap roles and ``m := n``
      (the estimator's choice, which it calls somewhat arbitrary).
    * ``d`` ranges over ``[max(n + 2, β), max(β, ⌈√(n ln q / ln δ)⌉)]``, also
      ``m' <= m`` (Bai–Galbraith: the secret coordinates add ``n`` to the
      dimension for free); ``d >= β`` because BKZ-β needs a block, and at
      ``d = β`` the condition reads "shorter than the Gaussian heuristic".
      The estimator allows ``m' <= m − 1``, a difference of one that does not
      move the reference values.
    * δ for ``β <= 40`` from a table; the search starts at β = 40.

    What is ours: the search (a plain scan over β rather than the estimator's
    local-minimum search; both return the smallest succeeding β because with
    the β-only ADPS16 cost the cost is increasing in β) and ``success = False``
    beyond β = 4096 instead of an infinite cost. Reproduces
    :data:`REFERENCE_ESTIMATES` exactly.

    References
    ----------
    Alkim, Ducas, Pöppelmann, Schwabe, "Post-quantum key exchange — a new hope",
    USENIX Security 2016. Albrecht, Göpfert, Virdia, Wunderer, "Revisiting the
    expected cost of solving uSVP", ASIACRYPT 2017 (ePrint 2017/815). Bai,
    Galbraith, "Lattice decoding attacks on binary LWE", ACISP 2014 (ePrint
    2013/839). Albrecht, Player, Scott, "On the concrete hardness of LWE"
    (ePrint 2015/046).

    Examples
    --------
    >>> ref = REFERENCE_ESTIMATES["Kyber512"]
    >>> c = primal_usvp_cost(ref.n, ref.q, ref.sigma_s, ref.sigma_e, m=ref.m)
    >>> c.beta, c.dimension, round(c.delta, 6), round(c.log2_classical, 1)
    (406, 998, 1.003941, 118.6)
    """
    n = check_int("n", n)
    q = check_int("q", q, minimum=2)
    sigma_s = check_positive_float("sigma_s", sigma_s)
    sigma_e = check_positive_float("sigma_e", sigma_e)
    m = None if m is None else check_int("m", m)
    return _usvp_search(n, q, sigma_s, sigma_e, m)


def _usvp_search(n, q, sigma_s, sigma_e, m, *, delta=root_hermite_factor, with_volume=True):
    # `delta` and `with_volume` exist for the tests' negative controls (a wrong model must miss the references).
    normal_form = sigma_s > sigma_e
    if normal_form:
        if m is None or m >= 2 * n:
            sigma_s, m = sigma_e, (None if m is None else m - n)
        else:
            sigma_s, sigma_e, m = sigma_e, sigma_s, n
    xi = sigma_e / sigma_s if sigma_s < sigma_e else 1.0
    tau = sigma_e
    common = {"n": n, "q": q, "sigma_s": sigma_s, "sigma_e": sigma_e, "m": m, "normal_form": normal_form,
              "xi": xi, "tau": tau}
    log_q, log_xi, log_tau = math.log(q), math.log(xi), math.log(tau)
    d_max_samples = math.inf if m is None else m + n + 1
    for beta in range(BETA_MIN, BETA_MAX + 1):
        lo = max(n + 2, beta)
        if lo > d_max_samples:
            break
        dlt = delta(beta)
        log_delta = math.log(dlt)
        hi = min(max(beta, math.ceil(math.sqrt(n * log_q / log_delta))), d_max_samples)
        if hi < lo:
            continue
        d = np.arange(lo, hi + 1, dtype=np.float64)
        lhs = 0.5 * math.log(sigma_e**2 * (beta - 1) + tau**2)
        log_vol = (log_tau + n * log_xi + (d - n - 1) * log_q) / d if with_volume else 0.0
        ok = np.flatnonzero((2 * beta - d - 1) * log_delta + log_vol >= lhs)
        if ok.size:
            dim = int(d[ok[0]])
            at_floor = beta == BETA_MIN
            msg = (f"β = {beta} succeeds in dimension {dim}" + (" (the search floor: the model says β <= 40)"
                                                                 if at_floor else ""))
            return UsvpCost(success=True, beta=beta, dimension=dim, samples=dim - n - 1, delta=dlt,
                            log2_classical=CORE_SVP_CLASSICAL * beta, log2_quantum=CORE_SVP_QUANTUM * beta,
                            at_floor=at_floor, message=msg, **common)
    limit = f"{m} samples" if m is not None else f"β <= {BETA_MAX}"
    return UsvpCost(success=False, beta=None, dimension=None, samples=None, delta=None, log2_classical=None,
                    log2_quantum=None, at_floor=False, message=f"no block size succeeds within {limit}.", **common)


def lwr_error_stddev(q: int) -> float:
    """Root-mean-square rounding error of 1-bit LWR with integer interval centres.

    The label says ``y mod q ∈ I_ℓ``; the attack takes ``c_ℓ``, a middle
    integer of ``I_ℓ``, so ``e = y − c_ℓ``. For an interval of ``s`` integers
    ``E[e²] = (s² − 1)/12`` (``s`` odd) or ``(s² + 2)/12`` (``s`` even: the centre
    is half a step off). With ``y mod q`` uniform, ``|I_0| = ⌈q/2⌉``,
    ``|I_1| = ⌊q/2⌋``:

    .. math:: \\sigma_e^2 = \\sum_{\\ell} \\frac{|I_\\ell|}{q}\\, E[e^2 \\mid \\ell].

    Parameters
    ----------
    q : int
        Modulus, ``>= 3``.

    Returns
    -------
    float

    Notes
    -----
    Ours. It is the error the embedding of :func:`lattice_attack` actually
    carries; ``((q/2)² − 1)/12``, the variance of a uniform error on ``q/2``
    points, differs by ``O(1)`` (e.g. 1.069 against 0.968 for ``q = 7``).

    Examples
    --------
    >>> round(lwr_error_stddev(7), 4), round(lwr_error_stddev(8), 4)
    (1.069, 1.2247)
    """
    q = check_int("q", q, minimum=3)
    total = 0.0
    for s in ((q + 1) // 2, q // 2):
        total += s / q * ((s * s - 1) / 12 if s % 2 else (s * s + 2) / 12)
    return math.sqrt(total)


def lwr_cost(n: int, q: int, *, m: int | None = None) -> UsvpCost:
    """The primal-uSVP model (:func:`primal_usvp_cost`) for 1-bit LWR mod ``q``.

    LWR is read as LWE with a uniform secret, ``σ_s = √((q² − 1)/12)``, and the
    rounding error of :func:`lwr_error_stddev` as if it were independent noise
    (it is a deterministic function of ``⟨w, b⟩``). Since ``σ_s > σ_e`` the
    normal form applies.

    Parameters
    ----------
    n : int
        Secret dimension.
    q : int
        Modulus, ``>= 3``.
    m : int, optional
        Samples available; None for unlimited.

    Returns
    -------
    UsvpCost
        The model's block size, dimension and costs (``success`` False beyond β = 4096).

    See Also
    --------
    primal_usvp_cost : The model for LWE.
    lwr_error_stddev : The rounding error it uses.
    cost_table : The model over many ``n``.
    lattice_attack : A real attack to compare with.

    Notes
    -----
    An assumption of the model: the public matrix is treated as uniform mod
    ``q``. The toolkit's public vectors are binary, and binary ones are weaker:
    :func:`lattice_attack` breaks ``q = 7`` instances up to ``n = 14`` with
    LLL or BKZ-10 where this model asks for β = 58, and fails from a smaller
    ``n`` on uniform public vectors (module docstring). For small ``n`` the model is in
    the regime ``d = β`` (one SVP call in the whole lattice).

    Examples
    --------
    >>> c = lwr_cost(20, 7)
    >>> c.normal_form, c.beta, c.dimension, round(c.log2_classical, 1)
    (True, 83, 83, 24.2)
    """
    n = check_int("n", n)
    q = check_int("q", q, minimum=3)
    m = None if m is None else check_int("m", m)
    return _usvp_search(n, q, math.sqrt((q * q - 1) / 12), lwr_error_stddev(q), m)


@declare(ns=Each(Integer(), distinct=False), q=Integer(3))
def cost_table(ns: Iterable[int], q: int, *, m: int | None = None) -> tuple[CostRow, ...]:
    """Rows ``(n, q, heads, β, dimension, log2 core-SVP, log2 exhaustive)`` for 1-bit LWR.

    Parameters
    ----------
    ns : sequence of int
        Secret dimensions.
    q : int
        Modulus, ``>= 3``.
    m : int, optional
        Samples available to the model; None for unlimited.

    Returns
    -------
    tuple of CostRow
        One row per ``n``, in the order given.

    See Also
    --------
    lwr_cost : The model behind each row.
    switch_count : The heads column.
    time_attacks : Measured attack times at small ``n``.

    Notes
    -----
    ``heads`` is exact: the number of ``y ∈ 1..n(q−1)`` with
    ``label(y) ≠ label(y − 1)``, ``label(y) = 1[y mod q >= q/2]``; about
    ``2n(q − 1)/q``. The lattice columns carry the assumptions of
    :func:`lwr_cost` (uniform public matrix; β <= 40 shows as 40 with
    ``at_floor``).

    Examples
    --------
    >>> [(r.n, r.heads, r.beta, r.log2_exhaustive.__round__(1)) for r in cost_table([10, 40], 7)]
    [(10, 17, 40, 28.1), (40, 68, 167, 112.3)]
    """
    rows = []
    for n in ns:
        c = lwr_cost(n, q, m=m)
        rows.append(CostRow(n=n, q=q, heads=switch_count(q, n * (q - 1)), beta=c.beta, dimension=c.dimension,
                            log2_core_svp=c.log2_classical, log2_exhaustive=n * math.log2(q), at_floor=c.at_floor))
    return tuple(rows)


# ---------------------------------------------------------------------------------------------------------------
# The attack

#: Default lattice samples per secret coordinate (ours, measured: 6n–12n behave alike for q = 7, within the noise of
#: 5 secrets; 3n fails often, since wrong secrets near w then fit the lattice rows better than w does).
SAMPLES_PER_DIMENSION = 8
#: Default largest BKZ block size (ours, not tuned); the run is progressive and stops at the first verified
#: candidate.
DEFAULT_BLOCK_SIZE = 24
#: BKZ tours per block size (with auto-abort; ours, not tuned): progressive reduction needs few tours per stage.
_MAX_LOOPS = 4
_INSTALL_HINT = 'lattice_attack needs fpylll (and cysignals); install the `lattice` extra: pip install -e ".[lattice]"'


def fpylll_available() -> bool:
    """Whether fpylll (and cysignals) import here: the lattice attack's optional extra.

    Returns
    -------
    bool
        True when :func:`lattice_attack` can run; install the ``lattice`` extra otherwise.

    See Also
    --------
    lattice_attack : The attack that needs fpylll.
    time_attacks : Runs it with ``attacks=("lattice",)``.

    Examples
    --------
    >>> fpylll_available() in (True, False)  # False without the `lattice` extra (the attack raises ImportError)
    True
    """
    try:
        _require_fpylll()
    except ImportError:
        return False
    return True


def _require_fpylll():
    try:
        import fpylll
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return fpylll


def _check_binary(name: str, value: ArrayLike, ndim: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise ValueError(f"`{name}` must have {ndim} dimension{'s' if ndim > 1 else ''}; got shape {arr.shape}.")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
                                   or arr.dtype == np.bool_):
        raise TypeError(f"`{name}` must hold 0/1 numbers; got dtype {arr.dtype}.")
    bad = ~np.isin(arr, (0, 1))
    if bad.any():
        raise ValueError(f"`{name}` must hold only 0 and 1; it contains {arr[bad].flat[0].item()!r}.")
    return arr.astype(np.int64)


def _check_samples(B: ArrayLike, labels: ArrayLike, q: int) -> tuple[np.ndarray, np.ndarray, int]:
    q = check_int("q", q, minimum=3)
    B = _check_binary("B", B, 2)
    labels = _check_binary("labels", labels, 1)
    if B.shape[1] < 1:
        raise ValueError(f"`B` must have at least one column (n >= 1); got shape {B.shape}.")
    if B.shape[0] < 1:
        raise ValueError(f"`B` must have at least one row (sample); got shape {B.shape}.")
    if labels.shape[0] != B.shape[0]:
        raise ValueError(f"`labels` must have one entry per row of `B`; got labels.shape={labels.shape}, "
                         f"B.shape={B.shape}.")
    return B, labels, q


def _labels(B, w, q):
    return ((B @ w) % q >= (q + 1) // 2).astype(np.int64)


def _unit_moves(n):
    """All moves ``v`` with ``|v|_1 <= 2`` and entries in {−1, 0, 1}, as columns of an (n, k) matrix, by weight."""
    eye = np.eye(n, dtype=np.int64)
    i, j = np.triu_indices(n, k=1)
    cols = [np.zeros((n, 1), dtype=np.int64), eye, -eye]
    cols += [si * eye[:, i] + sj * eye[:, j] for si in (1, -1) for sj in (1, -1)]
    return np.concatenate(cols, axis=1)


def _near_fit(B, lo, hi, w, q, moves, batch=512):
    """The first ``w + v`` (v a column of ``moves``) whose ⟨·, b⟩ mod q lies in every labelled interval, or None."""
    y = (B @ w) % q
    for start in range(0, moves.shape[1], batch):
        block = moves[:, start:start + batch]
        Y = (y[:, None] + B @ block) % q
        fits = np.flatnonzero(((Y >= lo[:, None]) & (Y <= hi[:, None])).all(axis=0))
        if fits.size:
            v = block[:, fits[0]]
            return (w + v) % q, int(np.abs(v).sum())
    return None


def _unit_pivot_rows(B, q, order):
    """Indices of n rows of B that are invertible mod q (greedy, unit pivots), and the inverse; None if none found."""
    n = B.shape[1]
    reduced: list[np.ndarray]
    pivots: list[int]
    reduced, pivots, chosen = [], [], []
    for i in order:
        r = B[i] % q
        for pc, pr in zip(pivots, reduced, strict=True):
            r = (r - r[pc] * pr) % q
        free = [j for j in range(n) if j not in pivots and math.gcd(int(r[j]), q) == 1]
        if not free:
            continue
        j = free[0]
        r = (r * pow(int(r[j]), -1, q)) % q
        reduced = [(pr - pr[j] * r) % q for pr in reduced]
        reduced.append(r)
        pivots.append(j)
        chosen.append(int(i))
        if len(chosen) == n:
            break
    if len(chosen) < n:
        return None
    # Gauss–Jordan on [A_1 | I]; every pivot found above is a unit, so this succeeds.
    aug = np.concatenate([B[chosen] % q, np.eye(n, dtype=np.int64)], axis=1)
    for col in range(n):
        piv = next(r for r in range(col, n) if math.gcd(int(aug[r, col]), q) == 1)
        aug[[col, piv]] = aug[[piv, col]]
        aug[col] = (aug[col] * pow(int(aug[col, col]), -1, q)) % q
        for r in range(n):
            if r != col and aug[r, col]:
                aug[r] = (aug[r] - aug[r, col] * aug[col]) % q
    return np.array(chosen), aug[:, n:]


def lattice_attack(B: ArrayLike, labels: ArrayLike, q: int, *, n_samples: int | None = None,
                   block_size: int | None = None, secret: ArrayLike | None = None,
                   rng: SeedLike = None) -> LatticeOutcome:
    """Recover a 1-bit LWR secret from binary samples by lattice reduction (fpylll).

    Each label fixes ``y_i = ⟨w, b_i⟩ mod q`` to an interval with integer
    centre ``c_i`` (:func:`lwr_error_stddev`), so ``B w − c ≡ e (mod q)`` with
    ``|e| <= ⌈q/4⌉``. Normal form: ``n`` distinct samples ``A_1`` invertible mod
    ``q`` give ``w ≡ A_1^{-1}(c_1 + e_1)``, and the others
    ``A' e_1 − (c_2 − A' c_1) ≡ e_2`` with ``A' = A_2 A_1^{-1} mod q`` — an LWE
    instance whose secret ``e_1`` is as small as its error. Kannan embedding,
    basis rows

    .. math:: q\\,\\mathbf{e}_i \\ (i < m'), \\qquad (A'_{:, j}, \\mathbf{e}_j, 0) \\ (j < n), \\qquad
              (-(c_2 - A' c_1) \\bmod q, 0, M),

    with ``M = max(1, round(σ_e))``, contains ``(e_2, e_1, M)``. LLL, then BKZ
    with block sizes 10, 12, …, ``block_size``; after each stage every reduced
    row with last coordinate ``±M`` gives a candidate ``w``; it and its
    neighbours (below) are kept only if they reproduce **all** given labels —
    rounding is deterministic, so a correct secret matches every one.

    Parameters
    ----------
    B : array_like of 0/1, shape (N, n)
        Public vectors, one per row.
    labels : array_like of 0/1, shape (N,)
        ``1[(⟨w, b⟩ mod q) >= q/2]``.
    q : int
        Modulus, ``>= 3``.
    n_samples : int, optional
        Distinct samples the attack uses, ``n + 1 <= n_samples <=`` the number
        of distinct rows of ``B``; the embedding dimension is ``n_samples + 1``.
        Default ``min(distinct rows, (8 + 1) n)``.
    block_size : int, optional
        Largest BKZ block size, ``>= 2`` (2: LLL only). Default
        ``min(24, dimension)``.
    secret : array_like of int, shape (n,), optional
        The planted secret, only to fill ``matches_secret``.
    rng : seed
        Picks the samples, the normal-form rows and the rounding of even-sized
        intervals' centres.

    Returns
    -------
    LatticeOutcome
        The secret found (if any), how, and at what size.

    Raises
    ------
    ValueError, TypeError
        Bad ``B``, ``labels``, ``q``, ``n_samples``, ``block_size`` or ``secret``.
    ImportError
        fpylll is missing (after the inputs are validated).

    See Also
    --------
    lwr_cost : The cost model for parameters beyond reach.
    exhaustive_search : The attack of last resort at small ``n``.
    fpylll_available : Whether the attack can run here.

    Notes
    -----
    Ours, after the standard primal attack (lattice-estimator's model,
    :func:`lwr_cost`). Choices and what they are for:

    * Duplicate rows of ``B`` carry no information and make the reduced basis
      degenerate, so the attack uses distinct rows; conflicting labels on equal
      rows end the attack at once (no secret can reproduce them).
    * Where an interval has an even number of integers its centre is rounded
      up or down at random: a biased error correlates with the columns of ``B``.
    * Binary public vectors make the lattice unlike the model's: it holds
      ``(B_2 u, A_1 u, 0)`` for every integer ``u`` (take ``e_1 = A_1 u``; then
      ``A' A_1 u ≡ B_2 u``), e.g. a column of ``B`` of norm about ``√(dim/2)``,
      shorter than the target (about ``σ_e √dim``, ``σ_e = 1.07`` for ``q = 7``).
      So the reduced basis often holds ``(e', e_1 + A_1 u, M)``, i.e. the
      candidate ``w + u`` with a small ``u``, which fits the lattice rows better
      than ``w`` does. Hence one look around each candidate: every ``w' + v``
      with ``v ∈ {−1, 0, 1}^n``, ``|v|_1 <= 2`` (``2n²`` vectors) is checked
      against the labelled intervals. ``repair_steps`` is the ``|v|_1`` used.
      The look is not iterated on purpose: greedy descent with the same moves
      (at most ``10n`` of them) down the summed squared distance of
      ``⟨w', b⟩ mod q`` to the labelled intervals recovers ``q = 7`` secrets
      by itself from *random* starts (measured: 1–2 of 10 starts for
      ``n = 8, 12, 16`` with 4000 samples), so an iterated repair would no
      longer measure the lattice.
    * Some secrets are not determined by binary samples (few distinct ``b`` for
      small ``n``): success means the labels are reproduced, not that ``w`` is.

    Examples
    --------
    >>> import numpy as np, pytest
    >>> _ = pytest.importorskip("fpylll")
    >>> gen = np.random.default_rng(0)
    >>> w = gen.integers(0, 7, 10)
    >>> B = gen.integers(0, 2, (400, 10))
    >>> out = lattice_attack(B, ((B @ w) % 7 >= 3.5).astype(int), 7, secret=w, rng=1)
    >>> out.success, out.matches_secret, out.dimension
    (True, True, 91)
    """
    rng = check_rng(rng)
    B, labels, q = _check_samples(B, labels, q)
    N, n = B.shape
    uniq, first, inverse = np.unique(B, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    n_distinct = uniq.shape[0]
    n_samples, block_size, secret = _check_attack_options(n, q, n_distinct, n_samples, block_size, secret)
    dim = n_samples + 1
    fpylll = _require_fpylll()

    start = time.perf_counter()

    def outcome(success, w=None, *, used=2, steps=None, message):
        match = None if secret is None or w is None else bool(np.array_equal(w, secret))
        return LatticeOutcome(success=success, secret=None if w is None else tuple(int(x) for x in w),
                              matches_secret=match, seconds=time.perf_counter() - start, dimension=dim,
                              block_size=used, samples=n_samples, repair_steps=steps, message=message)

    ulabels = labels[first]
    if not np.array_equal(ulabels[inverse], labels):
        return outcome(False, message="equal public vectors carry different labels: no secret reproduces them.")
    if n_distinct <= n:
        return outcome(False, message=f"only {n_distinct} distinct public vectors; the attack needs more than n = {n}.")
    embedding = _Embedding.build(uniq, ulabels, q, n_samples, rng)
    if embedding is None:
        return outcome(False, message=f"no n = {n} distinct public vectors are invertible mod q = {q}.")
    found, used = _reduce_and_search(fpylll, embedding, B, labels, block_size)
    if found is None:
        return outcome(False, used=used,
                       message=f"no candidate reproduces all {N} labels after BKZ-{used} in dimension {dim}.")
    w, steps = found
    how = "LLL" if used == 2 else f"BKZ-{used}"
    return outcome(True, w, used=used, steps=steps,
                   message=f"{how} in dimension {dim}; {steps} unit step(s) from the lattice's candidate; "
                           f"reproduces all {N} labels.")


def _check_attack_options(n, q, n_distinct, n_samples, block_size, secret):
    """``n_samples`` (default: what the distinct rows allow), ``block_size`` (capped at the dimension), the secret."""
    if n_samples is None:
        n_samples = min(n_distinct, (SAMPLES_PER_DIMENSION + 1) * n)
    else:
        n_samples = check_int("n_samples", n_samples)
        if n_samples < n + 1:
            raise ValueError(f"`n_samples` must be at least n + 1 = {n + 1} (n go into the normal form); "
                             f"got n_samples={n_samples}.")
        if n_samples > n_distinct:
            raise ValueError(f"`n_samples` must be at most the number of distinct rows of `B` ({n_distinct}); "
                             f"got n_samples={n_samples}.")
    dim = n_samples + 1
    if block_size is None:
        block_size = min(DEFAULT_BLOCK_SIZE, dim)
    else:
        block_size = min(check_int("block_size", block_size, minimum=2), dim)
    if secret is not None:
        secret = np.asarray(secret)
        if secret.shape != (n,) or not np.issubdtype(secret.dtype, np.integer):
            raise ValueError(f"`secret` must be {n} integers; got shape {secret.shape}, dtype {secret.dtype}.")
        secret = secret % q
    return n_samples, block_size, secret


@dataclass(frozen=True)
class _Embedding:
    """Kannan's embedding of the labels' intervals in normal form: the basis and what maps a short vector back."""

    uniq: np.ndarray  # the distinct public vectors
    lo: np.ndarray  # each distinct vector's interval [lo, hi] of ⟨w, b⟩ mod q
    hi: np.ndarray
    centre: np.ndarray  # a middle integer of each interval
    chosen: np.ndarray  # the n rows of the normal form, invertible mod q
    inv: np.ndarray  # their inverse mod q
    q: int
    M: int  # the embedding constant (about the rounding error's standard deviation)
    basis: np.ndarray

    @classmethod
    def build(cls, uniq, ulabels, q, n_samples, rng):
        """The embedding from ``n_samples`` of the distinct rows; None where no n rows are invertible mod q."""
        n_distinct, n = uniq.shape
        # Interval [lo, hi] of each label; centre = a middle integer, ties rounded at random (unbiased error).
        h0 = (q + 1) // 2
        lo = np.where(ulabels == 1, h0, 0)
        hi = np.where(ulabels == 1, q - 1, h0 - 1)
        centre = (lo + hi) // 2 + ((lo + hi) % 2) * rng.integers(0, 2, n_distinct)
        picked = _unit_pivot_rows(uniq, q, rng.permutation(n_distinct))
        if picked is None:
            return None
        chosen, inv = picked
        rest = np.setdiff1d(np.arange(n_distinct), chosen)
        rest = np.sort(rng.permutation(rest)[: n_samples - n])
        m_rows = rest.size
        A = (uniq[rest] @ inv) % q
        shift = (centre[rest] - A @ centre[chosen]) % q
        M = max(1, round(lwr_error_stddev(q)))
        dim = n_samples + 1
        basis = np.zeros((dim, dim), dtype=np.int64)
        basis[np.arange(m_rows), np.arange(m_rows)] = q
        basis[m_rows:m_rows + n, :m_rows] = A.T
        basis[m_rows:m_rows + n, m_rows:m_rows + n] = np.eye(n, dtype=np.int64)
        basis[-1, :m_rows] = -shift
        basis[-1, -1] = M
        return cls(uniq, lo, hi, centre, chosen, inv, q, M, basis)


def _reduce_and_search(fpylll, emb, B, labels, block_size):
    """LLL, then BKZ of growing block size up to ``block_size``, until a candidate reproduces every label.

    Returns ``((w, repair steps) or None, the last block size used)`` (2 stands for LLL alone).
    """
    n = emb.chosen.size
    dim = emb.basis.shape[0]
    m_rows = dim - 1 - n
    X = fpylll.IntegerMatrix.from_matrix(emb.basis.tolist())
    moves, tried = _unit_moves(n), set()

    def search():
        rows = np.array([[X[i][j] for j in range(dim)] for i in range(dim)], dtype=np.int64)
        for row in rows[np.abs(rows[:, -1]) == emb.M]:
            e1 = np.sign(row[-1]) * row[m_rows:m_rows + n]
            w0 = (emb.inv @ (emb.centre[emb.chosen] + e1)) % emb.q
            if tuple(w0) in tried:
                continue
            tried.add(tuple(w0))
            fit = _near_fit(emb.uniq, emb.lo, emb.hi, w0, emb.q, moves)
            if fit is not None and np.array_equal(_labels(B, fit[0], emb.q), labels):
                return fit
        return None

    fpylll.LLL.reduction(X)
    found, used = search(), 2
    stages = [*range(10, block_size, 2), block_size] if block_size > 2 else []
    # Pruned enumeration where fplll's strategy file is installed (pip wheels lack it; plain enumeration then).
    strategies = {}
    if os.path.exists(fpylll.BKZ.DEFAULT_STRATEGY):
        strategies = {"strategies": fpylll.BKZ.DEFAULT_STRATEGY}
    for beta in stages:
        if found is not None:
            break
        param = fpylll.BKZ.Param(block_size=beta, max_loops=_MAX_LOOPS,
                                 flags=fpylll.BKZ.AUTO_ABORT | fpylll.BKZ.MAX_LOOPS, **strategies)
        fpylll.BKZ.reduction(X, param)
        used = beta
        found = search()
    return found, used
