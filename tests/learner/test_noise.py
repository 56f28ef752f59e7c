"""Noisy labels: the oracle's noise, phase 6's noise-floor test and the learner's verdict on noisy labels."""

import re

import numpy as np
import pytest

from learner import LayerOracle, learn, random_layer
from learner.cli import main
from learner.io import load_examples
from learner.metrics import match_heads
from learner.phases import NoiseFloor, noise_floor
from learner.phases.search import refit


class TestOracleNoise:
    def test_zero_noise_is_the_exact_oracle(self):
        """noise=0 draws nothing more: the streams are those of an oracle without the option."""
        layer = random_layer(2, 6, rng=0)
        a, b = LayerOracle(layer, 2, rng=3), LayerOracle(layer, 2, noise=0.0, rng=3)
        for x, y in zip(a.draw(50), b.draw(50), strict=True):
            np.testing.assert_array_equal(x, y)
        (ba,), (bb,) = list(a.batches([40])), list(b.batches([40]))
        for x, y in zip(ba.examples(), bb.examples(), strict=True):
            np.testing.assert_array_equal(x, y)

    @pytest.mark.parametrize("way", ["draw", "batches"])
    def test_noise_has_the_stated_level_on_the_same_inputs(self, way):
        layer, sigma = random_layer(2, 6, rng=0), 0.05
        exact, noisy = LayerOracle(layer, 2, rng=3), LayerOracle(layer, 2, noise=sigma, rng=3)
        if way == "draw":
            (X0, Y0), (X1, Y1) = exact.draw(4000), noisy.draw(4000)
        else:
            (X0, Y0), (X1, Y1) = (next(o.batches([4000])).examples() for o in (exact, noisy))
        np.testing.assert_array_equal(X0, X1)  # the noise is drawn after the inputs
        xi = Y1 - Y0
        # 48,000 entries: the sample sd is within 1 % of σ with probability ~1 - 1e-5 (sd of s/σ is 0.32 %).
        assert abs(xi.std() / sigma - 1) < 0.015
        assert abs(xi.mean()) < 4 * sigma / np.sqrt(xi.size)

    def test_batches_are_reproducible_and_differ_from_batch_to_batch(self):
        layer = random_layer(2, 6, rng=0)
        one = [b.examples()[1] for b in LayerOracle(layer, 2, noise=0.1, rng=3).batches([30, 30])]
        two = [b.examples()[1] for b in LayerOracle(layer, 2, noise=0.1, rng=3).batches([30, 30])]
        np.testing.assert_array_equal(one[0], two[0])
        np.testing.assert_array_equal(one[1], two[1])
        assert not np.allclose(one[0], one[1])

    @pytest.mark.parametrize("bad", [-1e-3, float("nan"), float("inf"), "0.1"])
    def test_bad_noise_is_refused_naming_it(self, bad):
        with pytest.raises((ValueError, TypeError), match="noise"):
            LayerOracle(random_layer(1, 6, rng=0), 2, noise=bad)

    def test_sample_writes_noisy_labels(self, tmp_path):
        paths = [tmp_path / f"{name}.npz" for name in ("exact", "noisy")]
        for path, noise in zip(paths, ("0", "0.01"), strict=True):
            assert main(["sample", "--m", "2", "--d", "6", "--k", "2", "--seed", "4", "--noise", noise,
                         "--n-samples", "2000", "--examples", str(path)]) == 0
        (X0, Y0), (X1, Y1) = (load_examples(p)[:2] for p in paths)
        np.testing.assert_array_equal(X0, X1)
        assert abs((Y1 - Y0).std() / 0.01 - 1) < 0.03  # 24,000 entries: sd of s/σ is 0.5 %


def _fit(truth, m, n, noise, seed, start=None):
    """A layer of ``m`` heads fitted by variable projection to ``n`` noisy examples of ``truth``, and held-out ones."""
    oracle = LayerOracle(truth, 2, noise=noise, rng=seed)
    X, Y = oracle.draw(n)
    Xh, Yh = oracle.draw(2000)
    theta0 = truth.thetas[:m] if start is None else start
    return refit(theta0, X, Y), X, Y, Xh, Yh


