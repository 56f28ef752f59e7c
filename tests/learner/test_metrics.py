"""Tests for learner.metrics: relative output error, head matching and attention statistics."""

import itertools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from learner import (
    AttentionLayer,
    AttentionStats,
    HeadMatch,
    attention_statistics,
    match_heads,
    random_layer,
    relative_error,
    sample_inputs,
)


def _direct_relative_error(f, g, k, n_samples, batch, seed, distribution="boolean"):
    """Σ‖F(X) − G(X)‖² / Σ‖F(X)‖² on the inputs relative_error draws: chunks of ``batch`` from one generator."""
    rng = np.random.default_rng(seed)
    X = np.concatenate(
        [
            sample_inputs(min(batch, n_samples - start), k, f.d, distribution=distribution, rng=rng)
            for start in range(0, n_samples, batch)
        ]
    )
    fx, gx = f(X), g(X)
    return np.sum((fx - gx) ** 2) / np.sum(fx**2)


def _brute_force_match(f, g, use="both"):
    """The permutation π minimising Σ_i cost(i, π(i)) by enumerating every one, with the documented cost
    e_Θ² + e_W² (relative Frobenius errors), or only one of its two terms (``use`` "theta" or "w")."""
    def rel2(ref, est):
        return np.sum((ref - est) ** 2) / np.sum(ref**2)

    def cost(i, j):
        terms = {"theta": rel2(f.thetas[i], g.thetas[j]), "w": rel2(f.ws[i], g.ws[j])}
        return sum(terms.values()) if use == "both" else terms[use]

    return min(itertools.permutations(range(f.m)), key=lambda pi: sum(cost(i, j) for i, j in enumerate(pi)))


class TestRelativeError:
    def test_identical_layers(self):
        """A layer has error exactly 0 against itself (and against an equal copy)."""
        f = random_layer(2, 6, rng=0)
        assert relative_error(f, f, 4, n_samples=300, rng=1) == 0.0
        assert relative_error(f, AttentionLayer(f.thetas, f.ws), 4, n_samples=300, rng=1) == 0.0

    @pytest.mark.parametrize(
        ("n_samples", "batch", "distribution"),
        [(200, 4096, "boolean"), (300, 128, "boolean"), (250, 100, "gaussian")],
        ids=["one-chunk", "three-chunks", "gaussian-chunks"],
    )
    def test_matches_direct_computation(self, n_samples, batch, distribution):
        """The estimate equals Σ‖F−G‖²/Σ‖F‖² computed directly on the same seeded inputs."""
        f, g = random_layer(2, 6, rng=0), random_layer(2, 6, rng=1)
        value = relative_error(f, g, 3, n_samples=n_samples, batch=batch, distribution=distribution, rng=7)
        # Same inputs, the sums accumulated chunk by chunk vs at once: a few roundings (~1e-15).
        assert_allclose(value, _direct_relative_error(f, g, 3, n_samples, batch, 7, distribution), rtol=1e-12)

    @pytest.mark.parametrize("c", [2.0, 0.5, 3.0, -1.0], ids=["2W", "W/2", "3W", "-W"])
    def test_scaled_ws(self, c):
        """G with W_i → c·W_i has G = c·F (F is linear in the W's), so the error is (c − 1)² for any inputs."""
        f = random_layer(2, 6, rng=0)
        g = AttentionLayer(f.thetas, c * f.ws)
        # Scaling W by c scales each output entry by c up to one rounding: (c-1)² to ~1e-15 relative.
        assert_allclose(relative_error(f, g, 4, n_samples=500, rng=2), (c - 1) ** 2, rtol=1e-12)

    def test_reproducible_by_seed(self):
        """The same seed gives the same estimate; a different seed (other inputs) a different one."""
        f, g = random_layer(2, 6, rng=0), random_layer(2, 6, rng=1)
        a = relative_error(f, g, 3, n_samples=200, rng=3)
        assert a == relative_error(f, g, 3, n_samples=200, rng=3)
        assert a != relative_error(f, g, 3, n_samples=200, rng=4)

    def test_heads_may_differ(self):
        """f and g may have different numbers of heads (only d must agree)."""
        f = random_layer(2, 6, rng=0)
        g = AttentionLayer(f.thetas[:1], f.ws[:1])
        assert relative_error(f, g, 3, n_samples=200, rng=0) > 0

    def test_zero_reference_raises(self):
        """A reference that is zero on every input has no relative error."""
        f = AttentionLayer(np.zeros((1, 3, 3)), np.zeros((1, 3, 3)))
        with pytest.raises(ValueError, match="reference layer `f` is zero on every sampled input"):
            relative_error(f, random_layer(1, 3, check=False, rng=0), 2, n_samples=50, rng=0)

    def test_dimension_mismatch_raises(self):
        """Layers of different d cannot be compared."""
        with pytest.raises(ValueError, match=r"same dimension; got f\.d=4, g\.d=5"):
            relative_error(random_layer(1, 4, check=False, rng=0), random_layer(1, 5, check=False, rng=0), 2)


