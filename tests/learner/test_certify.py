"""Tests for learner.certify: the empirical Bernstein bound and the certified relative error.

The bound is checked three ways: against the inequality written out by hand (an independent formula), by its
coverage over many seeds (at least 1 − δ, with a binomial acceptance that holds for any seed), and by a negative
control — the same bound without its variance term — whose coverage must fall short.
"""

import math
import statistics

import numpy as np
import pytest
from scipy import stats

from learner import AttentionLayer, random_layer, sample_inputs
from learner.certify import CERTIFY_CALIBRATION, ErrorCertificate, bernstein_bound, certify_error

DELTA = 0.05


def _by_hand(values, delta, upper=True):
    """Maurer and Pontil's Theorem 4 written out with the standard library (no numpy)."""
    n = len(values)
    mean = statistics.fmean(values)
    log_term = math.log(2 / delta)
    margin = math.sqrt(2 * statistics.variance(values) * log_term / n) + 7 * log_term / (3 * (n - 1))
    return min(1.0, mean + margin) if upper else max(0.0, mean - margin)


def _misses_allowed(trials, delta):
    """The most misses a bound of coverage >= 1 − delta shows in ``trials`` independent trials, except with
    probability 1e-3 (binomial upper quantile): a test that fails for any seed only 1 time in 1000."""
    return int(stats.binom.ppf(1 - 1e-3, trials, delta))


class TestBernsteinBound:
    @pytest.mark.parametrize("values", [[0.0, 1.0] * 50, [0.2, 0.25, 0.3, 0.9, 0.0, 0.5], [0.5, 0.5, 0.5]],
                             ids=["coin", "spread", "constant"])
    @pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
    def test_matches_the_inequality_written_out(self, values, upper):
        # the same float operations in another order: agreement to a few ulps
        assert bernstein_bound(values, delta=0.1, upper=upper) == pytest.approx(_by_hand(values, 0.1, upper),
                                                                                 rel=1e-12, abs=1e-15)

    def test_without_the_variance_term_only_the_range_term_is_left(self):
        z = [0.0, 1.0] * 50
        assert bernstein_bound(z, delta=0.05, variance=False) == pytest.approx(0.5 + 7 * math.log(40) / (3 * 99))

    def test_is_clipped_to_the_unit_interval(self):
        assert bernstein_bound([1.0, 1.0], delta=0.5) == 1.0
        assert bernstein_bound([0.0, 0.0], delta=0.5, upper=False) == 0.0

    def test_covers_a_bernoulli_mean(self):
        """At δ = 0.05 the upper bound lies below p = 0.3 in at most the binomial allowance of 400 trials."""
        rng = np.random.default_rng(7)
        p, n, trials = 0.3, 200, 400
        draws = rng.random((trials, n)) < p
        misses = sum(bernstein_bound(row.astype(float), delta=DELTA) < p for row in draws)
        assert misses <= _misses_allowed(trials, DELTA)

    def test_control_without_the_variance_term_undercovers(self):
        """The negative control: at n = 2000 a fair coin's mean has standard deviation 0.011, the range term
        alone is 0.0043, so the bound misses about a third of the time: far beyond δ."""
        rng = np.random.default_rng(8)
        trials, n = 200, 2000
        draws = (rng.random((trials, n)) < 0.5).astype(float)
        misses = sum(bernstein_bound(row, delta=DELTA, variance=False) < 0.5 for row in draws)
        assert misses > _misses_allowed(trials, DELTA)

    @pytest.mark.parametrize(("values", "delta", "match"), [
        ([0.5], 0.1, "at least 2 draws; got 1"),
        ([0.5, 1.5], 0.1, r"must lie in \[0, 1\]; got values in \[0.5, 1.5\]"),
        ([-0.1, 0.5], 0.1, r"must lie in \[0, 1\]"),
        ([0.5, 0.5], 1.0, "delta"),
        ([0.5, 0.5], 0.0, "delta"),
    ], ids=["one draw", "above one", "negative", "delta one", "delta zero"])
    def test_bad_input_is_refused_by_name(self, values, delta, match):
        with pytest.raises(ValueError, match=match):
            bernstein_bound(values, delta=delta)


