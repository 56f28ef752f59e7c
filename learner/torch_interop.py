"""PyTorch in and out: ``nn.MultiheadAttention`` to :class:`~learner.layer.AttentionLayer`, and back.

torch is an optional extra (``pip install -e ".[torch]"``); this module imports
it only when one of its functions is called, so ``import learner`` never needs it.

The correspondence (ours, from torch's documented packing of the weights):
``nn.MultiheadAttention(E, h, bias=False)`` computes, for one sequence
``X ∈ R^{k×E}`` given as query, key and value,

.. math::

    \\operatorname{MHA}(X) = \\sum_{i=1}^{h} \\operatorname{softmax}\\!\\Big(
        \\frac{(X W_{Q,i}^\\top)(X W_{K,i}^\\top)^\\top}{\\sqrt{d_h}}\\Big)\\,
        X W_{V,i}^\\top\\, W_O[:, s_i]^\\top,

where ``d_h = E/h``, ``s_i = i·d_h .. (i+1)·d_h − 1``, ``W_{Q,i}``, ``W_{K,i}``,
``W_{V,i}`` are rows ``s_i`` of the query, key and value blocks of
``in_proj_weight`` (stacked q, k, v, each ``E × E``) and ``W_O`` is
``out_proj.weight``. That is the paper's layer with

.. math::

    \\Theta_i = W_{Q,i}^\\top W_{K,i} / \\sqrt{d_h}, \\qquad W_i = W_{V,i}^\\top W_O[:, s_i]^\\top,

so every head of a torch layer has ``rank Θ_i ≤ d_h`` and ``rank W_i ≤ d_h``:
low-rank heads, which the paper's model allows (its ``Θ_i`` and ``W_i`` are
any ``d × d`` matrices) but which sit at the edge of its non-degeneracy
conditions (:func:`learner.assumptions`; the README's torch section has the
report of default-initialised torch layers).

Biases, ``add_bias_kv``, ``add_zero_attn``, separate key/value dimensions and
attention masks have no counterpart in the paper's form and are refused with
:class:`TorchConversionError`. Dropout is not refused: the layer is the
module's function in evaluation mode (dropout off).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .arrays import require_torch, torch_device  # their home is learner.arrays; listed here too, where users look
from .errors import TorchConversionError
from .layer import AttentionLayer
from .validation import check_positive_float

if TYPE_CHECKING:
    from pathlib import Path

    from .hints import PathLike

__all__ = [
    "AttentionModule",  # noqa: F822 — built on first access by the module __getattr__ (imports torch)
    "from_torch",
    "describe_heads",
    "load_torch_layer",
    "need_torch",
    "require_torch",
    "save_torch_layer",
    "to_torch",
    "to_torch_mha",
    "torch_device", "torch_dtype", "DTYPES"]

#: The parameter dtypes :func:`to_torch` and :func:`to_torch_mha` build modules in (float64 keeps the layer's
#: parameters bit for bit).
DTYPES = ("float64", "float32")
#: Singular values below ``RANK_RTOL · σ_max`` count as zero in :func:`to_torch_mha`'s ranks (ours): far above the
#: float64 rounding of a product of factors (~1e-16 relative), far below the smallest singular value of a random
#: full-rank d × d matrix at the toolkit's sizes (~1e-3 relative).
RANK_RTOL = 1e-9


def need_torch(option: str) -> None:
    """Check that torch is installed before a command runs, or raise a ValueError (one line on a command line)
    that names ``option`` and says how to install the extra.

    Parameters
    ----------
    option : str
        The command-line option that needs torch (``--torch-layer``), named at the start of the message.

    Raises
    ------
    ValueError
        If torch is not installed.
    """
    try:
        require_torch()
    except ImportError as exc:
        raise ValueError(f"{option}: {exc}") from None


def torch_dtype(dtype: str) -> Any:
    """The torch dtype named ``dtype`` (one of :data:`DTYPES`), or a ValueError naming it.

    Parameters
    ----------
    dtype : {"float64", "float32"}
        The dtype's name.

    Returns
    -------
    torch.dtype
        ``torch.float64`` or ``torch.float32``.

    Raises
    ------
    ValueError
        If ``dtype`` is not one of :data:`DTYPES` (checked before torch is imported).
    ImportError
        If torch is not installed.
    """
    if dtype not in DTYPES:
        raise ValueError(f"`dtype` must be one of {DTYPES}; got dtype={dtype!r}.")
    return getattr(require_torch(), dtype)


def _numpy(tensor):
    if tensor.is_meta:
        raise TorchConversionError("the torch layer's weights are on the meta device (shapes without values): "
                                   "materialise it first (module.to_empty(device='cpu') and load its weights).")
    return tensor.detach().to("cpu").double().numpy().copy()


#: Relative output difference allowed between a torch module and the layer converted from (or to) it, by the
#: module's dtype (ours): about 10⁶ times the unit roundoff, far below what a wrong head count or a missed flag
#: gives (measured: 7 % for a 4-head module read as 2 heads, 33 % for add_zero_attn).
OUTPUT_RTOL = {"float64": 1e-9, "float32": 1e-3, "bfloat16": 5e-2, "float16": 2e-2}


def _output_difference(mha, layer, *, n=64, k=3):
    """Relative difference of ``mha(X, X, X)`` (evaluation mode, no grad) and ``layer(X)`` on ``n`` random
    Gaussian inputs of ``k`` tokens, drawn from a fixed seed in the module's dtype and device."""
    torch = require_torch()
    param = next(mha.parameters())
    gen = np.random.default_rng(20250402)
    Xt = torch.from_numpy(gen.standard_normal((n, k, layer.d))).to(dtype=param.dtype, device=param.device)
    mine = layer(_numpy(Xt))  # the inputs as the module sees them, in float64
    if not mha.batch_first:
        Xt = Xt.transpose(0, 1)
    was_training = mha.training
    mha.eval()
    try:
        with torch.no_grad():
            out = mha(Xt, Xt, Xt, need_weights=False)[0]
    finally:
        mha.train(was_training)
    theirs = _numpy(out if mha.batch_first else out.transpose(0, 1))
    scale = float(np.linalg.norm(theirs))
    diff = float(np.linalg.norm(theirs - mine))
    return diff / scale if scale > 0 else diff


