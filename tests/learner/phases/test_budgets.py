"""The data-driven budgets: growing batches, the standard-error rules of phases 1 and 3, and
phase 4's hull stability rule — each against an exact or simulated reference, each with a control."""

import dataclasses

import numpy as np
import pytest

from learner import LearnConfig, random_layer, sample_inputs
from learner.oracle import ArraySource, LayerOracle, batch_sizes, growing_sizes
from learner.phases import crude_sum_w, estimate_span, refine_sum_w, refined_sculpt
from learner.phases.crude_sum import partial_sum, relative_standard_error
from learner.phases.refine_sum import regression_se
from learner.phases.sculpt import hull_change


class TestGrowingSizes:
    def test_doubles_up_to_the_batch_and_covers_the_total(self):
        assert list(growing_sizes(100, 40, 5)) == [5, 10, 20, 40, 25]
        assert sum(growing_sizes(1_234_567, 100_000, 5_000)) == 1_234_567

    def test_without_first_it_is_the_fixed_schedule(self):
        """Control: ``first=None`` (the fixed budgets) and ``first >= batch`` give batch_sizes's batches."""
        assert list(growing_sizes(250, 100)) == batch_sizes(250, 100) == list(growing_sizes(250, 100, 500))


class TestPhaseOneStandardError:
    def test_matches_the_per_example_covariance(self):
        """The streamed figure (sums and sums of squares) equals the standard error computed from every
        example's matrix ``X_nᵀ J Y_n`` (exact reference, float64 rounding)."""
        truth = random_layer(2, 6, rng=0)
        X = sample_inputs(3000, 3, 6, rng=1)
        Y = truth(X)
        mats = np.einsum("nc,ne->nce", X.sum(axis=1), Y.sum(axis=1)).reshape(len(X), -1)
        mean = mats.mean(axis=0)
        direct = np.sqrt(np.trace(np.cov(mats, rowvar=False)) / len(X)) / np.linalg.norm(mean)

        class Batch:
            def examples(self):
                return X, Y

        total, sq, n = partial_sum(Batch())
        assert n == 3000
        assert relative_standard_error(total, sq, n) == pytest.approx(direct, rel=1e-9)

    def test_stops_at_the_target_and_the_control_runs_to_the_cap(self):
        truth = random_layer(2, 8, rng=0)
        est = crude_sum_w(LayerOracle(truth, 2, rng=1),
                          LearnConfig(n_crude=400_000, batch=100_000, crude_se=0.025, first_batch=5_000))
        assert est.details["stopped"] == "standard error"
        assert est.details["standard_error"] <= 0.025 and est.n_examples < 100_000
        # Control: a target no sample reaches stops only at the cap, having drawn it all.
        capped = crude_sum_w(LayerOracle(truth, 2, rng=1),
                             LearnConfig(n_crude=40_000, batch=10_000, crude_se=1e-6, first_batch=5_000))
        assert capped.details["stopped"] == "cap" and capped.n_examples == 40_000
        assert capped.details["standard_error"] > 1e-6


class TestPhaseThreeStandardError:
    def test_agrees_with_the_spread_of_repeated_fits(self):
        """On a linear model with Gaussian noise the formula's SE_F is the standard deviation of the fitted
        matrix over repeated draws (simulated reference: 400 fits; 10 % covers its sampling error, ~3.5 %)."""
        rng = np.random.default_rng(0)
        p, q, n, sigma = 5, 4, 200, 0.3
        W = rng.standard_normal((p, q))
        Z = rng.standard_normal((n, p))
        fits = []
        for _ in range(400):
            y = Z @ W + sigma * rng.standard_normal((n, q))
            fits.append(np.linalg.lstsq(Z, y, rcond=None)[0])
        spread = np.sqrt(np.mean(np.sum((np.array(fits) - W) ** 2, axis=(1, 2))))
        y = Z @ W + sigma * rng.standard_normal((n, q))
        coef = np.linalg.lstsq(Z, y, rcond=None)[0]
        assert regression_se(Z, y, coef) * np.linalg.norm(coef) == pytest.approx(spread, rel=0.1)
        # Control: exact labels have no scatter, and a fit without a degree of freedom has no standard error.
        exact = Z @ W
        assert regression_se(Z, exact, np.linalg.lstsq(Z, exact, rcond=None)[0]) < 1e-12
        assert regression_se(Z[:p], exact[:p], W) == float("inf")

    def test_doubles_until_the_target_and_records_the_stages(self):
        truth = random_layer(2, 12, logit_scale=1, rng=7)
        oracle = LayerOracle(truth, 2, rng=1)
        w0 = truth.ws.sum(axis=0) * 1.01
        est = refine_sum_w(oracle, w0, None, LearnConfig(n_refine=160_000, refine_se=0.005, refine_first=10_000),
                           truth=truth)
        stages = est.details["stages"]
        assert est.details["stopped"] == "standard error" and stages[-1]["standard_error"] <= 0.005
        assert [s["examples"] for s in stages] == [10_000 * 2**i for i in range(len(stages))]
        assert est.n_examples == stages[-1]["examples"] == oracle.n_drawn
        # Control: an unreachable target doubles to the cap.
        capped = refine_sum_w(LayerOracle(truth, 2, rng=1), w0, None,
                              LearnConfig(n_refine=40_000, refine_se=1e-9, refine_first=10_000))
        assert capped.details["stopped"] == "cap" and capped.n_examples == 40_000
        assert [s["examples"] for s in capped.details["stages"]] == [10_000, 20_000, 40_000]


