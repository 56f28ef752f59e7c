"""Trained layers: attention layers of the paper's form trained by torch Adam on tasks defined here.

Every other layer of the toolkit is drawn (:func:`learner.random_layer`) or converted from a freshly initialised
torch module. This module makes layers the way a model gets them: :func:`train_layer` trains an ``m``-head layer
``F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i`` (no bias, no scaling, no mask: the paper's form) on one of the tasks of
:data:`TASKS`, with fresh inputs at every step, and keeps the layer at chosen steps (its *checkpoints*) so that a
study can follow each of the paper's conditions (:func:`learner.assumptions`) through training.

The tasks (ours; one :class:`Task` entry each, so a new task is one entry):

- ``teacher``: the labels of a planted layer of the same m (:func:`learner.random_layer` at logit scale 1): the
  student–teacher setting, the only task a layer of the form fits exactly;
- ``copy``: each token's label is the next token (cyclically). The form is permutation-equivariant
  (``F(PX) = P F(X)`` for a permutation ``P`` of the tokens) and has no positions, so from k = 3 on it cannot
  fit this and learns what the tokens' contents allow; at k = 2 the next token is the other one, which the form
  reaches by attending away from itself;
- ``majority``: every token's label is the coordinate-wise majority of the tokens (0 on a tie); at k = 2 that is
  the tokens' mean, which uniform attention (``Θ = 0``) fits exactly, and from k = 3 on a sign the form cannot
  fit;
- ``retrieve``: match and retrieve: token ``a`` finds the token ``b`` whose key block (coordinates ``s..2s``)
  agrees most with ``a``'s query block (coordinates ``0..s``), ``s = ⌊d/3⌋``, ties to the first, and its label is
  ``b``'s value block (coordinates ``2s..3s``; the label's other coordinates are 0);
- ``parity``: the label's first coordinate is the product of the token's first three coordinates (a 3-sparse
  parity under Boolean inputs), the others 0; attention's outputs are linear in the tokens given the pattern,
  so it cannot fit this.

The training recipe (ours, the conventional one): Adam on the mean squared error, fresh inputs every step,
float64, a fixed number of steps; the initial layer is :func:`learner.random_layer` at a small scale (the
recipe's ``init_scale``), seeded like the rest. The paper trains nothing: everything here is ours.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .hints import SeedLike
from .inputs import sample_inputs
from .instances import random_layer
from .layer import AttentionLayer
from .validation import DISTRIBUTIONS, Choice, Integer, Real, check_rng, declare

__all__ = ["TASKS", "Task", "TrainedLayer", "task_labels", "train_layer"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Task:
    """One task of :data:`TASKS`: its name, what it asks, whether a layer of the form can fit it, its labels.

    Parameters
    ----------
    name : str
        The key in :data:`TASKS`.
    description : str
        One line for tables and records.
    exact : callable
        ``exact(k) -> bool``: whether some layer of the paper's form (with the training's m) fits the task exactly
        at ``k`` tokens (or comes arbitrarily close, as attention that is one-hot only in the limit).
    min_d : int
        The smallest token dimension the task is defined at.
    labels : callable
        ``labels(X, m, seed) -> Y``: the labels of inputs ``X`` (n, k, d); ``m`` and ``seed`` fix the task's own
        parameters (the teacher's layer), so the same task, m and seed give the same labels.
    """

    name: str
    description: str
    exact: Callable[[int], bool] = field(repr=False)
    min_d: int
    labels: Callable[[np.ndarray, int, int], np.ndarray] = field(repr=False)


def _teacher(X, m, seed):
    d = X.shape[-1]
    return random_layer(m, d, logit_scale=1.0, rng=np.random.default_rng([seed, m, d]))(X)


def _copy(X, m, seed):
    return np.roll(X, -1, axis=1)


def _majority(X, m, seed):
    total = np.sign(X.sum(axis=1, keepdims=True))
    return np.broadcast_to(total, X.shape).copy()


def _retrieve(X, m, seed):
    s = X.shape[-1] // 3
    scores = np.einsum("nac,nbc->nab", X[..., :s], X[..., s:2 * s])
    best = scores.argmax(axis=-1)  # ties to the first, as documented
    Y = np.zeros_like(X)
    Y[..., 2 * s:3 * s] = np.take_along_axis(X[..., 2 * s:3 * s], best[..., None], axis=1)
    return Y


def _parity(X, m, seed):
    Y = np.zeros_like(X)
    Y[..., 0] = X[..., 0] * X[..., 1] * X[..., 2]
    return Y


#: The tasks, by name (ours; see the module's text). A new task is one entry.
TASKS: dict[str, Task] = {task.name: task for task in (
    Task("teacher", "the labels of a planted layer of the same m (student-teacher)", lambda k: True, 2, _teacher),
    Task("copy", "each token's label is the next token, cyclically", lambda k: k == 2, 2, _copy),
    Task("majority", "every token's label is the tokens' coordinate-wise majority", lambda k: k == 2, 2, _majority),
    Task("retrieve", "match a query block to the tokens' key blocks, return the best match's value block",
         lambda k: False, 3, _retrieve),
    Task("parity", "the first coordinate is the product of the token's first three", lambda k: False, 3, _parity),
)}


@declare(task=Choice(tuple(TASKS)), m=Integer(), seed=Integer(0))
def task_labels(task: str, X: np.ndarray, *, m: int, seed: int = 0) -> np.ndarray:
    """The labels of inputs ``X`` under a task of :data:`TASKS`.

    Parameters
    ----------
    task : str
        A key of :data:`TASKS`.
    X : ndarray, shape (n, k, d)
        Inputs (``d`` at least the task's ``min_d``).
    m : int
        The training's heads (the teacher's m).
    seed : int
        The task's own seed (the teacher's layer).

    Returns
    -------
    ndarray, shape (n, k, d)

    Examples
    --------
    >>> X = np.array([[[1.0, -1, 1], [1, 1, -1]]])
    >>> task_labels("copy", X, m=1)[0].tolist(), task_labels("majority", X, m=1)[0, 0].tolist()
    ([[1.0, 1.0, -1.0], [1.0, -1.0, 1.0]], [1.0, 0.0, 0.0])
    """
    entry = TASKS[task]
    X = np.asarray(X, dtype=float)
    if X.ndim != 3 or X.shape[-1] < entry.min_d:
        raise ValueError(f"`X` must have shape (n, k, d) with d >= {entry.min_d} for task {task!r}; got shape "
                         f"{X.shape}.")
    return entry.labels(X, m, seed)


@dataclass(frozen=True)
class TrainedLayer:
    """What :func:`train_layer` returns: the layer, its checkpoints and how training went.

    Parameters
    ----------
    layer : AttentionLayer
        The layer after the last step.
    checkpoints : dict of int to AttentionLayer
        The layer after each checkpoint step (step 0: the initial layer).
    task : str
        The task trained on.
    losses : dict of int to float
        The relative error ``Σ‖F(X) − Y‖² / Σ‖Y‖²`` on the held-out inputs at each checkpoint.
    record : dict
        The JSON-ready record: task, m, d, k, distribution, the seed (entropy and spawn key), steps, lr, batch,
        init scale, the losses, the final loss, torch's version and the seconds.
    """

    layer: AttentionLayer
    checkpoints: dict
    task: str
    losses: dict
    record: dict = field(repr=False)

    @property
    def final_loss(self) -> float:
        """The held-out relative error after the last step."""
        return self.losses[max(self.losses)]


#: Held-out inputs of the loss at each checkpoint (ours: the relative error's sampling error is about 2 % there).
TRAIN_HELDOUT = 4096


@declare(task=Choice(tuple(TASKS)), m=Integer(), d=Integer(2), k=Integer(2), distribution=Choice(DISTRIBUTIONS),
         steps=Integer(), lr=Real(), batch=Integer(), init_scale=Real(), threads=Integer(none=True))
def train_layer(task: str, *, m: int, d: int, k: int, distribution: str = "boolean", steps: int = 1500,
                lr: float = 0.01, batch: int = 256, init_scale: float = 0.5, checkpoints: Sequence[int] = (),
                threads: int | None = 1, rng: SeedLike = None) -> TrainedLayer:
    """Train an ``m``-head attention layer of the paper's form on a task of :data:`TASKS` with torch Adam.

    Parameters
    ----------
    task : str
        A key of :data:`TASKS`.
    m, d, k : int
        Heads, token dimension and tokens per example.
    distribution : {"boolean", "gaussian"}
        The inputs' distribution (:func:`learner.sample_inputs`).
    steps : int
        Adam steps, each on ``batch`` fresh inputs.
    lr : float
        Adam's learning rate (torch's other defaults).
    batch : int
        Inputs per step.
    init_scale : float
        The initial layer: :func:`learner.random_layer` with logit scale and output scale ``init_scale``.
    checkpoints : sequence of int
        Steps after which the layer is kept (0: the initial layer); the last step always is.
    threads : int or None
        ``torch.set_num_threads`` for the call (restored after); None leaves torch's setting.
    rng : None, int, SeedSequence or Generator
        The seed of everything: the task's own seed, the initial layer, the inputs.

    Returns
    -------
    TrainedLayer

    See Also
    --------
    learner.study.trained.trained_study : Trains layers per task and setting and learns them.
    learner.baselines.fit_torch : The same optimiser fitting a layer to another layer's labels.

    Examples
    --------
    >>> trained = train_layer("teacher", m=1, d=4, k=2, steps=200, rng=0)
    >>> trained.final_loss < 0.05, sorted(trained.checkpoints)
    (True, [200])
    """
    from .torch_interop import from_torch, require_torch, to_torch

    torch = require_torch()
    bad = [s for s in checkpoints if not 0 <= int(s) <= steps]
    if bad:
        raise ValueError(f"`checkpoints` must be steps in [0, steps={steps}]; got {bad[0]}.")
    if d < TASKS[task].min_d:
        raise ValueError(f"`d` must be at least {TASKS[task].min_d} for task {task!r}; got d={d}.")
    gen = check_rng(rng)
    seq = getattr(gen.bit_generator, "seed_seq", None)
    entropy, spawn_key = (seq.entropy, list(seq.spawn_key)) if seq is not None else (None, None)
    task_seed, init_rng, data_rng = int(gen.integers(2**31)), gen.spawn(1)[0], gen.spawn(1)[0]
    keep = sorted({int(s) for s in checkpoints} | {steps})
    start = random_layer(m, d, logit_scale=init_scale, w_scale=init_scale, check=False, rng=init_rng)
    Xh = sample_inputs(TRAIN_HELDOUT, k, d, distribution=distribution, rng=data_rng)
    Yh = task_labels(task, Xh, m=m, seed=task_seed)
    module = to_torch(start)
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    saved: dict[int, AttentionLayer] = {}
    losses: dict[int, float] = {}
    t0 = time.perf_counter()
    try:
        for step in range(steps + 1):
            if step in keep:
                layer = from_torch(module)
                saved[step], losses[step] = layer, float(np.sum((layer(Xh) - Yh) ** 2) / np.sum(Yh**2))
                log.info("train %s: step %d of %d, held-out relative error %.3g", task, step, steps, losses[step])
            if step == steps:
                break
            X = sample_inputs(batch, k, d, distribution=distribution, rng=data_rng)
            Xt, Yt = torch.from_numpy(X), torch.from_numpy(task_labels(task, X, m=m, seed=task_seed))
            opt.zero_grad()
            loss = torch.mean((module(Xt) - Yt) ** 2)
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(old_threads)
    record: dict[str, Any] = {
        "task": task, "m": m, "d": d, "k": k, "distribution": distribution, "steps": steps, "lr": lr, "batch": batch,
        "init_scale": init_scale, "task_seed": task_seed, "seed_entropy": entropy,
        "seed_spawn_key": spawn_key,
        "losses": {str(s): v for s, v in losses.items()}, "final_loss": losses[steps],
        "heldout": TRAIN_HELDOUT, "torch_version": torch.__version__, "seconds": time.perf_counter() - t0}
    return TrainedLayer(saved[steps], saved, task, losses, record)
