"""Phase 5's small rules on constructed inputs: the gap rule that estimates m, the numerical rank, the SVD routes."""

import time

import numpy as np
import pytest

from learner import AttentionLayer, LearnConfig
from learner.phases import HullUndetermined
from learner.phases.sculpt import Constraints
from learner.phases.span import (
    _gap_m,
    _numerical_rank,
    _svd,
    estimate_span,
    hull_solve,
    precision_weights,
    token_distances,
)


class TestGapRule:
    def test_a_ratio_equal_to_gap_min_is_a_gap(self):
        # Ascending singular values 1, 1.5, 4.5: ratios 1.5 and 3. With gap_min = 3 the gap after the second value
        # counts (the rule is ratio >= gap_min), so m = 2 + 1 = 3; just above 3 there is no gap and m = 1.
        S = np.array([1.0, 1.5, 4.5, 4.6])
        m, ratios = _gap_m(S, 3, 3.0)
        np.testing.assert_array_equal(ratios, [1.5, 3.0, 4.6 / 4.5])
        assert m == 3
        assert _gap_m(S, 3, np.nextafter(3.0, 4.0))[0] == 1

    def test_first_clear_gap_position(self):
        S = np.array([1.0, 10.0, 11.0, 12.0])
        assert _gap_m(S, 3, 2.0)[0] == 2  # the gap follows the first value
        assert _gap_m(np.array([1.0, 1.1, 1.2, 50.0, 51.0]), 4, 2.0)[0] == 4  # the gap follows the third

    @pytest.mark.parametrize(("S", "max_m", "capped"), [
        ([1.0, 10.0, 10.5], 1, 1),  # a gap after one value means m = 2, past a cap of 1
        ([1.0, 1.5, 4.5, 4.6], 2, 1),  # a gap after two values means m = 3, past a cap of 2
        ([1.0, 1.1, 1.2, 50.0, 51.0], 3, 1),
        ([1.0, 3.0, 4.0, 40.0, 41.0], 2, 2),  # the largest ratio is past the cap; the one within it still counts
    ])
    def test_the_estimate_never_exceeds_its_cap(self, S, max_m, capped):
        m, ratios = _gap_m(np.array(S), max_m, 2.0)
        assert m == capped <= max_m
        assert ratios.size == min(max_m, len(S) - 1)  # the diagnostics still show the ratio at the cap
        assert _gap_m(np.array(S), len(S) - 1, 2.0)[0] > max_m  # control: with a larger cap the gap is found

    def test_no_ratio_means_one_head(self):
        # max_m = 0 leaves no ratio to read: the rule answers 1 without an argmax over nothing.
        m, ratios = _gap_m(np.array([1.0, 5.0]), 0, 2.0)
        assert (m, ratios.size) == (1, 0)


class TestNumericalRank:
    @pytest.mark.parametrize("diag", [[3.0, 1.0, 0.0], [0.5, 0.25, 0.0], [1e-3, 1e-20, 0.0]])
    def test_against_matrix_rank(self, diag):
        M = np.diag(diag)
        S = np.linalg.svd(M, compute_uv=False)
        assert _numerical_rank(S, M.shape) == np.linalg.matrix_rank(M)

    def test_boundary_is_strict(self):
        # A singular value exactly at the tolerance top·max(shape)·eps is not counted (numpy's rule is S > tol).
        shape = (4, 2)
        S = np.array([1.0, 4 * np.finfo(float).eps])
        assert _numerical_rank(S, shape) == 1

    def test_zero_and_empty(self):
        assert _numerical_rank(np.zeros(3), (3, 3)) == 0
        assert _numerical_rank(np.zeros(0), (0, 3)) == 0


