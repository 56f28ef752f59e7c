"""Tuning knobs of the learner, with the reason for each default (all ours).

Fields left at ``None`` are chosen by :func:`resolve_config` from ``(m, d, k)``
when :func:`learner.learn` starts, except phase 4's tolerance, which phase 4's
pilot forecast chooses (:mod:`learner.phases.forecast`); the run's diagnostics record
every value used and which ones were chosen so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..validation import Boolean, Choice, Integer, Real

__all__ = ["CONFIG_RULES", "FIXED_BUDGETS", "LearnConfig", "resolve_config"]

_CHOICES = {"hull_weighting": ("precision", "irls", "none"), "search": ("auto", "exhaustive", "swap", "vp"),
            "refine": ("vp", "trf")}
#: Fields that may be None (chosen from (m, d, k) by resolve_config).
_AUTO = ("refined_tol", "refined_constraints", "max_examples", "net_points_3d", "gap_min")
#: Fields that may be 0 (everything else numeric must be positive).
_ZERO_OK = ("swap_starts", "search_seed")  # outer_rounds >= 1: phase 5 runs inside the rounds


@dataclass(frozen=True)
class LearnConfig:
    """Thresholds, budgets and batch sizes of the six phases.

    The paper fixes these only up to ``poly(d, k, 1/ε)`` factors; every
    default here is ours, chosen from measurements on planted layers
    (``random_layer``; logit scale 3 at d = 8 and logit scale 1 at k = 2,
    d = 12–16) and documented beside it. Every field is validated on
    construction.
    """

    #: Budgets set by the data (ours, issue 38): phase 1 stops when its estimate's relative standard error
    #: is at most ``crude_se``, phase 3 when its regression's is at most ``refine_se``, phase 4 when the hull
    #: of its constraints moves at most ``hull_stability`` between checkpoints, and the rounds of phases
    #: 3 → 5 end once phase 3 met its target; the counts below (``n_crude``, ``n_refine``,
    #: ``refined_constraints``, ``outer_rounds``) are then caps. False gives the fixed budgets of the
    #: earlier learner (every count drawn in full, fixed batches) for comparison.
    adaptive: bool = True
    #: Examples streamed per batch (ours, not tuned: large vectorised batches, as the design's prototype advised;
    #: memory: a few times batch·k·d floats).
    batch: int = 100_000
    #: With ``adaptive`` (ours): the first batch of every example stream; the next double up to ``batch``, so a phase
    #: that stops early draws at most about twice what it needed (learner.oracle.growing_sizes).
    first_batch: int = 5_000
    #: Phase 1: examples for the one-step estimate (a cap with ``adaptive``; ours: the first learner's fixed
    #: budget, not tuned since).
    n_crude: int = 400_000
    #: Phase 1's target relative standard error (ours). The one-step estimate is biased by the Θ's (its error is
    #: ~0.1 at logit scale 1 however many examples), and phase 2 certifies at ``crude_tol`` = 0.05, so the
    #: sampling error only has to stay below half the tolerance; measured at (2, 12, 2): 10,000–400,000
    #: examples (standard error 0.04–0.006) gave the same phases 2–6. The relative standard deviation of
    #: one example is 3.6–4.3 at d = 12–16, so this needs ~25,000 examples: the stream stops after its
    #: batches of 5,000, 10,000 and 20,000 (35,000; 15,000 at d = 8, k = 2).
    crude_se: float = 0.025
    #: Phases 2/4: relative residual below which a row's fit certifies agreement.
    #: Phase 2 works with a crude ΣW, so it must be loose; phase 4 is tighter. Phase 4's is
    #: chosen when None, in every round, by its pilot (learner.phases.forecast, ours): the first
    #: batches are certified at 0.03 and forecast the examples the target needs at 0.015,
    #: 0.02 and 0.03; the smallest whose forecast is at most 2·10^7 examples is used, else
    #: 0.03 — the yield grows like tol^((m−1)(k−1)), and the precision weighting of phase 5
    #: discounts the looser rows. A value given is used as is (the pilot only forecasts).
    crude_tol: float = 0.1
    refined_tol: float | None = None
    #: Tokens whose fitted weight is at least this give constraints. Low weights give
    #: imprecise log-ratios, which the precision weighting of phase 5 discounts, so the
    #: threshold can be low (ours, measured at (3, 12, 2): 0.02 with precision weights beat 0.1).
    min_weight: float = 0.02
    #: Constraints to collect, as a multiple of d² (the unknowns). Phase 2's (1.5) and its tolerance (0.1) only
    #: seed phase 3's choice of dominant tokens (Θ*'s heaviest token): measured on the frontier's layers at
    #: (3, 12, 2), (2, 12, 3), (4, 12, 2), they took phase 2 from 255,000–1,055,000 examples (3·d² at 0.05)
    #: to 5,000–15,000 with the same phases 3–6 (ours, measured). Phase 4's is chosen
    #: from m when None: 6 for m <= 3, 12 for m >= 4 (the hull of more heads is noisier;
    #: examples are cheap at k = 2).
    crude_constraints: float = 1.5
    refined_constraints: float | None = None
    #: Example budget of each refined sculpting round (phase 4). When None: 10^9
    #: (learner.phases.forecast.DEFAULT_MAX_EXAMPLES; 15–45 min on two cores at the measured rates).
    #: When phase 4's pilot forecasts more than the budget, the run stops after the pilot
    #: with status "budget" and a message saying what would make it fit.
    max_examples: int | None = None
    #: Phase 2's budget: with the crude ΣW its constraints are rough, so they only seed phase 3's Θ*. Ours, not
    #: tuned: a cap (the measured runs above stopped after 5,000–15,000 examples).
    crude_max_examples: int = 2_000_000
    #: Phase 3: examples (a cap with ``adaptive``; ours: the first learner's fixed budget, not tuned since).
    n_refine: int = 400_000
    #: With ``adaptive`` (ours): phase 3 draws ``refine_first`` examples, then doubles its sample until the certified
    #: regression's relative standard error is at most ``refine_se`` (or ``n_refine``). Phase 4 certifies at
    #: 0.015–0.08 (its pilot chooses after phase 3, from its own yields), and phase 6's refinement recovers the
    #: layer from a rough hull. Measured on the first two frontier layers of (3, 12, 4), (2, 12, 6), (4, 12, 3),
    #: (6, 16, 2) and (2, 16, 8): refine_se 0.005, 0.01 and 0.02 all learned every layer (relative errors
    #: ≤ 1.4e-30); 0.02 took phase 3 from 13–22 s (0.005) to 0.4–1.6 s and 10,000–80,000 examples. The standard
    #: error counts the rows' scatter, not the bias of rows where a head still leaks (in oracle mode it understated
    #: the true error 1.4–7 times): phase 6's held-out error is the check.
    refine_first: int = 10_000
    refine_se: float = 0.02  # ours, measured above: 0.005–0.02 all learned, 0.02 fastest
    refine_rounds: int = 8  # ours, the first learner's, not tuned: rounds of the trimmed vertex regression
    refine_keep: float = 0.02  # ours, the first learner's, not tuned: rows kept per round (halved after the third)
    #: Rounds of phases 3 → 4 (ours: the refined hull gives a better Θ*, hence ΣW). With ``adaptive`` a cap: a
    #: round follows only when the previous round's phase 3 ended at ``n_refine`` above ``refine_se``.
    outer_rounds: int = 2
    #: With ``adaptive`` (ours): phase 4 stops at the first checkpoint (1.25·d² constraints, then every 1.25 times
    #: more) whose hull moved at most this from the previous checkpoint's (the larger of Θ*'s relative change
    #: and the sine of the largest principal angle between the directions); ``refined_constraints`` is
    #: the cap. Measured in oracle mode at (4, 12, 2): the change tracks the hull's true distance from the
    #: heads within 2×, and phase 6 recovered the layer from hulls 0.135 off (2·d² constraints); 0.05
    #: keeps a margin of ~2.5.
    hull_stability: float = 0.05
    #: Phase 5: a singular-value ratio at least this marks the hull's dimension when m is estimated.
    #: Chosen when None: 3 up to m = 4, 2 from m = 5 (measured at (5, 16, 2): the 4-dimensional hull
    #: shows ratios 2.41–2.54 with directions 0.094–0.102 rad off, which phase 6 recovers from exactly,
    #: while ratios off the true m stayed at most 1.45 in every run at m <= 4). With m given, a
    #: smaller ratio is recorded (diagnostics["5_span"]["gap_resolved"]) but no longer stops the run:
    #: phase 6's variable projection recovered (6, 16, 2) from a ratio of 1.34.
    gap_min: float | None = None
    #: Phase 5's weighting of the constraints: "precision", "irls" or "none" (learner.phases.span).
    hull_weighting: str = "precision"
    #: Largest m considered when m is estimated (ours, not tuned: bounds the search over m; further capped by the
    #: setting's soundness).
    max_m: int = 6
    #: Phase 6: net radius (multiple of ‖Θ*‖_F), points per axis (m = 2; m >= 3, chosen
    #: from m when None: 13 up to m = 4, 9 at m = 5, 7 beyond), examples.
    net_radius: float = 2.0  # ours, the first learner's, not tuned: the box must hold every head around Θ*
    net_points: int = 41  # ours: the design prototype's 41-point net; 820 tuples at m = 2, affordable
    net_points_3d: int | None = None
    n_search: int = 2000  # ours, the first learner's, not tuned: examples that score each tuple
    keep_tuples: int = 20  # ours, the first learner's, not tuned: best tuples compared on held-out examples
    #: Phase 6's tuple search ("auto", "exhaustive", "swap", "vp"), the exhaustive search's limit in
    #: tuples, the memory budget in bytes of the grid searches, the swap descent's random starts and
    #: the variable-projection search's. 10^5 tuples take a few seconds; at m = 3 the 13² grid has
    #: C(169, 3) = 790 244 tuples (30 s alone). "auto" runs the exhaustive search where affordable
    #: and otherwise the variable-projection search in the hull's m(m−1) coordinates (ours), which
    #: replaced the swap descent there: at (5, 16, 2) it took 2–3 s against ~38 s, and every one of
    #: 8 random starts reached the same optimum in oracle mode at m = 4–6 (hulls 0.05–0.15 rad off).
    search: str = "auto"
    max_tuples: int = 100_000  # ours: 10^5 tuples take a few seconds (above)
    search_memory: int = 2**30  # ours, not tuned: 1 GiB for the grid searches
    swap_starts: int = 8  # ours, not tuned: random starts of the swap descent
    vp_starts: int = 8  # ours, measured: every one of 8 starts reached the optimum (above)
    search_seed: int = 0  # ours: a fixed seed by convention, so that searches repeat
    #: Joint refinement ("vp": Levenberg–Marquardt on the Θ's with the W's solved exactly, ours;
    #: "trf": the earlier trust-region refinement of all 2md² parameters), residuals per parameter
    #: (sets the examples used; search_heads also asks for 2d²/(k(k−1)) examples, so that every
    #: head's Θ is pinned by its logit differences) and the cap on residual evaluations. Two residuals
    #: per parameter then pin a noiseless layer: variable projection reached held-out errors ~1e-30 at
    #: m = 2–6 (k = 2, 4), where the trust-region refinement used 8 (its cost grows with the count).
    refine: str = "vp"
    refine_examples_per_param: float = 2.0  # ours, measured: two per parameter pin a noiseless layer (above)
    max_nfev: int = 200  # ours, the first learner's, not tuned: a cap on the refinement's evaluations
    #: Success: held-out relative error of F at most this, or (with ``noise_floor``) a residual above it
    #: that the noise-floor test of learner.phases.noise finds to be label noise alone, within
    #: ``noise_z`` standard deviations.
    success_tol: float = 1e-10  # ours, not tuned: far above float64's floor (successful runs end <= 7.8e-29)
    noise_floor: bool = True
    noise_z: float = 4.0  # ours: as learner.phases.noise.NOISE_Z (4 sd: by chance about once in 10⁴ fits)
    #: Run even where learner.assumptions.setting_conditions says certification is unsound.
    allow_unsound: bool = False

    def __post_init__(self):
        for name, rule in CONFIG_RULES.items():
            object.__setattr__(self, name, rule.check(name, getattr(self, name)))


#: The learner before issue 38 (fixed budgets, phase 2 at 3·d² constraints and tolerance 0.05):
#: ``LearnConfig(**FIXED_BUDGETS)``, for comparison with the data-driven budgets (the frontier's records
#: of docs/sweeps/frontier were made with it).
FIXED_BUDGETS = {"adaptive": False, "crude_tol": 0.05, "crude_constraints": 3.0}


def _field_rule(f):
    """A field's rule of the validation layer, from its type and the tables above."""
    if f.name in _CHOICES:
        return Choice(_CHOICES[f.name])
    if f.type == "bool":
        return Boolean()
    none = f.name in _AUTO
    if f.type.startswith("int"):
        return Integer(minimum=0 if f.name in _ZERO_OK else 1, none=none)
    return Real(allow_zero=f.name in _ZERO_OK, none=none, below=1 if f.name in _FRACTIONS else None)


