"""Errors between layers: relative mean squared error of outputs, and matched parameter errors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from .hints import SeedLike
from .inputs import sample_inputs
from .layer import AttentionLayer
from .validation import DISTRIBUTIONS, Choice, Integer, check_rng, declare

__all__ = ["AttentionStats", "HeadMatch", "attention_statistics", "match_heads", "relative_error", "truth_errors"]


def _check_layer(name, layer):
    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`{name}` must be an AttentionLayer; got {type(layer).__name__}.")
    return layer


# n_samples=8192 (2^13) and batch=4096 are ours, not tuned: a fixed count of fresh inputs, so that errors compare;
# learn's and the baselines' truth errors use the same count.
@declare(k=Integer(), n_samples=Integer(), batch=Integer(), distribution=Choice(DISTRIBUTIONS))
def relative_error(f: AttentionLayer, g: AttentionLayer, k: int, *, n_samples: int = 8192,
                   distribution: str = "boolean", batch: int = 4096, rng: SeedLike = None) -> float:
    """Relative mean squared error of layer ``g`` against reference layer ``f``.

    .. math:: \\frac{\\mathbb{E}_X \\|F(X) - G(X)\\|_F^2}{\\mathbb{E}_X \\|F(X)\\|_F^2}

    estimated on ``n_samples`` fresh inputs of ``k`` tokens (both expectations
    on the same inputs).

    Parameters
    ----------
    f, g : AttentionLayer
        Reference and estimate, with the same ``d`` (their ``m`` may differ).
    k : int
        Tokens per sequence.
    n_samples : int
        Fresh inputs the expectations are estimated on (default 8192, ours: the count :func:`learner.learn` and
        the baselines use for their errors against the truth).
    distribution : {"boolean", "gaussian"}
        The inputs' distribution.
    batch : int
        Inputs drawn and evaluated at a time (bounds memory).
    rng : None, int, SeedSequence or Generator
        Draws the inputs.

    Returns
    -------
    float
        The ratio, ``>= 0``: 0 for equal functions, 1 for ``G = 0``. Sums of squares are kept as logarithms, so
        outputs of any finite size give it whenever it is representable.

    Raises
    ------
    ValueError
        If the dimensions differ, or ``f`` is zero on every sampled input.
    OverflowError
        If the ratio exceeds float64's range.

    See Also
    --------
    match_heads : The parameters' errors, heads matched.
    learner.learn : Reports this error of its layer against ``truth`` (``errors["relative_error"]``).

    Examples
    --------
    >>> from learner import AttentionLayer, random_layer
    >>> f = random_layer(2, 8, rng=0)
    >>> relative_error(f, f, 4, n_samples=100, rng=1)
    0.0

    Heads in another order compute the same function (to rounding); Θ 1 % off does not:

    >>> relative_error(f, AttentionLayer(f.thetas[::-1], f.ws[::-1]), 4, n_samples=1000, rng=1) < 1e-20
    True
    >>> print(f"{relative_error(f, AttentionLayer(1.01 * f.thetas, f.ws), 4, n_samples=1000, rng=1):.1e}")
    1.0e-05
    """
    rng = check_rng(rng)
    _check_layer("f", f)
    _check_layer("g", g)
    if f.d != g.d:
        raise ValueError(f"`f` and `g` must have the same dimension; got f.d={f.d}, g.d={g.d}.")
    # Sums of squares in logs, each batch scaled by its largest entry (as LAPACK's nrm2 does), so that
    # outputs of any finite size give the ratio whenever it is representable.
    log_num = log_den = -np.inf
    for start in range(0, n_samples, batch):
        X = sample_inputs(min(batch, n_samples - start), k, f.d, distribution=distribution, rng=rng)
        fx = f(X)
        log_num = np.logaddexp(log_num, _log_sum_squares(fx - g(X)))
        log_den = np.logaddexp(log_den, _log_sum_squares(fx))
    if log_den == -np.inf:
        raise ValueError("the reference layer `f` is zero on every sampled input; relative error undefined.")
    log_ratio = float(log_num - log_den)
    if log_ratio > np.log(np.finfo(float).max):
        raise OverflowError(f"the relative error is about 1e{log_ratio / np.log(10):.0f}, beyond float64.")
    return float(np.exp(log_ratio))


def _log_sum_squares(a):
    """``log Σ a²`` computed without overflow or underflow (−inf for all zeros)."""
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    if scale == 0.0:
        return -np.inf
    return 2.0 * np.log(scale) + np.log(float(np.sum((a / scale) ** 2)))


@dataclass(frozen=True)
class HeadMatch:
    """Optimal matching of estimated heads to reference heads.

    ``permutation[i]`` is the estimated head matched to reference head ``i``;
    ``theta_errors[i]`` and ``w_errors[i]`` are the relative Frobenius errors
    ``‖Θ_i − Θ̂_π(i)‖_F / ‖Θ_i‖_F`` (absolute when ``Θ_i = 0``), likewise for W.

    Parameters
    ----------
    permutation : tuple of int
        ``permutation[i]``: the estimated head matched to reference head ``i``.
    theta_errors : tuple of float
        Per reference head, the relative Frobenius error of its matched ``Θ̂``.
    w_errors : tuple of float
        Per reference head, the relative Frobenius error of its matched ``Ŵ``.

    See Also
    --------
    match_heads : Builds it.
    relative_error : The error of the function, which needs no matching.

    Examples
    --------
    >>> from learner import AttentionLayer, random_layer
    >>> f = random_layer(3, 8, rng=0)
    >>> match = match_heads(f, AttentionLayer(1.01 * f.thetas[::-1], f.ws[::-1]))
    >>> match.permutation, round(match.max_error, 6), match.w_errors
    ((2, 1, 0), 0.01, (0.0, 0.0, 0.0))
    """

    permutation: tuple[int, ...]
    theta_errors: tuple[float, ...]
    w_errors: tuple[float, ...]

    @property
    def max_error(self) -> float:
        """Largest parameter error over heads and both matrices."""
        return max(self.theta_errors + self.w_errors)


def _relative(diff_norms, ref_norms):
    return np.where(ref_norms > 0, diff_norms / np.where(ref_norms > 0, ref_norms, 1.0), diff_norms)


def match_heads(reference: AttentionLayer, estimate: AttentionLayer) -> HeadMatch:
    """Match heads of ``estimate`` to ``reference`` (heads are identifiable only up to order).

    The permutation minimises ``Σ_i (e_Θ(i)² + e_W(i)²)``, the summed squared
    relative errors, by the Hungarian algorithm (exact).

    Parameters
    ----------
    reference, estimate : AttentionLayer
        The reference (the planted layer) and the estimate, with the same ``m`` and ``d``.

    Returns
    -------
    HeadMatch
        The permutation and each reference head's errors; ``max_error`` is the learner's ``param_error``.

    Raises
    ------
    ValueError
        If the layers' m or d differ, or ``reference`` is the zero layer. A zero Θ_i or W_i of a head
        of ``reference`` gives that head's error as an absolute one (``‖estimate‖_F``), not a relative one.

    See Also
    --------
    HeadMatch : The result.
    relative_error : The error of the function.

    Examples
    --------
    >>> from learner import AttentionLayer, random_layer
    >>> f = random_layer(3, 8, rng=0)
    >>> g = AttentionLayer(f.thetas[::-1], f.ws[::-1])
    >>> match_heads(f, g).permutation
    (2, 1, 0)
    """
    _check_layer("reference", reference)
    _check_layer("estimate", estimate)
    if (reference.m, reference.d) != (estimate.m, estimate.d):
        raise ValueError(
            "`reference` and `estimate` must have the same m and d; got "
            f"(m, d)=({reference.m}, {reference.d}) and ({estimate.m}, {estimate.d})."
        )
    if not (np.any(reference.thetas) or np.any(reference.ws)):
        # Every error below would fall back to an absolute one, and any small estimate would "match".
        raise ValueError("`reference` is the zero layer (every Θ_i and W_i is 0): relative errors are undefined "
                         "and its heads are not identified; give a nonzero reference.")
    m = reference.m

    def errors(ref, est):
        diff = np.linalg.norm((ref[:, None] - est[None, :]).reshape(m, m, -1), axis=2)
        return _relative(diff, np.linalg.norm(ref.reshape(m, -1), axis=1)[:, None])

    e_theta = errors(reference.thetas, estimate.thetas)
    e_w = errors(reference.ws, estimate.ws)
    rows, cols = linear_sum_assignment(e_theta**2 + e_w**2)
    return HeadMatch(
        permutation=tuple(int(c) for c in cols),
        theta_errors=tuple(float(e_theta[r, c]) for r, c in zip(rows, cols, strict=True)),
        w_errors=tuple(float(e_w[r, c]) for r, c in zip(rows, cols, strict=True)),
    )


@dataclass(frozen=True)
class AttentionStats:
    """Monte Carlo statistics of a layer's attention patterns on random inputs.

    All per-head tuples have length ``m``. ``agree_*`` are the fractions of
    (example, row) pairs in which every head's pattern is within total
    variation ``0.05`` / ``0.01`` of head 1's: the rows the learner's
    sculpting phases (2 and 4) could certify (ours).

    Parameters
    ----------
    k : int
        Tokens per sequence of the inputs.
    distribution : {"boolean", "gaussian"}
        The inputs' distribution.
    n_samples : int
        Inputs the statistics are averaged over.
    mean_max_weight : tuple of float
        Per head, the mean over rows of the largest attention weight: 1/k for uniform rows, 1 for one-hot ones.
    mean_normalized_entropy : tuple of float
        Per head, the mean over rows of the weights' entropy divided by ``ln k``: 1 for uniform rows, 0 for
        one-hot ones (the entropy itself when k = 1).
    output_rms : float
        Root mean square of the entries of ``F(X)``.
    uniform_attention_error : float
        Relative mean squared error of the layer with every ``Θ_i = 0`` and the same ``ΣW``, against the layer:
        how much the attention matters (0: not at all); NaN when ``F`` is zero on every input.
    agree_tv05 : float
        Fraction of (example, row) pairs whose heads' patterns all lie within total variation 0.05 of head 1's.
    agree_tv01 : float
        The same within 0.01.

    See Also
    --------
    attention_statistics : Measures them.
    learner.random_layer : Its ``logit_scale`` sets how peaked the patterns are.

    Examples
    --------
    >>> from learner import random_layer
    >>> sharp = attention_statistics(random_layer(2, 8, rng=0), 4, n_samples=1000, rng=1)
    >>> flat = attention_statistics(random_layer(2, 8, logit_scale=0.1, rng=0), 4, n_samples=1000, rng=1)
    >>> round(sharp.mean_max_weight[0], 2), round(flat.mean_max_weight[0], 2)  # uniform rows: 1/k = 0.25
    (0.76, 0.28)
    >>> sharp.agree_tv05 < flat.agree_tv05
    True
    """

    k: int
    distribution: str
    n_samples: int
    mean_max_weight: tuple[float, ...]
    mean_normalized_entropy: tuple[float, ...]
    output_rms: float
    uniform_attention_error: float
    agree_tv05: float
    agree_tv01: float


@declare(k=Integer(), n_samples=Integer(), batch=Integer(), distribution=Choice(DISTRIBUTIONS))
def attention_statistics(layer: AttentionLayer, k: int, *, n_samples: int = 20000, distribution: str = "boolean",
                         batch: int = 4096, rng: SeedLike = None) -> AttentionStats:
    """Summarise how peaked, how diverse and how learnable a layer's attention is.

    Parameters
    ----------
    layer : AttentionLayer
        The layer.
    k : int
        Tokens per sequence.
    n_samples : int
        Random inputs the statistics are averaged over (default 20000).
    distribution : {"boolean", "gaussian"}
        The inputs' distribution.
    batch : int
        Inputs drawn and evaluated at a time (bounds memory).
    rng : None, int, SeedSequence or Generator
        Draws the inputs.

    Returns
    -------
    AttentionStats
        ``mean_max_weight`` (1/k for uniform, 1 for one-hot rows),
        ``mean_normalized_entropy`` (entropy / ln k), the output's RMS entry,
        ``uniform_attention_error`` (relative MSE of the layer with every
        ``Θ_i = 0`` and the same ``ΣW``: how much the attention matters), and
        the head-agreement fractions.

    See Also
    --------
    AttentionStats : The fields, one by one.
    learner.assumptions : The paper's conditions, measured on the parameters instead.

    Examples
    --------
    >>> from learner import random_layer
    >>> s = attention_statistics(random_layer(2, 8, rng=0), 4, n_samples=1000, rng=1)
    >>> 0.25 <= min(s.mean_max_weight) <= 1.0
    True
    """
    rng = check_rng(rng)
    _check_layer("layer", layer)
    m, d = layer.m, layer.d
    uniform = AttentionLayer(np.zeros((1, d, d)), layer.ws.sum(axis=0, keepdims=True))
    max_w = np.zeros(m)
    ent = np.zeros(m)
    sq = err = 0.0
    agree05 = agree01 = 0
    for start in range(0, n_samples, batch):
        X = sample_inputs(min(batch, n_samples - start), k, d, distribution=distribution, rng=rng)
        P = layer.attention(X)  # (n, m, k, k)
        max_w += P.max(axis=3).sum(axis=(0, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            plogp = np.where(P > 0, P * np.log(P), 0.0)
        ent += -plogp.sum(axis=3).sum(axis=(0, 2))
        tv = 0.5 * np.abs(P - P[:, :1]).sum(axis=3).max(axis=1)  # (n, k)
        agree05 += int(np.sum(tv <= 0.05))
        agree01 += int(np.sum(tv <= 0.01))
        fx = layer(X)
        sq += float(np.sum(fx**2))
        err += float(np.sum((fx - uniform(X)) ** 2))
    rows = n_samples * k
    return AttentionStats(
        k=k,
        distribution=distribution,
        n_samples=n_samples,
        mean_max_weight=tuple(float(v) for v in max_w / rows),
        mean_normalized_entropy=tuple(float(v) for v in ent / rows / (np.log(k) if k > 1 else 1.0)),
        output_rms=float(np.sqrt(sq / (rows * d))),
        uniform_attention_error=err / sq if sq > 0 else float("nan"),
        agree_tv05=agree05 / rows,
        agree_tv01=agree01 / rows,
    )


def truth_errors(truth: AttentionLayer | None, layer: AttentionLayer | None, k: int, source: object,
                 rng: SeedLike) -> dict[str, float]:
    """Errors of a learned ``layer`` against the planted ``truth``: relative error of F on 8192 fresh
    inputs of the source's distribution, and the parameter error after matching heads (equal m only).

    Parameters
    ----------
    truth : AttentionLayer or None
        The planted layer; None gives no errors.
    layer : AttentionLayer or None
        The learned layer; None (a run that failed before it) gives no errors.
    k : int
        Tokens per sequence.
    source : object
        The run's example source: its ``distribution`` attribute, when set, is the inputs' distribution;
        ``"boolean"`` otherwise.
    rng : None, int, SeedSequence or Generator
        Draws the fresh inputs.

    Returns
    -------
    dict of str to float
        ``"relative_error"`` (:func:`relative_error`) and, when ``truth`` and ``layer`` have the same m,
        ``"param_error"`` (:attr:`HeadMatch.max_error`); empty when either layer is None.
    """
    errors = {}
    if truth is not None and layer is not None:
        # 8192 = 2^13 fresh inputs (ours, not tuned; relative_error's default)
        errors["relative_error"] = relative_error(truth, layer, k, n_samples=8192,
                                                  distribution=getattr(source, "distribution", None) or "boolean",
                                                  rng=rng)
        if truth.m == layer.m:
            errors["param_error"] = match_heads(truth, layer).max_error
    return errors
