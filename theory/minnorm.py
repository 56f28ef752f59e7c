"""Min-norm orthogonality: the minimum-norm point of the heads' affine hull is orthogonal to it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from learner import min_norm_point
from learner.hints import SeedLike
from learner.validation import check_real_array

from ._core import CheckResult, Timer, finish

__all__ = ["check_min_norm_orthogonality", "control_min_norm_orthogonality", "default_min_norm_orthogonality"]

#: Float mode: ⟨Θ_i − Θ*, Θ*⟩ is a sum of d² products of numbers of size ‖Θ‖, each
#: rounded, after a least-squares solve of condition κ; relative to max‖Θ_i‖² an
#: error of ~1e-13 is rounding for well-conditioned hulls (ours: 1e-10 leaves a margin of 10³).
FLOAT_TOL = 1e-10


def _inner_products_exact(thetas, star):
    flat_star = [v for row in star for v in row] if isinstance(star[0], list) else list(star)
    out = []
    for theta in thetas:
        flat = [Fraction(float(v)) for v in np.ravel(theta)]
        out.append(sum((t - s) * s for t, s in zip(flat, flat_star, strict=True)))
    return out


def check_min_norm_orthogonality(thetas: ArrayLike, *, point: ArrayLike | None = None, exact: bool = True,
                                 tol: float = FLOAT_TOL) -> CheckResult:
    """Check ``⟨Θ_i − Θ*, Θ*⟩ = 0`` for every head, ``Θ*`` the min-norm point of ``aff{Θ_i}``.

    .. math:: \\Theta^* = \\operatorname{argmin}_{\\Theta \\in \\operatorname{aff}\\{\\Theta_1..\\Theta_m\\}}
              \\|\\Theta\\|_F
              \\quad\\Longrightarrow\\quad \\langle \\Theta_i - \\Theta^*, \\Theta^* \\rangle = 0 \\ \\forall i

    Parameters
    ----------
    thetas : array_like, shape (m, d, d)
        The attention matrices.
    point : array_like, shape (d, d), optional
        A candidate to test instead of the computed min-norm point (for
        negative controls: any other point of the hull fails).
    exact : bool
        Rational arithmetic (every float is an exact rational): the inner
        products come out exactly 0 and the bound is 0. Otherwise float64 with
        ``tol``, relative to ``max_i ‖Θ_i‖_F²``.
    tol : float
        Float-mode bound (default 1e-10: rounding of d² products after a
        least-squares solve).

    Returns
    -------
    CheckResult
        ``measured = max_i |⟨Θ_i − Θ*, Θ*⟩| / max_i ‖Θ_i‖_F²``, relation "<=".

    See Also
    --------
    learner.geometry.min_norm_point : The min-norm point itself (exact or float64).
    theory.CheckResult : What the check returns.
    theory.registry.run_case : Run its default case or its negative control (the centroid).

    Notes
    -----
    Standard geometry (the projection of the origin onto an affine subspace is
    orthogonal to its directions); the learner's phase 3 uses it, with ``Θ*``
    standing in for every head. Reading the talk's "representative point" as
    this point is the learner's design (ours); the check is ours too.

    Examples
    --------
    >>> import numpy as np
    >>> check_min_norm_orthogonality(np.array([[[1.0]], [[3.0]]])).holds   # hull [1, 3] ∋ 1
    True
    """
    timer = Timer()
    T = check_real_array("thetas", thetas, ndim=3)
    if T.shape[0] < 1:
        raise ValueError(f"`thetas` must hold at least one matrix; got shape {T.shape}.")
    scale = float(np.max(np.sum(T**2, axis=(1, 2))))
    if scale == 0:
        raise ValueError("`thetas` are all zero; the orthogonality check is vacuous.")
    if point is not None:
        P = check_real_array("point", point, ndim=2)
        if P.shape != T.shape[1:]:
            raise ValueError(f"`point` must have shape {T.shape[1:]}; got {P.shape}.")
    if exact:
        star = min_norm_point(T, exact=True) if point is None else [[Fraction(float(v)) for v in r] for r in P]
        products = _inner_products_exact(T, star)
        worst = max(abs(p) for p in products) / Fraction(scale)
        measured, bound = float(worst), 0.0
        exact_zero = worst == 0
    else:
        star = min_norm_point(T) if point is None else P
        products = [float(np.sum((t - star) * star)) for t in T]
        measured, bound = max(abs(p) for p in products) / scale, tol
        exact_zero = None
    return finish(
        name="min_norm_orthogonality",
        claim="the min-norm point Θ* of aff{Θ_i} satisfies ⟨Θ_i − Θ*, Θ*⟩ = 0 for every head",
        source="standard geometry, used by the learner's phase 3; check and normalisation ours",
        parameters={"m": T.shape[0], "d": T.shape[1], "exact": bool(exact), "point_given": point is not None},
        measured=measured,
        bound=bound,
        timer=timer,
        details={"inner_products": [float(p) for p in products], "exactly_zero": exact_zero, "scale": scale},
    )


def default_min_norm_orthogonality(*, m: int = 3, d: int = 8, rng: SeedLike = None) -> CheckResult:
    """Positive case: a planted layer's Θ's, exact rational arithmetic.

    Parameters
    ----------
    m, d : int
        Heads and dimension of ``learner.random_layer(m, d)`` (defaults 3 and 8).
    rng : None, int, SeedSequence or Generator
        Seed of the planted layer.

    Returns
    -------
    CheckResult
        The exact check of the layer's ``Θ_i`` against their computed min-norm point (holds: measured 0).
    """
    from learner import random_layer

    return check_min_norm_orthogonality(random_layer(m, d, rng=rng).thetas)


def control_min_norm_orthogonality(*, m: int = 3, d: int = 8, rng: SeedLike = None) -> CheckResult:
    """Negative control: the centroid of the Θ's is in the hull but is not the min-norm point.

    Parameters
    ----------
    m, d : int
        Heads and dimension of ``learner.random_layer(m, d)`` (defaults 3 and 8).
    rng : None, int, SeedSequence or Generator
        Seed of the planted layer.

    Returns
    -------
    CheckResult
        The exact check with ``point`` the centroid ``mean_i Θ_i`` (fails: its inner products are not 0).
    """
    from learner import random_layer

    thetas = random_layer(m, d, rng=rng).thetas
    return check_min_norm_orthogonality(thetas, point=thetas.mean(axis=0))
