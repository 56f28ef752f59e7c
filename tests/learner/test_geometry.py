"""learner.min_norm_point: the projection of the origin onto the affine hull of the points."""

from fractions import Fraction

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learner import min_norm_point, random_layer


class TestMinNormPoint:
    @pytest.mark.parametrize(
        ("points", "expected"),
        [
            ([[1.0, 0.0], [0.0, 1.0]], [0.5, 0.5]),  # the segment's closest point to 0
            ([[2.0, 1.0]], [2.0, 1.0]),  # one point: itself
            ([[1.0, 1.0], [1.0, -1.0], [1.0, 3.0]], [1.0, 0.0]),  # collinear points: the line x = 1
            ([[1.0, 0.0], [-1.0, 0.0]], [0.0, 0.0]),  # hull through the origin
        ],
        ids=["segment", "single", "collinear", "through-origin"],
    )
    def test_known_points(self, points, expected):
        # Exact answers; float least squares is within a few ulps.
        assert_allclose(min_norm_point(points), expected, rtol=0, atol=1e-15)
        assert min_norm_point(points, exact=True) == [Fraction(v) for v in expected]

    @pytest.mark.parametrize("m", [1, 2, 3, 5])
    def test_orthogonal_to_the_hull_and_inside_it(self, m):
        thetas = random_layer(m, 6, check=False, rng=m).thetas
        star = min_norm_point(thetas)
        # Orthogonality up to rounding of 36 products of O(1) numbers.
        for t in thetas:
            assert abs(np.sum((t - star) * star)) < 1e-12
        # Inside the hull: star − Θ_1 is in the span of the differences.
        resid = (star - thetas[0]).ravel()
        if m > 1:
            D = (thetas[1:] - thetas[0]).reshape(m - 1, -1).T
            resid = resid - D @ np.linalg.lstsq(D, resid, rcond=None)[0]
        assert np.linalg.norm(resid) < 1e-12

    def test_exact_matches_float(self):
        thetas = random_layer(3, 4, check=False, rng=7).thetas
        exact = np.array(min_norm_point(thetas, exact=True), dtype=float)
        # Float least squares of a well-conditioned 2-column problem: ~1e-15 relative.
        assert_allclose(min_norm_point(thetas), exact, rtol=0, atol=1e-13)

    def test_repeated_points_are_handled(self):
        thetas = random_layer(2, 3, check=False, rng=1).thetas
        stacked = np.concatenate([thetas, thetas[:1]])
        assert_allclose(min_norm_point(stacked), min_norm_point(thetas), rtol=0, atol=1e-13)
        assert min_norm_point(stacked, exact=True) == min_norm_point(thetas, exact=True)

    @pytest.mark.parametrize(
        ("points", "match"),
        [(np.zeros((0, 2)), "at least one point"), ([[np.nan, 1.0]], "finite"), (3.0, "at least one point")],
        ids=["empty", "nan", "scalar"],
    )
    def test_bad_input(self, points, match):
        with pytest.raises(ValueError, match=match):
            min_norm_point(points)
