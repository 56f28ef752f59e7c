"""One gradient step from ``W = 0`` estimates ``ΣW_i`` (phase 1 of the learner).

Train a single head ``softmax(X Θ Xᵀ) X W`` with ``Θ = 0`` (uniform attention
``J/k``) on the per-example loss ``½‖Y − (1/k) J X W‖_F²``. One gradient step
of size 1 from ``W = 0`` gives ``W_1 = (1/k) Xᵀ J Y``; in expectation over
``Y = F(X)``,

.. math::

    E_1 = \\frac1k \\mathbb{E}\\bigl[X^\\top J F(X)\\bigr]
        = \\sum_i M_i W_i, \\qquad
    M_i = \\frac1k \\mathbb{E}\\bigl[X^\\top J \\operatorname{softmax}(X\\Theta_i X^\\top) X\\bigr],

and the talk's lemma ("Estimating ΣW", arXiv 2402.04084) says ``M_i ≈ I_d`` so
that ``E_1`` is ``1/poly(r)``-close to ``ΣW_i`` (``r`` the stable rank of the
``Θ_i``). This module checks that claim exactly (cube enumeration) or by Monte
Carlo with a confidence interval, verifies the gradient formula symbolically,
and measures how the error depends on the stable rank.
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from learner import AttentionLayer, cube_expectation, sample_inputs
from learner.hints import PathLike, SeedLike
from learner.io import save_figure
from learner.validation import DISTRIBUTIONS, Choice, Each, Integer, Real, check_rng, declare

from ._core import CheckResult, SeedOrGenerator, Timer, chebyshev_radius, finish, require_matplotlib, seeded

if TYPE_CHECKING:
    import sympy

log = logging.getLogger(__name__)

__all__ = [
    "OneStepResult",
    "StableRankSweep",
    "SymbolicOneStep",
    "check_one_step",
    "control_one_step",
    "default_one_step",
    "one_step_gradient_symbolic",
    "plot_one_step",
    "plot_stable_rank_sweep",
    "stable_rank_sweep",
    "theta_of_stable_rank",
]

METHODS = ("exact", "monte_carlo")
#: Largest ``k·d`` for ``method="exact"`` (ours, a guard on time): 2^22 ≈ 4.2e6 inputs, tens of seconds.
MAX_EXACT_BITS = 22
#: Largest ``k·d`` for the symbolic check (ours, a guard on time: it enumerates 2^{kd} inputs with sympy).
MAX_SYMBOLIC_BITS = 9
#: Floats per block of per-input d×d matrices in exact mode (ours, not tuned: 32 MiB).
_EXACT_BLOCK_FLOATS = 1 << 22
#: Inputs per Monte Carlo batch (default; ours, not tuned); memory ~ batch·k·max(k·m, d) floats.
_MC_BATCH = 8192

_CLAIM = "one gradient step from W = 0 with Θ = 0, (1/k) E[XᵀJF(X)], is within relative Frobenius error {b:g} of ΣW_i"
_SOURCE_PAPER = (
    "paper/talk (Chen & Li, arXiv 2402.04084, slide 'Estimating ΣW'): one gradient step from W = 0 on a single "
    "Θ = 0 head gives (1/k) E[XᵀJY], which is 1/poly(r)-close to ΣW_i for r the stable rank of the Θ_i. "
    "Ours: the relative Frobenius form, the numerical bound, the loss ½‖Y − f_W(X)‖_F² with step size 1"
)
_SOURCE_EXACT = "; exact expectation over all 2^(kd) Boolean inputs (no sampling error)."
_SOURCE_MC = (
    "; Monte Carlo interval (ours): vector Chebyshev radius t on the mean of the per-input d×d matrices "
    "Z = (1/k)(Xᵀ1)(1ᵀF) with the plug-in sample covariance trace (an estimate, not a bound), mapped to the "
    "relative error by the triangle inequality: [max(0, err − t/‖ΣW‖_F), err + t/‖ΣW‖_F]."
)


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False)
class OneStepResult(CheckResult):
    """A :class:`~theory.CheckResult` that also carries the matrices.

    Returned by :func:`check_one_step`. ``details`` holds the estimate and target as nested lists too, and
    :meth:`to_dict` adds ``M``. The three arrays are read-only.

    Parameters
    ----------
    name, claim, source, parameters, measured, interval, failure_probability : see CheckResult
        The fields of :class:`~theory.CheckResult`, with the types and meanings given there.
    bound, relation, holds, seed_entropy, seconds, details : see CheckResult
        The rest of its fields, likewise.
    estimate : ndarray, shape (d, d)
        ``E_1 = (1/k) E[Xᵀ J F(X)]`` (exact or Monte Carlo).
    target : ndarray, shape (d, d)
        ``ΣW_i``.
    M : ndarray, shape (m, d, d)
        Per-head ``M_i = (1/k) E[Xᵀ J softmax(XΘ_iXᵀ) X]``.
    """

    estimate: np.ndarray | None = field(default=None, repr=False)
    target: np.ndarray | None = field(default=None, repr=False)
    M: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary: the base record plus ``"M"`` as nested lists.

        Returns
        -------
        dict
            :meth:`theory.CheckResult.to_dict`'s keys and ``"M"`` (None when absent).
        """
        out = super().to_dict()
        out["M"] = None if self.M is None else np.asarray(self.M).tolist()
        return out


@dataclass(frozen=True)
class SymbolicOneStep:
    """Outcome of :func:`one_step_gradient_symbolic` (sympy, exact).

    Parameters
    ----------
    k, d : int
        Tokens and dimension of the symbolic check.
    step_size, loss_factor : sympy.Rational
        The step ``η`` and the factor ``c`` of the loss ``c·‖Y − f_W(X)‖_F²``.
    gradient_residual : sympy.ImmutableMatrix, shape (d, d)
        ``W_1 − (1/k) Xᵀ J Y`` expanded, in the symbols of ``X`` and ``Y``.
    population_residual : sympy.ImmutableMatrix, shape (d, d)
        ``2^{-kd} Σ_X W_1(X, F*(X)) − W*`` over the whole cube, in the symbols of ``W*``.
    gradient_holds, population_holds, holds : bool
        Whether each residual is the zero matrix; ``holds`` is both.
    seconds : float
        Wall-clock time of the check.
    """

    k: int
    d: int
    step_size: object
    loss_factor: object
    gradient_residual: object
    population_residual: object
    gradient_holds: bool
    population_holds: bool
    holds: bool
    seconds: float