class TestMatchHeads:
    @pytest.mark.parametrize("perm", [(0, 1, 2), (2, 0, 1), (1, 0, 2), (2, 1, 0)], ids=["id", "cycle", "swap", "rev"])
    def test_recovers_permutation(self, perm):
        """For an estimate whose heads are a permutation of the reference's, the matching undoes it with error 0."""
        f = random_layer(3, 8, rng=0)
        g = AttentionLayer(f.thetas[list(perm)], f.ws[list(perm)])
        match = match_heads(f, g)
        assert isinstance(match, HeadMatch)
        # Estimated head j is reference head perm[j], so reference head i is estimated head perm⁻¹(i).
        assert match.permutation == tuple(int(j) for j in np.argsort(perm))
        assert match.theta_errors == match.w_errors == (0.0, 0.0, 0.0)
        assert match.max_error == 0.0

    def test_errors_are_relative_frobenius(self):
        """For a perturbed, permuted estimate the errors are ‖Θ_i − Θ̂_π(i)‖_F/‖Θ_i‖_F (likewise W)."""
        rng = np.random.default_rng(1)
        # Norms below 1 (‖Θ‖_F = 0.5, ‖W‖_F ≈ 0.57), so relative and absolute errors differ.
        f = random_layer(3, 8, logit_scale=0.5, w_scale=0.2, rng=0)
        perm = [2, 0, 1]
        thetas = f.thetas[perm] + 0.005 * rng.standard_normal(f.thetas.shape)
        ws = f.ws[perm] + 0.005 * rng.standard_normal(f.ws.shape)
        match = match_heads(f, AttentionLayer(thetas, ws))
        pi = list(match.permutation)
        assert pi == [1, 2, 0]
        e_theta = np.linalg.norm(f.thetas - thetas[pi], axis=(1, 2)) / np.linalg.norm(f.thetas, axis=(1, 2))
        e_w = np.linalg.norm(f.ws - ws[pi], axis=(1, 2)) / np.linalg.norm(f.ws, axis=(1, 2))
        # Same norms computed by a differently shaped reduction: a few roundings.
        assert_allclose(match.theta_errors, e_theta, rtol=1e-12)
        assert_allclose(match.w_errors, e_w, rtol=1e-12)
        assert match.max_error == max(match.theta_errors + match.w_errors)

    def test_zero_reference_head_gives_absolute_error(self):
        """Where the reference matrix is zero the documented error is absolute: ‖Ŵ‖_F."""
        f = AttentionLayer(random_layer(1, 4, check=False, rng=0).thetas, np.zeros((1, 4, 4)))
        ws = np.full((1, 4, 4), 0.5)
        match = match_heads(f, AttentionLayer(f.thetas, ws))
        assert match.w_errors == (2.0,)  # ‖0.5·ones(4×4)‖_F = 2, exact
        assert match.theta_errors == (0.0,)

    def test_all_zero_reference_raises(self):
        """With the zero layer as reference every error is absolute, and any small estimate would "match" it."""
        zero = AttentionLayer(np.zeros((2, 4, 4)), np.zeros((2, 4, 4)))
        small = AttentionLayer(np.full((2, 4, 4), 1e-3), np.zeros((2, 4, 4)))
        with pytest.raises(ValueError, match="`reference` is the zero layer"):
            match_heads(zero, small)

    def test_zero_thetas_with_nonzero_ws_are_not_the_zero_layer(self):
        """Θ = 0 with W ≠ 0 is a real layer (uniform attention): matched, not refused as the zero layer."""
        ws = np.stack([np.eye(4), 2 * np.eye(4)])
        reference = AttentionLayer(np.zeros((2, 4, 4)), ws)
        swapped = AttentionLayer(np.zeros((2, 4, 4)), ws[::-1])
        match = match_heads(reference, swapped)
        assert match.permutation == (1, 0) and match.max_error == 0.0

    def test_control_a_zero_estimate_is_far_from_a_real_reference(self):
        zero = AttentionLayer(np.zeros((2, 4, 4)), np.zeros((2, 4, 4)))
        assert match_heads(random_layer(2, 4, check=False, rng=1), zero).max_error == 1.0

    @pytest.mark.parametrize(("case", "discriminates"), [("close thetas", "theta"), ("close ws", "w")],
                             ids=["close theta, far W", "close W, far theta"])
    def test_matching_weighs_theta_and_w_together(self, case, discriminates):
        """Two reference heads nearly equal in one matrix and far apart in the other; the estimate swaps the
        close matrix between its heads. Matching on that matrix alone pairs each head with the swapped copy
        (error 0 there, far off in the other matrix); the documented cost pairs heads as they are."""
        rng = np.random.default_rng(3)
        a, b, p, q = (rng.standard_normal((4, 4)) for _ in range(4))
        close = np.stack([a, a + 0.01 * b])  # relative distance ~0.01
        far = np.stack([p, q])  # relative distance ~1.4
        thetas, ws = (close, far) if case == "close thetas" else (far, close)
        f = AttentionLayer(thetas, ws)
        g = AttentionLayer(thetas[::-1] if case == "close thetas" else thetas,
                           ws if case == "close thetas" else ws[::-1])
        swap = thetas if case == "close thetas" else ws
        # The case discriminates: matching on the swapped matrix alone gives (1, 0); the combined cost (0, 1).
        assert _brute_force_match(f, g, use=discriminates) == (1, 0)
        assert _brute_force_match(f, g) == (0, 1)
        match = match_heads(f, g)
        assert match.permutation == (0, 1)
        # Head i matched to itself: the swapped matrix M errs by ‖M_0 − M_1‖/‖M_i‖ (a few roundings), the other by 0.
        expected = np.linalg.norm(swap[0] - swap[1]) / np.linalg.norm(swap, axis=(1, 2))
        swapped_errors = match.theta_errors if case == "close thetas" else match.w_errors
        other_errors = match.w_errors if case == "close thetas" else match.theta_errors
        assert_allclose(swapped_errors, expected, rtol=1e-12)
        assert other_errors == (0.0, 0.0)

    @pytest.mark.parametrize("seed", range(8))
    def test_matches_brute_force_over_permutations(self, seed):
        """Heads of very different sizes (log-uniform over two decades, so relative and absolute errors rank
        pairs differently) against an unrelated estimate: the permutation minimises Σ_i e_Θ(i)² + e_W(i)²
        over all 4! orders, computed here by enumeration. Among these seeds, each other cost (Θ or W alone,
        absolute errors, unsquared sums, the larger of the two) picks another permutation at least once."""
        rng = np.random.default_rng(seed)
        scales = 10.0 ** rng.uniform(-1, 1, size=(2, 4, 1, 1))
        f = AttentionLayer(scales[0] * rng.standard_normal((4, 3, 3)), scales[1] * rng.standard_normal((4, 3, 3)))
        g = AttentionLayer(rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3, 3)))
        match = match_heads(f, g)
        assert match.permutation == _brute_force_match(f, g)
        pi = list(match.permutation)
        e_theta = np.linalg.norm(f.thetas - g.thetas[pi], axis=(1, 2)) / np.linalg.norm(f.thetas, axis=(1, 2))
        e_w = np.linalg.norm(f.ws - g.ws[pi], axis=(1, 2)) / np.linalg.norm(f.ws, axis=(1, 2))
        # Same norms by a differently shaped reduction: a few roundings.
        assert_allclose(match.theta_errors, e_theta, rtol=1e-12)
        assert_allclose(match.w_errors, e_w, rtol=1e-12)

    def test_head_count_mismatch_raises(self):
        """Different m cannot be matched."""
        f, g = random_layer(2, 8, rng=0), random_layer(3, 8, rng=0)
        with pytest.raises(ValueError, match=r"same m and d; got \(m, d\)=\(2, 8\) and \(3, 8\)"):
            match_heads(f, g)


