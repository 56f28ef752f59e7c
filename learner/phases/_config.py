"""Tuning knobs of the learner, with the reason for each default (all ours).

Fields left at ``None`` are chosen by :func:`resolve_config` from the number of
heads the run plans for when :func:`learner.learn` starts, except phase 4's
tolerance, which phase 4's pilot forecast chooses (:mod:`learner.phases.forecast`);
the run's diagnostics record every value used and which ones were chosen so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..validation import Boolean, Choice, Integer, Real

__all__ = ["CHOICES", "CONFIG_RULES", "FIXED_BUDGETS", "LearnConfig", "as_config", "resolve_config"]

#: The choices of every field that takes one of a few names: their one list (phases 5 and 6 read it).
CHOICES = {"hull_weighting": ("precision", "irls", "none"), "search": ("auto", "exhaustive", "swap", "vp"),
            "refine": ("vp", "trf"), "refine_solver": ("auto", "normal", "cg")}
#: Fields that may be None (chosen from m by resolve_config, or by phase 4's pilot).
_AUTO = ("refined_tol", "refined_constraints", "max_examples", "net_points_3d", "gap_min")
#: Fields that may be 0 (everything else numeric must be positive).
_ZERO_OK = ("swap_starts", "search_seed", "certify_examples")  # outer_rounds >= 1: phase 5 runs inside the rounds
#: The groups of :class:`LearnConfig`'s fields, in the order :meth:`LearnConfig.groups` lists them.
_GROUPS = ("mode", "budgets", "tolerances", "regression", "span", "search", "refinement")
#: Whose a default is: ours (and how it was chosen), or the paper's.
_WHOSE = ("ours, measured", "ours, not tuned", "ours, convention", "the paper's")


def _meta(group: str, unit: str, whose: str, doc: str) -> dict[str, str]:
    """A field's metadata: its group, the unit of its value, whose its default is and a one-line description."""
    if group not in _GROUPS or whose not in _WHOSE or not unit or not doc or "\n" in doc:
        raise ValueError(f"bad field metadata: group={group!r}, unit={unit!r}, whose={whose!r}, doc={doc!r}")
    return {"group": group, "unit": unit, "whose": whose, "doc": doc}