@dataclass(frozen=True, eq=False)
class StableRankSweep:
    """Outcome of :func:`stable_rank_sweep`: one-step error against the stable rank of ``Θ``.

    Parameters
    ----------
    ranks : tuple of int
        Stable ranks ``r`` swept (each ``Θ`` has stable rank exactly ``r``).
    errors : ndarray, shape (n_ranks,)
        Mean over layers of the relative Frobenius error ``‖M − I‖_F / √d``
        (single head, ``W = I``, so ``E_1 = M`` and ``ΣW = I``).
    errors_all : ndarray, shape (n_ranks, n_layers)
        The relative Frobenius error of every run (``measured`` of :func:`check_one_step`).
    worst_case : ndarray, shape (n_ranks,)
        Mean over layers of ``‖M − I‖_op``: the largest relative Frobenius
        error ``‖(M − I)W‖_F / ‖W‖_F`` over all ``W`` for the same ``Θ``.
    worst_case_all : ndarray, shape (n_ranks, n_layers)
        ``‖M − I‖_op`` of every run.
    exponent, exponent_se : float
        Least-squares slope of ``log errors`` against ``log r`` and its standard
        error (``nan`` with fewer than three ranks).
    worst_case_exponent, worst_case_exponent_se : float
        The same for ``worst_case``.
    intercept, worst_case_intercept : float
        Intercepts of the two fits (natural logs).
    noise_floor : float
        Largest relative Chebyshev radius ``t/‖ΣW‖_F`` over the runs (0 for
        exact runs): every error in ``errors_all`` is within it of the true
        value, each run with probability ``>= 1 − failure_probability``.
    worst_case_noise_floor : float
        Largest absolute radius ``t``; it also bounds the error of each
        ``worst_case_all`` entry (``‖·‖_op <= ‖·‖_F``).
    standard_error : float
        Largest ``sqrt(tr Cov / n)/‖ΣW‖_F``: the typical size of the sampling
        error (Chebyshev's radius is this over ``sqrt(failure_probability)``).
    parameters : dict
        JSON-ready parameters of the sweep (sizes, ranks, ``frobenius``, method, ``w = "identity"``, and the Monte
        Carlo settings).
    seed_entropy : int or None
        Entropy of the sweep's seed (None when it cannot be recovered from a Generator passed in).
    seconds : float
        Wall-clock time of the sweep.
    """

    ranks: tuple
    errors: np.ndarray
    errors_all: np.ndarray
    worst_case: np.ndarray
    worst_case_all: np.ndarray
    exponent: float
    exponent_se: float
    worst_case_exponent: float
    worst_case_exponent_se: float
    intercept: float
    worst_case_intercept: float
    noise_floor: float
    worst_case_noise_floor: float
    standard_error: float
    parameters: dict
    seed_entropy: int | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (non-finite floats as None).

        Returns
        -------
        dict
            One key per field, arrays and tuples as lists.
        """
        from learner.io import json_safe

        return json_safe({f: getattr(self, f) for f in self.__dataclass_fields__})


# ----------------------------------------------------------------------------- validation


def _check_layer(layer):
    if not isinstance(layer, AttentionLayer):
        raise TypeError(f"`layer` must be an AttentionLayer; got {type(layer).__name__}.")
    return layer


def _check_exact_size(k, d):
    if k * d > MAX_EXACT_BITS:
        raise ValueError(
            f"method='exact' enumerates 2^(k*d) inputs and needs k*d <= {MAX_EXACT_BITS}; "
            f"got k={k}, d={d} (k*d={k * d}). Use method='monte_carlo'."
        )


# ----------------------------------------------------------------------------- the check


def _sums(layer, X, k):
    """Per-input ``s = Xᵀ1``, ``g = Fᵀ1`` (forward pass) and ``c_i = Xᵀ P_iᵀ 1`` (attention).

    ``g`` comes from the layer's forward pass and ``c`` from its attention
    patterns, two separate code paths, so ``Σ_i c_i W_i = g`` is a real test.
    """
    s = X.sum(axis=1)  # (b, d)
    g = layer(X).sum(axis=1)  # (b, d)
    colsum = layer.attention(X).sum(axis=2)  # (b, m, k): Σ_a P_i[a, j]
    c = np.matmul(colsum, X)  # (b, m, d)
    return s, g, c


def _exact_moments(layer, k, batch):
    m, d = layer.m, layer.d
    if batch is None:
        batch = max(1, min(65536, _EXACT_BLOCK_FLOATS // ((m + 1) * d * d)))

    def fn(X):
        s, g, c = _sums(layer, X, k)
        stack = np.concatenate([g[:, None], c], axis=1) / k  # (b, m+1, d)
        return s[:, None, :, None] * stack[:, :, None, :]  # (b, m+1, d, d)

    mean = np.asarray(cube_expectation(fn, k, d, batch=batch))  # (m + 1, d, d)
    return mean[0], mean[1:], {"n_inputs": 2 ** (k * d), "batch": batch}


def _mc_moments(layer, k, n_samples, distribution, control_variate, batch, failure_probability, rng):
    m, d = layer.m, layer.d
    wbar = layer.ws.sum(axis=0)
    batch = _MC_BATCH if batch is None else batch
    total = np.zeros((d, m + 1, d))
    sq = 0.0  # Σ ‖Z_n‖_F² = Σ ‖s‖²‖g‖²/k² (Z_n is rank one)
    done = 0
    while done < n_samples:
        b = min(batch, n_samples - done)
        X = sample_inputs(b, k, d, distribution=distribution, rng=rng)
        s, g, c = _sums(layer, X, k)
        if control_variate:
            # Z − (1/k) s sᵀ ΣW has the same mean, because E[s sᵀ] = k I exactly
            # (Boolean and Gaussian), and far less variance when attention is spread out.
            g = g - s @ wbar
            c = c - s[:, None, :]
        total += np.tensordot(s, np.concatenate([g[:, None], c], axis=1), axes=(0, 0))
        sq += float(np.dot(np.einsum("bd,bd->b", s, s), np.einsum("bd,bd->b", g, g)))
        done += b
    mean = total.transpose(1, 0, 2) / (k * n_samples)  # (m+1, d, d)
    if control_variate:
        mean[0] += wbar
        mean[1:] += np.eye(d)
    # Unbiased plug-in trace of Cov(Z); Z shifted by a constant for the control variate.
    centre = mean[0] - wbar if control_variate else mean[0]
    trace_cov = max(0.0, (sq / k**2 - n_samples * float(np.sum(centre**2))) / (n_samples - 1))
    radius = chebyshev_radius(trace_cov, n_samples, failure_probability)
    info = {"n_inputs": n_samples, "batch": batch, "trace_covariance": trace_cov, "radius": radius}
    return mean[0], mean[1:], info


@declare(k=Integer(), method=Choice(METHODS), distribution=Choice(DISTRIBUTIONS), n_samples=Integer(2),
         bound=Real(allow_zero=True), failure_probability=Real(below=1), batch=Integer(none=True))
def check_one_step(
    layer: AttentionLayer,
    k: int,
    *,
    method: str = "exact",
    distribution: str = "boolean",
    n_samples: int = 200_000,
    bound: float = 0.5,
    failure_probability: float = 0.05,
    control_variate: bool = False,
    batch: int | None = None,
    rng: SeedOrGenerator = None,
) -> OneStepResult:
    """Check that one gradient step from ``W = 0`` estimates ``ΣW_i`` (the lemma "Estimating ΣW").

    .. math::

        \\frac{\\|E_1 - \\bar W\\|_F}{\\|\\bar W\\|_F} \\le \\text{bound}, \\qquad
        E_1 = \\frac1k \\mathbb{E}_X\\bigl[X^\\top J F(X)\\bigr] = \\sum_{i=1}^m M_i W_i, \\qquad
        M_i = \\frac1k \\mathbb{E}_X\\bigl[X^\\top J \\operatorname{softmax}(X \\Theta_i X^\\top) X\\bigr],

    where ``F(X) = Σ_i softmax(XΘ_iXᵀ) X W_i`` is ``layer``, ``X`` is uniform on
    ``{±1}^{k×d}`` (or standard Gaussian), ``J`` is the ``k×k`` all-ones
    matrix and ``W̄ = ΣW_i``. ``E_1`` is the expected one-step estimate (see
    :func:`one_step_gradient_symbolic`); ``XᵀJF = (Xᵀ1)(1ᵀF)`` is rank one
    per input, which is how it is computed.

    Parameters
    ----------
    layer : AttentionLayer
        The target layer (``m`` heads, dimension ``d``).
    k : int
        Tokens per sequence.
    method : {"exact", "monte_carlo"}
        ``"exact"`` averages over all ``2^{kd}`` Boolean inputs (needs
        ``k·d <= 22``); ``"monte_carlo"`` samples ``n_samples`` inputs.
    distribution : {"boolean", "gaussian"}
        Input distribution (``"gaussian"`` only with ``method="monte_carlo"``).
    n_samples : int
        Monte Carlo inputs (``>= 2``).
    bound : float
        Largest relative Frobenius error accepted (ours; default 0.5, i.e. a
        crude estimate, which is all phase 1 of the learner needs).
    failure_probability : float
        Monte Carlo: the interval fails to cover with probability at most this
        (if the plug-in covariance trace were exact).
    control_variate : bool
        Monte Carlo: average ``Z − (1/k)(Xᵀ1)(Xᵀ1)ᵀW̄ + W̄`` instead of ``Z``
        (same mean since ``E[(Xᵀ1)(Xᵀ1)ᵀ] = k I``; smaller variance when the
        attention is spread out, zero when every ``Θ_i = 0``).
    batch : int, optional
        Inputs per block (bounds memory). Default: blocks of at most 32 MiB in
        exact mode, 8192 inputs in Monte Carlo.
    rng : None, int, SeedSequence or Generator
        Monte Carlo randomness (ignored by the exact method).

    Returns
    -------
    OneStepResult
        ``measured`` is the relative error; ``interval`` is exact or the
        Chebyshev interval; ``estimate``, ``target`` and ``M`` hold the
        matrices. ``details``: ``estimate`` and ``target`` (nested lists),
        ``head_distances`` ``‖M_i − I‖_F``, ``head_distances_op``
        ``‖M_i − I‖_op``, ``stable_ranks`` of the ``Θ_i``, ``identity_residual``
        ``‖E_1 − Σ M_i W_i‖_F`` and its relative version, ``target_norm``,
        ``n_inputs``; for Monte Carlo also ``trace_covariance``, ``radius``
        ``t``, ``relative_radius`` ``t/‖W̄‖_F`` and ``standard_error``
        ``sqrt(tr Cov/n)/‖W̄‖_F``.

    Raises
    ------
    TypeError
        If ``layer`` is not an :class:`~learner.AttentionLayer`, an integer
        parameter is not an integer, or ``failure_probability`` or ``bound``
        is not a real number.
    ValueError
        On ``k < 1``, an unknown ``method`` or ``distribution``,
        ``failure_probability`` outside (0, 1), ``bound`` negative or not
        finite, ``n_samples < 2``, ``k·d > 22`` for the exact method, Gaussian
        inputs with the exact method, or ``ΣW_i = 0`` (relative error undefined).

    See Also
    --------
    one_step_gradient_symbolic : The one-step formula ``W_1 = (1/k) XᵀJY`` the estimate rests on.
    stable_rank_sweep : The error against the stable rank of ``Θ``.
    theory.concentration.check_softmax_concentration : Why ``M_i`` stays near ``I`` (the talk's argument).
    theory.registry.run_case : Run the default case or the negative control.

    Notes
    -----
    *The paper's statement* (talk, slide "Estimating ΣW"): training one head
    ``softmax(XΘXᵀ)XW`` with ``Θ = 0`` by one gradient step from ``W = 0``
    gives a matrix ``1/poly(r)``-close in Frobenius norm to ``ΣW_i``, ``r``
    the stable rank of the ``Θ_i``; equivalently ``(1/k)E[XᵀJY] ≈ ΣW_i``. By
    linearity it suffices that every ``M_i ≈ I``; the check verifies that
    identity and records its residual (rounding only).

    *Ours*: the loss normalisation (``½‖·‖_F²`` per example, step size 1, see
    :func:`one_step_gradient_symbolic`), the relative Frobenius form and the
    default ``bound = 0.5``, and the Monte Carlo interval: with ``t`` the
    vector-Chebyshev radius of the mean of the per-input matrices ``Z``
    (plug-in covariance trace), ``‖Ê_1 − E_1‖_F <= t`` with probability
    ``>= 1 − failure_probability``, so by the triangle inequality the true
    error lies in ``[max(0, err − t/‖W̄‖_F), err + t/‖W̄‖_F]``. The verdict is
    conservative: it holds only if the whole interval is below ``bound``.

    Also ours, a first-order computation: for Boolean inputs
    ``M_i = I + ((k−1)/k) Θ_i − (2(k−1)/k²) diag(Θ_i) + O(‖Θ_i‖²)`` (no diagonal
    term for Gaussian inputs). So with ``‖Θ_i‖_F`` fixed the error is at most
    about ``‖Θ_i‖_op = ‖Θ_i‖_F/√r`` relative to ``‖W_i‖_F``, which is where a
    ``1/poly(r)`` rate can come from; for a ``W`` spread over all directions
    (e.g. ``W = I``) it is about ``‖Θ_i‖_F/√d`` whatever ``r`` is
    (:func:`stable_rank_sweep` measures both).

    References
    ----------
    S. Chen and Y. Li, "Provably learning a multi-head attention layer",
    arXiv:2402.04084.

    Examples
    --------
    >>> import numpy as np
    >>> from learner import AttentionLayer
    >>> layer = AttentionLayer(np.zeros((1, 3, 3)), np.eye(3)[None])  # Θ = 0: the estimate is exact
    >>> result = check_one_step(layer, 2)
    >>> result.measured, result.holds
    (0.0, True)
    """
    rng, entropy = seeded(rng)
    timer = Timer()
    _check_layer(layer)
    m, d = layer.m, layer.d
    exact = method == "exact"
    if exact:
        _check_exact_size(k, d)
        if distribution != "boolean":
            raise ValueError(
                f"method='exact' averages over the Boolean cube; distribution={distribution!r} "
                "needs method='monte_carlo'."
            )
    wbar = layer.ws.sum(axis=0)
    target_norm = float(np.linalg.norm(wbar))
    if target_norm == 0:
        raise ValueError("ΣW_i is the zero matrix, so the relative error is undefined; give a layer with ΣW_i ≠ 0.")

    if exact:
        estimate, M, info = _exact_moments(layer, k, batch)
    else:
        estimate, M, info = _mc_moments(
            layer, k, n_samples, distribution, bool(control_variate), batch, failure_probability, rng
        )

    error = float(np.linalg.norm(estimate - wbar)) / target_norm
    details = _one_step_details(layer, estimate, M, wbar, info)
    parameters = {"k": k, "d": d, "m": m, "method": method, "distribution": distribution, "batch": info["batch"]}
    if exact:
        interval, source, fp = None, _SOURCE_PAPER + _SOURCE_EXACT, None
    else:
        interval, source = _monte_carlo_interval(error, info, target_norm, n_samples, control_variate, details)
        fp = failure_probability
        parameters |= {
            "n_samples": n_samples,
            "failure_probability": failure_probability,
            "control_variate": bool(control_variate),
        }
    base = finish(
        name="one_step",
        claim=_CLAIM.format(b=bound),
        source=source,
        parameters=parameters,
        measured=error,
        bound=bound,
        relation="<=",
        interval=interval,
        failure_probability=fp,
        seed_entropy=None if exact else entropy,
        timer=timer,
        details=details,
    )
    for arr in (estimate, M):
        arr.setflags(write=False)
    target = wbar.copy()
    target.setflags(write=False)
    return OneStepResult(**{f: getattr(base, f) for f in CheckResult.__dataclass_fields__}, estimate=estimate,
                         target=target, M=M)


def _one_step_details(layer, estimate, M, wbar, info):
    """What the result reports besides the error: the estimate, each head's ``M_i − I``, the identity's residual."""
    eye = np.eye(layer.d)
    linear = np.einsum("icd,ide->ce", M, layer.ws)
    residual = float(np.linalg.norm(estimate - linear))
    est_norm = float(np.linalg.norm(estimate))
    return {
        "estimate": estimate.tolist(),
        "target": wbar.tolist(),
        "target_norm": float(np.linalg.norm(wbar)),
        "head_distances": [float(np.linalg.norm(Mi - eye)) for Mi in M],
        "head_distances_op": [float(np.linalg.norm(Mi - eye, 2)) for Mi in M],
        "stable_ranks": [_stable_rank(t) for t in layer.thetas],
        "identity_residual": residual,
        "identity_residual_relative": residual / est_norm if est_norm > 0 else residual,
        **info,
    }


def _monte_carlo_interval(error, info, target_norm, n_samples, control_variate, details):
    """The Monte Carlo error's interval and its source line; adds the relative radius and standard error."""
    rel = info["radius"] / target_norm
    details["relative_radius"] = rel
    details["standard_error"] = math.sqrt(info["trace_covariance"] / n_samples) / target_norm
    source = _SOURCE_PAPER + _SOURCE_MC
    if control_variate:
        source += " Control variate: Z − (1/k)(Xᵀ1)(Xᵀ1)ᵀΣW + ΣW (same mean, as E[(Xᵀ1)(Xᵀ1)ᵀ] = kI) replaces Z."
    return (max(0.0, error - rel), error + rel), source


def _stable_rank(theta):
    """``‖Θ‖_F² / ‖Θ‖_op²`` (``nan`` for ``Θ = 0``, where it is undefined)."""
    op = float(np.linalg.norm(theta, 2))
    return float(np.sum(theta**2)) / op**2 if op > 0 else float("nan")


# ----------------------------------------------------------------------------- registry cases

#: Positive case (ours): two planted heads with ‖Θ_i‖_F = 1, k = 3, d = 6 (2^18
#: inputs, exact). Measured error 0.17–0.30 over seeds 0–19; bound 0.5.
DEFAULT_CASE: dict[str, Any] = {"m": 2, "d": 6, "k": 3, "logit_scale": 1.0}


def default_one_step(*, rng: SeedLike = None) -> OneStepResult:
    """Positive case: a planted two-head layer, exact over the Boolean cube; the check holds.

    ``random_layer(2, 6, logit_scale=1.0)`` (Gaussian ``Θ_i``, ``W_i``; stable
    rank of ``Θ_i`` about 2) with ``k = 3`` tokens: ``2^18`` inputs, under a
    second. The attention is visibly non-uniform, yet the one-step estimate is
    within 17–30 % of ``ΣW_i`` over seeds 0–19 (bound 0.5, ours).

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        Seed of the planted layer.

    Returns
    -------
    OneStepResult
        The exact check (no sampling error), holding at the bound 0.5.

    Examples
    --------
    >>> result = default_one_step(rng=0)
    >>> result.holds, result.exact
    (True, True)
    """
    from learner import random_layer

    c = DEFAULT_CASE
    layer = random_layer(c["m"], c["d"], logit_scale=c["logit_scale"], rng=rng)
    return check_one_step(layer, c["k"], method="exact")


#: Negative control (ours): one head, Θ = −λ u uᵀ of rank one with λ = ‖Θ‖_F = 8,
#: u = (±1, …, ±1)/√d, W = √d u uᵀ, k = d = 4 (exact). Error 0.727 for every sign pattern.
CONTROL_CASE: dict[str, Any] = {"d": 4, "k": 4, "scale": 8.0}


def control_one_step(*, rng: SeedLike = None) -> OneStepResult:
    """Negative control: a rank-one, large-norm ``Θ`` with ``W`` in its range; the check must fail.

    One head with ``Θ = −λ u uᵀ``, ``λ = 8``, ``u = D 1/√d`` for a random sign
    matrix ``D``, and ``W = √d u uᵀ``; ``k = d = 4``, exact. Measured relative
    error 0.727 against the bound 0.5.

    Why it fails: the logits ``−λ (uᵀx_a)(uᵀx_b)`` send each token's
    attention to the token whose projection on ``u`` is most extreme with the
    *opposite* sign, so the weight a token receives is strongly correlated
    with ``X u``. Then ``M = (1/k)E[XᵀJ softmax(XΘXᵀ)X]`` is far from ``I`` in
    the direction ``u`` (``uᵀMu ≈ 0.27`` instead of 1), and ``W``, which lives
    on ``u``, sees all of that bias. The lemma's premises are violated on
    purpose: ``Θ`` has the smallest possible stable rank, 1, and a large
    operator norm ``λ`` (the first-order error is ``((k−1)/k)‖Θ‖_op``), and
    ``W`` has stable rank 1 and is aligned with ``Θ`` (the paper also asks
    for ``W_i`` of large stable rank, which would spread the bias over many
    directions). ``u`` is dense (all entries ``±1/√d``) because a ``u`` near
    a coordinate axis makes the Boolean logits nearly two-valued and the bias
    much smaller.

    The result is the same for every seed: flipping the signs of coordinates
    (``X → XD``) preserves the Boolean cube and maps ``(Θ, W)`` to
    ``(DΘD, DWD)``, so ``rng`` only picks one of ``2^d`` equivalent layers.

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        Seed of the sign matrix ``D``.

    Returns
    -------
    OneStepResult
        The exact check, failing (relative error 0.727 against the bound 0.5).

    Examples
    --------
    >>> round(control_one_step(rng=0).measured, 3)
    0.727
    """
    rng = check_rng(rng)
    c = CONTROL_CASE
    d = c["d"]
    u = rng.choice([-1.0, 1.0], size=d) / math.sqrt(d)
    theta = -c["scale"] * np.outer(u, u)
    w = math.sqrt(d) * np.outer(u, u)
    return check_one_step(AttentionLayer(theta[None], w[None]), c["k"], method="exact")


# ----------------------------------------------------------------------------- symbolic


def _as_rational(name, value):
    import sympy

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, sympy.Basic)):
        raise TypeError(f"`{name}` must be a real number; got {name}={value!r}.")
    r = sympy.sympify(value) if isinstance(value, sympy.Basic) else sympy.Rational(value)  # floats: exact binary value
    if not r.is_Rational:
        raise ValueError(f"`{name}` must be rational; got {name}={value!r}.")
    return r