def _check_output(mha, layer, what):
    """Raise TorchConversionError if ``mha`` and ``layer`` differ beyond :data:`OUTPUT_RTOL` on random inputs."""
    dtype = str(next(mha.parameters()).dtype).removeprefix("torch.")
    rtol = OUTPUT_RTOL.get(dtype, 1e-3)
    diff = _output_difference(mha, layer)
    if not diff <= rtol:  # a NaN difference fails too
        raise TorchConversionError(
            f"{what}: the module's output and the layer's differ by {diff:.3g} (relative, on 64 random inputs), "
            f"more than {rtol:g} for {dtype}; the module computes something the paper's layer does not "
            "(a changed forward, hooks, or settings the conversion cannot see).")
    return diff


_MODULE_CLASS = None


def _module_class():
    """The :class:`AttentionModule` class, defined on first use (it subclasses ``torch.nn.Module``)."""
    global _MODULE_CLASS
    if _MODULE_CLASS is not None:
        return _MODULE_CLASS
    torch = require_torch()
    module_base: Any = torch.nn.Module  # torch is imported here, at first use: a base class known at run time only

    class AttentionModule(module_base):
        """``F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i`` as a torch module: ``thetas`` and ``ws`` (m, d, d) are its parameters.

        ``forward(X)`` takes ``X`` of shape (..., k, d) and returns ``F(X)`` of the same shape;
        ``attention(X)`` returns the patterns, shape (..., m, k, k). ``torch.softmax`` subtracts the
        row maximum (stable). No ``1/√d`` scaling and no mask: the paper's definition, as
        :class:`~learner.layer.AttentionLayer`. Built by :func:`to_torch`; the class itself is defined when
        ``learner.torch_interop.AttentionModule`` is first used (torch is imported then).

        Parameters
        ----------
        thetas : torch.Tensor, shape (m, d, d)
            The attention matrices ``Θ_i``; they become the parameter ``thetas`` (trainable).
        ws : torch.Tensor, shape (m, d, d)
            The projections ``W_i``; they become the parameter ``ws``.
        """

        def __init__(self, thetas, ws):
            super().__init__()
            self.thetas = torch.nn.Parameter(thetas)
            self.ws = torch.nn.Parameter(ws)

        @property
        def m(self):
            """Number of heads."""
            return self.thetas.shape[0]

        @property
        def d(self):
            """Token dimension."""
            return self.thetas.shape[1]

        def attention(self, X):
            """The attention patterns ``softmax(X Θ_i Xᵀ)``, with autograd.

            Parameters
            ----------
            X : torch.Tensor, shape (..., k, d)
                Inputs of the parameters' dtype and device.

            Returns
            -------
            torch.Tensor, shape (..., m, k, k)
                Entry ``[..., i, a, j]``: the weight token ``a`` puts on token ``j`` in head ``i``.
            """
            logits = torch.einsum("...ac,ice,...be->...iab", X, self.thetas, X)
            return torch.softmax(logits, dim=-1)

        def forward(self, X):
            """``F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i`` for ``X`` of shape ``(..., k, d)``; the same shape back.

            Parameters
            ----------
            X : torch.Tensor, shape (..., k, d)
                Inputs of the parameters' dtype and device.

            Returns
            -------
            torch.Tensor, shape (..., k, d)
                ``F(X)``, differentiable in ``thetas`` and ``ws``.
            """
            return torch.einsum("...iab,...bc,ice->...ae", self.attention(X), X, self.ws)

        def extra_repr(self):
            """The module's line in its ``repr``: ``m=..., d=..., dtype=...``.

            Returns
            -------
            str
                The heads, the dimension and the parameters' dtype.
            """
            return f"m={self.m}, d={self.d}, dtype={self.thetas.dtype}"

    AttentionModule.__module__ = __name__
    AttentionModule.__qualname__ = "AttentionModule"
    _MODULE_CLASS = AttentionModule
    return AttentionModule


