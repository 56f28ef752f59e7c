"""Phase 1's stopping statistic against a direct computation, and its arguments at their limits."""

import time

import numpy as np
import pytest

from learner import LearnConfig, random_layer
from learner.oracle import ArraySource, LayerOracle
from learner.parallel import Workers
from learner.phases import crude_sum as crude_module
from learner.phases import crude_sum_w
from learner.phases.crude_sum import relative_standard_error


def _direct(mats):
    """SE_F/‖mean‖_F of the mean: the unbiased per-entry variances, summed, over n, against the squared mean."""
    mats = np.asarray(mats)
    n = len(mats)
    mean = mats.mean(axis=0)
    var = mats.var(axis=0, ddof=1).sum()
    return np.sqrt(var / n / np.sum(mean**2))


class TestRelativeStandardError:
    @pytest.mark.parametrize("n", [2, 3, 50])
    @pytest.mark.parametrize("scale", [1e-2, 1.0])
    def test_against_numpy(self, n, scale):
        # n = 2 is the smallest sample with a variance; small matrices (scale 1e-2) keep the variance below 1.
        rng = np.random.default_rng(n)
        mats = scale * (rng.normal(size=(n, 3, 3)) + 1.0)
        got = relative_standard_error(mats.sum(axis=0), float(np.sum(mats**2)), n)
        assert got == pytest.approx(_direct(mats), rel=1e-10)

    def test_undefined_cases_are_infinite(self):
        one = np.ones((2, 2))
        assert relative_standard_error(one, 4.0, 1) == float("inf")  # one example: no variance
        assert relative_standard_error(np.zeros((2, 2)), 3.0, 5) == float("inf")  # zero mean

    def test_equal_matrices_have_zero_error(self):
        mats = np.stack([np.full((2, 2), 0.5)] * 4)
        assert relative_standard_error(mats.sum(axis=0), float(np.sum(mats**2)), 4) == 0.0


class TestCrudeSumArguments:
    def _oracle(self):
        return LayerOracle(random_layer(1, 3, logit_scale=1.0, rng=0), 2, rng=1)

    def test_smallest_sizes_are_accepted(self):
        est = crude_sum_w(self._oracle(), LearnConfig(adaptive=False, n_crude=1, batch=1))
        assert est.n_examples == 1
        est = crude_sum_w(self._oracle(), LearnConfig(n_crude=4, batch=2, crude_se=0.5, first_batch=1))
        assert 1 <= est.n_examples <= 4

    @pytest.mark.parametrize(("name", "value"), [("n_crude", 0), ("n_crude", 2.5), ("batch", 2.5),
                                                  ("crude_se", -1.0), ("first_batch", 0), ("first_batch", 1.5)])
    def test_bad_setting_is_named(self, name, value):
        kwargs = {"n_crude": 10, "batch": 5, "crude_se": 0.5, "first_batch": 2, name: value}
        with pytest.raises((TypeError, ValueError), match=name):
            crude_sum_w(self._oracle(), LearnConfig(**kwargs))

    @pytest.mark.parametrize("config", [{"n_crude": 10}, 10, "defaults"])
    def test_a_config_that_is_not_one_is_refused_before_an_example(self, config):
        oracle = self._oracle()
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got"):
            crude_sum_w(oracle, config)
        assert oracle.n_drawn == 0


def _scalars(xs, ys):
    """An ArraySource of one-token, one-dimensional examples: each example's Xᵀ J Y is the product x·y."""
    return ArraySource(np.asarray(xs, float).reshape(-1, 1, 1), np.asarray(ys, float).reshape(-1, 1, 1))


