"""Phase 1: the crude estimate of ``ΣW_i`` from one gradient step.

One gradient step from ``W = 0`` on a single head with ``Θ = 0`` (loss
``½‖Y − (1/k)JXW‖²``, step 1) gives ``Ŵ = (1/k) Ê[Xᵀ J Y]``; it equals
``ΣW_i`` exactly when every ``Θ_i = 0`` and is biased otherwise (the paper's
lemma bounds the bias by ``1/poly(r)``; ``theory.check_one_step`` measures it).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..oracle import growing_sizes
from ..parallel import as_workers
from ..progress import bar
from ._config import LearnConfig, as_config
from .stopping import sample_until_precise

if TYPE_CHECKING:
    from ..layer import AttentionLayer
    from ..oracle import ArraySource, ExampleBatch, LayerOracle
    from ..parallel import Workers

__all__ = ["SumEstimate", "crude_sum_w", "partial_sum", "relative_standard_error"]


@dataclass(frozen=True)
class SumEstimate:
    """An estimate of ``ΣW_i`` with its diagnostics (``error`` when the truth is known): phases 1 and 3's result.

    Parameters
    ----------
    w_sum : ndarray, shape (d, d)
        The estimate ``Ŵ`` of ``ΣW_i``.
    n_examples : int
        Examples the phase drew (with a stopping rule, those taken in before it stopped).
    seconds : float
        Wall time of the phase.
    error : float or None
        ``‖Ŵ − ΣW‖_F / ‖ΣW‖_F`` against the true layer when the phase was given one (oracle mode), else None.
    details : dict
        The phase's diagnostics: the relative standard error, its target and why the phase stopped (see
        :func:`crude_sum_w` and :func:`learner.phases.refine_sum_w`).
    """

    w_sum: np.ndarray
    n_examples: int
    seconds: float
    error: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _sum_error(w_sum, truth):
    if truth is None:
        return None
    target = truth.ws.sum(axis=0)
    return float(np.linalg.norm(w_sum - target) / np.linalg.norm(target))


def partial_sum(batch: ExampleBatch) -> tuple[np.ndarray, float, int]:
    """A worker's reduction of phase 1: the batch's sum, sum of squares and size.

    Parameters
    ----------
    batch : ExampleBatch
        One batch of an example stream (:meth:`learner.oracle.ExampleBatch.examples` gives its ``X``,
        shape (n, k, d), and ``Y``).

    Returns
    -------
    total : ndarray, shape (d, d)
        ``Σ_n X_nᵀ J Y_n`` over the batch (``J`` the all-ones k × k matrix).
    total_sq : float
        ``Σ_n ‖X_nᵀ J Y_n‖_F²``, for the standard error of the running mean (may be ``inf`` for labels near
        float64's limit).
    n : int
        The batch's number of examples.
    """
    X, Y = batch.examples()
    # Xᵀ J Y = (Xᵀ 1)(1ᵀ Y): the column sums of X and Y; a rank-one matrix, so ‖·‖_F² = ‖Xᵀ1‖²·‖1ᵀY‖².
    a, b = X.sum(axis=1), Y.sum(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):  # labels near float64's limit: learn() names them
        sq = float(np.dot(np.einsum("nc,nc->n", a, a), np.einsum("ne,ne->n", b, b)))
        return np.einsum("nc,ne->ce", a, b), sq, X.shape[0]


def relative_standard_error(total: np.ndarray, total_sq: float, n: int) -> float:
    """``SE_F/‖mean‖_F``: the relative standard error of the mean of ``n`` i.i.d. matrices.

    The variance is the trace of one matrix's covariance, estimated without bias (``n − 1`` degrees of freedom)
    and clipped at 0.

    Parameters
    ----------
    total : ndarray
        The sum of the ``n`` matrices.
    total_sq : float
        The sum of their squared Frobenius norms, ``Σ‖·‖_F²``.
    n : int
        How many matrices were summed.

    Returns
    -------
    float
        ``sqrt(var / n) / ‖total / n‖_F``; ``inf`` below two matrices or at a zero mean.

    Examples
    --------
    >>> import numpy as np
    >>> mats = np.random.default_rng(0).normal(1.0, 0.5, size=(400, 2, 2))  # SE_F = 1/20, ‖mean‖_F = 2
    >>> round(relative_standard_error(mats.sum(axis=0), float(np.sum(mats**2)), 400), 4)
    0.0248
    >>> relative_standard_error(mats[0], float(np.sum(mats[0] ** 2)), 1)
    inf
    """
    mean = total / n
    norm2 = float(np.sum(mean**2))
    if n < 2 or norm2 == 0:
        return float("inf")
    var = max(total_sq / n - norm2, 0.0) * n / (n - 1)  # the trace of one matrix's covariance, unbiased
    return float(np.sqrt(var / n / norm2))


def crude_sum_w(source: LayerOracle | ArraySource, config: LearnConfig | None = None, *,
                truth: AttentionLayer | None = None, workers: Workers | int | str | None = None) -> SumEstimate:
    """Phase 1: ``Ŵ = (1/k) Ê[Xᵀ J Y]`` over up to ``config.n_crude`` examples drawn from ``source``.

    ``workers`` computes the batches' partial sums: a :class:`learner.parallel.Workers`,
    or an int, ``"auto"`` or None as :func:`learner.learn` takes them (a pool for this
    call only). The sums are added in batch order, so the estimate does not depend on it.

    With ``config.adaptive`` (ours) the phase is sequential: after each batch it computes the running mean's
    relative standard error (:func:`relative_standard_error`, from the batches' sums of squares) and stops as
    soon as it is at most ``config.crude_se``; ``n_crude`` is then a cap
    (:func:`learner.phases.stopping.sample_until_precise`). The batches start at ``config.first_batch``
    examples and double up to ``config.batch`` (:func:`learner.oracle.growing_sizes`). Without it every one
    of the ``n_crude`` examples is drawn in batches of ``batch``, as the paper's phase does with its fixed
    count.

    Parameters
    ----------
    source : LayerOracle or ArraySource
        Where the examples come from; the examples taken in are marked consumed.
    config : LearnConfig, optional
        Reads ``n_crude``, ``batch``, ``adaptive``, ``crude_se`` and ``first_batch``; None: the defaults, as
        :func:`learner.learn` runs them.
    truth : AttentionLayer, optional
        The planted layer (oracle mode): sets ``error`` of the result.
    workers : Workers, int, "auto" or None
        Where the batches' partial sums are computed (see above); None: here.

    Returns
    -------
    SumEstimate
        ``error`` is ``‖Ŵ − ΣW‖_F / ‖ΣW‖_F`` when ``truth`` is given; ``details`` has the
        relative standard error, the target, and why the phase stopped (``"standard error"``, ``"cap"``, or
        ``"not finite"`` when the sums overflowed).
    """
    t0 = time.perf_counter()
    cfg = as_config(config)
    sizes = growing_sizes(cfg.n_crude, cfg.batch, cfg.if_adaptive("first_batch"))
    with as_workers(workers) as pool:
        return _crude_sum_on(source, cfg.n_crude, sizes, truth, pool, t0, cfg.if_adaptive("crude_se"))


def _crude_sum_on(source, n_samples, sizes, truth, workers, t0, se_target):
    acc, acc_sq = 0.0, 0.0
    progress = bar(n_samples, "phase 1", "ex")

    def absorb(reduced):
        nonlocal acc, acc_sq
        part, sq, size = reduced
        with np.errstate(over="ignore", invalid="ignore"):
            acc, acc_sq = acc + part, acc_sq + sq
        progress.update(size)
        return size

    def estimate(n):
        if not np.isfinite(acc).all():  # overflowed: more examples cannot help (learn() says why)
            return None
        return relative_standard_error(np.asarray(acc), acc_sq, n)  # (acc starts as the float 0.0)

    tasks = (((eb,), eb.n) for eb in source.batches(sizes))
    with contextlib.closing(workers.ordered("1_crude_sum", partial_sum, tasks)) as parts:
        run = sample_until_precise(parts, absorb, estimate, se_target=se_target, progress=progress)
    n = run.examples
    source.consume(n)
    with np.errstate(over="ignore", invalid="ignore"):
        w_sum = acc / (source.k * n)
    details = {"standard_error": run.standard_error, "se_target": se_target, "stopped": run.stopped}
    return SumEstimate(w_sum, n, time.perf_counter() - t0, _sum_error(w_sum, truth), details)
