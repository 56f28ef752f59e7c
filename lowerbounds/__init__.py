"""Hard instances behind the lower bounds of Chen & Li (arXiv 2402.04084).

The paper's statements: any SQ algorithm needs ``d^Ω(m)`` queries or inverse
tolerance, and under an LWE variant no polynomial-time algorithm exists. The
constructions here are ours (derived for this toolkit, DESIGN §5), built on the
two-token diagonal gadget (:mod:`lowerbounds.gadget`):

* :func:`sq_hard_instance`, :class:`HardInstance`, :class:`HardFamily` — the SQ
  family (parities of a hidden subset carried by ``m`` heads), exact
  correlations, statistical dimension and query lower bounds;
* :class:`SQOracle`, :func:`correlational_search`, :func:`simulate_queries` —
  an SQ oracle with an adversary and a learner run against it.

Imports from :mod:`learner`, never the reverse. CLI: ``python -m lowerbounds``.
"""

from .family import HardFamily
from .gadget import gadget_layer, gadget_weight, head_weights
from .oracle import CharacterQuery, SparseLinearTarget, SQOracle
from .simulate import SearchOutcome, correlational_search, fit_slope, simulate_queries
from .sq import HardInstance, interpolation_coefficients, sq_hard_instance, symmetric_fourier

__all__ = [
    "CharacterQuery",
    "HardFamily",
    "HardInstance",
    "SQOracle",
    "SearchOutcome",
    "SparseLinearTarget",
    "correlational_search",
    "fit_slope",
    "gadget_layer",
    "gadget_weight",
    "head_weights",
    "interpolation_coefficients",
    "simulate_queries",
    "sq_hard_instance",
    "symmetric_fourier",
]
