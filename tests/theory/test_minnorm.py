"""theory.minnorm: ⟨Θ_i − Θ*, Θ*⟩ = 0 for the min-norm point of the heads' affine hull."""

import time
from fractions import Fraction

import numpy as np
import pytest

from learner import random_layer
from theory.minnorm import (
    FLOAT_TOL,
    _inner_products_exact,
    check_min_norm_orthogonality,
    control_min_norm_orthogonality,
    default_min_norm_orthogonality,
)
from theory.registry import CHECKS
from theory.testing import assert_check_fails, assert_check_holds

# Two 2×2 heads small enough to work by hand: with the point Θ_1 (in the hull, not the min-norm point),
# ⟨Θ_1 − Θ_1, Θ_1⟩ = 0 and ⟨Θ_2 − Θ_1, Θ_1⟩ = ⟨[[2, −2], [0, 1]], [[1, 2], [0, 0]]⟩ = 2 − 4 = −2;
# ‖Θ_1‖² = 5, ‖Θ_2‖² = 10, so the normalised worst product is 2/10.
HAND_THETAS = np.array([[[1.0, 2.0], [0.0, 0.0]], [[3.0, 0.0], [0.0, 1.0]]])


def _reference_measured(thetas, point):
    """max_i |⟨Θ_i, P⟩ − ‖P‖²| / max_i ‖Θ_i‖², in rationals (the same quantity, expanded differently)."""
    rows = [[Fraction(float(v)) for v in np.ravel(t)] for t in thetas]
    p = [Fraction(float(v)) for v in np.ravel(point)]
    p2 = sum(v * v for v in p)
    products = [sum(a * b for a, b in zip(row, p, strict=True)) - p2 for row in rows]
    scale = max(sum(a * a for a in row) for row in rows)
    return max(abs(q) for q in products) / scale


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

    @pytest.mark.parametrize("exact", [True, False], ids=["exact", "float"])
    def test_measured_matches_the_hand_computation(self, exact):
        result = check_min_norm_orthogonality(HAND_THETAS, point=HAND_THETAS[0], exact=exact)
        assert_check_fails(result)
        # Small integers: every product and the division by 10 are exact or correctly rounded in both modes.
        assert result.measured == 0.2
        assert result.details["inner_products"] == [0.0, -2.0]
        assert result.details["scale"] == 10.0

    @pytest.mark.parametrize("exact", [True, False], ids=["exact", "float"])
    def test_measured_matches_a_rational_reference(self, exact):
        thetas = random_layer(3, 4, rng=5).thetas
        point = thetas.mean(axis=0)
        result = check_min_norm_orthogonality(thetas, point=point, exact=exact)
        assert_check_fails(result)
        reference = float(_reference_measured(thetas, point))
        # Exact mode rounds one rational, the same one; float mode rounds 16 products per head (≲ 1e-15 relative).
        assert result.measured == pytest.approx(reference, rel=0 if exact else 1e-12)
        norms2 = [float(np.linalg.norm(t) ** 2) for t in thetas]
        assert result.details["scale"] == pytest.approx(max(norms2), rel=1e-15)  # one rounding order apart
        assert result.details["scale"] < sum(norms2)

    @pytest.mark.parametrize("exact", [True, False], ids=["exact", "float"])
    @pytest.mark.parametrize("point_given", [True, False], ids=["point", "min-norm"])
    def test_parameters_record_the_run(self, exact, point_given):
        point = HAND_THETAS[1] if point_given else None
        result = check_min_norm_orthogonality(HAND_THETAS, point=point, exact=exact)
        assert result.parameters == {"m": 2, "d": 2, "exact": exact, "point_given": point_given}
        assert result.bound == (0.0 if exact else FLOAT_TOL)
        assert result.details["exactly_zero"] is ((not point_given) if exact else None)

    def test_non_square_matrices(self):
        # The geometry does not need square Θ_i (they are flattened); `d` records the rows.
        thetas = np.arange(1.0, 13.0).reshape(2, 2, 3)
        result = check_min_norm_orthogonality(thetas)
        assert_check_holds(result)
        assert result.parameters["d"] == 2
        assert_check_fails(check_min_norm_orthogonality(thetas, point=thetas[0]))

    def test_result_names_the_check(self):
        result = check_min_norm_orthogonality(HAND_THETAS)
        assert result.name in CHECKS and CHECKS[result.name].check == "check_min_norm_orthogonality"
        assert isinstance(result.claim, str) and "min-norm" in result.claim
        assert isinstance(result.source, str) and result.source

    def test_seconds_is_the_wall_time_of_the_call(self):
        start = time.perf_counter()
        result = check_min_norm_orthogonality(random_layer(3, 6, rng=1).thetas)
        elapsed = time.perf_counter() - start
        assert 0 < result.seconds <= elapsed

    def test_hull_through_origin(self):
        # Θ* = 0 when the hull contains the origin: every inner product is 0.
        thetas = np.stack([np.eye(3), -np.eye(3)])
        assert_check_holds(check_min_norm_orthogonality(thetas))

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"thetas": np.zeros((2, 3, 3))}, ValueError, "all zero"),
            ({"thetas": np.ones((2, 0, 3))}, ValueError, "all zero"),
            ({"thetas": np.zeros((0, 3, 3))}, ValueError, r"at least one matrix; got shape \(0, 3, 3\)"),
            ({"thetas": np.zeros((3, 3))}, ValueError, "`thetas` must have 3 dimensions"),
            ({"thetas": np.ones((2, 3, 3)), "point": np.ones((2, 2))}, ValueError, r"`point` must have shape \(3, 3\)"),
            ({"thetas": np.ones((2, 3, 3)), "point": np.ones((1, 3, 3))}, ValueError, "`point` must have 2 dimensions"),
            ({"thetas": np.ones((2, 3, 3)), "point": np.full((3, 3), np.nan)}, ValueError, "`point` must be finite"),
            ({"thetas": np.full((1, 2, 2), np.inf)}, ValueError, "`thetas` must be finite"),
        ],
        ids=["all-zero", "empty-matrices", "no-matrix", "2-d", "point-shape", "point-3-d", "point-nan", "inf"],
    )
    def test_bad_input(self, kwargs, error, match):
        with pytest.raises(error, match=match):
            check_min_norm_orthogonality(**kwargs)


