"""The six phases in oracle mode: each fed the true values of the earlier phases."""

import numpy as np
import pytest

from learner import AttentionLayer, enumerate_cube, min_norm_point, random_layer, sample_inputs
from learner.metrics import match_heads
from learner.oracle import ArraySource, LayerOracle
from learner.phases import (
    LearnConfig,
    crude_sculpt,
    crude_sum_w,
    estimate_span,
    refine_sum_w,
    refined_sculpt,
    resolve_config,
    search_heads,
)
from learner.phases import refine_sum as refine_module
from learner.phases.refine_sum import vertex_residuals
from learner.phases.sculpt import Constraints, certify_rows, fit_patterns
from learner.phases.search import (
    _exhaustive,
    _features,
    _fit_ws,
    _grid,
    _levenberg_marquardt,
    _normal_equations,
    _refine,
    _swap_search,
    _vp_jacobian,
    _vp_search,
    _vp_solve,
    layer_jacobian,
)
from learner.phases.span import HullUndetermined, precision_weights
from learner.study.bench import fit_patterns_solve


@pytest.fixture(scope="module")
def planted():
    return random_layer(2, 8, rng=0)


def _per_d2(target, d):
    """The multiple of d² that the sculpting phases turn into ``target`` constraints (they take ``int(c·d²)``):
    half a constraint above the target, so that rounding cannot land one below it (200/144·144 is 199.99…)."""
    multiple = (target + 0.5) / d**2
    assert int(multiple * d * d) == target
    return multiple


#: The settings the search tests were measured with (the phase's former defaults): 1.5 residuals per parameter
#: in the refinement and no noise-floor test (net_points_3d 13 is what the config chooses up to m = 4).
SEARCH_AS_MEASURED = {"refine_examples_per_param": 1.5, "noise_floor": False}


def _search_config(**fields):
    return LearnConfig(**(SEARCH_AS_MEASURED | fields))


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
        est = crude_sum_w(ArraySource(X, layer(X)), LearnConfig(adaptive=False, n_crude=len(X), batch=16), truth=layer)
        # E[XᵀJJX]/k² = I exactly over the cube; the rest is rounding of 64-term sums.
        np.testing.assert_allclose(est.w_sum, ws.sum(axis=0), rtol=0, atol=1e-13)
        assert est.error < 1e-13 and est.n_examples == 64

    def test_biased_on_a_planted_layer(self, planted):
        est = crude_sum_w(LayerOracle(planted, 4, rng=1), LearnConfig(adaptive=False, n_crude=100_000), truth=planted)
        # Logit scale 3: the one-step bias is large (a prototype of the learner measured ~30 %).
        assert 0.1 < est.error < 0.6


