"""Phase 3: refining ``ΣW_i`` from rows that a single token dominates.

Where ``Θ*`` (the hull's minimum-norm point, a proxy for every head) puts a
large margin on one token ``j*``, every head attends to ``j*`` and
``y_a ≈ x_{j*}ᵀ ΣW``; regressing ``y_a`` on ``x_{j*}`` gives ``ΣW`` far more
accurately than phase 1 (the paper's, talk: "Using a crude affine hull
estimate"). Ours: rows must also pass a *vertex residual* test — ``y_a`` close
to ``x_jᵀŴ`` for the token ``j`` that ``Θ*`` picks — and the regression is
repeated with the rows of smallest residual (trimmed least squares), because
at moderate logit scales ``Θ*``'s margin alone admits rows where some head
still spreads its attention. Then (also ours) *certified-row regression*: the
vertex rows are biased by the attention that leaks past ``j*``, so further
rounds fit each row's pattern ``p`` on the simplex's affine hull as in phase 2
(``y_a ≈ pᵀXŴ``), keep the rows of smallest residual and regress ``y_a`` on
``pᵀX`` — unbiased for rows where the heads agree, whether or not they are
one-hot — until ``Ŵ`` stops moving.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..layer import attention_patterns
from ..oracle import batch_sizes
from ..progress import bar
from ._config import LearnConfig, as_config
from .crude_sum import SumEstimate, _sum_error
from .sculpt import _dot, fit_patterns
from .stopping import sample_until_precise

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..layer import AttentionLayer
    from ..oracle import ArraySource, LayerOracle

__all__ = ["certified_regression", "refine_sum_w", "regression_se"]


def regression_se(Z: np.ndarray, y: np.ndarray, coef: np.ndarray) -> float:
    """Relative standard error ``SE_F(Ŵ)/‖Ŵ‖_F`` of the least-squares fit ``y ≈ Z Ŵ`` (ours).

    Every column of ``Ŵ`` has covariance ``σ_c² (ZᵀZ)⁻¹`` with ``σ_c²`` its residuals' variance
    (``N − p`` degrees of freedom), so ``SE_F² = (‖E‖_F²/(N − p))·tr((ZᵀZ)⁻¹)``. The residuals hold label
    noise and, for noiseless labels, the attention leaking past the rows' fitted patterns: the figure is
    the scatter of the regression, the quantity phase 3's stopping rule compares with its target.

    Parameters
    ----------
    Z : ndarray, shape (N, p)
        The regressors, one row per regressed row.
    y : ndarray, shape (N, q)
        The responses (one column per output coordinate).
    coef : ndarray, shape (p, q)
        The fitted ``Ŵ``.

    Returns
    -------
    float
        ``SE_F(Ŵ)/‖Ŵ‖_F``; ``inf`` when the fit has no degree of freedom (``N <= p``), ``Z`` is singular or
        ``Ŵ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z, W = rng.standard_normal((1000, 3)), np.eye(3)
    >>> y = Z @ W + 0.1 * rng.standard_normal((1000, 3))  # SE_F ≈ 0.1·sqrt(3·3/1000), ‖W‖_F = √3
    >>> coef = np.linalg.lstsq(Z, y, rcond=None)[0]
    >>> round(regression_se(Z, y, coef), 4)
    0.0055
    """
    n, p = Z.shape
    if n <= p:
        return float("inf")
    resid = y - Z @ coef
    try:
        trace = float(np.trace(np.linalg.inv(Z.T @ Z)))
    except np.linalg.LinAlgError:
        return float("inf")
    norm = float(np.linalg.norm(coef))
    if not np.isfinite(trace) or trace < 0 or norm == 0:
        return float("inf")
    return float(np.sqrt(np.sum(resid**2) / (n - p) * trace) / norm)


def certified_regression(X: np.ndarray, Y: np.ndarray, w_sum: ArrayLike, *, rounds: int = 60, keep: float = 0.003,
                         pool: float = 0.05, rtol: float = 1e-4,
                         truth: AttentionLayer | None = None) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Rounds of: fit patterns with the current ``Ŵ``, keep the best-fitting rows, regress ``y_a`` on ``pᵀX``.

    The iteration contracts linearly (measured ratio ~0.9 per round), so every
    fourth round the step is extrapolated geometrically (Aitken's Δ²: the
    remaining error of a linear contraction with ratio ρ is about
    ``Δ ρ/(1 − ρ)``; applied only for 0.5 < ρ < 0.99). To save work, rounds refit only a pool of the best-fitting
    ``pool`` fraction of rows, re-chosen every eight rounds. All ours.

    Parameters
    ----------
    X : ndarray, shape (n, k, d)
        Inputs.
    Y : ndarray, shape (n, k, d)
        Their labels.
    w_sum : array_like, shape (d, d)
        The starting estimate of ``ΣW_i``.
    rounds : int
        The most rounds; fewer when ``Ŵ`` stops moving (``rtol``) or no row fits.
    keep : float
        The fraction of all rows regressed on per round (of the pool: ``keep / pool``).
    pool : float
        The fraction of best-fitting rows the rounds refit, re-chosen every eight rounds.
    rtol : float
        The rounds stop once a round changes ``Ŵ`` by less than this, relative (Frobenius norm).
    truth : AttentionLayer, optional
        The planted layer: each round records its error against the true ``ΣW``.

    Returns
    -------
    w_sum : ndarray, shape (d, d)
        The final estimate.
    history : list of dict
        One record per round: ``round``, ``rows`` regressed on, the residual ``cut``, the relative
        ``change``, whether the step was ``extrapolated``, the ``error`` (None without ``truth``) and the
        regression's relative ``standard_error`` (:func:`regression_se`).
    """
    est = np.asarray(w_sum, dtype=float)
    history = []
    rows = np.ones(X.shape[:2], dtype=bool)
    prev_step = None
    for r in range(rounds):
        if r % 8 == 0:
            _, res_all, _ = fit_patterns(X, Y, est)
            rows = res_all <= np.quantile(res_all, pool)
            ii, aa = np.nonzero(rows)
            # The pool's examples and rows, copied once per pool rather than every round.
            X_pool, Y_pool = X[ii], Y[ii, aa][:, None]
        if ii.size == 0:  # no finite residual to rank rows by: nothing to regress on
            break
        # Only the pooled row of each entry is fitted (the fit takes one output row per example).
        P, res, well_posed = fit_patterns(X_pool, Y_pool, est)
        P, res = P[:, 0], res[:, 0]
        # Far outside the simplex, or an ambiguous fit: not a pattern.
        res = np.where((P.min(axis=1) > -0.05) & well_posed, res, np.inf)
        finite = np.isfinite(res)
        if not finite.any():
            break
        with np.errstate(invalid="ignore"):  # inf − inf when the quantile falls among the rejected rows
            cut = np.quantile(res, keep / pool)
        if not np.isfinite(cut):
            cut = res[finite].max()
        sel = res <= cut
        Z = np.einsum("nj,njc->nc", P[sel], X_pool[sel])
        y_sel = Y[ii[sel], aa[sel]]
        new = np.linalg.lstsq(Z, y_sel, rcond=None)[0]
        step = new - est
        extrapolated = False
        if prev_step is not None and r % 4 == 3:
            rho = float(np.linalg.norm(step) / max(float(np.linalg.norm(prev_step)), 1e-300))
            if 0.5 < rho < 0.99:
                new = new + step * rho / (1.0 - rho)
                extrapolated = True
        change = float(np.linalg.norm(new - est) / np.linalg.norm(est))
        prev_step = step
        est = new
        history.append({"round": r, "rows": int(sel.sum()), "cut": float(cut), "change": change,
                        "extrapolated": extrapolated, "error": _sum_error(est, truth),
                        "standard_error": regression_se(Z, y_sel, new)})
        if change < rtol:
            break
    return est, history