def _perturbed(seed=5):
    truth = random_layer(2, 6, logit_scale=1.0, rng=0)
    rng = np.random.default_rng(seed)
    hat = AttentionLayer(truth.thetas + 0.05 * rng.standard_normal(truth.thetas.shape),
                         truth.ws + 0.01 * rng.standard_normal(truth.ws.shape))
    return truth, hat


def _population_error(truth, hat, distribution="boolean"):
    """The relative error on 400,000 fresh examples: its own sampling error is about 0.2 % (measured spread of
    the per-example ratio), far inside the bound's 8 % margin at the sizes below."""
    X = sample_inputs(400_000, 2, 6, distribution=distribution, rng=99)
    Y = truth(X)
    return float(np.sum((hat(X) - Y) ** 2) / np.sum(Y**2))


class TestCertifyError:
    def test_the_clip_comes_from_the_calibration_part_only(self):
        """An error planted in the measurement part, far above every calibration error, is counted at the clip:
        a clip taken over all examples (a calibration that overlaps the measurement) would count it whole."""
        truth, hat = _perturbed()
        X = sample_inputs(400, 2, 6, rng=3)
        Y = truth(X)
        Y[-1] += 50.0
        cert = certify_error(hat, X, Y, delta=0.1)
        e = np.sum((hat(X) - Y) ** 2, axis=(1, 2))
        s = np.sum(Y**2, axis=(1, 2))
        n_cal = round(CERTIFY_CALIBRATION * 400)
        assert cert.clip == e[:n_cal].max() < e[-1]
        c_s = s[:n_cal].max()
        upper = cert.clip * _by_hand(list(np.minimum(e[n_cal:], cert.clip) / cert.clip), 0.1 / 3)
        lower = c_s * _by_hand(list(np.minimum(s[n_cal:], c_s) / c_s), 0.1 / 3, upper=False)
        assert cert.bound == pytest.approx(upper / lower, rel=1e-10)
        assert cert.tail == pytest.approx(math.log(30) / n_cal)
        assert (cert.n_calibration, cert.n_measured) == (n_cal, 400 - n_cal)

    def test_a_given_clip_makes_the_tail_zero_and_halves_delta(self):
        truth, hat = _perturbed()
        X = sample_inputs(400, 2, 6, rng=3)
        Y = truth(X)
        e = np.sum((hat(X) - Y) ** 2, axis=(1, 2))
        cert = certify_error(hat, X, Y, delta=0.1, clip=2 * e.max())
        assert (cert.tail, cert.clip_given, cert.clip) == (0.0, True, 2 * e.max())
        n_cal = round(CERTIFY_CALIBRATION * 400)
        s = np.sum(Y**2, axis=(1, 2))
        c_s = s[:n_cal].max()
        upper = cert.clip * _by_hand(list(e[n_cal:] / cert.clip), 0.05)
        lower = c_s * _by_hand(list(np.minimum(s[n_cal:], c_s) / c_s), 0.05, upper=False)
        assert cert.bound == pytest.approx(upper / lower, rel=1e-10)
        assert "as given" in cert.statement()

    def test_an_exact_layer_is_certified_at_zero(self):
        truth, _ = _perturbed()
        X = sample_inputs(100, 2, 6, rng=3)
        cert = certify_error(truth, X, truth(X))
        assert (cert.bound, cert.estimate) == (0.0, 0.0)

    def test_too_few_examples_to_bound_the_labels_certify_nothing(self):
        truth, hat = _perturbed()
        X = sample_inputs(8, 2, 6, rng=3)
        assert certify_error(hat, X, truth(X)).bound == math.inf

    @pytest.mark.parametrize(("n", "kwargs", "match"), [
        (3, {}, "at least 2 each; got n=3 with calibration=0.25"),
        (100, {"calibration": 1.0}, "calibration"),
        (100, {"delta": 0.0}, "delta"),
        (100, {"clip": -1.0}, "clip"),
    ], ids=["too few", "calibration one", "delta zero", "negative clip"])
    def test_bad_input_is_refused_by_name(self, n, kwargs, match):
        truth, hat = _perturbed()
        X = sample_inputs(n, 2, 6, rng=3)
        with pytest.raises(ValueError, match=match):
            certify_error(hat, X, truth(X), **kwargs)

    def test_shapes_must_agree(self):
        truth, hat = _perturbed()
        X = sample_inputs(10, 2, 6, rng=3)
        with pytest.raises(ValueError, match=r"same shape; got X.shape=\(10, 2, 6\), Y.shape=\(9, 2, 6\)"):
            certify_error(hat, X, truth(X)[:9])

    def test_the_certificate_is_a_json_record(self):
        truth, hat = _perturbed()
        X = sample_inputs(400, 2, 6, rng=3)
        cert = certify_error(hat, X, truth(X))
        assert isinstance(cert, ErrorCertificate)
        assert set(cert.to_dict()) == {"bound", "estimate", "delta", "tail", "clip", "n_calibration",
                                       "n_measured", "clip_given"}
        assert "probability at most" in cert.statement()


