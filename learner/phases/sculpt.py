"""Phases 2 and 4: sculpting the affine hull of the ``Θ_i`` from certified rows.

If in row ``a`` every head has the same pattern ``p``, then
``y_a = pᵀ X ΣW``. For each example and row we fit ``p`` (with ``Σp = 1``) to
``y_a ≈ pᵀ X Ŵ``; with ``k < d`` a disagreement between heads leaves the row
space of ``XŴ``, so a small relative residual certifies (approximate)
agreement. A certified row gives, for tokens ``j`` with non-negligible weight
and the row's heaviest token ``j0``, the affine constraints

.. math:: \\langle \\Theta, x_a (x_j - x_{j_0})^\\top \\rangle = \\ln(p_j / p_{j_0})

satisfied by every ``Θ_i`` at once, hence by the affine hull. The paper's
(talk, "Sculpting the affine hull"). Ours: the equality-constrained least
squares fit (the simplex's inequalities are checked, not imposed: a certified
row must have every used weight ``>= min_weight``), the thresholds, and
skipping examples whose ``XŴ`` is numerically rank-deficient (repeated or
dependent tokens).

Note (ours): zero-residual disagreements exist whenever ``m(k−1) > d`` (count
the unknowns of ``Σ_i p_iᵀXW_i = qᵀXΣW``), e.g. m = 3, k = 4, d = 8, so the
certificate is then only approximate even in exact arithmetic.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..oracle import growing_sizes
from ..parallel import as_workers
from ..profiling import section
from ..progress import bar
from ..validation import check_int, check_positive_float
from ._config import LearnConfig, as_config, resolve_config
from .forecast import (
    ADAPTIVE_CANDIDATES,
    AFFORDABLE_EXAMPLES,
    DEFAULT_CANDIDATES,
    REACH_CANDIDATES,
    Forecast,
    pilot_forecast,
)

if TYPE_CHECKING:
    from ..layer import AttentionLayer
    from ..oracle import ArraySource, ExampleBatch, LayerOracle
    from ..parallel import Workers
    from .span import SpanEstimate

log = logging.getLogger(__name__)

__all__ = [
    "Constraints",
    "certify_rows",
    "crude_sculpt",
    "fit_patterns",
    "hull_change",
    "pilot_batch",
    "refined_sculpt",
    "screen_candidates",
    "screen_weights",
]


@dataclass(frozen=True)
class Constraints:
    """Affine constraints ``A vec(Θ) ≈ b`` from certified rows, with diagnostics: phases 2 and 4's result.

    Parameters
    ----------
    A : ndarray, shape (N, d²)
        One constraint per row, ``vec(x_a (x_j − x_{j0})ᵀ)`` (row-major ``vec``).
    b : ndarray, shape (N,)
        The right-hand sides, ``ln(p_j / p_{j0})``.
    residual : ndarray, shape (N,)
        The certifying row's relative residual, per constraint (a row's constraints share it).
    n_examples : int
        Examples drawn, in whole batches (and the pilot's).
    rows_seen : int
        Rows examined (examples × k).
    rows_certified : int
        Rows certified at ``tol`` (a certified row may give no constraint: no token above ``min_weight``).
    tol : float
        The certification tolerance (with a pilot, the one it chose or was given).
    min_weight : float
        The smallest fitted weight of a token that gave a constraint.
    seconds : float
        Wall time of the phase.
    errors : ndarray, shape (N,), optional
        ``max_i |A_l vec(Θ_i) − b_l|`` per constraint, when the truth is known (oracle mode).
    p_token : ndarray, shape (N,), optional
        The fitted weight ``p_j`` of the constraint's token.
    p_ref : ndarray, shape (N,), optional
        The fitted weight ``p_{j0}`` of its row's heaviest token (``p_token`` and ``p_ref`` set the
        constraint's precision, see :func:`learner.phases.span.precision_weights`).
    forecast : Forecast, optional
        The pilot's :class:`learner.phases.forecast.Forecast` when phase 4 ran one (see
        :func:`refined_sculpt`), else None.
    examples_at_target : int, optional
        The examples drawn up to and including the one whose constraint reached the target (None when the
        target was not reached).
    stopped : str, optional
        Why the stream stopped: ``"target"``, ``"stable"``, ``"budget"`` or ``"forecast"``.
    constraints_certified : int, optional
        The constraints certified in the examples drawn (above :attr:`count` when a stable hull or the cap
        cut the set short).
    checkpoints : tuple of dict
        The stability rule's checkpoints: ``{"constraints", "change", "m"}`` each (empty without the rule).
    """

    A: np.ndarray
    b: np.ndarray
    residual: np.ndarray
    n_examples: int
    rows_seen: int
    rows_certified: int
    tol: float
    min_weight: float
    seconds: float
    errors: np.ndarray | None = None
    p_token: np.ndarray | None = None
    p_ref: np.ndarray | None = None
    forecast: Forecast | None = None
    #: The examples drawn up to and including the one whose constraint reached the target (ours; None when
    #: the target was not reached): what the phase needed, where ``n_examples`` is rounded up to whole batches.
    examples_at_target: int | None = None
    #: Why the stream stopped: "target" (the constraint count), "stable" (phase 4's hull stability rule, see
    #: :func:`refined_sculpt`), "budget" (its example budget) or "forecast" (the pilot's forecast exceeded it).
    stopped: str | None = None
    #: Constraints certified in the examples drawn; above ``count`` when a stable hull cut the set short.
    constraints_certified: int | None = None
    #: The stability rule's checkpoints: constraints, hull change against the previous checkpoint, m.
    checkpoints: tuple = ()

    @property
    def forecast_ratio(self) -> float | None:
        """Examples drawn over the examples the pilot forecast (None without a forecast; ``inf`` when the
        forecast was 0 constraints). Below 1 also when the phase stopped at its budget."""
        if self.forecast is None:
            return None
        predicted = self.forecast.predicted_examples
        return self.n_examples / predicted if predicted > 0 else float("inf")

    @property
    def needed_ratio(self) -> float | None:
        """Examples needed for the target (:attr:`examples_at_target`) over the pilot's forecast: the
        forecast's own error, which ``forecast_ratio`` hides where one batch held the target (None without a
        forecast or when the target was not reached)."""
        if self.forecast is None or self.examples_at_target is None:
            return None
        predicted = self.forecast.predicted_examples
        return self.examples_at_target / predicted if predicted > 0 else float("inf")

    @property
    def count(self) -> int:
        """The number of constraints ``N``."""
        return int(self.b.shape[0])

    def summary(self) -> dict[str, Any]:
        """Diagnostics as a JSON-ready dict.

        Returns
        -------
        dict
            The counts, the rank of ``A``, the yield per 1000 examples, the tolerance and time; with the
            truth the median and 90th percentile of ``errors``; with a forecast its
            :meth:`~learner.phases.forecast.Forecast.to_dict`, the choice of tolerance and the two ratios;
            and why the stream stopped, with the checkpoints.
        """
        out: dict[str, Any] = {
            "examples": self.n_examples,
            "rows_seen": self.rows_seen,
            "rows_certified": self.rows_certified,
            "constraints": self.count,
            "constraints_per_1000_examples": 1000 * self.count / max(self.n_examples, 1),
            "rank": int(np.linalg.matrix_rank(self.A)) if self.count else 0,
            "tol": self.tol,
            "min_weight": self.min_weight,
            "seconds": self.seconds,
        }
        if self.errors is not None and self.count:
            out["constraint_error_median"] = float(np.median(self.errors))
            out["constraint_error_p90"] = float(np.quantile(self.errors, 0.9))
        if self.forecast is not None:
            out["forecast"] = self.forecast.to_dict()
            out["tol_chosen"] = {"tol": self.forecast.tol, "fixed": self.forecast.fixed,
                                 "threshold": self.forecast.threshold, "model_ok": self.forecast.model_ok,
                                 "rule": self.forecast.rule}
            for name in ("forecast_ratio", "needed_ratio"):
                ratio = getattr(self, name)
                out[name] = ratio if ratio is not None and np.isfinite(ratio) else None
        out["examples_at_target"] = self.examples_at_target
        out["stopped"] = self.stopped
        if self.constraints_certified is not None:
            out["constraints_certified"] = self.constraints_certified
            out["certified_per_1000_examples"] = 1000 * self.constraints_certified / max(self.n_examples, 1)
        if self.checkpoints:
            out["checkpoints"] = [dict(c) for c in self.checkpoints]
        return out


#: Examples per block of the row fit: the block's arrays stay in cache (measured 2× faster than
#: whole batches of 10^5 at (m, d, k) = (3, 12, 2); ours).
FIT_CHUNK = 2048


def _dot(a, b):
    return np.einsum("...d,...d->...", a, b)


def _row_fit(X, Y, w_sum):
    """Residuals and well-posedness of every row's fit, and a function giving the fitted ``p`` of chosen rows.

    See :func:`fit_patterns`; the coefficients are back-substituted only for
    the rows asked for (certification needs them for the few rows that pass).
    """
    n, k, _ = X.shape
    if k == 2:
        return _row_fit_two(X, Y, w_sum)
    B = X @ w_sum  # (n, k, d): row j is b_j = x_jᵀ Ŵ
    b1 = B[:, :1]
    D = B[:, 1:] - b1
    R = Y - b1
    scale = np.maximum(_dot(B, B).sum(axis=1) / k, 1e-300)
    Q = np.empty_like(D)
    U = np.zeros((n, k - 1, k - 1))  # D = Uᵀ Q, U upper triangular
    for j in range(k - 1):
        v = D[:, j].copy()
        for i in range(j):
            U[:, i, j] = _dot(Q[:, i], v)
            v -= U[:, i, j, None] * Q[:, i]
        U[:, j, j] = np.sqrt(_dot(v, v))
        Q[:, j] = v / np.where(U[:, j, j] > 0, U[:, j, j], 1.0)[:, None]
    diag = np.diagonal(U, axis1=1, axis2=2)
    # det(B Bᵀ) = det(D Dᵀ)·dist(b_1, span D)²: the rows (b_1, D) are a unimodular transform of B's.
    qb = np.stack([_dot(Q[:, j], B[:, 0]) for j in range(k - 1)], axis=1)
    dist2 = np.maximum(_dot(B[:, 0], B[:, 0]) - (qb**2).sum(axis=1), 0.0)
    with np.errstate(divide="ignore"):
        logdet = np.log(diag**2).sum(axis=1) + np.log(dist2)
    well_posed = logdet > k * np.log(scale) + np.log(1e-8)
    C = np.stack([_dot(R, Q[:, j, None, :]) for j in range(k - 1)], axis=2)  # (n, a, j)
    ynorm2 = _dot(Y, Y)
    res2 = np.maximum(_dot(R, R) - (C**2).sum(axis=2), 0.0)
    res = np.sqrt(res2 / np.where(ynorm2 > 0, ynorm2, np.inf))

    def patterns(ii=slice(None), aa=slice(None)):
        """Fitted ``p`` of rows ``(ii, aa)`` (all rows by default): back substitution ``U p = c``."""
        c, u = C[ii, aa], U[ii]
        safe = np.where(diag[ii] > 0, diag[ii], np.inf)
        if isinstance(aa, slice):  # (n, a, j): every row of each example
            u, safe = u[:, None], safe[:, None]
        pt = np.empty_like(c)
        for j in range(k - 2, -1, -1):
            pt[..., j] = (c[..., j] - (pt[..., j + 1 :] * u[..., j, j + 1 :]).sum(axis=-1)) / safe[..., j]
        return np.concatenate([1.0 - pt.sum(axis=-1, keepdims=True), pt], axis=-1)

    return res, well_posed, patterns


def _row_fit_two(X, Y, w_sum):
    """:func:`_row_fit` for two tokens, with every quantity from five dot products (the hot path at k = 2)."""
    B = X @ w_sum
    b1 = B[:, 0]
    D = B[:, 1] - b1
    R = Y - b1[:, None]
    dd = _dot(D, D)
    b1b1 = _dot(b1, b1)
    b1d = _dot(b1, D)
    c = np.einsum("nad,nd->na", R, D)
    # Gram of (b_1, b_2): det = ‖b1‖²‖D‖² − (b1·D)², trace = 2‖b1‖² + 2 b1·D + ‖D‖².
    scale = np.maximum((2 * b1b1 + 2 * b1d + dd) / 2, 1e-300)
    well_posed = b1b1 * dd - b1d**2 > 1e-8 * scale**2
    safe = np.where(dd > 0, dd, np.inf)
    ynorm2 = _dot(Y, Y)
    res2 = np.maximum(_dot(R, R) - c**2 / safe[:, None], 0.0)
    res = np.sqrt(res2 / np.where(ynorm2 > 0, ynorm2, np.inf))

    def patterns(ii=slice(None), aa=slice(None)):
        p2 = c[ii, aa] / (safe[ii] if not isinstance(aa, slice) else safe[ii, None])
        return np.stack([1.0 - p2, p2], axis=-1)

    return res, well_posed, patterns


#: Unit roundoff of float32 (ours to use; the value is IEEE 754's, 2^-24).
_U32 = 2.0**-24

#: The float32 screen sends an example straight to the float64 fit when this bound on the condition
#: number of its differences ``D`` is exceeded (ours; under 10⁻⁴ of the examples at (m, d, k) = (3, 16, 4),
#: mostly repeated tokens).
_SCREEN_KAPPA = 64.0

#: Factor on the screen's margins (ours): 1 is the bound of ``_screen_margins``, 0 a plain float32 test
#: (the tests' negative control: it loses rows that the float64 fit certifies).
_SCREEN_MARGIN = 1.0

#: Examples per block of the float32 screen (ours, not tuned: twice the float64 fit's, its arrays are half the
#: size).
SCREEN_CHUNK = 4096


def _screen_margins(k, d):
    """The screen's margins ``(η_a, η_b)`` at ``k`` tokens in dimension ``d`` (ours).

    A row that the float64 fit certifies (relative residual ``< tol``, a proper ``p``) has a
    float32 squared residual (``u = 2⁻²⁴``, ``γ_n = nu/(1 − nu)``)

    .. math:: r_{32}^2 \\le (\\mathrm{tol}\\,\\|y\\| + \\eta_a(\\|y\\| + Z))^2 + \\eta_b \\|y - b_1\\|^2,

    with ``Z = max|x|·‖1ᵀ|Ŵ|‖`` over the block, which bounds every ``‖b_j‖`` and ``‖|x_j|ᵀ|Ŵ|‖``.
    The bound is a first-order rounding model:

    * Linear term, the float32 *data*. Casting ``Y``, ``Ŵ`` (and Gaussian ``X``) and the float32
      product ``B = XŴ`` move each ``b_j`` by ``<= γ_{d+2}·Z`` and ``y`` by ``u‖y‖``; the
      differences ``D_j = b_j − b_1`` and ``R = y − b_1`` round once more. The residual is a
      distance: with the float64 fit's coefficients ``p`` (``Σ_{j>1}|p_j| <= 1.05`` when every
      ``p_j > −10⁻³``) it moves by at most ``‖ΔR‖ + Σ_{j>1}|p_j|·‖ΔD_j‖ <= 2u‖y‖ + 3.1γ_{d+3}Z``;
      with ``tol·u‖y‖`` for the rounded ``‖y‖`` this is below ``η_a(‖y‖ + Z)``, ``η_a = 4(d + 4)u``.
    * Quadratic term, the float32 *arithmetic*. The residual is a difference of squares,
      ``‖R‖² − Σ_j c_j²``, so its rounding error scales with ``‖R‖²`` (cancellation), not with
      the small difference: each length-``d`` dot product errs by ``γ_d`` relative to ``‖R‖²``,
      each of the ``k − 1`` subtractions by ``u‖R‖²``, and modified Gram–Schmidt loses
      orthogonality by ``‖QᵀQ − I‖ <= c·u·κ(D)`` (Björck 1967), an error ``<= c·u·κ·‖R‖²`` of
      ``Σ c_j²``. With ``κ <= K = _SCREEN_KAPPA`` (worse examples skip the screen) and
      ``c = 2(k − 1)d`` this gives ``η_b = (3kd + 2(k − 1)dK)·u``, which also covers the float64
      fit's own error (``~10⁻¹⁶·κ·‖R‖²``).

    Measured (ours, 4·10⁶ rows at (3, 16, 4), Boolean and Gaussian inputs): ``|r32² − r64²|``
    stays below ``13u·‖R‖²``, some 500 times under ``η_b‖R‖²``; on rows planted at relative
    residual ``tol·(1 − 10⁻⁶)`` a hundredth of the margins still keeps every row, a thousandth
    does not. Loose margins are cheap: they only send a few more examples to the float64 fit.
    """
    eta_a = 4 * (d + 4) * _U32
    eta_b = (3 * k * d + 2 * (k - 1) * d * _SCREEN_KAPPA) * _U32
    return _SCREEN_MARGIN * eta_a, _SCREEN_MARGIN * eta_b


def screen_weights(w_sum: np.ndarray) -> tuple[np.ndarray, np.float32, float]:
    """``(s·Ŵ, ‖1ᵀ|s·Ŵ|‖, s)``, the first two in float32; ``s = 1`` unless ``Ŵ``'s scale is extreme.

    ``s`` is a power of two (so ``s·Ŵ`` and ``s·Y`` are exact and every relative residual is
    unchanged) that keeps float32 away from overflow and underflow.

    Parameters
    ----------
    w_sum : ndarray, shape (d, d)
        The estimate ``Ŵ`` of ``ΣW_i`` the rows are fitted with.

    Returns
    -------
    w32 : ndarray of float32, shape (d, d)
        ``s·Ŵ``.
    wcol : numpy.float32
        ``‖1ᵀ|s·Ŵ|‖``, the bound's factor on the inputs' largest entry.
    s : float
        The scale: 1 unless ``Ŵ``'s largest entry lies outside ``(2⁻¹⁶, 2¹⁶)``.

    Examples
    --------
    >>> import numpy as np
    >>> w32, wcol, s = screen_weights(np.full((2, 2), 1e6))
    >>> w32.dtype, bool(s == 2.0**-20), float(w32[0, 0])  # 10⁶ scaled by 2⁻²⁰ into [0.5, 1)
    (dtype('float32'), True, 0.95367431640625)
    """
    big = float(np.max(np.abs(w_sum))) if w_sum.size else 0.0
    s = 2.0 ** -np.frexp(big)[1] if np.isfinite(big) and not 2.0**-16 < big < 2.0**16 and big > 0 else 1.0
    w = w_sum * s
    return w.astype(np.float32), np.float32(np.linalg.norm(np.abs(w).sum(axis=0))), s


def screen_candidates(X: np.ndarray, Y: np.ndarray, screen_w: tuple[np.ndarray, np.float32, float],
                      tol: float) -> np.ndarray:
    """Per example, whether a row might certify, from the fit of every row in float32.

    ``screen_w`` is :func:`screen_weights` of ``Ŵ``. ``False`` only where the example is well
    conditioned and every row's float32 residual exceeds ``_screen_margins``'s bound for a
    certifiable row; anything non-finite (overflow, the 0/0 of a repeated token) is a candidate.

    Parameters
    ----------
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels.
    screen_w : (ndarray, numpy.float32, float)
        :func:`screen_weights` of ``Ŵ``.
    tol : float
        The certification tolerance (relative residual) the float64 fit will apply.

    Returns
    -------
    ndarray of bool, shape (n,)
        Per example, whether it must go to the float64 fit (a row of it might certify).
    """
    w32, wcol, s = screen_w
    n, k, d = X.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    eta_a, eta_b = _screen_margins(k, d)
    with np.errstate(all="ignore"):  # every non-finite value below makes a candidate, on purpose
        x = X.reshape(n * k, d).astype(np.float32)  # exact for ±1 inputs
        B = (x @ w32).reshape(n, k, d)
        z = max(x.max(), -x.min()) * wcol
        b1 = B[:, 0]
        R = (Y if s == 1.0 else Y * s).astype(np.float32)
        R -= b1[:, None]
        rr = _dot(R, R)
        res2 = rr.copy()
        f2 = np.zeros(n, np.float32)
        logdet = np.zeros(n, np.float32)
        V: list[tuple[np.ndarray, np.ndarray]] = []
        for j in range(1, k):  # modified Gram–Schmidt on D_j = b_j − b_1, unnormalised: ‖v‖⁻² kept
            v = B[:, j] - b1
            f2 += _dot(v, v)
            for vi, inv in V:
                v -= (_dot(vi, v) * inv)[:, None] * vi
            vv = _dot(v, v)
            logdet += np.log(vv)
            inv = 1 / vv
            V.append((v, inv))
            c = np.einsum("nad,nd->na", R, v)
            res2 -= c * (c * inv[:, None])
        # κ(D)² <= λ_max^{k−1} / det(DDᵀ) <= ‖D‖_F^{2(k−1)} / Π_j ‖v_j‖².
        conditioned = (k - 1) * np.log(f2) - logdet <= 2 * np.log(_SCREEN_KAPPA)
        ynorm = (np.sqrt(_dot(Y, Y)) * s).astype(np.float32)
        bound = (tol * ynorm + eta_a * (ynorm + z)) ** 2 + eta_b * rr
        # A zero output row has relative residual 0 in the float64 fit (it divides by ‖y‖ = 0 → ∞).
        return ~(((res2 > bound) & (ynorm > 0)).all(axis=1) & conditioned)


def fit_patterns(X: np.ndarray, Y: np.ndarray, w_sum: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row, the ``p`` with ``Σp = 1`` minimising ``‖y_a − pᵀXŴ‖``.

    Closed form (ours): with ``b_j = x_jᵀŴ``, the constraint ``Σp = 1`` turns the
    fit into an ordinary least-squares fit of ``y_a − b_1`` on the ``k − 1``
    differences ``b_j − b_1``; Gram–Schmidt on those differences (shared by the
    ``k`` rows of an example) gives the coefficients by back substitution and
    the residual as ``‖y_a − b_1‖² − Σ_j c_j²``. Every product is a length-``d``
    dot product over the batch, which numpy does far faster than ``n`` small
    ``k × k`` solves (``python -m learner bench`` measures both;
    :func:`learner.study.bench.fit_patterns_solve` is the reference).

    Parameters
    ----------
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels; row ``a`` of an example is ``y_a``.
    w_sum : ndarray, shape (d, d)
        The estimate ``Ŵ`` of ``ΣW_i``.

    Returns
    -------
    P : ndarray, shape (n, k, k)
        ``P[n, a, j]``: the fitted weight of token ``j`` in row ``a`` (summing to 1, not necessarily
        non-negative).
    residual : ndarray, shape (n, k)
        The relative residual ``‖y_a − pᵀXŴ‖ / ‖y_a‖`` per row (``0`` for a zero row).
    well_posed : ndarray of bool, shape (n,)
        Per example, whether ``XŴ`` has full row rank (repeated or dependent tokens make the fit
        ambiguous; such examples should not certify anything).

    Examples
    --------
    Rows that are mixtures of the tokens' ``x_jᵀŴ`` fit exactly:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, w_sum = rng.standard_normal((1, 3, 5)), rng.standard_normal((5, 5))
    >>> p = np.array([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0], [0.1, 0.1, 0.8]])
    >>> P, res, ok = fit_patterns(X, (p @ X[0] @ w_sum)[None], w_sum)
    >>> np.allclose(P[0], p), bool(res.max() < 1e-12), ok
    (True, True, array([ True]))
    """
    parts = []
    for start in range(0, max(X.shape[0], 1), FIT_CHUNK):  # an empty batch is one empty block
        sl = slice(start, start + FIT_CHUNK)
        res, well_posed, patterns = _row_fit(X[sl], Y[sl], w_sum)
        parts.append((patterns(), res, well_posed))
    return tuple(np.concatenate(col) for col in zip(*parts, strict=True))


