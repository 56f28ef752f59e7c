"""LWE-style hard instances: 1-bit learning with rounding carried by two-token attention.

Construction ours (derived for this toolkit). The paper's statement is only that, under
an LWE variant, no polynomial-time algorithm learns multi-head attention; which
variant and which layers are not available to us. **The hardness here is an
assumption**: that learning with rounding with *binary* public vectors,

.. math:: b \\sim U(\\{0,1\\}^n),\\qquad \\ell = \\mathrm{round}_1(\\langle w, b\\rangle \\bmod q)
          = 1[(\\langle w, b\\rangle \\bmod q) \\ge q/2],\\qquad w \\in \\mathbb{Z}_q^n,

is hard for large ``n``. Binary public vectors are not the standard LWR
distribution; :mod:`lowerbounds.attacks` shows what breaks small ``n``.

The layer (k = 2 tokens, ``d = n + 2``): reader ``t = 0``, the secret on
coordinates ``1..n``, offset ``p = n + 1``. With ``y = ⟨w, b⟩`` computed over the
integers (``0 <= y <= Σw``), the square wave ``y ↦ round_1(y mod q)`` switches at
``y* ∈ {⌈q/2⌉, q, q + ⌈q/2⌉, 2q, …}``. One head per switch ``y* <= Σw``:

.. math:: \\theta_i = \\lambda\\,(w, -\\tau_i \\text{ at } p),\\quad \\tau_i = y^*_i - \\tfrac12,\\qquad
          W_i = c_i e_t e_o^\\top,\\quad c_i = \\pm 1 \\text{ (up, down, up, …)}.

Where the tokens differ at ``p`` (``b_p = 1``, half of the inputs) head ``i``
puts weight ``σ(2λ(y − τ_i)) ≈ 1[y >= y*_i]`` on the query's own token, and the
alternating steps add up to the square wave, so (gadget identity)

.. math:: F(X)_{1o} = C x_{2t} + (x_{1t} - x_{2t})\\,\\mathrm{round}_1(y \\bmod q),\\qquad C = \\sum_i c_i,

up to :attr:`~lowerbounds.HardInstance.sharpness_error` (``≈ 4e^{−λ}``, exact in
mpmath). ``m ≈ 2Σw/q`` heads carry an ``n``-dimensional secret; for a uniform
secret ``Σw ≈ n(q − 1)/2``, so ``m ≈ n``.

On the other half every head's weight is ``σ(2λy)`` and ``F_{1o} = C x_{2t} +
(x_{1t} − x_{2t}) C σ(2λy)``: zero signal when ``C = 0`` (an even number of
switches), else it reveals only whether ``y = 0``.

The reduction, both ways (:func:`attention_samples`, :func:`lwr_predictor`):
LWR samples become samples of ``F`` on the signal half with no knowledge of
the secret (draw ``X`` with ``x_1 ⊙ x_2`` matching ``b``, write the gadget's
output from the label), and any predictor of ``F`` becomes an LWR predictor
(evaluate it on such an ``X`` with ``x_{1t} ≠ x_{2t}`` and read the label off
entry ``(1, o)``). The number of heads ``m`` is public (it is the
architecture); it tells an attacker ``Σw`` to within a window of width about
``q/2`` — ``log2(2n)`` bits, noticed and left in.

The smallest member, ``"one-slab"`` (:data:`NAMED_LWR`): ``n = 2``, ``q = 3``,
``w = (1, 2)``: ``y ∈ {0, 1, 2, 3}``, label 1 exactly on the slab ``y = 2``,
carved by two heads (up at 1.5, down at 2.5, ``C = 0``). Every secret with
``q <= Σw < q + ⌈q/2⌉`` gives a two-head, one-slab layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from learner.hints import SeedLike
from learner.validation import Boolean, Integer, Scale, check_int, check_rng, declare

from .gadget import _check_pair_inputs, gadget_layer, gadget_outputs
from .instance import MAX_G_EVALUATIONS, HardInstance, check_g_cost

__all__ = [
    "NAMED_LWR",
    "LWRInstance",
    "LWRLayout",
    "LWRParams",
    "LWRSamples",
    "PublicSamples",
    "attention_samples",
    "lwr_hard_instance",
    "lwr_predictor",
    "named_lwr_instance",
    "predictor_accuracy",
    "sample_lwr",
    "switch_count",
    "switch_points",
]

#: Default ``λ`` (ours): the output matches the formula to ``2e^{−15} ≈ 6.1e-7`` (``4e^{−15}`` where two
#: switches are adjacent, as for q = 3) — a clean rounding, with the error still visible in float64.
DEFAULT_SHARPNESS = 15.0

#: Named members (ours). ``"one-slab"`` is the smallest: two heads, one slab.
NAMED_LWR: dict[str, dict[str, Any]] = {
    "one-slab": {"secret": (1, 2), "q": 3,
                 "about": "n = 2, q = 3, w = (1, 2): label 1 only on y = 2; two heads (up at 1.5, down at 2.5)"},
}


@dataclass(frozen=True)
class LWRParams:
    """Parameters of 1-bit learning with rounding over binary public vectors.

    Parameters
    ----------
    n : int
        Secret dimension, ``n >= 1``.
    q : int
        Modulus, ``q >= 3`` (``q = 2`` would make the label the parity of a subset).
    rounded : bool
        ``True``: labels ``1[y mod q >= q/2]``; ``False``: the *unrounded*
        variant, labels ``y mod q`` (falls to linear algebra — the control
        showing that the rounding is what is assumed hard).

    See Also
    --------
    sample_lwr : Draws samples with these parameters.
    lwr_hard_instance : The attention layer that carries the rounded labels.
    lwr_cost : The lattice cost model at these parameters.

    Examples
    --------
    >>> params = LWRParams(3, 7)
    >>> params.label([0, 3, 4, 7, 11]).tolist()  # 1 where y mod 7 >= 3.5
    [0, 0, 1, 0, 1]
    >>> LWRParams(3, 7, rounded=False).label([0, 3, 4, 7, 11]).tolist()
    [0, 3, 4, 0, 4]
    """

    n: int
    q: int
    rounded: bool = True

    def label(self, y: ArrayLike) -> np.ndarray:
        """Labels of integer sums ``y``: ``1[y mod q >= q/2]`` (rounded) or ``y mod q``.

        Parameters
        ----------
        y : array_like of int
            Integer sums ``⟨w, b⟩`` (any integers; reduced mod ``q``).

        Returns
        -------
        ndarray of int64
            The labels, the shape of ``y``.
        """
        y = np.asarray(y, dtype=np.int64) % self.q
        return (2 * y >= self.q).astype(np.int64) if self.rounded else y

    def check_secret(self, secret: Sequence[int]) -> tuple[int, ...]:
        """``secret`` as a tuple of ints in ``[0, q)`` of length ``n``; errors name the bad entry.

        Parameters
        ----------
        secret : sequence of int
            A candidate ``w ∈ Z_q^n`` (integral floats are accepted).

        Returns
        -------
        tuple of int
            The secret.

        Raises
        ------
        TypeError
            A non-integer entry.
        ValueError
            An entry outside ``[0, q)`` or a length other than ``n``.
        """
        return _check_secret(secret, self.q, n=self.n)

    def draw_secret(self, *, rng: SeedLike = None) -> tuple[int, ...]:
        """A uniform secret in ``Z_q^n``.

        Parameters
        ----------
        rng : seed or Generator, optional
            Source of randomness.

        Returns
        -------
        tuple of int
            ``n`` entries in ``[0, q)``.
        """
        rng = check_rng(rng)
        return tuple(int(v) for v in rng.integers(0, self.q, self.n))


# The fields' rules, declared once on the constructor (also dataclasses.replace's): q >= 3, since q = 2 makes the
# label a parity. Replacing the generated __init__ is intended (it keeps its signature), so mypy's method-assign
# is silenced.
LWRParams.__init__ = declare(  # type: ignore[method-assign]
    n=Integer(), q=Integer(3), rounded=Boolean())(LWRParams.__init__)


def _check_secret(secret, q, *, n=None):
    try:
        values = [v for v in secret]
    except TypeError as exc:
        raise TypeError(f"`secret` must be a sequence of integers; got secret={secret!r}.") from exc
    if not values:
        raise ValueError("`secret` must have n >= 1 entries; got an empty secret.")
    out = []
    for j, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) and not (
                isinstance(v, (float, np.floating)) and float(v).is_integer()):
            raise TypeError(f"`secret` entries must be integers; got secret[{j}]={v!r}.")
        if not 0 <= int(v) < q:
            raise ValueError(f"`secret` entries must lie in Z_q = [0, {q}); got secret[{j}]={int(v)}.")
        out.append(int(v))
    if n is not None and len(out) != n:
        raise ValueError(f"`secret` must have n={n} entries; got {len(out)}.")
    return tuple(out)


@dataclass(frozen=True, eq=False)
class PublicSamples:
    """What an attacker sees: public vectors ``B`` (N, n) in {0, 1} and their labels (N,).

    Parameters
    ----------
    params : LWRParams
        The problem the samples come from.
    B : array_like of 0/1, shape (N, n)
        The public vectors, one per row (stored as int64).
    labels : array_like of int, shape (N,)
        Their labels: 0/1 (rounded) or in ``[0, q)`` (unrounded); stored as int64.

    Raises
    ------
    ValueError
        A ``B`` or ``labels`` of the wrong shape or with values outside those ranges.

    See Also
    --------
    sample_lwr : Draws them, with the secret kept apart.
    exhaustive_search : An attack that sees only these.
    attention_samples : Turns them into samples of the attention layer.

    Examples
    --------
    >>> pub = PublicSamples(LWRParams(2, 3), [[0, 1], [1, 1]], [1, 0])
    >>> len(pub), pub.consistent((1, 2)), pub.consistent((2, 1))  # (2, 1) gives y = 1 at b = (0, 1): label 0
    (2, True, False)
    """

    params: LWRParams
    B: np.ndarray
    labels: np.ndarray

    def __post_init__(self):
        B = np.asarray(self.B)
        labels = np.asarray(self.labels)
        if B.ndim != 2 or B.shape[1] != self.params.n:
            raise ValueError(f"`B` must have shape (N, n={self.params.n}); got {B.shape}.")
        if not np.all((B == 0) | (B == 1)):
            raise ValueError("`B` must contain only 0 and 1 (binary public vectors).")
        if labels.shape != (B.shape[0],):
            raise ValueError(f"`labels` must have shape ({B.shape[0]},); got {labels.shape}.")
        top = 2 if self.params.rounded else self.params.q
        if not np.all((labels >= 0) & (labels < top) & (labels == np.round(labels))):
            raise ValueError(f"`labels` must be integers in [0, {top}) for these params; got values outside.")
        object.__setattr__(self, "B", B.astype(np.int64))
        object.__setattr__(self, "labels", labels.astype(np.int64))

    def __len__(self):
        return self.B.shape[0]

    def take(self, n_samples: int) -> PublicSamples:
        """The first ``n_samples`` samples.

        Parameters
        ----------
        n_samples : int
            How many, ``0 <= n_samples <= len(self)``.

        Returns
        -------
        PublicSamples
            The first ``n_samples`` rows, with the same ``params``.
        """
        n_samples = check_int("n_samples", n_samples, minimum=0)
        if n_samples > len(self):
            raise ValueError(f"`n_samples` must be at most the {len(self)} available; got n_samples={n_samples}.")
        return PublicSamples(self.params, self.B[:n_samples], self.labels[:n_samples])

    def consistent(self, secret: Sequence[int]) -> bool:
        """Whether ``secret`` reproduces every label (rounding is deterministic).

        Parameters
        ----------
        secret : sequence of int
            A candidate ``w ∈ Z_q^n``.

        Returns
        -------
        bool
            ``params.label(B @ w)`` equals ``labels`` everywhere.
        """
        w = np.asarray(_check_secret(secret, self.params.q, n=self.params.n), dtype=np.int64)
        return bool(np.array_equal(self.params.label(self.B @ w), self.labels))


@dataclass(frozen=True, eq=False)
class LWRSamples:
    """A draw: the ``public`` samples an attacker gets, and the ``secret`` kept apart for scoring.

    Parameters
    ----------
    public : PublicSamples
        What attacks see.
    secret : tuple of int
        The secret ``w`` the labels come from.

    See Also
    --------
    sample_lwr : Produces it.
    AttackOutcome.recovered : Scores an attack against ``secret``.

    Examples
    --------
    >>> draw = sample_lwr(LWRParams(3, 7), 4, secret=(1, 5, 6), rng=0)
    >>> draw.secret, draw.public.B.shape, draw.public.consistent(draw.secret)
    ((1, 5, 6), (4, 3), True)
    """

    public: PublicSamples
    secret: tuple


def sample_lwr(params: LWRParams, n_samples: int, *, secret: Sequence[int] | None = None,
               rng: SeedLike = None) -> LWRSamples:
    """Draw LWR samples ``(b, round_1(⟨w, b⟩ mod q))`` with ``b`` uniform in ``{0,1}^n``.

    Parameters
    ----------
    params : LWRParams
        ``n``, ``q`` and whether labels are rounded.
    n_samples : int
        Samples, ``>= 1``.
    secret : sequence of int, optional
        ``w ∈ Z_q^n``; drawn uniformly with ``rng`` when omitted.
    rng : seed or Generator, optional
        Draws the secret (when omitted) and then the public vectors.

    Returns
    -------
    LWRSamples
        ``.public`` (what attacks see) and ``.secret`` (apart).

    See Also
    --------
    LWRParams : The problem's parameters and labels.
    exhaustive_search : Recovers the secret's label function at small ``n``.
    attention_samples : Turns the public samples into samples of the attention layer.

    Examples
    --------
    >>> draw = sample_lwr(LWRParams(4, 7), 5, secret=(1, 5, 0, 6), rng=0)
    >>> draw.public.B.shape, draw.public.consistent((1, 5, 0, 6))
    ((5, 4), True)
    """
    rng = check_rng(rng)
    if not isinstance(params, LWRParams):
        raise TypeError(f"`params` must be an LWRParams; got {type(params).__name__}.")
    n_samples = check_int("n_samples", n_samples, minimum=1)
    secret = params.draw_secret(rng=rng) if secret is None else params.check_secret(secret)
    B = rng.integers(0, 2, (n_samples, params.n))
    labels = params.label(B @ np.asarray(secret, dtype=np.int64))
    return LWRSamples(PublicSamples(params, B, labels), secret)


def switch_points(q: int, y_max: int) -> list[tuple[int, int]]:
    """The switches of ``y ↦ round_1(y mod q)`` in ``1..y_max``: one head of the LWE-style layer each.

    Parameters
    ----------
    q : int
        Modulus, ``>= 3``.
    y_max : int
        Largest sum, ``>= 0`` (``Σw`` for a secret ``w``).

    Returns
    -------
    list of tuple of int
        ``(y*, ±1)`` in increasing ``y*``: the label switches on at ``y*`` (``+1``) or off (``−1``).

    See Also
    --------
    switch_count : Their number, in constant time.
    lwr_hard_instance : Puts one head at each.

    Examples
    --------
    >>> switch_points(7, 12)  # on at 4, off at 7, on at 11
    [(4, 1), (7, -1), (11, 1)]
    """
    q = check_int("q", q, minimum=3)
    y_max = check_int("y_max", y_max, minimum=0)
    y = np.arange(y_max + 1)
    lab = (2 * (y % q) >= q).astype(int)
    jumps = np.flatnonzero(np.diff(lab)) + 1
    return [(int(s), int(lab[s] - lab[s - 1])) for s in jumps]


def switch_count(q: int, y_max: int) -> int:
    """``len(switch_points(q, y_max))`` without listing them: the label ``1[2(y mod q) >= q]`` turns on at every
    ``y ≡ ⌈q/2⌉`` and off at every ``y ≡ 0 (mod q)`` in ``1..y_max``, so the count is two arithmetic progressions'
    lengths (constant time and memory, for the cost table's large ``n``).

    Parameters
    ----------
    q : int
        Modulus, ``>= 3``.
    y_max : int
        Largest sum, ``>= 0``.

    Returns
    -------
    int
        The number of switches in ``1..y_max``: the heads of a member with ``Σw = y_max``.

    See Also
    --------
    switch_points : The switches themselves.
    cost_table : Reports it as the heads at each ``n``.

    Examples
    --------
    >>> switch_count(7, 100) == len(switch_points(7, 100))
    True
    """
    q = check_int("q", q, minimum=3)
    y_max = check_int("y_max", y_max, minimum=0)
    return sum((y_max - c) // q + 1 for c in ((q + 1) // 2, q) if c <= y_max)


@dataclass(frozen=True)
class LWRLayout:
    """The public description of a member: everything the reduction may use (not the secret).

    Parameters
    ----------
    n, q : int
        Secret dimension and modulus.
    d : int
        Token dimension, ``>= n + 2``.
    t, o, p : int
        Reader coordinate (0), output column and offset coordinate (``n + 1``).
    coords : tuple of int
        Where the secret sits: ``1..n``.
    m : int
        Heads (public: the architecture).
    total : float
        ``C = Σ c_i``; ``0`` for an even number of heads.
    sharpness : float
        ``λ``.
    thresholds : tuple of float
        The heads' ``τ_i = y*_i − ½``.

    See Also
    --------
    LWRInstance.layout : Where it comes from.
    attention_samples : Uses it to write samples of ``F`` from LWR samples.
    lwr_predictor : Uses it to read LWR labels off a predictor of ``F``.

    Examples
    --------
    >>> layout = lwr_hard_instance((1, 5, 6), 7).layout
    >>> layout.m, layout.total, layout.thresholds, layout.p
    (3, 1.0, (3.5, 6.5, 10.5), 4)
    """

    n: int
    q: int
    d: int
    t: int
    o: int
    p: int
    coords: tuple
    m: int
    total: float
    sharpness: float
    thresholds: tuple


@dataclass(frozen=True, eq=False)
class LWRInstance(HardInstance):
    """A member of the LWE-style family: a :class:`HardInstance` with target ``round_1(h mod q)``.

    The hidden sum is ``h = ⟨w, b⟩`` (the pattern is the secret on
    ``coords``); ``layout`` is the public part. Built by :func:`lwr_hard_instance`.

    Parameters
    ----------
    d, m, t, o : int
        Token dimension, heads (one per switch), reader coordinate (0) and output column.
    variant : str
        Always ``"steps"``.
    pattern : tuple of int
        The secret on ``coords``, zero elsewhere (length ``d``).
    lambdas, offsets, coefficients : tuple of float
        ``λ`` (every head), ``μ_i = λ τ_i`` and ``c_i = ±1`` (up, down, …).
    offset_coord : int
        The offset ``p = n + 1`` (always present).
    layer : AttentionLayer
        The float64 layer on two tokens.
    metadata : dict
        JSON-ready record of the construction, with its ``sharpness_error``.
    secret : tuple of int
        ``w ∈ Z_q^n``.
    q : int
        Modulus.
    coords : tuple of int
        The secret's coordinates, ``1..n``.
    sharpness : float
        ``λ``.

    See Also
    --------
    lwr_hard_instance : Builds a member.
    LWRLayout : Its public part.
    attention_attack : Learns it from the reduction's samples.

    Examples
    --------
    >>> inst = lwr_hard_instance((1, 5, 6), 7)  # Σw = 12: switches at 4, 7, 11
    >>> inst.n, inst.m, inst.total, inst.coords, inst.offset_coord
    (3, 3, 1.0, (1, 2, 3), 4)
    >>> inst.target([3, 4, 7, 11]).tolist()
    [0, 1, 0, 1]
    """

    offset_coord: int  # narrowed: a member always has its offset p = n + 1 (the field keeps its place)
    secret: tuple
    q: int
    coords: tuple
    sharpness: float

    def target(self, h: ArrayLike) -> np.ndarray:
        """``round_1(h mod q) = 1[h mod q >= q/2]``.

        Parameters
        ----------
        h : array_like of int
            Hidden sums ``⟨w, b⟩``.

        Returns
        -------
        ndarray of int64
            The rounded labels, the shape of ``h``.
        """
        return (2 * (np.asarray(h) % self.q) >= self.q).astype(np.int64)

    @property
    def n(self) -> int:
        """The secret's dimension."""
        return len(self.secret)

    @property
    def layout(self) -> LWRLayout:
        """The public :class:`LWRLayout` (no secret)."""
        return LWRLayout(n=self.n, q=self.q, d=self.d, t=self.t, o=self.o, p=self.offset_coord,
                         coords=self.coords, m=self.m, total=self.total, sharpness=self.sharpness,
                         thresholds=tuple(mu / lam for mu, lam in zip(self.offsets, self.lambdas, strict=True)))

    @property
    def params(self) -> LWRParams:
        """The :class:`LWRParams` of this member (rounded)."""
        return LWRParams(self.n, self.q)

    def public_vectors(self, X: ArrayLike) -> np.ndarray:
        """``b`` on the secret's coordinates: the LWR public vectors behind inputs ``X``.

        Parameters
        ----------
        X : array_like, shape (2, d) or (n_inputs, 2, d)
            Two-token Boolean inputs (entries ±1).

        Returns
        -------
        ndarray of int64, shape (n_inputs, n)
            ``1`` where the tokens differ on a secret coordinate, else ``0``.
        """
        X = _check_pair_inputs(X, self.d)
        return (X[:, 0, list(self.coords)] != X[:, 1, list(self.coords)]).astype(np.int64)


@declare(q=Integer(3), sharpness=Scale(), d=Integer(none=True), o=Integer(0), max_evaluations=Integer(none=True))
def lwr_hard_instance(secret: Sequence[int], q: int, *, sharpness: float = DEFAULT_SHARPNESS, d: int | None = None,
                      o: int = 0, max_evaluations: int | None = MAX_G_EVALUATIONS) -> LWRInstance:
    """The LWE-style member with secret ``w``: one head per switch of the square wave.

    Parameters
    ----------
    secret : sequence of int
        ``w ∈ Z_q^n`` (entries in ``[0, q)``), ``n >= 1``. Its sum must reach
        the first switch ``⌈q/2⌉`` (otherwise every label is 0 and there is
        nothing to carry).
    q : int
        Modulus, ``q >= 3``.
    sharpness : float
        ``λ``; the formula holds on the signal half to ``sharpness_error``
        (``≈ 2–4 e^{−λ}``, reported exactly).
    d : int, optional
        Token dimension, at least ``n + 2`` (default ``n + 2``); coordinates
        beyond ``n + 1`` are unused.
    o : int
        Output column (default 0).
    max_evaluations : int or None
        The exact sharpness error costs ``m (Σw + 1)`` mpmath head-terms
        (about 40 µs each: ``n = 200, q = 7`` takes ~5 s; ``q = 101`` would take
        minutes, ``q = 1009`` hours). Beyond this many (default
        :data:`~lowerbounds.instance.MAX_G_EVALUATIONS` = 5·10⁶, ~3 min) the
        instance is refused before any work with the size and the estimated
        time; ``None`` removes the limit. The estimate is logged at INFO when
        it exceeds 5 s.

    Returns
    -------
    LWRInstance
        ``layer`` on ``k = 2`` tokens with ``m`` heads, ``layout`` (public),
        ``sharpness_error``, ``metadata`` (provenance: construction ours,
        hardness assumed).

    Raises
    ------
    ValueError
        A bad secret, ``d < n + 2``, ``o >= d``, a secret whose sum never reaches the first switch, or an exact
        table beyond ``max_evaluations``.

    See Also
    --------
    named_lwr_instance : The named members.
    sample_lwr : LWR samples of the same secret.
    attention_samples : The reduction from those samples to samples of the layer.
    sq_hard_instance : The SQ family, built from the same gadget.

    Examples
    --------
    >>> inst = lwr_hard_instance((1, 2), 3)       # the smallest member, "one-slab"
    >>> inst.m, inst.total, f"{inst.sharpness_error:.3g}"   # 4e^{-15}: its two switches are adjacent
    (2, 0.0, '1.22e-06')
    """
    params = LWRParams(len(secret) if hasattr(secret, "__len__") else 1, q)
    w = _check_secret(secret, params.q)
    n = len(w)
    lam = sharpness
    d = n + 2 if d is None else d
    if d < n + 2:
        raise ValueError(f"`d` must be at least n + 2 = {n + 2} (reader, n secret coordinates, offset); got d={d}.")
    if o >= d:
        raise ValueError(f"`o` must be a coordinate in [0, d) with d={d}; got o={o}.")
    switches = switch_points(params.q, sum(w))
    if not switches:
        raise ValueError(f"the secret's sum Σw = {sum(w)} never reaches the first switch ⌈q/2⌉ = {-(-params.q // 2)}: "
                         f"every label is 0 (secret={list(w)}, q={params.q}).")
    check_g_cost(len(switches), sum(w), max_evaluations, what=f"the LWE-style instance (n={n}, q={params.q})")
    t, p, coords = 0, n + 1, tuple(range(1, n + 1))
    taus = [s - 0.5 for s, _ in switches]
    coeffs = np.array([float(sign) for _, sign in switches])
    m = len(switches)
    pattern = np.zeros(d, dtype=np.int64)
    pattern[list(coords)] = w
    thetas = np.array([lam * pattern.astype(float) for _ in range(m)])
    thetas[:, p] = [-lam * tau for tau in taus]
    layer = gadget_layer(thetas, coeffs, t=t, o=o)
    metadata = {
        "family": "lwr-two-token",
        "variant": "steps",
        "n": n, "q": params.q, "d": d, "m": m, "k": 2, "t": t, "o": o, "offset": p, "coords": list(coords),
        "secret": list(w), "sharpness": lam, "thresholds": taus, "coefficients": [float(c) for c in coeffs],
        "construction": (f"Θ_i = λ diag(w at coords 1..n, −τ_i at p={p}), λ = {lam}; τ_i = y*_i − 1/2 at the "
                         f"switches y* of y ↦ 1[y mod q >= q/2] up to Σw = {sum(w)}; c = ±1 (up/down)"),
        "formula": "F(X)[0, o] = C x_2t + (x_1t − x_2t) round_1(⟨w, b⟩ mod q) where x_1p ≠ x_2p",
        "provenance": ("construction ours (derived for this toolkit); hardness is an assumption (1-bit LWR with "
                       "binary public vectors); the paper's statement is only that an LWE variant rules out "
                       "poly-time learning"),
    }
    inst = LWRInstance(d=d, m=m, t=t, o=o, variant="steps", pattern=tuple(int(v) for v in pattern),
                       lambdas=(lam,) * m, offsets=tuple(lam * tau for tau in taus),
                       coefficients=tuple(float(c) for c in coeffs), offset_coord=p, layer=layer,
                       metadata=metadata, secret=w, q=params.q, coords=coords, sharpness=lam)
    metadata["sharpness_error"] = inst.sharpness_error
    return inst


def named_lwr_instance(name: str, *, sharpness: float = DEFAULT_SHARPNESS) -> LWRInstance:
    """A member from :data:`NAMED_LWR` (``"one-slab"``: the smallest, two heads).

    Parameters
    ----------
    name : str
        A key of :data:`NAMED_LWR`.
    sharpness : float
        ``λ`` (default ``DEFAULT_SHARPNESS`` = 15).

    Returns
    -------
    LWRInstance
        :func:`lwr_hard_instance` of the named secret and modulus, with ``metadata["name"]``.

    Raises
    ------
    ValueError
        An unknown name.

    See Also
    --------
    lwr_hard_instance : Any member.
    attention_attack : The learners on the one-slab member (``python -m lowerbounds lwe-attack --attention``).

    Examples
    --------
    >>> inst = named_lwr_instance("one-slab")
    >>> inst.secret, inst.q, inst.m, inst.layout.thresholds
    ((1, 2), 3, 2, (1.5, 2.5))
    """
    if name not in NAMED_LWR:
        raise ValueError(f"`name` must be one of {sorted(NAMED_LWR)}; got name={name!r}.")
    entry = NAMED_LWR[name]
    inst = lwr_hard_instance(entry["secret"], entry["q"], sharpness=sharpness)
    inst.metadata["name"] = name
    return inst


# -- the reduction, both ways ----------------------------------------------------------

def _check_layout(layout):
    if not isinstance(layout, LWRLayout):
        raise TypeError(f"`layout` must be an LWRLayout (LWRInstance.layout); got {type(layout).__name__}.")
    return layout


def _inputs_for(B, layout, rng, *, reader_differs):
    """Inputs ``X`` (N, 2, d) with ``x_1 ⊙ x_2 = 1 − 2b`` on the secret's coordinates and ``x_{1p} ≠ x_{2p}``."""
    N = B.shape[0]
    x1 = rng.choice([-1.0, 1.0], size=(N, layout.d))
    z = rng.choice([-1.0, 1.0], size=(N, layout.d))
    z[:, list(layout.coords)] = 1.0 - 2.0 * B
    z[:, layout.p] = -1.0
    if reader_differs:
        x1[:, layout.t] = 1.0
        z[:, layout.t] = -1.0
    return np.stack([x1, x1 * z], axis=1)


def attention_samples(samples: PublicSamples, layout: LWRLayout, *, half: str = "signal",
                      rng: SeedLike = None) -> tuple[np.ndarray, np.ndarray]:
    """LWR samples → samples ``(X, Y)`` of the member's ``F`` (no secret used).

    Each ``(b, ℓ)`` becomes an input pair with ``x_1`` uniform, ``x_1 ⊙ x_2 =
    1 − 2b`` on the secret's coordinates, ``x_{1p} ≠ x_{2p}`` and the rest
    uniform, and the gadget's output with factor ``ℓ``
    (:func:`~lowerbounds.gadget.gadget_outputs`). ``X`` is then uniform on the
    signal half and ``Y = F(X)`` up to the member's ``sharpness_error``.

    Parameters
    ----------
    samples : PublicSamples
        Rounded LWR samples with the layout's ``n`` and ``q``.
    layout : LWRLayout
        The member's public part (:attr:`LWRInstance.layout`).
    half : {"signal", "all"}
        ``"all"``: uniform inputs over both halves; each example is on the
        signal half with probability 1/2 (using the next LWR sample), else
        ``x_{1p} = x_{2p}`` where ``F = 0`` exactly. Needs ``C = 0`` (an even
        number of heads): otherwise ``F`` there depends on whether ``y = 0``.
    rng : seed or Generator, optional
        Draws the free coordinates (and, with ``half="all"``, which examples are on the signal half).

    Returns
    -------
    X : ndarray, shape (N, 2, d)
        The inputs, one per LWR sample.
    Y : ndarray, shape (N, 2, d)
        Their labels, ``F(X)`` up to ``sharpness_error``. With ``half="all"``
        about half of the LWR samples are used.

    Raises
    ------
    ValueError
        Samples whose ``n``, ``q`` or rounding differ from the layout's, a bad ``half``, or ``half="all"`` with
        ``C ≠ 0``.

    See Also
    --------
    lwr_predictor : The reduction the other way.
    attention_attack : Feeds these samples to a learner.
    gadget_outputs : Writes ``Y`` from the labels.

    Examples
    --------
    >>> import numpy as np
    >>> inst = lwr_hard_instance((1, 5, 6), 7)
    >>> draw = sample_lwr(inst.params, 100, secret=inst.secret, rng=0)
    >>> X, Y = attention_samples(draw.public, inst.layout, rng=1)  # the secret is not used
    >>> X.shape, bool(np.abs(inst.layer(X) - Y).max() < 1e-5), bool((inst.public_vectors(X) == draw.public.B).all())
    ((100, 2, 5), True, True)
    """
    rng = check_rng(rng)
    layout = _check_layout(layout)
    if not isinstance(samples, PublicSamples):
        raise TypeError(f"`samples` must be PublicSamples; got {type(samples).__name__}.")
    if (samples.params.n, samples.params.q, samples.params.rounded) != (layout.n, layout.q, True):
        raise ValueError(f"`samples` must be rounded LWR samples with n={layout.n}, q={layout.q}; "
                         f"got {samples.params}.")
    if half not in ("signal", "all"):
        raise ValueError(f"`half` must be 'signal' or 'all'; got half={half!r}.")
    if half == "signal":
        X = _inputs_for(samples.B, layout, rng, reader_differs=False)
        return X, gadget_outputs(X, samples.labels.astype(float), t=layout.t, o=layout.o, total=layout.total)
    if layout.total != 0.0:
        raise ValueError(f"half='all' needs C = 0 (even number of heads); this member has C={layout.total} "
                         f"(m={layout.m}): off the signal half F depends on whether ⟨w, b⟩ = 0.")
    N = len(samples)
    on = rng.random(N) < 0.5
    n_on = int(on.sum())
    X = np.empty((N, 2, layout.d))
    X[on] = _inputs_for(samples.B[:n_on], layout, rng, reader_differs=False)
    x1 = rng.choice([-1.0, 1.0], size=(N - n_on, layout.d))
    z = rng.choice([-1.0, 1.0], size=(N - n_on, layout.d))
    z[:, layout.p] = 1.0
    X[~on] = np.stack([x1, x1 * z], axis=1)
    g = np.zeros(N)
    g[on] = samples.labels[:n_on]
    return X, gadget_outputs(X, g, t=layout.t, o=layout.o, total=0.0)


def lwr_predictor(predict: Callable[[np.ndarray], ArrayLike], layout: LWRLayout, *, votes: int = 1,
                  rng: SeedLike = None) -> Callable[[ArrayLike], np.ndarray]:
    """A predictor of ``F`` → a predictor of LWR labels.

    For each public vector ``b`` build ``X`` on the signal half with
    ``x_{1t} = 1, x_{2t} = −1`` (so ``F_{1o} = −C + 2ℓ``), read
    ``ℓ̂ = (F̂_{1o} + C)/2`` and round at 1/2; with ``votes > 1`` the estimate is
    averaged over that many random fillings of the free coordinates first.

    Parameters
    ----------
    predict : callable
        ``X (N, 2, d) -> Y (N, 2, d)``, e.g. an :class:`~learner.AttentionLayer`.
    layout : LWRLayout
        The member's public part.
    votes : int
        Random fillings averaged per public vector (default 1).
    rng : seed or Generator, optional
        Draws the fillings; the returned predictor keeps drawing from it.

    Returns
    -------
    callable
        ``B (N, n) -> labels (N,)`` in {0, 1}; it raises ValueError for a ``B`` that is not 0/1 of shape
        (N, n).

    See Also
    --------
    attention_samples : The reduction the other way.
    predictor_accuracy : Scores the predictor on LWR samples.

    Examples
    --------
    >>> inst = lwr_hard_instance((1, 5, 6), 7)
    >>> test = sample_lwr(inst.params, 1000, secret=inst.secret, rng=1).public
    >>> predictor_accuracy(lwr_predictor(inst.layer, inst.layout, rng=0), test)  # the true layer: no mistake
    1.0
    """
    layout = _check_layout(layout)
    if not callable(predict):
        raise TypeError(f"`predict` must be callable X -> Y; got {type(predict).__name__}.")
    votes = check_int("votes", votes, minimum=1)
    rng = check_rng(rng)

    def predictor(B):
        B = np.asarray(B)
        if B.ndim != 2 or B.shape[1] != layout.n or not np.all((B == 0) | (B == 1)):
            raise ValueError(f"`B` must be a 0/1 array of shape (N, n={layout.n}); got shape {B.shape}.")
        est = np.zeros(B.shape[0])
        for _ in range(votes):
            X = _inputs_for(B, layout, rng, reader_differs=True)
            Y = np.asarray(predict(X))
            est += (Y[:, 0, layout.o] + layout.total) / 2.0
        return (est / votes >= 0.5).astype(np.int64)

    return predictor


def predictor_accuracy(predictor: Callable[[np.ndarray], ArrayLike], samples: PublicSamples) -> float:
    """Fraction of ``samples`` whose label ``predictor(B)`` gets right.

    Parameters
    ----------
    predictor : callable
        ``B (N, n) -> labels (N,)``, e.g. from :func:`lwr_predictor`.
    samples : PublicSamples
        The labelled public vectors to score on.

    Returns
    -------
    float
        The accuracy, in ``[0, 1]``.

    See Also
    --------
    lwr_predictor : Makes an LWR predictor from a predictor of ``F``.
    attention_attack : Reports it for a learned layer.

    Examples
    --------
    >>> import numpy as np
    >>> test = sample_lwr(LWRParams(3, 7), 1000, secret=(1, 5, 6), rng=1).public
    >>> always_zero = lambda B: np.zeros(len(B), dtype=int)
    >>> bool(predictor_accuracy(always_zero, test) == 1 - test.labels.mean())  # the share of label 0
    True
    """
    if not isinstance(samples, PublicSamples):
        raise TypeError(f"`samples` must be PublicSamples; got {type(samples).__name__}.")
    return float(np.mean(np.asarray(predictor(samples.B)) == samples.labels))