class TestNoiseFloor:
    """The test itself on fits made here (a few residuals per parameter, as phase 6's refinement)."""

    @pytest.mark.parametrize("sigma", [1e-6, 1e-3, 1e-1])
    def test_the_right_layer_is_at_the_noise_floor(self, sigma):
        truth = random_layer(2, 6, rng=1)
        layer, X, Y, Xh, Yh = _fit(truth, 2, 72, sigma, seed=2)
        floor = noise_floor(layer, X, Y, Xh, Yh)
        assert isinstance(floor, NoiseFloor) and floor.consistent, floor.describe()
        # σ̂ from 72·12 - 144 = 720 degrees of freedom: sd of σ̂/σ is 2.6 %; 15 % is > 5 sd.
        assert abs(floor.sigma / sigma - 1) < 0.15

    @pytest.mark.parametrize("sigma", [0.0, 1e-3])
    def test_control_too_few_heads_is_not_noise(self, sigma):
        """Negative control: one head fitted to a two-head layer leaves a residual that is not noise."""
        truth = random_layer(2, 6, rng=1)
        layer, X, Y, Xh, Yh = _fit(truth, 1, 72, sigma, seed=2)
        floor = noise_floor(layer, X, Y, Xh, Yh)
        assert not floor.consistent, floor.describe()

    def test_expected_parameter_error_matches_the_measured_one(self):
        """Over 8 noise draws the measured parameter error is within 3× of the Jacobian's expectation, and the
        median ratio within 2× (a wrong covariance — e.g. forgetting the W block — is off by more)."""
        truth = random_layer(2, 6, rng=1)
        ratios = []
        for seed in range(8):
            layer, X, Y, Xh, Yh = _fit(truth, 2, 72, 1e-3, seed=seed)
            floor = noise_floor(layer, X, Y, Xh, Yh)
            ratios.append(match_heads(truth, layer).max_error / floor.expected_param_error)
        assert all(1 / 3 <= r <= 3 for r in ratios), ratios
        assert 0.5 <= np.median(ratios) <= 2, ratios


def _assert_noise_success(result, truth, sigma):
    assert result.success, result.message
    assert "fit to the noise floor" in result.message or sigma < 1e-5, result.message
    assert abs(result.noise / sigma - 1) < 0.25, (result.noise, sigma)
    ratio = match_heads(truth, result.layer).max_error / result.expected_param_error
    assert 1 / 3 <= ratio <= 3, (ratio, result.message)


class TestLearnOnNoisyLabels:
    @pytest.mark.slow  # a whole run end to end; the rules it meets have their own default-tier tests
    def test_a_fit_to_the_noise_floor_is_a_success(self):
        """(2, 8, 2) at σ = 1e-3: a fit to the noise floor is a success, not "did not reach the planted layer"."""
        truth = random_layer(2, 8, rng=7)
        result = learn(LayerOracle(truth, 2, noise=1e-3, rng=1), m=2, truth=truth, progress=False)
        _assert_noise_success(result, truth, 1e-3)
        assert result.to_dict()["noise"] == result.noise
        assert "label noise σ̂" in result.report()

    @pytest.mark.slow
    @pytest.mark.parametrize("sigma", [1e-6, 1e-4, 1e-2])
    def test_noise_levels(self, sigma):
        truth = random_layer(2, 8, rng=7)
        result = learn(LayerOracle(truth, 2, noise=sigma, rng=1), m=2, truth=truth, progress=False)
        _assert_noise_success(result, truth, sigma)

    def test_control_exact_labels_report_no_noise_floor(self):
        """σ = 0: the verdict and message are the exact ones; the residual's σ̂ is float64 rounding."""
        truth = random_layer(2, 8, rng=7)
        result = learn(LayerOracle(truth, 2, rng=1), m=2, truth=truth, progress=False)
        assert result.success and "noise" not in result.message
        assert result.expected_param_error is None and result.noise < 1e-12

    @pytest.mark.slow
    def test_control_too_few_heads_on_noisy_labels_fail(self):
        truth = random_layer(2, 8, rng=7)
        result = learn(LayerOracle(truth, 2, noise=1e-3, rng=1), m=1, truth=truth, progress=False)
        assert not result.success and "not label noise alone" in result.message


@pytest.mark.slow
class TestMisspecifiedM:
    """m given wrong for the two-head layer of (2, 12, 2) (random_layer(rng=7))."""

    def test_too_many_heads_are_reported_redundant(self):
        truth = random_layer(2, 12, rng=7)
        result = learn(LayerOracle(truth, 2, rng=1), m=3, truth=truth, progress=False)
        assert result.success and result.m == 2 and result.layer.m == 2, result.message
        # The third head lands on a true head's Θ (a duplicate, merged), not beside the others with W ≈ 0 (an empty
        # head). The seeds fix it: the layer's (7), the oracle's (1) and phase 6's search_seed (0).
        assert re.match(r"m = 3 was given, but the data show 2 heads: head \d duplicates head \d \(", result.message)
        assert "is empty" not in result.message
        redundant = result.diagnostics["redundant_heads"]
        assert redundant["heads_kept"] == 2 and len(redundant["notes"]) == 1
        assert result.errors["param_error"] < 1e-10

    def test_too_few_heads_say_the_residual_shows_more(self):
        truth = random_layer(2, 12, rng=7)
        result = learn(LayerOracle(truth, 2, rng=1), m=1, truth=truth, progress=False)
        assert not result.success and "the residual shows more heads: with m = 2" in result.message
        assert result.diagnostics["6_search"]["more_heads_probe"]["reaches_floor"] is True

    def test_control_right_m_has_no_probe(self):
        truth = random_layer(2, 12, rng=7)
        result = learn(LayerOracle(truth, 2, rng=1), m=2, truth=truth, progress=False)
        assert result.success and "more_heads_probe" not in result.diagnostics["6_search"]
        assert "redundant_heads" not in result.diagnostics