def __getattr__(name):
    # `learner.torch_interop.AttentionModule` is the class, built (and torch imported) on first access.
    if name == "AttentionModule":
        return _module_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_torch(layer: AttentionLayer, *, dtype: str = "float64") -> Any:
    """The layer as a torch module that computes ``F`` exactly, with ``Θ_i`` and ``W_i`` as parameters.

    Parameters
    ----------
    layer : AttentionLayer
        The layer to convert (any m and d).
    dtype : {"float64", "float32"}
        The parameters' dtype; float64 keeps them bit for bit (``from_torch`` gives the layer back exactly).

    Returns
    -------
    AttentionModule
        ``module(X)`` for ``X`` of shape (..., k, d) equals ``layer(X)`` up to the rounding of the
        einsum order (float64: ~1e-15 relative).

    Raises
    ------
    TypeError
        If ``layer`` is not an AttentionLayer.
    ValueError
        If ``dtype`` is not one of ``DTYPES``.
    ImportError
        If torch is not installed.

    See Also
    --------
    from_torch : The way back, exact from an ``AttentionModule``.
    to_torch_mha : An ``nn.MultiheadAttention`` instead, for layers of low-rank heads.
    learner.baselines.fit_torch : Trains such a module by gradient descent.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(2, 4, check=False, rng=0)
    >>> module = to_torch(layer)
    >>> module
    AttentionModule(m=2, d=4, dtype=torch.float64)
    >>> X = sample_inputs(3, 2, 4, rng=1)
    >>> bool(np.allclose(module(torch.from_numpy(X)).detach().numpy(), layer(X)))
    True
    >>> bool(np.array_equal(from_torch(module).thetas, layer.thetas))  # float64: bit for bit
    True
    """
    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
    torch = require_torch()
    dt = torch_dtype(dtype)
    cls = _module_class()
    # np.array copies: the layer's arrays are read-only and torch wants writable buffers.
    return cls(torch.from_numpy(np.array(layer.thetas)).to(dt), torch.from_numpy(np.array(layer.ws)).to(dt))


def _ranks(mats, rtol):
    out = []
    for mat in mats:
        s = np.linalg.svd(mat, compute_uv=False)
        out.append(int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0)
    return out


