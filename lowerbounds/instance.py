"""The common type of the hard instances: a two-token gadget layer and its hidden integer sum.

Both families of this package (constructions ours, derived for this toolkit) are layers of
two-token diagonal gadgets (:mod:`lowerbounds.gadget`) whose heads read one
integer pattern ``v ∈ Z^d`` and an optional offset coordinate ``p``:

.. math:: \\theta_i = \\lambda_i v - \\mu_i e_p, \\qquad W_i = c_i e_t e_o^\\top .

With ``b = (1 − x_1 ⊙ x_2)/2`` and the hidden sum ``h = ⟨v, b⟩ ∈ {0, …, Σv}``
(``v`` has non-negative entries), head ``i`` puts weight ``σ(2(λ_i h − μ_i b_p))``
on the query's own token, so entry ``(1, o)`` of the output is exactly

.. math:: F(X)_{1o} = C x_{2t} + (x_{1t} - x_{2t})\\, G_{b_p}(h),\\qquad
          G_a(h) = \\sum_i c_i \\sigma(2(\\lambda_i h - \\mu_i a)),\\ C = \\sum_i c_i .

A family fixes a *target* ``τ(h)`` — the parity ``(−1)^h`` (SQ family) or the
rounding ``1[h mod q >= q/2]`` (LWE-style family) — and chooses the heads so
that ``G_a ≈ τ`` where the formula is claimed: every input, or the *signal
half* ``b_p = 1`` when there is an offset. :attr:`HardInstance.sharpness_error`
is the exact worst case of ``|F_{1o} − formula|`` there (``2|G − τ|``), computed
in mpmath from the float64 parameters.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import mpmath
import numpy as np
from numpy.typing import ArrayLike

from learner import AssumptionReport, AttentionLayer, assumptions

from .gadget import _check_pair_inputs, _sigmoid, gadget_outputs

__all__ = ["MAX_G_EVALUATIONS", "HardInstance", "check_g_cost", "g_evaluations", "MP_TERM_SECONDS"]

#: Precision (decimal digits) of the closed forms (ours, not tuned: far beyond float64's ~16).
MP_DPS = 50
#: Refuse an exact table ``G_a(h)`` of more head-terms than this unless asked (``max_evaluations``; ours):
#: about 3 minutes at :data:`MP_TERM_SECONDS`.
MAX_G_EVALUATIONS = 5_000_000
#: Measured seconds per mpmath head-term ``c/(1 + e^{−2(λh − μa)})`` at ``MP_DPS`` digits (ours; 2 cores, 2026):
#: 2.4·10⁵ terms took 9.0 s. Used for the time estimate only.
MP_TERM_SECONDS = 4e-5

log = logging.getLogger(__name__)


def g_evaluations(m: int, max_sum: int) -> int:
    """Head-terms in one row ``a`` of the exact table: ``m (Σv + 1)``.

    Parameters
    ----------
    m : int
        Heads.
    max_sum : int
        ``Σv``, the largest hidden sum (the table has ``Σv + 1`` columns).

    Returns
    -------
    int
        ``m (max_sum + 1)``: the mpmath terms ``c/(1 + e^{−2(λh − μa)})`` one row costs.
    """
    return m * (max_sum + 1)


def check_g_cost(m: int, max_sum: int, max_evaluations: int | None, *, what: str = "the instance") -> int:
    """Refuse (ValueError) an exact table beyond ``max_evaluations`` head-terms; ``None`` means no limit.

    Logs the estimated time (:data:`MP_TERM_SECONDS` per head-term) at INFO when it exceeds 5 s.

    Parameters
    ----------
    m : int
        Heads.
    max_sum : int
        ``Σv``, the largest hidden sum.
    max_evaluations : int or None
        Largest number of head-terms per row accepted; ``None`` accepts any.
    what : str
        What needs the table, for the error and log messages (default ``"the instance"``).

    Returns
    -------
    int
        The head-terms per row, :func:`g_evaluations` ``(m, max_sum)``.

    Raises
    ------
    ValueError
        When that count exceeds ``max_evaluations``; the message gives the count and the estimated time.
    """
    n = g_evaluations(m, max_sum)
    seconds = n * MP_TERM_SECONDS
    if max_evaluations is not None and n > max_evaluations:
        raise ValueError(
            f"{what} needs an exact mpmath table of m·(Σv + 1) = {m}·{max_sum + 1} = {n:.3g} head-terms per row "
            f"for its sharpness error (about {_duration(seconds)} on one core), beyond "
            f"max_evaluations={max_evaluations:.3g}; pass a larger max_evaluations (or None) to build it anyway.")
    if seconds > 5:
        log.info("%s: exact table of %.3g head-terms, about %s", what, n, _duration(seconds))
    return n


def _exact(value):
    """The exact value of a target's entry as an mpmath number: an integer, a Fraction, or the binary value of a
    float (never truncated: a family's target may take fractional values, as the control's ``1 − 2h/r``)."""
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    if isinstance(value, (int, np.integer)):
        return mpmath.mpf(int(value))
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"a target must be finite; got {value!r}.")
    return mpmath.mpf(value)


def _duration(seconds):
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True, eq=False)
class HardInstance:
    """A hard two-token instance: the layer, the hidden pattern, and how it was built.

    Subclasses fix the target ``τ(h)`` (:meth:`target`):
    :class:`~lowerbounds.ParityInstance` (:func:`~lowerbounds.sq_hard_instance`)
    and :class:`~lowerbounds.LWRInstance` (:func:`~lowerbounds.lwr_hard_instance`).
    Every number that defines an instance is in ``metadata``. Instances are
    built by those functions, not by hand: the fields must describe ``layer``.

    Parameters
    ----------
    d : int
        Token dimension.
    m : int
        Number of heads.
    t : int
        Reader coordinate: every head's value matrix is ``W_i = c_i e_t e_oᵀ``.
    o : int
        Output column that the heads write into.
    variant : str
        How the heads were chosen: ``"interpolation"`` or ``"steps"`` (the LWE-style family is always ``"steps"``).
    pattern : tuple of int
        ``v`` (length ``d``, non-negative integers): ``θ_i = λ_i v − μ_i e_p`` and the hidden sum is ``h = ⟨v, b⟩``.
    lambdas : tuple of float
        ``λ_i``, one per head.
    offsets : tuple of float
        ``μ_i``, one per head (zeros without an offset coordinate).
    coefficients : tuple of float
        ``c_i``, one per head.
    offset_coord : int or None
        The offset coordinate ``p``; ``None`` when the heads have none (the formula then holds on every input).
    layer : AttentionLayer
        The float64 layer on ``k = 2`` tokens with heads ``Θ_i = diag(θ_i)``, ``W_i = c_i e_t e_oᵀ``.
    metadata : dict
        JSON-ready record of the construction: family, variant, sizes, every head parameter, the construction and
        formula in words, and its provenance.

    See Also
    --------
    sq_hard_instance : Members of the SQ family (:class:`ParityInstance`).
    lwr_hard_instance : Members of the LWE-style family (:class:`LWRInstance`).
    gadget_layer : The two-token diagonal gadget the layer is made of.

    Examples
    --------
    >>> import numpy as np
    >>> from lowerbounds import sq_hard_instance
    >>> inst = sq_hard_instance(6, 3, subset=(2, 4), variant="steps")  # offset p = 5
    >>> type(inst).__name__, inst.pattern, inst.offset_coord
    ('ParityInstance', (0, 0, 1, 0, 1, 0), 5)
    >>> X = np.array([[1, 1, -1, 1, -1, 1], [-1, 1, 1, 1, 1, -1.0]])  # tokens differ at 0, 2, 4 and p
    >>> inst.hidden_sum(X), inst.on_signal_half(X), inst.formula(X), inst.layer(X)[0, 0].round(12)
    (array([2]), array([ True]), array([1.]), np.float64(1.0))
    """

    d: int
    m: int
    t: int
    o: int
    variant: str
    pattern: tuple  # v: θ_i = λ_i v − μ_i e_p (non-negative integers, length d)
    lambdas: tuple
    offsets: tuple  # μ_i
    coefficients: tuple
    offset_coord: int | None
    layer: AttentionLayer = field(repr=False)
    metadata: dict = field(repr=False)

    # -- what a family defines ---------------------------------------------
    def target(self, h: ArrayLike) -> np.ndarray:
        """The family's target ``τ(h)`` on hidden sums ``h``.

        Parameters
        ----------
        h : array_like of int
            Hidden sums ``⟨v, b⟩``.

        Returns
        -------
        ndarray
            ``τ(h)``, the shape of ``h``.

        Raises
        ------
        NotImplementedError
            On :class:`HardInstance` itself; each family's subclass defines it.
        """
        raise NotImplementedError

    # -- derived numbers -----------------------------------------------------
    @property
    def total(self) -> float:
        """``C = Σ c_i``, the coefficient of the reference part ``C x_{2t}``."""
        return float(sum(self.coefficients))

    @property
    def max_sum(self) -> int:
        """``Σ v``: the hidden sum ranges over ``0..max_sum``."""
        return int(sum(self.pattern))

    @property
    def label_bound(self) -> float:
        """``max |F(X)_{1o}|`` over Boolean inputs, ``|C| + 2 max_{a,h} |G_a(h)|``: scales queries into [−1, 1]."""
        return abs(self.total) + 2 * max(float(abs(v)) for row in self.g_table() for v in row)

    @cached_property
    def reachable_sums(self) -> tuple[int, ...]:
        """The hidden sums ``⟨v, b⟩`` that some ``b ∈ {0,1}^d`` reaches (subset sums of ``v``), sorted."""
        reach = np.zeros(self.max_sum + 1, dtype=bool)
        reach[0] = True
        for v in self.pattern:
            if v:
                reach[v:] |= reach[:-v].copy()
        return tuple(int(h) for h in np.flatnonzero(reach))

    @cached_property
    def sharpness_error(self) -> float:
        """``max |F(X)_{1o} − formula(X)|`` over the Boolean inputs where the formula is claimed.

        Equal to ``2 max |G_a(h) − τ(h)|`` (``|x_{1t} − x_{2t}| = 2`` where it
        matters) over the reachable hidden sums ``h`` and the claimed ``a``.
        Exact (mpmath at ``MP_DPS`` digits) for the float64 parameters; the
        layer evaluated in float64 adds rounding of order ``1e-16`` times the
        output scale.
        """
        row = self._g_row(1 if self.offset_coord is not None else 0)  # only the claimed row is needed
        hs = np.asarray(self.reachable_sums)
        tau = self.target(hs)
        with mpmath.workdps(MP_DPS):
            return 2.0 * float(max(abs(row[h] - _exact(v)) for h, v in zip(hs, tau, strict=True)))

    # -- the stated formula ------------------------------------------------
    def hidden_sum(self, X: ArrayLike) -> np.ndarray:
        """``h = ⟨v, b⟩`` per input, ``b = (1 − x_1 ⊙ x_2)/2``.

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).

        Returns
        -------
        ndarray of int64, shape (n,)
            The hidden sum of each input.
        """
        X = _check_pair_inputs(X, self.d)
        b = (X[:, 0] != X[:, 1]).astype(np.int64)
        return b @ np.asarray(self.pattern, dtype=np.int64)

    def signal(self, X: ArrayLike) -> np.ndarray:
        """``(x_{1t} − x_{2t}) τ(h)``, straight from the definition.

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).

        Returns
        -------
        ndarray, shape (n,)
            The signal of each input: ``0`` where ``x_{1t} = x_{2t}``, else ``±2 τ(h)``.
        """
        X = _check_pair_inputs(X, self.d)
        return (X[:, 0, self.t] - X[:, 1, self.t]) * self.target(self.hidden_sum(X))

    def formula(self, X: ArrayLike) -> np.ndarray:
        """The stated value of ``F(X)_{1o}``: ``C x_{2t} + signal(X)`` (valid on :meth:`on_signal_half`).

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).

        Returns
        -------
        ndarray, shape (n,)
            The formula's value per input; the layer matches it to :attr:`sharpness_error` where it is claimed.
        """
        X = _check_pair_inputs(X, self.d)
        return self.total * X[:, 1, self.t] + self.signal(X)

    def on_signal_half(self, X: ArrayLike) -> np.ndarray:
        """Where the formula is claimed: every input without an offset, ``x_{1p} ≠ x_{2p}`` with one.

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).

        Returns
        -------
        ndarray of bool, shape (n,)
            True where :meth:`formula` is claimed.
        """
        X = _check_pair_inputs(X, self.d)
        if self.offset_coord is None:
            return np.ones(X.shape[0], dtype=bool)
        return X[:, 0, self.offset_coord] != X[:, 1, self.offset_coord]

    # -- the exact function computed by the layer ---------------------------
    def g_table(self) -> tuple[tuple[mpmath.mpf, ...], tuple[mpmath.mpf, ...]]:
        """``G_a(h)`` for ``a ∈ {0, 1}`` (the value of ``b_p``) and ``h = 0..Σv``, in mpmath.

        The layer's entry ``(1, o)`` is exactly ``C x_{2t} + (x_{1t} − x_{2t}) G_{b_p}(h)``
        (gadget identity). Computed once per instance from the float64
        parameters, so closed forms describe the float layer itself.

        Returns
        -------
        G0, G1 : tuple of mpmath.mpf
            ``G_0(h)`` and ``G_1(h)`` for ``h = 0..Σv``, at ``MP_DPS`` (50) digits (without an offset the two
            rows are equal).
        """
        return self._g_row(0), self._g_row(1)

    def _g_row(self, a):
        cache = self.__dict__.setdefault("_g_rows", {})  # frozen dataclass: cache beside the fields
        if a not in cache:
            check_g_cost(self.m, self.max_sum, None, what=f"G_{a}(h)")
            with mpmath.workdps(MP_DPS):
                heads = [(mpmath.mpf(c), mpmath.mpf(lam), mpmath.mpf(mu))
                         for c, lam, mu in zip(self.coefficients, self.lambdas, self.offsets, strict=True)]
                cache[a] = tuple(sum((c / (1 + mpmath.exp(-2 * (lam * h - mu * a))) for c, lam, mu in heads),
                                     mpmath.mpf(0))
                                 for h in range(self.max_sum + 1))
        return cache[a]

    def g_values(self, X: ArrayLike) -> np.ndarray:
        """``G_{b_p}(h)`` per input in float64 (the layer's hidden factor).

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).

        Returns
        -------
        ndarray, shape (n,)
            The factor ``g`` of each input (``b_p = 0`` throughout without an offset).
        """
        X = _check_pair_inputs(X, self.d)
        h = self.hidden_sum(X)
        bp = (X[:, 0, self.offset_coord] != X[:, 1, self.offset_coord]) if self.offset_coord is not None \
            else np.zeros(X.shape[0], dtype=bool)
        lam = np.asarray(self.lambdas)
        mu = np.asarray(self.offsets)
        return _sigmoid(2.0 * (h[:, None] * lam - bp[:, None] * mu)) @ np.asarray(self.coefficients)

    def outputs_given_g(self, X: ArrayLike, g: ArrayLike) -> np.ndarray:
        """Full ``(n, 2, d)`` output with the factor ``g`` per input (the gadget identity).

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).
        g : array_like, shape (n,)
            The hidden factor per input, e.g. :meth:`g_values` (which gives the layer's own output) or a draw
            independent of the hidden pattern.

        Returns
        -------
        ndarray, shape (n, 2, d)
            :func:`~lowerbounds.gadget.gadget_outputs` with this instance's ``t``, ``o`` and ``C``.
        """
        X = _check_pair_inputs(X, self.d)
        return gadget_outputs(X, g, t=self.t, o=self.o, total=self.total)

    def assumption_report(self) -> AssumptionReport:
        """``learner.assumptions`` on the layer (k = 2): which of the paper's conditions it violates.

        Returns
        -------
        AssumptionReport
            The report of :func:`learner.assumptions`; ``failed`` names the conditions the layer breaks.
        """
        return assumptions(self.layer, k=2)
