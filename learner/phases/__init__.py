"""The six phases of the learner of Chen & Li (arXiv 2402.04084), one module each.

Every phase is a public function returning a frozen result with diagnostics,
testable on its own by feeding it the true values of the phases before it
("oracle mode"):

1. :func:`crude_sum_w` — one-step estimate of ``ΣW_i``;
2. :func:`crude_sculpt` — certified rows give affine constraints on the ``Θ_i``;
3. :func:`refine_sum_w` — rows that one token dominates give ``ΣW_i`` accurately;
4. :func:`refined_sculpt` — sculpting again with the refined ``ΣW_i``;
5. :func:`estimate_span` — the flat directions of the constraints span the hull;
6. :func:`search_heads` — ε-net over the hull, least squares for the ``W_i``,
   then joint refinement; on noisy labels, :func:`noise_floor` tests whether the
   residual is label noise alone (ours).

After phase 6, :mod:`learner.phases.select` decides how many heads the layer has when m is unknown or given
too large (ours: the paper is given m).
"""

from ._config import CONFIG_RULES, FIXED_BUDGETS, LearnConfig, as_config, resolve_config
from .crude_sum import SumEstimate, crude_sum_w
from .noise import NOISE_MIN, NOISE_Z, STRUCTURE_ALPHA, NoiseFloor, candidate_thetas, noise_floor
from .refine_sum import refine_sum_w
from .sculpt import Constraints, crude_sculpt, refined_sculpt
from .search import SearchResult, search_heads
from .span import HullUndetermined, SpanEstimate, estimate_span

__all__ = [
    "Constraints",
    "HullUndetermined",
    "CONFIG_RULES",
    "FIXED_BUDGETS",
    "LearnConfig",
    "NOISE_MIN",
    "NOISE_Z",
    "NoiseFloor",
    "PHASES",
    "STRUCTURE_ALPHA",
    "SearchResult",
    "SpanEstimate",
    "SumEstimate",
    "as_config",
    "crude_sculpt",
    "crude_sum_w",
    "candidate_thetas",
    "estimate_span",
    "noise_floor",
    "refine_sum_w",
    "refined_sculpt",
    "resolve_config",
    "search_heads",
]

#: The phases, in the order they run (with the noise-floor test of phase 6): each takes its settings from one
#: ``config`` (:class:`LearnConfig`) and declares no default of its own (tests/learner/phases/test_config_home.py
#: holds every entry to that). A new phase is one entry here.
PHASES = (crude_sum_w, crude_sculpt, refine_sum_w, refined_sculpt, estimate_span, search_heads, noise_floor)