class TestSvdRoutes:
    def test_svd_is_the_thin_svd_itself(self):
        # solver="svd" is the reference: bit for bit numpy's thin SVD, also on a tall matrix where "qr" goes
        # through the triangle.
        rng = np.random.default_rng(0)
        M, rhs = rng.normal(size=(40, 4)), rng.normal(size=40)
        U, S, Vt = np.linalg.svd(M, full_matrices=False)
        S2, Vt2, Urhs = _svd(M, rhs, "svd")
        np.testing.assert_array_equal(S2, S)
        np.testing.assert_array_equal(Vt2, Vt)
        np.testing.assert_array_equal(Urhs, U.T @ rhs)

    def test_qr_agrees_with_svd_to_rounding(self):
        rng = np.random.default_rng(1)
        M, rhs = rng.normal(size=(40, 4)), rng.normal(size=40)
        S, Vt, Urhs = _svd(M, rhs, "qr")
        S0, Vt0, Urhs0 = _svd(M, rhs, "svd")
        np.testing.assert_allclose(S, S0, rtol=1e-12)
        # Singular vectors are defined up to sign; the projection of rhs flips with them.
        signs = np.sign(np.sum(Vt * Vt0, axis=1))
        np.testing.assert_allclose(Vt * signs[:, None], Vt0, atol=1e-12)
        np.testing.assert_allclose(Urhs * signs, Urhs0, atol=1e-12)


def _constraints(A, b, residual, tol, p_token=None, p_ref=None):
    return Constraints(np.asarray(A, dtype=float), np.asarray(b, dtype=float), np.asarray(residual, dtype=float),
                       0, 0, 0, tol, 0.0, 0.0, p_token=p_token, p_ref=p_ref)


class TestSolverRoutes:
    """Which SVD a solver takes, seen through a spy on ``np.linalg.qr`` (only the ``"qr"`` route factors)."""

    @staticmethod
    def _spy_qr(monkeypatch):
        calls = []
        qr = np.linalg.qr

        def spy(*args, **kwargs):
            calls.append(np.shape(args[0]))
            return qr(*args, **kwargs)

        monkeypatch.setattr(np.linalg, "qr", spy)
        return calls

    @pytest.mark.parametrize("rows", [3, 7, 8, 20], ids=["wide", "2p-1", "2p", "tall"])
    @pytest.mark.parametrize("solver", ["qr", "svd"])
    def test_fewer_rows_than_2p_take_the_thin_svd(self, monkeypatch, rows, solver):
        # p = 4: "qr" factors exactly when there are at least 2p = 8 rows; "svd" never does. Either way the result
        # has the thin SVD's shapes and singular values.
        calls = self._spy_qr(monkeypatch)
        rng = np.random.default_rng(rows)
        M, rhs = rng.normal(size=(rows, 4)), rng.normal(size=rows)
        S, Vt, Urhs = _svd(M, rhs, solver)
        assert len(calls) == (1 if solver == "qr" and rows >= 8 else 0)
        U0, S0, Vt0 = np.linalg.svd(M, full_matrices=False)
        assert (S.shape, Vt.shape, Urhs.shape) == (S0.shape, Vt0.shape, (min(rows, 4),))
        np.testing.assert_allclose(S, S0, rtol=1e-12)

    @pytest.mark.parametrize("directions_from", ["weights", "irls"])
    def test_hull_solve_passes_its_solver_on(self, monkeypatch, directions_from):
        # 40 rows for p = 9 unknowns: "qr" factors the (weighted) constraints, "svd" takes the thin SVD of every
        # matrix it solves, the projected one and every IRLS round's included.
        calls = self._spy_qr(monkeypatch)
        rng = np.random.default_rng(2)
        A, b, w = rng.normal(size=(40, 9)), rng.normal(size=40), rng.uniform(0.2, 1.0, 40)
        hull_solve(A, b, 2, weights=w, directions_from=directions_from, solver="svd")
        assert calls == []
        hull_solve(A, b, 2, weights=w, directions_from=directions_from, solver="qr")
        # Control: the first solve and 3 IRLS rounds, and with directions from the weights their own SVD.
        assert len(calls) == (5 if directions_from == "weights" else 4)