class TestSculpt:
    def test_constraints_from_the_true_sum_are_accurate(self, planted):
        # Fixed batches, min weight 0.1 and a budget of 2e7 examples: the settings this was measured with.
        cfg = LearnConfig(adaptive=False, crude_tol=0.01, min_weight=0.1, crude_constraints=_per_d2(150, 8),
                          crude_max_examples=20_000_000)
        c = crude_sculpt(LayerOracle(planted, 4, rng=2), planted.ws.sum(0), cfg, truth=planted)
        s = c.summary()
        assert c.count >= 150 and s["rank"] > 60
        # Certified rows at residual 1e-2 give constraints off by ~3e-2 (median), measured.
        assert s["constraint_error_median"] < 0.06

    def test_refined_sculpt_reaches_full_rank(self, planted):
        cfg = LearnConfig(adaptive=False, refined_tol=0.015, min_weight=0.1, refined_constraints=_per_d2(100, 8),
                          max_examples=20_000_000)
        c = refined_sculpt(LayerOracle(planted, 4, rng=3), planted.ws.sum(0), cfg, pilot=False)
        assert np.linalg.matrix_rank(c.A) == 64

    @pytest.mark.parametrize("pilot", [False, True])
    @pytest.mark.parametrize("target", [40, 400])  # inside the first batch (~170 per batch), and in the third
    def test_examples_at_target_is_the_first_prefix_that_reaches_it(self, planted, pilot, target):
        X = sample_inputs(30_000, 4, 8, rng=7)
        Y, w = planted(X), planted.ws.sum(0) * 1.003
        cfg = LearnConfig(adaptive=False, refined_tol=0.03, min_weight=0.02, refined_constraints=_per_d2(target, 8),
                          max_examples=20_000_000, batch=4_000)
        c = refined_sculpt(ArraySource(X, Y), w, cfg, m=2, pilot=pilot)  # the pilot's exponent (2 − 1)(4 − 1) = 3
        if pilot:
            assert c.forecast.n == 3 and c.forecast.fixed
        # The reference: certify the examples one prefix at a time, serially, at the tolerance the phase used.
        per_example = np.bincount(
            certify_rows(X, Y, w, tol=c.tol, min_weight=0.02, with_example=True)[5], minlength=X.shape[0])
        first = int(np.searchsorted(np.cumsum(per_example), target)) + 1
        assert c.examples_at_target == first
        assert c.n_examples % 4_000 == 0 and c.n_examples >= first  # whole batches were drawn
        if pilot:
            assert c.needed_ratio == pytest.approx(first / c.forecast.predicted_examples)

    def test_examples_at_target_is_none_when_the_budget_ends_first(self, planted):
        cfg = LearnConfig(adaptive=False, refined_tol=0.015, min_weight=0.1, refined_constraints=_per_d2(10**6, 8),
                          max_examples=8_000, batch=4_000)
        c = refined_sculpt(LayerOracle(planted, 4, rng=3), planted.ws.sum(0), cfg, pilot=False)
        assert c.count < 10**6 and c.examples_at_target is None and c.summary()["examples_at_target"] is None


class TestFitPatterns:
    @pytest.mark.parametrize(("m", "d", "k"), [(3, 12, 2), (3, 16, 3), (2, 8, 4), (2, 12, 6)], ids=str)
    def test_closed_form_matches_the_batched_solve(self, m, d, k):
        """The closed form (Gram–Schmidt, two-token fast path) equals the reference solve.

        The reference adds a 1e-9 relative ridge, which moves p by ~1e-9 relative to its
        conditioning (measured up to 8e-7 at k = 4); residuals agree to rounding. Both must
        certify the same rows. ΣW is perturbed by 1 % so that no row fits exactly.
        """
        layer = random_layer(m, d, logit_scale=1.0, rng=0)
        X = np.sign(np.random.default_rng(1).standard_normal((3000, k, d)))
        Y, W = layer(X), layer.ws.sum(0) * 1.01
        P, res, ok = fit_patterns(X, Y, W)
        P_ref, res_ref, ok_ref = fit_patterns_solve(X, Y, W)
        np.testing.assert_array_equal(ok, ok_ref)
        np.testing.assert_allclose(P[ok], P_ref[ok], rtol=0, atol=1e-5)
        np.testing.assert_allclose(res[ok], res_ref[ok], rtol=0, atol=1e-10)
        np.testing.assert_array_equal(res[ok] < 0.015, res_ref[ok] < 0.015)

    def test_a_wrong_sum_is_not_fitted(self):
        """Negative control: with ΣW replaced by another matrix no row has a small residual."""
        layer = random_layer(2, 8, logit_scale=1.0, rng=0)
        X = np.sign(np.random.default_rng(1).standard_normal((2000, 2, 8)))
        _, res, _ = fit_patterns(X, layer(X), random_layer(2, 8, rng=9).ws.sum(0))
        assert np.quantile(res, 0.01) > 0.1

    def test_repeated_tokens_are_not_well_posed(self):
        X = np.sign(np.random.default_rng(1).standard_normal((10, 3, 6)))
        X[:, 2] = X[:, 0]
        layer = random_layer(1, 6, rng=0)
        _, _, ok = fit_patterns(X, layer(X), layer.ws[0])
        assert not ok.any()


