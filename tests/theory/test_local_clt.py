"""theory.local_clt: ⟨a, x⟩ on Boolean slices, exact by dynamic programming, against the Gaussian.

Reference values come from enumerating the slice (``brute_force_distribution``,
all C(n, w) points, n <= 16) and from scipy's normal CDF.
"""

import dataclasses
import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from scipy.special import ndtr
from scipy.stats import norm

from theory.local_clt import (
    DEFAULT_BOUND,
    DEFAULT_DELTA_FACTOR,
    MAX_CELLS,
    _auto_quantum,
    _case,
    _cells,
    _coefficients,
    _Gauss,
    _signed_sups,
    _slice_spacing,
    brute_force_distribution,
    check_local_clt,
    control_local_clt,
    default_local_clt,
    local_clt_sweep,
    plot_local_clt,
    slice_distribution,
    slice_moments,
)
from theory.testing import assert_check_fails, assert_check_holds, slices

# Probabilities of atoms and windows: the programme multiplies n transition
# probabilities per path and adds; enumeration adds C(n, w) terms of 1/C(n, w).
# Both are O(n·eps) ≈ 1e-14 relative at n <= 16, so 1e-12 absolute is rounding.
PROB_TOL = 1e-12


def _dense_local_error(dist, delta, *, nudge=1e-10):
    """Independent sup_t |P(S ∈ [t, t+δ)) − G| / (δ φ_max), evaluated just inside every step of t ↦ P.

    The steps of P sit at s − δ and s for each atom s; probing them ± ``nudge``
    and at the mode of G reaches every value of P and every extreme of G up to
    ``nudge · φ_max`` (relative ``nudge/δ``).
    """
    sigma = math.sqrt(dist.variance)
    steps = np.concatenate([dist.values - delta, dist.values])
    t = np.concatenate([steps - nudge, steps + nudge, [dist.mean - delta / 2]])
    cum = np.concatenate([[0.0], np.cumsum(dist.probabilities)])
    p = cum[np.searchsorted(dist.values, t + delta, side="left")] - cum[np.searchsorted(dist.values, t, side="left")]
    g = norm.cdf(t + delta, dist.mean, sigma) - norm.cdf(t, dist.mean, sigma)
    return float(np.max(np.abs(p - g))) / (delta / (sigma * math.sqrt(2 * math.pi)))


def _scaled(raw, weight):
    """``raw`` scaled so that Var S = 1 on the slice, and the scale."""
    s = 1 / math.sqrt(slice_moments(raw, weight)[1])
    return np.asarray(raw, dtype=float) * s, s


class TestSliceMoments:
    @pytest.mark.parametrize("n", [2, 3, 7, 12, 16])
    @pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 0.8, 1.0])
    def test_against_enumeration(self, n, fraction):
        weight = round(fraction * n)
        a = np.random.default_rng(n).standard_normal(n) + 0.7  # a non-zero mean makes E S ≠ 0 off the middle slice
        dist = brute_force_distribution(a, weight)
        mean, var = slice_moments(a, weight)
        # 1e-12: an fsum of <= 16 terms against a float dot product over <= 12870 atoms.
        assert mean == pytest.approx(dist.values @ dist.probabilities, abs=1e-12)
        assert var == pytest.approx(((dist.values - mean) ** 2) @ dist.probabilities, abs=1e-12)

    @given(slices(max_n=10))
    def test_property_matches_enumeration(self, case):
        """For every coefficient vector and weight, the closed forms equal the enumerated moments."""
        a, weight = case
        dist = brute_force_distribution(a, weight)
        mean, var = slice_moments(a, weight)
        scale = 1.0 + float(np.sum(np.abs(a))) ** 2  # |S| <= Σ|a_j|: rounding is relative to that
        assert abs(mean - dist.values @ dist.probabilities) <= 1e-12 * scale
        assert abs(var - ((dist.values - mean) ** 2) @ dist.probabilities) <= 1e-12 * scale

    def test_only_the_centred_part_matters(self):
        a = np.array([0.3, -1.2, 2.0, 0.5, 1.1])
        assert slice_moments(a + 5.0, 2)[1] == pytest.approx(slice_moments(a, 2)[1], rel=1e-13)


