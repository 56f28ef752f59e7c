"""Phase 5's small rules on constructed inputs: the gap rule that estimates m, the numerical rank, the SVD routes."""

import numpy as np
import pytest

from learner.phases.span import _gap_m, _numerical_rank, _svd


class TestGapRule:
    def test_a_ratio_equal_to_gap_min_is_a_gap(self):
        # Ascending singular values 1, 1.5, 4.5: ratios 1.5 and 3. With gap_min = 3 the gap after the second value
        # counts (the rule is ratio >= gap_min), so m = 2 + 1 = 3; just above 3 there is no gap and m = 1.
        S = np.array([1.0, 1.5, 4.5])
        m, ratios = _gap_m(S, 2, 3.0)
        np.testing.assert_array_equal(ratios, [1.5, 3.0])
        assert m == 3
        assert _gap_m(S, 2, np.nextafter(3.0, 4.0))[0] == 1

    def test_first_clear_gap_position(self):
        S = np.array([1.0, 10.0, 11.0, 12.0])
        assert _gap_m(S, 3, 2.0)[0] == 2  # the gap follows the first value
        assert _gap_m(np.array([1.0, 1.1, 1.2, 50.0]), 3, 2.0)[0] == 4  # the gap follows the third

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