class TestRefineSumW:
    def test_true_theta_star_gives_an_accurate_sum(self, planted):
        oracle = LayerOracle(planted, 4, rng=4)
        crude = crude_sum_w(oracle, LearnConfig(adaptive=False, n_crude=100_000), truth=planted)
        star, _ = _hull(planted)
        est = refine_sum_w(oracle, crude.w_sum, star, LearnConfig(adaptive=False, n_refine=200_000), truth=planted)
        # Measured ~2e-3 with 4e5 examples; 2e5 examples leave a few times more noise.
        assert est.error < 0.02 < crude.error

    @staticmethod
    def _dense_residuals(X, Y, w_sum):
        """Every row against every token, on the whole sample at once: the reference."""
        B = X @ w_sum
        D = np.linalg.norm(Y[:, :, None, :] - B[:, None, :, :], axis=3)  # (n, a, j)
        return D / np.linalg.norm(Y, axis=2)[:, :, None]

    def test_vertex_residuals_match_the_dense_computation(self, planted, monkeypatch):
        X = sample_inputs(3000, 4, 8, rng=5)
        Y, w = planted(X), planted.ws.sum(axis=0) * 1.01
        R = self._dense_residuals(X, Y, w)
        monkeypatch.setattr(refine_module, "VERTEX_CHUNK", 700)  # several blocks and a short last one
        j, res = vertex_residuals(X, Y, w)
        np.testing.assert_array_equal(j, R.argmin(axis=2))
        # Tolerance: the expanded square ‖y‖² − 2y·b + ‖b‖² has an absolute error ~1e-16·‖y‖², i.e. ~1e-16/res²
        # relative in res; every residual here is above 1e-3 (the sum is 1 % off).
        np.testing.assert_allclose(res, R.min(axis=2), rtol=1e-7)
        pick = np.random.default_rng(1).integers(0, 4, size=(3000, 4))
        j2, res2 = vertex_residuals(X, Y, w, pick=pick)
        np.testing.assert_array_equal(j2, pick)
        np.testing.assert_allclose(res2, np.take_along_axis(R, pick[..., None], axis=2)[..., 0], rtol=1e-7)
        # Negative control: the given tokens are not the nearest ones, so their residuals are larger somewhere.
        assert (res2 > res + 1e-3).any()


