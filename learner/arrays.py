"""The array backends of phase 6 and of the layer's evaluation: numpy arrays, or torch tensors on a device (ours).

Here too live :func:`require_torch` and :func:`torch_device`, which every device path goes through (the torch
extra is optional): the one place that decides whether this torch build can use a device. Phase 6's refinement
is written once. The operations it needs beyond the array API standard go through the helpers here, which
dispatch on the array's type. A numpy array takes numpy's (or SciPy's) own call, the same bits as a plain numpy
implementation of the refinement. Anything else goes through its array-API
namespace (``array_api_compat.array_namespace``, as SciPy and scikit-learn do it) or, where the standard has no
such function, through torch. Torch and array-api-compat are imported only when a tensor is met.
"""

from __future__ import annotations

import functools
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve

__all__ = ["INSTALL_HINT", "NUMPY", "Backend", "backend", "backend_of", "cholesky_solve", "diag", "empty", "floor_at",
           "is_numpy", "namespace", "permute", "require_torch", "to_device", "to_numpy", "torch_device", "vector_norm",
           "zeros"]

#: What the ``torch`` extra installs; the message of every function that needs torch says so.
INSTALL_HINT = "install the torch extra: pip install -e '.[torch]'"


def require_torch() -> Any:
    """The ``torch`` module, or an ImportError saying how to install the optional ``torch`` extra.

    Returns
    -------
    module
        ``torch``, imported.

    Raises
    ------
    ImportError
        If PyTorch is not installed; the message names :data:`INSTALL_HINT`.
    """
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"this needs PyTorch, which is not installed; {INSTALL_HINT}.") from exc
    return torch


def torch_device(device: Any) -> Any:
    """The ``torch.device`` named by ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a ``torch.device``), or an
    error naming the parameter for any device this torch build cannot use: one message for every such device.

    Parameters
    ----------
    device : str or torch.device
        The device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).

    Returns
    -------
    torch.device
        The device as torch spells it.

    Raises
    ------
    ImportError
        If torch is not installed.
    TypeError
        If ``device`` is neither a string nor a ``torch.device`` (with the ValueError's message).
    ValueError
        If this torch build cannot use the device: a name torch does not know (``"gpu7"``), a CUDA device torch
        does not see (``"cuda"`` on a CPU build, ``"cuda:7"`` beyond the count), or a device type this build was
        not compiled for or cannot hold float64 data on (``"mps"``, ``"xpu"``, ``"xla"``, ``"vulkan"``), and
        ``"meta"``, which holds no data at all. The message lists the devices it can use.

    Notes
    -----
    ``"cpu"`` is always usable and CUDA devices are counted (``torch.cuda.device_count()``, without starting
    CUDA); any other device type is tried once per process by a float64 tensor of one entry put there and read
    back (ours: the layer, the oracle and phase 6 compute in float64 there, and every device path reads its
    results on the host).
    """
    torch = require_torch()
    if not isinstance(device, (str, torch.device)):
        raise TypeError(_unusable(torch, device))
    try:
        with warnings.catch_warnings():  # a deprecated name ('mkldnn') warns before it fails the probe below
            warnings.simplefilter("ignore")
            found = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(_unusable(torch, device)) from None
    if found.type == "cpu":
        return found
    if found.type == "cuda":
        count = _cuda_count(torch)
        if count == 0 or (found.index is not None and not 0 <= found.index < count):
            raise ValueError(_unusable(torch, device))
        return found
    if not _holds_float64(str(found)):
        raise ValueError(_unusable(torch, device))
    return found


def _cuda_count(torch):
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@functools.cache
def _holds_float64(name):
    """Whether a float64 tensor can be made on device ``name`` and read back on the host. Torch's failures here
    have no common type (NotImplementedError, AssertionError, RuntimeError, TypeError, a ModuleNotFoundError), so
    any exception means no."""
    torch = require_torch()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.zeros(1, dtype=torch.float64, device=name).to("cpu").numpy()
    except Exception:
        return False
    return True