class TestPrecisionWeights:
    @staticmethod
    def _rows(diffs):
        # Boolean tokens: A_l = x_a (x_j − x_{j0})ᵀ with ‖x_a‖ = √d, so ‖A_l‖ = √d·‖x_j − x_{j0}‖ exactly.
        x_a = np.array([1.0, -1.0])
        return np.array([np.outer(x_a, diff).ravel() for diff in diffs])

    def test_token_distances_are_exact_for_boolean_tokens(self):
        A = self._rows([[2.0, 0.0], [2.0, -2.0], [0.0, -2.0]])
        c = _constraints(A, np.zeros(3), np.zeros(3), 0.1)
        np.testing.assert_allclose(token_distances(c), [2.0, 2.0 * np.sqrt(2.0), 2.0], rtol=1e-15)

    def test_the_documented_formula_by_hand(self):
        # tol = 1, so residuals are floored at floor·tol = 0.05. Per row (distance, residual, p_j, p_{j0}):
        #   0: (2, 0.1, 1/4, 1/2)   2/(0.1·(4 + 2))   = 10/3
        #   1: (2, 0.1, 1/2, 1/4)   2/(0.1·(2 + 4))   = 10/3  (the two tokens' roles swapped: the same weight)
        #   2: (2, 0.4, 1/4, 1/2)   2/(0.4·6)         = 5/6
        #   3: (2, 0.01→0.05, 1/4, 1/2)  2/(0.05·6)   = 20/3  (the largest: weight 1)
        #   4: (2√2, 0.2, 1/2, 1/2) 2√2/(0.2·(2 + 2)) = 5√2/2
        # Relative to 20/3 and to the power 3/2: 2^-1.5, 2^-1.5, 8^-1.5, 1, (3√2/8)^1.5.
        A = self._rows([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0], [0.0, -2.0], [2.0, -2.0]])
        c = _constraints(A, np.zeros(5), [0.1, 0.1, 0.4, 0.01, 0.2], 1.0,
                         p_token=np.array([0.25, 0.5, 0.25, 0.25, 0.5]), p_ref=np.array([0.5, 0.25, 0.5, 0.5, 0.5]))
        expected = [2**-1.5, 2**-1.5, 8**-1.5, 1.0, (3 * np.sqrt(2) / 8) ** 1.5]
        np.testing.assert_allclose(precision_weights(c), expected, rtol=1e-13)
        # The power is a parameter: power 1 gives the plain ratios.
        np.testing.assert_allclose(precision_weights(c, power=1.0), [0.5, 0.5, 1 / 8, 1.0, 3 * np.sqrt(2) / 8],
                                   rtol=1e-13)

    def test_no_constraints_give_no_weights(self):
        c = _constraints(np.zeros((0, 4)), np.zeros(0), np.zeros(0), 0.1, p_token=np.zeros(0), p_ref=np.zeros(0))
        w = precision_weights(c)
        assert w.shape == (0,) and w.dtype == np.float64

    @pytest.mark.parametrize("missing", ["p_token", "p_ref"])
    def test_either_token_weight_missing_is_an_error(self, missing):
        p = {"p_token": np.full(3, 0.5), "p_ref": np.full(3, 0.5), missing: None}
        c = _constraints(self._rows([[2.0, 0.0]] * 3), np.zeros(3), np.full(3, 0.1), 0.1, **p)
        with pytest.raises(ValueError, match="carry no token weights"):
            precision_weights(c)


