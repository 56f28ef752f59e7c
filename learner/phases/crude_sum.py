"""Phase 1: the crude estimate of ``ΣW_i`` from one gradient step.

One gradient step from ``W = 0`` on a single head with ``Θ = 0`` (loss
``½‖Y − (1/k)JXW‖²``, step 1) gives ``Ŵ = (1/k) Ê[Xᵀ J Y]``; it equals
``ΣW_i`` exactly when every ``Θ_i = 0`` and is biased otherwise (the paper's
lemma bounds the bias by ``1/poly(r)``; ``theory.check_one_step`` measures it).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np

from ..oracle import batch_sizes
from ..parallel import as_workers
from ..progress import bar
from ..validation import check_int

__all__ = ["SumEstimate", "crude_sum_w"]


@dataclass(frozen=True)
class SumEstimate:
    """An estimate of ``ΣW_i`` with its diagnostics (``error`` when the truth is known)."""

    w_sum: np.ndarray
    n_examples: int
    seconds: float
    error: float | None = None
    details: dict | None = None


def _sum_error(w_sum, truth):
    if truth is None:
        return None
    target = truth.ws.sum(axis=0)
    return float(np.linalg.norm(w_sum - target) / np.linalg.norm(target))


def partial_sum(batch):
    """``Σ_n X_nᵀ J Y_n`` over one batch (a worker's reduction of phase 1): a d × d matrix."""
    X, Y = batch.examples()
    # Xᵀ J Y = (Xᵀ 1)(1ᵀ Y): the column sums of X and Y.
    return np.einsum("nc,ne->ce", X.sum(axis=1), Y.sum(axis=1))


def crude_sum_w(source, *, n_samples=400_000, batch=100_000, truth=None, workers=None):
    """Phase 1: ``Ŵ = (1/k) Ê[Xᵀ J Y]`` over ``n_samples`` examples drawn from ``source``.

    ``workers`` computes the batches' partial sums: a :class:`learner.parallel.Workers`,
    or an int, ``"auto"`` or None as :func:`learner.learn` takes them (a pool for this
    call only). The sums are added in batch order, so the estimate does not depend on it.

    Returns
    -------
    SumEstimate
        ``error`` is ``‖Ŵ − ΣW‖_F / ‖ΣW‖_F`` when ``truth`` is given.
    """
    t0 = time.perf_counter()
    n_samples = check_int("n_samples", n_samples)
    if n_samples < 1:
        raise ValueError(f"`n_samples` must be positive; got n_samples={n_samples}.")
    sizes = batch_sizes(n_samples, check_int("batch", batch))
    with as_workers(workers) as pool:
        return _crude_sum_on(source, n_samples, sizes, truth, pool, t0)


def _crude_sum_on(source, n_samples, sizes, truth, workers, t0):
    acc = 0.0
    progress = bar(n_samples, "phase 1", "ex")
    tasks = (((eb,), eb.n) for eb in source.batches(sizes))
    with contextlib.closing(workers.ordered("1_crude_sum", partial_sum, tasks)) as parts:
        for part, n in zip(parts, sizes, strict=True):
            acc = acc + part
            progress.update(n)
    progress.close()
    source.consume(n_samples)
    w_sum = acc / (source.k * n_samples)
    return SumEstimate(w_sum, n_samples, time.perf_counter() - t0, _sum_error(w_sum, truth))