def _factor(mat, width, rtol):
    """``(A, B)`` of shape (width, d) with ``Aᵀ B = mat``.

    The SVD, split as √S on each side; zero rows past the rank."""
    d = mat.shape[0]
    u, s, vt = np.linalg.svd(mat)
    r = int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0
    A, B = np.zeros((width, d)), np.zeros((width, d))
    root = np.sqrt(s[:r])
    A[:r] = (u[:, :r] * root).T
    B[:r] = root[:, None] * vt[:r]
    return A, B


def to_torch_mha(layer: AttentionLayer, *, dtype: str = "float64", batch_first: bool = False,
                 rank_rtol: float = RANK_RTOL) -> Any:
    """An ``nn.MultiheadAttention(d, m, bias=False)`` computing the layer, where every head has rank ≤ d/m.

    Each ``√d_h·Θ_i`` and ``W_i`` is factored by its SVD, ``U S Vᵀ = (U√S)(√S Vᵀ)``: the query rows
    ``s_i`` get ``(U√S)ᵀ``, the key rows ``√S Vᵀ`` (so ``W_{Q,i}ᵀ W_{K,i}/√d_h = Θ_i``), the value rows
    and the ``s_i`` columns of ``out_proj`` likewise for ``W_i``; rows past the rank are zero. The
    result equals the layer to about ``rank_rtol`` relative (exactly, up to rounding, for heads of exact
    rank ≤ d/m, such as those of :func:`from_torch`).

    Parameters
    ----------
    layer : AttentionLayer
        The layer; ``m`` must divide ``d``.
    dtype : {"float64", "float32"}
        The module's dtype.
    batch_first : bool
        Passed to ``nn.MultiheadAttention`` (the layout of its inputs; the function is the same).
    rank_rtol : float
        Singular values at most ``rank_rtol · σ_max`` of their matrix count as zero; in (0, 1), default
        ``RANK_RTOL`` (1e-9). At the default or below, the module's output is checked against the layer's on random
        inputs; a larger value drops singular values by design, and nothing is checked.

    Returns
    -------
    torch.nn.MultiheadAttention
        ``nn.MultiheadAttention(d, m, bias=False)`` in evaluation mode, its ``in_proj_weight`` and
        ``out_proj.weight`` set from the factors.

    Raises
    ------
    TorchConversionError
        If ``m`` does not divide ``d`` or some ``Θ_i`` or ``W_i`` has rank above ``d/m`` (the ranks are named),
        or if the module's output does not match the layer's.
    TypeError
        If ``layer`` is not an AttentionLayer, or ``batch_first`` not a bool.
    ValueError
        If ``dtype`` or ``rank_rtol`` is out of range.
    ImportError
        If torch is not installed.

    See Also
    --------
    to_torch : Any layer, as a module of its own (no rank limit).
    from_torch : The way back.
    describe_heads : The ranks the conversion needs, of a layer.

    Examples
    --------
    A layer read from a torch module has heads of rank at most d/m, so it goes back:

    >>> import numpy as np
    >>> import torch
    >>> from learner import random_layer
    >>> _ = torch.manual_seed(0)
    >>> layer = from_torch(torch.nn.MultiheadAttention(4, 2, bias=False, dtype=torch.float64))
    >>> mha = to_torch_mha(layer)
    >>> mha.num_heads, bool(np.allclose(from_torch(mha).thetas, layer.thetas))
    (2, True)

    A random layer's heads are of full rank, which torch's heads cannot be:

    >>> to_torch_mha(random_layer(2, 4, check=False, rng=0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    learner.errors.TorchConversionError: a torch head has rank at most d/m = 2; ... are Θ: [4, 4], W: [4, 4]. ...
    """
    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
    rank_rtol = check_positive_float("rank_rtol", rank_rtol)
    if rank_rtol >= 1:
        raise ValueError("`rank_rtol` must be below 1 (singular values at most rank_rtol·σ_max count as zero, so "
                         f"1 or more discards every one); got rank_rtol={rank_rtol!r}.")
    if not isinstance(batch_first, (bool, np.bool_)):
        raise TypeError(f"`batch_first` must be a bool; got batch_first={batch_first!r}.")
    torch = require_torch()
    dt = torch_dtype(dtype)
    m, d = layer.m, layer.d
    if d % m:
        raise TorchConversionError(f"nn.MultiheadAttention needs num_heads to divide embed_dim; got m={m}, d={d}.")
    dh = d // m
    theta_ranks, w_ranks = _ranks(layer.thetas, rank_rtol), _ranks(layer.ws, rank_rtol)
    if max(theta_ranks + w_ranks) > dh:
        raise TorchConversionError(
            f"a torch head has rank at most d/m = {dh}; this layer's ranks (singular values above "
            f"rank_rtol={rank_rtol:g}·σ_max) are Θ: {theta_ranks}, W: {w_ranks}. Use to_torch for any layer.")
    q, k, v = np.zeros((d, d)), np.zeros((d, d)), np.zeros((d, d))
    out = np.zeros((d, d))
    for i in range(m):
        s = slice(i * dh, (i + 1) * dh)
        q[s], k[s] = _factor(math.sqrt(dh) * layer.thetas[i], dh, rank_rtol)
        a, b = _factor(layer.ws[i], dh, rank_rtol)
        v[s], out[:, s] = a, b.T
    mha = torch.nn.MultiheadAttention(d, m, bias=False, batch_first=batch_first, dtype=dt)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([q, k, v])))
        mha.out_proj.weight.copy_(torch.from_numpy(out))
    mha.eval()
    if rank_rtol <= RANK_RTOL:  # heads within the rank: the module must compute the layer (singular values
        _check_output(mha, layer, "to_torch_mha")  # dropped by a larger rank_rtol change it by design)
    return mha


