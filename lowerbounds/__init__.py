"""Hard instances behind the lower bounds of Chen & Li (arXiv 2402.04084).

The paper's statements: any SQ algorithm needs ``d^Ω(m)`` queries or inverse
tolerance, and under an LWE variant no polynomial-time algorithm exists. The
constructions here are ours (derived for this toolkit), built on the
two-token diagonal gadget (:mod:`lowerbounds.gadget`):

* :class:`HardInstance` — the common type: a two-token gadget layer whose
  output carries a target function of a hidden integer sum;
* :func:`sq_hard_instance`, :class:`ParityInstance`, :class:`HardFamily` — the SQ
  family (parities of a hidden subset carried by ``m`` heads), exact
  correlations, statistical dimension and query lower bounds;
* :class:`SQOracle`, :func:`correlational_search`, :func:`simulate_queries` —
  an SQ oracle with an adversary and a learner run against it;
* :func:`lwr_hard_instance`, :class:`LWRParams`, :func:`sample_lwr`,
  :func:`attention_samples`, :func:`lwr_predictor` — the LWE-style family
  (1-bit learning with rounding on two tokens; hardness assumed) and the
  reduction both ways; attacks in :mod:`lowerbounds.attacks` and
  :mod:`lowerbounds.lattice`;
* :func:`sparse_linear_instance` — the control beside the SQ family (same heads,
  sparse-linear signal);
* :func:`parity_heads_check`, :class:`ParityHeadsCheck` — the SQ family's layer
  sign-represents the parity of ``m − 1`` bits with ``m`` heads, checked on every
  bit pattern, with negative controls;
* :func:`learn_hard_study` (:mod:`lowerbounds.learnhard`) — Adam, the learner and
  exhaustive search on the families: examples and time against d, m and n;
* :mod:`lowerbounds.registry` — the families the study and the command line know: a
  new family is one :class:`~lowerbounds.registry.HardFamilyEntry`.

Imports from :mod:`learner`, never the reverse. CLI: ``python -m lowerbounds``.
"""

from .attacks import (
    AttackOutcome,
    attention_attack,
    equivalent_secrets,
    exhaustive_search,
    fit_growth,
    linear_algebra_attack,
    time_attacks,
)
from .family import HardFamily
from .gadget import gadget_layer, gadget_weight, head_weights
from .instance import HardInstance
from .lattice import REFERENCE_ESTIMATES, cost_table, fpylll_available, lattice_attack, lwr_cost, primal_usvp_cost
from .learnhard import learn_hard_study
from .lwr import (
    NAMED_LWR,
    LWRInstance,
    LWRLayout,
    LWRParams,
    LWRSamples,
    PublicSamples,
    attention_samples,
    lwr_hard_instance,
    lwr_predictor,
    named_lwr_instance,
    predictor_accuracy,
    sample_lwr,
    switch_count,
    switch_points,
)
from .oracle import CharacterQuery, SparseLinearTarget, SQOracle
from .parity import ParityHeadsCheck, parity_heads_check
from .simulate import SearchOutcome, correlational_search, fit_slope, simulate_queries
from .sq import (
    ParityInstance,
    SparseLinearInstance,
    interpolation_coefficients,
    sparse_linear_instance,
    sq_hard_instance,
    symmetric_fourier,
)

__all__ = [
    "NAMED_LWR",
    "REFERENCE_ESTIMATES",
    "AttackOutcome",
    "CharacterQuery",
    "HardFamily",
    "HardInstance",
    "LWRInstance",
    "LWRLayout",
    "LWRParams",
    "LWRSamples",
    "ParityHeadsCheck",
    "ParityInstance",
    "PublicSamples",
    "SQOracle",
    "SearchOutcome",
    "SparseLinearInstance",
    "SparseLinearTarget",
    "attention_attack",
    "attention_samples",
    "correlational_search",
    "cost_table",
    "equivalent_secrets",
    "exhaustive_search",
    "fit_growth",
    "fit_slope",
    "fpylll_available",
    "gadget_layer",
    "gadget_weight",
    "head_weights",
    "interpolation_coefficients",
    "lattice_attack",
    "learn_hard_study",
    "linear_algebra_attack",
    "lwr_cost",
    "lwr_hard_instance",
    "lwr_predictor",
    "named_lwr_instance",
    "parity_heads_check",
    "predictor_accuracy",
    "primal_usvp_cost",
    "sample_lwr",
    "simulate_queries",
    "sparse_linear_instance",
    "sq_hard_instance",
    "switch_count",
    "switch_points",
    "symmetric_fourier",
    "time_attacks",
]
