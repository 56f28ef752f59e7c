"""SQ-hard instances on two tokens (construction ours, derived for this toolkit; the paper claims the d^Ω(m) SQ bound).

Hidden subset ``S ⊂ [d] \\ {t}`` with ``|S| = r = m − 1``; ``z = x_1 ⊙ x_2`` and
``h = #{j ∈ S : z_j = −1}``, so the parity is ``χ_S(z) = (−1)^h``. Every head is
a two-token diagonal gadget (:mod:`lowerbounds.gadget`) with ``W_i = c_i e_t e_oᵀ``:

* ``variant="interpolation"``: ``θ_i = λ_i 1_S``; the ``c_i`` solve
  ``Σ_i c_i σ(2 λ_i h) = (−1)^h`` for ``h = 0..r`` (``m = r + 1`` unknowns, solved
  in 50-digit arithmetic with mpmath; the condition number is reported). Then
  ``F(X)_{1o} = C x_{2t} + (x_{1t} − x_{2t}) χ_S(z)`` on every input, ``C = Σ c_i = 2``.
* ``variant="steps"``: an offset coordinate ``p ∉ S ∪ {t}`` (by default the largest);
  ``θ_i = λ (1_S − τ_i e_p)`` with thresholds ``τ_i = i − ½`` (``i = 0..r``) and
  ``c = (1, −2, 2, −2, …)``, so ``|c_i| <= 2``. Where the tokens differ at ``p``
  (``b_p = 1``, half of the inputs) head ``i``'s weight is
  ``σ(2λ(h − τ_i)) ≈ 1[h >= i]`` and ``Σ_i c_i 1[h >= i] = (−1)^h``: the same formula
  holds up to ``~e^{−λ}``. On the other half every head's weight is ``σ(2λh)``
  and the output is ``C x_{2t} + (x_{1t} − x_{2t}) C σ(2λh)``, which depends on ``S``
  through low-degree terms (correlations between members; see :class:`HardFamily`).

The *signal* ``(x_{1t} − x_{2t}) χ_S(z)`` of distinct subsets is exactly
orthogonal under uniform Boolean inputs (``t ∉ S ∪ S'``, and ``χ_S χ_{S'} = χ_{S Δ S'}``).

What the smallest member (m = 2, ``|S| = 1``) shows: the hidden coordinate is one
of ``d − 1``, so SQ learning needs only ``~d`` queries — the family's
``d^{m−1}`` growth starts from m = 3. It does not show hardness for layers that
meet the paper's assumptions: these heads are proportional (interpolation) or
share a support, have low stable rank and heavy diagonals (``learner.assumptions``
says which conditions fail; :meth:`HardInstance.assumption_report`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from math import comb

import mpmath
import numpy as np
from numpy.typing import ArrayLike

from learner.hints import SeedLike
from learner.validation import Integer, Real, check_rng, declare

from .gadget import check_coordinate_set, check_coordinates, gadget_layer
from .instance import MP_DPS, HardInstance

__all__ = ["ParityInstance", "SparseLinearInstance", "interpolation_coefficients", "sparse_linear_instance",
           "sq_hard_instance", "symmetric_fourier", "default_lambdas"]

VARIANTS = ("interpolation", "steps")
#: Largest error of a member's float64 layer against its stated formula that the constructor accepts (ours)
#: (exact, :attr:`HardInstance.sharpness_error`); the interpolation variant meets it up to m = 7 with its
#: default λ's (4.5e-10 there, 1.6e-8 at m = 8), the steps variant at every m (3e-17).
FORMULA_ACCURACY = 1e-9


def default_lambdas(m: int) -> tuple[float, ...]:
    """``λ_i = i − m/2 + 1/4`` (i = 0..m−1): distinct, non-zero, no ``±λ`` pairs.

    Ours, chosen for conditioning: ``σ(−u) = 1 − σ(u)`` makes a ``±λ`` pair
    sum to the all-ones column, so symmetric grids are singular for m >= 4;
    the quarter shift avoids that. Measured condition numbers (1-norm): 15,
    1.7e2, 1.3e3, 1.9e4, 1.2e6 for m = 2..6 (``1, 2, ..., m`` gives up to 1e15).

    Parameters
    ----------
    m : int
        Heads (not validated here; :func:`sq_hard_instance` needs ``m >= 2``).

    Returns
    -------
    tuple of float
        The ``m`` head scales, increasing in steps of 1: ``(−1.25, −0.25, 0.75)`` for ``m = 3``.
    """
    return tuple(float(i - m / 2 + 0.25) for i in range(m))


def default_offset(d: int, t: int) -> int:
    """The steps variant's offset coordinate when none is given: ``d − 1`` (``d − 2`` if that is ``t``)."""
    return d - 1 if d - 1 != t else d - 2


