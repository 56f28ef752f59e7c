"""A statistical-query oracle for the two-token targets (simulation ours, standard SQ model).

``SQOracle(target, tolerance=τ)`` answers ``E[φ(X, F(X))]`` within ``τ`` under
uniform Boolean ``X`` (k = 2), counting queries. Adversaries:

* ``"reference"`` — answer with the value under the *reference distribution*
  (the shared part of the family: the ``S``-dependent factor ``g`` replaced by
  an independent draw, so the answer does not depend on ``S``) whenever it is
  within ``τ`` of the truth; otherwise the truth. This is the adversary of SQ
  lower bounds.
* ``"random"`` — the truth plus uniform noise in ``[−τ, τ]``.

Queries are either a :class:`CharacterQuery` (answered exactly from the
target's Fourier coefficients — what the simulator uses) or a callable
``φ(X, Y) -> values in [−1, 1]`` on ``X, Y`` of shape (n, 2, d): exact by
enumerating the ``4^d`` inputs for ``d <= 8`` (and the ``r + 1`` values of ``h``
for the reference), Monte Carlo beyond with ``⌈(10/τ)²⌉`` samples (standard
error ``<= τ/10``; then the answer is not exact and the result says so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import comb

import numpy as np
from numpy.typing import ArrayLike

from learner import enumerate_cube, sample_inputs
from learner.hints import SeedLike
from learner.validation import check_int, check_positive_float, check_rng

from .gadget import _check_pair_inputs, check_coordinate_set
from .sq import ParityInstance

__all__ = ["CharacterQuery", "SQOracle", "SparseLinearTarget"]

ADVERSARIES = ("reference", "random")
MAX_ENUM_D = 8  # ours, not tuned: exact answers by enumeration up to d = 8, as lowerbounds.family


@dataclass(frozen=True)
class CharacterQuery:
    """``φ(X, Y) = ½(x_{1t} − x_{2t}) χ_U(x_1 ⊙ x_2) · Y_{1o} / B`` (``B`` the label bound, so ``|φ| <= 1``).

    Its exact value is ``(ĝ(U) − ½C·1[U = ∅]) / B`` for ``t ∉ U``: the correlation
    of the label with one Fourier character.

    Parameters
    ----------
    subset : iterable of int
        The character's coordinates ``U`` (integers ``>= 0``; kept as a frozenset, so repeats collapse). The
        oracle refuses a ``U`` that holds the reader ``t`` or leaves ``[0, d)``.

    See Also
    --------
    SQOracle : Answers these queries exactly from the target's Fourier coefficients.
    correlational_search : The learner that asks them degree by degree.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import enumerate_cube
    >>> from lowerbounds import sq_hard_instance
    >>> inst = sq_hard_instance(6, 3, subset=(2, 4))
    >>> X = np.concatenate(list(enumerate_cube(2, 6)))  # all 4^6 inputs
    >>> phi = CharacterQuery({2, 4}).evaluate(X, inst.layer(X), t=0, o=0, bound=inst.label_bound)
    >>> round(float(phi.mean()), 12), bool(np.abs(phi).max() <= 1 + 1e-12)  # ĝ(S)/B = 1/4
    (0.25, True)
    """

    subset: frozenset

    def __init__(self, subset: Iterable[int]) -> None:
        object.__setattr__(self, "subset", frozenset(check_coordinate_set("subset", subset)))

    def evaluate(self, X: ArrayLike, Y: ArrayLike, *, t: int, o: int, bound: float) -> np.ndarray:
        """Values of ``φ`` on inputs ``X`` with labels ``Y`` (for checks against enumeration).

        Parameters
        ----------
        X : array_like, shape (2, d) or (n, 2, d)
            Two-token Boolean inputs (entries ±1).
        Y : array_like, shape (n, 2, d)
            Their labels ``F(X)``.
        t, o : int
            The target's reader coordinate and output column.
        bound : float
            ``B``, the label bound that scales ``φ`` into ``[−1, 1]``.

        Returns
        -------
        ndarray, shape (n,)
            ``½(x_{1t} − x_{2t}) χ_U(x_1 ⊙ x_2) Y_{1o} / B`` per input.
        """
        X = _check_pair_inputs(X)
        z = X[:, 0] * X[:, 1]
        chi = np.prod(z[:, sorted(self.subset)], axis=1) if self.subset else np.ones(X.shape[0])
        return 0.5 * (X[:, 0, t] - X[:, 1, t]) * chi * np.asarray(Y)[:, 0, o] / bound


class SparseLinearTarget:
    """Negative control: ``F_{1o} = C x_{2t} + (x_{1t} − x_{2t}) Σ_{j∈S} z_j / √|S|`` (not SQ-hard).

    Same two-token format and shared part (``C = 2``) as the hard family, but
    the ``S``-dependent factor is linear in ``z``: its members overlap in
    low-degree characters, so a correlational search finds ``S`` coordinate by
    coordinate. Only :class:`CharacterQuery` queries are supported.

    Parameters
    ----------
    d : int
        Token dimension, ``>= 2``.
    subset : iterable of int
        The hidden ``S``: distinct coordinates in ``[0, d)`` without ``t``, fewer than ``d``.
    t, o : int
        Reader coordinate and output column (default 0, 0).

    Attributes
    ----------
    offset_coord : None
        No offset (the interface of :class:`ParityInstance`).
    total : float
        ``C = 2``.
    label_bound : float
        ``B = 2 + 2√|S|``, the largest ``|F_{1o}|``.

    See Also
    --------
    SQOracle : The oracle that answers queries about it.
    simulate_queries : Runs the search on it with ``family="control"``.
    SparseLinearInstance : The same kind of control realised as a layer.

    Examples
    --------
    >>> target = SparseLinearTarget(8, (2, 5))
    >>> round(float(target.fourier({2})), 6), target.fourier({2, 5})  # weight 1/√2 on each degree-1 character
    (0.707107, 0.0)
    >>> oracle = SQOracle(target, tolerance=0.05)
    >>> round(oracle.query(CharacterQuery({2})), 4), oracle.query(CharacterQuery({3}))
    (0.1464, 0.0)
    """

    def __init__(self, d: int, subset: Iterable[int], *, t: int = 0, o: int = 0) -> None:
        self.d = check_int("d", d, minimum=2)
        self.t, self.o = check_int("t", t, minimum=0), check_int("o", o, minimum=0)
        S = check_coordinate_set("subset", subset)
        if not S or len(set(S)) != len(S) or S[0] < 0 or S[-1] >= d or self.t in S or len(S) >= d:
            raise ValueError(f"`subset` must be distinct coordinates in [0, d={d}) without t={t}; got {list(S)}.")
        self.subset = S
        self.offset_coord = None  # no offset: the same interface as ParityInstance
        self.total = 2.0
        self.label_bound = 2.0 + 2.0 * np.sqrt(len(S))

    def fourier(self, U: Iterable[int]) -> float:
        """Fourier coefficient at ``χ_U(z)`` of the factor ``g(z) = Σ_{j∈S} z_j / √|S|``.

        Parameters
        ----------
        U : iterable of int
            Coordinates of the character.

        Returns
        -------
        float
            ``1/√|S|`` for ``U = {j}`` with ``j ∈ S``, zero otherwise.
        """
        U = frozenset(U)
        return 1.0 / np.sqrt(len(self.subset)) if len(U) == 1 and next(iter(U)) in self.subset else 0.0

    def reference_fourier(self, U: Iterable[int]) -> float:
        """Coefficient of the ``S``-independent part of ``g``: zero, since ``g`` has none.

        Parameters
        ----------
        U : iterable of int
            Coordinates of the character (unused).

        Returns
        -------
        float
            ``0.0``.
        """
        return 0.0


class SQOracle:
    """Answers statistical queries about one target within ``tolerance``; counts them.

    Parameters
    ----------
    target : ParityInstance or SparseLinearTarget
        What the queries are about.
    tolerance : float
        ``τ > 0``: every answer is within ``τ`` of the truth.
    adversary : {"reference", "random"}
        How answers deviate from the truth (module docstring); default ``"reference"``, the SQ lower bounds'.
    rng : seed or Generator, optional
        For the random adversary and Monte Carlo answers; :meth:`reset` restarts it from this seed.

    Attributes
    ----------
    queries : int
        Queries answered since construction or the last :meth:`reset`.
    label_bound : float
        ``B``, the target's largest ``|F_{1o}|``.
    last_exact : bool
        Whether the last :meth:`exact_value` was exact (False after a Monte Carlo estimate).

    See Also
    --------
    CharacterQuery : The queries answered exactly from Fourier coefficients.
    correlational_search : A learner run against the oracle.
    HardFamily.query_lower_bound : How many queries any such learner needs.

    Examples
    --------
    >>> from lowerbounds import sq_hard_instance
    >>> oracle = SQOracle(sq_hard_instance(12, 3, subset=(3, 7)), tolerance=0.05)
    >>> oracle.query(CharacterQuery({3, 8}))  # another subset: the shared answer
    0.0
    >>> round(oracle.query(CharacterQuery({3, 7})), 12)  # the hidden one: 1/B, B = 4
    0.25
    >>> oracle.queries
    2
    """

    def __init__(self, target: ParityInstance | SparseLinearTarget, *, tolerance: float, adversary: str = "reference",
                 rng: SeedLike = None) -> None:
        if not isinstance(target, (ParityInstance, SparseLinearTarget)):
            raise TypeError("`target` must be a ParityInstance (sq_hard_instance) or SparseLinearTarget; "
                            f"got {type(target).__name__}.")
        self.target = target
        self.tolerance = check_positive_float("tolerance", tolerance)
        if adversary not in ADVERSARIES:
            raise ValueError(f"`adversary` must be one of {ADVERSARIES}; got adversary={adversary!r}.")
        self.adversary = adversary
        self._seed = rng
        self.rng = check_rng(rng)
        self.queries = 0
        self.label_bound = float(target.label_bound)
        self._coef = self._nonzero_fourier(target)
        self.last_exact = True

    @staticmethod
    def _nonzero_fourier(target):
        """Every non-zero Fourier coefficient of ``g`` (they live on subsets of ``S`` ∪ {p})."""
        from itertools import combinations

        base = list(target.subset) + ([target.offset_coord] if target.offset_coord is not None else [])
        coef, ref = {}, {}
        for size in range(len(base) + 1):
            for combo in combinations(base, size):
                U = frozenset(combo)
                c, rc = float(target.fourier(U)), float(target.reference_fourier(U))
                if c != 0.0:
                    coef[U] = c
                if rc != 0.0:
                    ref[U] = rc
        return coef, ref

    def reset(self) -> None:
        """Zero the query count and restart the random stream."""
        self.queries = 0
        self.rng = np.random.default_rng(self._seed)

    def exact_value(self, query: CharacterQuery | Callable[[np.ndarray, np.ndarray], ArrayLike]) -> tuple[float, float]:
        """``(truth, reference)`` for ``query`` (exact where the module docstring says so); counts nothing.

        Parameters
        ----------
        query : CharacterQuery or callable
            A character, or ``φ(X, Y)`` returning one value in ``[−1, 1]`` per input for ``X, Y`` of shape
            (n, 2, d) (a :class:`ParityInstance` target only).

        Returns
        -------
        truth : float
            ``E[φ(X, F(X))]`` under uniform Boolean inputs.
        reference : float
            The same with the ``S``-dependent factor replaced by the reference distribution's.

        Raises
        ------
        ValueError
            A character holding ``t`` or outside ``[0, d)``, or a callable whose values leave ``[−1, 1]``.
        TypeError
            A query of another kind, or a callable query about a :class:`SparseLinearTarget`.
        """
        if isinstance(query, CharacterQuery):
            t, d = self.target.t, self.target.d
            if t in query.subset:
                raise ValueError(f"a CharacterQuery's subset must not contain the reader t={t}.")
            if query.subset and max(query.subset) >= d:
                raise ValueError(f"a CharacterQuery's subset must lie in [0, d) with d={d}; "
                                 f"got subset={sorted(query.subset)}.")
            coef, ref = self._coef
            shared = -0.5 * self.target.total if not query.subset else 0.0
            B = self.label_bound
            self.last_exact = True
            return (shared + coef.get(query.subset, 0.0)) / B, (shared + ref.get(query.subset, 0.0)) / B
        if callable(query):
            if not isinstance(self.target, ParityInstance):
                raise TypeError("callable queries need a ParityInstance target "
                                "(the control answers CharacterQuery only).")
            return self._callable_value(query)
        raise TypeError(f"a query must be a CharacterQuery or a callable φ(X, Y); got {type(query).__name__}.")

    def _callable_value(self, phi):
        inst = self.target
        assert isinstance(inst, ParityInstance), "value() sends callables for a ParityInstance only"
        r = len(inst.subset)
        G0, G1 = ([float(v) for v in row] for row in inst.g_table())
        weights = [comb(r, h) / 2**r for h in range(r + 1)]

        def batch_values(X):
            Y = inst.layer(X)
            truth = self._checked(phi(X, Y))
            bp = (X[:, 0, inst.offset_coord] != X[:, 1, inst.offset_coord]) if inst.offset_coord is not None \
                else np.zeros(X.shape[0], dtype=bool)
            ref = np.zeros(X.shape[0])
            for h, w in enumerate(weights):
                g = np.where(bp, G1[h], G0[h])
                ref += w * self._checked(phi(X, inst.outputs_given_g(X, g)))
            return truth.sum(), ref.sum(), X.shape[0]

        if inst.d <= MAX_ENUM_D:
            parts = [batch_values(X) for X in enumerate_cube(2, inst.d)]
            self.last_exact = True
        else:
            n = int(np.ceil((10.0 / self.tolerance) ** 2))
            parts = [batch_values(sample_inputs(min(65536, n - s), 2, inst.d, rng=self.rng))
                     for s in range(0, n, 65536)]
            self.last_exact = False
        total = sum(p[2] for p in parts)
        return sum(p[0] for p in parts) / total, sum(p[1] for p in parts) / total

    @staticmethod
    def _checked(values):
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or not np.all(np.isfinite(values)) or np.abs(values).max(initial=0.0) > 1.0 + 1e-12:
            raise ValueError("a query φ(X, Y) must return one finite value in [−1, 1] per input.")
        return values

    def query(self, query: CharacterQuery | Callable[[np.ndarray, np.ndarray], ArrayLike]) -> float:
        """One statistical query, counted in ``queries``.

        Parameters
        ----------
        query : CharacterQuery or callable
            As in :meth:`exact_value`.

        Returns
        -------
        float
            The adversary's answer, within ``τ`` of the truth: the reference value when it is that close
            (``"reference"``), else the truth; or the truth plus uniform noise in ``[−τ, τ]`` (``"random"``).
        """
        truth, ref = self.exact_value(query)
        self.queries += 1
        if self.adversary == "reference":
            return ref if abs(truth - ref) <= self.tolerance else truth
        return truth + self.rng.uniform(-self.tolerance, self.tolerance)