class TestOneUnknown:
    """d = 1 (one unknown, m = 1): every weighted least-squares solve is a weighted mean, Σ w²ab / Σ w²a², so
    the IRLS rule (rows weighted by base/max(|e|, median|e|)) can be followed by hand."""

    a = np.array([1.0, 2.0, -1.0, 0.5, 1.5, -2.0, 1.0, 3.0, -0.5])
    b = 2 * a + np.array([0.03, -0.02, 0.05, 2.96, 0.01, 0.02, -0.03, 0.04, -0.01])  # row 3 an outlier
    residual = np.array([0.01, 0.02, 0.005, 0.03, 0.001, 0.015, 0.02, 0.01, 0.04])
    p_token = np.array([0.2, 0.5, 0.3, 0.4, 0.25, 0.5, 0.1, 0.3, 0.2])
    p_ref = p_token[::-1].copy()
    tol = 0.02

    def _irls(self, base, rounds):
        a, b = self.a, self.b
        theta = np.sum(base**2 * a * b) / np.sum(base**2 * a * a)
        for _ in range(rounds):
            e = np.abs(a * theta - b)
            w = base / np.maximum(e, max(np.median(e), 1e-12))
            theta = np.sum(w**2 * a * b) / np.sum(w**2 * a * a)
        return theta

    def _precision(self):
        # The docstring's formula; with d = 1 the token distance is |A_l|.
        r = np.maximum(self.residual, 0.05 * self.tol)
        return (np.abs(self.a) / (r * (1 / self.p_token + 1 / self.p_ref))) ** 1.5

    def test_rounds_matter_here(self):
        # Control: the cases below tell 0, 1, 3 and 4 rounds apart (residual medians well below 1).
        ones = np.ones(self.a.size)
        plain = [self._irls(ones, k) for k in (0, 1, 3, 4)]
        assert min(abs(x - y) for i, x in enumerate(plain) for y in plain[i + 1:]) > 1e-5
        assert abs(self._irls(self._precision(), 0) - self._irls(self._precision(), 3)) > 1e-7

    def test_hull_solve_defaults_to_three_rounds(self):
        A = self.a[:, None]
        theta, V, S = hull_solve(A, self.b, 1)
        assert V.shape == (1, 0) and S.shape == (1,)
        np.testing.assert_allclose(theta, [self._irls(np.ones(self.a.size), 3)], rtol=1e-12)
        base = self._precision()
        theta = hull_solve(A, self.b, 1, weights=base, directions_from="weights")[0]
        np.testing.assert_allclose(theta, [self._irls(base, 3)], rtol=1e-12)

    @pytest.mark.parametrize("m", [1, None])
    @pytest.mark.parametrize(("weighting", "rounds", "base", "expected_rounds"), [
        ("none", None, "ones", 0), ("none", 2, "ones", 0),
        ("irls", None, "ones", 3), ("irls", 1, "ones", 1),
        ("precision", None, "precision", 3), ("precision", 0, "precision", 0), ("precision", 1, "precision", 1),
    ])
    def test_weighting_schemes(self, m, weighting, rounds, base, expected_rounds):
        c = _constraints(self.a[:, None], self.b, self.residual, self.tol, p_token=self.p_token, p_ref=self.p_ref)
        kwargs = {} if rounds is None else {"irls_rounds": rounds}
        span = estimate_span(c, LearnConfig(hull_weighting=weighting), m=m, **kwargs)
        w = np.ones(self.a.size) if base == "ones" else self._precision()
        assert span.theta_star.shape == (1, 1) and span.m == 1
        np.testing.assert_allclose(span.theta_star, [[self._irls(w, expected_rounds)]], rtol=1e-12)


