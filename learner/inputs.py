"""Input distributions: random Boolean or Gaussian sequences, and exact cube enumeration.

The paper's setting draws every entry of ``X ∈ R^{k×d}`` independently and
uniformly from ``{±1}``; its stated extension uses standard Gaussian entries.
For small ``k·d`` the Boolean expectation of any function can be computed
exactly by visiting all ``2^{kd}`` inputs, which is what :func:`cube_expectation`
does; the theory checks use it as their exact reference.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike

from .hints import SeedLike
from .validation import (
    DISTRIBUTIONS,
    Choice,
    Integer,
    check_int,
    check_real_array,
    check_rng,
    declare,
)

__all__ = ["check_inputs", "cube_expectation", "enumerate_cube", "sample_inputs", "DEFAULT_MAX_BITS"]

log = logging.getLogger(__name__)

#: Largest ``k·d`` :func:`enumerate_cube` accepts (ours, a guard on run time: 2^32 inputs already take hours).
MAX_CUBE_BITS = 32
#: Largest k·d that cube_expectation enumerates unless asked (ours, a guard on run time, not tuned: 2^26 = 6.7e7
#: inputs).
DEFAULT_MAX_BITS = 26


@declare(n_samples=Integer(), k=Integer(), d=Integer(), distribution=Choice(DISTRIBUTIONS))
def sample_inputs(n_samples: int, k: int, d: int, *, distribution: str = "boolean", rng: SeedLike = None) -> np.ndarray:
    """Draw ``n_samples`` random input sequences of ``k`` tokens in dimension ``d``.

    Parameters
    ----------
    n_samples, k, d : int
        Number of sequences, tokens per sequence and token dimension (all ``>= 1``).
    distribution : {"boolean", "gaussian"}
        ``"boolean"``: entries uniform on ``{-1, +1}`` (the paper's setting);
        ``"gaussian"``: entries standard normal (the paper's stated extension).
    rng : None, int, SeedSequence or Generator
        Source of randomness, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    X : ndarray, shape (n_samples, k, d), float64
        The sequences, every entry drawn independently.

    See Also
    --------
    enumerate_cube : Every Boolean input exactly once, instead of a sample.
    check_inputs : Validate inputs that come from elsewhere.
    learner.LayerOracle : Examples labelled by a layer, drawn from these distributions.

    Examples
    --------
    >>> X = sample_inputs(2, 3, 4, rng=0)
    >>> X.shape, np.unique(X).tolist()
    ((2, 3, 4), [-1.0, 1.0])
    """
    rng = check_rng(rng)
    shape = (n_samples, k, d)
    if distribution == "gaussian":
        return rng.standard_normal(shape)
    bits = rng.integers(0, 2, size=shape, dtype=np.int8)
    # 1 − 2·bit in one cast-multiply into the output and one in-place add: the same values as
    # (1.0 − 2.0·bits), measured ~5× faster (no float64 temporaries); sampling is on the learner's hot path.
    X = np.empty(shape)
    np.multiply(bits, -2.0, out=X)
    X += 1.0
    return X


def check_inputs(X: ArrayLike, *, k: int | None = None, d: int | None = None, boolean: bool = False) -> np.ndarray:
    """Validate a batch of input sequences and return it as float64, shape (n, k, d).

    Parameters
    ----------
    X : array_like, shape (n, k, d) or (k, d)
        Input sequences; a single sequence is promoted to a batch of one.
    k, d : int, optional
        Required number of tokens and token dimension.
    boolean : bool
        Require every entry to be exactly ``-1`` or ``+1``.

    Returns
    -------
    ndarray, shape (n, k, d), float64
        The inputs (a view of ``X`` where it already is a float64 array); n = 1 for a single sequence.

    Raises
    ------
    ValueError
        On wrong shapes, non-finite entries, or non-``±1`` entries when ``boolean``.

    See Also
    --------
    sample_inputs : Draw valid inputs.

    Examples
    --------
    >>> import numpy as np
    >>> check_inputs(np.ones((3, 4))).shape  # one sequence becomes a batch of one
    (1, 3, 4)
    >>> check_inputs(np.zeros((2, 3, 4)), boolean=True)
    Traceback (most recent call last):
        ...
    ValueError: `X` must be Boolean (entries -1 or +1); it contains 0.0.
    """
    arr = check_real_array("X", X, ndim=(2, 3))
    if arr.ndim == 2:
        arr = arr[None]
    if arr.shape[1] < 1 or arr.shape[2] < 1:
        raise ValueError(f"`X` must have at least one token of dimension >= 1; got shape {arr.shape}.")
    if k is not None and arr.shape[1] != k:
        raise ValueError(f"`X` must have k={k} tokens per sequence; got shape {arr.shape}.")
    if d is not None and arr.shape[2] != d:
        raise ValueError(f"`X` must have token dimension d={d}; got shape {arr.shape}.")
    if boolean and not np.all(np.abs(arr) == 1.0):
        bad = float(arr[np.abs(arr) != 1.0].flat[0])
        raise ValueError(f"`X` must be Boolean (entries -1 or +1); it contains {bad!r}.")
    return arr


def _check_cube(k, d, batch):
    k = check_int("k", k)
    d = check_int("d", d)
    batch = check_int("batch", batch)
    if k * d > MAX_CUBE_BITS:
        raise ValueError(
            f"enumerating 2^(k*d) inputs needs k*d <= {MAX_CUBE_BITS}; got k={k}, d={d} (k*d={k * d})."
        )
    return k, d, batch


def enumerate_cube(k: int, d: int, *, batch: int = 65536) -> Iterator[np.ndarray]:
    """Iterate over all ``2^{kd}`` Boolean inputs ``X ∈ {±1}^{k×d}`` in batches.

    Input number ``i`` has entry ``X[a, c] = 1 - 2·bit_{a·d + c}(i)``, so the
    batches visit every input exactly once, in a fixed order.

    Parameters
    ----------
    k, d : int
        Tokens and dimension, ``k·d <= 32``.
    batch : int
        Largest number of inputs per yielded array (bounds memory).

    Returns
    -------
    iterator of ndarray
        The batches, each of shape (b, k, d), float64, with ``b <= batch`` (only the last one shorter). The
        arguments are checked at the call (``ValueError`` beyond ``k·d = 32``), not at the first batch.

    See Also
    --------
    cube_expectation : The exact Boolean expectation of a function, summed over these batches.
    sample_inputs : Random inputs, where the cube is too large to visit.

    Examples
    --------
    >>> sum(len(X) for X in enumerate_cube(2, 3, batch=10))
    64
    """
    k, d, batch = _check_cube(k, d, batch)  # eagerly, not at the first next()
    return _cube_batches(k, d, batch)


def _cube_batches(k, d, batch):
    total = 1 << (k * d)
    shifts = np.arange(k * d, dtype=np.int64)
    for start in range(0, total, batch):
        idx = np.arange(start, min(start + batch, total), dtype=np.int64)
        bits = (idx[:, None] >> shifts) & 1
        yield (1.0 - 2.0 * bits).reshape(len(idx), k, d)


def _pairwise_sum(values):
    """Sum over axis 0 by a balanced binary tree (error O(log n · eps), not O(n · eps))."""
    while values.shape[0] > 1:
        half = values.shape[0] // 2
        paired = values[:half] + values[half : 2 * half]
        values = np.concatenate([paired, values[2 * half :]]) if values.shape[0] % 2 else paired
    return values[0]


def cube_expectation(fn: Callable[[np.ndarray], ArrayLike], k: int, d: int, *, batch: int = 65536,
                     max_bits: int | None = None) -> float | np.ndarray:
    """Exact expectation of ``fn(X)`` over ``X`` uniform on ``{±1}^{k×d}``.

    .. math:: \\mathbb{E}[f(X)] = 2^{-kd} \\sum_{X \\in \\{\\pm 1\\}^{k \\times d}} f(X)

    Parameters
    ----------
    fn : callable
        Maps a batch of inputs, shape (b, k, d), to values of shape (b, ...).
    k, d : int
        Tokens and dimension, ``k·d <= 32``.
    batch : int
        Inputs per call of ``fn``.
    max_bits : int, optional
        Largest ``k·d`` to enumerate without being asked (default
        :data:`DEFAULT_MAX_BITS` = 26, 6.7·10⁷ inputs: about a minute for a
        layer's forward pass on 2 cores); up to 32 when given explicitly. Beyond
        it the call is refused at once with the count, instead of starting work
        of hours.

    Returns
    -------
    float or ndarray
        The expectation, with the trailing shape of ``fn``'s values.

    Notes
    -----
    There is no sampling error. The floating-point error is that of summing
    ``2^{kd}`` terms: each batch is summed pairwise and batch sums are combined
    with Neumaier compensation, so the relative error is a small multiple of
    ``log2(batch)·eps`` of ``Σ|f|/|Σf|``. Integer-valued ``f`` is summed
    exactly: every value is scaled by ``2^{-kd}`` first, which is exact in binary
    floating point and keeps the running sum below ``max|f|`` (no overflow for a
    representable mean; values below about ``2^{kd}·1e-308`` in magnitude become
    subnormal and lose relative precision). Complex or non-finite values are errors.

    See Also
    --------
    enumerate_cube : The batches of inputs it visits.
    sample_inputs : Random inputs, for a Monte Carlo estimate where the cube is too large.

    Examples
    --------
    >>> import numpy as np
    >>> cube_expectation(lambda X: X[:, 0, 0] * X[:, 1, 0], 2, 2)
    0.0
    >>> cube_expectation(lambda X: X.sum(axis=(1, 2)) ** 2, 2, 2)
    4.0
    """
    k, d, batch = _check_cube(k, d, batch)
    limit = DEFAULT_MAX_BITS if max_bits is None else check_int("max_bits", max_bits)
    if k * d > limit:
        raise ValueError(f"cube_expectation would enumerate 2^{k * d} = {2.0 ** (k * d):.3g} inputs (k={k}, d={d}), "
                         f"beyond max_bits={limit}; pass max_bits={k * d} (at most {MAX_CUBE_BITS}) to run it anyway.")
    if not callable(fn):
        raise TypeError(f"`fn` must be callable; got fn={fn!r}.")
    total = comp = None
    t0, n_done, logged = time.perf_counter(), 0, False
    for X in enumerate_cube(k, d, batch=batch):
        raw = np.asarray(fn(X))
        if not (np.issubdtype(raw.dtype, np.floating) or np.issubdtype(raw.dtype, np.integer)
                or raw.dtype == np.bool_):
            raise TypeError(f"`fn` must return real numbers; got dtype {raw.dtype} (for complex values take the "
                            "expectations of the real and imaginary parts separately).")
        values = raw.astype(np.float64, copy=False)
        if values.ndim == 0 or values.shape[0] != X.shape[0]:
            raise ValueError(
                f"`fn` must return one value per input (leading axis {X.shape[0]}); "
                f"got shape {values.shape}."
            )
        if not np.isfinite(values).all():
            raise ValueError("`fn` returned a non-finite value (inf or nan); the expectation is not defined.")
        # Scale by 2^(−kd) before summing (exact in binary floating point): the sum of the scaled
        # values is bounded by max|f|, so a representable mean never overflows on the way.
        part = _pairwise_sum(np.ldexp(values, -(k * d)))
        n_done += X.shape[0]
        if not logged and time.perf_counter() - t0 > 2.0:  # a long enumeration says how long it will take
            rate = n_done / (time.perf_counter() - t0)
            log.info("cube_expectation: 2^%d inputs at %.3g/s: about %.0f s in all", k * d, rate, 2.0 ** (k * d) / rate)
            logged = True
        if total is None:
            total, comp = part.copy(), np.zeros_like(part)
            continue
        new = total + part
        # Neumaier: keep the low-order bits lost in ``total + part``.
        comp += np.where(np.abs(total) >= np.abs(part), (total - new) + part, (part - new) + total)
        total = new
    result = total + comp  # type: ignore[operator]  # the cube has at least one batch
    return float(result) if result.ndim == 0 else result