def certify_rows(X: np.ndarray, Y: np.ndarray, w_sum: np.ndarray, *, tol: float, min_weight: float, screen: bool = True,
                 with_example: bool = False) -> tuple[Any, ...]:
    """Certify rows of a batch and turn them into constraints.

    A row certifies when its example's fit is well posed, its relative residual is below ``tol`` and its
    fitted ``p`` is proper (no weight below ``−10⁻³``); it gives one constraint per token ``j`` other than
    its heaviest ``j0`` with ``p_j >= min_weight`` (see the module docstring).

    With ``screen`` (the default; ours) every row is first fitted in float32 and
    only the examples with a row that might pass (``_screen_margins`` bounds
    the float32 error) are fitted again in float64, which alone decides: the
    result is identical, bit for bit, to ``screen=False`` (the float64 fit of
    every row), only faster where few rows certify (2.3 times at (3, 16, 4),
    tol 0.03; 1.7 times at (3, 12, 2), tol 0.015; ``python -m learner bench
    --certification``).

    Parameters
    ----------
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels.
    w_sum : ndarray, shape (d, d)
        The estimate ``Ŵ`` of ``ΣW_i`` the rows are fitted with.
    tol : float
        The certification tolerance: a row certifies with relative residual ``< tol``.
    min_weight : float
        The smallest fitted weight of a token that gives a constraint.
    screen : bool
        Screen the examples in float32 first (the same result, faster where few rows certify).
    with_example : bool
        Also return each constraint's example index.

    Returns
    -------
    A : ndarray, shape (N, d²)
        One constraint per used token of a certified row, in the order of the examples.
    b : ndarray, shape (N,)
        ``ln(p_j / p_{j0})`` per constraint.
    residual : ndarray, shape (N,)
        The certifying row's relative residual per constraint.
    p_token : ndarray, shape (N,)
        The fitted weight ``p_j`` per constraint.
    p_ref : ndarray, shape (N,)
        The fitted weight ``p_{j0}`` of the row's heaviest token per constraint.
    example : ndarray of intp, shape (N,)
        Only with ``with_example``: each constraint's example index in ``X`` (phases 2 and 4 use it to count
        the examples that reached their target).
    rows_certified : int
        The rows certified (including those that gave no constraint).

    Raises
    ------
    TypeError
        When ``screen`` is not a bool.

    Examples
    --------
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(3, 16, logit_scale=1, rng=0)
    >>> X = sample_inputs(2000, 4, 16, rng=1)
    >>> Y, w_sum = layer(X), layer.ws.sum(axis=0)
    >>> out = certify_rows(X, Y, w_sum, tol=0.1, min_weight=0.02)
    >>> ref = certify_rows(X, Y, w_sum, tol=0.1, min_weight=0.02, screen=False)
    >>> all(np.array_equal(a, b) for a, b in zip(out, ref)), out[-1]
    (True, 27)
    """
    if not isinstance(screen, bool):
        raise TypeError(f"`screen` must be True or False; got screen={screen!r}.")
    n, _, d = X.shape
    if screen:
        with section("certification: float32 screen", flops=2 * n * X.shape[1] * d * d):
            screen_w = screen_weights(w_sum)
            keep = np.flatnonzero(np.concatenate([
                screen_candidates(X[s:s + SCREEN_CHUNK], Y[s:s + SCREEN_CHUNK], screen_w, tol)
                for s in range(0, max(n, 1), SCREEN_CHUNK)]))
        # Each example's float64 fit does not depend on the others in its block: a subset gives the same bits.
        blocks: list[np.ndarray | slice] = [keep[s:s + FIT_CHUNK] for s in range(0, max(keep.size, 1), FIT_CHUNK)]
    else:
        blocks = [slice(s, s + FIT_CHUNK) for s in range(0, max(n, 1), FIT_CHUNK)]
    parts = []
    for block in blocks:
        with section("certification: float64 row fit"):
            res, well_posed, patterns = _row_fit(X[block], Y[block], w_sum)
        # Certified: a well-posed fit, small residual, a proper distribution (no weight below -1e-3).
        ii, aa = np.nonzero((res < tol) & well_posed[:, None])
        p = patterns(ii, aa)  # (c, k)
        proper = p.min(axis=1) > -1e-3
        ii, aa, p = ii[proper], aa[proper], p[proper]
        parts.append((ii + block.start if isinstance(block, slice) else block[ii], aa, p, res[ii, aa]))
    ii, aa, p, row_res = (np.concatenate(col) for col in zip(*parts, strict=True))
    if ii.size == 0:
        return (np.empty((0, d * d)), np.empty(0), np.empty(0), np.empty(0), np.empty(0),
                *((np.empty(0, dtype=np.intp),) if with_example else ()), 0)
    with section("certification: constraints of certified rows"):
        return _constraint_rows(X, ii, aa, p, row_res, min_weight, with_example)


