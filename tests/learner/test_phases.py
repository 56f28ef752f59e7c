"""The six phases in oracle mode: each fed the true values of the earlier phases."""

import numpy as np
import pytest

from learner import AttentionLayer, enumerate_cube, min_norm_point, random_layer
from learner.oracle import ArraySource, LayerOracle
from learner.phases import (
    crude_sculpt,
    crude_sum_w,
    estimate_span,
    refine_sum_w,
    refined_sculpt,
    search_heads,
)
from learner.phases.sculpt import Constraints, certification_premise
from learner.phases.search import layer_jacobian


@pytest.fixture(scope="module")
def planted():
    return random_layer(2, 8, rng=0)


def _hull(layer):
    """True min-norm point and orthonormal hull directions of a layer."""
    T = layer.thetas.reshape(layer.m, -1)
    Q = np.linalg.qr((T[1:] - T[0]).T)[0] if layer.m > 1 else np.zeros((T.shape[1], 0))
    return min_norm_point(layer.thetas), Q


class TestCrudeSumW:
    def test_exact_when_attention_is_uniform(self):
        """With every Θ_i = 0 the one-step estimate is ΣW exactly (over the whole cube)."""
        ws = np.random.default_rng(0).standard_normal((2, 3, 3))
        layer = AttentionLayer(np.zeros((2, 3, 3)), ws)
        X = np.concatenate(list(enumerate_cube(2, 3)))
        est = crude_sum_w(ArraySource(X, layer(X)), n_samples=len(X), batch=16, truth=layer)
        # E[XᵀJJX]/k² = I exactly over the cube; the rest is rounding of 64-term sums.
        np.testing.assert_allclose(est.w_sum, ws.sum(axis=0), rtol=0, atol=1e-13)
        assert est.error < 1e-13 and est.n_examples == 64

    def test_biased_on_a_planted_layer(self, planted):
        est = crude_sum_w(LayerOracle(planted, 4, rng=1), n_samples=100_000, truth=planted)
        # Logit scale 3: the one-step bias is large (DESIGN §3 measured ~30 %).
        assert 0.1 < est.error < 0.6


class TestSculpt:
    def test_constraints_from_the_true_sum_are_accurate(self, planted):
        c = crude_sculpt(LayerOracle(planted, 4, rng=2), planted.ws.sum(0), tol=0.01, target=150, truth=planted)
        s = c.summary()
        assert c.count >= 150 and s["rank"] > 60
        # Certified rows at residual 1e-2 give constraints off by ~3e-2 (median), measured.
        assert s["constraint_error_median"] < 0.06

    def test_refined_sculpt_reaches_full_rank(self, planted):
        c = refined_sculpt(LayerOracle(planted, 4, rng=3), planted.ws.sum(0), target=100)
        assert np.linalg.matrix_rank(c.A) == 64


class TestCertificationPremise:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_certified_rows_agree(self, seed):
        """Rows with residual < 0.01 have every head within TV 0.1 of the fit (95 % of them)."""
        result = certification_premise(random_layer(2, 8, rng=seed), 4, n_samples=100_000, rng=seed)
        assert result.holds and result.certified > 100
        assert result.uncertified_median > 0.3  # the test does separate agreeing rows

    def test_negative_control_equal_ws(self, planted):
        """W_1 = W_2: every row fits exactly, so disagreeing rows are certified and the premise fails."""
        twin = AttentionLayer(planted.thetas, np.stack([planted.ws[0]] * 2))
        result = certification_premise(twin, 4, n_samples=50_000, rng=0)
        assert not result.holds and result.certified_quantile > 0.3


class TestRefineSumW:
    def test_true_theta_star_gives_an_accurate_sum(self, planted):
        oracle = LayerOracle(planted, 4, rng=4)
        crude = crude_sum_w(oracle, n_samples=100_000, truth=planted)
        star, _ = _hull(planted)
        est = refine_sum_w(oracle, crude.w_sum, star, n_samples=200_000, truth=planted)
        # Measured ~2e-3 with 4e5 examples; 2e5 examples leave a few times more noise.
        assert est.error < 0.02 < crude.error


class TestEstimateSpan:
    @pytest.mark.parametrize("weighting", ["precision", "irls", "none"])
    @pytest.mark.parametrize("m", [1, 2, 3])
    def test_exact_constraints_give_the_hull(self, m, weighting):
        layer = random_layer(m, 4, check=False, rng=m)
        star, Q = _hull(layer)
        rng = np.random.default_rng(0)
        R = rng.standard_normal((80, 16))
        A = R - (R @ Q) @ Q.T  # rows orthogonal to the hull's directions
        b = A @ layer.thetas[0].ravel()
        p = rng.uniform(0.05, 0.5, size=(2, 80))
        c = Constraints(A, b, rng.uniform(0, 0.01, 80), 0, 0, 0, 0.01, 0.0, 0.0, p_token=p[0], p_ref=p[1])
        for given in (m, None):
            span = estimate_span(c, m=given, weighting=weighting, truth=layer)
            assert span.m == m
            # Exact constraints: only rounding of an SVD of a 80×16 matrix remains.
            np.testing.assert_allclose(span.theta_star, star, rtol=0, atol=1e-10)
            if m > 1:
                np.testing.assert_allclose(span.principal_cosines, 1.0, rtol=0, atol=1e-10)

    def test_too_few_constraints(self):
        c = Constraints(np.ones((3, 16)), np.ones(3), np.zeros(3), 0, 0, 0, 0.0, 0.0, 0.0)
        with pytest.raises(ValueError, match="3 constraints for d²=16 unknowns"):
            estimate_span(c, m=2)


class TestSearchHeads:
    def test_true_hull_gives_a_close_warm_start_and_the_layer(self):
        layer = random_layer(2, 6, rng=5)
        star, Q = _hull(layer)
        res = search_heads(LayerOracle(layer, 3, rng=6), star, Q, 2, n_search=1000, truth=layer)
        # The warm start is the best net tuple + least squares: close, not exact (measured ~1e-3).
        assert res.warm_start_error < 0.05
        # Joint refinement from it reaches floating-point accuracy (realizable, noiseless).
        assert res.heldout_error < 1e-20


class TestLayerJacobian:
    @pytest.mark.parametrize("m", [1, 2])
    def test_matches_finite_differences(self, m):
        layer = random_layer(m, 3, check=False, rng=7)
        X = np.sign(np.random.default_rng(8).standard_normal((5, 2, 3)))
        J = layer_jacobian(layer.thetas, layer.ws, X)
        z = np.concatenate([layer.thetas.ravel(), layer.ws.ravel()])

        def f(z):
            z = z.reshape(2, m, 3, 3)
            return AttentionLayer(z[0], z[1])(X).ravel()

        h = 1e-6
        fd = np.stack([(f(z + h * e) - f(z - h * e)) / (2 * h) for e in np.eye(z.size)], axis=1)
        # Central differences: truncation O(h²)·f''' ~ 1e-12 plus rounding eps·|f|/h ~ 1e-10.
        np.testing.assert_allclose(J, fd, rtol=0, atol=1e-8)