class TestEstimateSpanReport:
    @staticmethod
    def _with_singular_values(s, rows, seed):
        """Exact constraints (b = A θ₀) whose matrix has the given singular values."""
        rng = np.random.default_rng(seed)
        U = np.linalg.qr(rng.normal(size=(rows, len(s))))[0]
        Vt = np.linalg.qr(rng.normal(size=(len(s), len(s))))[0].T
        A = U @ np.diag(s) @ Vt
        return A, A @ rng.normal(size=len(s))

    @pytest.mark.parametrize("weighting", ["none", "irls"])
    def test_default_gap_rule_reads_the_smallest_singular_values(self, weighting):
        # d = 4: singular values 1, 3.5, 4, 4.5, ..., 10.5. The one clear gap is 3.5 after the smallest value, at
        # least either gap_min the config chooses (2 for the default plan of max_m = 6 heads, 3 for at most 4), so
        # m = 2. The defaults plan for max_m = 6 heads: 6 ratios and max_m + 2 = 8 values.
        # Exact constraints leave every residual below the IRLS floor, so the IRLS weights are uniform and the
        # ratios are those of A itself.
        s = np.concatenate([[1.0], np.arange(3.5, 10.6, 0.5)])
        A, b = self._with_singular_values(s, 40, 0)
        c = _constraints(A, b, np.full(40, 0.01), 0.01)
        cfg = LearnConfig(hull_weighting=weighting)
        assert (cfg.gap_min, cfg.max_m) == (None, 6)  # the documented defaults: gap_min chosen from the plan
        t0 = time.perf_counter()
        span = estimate_span(c, cfg)
        wall = time.perf_counter() - t0
        assert (span.m, span.m_estimated) == (2, True)
        np.testing.assert_allclose(span.gap_ratios, s[1:7] / s[:6], rtol=1e-10)
        assert span.singular_values.shape == (8,)
        if weighting == "none":
            np.testing.assert_allclose(span.singular_values, s[:8], rtol=1e-10)
        assert isinstance(span.seconds, float) and 0 <= span.seconds <= wall
        # Planning for 4 heads reads 4 ratios and 6 values, and the gap is still clear at its gap_min of 3.
        four = estimate_span(c, cfg, plan_m=4)
        assert four.m == 2 and four.gap_ratios.shape == (4,) and four.singular_values.shape == (6,)
        # Control: a gap of 3.5 is not clear at gap_min = 4.
        assert estimate_span(c, LearnConfig(hull_weighting=weighting, gap_min=4.0)).m == 1

    @pytest.mark.parametrize("weighting", ["none", "irls"])
    def test_default_gap_min_follows_the_plan(self, weighting):
        # Singular values 1, 2.5, 2.6, ...: the one gap, 2.5, is clear at the gap_min chosen for the default plan
        # (max_m = 6 heads: 2), not at the one chosen for at most 4 heads (3), nor at an explicit 3 with 6 planned.
        s = np.concatenate([[1.0], 2.5 + 0.1 * np.arange(15)])
        A, b = self._with_singular_values(s, 40, 1)
        c = _constraints(A, b, np.full(40, 0.01), 0.01)
        cfg = LearnConfig(hull_weighting=weighting)
        assert estimate_span(c, cfg).m == 2
        assert estimate_span(c, cfg, plan_m=5).m == 2  # from 5 heads planned: 2
        assert estimate_span(c, cfg, plan_m=4).m == 1
        assert estimate_span(c, LearnConfig(hull_weighting=weighting, gap_min=3.0)).m == 1

    def test_a_given_m_without_a_plan_keeps_m_plus_two_singular_values(self):
        # d = 4, singular values 1, 3.5, 4, ..., 10.5 and m = 2 given without plan_m: the plan is m itself, not the
        # config's max_m = 6, so the diagnostics keep m + 2 = 4 smallest values and m = 2 ratios.
        s = np.concatenate([[1.0], np.arange(3.5, 10.6, 0.5)])
        A, b = self._with_singular_values(s, 40, 0)
        span = estimate_span(_constraints(A, b, np.full(40, 0.01), 0.01), LearnConfig(hull_weighting="none"), m=2)
        assert (span.m, span.m_estimated) == (2, False)
        np.testing.assert_allclose(span.singular_values, s[:4], rtol=1e-10)
        np.testing.assert_allclose(span.gap_ratios, s[1:3] / s[:2], rtol=1e-10)

    @pytest.mark.parametrize("weighting", ["precision", "irls", "none"])
    def test_as_many_constraints_as_unknowns_suffice(self, weighting):
        # d = 2: four independent constraints pin Θ (m = 1) exactly, whatever the row weights. (plan_m is at most
        # d² − 1 here: the gap rule reads plan_m ratios of the d² singular values.)
        A = np.array([[2.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 4.0, 0.0], [1.0, 0.0, 0.0, 0.5]])
        c = _constraints(A, A @ [1.0, 2.0, 3.0, 4.0], np.full(4, 0.01), 0.01,
                         p_token=np.full(4, 0.5), p_ref=np.full(4, 0.25))
        span = estimate_span(c, LearnConfig(hull_weighting=weighting), m=1, plan_m=3)
        np.testing.assert_allclose(span.theta_star, [[1.0, 2.0], [3.0, 4.0]], rtol=0, atol=1e-13)
        assert span.m_estimated is False

    @pytest.mark.parametrize("weighting", ["precision", "irls", "none"])
    def test_diagnostics_against_a_known_truth(self, weighting):
        # d = 2, heads vec Θ_1 = (2, 1, 0, 0), Θ_2 = (2, −1, 0, 0): Θ* = (2, 0, 0, 0) and the hull's direction e₂.
        # No constraint sees e₂ and b = A·(3, 0, 0, 0), so the estimate is the parallel line through (3, 0, 0, 0):
        # error ‖(1, 0, 0, 0)‖/‖Θ*‖ = 1/2, principal cosine 1, and each head is ‖(−1, 0, 0, 0)‖/‖Θ_i‖ = 1/√5 away.
        rng = np.random.default_rng(5)
        A = rng.normal(size=(12, 4))
        A[:, 1] = 0.0
        c = _constraints(A, A @ [3.0, 0.0, 0.0, 0.0], np.full(12, 0.01), 0.01,
                         p_token=rng.uniform(0.2, 0.5, 12), p_ref=rng.uniform(0.2, 0.5, 12))
        truth = AttentionLayer(np.array([[[2.0, 1.0], [0.0, 0.0]], [[2.0, -1.0], [0.0, 0.0]]]), np.zeros((2, 2, 2)))
        span = estimate_span(c, LearnConfig(hull_weighting=weighting), m=2, plan_m=3, truth=truth)
        np.testing.assert_allclose(span.theta_star, [[3.0, 0.0], [0.0, 0.0]], rtol=0, atol=1e-12)
        assert span.theta_star_error == pytest.approx(0.5, abs=1e-12)
        np.testing.assert_allclose(span.principal_cosines, [1.0], rtol=0, atol=1e-12)
        assert span.hull_distance == pytest.approx(1 / np.sqrt(5), abs=1e-12)
        # One head at (2, 0, 0, 0) and a one-point hull (m = 1): no directions to compare, an empty array.
        A[:, 1] = rng.normal(size=12)
        c = _constraints(A, A @ [3.0, 0.0, 0.0, 0.0], np.full(12, 0.01), 0.01,
                         p_token=rng.uniform(0.2, 0.5, 12), p_ref=rng.uniform(0.2, 0.5, 12))
        one = AttentionLayer(np.array([[[2.0, 0.0], [0.0, 0.0]]]), np.zeros((1, 2, 2)))
        span = estimate_span(c, LearnConfig(hull_weighting=weighting), m=1, plan_m=3, truth=one)
        assert span.theta_star_error == pytest.approx(0.5, abs=1e-12)
        assert isinstance(span.principal_cosines, np.ndarray) and span.principal_cosines.shape == (0,)
        assert span.hull_distance == pytest.approx(0.5, abs=1e-12)