def _constraint_rows(X, ii, aa, p, row_res, min_weight, with_example):
    """The constraints of the certified rows ``(ii, aa)`` with patterns ``p`` (see :func:`certify_rows`)."""
    d = X.shape[2]
    j0 = p.argmax(axis=1)
    p0 = p[np.arange(ii.size), j0]
    use = (p >= min_weight) & (np.arange(p.shape[1])[None, :] != j0[:, None])
    xa = X[ii, aa]  # (c, d)
    diff = X[ii] - X[ii, j0][:, None, :]  # (c, k, d)
    rows = np.einsum("nc,nje->njce", xa, diff)[use].reshape(-1, d * d)
    p_ref = np.broadcast_to(p0[:, None], use.shape)[use]
    rhs_b = np.log(p[use] / p_ref)
    resid = np.broadcast_to(row_res[:, None], use.shape)[use]
    example = (np.broadcast_to(ii[:, None], use.shape)[use],) if with_example else ()
    return rows, rhs_b, resid, p[use], p_ref, *example, int(ii.size)


def certify_batch(batch: ExampleBatch, w_sum: np.ndarray, tol: float,
                  min_weight: float) -> tuple[list[np.ndarray], int, int]:
    """A worker's reduction of phases 2 and 4: the constraint block of one batch's certified rows,
    the number of rows certified, and the rows seen (never the examples)."""
    X, Y = batch.examples()
    *block, certified = certify_rows(X, Y, w_sum, tol=tol, min_weight=min_weight, with_example=True)
    return block, certified, X.shape[0] * X.shape[1]