class TestAttentionStatistics:
    @pytest.mark.parametrize("k", [2, 4], ids=["k2", "k4"])
    def test_uniform_attention(self, k):
        """With Θ = 0 every pattern is uniform: max weight 1/k, normalised entropy 1, no error vs uniform."""
        layer = AttentionLayer(np.zeros((2, 5, 5)), random_layer(2, 5, check=False, rng=0).ws)
        s = attention_statistics(layer, k, n_samples=300, batch=128, rng=0)
        assert isinstance(s, AttentionStats)
        assert (s.k, s.distribution, s.n_samples) == (k, "boolean", 300)
        # Averages of 300·k copies of 1/k, and of -Σ(1/k)ln(1/k)/ln k = 1: a few roundings.
        assert_allclose(s.mean_max_weight, [1 / k, 1 / k], rtol=1e-12)
        assert_allclose(s.mean_normalized_entropy, [1.0, 1.0], rtol=1e-12)
        # The layer itself is uniform; the reference sums the W's first, so outputs differ by
        # rounding (~eps relative) and the relative *squared* error is ~eps² ≈ 5e-32.
        assert s.uniform_attention_error < 1e-28
        assert s.agree_tv05 == s.agree_tv01 == 1.0
        assert s.output_rms > 0

    def test_one_hot_attention(self):
        """Θ = 1e3·I over Boolean tokens attends (almost) one-hot to the token itself."""
        d, k = 8, 3
        layer = AttentionLayer(1e3 * np.eye(d)[None], np.eye(d)[None])
        s = attention_statistics(layer, k, n_samples=2000, rng=0)
        # A row is one-hot unless its token is repeated (then split evenly); a repeat among 3 tokens
        # in {±1}^8 has probability <= 3/256, so mean max weight >= 1 − 3/256 in expectation.
        assert 1 - 0.05 < s.mean_max_weight[0] <= 1.0
        assert s.mean_normalized_entropy[0] < 0.05
        assert s.agree_tv01 == 1.0  # a single head always agrees with itself

    def test_output_rms(self):
        """output_rms is the root mean square entry of F(X) over the sampled inputs."""
        layer = random_layer(2, 5, check=False, rng=0)
        s = attention_statistics(layer, 3, n_samples=100, rng=4)
        X = sample_inputs(100, 3, 5, rng=4)
        # Same inputs (one chunk); sums in a different order.
        assert_allclose(s.output_rms, math.sqrt(np.mean(layer(X) ** 2)), rtol=1e-12)

    def test_reproducible_by_seed(self):
        """The same seed gives identical statistics."""
        layer = random_layer(2, 6, rng=0)
        assert attention_statistics(layer, 3, n_samples=200, rng=1) == attention_statistics(
            layer, 3, n_samples=200, rng=1
        )
        assert_array_equal(
            attention_statistics(layer, 3, n_samples=200, rng=1).mean_max_weight,
            attention_statistics(layer, 3, n_samples=200, rng=np.random.default_rng(1)).mean_max_weight,
        )