def _unusable(torch, device):
    """The one message for a device this torch build cannot use: the devices it can use, and what was given."""
    count = _cuda_count(torch)
    cuda = {0: "", 1: ", 'cuda' or 'cuda:0'"}.get(count, f", 'cuda' or 'cuda:0' to 'cuda:{count - 1}'")
    return (f"`device` must be a device this torch build can use in float64: 'cpu'{cuda} (torch "
            f"{torch.__version__} sees {count} CUDA device{'' if count == 1 else 's'}); got device={device!r}.")


def is_numpy(a: Any) -> bool:
    """Whether ``a`` is a numpy array (the default backend).

    Parameters
    ----------
    a : object
        An array of either backend.

    Returns
    -------
    bool
        True for a ``numpy.ndarray`` (a subclass included), False for a tensor or anything else.
    """
    return isinstance(a, np.ndarray)


def namespace(a: Any) -> Any:
    """``numpy`` for a numpy array, else the array-API namespace of ``a`` (array-api-compat's wrapper for torch).

    Parameters
    ----------
    a : numpy.ndarray or torch.Tensor
        The array.

    Returns
    -------
    module
        ``numpy``, or ``array_api_compat.array_namespace(a)`` (array-api-compat is imported at the first tensor).
    """
    if is_numpy(a):
        return np
    from array_api_compat import array_namespace

    return array_namespace(a)


def to_device(a: Any, device: Any) -> Any:
    """``a`` as a float64 torch tensor on ``device`` (:func:`torch_device` checks the name).

    Parameters
    ----------
    a : array_like
        The data (converted to a float64 numpy array first).
    device : str or torch.device
        Where the tensor lives.

    Returns
    -------
    torch.Tensor
        A float64 copy of ``a`` on ``device``; ``a`` is not shared.
    """
    torch = require_torch()
    return torch.tensor(np.asarray(a, dtype=np.float64), device=torch_device(device))  # a copy: the input stays ours