class TestHullStability:
    def test_hull_change(self):
        truth = random_layer(3, 6, rng=0)
        span = dataclasses.make_dataclass("Hull", ["theta_star", "directions"])
        T = truth.thetas.reshape(3, -1)
        V = np.linalg.qr((T[1:] - T[0]).T)[0]
        a = span(truth.thetas[0], V)
        assert hull_change(a, a) < 1e-14  # rounding of an orthonormal basis (~1e-16)
        # A rotated basis of the same directions is the same hull; a tilted one is not.
        assert hull_change(a, span(truth.thetas[0], V @ np.array([[0.6, -0.8], [0.8, 0.6]]))) < 1e-12
        # One direction turned by 0.1 rad towards a vector outside the hull: the change is sin(0.1) exactly.
        w = np.random.default_rng(2).standard_normal(V.shape[0])
        w -= V @ (V.T @ w)
        tilt = V.copy()
        tilt[:, 0] = np.cos(0.1) * V[:, 0] + np.sin(0.1) * w / np.linalg.norm(w)
        assert hull_change(a, span(truth.thetas[0], tilt)) == pytest.approx(np.sin(0.1), rel=1e-12)
        # Θ*'s relative move counts too.
        assert hull_change(a, span(1.02 * truth.thetas[0], V)) == pytest.approx(0.02 / 1.02, rel=1e-12)
        assert hull_change(a, span(truth.thetas[0], V[:, :1])) == float("inf")

    #: Phase 4 at tolerance 0.015 without a pilot, up to 2·10⁶ examples in batches of at most 20,000.
    FIELDS = {"refined_tol": 0.015, "min_weight": 0.02, "max_examples": 2_000_000, "batch": 20_000}

    def _sculpt(self, truth, stability, target):
        """The stability rule at ``stability``, batches of 5,000 doubling to 20,000, ``target`` constraints at most
        (``int(c·d²)`` at d = 8 is ``target``), checkpoints' hulls of m = 2 with gap_min 3 and plan_m 6."""
        cfg = LearnConfig(**self.FIELDS, first_batch=5_000, hull_stability=stability, gap_min=3.0,
                          refined_constraints=(target + 0.5) / 64)
        return refined_sculpt(LayerOracle(truth, 2, rng=5), truth.ws.sum(axis=0), cfg, m=2, plan_m=6, pilot=False)

    def _without_the_rule(self, truth, target):
        """The same examples as :meth:`_sculpt` streams (its oracle's batches of 5,000, 10,000, 20,000, …, made
        fixed arrays), sculpted without the stability rule (fixed budgets, batches of 20,000 of them)."""
        sizes = [5_000, 10_000, 20_000, 20_000, 20_000]
        assert sizes == list(growing_sizes(sum(sizes), 20_000, 5_000))
        X, Y = (np.concatenate(a) for a in zip(*(b.examples() for b in LayerOracle(truth, 2, rng=5).batches(sizes)),
                                                strict=True))
        cfg = LearnConfig(adaptive=False, **self.FIELDS, refined_constraints=(target + 0.5) / 64)
        return refined_sculpt(ArraySource(X, Y), truth.ws.sum(axis=0), cfg, m=2, pilot=False)

    def test_stops_on_a_stable_hull_with_a_prefix_of_the_stream(self):
        """The stable set is the first ``c`` constraints a longer stream certifies (the same examples), at a
        checkpoint whose hull moved at most the tolerance; its hull is as good as the longer stream's."""
        truth = random_layer(2, 8, logit_scale=1, rng=3)
        d2 = 64
        stable = self._sculpt(truth, 0.05, 12 * d2)
        assert stable.stopped == "stable" and stable.count < 12 * d2
        last = stable.checkpoints[-1]
        assert last["constraints"] == stable.count and last["change"] <= 0.05
        assert stable.constraints_certified >= stable.count and stable.examples_at_target <= stable.n_examples
        longer = self._without_the_rule(truth, 12 * d2)
        assert longer.stopped == "target" and longer.count >= 12 * d2
        np.testing.assert_array_equal(stable.A, longer.A[:stable.count])
        np.testing.assert_array_equal(stable.b, longer.b[:stable.count])
        hull = estimate_span(stable, m=2, truth=truth)
        assert hull.hull_distance < 0.1
        # Control: a tolerance no hull meets runs to the cap, and phase 5 gets the cap, not every constraint.
        strict = self._sculpt(truth, 1e-9, 3 * d2)
        assert strict.stopped == "target" and strict.count == 3 * d2 < strict.constraints_certified
        assert all(c["change"] is None or c["change"] > 1e-9 for c in strict.checkpoints)
        # Checkpoints stop at the cap, even where a batch certified far more (a stable hull is never cut past it).
        assert max(c["constraints"] for c in strict.checkpoints) <= 3 * d2
        loose = self._sculpt(truth, 0.05, d2 + d2 // 2)
        assert loose.count <= d2 + d2 // 2 and max(c["constraints"] for c in loose.checkpoints) <= d2 + d2 // 2

    def test_bad_stability_is_an_error(self):
        truth = random_layer(2, 8, rng=3)
        with pytest.raises(ValueError, match="`hull_stability` must be"):
            self._sculpt(truth, -1.0, 100)
        oracle = LayerOracle(truth, 2, rng=5)
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got dict"):
            refined_sculpt(oracle, truth.ws.sum(axis=0), {"hull_stability": 0.05}, m=2)
        assert oracle.n_drawn == 0