#: The state-dict keys of the forms the paper has no counterpart for, and why.
_REFUSED_KEYS = {
    "in_proj_bias": "biases (bias=True)",
    "out_proj.bias": "biases (bias=True)",
    "bias_k": "add_bias_kv=True",
    "bias_v": "add_bias_kv=True",
    "q_proj_weight": "separate key/value dimensions (kdim or vdim != embed_dim)",
    "k_proj_weight": "separate key/value dimensions (kdim or vdim != embed_dim)",
    "v_proj_weight": "separate key/value dimensions (kdim or vdim != embed_dim)",
}


def _refuse(what):
    raise TorchConversionError(
        f"the paper's layer F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i has no counterpart for {what}; "
        "only nn.MultiheadAttention(embed_dim, num_heads, bias=False) with kdim = vdim = embed_dim, "
        "add_bias_kv=False, add_zero_attn=False and no mask converts.")


def _from_state(state, num_heads):
    torch = require_torch()
    for key, what in _REFUSED_KEYS.items():
        if state.get(key) is not None:
            _refuse(what)
    missing = [key for key in ("in_proj_weight", "out_proj.weight") if key not in state]
    unknown = sorted(set(state) - {"in_proj_weight", "out_proj.weight"} - set(_REFUSED_KEYS))
    if missing or unknown:
        raise TorchConversionError(
            f"not a state dict of nn.MultiheadAttention: missing {missing}, unexpected {unknown} "
            f"(got keys {sorted(state)}).")
    w_in, w_out = state["in_proj_weight"], state["out_proj.weight"]
    for key, value in (("in_proj_weight", w_in), ("out_proj.weight", w_out)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"state[{key!r}] must be a torch.Tensor; got {type(value).__name__}.")
        if value.is_complex() or not value.is_floating_point():
            raise TorchConversionError(f"state[{key!r}] must hold real floating-point numbers; got {value.dtype}.")
        if value.is_meta:
            raise TorchConversionError(f"state[{key!r}] is on the meta device (a shape without values); "
                                       "materialise the module before saving its state dict.")
    E = w_out.shape[-1]
    if tuple(w_out.shape) != (E, E) or tuple(w_in.shape) != (3 * E, E):
        raise TorchConversionError(
            f"in_proj_weight must have shape (3E, E) and out_proj.weight (E, E); got {tuple(w_in.shape)} "
            f"and {tuple(w_out.shape)}.")
    if isinstance(num_heads, (bool, np.bool_)) or not isinstance(num_heads, (int, np.integer)):
        raise TypeError(f"`num_heads` must be an integer; got num_heads={num_heads!r}.")
    if num_heads < 1 or E % num_heads:
        raise ValueError(f"`num_heads` must be a positive divisor of embed_dim={E}; got num_heads={num_heads}.")
    h, dh = int(num_heads), E // int(num_heads)
    w_in, w_out = _numpy(w_in), _numpy(w_out)
    if not (np.isfinite(w_in).all() and np.isfinite(w_out).all()):
        raise TorchConversionError("the torch layer's weights must be finite; got inf or nan.")
    wq, wk, wv = w_in[:E], w_in[E : 2 * E], w_in[2 * E :]
    thetas, ws = np.empty((h, E, E)), np.empty((h, E, E))
    for i in range(h):
        s = slice(i * dh, (i + 1) * dh)
        thetas[i] = wq[s].T @ wk[s] / math.sqrt(dh)
        ws[i] = wv[s].T @ w_out[:, s].T
    return AttentionLayer(thetas, ws)


