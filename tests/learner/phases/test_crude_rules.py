"""Phase 1's stopping statistic against a direct computation, and its arguments at their limits."""

import numpy as np
import pytest

from learner import random_layer
from learner.oracle import LayerOracle
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
        est = crude_sum_w(self._oracle(), n_samples=1, batch=1)
        assert est.n_examples == 1
        est = crude_sum_w(self._oracle(), n_samples=4, batch=2, se_target=0.5, first_batch=1)
        assert 1 <= est.n_examples <= 4

    @pytest.mark.parametrize(("name", "value"), [("n_samples", 0), ("n_samples", 2.5), ("batch", 2.5),
                                                  ("se_target", -1.0), ("first_batch", 0), ("first_batch", 1.5)])
    def test_bad_argument_is_named(self, name, value):
        kwargs = {"n_samples": 10, "batch": 5, "se_target": 0.5, "first_batch": 2, name: value}
        with pytest.raises((TypeError, ValueError), match=name):
            crude_sum_w(self._oracle(), **kwargs)
