"""A gradient-descent baseline: fit an ``m``-head attention layer to examples by minimising the squared loss.

This is the method the paper's learner is compared against, not the paper's
method: it has no guarantee (the loss is non-convex in the ``Θ_i``) and is
reported through the same :class:`~learner.result.LearnResult` as :func:`learner.learn`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from ..hints import SeedLike
from ..layer import AttentionLayer, auto_batch, softmax_inplace
from ..oracle import ArraySource, LayerOracle, as_source
from ..result import LearnResult
from ..validation import Choice, Integer, check_rng, declare
from ._scaffold import DEFAULT_MILESTONES, GradientFit, check_milestones, option_rules

__all__ = ["fit_gradient"]

log = logging.getLogger(__name__)

#: The optimisers of :func:`fit_gradient` (its ``optimizer``): Adam (Kingma & Ba), or plain gradient descent
#: with step ``lr``; both with the same loss, gradients and stopping rule (ours).
OPTIMIZERS = ("adam", "gd")
#: Adam's constants (ours to use: Kingma & Ba's recommended defaults, arXiv 1412.6980).
ADAM_BETA1, ADAM_BETA2, ADAM_EPS = 0.9, 0.999, 1e-8
#: An iteration counts as an improvement when it lowers the best validation loss
#: by more than this fraction (ours).
MIN_IMPROVEMENT = 1e-4


def _softmax_backward(A, G, axis):
    """Vector-Jacobian product of the softmax along ``axis``: ``∂L/∂S`` from ``A = softmax(S)`` and ``G = ∂L/∂A``."""
    return A * (G - np.sum(G * A, axis=axis, keepdims=True))


def _forward(params, x):
    """Patterns, ``A_i X`` and ``F(X)`` for parameters (2, m, d, d) on examples ``x`` (b, k, d).

    The layout follows :class:`~learner.layer.AttentionLayer`: heads are
    concatenated so that most products are single matrix products over the
    chunk, and the softmax reduces over axis 1 (fast in numpy).
    ``P[b, c, a·m + i] = softmax_c(x_a Θ_i x_cᵀ)`` and ``AX[b, a·m + i] = Σ_c P[b, c, a·m + i] x_c``.
    """
    thetas, ws = params
    b, k, d = x.shape
    m = thetas.shape[0]
    xtheta = x.reshape(b * k, d) @ thetas.transpose(1, 0, 2).reshape(d, m * d)  # rows (b, a), columns (i, e)
    P = x @ xtheta.reshape(b, k * m, d).transpose(0, 2, 1)
    softmax_inplace(P, 1, np.empty((b, 1, k * m)))
    AX = P.transpose(0, 2, 1) @ x
    F = AX.reshape(b * k, m * d) @ ws.reshape(m * d, d)
    return P, AX, F.reshape(b, k, d)


def _chunks(X, Y, m):
    n, k, d = X.shape
    step = auto_batch(k, d, m)  # cache-sized chunks: measured ~2x faster than one large batch
    for s in range(0, n, step):
        yield X[s : s + step], Y[s : s + step]


def _loss(params, X, Y):
    """``L = (1/N) Σ_n ‖F(X_n) − Y_n‖_F²`` over all of ``X``."""
    total = 0.0
    for x, y in _chunks(X, Y, params.shape[1]):
        total += float(np.sum((_forward(params, x)[2] - y) ** 2))
    return total / X.shape[0]


def _loss_and_grad(params, X, Y):
    """The loss ``L`` of :func:`_loss` and its analytic gradient, shape (2, m, d, d) like ``params``.

    With ``R = F(X) − Y``, ``A_i = softmax(X Θ_i Xᵀ)`` and ``V_i = X W_i``:
    ``∂L/∂W_i = (2/N) Σ_n (A_i X)ᵀ R``; ``G_i = (2/N) R V_iᵀ`` is ``∂L/∂A_i``;
    ``dS_i = A_i ⊙ (G_i − rowsum(G_i ⊙ A_i))`` is ``∂L/∂S_i`` and
    ``∂L/∂Θ_i = Σ_n Xᵀ dS_i X``. The factor ``2/N`` is applied once at the end.
    """
    _, m, d, _ = params.shape
    ws = params[1]
    w_cat = ws.transpose(1, 0, 2).reshape(d, m * d)
    total = 0.0
    g_theta = np.zeros((d, m * d))  # [c, (i, e)]
    g_w = np.zeros((m * d, d))  # [(i, c), e]
    for x, y in _chunks(X, Y, m):
        b, k, _ = x.shape
        P, AX, F = _forward(params, x)
        R = F - y
        total += float(np.sum(R**2))
        g_w += AX.reshape(b * k, m * d).T @ R.reshape(b * k, d)
        V = (x.reshape(b * k, d) @ w_cat).reshape(b, k * m, d)  # V[b, c·m + i] = x_c W_i
        G = (V @ R.transpose(0, 2, 1)).reshape(b, k, m, k)  # G[b, c, i, a] = (R V_iᵀ)[a, c]
        G = G.transpose(0, 1, 3, 2).reshape(b, k, k * m)  # the layout of P
        T = _softmax_backward(P, G, 1).transpose(0, 2, 1) @ x  # T[b, a·m + i] = Σ_c dS_i[a, c] x_c
        g_theta += x.reshape(b * k, d).T @ T.reshape(b * k, m * d)
    grad = np.stack([g_theta.reshape(d, m, d).transpose(1, 0, 2), g_w.reshape(m, d, d)])
    grad *= 2.0 / X.shape[0]
    return total / X.shape[0], grad


def _train(params, X, Y, Xv, Yv, *, optimizer, lr, max_iter, batch, tol, patience, rng, label, mark):
    t0 = time.perf_counter()
    n = X.shape[0]
    best = params.copy()
    best_val = ref = initial = _loss(params, Xv, Yv)
    mark(best_val)
    best_it = last_improve = it = 0
    stopped = "max_iter"
    m1, v = np.zeros_like(params), np.zeros_like(params)
    order, pos = np.empty(0, dtype=np.intp), n  # pos = n: the first step draws the first epoch's order
    if not np.isfinite(best_val):
        stopped = "diverged"
    elif best_val <= tol:
        stopped = "tol"
    else:
        for it in range(1, max_iter + 1):
            if batch < n:
                if pos + batch > n:  # new epoch; the last partial mini-batch is dropped
                    order, pos = rng.permutation(n), 0
                idx = order[pos : pos + batch]
                pos += batch
                _, g = _loss_and_grad(params, X[idx], Y[idx])
            else:
                _, g = _loss_and_grad(params, X, Y)
            if not np.isfinite(g).all():
                stopped = "diverged"
                break
            if optimizer == "adam":
                m1 = ADAM_BETA1 * m1 + (1 - ADAM_BETA1) * g
                v = ADAM_BETA2 * v + (1 - ADAM_BETA2) * g * g
                m_hat = m1 / (1 - ADAM_BETA1**it)
                v_hat = v / (1 - ADAM_BETA2**it)
                params = params - lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)
            else:
                params = params - lr * g
            val = _loss(params, Xv, Yv)
            if not np.isfinite(val):
                stopped = "diverged"
                break
            late = mark(val)
            # Improvements are measured from the last significant one, so a slow
            # creep of many tiny steps still runs out of patience.
            if val < ref * (1 - MIN_IMPROVEMENT):
                ref, last_improve = val, it
            if val < best_val:
                best, best_val, best_it = params.copy(), val, it
            if it % 100 == 0:
                log.debug("fit_gradient restart %s: iteration %d, validation loss %.4g", label, it, val)
            if val <= tol:
                stopped = "tol"
                break
            if it - last_improve >= patience:
                stopped = "patience"
                break
            if late:
                stopped = "max_seconds"
                break
    run = {"params": best, "initial_val_loss": initial, "val_loss": best_val, "train_loss": _loss(best, X, Y),
           "iterations": it, "best_iteration": best_it, "stopped": stopped, "seconds": time.perf_counter() - t0}
    log.info("fit_gradient restart %s: validation loss %.4g -> %.4g after %d iterations (stopped: %s)",
             label, initial, best_val, it, stopped)
    return run


@declare(m=Integer(), optimizer=Choice(OPTIMIZERS), **option_rules(
    "lr", "max_iter", "restarts", "batch", "n_train", "n_val", "tol", "patience", "init_scale", "success_tol",
    "max_seconds", optional=("batch", "max_seconds")))
def fit_gradient(source: LayerOracle | ArraySource | tuple[ArrayLike, ArrayLike], *, m: int, k: int | None = None,
                 optimizer: str = "adam", lr: float = 1e-2, max_iter: int = 2000, restarts: int = 3,
                 batch: int | None = None, n_train: int = 20000, n_val: int = 5000, tol: float = 1e-8,
                 patience: int = 200, init_scale: float = 0.5, success_tol: float = 1e-3,
                 milestones: Iterable[float] = DEFAULT_MILESTONES, max_seconds: float | None = None,
                 truth: AttentionLayer | None = None, rng: SeedLike = None) -> LearnResult:
    """Fit an ``m``-head attention layer to examples by gradient descent on the squared loss (a baseline).

    Minimises

    .. math::

        L(\\Theta, W) = \\frac{1}{N} \\sum_{n=1}^{N} \\big\\| F(X_n) - Y_n \\big\\|_F^2,
        \\qquad F(X) = \\sum_{i=1}^m \\operatorname{softmax}(X \\Theta_i X^\\top)\\, X W_i,

    where ``(X_n, Y_n)``, ``n = 1..N``, are the training examples (``X_n, Y_n ∈ R^{k×d}``),
    ``‖·‖_F`` is the Frobenius norm (summed over all ``k·d`` entries, not averaged)
    and the softmax is taken row by row. The gradients are analytic (no autograd).

    Parameters
    ----------
    source : LayerOracle, ArraySource or (X, Y)
        Labelled examples. ``n_train + n_val`` examples are drawn once: the first
        ``n_train`` for training, the rest for validation.
    m : int
        Number of heads of the fitted layer.
    k : int, optional
        Tokens per sequence (checked against the source's; inferred when None).
    optimizer : {"adam", "gd"}
        Adam (``β1 = 0.9``, ``β2 = 0.999``, ``ε = 1e-8``, bias-corrected) or plain
        gradient descent ``p ← p − lr·∇L``.
    lr : float
        Step size.
    max_iter : int
        Parameter updates per restart.
    restarts : int
        At most this many independent random initialisations; the one with the
        lowest validation loss is kept. Restarts are for escaping a bad start:
        once one reaches ``tol`` the rest are skipped (``diagnostics["fit"]["restarts_run"]``).
    batch : int, optional
        Mini-batch size (a fresh permutation every epoch, the last partial
        mini-batch dropped); None uses the full training set at every step.
    n_train, n_val : int
        Training and validation examples.
    tol : float
        A restart stops once its validation loss ``L_val`` (same normalisation as
        ``L``, absolute) is at most ``tol``.
    patience : int
        A restart stops when ``L_val`` has not fallen by a relative ``1e-4``
        below its value at the last such fall for ``patience`` iterations (early
        stopping); its parameters at its lowest ``L_val`` are kept.
    init_scale : float
        Every entry of every ``Θ_i`` and ``W_i`` starts as ``N(0, init_scale²/d)``:
        on ``±1`` inputs the initial off-diagonal logits then have standard
        deviation ``init_scale·√d`` and each head's ``X W_i`` entries ``init_scale``.
    success_tol : float
        Success when the validation relative error
        ``Σ_n ‖F(X_n) − Y_n‖_F² / Σ_n ‖Y_n‖_F²`` is at most this.
    milestones : sequence of float
        Validation relative errors whose first crossing (over all restarts, in order) is timed:
        ``diagnostics["fit"]["seconds_to"]`` maps each (``"1e-03"``) to the seconds since the call
        began, examples drawn included, or None if never reached.
    max_seconds : float, optional
        Stop training at the first validation after this many seconds since the call began (the restart then
        stops at ``"max_seconds"`` and no further restart starts); the layer kept is the best so far. None
        (default): no limit. For a budget per run, as in :func:`learner.study.growth.budgeted_frontier`.
    truth : AttentionLayer, optional
        The planted layer, for diagnostics only (``result.errors``).
    rng : None, int, SeedSequence or Generator
        Restart ``j`` initialises (and shuffles) with the ``j``-th generator of
        ``rng.spawn(restarts)``; ``rng`` itself then draws the fresh inputs on
        which the errors against ``truth`` are measured.

    Returns
    -------
    LearnResult
        ``layer`` is the best restart's layer (the parameters of its lowest
        validation loss), ``status`` is ``"gradient"`` on success,
        ``"not_converged"`` otherwise, ``"examples"`` when the source has fewer
        than ``n_train + n_val`` examples (then ``layer`` is None, as in
        :func:`learner.learn`); ``m_estimated`` is False; ``timings`` has
        ``"draw"``, ``"fit"`` and ``"total"`` seconds; ``phases`` is empty;
        ``diagnostics["fit"]`` holds the settings and, per restart, the initial
        and best validation loss, the training loss at those parameters, the
        iterations, the best iteration, why it stopped (``"tol"``,
        ``"patience"``, ``"max_iter"``, ``"max_seconds"`` or ``"diverged"``) and the seconds, with
        ``best_restart`` the index kept and the seed entropy and spawn keys
        that replay every restart. ``errors`` (with ``truth``) has
        ``"relative_error"`` of ``F`` on 8192 fresh inputs and, when ``truth.m == m``,
        ``"param_error"`` (the largest matched relative parameter error), as in
        :func:`learner.learn`.

    Raises
    ------
    ValueError
        If an argument is out of range, ``optimizer`` is unknown, ``k`` differs
        from the source's, or ``truth`` has another ``d``.
    TypeError
        If a numeric argument has the wrong type, ``source`` is not a source of
        examples, or ``truth`` is not an AttentionLayer.

    Notes
    -----
    The gradient, with ``R_n = F(X_n) − Y_n``, ``A_i = softmax(X Θ_i Xᵀ)`` and
    ``V_i = X W_i`` (per example): ``∂L/∂W_i = (2/N) Σ_n (A_i X_n)ᵀ R_n``;
    ``G_i = (2/N) R_n V_iᵀ = ∂L/∂A_i``; ``dS_i = A_i ⊙ (G_i − rowsum(G_i ⊙ A_i))``
    (the softmax's Jacobian); ``∂L/∂Θ_i = Σ_n X_nᵀ dS_i X_n``. It is computed
    batched over examples in chunks of bounded memory; the softmax is the
    stable one of :mod:`learner.layer`. A restart whose loss or gradient
    becomes non-finite stops (``"diverged"``) and keeps its best parameters.

    The validation loss is evaluated after every update (``n_val`` forward
    passes per iteration). The initialisation, the defaults (``init_scale``,
    ``success_tol = 1e-3``, the relative improvement ``1e-4``) and the early
    stopping rule are ours, not the paper's; so is the whole method, which the
    paper does not analyse.

    References
    ----------
    S. Chen and Y. Li, "Provably learning a multi-head attention layer", arXiv:2402.04084.
    D. P. Kingma and J. Ba, "Adam: a method for stochastic optimization", arXiv:1412.6980.

    Examples
    --------
    >>> from learner import LayerOracle, random_layer
    >>> truth = random_layer(1, 4, logit_scale=1.0, rng=0)
    >>> result = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, n_train=500, n_val=200,
    ...                       max_iter=300, restarts=2, lr=0.05, rng=2)
    >>> result.status, result.examples_drawn, result.diagnostics["fit"]["best_restart"] in (0, 1)
    ('gradient', 700, True)
    """
    t_start = time.perf_counter()
    rng = check_rng(rng)
    source = as_source(source)
    milestones = check_milestones(milestones)
    fit = GradientFit(source, name="fit_gradient", m=m, k=k, truth=truth, rng=rng, t_start=t_start)
    batch_eff = n_train if batch is None else min(batch, n_train)
    settings = {
        "optimizer": optimizer, "lr": lr, "max_iter": max_iter, "restarts": restarts, "batch": batch,
        "n_train": n_train, "n_val": n_val, "tol": tol, "patience": patience, "init_scale": init_scale,
        "success_tol": success_tol, "loss": "mean over examples of ||F(X) - Y||_F^2",
        "seed_entropy": rng.bit_generator.seed_seq.entropy,  # type: ignore[attr-defined]
    } | ({} if max_seconds is None else {"max_seconds": max_seconds})
    train, validation = fit.split(n_train, n_val)
    if train is None:
        return validation
    (X, Y), (Xv, Yv) = train, validation
    seconds_to, mark = fit.clock(milestones, Yv, max_seconds)

    def one(j, gen, params):
        return _train(params, X, Y, Xv, Yv, optimizer=optimizer, lr=lr, max_iter=max_iter, batch=batch_eff,
                      tol=tol, patience=patience, rng=gen, label=f"{j + 1}/{restarts}", mark=mark)

    # Overflow in a diverging run is detected (non-finite loss or gradient) and reported.
    with np.errstate(over="ignore", invalid="ignore"):
        runs, gens = fit.restarts(restarts, init_scale, one)
    return fit.finish(
        runs, gens, settings=settings, seconds_to=seconds_to, validation=(Xv, Yv), success_tol=success_tol,
        keys=("initial_val_loss", "val_loss", "train_loss", "iterations", "best_iteration", "stopped", "seconds"),
        where=lambda j, best: (f"restart {j + 1} of {restarts}, {best['iterations']} iterations "
                               f"(best at {best['best_iteration']}), stopped: {best['stopped']}"),
        hint="gradient descent did not fit the examples; try more iterations or restarts, another lr or init_scale")