class TestEstimateSpan:
    @pytest.mark.parametrize("rows", [40, 400], ids=["short: thin SVD either way", "tall: QR path"])
    @pytest.mark.parametrize("m", [1, 3])
    def test_qr_and_svd_solvers_agree(self, m, rows):
        """hull_solve's SVDs through a QR give the thin SVD's Θ*, directions and singular values to rounding
        (1e-12: both are backward stable, condition number of these matrices ~10). Control: the tolerance is
        tight enough to see a right-hand side off by 1e-8 (relative), far smaller than any real error of Qᵀb."""
        from learner.phases.span import hull_solve

        rng = np.random.default_rng(m)
        A, b, w = rng.standard_normal((rows, 16)), rng.standard_normal(rows), rng.uniform(0.1, 1, rows)
        for directions in ("weights", "irls"):
            (t1, V1, S1), (t2, V2, S2) = (hull_solve(A, b, m, weights=w, directions_from=directions, solver=sv)
                                          for sv in ("svd", "qr"))
            np.testing.assert_allclose(t2, t1, rtol=0, atol=1e-12 * np.linalg.norm(t1))
            np.testing.assert_allclose(S2, S1, rtol=0, atol=1e-12 * S1.max())
            np.testing.assert_allclose(V2 @ V2.T, V1 @ V1.T, rtol=0, atol=1e-12)
        control = hull_solve(A, b * (1 + 1e-8), m, weights=w, directions_from="irls", solver="qr")[0]
        assert np.linalg.norm(control - t1) > 1e-12 * np.linalg.norm(t1)

    def test_bad_solver(self):
        from learner.phases.span import hull_solve

        with pytest.raises(ValueError, match="`solver` must be one of"):
            hull_solve(np.eye(4), np.ones(4), 1, solver="lu")

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
            # gap_min 3 (the config would choose 2 for the 6 heads planned when m is estimated): the larger gap.
            span = estimate_span(c, LearnConfig(hull_weighting=weighting, gap_min=3.0), m=given, truth=layer)
            assert span.m == m
            # Exact constraints: only rounding of an SVD of a 80×16 matrix remains.
            np.testing.assert_allclose(span.theta_star, star, rtol=0, atol=1e-10)
            if m > 1:
                np.testing.assert_allclose(span.principal_cosines, 1.0, rtol=0, atol=1e-10)

    def test_precision_weights_beat_their_inverse(self):
        """Precision weighting finds the hull's directions better than no weighting; inverted weights worse.

        Oracle mode at (3, 12, 2), logit scale 1, the true ΣW, min weight 0.02 (the defaults).
        Measured largest principal angles: 0.008–0.009 (precision), 0.013–0.015 (none); the
        inverted weights (1/w, trusting the least precise constraints most) must do worse than
        precision weights by a clear factor — the negative control of the weighting.
        """
        layer = random_layer(3, 12, logit_scale=1.0, rng=0)
        cfg = LearnConfig(adaptive=False, refined_tol=0.015, min_weight=0.02,
                          refined_constraints=_per_d2(10**9, 12), max_examples=500_000)
        c = refined_sculpt(LayerOracle(layer, 2, rng=10), layer.ws.sum(0), cfg, truth=layer, pilot=False)
        w = precision_weights(c)
        assert w.max() == 1.0 and w.min() > 0

        def angle(weights):
            flipped = Constraints(c.A, c.b, c.residual, 0, 0, 0, c.tol, c.min_weight, 0.0,
                                  p_token=c.p_token, p_ref=c.p_ref)
            if weights is not None:  # weights enter through residual: w ∝ 1/residual at fixed p
                flipped = Constraints(c.A, c.b, c.tol / weights, 0, 0, 0, c.tol, c.min_weight, 0.0,
                                      p_token=np.full(c.count, 0.5), p_ref=np.full(c.count, 0.5))
            span = estimate_span(flipped, LearnConfig(hull_weighting="precision"), m=3, truth=layer)
            return float(np.arccos(min(1.0, span.principal_cosines.min())))

        def angle_plain():
            span = estimate_span(c, LearnConfig(hull_weighting="none"), m=3, truth=layer)
            return float(np.arccos(min(1.0, span.principal_cosines.min())))

        good, plain, inverted = angle(None), angle_plain(), angle(1.0 / w)
        assert good < plain < inverted, (good, plain, inverted)
        assert inverted > 2 * good

    def test_unknown_weighting(self):
        c = Constraints(np.ones((20, 4)), np.ones(20), np.zeros(20), 0, 0, 0, 0.01, 0.0, 0.0)
        with pytest.raises(ValueError, match="`hull_weighting` must be one of"):
            LearnConfig(hull_weighting="L1")
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got dict"):
            estimate_span(c, {"hull_weighting": "irls"}, m=1)
        with pytest.raises(ValueError, match="carry no token weights"):
            estimate_span(c, LearnConfig(hull_weighting="precision"), m=1)

    def test_too_few_constraints(self):
        c = Constraints(np.ones((3, 16)), np.ones(3), np.zeros(3), 0, 0, 0, 0.0, 0.0, 0.0)
        with pytest.raises(ValueError, match="3 constraints for d²=16 unknowns"):
            estimate_span(c, m=2)


    @pytest.mark.parametrize("weighting", ["precision", "irls", "none"])
    def test_rank_deficient_constraints_are_named(self, weighting):
        """Many constraints but few independent ones (a small cube): a clear error, not a division by zero."""
        rng = np.random.default_rng(0)
        A = np.repeat(rng.standard_normal((10, 16)), 5, axis=0)  # 50 rows of rank 10 for d² = 16
        c = Constraints(A, A @ rng.standard_normal(16), np.full(50, 0.01), 0, 0, 0, 0.01, 0.0, 0.0,
                        p_token=np.full(50, 0.5), p_ref=np.full(50, 0.5))
        cfg = LearnConfig(hull_weighting=weighting)
        for m in (2, None):  # m estimated (plan_m=4): any hull it can choose needs rank 12 or more
            with pytest.raises(HullUndetermined, match="50 constraints of rank 10 for d²=16 unknowns"):
                estimate_span(c, cfg, m=m, plan_m=4)
        # Control: rank d² − (m − 1) = 15 is enough for a 1-dimensional hull.
        A = rng.standard_normal((50, 16))
        A -= np.outer(A[:, 0], np.eye(16)[0])  # no row sees the first unknown: rank 15
        c = Constraints(A, A @ rng.standard_normal(16), np.full(50, 0.01), 0, 0, 0, 0.01, 0.0, 0.0,
                        p_token=np.full(50, 0.5), p_ref=np.full(50, 0.5))
        assert estimate_span(c, cfg, m=2).m == 2
        with pytest.raises(HullUndetermined, match="rank 15"):
            estimate_span(c, cfg, m=1)