def interpolation_coefficients(lambdas: Iterable[float], targets: Sequence[float | mpmath.mpf] | None = None
                               ) -> tuple[np.ndarray, float]:
    """Solve ``Σ_i c_i σ(2 λ_i h) = τ(h)`` (``h = 0..m−1``) in 50-digit arithmetic; ``τ(h) = (−1)^h`` by default.

    Parameters
    ----------
    lambdas : iterable of float
        The head scales ``λ_i``: ``m >= 2`` distinct finite numbers.
    targets : sequence of float or mpmath.mpf, optional
        Other values ``τ(0..m−1)``, one per head (the sparse-linear control
        uses ``1 − 2h/r``); default the parity ``(−1)^h``.

    Returns
    -------
    c : ndarray, shape (m,)
        The coefficients ``c_i``, rounded to float64.
    condition : float
        The 1-norm condition number of the system ``[σ(2 λ_i h)]_{h, i}``.

    Raises
    ------
    ValueError
        Fewer than two heads, repeated or non-finite ``λ``'s, a ``targets`` of the wrong length, or a singular system.

    See Also
    --------
    default_lambdas : The head scales :func:`sq_hard_instance` uses by default.
    sq_hard_instance : The SQ family's members, whose interpolation variant solves this system.
    symmetric_fourier : Fourier coefficients of the solved factor ``g(h)``.

    Examples
    --------
    >>> c, cond = interpolation_coefficients([-0.75, 0.25])
    >>> round(float(sum(c)), 12)  # h = 0: every σ(0) = 1/2, so Σc = 2
    2.0
    """
    lams = [float(v) for v in lambdas]
    m = len(lams)
    if m < 2:
        raise ValueError(f"the interpolation needs m >= 2 heads; got m={m}.")
    if len(set(lams)) != m or not all(np.isfinite(lams)):
        raise ValueError(f"`lambdas` must be distinct finite numbers; got lambdas={lams}.")
    with mpmath.workdps(MP_DPS):
        M = mpmath.matrix([[1 / (1 + mpmath.exp(-2 * mpmath.mpf(lam) * h)) for lam in lams] for h in range(m)])
        if targets is None:
            targets = [(-1) ** h for h in range(m)]
        if len(targets) != m:
            raise ValueError(f"`targets` must have one value per head (m={m}); got {len(targets)}.")
        v = mpmath.matrix([mpmath.mpf(x) for x in targets])
        try:
            inv = M**-1
        except ZeroDivisionError as exc:
            raise ValueError(f"the interpolation system is singular for lambdas={lams}.") from exc
        c = inv * v
        cond = mpmath.norm(M, 1) * mpmath.norm(inv, 1)
        return np.array([float(x) for x in c]), float(cond)


def symmetric_fourier(values: Sequence[float | mpmath.mpf]) -> list[mpmath.mpf]:
    """Fourier coefficients of a symmetric function of ``r`` signs.

    ``ĝ_l = 2^{−r} Σ_h g(h) Σ_i (−1)^i C(l, i) C(r − l, h − i)`` (count the
    inputs with ``h`` minus signs, ``i`` of them inside ``U``). Computed in
    mpmath at the working precision.

    Parameters
    ----------
    values : sequence of float or mpmath.mpf
        ``values[h]`` (``h = 0..r``) is the function where exactly ``h`` of the ``r`` signs are −1.

    Returns
    -------
    list of mpmath.mpf
        ``ĝ[l]`` (``l = 0..r``): the coefficient of every character ``χ_U`` with ``|U| = l``.

    See Also
    --------
    ParityInstance.fourier : The layer's Fourier coefficients, built from these.
    interpolation_coefficients : The head mixture whose factor is a given symmetric function.

    Examples
    --------
    >>> [float(v) for v in symmetric_fourier([1, -1, 1])]  # the parity of 2 signs
    [0.0, 0.0, 1.0]
    """
    r = len(values) - 1
    out = []
    for ell in range(r + 1):
        total = 0
        for h in range(r + 1):
            k = sum((-1) ** i * _binom(ell, i) * _binom(r - ell, h - i) for i in range(min(ell, h) + 1))
            total += values[h] * k
        out.append(mpmath.mpf(total) / 2**r)
    return out