#: Examples per block of :func:`vertex_residuals` (ours: bounds the block's memory; not tuned).
VERTEX_CHUNK = 8192


def vertex_residuals(X: np.ndarray, Y: np.ndarray, w_sum: np.ndarray, *, pick: np.ndarray | None = None,
                     yy: np.ndarray | None = None, ynorm: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the token ``j`` whose ``b_j = x_jᵀŴ`` is nearest ``y_a``, and ``‖y_a − b_j‖ / ‖y_a‖``.

    With ``pick`` (``(n, k)`` token indices) the token is given and only its
    residual is computed (``k`` times less work; the same figures as the
    minimum over a set of one token, up to rounding — tested). ``yy``
    (``‖y_a‖²``) and ``ynorm`` (``‖y_a‖``, ``inf`` where zero) may be passed
    when they are reused across calls.
    """
    yy = _dot(Y, Y) if yy is None else yy
    if ynorm is None:
        ynorm = np.sqrt(yy)
        ynorm = np.where(ynorm > 0, ynorm, np.inf)
    n, k, _ = X.shape
    j = np.empty((n, k), dtype=np.intp) if pick is None else pick
    res = np.empty((n, k))
    # In blocks: the temporaries stay small (whole-sample temporaries of k = 8 tokens are ~0.6 GB each
    # and cost more in page faults than in arithmetic: measured 1.9 s against 0.5 s per round at (2, 24, 8)).
    for s in range(0, n, VERTEX_CHUNK):
        sl = slice(s, s + VERTEX_CHUNK)
        B = X[sl] @ w_sum  # (n, j, d)
        if pick is not None:
            Bp = np.take_along_axis(B, pick[sl, :, None], axis=1)  # (n, a, d): b of each row's token
            sq = yy[sl] - 2 * _dot(Y[sl], Bp) + _dot(Bp, Bp)
            res[sl] = np.sqrt(np.maximum(sq, 0.0)) / ynorm[sl]
            continue
        # ‖y_a − b_j‖² = ‖y_a‖² − 2 y_a·b_j + ‖b_j‖², without an (n, k, k, d) array.
        sq = yy[sl, :, None] - 2 * Y[sl] @ B.transpose(0, 2, 1) + _dot(B, B)[:, None, :]
        R = np.sqrt(np.maximum(sq, 0.0)) / ynorm[sl, :, None]
        j[sl] = R.argmin(axis=2)
        res[sl] = np.take_along_axis(R, j[sl, :, None], axis=2)[..., 0]
    return j, res


#: Examples on which the two starting estimates of the certified regression are compared (ours: a bound on the
#: comparison's cost; not tuned).
QUALITY_EXAMPLES = 50_000


def _fit_quantile(X, Y, w_sum, q):
    """The ``q``-quantile of the rows' fit residuals under ``w_sum`` (lower: the best rows fit better)."""
    _, res, well_posed = fit_patterns(X, Y, w_sum)
    res = np.where(well_posed[:, None], res, np.inf)
    # An order statistic, not an interpolation: ill-posed rows are inf (inf − inf would be nan).
    return float(np.quantile(res, q, method="inverted_cdf"))


def refine_sum_w(source: LayerOracle | ArraySource, w_sum: ArrayLike, theta_star: np.ndarray | None = None,
                 config: LearnConfig | None = None, *, truth: AttentionLayer | None = None,
                 cert_rounds: int = 60, cert_keep: float = 0.003, cert_pool: float = 0.05) -> SumEstimate:
    """Phase 3: trimmed regression of ``y_a`` on the dominant token's ``x_{j*}``.

    With ``config.adaptive`` the sequential rule (ours) applies: draw ``refine_first`` examples, estimate, and
    while the certified regression's relative standard error (:func:`regression_se`) is above ``refine_se``,
    draw as many again (the sample doubles, up to ``n_refine``) and estimate afresh from ``w_sum`` on the whole
    sample (:func:`learner.phases.stopping.sample_until_precise`). Without it all ``n_refine`` examples are
    drawn at once.

    Parameters
    ----------
    source : LayerOracle or ArraySource
        Where the examples come from; the examples drawn are marked consumed.
    w_sum : ndarray (d, d)
        The current estimate (phase 1's, or a previous round's).
    theta_star : ndarray (d, d), optional
        The hull's min-norm point. When given, ``j*`` is ``Θ*``'s heaviest token
        and only rows where it also has the smallest vertex residual are used;
        otherwise ``j*`` is the token of smallest vertex residual.
    config : LearnConfig, optional
        Reads ``n_refine`` (examples drawn, a cap with ``adaptive``), ``refine_rounds`` and ``refine_keep``
        (the vertex regression's rounds and fraction of rows kept per round, halved after the first three),
        ``batch``, and with ``adaptive`` ``refine_se`` and ``refine_first`` (above); None: the defaults, as
        :func:`learner.learn` runs them.
    truth : AttentionLayer, optional
        The planted layer (oracle mode): sets the result's ``error`` and each round's and stage's error.
    cert_rounds, cert_keep, cert_pool :
        The certified regression's rounds, fraction of rows regressed on, and the
        pool of best-fitting rows it refits (:func:`certified_regression`). It
        starts from the vertex estimate or from ``w_sum``, whichever makes the
        pool's quantile of row-fit residuals smaller (``details["start"]``).

    Returns
    -------
    SumEstimate
        ``details`` holds the last estimate's rounds, and ``stages`` (examples, standard error,
        error against the truth) and ``stopped`` (``"standard error"``, ``"cap"`` or ``"fixed"``).
    """
    t0 = time.perf_counter()
    cfg = as_config(config)
    w_sum = np.asarray(w_sum, dtype=float)
    n_samples, rounds, keep, batch = cfg.n_refine, cfg.refine_rounds, cfg.refine_keep, cfg.batch
    se_target = cfg.if_adaptive("refine_se")
    stages_n = [n_samples]
    if se_target is not None:
        size = min(cfg.refine_first, n_samples)
        stages_n = [size]
        while stages_n[-1] < n_samples:
            stages_n.append(min(2 * stages_n[-1], n_samples))
    progress = bar(stages_n[-1], "phase 3", "ex")
    parts = []
    est = w_sum  # the last stage's estimate and details (estimate() sets them)
    details: dict[str, Any] = {}

    def absorb(more):
        # The regression works on the whole sample (a quantile over every row each round), so the examples
        # are drawn here, batch by batch from the stream's seeds, not on workers.
        for eb in source.batches(batch_sizes(more, batch)):
            parts.append(eb.examples())
            progress.update(eb.n)
        source.consume(more)
        X = np.concatenate([p[0] for p in parts])
        Y = np.concatenate([p[1] for p in parts])
        parts[:] = [(X, Y)]
        return more

    def estimate(n):
        nonlocal est, details
        X, Y = parts[0]
        est, details = _refine_on(X, Y, w_sum, theta_star, rounds=rounds, keep=keep, cert_rounds=cert_rounds,
                                  cert_keep=cert_keep, cert_pool=cert_pool, truth=truth)
        cert = details["certified_rounds"]
        return cert[-1]["standard_error"] if cert else float("inf")

    increments = [total - drawn for drawn, total in itertools.pairwise([0, *stages_n])]  # what each stage adds
    run = sample_until_precise(increments, absorb, estimate, se_target=se_target, progress=progress,
                               record=lambda: {"error": _sum_error(est, truth)}, without_target="fixed")
    details |= {"stages": run.stages, "stopped": run.stopped, "standard_error": run.standard_error,
                "se_target": se_target}
    return SumEstimate(est, run.examples, time.perf_counter() - t0, _sum_error(est, truth), details)


def _refine_on(X, Y, w_sum, theta_star, *, rounds, keep, cert_rounds, cert_keep, cert_pool, truth):
    """Phase 3's estimate from one sample: the vertex rounds, then the certified regression; ``(Ŵ, details)``."""
    n, k, _ = X.shape
    pick = None
    if theta_star is not None:
        pick = attention_patterns(theta_star[None], X)[:, 0].argmax(axis=-1)  # (n, a)
    yy = _dot(Y, Y)  # the same every round
    ynorm = np.sqrt(yy)
    ynorm = np.where(ynorm > 0, ynorm, np.inf)
    history = []
    est = w_sum
    for r in range(rounds):
        j, res = vertex_residuals(X, Y, est, pick=pick, yy=yy, ynorm=ynorm)
        frac = keep if r < 3 else keep / 2
        cut = np.quantile(res[np.isfinite(res)], frac) if np.isfinite(res).any() else np.inf
        ii, aa = np.nonzero(res <= cut)
        est = np.linalg.lstsq(X[ii, j[ii, aa]], Y[ii, aa], rcond=None)[0]
        history.append({"round": r, "rows": int(ii.size), "cut": float(cut), "error": _sum_error(est, truth)})
    # Where no token dominates (many tokens, small logits) the vertex rows are biased and the vertex
    # estimate can be worse than the one it started from (measured at (2, 24, 8): 1 % → 40 %). Keep the
    # one under which the best-fitting rows fit better: the pool quantile of the row-fit residuals (ours).
    quality = {name: _fit_quantile(X[:QUALITY_EXAMPLES], Y[:QUALITY_EXAMPLES], w, cert_pool)
               for name, w in (("input", w_sum), ("vertex", est))}
    start = min(quality, key=quality.__getitem__)
    if start == "input":
        est = w_sum
    est, cert_history = certified_regression(X, Y, est, rounds=cert_rounds, keep=cert_keep, pool=cert_pool,
                                             truth=truth)
    return est, {"vertex_rounds": history, "start": start, "start_quality": quality,
                 "certified_rounds": cert_history}