class TestSearchHeads:
    def test_true_hull_gives_a_close_warm_start_and_the_layer(self):
        layer = random_layer(2, 6, rng=5)
        star, Q = _hull(layer)
        res = search_heads(LayerOracle(layer, 3, rng=6), star, Q, 2, _search_config(n_search=1000), truth=layer)
        # The warm start is the best net tuple + least squares: close, not exact (measured ~1e-3).
        assert res.warm_start_error < 0.05
        # Joint refinement from it reaches floating-point accuracy (realizable, noiseless).
        assert res.heldout_error < 1e-20


    @pytest.mark.parametrize("seed", [0, 1])
    def test_swap_descent_finds_the_exhaustive_optimum(self, seed):
        """On a grid over the true hull at m = 3, swap descent reaches the tuple exhaustive search ranks first."""
        layer = random_layer(3, 6, logit_scale=1.0, rng=seed)
        star, Q = _hull(layer)
        X, Y = LayerOracle(layer, 2, rng=seed + 5).draw(300)
        radius = 2 * np.linalg.norm(star)
        points = star[None] + (_grid(3, 41, 7) * radius @ Q.T).reshape(-1, 6, 6)
        Phi = np.stack([_features(t, X) for t in points])
        best, scored = _exhaustive(Phi, Y, 3, 1)
        found, evaluations, details = _swap_search(Phi, Y, 3, 1, starts=4, rng=np.random.default_rng(0))
        assert tuple(found[0]) == tuple(best[0])
        assert evaluations < scored / 5  # the point of the descent: far fewer tuples than C(p, 3) (measured 7–8×)
        assert details["swap_starts"] == 5

    def test_swap_search_still_recovers_the_layer(self):
        layer = random_layer(3, 6, logit_scale=1.0, rng=2)
        star, Q = _hull(layer)
        cfg = _search_config(net_points_3d=7, search="swap", n_search=400, refine_examples_per_param=8.0)
        res = search_heads(LayerOracle(layer, 2, rng=6), star, Q, 3, cfg, truth=layer)
        assert res.search == "swap" and res.summary()["tuples_in_grid"] == 18424  # C(49, 3)
        assert res.tuples_scored < 18424 / 3  # measured 4557
        assert res.heldout_error < 1e-20

    def test_auto_uses_variable_projection_beyond_the_limit_and_says_so(self):
        layer = random_layer(3, 6, logit_scale=1.0, rng=2)
        star, Q = _hull(layer)
        cfg = _search_config(net_points_3d=7, max_tuples=1000, n_search=400)
        res = search_heads(LayerOracle(layer, 2, rng=6), star, Q, 3, cfg, truth=layer)
        assert res.search == "vp" and res.summary()["search"] == "vp"
        assert res.summary()["vp_starts"] == 8 and res.summary()["tuples_in_grid"] == 18424
        assert res.heldout_error < 1e-20

    @pytest.mark.parametrize("seed", [0, 1])
    def test_variable_projection_search_from_a_tilted_hull(self, seed):
        """Hull directions 0.1 rad off (as phase 5 gives them at m = 5): the search's optimum, refined, is the layer."""
        layer = random_layer(4, 8, logit_scale=1.0, rng=seed)
        star, Q = _hull(layer)
        rng = np.random.default_rng(seed)
        E = rng.standard_normal(Q.shape)
        E -= Q @ (Q.T @ E)
        tilted = np.linalg.qr(np.cos(0.1) * Q + np.sin(0.1) * E / np.linalg.norm(E, axis=0))[0]
        res = search_heads(LayerOracle(layer, 2, rng=seed + 3), star, tilted, 4,
                           _search_config(search="vp", n_search=500), truth=layer)
        # The tilted hull does not contain the heads: the warm start is close, not exact (measured ~1e-3).
        assert 1e-6 < res.warm_start_heldout < 2e-2
        assert res.heldout_error < 1e-20 and match_heads(layer, res.layer).max_error < 1e-8

    def test_a_centre_away_from_the_hull_is_reported_not_accepted(self):
        """Negative control of the variable-projection search: a wrong centre and a capped refinement."""
        layer = random_layer(3, 6, logit_scale=1.0, rng=3)
        _, Q = _hull(layer)
        wrong = random_layer(1, 6, logit_scale=1.0, rng=99).thetas[0]
        res = search_heads(LayerOracle(layer, 2, rng=6), wrong, Q, 3,
                           _search_config(search="vp", n_search=400, max_nfev=5), truth=layer)
        assert res.heldout_error > 1e-4 and res.warm_start_heldout > 1e-2

    def test_a_coarse_grid_away_from_the_hull_is_reported_not_accepted(self):
        """Negative control: a 3-point grid around a wrong centre gives a poor layer, and says so."""
        layer = random_layer(3, 6, logit_scale=1.0, rng=3)
        _, Q = _hull(layer)
        wrong = random_layer(1, 6, logit_scale=1.0, rng=99).thetas[0]
        cfg = _search_config(net_points_3d=3, search="swap", n_search=400, refine_examples_per_param=8.0, max_nfev=5)
        res = search_heads(LayerOracle(layer, 2, rng=6), wrong, Q, 3, cfg, truth=layer)
        assert res.heldout_error > 1e-4 and res.warm_start_heldout > 1e-2

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"search": "random"}, "`search` must be one of"),
            ({"refine": "lm"}, "`refine` must be one of"),
        ],
        ids=["unknown", "unknown refinement"],
    )
    def test_bad_search_settings_are_refused_by_the_config(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            LearnConfig(net_points_3d=5, n_search=100, **kwargs)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"search": "exhaustive", "max_tuples": 10}, "max_tuples=10"),
            ({"search": "swap", "search_memory": 1000}, "raise search_memory"),
        ],
        ids=["too many tuples", "no memory"],
    )
    def test_bad_search_arguments(self, kwargs, match):
        layer = random_layer(3, 6, logit_scale=1.0, rng=2)
        star, Q = _hull(layer)
        with pytest.raises(ValueError, match=match):
            search_heads(LayerOracle(layer, 2, rng=6), star, Q, 3, LearnConfig(net_points_3d=5, n_search=100, **kwargs))

    def test_a_config_that_is_not_one_is_refused_before_an_example(self):
        layer = random_layer(3, 6, logit_scale=1.0, rng=2)
        star, Q = _hull(layer)
        oracle = LayerOracle(layer, 2, rng=6)
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got dict"):
            search_heads(oracle, star, Q, 3, {"search": "swap"})
        assert oracle.n_drawn == 0


