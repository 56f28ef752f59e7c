"""The multi-head attention layer of Chen & Li (arXiv 2402.04084).

.. math::

    F(X) = \\sum_{i=1}^m \\operatorname{softmax}(X \\Theta_i X^\\top)\\, X W_i,
    \\qquad X \\in \\mathbb{R}^{k \\times d},\\ \\Theta_i, W_i \\in \\mathbb{R}^{d \\times d},

with the softmax taken row by row, no ``1/sqrt(d)`` scaling and no mask: the
paper's definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .inputs import check_inputs
from .validation import check_int, check_real_array

__all__ = ["AttentionLayer", "attention_patterns", "auto_batch", "device_batch", "head_features", "layer_jacobian",
           "softmax", "softmax_inplace"]

#: Default chunk size: the largest of the per-chunk work arrays holds about this
#: many floats (4 MiB), small enough to stay in cache and be reused, large
#: enough for the batched products to pay off (ours, measured: ``python -m learner bench``).
WORK_FLOATS = 1 << 19
#: Upper limit on the automatic chunk size (ours: beyond it the small cases slow down).
MAX_AUTO_BATCH = 512


def auto_batch(k: int, d: int, m: int) -> int:
    """Examples per chunk so that the (chunk, k, m·max(d, k)) work arrays hold about ``WORK_FLOATS``.

    Parameters
    ----------
    k : int
        Tokens per sequence.
    d : int
        Token dimension.
    m : int
        Number of heads.

    Returns
    -------
    int
        The chunk size: ``WORK_FLOATS // (k·m·max(d, k))``, clipped to ``[16, MAX_AUTO_BATCH]``.
    """
    return int(max(16, min(MAX_AUTO_BATCH, WORK_FLOATS // (k * m * max(d, k)))))


#: Floats in the largest work array of a chunk on a torch device (ours, not tuned: 256 MiB in float64; a device
#: pays per call, so its chunks are larger than the CPU's cache-sized ones).
DEVICE_WORK_FLOATS = 1 << 25


def device_batch(k: int, d: int, m: int) -> int:
    """Examples per chunk on a torch device: the (chunk, k, m·max(d, k)) work arrays hold about ``DEVICE_WORK_FLOATS``.

    Parameters
    ----------
    k : int
        Tokens per sequence.
    d : int
        Token dimension.
    m : int
        Number of heads.

    Returns
    -------
    int
        The chunk size: ``DEVICE_WORK_FLOATS // (k·m·max(d, k))``, at least 16 (no upper limit).
    """
    return int(max(16, DEVICE_WORK_FLOATS // (k * m * max(d, k))))


def softmax_inplace(z: np.ndarray, axis: int, work: np.ndarray) -> np.ndarray:
    """Stable softmax of ``z`` along ``axis``, in place; ``work`` holds the reduced shape.

    Subtracting the maximum makes every exponent ``<= 0`` (no overflow) and puts
    an exact ``1`` in every slice (the sum is ``>= 1``, no division by zero),
    so logits of any finite size, and exact ties, give finite correct weights.

    Parameters
    ----------
    z : numpy.ndarray
        Float64 logits, overwritten with the weights.
    axis : int
        The axis the weights sum to one along.
    work : numpy.ndarray
        Scratch of ``z``'s shape with ``axis`` reduced to length 1 (``keepdims``); overwritten with the sums.

    Returns
    -------
    numpy.ndarray
        ``z`` itself, now holding the weights.
    """
    np.max(z, axis=axis, keepdims=True, out=work)
    # Finite logits more than ~1.8e308 apart make z - max overflow to -inf,
    # whose exponential is the correct 0: that overflow is harmless.
    with np.errstate(over="ignore"):
        z -= work
    np.exp(z, out=z)
    np.sum(z, axis=axis, keepdims=True, out=work)
    z /= work
    return z


def softmax(z: ArrayLike, *, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax of ``z`` along ``axis``.

    .. math:: \\operatorname{softmax}(z)_j = e^{z_j - \\max z} / \\sum_l e^{z_l - \\max z}

    Parameters
    ----------
    z : array_like
        Finite real logits, at least one dimension (a scalar is refused with ``ValueError``).
    axis : int, default -1
        The axis the weights sum to one along.

    Returns
    -------
    numpy.ndarray
        Float64 weights of ``z``'s shape, in [0, 1], summing to one along ``axis``; ``z`` is not modified.

    See Also
    --------
    softmax_inplace : The same computation in place, with the caller's work array.
    AttentionLayer.attention : The row-wise softmax of a layer's logits ``X Θ_i Xᵀ``.

    Examples
    --------
    Logits far beyond ``exp``'s range give exact weights (no overflow):

    >>> softmax([1e4, 1e4, 0.0]).tolist()
    [0.5, 0.5, 0.0]
    >>> softmax([[0.0, 0.0], [0.0, 1.0]], axis=0).round(3).tolist()
    [[0.5, 0.269], [0.5, 0.731]]
    """
    z = check_real_array("z", z).copy()
    if z.ndim == 0:
        raise ValueError("`z` must have at least one dimension; got a scalar.")
    work = np.empty(np.max(z, axis=axis, keepdims=True).shape)
    return softmax_inplace(z, axis, work)


