"""The SQ family over all hidden subsets: exact correlations, statistical dimension, query bounds.

All members share ``d, m, t, o`` (and ``p`` for steps); the hidden subset ranges
over the ``r = m − 1``-subsets of the ``n`` free coordinates (``n = d − 1``, or
``d − 2`` with an offset). A member's *deviation* is its entry ``(1, o)`` minus
the part every member shares, ``C x_{2t} + (x_{1t} − x_{2t})(A_0 + B_0 z_p)``:

.. math:: \\mathrm{dev}_S = (x_{1t} - x_{2t}) \\Big(\\sum_{\\emptyset \\ne U \\subseteq S} A_{|U|} \\chi_U(z)
          + z_p \\sum_{\\emptyset \\ne U \\subseteq S} B_{|U|} \\chi_U(z)\\Big),

with ``A_l, B_l`` the Fourier coefficients of ``½(G_0 ± G_1)`` (see
:meth:`ParityInstance.fourier`). Hence (closed form, ours) for ``|S ∩ S'| = j``

.. math:: E[\\mathrm{dev}_S \\mathrm{dev}_{S'}] = 2 \\sum_{l=1}^{j} \\binom{j}{l} (A_l^2 + B_l^2),

zero for the interpolation variant unless ``S = S'`` (there ``A_l = δ_{lr}``,
``B = 0``). ``exact_correlations`` checks this against enumeration of the
layers themselves for small ``d``.

Bounds (standard arguments, stated for this family): the statistical dimension
at average correlation ``γ̄`` (Feldman et al., 2017) is at least
``⌊N γ̄ / (1 + R)⌋`` with ``R`` the largest row sum of ``|ρ|`` off the diagonal
(exact, ``⌊N γ̄⌋``, when ``R = 0``). A correlational query
``φ = ψ(X) F_{1o}/B`` with ``|ψ| <= 1`` and ``B = max|F_{1o}|`` can be answered
with the shared part for all but ``λ_max / (Bτ)²`` members (Bessel's
inequality, ``λ_max <= s(1 + R)`` with ``s = E[dev²]``), so identifying ``S``
takes at least ``(N − 1)(Bτ)² / λ_max`` queries. For the interpolation variant
the label takes two values given ``X``, so every bounded query is affine in the
label and the same count holds for general SQ.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations
from math import comb
from typing import TYPE_CHECKING, Any

import mpmath
import numpy as np

from learner import enumerate_cube
from learner.hints import SeedLike
from learner.validation import Integer, Real, check_int, check_positive_float, check_rng, declare

from .sq import MP_DPS, VARIANTS, ParityInstance, default_offset, sq_hard_instance

if TYPE_CHECKING:
    import networkx

__all__ = ["HardFamily"]

#: Largest family materialised as a list or a graph (ours, not tuned: a guard on memory).
MAX_MEMBERS = 20_000
#: Enumeration is over 4^d inputs (ours, not tuned: 4^8 = 65,536 at most, a guard on time).
MAX_ENUM_D = 8


class HardFamily:
    """All members ``sq_hard_instance(d, m, S, ...)`` for ``|S| = m − 1``.

    Parameters
    ----------
    d, m : int
        Token dimension (``d >= 3``) and heads (``m >= 2``): the hidden subsets have ``m − 1`` coordinates.
    variant : {"interpolation", "steps"}
        The members' variant (:func:`~lowerbounds.sq.sq_hard_instance`).
    t, o, offset, steepness : int, int, int or None, float
        As in :func:`~lowerbounds.sq.sq_hard_instance`, shared by all members; a steps family's default offset
        is ``d − 1`` (``d − 2`` when ``t = d − 1``), and the hidden subsets avoid it.

    Raises
    ------
    ValueError
        A bad variant, an ``offset`` without ``variant="steps"``, or ``m − 1`` larger than the free coordinates.

    See Also
    --------
    sq_hard_instance : One member.
    ParityInstance.fourier : The Fourier coefficients the closed forms are built from.
    simulate_queries : A correlational SQ learner run against members.

    Examples
    --------
    >>> fam = HardFamily(10, 3)
    >>> fam.size, fam.overlap_correlation(1) < 1e-30  # zero up to the float64 coefficients
    (36, True)
    >>> fam.statistical_dimension(0.1)
    3
    """

    @declare(d=Integer(3), m=Integer(2))  # sq_hard_instance's ranges
    def __init__(self, d: int, m: int, *, variant: str = "interpolation", t: int = 0, o: int = 0,
                 offset: int | None = None, steepness: float = 40.0) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"`variant` must be one of {VARIANTS}; got variant={variant!r}.")
        # A template member validates t, o, offset and fixes the shared numbers.
        kwargs: dict[str, Any] = {"variant": variant, "t": t, "o": o}
        if variant == "steps":
            offset = default_offset(d, t) if offset is None else offset
            kwargs.update(offset=offset, steepness=steepness)
        elif offset is not None:
            raise ValueError(f"`offset` is for variant='steps' only; got offset={offset}.")
        pool = [j for j in range(d) if j != t and j != offset]
        if m - 1 > len(pool):
            raise ValueError(f"m − 1 = {m - 1} hidden coordinates do not fit in the {len(pool)} free coordinates "
                             f"of d={d} (variant {variant!r}); use d >= {m - 1 + d - len(pool)} or a smaller m.")
        template = sq_hard_instance(d, m, subset=pool[-(m - 1):], **kwargs)
        self.template = template
        self.d, self.m, self.variant = template.d, template.m, variant
        self.t, self.o, self.offset = template.t, template.o, template.offset_coord
        self.r = m - 1
        self.free = tuple(j for j in range(d) if j != self.t and j != self.offset)
        self.n = len(self.free)
        self._kwargs = kwargs | ({"offset": self.offset} if variant == "steps" else {})
        self._A, self._B = template.fourier_by_degree

    # -- members -------------------------------------------------------------
    @property
    def size(self) -> int:
        """``N = C(n, m − 1)``."""
        return comb(self.n, self.r)

    def members(self) -> list[tuple[int, ...]]:
        """All hidden subsets, in lexicographic order (at most ``MAX_MEMBERS`` = 20 000).

        Returns
        -------
        list of tuple of int
            The :attr:`size` subsets of ``m − 1`` free coordinates.

        Raises
        ------
        ValueError
            When the family has more than ``MAX_MEMBERS`` members (use the closed forms).
        """
        if self.size > MAX_MEMBERS:
            raise ValueError(f"the family has {self.size} members (> {MAX_MEMBERS}); use the closed forms.")
        return [tuple(S) for S in combinations(self.free, self.r)]

    def instance(self, subset: Iterable[int]) -> ParityInstance:
        """The member with hidden ``subset``.

        Parameters
        ----------
        subset : iterable of int
            ``m − 1`` free coordinates (not ``t``, nor the offset of a steps family).

        Returns
        -------
        ParityInstance
            :func:`~lowerbounds.sq.sq_hard_instance` with the family's shared arguments.
        """
        return sq_hard_instance(self.d, self.m, subset, **self._kwargs)

    # -- closed forms --------------------------------------------------------
    def inner(self, overlap: int) -> mpmath.mpf:
        """``E[dev_S dev_{S'}]`` for ``|S ∩ S'| = overlap`` (closed form, mpmath).

        Parameters
        ----------
        overlap : int
            ``|S ∩ S'|``, in ``0..m − 1`` (``m − 1``: the same member).

        Returns
        -------
        mpmath.mpf
            ``2 Σ_{l=1}^{j} C(j, l) (A_l² + B_l²)`` (module docstring), under uniform Boolean inputs.
        """
        j = check_int("overlap", overlap, minimum=0)
        if j > self.r:
            raise ValueError(f"`overlap` must be at most m − 1 = {self.r}; got overlap={j}.")
        with mpmath.workdps(MP_DPS):
            return 2 * sum((comb(j, ell) * (self._A[ell] ** 2 + self._B[ell] ** 2) for ell in range(1, j + 1)),
                           mpmath.mpf(0))

    def overlap_correlation(self, overlap: int) -> float:
        """Normalised correlation ``ρ(j) = E[dev_S dev_{S'}] / E[dev_S²]`` for overlap ``j``.

        Parameters
        ----------
        overlap : int
            ``j = |S ∩ S'|``, in ``0..m − 1``.

        Returns
        -------
        float
            ``ρ(j)``; ``ρ(m − 1) = 1``.
        """
        return float(self.inner(overlap) / self.inner(self.r))

    def correlation(self, S1: Iterable[int], S2: Iterable[int]) -> float:
        """``ρ`` between two members given by their subsets.

        Parameters
        ----------
        S1, S2 : iterable of int
            The members' hidden subsets (each ``m − 1`` distinct free coordinates).

        Returns
        -------
        float
            :meth:`overlap_correlation` of their overlap.
        """
        a, b = self._subset(S1), self._subset(S2)
        return self.overlap_correlation(len(set(a) & set(b)))

    def neighbours(self, overlap: int) -> int:
        """How many other members meet a given one in exactly ``overlap`` coordinates.

        Parameters
        ----------
        overlap : int
            ``|S ∩ S'| >= 0``.

        Returns
        -------
        int
            ``C(m − 1, j) C(n − m + 1, m − 1 − j)``, less the member itself at ``j = m − 1``.
        """
        j = check_int("overlap", overlap, minimum=0)
        count = comb(self.r, j) * comb(self.n - self.r, self.r - j)
        return count - 1 if j == self.r else count

    def row_sum(self) -> float:
        """``R = Σ_{S' ≠ S} |ρ(S, S')|`` (the same for every ``S``).

        Returns
        -------
        float
            The off-diagonal row sum of ``|ρ|``; zero for the interpolation variant up to the float64
            coefficients.
        """
        return float(sum(self.neighbours(j) * abs(self.overlap_correlation(j)) for j in range(self.r)))

    def statistical_dimension(self, avg_correlation: float) -> int:
        """Lower bound ``⌊N γ̄ / (1 + R)⌋`` on SD at average correlation ``γ̄`` (exact when ``R = 0``).

        Parameters
        ----------
        avg_correlation : float
            ``γ̄ > 0``.

        Returns
        -------
        int
            The bound on the statistical dimension (Feldman et al., 2017).
        """
        gamma = check_positive_float("avg_correlation", avg_correlation)
        return int(np.floor(self.size * gamma / (1.0 + self.row_sum()) + 1e-12))

    @declare(tolerance=Real())
    def query_lower_bound(self, tolerance: float) -> float:
        """Queries needed to identify ``S`` at tolerance ``τ`` (see the module docstring).

        Parameters
        ----------
        tolerance : float
            The SQ tolerance ``τ > 0``.

        Returns
        -------
        float
            ``(N − 1)(Bτ)² / λ_max`` with ``B`` the members' label bound and ``λ_max = E[dev²](1 + R)``.
        """
        lam = float(self.inner(self.r)) * (1.0 + self.row_sum())
        return (self.size - 1) * (self.template.label_bound * tolerance) ** 2 / lam

    # -- graph view (families whose correlations are not exactly zero) -------
    def correlation_graph(self, threshold: float) -> networkx.Graph:
        """networkx graph on the members, an edge where ``|ρ| > threshold``.

        Parameters
        ----------
        threshold : float
            Largest ``|ρ|`` that is not an edge, ``>= 0``.

        Returns
        -------
        networkx.Graph
            Nodes are the hidden subsets (:meth:`members`).
        """
        import networkx as nx

        thr = check_positive_float("threshold", threshold, allow_zero=True)
        members = self.members()
        bad = [j for j in range(self.r) if abs(self.overlap_correlation(j)) > thr]
        graph = nx.Graph()
        graph.add_nodes_from(members)
        if bad:
            sets = [frozenset(S) for S in members]
            for i, j in combinations(range(len(members)), 2):
                if len(sets[i] & sets[j]) in bad:
                    graph.add_edge(members[i], members[j])
        return graph

    def nearly_orthogonal_subfamily(self, threshold: float, *, rng: SeedLike = None) -> dict[str, Any]:
        """Bounds on the largest subfamily with pairwise ``|ρ| <= threshold``.

        Parameters
        ----------
        threshold : float
            Largest ``|ρ|`` allowed between two chosen members, ``>= 0``.
        rng : seed or Generator, optional
            Seeds networkx's randomised greedy.

        Returns
        -------
        dict
            ``members`` (a maximal independent set of :meth:`correlation_graph`,
            sorted), ``lower`` (its size), ``upper`` (the packing bound
            ``C(n, j*) / C(m − 1, j*)`` where ``j*`` is the smallest overlap whose
            correlation exceeds the threshold — each ``j*``-set of coordinates lies
            in at most one member — or ``N`` when no overlap does), ``threshold``
            and ``edges`` (the graph's edge count).
        """
        import networkx as nx

        graph = self.correlation_graph(threshold)
        seed = int(check_rng(rng).integers(2**31))
        chosen = nx.maximal_independent_set(graph, seed=seed) if graph.number_of_nodes() else []
        bad = [j for j in range(self.r) if abs(self.overlap_correlation(j)) > threshold]
        upper = comb(self.n, min(bad)) // comb(self.r, min(bad)) if bad else self.size
        return {"members": sorted(chosen), "lower": len(chosen), "upper": int(upper), "threshold": threshold,
                "edges": graph.number_of_edges()}

    # -- exact enumeration ---------------------------------------------------
    def exact_correlations(self, subsets: Iterable[Iterable[int]] | None = None
                           ) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
        """Normalised Gram matrix of the deviations by enumerating all ``4^d`` inputs (``d <= 8``).

        Parameters
        ----------
        subsets : iterable of iterable of int, optional
            The members to compare; default every member.

        Returns
        -------
        subsets : list of tuple of int
            The members, in the matrices' order.
        gram : ndarray, shape (N, N)
            From the layers themselves (entry ``(1, o)`` minus the shared part), divided by the mean
            self-correlation.
        signal_gram : ndarray, shape (N, N)
            The same from :meth:`HardInstance.signal` (exactly orthogonal: the identity).

        Raises
        ------
        ValueError
            For ``d > 8``, or a subset that is not a member.
        """
        if self.d > MAX_ENUM_D:
            raise ValueError(f"exact enumeration is over 4^d inputs; needs d <= {MAX_ENUM_D}, got d={self.d}.")
        subsets = self.members() if subsets is None else [self._subset(S) for S in subsets]
        insts = [self.instance(S) for S in subsets]
        a0, b0 = float(self._A[0]), float(self._B[0])
        q = len(insts)
        gram = np.zeros((q, q))
        sgram = np.zeros((q, q))
        total = 0
        for X in enumerate_cube(2, self.d):
            diff = X[:, 0, self.t] - X[:, 1, self.t]
            zp = X[:, 0, self.offset] * X[:, 1, self.offset] if self.offset is not None else 0.0
            shared = self.template.total * X[:, 1, self.t] + diff * (a0 + b0 * zp)
            dev = np.stack([inst.layer(X)[:, 0, self.o] - shared for inst in insts])
            sig = np.stack([inst.signal(X) for inst in insts])
            gram += dev @ dev.T
            sgram += sig @ sig.T
            total += X.shape[0]
        gram /= total
        sgram /= total
        return subsets, gram / np.mean(np.diag(gram)), sgram / np.mean(np.diag(sgram))

    def _subset(self, S: Iterable[int]) -> tuple[int, ...]:
        S = tuple(sorted(int(s) for s in S))
        if len(S) != self.r or not set(S) <= set(self.free) or len(set(S)) != len(S):
            raise ValueError(f"not a member: {list(S)} must be {self.r} distinct coordinates from {list(self.free)}.")
        return S

    def summary(self, tolerance: float | None = None, avg_correlation: float | None = None) -> dict[str, Any]:
        """JSON-ready description (size, correlations by overlap, bounds).

        Parameters
        ----------
        tolerance : float, optional
            Adds ``query_lower_bound`` at this tolerance (:meth:`query_lower_bound`).
        avg_correlation : float, optional
            Adds ``statistical_dimension_lower_bound`` at this ``γ̄`` (:meth:`statistical_dimension`).

        Returns
        -------
        dict
            ``d``, ``m``, ``variant``, ``members``, ``correlation_by_overlap``, ``row_sum`` and ``provenance``,
            and the bounds asked for with their arguments.
        """
        out = {
            "d": self.d, "m": self.m, "variant": self.variant, "members": self.size,
            "correlation_by_overlap": {j: self.overlap_correlation(j) for j in range(self.r + 1)},
            "row_sum": self.row_sum(),
            "provenance": "construction and closed forms ours; SD as in Feldman et al. (2017)",
        }
        if tolerance is not None:
            out["query_lower_bound"] = self.query_lower_bound(tolerance)
            out["tolerance"] = tolerance
        if avg_correlation is not None:
            out["statistical_dimension_lower_bound"] = self.statistical_dimension(avg_correlation)
            out["avg_correlation"] = avg_correlation
        return out