class TestLearnConfig:
    @pytest.mark.parametrize(
        ("field", "value", "error"),
        [
            ("n_crude", -5, ValueError),
            ("n_crude", 2.5, TypeError),
            ("crude_tol", float("nan"), ValueError),
            ("success_tol", float("nan"), ValueError),
            ("max_examples", -1, ValueError),
            ("refined_tol", 1.5, ValueError),
            ("min_weight", 0.0, ValueError),
            ("batch", True, TypeError),
            ("hull_weighting", "L1", ValueError),
            ("search", "greedy", ValueError),
            ("refine", "lm", ValueError),
            ("vp_starts", 0, ValueError),
            ("allow_unsound", 1, TypeError),
        ],
        ids=lambda v: str(v),
    )
    def test_every_field_is_validated_with_its_name(self, field, value, error):
        with pytest.raises(error, match=f"`{field}` must"):
            LearnConfig(**{field: value})

    def test_zero_is_allowed_where_it_means_none(self):
        assert LearnConfig(swap_starts=0, search_seed=0).swap_starts == 0
        # Not for the rounds: phases 4 and 5 run inside them, so zero rounds would leave no hull.
        with pytest.raises(ValueError, match="`outer_rounds` must be at least 1; got outer_rounds=0"):
            LearnConfig(outer_rounds=0)

    @pytest.mark.parametrize(
        ("setting", "chosen"),
        [
            # The budget is fixed (learner.phases.forecast.DEFAULT_MAX_EXAMPLES); phase 4's pilot chooses refined_tol.
            ((3, 12, 2), {"refined_constraints": 6.0, "net_points_3d": 13, "max_examples": 1_000_000_000,
                          "gap_min": 3.0}),
            ((4, 12, 2), {"refined_constraints": 12.0, "net_points_3d": 13, "max_examples": 1_000_000_000,
                          "gap_min": 3.0}),
            ((5, 16, 2), {"refined_constraints": 12.0, "net_points_3d": 9, "max_examples": 1_000_000_000,
                          "gap_min": 2.0}),
            ((3, 16, 3), {"refined_constraints": 6.0, "net_points_3d": 13, "max_examples": 1_000_000_000,
                          "gap_min": 3.0}),
            # Past m = 5 the 3-d net is coarser again (7 points a side).
            ((6, 16, 2), {"refined_constraints": 12.0, "net_points_3d": 7, "max_examples": 1_000_000_000,
                          "gap_min": 2.0}),
        ],
        ids=str,
    )
    def test_resolve_config_from_the_setting(self, setting, chosen):
        cfg, names = resolve_config(LearnConfig(), setting[0])  # m alone decides; d and k do not
        assert names == sorted(chosen)
        assert {name: getattr(cfg, name) for name in chosen} == chosen
        assert cfg.refined_tol is None  # left to phase 4's pilot
        given, names = resolve_config(LearnConfig(max_examples=123, net_points_3d=5, refined_constraints=2.0,
                                                  refined_tol=0.02, gap_min=4.0), setting[0])
        assert names == [] and given.max_examples == 123


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


