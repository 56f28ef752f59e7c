"""The peer baseline: an attention layer of the paper's form trained the way an ML researcher would, in PyTorch.

:func:`fit_torch` trains :class:`~learner.torch_interop.AttentionModule` (``Θ_i``, ``W_i`` as
parameters) with ``torch.optim.Adam`` on mini-batches, a cosine learning-rate schedule and
gradient-norm clipping: the conventional recipe, not a method the paper analyses. It draws the
same examples and starts from the same initial parameters as :func:`learner.baselines.fit_gradient` given
the same ``rng`` (restart ``j`` from ``rng.spawn(restarts)[j]``), so the two differ only in the
optimiser's recipe and the software.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import torch_interop
from ..hints import SeedLike
from ..layer import AttentionLayer
from ..oracle import ArraySource, LayerOracle, as_source
from ..result import LearnResult
from ..validation import Integer, check_rng, declare
from ._scaffold import DEFAULT_MILESTONES, GradientFit, check_milestones, option_rules

__all__ = ["fit_torch"]

log = logging.getLogger(__name__)


@declare(m=Integer(), **option_rules("lr", "epochs", "batch", "n_train", "n_val", "restarts", "tol", "clip",
                                     "init_scale", "success_tol", "eval_every", "threads",
                                     "max_seconds", optional=("eval_every", "threads", "batch", "max_seconds")))
def fit_torch(source: LayerOracle | ArraySource | tuple[ArrayLike, ArrayLike], *, m: int, k: int | None = None,
              lr: float = 1e-2, epochs: int = 200, batch: int | None = 256, n_train: int = 20000, n_val: int = 5000,
              restarts: int = 3, tol: float = 1e-8, clip: float = 1.0, init_scale: float = 0.5,
              success_tol: float = 1e-3, milestones: Iterable[float] = DEFAULT_MILESTONES,
              eval_every: int | None = None, dtype: str = "float64", threads: int | None = None,
              device: Any = "cpu", max_seconds: float | None = None, truth: AttentionLayer | None = None,
              rng: SeedLike = None) -> LearnResult:
    """Fit an ``m``-head layer with ``torch.optim.Adam``: mini-batches, cosine schedule, gradient clipping.

    Minimises the loss of :func:`learner.baselines.fit_gradient`,

    .. math::

        L(\\Theta, W) = \\frac{1}{N} \\sum_{n=1}^{N} \\big\\| F(X_n) - Y_n \\big\\|_F^2,

    estimated on mini-batches of ``batch`` examples (a fresh permutation every epoch, the last
    partial batch dropped), with torch's autograd. Each step: ``loss.backward()``, the gradient of
    all parameters clipped to norm ``clip`` (``torch.nn.utils.clip_grad_norm_``), an Adam step
    (torch's defaults ``β = (0.9, 0.999)``, ``ε = 1e-8``) and a step of
    ``CosineAnnealingLR(T_max = epochs · ⌊n_train / batch⌋)``, which takes the learning rate from
    ``lr`` to 0 over the run.

    Parameters
    ----------
    source : LayerOracle, ArraySource or (X, Y)
        ``n_train + n_val`` examples are drawn once: the first ``n_train`` train, the rest validate.
    m : int
        Heads of the fitted layer.
    k : int, optional
        Checked against the source's tokens.
    lr : float
        Adam's initial learning rate.
    epochs : int
        Passes over the training examples per restart (the cosine schedule's length).
    batch : int or None
        Mini-batch size (at most ``n_train``); None trains on all ``n_train`` examples at every step (full batch,
        the natural recipe on a GPU, where one step over 20,000 examples costs about what one over 256 does).
    n_train, n_val, restarts, tol, init_scale, success_tol
        As in :func:`learner.baselines.fit_gradient`: a restart stops once its validation loss is at most
        ``tol``; the restart with the lowest validation loss is kept; success is a validation
        relative error ``Σ‖F(X) − Y‖² / Σ‖Y‖²`` of at most ``success_tol``.
    clip : float
        Largest gradient norm (over all parameters) of a step.
    milestones : sequence of float
        Validation relative errors whose first crossing is timed (``diagnostics["fit"]["seconds_to"]``,
        seconds since the call began, examples drawn included, ``import torch`` not; None if never reached).
    eval_every : int, optional
        Steps between validations (default: one epoch). The validation decides ``tol``, the best
        parameters and the milestones.
    dtype : {"float64", "float32"}
        Of the parameters and examples (float32 cannot reach relative errors near 1e-8 reliably).
    threads : int, optional
        ``torch.set_num_threads`` for the call (restored after); None leaves torch's setting.
    device : str or torch.device
        Where the parameters and examples live and every step computes: ``"cpu"`` (default), ``"cuda"``,
        ``"cuda:1"``, ... (:func:`learner.arrays.torch_device`; a ValueError when torch sees no such
        device). The result's layer is numpy on the CPU either way.
    max_seconds : float, optional
        Stop training at the first validation after this many seconds since the call began (the restart then
        stops at ``"max_seconds"`` and no further restart starts); the layer kept is the best so far. None
        (default): no limit. For a budget per run, as in :func:`learner.study.growth.budgeted_frontier`.
    truth : AttentionLayer, optional
        The planted layer, for ``result.errors`` only.
    rng : None, int, SeedSequence or Generator
        As in :func:`learner.baselines.fit_gradient` (same examples, initial parameters and error inputs for
        the same ``rng``); restart ``j`` also draws its permutations from its own generator.

    Returns
    -------
    LearnResult
        As :func:`learner.baselines.fit_gradient`'s, with ``diagnostics["fit"]["recipe"] = "torch-adam"``, per
        restart its steps, best step, why it stopped (``"tol"``, ``"epochs"``, ``"max_seconds"`` or ``"diverged"``) and
        seconds, and ``seconds_to``.

    Raises
    ------
    ValueError, TypeError
        For arguments out of range or of the wrong type (named).
    ImportError
        If torch is not installed.

    Notes
    -----
    The recipe (mini-batches of 256, cosine schedule, clipping at 1, 200 epochs) is the common
    default of deep-learning practice and ours to choose; the paper analyses no gradient method.

    References
    ----------
    D. P. Kingma and J. Ba, "Adam: a method for stochastic optimization", arXiv:1412.6980.
    I. Loshchilov and F. Hutter, "SGDR: stochastic gradient descent with warm restarts", arXiv:1608.03983.
    """
    torch = torch_interop.require_torch()  # imported before the clock starts: a process pays it once, not per fit
    t_start = time.perf_counter()
    rng = check_rng(rng)
    source = as_source(source)
    milestones = check_milestones(milestones)
    dt = torch_interop.torch_dtype(dtype)
    dev = torch_interop.torch_device(device)
    fit = GradientFit(source, name="fit_torch", m=m, k=k, truth=truth, rng=rng, t_start=t_start)
    full_batch = batch is None  # a batch >= n_train keeps its permuted order (the records made with one)
    batch = n_train if batch is None else min(batch, n_train)
    per_epoch = n_train // batch
    total_steps = epochs * per_epoch
    eval_every = per_epoch if eval_every is None else eval_every
    settings = {
        "recipe": "torch-adam", "lr": lr, "epochs": epochs, "batch": batch, "n_train": n_train, "n_val": n_val,
        "restarts": restarts, "tol": tol, "clip": clip, "init_scale": init_scale, "success_tol": success_tol,
        "schedule": f"cosine over {total_steps} steps", "eval_every": eval_every, "dtype": dtype,
        "threads": threads, "device": str(dev), "full_batch": full_batch, "torch_version": torch.__version__,
        "milestones": list(milestones),
        "loss": "mean over examples of ||F(X) - Y||_F^2",
        "seed_entropy": rng.bit_generator.seed_seq.entropy,  # type: ignore[attr-defined]
    } | ({} if max_seconds is None else {"max_seconds": max_seconds})
    train, validation = fit.split(n_train, n_val)
    if train is None:
        return validation
    seconds_to, mark = fit.clock(milestones, validation[1], max_seconds)
    module_class = torch_interop.AttentionModule  # the class, built (and torch imported) on first access

    def one(j, gen, params):
        model = module_class(torch.from_numpy(params[0]).to(dev, dt), torch.from_numpy(params[1]).to(dev, dt))
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total_steps)
        return _train(torch, model, opt, sched, X, Y, Xv, Yv, gen=gen, batch=batch, per_epoch=per_epoch,
                      total_steps=total_steps, eval_every=eval_every, clip=clip, tol=tol, mark=mark,
                      label=f"{j + 1}/{restarts}", full_batch=full_batch)

    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        X, Y, Xv, Yv = (torch.from_numpy(a).to(dev, dt) for a in (*train, *validation))
        runs, gens = fit.restarts(restarts, init_scale, one)
    finally:
        torch.set_num_threads(old_threads)
    return fit.finish(
        runs, gens, settings=settings, seconds_to=seconds_to, validation=validation, success_tol=success_tol,
        keys=("initial_val_loss", "val_loss", "steps", "best_step", "stopped", "seconds"),
        where=lambda j, best: (f"restart {j + 1} of {restarts}, {best['steps']} steps (best at {best['best_step']}), "
                               f"stopped: {best['stopped']}"),
        hint="torch Adam did not fit the examples; try more epochs or restarts, another lr or batch")


def _train(torch, model, opt, sched, X, Y, Xv, Yv, *, gen, batch, per_epoch, total_steps, eval_every, clip, tol,
           mark, label, full_batch=False):
    """One restart; returns its best parameters (numpy, float64) and how it ended."""
    t0 = time.perf_counter()

    def val_loss():
        with torch.no_grad():
            return float(torch.sum((model(Xv) - Yv) ** 2)) / Xv.shape[0]

    def snapshot():
        return (model.thetas.detach().to("cpu").double().numpy().copy(),
                model.ws.detach().to("cpu").double().numpy().copy())

    best_val = initial = val_loss()
    mark(best_val)
    best, best_step, step, stopped = snapshot(), 0, 0, "epochs"
    if not math.isfinite(best_val):
        stopped = "diverged"
    elif best_val <= tol:
        stopped = "tol"
    else:
        perm = torch.empty(0, dtype=torch.long)  # the first step (pos 0) draws the first epoch's permutation
        for step in range(1, total_steps + 1):
            if full_batch:  # every example at every step: no permutation to draw or gather
                loss = torch.sum((model(X) - Y) ** 2) / batch
            else:
                pos = (step - 1) % per_epoch
                if pos == 0:
                    perm = torch.from_numpy(gen.permutation(X.shape[0])).to(X.device)
                idx = perm[pos * batch : (pos + 1) * batch]
                loss = torch.sum((model(X[idx]) - Y[idx]) ** 2) / batch
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            if step % eval_every and step != total_steps:
                continue
            val = val_loss()
            if not math.isfinite(val):
                stopped = "diverged"
                break
            late = mark(val)
            if val < best_val:
                best, best_val, best_step = snapshot(), val, step
            if val <= tol:
                stopped = "tol"
                break
            if late:
                stopped = "max_seconds"
                break
    log.info("fit_torch restart %s: validation loss %.4g -> %.4g after %d steps (stopped: %s)",
             label, initial, best_val, step, stopped)
    return {"params": np.stack(best), "initial_val_loss": initial, "val_loss": best_val, "steps": step,
            "best_step": best_step, "stopped": stopped, "seconds": time.perf_counter() - t0}