def _binom(n, k):
    return comb(n, k) if 0 <= k <= n else 0


@dataclass(frozen=True, eq=False)
class ParityInstance(HardInstance):
    """A member of the SQ family: a :class:`HardInstance` whose target is the parity ``χ_S(z) = (−1)^h``.

    ``layer`` is an :class:`~learner.AttentionLayer` on ``k = 2`` tokens whose
    entry ``(1, o)`` (index ``[0, o]``) is ``C x_{2t} + (x_{1t} − x_{2t}) g_S``, with
    ``g_S`` the parity ``χ_S(z)`` (interpolation: on every input; steps: where
    ``b_p = 1``, see :meth:`HardInstance.on_signal_half`). The pattern is ``v = 1_S``, so the
    hidden sum ``h`` counts the coordinates of ``S`` where the tokens differ.
    Construction ours; every number that defines it is in ``metadata``. Built by
    :func:`sq_hard_instance`.

    Parameters
    ----------
    d, m, t, o : int
        Token dimension, heads, reader coordinate and output column (:class:`HardInstance`).
    variant : {"interpolation", "steps"}
        How the heads were chosen (:func:`sq_hard_instance`).
    pattern : tuple of int
        ``1_S``, length ``d``.
    lambdas, offsets, coefficients : tuple of float
        ``λ_i``, ``μ_i`` and ``c_i`` per head (``μ = 0`` for the interpolation variant).
    offset_coord : int or None
        The offset ``p`` (steps), ``None`` (interpolation).
    layer : AttentionLayer
        The float64 layer on two tokens.
    metadata : dict
        JSON-ready record of the construction (:class:`HardInstance`).
    subset : tuple of int
        The hidden ``S``, sorted, ``|S| = m − 1``.
    condition : float or None
        The interpolation system's 1-norm condition number; ``None`` for steps.

    See Also
    --------
    sq_hard_instance : Builds a member.
    HardFamily : All members of one ``(d, m)``: correlations and query lower bounds.
    SQOracle : Answers statistical queries about a member.
    SparseLinearInstance : The control with the same heads and a sparse-linear signal.

    Examples
    --------
    >>> from lowerbounds import sq_hard_instance
    >>> inst = sq_hard_instance(6, 3, subset=(2, 4))
    >>> inst.subset, inst.offset_coord, inst.target([0, 1, 2]).tolist()
    ((2, 4), None, [1, -1, 1])
    >>> round(float(inst.fourier({2, 4})), 12), abs(float(inst.fourier({2}))) < 1e-15  # all weight on χ_S
    (1.0, True)
    """

    subset: tuple
    condition: float | None

    def target(self, h: ArrayLike) -> np.ndarray:
        """The parity ``(−1)^h``.

        Parameters
        ----------
        h : array_like of int
            Hidden sums.

        Returns
        -------
        ndarray of int
            ``1`` where ``h`` is even, ``−1`` where it is odd; the shape of ``h``.
        """
        return 1 - 2 * (np.asarray(h) % 2)

    @cached_property
    def fourier_by_degree(self) -> tuple[list[mpmath.mpf], list[mpmath.mpf]]:
        """``(A, B)``: the Fourier coefficients of ``½(G_0 + G_1)`` and ``½(G_0 − G_1)`` by degree ``0..r``.

        ``g = ½(G_0 + G_1) + ½ z_p (G_0 − G_1)`` (``B = 0`` without an offset), and
        a symmetric function of ``z_S`` has coefficient ``Ĝ_{|U|}`` on every
        ``U ⊆ S`` (:func:`symmetric_fourier`). mpmath numbers, computed once.
        """
        G0, G1 = self.g_table()
        with mpmath.workdps(MP_DPS):
            f0, f1 = symmetric_fourier(G0), symmetric_fourier(G1)
            A = [(a + b) / 2 for a, b in zip(f0, f1, strict=True)]
            if self.offset_coord is not None:
                B = [(a - b) / 2 for a, b in zip(f0, f1, strict=True)]
            else:
                B = [mpmath.mpf(0)] * len(f0)
        return A, B

    def fourier(self, U: Iterable[int]) -> mpmath.mpf:
        """Exact Fourier coefficient at ``χ_U(z)`` of the layer's factor ``g(z) = G_{b_p}(h_S(z))`` (mpmath).

        Parameters
        ----------
        U : iterable of int
            Coordinates of the character ``χ_U(z) = Π_{j∈U} z_j``.

        Returns
        -------
        mpmath.mpf
            ``A_{|U|}`` for ``U ⊆ S``, ``B_{|U|−1}`` for ``U = U' ∪ {p}`` with ``U' ⊆ S``
            (:attr:`fourier_by_degree`), zero otherwise.
        """
        U = frozenset(int(u) for u in U)
        S = frozenset(self.subset)
        p = self.offset_coord
        A, B = self.fourier_by_degree
        if U <= S:
            return A[len(U)]
        if p is not None and p in U and (U - {p}) <= S:
            return B[len(U) - 1]
        return mpmath.mpf(0)

    def reference_fourier(self, U: Iterable[int]) -> mpmath.mpf:
        """Coefficients of the ``S``-independent part of ``g`` (characters ``U ⊆ {p}``), zero elsewhere.

        Parameters
        ----------
        U : iterable of int
            Coordinates of the character.

        Returns
        -------
        mpmath.mpf
            :meth:`fourier` ``(U)`` for ``U = ∅`` and ``U = {p}``, zero for every other ``U``: what the
            reference adversary of :class:`SQOracle` answers with.
        """
        U = frozenset(int(u) for u in U)
        if U <= ({self.offset_coord} if self.offset_coord is not None else set()):
            return self.fourier(U)
        return mpmath.mpf(0)