#: Fractions and tolerances: below 1.
_FRACTIONS = ("crude_tol", "refined_tol", "min_weight", "refine_keep", "crude_se", "refine_se")
#: Every field's rule, declared once: checked on construction and the type of the command lines' options
#: that set a field (``learn --max-examples``).
CONFIG_RULES = {f.name: _field_rule(f) for f in dataclasses.fields(LearnConfig)}


def resolve_config(cfg, m, d, k):
    """``(config, chosen)``: ``cfg`` with every None field chosen from ``(m, d, k)``, and the names chosen.

    ``m`` is the number of heads the run plans for (the given m, or the largest
    the setting allows when m is estimated). The rules are ours, from the
    measurements in the field comments of :class:`LearnConfig`. ``refined_tol``
    stays None: phase 4's pilot chooses it (:func:`learner.phases.refined_sculpt`).
    """
    from .forecast import DEFAULT_MAX_EXAMPLES

    chosen = {}
    if cfg.refined_constraints is None:
        chosen["refined_constraints"] = 6.0 if m <= 3 else 12.0
    if cfg.gap_min is None:
        chosen["gap_min"] = 3.0 if m <= 4 else 2.0
    if cfg.net_points_3d is None:
        chosen["net_points_3d"] = 13 if m <= 4 else 9 if m == 5 else 7
    if cfg.max_examples is None:
        chosen["max_examples"] = DEFAULT_MAX_EXAMPLES
    return dataclasses.replace(cfg, **chosen), sorted(chosen)