@dataclass(frozen=True, eq=False)
class AttentionLayer:
    """A multi-head attention layer ``F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i``.

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        Attention matrices ``Θ_1..Θ_m``.
    ws : array_like, shape (m, d, d)
        Projection matrices ``W_1..W_m``.

    Notes
    -----
    The layer is immutable: the parameters are copied and made read-only.
    Calling it on ``X`` of shape (k, d) or (n, k, d) returns ``F(X)`` with the
    same shape. The forward pass stacks the heads so that ``X Θ_i`` and the sum
    ``Σ_i (P_i X) W_i`` are single matrix products over the whole batch and the
    softmax reduces over a non-trailing axis (fast in numpy); ``batch`` bounds
    the working memory. Definition from arXiv 2402.04084 (the paper's).

    See Also
    --------
    learner.random_layer : A planted layer meeting the paper's conditions.
    learner.LayerOracle : Labelled examples drawn from a layer.
    learner.learn : The paper's learner, which recovers a layer from its examples.
    learner.assumptions : The paper's non-degeneracy conditions measured on a layer.

    Examples
    --------
    >>> import numpy as np
    >>> layer = AttentionLayer(np.zeros((1, 2, 2)), np.eye(2)[None])
    >>> layer(np.array([[1.0, -1.0], [1.0, 1.0]])).tolist()  # uniform attention
    [[1.0, 0.0], [1.0, 0.0]]
    """

    thetas: np.ndarray
    ws: np.ndarray
    _theta_cat: np.ndarray = field(init=False, repr=False)
    _w_stack: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        thetas = check_real_array("thetas", self.thetas, ndim=3).copy()
        ws = check_real_array("ws", self.ws, ndim=3).copy()
        m, d, d2 = thetas.shape
        if m < 1:
            raise ValueError(f"a layer needs at least one head; got m={m} (thetas shape {thetas.shape}).")
        if d < 1 or d != d2:
            raise ValueError(f"`thetas` must have shape (m, d, d) with d >= 1; got {thetas.shape}.")
        if ws.shape != thetas.shape:
            raise ValueError(
                f"`ws` must have the same shape as `thetas` {thetas.shape}; got {ws.shape}."
            )
        # Θ_cat[c, i·d + e] = Θ_i[c, e] and W_stack[i·d + c, e] = W_i[c, e].
        theta_cat = np.ascontiguousarray(thetas.transpose(1, 0, 2).reshape(d, m * d))
        w_stack = ws.reshape(m * d, d).copy()
        for name, arr in [("thetas", thetas), ("ws", ws), ("_theta_cat", theta_cat), ("_w_stack", w_stack)]:
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def m(self) -> int:
        """Number of heads."""
        return self.thetas.shape[0]

    @property
    def d(self) -> int:
        """Token dimension."""
        return self.thetas.shape[1]

    def __repr__(self):
        return f"AttentionLayer(m={self.m}, d={self.d})"

    def _prepare(self, X: ArrayLike, batch: int | None) -> tuple[np.ndarray, bool, int]:
        single = np.ndim(X) == 2
        X = check_inputs(X, d=self.d)
        if batch is None:
            batch = auto_batch(X.shape[1], self.d, self.m)
        return X, single, check_int("batch", batch)

    def _chunks(self, X, batch):
        """Yield (slice, x, P) with P[b, j, i·k + a] = softmax_j(x_a Θ_i x_jᵀ), the pattern of head i."""
        n, k, d = X.shape
        m = self.m
        b = max(1, min(batch, n))
        A = np.empty((b * k, m * d))
        P = np.empty((b, k, k * m))
        work = np.empty((b, 1, k * m))
        for start in range(0, n, b):
            x = X[start : start + b]
            nb = x.shape[0]
            a = A[: nb * k]
            with np.errstate(over="ignore", invalid="ignore"):
                np.matmul(x.reshape(nb * k, d), self._theta_cat, out=a)  # rows (n, a), cols (i, e)
            p = P[:nb]
            # Logits transposed, p[n, j, (a, i)] = (x_a Θ_i) · x_j, so the softmax
            # over j reduces along axis 1 (fast) rather than a short trailing axis.
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected just below
                np.matmul(x, a.reshape(nb, k * m, d).transpose(0, 2, 1), out=p)
                softmax_inplace(p, 1, work[:nb])
            if not np.isfinite(work[:nb]).all():
                raise FloatingPointError(
                    "attention logits overflowed float64 (|x_a^T Theta_i x_b| too large); "
                    "rescale the inputs or the attention matrices."
                )
            yield slice(start, start + nb), x, p

    def __call__(self, X: ArrayLike, *, batch: int | None = None, device: Any = None) -> np.ndarray:
        """Evaluate ``F(X)``; ``X`` has shape (k, d) or (n, k, d), the result the same shape.

        Parameters
        ----------
        X : array_like, shape (k, d) or (n, k, d)
            One sequence of k tokens, or n of them; finite reals of the layer's dimension d.
        batch : int, optional
            Examples per chunk (bounds the working memory; the result does not depend on it). Default:
            :func:`auto_batch`, or :func:`device_batch` on a device.
        device : str or learner.arrays.Backend, optional
            A torch device name such as ``"cuda"`` (the torch extra), or its backend
            (:func:`learner.arrays.backend`, checked once where it was made): the chunks are computed on torch
            tensors there, through :mod:`learner.arrays`, and the result is a numpy array all the same, agreeing
            with numpy's to rounding (a few units of 1e-16 relative). None (default): numpy.

        Returns
        -------
        numpy.ndarray, shape (k, d) or (n, k, d)
            ``F(X)``, the shape of ``X``.

        Raises
        ------
        FloatingPointError
            If the logits or the outputs overflow float64.
        ValueError
            If this torch build cannot use ``device`` (:func:`learner.arrays.torch_device`'s one message).
        """
        if device is not None:
            from . import arrays

            backend = arrays.backend(device)
            if not backend.on_host:
                return self._call_on(X, batch, backend)
        X, single, batch = self._prepare(X, batch)
        n, k, d = X.shape
        m = self.m
        out = np.empty(X.shape)  # C order, so out[sl].reshape below is a view, never a copy
        Z = np.empty((max(1, min(batch, n)), k * m, d))
        for sl, x, p in self._chunks(X, batch):
            nb = x.shape[0]
            z = Z[:nb]
            np.matmul(p.transpose(0, 2, 1), x, out=z)  # z[n, (a, i)] = Σ_j P_i[a, j] x_j
            with np.errstate(over="ignore", invalid="ignore"):  # detected just below
                np.matmul(z.reshape(nb * k, m * d), self._w_stack, out=out[sl].reshape(nb * k, d))
        if not np.isfinite(out).all():
            raise FloatingPointError(
                "F(X) overflowed float64 (the projections W_i are too large for these inputs: "
                f"max |W| = {float(np.abs(self.ws).max()):.3g}); rescale the layer."
            )
        return out[0] if single else out

    def _call_on(self, X, batch, backend):
        """:meth:`__call__` on torch tensors on ``backend``'s device: the same chunked products and the same stable
        softmax (the largest logit of each row subtracted before the exponential), written with the array API."""
        from . import arrays

        single = np.ndim(X) == 2
        X = check_inputs(X, d=self.d)
        n, k, d = X.shape
        m = self.m
        batch = device_batch(k, d, m) if batch is None else check_int("batch", batch)
        theta_cat, w_stack = (backend.asarray(a) for a in (self._theta_cat, self._w_stack))
        xp = arrays.namespace(theta_cat)
        out = np.empty(X.shape)
        for start in range(0, n, max(1, batch)):
            x = backend.asarray(X[start:start + batch])
            nb = x.shape[0]
            a = xp.reshape(xp.reshape(x, (nb * k, d)) @ theta_cat, (nb, k * m, d))
            p = x @ arrays.permute(a, (0, 2, 1))  # p[n, j, (a, i)] = (x_a Θ_i) · x_j, as in _chunks
            top = xp.max(p, axis=1, keepdims=True)
            if not bool(xp.all(xp.isfinite(top))):
                raise FloatingPointError(
                    "attention logits overflowed float64 (|x_a^T Theta_i x_b| too large); "
                    "rescale the inputs or the attention matrices.")
            p = xp.exp(p - top)
            p = p / xp.sum(p, axis=1, keepdims=True)
            z = arrays.permute(p, (0, 2, 1)) @ x  # z[n, (a, i)] = Σ_j P_i[a, j] x_j
            out[start:start + nb] = arrays.to_numpy(xp.reshape(xp.reshape(z, (nb * k, m * d)) @ w_stack,
                                                               (nb, k, d)))
        if not np.isfinite(out).all():
            raise FloatingPointError(
                "F(X) overflowed float64 (the projections W_i are too large for these inputs: "
                f"max |W| = {float(np.abs(self.ws).max()):.3g}); rescale the layer.")
        return out[0] if single else out

    def attention(self, X: ArrayLike, *, batch: int | None = None) -> np.ndarray:
        """Attention patterns ``softmax(X Θ_i Xᵀ)``, shape (n, m, k, k) (or (m, k, k) for one X).

        Entry ``[n, i, a, j]`` is the weight that token ``a`` puts on token ``j``
        in head ``i``; every row sums to one.

        Parameters
        ----------
        X : array_like, shape (k, d) or (n, k, d)
            One sequence of k tokens, or n of them.
        batch : int, optional
            Examples per chunk (default :func:`auto_batch`); the result does not depend on it.

        Returns
        -------
        numpy.ndarray, shape (n, m, k, k) or (m, k, k)
            The weights, one (k, k) row-stochastic matrix per example and head.
        """
        X, single, batch = self._prepare(X, batch)
        n, k, _ = X.shape
        out = np.empty((n, self.m, k, k))
        for sl, _x, p in self._chunks(X, batch):
            # p[n, j, (a, i)] -> out[n, i, a, j]
            out[sl] = p.reshape(-1, k, k, self.m).transpose(0, 3, 2, 1)
        return out[0] if single else out