@declare(k=Integer(), d=Integer())
def one_step_gradient_symbolic(k: int, d: int, *, step_size: float | Fraction | sympy.Basic = 1,
                               loss_factor: float | Fraction | sympy.Basic = 0.5) -> SymbolicOneStep:
    """Verify the one-step formula ``W_1 = (1/k) Xᵀ J Y`` exactly with sympy.

    Model: a single head with ``Θ = 0``, ``f_W(X) = softmax(0) X W = (1/k) J X W``.
    Loss (per example): ``L(W) = c ‖Y − f_W(X)‖_F²`` with ``c = loss_factor``.
    One gradient step of size ``η = step_size`` from ``W = 0``:

    .. math::

        W_1 = -\\eta \\nabla L(0) = 2 c \\eta \\frac1k X^\\top J Y
            \\overset{c = 1/2,\\ \\eta = 1}{=} \\frac1k X^\\top J Y,

    and for noiseless labels ``Y = F^*(X) = (1/k) J X W^*`` (one ``Θ = 0`` head)
    the cube average is ``E[W_1] = (1/k²) E[XᵀJ²X] W* = W*``, since ``J² = kJ``
    and ``E[XᵀJX] = kI``.

    Parameters
    ----------
    k, d : int
        Tokens and dimension, ``k·d <= 9`` (the population part enumerates
        ``2^{kd}`` inputs in exact arithmetic).
    step_size : rational number
        ``η``; the paper's normalisation is ours to choose, and 1 with
        ``loss_factor = 1/2`` makes ``W_1`` exactly ``(1/k) XᵀJY``.
    loss_factor : rational number
        ``c`` in ``c‖Y − f_W(X)‖_F²``. Floats are read as the exact binary
        rational they hold (0.5 is exactly 1/2).

    Returns
    -------
    SymbolicOneStep
        ``gradient_holds``: ``W_1 − (1/k)XᵀJY`` expands to the zero matrix for
        symbolic ``X``, ``Y`` (``k×d``) and ``W`` (``d×d``).
        ``population_holds``: averaging ``W_1`` over all ``2^{kd}`` Boolean
        ``X`` with ``Y = F*(X)`` gives back ``W*`` exactly, for a ``W*`` of
        free symbols (so for every rational ``W*`` at once).

    Raises
    ------
    TypeError, ValueError
        On non-integer or non-positive ``k``, ``d``; ``k·d > 9``; a
        non-rational or non-positive ``step_size`` or ``loss_factor``.

    See Also
    --------
    check_one_step : The expected one-step estimate against ``ΣW_i`` for a real layer.

    Notes
    -----
    The statement that one step from ``W = 0`` yields ``(1/k)E[XᵀJY]`` is the
    talk's ("Estimating ΣW": "more succinctly"); the loss normalisation
    ``½‖·‖_F²`` and step size 1 that make it exact are ours. Any other
    product ``2cη ≠ 1`` scales ``W_1`` and both identities fail (the
    negative control, e.g. ``step_size=1/2``).

    Examples
    --------
    >>> one_step_gradient_symbolic(2, 2).holds
    True
    >>> one_step_gradient_symbolic(2, 2, step_size=0.5).holds
    False
    """
    import sympy

    timer = Timer()
    if k * d > MAX_SYMBOLIC_BITS:
        raise ValueError(
            f"the symbolic check enumerates 2^(k*d) inputs and needs k*d <= {MAX_SYMBOLIC_BITS}; "
            f"got k={k}, d={d} (k*d={k * d})."
        )
    eta = _as_rational("step_size", step_size)
    c = _as_rational("loss_factor", loss_factor)
    for name, r in (("step_size", eta), ("loss_factor", c)):
        if r <= 0:
            raise ValueError(f"`{name}` must be positive; got {name}={r}.")

    X = sympy.Matrix(k, d, lambda a, j: sympy.Symbol(f"x_{a}_{j}"))
    Y = sympy.Matrix(k, d, lambda a, j: sympy.Symbol(f"y_{a}_{j}"))
    W = sympy.Matrix(d, d, lambda a, j: sympy.Symbol(f"w_{a}_{j}"))
    J = sympy.ones(k, k)

    def head_at(x, w):
        # softmax(x Θ xᵀ) x W with Θ = 0, from the definition (the softmax is J/k exactly).
        expo = (x * sympy.zeros(d, d) * x.T).applyfunc(sympy.exp)
        att = sympy.Matrix(k, k, lambda a, b: expo[a, b] / sum(expo[a, j] for j in range(k)))
        return att * x * w

    resid = Y - head_at(X, W)
    loss = c * sum(v**2 for v in resid)
    at_zero = {w: 0 for w in W}
    grad = sympy.Matrix(d, d, lambda a, j: sympy.diff(loss, W[a, j]).subs(at_zero))
    W1 = (-eta * grad).applyfunc(sympy.expand)
    gradient_residual = (W1 - X.T * J * Y / k).applyfunc(sympy.expand)

    # Population: Y = F*(X) from one Θ = 0 head with symbolic W*; average over the cube.
    Wstar = sympy.Matrix(d, d, lambda a, j: sympy.Symbol(f"v_{a}_{j}"))
    # The formula W_1(X, Y) from above, evaluated exactly at each of the 2^{kd} inputs.
    avg = sympy.zeros(d, d)
    for signs in itertools.product((sympy.Integer(1), sympy.Integer(-1)), repeat=k * d):
        x = sympy.Matrix(k, d, signs)
        values = dict(zip(X, x, strict=True)) | dict(zip(Y, head_at(x, Wstar), strict=True))
        avg += W1.xreplace(values)
    population_residual = (avg / 2 ** (k * d) - Wstar).applyfunc(sympy.expand)

    g_ok = bool(gradient_residual.is_zero_matrix)
    p_ok = bool(population_residual.is_zero_matrix)
    return SymbolicOneStep(
        k=k,
        d=d,
        step_size=eta,
        loss_factor=c,
        gradient_residual=sympy.ImmutableMatrix(gradient_residual),
        population_residual=sympy.ImmutableMatrix(population_residual),
        gradient_holds=g_ok,
        population_holds=p_ok,
        holds=g_ok and p_ok,
        seconds=timer.elapsed(),
    )


