"""Helpers for running the lemma checks inside your own test suite.

Hypothesis strategies for layers, inputs and slices, and assertions that print
the claim and the measured value when they fail. Needs the ``test`` extra
(hypothesis). Example::

    from hypothesis import given
    from theory.testing import assert_check_holds, layers
    from theory import check_min_norm_orthogonality

    @given(layers(max_m=3, max_d=4))
    def test_min_norm(layer):
        assert_check_holds(check_min_norm_orthogonality(layer.thetas))
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from learner import AttentionLayer

from ._core import CheckResult

__all__ = ["assert_check_fails", "assert_check_holds", "boolean_inputs", "layers", "slices"]


def _describe(result):
    lines = [result.summary(), f"  source: {result.source}", f"  parameters: {result.parameters}"]
    if result.seed_entropy is not None:
        lines.append(f"  seed entropy: {result.seed_entropy} (replay with rng={result.seed_entropy})")
    return "\n".join(lines)


def assert_check_holds(result: CheckResult) -> None:
    """Assert ``result.holds``; on failure the message gives the claim, the measured value and the bound.

    Parameters
    ----------
    result : CheckResult
        A lemma check's result.

    Raises
    ------
    AssertionError
        If the check does not hold; the message has :meth:`~theory.CheckResult.summary`, the source, the
        parameters and the seed entropy to replay it with.

    Examples
    --------
    >>> from theory import run_case
    >>> assert_check_holds(run_case("min_norm_orthogonality", rng=0))
    """
    if not result.holds:
        raise AssertionError("lemma check failed:\n" + _describe(result))


def assert_check_fails(result: CheckResult) -> None:
    """Assert ``not result.holds`` (for negative controls), with the same message.

    Parameters
    ----------
    result : CheckResult
        A negative control's result.

    Raises
    ------
    AssertionError
        If the control holds (a check that cannot fail proves nothing).

    Examples
    --------
    >>> from theory import run_case
    >>> assert_check_fails(run_case("min_norm_orthogonality", "control", rng=0))
    """
    if result.holds:
        raise AssertionError("negative control unexpectedly held:\n" + _describe(result))


def _finite(bound):
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False)


@st.composite
def layers(draw: st.DrawFn, *, min_m: int = 1, max_m: int = 3, min_d: int = 2, max_d: int = 5,
           theta_bound: float = 2.0, w_bound: float = 2.0) -> AttentionLayer:
    """Small :class:`learner.AttentionLayer` instances with bounded entries.

    A Hypothesis strategy (``@st.composite``): call it with the keyword arguments below, never with ``draw``.

    Parameters
    ----------
    min_m, max_m : int
        Range of the number of heads ``m`` (defaults 1 and 3).
    min_d, max_d : int
        Range of the dimension ``d`` (defaults 2 and 5).
    theta_bound : float
        Every entry of every ``Θ_i`` lies in ``[−theta_bound, theta_bound]`` (default 2).
    w_bound : float
        Every entry of every ``W_i`` lies in ``[−w_bound, w_bound]`` (default 2).

    Returns
    -------
    SearchStrategy of AttentionLayer
        Layers with ``m`` heads of dimension ``d``, ``Θ_i`` and ``W_i`` of finite float64 entries in those bounds.

    Examples
    --------
    >>> from hypothesis import given
    >>> @given(layers(max_m=2, max_d=3))
    ... def test_shapes(layer):
    ...     assert layer.thetas.shape == layer.ws.shape == (layer.m, layer.d, layer.d)
    >>> test_shapes()
    """
    m = draw(st.integers(min_m, max_m))
    d = draw(st.integers(min_d, max_d))
    thetas = draw(hnp.arrays(np.float64, (m, d, d), elements=_finite(theta_bound)))
    ws = draw(hnp.arrays(np.float64, (m, d, d), elements=_finite(w_bound)))
    return AttentionLayer(thetas, ws)


def boolean_inputs(k: int, d: int, *, max_n: int = 4) -> st.SearchStrategy[np.ndarray]:
    """Batches of Boolean inputs, shape (n, k, d) with 1 <= n <= max_n and entries ±1.

    Parameters
    ----------
    k : int
        Tokens per input.
    d : int
        Dimension of a token.
    max_n : int
        Largest batch (default 4); the batch size is drawn from ``1..max_n``.

    Returns
    -------
    SearchStrategy of ndarray
        Float64 arrays of shape ``(n, k, d)`` with entries ``±1``.
    """
    return st.integers(1, max_n).flatmap(
        lambda n: hnp.arrays(np.float64, (n, k, d), elements=st.sampled_from([-1.0, 1.0]))
    )


@st.composite
def slices(draw: st.DrawFn, *, min_n: int = 1, max_n: int = 12, integer: bool = False,
           bound: float = 3.0) -> tuple[np.ndarray, int]:
    """``(a, weight)``: a coefficient vector of length n and a Hamming weight in [0, n].

    A Hypothesis strategy (``@st.composite``): call it with the keyword arguments below, never with ``draw``.

    Parameters
    ----------
    min_n, max_n : int
        Range of the length ``n`` (defaults 1 and 12).
    integer : bool
        Draw integer coefficients (arithmetic vectors, for negative controls of the local CLT) instead of
        finite floats.
    bound : float
        Every coefficient lies in ``[−bound, bound]`` (default 3; with ``integer``, in
        ``[−int(bound), int(bound)]``).

    Returns
    -------
    SearchStrategy of (ndarray, int)
        Pairs ``(a, weight)``: ``a`` float64 of shape ``(n,)``, ``weight`` an integer in ``[0, n]``, as
        :func:`theory.local_clt.slice_distribution` takes them.

    Examples
    --------
    >>> from hypothesis import given
    >>> from theory import slice_moments
    >>> @given(slices(max_n=6))
    ... def test_variance_is_not_negative(case):
    ...     assert slice_moments(*case)[1] >= 0
    >>> test_variance_is_not_negative()
    """
    n = draw(st.integers(min_n, max_n))
    elements = st.integers(-int(bound), int(bound)).map(float) if integer else _finite(bound)
    a = draw(hnp.arrays(np.float64, (n,), elements=elements))
    weight = draw(st.integers(0, n))
    return a, weight
