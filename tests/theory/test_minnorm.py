"""theory.minnorm: ⟨Θ_i − Θ*, Θ*⟩ = 0 for the min-norm point of the heads' affine hull."""

import numpy as np
import pytest

from learner import random_layer
from theory.minnorm import (
    check_min_norm_orthogonality,
    control_min_norm_orthogonality,
    default_min_norm_orthogonality,
)
from theory.testing import assert_check_fails, assert_check_holds


class TestCheckMinNormOrthogonality:
    @pytest.mark.parametrize("m", [1, 2, 4])
    def test_exact_inner_products_are_zero(self, m):
        result = check_min_norm_orthogonality(random_layer(m, 5, check=False, rng=m).thetas)
        assert_check_holds(result)
        assert result.details["exactly_zero"] is True and result.measured == 0.0

    def test_float_mode_within_rounding(self):
        result = check_min_norm_orthogonality(random_layer(3, 8, rng=0).thetas, exact=False)
        assert_check_holds(result)
        assert result.measured < 1e-13  # rounding of 64 products after a 2-column solve

    @pytest.mark.parametrize("exact", [True, False], ids=["exact", "float"])
    def test_other_points_of_the_hull_fail(self, exact):
        thetas = random_layer(3, 6, rng=2).thetas
        for point in (thetas[0], thetas.mean(axis=0), 2 * thetas[1] - thetas[2]):
            assert_check_fails(check_min_norm_orthogonality(thetas, point=point, exact=exact))

    def test_hull_through_origin(self):
        # Θ* = 0 when the hull contains the origin: every inner product is 0.
        thetas = np.stack([np.eye(3), -np.eye(3)])
        assert_check_holds(check_min_norm_orthogonality(thetas))

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"thetas": np.zeros((2, 3, 3))}, ValueError, "all zero"),
            ({"thetas": np.zeros((3, 3))}, ValueError, "3 dimensions"),
            ({"thetas": np.ones((2, 3, 3)), "point": np.ones((2, 2))}, ValueError, r"`point` must have shape \(3, 3\)"),
            ({"thetas": np.full((1, 2, 2), np.inf)}, ValueError, "finite"),
        ],
        ids=["all-zero", "2-d", "point-shape", "inf"],
    )
    def test_bad_input(self, kwargs, error, match):
        with pytest.raises(error, match=match):
            check_min_norm_orthogonality(**kwargs)


class TestCases:
    def test_default_holds_and_control_fails(self):
        assert_check_holds(default_min_norm_orthogonality(rng=0))
        assert_check_fails(control_min_norm_orthogonality(rng=0))