def pilot_batch(batch: ExampleBatch, w_sum: np.ndarray, tols: Sequence[float],
                min_weight: float) -> tuple[list[np.ndarray], tuple[int, ...], int]:
    """The pilot's reduction of a batch (phase 4, ours): the constraints at the loosest tolerance, the rows
    certified at each, the rows seen.

    The block at a smaller ``t`` is the block's constraints with residual ``< t``: a row certifies at ``t``
    exactly when its float64 fit is well posed, proper and has residual ``< t``, and the screen at ``t``
    keeps a subset of the examples kept at ``max(tols)`` (``_screen_margins`` grows with ``tol``).
    The rows per tolerance are counted by certifying the loosest tolerance's candidates again at each
    (a row with no token above ``min_weight`` gives no constraint but counts as certified).

    Parameters
    ----------
    batch : ExampleBatch
        One batch of phase 4's stream.
    w_sum : ndarray, shape (d, d)
        The estimate ``Ŵ`` of ``ΣW_i``.
    tols : sequence of float
        The pilot's tolerances.
    min_weight : float
        The smallest fitted weight of a token that gives a constraint.

    Returns
    -------
    block : list of ndarray
        :func:`certify_rows`'s ``A, b, residual, p_token, p_ref`` and example indices (in the batch) at
        ``max(tols)``.
    rows : tuple of int
        The rows certified at each tolerance of ``tols``, in its order.
    rows_seen : int
        The batch's rows (examples × k).
    """
    X, Y = batch.examples()
    n = X.shape[0]
    loosest = max(tols)
    with section("certification: float32 screen", flops=2 * n * X.shape[1] * X.shape[2] ** 2):
        screen_w = screen_weights(w_sum)
        keep = np.flatnonzero(np.concatenate([
            screen_candidates(X[s:s + SCREEN_CHUNK], Y[s:s + SCREEN_CHUNK], screen_w, loosest)
            for s in range(0, max(n, 1), SCREEN_CHUNK)]))
    # The float64 fit of an example does not depend on the others (certify_rows relies on it too).
    Xc, Yc = X[keep], Y[keep]
    *block, _ = certify_rows(Xc, Yc, w_sum, tol=loosest, min_weight=min_weight, with_example=True)
    block[-1] = keep[block[-1]]  # the example's index in the batch, not among the screened ones
    rows = tuple(int(certify_rows(Xc, Yc, w_sum, tol=t, min_weight=min_weight)[-1]) for t in tols)
    return block, rows, n * X.shape[1]