class TestRelativeErrorScale:
    """The ratio is scale-free: it is returned for outputs of any finite size, and refused only past float64."""

    @pytest.mark.parametrize("scale", [1e200, 1e-200, 1.0], ids=["huge W", "tiny W", "unit W"])
    def test_same_ratio_at_every_scale(self, scale):
        from learner import AttentionLayer, random_layer

        base = random_layer(2, 4, rng=0)
        f = AttentionLayer(base.thetas, base.ws * scale)
        g = AttentionLayer(base.thetas, base.ws * scale * 1.001)
        # (0.001)² up to rounding of the two forward passes (measured 1e-6 − 3e-18).
        assert relative_error(f, g, 2, n_samples=200, rng=0) == pytest.approx(1e-6, rel=1e-9)

    def test_beyond_float64_is_an_error(self):
        from learner import AttentionLayer, random_layer

        base = random_layer(2, 4, rng=0)
        with pytest.raises(OverflowError, match="beyond float64"):
            relative_error(AttentionLayer(base.thetas, base.ws * 1e-300), AttentionLayer(base.thetas, base.ws * 1e300),
                           2, n_samples=100, rng=0)


class TestLogSumSquares:
    """The private log-sum-of-squares behind relative_error, against mpmath at 50 digits."""

    @pytest.mark.parametrize("values", [[3.0, 4.0], [1e200, -1e200, 3e199], [1e-200, 2e-200], [0.0, 5e-324]],
                             ids=["plain", "would overflow", "would underflow", "subnormal"])
    def test_against_mpmath(self, values):
        import mpmath

        from learner.metrics import _log_sum_squares

        with mpmath.workdps(50):
            exact = mpmath.log(mpmath.fsum(mpmath.mpf(v) ** 2 for v in values))
        # 1e-13 relative: a handful of roundings in a sum of two logs of O(1)-O(1000)
        assert _log_sum_squares(np.array(values)) == pytest.approx(float(exact), rel=1e-13)

    @pytest.mark.parametrize("values", [[], [0.0, 0.0]], ids=["empty", "zeros"])
    def test_an_empty_or_zero_sum_is_minus_infinity(self, values):
        """log of an empty sum (0) is −inf, with no warning (warnings are errors here) and no error."""
        from learner.metrics import _log_sum_squares

        assert _log_sum_squares(np.array(values)) == -np.inf