class TestCrudeSumByHand:
    def test_estimate_and_standard_error_against_direct_sums(self):
        # Ŵ = (1/k)·mean of X_nᵀ J Y_n, with J the all-ones k × k matrix; small entries keep the variance below 1.
        rng = np.random.default_rng(7)
        X, Y = 0.1 * rng.normal(size=(6, 2, 3)), 0.1 * (rng.normal(size=(6, 2, 3)) + 1.0)
        mats = np.stack([x.T @ np.ones((2, 2)) @ y for x, y in zip(X, Y, strict=True)])
        t = time.perf_counter()
        est = crude_sum_w(ArraySource(X, Y), LearnConfig(adaptive=False, n_crude=6, batch=4))
        wall = time.perf_counter() - t
        np.testing.assert_allclose(est.w_sum, mats.mean(axis=0) / 2, rtol=1e-12)
        assert est.n_examples == 6
        assert est.details["standard_error"] == pytest.approx(_direct(mats), rel=1e-10)
        assert est.details["stopped"] == "cap" and est.details["se_target"] is None
        assert isinstance(est.seconds, float) and 0.0 <= est.seconds <= wall

    def test_stops_when_the_standard_error_equals_the_target(self, monkeypatch, record_bars):
        # Products 1 and 3: mean 2, unbiased variance 2, SE = √(2/2)/2 = 0.5 exactly, so "at most 0.5" stops
        # after the first batch of 2; the next batch (products 2, 2) is never drawn.
        bars = record_bars(crude_module)
        source = _scalars([1, 3, 2, 1], [1, 1, 1, 2])
        est = crude_sum_w(source, LearnConfig(n_crude=4, batch=2, first_batch=2, crude_se=0.5))
        assert est.n_examples == 2 and source.n_drawn == 2
        assert est.details == {"standard_error": 0.5, "se_target": 0.5, "stopped": "standard error"}
        np.testing.assert_array_equal(est.w_sum, [[2.0]])
        (shown,) = bars
        assert shown.args == (4, "phase 1", "ex") and shown.done == 2 and shown.closed
        (text,) = shown.postfix
        assert "standard error" in text and text.count("0.5") == 2  # the error and its target

    def test_below_the_target_only_after_the_second_batch(self, monkeypatch, record_bars):
        # Target 0.3: after 2 examples SE = 0.5; after 4 (products 1, 3, 2, 2) the variance is 2/3 and
        # SE = √(2/3/4)/2 ≈ 0.204.
        bars = record_bars(crude_module)
        est = crude_sum_w(_scalars([1, 3, 2, 1, 5], [1, 1, 1, 2, 5]),
                          LearnConfig(n_crude=5, batch=2, first_batch=2, crude_se=0.3))
        assert est.n_examples == 4 and est.details["stopped"] == "standard error"
        assert est.details["standard_error"] == pytest.approx(np.sqrt(2 / 3 / 4) / 2, rel=1e-12)
        (shown,) = bars
        assert shown.args == (5, "phase 1", "ex") and shown.done == 4 and len(shown.postfix) == 2


class TestCrudeSumOverflow:
    def test_a_sum_that_overflows_stops_the_phase_without_a_warning(self):
        # 1e200 · 1e200 is not a float64: the first batch's sum is inf, so nothing more is drawn.
        source = _scalars([1e200, 1.0, 1.0], [1e200, 1.0, 1.0])
        est = crude_sum_w(source, LearnConfig(adaptive=False, n_crude=3, batch=1))
        assert est.n_examples == 1 and source.n_drawn == 1
        assert est.details["stopped"] == "not finite" and np.isposinf(est.w_sum).all()

    def test_squares_that_overflow_or_are_undefined_raise_no_warning(self):
        # Products 2e154 and 0 (x = 0, y = 1e200): the mean 1e154 is finite, but the sum of squared norms
        # overflows (2e154² > float64's maximum) and meets 0 · inf.
        est = crude_sum_w(_scalars([2e77, 0.0], [1e77, 1e200]), LearnConfig(adaptive=False, n_crude=2, batch=2))
        np.testing.assert_array_equal(est.w_sum, [[1e154]])
        assert est.n_examples == 2 and est.details["stopped"] == "cap"

    @pytest.mark.filterwarnings("ignore:overflow encountered in square:RuntimeWarning")
    def test_batches_whose_sum_overflows_raise_no_warning_when_added(self):
        # Two batches of one product 1e308 each: finite alone, inf together. (The first batch's standard error
        # squares a mean of 1e308 on its own; only the adding of the batches is checked here.)
        source = _scalars([1e154, 1e154, 1.0], [1e154, 1e154, 1.0])
        est = crude_sum_w(source, LearnConfig(adaptive=False, n_crude=3, batch=1))
        assert est.n_examples == 2 and est.details["stopped"] == "not finite" and np.isposinf(est.w_sum).all()


class TestCrudeSumDefaultsAndPool:
    def test_defaults_stop_after_the_first_batch_of_5_000_and_fixed_budgets_draw_400_000(self):
        # Equal products have zero standard error: the target stops the stream after its first batch.
        ones = np.ones((400_000, 1, 1))
        assert crude_sum_w(ArraySource(ones, ones)).n_examples == 5_000
        fixed = crude_sum_w(ArraySource(ones, ones), LearnConfig(adaptive=False))
        assert fixed.n_examples == 400_000 and fixed.details["se_target"] is None

    def test_a_given_pool_computes_the_batches(self):
        pool = Workers()
        est = crude_sum_w(_scalars([1, 2, 3, 4, 5], [1, 1, 1, 1, 1]), LearnConfig(adaptive=False, n_crude=5, batch=2),
                          workers=pool)
        assert est.n_examples == 5 and est.w_sum[0, 0] == 3.0
        stats = pool.stats["1_crude_sum"]
        assert (stats["batches"], stats["examples"], stats["calls"]) == (3, 5, 1)
