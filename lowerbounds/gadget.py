"""The two-token diagonal gadget (ours: derived for this toolkit).

With ``k = 2`` Boolean tokens ``x_1, x_2 ∈ {±1}^d`` and a diagonal attention
matrix ``Θ = diag(θ)``, row 1's logits are ``x_1ᵀΘx_1 = Σ_j θ_j`` (since
``x_{1j}² = 1``) and ``x_1ᵀΘx_2 = Σ_j θ_j z_j`` with ``z = x_1 ⊙ x_2``. With
``b = (1 − z)/2 ∈ {0, 1}^d`` (uniform when the tokens are), row 1's weight on
token 1 is therefore

.. math:: \\sigma(2\\langle\\theta, b\\rangle),\\qquad \\sigma(u) = 1/(1 + e^{-u}),

and, by symmetry, row 2's weight on token 2 is the same number. A head with
``W = c·e_t e_oᵀ`` writes ``c·[x_{2t} + σ(2⟨θ, b⟩)(x_{1t} − x_{2t})]`` into output
entry ``(1, o)`` and ``c·[x_{1t} − σ(2⟨θ, b⟩)(x_{1t} − x_{2t})]`` into ``(2, o)``;
every other entry is zero. A layer made of such heads with a common reader
``t`` and output column ``o`` therefore computes

.. math:: F(X)_{1o} = C x_{2t} + (x_{1t} - x_{2t})\\, g(b),\\qquad
          g(b) = \\sum_i c_i \\sigma(2\\langle\\theta_i, b\\rangle),\\ C = \\sum_i c_i,

and ``F(X)_{2o} = C x_{1t} − (x_{1t} − x_{2t}) g(b)``. The hard families of
:mod:`lowerbounds.sq` (and the LWE-style one) choose the ``θ_i`` and ``c_i`` so
that ``g`` is a parity or a rounding function.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from learner import AttentionLayer
from learner.validation import check_int, check_real_array

__all__ = ["gadget_layer", "gadget_outputs", "gadget_weight", "head_weights"]

#: Largest dense layer a gadget builds (Θ's and W's, float64; ours, a guard on memory): 4 GiB, about d = 11 000
#: at m = 2.
MAX_LAYER_BYTES = 4 * 2**30


def _sigmoid(u):
    # Stable in both tails: exp of a non-positive number only.
    e = np.exp(-np.abs(u))
    return np.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def check_coordinates(d: int, **coords: int) -> tuple[int, ...]:
    """Each keyword as an int coordinate in ``[0, d)``, in order; errors name the keyword and value."""
    out = []
    for name, value in coords.items():
        value = check_int(name, value, minimum=0)
        if value >= d:
            raise ValueError(f"`{name}` must be a coordinate in [0, d) with d={d}; got {name}={value}.")
        out.append(value)
    return tuple(out)


def check_coordinate_set(name: str, values: Iterable[int]) -> tuple[int, ...]:
    """``values`` as a sorted tuple of int coordinates ``>= 0`` (repeats kept for the caller to judge).

    Floats are not truncated (``2.9`` is refused, not read as 2): a coordinate is an index.
    """
    try:
        items = list(values)
    except TypeError as exc:
        raise TypeError(f"`{name}` must be an iterable of coordinates; got {name}={values!r}.") from exc
    out = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"`{name}` must hold integer coordinates; got {v!r} in {name}={values!r}.")
        if v < 0:
            raise ValueError(f"`{name}` must hold coordinates >= 0; got {int(v)} in {name}={values!r}.")
        out.append(int(v))
    return tuple(sorted(out))


def _check_pair_inputs(X: ArrayLike, d: int | None = None) -> np.ndarray:
    X = check_real_array("X", X)
    if X.ndim == 2:
        X = X[None]
    if X.ndim != 3 or X.shape[1] != 2:
        raise ValueError(f"`X` must have shape (2, d) or (n, 2, d) (two tokens); got {X.shape}.")
    if d is not None and X.shape[2] != d:
        raise ValueError(f"`X` must have token dimension d={d}; got X.shape={X.shape}.")
    if not np.all(np.abs(X) == 1.0):
        raise ValueError("`X` must be Boolean (entries ±1): the gadget's identity x_j² = 1 needs it.")
    return X


def gadget_weight(theta: ArrayLike, X: ArrayLike) -> np.ndarray:
    """Row 1's attention weight on token 1 for ``Θ = diag(theta)``: ``σ(2⟨θ, b⟩)``.

    Computed from the gadget's closed form, not from the layer; tests compare
    the two.

    Parameters
    ----------
    theta : array_like, shape (d,)
        The diagonal of ``Θ``.
    X : array_like, shape (2, d) or (n, 2, d)
        Two-token Boolean inputs (entries ±1; the identity needs ``x_j² = 1``).

    Returns
    -------
    ndarray, shape (n,)
        ``σ(2⟨θ, b⟩)`` per input, ``b = (1 − x_1 ⊙ x_2)/2``; also row 2's weight on token 2.

    See Also
    --------
    head_weights : The same weight for every head of a layer at once.
    gadget_layer : The layer made of such heads.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 1.0], [1.0, -1.0]])  # tokens differ in coordinate 1 only
    >>> float(gadget_weight([0.0, 2.0], X)[0]) == float(1 / (1 + np.exp(-4.0)))
    True
    """
    theta = check_real_array("theta", theta, ndim=1)
    X = _check_pair_inputs(X, theta.shape[0])
    b = (1.0 - X[:, 0] * X[:, 1]) / 2.0
    return _sigmoid(2.0 * b @ theta)


def head_weights(thetas: ArrayLike, X: ArrayLike) -> np.ndarray:
    """``σ(2⟨θ_i, b⟩)`` for every head ``i``: each head's row-1 weight on token 1.

    Parameters
    ----------
    thetas : array_like, shape (m, d)
        The diagonals ``θ_i`` of the heads' attention matrices.
    X : array_like, shape (2, d) or (n, 2, d)
        Two-token Boolean inputs (entries ±1).

    Returns
    -------
    ndarray, shape (n, m)
        Entry ``[a, i]`` is head ``i``'s weight on input ``a``.

    See Also
    --------
    gadget_weight : One head's weight.
    gadget_layer : The layer whose heads these are.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 1.0, 1.0], [-1.0, -1.0, 1.0]])  # tokens differ at 0 and 1: b = (1, 1, 0)
    >>> head_weights([[0.0, 1.0, 0.0], [0.5, 0.5, 5.0]], X).round(4)  # σ(2) twice: θ_2 is ignored where b = 0
    array([[0.8808, 0.8808]])
    """
    thetas = check_real_array("thetas", thetas, ndim=2)
    X = _check_pair_inputs(X, thetas.shape[1])
    b = (1.0 - X[:, 0] * X[:, 1]) / 2.0
    return _sigmoid(2.0 * b @ thetas.T)


def gadget_layer(thetas: ArrayLike, coefficients: ArrayLike, *, t: int, o: int) -> AttentionLayer:
    """The layer with heads ``Θ_i = diag(θ_i)``, ``W_i = c_i e_t e_oᵀ``.

    Parameters
    ----------
    thetas : array_like, shape (m, d)
        Diagonals of the attention matrices.
    coefficients : array_like, shape (m,)
        The ``c_i``.
    t, o : int
        Reader coordinate and output column, ``0 <= t, o < d``.

    Returns
    -------
    AttentionLayer
        ``m`` heads on ``d``-dimensional tokens (dense ``d × d`` matrices).

    Raises
    ------
    ValueError
        Mismatched shapes, a coordinate outside ``[0, d)``, or a layer beyond ``MAX_LAYER_BYTES`` (4 GiB).

    See Also
    --------
    gadget_weight : The attention weight each head puts on the query's own token.
    gadget_outputs : The layer's output written from its hidden factor alone.
    sq_hard_instance : The SQ family, made of these layers.
    lwr_hard_instance : The LWE-style family, made of these layers.

    Examples
    --------
    >>> import numpy as np
    >>> layer = gadget_layer([[0.0, 1.0, 0.0]], [2.0], t=0, o=2)
    >>> X = np.array([[1.0, 1.0, 1.0], [-1.0, -1.0, 1.0]])
    >>> w = gadget_weight([0.0, 1.0, 0.0], X)[0]
    >>> Y = layer(X)  # entry (1, o) is c [x_2t + w (x_1t − x_2t)], entry (2, o) its mirror image
    >>> bool(np.isclose(Y[0, 2], 2 * (-1 + 2 * w))), bool(np.isclose(Y[1, 2], -Y[0, 2])), int((Y != 0).sum())
    (True, True, 2)
    """
    thetas = check_real_array("thetas", thetas, ndim=2)
    coefficients = check_real_array("coefficients", coefficients, ndim=1)
    m, d = thetas.shape
    if coefficients.shape[0] != m:
        raise ValueError(f"`coefficients` must have one entry per head (m={m}); got {coefficients.shape[0]}.")
    t, o = check_coordinates(d, t=t, o=o)
    need = 2 * m * d * d * 8
    if need > MAX_LAYER_BYTES:
        raise ValueError(f"a layer with m={m} heads at d={d} holds 2·m·d² float64 = {need / 2**30:.3g} GiB, beyond "
                         f"MAX_LAYER_BYTES = {MAX_LAYER_BYTES / 2**30:g} GiB (the forward pass is dense in d×d).")
    big_thetas = np.zeros((m, d, d))
    idx = np.arange(d)
    big_thetas[:, idx, idx] = thetas
    ws = np.zeros((m, d, d))
    ws[:, t, o] = coefficients
    return AttentionLayer(big_thetas, ws)


def gadget_outputs(X: ArrayLike, g: ArrayLike, *, t: int, o: int, total: float) -> np.ndarray:
    """The gadget layer's full output given its hidden factor ``g`` per input: shape (n, 2, d).

    ``Y_{1o} = C x_{2t} + (x_{1t} − x_{2t}) g`` and ``Y_{2o} = C x_{1t} − (x_{1t} − x_{2t}) g``
    with ``C = total``; every other entry is zero. Needs no head parameters,
    which is what lets the LWE-style reduction write samples of ``F`` from
    labels alone.

    Parameters
    ----------
    X : array_like, shape (2, d) or (n, 2, d)
        Two-token Boolean inputs (entries ±1).
    g : array_like, shape (n,)
        The hidden factor ``g(b)`` per input.
    t, o : int
        Reader coordinate and output column, ``0 <= t, o < d``.
    total : float
        ``C = Σ_i c_i``.

    Returns
    -------
    ndarray, shape (n, 2, d)
        The output a gadget layer with this ``C`` and factor ``g`` computes on ``X``.
    """
    X = _check_pair_inputs(X)
    g = check_real_array("g", g, ndim=1)
    if g.shape[0] != X.shape[0]:
        raise ValueError(f"`g` must have one value per input ({X.shape[0]}); got {g.shape[0]}.")
    t, o = check_coordinates(X.shape[2], t=t, o=o)
    Y = np.zeros(X.shape)
    diff = X[:, 0, t] - X[:, 1, t]
    Y[:, 0, o] = total * X[:, 1, t] + diff * g
    Y[:, 1, o] = total * X[:, 0, t] - diff * g
    return Y