def attention_patterns(thetas: ArrayLike, X: ArrayLike) -> np.ndarray:
    """Patterns ``softmax(X Θ_i Xᵀ)`` for attention matrices alone, shape (n, m, k, k).

    The same stable, chunked computation as :meth:`AttentionLayer.attention`
    (the projections play no part in the patterns).

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        The attention matrices ``Θ_1..Θ_m``.
    X : array_like, shape (k, d) or (n, k, d)
        The inputs.

    Returns
    -------
    numpy.ndarray, shape (n, m, k, k) or (m, k, k)
        Entry ``[n, i, a, j]``: the weight token ``a`` puts on token ``j`` in head ``i``.
    """
    thetas = np.asarray(thetas, dtype=np.float64)
    return AttentionLayer(thetas, np.zeros_like(thetas)).attention(X)


def head_features(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Φ = softmax(XΘXᵀ) X, shape (n, k, d): the regressors of W for a head with this Θ (``F`` is linear in W given
    the patterns: head i contributes ``Φ_i W_i``).

    Parameters
    ----------
    theta : numpy.ndarray, shape (d, d)
        One head's attention matrix Θ.
    X : numpy.ndarray, shape (n, k, d)
        The inputs.

    Returns
    -------
    numpy.ndarray, shape (n, k, d)
        ``Φ = softmax(XΘXᵀ) X`` per example: each token's attention-weighted mean of the tokens.
    """
    return attention_patterns(theta[None], X)[:, 0] @ X


def layer_jacobian(thetas: np.ndarray, ws: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The Jacobian of ``F(X)`` with respect to (Θ_1..Θ_m, W_1..W_m), shape (n·k·d, 2md²).

    Ours, written out for phase 6's refinement and the noise floor: ``∂F_a/∂W_i = (P_i X)_a ⊗ I`` and, with
    ``v_b = x_bᵀW_i`` and ``x̄ = Σ_b P_i[a,b] x_b``,
    ``∂F_a[e]/∂Θ_i[c, c'] = x_a[c] Σ_b P_i[a,b](x_b[c'] − x̄[c']) v_b[e]``.

    Parameters
    ----------
    thetas : numpy.ndarray, shape (m, d, d)
        The attention matrices Θ_i at which the derivative is taken.
    ws : numpy.ndarray, shape (m, d, d)
        The projections W_i.
    X : numpy.ndarray, shape (n, k, d)
        The inputs.

    Returns
    -------
    numpy.ndarray, shape (n·k·d, 2·m·d²)
        Rows in the order of ``F(X).ravel()`` (example, token, coordinate); columns the entries of
        ``Θ_1..Θ_m`` (the first m·d², row-major) then of ``W_1..W_m``.
    """
    n, k, d = X.shape
    m = len(thetas)
    J = np.zeros((n, k, d, 2, m, d, d))
    eye = np.eye(d)
    patterns = attention_patterns(thetas, X)  # (n, m, k, k)
    for i in range(m):
        P = patterns[:, i]
        Z = P @ X  # (n, a, c)
        V = X @ ws[i]  # (n, b, e)
        PV = P @ V  # (n, a, e)
        C = np.einsum("nab,nbc,nbe->nace", P, X, V) - Z[:, :, :, None] * PV[:, :, None, :]
        J[:, :, :, 0, i] = np.einsum("nac,nape->naecp", X, C)
        J[:, :, :, 1, i] = Z[:, :, None, :, None] * eye[None, None, :, None, :]
    return J.reshape(n * k * d, 2 * m * d * d)
