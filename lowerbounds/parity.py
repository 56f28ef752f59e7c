"""Heads against bits: the SQ family's layer sign-represents an ``n``-bit parity with ``m = n + 1`` heads (check ours).

A member of the SQ family (:func:`~lowerbounds.sq_hard_instance`) with ``m`` heads hides ``n = m − 1``
coordinates ``S`` and computes, on the two-token gadget's signal, the parity ``χ_S(z) = (−1)^h`` of the ``n``
bits ``b_S``. :func:`parity_heads_check` evaluates the float64 layer itself on one input per bit pattern, reads
the hidden factor off its output and compares its sign with the parity: an exhaustive check of the statement
"``m`` heads sign-represent the parity of ``m − 1`` bits" for this construction, with negative controls (one head
removed, one coefficient's sign flipped) that must fail.

Hsu (arXiv 2605.12171; our summary of the abstract) states that attention needs heads × degree = Ω(n) to
sign-represent the parity of ``n`` bits. The check confirms ``heads = n + 1`` for this family; it says nothing
about other constructions, and what Hsu's "degree" counts is not derived here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learner.validation import Choice, Integer, declare

from .gadget import gadget_layer
from .sq import VARIANTS, sq_hard_instance

__all__ = ["CONTROLS", "MAX_PARITY_HEADS", "ParityHeadsCheck", "parity_heads_check"]

#: The negative controls of :func:`parity_heads_check`: the member's last head removed, or the sign of its
#: coefficient ``c_{m−1}`` flipped.
CONTROLS = ("drop-head", "flip-sign")
#: Most heads :func:`parity_heads_check` takes (ours, a guard on time): ``2^15 = 32,768`` bit patterns.
MAX_PARITY_HEADS = 16


@dataclass(frozen=True, eq=False)
class ParityHeadsCheck:
    """The result of :func:`parity_heads_check`: the layer's readout on every bit pattern against the parity.

    Parameters
    ----------
    heads : int
        Heads of the layer checked (``m``, or ``m − 1`` for the ``"drop-head"`` control).
    n_bits : int
        Bits of the parity, ``n = m − 1`` (the hidden subset's size).
    variant : str
        The SQ family's variant the member was built with (``"interpolation"`` or ``"steps"``).
    control : str or None
        The negative control applied (one of :data:`CONTROLS`), or ``None`` for the member itself.
    bits : ndarray of int, shape (2**n_bits, n_bits)
        Every bit pattern ``β ∈ {0, 1}^n``, in lexicographic order.
    values : ndarray, shape (2**n_bits,)
        The readout ``s(β)`` of the layer's output per pattern (:func:`parity_heads_check`).
    parity : ndarray of int, shape (2**n_bits,)
        ``(−1)^{|β|}`` per pattern: ``1`` for an even number of ones, ``−1`` for an odd one.
    agree : int
        Patterns where ``sign s(β)`` equals the parity.
    margin : float
        ``min_β (−1)^{|β|} s(β)``: positive exactly when the readout sign-represents the parity.
    success : bool
        Whether the readout sign-represents the parity on every pattern (``margin > 0``, every value finite).
    message : str
        What was found, in one line.

    See Also
    --------
    parity_heads_check : Builds the member, evaluates its layer and fills this in.
    ParityInstance : The member whose layer is checked.

    Examples
    --------
    >>> from lowerbounds import parity_heads_check
    >>> check = parity_heads_check(3)
    >>> check.bits.tolist(), check.parity.tolist()
    ([[0, 0], [0, 1], [1, 0], [1, 1]], [1, -1, -1, 1])
    >>> check.patterns, check.heads_per_bit
    (4, 1.5)
    """

    heads: int
    n_bits: int
    variant: str
    control: str | None
    bits: np.ndarray
    values: np.ndarray
    parity: np.ndarray
    agree: int
    margin: float
    success: bool
    message: str

    @property
    def patterns(self) -> int:
        """``2^n``: the bit patterns enumerated."""
        return 2**self.n_bits

    @property
    def heads_per_bit(self) -> float:
        """``heads / n_bits``: ``m/(m − 1)`` for the member itself."""
        return self.heads / self.n_bits


def _pattern_inputs(bits, d, subset, t, offset):
    """One two-token input per pattern: ``x_1 = 1``, ``x_2`` differs from it at ``t``, at the ones of ``β`` on
    ``S`` and (with an offset) at ``p``, so that ``x_{1t} − x_{2t} = 2`` and ``b_p = 1``."""
    X = np.ones((bits.shape[0], 2, d))
    X[:, 1, t] = -1.0
    X[:, 1, list(subset)] = 1.0 - 2.0 * bits
    if offset is not None:
        X[:, 1, offset] = -1.0
    return X


@declare(m=Integer(2, maximum=MAX_PARITY_HEADS, why=" (ours: the check enumerates 2^(m−1) bit patterns)"),
         variant=Choice(VARIANTS))
def parity_heads_check(m: int, *, variant: str = "interpolation", control: str | None = None) -> ParityHeadsCheck:
    """Check, on every bit pattern, that the SQ family's ``m``-head layer sign-represents the parity of ``m − 1`` bits.

    The member is :func:`~lowerbounds.sq_hard_instance` ``(m + 1, m, subset=(1, …, m − 1))`` with reader
    ``t = 0`` and output column ``o = 0`` (for ``"steps"``, offset ``p = m``). For each pattern
    ``β ∈ {0, 1}^n``, ``n = m − 1``, the input ``X_β`` has ``x_1 = 1`` and ``x_2`` equal to it except
    ``x_{2t} = −1``, ``x_{2,S_j} = (−1)^{β_j}`` and, for ``"steps"``, ``x_{2p} = −1`` (the signal half). The
    readout of the layer's output is

    .. math:: s(\\beta) = \\frac{F(X_\\beta)_{1o} - C\\,x_{2t}}{x_{1t} - x_{2t}}
              = \\frac{F(X_\\beta)_{1o} + C}{2}, \\qquad C = \\sum_i (W_i)_{to},

    with ``F`` the float64 layer evaluated by :class:`~learner.AttentionLayer` and ``C`` read off the checked
    layer's own value matrices; by the gadget identity (:mod:`lowerbounds.gadget`) ``s(β)`` is the hidden factor
    ``g(b)``. The layer sign-represents the parity when ``sign s(β) = (−1)^{|β|}`` for every ``β``.

    Parameters
    ----------
    m : int
        Heads of the member, ``2 <= m <=`` :data:`MAX_PARITY_HEADS` (16); the parity has ``n = m − 1`` bits.
    variant : {"interpolation", "steps"}
        The SQ family's variant (:func:`~lowerbounds.sq_hard_instance`; its default). The interpolation variant's
        float64 layer meets its formula only up to ``m = 7`` and is refused beyond; ``"steps"`` builds at every
        ``m``.
    control : {"drop-head", "flip-sign"} or None
        A negative control, applied to the member's layer before it is evaluated: remove the last head, or negate
        its coefficient ``c_{m−1}``. Either must make the check fail.

    Returns
    -------
    ParityHeadsCheck
        Every pattern, its readout and parity, the margin, and whether the parity is sign-represented.

    Raises
    ------
    ValueError
        An ``m`` outside ``[2, 16]``, an unknown ``variant`` or ``control``, or a member that
        :func:`~lowerbounds.sq_hard_instance` refuses (the interpolation variant from ``m = 8``).

    See Also
    --------
    sq_hard_instance : The member whose layer is checked.
    ParityHeadsCheck : The result.
    gadget_layer : How the layer is built from its heads (and rebuilt for a control).

    Notes
    -----
    Ours: the check, its readout and its controls. One input per pattern suffices because the gadget layer's entry
    ``(1, o)`` depends on the tokens only through ``z = x_1 ⊙ x_2`` and ``x_{1t}, x_{2t}``; the tests compare it
    with every Boolean input for small ``m``. The parity is ``(−1)^{|β|}`` with ``|β|`` the number of ones. Hsu
    (arXiv 2605.12171; our summary of the abstract) states that heads × degree = Ω(n) is needed for attention to
    sign-represent the parity of ``n`` bits; for this construction the check confirms heads ``= n + 1``. The
    controls show that the check can fail; they do not show that fewer heads cannot sign-represent the parity in
    another way.

    References
    ----------
    S. Chen and Y. Li, Provably learning a multi-head attention layer, arXiv 2402.04084 (the SQ lower bound the
    family is built for). Hsu, arXiv 2605.12171 (heads × degree for parity).

    Examples
    --------
    >>> from lowerbounds import parity_heads_check
    >>> check = parity_heads_check(4)
    >>> check.heads, check.n_bits, check.agree, check.success, round(check.margin, 6)
    (4, 3, 8, True, 1.0)
    >>> parity_heads_check(4, control="drop-head").success
    False
    """
    if control is not None and control not in CONTROLS:
        raise ValueError(f"`control` must be None or one of {CONTROLS}; got control={control!r}.")
    n = m - 1
    subset = tuple(range(1, m))
    offset = m if variant == "steps" else None
    inst = sq_hard_instance(m + 1, m, subset, variant=variant, t=0, o=0, offset=offset)
    layer = inst.layer
    if control is not None:
        pattern = np.asarray(inst.pattern, dtype=float)
        thetas = np.array([lam * pattern for lam in inst.lambdas])
        if inst.offset_coord is not None:
            thetas[:, inst.offset_coord] = -np.asarray(inst.offsets)
        coeffs = np.array(inst.coefficients)
        if control == "drop-head":
            thetas, coeffs = thetas[:-1], coeffs[:-1]
        else:
            coeffs[-1] = -coeffs[-1]
        layer = gadget_layer(thetas, coeffs, t=inst.t, o=inst.o)
    bits = ((np.arange(2**n)[:, None] >> np.arange(n - 1, -1, -1)) & 1).astype(np.int64)
    X = _pattern_inputs(bits, inst.d, subset, inst.t, offset)
    total = float(layer.ws[:, inst.t, inst.o].sum())
    values = (layer(X)[:, 0, inst.o] - total * X[:, 1, inst.t]) / (X[:, 0, inst.t] - X[:, 1, inst.t])
    parity = 1 - 2 * (bits.sum(axis=1) % 2)
    agree = int(np.sum(np.sign(values) == parity))
    margin = float(np.min(parity * values))
    success = bool(np.all(np.isfinite(values)) and margin > 0)
    what = {None: "", "drop-head": "control drop-head (the last head removed): ",
            "flip-sign": "control flip-sign (the last head's coefficient negated): "}[control]
    heads = f"{layer.m} head" + ("s" if layer.m != 1 else "")
    of_bits = f"the parity of n = {n} bit" + ("s" if n != 1 else "")
    if success:
        found = f"a layer of {heads} sign-represents {of_bits} on all {2**n} patterns (margin {margin:.3g})"
    else:
        found = (f"a layer of {heads} misses the parity's sign on {2**n - agree} of {2**n} patterns "
                 f"(margin {margin:.3g}): no sign-representation of {of_bits}")
    return ParityHeadsCheck(heads=layer.m, n_bits=n, variant=variant, control=control, bits=bits, values=values,
                            parity=parity, agree=agree, margin=margin, success=success,
                            message=f"{what}{found} ({variant} variant)")