# ----------------------------------------------------------------------------- stable-rank sweep


def _haar_orthogonal(d, rng):
    """A Haar-random orthogonal matrix (QR of a Gaussian with the signs of R's diagonal fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


@declare(d=Integer(), r=Integer(), frobenius=Real())
def theta_of_stable_rank(d: int, r: int, frobenius: float, *, rng: SeedLike = None) -> np.ndarray:
    """``Θ = (frobenius/√r) Σ_{j<r} u_j v_jᵀ`` with Haar-random orthonormal ``u``, ``v``.

    All ``r`` nonzero singular values equal ``frobenius/√r``, so the stable
    rank ``‖Θ‖_F²/‖Θ‖_op²`` is exactly ``r`` and ``‖Θ‖_F = frobenius``
    (the construction is ours).

    Parameters
    ----------
    d : int
        Dimension, ``>= 1``.
    r : int
        Stable rank, ``1 <= r <= d``.
    frobenius : float
        ``‖Θ‖_F``, positive.
    rng : None, int, SeedSequence or Generator
        Seed of the two Haar-random orthogonal matrices.

    Returns
    -------
    ndarray, shape (d, d)
        ``Θ``.

    Raises
    ------
    ValueError
        If ``r > d`` or a size is not positive.

    Examples
    --------
    >>> theta = theta_of_stable_rank(5, 2, 3.0, rng=0)
    >>> round(float(np.linalg.norm(theta)), 12), round(float(np.linalg.norm(theta, 2) ** 2), 12)
    (3.0, 4.5)
    """
    rng = check_rng(rng)
    if r > d:
        raise ValueError(f"the stable rank `r` must be at most d={d}; got r={r}.")
    U = _haar_orthogonal(d, rng)[:, :r]
    V = _haar_orthogonal(d, rng)[:, :r]
    return (frobenius / math.sqrt(r)) * (U @ V.T)


def _loglog_fit(ranks, values):
    x = np.log(np.asarray(ranks, dtype=float))
    y = np.log(np.asarray(values, dtype=float))
    n = len(x)
    A = np.stack([x, np.ones(n)], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    slope, intercept = float(coef[0]), float(coef[1])
    if n <= 2:
        return slope, float("nan"), intercept
    resid = y - A @ coef
    sxx = float(np.sum((x - x.mean()) ** 2))
    se = math.sqrt(float(resid @ resid) / (n - 2) / sxx)
    return slope, se, intercept


@declare(d=Integer(), k=Integer(), ranks=Each(Integer(), distinct=False), frobenius=Real(), n_layers=Integer(),
         method=Choice(METHODS))
def stable_rank_sweep(
    *,
    d: int = 16,
    k: int = 4,
    ranks: Iterable[int] = (1, 2, 4, 8, 16),
    frobenius: float = 3.0,
    n_layers: int = 2,
    method: str = "monte_carlo",
    n_samples: int = 1_000_000,
    failure_probability: float = 0.05,
    batch: int | None = None,
    rng: SeedOrGenerator = None,
) -> StableRankSweep:
    """One-step error against the stable rank ``r`` of ``Θ``, at fixed ``‖Θ‖_F``.

    For each ``r`` in ``ranks`` and each of ``n_layers`` random draws, one
    head with ``Θ = (frobenius/√r) Σ_{j<r} u_j v_jᵀ`` (stable rank exactly
    ``r``, Haar-random orthonormal ``u``, ``v``; see
    :func:`theta_of_stable_rank`) and ``W = I``, so that ``E_1 = M`` and
    ``ΣW = I``. Two errors per layer:

    .. math::

        e_F = \\frac{\\|M - I\\|_F}{\\sqrt d}, \\qquad
        e_{op} = \\|M - I\\|_{op} = \\max_{W \\ne 0} \\frac{\\|(M - I) W\\|_F}{\\|W\\|_F},

    the relative error at ``W = I`` and the worst case over all ``W``. Each
    mean over layers is fitted by ``log e = a + b log r`` (least squares);
    ``b`` is the decay exponent (the lemma predicts ``b < 0``).

    Parameters
    ----------
    d, k : int
        Dimension and tokens (``1 <= r <= d`` for every ``r``).
    ranks : sequence of int
        At least two distinct stable ranks.
    frobenius : float
        ``‖Θ‖_F`` (= standard deviation of an off-diagonal logit).
    n_layers : int
        Random ``Θ`` per rank.
    method : {"exact", "monte_carlo"}
        Passed to :func:`check_one_step`; Monte Carlo uses the control variate.
    n_samples, failure_probability, batch : int, float, int or None
        Passed to :func:`check_one_step` (Monte Carlo inputs per run, the intervals' failure probability, inputs
        per block).
    rng : None, int, SeedSequence or Generator
        Seed of the sweep: one child draws every ``Θ``, one more per run draws its inputs.

    Returns
    -------
    StableRankSweep
        The errors per rank and per layer, the fitted exponents and the noise floors.

    See Also
    --------
    check_one_step : The check run for every layer.
    theta_of_stable_rank : The ``Θ`` of each rank.
    plot_stable_rank_sweep : The sweep, plotted.

    Notes
    -----
    The lemma's ``1/poly(r)`` is the paper's; the family of ``Θ``, the choice
    ``W = I``, the two error measures and the fit are ours. To first order in
    ``Θ`` (our computation, see :func:`check_one_step`),
    ``M − I ≈ ((k−1)/k) Θ``: ``e_F ≈ ((k−1)/k) ‖Θ‖_F/√d`` does not depend on
    ``r`` while ``e_op ≈ ((k−1)/k) ‖Θ‖_F/√r`` decays like ``r^{-1/2}``. The
    sweep measures how far the nonlinear regime departs from that. Compare
    the errors with ``noise_floor`` / ``worst_case_noise_floor`` before
    reading the exponents.

    Defaults (ours): ``d = 16``, ``k = 4``, ``r ∈ {1, 2, 4, 8, 16}``, two
    layers per rank, 10^6 inputs per run with the control variate; about 25 s
    on two idle cores. ``d = 16`` rather than 32 because the Chebyshev radius
    of ``‖M − I‖_op`` grows like ``d/√n`` while that error does not depend on
    ``d``: at ``d = 32`` the same time budget leaves the radius (0.13) close to
    the smallest worst-case error (0.19). Measured with ``rng=0``: exponent
    ``+0.08 ± 0.01`` at ``W = I`` (the error grows slightly with ``r``) and
    ``−0.36 ± 0.01`` for the worst case (shallower than the first-order
    ``−1/2`` because the small-``r`` errors saturate); noise floors 0.013 and
    0.051 against errors 0.19–0.24 and 0.28–0.74.

    Examples
    --------
    >>> res = stable_rank_sweep(d=4, k=2, ranks=(1, 2, 4), n_layers=1, method="exact", rng=0)
    >>> res.errors.shape, bool(np.isfinite(res.exponent))
    ((3,), True)
    """
    rng, entropy = seeded(rng)
    timer = Timer()
    ranks = tuple(ranks)
    if len(set(ranks)) < 2:
        raise ValueError(f"`ranks` must hold at least two distinct stable ranks; got ranks={ranks}.")
    if max(ranks) > d:
        raise ValueError(f"every stable rank must be at most d={d}; got ranks={ranks}.")
    if method == "exact":
        _check_exact_size(k, d)

    theta_rng, *run_rngs = rng.spawn(1 + len(ranks) * n_layers)
    errors = np.empty((len(ranks), n_layers))
    worst = np.empty_like(errors)
    floors, op_floors, ses = [0.0], [0.0], [0.0]
    w = np.eye(d)[None]
    for (i, r), j in itertools.product(enumerate(ranks), range(n_layers)):
        theta = theta_of_stable_rank(d, r, frobenius, rng=theta_rng)
        res = check_one_step(
            AttentionLayer(theta[None], w),
            k,
            method=method,
            n_samples=n_samples,
            failure_probability=failure_probability,
            control_variate=True,
            batch=batch,
            rng=run_rngs[i * n_layers + j],
        )
        errors[i, j] = res.measured
        worst[i, j] = res.details["head_distances_op"][0]
        log.info("stable-rank sweep: r=%d, layer %d/%d: error %.3g (%.1f s)", r, j + 1, n_layers, res.measured,
                 res.seconds)
        if method == "monte_carlo":
            floors.append(res.details["relative_radius"])
            op_floors.append(res.details["radius"])
            ses.append(res.details["standard_error"])
    mean_err, mean_worst = errors.mean(axis=1), worst.mean(axis=1)
    slope, se, icpt = _loglog_fit(ranks, mean_err)
    wslope, wse, wicpt = _loglog_fit(ranks, mean_worst)
    parameters = {
        "d": d, "k": k, "ranks": list(ranks), "frobenius": frobenius, "n_layers": n_layers, "method": method,
        "w": "identity",
    }
    if method == "monte_carlo":
        parameters |= {"n_samples": n_samples, "failure_probability": failure_probability, "control_variate": True}
    return StableRankSweep(
        ranks=ranks,
        errors=mean_err,
        errors_all=errors,
        worst_case=mean_worst,
        worst_case_all=worst,
        exponent=slope,
        exponent_se=se,
        worst_case_exponent=wslope,
        worst_case_exponent_se=wse,
        intercept=icpt,
        worst_case_intercept=wicpt,
        noise_floor=max(floors),
        worst_case_noise_floor=max(op_floors),
        standard_error=max(ses),
        parameters=parameters,
        seed_entropy=entropy,
        seconds=timer.elapsed(),
    )


def plot_stable_rank_sweep(result: StableRankSweep, path: PathLike) -> Path:
    """Write a log-log plot of the sweep's errors against ``r``, with the fitted lines, to ``path`` (PNG).

    Needs matplotlib (the ``plot`` extra).

    Parameters
    ----------
    result : StableRankSweep
        The sweep to draw (from :func:`stable_rank_sweep`).
    path : str or PathLike
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    TypeError
        If ``result`` is not a :class:`StableRankSweep`.
    ValueError
        If matplotlib is missing.
    """
    if not isinstance(result, StableRankSweep):
        raise TypeError(f"`result` must be a StableRankSweep; got {type(result).__name__}.")
    matplotlib = require_matplotlib("plot_stable_rank_sweep")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = np.asarray(result.ranks, dtype=float)
    grid = np.geomspace(r.min(), r.max(), 50)
    fig, ax = plt.subplots(figsize=(6.5, 5.4), layout="constrained")
    try:
        series = [
            (result.errors_all, result.exponent, result.exponent_se, result.intercept,
             "relative Frobenius error, W = I", "C0", "o"),
            (result.worst_case_all, result.worst_case_exponent, result.worst_case_exponent_se,
             result.worst_case_intercept, "worst case over W: ‖M − I‖_op", "C1", "s"),
        ]
        for values, b, se, a, label, color, marker in series:
            for j in range(values.shape[1]):
                ax.scatter(r, values[:, j], color=color, marker=marker, alpha=0.35, s=18)
            ax.plot(grid, np.exp(a) * grid**b, color=color, label=f"{label}: slope {b:.2f} ± {se:.2f}")
        if result.noise_floor > 0:
            ax.axhline(result.noise_floor, color="C0", ls=":", lw=1, label="Chebyshev radius (W = I)")
            ax.axhline(result.worst_case_noise_floor, color="C1", ls=":", lw=1, label="Chebyshev radius (op)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("stable rank r of Θ")
        ax.set_ylabel("one-step error")
        p = result.parameters
        ax.set_title(f"one-step estimate of ΣW: d={p['d']}, k={p['k']}, ‖Θ‖_F={p['frobenius']:g}", fontsize=10)
        fig.legend(loc="outside lower center", ncol=1, fontsize=9, frameon=False)  # below the axes, off the data
        save_figure(fig, path, dpi=120)
    finally:
        plt.close(fig)
    return Path(path)


def plot_one_step(path: PathLike, *, rng: SeedOrGenerator = None) -> Path:
    """The registry's figure: :func:`stable_rank_sweep` at default sizes, plotted to ``path``.

    Needs matplotlib (the ``plot`` extra); without it, a ValueError saying so before the sweep runs.

    Parameters
    ----------
    path : str or PathLike
        Where to write the PNG.
    rng : None, int, SeedSequence or Generator
        Seed of the sweep.

    Returns
    -------
    Path
        ``path``.
    """
    require_matplotlib("plot_one_step")
    return plot_stable_rank_sweep(stable_rank_sweep(rng=rng), path)
