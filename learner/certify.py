"""A certified error bound: an upper confidence bound on a layer's population relative error from fresh examples.

The quantity bounded is the one :func:`learner.learn` scores, the relative mean squared error

.. math::

    R = \\frac{\\mathbb{E}\\,\\lVert \\hat F(X) - Y \\rVert_F^2}{\\mathbb{E}\\,\\lVert Y \\rVert_F^2},

over the source's examples ``(X, Y)``. :func:`certify_error` splits ``n`` fresh examples into a *calibration* part
and a *measurement* part. The calibration part sets the clip levels ``c_e`` and ``c_s``, the largest squared
error and the largest squared label norm it saw. On the measurement part the empirical Bernstein inequality of
Maurer and Pontil bounds the mean of the clipped errors ``min(e, c_e)`` from above and that of the clipped label
norms ``min(s, c_s)`` from below; clipping can only lower a mean, so the second is a lower bound on
``E‖Y‖²`` with no assumption on the labels' tails. The calibration part also bounds the chance that a fresh
example's error exceeds ``c_e`` (the *tail*). With probability at least ``1 − δ`` (a third of ``δ`` to each
of the three statements, a union bound):

- the clipped relative error ``E min(e, c_e) / E‖Y‖²`` is at most ``bound``, and
- a fresh example's squared error exceeds ``c_e`` with probability at most ``tail``.

The first is the population relative error itself whenever no example's error exceeds ``c_e``: true for every
layer when a bound on the errors is known and passed as ``clip`` (then the calibration part sets only the labels'
clip level, the tail is 0 and δ is halved between the two means). Without one, no finite sample can bound a mean
from above (a rare enormous error moves it arbitrarily), and the certificate says so through ``tail``. Under
Boolean inputs the errors of an attention layer against an attention layer are bounded, and the calibration
maximum is close to their largest value.

The construction (the split, the clipping and the union bound) is ours; the inequality is Maurer and Pontil's
(Theorem 4, arXiv 0907.3740); the paper states no certificate of this kind.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike

from .layer import AttentionLayer
from .validation import Boolean, Real, check_real_array, declare

__all__ = ["CERTIFY_CALIBRATION", "CERTIFY_DELTA", "ErrorCertificate", "bernstein_bound", "certify_error"]

#: The failure probability of :func:`certify_error` unless told otherwise (ours: the common 5 %).
CERTIFY_DELTA = 0.05
#: The share of the fresh examples :func:`certify_error` spends on the clip levels (ours: a quarter keeps the tail
#: bound ``ln(3/δ)/n_cal`` at 1.7 % for 1,000 examples at δ = 0.05 and leaves three quarters to the means).
CERTIFY_CALIBRATION = 0.25


@declare(delta=Real(below=1.0), upper=Boolean(), variance=Boolean())
def bernstein_bound(values: ArrayLike, *, delta: float, upper: bool = True, variance: bool = True) -> float:
    """One side of the empirical Bernstein confidence interval for the mean of values in ``[0, 1]``.

    .. math::

        \\mathbb{E} Z \\le \\bar Z_n + \\sqrt{\\frac{2 V_n \\ln(2/\\delta)}{n}} + \\frac{7 \\ln(2/\\delta)}{3(n-1)}

    with probability at least ``1 − δ`` (``V_n`` the unbiased sample variance), and the mirror image below.

    Parameters
    ----------
    values : array_like, shape (n,)
        Independent draws of ``Z``, each in ``[0, 1]`` (ValueError otherwise); ``n ≥ 2``.
    delta : float
        The failure probability, in (0, 1).
    upper : bool
        The upper bound (True) or the lower bound (False); clipped to ``[0, 1]``.
    variance : bool
        Keep the variance term. False drops it, leaving the sample mean and the range term: a bound that is
        too small whenever the variance matters — kept for the negative control of the coverage tests.

    Returns
    -------
    float
        The bound on ``E Z``.

    Notes
    -----
    Maurer and Pontil (arXiv 0907.3740, Theorem 4) with ``ln(2/δ)`` as stated there; one side at ``δ`` holds
    with probability ``1 − δ``. The inequality is theirs; its use here is ours.

    Examples
    --------
    >>> z = [0.0, 1.0] * 50
    >>> round(bernstein_bound(z, delta=0.05), 4), round(bernstein_bound(z, delta=0.05, upper=False), 4)
    (0.7234, 0.2766)
    """
    z = check_real_array("values", values, ndim=1)
    if z.size < 2:
        raise ValueError(f"`values` must hold at least 2 draws; got {z.size}.")
    if z.min() < 0 or z.max() > 1:
        raise ValueError(f"`values` must lie in [0, 1]; got values in [{z.min():.6g}, {z.max():.6g}].")
    n = z.size
    log_term = math.log(2.0 / delta)
    spread = math.sqrt(2.0 * float(np.var(z, ddof=1)) * log_term / n) if variance else 0.0
    margin = spread + 7.0 * log_term / (3.0 * (n - 1))
    mean = float(np.mean(z))
    return min(1.0, mean + margin) if upper else max(0.0, mean - margin)


@dataclass(frozen=True)
class ErrorCertificate:
    """What :func:`certify_error` returns: the bound, the estimate beside it and what the bound assumes.

    Parameters
    ----------
    bound : float
        With probability at least ``1 − delta``, the clipped population relative error is at most this (``inf``
        when the labels' lower bound is 0: too few examples to certify anything).
    estimate : float
        The plain relative error on the measurement part (not a bound).
    delta : float
        The failure probability.
    tail : float
        With probability at least ``1 − delta`` (the same event), the chance that a fresh example's squared error
        exceeds ``clip`` is at most this; 0 when ``clip`` was given.
    clip : float
        The clip level ``c_e`` of the squared errors: the calibration part's largest, or the one given.
    n_calibration, n_measured : int
        The examples of each part (the calibration part always sets the labels' clip level).
    clip_given : bool
        Whether ``clip`` was given (then the bound is on the unclipped error, and ``tail`` is 0).

    See Also
    --------
    certify_error : Makes it.
    learner.LearnResult : Its ``error_bound`` is ``bound``, for a learned layer.

    Examples
    --------
    >>> from learner import random_layer, sample_inputs
    >>> layer = random_layer(1, 4, rng=0)
    >>> X = sample_inputs(100, 2, 4, rng=1)
    >>> cert = certify_error(layer, X, layer(X))
    >>> cert.bound, cert.n_calibration, cert.n_measured
    (0.0, 25, 75)
    """

    bound: float
    estimate: float
    delta: float
    tail: float
    clip: float
    n_calibration: int
    n_measured: int
    clip_given: bool

    def to_dict(self) -> dict:
        """The certificate as a JSON-ready dict.

        Returns
        -------
        dict
            Every field, by name.
        """
        return asdict(self)

    def statement(self) -> str:
        """The certificate in one sentence.

        Returns
        -------
        str
            The bound, the estimate and the examples, and what the bound counts: the clip and the chance of an
            error past it, or the clip given.
        """
        head = (f"with probability at least {1 - self.delta:g}, the population relative error is at most "
                f"{self.bound:.3g} (measured {self.estimate:.3g} on {self.n_measured} fresh examples)")
        if self.clip_given:
            return head + f", every squared error being at most {self.clip:.3g} as given."
        return (head + f", counting each squared error at most {self.clip:.3g} (the largest of {self.n_calibration} "
                f"calibration examples); one exceeds it with probability at most {self.tail:.3g}.")


def _per_example(layer, X, Y):
    """Squared errors and squared label norms per example."""
    diff = layer(X) - Y
    return np.sum(diff**2, axis=(1, 2)), np.sum(Y**2, axis=(1, 2))


def _clipped_mean_bound(values, clip, delta, upper, variance):
    """The Bernstein bound on ``E min(values, clip)``, in the values' units."""
    if clip <= 0:
        return 0.0
    return clip * bernstein_bound(np.minimum(values, clip) / clip, delta=delta, upper=upper, variance=variance)


@declare(delta=Real(below=1.0),
         calibration=Real(below=1.0), clip=Real(none=True))
def certify_error(layer: AttentionLayer, X: ArrayLike, Y: ArrayLike, *, delta: float = CERTIFY_DELTA,
                  calibration: float = CERTIFY_CALIBRATION, clip: float | None = None,
                  variance: bool = True) -> ErrorCertificate:
    """An upper confidence bound on ``layer``'s population relative error from fresh labelled examples.

    Parameters
    ----------
    layer : AttentionLayer
        The layer certified.
    X : array_like, shape (n, k, d)
        Fresh inputs: drawn independently of everything that chose ``layer`` (a held-out set used to pick
        among candidates is not fresh).
    Y : array_like, shape (n, k, d)
        Their labels.
    delta : float
        The failure probability, in (0, 1).
    calibration : float
        The share of the examples that sets the clip levels (the labels' always, the errors' unless ``clip`` is
        given).
    clip : float, optional
        A known bound on every example's squared error ``‖F̂(X) − Y‖²``; then the bound is on the unclipped
        error and ``tail`` is 0.
    variance : bool
        Keep the Bernstein variance term (:func:`bernstein_bound`); False only for negative controls.

    Returns
    -------
    ErrorCertificate

    Raises
    ------
    ValueError
        When ``X`` and ``Y`` differ in shape, or a part would hold fewer than 2 examples.

    See Also
    --------
    bernstein_bound : The inequality, one side.
    learner.learn : Certifies the layer it learns (``LearnResult.error_bound``).

    Examples
    --------
    >>> from learner import random_layer, sample_inputs
    >>> truth = random_layer(2, 6, logit_scale=1.0, rng=0)
    >>> close = type(truth)(truth.thetas, truth.ws * 1.01)
    >>> X = sample_inputs(4000, 2, 6, rng=1)
    >>> cert = certify_error(close, X, truth(X))
    >>> round(cert.estimate, 6), cert.estimate <= cert.bound < 2 * cert.estimate
    (0.0001, True)
    """
    X = check_real_array("X", X, ndim=3)
    Y = check_real_array("Y", Y, ndim=3)
    if X.shape != Y.shape:
        raise ValueError(f"`X` and `Y` must have the same shape; got X.shape={X.shape}, Y.shape={Y.shape}.")
    n = X.shape[0]
    n_cal = int(round(calibration * n))
    if n_cal < 2 or n - n_cal < 2:
        raise ValueError(f"`X` must hold enough examples for a calibration part and a measurement part of at "
                         f"least 2 each; got n={n} with calibration={calibration:g}.")
    e, s = _per_example(layer, X, Y)
    part = (delta / 2) if clip is not None else (delta / 3)
    clip_s = float(s[:n_cal].max())
    if clip is None:
        clip_e, tail = float(e[:n_cal].max()), min(1.0, math.log(1.0 / part) / n_cal)
    else:
        clip_e, tail = float(clip), 0.0
    e_m, s_m = e[n_cal:], s[n_cal:]
    upper = _clipped_mean_bound(e_m, clip_e, part, True, variance)
    lower = _clipped_mean_bound(s_m, clip_s, part, False, variance)
    bound = upper / lower if lower > 0 else math.inf
    estimate = float(e_m.sum() / s_m.sum()) if s_m.sum() > 0 else math.inf
    return ErrorCertificate(bound=bound, estimate=estimate, delta=float(delta), tail=tail, clip=clip_e,
                            n_calibration=n_cal, n_measured=n - n_cal, clip_given=clip is not None)
