"""Planted layers: random attention layers meant to satisfy the paper's assumptions."""

from __future__ import annotations

import logging

import numpy as np

from .assumptions import assumptions
from .errors import PlantingError
from .hints import SeedLike
from .layer import AttentionLayer
from .validation import Boolean, Integer, Scale, check_rng, declare

__all__ = ["DEFAULT_LOGIT_SCALE", "DEFAULT_W_SCALE", "random_layer"]

log = logging.getLogger(__name__)


#: ``random_layer``'s ``‖Θ_i‖_F`` unless told otherwise, and the planted layer of ``python -m learner learn``,
#: ``sample`` and ``assumptions`` (ours): patterns far from uniform but rarely one-hot, the scale at which the
#: design's prototype measured the pipeline at (m, d, k) = (2, 8, 4). The studies of run time plant at
#: :data:`learner.sweep.runs.STUDY_LOGIT_SCALE` = 1 instead, on purpose: at k = 2 and m >= 3 a scale of 3
#: makes rows nearly one-hot, which certify but carry no usable log-ratios, so the learner's yield collapses
#: for a reason that is not the growth in m the studies measure.
DEFAULT_LOGIT_SCALE = 3.0
#: ``random_layer``'s per-entry output scale of each head unless told otherwise (ours: unit scale, a convention).
DEFAULT_W_SCALE = 1.0


@declare(m=Integer(), d=Integer(), logit_scale=Scale(allow_zero=True), w_scale=Scale(), check=Boolean(),
         max_tries=Integer())
def random_layer(m: int, d: int, *, logit_scale: float = DEFAULT_LOGIT_SCALE, w_scale: float = DEFAULT_W_SCALE,
                 check: bool = True, max_tries: int = 100, rng: SeedLike = None) -> AttentionLayer:
    """Sample a planted layer with Gaussian directions and fixed norms.

    Each ``Θ_i`` is a standard Gaussian ``d×d`` matrix rescaled to Frobenius norm
    ``logit_scale``, and each ``W_i`` one rescaled to ``w_scale·sqrt(d)``.

    Parameters
    ----------
    m, d : int
        Heads and token dimension.
    logit_scale : float
        ``‖Θ_i‖_F``. This is exactly the standard deviation of an off-diagonal
        logit ``x_aᵀ Θ_i x_b`` (``a ≠ b``) under Boolean *and* Gaussian inputs,
        so it sets how peaked the attention is: near 0 every pattern is close to
        uniform (and the one-step estimate of ``ΣW`` is nearly exact); around 3
        patterns are far from uniform but rarely one-hot. Default
        :data:`DEFAULT_LOGIT_SCALE` (3; the studies of run time use 1, and say why).
    w_scale : float
        Each head's output entries ``(X W_i)_{ac}`` have standard deviation
        ``w_scale`` on average over ``c``.
    check : bool
        Resample until :func:`learner.assumptions` reports every layer condition
        as holding (``k`` is not known here and is not checked).
    max_tries : int
        Samples to try before raising :class:`PlantingError`.
    rng : None, int, SeedSequence or Generator
        Source of randomness (:func:`learner.validation.check_rng`); the same seed gives the same layer.

    Returns
    -------
    AttentionLayer
        The planted layer, ``m`` heads of dimension ``d``.

    Raises
    ------
    PlantingError
        With ``check``, when none of ``max_tries`` samples met the conditions (small ``d`` for its ``m``).

    Notes
    -----
    Gaussian matrices are incoherent (pairwise cosines ``O(1/d)``), have stable
    rank about ``d/4``, light diagonals and columns, and non-arithmetic entries
    with probability one, which is why they are the natural planted instance.
    The construction and the default scale are ours.

    See Also
    --------
    learner.assumptions : The conditions ``check`` asks for.
    learner.LayerOracle : Draws labelled examples from the layer.
    learner.AttentionLayer : The layer type.

    Examples
    --------
    >>> layer = random_layer(2, 8, rng=0)
    >>> layer.m, layer.d, round(float(np.linalg.norm(layer.thetas[0])), 12)
    (2, 8, 3.0)
    """
    rng = check_rng(rng)
    report = None
    for attempt in range(1, max_tries + 1):
        thetas = _unit_frobenius(rng.standard_normal((m, d, d))) * logit_scale
        ws = _unit_frobenius(rng.standard_normal((m, d, d))) * (w_scale * np.sqrt(d))
        layer = AttentionLayer(thetas, ws)
        if not check:
            return layer
        report = assumptions(layer)
        if report.ok:
            if attempt > 1:
                log.debug("random_layer: accepted sample %d of %d", attempt, max_tries)
            return layer
    error = PlantingError(
        f"no layer with m={m}, d={d}, logit_scale={logit_scale} satisfied the assumptions in "
        f"max_tries={max_tries} samples; last failures: {', '.join(report.failed)}. "  # type: ignore[union-attr]
        "Use a larger d, or check=False to accept any sample."
    )
    error.setting = {"m": m, "d": d, "logit_scale": logit_scale, "max_tries": max_tries,
                     "failed": list(report.failed)}  # type: ignore[union-attr]  # for a command line to name its flags
    raise error


def _unit_frobenius(mats):
    return mats / np.linalg.norm(mats.reshape(len(mats), -1), axis=1)[:, None, None]