def _is_tensor(a):
    """Whether ``a`` is a torch tensor, without importing torch: a tensor exists only once torch is imported."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def to_numpy(a: Any) -> np.ndarray:
    """``a`` as a numpy array on the host (a numpy array is returned as it is).

    Parameters
    ----------
    a : numpy.ndarray or torch.Tensor
        The array.

    Returns
    -------
    numpy.ndarray
        ``a`` itself, or the tensor detached and copied to the CPU, of its dtype.
    """
    if is_numpy(a):
        return a
    return a.detach().to("cpu").numpy()


def empty(shape: tuple[int, ...], like: Any) -> Any:
    """An uninitialised float64 array of ``shape`` on ``like``'s backend and device.

    Parameters
    ----------
    shape : tuple of int
        The shape.
    like : numpy.ndarray or torch.Tensor
        An array of the backend and device wanted (a tensor also gives its dtype: float64 in the toolkit).

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The new array; its entries are whatever the memory held.
    """
    if is_numpy(like):
        return np.empty(shape)
    return namespace(like).empty(shape, dtype=like.dtype, device=like.device)


def zeros(shape: tuple[int, ...], like: Any) -> Any:
    """A float64 array of zeros of ``shape`` on ``like``'s backend and device.

    Parameters
    ----------
    shape : tuple of int
        The shape.
    like : numpy.ndarray or torch.Tensor
        An array of the backend and device wanted (a tensor also gives its dtype: float64 in the toolkit).

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The zeros.

    Examples
    --------
    >>> import numpy as np
    >>> zeros((2, 3), like=np.ones(1)).shape
    (2, 3)
    """
    if is_numpy(like):
        return np.zeros(shape)
    return namespace(like).zeros(shape, dtype=like.dtype, device=like.device)


def permute(a: Any, axes: tuple[int, ...]) -> Any:
    """``a`` with its axes in the order ``axes`` (numpy's ``transpose``, the array API's ``permute_dims``).

    Parameters
    ----------
    a : numpy.ndarray or torch.Tensor
        The array.
    axes : tuple of int
        A permutation of ``range(a.ndim)``: axis ``i`` of the result is axis ``axes[i]`` of ``a``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The permuted array (a view for numpy).
    """
    return a.transpose(axes) if is_numpy(a) else namespace(a).permute_dims(a, axes)


def diag(v: Any) -> Any:
    """The square matrix with ``v`` on its diagonal.

    Parameters
    ----------
    v : numpy.ndarray or torch.Tensor
        A vector of length n.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The (n, n) matrix, zero off the diagonal, on ``v``'s backend.
    """
    return np.diag(v) if is_numpy(v) else namespace(v).diag(v)


def floor_at(a: Any, low: float) -> Any:
    """``max(a, low)`` elementwise.

    Parameters
    ----------
    a : numpy.ndarray or torch.Tensor
        The array.
    low : float
        The floor.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        A new array of ``a``'s shape and backend.
    """
    return np.maximum(a, low) if is_numpy(a) else namespace(a).clip(a, min=low)


def vector_norm(a: Any) -> float:
    """The Euclidean norm of ``a``'s entries, as a float.

    Parameters
    ----------
    a : numpy.ndarray or torch.Tensor
        The array, of any shape (a matrix's norm is its Frobenius norm).

    Returns
    -------
    float
        ``sqrt(Σ a²)`` on the host (a tensor that records gradients is read detached).
    """
    return float(np.linalg.norm(a)) if is_numpy(a) else float(to_numpy(namespace(a).linalg.vector_norm(a)))


def cholesky_solve(M: Any, g: Any) -> Any:
    """``M⁻¹g`` for a symmetric positive definite ``M`` by Cholesky, on torch tensors only (the numpy backend's
    callers use SciPy's ``cho_factor``/``cho_solve`` themselves).

    Parameters
    ----------
    M : torch.Tensor, shape (n, n)
        A symmetric positive definite matrix.
    g : torch.Tensor, shape (n,)
        The right-hand side.

    Returns
    -------
    torch.Tensor, shape (n,)
        The solution, on ``M``'s device.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``M`` is not numerically positive definite: numpy's exception, as SciPy's ``cho_factor`` raises on the
        numpy backend, so one ``except`` serves both.
    """
    import torch

    L, info = torch.linalg.cholesky_ex(M)
    if int(info) != 0:
        raise np.linalg.LinAlgError(f"the matrix is not positive definite (minor {int(info)})")
    return torch.cholesky_solve(g[:, None], L)[:, 0]


@dataclass(frozen=True)
class Backend:
    """Where phase 6 and the layer's evaluation compute: numpy on the host, or torch tensors on one device.

    Made once from a device name by :func:`backend`, which checks the name (:func:`torch_device`), or read off an
    array by :func:`backend_of`; the computations ask it, not the arrays' types. On the host every method is numpy's
    (or SciPy's) own call, the same bits as a plain numpy implementation.

    Parameters
    ----------
    device : str or torch.device, optional
        The device, checked on construction (:func:`torch_device`); None (default): numpy on the host.

    Raises
    ------
    ImportError, TypeError, ValueError
        As :func:`torch_device`, for a device this torch build cannot use.

    Examples
    --------
    >>> import numpy as np
    >>> NUMPY.on_host, NUMPY.name, backend(None) is NUMPY
    (True, None, True)
    >>> NUMPY.zeros((2, 3)).shape
    (2, 3)
    """

    device: Any = None

    def __post_init__(self) -> None:
        if self.device is not None:  # a device this build can use, as torch spells it (the one message otherwise)
            object.__setattr__(self, "device", torch_device(self.device))

    @property
    def on_host(self) -> bool:
        """Whether the arrays are numpy arrays on the host."""
        return self.device is None

    @property
    def name(self) -> str | None:
        """The device's name as torch spells it (``"cuda:0"``), None on the host: what records keep."""
        return None if self.device is None else str(self.device)

    def asarray(self, a: Any) -> Any:
        """``a`` as a float64 array of this backend: a numpy array on the host (not copied when it is one), a
        tensor on the device (a copy of host data; a tensor already there is returned as it is).

        Parameters
        ----------
        a : array_like or torch.Tensor
            The data.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The float64 array.
        """
        if self.device is None:
            return np.asarray(to_numpy(a) if _is_tensor(a) else a, dtype=np.float64)
        torch = require_torch()
        if isinstance(a, torch.Tensor):
            return a.to(device=self.device, dtype=torch.float64)
        return torch.tensor(np.asarray(a, dtype=np.float64), device=self.device)

    def empty(self, shape: tuple[int, ...]) -> Any:
        """An uninitialised float64 array of ``shape`` on this backend.

        Parameters
        ----------
        shape : tuple of int
            The shape.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The new array; its entries are whatever the memory held.
        """
        if self.device is None:
            return np.empty(shape)
        torch = require_torch()
        return torch.empty(shape, dtype=torch.float64, device=self.device)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        """A float64 array of zeros of ``shape`` on this backend.

        Parameters
        ----------
        shape : tuple of int
            The shape.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The zeros.
        """
        if self.device is None:
            return np.zeros(shape)
        torch = require_torch()
        return torch.zeros(shape, dtype=torch.float64, device=self.device)

    def concat(self, parts: list[Any], axis: int) -> Any:
        """The arrays ``parts`` joined along ``axis``.

        Parameters
        ----------
        parts : list of numpy.ndarray or torch.Tensor
            Arrays of this backend, of equal shapes but along ``axis``.
        axis : int
            The axis they are joined along.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The joined array.
        """
        return np.concatenate(parts, axis=axis) if self.device is None else namespace(parts[0]).concat(parts, axis=axis)

    def flat_copy(self, a: Any) -> Any:
        """A flat copy of ``a`` that owns its data.

        Parameters
        ----------
        a : numpy.ndarray or torch.Tensor
            An array of this backend.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            Its entries in one axis, copied (changing it leaves ``a`` as it was).
        """
        return a.ravel().copy() if self.device is None else a.reshape(-1).clone()

    def solve_spd(self, M: Any, g: Any) -> Any:
        """``M⁻¹g`` for a symmetric positive definite ``M`` by Cholesky (SciPy's ``cho_factor``/``cho_solve`` on the
        host, :func:`cholesky_solve` on the device).

        Parameters
        ----------
        M : numpy.ndarray or torch.Tensor, shape (n, n)
            A symmetric positive definite matrix of this backend.
        g : numpy.ndarray or torch.Tensor, shape (n,)
            The right-hand side.

        Returns
        -------
        numpy.ndarray or torch.Tensor, shape (n,)
            The solution.

        Raises
        ------
        numpy.linalg.LinAlgError
            On both backends, when ``M`` is not numerically positive definite.
        """
        if self.device is None:
            return cho_solve(cho_factor(M), g)
        return cholesky_solve(M, g)

    @property
    def shares_threads(self) -> bool:
        """Whether a computation here may split its products over threads of this process (the host's BLAS); a
        device runs its own."""
        return self.device is None


#: The host's backend: numpy arrays.
NUMPY = Backend()


def backend(device: Any = None) -> Backend:
    """The backend of ``device``: :data:`NUMPY` for None, a :class:`Backend` for a torch device this build can use
    (checked here, once: :func:`torch_device`'s one message otherwise); a :class:`Backend` is returned as it is.

    Parameters
    ----------
    device : str, torch.device, Backend or None
        The device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).

    Returns
    -------
    Backend
        Where to compute.

    Raises
    ------
    ImportError, TypeError, ValueError
        As :func:`torch_device`.
    """
    if device is None:
        return NUMPY
    if isinstance(device, Backend):
        return device
    return Backend(device)


def backend_of(a: Any) -> Backend:
    """The backend an array lives on: :data:`NUMPY` for a numpy array, its tensor's device otherwise (not checked
    again: the tensor is there).

    Parameters
    ----------
    a : numpy.ndarray or torch.Tensor
        The array.

    Returns
    -------
    Backend
        Its backend.
    """
    if is_numpy(a):
        return NUMPY
    found = object.__new__(Backend)  # the tensor is on its device already: not checked again
    object.__setattr__(found, "device", a.device)
    return found