class TestHullSolve:
    @pytest.mark.parametrize("directions_from", ["weights", "irls"])
    def test_min_norm_point_is_orthogonal_to_the_directions(self, directions_from):
        # Θ* is the minimum-norm point of Θ* + span V, so Vᵀ Θ* = 0; noisy constraints whose hull directions are
        # only nearly null (A V ≠ 0) and IRLS weights unlike the given ones make this a real check.
        rng = np.random.default_rng(3)
        A = rng.standard_normal((60, 9))
        A[:, :2] *= 0.05
        b = A @ rng.standard_normal(9) + 0.1 * rng.standard_normal(60)
        theta, V, S = hull_solve(A, b, 3, weights=rng.uniform(0.2, 1.0, 60), directions_from=directions_from)
        assert V.shape == (9, 2) and S.shape == (9,)
        np.testing.assert_allclose(V.T @ V, np.eye(2), rtol=0, atol=1e-12)
        assert np.abs(V.T @ theta).max() < 1e-12 * np.linalg.norm(theta)

    @pytest.mark.parametrize("directions_from", ["weights", "irls"])
    def test_weights_are_read_as_float64(self, directions_from):
        # float32 constraints and weights: the weights are read as float64, so every product with them, and every
        # result, is float64 -- the singular values those of the float64 weighted matrix to rounding.
        rng = np.random.default_rng(4)
        A, w = rng.standard_normal((60, 9)).astype(np.float32), rng.uniform(0.2, 1.0, 60).astype(np.float32)
        b = rng.standard_normal(60)
        theta, V, S = hull_solve(A, b, 2, weights=w, irls_rounds=0, directions_from=directions_from)
        assert theta.dtype == V.dtype == S.dtype == np.float64
        S0 = np.linalg.svd(A.astype(float) * w.astype(float)[:, None], compute_uv=False)[::-1]
        np.testing.assert_allclose(S, S0, rtol=0, atol=1e-12 * S0.max())