def _check_subset(subset, d, t, offset):
    S = check_coordinate_set("subset", subset)
    if len(set(S)) != len(S):
        raise ValueError(f"`subset` must not repeat coordinates; got subset={list(subset)}.")
    if not S:
        raise ValueError("`subset` must be non-empty (|S| = m − 1 >= 1).")
    if len(S) >= d:
        raise ValueError(f"`subset` must have fewer than d={d} coordinates; got |S|={len(S)}.")
    if S[0] < 0 or S[-1] >= d:
        raise ValueError(f"`subset` must lie in [0, d) with d={d}; got subset={list(S)}.")
    if t in S:
        raise ValueError(f"the reader coordinate t={t} must not be in the subset; got subset={list(S)}.")
    if offset is not None and offset in S:
        raise ValueError(f"the offset coordinate {offset} must not be in the subset; got subset={list(S)}.")
    return S


# d >= 3: the reader, the offset and one hidden coordinate; m >= 2: one head per parity degree plus one.
@declare(d=Integer(3), m=Integer(2), offset=Integer(0, none=True), steepness=Real())
def sq_hard_instance(d: int, m: int, subset: Iterable[int] | None = None, *, variant: str = "interpolation",
                     t: int = 0, o: int = 0, offset: int | None = None, lambdas: Iterable[float] | None = None,
                     steepness: float = 40.0, rng: SeedLike = None) -> ParityInstance:
    """A member of the SQ-hard family on two tokens.

    Parameters
    ----------
    d : int
        Token dimension (``d >= 3``).
    m : int
        Heads, ``m >= 2``; the subset has ``m − 1`` coordinates.
    subset : iterable of int, optional
        The hidden ``S ⊂ [d] \\ {t}`` (and ``∌ p`` for steps). Drawn uniformly
        with ``rng`` when omitted.
    variant : {"interpolation", "steps"}
        How the heads make the parity (module docstring): interpolation on
        every input, steps on the half where ``x_{1p} ≠ x_{2p}``.
    t, o : int
        Reader coordinate and output column (default 0, 0).
    offset : int, optional
        Steps only: the offset coordinate ``p``, outside ``S ∪ {t}``. Default:
        the largest coordinate outside ``S ∪ {t}`` — ``d − 1`` unless ``t`` or
        a given ``subset`` holds it (a drawn subset avoids ``d − 1``, or
        ``d − 2`` when ``t = d − 1``).
    lambdas : sequence of float, optional
        Interpolation only: the head scales (default :func:`default_lambdas`).
    steepness : float
        Steps only: ``λ``; the formula holds on its half to ``~Σ|c_i| e^{−λ}``
        (default 40: ``~1e-17``, below float64 resolution).
    rng : seed or Generator, optional
        Draws the subset when it is omitted (unused otherwise).

    Returns
    -------
    ParityInstance
        The member; ``metadata["provenance"]`` says what is ours and what is the paper's.

    Raises
    ------
    ValueError
        A bad size, coordinate, subset or variant option; or a float64 layer that misses its formula by more
        than ``FORMULA_ACCURACY`` = 1e-9 (an ill-conditioned interpolation: m >= 8 with the default λ's).

    See Also
    --------
    HardFamily : Every member of one ``(d, m)``, with exact correlations and query lower bounds.
    sparse_linear_instance : The control member with the same heads and a sparse-linear signal.
    SQOracle : A statistical-query oracle for a member.
    lwr_hard_instance : The LWE-style family built from the same gadget.

    Examples
    --------
    >>> inst = sq_hard_instance(6, 3, subset=(2, 4))
    >>> from learner import enumerate_cube
    >>> X = next(enumerate_cube(2, 6, batch=4096))
    >>> bool(np.abs(inst.layer(X)[:, 0, 0] - inst.formula(X)).max() < 1e-9)
    True
    """
    if variant not in VARIANTS:
        raise ValueError(f"`variant` must be one of {VARIANTS}; got variant={variant!r}.")
    t, o = check_coordinates(d, t=t, o=o)
    if variant == "steps":
        if offset is None and subset is not None:
            # The default for a given subset: the largest coordinate outside S ∪ {t} (d − 1 unless S or t holds it).
            subset = _check_subset(subset, d, t, None)
            free = [j for j in range(d) if j != t and j not in subset]
            if not free:
                raise ValueError(f"variant='steps' needs an offset coordinate outside S ∪ {{t}}; "
                                 f"subset={list(subset)} and t={t} leave none of the d={d} coordinates "
                                 "(the reader, S and p need d >= |S| + 2).")
            offset = free[-1]
        elif offset is None:
            offset = default_offset(d, t)
        if offset >= d or offset == t:
            raise ValueError(f"`offset` must be a coordinate in [0, d) other than t={t}; got offset={offset}.")
    elif offset is not None:
        raise ValueError(f"`offset` is for variant='steps' only; got offset={offset} with variant={variant!r}.")
    if subset is None:
        gen = check_rng(rng)
        pool = [j for j in range(d) if j != t and j != offset]
        if m - 1 > len(pool):
            raise ValueError(f"m - 1 = {m - 1} hidden coordinates do not fit in d={d} (variant {variant!r}).")
        subset = gen.choice(pool, size=m - 1, replace=False)
    S = _check_subset(subset, d, t, offset)
    if len(S) != m - 1:
        raise ValueError(f"`subset` must have m − 1 = {m - 1} coordinates; got |S|={len(S)} (subset={list(S)}).")
    r = len(S)
    ind = np.zeros(d)
    ind[list(S)] = 1.0
    if variant == "interpolation":
        lams = default_lambdas(m) if lambdas is None else tuple(float(v) for v in lambdas)
        if len(lams) != m:
            raise ValueError(f"`lambdas` must have m={m} entries; got {len(lams)}.")
        coeffs, cond = interpolation_coefficients(lams)
        mus = (0.0,) * m
        thetas = np.array([lam * ind for lam in lams])
        how = (f"Θ_i = λ_i diag(1_S), λ = {list(lams)}; c solves Σ_i c_i σ(2λ_i h) = (−1)^h, h = 0..{r}, "
               f"in {MP_DPS}-digit arithmetic (condition number {cond:.3g})")
    else:
        if lambdas is not None:
            raise ValueError("`lambdas` is for variant='interpolation'; steps use one `steepness`.")
        lam = steepness
        taus = [i - 0.5 for i in range(m)]
        lams = (lam,) * m
        mus = tuple(lam * tau for tau in taus)
        coeffs = np.array([1.0] + [2.0 * (-1) ** i for i in range(1, m)])
        cond = None
        thetas = np.array([lam * ind for _ in range(m)])
        thetas[:, offset] = -np.asarray(mus)
        how = (f"Θ_i = λ diag(1_S − τ_i e_p), λ = {lam}, p = {offset}, τ_i = i − 1/2 (i = 0..{r}); "
               f"c = (1, −2, 2, ...): steps 1[h >= i] with alternating signs sum to (−1)^h where b_p = 1")
    layer = gadget_layer(thetas, coeffs, t=t, o=o)
    metadata = {
        "family": "sq-two-token",
        "variant": variant,
        "d": d, "m": m, "k": 2, "subset": list(S), "t": t, "o": o, "offset": offset,
        "lambdas": list(lams), "offsets": list(mus), "coefficients": [float(c) for c in coeffs],
        "condition_number": cond,
        "construction": how,
        "formula": "F(X)[0, o] = C x_2t + (x_1t − x_2t) χ_S(x_1 ⊙ x_2)"
                   + (" where x_1p ≠ x_2p" if variant == "steps" else " on every Boolean input"),
        "provenance": "construction ours (derived for this toolkit); the paper's statement is the d^Ω(m) SQ lower "
                      "bound",
    }
    inst = ParityInstance(d=d, m=m, t=t, o=o, variant=variant, pattern=tuple(int(v) for v in ind),
                          lambdas=tuple(lams), offsets=tuple(mus), coefficients=tuple(float(c) for c in coeffs),
                          offset_coord=offset, layer=layer, metadata=metadata, subset=S, condition=cond)
    # The float64 layer must carry its own formula: with an ill-conditioned interpolation
    # (condition ~1e11 at m = 8, 1e20 at m = 11) the rounded c_i miss it by far more.
    err = inst.sharpness_error
    if not err <= FORMULA_ACCURACY:
        raise ValueError(
            f"sq_hard_instance(d={d}, m={m}, variant={variant!r}): the float64 layer misses its formula by {err:.3g} "
            f"> FORMULA_ACCURACY = {FORMULA_ACCURACY:g} (exact, over every reachable hidden sum); the "
            f"interpolation's condition number is {cond:.3g}. Use a smaller m or variant='steps'.")
    return inst