class TestSliceDistribution:
    @pytest.mark.parametrize("n", [1, 4, 9, 14, 16])
    def test_integer_coefficients_match_enumeration(self, n):
        rng = np.random.default_rng(n)
        a = rng.integers(-5, 6, size=n)
        for weight in range(n + 1):
            dp, bf = slice_distribution(a, weight), brute_force_distribution(a, weight)
            assert dp.exact and dp.error_bound == 0.0
            np.testing.assert_array_equal(dp.values, bf.values)  # integers: both exact
            np.testing.assert_allclose(dp.probabilities, bf.probabilities, rtol=0, atol=PROB_TOL)

    @given(slices(max_n=10, integer=True))
    def test_property_integer_slices(self, case):
        """For integer coefficients the programme reproduces the enumerated distribution atom by atom."""
        a, weight = case
        dp, bf = slice_distribution(a, weight), brute_force_distribution(a, weight)
        np.testing.assert_array_equal(dp.values, bf.values)
        np.testing.assert_allclose(dp.probabilities, bf.probabilities, rtol=0, atol=PROB_TOL)

    @pytest.mark.parametrize("quantum", [0.125, 0.1, 0.37])
    def test_multiples_of_a_quantum(self, quantum):
        k = np.random.default_rng(3).integers(-6, 7, size=13)
        a = k * quantum
        dp, bf = slice_distribution(a, 6, quantum=quantum), brute_force_distribution(a, 6)
        # a_j = k_j·h is on the grid as a float, so e = 0. Unless h is dyadic the enumerated float
        # sums of one atom differ in the last bits (enumeration merges only equal floats), so the
        # atoms are compared after grouping the enumerated sums by their grid index.
        assert dp.exact
        index = np.round(bf.values / quantum).astype(int)
        grid, where = np.unique(index, return_inverse=True)
        grouped = np.bincount(where, weights=bf.probabilities)
        np.testing.assert_array_equal(np.round(dp.values / quantum).astype(int), grid)
        np.testing.assert_allclose(dp.values, grid * quantum, rtol=0, atol=1e-12)
        np.testing.assert_allclose(dp.probabilities, grouped, rtol=0, atol=PROB_TOL)
        if quantum == 0.125:  # dyadic: every sum is an exact float, nothing to group
            assert grid.size == bf.values.size

    @pytest.mark.parametrize("n", [6, 11, 15])
    @pytest.mark.parametrize("quantum", [1e-1, 1e-3])
    def test_real_coefficients_within_the_bracket(self, n, quantum):
        rng = np.random.default_rng(n)
        a = rng.standard_normal(n)
        weight = n // 3
        dp, bf = slice_distribution(a, weight, quantum=quantum), brute_force_distribution(a, weight)
        assert 0 < dp.error_bound <= n * quantum / 2 + 1e-12
        sigma = math.sqrt(dp.variance)
        t = rng.uniform(-3 * sigma, 3 * sigma, size=400) + dp.mean
        for delta in (0.05 * sigma, 0.3 * sigma):
            truth = bf.window_bounds(t, delta)
            lo, hi = dp.window_bounds(t, delta)
            np.testing.assert_array_equal(truth[0], truth[1])  # enumeration is exact: e = 0
            assert np.all(lo <= truth[0] + PROB_TOL) and np.all(truth[0] <= hi + PROB_TOL)

    def test_windows_match_enumeration(self):
        a = np.random.default_rng(7).integers(-9, 10, size=16)
        dp, bf = slice_distribution(a, 9), brute_force_distribution(a, 9)
        t = np.linspace(-40, 40, 2001)  # includes integers: windows that start exactly on atoms
        for delta in (0.5, 1.0, 2.0, 7.3):
            np.testing.assert_allclose(dp.window_bounds(t, delta)[0], bf.window_bounds(t, delta)[0], atol=PROB_TOL)

    @pytest.mark.parametrize("weight", [0, 1, 8, 15, 16])
    def test_normalised_and_symmetric_weights(self, weight):
        a = np.random.default_rng(1).standard_normal(16)
        dist = slice_distribution(a, weight, quantum=1e-3)
        assert math.fsum(dist.probabilities) == pytest.approx(1.0, abs=1e-13)  # n·eps rounding
        mirror = slice_distribution(-a, 16 - weight, quantum=1e-3)  # x ↦ −x maps the slices onto each other
        np.testing.assert_allclose(dist.values, mirror.values, atol=1e-12)
        np.testing.assert_allclose(dist.probabilities, mirror.probabilities, atol=PROB_TOL)

    def test_result_is_frozen(self):
        dist = slice_distribution([1, 2, 3], 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            dist.weight = 2
        with pytest.raises(ValueError, match="read-only"):
            dist.probabilities[0] = 1.0

    def test_budget(self):
        # 11 counts × (2e7 + 1) grid points: refused before anything is allocated.
        with pytest.raises(ValueError, match=r"over the budget of \d+.*n=20, weight=10"):
            slice_distribution(np.full(20, 10**6), 10)
        assert MAX_CELLS * 8 <= 2**30  # the budget stays under 1 GiB (plus one temporary of the same size)


class TestBruteForceDistribution:
    @pytest.mark.parametrize(("n", "weight"), [(1, 0), (1, 1), (6, 3), (16, 8)])
    def test_constant_coefficients_have_one_atom(self, n, weight):
        dist = brute_force_distribution(np.ones(n), weight)
        np.testing.assert_array_equal(dist.values, [2 * weight - n])
        np.testing.assert_array_equal(dist.probabilities, [1.0])

    def test_distinct_powers_of_two(self):
        # a_j = 2^j: every subset has its own sum, so there are C(n, w) equally likely atoms.
        dist = brute_force_distribution(2.0 ** np.arange(10), 4)
        assert dist.values.size == math.comb(10, 4)
        np.testing.assert_allclose(dist.probabilities, 1 / math.comb(10, 4), rtol=1e-15)


class TestCheckLocalClt:
    @pytest.mark.parametrize(
        ("a", "weight", "delta", "quantum"),
        [
            (np.arange(1, 13), 6, 0.3, None),
            (np.random.default_rng(0).integers(-4, 5, size=15), 5, 1.7, None),
            (np.random.default_rng(1).integers(-40, 41, size=14) / 8, 7, 0.2, 1 / 8),
        ],
        ids=["1..12", "integers", "dyadic"],
    )
    def test_sup_over_t_is_exact(self, a, weight, delta, quantum):
        result = check_local_clt(a, weight, delta=delta, quantum=quantum)
        assert result.details["exact"] and result.interval == (result.measured, result.measured)
        dense = _dense_local_error(brute_force_distribution(a, weight), delta)
        # The dense probe is within nudge/δ ≈ 1e-9 of the sup; everything else is rounding.
        assert result.measured == pytest.approx(dense, abs=1e-8)

    @pytest.mark.parametrize("n", [10, 14, 16])
    @pytest.mark.parametrize("quantum", [None, 1e-3])
    def test_interval_contains_the_unquantised_value(self, n, quantum):
        a, _ = _scaled(np.random.default_rng(n).standard_normal(n), n // 2)
        delta = 0.25 / math.sqrt(n)
        result = check_local_clt(a, n // 2, delta=delta, quantum=quantum)
        truth = _dense_local_error(brute_force_distribution(a, n // 2), delta)
        lo, hi = result.interval
        assert lo <= result.measured <= hi
        assert lo - 1e-8 <= truth <= hi + 1e-8  # nudge/δ of the dense probe
        assert result.exact  # no sampling: failure_probability is None

    def test_verdict_uses_the_upper_end(self):
        a, _ = _scaled(np.random.default_rng(5).standard_normal(32), 16)
        result = check_local_clt(a, 16, delta=0.25 / math.sqrt(32))
        hi = result.interval[1]
        assert check_local_clt(a, 16, delta=0.25 / math.sqrt(32), bound=hi).holds
        assert not check_local_clt(a, 16, delta=0.25 / math.sqrt(32), bound=(result.measured + hi) / 2).holds

    @pytest.mark.parametrize(("half_windows", "expected"), [(4, 1 / 9), (8, 1 / 17), (20, 1 / 41)])
    def test_lattice_holds_above_its_spacing(self, half_windows, expected):
        # δ = (m + 1/2)·h: a window holds m or m + 1 atoms of mass ≈ hφ, so the error is ≈ (h/2)/δ = 1/(2m+1).
        a, s = _scaled(np.random.default_rng(0).integers(1, 4, size=64).astype(float), 32)
        spacing = 2 * s
        result = check_local_clt(a, 32, delta=(half_windows + 0.5) * spacing, quantum=s)
        assert result.details["lattice_spacing"] == pytest.approx(spacing, rel=1e-12)
        assert result.measured == pytest.approx(expected, rel=0.05)  # Gaussian curvature over one window: a few %
        assert_check_holds(result)

    @pytest.mark.parametrize("eps", [0.0, 1e-9, 1e-4, 1e-2], ids=["lattice", "1e-9", "1e-4", "1e-2"])
    def test_near_lattice_fails(self, eps):
        # Entries within eps·s of the lattice sℤ; n = 32, δ = σ/(4√n) ≈ h/10.
        raw = np.random.default_rng(4).integers(1, 4, size=32).astype(float)
        a, _ = _scaled(raw + eps * np.random.default_rng(5).standard_normal(32), 16)
        result = check_local_clt(a, 16, delta=0.25 / math.sqrt(32))
        assert_check_fails(result)
        assert result.interval[0] > 4 * DEFAULT_BOUND  # measured 7.0–8.4 (eps <= 1e-2)

    def test_shifted_lattice_fails_on_the_slice(self):
        # a_j = π + k_j: on the full cube Σ a_j x_j is not on a lattice, but on a slice only
        # a_i − a_j ∈ ℤ matters, so S lives on a coset of 2ℤ (scaled).
        k = np.random.default_rng(0).integers(0, 5, size=32)
        a, _ = _scaled(math.pi + k, 16)
        result = check_local_clt(a, 16, delta=0.25 / math.sqrt(32))
        assert_check_fails(result)
        assert result.interval[0] > 3.0  # measured 4.22 (spacing/δ ≈ 5.2)
        assert result.details["lattice_distance_of_differences"] < 1e-12 < result.details["lattice_distance"]

    def test_details(self):
        result = default_local_clt(n=32, rng=0)
        d = result.details
        assert d["sigma"] == pytest.approx(1.0, rel=1e-12)
        assert d["delta_over_sigma_per_sqrt_n"] == pytest.approx(0.25, rel=1e-12)
        assert 0 < d["quantisation_error_over_delta"] <= 1 / 40
        assert d["lattice_spacing"] is None and d["lattice_distance"] > 0.1
        # the ordinary CLT alone certifies only 2K/(δφ_max) for the relative local error
        assert d["clt_window_bound"] > d["sqrt_n_kolmogorov"] > 0
        assert result.to_dict()["failure_probability"] is None


class TestDefaultAndControl:
    def test_default_holds_with_margin(self):
        result = default_local_clt(rng=0)
        assert_check_holds(result)
        assert result.parameters["n"] == 64 and result.parameters["weight"] == 32
        # Regression: measured 0.0120 in [0.0010, 0.0352] (seed 0); over 6 seeds the upper end was <= 0.043.
        assert result.measured == pytest.approx(0.01196, abs=2e-4)
        assert result.interval[1] < DEFAULT_BOUND / 4

    def test_control_fails_with_margin(self):
        result = control_local_clt(rng=0)
        assert_check_fails(result)
        assert result.details["exact"] and result.details["spacing_over_delta"] > 8
        # Regression: 8.768 (seed 0); 8.2–9.4 over 6 seeds, i.e. ≈ spacing/δ − 1.
        assert result.measured == pytest.approx(8.7684, abs=1e-3)
        assert result.measured > 20 * DEFAULT_BOUND

    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_any_seed(self, seed):
        # Not a statistical statement: at n = 32 twenty seeds gave upper ends 0.04–0.07 (default)
        # and 8.0–9.5 (control); the bound 0.25 sits far from both.
        assert_check_holds(default_local_clt(n=32, rng=seed))
        assert_check_fails(control_local_clt(n=32, rng=seed))

    def test_seed_entropy_is_recorded(self):
        assert default_local_clt(n=16, rng=123).seed_entropy == 123


class TestLocalCltSweep:
    def test_nonarithmetic_error_decreases(self):
        sweep = local_clt_sweep(kind="nonarithmetic", rng=0)
        assert sweep.ns == (16, 32, 64) and sweep.weights == (8, 16, 32)
        # 20 seeds: 0.09–0.33 at n = 16, 0.02–0.044 at n = 32, 0.012–0.019 at n = 64 (point values),
        # so consecutive ranges do not overlap and the decrease is not luck of the seed.
        assert all(b < a for a, b in itertools.pairwise(sweep.local_error))
        assert sweep.local_error[-1] < 0.03 and sweep.local_error_upper[-1] < 0.05
        # S is symmetric on the middle slice: Kolmogorov error O(1/n) (n·K was 0.1–0.3), not 1/√n.
        assert all(0.05 < n * k < 0.5 for n, k in zip(sweep.ns, sweep.kolmogorov, strict=True))

    def test_arithmetic_error_does_not_vanish(self):
        sweep = local_clt_sweep(kind="arithmetic", rng=0)
        # ≈ spacing/δ − 1 ≈ 9 at every n (7.0–11.4 over 20 seeds).
        assert all(err > 5 for err in sweep.local_error)
        # The lattice's 1/√n Kolmogorov floor: half an atom, (h/2)φ_max ≈ 0.49/√n (0.40–0.64 over 10 seeds).
        assert all(0.35 < v < 0.7 for v in sweep.sqrt_n_kolmogorov)

    def test_skewed_has_the_clt_floor_but_a_small_local_error(self):
        sweep = local_clt_sweep(ns=(32, 64), kind="skewed", rng=0)
        # Exp(1) coefficients, weight n/4: √n·K in 0.066–0.44 over 10 seeds (the 1/√n regime) ...
        assert all(0.04 < v < 0.6 for v in sweep.sqrt_n_kolmogorov)
        # ... while the local error at n = 64 stays small (upper ends <= 0.14 over 10 seeds).
        assert sweep.local_error_upper[-1] < DEFAULT_BOUND
        assert sweep.results[-1].details["clt_window_bound"] > 1  # the ordinary CLT says nothing at scale δ

    def test_result_is_frozen_and_replayable(self):
        first = local_clt_sweep(ns=(8, 16), kind="arithmetic", rng=5)
        again = local_clt_sweep(ns=(8, 16), kind="arithmetic", rng=first.seed_entropy)
        assert first.local_error == again.local_error
        with pytest.raises(dataclasses.FrozenInstanceError):
            first.kind = "skewed"


class TestPlotLocalClt:
    def test_writes_png(self, tmp_path):
        pytest.importorskip("matplotlib")
        path = tmp_path / "local_clt.png"
        sweeps = plot_local_clt(path, ns=(8, 16, 32), rng=0)
        data = path.read_bytes()
        assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"
        assert [s.kind for s in sweeps] == ["nonarithmetic", "arithmetic", "skewed"]


def _window_errors(values, probs, alpha, beta, gauss, t):
    """``P(S ∈ [t + α, t + β)) − G(t)`` at the points ``t``: atoms summed directly, G from scipy's normal CDF."""
    mean, sigma, delta = gauss
    t = np.asarray(t, dtype=float)
    inside = (values[None, :] >= t[:, None] + alpha) & (values[None, :] < t[:, None] + beta)
    return inside @ probs - (norm.cdf(t + delta, mean, sigma) - norm.cdf(t, mean, sigma))


def _reached(values, probs, alpha, beta, gauss, t, sign, nudge=1e-9):
    """The largest ``sign·(P − G)`` on both sides of ``t`` (a sup there may be a one-sided limit); 0 at ±∞."""
    if math.isinf(t):
        return 0.0
    return float(np.max(sign * _window_errors(values, probs, alpha, beta, gauss, [t - nudge, t, t + nudge])))


class TestGaussianWindowMass:
    @pytest.mark.parametrize("x1", [-30.0, -12.0, -3.0, -0.3, 0.2, 3.0, 8.0, 12.0])
    def test_relative_accuracy_in_both_tails(self, x1):
        # At x1 = 12 both CDF values round to 1.0: only the upper-tail form keeps any digits there.
        mean, sigma, delta = 1.5, 2.0, 0.7
        t = mean + x1 * sigma
        with mpmath.workdps(60):
            lo, hi = (mpmath.mpf(t) - mean) / sigma, (mpmath.mpf(t) + delta - mean) / sigma
            exact = float(mpmath.ncdf(hi) - mpmath.ncdf(lo))
        assert _Gauss(mean, sigma, delta)(np.array([t]))[0] == pytest.approx(exact, rel=1e-9, abs=0)
        assert float(_Gauss(mean, sigma, delta)(t)) == pytest.approx(exact, rel=1e-9, abs=0)


def _random_sups_case(seed):
    rng = np.random.default_rng(seed)
    values = np.unique(np.round(rng.normal(0, 2, size=int(rng.integers(1, 9))), 3))
    probs = rng.dirichlet(np.ones(values.size))
    sigma = float(rng.uniform(0.3, 2.0))
    delta = float(rng.uniform(0.05, 1.5)) * sigma
    e = float(rng.uniform(0, delta / 3))
    alpha, beta = [(0.0, delta), (-e, delta + e), (e, delta - e)][seed % 3]
    return values, probs, alpha, beta, (float(rng.normal(0, 0.5)), sigma, delta)


_SUPS_CASES = {
    # The mode of G lies in the first step interval, where P = 0.01: G − P peaks there, at the mode.
    "mode-in-first-interval": (np.array([0.0, 1.0]), np.array([0.01, 0.99]), 0.0, 0.5, (0.0, 0.1, 0.5)),
    # The mode lies left of every step: G − P peaks at the mode with P = 0.
    "mode-left-of-all-steps": (np.array([0.0, 1.0]), np.array([0.5, 0.5]), 0.0, 0.2, (-1.0, 0.3, 0.2)),
    # Atoms follow the Gaussian but start at m − σ/2: G − P peaks on the far left, where P = 0, at the
    # first step (the mode of G lies further right, among the atoms).
    "truncated-left-tail": (
        np.linspace(-0.5, 4.0, 46),
        norm.pdf(np.linspace(-0.5, 4.0, 46)) / norm.pdf(np.linspace(-0.5, 4.0, 46)).sum(),
        0.0,
        0.25,
        (0.0, 1.0, 0.25),
    ),
    # A shrunk window (α > 0) and a widened one (α < 0) over a symmetric lattice.
    "shrunk": (np.arange(-4.0, 5.0, 2.0), np.array([1, 4, 6, 4, 1]) / 16, 0.1, 0.4, (0.0, 2.0, 0.5)),
    "widened": (np.arange(-4.0, 5.0, 2.0), np.array([1, 4, 6, 4, 1]) / 16, -0.3, 0.8, (0.0, 2.0, 0.5)),
    **{f"random-{seed}": _random_sups_case(seed) for seed in range(12)},
}


class TestSignedSups:
    @pytest.mark.parametrize("case", _SUPS_CASES.values(), ids=_SUPS_CASES.keys())
    def test_sups_and_where_they_are_reached(self, case):
        values, probs, alpha, beta, gauss = case
        mean, sigma, delta = gauss
        sup_pg, t_pg, sup_gp, t_gp = _signed_sups(values, probs, alpha, beta, _Gauss(mean, sigma, delta))
        # Independent sups: P − G probed just inside every step of t ↦ P, at the mode and far out.
        steps = np.concatenate([values - beta, values - alpha])
        probes = np.concatenate([steps - 1e-9, steps + 1e-9, [mean - delta / 2, -1e3, 1e3]])
        diff = _window_errors(values, probs, alpha, beta, gauss, probes)
        tol = 1e-8 / sigma  # the probes sit 1e-9 from the steps, where G moves by at most 1e-9·φ_max
        assert sup_pg == pytest.approx(max(0.0, float(diff.max())), abs=tol)
        assert sup_gp == pytest.approx(float(-diff.min()), abs=tol)
        # ... and each sup is reached (as a limit from one side) at the t returned with it.
        assert _reached(values, probs, alpha, beta, gauss, t_pg, +1) >= sup_pg - tol
        assert _reached(values, probs, alpha, beta, gauss, t_gp, -1) >= sup_gp - tol
        assert math.isfinite(t_gp) and (math.isfinite(t_pg) or sup_pg == 0.0)

    def test_ties_go_to_the_smaller_t(self):
        # One atom at 0, window [t, t + 1), G of N(0, 1) with δ = 1 (mode −1/2): P = 1 on (−1, 0], 0 elsewhere, and
        # G(−1) = Φ(0) − Φ(−1) = G(0) exactly (both branches of _Gauss compute ndtr(0) − ndtr(−1)). P − G is largest
        # at both ends of (−1, 0), G − P both at −1 (from the left) and at 0 (from the right): −1 is returned.
        values, probs, gauss = np.array([0.0]), np.array([1.0]), (0.0, 1.0, 1.0)
        sup_pg, t_pg, sup_gp, t_gp = _signed_sups(values, probs, 0.0, 1.0, _Gauss(*gauss))
        g = float(ndtr(0.0) - ndtr(-1.0))
        assert (sup_pg, sup_gp) == (1.0 - g, g) and (t_pg, t_gp) == (-1.0, -1.0)
        for t in (-1.0, 0.0):  # the tie, from the independent window errors
            assert _reached(values, probs, 0.0, 1.0, gauss, t, +1) == pytest.approx(1.0 - g, abs=1e-9)
            assert _reached(values, probs, 0.0, 1.0, gauss, t, -1) == pytest.approx(g, abs=1e-9)

    @pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.2), (0.3, 0.1)])
    def test_empty_window(self, alpha, beta):
        # [t + α, t + β) is empty: P ≡ 0, so P − G never exceeds 0 and G − P peaks at G's mode.
        gauss = _Gauss(0.4, 1.3, 0.5)
        sup_pg, t_pg, sup_gp, t_gp = _signed_sups(np.array([-1.0, 0.0, 2.0]), np.full(3, 1 / 3), alpha, beta, gauss)
        assert sup_pg == 0.0 and t_pg == math.inf
        assert t_gp == 0.4 - 0.5 / 2
        assert sup_gp == pytest.approx(norm.cdf(0.65, 0.4, 1.3) - norm.cdf(0.15, 0.4, 1.3), rel=1e-12)


class TestCheckLocalCltDetails:
    @pytest.mark.parametrize(
        ("a", "weight", "delta"),
        [
            (np.array([1, 2, 3, 4]), 2, 0.5),
            (np.arange(1, 13), 6, 0.3),
            (np.arange(1, 13), 6, 2.0),
            (np.arange(1, 13), 6, 5.0),
            (np.random.default_rng(0).integers(-4, 5, size=15), 5, 1.7),
            (np.array([1, 2, 3, 4, 7]), 4, 0.7),
            (np.array([0, 3, 5, -5, -4]), 4, 2.0),
            (np.array([1, 2, 4]), 1, 0.5),
        ],
    )
    def test_worst_t_reaches_the_measured_error(self, a, weight, delta):
        result = check_local_clt(a, weight, delta=delta)
        dist = brute_force_distribution(a, weight)
        gauss = (dist.mean, math.sqrt(dist.variance), delta)
        t = result.details["worst_t"]
        worst = max(_reached(dist.values, dist.probabilities, 0.0, delta, gauss, t, sign) for sign in (+1, -1))
        assert worst == pytest.approx(result.measured * result.details["window_mass_scale"], abs=1e-8)

    def test_kolmogorov_of_a_small_slice(self):
        # S ∈ {−4, −2, 0, 2, 4} with probabilities (1, 1, 2, 1, 1)/6, E S = 0, Var S = 40/6: the Kolmogorov
        # distance to N(0, 40/6) is attained at an atom, from the left or from the right.
        result = check_local_clt([1, 2, 3, 4], 2, delta=0.5)
        values, cdf = np.array([-4.0, -2.0, 0.0, 2.0, 4.0]), np.array([1, 2, 4, 5, 6]) / 6
        phi = norm.cdf(values, 0.0, math.sqrt(40 / 6))
        expected = max(np.max(np.abs(cdf - phi)), np.max(np.abs(cdf - np.array([1, 1, 2, 1, 1]) / 6 - phi)))
        assert result.details["kolmogorov"] == pytest.approx(expected, rel=1e-12)
        assert result.details["sqrt_n_kolmogorov"] == pytest.approx(2 * expected, rel=1e-12)

    @pytest.mark.parametrize(("quantum", "spacing"), [(None, 6.0), (0.25, 1.5)])
    def test_lattice_spacing_uses_differences(self, quantum, spacing):
        # a = (1, 4, 7)·h, weight 1: S = 2a_j − Σa ∈ {−10, −4, 2}·h, spaced 2·gcd(3, 6)·h = 6h.
        h = 1.0 if quantum is None else quantum
        result = check_local_clt(np.array([1, 4, 7]) * h, 1, delta=0.5, quantum=quantum)
        assert result.details["lattice_spacing"] == pytest.approx(spacing, rel=1e-15)
        assert result.details["spacing_over_delta"] == pytest.approx(spacing / 0.5, rel=1e-15)

    def test_a_point_mass_has_no_spacing(self):
        assert _slice_spacing(np.array([2.0, 2.0, 2.0]), None) is None
        assert _slice_spacing(np.array([0.5, 0.5]), 0.25) is None

    def test_interval_when_the_shrunk_window_is_empty(self):
        # A coarse quantum: e > δ/2, so the shrunk window [t + e, t + δ − e) is empty and only the widened
        # one bounds the error from above; the bracket must still hold the unquantised value.
        a, _ = _scaled(np.random.default_rng(14).standard_normal(14), 7)
        delta = 0.25 / math.sqrt(14)
        result = check_local_clt(a, 7, delta=delta, quantum=0.05)
        assert result.details["quantisation_error"] > delta / 2
        truth = _dense_local_error(brute_force_distribution(a, 7), delta)
        lo, hi = result.interval
        assert lo - 1e-8 <= truth <= hi + 1e-8
        assert lo <= result.measured <= hi


class TestAutoQuantum:
    @staticmethod
    def _fits(a, weight, h):
        # The documented budget: (min(w, n − w) + 1) counts × (Σ|a_j|/h + n + 1) grid points at most.
        return (min(weight, a.size - weight) + 1) * (float(np.abs(a).sum()) / h + a.size + 1) <= MAX_CELLS

    def test_fine_quantum_when_it_fits(self):
        # n·h/2 = δ/40, i.e. h = δ/(20n); integer a needs no quantum at all.
        assert _auto_quantum(np.array([0.5, 1.5, 2.5, 0.25]), 1, 0.078125) == 0.078125 / 80 == 2.0**-10
        assert _auto_quantum(np.array([3.0, -1.0, 2.0]), 1, 0.1) is None

    @pytest.mark.parametrize("weight", [1, 3])
    @pytest.mark.parametrize(("excess", "expected"), [(0, 2.0**-10), (2, 1.25 * 2.0**-10)])
    def test_budget_boundary(self, weight, excess, expected):
        # n = 4, h0 = 2^-10, two counts: the grid estimate is 2(Σ|a|/h0 + 5) = MAX_CELLS + excess exactly,
        # so h0 fits the budget exactly (excess 0) or is coarsened once (excess 2).
        total = (MAX_CELLS + excess) // 2 - 5
        a = np.array([total * 2.0**-10 - 1.5, 0.5, 0.5, 0.5])
        assert float(np.abs(a).sum()) / 2.0**-10 == total
        assert _auto_quantum(a, weight, 0.078125) == expected

    @pytest.mark.parametrize("weight", [1, 32, 60])
    def test_coarsened_to_the_first_quantum_that_fits(self, weight):
        a = 100 * np.random.default_rng(2).standard_normal(64)
        delta = 0.01
        h0 = delta / (20 * 64)
        h = _auto_quantum(a, weight, delta)
        steps = math.log(h / h0) / math.log(1.25)
        assert steps > 5 and steps == pytest.approx(round(steps), abs=1e-9)  # h0 coarsened by 1.25 at a time
        assert self._fits(a, weight, h) and not self._fits(a, weight, h / 1.25)
        assert _cells(np.round(a / h).astype(np.int64), weight) <= MAX_CELLS  # slice_distribution accepts it


class TestCoefficients:
    @staticmethod
    def _unit_variance(raw, weight):
        dist = brute_force_distribution(raw, weight)
        mean = dist.values @ dist.probabilities
        return raw / math.sqrt(((dist.values - mean) ** 2) @ dist.probabilities)

    @pytest.mark.parametrize(
        ("kind", "n", "seed", "weight"),
        [
            ("nonarithmetic", 4, 0, 2),  # raw Var S = 0.42 < 1
            ("arithmetic", 4, 4, 2),  # raw (3, 3, 3, 2): Var S = 1
            ("skewed", 8, 0, 2),
            ("skewed", 12, 0, 3),
        ],
    )
    def test_first_draw_scaled_to_unit_variance(self, kind, n, seed, weight):
        draw = {
            "nonarithmetic": lambda rng: rng.standard_normal(n),
            "arithmetic": lambda rng: rng.integers(1, 4, size=n).astype(float),
            "skewed": lambda rng: rng.exponential(size=n),
        }[kind]
        raw = draw(np.random.default_rng(seed))
        a, w, quantum = _coefficients(kind, n, np.random.default_rng(seed))
        assert w == weight  # n/2, or n/4 for the skewed kind
        np.testing.assert_allclose(a, self._unit_variance(raw, weight), rtol=1e-12)
        if kind == "arithmetic":
            assert quantum == pytest.approx(a[0] / raw[0], rel=1e-12)  # the scale s: a = raw·s on the grid sℤ
        else:
            assert quantum is None

    def test_a_constant_draw_is_redrawn(self):
        rng = np.random.default_rng(6)
        first, second = rng.integers(1, 4, size=4), rng.integers(1, 4, size=4).astype(float)
        assert np.all(first == first[0]) and not np.all(second == second[0])  # Var S = 0, then not
        a, _, _ = _coefficients("arithmetic", 4, np.random.default_rng(6))
        np.testing.assert_allclose(a, self._unit_variance(second, 2), rtol=1e-12)

    def test_case_records_its_kind_and_bound(self):
        result = _case("arithmetic", 8, 0.5, 3.0, 0)
        assert result.bound == 3.0 and result.parameters["bound"] == 3.0
        assert result.parameters["kind"] == "arithmetic" and result.parameters["delta_factor"] == 0.5
        assert result.parameters["delta"] == pytest.approx(0.5 / math.sqrt(8), rel=1e-15)
        default = default_local_clt(n=8, rng=0).parameters
        assert default["kind"] == "nonarithmetic" and default["delta_factor"] == DEFAULT_DELTA_FACTOR


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: slice_distribution(np.ones((2, 2)), 1), ValueError, r"`a` must have 1 dimensions"),
        (lambda: slice_distribution([], 0), ValueError, r"`a` must hold at least one coefficient"),
        (lambda: slice_distribution([1.0, np.nan], 1), ValueError, r"`a` must be finite"),
        (lambda: slice_distribution([1.0, np.inf], 1), ValueError, r"`a` must be finite"),
        (lambda: slice_distribution([1, 2, 3], -1), ValueError, r"`weight` must be in \[0, n\].*weight=-1, n=3"),
        (lambda: slice_distribution([1, 2, 3], 4), ValueError, r"`weight` must be in \[0, n\].*weight=4, n=3"),
        (lambda: slice_distribution([1, 2, 3], 1.5), TypeError, r"`weight` must be an integer; got weight=1.5"),
        (lambda: slice_distribution([1, 2, 3], 1, quantum=0), ValueError, r"`quantum` must be finite and positive"),
        (lambda: slice_distribution([1, 2, 3], 1, quantum=-0.5), ValueError, r"quantum=-0.5"),
        (lambda: slice_distribution([1, 2, 3], 1, quantum=np.nan), ValueError, r"quantum=nan"),
        (lambda: slice_distribution([1, 2.5], 1), ValueError, r"non-integer entries; pass `quantum`.*2.5"),
        (lambda: slice_distribution([1.0], 1, quantum=1e-300), ValueError, r"`quantum` is too small"),
        (lambda: brute_force_distribution(np.ones(17), 3), ValueError, r"at most 16 coordinates.*n=17"),
        (lambda: check_local_clt([1, 2, 3], 1, delta=0), ValueError, r"`delta` must be finite and positive.*delta=0"),
        (lambda: check_local_clt([1, 2, 3], 1, delta=-1.0), ValueError, r"delta=-1.0"),
        (lambda: check_local_clt([1, 2, 3], 1, delta=np.inf), ValueError, r"delta=inf"),
        (lambda: check_local_clt([1, 2, 3], 1, delta=0.1, bound=0), ValueError, r"`bound` must be finite and positive"),
        (lambda: check_local_clt([2, 2, 2], 1, delta=0.1), ValueError, r"constant on this slice.*weight=1"),
        (lambda: check_local_clt([1, 2, 3], 0, delta=0.1), ValueError, r"constant on this slice.*weight=0"),
        (lambda: check_local_clt([1, 2, 3], 1, delta=0.1, quantum=0), ValueError, r"`quantum` must be finite"),
        (lambda: local_clt_sweep(kind="lattice"), ValueError, r"`kind` must be one of .*kind='lattice'"),
        (lambda: local_clt_sweep(ns=()), ValueError, r"`ns` must hold at least one value; got ns=\(\)"),
        (lambda: local_clt_sweep(ns=(16, 2)), ValueError, r"`ns` must be at least 4; got ns=2\."),
        (lambda: default_local_clt(n=2), ValueError, r"`n` must be at least 4; got n=2\."),
        (lambda: control_local_clt(n=8.0), TypeError, r"`n` must be an integer; got n=8.0"),
        (lambda: control_local_clt(n=8, delta_factor=0.0), ValueError, r"`delta_factor` must be finite and positive"),
    ],
    ids=[
        "a-2d",
        "a-empty",
        "a-nan",
        "a-inf",
        "weight-negative",
        "weight-above-n",
        "weight-float",
        "quantum-zero",
        "quantum-negative",
        "quantum-nan",
        "real-a-without-quantum",
        "quantum-too-small",
        "brute-force-n17",
        "delta-zero",
        "delta-negative",
        "delta-inf",
        "bound-zero",
        "constant-a",
        "weight-zero-vacuous",
        "check-quantum-zero",
        "sweep-kind",
        "sweep-empty-ns",
        "sweep-n-too-small",
        "case-n-too-small",
        "case-n-float",
        "case-delta-factor",
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