def from_torch(mha: Any, *, num_heads: int | None = None, attn_mask: Any = None, key_padding_mask: Any = None,
               is_causal: bool = False) -> AttentionLayer:
    """The paper's layer computed by a torch attention layer.

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention, AttentionModule or mapping
        An ``nn.MultiheadAttention`` with ``bias=False`` (any ``batch_first``), an
        :class:`AttentionModule` (from :func:`to_torch`: converted exactly), or the
        ``state_dict()`` of an ``nn.MultiheadAttention`` (then ``num_heads`` is needed: a state
        dict does not record it, nor ``add_zero_attn``, which the caller must know is off).
    num_heads : int, optional
        The torch layer's heads; for a module, must equal ``mha.num_heads`` when given.
    attn_mask, key_padding_mask, is_causal
        The masks the layer is used with, if any: they are refused (the paper's layer has none);
        they are parameters so that code passing its masks along fails loudly rather than
        converting a different function.

    Returns
    -------
    AttentionLayer
        ``m = num_heads`` heads, ``d = embed_dim``; ``Θ_i = W_{Q,i}ᵀ W_{K,i}/√d_h`` and
        ``W_i = W_{V,i}ᵀ W_O[:, s_i]ᵀ`` (module docstring), computed in float64 from the weights.
        Its forward pass equals ``mha(X, X, X, need_weights=False)`` in evaluation mode, and its
        :meth:`~learner.layer.AttentionLayer.attention` torch's per-head weights
        (``average_attn_weights=False``), to rounding.

    Raises
    ------
    TorchConversionError
        For what has no counterpart in the paper's form: biases, ``add_bias_kv``, ``add_zero_attn``,
        separate key/value dimensions, masks; or a mapping that is not such a state dict.
    TypeError, ValueError
        For ``mha`` of another type and a bad ``num_heads``.
    ImportError
        If torch is not installed.

    See Also
    --------
    to_torch : The way back, as an ``AttentionModule``.
    to_torch_mha : The way back, as an ``nn.MultiheadAttention``.
    load_torch_layer : The same from a file.
    describe_heads : What the head count implies for the converted layer.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> mha = torch.nn.MultiheadAttention(4, 2, bias=False, dtype=torch.float64)
    >>> layer = from_torch(mha)
    >>> layer
    AttentionLayer(m=2, d=4)
    >>> X = torch.randn(5, 3, 4, dtype=torch.float64)  # 5 sequences of 3 tokens (batch_first=False: sequence first)
    >>> with torch.no_grad():
    ...     out = mha(X, X, X, need_weights=False)[0]
    >>> bool(np.allclose(out.transpose(0, 1).numpy(), layer(X.transpose(0, 1).numpy())))
    True
    >>> from_torch(torch.nn.MultiheadAttention(4, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    learner.errors.TorchConversionError: the paper's layer ... has no counterpart for biases (bias=True); ...
    """
    torch = require_torch()
    if attn_mask is not None or key_padding_mask is not None or is_causal:
        given = [name for name, value in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask))
                 if value is not None] + (["is_causal=True"] if is_causal else [])
        _refuse(f"attention masks (got {', '.join(given)})")
    if isinstance(mha, _module_class()):
        if num_heads is not None and num_heads != mha.m:
            raise ValueError(f"`num_heads` must match the module's {mha.m} heads; got num_heads={num_heads}.")
        return AttentionLayer(_numpy(mha.thetas), _numpy(mha.ws))
    if isinstance(mha, torch.nn.MultiheadAttention):
        if not mha._qkv_same_embed_dim:
            _refuse(f"separate key/value dimensions (kdim={mha.kdim}, vdim={mha.vdim}, embed_dim={mha.embed_dim})")
        if mha.add_zero_attn:
            _refuse("add_zero_attn=True")
        if num_heads is not None and num_heads != mha.num_heads:
            raise ValueError(f"`num_heads` must match the module's {mha.num_heads} heads; got num_heads={num_heads}.")
        state = {key: value for key, value in mha.state_dict().items()}
        layer = _from_state(state, mha.num_heads)
        _check_output(mha, layer, "from_torch")
        return layer
    if isinstance(mha, Mapping):
        if num_heads is None:
            raise ValueError("`num_heads` is needed to convert a state dict (it does not record the heads); "
                             "got num_heads=None.")
        return _from_state(dict(mha), num_heads)
    raise TypeError(f"`mha` must be an nn.MultiheadAttention, an AttentionModule or a state dict; "
                    f"got {type(mha).__name__}.")