@dataclass(frozen=True, eq=False)
class SparseLinearInstance(ParityInstance):
    """The control beside the SQ family: the same heads ``Θ_i = λ_i diag(1_S)``, another mixture.

    The coefficients solve ``Σ_i c_i σ(2λ_i h) = 1 − 2h/r`` instead of ``(−1)^h``,
    so the signal is ``(x_{1t} − x_{2t}) (1/r) Σ_{j∈S} z_j`` — sparse linear in
    ``z = x_1 ⊙ x_2``, the simulator's control (:class:`~lowerbounds.SparseLinearTarget`)
    realised as a layer of the same shape. Its weight sits on degree-1
    characters, which a correlational or gradient method picks up coordinate by
    coordinate; for ``m = 2`` (``r = 1``) it equals the parity member. Ours.
    Built by :func:`sparse_linear_instance`.

    Parameters
    ----------
    d, m, t, o : int
        Token dimension, heads, reader coordinate and output column (:class:`HardInstance`).
    variant : str
        Always ``"interpolation"``.
    pattern : tuple of int
        ``1_S``, length ``d``.
    lambdas, offsets, coefficients : tuple of float
        ``λ_i`` (the parity member's), ``μ_i = 0`` and the control's ``c_i``.
    offset_coord : None
        No offset: the formula holds on every input.
    layer : AttentionLayer
        The float64 layer on two tokens.
    metadata : dict
        JSON-ready record of the construction (``family`` is ``"sq-two-token-control"``).
    subset : tuple of int
        The hidden ``S``, sorted, ``|S| = m − 1``.
    condition : float
        The 1-norm condition number of the control's interpolation system.

    See Also
    --------
    sparse_linear_instance : Builds a member.
    ParityInstance : The SQ-hard member with the same heads.
    SparseLinearTarget : The same control as an oracle target, without a layer.

    Examples
    --------
    >>> from lowerbounds import sparse_linear_instance
    >>> ctl = sparse_linear_instance(6, 3, subset=(2, 4))
    >>> ctl.target([0, 1, 2]).tolist()  # 1 − 2h/r with r = 2
    [1.0, 0.0, -1.0]
    >>> [round(float(ctl.fourier(U)), 12) for U in [(2,), (4,)]]  # degree-1 weight: (z_2 + z_4)/2
    [0.5, 0.5]
    >>> abs(float(ctl.fourier((2, 4)))) < 1e-15  # none on the parity χ_S
    True
    """

    def target(self, h: ArrayLike) -> np.ndarray:
        """``1 − 2h/r`` with ``r = |S|``.

        Parameters
        ----------
        h : array_like of int
            Hidden sums.

        Returns
        -------
        ndarray of float
            ``1 − 2h/r``, the shape of ``h``: ``(1/r) Σ_{j∈S} z_j`` for an input with hidden sum ``h``.
        """
        return 1.0 - 2.0 * np.asarray(h, dtype=float) / len(self.subset)

    @cached_property
    def sharpness_error(self) -> float:
        """``max |F(X)_{1o} − formula(X)|`` over the Boolean inputs, exact (mpmath): ``2 max_h |G(h) − (1 − 2h/r)|``."""
        row = self._g_row(0)
        r = len(self.subset)
        with mpmath.workdps(MP_DPS):
            return 2.0 * float(max(abs(row[h] - (1 - mpmath.mpf(2 * h) / r)) for h in self.reachable_sums))