def _off_layer(m, d, k, n, scale, *, seed):
    """Θ's ``scale`` off a planted layer's, its examples, and the variable-projection solve there."""
    layer = random_layer(m, d, logit_scale=1.0, check=False, rng=seed)
    X, Y = LayerOracle(layer, k, rng=seed + 1).draw(n)
    thetas = layer.thetas + scale * np.random.default_rng(seed + 2).standard_normal(layer.thetas.shape)
    return thetas, X, Y, _vp_solve(thetas, X, Y)


class TestVariableProjection:
    @pytest.mark.parametrize(("m", "d", "k"), [(2, 6, 3), (3, 6, 2)])
    def test_reproduces_the_trust_region_optimum(self, m, d, k):
        """From one warm start, the variable-projection refinement and the earlier trust-region one reach
        the same layer: heads equal after matching, F exact on fresh inputs."""
        layer = random_layer(m, d, logit_scale=1.0, rng=m)
        rng = np.random.default_rng(11)
        warm = layer.thetas + 0.03 * rng.standard_normal(layer.thetas.shape)
        X, Y = LayerOracle(layer, k, rng=12).draw(8 * 2 * m * d // k)
        Xh, Yh = LayerOracle(layer, k, rng=13).draw(1000)
        t, w, _ = _refine(warm, _fit_ws([_features(t, X) for t in warm], Y), X, Y, 200)
        z, ws, _, rel = _levenberg_marquardt(warm, X[: 2 * 2 * m * d // k], Y[: 2 * 2 * m * d // k], max_iter=200)
        old, new = AttentionLayer(t, w), AttentionLayer(z.reshape(m, d, d), ws)
        # Both are the planted layer to float64 accuracy: parameter errors ~1e-15 measured, F ~1e-30.
        assert match_heads(old, new).max_error < 1e-10
        assert rel < 1e-26 and np.sum((new(Xh) - Yh) ** 2) / np.sum(Yh**2) < 1e-24

    def test_kaufman_jacobian_is_the_projected_layer_jacobian(self):
        """The Θ-columns of the full analytic Jacobian, projected off the W design, in the Θ's and in hull
        coordinates."""
        m, d, k = 3, 4, 2
        thetas, X, Y, (ws, r, Q, patterns) = _off_layer(m, d, k, 30, 0.1, seed=4)
        full = layer_jacobian(thetas, ws, X)[:, : m * d * d].reshape(30 * k, d, m * d * d)
        flat = full.reshape(30 * k, -1)  # rows (n, a); the projector acts on them, column by column
        projected = (flat - Q @ (Q.T @ flat)).reshape(30 * k * d, -1)
        J = _vp_jacobian(thetas, ws, X, patterns, Q, np.eye(d * d))  # the Θ's themselves: the identity basis
        # Same sums in another order: agreement to rounding (entries are O(1)).
        np.testing.assert_allclose(J, projected, rtol=0, atol=1e-12)
        basis = np.linalg.qr(np.random.default_rng(7).standard_normal((d * d, 2)))[0]
        Jb = _vp_jacobian(thetas, ws, X, patterns, Q, basis)
        np.testing.assert_allclose(Jb, projected @ np.kron(np.eye(m), basis), rtol=0, atol=1e-12)
        # The residual is orthogonal to the design (the W's are optimal).
        D = np.einsum("nmab,nbc->namc", patterns, X).reshape(30 * k, m * d)
        assert np.abs(D.T @ r).max() < 1e-12 * np.abs(D).max() * np.abs(Y).max() * 30 * k

    def test_search_optima_rank_by_residual(self):
        layer = random_layer(3, 6, logit_scale=1.0, rng=8)
        star, Q = _hull(layer)
        X, Y = LayerOracle(layer, 2, rng=9).draw(200)
        radius = 2 * np.linalg.norm(star)
        found, evaluations, details = _vp_search(star, Q, 3, X, Y, radius, 4, starts=5, max_iter=100,
                                                 rng=np.random.default_rng(0))
        assert len(found) == 4 and evaluations >= 5 and details["vp_starts"] == 5
        # From the exact hull the best optimum is the layer itself (residual at float64's floor).
        assert details["best_in_sample_residual"] < 1e-20
        # (the W's paired with the heads here are the planted ones in planted order: compare the Θ's)
        assert max(match_heads(layer, AttentionLayer(found[0], layer.ws)).theta_errors) < 1e-8

    def test_normal_equations_in_blocks_equal_the_whole(self):
        """A memory budget smaller than the Jacobian builds JᵀJ and Jᵀr from blocks of examples: same matrices."""
        m, d, k = 2, 5, 3
        thetas, X, Y, (ws, r, Q, patterns) = _off_layer(m, d, k, 40, 0.05, seed=10)
        A, g = _normal_equations(thetas, ws, X, patterns, Q, r)
        per_example = 8 * k * d * m * d * d
        Ab, gb = _normal_equations(thetas, ws, X, patterns, Q, r, max_bytes=7 * per_example)  # 6 blocks
        # Same sums, grouped differently (and JᵀJ − KᵀK instead of (P⊥J)ᵀ(P⊥J)): rounding of O(1)·n·k·d terms.
        np.testing.assert_allclose(Ab, A, rtol=0, atol=1e-10 * np.abs(A).max())
        np.testing.assert_allclose(gb, g, rtol=0, atol=1e-10 * np.abs(g).max())

    @pytest.mark.parametrize(("n", "identified"), [(48, False), (144, True)], ids=["too few", "2d^2 over k(k-1)"])
    def test_examples_must_pin_every_head(self, n, identified):
        """A head's Θ enters only through k(k−1) logit differences per example: 48 examples of (2, 12, 2)
        (twice the parameters in residuals) fit exactly yet miss the layer — the reason for the floor of
        2d²/(k(k−1)) examples in search_heads; 144 pin it."""
        truth = random_layer(2, 12, logit_scale=1.0, rng=1)
        X, Y = LayerOracle(truth, 2, rng=9).draw(n)
        Xh, Yh = LayerOracle(truth, 2, rng=10).draw(1000)
        warm = truth.thetas + 2e-3 * np.random.default_rng(0).standard_normal(truth.thetas.shape)
        z, ws, _, rel = _levenberg_marquardt(warm, X, Y, max_iter=200)
        heldout = np.sum((AttentionLayer(z.reshape(2, 12, 12), ws)(Xh) - Yh) ** 2) / np.sum(Yh**2)
        assert rel < 1e-26  # in-sample exact either way (measured ~2e-31)
        # Measured held-out: ~3e-5 with 48 examples, ~3e-31 with 144.
        assert (heldout < 1e-24) if identified else (heldout > 1e-8)
