"""Numerical checks of the lemmas behind the learner of Chen & Li (arXiv 2402.04084).

Each check returns a frozen :class:`CheckResult`: the claim in words, which
part is the paper's (as far as the talk and abstract state it) and which is our
reading, the parameters, the measured quantity with its uncertainty, the bound
it is held against, the verdict, the seed entropy and the time taken. Every
check has a negative control, an input where the statement fails, and the
tests require it to fail.

* :func:`check_one_step` — one gradient step from ``W = 0`` estimates ``ΣW_i``
  (talk, "Estimating ΣW");
* :func:`check_softmax_concentration` — the pattern does not concentrate, but
  its conditional expectation given substring Hamming weights does (talk);
* :func:`check_local_clt` — local CLT on Boolean slices for non-arithmetic
  coefficients (talk, its slide on approximation errors);
* :func:`check_min_norm_orthogonality` — the min-norm point of the heads'
  affine hull is orthogonal to it (used by the learner's phase 3).
* :func:`check_yield_prediction` — the sculpting phases' certification
  yield matches the Gaussian density of the logit disagreements at 0 times
  the residual test's window (talk, "Sculpting the affine hull"; model ours).

Run them all with ``python -m theory all``, as tests with
``pytest --pyargs theory``, or inside your own tests with :mod:`theory.testing`.
Imports from :mod:`learner`, never the reverse.
"""

from ._core import CheckResult
from .concentration import check_softmax_concentration, expectation_vs_sample
from .local_clt import brute_force_distribution, check_local_clt, local_clt_sweep, slice_distribution, slice_moments
from .minnorm import check_min_norm_orthogonality
from .one_step import check_one_step, one_step_gradient_symbolic, stable_rank_sweep
from .registry import CHECKS, run_case
from .yield_model import (
    check_yield_prediction,
    conditional_disagreement_moments,
    disagreement_moments,
    measured_yield,
    predicted_yield,
)

__all__ = [
    "CHECKS",
    "CheckResult",
    "brute_force_distribution",
    "check_local_clt",
    "check_min_norm_orthogonality",
    "check_one_step",
    "check_softmax_concentration",
    "check_yield_prediction",
    "conditional_disagreement_moments",
    "disagreement_moments",
    "expectation_vs_sample",
    "local_clt_sweep",
    "measured_yield",
    "one_step_gradient_symbolic",
    "predicted_yield",
    "run_case",
    "slice_distribution",
    "slice_moments",
    "stable_rank_sweep",
]