#: What :func:`save_torch_layer` writes: a dict with this ``format`` and ``schema_version``, the state dict, and
#: what a state dict does not record (the head count and the flags).
TORCH_FILE_FORMAT = "attention-torch-layer"
TORCH_FILE_SCHEMA = 1  # ours: the first layout; a new layout gets a new number


def save_torch_layer(mha: Any, path: PathLike) -> Path:
    """Save an ``nn.MultiheadAttention`` with what its state dict does not record: ``num_heads``,
    ``add_zero_attn``, ``batch_first`` (read back by :func:`load_torch_layer` without asking for them).

    The module is converted first (:func:`from_torch`, which checks it against its own output), so a
    module the paper's layer cannot express is refused before anything is written; the file is written
    atomically with ``torch.save`` and loads with ``torch.load(weights_only=True)``.

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention
        The module.
    path : str or os.PathLike
        The file (``.pt`` by custom; any name).

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    TypeError
        If ``mha`` is not an ``nn.MultiheadAttention``.
    TorchConversionError
        If :func:`from_torch` refuses it.
    ValueError
        If :func:`~learner.io.write_target` refuses the path.
    """
    from pathlib import Path

    from .io import atomic_write

    torch = require_torch()
    if not isinstance(mha, torch.nn.MultiheadAttention):
        raise TypeError(f"`mha` must be an nn.MultiheadAttention; got {type(mha).__name__}.")
    from_torch(mha)
    record = {"format": TORCH_FILE_FORMAT, "schema_version": TORCH_FILE_SCHEMA, "num_heads": int(mha.num_heads),
              "embed_dim": int(mha.embed_dim), "add_zero_attn": bool(mha.add_zero_attn),
              "batch_first": bool(mha.batch_first), "state_dict": dict(mha.state_dict())}
    atomic_write(path, lambda fh: torch.save(record, fh))
    return Path(path)


def _read_recorded(state, path, num_heads):
    """The state dict and head count of a file written by :func:`save_torch_layer`."""
    version = state.get("schema_version")
    if version != TORCH_FILE_SCHEMA:
        raise TorchConversionError(f"{path!r} is an {TORCH_FILE_FORMAT} file of schema_version {version!r}; "
                                   f"this version reads {TORCH_FILE_SCHEMA}.")
    recorded = state.get("num_heads")
    if isinstance(recorded, bool) or not isinstance(recorded, int) or not isinstance(state.get("state_dict"), Mapping):
        raise TorchConversionError(f"{path!r}: its num_heads ({recorded!r}) or state_dict is missing or malformed.")
    if state.get("add_zero_attn"):
        _refuse("add_zero_attn=True (recorded in the file)")
    if num_heads is not None and num_heads != recorded:
        raise ValueError(f"`num_heads` must match the {recorded} heads recorded in {path!r}; "
                         f"got num_heads={num_heads}.")
    return dict(state["state_dict"]), recorded


