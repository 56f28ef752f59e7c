"""Tests for learner.inputs: sampled inputs, input validation and exact Boolean-cube expectations."""

import itertools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from learner import check_inputs, cube_expectation, enumerate_cube, random_layer, sample_inputs

EPS = np.finfo(np.float64).eps


def _cube_index(X):
    """Index i of each input in enumerate_cube's documented order: X[a, c] = 1 - 2·bit_{a·d+c}(i)."""
    bits = ((1 - X.reshape(len(X), -1)) / 2).astype(np.int64)
    return bits @ (1 << np.arange(bits.shape[1], dtype=np.int64))


class TestSampleInputs:
    @pytest.mark.parametrize("distribution", ["boolean", "gaussian"])
    @pytest.mark.parametrize(("n", "k", "d"), [(1, 1, 1), (3, 2, 5), (7, 4, 1)], ids=["1x1x1", "3x2x5", "7x4x1"])
    def test_shape_and_dtype(self, n, k, d, distribution):
        """The result has shape (n_samples, k, d) and dtype float64."""
        X = sample_inputs(n, k, d, distribution=distribution, rng=0)
        assert X.shape == (n, k, d) and X.dtype == np.float64

    def test_regression_values(self):
        """Fixed seed, fixed draws (values printed by these calls with numpy 2.4; the PCG64 stream is stable)."""
        assert_array_equal(
            sample_inputs(2, 2, 3, rng=0),
            [[[1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]], [[1.0, -1.0, 1.0], [-1.0, -1.0, -1.0]]],
        )
        assert_array_equal(  # repr() round-trips float64 exactly
            sample_inputs(1, 2, 2, distribution="gaussian", rng=0),
            [[[0.1257302210933933, -0.1321048632913019], [0.6404226504432821, 0.10490011715303971]]],
        )

    def test_boolean_entries_are_signs(self):
        """Boolean entries are exactly -1.0 or +1.0."""
        X = sample_inputs(500, 3, 4, rng=1)
        assert set(np.unique(X).tolist()) == {-1.0, 1.0}

    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_boolean_balanced_and_independent(self, seed):
        """Each entry has mean 0 and distinct entries are uncorrelated (uniform independent signs).

        Acceptance bound for any seed, by Hoeffding for N independent ±1 terms:
        P(|mean| >= c/sqrt(N)) <= 2 exp(-c²/2). Union bounds: c = 6 over the 12
        positions (24·e^-18 = 4e-7) and c = 6.5 over the 66 pairs (132·e^-21.1 = 9e-8):
        a correct sampler fails with probability < 1e-6.
        """
        n, k, d = 20000, 3, 4
        X = sample_inputs(n, k, d, rng=seed).reshape(n, k * d)
        assert np.all(np.abs(X.mean(axis=0)) < 6 / math.sqrt(n))
        i, j = np.triu_indices(k * d, 1)
        assert np.all(np.abs((X[:, i] * X[:, j]).mean(axis=0)) < 6.5 / math.sqrt(n))

    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_gaussian_moments(self, seed):
        """Gaussian entries have mean 0 and variance 1.

        For N iid N(0,1) entries the mean is exactly N(0, 1/N): P(|mean| >= 5.5/sqrt(N)) = 4e-8.
        The sum of squares is chi²_N; by Laurent–Massart P(|χ²_N − N| >= 2 sqrt(15 N) + 30) <= 2e^-15
        = 6e-7, which is the bound |mean(x²) − 1| < 0.025 at N = 1e5.
        """
        N = 100_000
        x = sample_inputs(N // 20, 4, 5, distribution="gaussian", rng=seed).ravel()
        assert abs(x.mean()) < 5.5 / math.sqrt(N)
        assert abs(np.mean(x**2) - 1.0) < (2 * math.sqrt(15 * N) + 30) / N

    @pytest.mark.parametrize("distribution", ["boolean", "gaussian"])
    def test_reproducible_by_seed(self, distribution):
        """The same seed gives the same draws; different seeds and successive draws differ."""
        a = sample_inputs(50, 3, 4, distribution=distribution, rng=7)
        assert_array_equal(a, sample_inputs(50, 3, 4, distribution=distribution, rng=7))
        assert_array_equal(a, sample_inputs(50, 3, 4, distribution=distribution, rng=np.random.SeedSequence(7)))
        assert not np.array_equal(a, sample_inputs(50, 3, 4, distribution=distribution, rng=8))
        gen = np.random.default_rng(7)
        first = sample_inputs(50, 3, 4, distribution=distribution, rng=gen)
        assert_array_equal(first, a)
        assert not np.array_equal(first, sample_inputs(50, 3, 4, distribution=distribution, rng=gen))


class TestCheckInputs:
    def test_single_sequence_promoted(self):
        """A (k, d) sequence becomes a batch of one, as float64."""
        out = check_inputs([[1, -1, 1], [1, 1, -1]])
        assert out.shape == (1, 2, 3) and out.dtype == np.float64
        assert_array_equal(out[0], [[1, -1, 1], [1, 1, -1]])

    def test_batch_passes_through(self):
        """A valid (n, k, d) float64 batch comes back unchanged."""
        X = sample_inputs(4, 2, 3, distribution="gaussian", rng=0)
        assert_array_equal(check_inputs(X, k=2, d=3), X)

    def test_boolean_accepts_signs(self):
        """boolean=True accepts ±1 of any real dtype."""
        X = np.array([[[1, -1], [-1, 1]]], dtype=np.int8)
        assert_array_equal(check_inputs(X, boolean=True), X)


class TestEnumerateCube:
    @pytest.mark.parametrize(
        ("k", "d", "batch"),
        [(1, 1, 1), (2, 2, 3), (1, 5, 7), (2, 3, 64), (3, 3, 100), (2, 5, 1000), (3, 4, 65536)],
        ids=["1x1-b1", "2x2-b3", "1x5-b7", "2x3-b64", "3x3-b100", "2x5-b1000", "3x4-default"],
    )
    def test_visits_every_input_once(self, k, d, batch):
        """All 2^{kd} sign matrices appear exactly once, in batches of at most ``batch``, entries ±1."""
        chunks = list(enumerate_cube(k, d, batch=batch))
        assert all(c.shape[1:] == (k, d) and 1 <= len(c) <= batch and c.dtype == np.float64 for c in chunks)
        X = np.concatenate(chunks)
        assert len(X) == 2 ** (k * d)
        assert set(np.unique(X).tolist()) <= {-1.0, 1.0}
        assert len({x.tobytes() for x in X}) == 2 ** (k * d)

    def test_documented_order(self):
        """Input number i has X[a, c] = 1 − 2·bit_{a·d+c}(i)."""
        X = np.concatenate(list(enumerate_cube(2, 3, batch=5)))
        assert_array_equal(_cube_index(X), np.arange(64))
        assert_array_equal(X[0], np.ones((2, 3)))
        assert_array_equal(X[1], [[-1, 1, 1], [1, 1, 1]])
        assert_array_equal(X[8], [[1, 1, 1], [-1, 1, 1]])

    def test_largest_cube_accepted(self):
        """k·d = 32 is allowed (the first batch comes without enumerating the rest)."""
        first = next(enumerate_cube(4, 8, batch=2))
        assert_array_equal(first, [np.ones((4, 8)), np.r_[-1.0, np.ones(31)].reshape(4, 8)])

    def test_too_large_rejected(self):
        """k·d = 33 is refused with the offending values in the message."""
        with pytest.raises(ValueError, match=r"k\*d <= 32; got k=3, d=11 \(k\*d=33\)"):
            next(enumerate_cube(3, 11))


class TestCubeExpectation:
    @pytest.mark.parametrize(
        ("k", "d", "batch"),
        [(1, 1, 1), (2, 2, 3), (3, 2, 7), (2, 4, 256), (4, 3, 1000), (3, 4, 65536)],
        ids=["1x1-b1", "2x2-b3", "3x2-b7", "2x4-b256", "4x3-b1000", "3x4-default"],
    )
    def test_gram_of_token_sum_is_exact(self, k, d, batch):
        """E[Xᵀ J X] = k·I exactly (integer values are summed without rounding)."""
        J = np.ones((k, k))
        value = cube_expectation(lambda X: X.transpose(0, 2, 1) @ J @ X, k, d, batch=batch)
        assert isinstance(value, np.ndarray) and value.shape == (d, d)
        assert_array_equal(value, k * np.eye(d))

    def test_scalar_function_returns_float(self):
        """A scalar-valued fn gives a Python float: E[(Σ x)²] = k·d."""
        value = cube_expectation(lambda X: X.sum(axis=(1, 2)) ** 2, 3, 2, batch=5)
        assert type(value) is float
        assert value == 6.0

    @pytest.mark.parametrize("batch", [1, 5, 64], ids=["b1", "b5", "b64"])
    def test_matches_brute_force_on_layer_output(self, batch):
        """E[F(X)] for a random layer equals the average over itertools.product(±1, repeat=kd)."""
        k, d = 2, 3
        layer = random_layer(2, d, check=False, rng=0)
        signs = itertools.product([1.0, -1.0], repeat=k * d)
        outputs = np.array([layer(np.array(s).reshape(k, d)) for s in signs])
        exact = np.array([math.fsum(v) for v in outputs.reshape(len(outputs), -1).T]).reshape(k, d) / len(outputs)
        mean_abs = np.abs(outputs).mean(axis=0)
        value = cube_expectation(layer, k, d, batch=batch)
        # fsum is correctly rounded; pairwise + Neumaier summation of 64 terms errs by at most
        # ~(log2(64) + 2)·eps·mean|f| ≈ 2e-15·mean|f| per entry; 1e-14 leaves a 5x margin. The two
        # sides evaluate F on single sequences vs batches, whose rounding agrees to ~1e-16 relative.
        assert_allclose(value, exact, rtol=0, atol=1e-14 * mean_abs.max())

    @pytest.mark.parametrize("batch", [1, 4], ids=["neumaier-across-batches", "pairwise-within-batch"])
    def test_huge_cancellation_exact(self, batch):
        """Values [1e16, 1, -1e16, 1] average to exactly 0.5 (a naive running sum gives 0.25)."""
        table = np.array([1e16, 1.0, -1e16, 1.0])
        assert cube_expectation(lambda X: table[_cube_index(X)], 1, 2, batch=batch) == 0.5

    def test_compensated_summation_vs_fsum(self):
        """Small values between huge cancelling terms survive (batch=1: pure Neumaier compensation)."""
        rng = np.random.default_rng(0)
        big = 1e16 * rng.uniform(1, 2, size=16)
        table = np.empty(64)
        table[0:32:2], table[32::2] = big, -rng.permutation(big)  # the huge terms cancel exactly
        table[1::2] = rng.uniform(0, 1, size=32)
        exact = math.fsum(table) / 64
        value = cube_expectation(lambda X: table[_cube_index(X)], 2, 3, batch=1)
        # Neumaier: |error of the sum| <= 2 eps |S| + 2 n eps² Σ|x| (Higham, Accuracy and Stability
        # of Numerical Algorithms, §4.3); here ≈ 7e-15 + 2e-12, against O(1) lost by a plain sum.
        bound = (2 * EPS * abs(math.fsum(table)) + 2 * 64 * EPS**2 * np.abs(table).sum()) / 64
        assert abs(value - exact) <= bound
        naive = np.cumsum(table)[-1] / 64
        assert abs(naive - exact) > 1e6 * bound  # negative control: uncompensated summation fails

    @pytest.mark.parametrize(
        ("fn", "k", "d", "error", "match"),
        [
            (lambda X: X[:, 0, 0], 3, 11, ValueError, r"needs k\*d <= 32; got k=3, d=11"),
            ("not callable", 2, 2, TypeError, r"`fn` must be callable; got fn='not callable'"),
            (lambda X: X[:-1, 0, 0], 2, 2, ValueError, r"one value per input \(leading axis 16\); got shape \(15,\)"),
            (lambda X: 1.0, 2, 2, ValueError, r"one value per input \(leading axis 16\); got shape \(\)"),
        ],
        ids=["k*d>32", "fn-not-callable", "fn-wrong-length", "fn-scalar"],
    )
    def test_rejects_bad_arguments(self, fn, k, d, error, match):
        """Oversized cubes and functions that do not return one value per input are refused."""
        with pytest.raises(error, match=match):
            cube_expectation(fn, k, d)


class TestCubeExpectationExtremes:
    """Extreme values: a representable mean is returned exactly; what has no real finite mean is an error."""

    @pytest.mark.parametrize("value", [1e308, -1e308, 1e-300, 3.0])
    def test_constant_functions(self, value):
        # A constant's mean is itself: scaling by 2^(−kd) and summing 2^(kd) copies is exact.
        assert cube_expectation(lambda X: np.full(len(X), value), 2, 3) == value

    @pytest.mark.parametrize(
        ("fn", "error", "match"),
        [(lambda X: np.full(len(X), 1j), TypeError, "must return real numbers; got dtype complex128"),
         (lambda X: np.full(len(X), np.inf), ValueError, "non-finite value"),
         (lambda X: np.full(len(X), np.nan), ValueError, "non-finite value")],
        ids=["complex", "inf", "nan"],
    )
    def test_refused(self, fn, error, match):
        with pytest.raises(error, match=match):
            cube_expectation(fn, 2, 2)


class TestCubeExpectationSize:
    def test_large_cubes_are_refused_up_front_unless_asked(self):
        """k·d = 30 (10^9 inputs, hours) is refused at once with the count and the way to ask for it."""
        with pytest.raises(ValueError, match=r"2\^30 = 1.07e\+09 inputs .* beyond max_bits=26; pass max_bits=30"):
            cube_expectation(lambda X: X[:, 0, 0], 2, 15)

    def test_max_bits_is_validated_and_capped(self):
        with pytest.raises(ValueError, match="k\\*d <= 32"):
            cube_expectation(lambda X: X[:, 0, 0], 3, 11, max_bits=33)
        with pytest.raises(TypeError, match="`max_bits` must be an integer"):
            cube_expectation(lambda X: X[:, 0, 0], 1, 2, max_bits=2.5)
