"""Tests for learner.instances: planted random layers."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from learner import AttentionLayer, PlantingError, assumptions, cube_expectation, random_layer, sample_inputs

# Normalising a Gaussian matrix and rescaling it costs a few roundings per entry,
# so norms come out within ~1e-15 relative; 1e-12 is generous and still exact in spirit.
RTOL_NORM = 1e-12


def _first_sample(m, d, seed, logit_scale, w_scale):
    """The construction the docstring describes, on the first draws of ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((m, d, d))
    h = rng.standard_normal((m, d, d))
    thetas = g / np.linalg.norm(g, axis=(1, 2))[:, None, None] * logit_scale
    ws = h / np.linalg.norm(h, axis=(1, 2))[:, None, None] * (w_scale * math.sqrt(d))
    return thetas, ws


class TestRandomLayer:
    @pytest.mark.parametrize(("m", "d"), [(1, 8), (2, 8), (3, 12)], ids=["m1-d8", "m2-d8", "m3-d12"])
    def test_shapes_and_assumptions(self, m, d):
        """The layer has m heads of d×d matrices and, with check=True, satisfies the assumptions."""
        layer = random_layer(m, d, rng=0)
        assert isinstance(layer, AttentionLayer)
        assert layer.thetas.shape == layer.ws.shape == (m, d, d)
        assert assumptions(layer).ok

    @pytest.mark.parametrize(
        ("logit_scale", "w_scale"), [(3.0, 1.0), (0.5, 2.0), (7.0, 0.1)], ids=["default", "small-logits", "big-logits"]
    )
    def test_norms(self, logit_scale, w_scale):
        """‖Θ_i‖_F = logit_scale and ‖W_i‖_F = w_scale·sqrt(d) for every head."""
        d = 8
        layer = random_layer(3, d, logit_scale=logit_scale, w_scale=w_scale, check=False, rng=1)
        assert_allclose(np.linalg.norm(layer.thetas, axis=(1, 2)), logit_scale, rtol=RTOL_NORM)
        assert_allclose(np.linalg.norm(layer.ws, axis=(1, 2)), w_scale * math.sqrt(d), rtol=RTOL_NORM)

    def test_reproducible_by_seed(self):
        """The same seed gives the same layer; another seed gives another layer."""
        a, b, c = random_layer(2, 8, rng=5), random_layer(2, 8, rng=5), random_layer(2, 8, rng=6)
        assert_array_equal(a.thetas, b.thetas)
        assert_array_equal(a.ws, b.ws)
        assert not np.array_equal(a.thetas, c.thetas)

    @pytest.mark.parametrize("check", ["no", "False", 0, None])
    def test_check_must_be_a_bool(self, check):
        """check="no" is refused (a truthy string would have the conditions checked although the caller said no)."""
        with pytest.raises(TypeError, match=f"`check` must be True or False; got check={check!r}"):
            random_layer(2, 8, check=check, rng=0)

    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_check_false_returns_first_sample(self, seed):
        """check=False returns the first draw (Θ's then W's from the generator), even when it fails the checks."""
        m, d = 2, 4  # at d = 4 many first draws fail the assumptions (seeds 0 and 2 do)
        layer = random_layer(m, d, logit_scale=2.0, w_scale=0.5, check=False, rng=seed)
        thetas, ws = _first_sample(m, d, seed, 2.0, 0.5)
        # Same draws and the same operations up to association: a couple of roundings.
        assert_allclose(layer.thetas, thetas, rtol=RTOL_NORM)
        assert_allclose(layer.ws, ws, rtol=RTOL_NORM)

    def test_check_true_resamples(self):
        """With check=True a failing first draw is rejected and a later, passing one returned."""
        first = random_layer(2, 4, check=False, rng=0)
        assert not assumptions(first).ok  # precondition: seed 0's first draw at d=4 fails
        layer = random_layer(2, 4, rng=0)
        assert assumptions(layer).ok
        assert not np.array_equal(layer.thetas, first.thetas)

    def test_zero_logit_scale_without_check(self):
        """logit_scale=0 is allowed with check=False: uniform attention, W's still drawn."""
        layer = random_layer(2, 8, logit_scale=0.0, check=False, rng=0)
        assert_array_equal(layer.thetas, 0.0)
        assert_allclose(np.linalg.norm(layer.ws, axis=(1, 2)), math.sqrt(8), rtol=RTOL_NORM)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"logit_scale": 0.0}, r"no layer with m=2, d=8, logit_scale=0\.0 .* in max_tries=100 samples"),
            ({"logit_scale": 0.0, "max_tries": 3}, r"max_tries=3 samples; last failures: .*theta_stable_rank"),
        ],
        ids=["zero-logits", "zero-logits-3-tries"],
    )
    def test_planting_error_when_impossible(self, kwargs, match):
        """When no sample can pass (Θ = 0 is maximally degenerate) PlantingError names the failures."""
        with pytest.raises(PlantingError, match=match):
            random_layer(2, 8, rng=0, **kwargs)

    @pytest.mark.parametrize("d", [3, 4, 5], ids=["d3", "d4", "d5"])
    def test_logit_scale_is_boolean_logit_std(self, d):
        """Under uniform ±1 inputs the off-diagonal logit x_1ᵀ Θ x_2 has mean 0 and variance ‖Θ‖_F² exactly.

        Exact: the expectation is an average over all 2^{2d} inputs (cube_expectation).
        """
        layer = random_layer(2, d, logit_scale=2.5, check=False, rng=d)
        for theta in layer.thetas:

            def logit(X, theta=theta):
                return np.einsum("nc,ce,ne->n", X[:, 0], theta, X[:, 1])

            mean = cube_expectation(logit, 2, d)
            second = cube_expectation(lambda X: logit(X) ** 2, 2, d)
            # Averages of 2^{2d} <= 1024 terms of size <= ‖Θ‖_1 ≈ 8: rounding ~1e-15 absolute.
            assert abs(mean) < 1e-12
            assert_allclose(second, 2.5**2, rtol=1e-12)

    def test_logit_scale_is_gaussian_logit_std(self):
        """Under standard Gaussian inputs the off-diagonal logit has variance ‖Θ‖_F² too.

        Monte Carlo with N = 40000: L = x_1ᵀ Θ x_2 has E[L⁴] = 3(‖Θ‖_F⁴ + 2‖ΘᵀΘ‖_F²) <= 9‖Θ‖_F⁴,
        so mean(L²)/‖Θ‖_F² has standard deviation <= sqrt(8/N) = 0.0141; 6 standard deviations
        (0.085) fail with probability ~2e-9 by the CLT.
        """
        n = 40_000
        theta = random_layer(1, 6, logit_scale=2.5, check=False, rng=0).thetas[0]
        X = sample_inputs(n, 2, 6, distribution="gaussian", rng=1)
        logits = np.einsum("nc,ce,ne->n", X[:, 0], theta, X[:, 1])
        assert abs(np.mean(logits**2) / 2.5**2 - 1) < 6 * math.sqrt(8 / n)