class TestInnerProductsExact:
    @pytest.mark.parametrize("nested", [True, False], ids=["nested", "flat"])
    def test_against_the_expanded_form(self, nested):
        thetas = random_layer(2, 3, rng=4).thetas
        star = [[Fraction(float(v)) for v in row] for row in thetas.mean(axis=0)]
        expected = [sum(Fraction(float(a)) * b for a, b in zip(np.ravel(t), sum(star, []), strict=True))
                    - sum(b * b for b in sum(star, [])) for t in thetas]
        assert _inner_products_exact(thetas, star if nested else sum(star, [])) == expected

    def test_refuses_a_point_of_another_size(self):
        thetas = np.ones((2, 2, 2))
        with pytest.raises(ValueError, match="zip"):
            _inner_products_exact(thetas, [Fraction(1)] * 3)


class TestCases:
    def test_default_holds_and_control_fails(self):
        assert_check_holds(default_min_norm_orthogonality(rng=0))
        assert_check_fails(control_min_norm_orthogonality(rng=0))

    @pytest.mark.parametrize("case", [default_min_norm_orthogonality, control_min_norm_orthogonality])
    def test_default_sizes(self, case):
        params = case(rng=0).parameters
        assert (params["m"], params["d"]) == (3, 8)
        assert params["point_given"] is (case is control_min_norm_orthogonality)

    def test_control_layer_follows_rng(self):
        # The centroid's inner products depend on the layer drawn: equal for one seed, different for another.
        products = [control_min_norm_orthogonality(m=2, d=3, rng=seed).details["inner_products"] for seed in (7, 7, 8)]
        assert products[0] == products[1] != products[2]