class TestCoverage:
    """The certificate over many seeds against the error on 400,000 fresh examples."""

    def test_covers_at_least_one_minus_delta_and_is_within_a_stated_factor(self):
        """200 certificates of 20,000 examples each (Boolean inputs, m = 2, d = 6): misses within the binomial
        allowance of δ = 0.05, and every bound at most 1.2 times the error (measured: at most 1.13)."""
        truth, hat = _perturbed()
        error = _population_error(truth, hat)
        ratios = []
        for seed in range(200):
            X = sample_inputs(20_000, 2, 6, rng=1000 + seed)
            ratios.append(certify_error(hat, X, truth(X), delta=DELTA).bound / error)
        ratios = np.array(ratios)
        assert np.sum(ratios < 1) <= _misses_allowed(200, DELTA)
        assert ratios.max() <= 1.2

    def test_control_without_the_variance_term_fails_coverage(self):
        """The negative control: the same certificate without the Bernstein variance term. At 160,000 examples
        the range term alone is far below the estimate's spread, so the bound falls under the error about half
        the time (measured: 29 of 60) — beyond what a 95 % bound allows in 40 trials."""
        truth, hat = _perturbed()
        error = _population_error(truth, hat)
        misses = 0
        for seed in range(40):
            X = sample_inputs(160_000, 2, 6, rng=2000 + seed)
            misses += certify_error(hat, X, truth(X), delta=DELTA, variance=False).bound < error
        assert misses > _misses_allowed(40, DELTA)


class TestInLearn:
    """``learn`` certifies the layer it found from fresh examples, or says why it did not."""

    def test_a_fixed_set_too_small_for_the_certificate_is_said_so(self):
        from learner import ArraySource, LayerOracle, learn

        truth = random_layer(1, 8, rng=0)
        X, Y = LayerOracle(truth, 2, rng=1).draw(61_000)  # the phases take 59,000 of them (measured)
        result = learn(ArraySource(X, Y), m=1, rng=2, progress=False)
        assert result.success and result.error_bound is None and result.examples_drawn == 59_000
        assert result.diagnostics["certificate"]["skipped"].startswith("no fresh examples for the certificate")

    def test_certify_examples_zero_certifies_nothing(self):
        from learner import LayerOracle, LearnConfig, learn

        truth = random_layer(1, 8, rng=0)
        result = learn(LayerOracle(truth, 2, rng=1), m=1, rng=2, progress=False,
                       config=LearnConfig(certify_examples=0))
        assert result.error_bound is None and result.diagnostics["certificate"] == {"skipped": "certify_examples=0"}
        assert result.examples_drawn == 59_000  # 4,000 fewer than the run that certifies (learn's docstring)


def test_a_clip_below_one_still_bounds_the_mean():
    """Errors all below 1 (clip 0.5): the upper bound on the clipped mean is at least the mean itself, not 0."""
    from learner.certify import _clipped_mean_bound

    values = np.full(200, 0.25)
    assert _clipped_mean_bound(values, 0.5, 0.05, True, True) >= 0.25
    assert _clipped_mean_bound(values, 0.0, 0.05, True, True) == 0.0  # nothing to bound