class TestRankDeficit:
    """Constraints that leave directions of Θ unpinned: refused by default; with m given and ``allow_deficit``,
    the min-norm Θ* (nothing along the unpinned directions) and their count."""

    @staticmethod
    def _deficient(d=3, rows=40, missing=2, seed=0):
        from types import SimpleNamespace

        rng = np.random.default_rng(seed)
        basis = np.linalg.qr(rng.standard_normal((d * d, d * d)))[0]
        kept, null = basis[:, missing:], basis[:, :missing]  # the rows never touch the first `missing` directions
        A = rng.standard_normal((rows, d * d - missing)) @ kept.T
        theta = rng.standard_normal(d * d)
        return SimpleNamespace(A=A, b=A @ theta), theta, null

    def test_refused_by_default_and_when_m_is_estimated(self):
        c, _, _ = self._deficient()
        with pytest.raises(HullUndetermined, match="rank 7 for d²=9"):
            estimate_span(c, LearnConfig(hull_weighting="none"), m=1)
        with pytest.raises(HullUndetermined, match="rank 7"):
            estimate_span(c, LearnConfig(hull_weighting="none"), m=None, allow_deficit=True, plan_m=1)

    def test_allowed_with_m_given(self):
        c, theta, null = self._deficient()
        est = estimate_span(c, LearnConfig(hull_weighting="none"), m=1, allow_deficit=True)
        assert est.rank_deficit == 2 and est.summary()["rank_deficit"] == 2
        star = est.theta_star.ravel()
        np.testing.assert_allclose(null.T @ star, 0, atol=1e-10)  # nothing along the unpinned directions
        pinned = theta - null @ (null.T @ theta)
        np.testing.assert_allclose(star, pinned, atol=1e-8)  # and the pinned part exactly (exact constraints)

    def test_control_full_rank_records_no_deficit(self):
        c, theta, _ = self._deficient(missing=0)
        est = estimate_span(c, LearnConfig(hull_weighting="none"), m=1, allow_deficit=True)
        assert est.rank_deficit == 0 and "rank_deficit" not in est.summary()
        np.testing.assert_allclose(est.theta_star.ravel(), theta, atol=1e-8)