@dataclass(frozen=True)
class LearnConfig:
    """Thresholds, budgets and batch sizes of the six phases.

    The paper fixes these only up to ``poly(d, k, 1/ε)`` factors; every
    default here is ours, chosen from measurements on planted layers
    (``random_layer``; logit scale 3 at d = 8 and logit scale 1 at k = 2,
    d = 12–16) and documented beside it. Every field is validated on
    construction (:data:`CONFIG_RULES`): a wrong type raises ``TypeError``, a value out of range
    ``ValueError``, each naming the field. Integers must also be at most ``2**63 − 1`` and reals finite.

    The fields form one flat list (``LearnConfig(max_examples=...)``), grouped
    by concern in their metadata (:meth:`groups`, :meth:`describe`):

    - ``mode``: switches of how the learner runs (``adaptive``, ``allow_unsound``);
    - ``budgets``: example counts, batch sizes and caps of phases 1–4;
    - ``tolerances``: residual, error and standard-error thresholds and targets;
    - ``regression``: phase 3's trimmed vertex regression;
    - ``span``: phase 5's hull (its weighting, its dimension's gap, the largest m);
    - ``search``: phase 6's net, tuple search, starts, seed and memory;
    - ``refinement``: phase 6's joint refinement and its noise-floor test.

    Each field's metadata holds ``group``, ``unit`` (of its value), ``whose``
    (``"ours, measured"``, ``"ours, not tuned"``, ``"ours, convention"`` or
    ``"the paper's"``) and ``doc`` (one line); ``dataclasses.fields(LearnConfig)``
    returns it. The comment above each field in the source gives the measurement behind its default.

    Parameters
    ----------
    adaptive : bool, default True
        Budgets set by the data: phases 1 and 3 stop once their estimates' relative standard errors reach
        ``crude_se`` and ``refine_se``, phase 4 once its hull is stable (``hull_stability``), the rounds of
        phases 3–5 once phase 3 met its target, and the example streams start at ``first_batch``; the
        counts are then caps. False draws every count in full in fixed batches (:data:`FIXED_BUDGETS`).
        Read by :func:`learner.learn` for phases 1–4.
    batch : int, default 100_000
        Examples per streamed batch of phases 1–4 (with ``adaptive``, the largest batch). Memory grows with
        it (a few times ``batch·k·d`` floats). At least 1.
    first_batch : int, default 5_000
        With ``adaptive``: the examples of the first batch of phases 1, 2 and 4; each next batch doubles, up
        to ``batch``. Unused without ``adaptive``. At least 1.
    n_crude : int, default 400_000
        Phase 1: examples for the one-step estimate of ``ΣW_i`` (a cap with ``adaptive``). At least 1.
    crude_se : float, default 0.025
        With ``adaptive``: phase 1 stops once its estimate's relative standard error (dimensionless) is at
        most this. Unused without ``adaptive``. In (0, 1).
    crude_tol : float, default 0.1
        Phase 2: the relative residual (dimensionless) below which a row certifies against the crude ``ΣW``.
        In (0, 1).
    refined_tol : float or None, default None
        Phase 4: the relative residual below which a row certifies. None lets phase 4's pilot choose it
        among :data:`~learner.phases.forecast.ADAPTIVE_CANDIDATES` (with ``adaptive``, smallest forecast
        cost; where that is forecast above :data:`~learner.phases.forecast.REACH_EXAMPLES` examples or
        ``max_examples``, the tightest of :data:`~learner.phases.forecast.REACH_CANDIDATES` within it)
        or :data:`~learner.phases.forecast.DEFAULT_CANDIDATES` (without); a value given is used as is.
        In (0, 1) when given.
    min_weight : float, default 0.02
        Phases 2 and 4: the smallest fitted attention weight of a token whose log-ratio to the row's
        heaviest token gives a constraint. In (0, 1).
    crude_constraints : float, default 1.5
        Phase 2: constraints to collect, as a multiple of ``d²`` (the unknowns); the target is
        ``int(crude_constraints·d²)``. Positive.
    refined_constraints : float or None, default None
        Phase 4: constraints to collect, as a multiple of ``d²`` (a cap with ``adaptive``). None: chosen from
        m by :func:`resolve_config` (6 for m <= 3, 12 beyond). Positive when given.
    max_examples : int or None, default None
        Phase 4: the example budget of each round; when the pilot forecasts more, the run stops after the
        pilot with status ``"budget"``. None: :data:`~learner.phases.forecast.DEFAULT_MAX_EXAMPLES`
        (10⁹), set by :func:`resolve_config`. At least 1 when given.
    crude_max_examples : int, default 2_000_000
        Phase 2: its example budget. At least 1.
    n_refine : int, default 400_000
        Phase 3: examples per round (a cap with ``adaptive``). At least 1.
    refine_first : int, default 10_000
        With ``adaptive``: phase 3's first sample in examples, doubled until ``refine_se`` or ``n_refine`` is
        reached. Unused without ``adaptive``. At least 1.
    refine_se : float, default 0.02
        With ``adaptive``: phase 3 stops once its certified regression's relative standard error
        (dimensionless) is at most this; a further round of phases 3–5 follows only when phase 3 ended at
        ``n_refine`` above it. Unused without ``adaptive``. In (0, 1).
    refine_rounds : int, default 8
        Phase 3: rounds of the trimmed vertex regression. At least 1.
    refine_keep : float, default 0.02
        Phase 3: the fraction of rows the trimmed vertex regression keeps per round (halved after the
        third round). In (0, 1).
    outer_rounds : int, default 2
        Rounds of phases 3 → 5, each starting from the previous round's hull (a cap with ``adaptive``).
        At least 1.
    hull_stability : float, default 0.05
        With ``adaptive``: phase 4 stops at the first checkpoint (``1.25·d²`` constraints, then every 1.25
        times more) whose hull moved at most this from the previous checkpoint's: the larger of ``Θ*``'s
        relative change and the sine of the largest principal angle between the directions
        (:func:`~learner.phases.sculpt.hull_change`). Unused without ``adaptive``. Positive.
    gap_min : float or None, default None
        Phase 5 (also the hulls of phase 2's ``Θ*`` and of phase 4's stability checkpoints): the
        singular-value ratio at least which marks the hull's dimension when m is estimated; with m given, a
        smaller ratio is only recorded (``diagnostics["5_span"]["gap_resolved"]``). None: chosen from m by
        :func:`resolve_config` (3 up to m = 4, 2 beyond). Positive when given.
    hull_weighting : {"precision", "irls", "none"}, default "precision"
        Phase 5's weighting of the constraints (:func:`~learner.phases.estimate_span`; also used for phase
        2's ``Θ*`` and phase 4's checkpoints).
    max_m : int, default 6
        Heads: the largest m considered when m is estimated (further capped by the largest m the setting
        allows, unless ``allow_unsound``), and the largest m that the probe for one more head tries when m
        is given. At least 1.
    net_radius : float, default 2.0
        Phase 6: the radius of the net's box around ``Θ*``, as a multiple of ``‖Θ*‖_F``. Positive.
    net_points : int, default 41
        Phase 6: net points on the hull's one axis at m = 2. At least 1.
    net_points_3d : int or None, default None
        Phase 6: net points per hull axis at m >= 3 (the grid has ``net_points_3d^(m−1)`` points). None:
        chosen from m by :func:`resolve_config` (13 up to m = 4, 9 at m = 5, 7 beyond). At least 1 when given.
    n_search : int, default 2000
        Phase 6: examples that score each tuple; as many again are held out to compare the best tuples
        and score the refined layer. Also the examples of the refit that drops redundant heads. At least 1.
    keep_tuples : int, default 20
        Phase 6: the best in-sample tuples compared on the held-out examples. At least 1.
    search : {"auto", "exhaustive", "swap", "vp"}, default "auto"
        Phase 6's tuple search (:mod:`learner.phases.search`): ``"auto"`` runs the exhaustive search where
        ``max_tuples`` and ``search_memory`` allow it and the variable-projection search ``"vp"`` otherwise.
    max_tuples : int, default 100_000
        Phase 6: the most tuples the exhaustive search may score. At least 1.
    search_memory : int, default 2**30
        Phase 6: the memory budget in bytes of the exhaustive search's Gram matrix, the swap descent's
        feature cache, the refinement's normal equations and the noise-floor test's Jacobians (1 GiB).
        At least 1.
    swap_starts : int, default 8
        Phase 6: random starting tuples of the swap descent, besides its greedy start. At least 0.
    vp_starts : int, default 8
        Phase 6: random starts of the variable-projection search. At least 1.
    search_seed : int, default 0
        Phase 6: the seed of the searches' random starts, so that searches repeat. At least 0.
    refine : {"vp", "trf"}, default "vp"
        Phase 6's joint refinement: ``"vp"``, Levenberg–Marquardt on the ``Θ``'s with the ``W``'s solved
        exactly at every step, or ``"trf"``, scipy's trust-region refinement of all ``2md²`` parameters
        (kept for comparison; the noise-floor test runs only after ``"vp"``).
    refine_solver : {"auto", "normal", "cg"}, default "auto"
        Phase 6: how ``refine="vp"`` solves each Levenberg–Marquardt step: ``"normal"``, the normal equations
        formed from the Jacobian's structure and factorised (Cholesky), or ``"cg"``, preconditioned conjugate
        gradients that never form them (:mod:`learner.phases.steps`); ``"auto"``: ``"cg"`` on numpy from
        :data:`~learner.phases.steps.CG_MIN_UNKNOWNS` unknowns ``md²`` on, else ``"normal"`` (always
        ``"normal"`` on a torch device). Both end at the same minimiser.
    refine_examples_per_param : float, default 2.0
        Phase 6: residuals per parameter of the refinement, which set its examples (at least
        ``2d²/(k(k−1))`` of them and 32, at most ``n_search``). Positive.
    max_nfev : int, default 200
        Phase 6: the cap on the refinement's residual evaluations (also on each start of the
        variable-projection search, and on the refit that drops redundant heads). At least 1.
    success_tol : float, default 1e-10
        The verdict after phase 6: success when the held-out relative error of ``F`` (a ratio of squared
        norms) is at most this, or, with ``noise_floor``, when a larger residual passes the noise-floor
        test. Positive.
    certify_examples : int, default 4000
        After phase 6: fresh examples drawn for the layer's certified error bound
        (:func:`learner.certify.certify_error`, ``LearnResult.error_bound``); 0 draws none and certifies nothing.
    certify_delta : float, default 0.05
        The certified error bound's failure probability, in (0, 1).
    noise_floor : bool, default True
        Phase 6: test a held-out error above :data:`~learner.phases.noise.NOISE_MIN` for label noise
        (:func:`~learner.phases.noise.noise_floor`) and accept a residual the test finds to be noise alone.
    noise_z : float, default 4.0
        Phase 6: the noise-floor test's width, in standard deviations of its ratio
        (:data:`~learner.phases.noise.NOISE_Z`). Positive.
    allow_unsound : bool, default False
        Run even where :func:`learner.check_setting` says certification is unsound (read before phase 1;
        when m is estimated, ``max_m`` is then not capped by the setting).

    See Also
    --------
    learner.learn : Runs the six phases with a configuration.
    resolve_config : Chooses the fields left at None from the number of heads.
    FIXED_BUDGETS : The fields that give the fixed budgets.
    learner.LearnResult : Records every value used in its diagnostics.

    Examples
    --------
    >>> from learner import LearnConfig
    >>> cfg = LearnConfig(max_examples=10**8, search="vp")
    >>> cfg.max_examples, cfg.search, cfg.refined_tol
    (100000000, 'vp', None)
    >>> LearnConfig(refine_keep=1.5)
    Traceback (most recent call last):
        ...
    ValueError: `refine_keep` must be below 1; got refine_keep=1.5.
    >>> LearnConfig.groups()["regression"]
    ['refine_rounds', 'refine_keep']
    """

    #: Budgets set by the data (ours, measured below): phase 1 stops when its estimate's relative standard error
    #: is at most ``crude_se``, phase 3 when its regression's is at most ``refine_se``, phase 4 when the hull
    #: of its constraints moves at most ``hull_stability`` between checkpoints, and the rounds of phases
    #: 3 → 5 end once phase 3 met its target; the counts (``n_crude``, ``n_refine``, ``refined_constraints``,
    #: ``outer_rounds``) are then caps. False gives fixed budgets (every count drawn in full, fixed batches)
    #: for comparison (:data:`learner.phases.FIXED_BUDGETS`).
    adaptive: bool = field(default=True, metadata=_meta(
        "mode", "switch", "ours, measured", "budgets set by the data; False draws every count in full"))
    #: Examples streamed per batch (ours, not tuned: large vectorised batches; memory: a few times batch·k·d
    #: floats).
    batch: int = field(default=100_000, metadata=_meta(
        "budgets", "examples", "ours, not tuned", "examples streamed per batch (memory grows with it)"))
    #: With ``adaptive`` (ours, not tuned): the first batch of every example stream; the next double up to
    #: ``batch``, so a phase that stops early draws at most about twice what it needed
    #: (learner.oracle.growing_sizes).
    first_batch: int = field(default=5_000, metadata=_meta(
        "budgets", "examples", "ours, not tuned",
        "with adaptive: the first batch of every stream, doubled up to batch"))
    #: Phase 1: examples for the one-step estimate (a cap with ``adaptive``; ours, not tuned).
    n_crude: int = field(default=400_000, metadata=_meta(
        "budgets", "examples", "ours, not tuned", "phase 1's examples for the one-step estimate (a cap with adaptive)"))
    #: Phase 1's target relative standard error (ours, measured). The one-step estimate is biased by the Θ's
    #: (its error is ~0.1 at logit scale 1 however many examples), and phase 2 certifies at ``crude_tol`` = 0.05,
    #: so the sampling error only has to stay below half the tolerance; measured at (2, 12, 2): 10,000–400,000
    #: examples (standard error 0.04–0.006) gave the same phases 2–6. The relative standard deviation of
    #: one example is 3.6–4.3 at d = 12–16, so this needs ~25,000 examples: the stream stops after its
    #: batches of 5,000, 10,000 and 20,000 (35,000; 15,000 at d = 8, k = 2).
    crude_se: float = field(default=0.025, metadata=_meta(
        "tolerances", "relative standard error", "ours, measured",
        "with adaptive: phase 1 stops once its estimate's relative standard error is at most this"))
    #: Phase 2: relative residual below which a row's fit certifies agreement. Phase 2 works with a crude ΣW, so
    #: it must be loose; its constraints only seed phase 3's choice of dominant tokens (ours, measured with
    #: ``crude_constraints``, below).
    crude_tol: float = field(default=0.1, metadata=_meta(
        "tolerances", "relative residual", "ours, measured",
        "phase 2: relative residual below which a row certifies against the crude ΣW"))
    #: Phase 4: relative residual below which a row certifies; tighter than phase 2's. Chosen when None, in
    #: every round, by its pilot (learner.phases.forecast, ours, measured there): the first batches are
    #: certified at the loosest candidate and forecast the examples the target needs at each candidate
    #: tolerance. With ``adaptive`` the candidates are 0.015–0.08 and the pilot takes the smallest forecast
    #: cost; without, the candidates are 0.015, 0.02 and 0.03 and it takes the smallest whose forecast is at
    #: most 2·10^7 examples, else the one of smallest forecast (0.03 where yields grow with tol) — the yield
    #: grows like tol^((m−1)(k−1)), and the precision weighting of phase 5 discounts the looser rows. A value
    #: given is used as is (the pilot only forecasts).
    refined_tol: float | None = field(default=None, metadata=_meta(
        "tolerances", "relative residual", "ours, measured",
        "phase 4: relative residual below which a row certifies; None: chosen by phase 4's pilot"))
    #: Tokens whose fitted weight is at least this give constraints. Low weights give imprecise log-ratios,
    #: which the precision weighting of phase 5 discounts, so the threshold can be low (ours, measured at
    #: (3, 12, 2): 0.02 with precision weights beat 0.1).
    min_weight: float = field(default=0.02, metadata=_meta(
        "tolerances", "attention weight", "ours, measured",
        "smallest fitted weight of a token that gives a constraint"))
    #: Phase 2: constraints to collect, as a multiple of d² (the unknowns). Phase 2's constraints (1.5) and its
    #: tolerance (0.1) only seed phase 3's choice of dominant tokens (Θ*'s heaviest token): measured on the
    #: frontier's layers at (3, 12, 2), (2, 12, 3), (4, 12, 2), they took phase 2 from 255,000–1,055,000
    #: examples (3·d² at 0.05) to 5,000–15,000 with the same phases 3–6 (ours, measured).
    crude_constraints: float = field(default=1.5, metadata=_meta(
        "budgets", "multiple of d²", "ours, measured", "phase 2: constraints to collect, as a multiple of d²"))
    #: Phase 4: constraints to collect, as a multiple of d² (a cap with ``adaptive``). Chosen from m when None
    #: (ours, measured): 6 for m <= 3, 12 for m >= 4 (the hull of more heads is noisier; examples are cheap
    #: at k = 2).
    refined_constraints: float | None = field(default=None, metadata=_meta(
        "budgets", "multiple of d²", "ours, measured",
        "phase 4: constraints to collect, as a multiple of d²; None: chosen from m"))
    #: Example budget of each refined sculpting round (phase 4). When None: 10^9
    #: (learner.phases.forecast.DEFAULT_MAX_EXAMPLES; ours, measured: 15–45 min on two cores at the measured
    #: rates). When phase 4's pilot forecasts more than the budget, the run stops after the pilot with status
    #: "budget" and a message saying what would make it fit.
    max_examples: int | None = field(default=None, metadata=_meta(
        "budgets", "examples", "ours, measured", "phase 4: example budget of each round; None: 10^9"))
    #: Phase 2's budget: with the crude ΣW its constraints are rough, so they only seed phase 3's Θ*. Ours, not
    #: tuned: a cap (the measured runs of ``crude_constraints`` stopped after 5,000–15,000 examples).
    crude_max_examples: int = field(default=2_000_000, metadata=_meta(
        "budgets", "examples", "ours, not tuned", "phase 2's example budget"))
    #: Phase 3: examples (a cap with ``adaptive``; ours, not tuned).
    n_refine: int = field(default=400_000, metadata=_meta(
        "budgets", "examples", "ours, not tuned", "phase 3's examples per round (a cap with adaptive)"))
    #: With ``adaptive`` (ours, not tuned): phase 3 draws ``refine_first`` examples, then doubles its sample
    #: until the certified regression's relative standard error is at most ``refine_se`` (or ``n_refine``).
    refine_first: int = field(default=10_000, metadata=_meta(
        "budgets", "examples", "ours, not tuned", "with adaptive: phase 3's first sample, then doubled"))
    #: With ``adaptive``: phase 3's target relative standard error (ours, measured). Phase 4 certifies at
    #: 0.015–0.08 (its pilot chooses after phase 3, from its own yields), and phase 6's refinement recovers the
    #: layer from a rough hull. Measured on the first two frontier layers of (3, 12, 4), (2, 12, 6), (4, 12, 3),
    #: (6, 16, 2) and (2, 16, 8): refine_se 0.005, 0.01 and 0.02 all learned every layer (relative errors
    #: ≤ 1.4e-30); 0.02 took phase 3 from 13–22 s (0.005) to 0.4–1.6 s and 10,000–80,000 examples. The standard
    #: error counts the rows' scatter, not the bias of rows where a head still leaks (in oracle mode it understated
    #: the true error 1.4–7 times): phase 6's held-out error is the check.
    refine_se: float = field(default=0.02, metadata=_meta(
        "tolerances", "relative standard error", "ours, measured",
        "with adaptive: phase 3 stops once its regression's relative standard error is at most this"))
    #: Phase 3: rounds of the trimmed vertex regression (ours, not tuned).
    refine_rounds: int = field(default=8, metadata=_meta(
        "regression", "rounds", "ours, not tuned", "rounds of phase 3's trimmed vertex regression"))
    #: Phase 3: the fraction of rows the trimmed vertex regression keeps per round, halved after the third
    #: (ours, not tuned).
    refine_keep: float = field(default=0.02, metadata=_meta(
        "regression", "fraction of rows", "ours, not tuned", "rows kept per round of phase 3's regression"))
    #: Rounds of phases 3 → 5 (ours, not tuned: the refined hull gives a better Θ*, hence ΣW). With
    #: ``adaptive`` a cap: a round follows only when the previous round's phase 3 ended at ``n_refine`` above
    #: ``refine_se``.
    outer_rounds: int = field(default=2, metadata=_meta(
        "budgets", "rounds", "ours, not tuned", "rounds of phases 3 → 5 (a cap with adaptive)"))
    #: With ``adaptive`` (ours, measured): phase 4 stops at the first checkpoint (1.25·d² constraints, then every
    #: 1.25 times more) whose hull moved at most this from the previous checkpoint's (the larger of Θ*'s relative
    #: change and the sine of the largest principal angle between the directions); ``refined_constraints`` is
    #: the cap. Measured in oracle mode at (4, 12, 2): the change tracks the hull's true distance from the
    #: heads within 2×, and phase 6 recovered the layer from hulls 0.135 off (2·d² constraints); 0.05
    #: keeps a margin of ~2.5.
    hull_stability: float = field(default=0.05, metadata=_meta(
        "tolerances", "relative change", "ours, measured",
        "with adaptive: phase 4 stops once its hull moved at most this between checkpoints"))
    #: Phase 5: a singular-value ratio at least this marks the hull's dimension when m is estimated.
    #: Chosen when None (ours, measured): 3 up to m = 4, 2 from m = 5 (measured at (5, 16, 2): the
    #: 4-dimensional hull shows ratios 2.41–2.54 with directions 0.094–0.102 rad off, which phase 6 recovers
    #: from exactly, while ratios off the true m stayed at most 1.45 in every run at m <= 4). With m given, a
    #: smaller ratio is recorded (diagnostics["5_span"]["gap_resolved"]) but does not stop the run: phase 6's
    #: variable projection recovered (6, 16, 2) from a ratio of 1.34.
    gap_min: float | None = field(default=None, metadata=_meta(
        "span", "singular-value ratio", "ours, measured",
        "phase 5: singular-value ratio that marks the hull's dimension; None: chosen from m"))
    #: Phase 5's weighting of the constraints: "precision", "irls" or "none" (ours, measured in
    #: learner.phases.span: the precision weights gave the larger singular-value gap and the better directions).
    hull_weighting: str = field(default="precision", metadata=_meta(
        "span", "choice", "ours, measured", "phase 5's weighting of the constraints"))
    #: Largest m considered when m is estimated (ours, not tuned: bounds the search over m; further capped by the
    #: setting's soundness).
    max_m: int = field(default=6, metadata=_meta(
        "span", "heads", "ours, not tuned", "largest m considered when m is estimated"))
    #: Phase 6: radius of the net around Θ*, as a multiple of ‖Θ*‖_F (ours, not tuned: the box must hold every
    #: head around Θ*).
    net_radius: float = field(default=2.0, metadata=_meta(
        "search", "multiple of ‖Θ*‖_F", "ours, not tuned", "phase 6: radius of the net around Θ*"))
    #: Phase 6: net points per axis at m = 2 (ours, not tuned: 41 points give C(41, 2) = 820 tuples, affordable).
    net_points: int = field(default=41, metadata=_meta(
        "search", "points per axis", "ours, not tuned", "phase 6: net points per axis at m = 2"))
    #: Phase 6: net points per hull axis at m >= 3. Chosen from m when None (ours, measured): 13 up to m = 4,
    #: 9 at m = 5, 7 beyond (at m = 3 the 13² grid has C(169, 3) = 790 244 tuples, 30 s exhaustively).
    net_points_3d: int | None = field(default=None, metadata=_meta(
        "search", "points per axis", "ours, measured", "phase 6: net points per hull axis at m >= 3; None: from m"))
    #: Phase 6: examples that score each tuple (ours, not tuned).
    n_search: int = field(default=2000, metadata=_meta(
        "search", "examples", "ours, not tuned", "phase 6: examples that score each tuple"))
    #: Phase 6: best tuples compared on held-out examples (ours, not tuned).
    keep_tuples: int = field(default=20, metadata=_meta(
        "search", "tuples", "ours, not tuned", "phase 6: best tuples compared on held-out examples"))
    #: Phase 6's tuple search: "auto", "exhaustive", "swap" or "vp". "auto" runs the exhaustive search where
    #: affordable (``max_tuples``, ``search_memory``) and otherwise the variable-projection search in the hull's
    #: m(m−1) coordinates (ours, measured: at (5, 16, 2) it took 2–3 s against ~38 s for the swap descent).
    search: str = field(default="auto", metadata=_meta(
        "search", "choice", "ours, measured", "phase 6's tuple search"))
    #: Phase 6: the exhaustive search's limit in tuples (ours, measured: 10^5 tuples take a few seconds).
    max_tuples: int = field(default=100_000, metadata=_meta(
        "search", "tuples", "ours, measured", "phase 6: the exhaustive search's limit"))
    #: Phase 6: memory budget of the grid searches and the refinement (ours, not tuned: 1 GiB).
    search_memory: int = field(default=2**30, metadata=_meta(
        "search", "bytes", "ours, not tuned", "phase 6: memory budget of the grid searches"))
    #: Phase 6: random starts of the swap descent (ours, not tuned).
    swap_starts: int = field(default=8, metadata=_meta(
        "search", "starts", "ours, not tuned", "phase 6: random starts of the swap descent"))
    #: Phase 6: random starts of the variable-projection search (ours, measured: every one of 8 random starts
    #: reached the same optimum in oracle mode at m = 4–6, hulls 0.05–0.15 rad off).
    vp_starts: int = field(default=8, metadata=_meta(
        "search", "starts", "ours, measured", "phase 6: random starts of the variable-projection search"))
    #: Phase 6: the seed of the searches' random starts (ours: a fixed seed by convention, so that searches repeat).
    search_seed: int = field(default=0, metadata=_meta(
        "search", "seed", "ours, convention", "phase 6: seed of the searches' random starts"))
    #: Phase 6's joint refinement: "vp" (Levenberg–Marquardt on the Θ's with the W's solved exactly, ours,
    #: measured: held-out errors ~1e-30 at m = 2–6, k = 2 and 4) or "trf" (a trust-region refinement of all
    #: 2md² parameters, kept for comparison; it needs about 8 residuals per parameter).
    refine: str = field(default="vp", metadata=_meta(
        "refinement", "choice", "ours, measured", "phase 6's joint refinement"))
    #: Phase 6: how the refinement solves its steps, "normal" (the normal equations, factorised) or "cg"
    #: (conjugate gradients on the Jacobian's structure); "auto" picks "cg" on numpy from
    #: learner.phases.steps.CG_MIN_UNKNOWNS unknowns on (ours, measured: see that constant).
    refine_solver: str = field(default="auto", metadata=_meta(
        "refinement", "choice", "ours, measured", "phase 6: how the refinement solves its steps"))
    #: Phase 6: residuals per parameter, which set the examples the refinement uses (search_heads also asks for
    #: 2d²/(k(k−1)) examples, so that every head's Θ is pinned by its logit differences). Ours, measured: two
    #: per parameter pin a noiseless layer.
    refine_examples_per_param: float = field(default=2.0, metadata=_meta(
        "refinement", "residuals per parameter", "ours, measured",
        "phase 6: residuals per parameter of the refinement"))
    #: Phase 6: cap on the refinement's residual evaluations (ours, not tuned).
    max_nfev: int = field(default=200, metadata=_meta(
        "refinement", "evaluations", "ours, not tuned", "phase 6: cap on the refinement's residual evaluations"))
    #: Success: held-out relative error of F at most this, or (with ``noise_floor``) a residual above it that
    #: the noise-floor test finds to be label noise alone (ours, not tuned: far above float64's floor;
    #: successful runs end <= 7.8e-29).
    success_tol: float = field(default=1e-10, metadata=_meta(
        "tolerances", "relative error", "ours, not tuned", "success: held-out relative error of F at most this"))
    #: Fresh examples drawn after phase 6 for the certified error bound of the layer found (learner.certify; ours,
    #: convention: at δ = 0.05 a quarter of them set the clip levels, so a fresh example's error exceeds the clip
    #: with probability at most ln(60)/1000 = 0.4 %; the draw costs well under 1 % of a run's examples). 0: none.
    certify_examples: int = field(default=4000, metadata=_meta(
        "budgets", "examples", "ours, convention", "fresh examples for the certified error bound (0: none)"))
    #: The certified error bound's failure probability (ours, convention: the common 5 %).
    certify_delta: float = field(default=0.05, metadata=_meta(
        "tolerances", "probability", "ours, convention", "the certified error bound's failure probability"))
    #: Accept a held-out error above ``success_tol`` when the noise-floor test of learner.phases.noise finds it
    #: to be label noise alone (ours, on by convention: the test is consulted only above ``success_tol``).
    noise_floor: bool = field(default=True, metadata=_meta(
        "refinement", "switch", "ours, convention", "accept a residual the noise-floor test finds to be label noise"))
    #: Standard deviations within which the noise-floor test accepts a residual as label noise (ours, measured in
    #: learner.phases.noise, as its NOISE_Z: 4 sd, by chance about once in 10⁴ fits).
    noise_z: float = field(default=4.0, metadata=_meta(
        "refinement", "standard deviations", "ours, measured", "the noise-floor test's threshold"))
    #: Run even where learner.assumptions.setting_conditions says certification is unsound (ours: off by
    #: convention, so that an unsound run is asked for).
    allow_unsound: bool = field(default=False, metadata=_meta(
        "mode", "switch", "ours, convention", "run even where certification is unsound"))

    def __post_init__(self) -> None:
        for name, rule in CONFIG_RULES.items():
            object.__setattr__(self, name, rule.check(name, getattr(self, name)))

    def if_adaptive(self, name: str) -> Any:
        """The field ``name`` with ``adaptive``, None without: the settings of the data-driven rules
        (``crude_se``, ``first_batch``, ``refine_se``, ``hull_stability``), which the fixed budgets do not use.

        Parameters
        ----------
        name : str
            A field's name.

        Returns
        -------
        object
            The field's value, or None without ``adaptive``.

        Examples
        --------
        >>> LearnConfig().if_adaptive("crude_se"), LearnConfig(adaptive=False).if_adaptive("crude_se")
        (0.025, None)
        """
        return getattr(self, name) if self.adaptive else None

    def plan(self, m: int | None, plan_m: int | None = None) -> int:
        """The most heads a phase plans for: ``plan_m`` when given, else ``m`` when given, else ``max_m``.

        :func:`learner.learn` passes ``plan_m`` when m is estimated: ``max_m`` capped by the setting
        (:func:`learner.check_setting`); a phase called on its own with ``m`` None plans for ``max_m``.

        Parameters
        ----------
        m : int or None
            The given number of heads; None when it is estimated.
        plan_m : int, optional
            The heads planned by the caller.

        Returns
        -------
        int
            The most heads planned for.

        Examples
        --------
        >>> LearnConfig().plan(None), LearnConfig().plan(2), LearnConfig().plan(None, plan_m=4)
        (6, 2, 4)
        """
        return plan_m if plan_m is not None else m if m is not None else self.max_m

    @classmethod
    def groups(cls) -> dict[str, list[str]]:
        """``{group: [field names]}``: every field under its group, groups and fields in declaration order.

        Examples
        --------
        >>> LearnConfig.groups()["mode"]
        ['adaptive', 'allow_unsound']
        """
        out: dict[str, list[str]] = {group: [] for group in _GROUPS}
        for f in dataclasses.fields(cls):
            out[f.metadata["group"]].append(f.name)
        return out

    @classmethod
    def describe(cls) -> str:
        """A text table of the fields: group, field, default, unit and whose the default is.

        Examples
        --------
        >>> for line in LearnConfig.describe().splitlines()[:3]:
        ...     print(line)
        group       field                      default      unit                     whose
        mode        adaptive                   True         switch                   ours, measured
        mode        allow_unsound              False        switch                   ours, convention
        """
        fields = {f.name: f for f in dataclasses.fields(cls)}
        rows = [("group", "field", "default", "unit", "whose")]
        rows += [(group, name, repr(f.default), f.metadata["unit"], f.metadata["whose"])
                 for group, names in cls.groups().items() for name in names for f in (fields[name],)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                         for row in rows)


