"""Affine-hull geometry of the attention matrices: the minimum-norm point.

The learner (phase 3) uses the minimum-norm point ``Θ*`` of the
affine hull ``aff{Θ_1..Θ_m}`` as a proxy for every head. It satisfies
``⟨Θ_i − Θ*, Θ*⟩ = 0`` for every ``i``: ``Θ*`` is the orthogonal projection of
the origin onto the hull, so it is orthogonal to every direction in it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .validation import check_real_array

__all__ = ["min_norm_point"]


def min_norm_point(points: ArrayLike, *, exact: bool = False) -> np.ndarray | list[Any]:
    """Minimum-norm point of the affine hull of ``points``.

    .. math::

        \\Theta^* = \\operatorname{argmin}\\{\\|\\Theta\\|_F :
            \\Theta = \\textstyle\\sum_i c_i \\Theta_i,\\ \\sum_i c_i = 1\\}

    Parameters
    ----------
    points : array_like, shape (m, ...)
        ``m >= 1`` points (matrices are flattened).
    exact : bool
        Solve in exact rational arithmetic (every float is a rational number,
        so the result is the exact minimum-norm point of the given floats,
        returned as a nested list of :class:`fractions.Fraction` with the
        shape of one point). Otherwise float64 least squares.

    Returns
    -------
    ndarray (float64) or nested list of Fraction
        ``Θ*``, with the shape of one point.

    Notes
    -----
    ``Θ* = Θ_1 + D c`` with ``D = [Θ_2 − Θ_1, ..., Θ_m − Θ_1]`` and ``c`` the
    least-squares solution of ``D c = −Θ_1`` (the normal equations
    ``DᵀD c = −DᵀΘ_1`` in exact mode; affinely dependent points are handled by
    dropping dependent directions). Standard linear algebra, not specific to
    the paper.

    See Also
    --------
    learner.phases.estimate_span : Phase 5, which takes ``Θ*`` of the hull it estimates.
    learner.phases.refine_sum_w : Phase 3, which uses ``Θ*`` as a proxy for every head.

    Examples
    --------
    >>> [float(v) for v in min_norm_point([[1.0, 0.0], [0.0, 1.0]], exact=True)]
    [0.5, 0.5]

    ``Θ*`` is orthogonal to every direction of the hull (here the line through two 2×2 matrices):

    >>> import numpy as np
    >>> heads = np.array([[[2.0, 1.0], [0.0, 1.0]], [[0.0, 1.0], [2.0, 1.0]]])
    >>> star = min_norm_point(heads)
    >>> star.round(12).tolist(), abs(float(np.sum((heads[1] - heads[0]) * star))) < 1e-12
    ([[1.0, 1.0], [1.0, 1.0]], True)
    """
    pts = check_real_array("points", points)
    if pts.ndim < 1 or pts.shape[0] < 1:
        raise ValueError(f"`points` must hold at least one point; got shape {pts.shape}.")
    shape = pts.shape[1:]
    flat = pts.reshape(pts.shape[0], -1)
    if exact:
        star = _exact_min_norm([[Fraction(float(v)) for v in row] for row in flat])
        return _reshape_list(star, shape)
    base = flat[0]
    D = (flat[1:] - base).T
    if D.shape[1] == 0:
        return base.reshape(shape).copy()
    c, *_ = np.linalg.lstsq(D, -base, rcond=None)
    return (base + D @ c).reshape(shape)


def _exact_min_norm(rows):
    """Exact min-norm point by Gram–Schmidt on the directions (Fractions throughout)."""
    base = rows[0]
    basis: list[tuple[list[Fraction], Fraction]] = []  # orthogonal (not normalised) directions with their squared norms
    for row in rows[1:]:
        v = [r - b for r, b in zip(row, base, strict=True)]
        for u, uu in basis:
            coef = sum(a * b for a, b in zip(v, u, strict=True)) / uu
            v = [a - coef * b for a, b in zip(v, u, strict=True)]
        vv = sum(a * a for a in v)
        if vv != 0:
            basis.append((v, vv))
    star = list(base)
    for u, uu in basis:
        coef = sum(a * b for a, b in zip(star, u, strict=True)) / uu
        star = [a - coef * b for a, b in zip(star, u, strict=True)]
    return star


def _reshape_list(flat, shape):
    if len(shape) <= 1:
        return list(flat)
    step = int(np.prod(shape[1:]))
    return [_reshape_list(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