def _below(block, tol):
    """A block's constraints with residual ``< tol`` (in order)."""
    keep = block[2] < tol
    return [col[keep] for col in block]


def _certify_or_pilot(batch, w_sum, tol, min_weight):
    """A batch of phase 4: :func:`pilot_batch` while piloting (``tol`` is then the tuple of tolerances), else
    :func:`certify_batch`."""
    if isinstance(tol, tuple):
        return pilot_batch(batch, w_sum, tol, min_weight)
    return certify_batch(batch, w_sum, tol, min_weight)


def _sculpt(source, w_sum, *, workers, **kw):
    with as_workers(workers) as pool:
        return _sculpt_on(source, w_sum, workers=pool, **kw)


def _sculpt_on(source, w_sum, *, tol, min_weight, target, max_examples, batch, truth, label, workers, pilot=None,
               first_batch=None, stability=None):
    stream = _Stream(source, w_sum, tol=tol, min_weight=min_weight, target=target, max_examples=max_examples,
                     label=label, workers=workers, pilot=pilot, stability=stability)
    if stream.count < target:
        stream.run(batch, first_batch)
    return stream.constraints(truth)


#: Phase 4's stability checkpoints (ours): the first at this multiple of d², each next this factor further.
CHECKPOINT_FIRST, CHECKPOINT_GROWTH = 1.25, 1.25