#: The learner with fixed budgets (ours: every count drawn in full, fixed batches, phase 2 at 3·d² constraints
#: and tolerance 0.05): ``LearnConfig(**FIXED_BUDGETS)``, for comparison with the data-driven budgets (the
#: frontier's records of docs/sweeps/frontier were made with it).
FIXED_BUDGETS = {"adaptive": False, "crude_tol": 0.05, "crude_constraints": 3.0}


def _field_rule(f):
    """A field's rule of the validation layer, from its type and the tables above."""
    if f.name in CHOICES:
        return Choice(CHOICES[f.name])
    if f.type == "bool":
        return Boolean()
    none = f.name in _AUTO
    if f.type.startswith("int"):
        return Integer(minimum=0 if f.name in _ZERO_OK else 1, none=none)
    return Real(allow_zero=f.name in _ZERO_OK, none=none, below=1 if f.name in _FRACTIONS else None)


#: Fractions and tolerances: below 1.
_FRACTIONS = ("crude_tol", "refined_tol", "min_weight", "refine_keep", "crude_se", "refine_se", "certify_delta")
#: Every field's rule, declared once: checked on construction and the type of the command lines' options
#: that set a field (``learn --max-examples``).
CONFIG_RULES = {f.name: _field_rule(f) for f in dataclasses.fields(LearnConfig)}