def sparse_linear_instance(d: int, m: int, subset: Iterable[int] | None = None, *, t: int = 0, o: int = 0,
                           lambdas: Iterable[float] | None = None, rng: SeedLike = None) -> SparseLinearInstance:
    """The control member for :func:`sq_hard_instance` (same arguments, interpolation variant).

    The hidden subset is drawn exactly as :func:`sq_hard_instance` draws it
    (the same ``rng`` gives the same ``S``), the heads are the same, and only
    the coefficients change (:class:`SparseLinearInstance`).

    Parameters
    ----------
    d : int
        Token dimension (``d >= 3``).
    m : int
        Heads, ``m >= 2``; the subset has ``m − 1`` coordinates.
    subset : iterable of int, optional
        The hidden ``S ⊂ [d] \\ {t}``; drawn uniformly with ``rng`` when omitted.
    t, o : int
        Reader coordinate and output column (default 0, 0).
    lambdas : sequence of float, optional
        The head scales (default :func:`default_lambdas`).
    rng : seed or Generator, optional
        Draws the subset when it is omitted.

    Returns
    -------
    SparseLinearInstance
        The control member; ``metadata["provenance"]`` marks it as ours and not SQ-hard.

    Raises
    ------
    ValueError
        As :func:`sq_hard_instance`, and when the float64 layer misses the control's formula by more than
        ``FORMULA_ACCURACY`` (1e-9).

    See Also
    --------
    sq_hard_instance : The SQ-hard member with the same heads.
    SparseLinearTarget : The same control as an oracle target.

    Examples
    --------
    >>> ctl = sparse_linear_instance(6, 3, subset=(2, 4))
    >>> from learner import enumerate_cube
    >>> X = next(enumerate_cube(2, 6, batch=4096))
    >>> bool(np.abs(ctl.layer(X)[:, 0, 0] - ctl.formula(X)).max() < 1e-9)
    True
    """
    import dataclasses

    base = sq_hard_instance(d, m, subset, t=t, o=o, lambdas=lambdas, rng=rng)
    r = len(base.subset)
    with mpmath.workdps(MP_DPS):
        targets = [1 - mpmath.mpf(2 * h) / r for h in range(m)]
    coeffs, cond = interpolation_coefficients(base.lambdas, targets)
    layer = gadget_layer(np.array([lam * np.asarray(base.pattern, dtype=float) for lam in base.lambdas]), coeffs,
                         t=base.t, o=base.o)
    metadata = base.metadata | {
        "family": "sq-two-token-control",
        "coefficients": [float(c) for c in coeffs], "condition_number": cond,
        "construction": base.metadata["construction"].replace("(−1)^h", "1 − 2h/r"),
        "formula": "F(X)[0, o] = C x_2t + (x_1t − x_2t) (1/r) Σ_{j∈S} z_j on every Boolean input (sparse linear)",
        "provenance": "control ours: the SQ family's heads with a sparse-linear signal (not SQ-hard)",
    }
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    inst = SparseLinearInstance(**(fields | {"coefficients": tuple(float(c) for c in coeffs), "layer": layer,
                                             "metadata": metadata, "condition": cond}))
    err = inst.sharpness_error
    if not err <= FORMULA_ACCURACY:
        raise ValueError(f"sparse_linear_instance(d={d}, m={m}): the float64 layer misses its formula by {err:.3g} "
                         f"> FORMULA_ACCURACY = {FORMULA_ACCURACY:g}; use a smaller m.")
    return inst