def hull_change(old: SpanEstimate, new: SpanEstimate) -> float:
    """How far apart two hulls are: the larger of ``‖Θ*_new − Θ*_old‖_F/‖Θ*_new‖_F`` and the sine of the largest
    principal angle between their direction spaces (phase 4's stability rule, ours).

    Parameters
    ----------
    old : SpanEstimate
        The previous checkpoint's hull.
    new : SpanEstimate
        This checkpoint's hull.

    Returns
    -------
    float
        The change (dimensionless); ``inf`` when their dimensions differ or ``Θ*_new = 0``.
    """
    if old.directions.shape != new.directions.shape:
        return float("inf")
    norm = float(np.linalg.norm(new.theta_star))
    change = float(np.linalg.norm(new.theta_star - old.theta_star)) / norm if norm > 0 else float("inf")
    if new.directions.shape[1]:
        # The sine of the largest angle, as the norm of the new directions' part outside the old span (accurate
        # for small angles, where sqrt(1 − cos²) loses half the digits).
        V, U = old.directions, new.directions
        change = max(change, float(np.linalg.norm(U - V @ (V.T @ U), 2)))
    return change


class _Stream:
    """One sculpting stream: certified blocks merged in batch order until the target or the budget.

    With a pilot, the first batches are certified at every candidate tolerance until the forecast
    settles; :meth:`settle` then keeps the pilot's constraints below the chosen tolerance.
    """

    def __init__(self, source, w_sum, *, tol, min_weight, target, max_examples, label, workers, pilot,
                 stability=None):
        self.t0 = time.perf_counter()
        if pilot is None or tol is not None:
            tol = check_positive_float("tol", tol)
            if tol >= 1:
                raise ValueError(f"`tol` must be below 1; got tol={tol!r}.")
        self.source, self.w_sum, self.tol, self.target, self.label = source, w_sum, tol, target, label
        self.min_weight = check_positive_float("min_weight", min_weight)
        self.max_examples = check_int("max_examples", max_examples)
        self.workers, self.pilot = workers, pilot
        self.parts = []
        self.count = self.drawn = self.seen = self.certified = 0
        self.last_log = time.perf_counter()
        self.progress = bar(target, label, "constraint")
        # The tolerance batches are certified at, read when each task is formed: the pilot's tuple of tolerances
        # until the forecast settles, then the chosen one (batches already in flight are filtered on arrival).
        self.tols: tuple[float, ...] = (tuple(sorted(set(pilot["candidates"])
                                                     | ({tol} if tol is not None else set(pilot["reach"]))))
                                        if pilot else ())
        self.tol_now = tol if pilot is None else self.tols
        self.forecast = None
        self.at_target = None
        self.pilot_blocks = []
        self.offsets = []  # examples merged before each part
        self.stability, self.checkpoints, self.cut, self.stopped = stability, [], None, None
        self.previous_hull = None
        if stability is not None:
            d2 = w_sum.shape[0] ** 2
            self.next_check = int(np.ceil(CHECKPOINT_FIRST * d2))

    def reach(self, block, before):
        """Note the example of the block (merged after ``before`` examples) whose constraint reaches the target."""
        if self.at_target is None and self.count + block[1].shape[0] >= self.target:
            self.at_target = (before + int(block[-1][self.target - self.count - 1]) + 1
                              if self.target > self.count else before)

    def settle(self, fc):
        """Keep the pilot's constraints below the chosen tolerance, up to where a direct run would stop."""
        self.forecast, self.tol_now = fc, fc.tol
        log.info("%s: %s", self.label, fc.summary())
        self.drawn = self.seen = 0
        at = self.tols.index(fc.tol)
        for pb, pc, pn in self.pilot_blocks:
            kept = _below(pb, fc.tol)
            self.reach(kept, self.drawn)
            self.parts.append(kept)
            self.offsets.append(self.drawn)
            self.count += kept[1].shape[0]
            self.certified += pc[at]
            self.drawn += pn
            self.seen += pn * self.source.k
            if self.check_stable() or self.count >= self.target:
                break
        self.progress.update(min(self.count, self.target))

    def forecast_now(self, n_pilot):
        """The pilot's forecast from the residuals of the pilot blocks so far (``n_pilot`` examples)."""
        pilot = self.pilot
        res = np.concatenate([pb[2] for pb, _, _ in self.pilot_blocks]) if self.pilot_blocks else np.empty(0)
        return pilot_forecast(res, max(n_pilot, 1), target=self.target, n=pilot["n"],
                              candidates=pilot["candidates"], tol=self.tol, threshold=pilot["threshold"],
                              budget=self.max_examples, seconds=time.perf_counter() - self.t0,
                              workers=self.workers.workers, rule=pilot["rule"], reach=pilot["reach"])

    def run(self, batch, first_batch=None):
        """Stream the batches; stops where a serial run stops, and counts what was merged as drawn."""
        source = self.source
        tasks = (((eb, self.w_sum, self.tol_now, self.min_weight), eb.n)
                 for eb in source.batches(growing_sizes(self.max_examples, batch, first_batch)))
        # Blocks are merged in batch order and the stream stops where a serial run stops: the first
        # batch that brings the count to the target (batches computed ahead are discarded).
        key = {"phase 2": "2_crude_sculpt", "phase 4": "4_refined_sculpt"}.get(self.label, self.label)
        fn = certify_batch if self.pilot is None else _certify_or_pilot
        try:
            with contextlib.closing(self.workers.ordered(key, fn, tasks)) as blocks:
                for block, c, rows in blocks:
                    if isinstance(c, tuple):  # a pilot batch
                        if self.forecast is None:
                            if self.take_pilot(block, c, rows):
                                break
                            continue
                        # Computed ahead at the pilot's tolerances: the rows below the chosen one are what it gives.
                        block, c = _below(block, self.tol_now), c[self.tols.index(self.tol_now)]
                    if self.merge(block, c, rows):
                        break
                else:
                    if self.pilot is not None and self.forecast is None:  # the budget ended inside the pilot
                        self.settle(self.forecast_now(self.drawn))
        finally:  # what was merged counts as drawn, also when a fixed set ran out or the run is stopped
            source.consume(self.drawn)

    def take_pilot(self, block, c, rows):
        """Keep a pilot batch and forecast again; True when the stream should stop (over budget or at target)."""
        self.pilot_blocks.append((block, c, rows // self.source.k))
        self.drawn += rows // self.source.k
        self.seen += rows
        self.progress.set_postfix_str(f"pilot: {self.drawn:,} examples")
        fc = self.forecast_now(self.drawn)
        if not fc.settled:
            return False
        self.settle(fc)
        return fc.over_budget or self.count >= self.target or self.cut is not None

    def merge(self, block, c, rows):
        """Merge a certified block; True when the count reaches the target."""
        self.reach(block, self.drawn)
        self.offsets.append(self.drawn)
        self.drawn += rows // self.source.k
        self.seen += rows
        self.parts.append(block)
        self.progress.update(min(block[1].shape[0], max(self.target - self.count, 0)))
        self.progress.set_postfix_str(f"{self.drawn:,} of at most {self.max_examples:,} examples")
        self.count += block[1].shape[0]
        self.certified += c
        if time.perf_counter() - self.last_log > 10:
            self.last_log = time.perf_counter()
            log.info("%s: %d of %d constraints from %s examples (budget %s)", self.label, self.count, self.target,
                     f"{self.drawn:,}", f"{self.max_examples:,}")
        return self.check_stable() or self.count >= self.target

    def prefix(self, count):
        """The first ``count`` merged constraints as :class:`Constraints` (for the stability rule's hulls)."""
        cols = [np.concatenate(col)[:count] for col in list(zip(*self.parts, strict=True))[:5]]
        A, b, r, pj, p0 = cols
        tol = self.tol_now if not isinstance(self.tol_now, tuple) else max(self.tol_now)
        return Constraints(A, b, r, self.drawn, self.seen, self.certified, tol, self.min_weight, 0.0, None, pj, p0)

    def check_stable(self):
        """Phase 4's stability rule (ours): the hull of the first ``c`` constraints at checkpoints ``c`` growing
        by ``CHECKPOINT_GROWTH`` up to the target (the cap); True (and the set cut at ``c``) once a hull moved at
        most ``stability["tol"]`` (:func:`hull_change`) from the previous checkpoint's."""
        if self.stability is None or self.cut is not None:
            return self.cut is not None
        from .span import HullUndetermined, estimate_span

        spec = self.stability
        while self.count >= self.next_check and self.next_check <= self.target and self.cut is None:
            c = self.next_check
            self.next_check = int(np.ceil(CHECKPOINT_GROWTH * c))
            try:
                with section("phase 4: stability checks (hulls)"):
                    hull = estimate_span(self.prefix(c), spec["config"], m=spec["m"], plan_m=spec["plan_m"])
            except HullUndetermined:
                self.checkpoints.append({"constraints": c, "change": None, "m": None})
                self.previous_hull = None
                continue
            change = hull_change(self.previous_hull, hull) if self.previous_hull is not None else None
            self.checkpoints.append({"constraints": c, "change": change, "m": hull.m})
            self.previous_hull = hull
            if change is not None and change <= spec["tol"]:
                self.cut = c
                self.stopped = "stable"
                log.info("%s: hull stable at %d constraints (moved %.3g <= %g since the last checkpoint)",
                         self.label, c, change, spec["tol"])
        return self.cut is not None

    def example_of(self, index):
        """Examples drawn up to and including the one that gave merged constraint ``index``."""
        before = 0
        for part, offset in zip(self.parts, self.offsets, strict=True):
            n = part[1].shape[0]
            if index < before + n:
                return offset + int(part[-1][index - before]) + 1
            before += n
        return None

    def constraints(self, truth):
        """The merged blocks as :class:`Constraints` (with each constraint's error against ``truth`` if given)."""
        self.progress.close()
        tol = self.tol
        if self.pilot is not None and self.forecast is not None:
            tol = self.forecast.tol
        d = self.w_sum.shape[0]
        if self.parts:  # the last column, each constraint's example, only served to find the target's example
            A, b, r, pj, p0 = (np.concatenate(col) for col in list(zip(*self.parts, strict=True))[:5])
        else:
            A, b, r, pj, p0 = np.empty((0, d * d)), np.empty(0), np.empty(0), np.empty(0), np.empty(0)
        certified = int(b.shape[0])
        at_target, stopped = self.at_target, self.stopped
        if self.cut is None and self.stability is not None and certified > self.target:
            # With the stability rule the target is a cap: phase 5 gets no more (at m = 1 every row certifies,
            # and a batch of 10^5 examples gave 2·10^5 constraints for d² = 144 unknowns).
            self.cut, stopped = self.target, "target"
        if self.cut is not None:  # the constraints up to the checkpoint (or cap), and the example that gave them
            A, b, r, pj, p0 = A[:self.cut], b[:self.cut], r[:self.cut], pj[:self.cut], p0[:self.cut]
            at_target = self.example_of(self.cut - 1)
        if stopped is None:
            over = self.forecast is not None and self.forecast.over_budget and certified < self.target
            stopped = "target" if certified >= self.target else "forecast" if over else "budget"
        errors = None
        if truth is not None:
            errors = (np.abs(A @ truth.thetas.reshape(truth.m, -1).T - b[:, None]).max(axis=1) if b.size
                      else np.empty(0))
        return Constraints(A, b, r, self.drawn, self.seen, self.certified, tol, self.min_weight,
                           time.perf_counter() - self.t0, errors, pj, p0, self.forecast, at_target, stopped,
                           certified, tuple(self.checkpoints))


def crude_sculpt(source: LayerOracle | ArraySource, w_sum: ArrayLike, config: LearnConfig | None = None, *,
                 truth: AttentionLayer | None = None, workers: Workers | int | str | None = None) -> Constraints:
    """Phase 2: constraints from rows certified against the crude ``ΣW`` estimate.

    Draws batches from ``source`` until ``int(config.crude_constraints·d²)`` constraints or
    ``config.crude_max_examples`` examples, certifying rows at ``config.crude_tol`` with tokens of fitted
    weight at least ``config.min_weight``. ``workers`` certifies batches in parallel: a
    :class:`learner.parallel.Workers`, or an int, ``"auto"`` or None as
    :func:`learner.learn` takes them (a pool for this call only). The blocks are
    merged in batch order, so the constraints do not depend on it. With ``config.adaptive`` (ours) the
    batches start at ``config.first_batch`` and double up to ``config.batch``
    (:func:`learner.oracle.growing_sizes`): the last batch, drawn whole, then overshoots the target by at most
    what came before; without, every batch is ``batch``.

    Parameters
    ----------
    source : LayerOracle or ArraySource
        Where the examples come from; the examples merged are marked consumed.
    w_sum : array_like, shape (d, d)
        The crude estimate of ``ΣW_i`` (phase 1's).
    config : LearnConfig, optional
        Reads ``crude_tol``, ``min_weight``, ``crude_constraints``, ``crude_max_examples``, ``batch``,
        ``adaptive`` and ``first_batch``; None: the defaults, as :func:`learner.learn` runs them.
    truth : AttentionLayer, optional
        The planted layer (oracle mode): sets each constraint's error.
    workers : Workers, int, "auto" or None
        Where the batches are certified (see above); None: here.

    Returns
    -------
    Constraints
        The constraints certified, in batch order, with ``stopped`` ``"target"`` or ``"budget"``.
    """
    cfg = as_config(config)
    w = np.asarray(w_sum, dtype=float)
    return _sculpt(source, w, tol=cfg.crude_tol, min_weight=cfg.min_weight, target=_target(cfg.crude_constraints, w),
                   max_examples=cfg.crude_max_examples, batch=cfg.batch, truth=truth, label="phase 2",
                   workers=workers, first_batch=cfg.if_adaptive("first_batch"))


def _target(multiple, w_sum):
    """Constraints to collect: ``int(multiple·d²)`` for a ``(d, d)`` ``ΣW``."""
    d = w_sum.shape[0] if w_sum.ndim == 2 and w_sum.shape[0] == w_sum.shape[1] else 0
    if d == 0:
        raise ValueError(f"`w_sum` must be a square (d, d) matrix; got shape {w_sum.shape}.")
    return int(multiple * d * d)


def refined_sculpt(source: LayerOracle | ArraySource, w_sum: ArrayLike, config: LearnConfig | None = None, *,
                   m: int | None = None, plan_m: int | None = None, truth: AttentionLayer | None = None,
                   workers: Workers | int | str | None = None, pilot: bool = True) -> Constraints:
    """Phase 4: the same sculpting with the refined ``ΣW`` and a tighter tolerance.

    The fields of ``config`` left at None are first chosen for the heads planned
    (:func:`learner.phases.resolve_config`, :meth:`LearnConfig.plan`); the target is
    ``int(config.refined_constraints·d²)`` constraints within ``config.max_examples`` examples.

    With ``pilot=True`` (ours; what :func:`learner.learn` runs) the first batches are a *pilot*: they are
    certified at the loosest candidate tolerance (and ``refined_tol``), and after each one
    :func:`learner.phases.forecast.pilot_forecast` forecasts the examples the target needs at
    every tolerance, until the forecast settles (enough rows, or a clear verdict on the
    budget; see there). The candidates are :data:`~learner.phases.forecast.ADAPTIVE_CANDIDATES` chosen by
    smallest forecast cost with ``config.adaptive`` (the pilot certifies at
    :data:`~learner.phases.forecast.REACH_CANDIDATES` too, and only where that choice is forecast above
    :data:`~learner.phases.forecast.REACH_EXAMPLES` examples or ``max_examples`` is the tightest of them within
    it chosen), else :data:`~learner.phases.forecast.DEFAULT_CANDIDATES`
    chosen by the smallest forecast at most :data:`~learner.phases.forecast.AFFORDABLE_EXAMPLES`. The
    tolerance is ``refined_tol`` when set, else the forecast's choice; the forecast is logged at INFO with a
    time estimate from the pilot's examples/s, and the stream continues at that tolerance.
    The pilot's constraints with residual below it are exactly those a run at that tolerance
    certifies on the same batches (see :func:`pilot_batch`), so they are kept, and the result
    equals ``refined_sculpt(..., pilot=False)`` at that ``refined_tol`` on the same source. When the forecast
    exceeds ``max_examples`` the phase stops after the pilot (``forecast.over_budget``; the caller
    decides). Batches computed ahead at the pilot's tolerance are filtered the same way, so
    ``workers`` change nothing.

    With ``config.adaptive`` (ours) the target is a cap: at checkpoints of ``c`` merged constraints (the
    first at 1.25·d², each next 1.25 times further) the hull of the first ``c`` is estimated
    (:func:`learner.phases.estimate_span` with ``config``, ``m`` and ``plan_m``), and the stream stops at the
    first checkpoint whose hull moved at most ``config.hull_stability`` from the previous one's
    (:func:`hull_change`). The constraints are then the first ``c`` (``stopped="stable"``,
    ``constraints_certified`` counts all those certified in the examples drawn, ``checkpoints`` lists every
    hull's change). A prefix of the merged stream does not depend on the batches' sizes or on ``workers``.
    The batches start at ``config.first_batch`` and double up to ``batch``.

    Parameters
    ----------
    source : LayerOracle or ArraySource
        Where the examples come from; the examples merged are marked consumed.
    w_sum : array_like, shape (d, d)
        The refined estimate of ``ΣW_i`` (phase 3's).
    config : LearnConfig, optional
        Reads ``refined_tol``, ``min_weight``, ``refined_constraints``, ``max_examples``, ``batch``,
        ``adaptive``, ``first_batch``, ``hull_stability`` and phase 5's ``gap_min``, ``hull_weighting`` and
        ``max_m``; None: the defaults, as :func:`learner.learn` runs them.
    m : int, optional
        The number of heads when known; None: estimated at the checkpoints from the singular-value gap.
    plan_m : int, optional
        The most heads planned for (:meth:`LearnConfig.plan`: ``m``, else ``config.max_m``); sets the pilot's
        window exponent ``(plan_m − 1)(k − 1)`` and the checkpoints' largest m.
    truth : AttentionLayer, optional
        The planted layer (oracle mode): sets each constraint's error.
    workers : Workers, int, "auto" or None
        Where the batches are certified; None: here.
    pilot : bool
        Run the pilot and attach its :class:`learner.phases.forecast.Forecast` as ``forecast`` (default);
        False certifies every batch at ``refined_tol``, which must then be set.

    Returns
    -------
    Constraints
        The constraints kept, with the pilot's ``forecast``, why the stream ``stopped`` and the
        ``checkpoints``.

    Raises
    ------
    ValueError
        Without ``refined_tol`` and ``pilot``, or for a value out of range.
    """
    if not isinstance(pilot, bool):
        raise TypeError(f"`pilot` must be True or False; got pilot={pilot!r}.")
    if m is not None:
        m = check_int("m", m, minimum=1)
    if plan_m is not None:
        plan_m = check_int("plan_m", plan_m, minimum=1)
    cfg = as_config(config)
    plan = cfg.plan(m, plan_m)
    cfg, _ = resolve_config(cfg, max(plan, 1))
    w = np.asarray(w_sum, dtype=float)
    spec: dict[str, Any] | None = None
    if pilot:
        candidates, rule, reach = ((ADAPTIVE_CANDIDATES, "cost", REACH_CANDIDATES) if cfg.adaptive
                                   else (DEFAULT_CANDIDATES, "affordable", ()))
        spec = {"n": (max(plan, 1) - 1) * (source.k - 1), "threshold": AFFORDABLE_EXAMPLES,
                "candidates": candidates, "rule": rule, "reach": reach}
    elif cfg.refined_tol is None:
        raise ValueError("`config.refined_tol` must be set unless pilot=True; got refined_tol=None.")
    stable = None
    if cfg.adaptive:
        stable = {"tol": cfg.hull_stability, "config": cfg, "m": m, "plan_m": plan}
    return _sculpt(source, w, tol=cfg.refined_tol, min_weight=cfg.min_weight,
                   target=_target(cfg.refined_constraints, w), max_examples=cfg.max_examples, batch=cfg.batch,
                   truth=truth, label="phase 4", workers=workers, pilot=spec,
                   first_batch=cfg.if_adaptive("first_batch"), stability=stable)
