"""Phase 6's Gauss–Newton steps without the normal equations: conjugate gradients on the projected Jacobian (ours).

The refinement (:func:`learner.phases.search.refit`, ``refine="vp"``) is Levenberg–Marquardt on the ``md²``
entries of the ``Θ``'s with the ``W``'s solved exactly (variable projection, Kaufman's Jacobian
``J = P⊥ J_Θ``). Each step solves ``(JᵀJ + λS) δ = −Jᵀr``. Formed explicitly, ``JᵀJ`` is an ``md² × md²`` matrix
whose projection term alone costs ``2·(md·d)·(md²)²`` flops — 4·10¹² at (m, d) = (13, 32), a quarter of an hour
per step on two cores. This module solves the same equations by preconditioned conjugate gradients and never
forms ``JᵀJ``:

* **Products with J and Jᵀ from the layer's structure.** A row ``N = (n, a)`` of ``J_Θ`` for output ``e`` is
  ``x_N ⊗ G_N[:, e]`` with ``G_N^{(i)} = Σ_b P_i[a, b] (x_b − x̄_{i,a}) v_{i,b}ᵀ`` (``v_{i,b} = W_iᵀx_b``,
  ``x̄_{i,a} = Σ_b P_i[a, b] x_b``): a sum of ``k`` outer products. So ``J_Θ δ`` needs ``x_Nᵀ δ_i`` (one
  ``(nk × d)·(d × md)`` product) and ``k`` dot products per row and head, and ``J_Θᵀ u`` the transposed sequence;
  the projection ``P⊥ = I − QQᵀ`` (``Q`` the thin QR basis of the ``W`` design, shared by the ``d`` output columns)
  costs two ``(nk × md)`` products. One product with ``JᵀJ`` is ``O(nk·md·d)`` flops, no ``(md²)²`` array.
* **A block-diagonal preconditioner**: per head, the ``d² × d²`` block ``Σ_N (x_N x_Nᵀ) ⊗ (G_N^{(i)}
  G_N^{(i)ᵀ})`` of ``J_ΘᵀJ_Θ`` (the projection left out) plus the damping, factorised by Cholesky:
  ``2·nk·d⁴`` flops per head to form, ``d⁶/3`` to factorise.
* **The damping's scale** ``S`` is the diagonal of those blocks (Marquardt's scaling of the unprojected
  Gauss–Newton matrix; the normal-equation solver scales by the projected one's diagonal). The two solvers take
  different steps to the same minimiser: on noiseless labels both end at float64's rounding floor.

CG stops at a residual of :data:`CG_TOL` relative to ``‖Jᵀr‖`` or after :data:`CG_MAX_ITER` iterations; an
inexact step is still a descent direction, and Levenberg–Marquardt keeps a step only if it lowers the residual.
Measured (ours, ``python -m learner bench --refinement``, one BLAS thread on an idle 2-core machine, from the
planted ``Θ``'s moved 1 % of their norm, noiseless labels): at (m, d, k) = (10, 24, 2) the normal equations took
88 s (14 evaluations), conjugate gradients 6.4 s (9 evaluations), both ending at a relative residual near 1e-30
with ``Θ``'s 7e-15 of their norm apart; at (8, 24, 2) 53 s against 5.8 s. ``python -m learner bench --profile``
splits either into its steps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import cho_factor, cho_solve

__all__ = ["CG_MAX_ITER", "CG_MIN_UNKNOWNS", "CG_TOL", "SOLVERS", "ProjectedJacobian", "choose_solver",
           "conjugate_gradient"]

#: The step solvers of the refinement (``LearnConfig.refine_solver``).
SOLVERS = ("auto", "normal", "cg")
#: ``"auto"`` solves by conjugate gradients from this many unknowns ``md²`` on (ours, measured with ``python -m
#: learner bench --refinement``, one BLAS thread, an idle 2-core machine: CG took 0.88 times the normal equations'
#: speed at (2, 12, 2), 288 unknowns; 1.2 times at 576; 4.3 times at 1,024; 13.8 times at (10, 24, 2), 5,760).
CG_MIN_UNKNOWNS = 1024

#: CG's stopping residual, relative to the right-hand side ``‖Jᵀr‖`` (ours, not tuned: a step solved this well
#: is a Gauss–Newton step to ten digits, so Levenberg–Marquardt still converges to the rounding floor).
CG_TOL = 1e-10
#: CG's cap on iterations per step (ours, not tuned: 100–150 were used per step at (8, 24, 2)).
CG_MAX_ITER = 2000


class ProjectedJacobian:
    """Products with Kaufman's Jacobian ``J = P⊥ J_Θ`` of the refinement, and its block preconditioner.

    Parameters
    ----------
    X : ndarray, shape (n, k, d)
        The refinement's inputs.
    ws : ndarray, shape (m, d, d)
        The ``W``'s solved at the current ``Θ``'s.
    patterns : ndarray, shape (n, m, k, k)
        The attention patterns at the current ``Θ``'s.
    Q : ndarray, shape (n·k, q)
        Orthonormal basis of the ``W`` design's columns (the rows ``(n, a)``).
    """

    def __init__(self, X: np.ndarray, ws: np.ndarray, patterns: np.ndarray, Q: np.ndarray) -> None:
        n, k, d = X.shape
        m = ws.shape[0]
        self.shape = (n, k, d, m)
        self.X, self.P, self.Q = X, patterns, Q
        self.x = X.reshape(n * k, d)
        self.V = np.matmul(X[:, None], ws[None])  # (n, m, k, d): v_{i,b} = x_bᵀ W_i
        self.xbar = np.matmul(patterns, X[:, None])  # (n, m, k, d): x̄_{i,a}

    def project(self, u: np.ndarray) -> np.ndarray:
        """``P⊥ u``: every output column projected off the ``W`` design.

        Parameters
        ----------
        u : ndarray, shape (n·k, d)
            Residual-shaped values, rows ``(n, a)``.

        Returns
        -------
        ndarray, shape (n·k, d)
            ``u − QQᵀu``.
        """
        return u - self.Q @ (self.Q.T @ u)

    def matvec(self, delta: np.ndarray) -> np.ndarray:
        """``J δ``.

        Parameters
        ----------
        delta : ndarray, shape (m, d, d)
            A change of the ``Θ``'s.

        Returns
        -------
        ndarray, shape (n·k, d)
            The projected change of the outputs, rows ``(n, a)``.
        """
        n, k, d, m = self.shape
        U = (self.x @ delta.transpose(1, 0, 2).reshape(d, m * d)).reshape(n, k, m, d)  # x_aᵀ δ_i
        Ux = np.matmul(U.reshape(n, k * m, d), self.X.transpose(0, 2, 1)).reshape(n, k, m, k)  # (x_aᵀδ_i)·x_b
        Uxbar = np.einsum("naic,niac->nai", U, self.xbar)
        s = self.P * (Ux.transpose(0, 2, 1, 3) - Uxbar.transpose(0, 2, 1)[..., None])  # (n, i, a, b)
        out = np.matmul(s.transpose(0, 2, 1, 3).reshape(n, k, m * k), self.V.reshape(n, m * k, d))
        return self.project(out.reshape(n * k, d))

    def rmatvec(self, u: np.ndarray, *, projected: bool = False) -> np.ndarray:
        """``Jᵀ u``.

        Parameters
        ----------
        u : ndarray, shape (n·k, d)
            Residual-shaped values, rows ``(n, a)``.
        projected : bool
            Whether ``u`` is already ``P⊥ u`` (the projection is then not applied again).

        Returns
        -------
        ndarray, shape (m, d, d)
            The gradient-shaped product.
        """
        n, k, d, m = self.shape
        u = (u if projected else self.project(u)).reshape(n, k, d)
        t = np.matmul(self.V.reshape(n, m * k, d), u.transpose(0, 2, 1)).reshape(n, m, k, k)  # v_{i,b}·u_a
        w = self.P * t.transpose(0, 1, 3, 2)  # (n, i, a, b): P_i[a, b]·(v_{i,b}·u_a)
        Wr = np.matmul(w, self.X[:, None]) - w.sum(axis=-1)[..., None] * self.xbar  # (n, i, a, c')
        out = self.x.T @ Wr.transpose(0, 2, 1, 3).reshape(n * k, m * d)  # (c, (i, c'))
        return out.reshape(d, m, d).transpose(1, 0, 2)

    def normal(self, delta: np.ndarray) -> np.ndarray:
        """``JᵀJ δ`` (the projection applied once: it is idempotent).

        Parameters
        ----------
        delta : ndarray, shape (m, d, d)
            A change of the ``Θ``'s.

        Returns
        -------
        ndarray, shape (m, d, d)
            ``Jᵀ(J δ)``.
        """
        return self.rmatvec(self.matvec(delta), projected=True)

    def flops_per_iteration(self) -> int:
        """Floating-point operations of one CG iteration.

        Returns
        -------
        int
            Those of :meth:`normal` (two ``(nk × d)·(d × md)`` products, the ``k``-term sums and one projection, two
            products with ``Q``) and of the block preconditioner's ``m`` products with ``d² × d²`` blocks.
        """
        n, k, d, m = self.shape
        N, q = n * k, self.Q.shape[1]
        return 4 * N * m * d * d + 8 * N * m * k * d + 4 * N * q * d + 2 * m * d**4

    def blocks(self) -> np.ndarray:
        """Per head, the ``d² × d²`` diagonal block of ``J_ΘᵀJ_Θ`` (no projection): the preconditioner's.

        Returns
        -------
        ndarray, shape (m, d², d²)
            Rows and columns ``(c, c')``, the entries of ``Θ_i`` row-major.
        """
        n, k, d, m = self.shape
        N = n * k
        xx = (self.x[:, :, None] * self.x[:, None, :]).reshape(N, d * d)
        D = self.X[:, None, None, :, :] - self.xbar[:, :, :, None, :]  # (n, i, a, b, c'): x_b − x̄_{i,a}
        S = self.P[..., None] * self.V[:, :, None, :, :]  # (n, i, a, b, e): P_i[a, b] v_{i,b}
        out = np.empty((m, d * d, d * d))
        for i in range(m):
            M = np.matmul(S[:, i], S[:, i].transpose(0, 1, 3, 2))  # (n, a, b, b'): S_b·S_b'
            H = np.matmul(D[:, i].transpose(0, 1, 3, 2), np.matmul(M, D[:, i]))  # (n, a, c', c''): G Gᵀ
            out[i] = (xx.T @ H.reshape(N, d * d)).reshape(d, d, d, d).transpose(0, 2, 1, 3).reshape(d * d, d * d)
        return out


def conjugate_gradient(apply: Callable[[np.ndarray], np.ndarray], precondition: Callable[[np.ndarray], np.ndarray],
                       b: np.ndarray, *, tol: float = CG_TOL,
                       max_iter: int = CG_MAX_ITER) -> tuple[np.ndarray, int]:
    """Preconditioned conjugate gradients for ``A x = b`` (``A`` symmetric positive definite, given by ``apply``).

    Parameters
    ----------
    apply : callable
        ``v ↦ A v`` on arrays shaped like ``b``.
    precondition : callable
        ``v ↦ M⁻¹ v`` for a symmetric positive definite ``M ≈ A``.
    b : ndarray
        The right-hand side.
    tol : float
        Stop when ``‖b − A x‖ <= tol·‖b‖``.
    max_iter : int
        The most iterations.

    Returns
    -------
    x : ndarray
        The solution (the last iterate when ``max_iter`` ran out).
    iterations : int
        The iterations run.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> x, it = conjugate_gradient(lambda v: A @ v, lambda v: v, np.array([1.0, 2.0]))
    >>> bool(np.allclose(A @ x, [1.0, 2.0])), it
    (True, 2)
    """
    x = np.zeros_like(b)
    bn = float(np.linalg.norm(b))
    if bn == 0:
        return x, 0
    res = b.copy()
    z = precondition(res)
    p = z.copy()
    rz = float((res * z).sum())
    for it in range(1, max_iter + 1):
        Ap = apply(p)
        curvature = float((p * Ap).sum())
        if not curvature > 0:  # a direction of no curvature (A singular in floating point): stop here
            return x, it
        alpha = rz / curvature
        x += alpha * p
        res -= alpha * Ap
        if float(np.linalg.norm(res)) <= tol * bn:
            return x, it
        z = precondition(res)
        rz_new = float((res * z).sum())
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, max_iter


def block_preconditioner(blocks: np.ndarray, scale: np.ndarray, lam: float) -> Callable[[np.ndarray], np.ndarray]:
    """``v ↦ M⁻¹ v`` for ``M`` the damped blocks ``B_i + λ diag(S_i)``, each factorised once (Cholesky).

    Raises :class:`numpy.linalg.LinAlgError` when a damped block is not positive definite (the caller damps more).
    """
    m, dd, _ = blocks.shape
    inverse = np.empty_like(blocks)
    eye = np.eye(dd)
    for i in range(m):  # the inverse once, then one batched product per application (half the memory traffic
        # of two triangular solves, which read the factor twice)
        damped = blocks[i] + lam * np.diag(scale[i].reshape(-1))
        inverse[i] = cho_solve(cho_factor(damped, check_finite=False), eye, check_finite=False)

    def solve(v):
        return np.matmul(inverse, v.reshape(m, dd, 1)).reshape(v.shape)
    return solve


def choose_solver(solver: str, unknowns: int, *, on_host: bool = True) -> str:
    """The step solver a refinement of ``unknowns`` parameters runs: ``"normal"`` or ``"cg"``.

    Parameters
    ----------
    solver : {"auto", "normal", "cg"}
        The setting (``LearnConfig.refine_solver``); ``"auto"`` is ``"cg"`` from :data:`CG_MIN_UNKNOWNS`
        unknowns on when computing on numpy, else ``"normal"``.
    unknowns : int
        The refinement's unknowns, ``md²``.
    on_host : bool
        Whether the refinement computes on numpy (conjugate gradients run there only).

    Returns
    -------
    str
        ``"normal"`` or ``"cg"``.

    Raises
    ------
    ValueError
        For a ``solver`` not in :data:`SOLVERS`, or ``"cg"`` off the host.

    Examples
    --------
    >>> choose_solver("auto", 1000), choose_solver("auto", 5760), choose_solver("auto", 5760, on_host=False)
    ('normal', 'cg', 'normal')
    """
    if solver not in SOLVERS:
        raise ValueError(f"`solver` must be one of {', '.join(SOLVERS)}; got solver={solver!r}.")
    if solver == "cg" and not on_host:
        raise ValueError("`solver='cg'` runs on numpy only; use 'normal' or 'auto' on a torch device.")
    if solver == "auto":
        return "cg" if on_host and unknowns >= CG_MIN_UNKNOWNS else "normal"
    return solver