def as_config(config: Any) -> LearnConfig:
    """``config``, or ``LearnConfig()`` for None: the one settings object every phase takes.

    Parameters
    ----------
    config : LearnConfig or None
        The budgets, tolerances and switches; None gives the defaults.

    Returns
    -------
    LearnConfig
        ``config`` itself, or the defaults.

    Raises
    ------
    TypeError
        For anything else (a mapping too: build ``LearnConfig(**mapping)``).

    Examples
    --------
    >>> as_config(None) == LearnConfig()
    True
    >>> as_config({"batch": 10})
    Traceback (most recent call last):
        ...
    TypeError: `config` must be a LearnConfig or None; got dict (build LearnConfig(**mapping) from a mapping).
    """
    if config is None:
        return LearnConfig()
    if not isinstance(config, LearnConfig):
        raise TypeError(f"`config` must be a LearnConfig or None; got {type(config).__name__} (build "
                        "LearnConfig(**mapping) from a mapping).")
    return config


def resolve_config(cfg: LearnConfig, m: int) -> tuple[LearnConfig, list[str]]:
    """``(config, chosen)``: ``cfg`` with every None field chosen from ``m``, and the names chosen.

    The rules are ours, from the measurements in the field comments of :class:`LearnConfig`; none of them
    depends on d or k: ``refined_constraints`` 6 for m <= 3, else 12; ``gap_min`` 3 for m <= 4, else 2;
    ``net_points_3d`` 13 for m <= 4, 9 at m = 5, else 7; ``max_examples``
    :data:`~learner.phases.forecast.DEFAULT_MAX_EXAMPLES`. ``refined_tol`` stays None: phase 4's pilot
    chooses it (:func:`learner.phases.refined_sculpt`). Fields already set are kept as they are.

    Parameters
    ----------
    cfg : LearnConfig
        The configuration to complete; it is not changed (a new one is returned).
    m : int
        The number of heads the run plans for: the given m, or the largest the setting allows when m is
        estimated (:func:`learner.learn` passes at least 1). Not validated here.

    Returns
    -------
    config : LearnConfig
        ``cfg`` with the chosen fields replaced (validated again on construction).
    chosen : list of str
        The names of the fields chosen here, sorted; empty when none was None.

    See Also
    --------
    LearnConfig : The fields and their defaults.
    learner.learn : Calls this once m is planned, and records ``chosen`` in the diagnostics.

    Examples
    --------
    >>> cfg, chosen = resolve_config(LearnConfig(gap_min=2.5), m=5)
    >>> chosen
    ['max_examples', 'net_points_3d', 'refined_constraints']
    >>> cfg.gap_min, cfg.net_points_3d, cfg.refined_constraints, cfg.refined_tol
    (2.5, 9, 12.0, None)
    """
    from .forecast import DEFAULT_MAX_EXAMPLES

    chosen: dict[str, Any] = {}  # floats and ints, each of its field's type
    if cfg.refined_constraints is None:
        chosen["refined_constraints"] = 6.0 if m <= 3 else 12.0
    if cfg.gap_min is None:
        chosen["gap_min"] = 3.0 if m <= 4 else 2.0
    if cfg.net_points_3d is None:
        chosen["net_points_3d"] = 13 if m <= 4 else 9 if m == 5 else 7
    if cfg.max_examples is None:
        chosen["max_examples"] = DEFAULT_MAX_EXAMPLES
    return dataclasses.replace(cfg, **chosen), sorted(chosen)
