"""Tuning knobs of the learner, with the reason for each default (all ours)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LearnConfig:
    """Thresholds, budgets and batch sizes of the six phases.

    The paper fixes these only up to ``poly(d, k, 1/ε)`` factors; every
    default here is ours, chosen from measurements on planted layers
    (``random_layer``, logit scale 3, d = 8..12) and documented beside it.
    """

    #: Examples streamed per batch (memory: a few times batch·k·d floats).
    batch: int = 100_000
    #: Phase 1: examples for the one-step estimate.
    n_crude: int = 400_000
    #: Phases 2/4: relative residual below which a row's fit certifies agreement.
    #: Phase 2 works with a crude ΣW, so it must be loose; phase 4 is tighter.
    crude_tol: float = 0.05
    refined_tol: float = 0.015
    #: Tokens whose fitted weight is at least this give constraints (ln of small
    #: weights is noisy).
    min_weight: float = 0.1
    #: Constraints to collect, as a multiple of d² (the unknowns).
    crude_constraints: float = 3.0
    refined_constraints: float = 6.0
    #: Example budget of each refined sculpting round (phase 4).
    max_examples: int = 20_000_000
    #: Phase 2's budget: with the crude ΣW its constraints are rough (measured
    #: median errors ~1 at logit scale 3), so they only seed phase 3's Θ*.
    crude_max_examples: int = 2_000_000
    #: Phase 3: examples, regression rounds, and the fraction of rows kept.
    n_refine: int = 400_000
    refine_rounds: int = 8
    refine_keep: float = 0.02
    #: Rounds of phases 3 → 4 (the refined hull gives a better Θ*, hence ΣW).
    outer_rounds: int = 2
    #: Phase 5: a singular-value ratio at least this marks the hull's dimension.
    gap_min: float = 3.0
    #: Largest m considered when m is estimated.
    max_m: int = 6
    #: Phase 6: net radius (multiple of ‖Θ*‖_F), points per axis, examples.
    net_radius: float = 2.0
    net_points: int = 41
    net_points_3d: int = 13
    n_search: int = 2000
    keep_tuples: int = 20
    #: Joint refinement: residuals per parameter (sets the examples used), iteration cap.
    refine_examples_per_param: float = 8.0
    max_nfev: int = 200
    #: Success: held-out relative error of F at most this.
    success_tol: float = 1e-10