def load_torch_layer(path: PathLike, *, num_heads: int | None = None) -> AttentionLayer:
    """The layer of a saved ``nn.MultiheadAttention``: a :func:`save_torch_layer` file, or a bare state dict
    saved with ``torch.save(mha.state_dict(), path)``.

    Loaded with ``torch.load(..., weights_only=True)``: tensors and plain containers only, never
    arbitrary pickled objects (a whole pickled module is refused with a message saying to save its
    state dict). A :func:`save_torch_layer` file records the head count and the flags (``num_heads``,
    when given, must match it). A bare state dict records neither: ``num_heads`` is required, and
    nothing can tell a wrong one (any divisor of ``embed_dim`` gives *a* layer, another function;
    :func:`describe_heads` says what the count implies) nor ``add_zero_attn=True`` (a different
    function too), so prefer :func:`save_torch_layer`.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    num_heads : int, optional
        The module's heads: required for a bare state dict; for a :func:`save_torch_layer` file, checked against
        the recorded count when given.

    Returns
    -------
    AttentionLayer
        The layer, as :func:`from_torch` converts the state dict (``num_heads`` heads, ``d = embed_dim``).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    TorchConversionError
        If the file is not a state dict of a convertible layer.
    ValueError
        For a bare state dict without ``num_heads``, or a ``num_heads`` other than the recorded one.

    See Also
    --------
    save_torch_layer : Writes the file this reads best.
    from_torch : The same from a module in memory.
    learner.load_layer : The toolkit's own ``.npz`` layer files.

    Examples
    --------
    >>> import os, tempfile
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> mha = torch.nn.MultiheadAttention(4, 2, bias=False, dtype=torch.float64)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     saved = load_torch_layer(save_torch_layer(mha, os.path.join(tmp, "mha.pt")))
    ...     torch.save(mha.state_dict(), os.path.join(tmp, "state.pt"))
    ...     bare = load_torch_layer(os.path.join(tmp, "state.pt"), num_heads=2)  # a bare state dict: say the heads
    >>> saved, bool((saved.thetas == bare.thetas).all())
    (AttentionLayer(m=2, d=4), True)
    """
    import os

    torch = require_torch()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"torch layer file not found: {path!r}.")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 — torch raises UnpicklingError/RuntimeError for refused content
        raise TorchConversionError(
            f"{path!r} could not be loaded with torch.load(weights_only=True) ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); save the layer's state dict: "
            "torch.save(mha.state_dict(), path).") from exc
    if not isinstance(state, Mapping):
        raise TorchConversionError(f"{path!r} holds a {type(state).__name__}, not a state dict; save "
                                   "torch.save(mha.state_dict(), path).")
    if state.get("format") == TORCH_FILE_FORMAT:
        state, num_heads = _read_recorded(state, path, num_heads)
    elif num_heads is None:
        raise ValueError(f"`num_heads` is needed for {path!r}: a bare state dict does not record its head count "
                         "(save the module with learner.torch_interop.save_torch_layer to record it); "
                         "got num_heads=None.")
    return from_torch(state, num_heads=num_heads)


def describe_heads(layer: AttentionLayer) -> str:
    """One line on what a head count implies for a converted layer: the head dimension and each head's ranks.

    With ``m`` heads of ``d``, torch's head dimension is ``d/m`` and every ``Θ_i``, ``W_i`` has rank at most
    ``d/m``; a head count other than the module's gives other ranks and another scale ``1/√(d/m)``.

    Parameters
    ----------
    layer : AttentionLayer
        A converted layer.

    Returns
    -------
    str
        ``"m heads of embed_dim d: head dim d//m; ranks of Θ_i [...], of W_i [...] (each at most the head dim)"``,
        the ranks counted as in :func:`to_torch_mha` (``RANK_RTOL`` = 1e-9).
    """
    dh = layer.d // layer.m
    heads = f"{layer.m} head{'s' if layer.m > 1 else ''}"
    return (f"{heads} of embed_dim {layer.d}: head dim {dh}; ranks of Θ_i {_ranks(layer.thetas, RANK_RTOL)}, "
            f"of W_i {_ranks(layer.ws, RANK_RTOL)} (each at most the head dim)")
