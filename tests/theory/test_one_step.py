"""theory.one_step: one gradient step from W = 0 estimates ΣW_i, (1/k) E[XᵀJF(X)] = Σ M_i W_i ≈ ΣW_i."""

import itertools
import json
import math

import numpy as np
import pytest
import sympy
from numpy.testing import assert_allclose, assert_array_equal

from learner import AttentionLayer, random_layer, sample_inputs
from theory._core import CheckResult
from theory.one_step import (
    CONTROL_CASE,
    MAX_EXACT_BITS,
    OneStepResult,
    StableRankSweep,
    _exact_moments,
    _haar_orthogonal,
    check_one_step,
    control_one_step,
    default_one_step,
    one_step_gradient_symbolic,
    plot_one_step,
    plot_stable_rank_sweep,
    stable_rank_sweep,
    theta_of_stable_rank,
)
from theory.testing import assert_check_fails, assert_check_holds

EPS = np.finfo(np.float64).eps


def _dyadic_layer(m, d, *, rng):
    """Θ_i = 0 and W_i with entries in (1/4)Z: every product and sum in the check is exact in binary."""
    ws = np.random.default_rng(rng).integers(-4, 5, size=(m, d, d)) / 4.0
    ws[0, 0, 0] = 1.0  # ΣW_i ≠ 0
    return AttentionLayer(np.zeros((m, d, d)), ws)


def _brute_force(layer, k):
    """E_1 and M_i by a plain loop over all 2^{kd} inputs, with a hand-written softmax (no shared code)."""
    m, d = layer.m, layer.d
    E1 = np.zeros((d, d))
    M = np.zeros((m, d, d))
    J = np.ones((k, k))
    for signs in itertools.product((1.0, -1.0), repeat=k * d):
        X = np.array(signs).reshape(k, d)
        F = np.zeros((k, d))
        for i in range(m):
            logits = X @ layer.thetas[i] @ X.T
            P = np.array([[math.exp(v - max(row)) for v in row] for row in logits])
            P /= P.sum(axis=1, keepdims=True)
            F += P @ X @ layer.ws[i]
            M[i] += X.T @ J @ P @ X / k
        E1 += X.T @ J @ F / k
    n = 2 ** (k * d)
    return E1 / n, M / n


def _per_input_terms(layer, X, k):
    """Per input: Z = (1/k) Xᵀ J F(X) = (1/k) s gᵀ and each head's (1/k) Xᵀ J P_i X, with a hand-written softmax."""
    s = X.sum(axis=1)
    F = np.zeros_like(X)
    heads = []
    for theta, w in zip(layer.thetas, layer.ws, strict=True):
        logits = np.einsum("nac,ce,nbe->nab", X, theta, X)
        P = np.exp(logits - logits.max(axis=2, keepdims=True))
        P /= P.sum(axis=2, keepdims=True)
        F += P @ X @ w
        heads.append(np.einsum("nc,nd->ncd", s, (P @ X).sum(axis=1)) / k)
    return np.einsum("nc,nd->ncd", s, F.sum(axis=1)) / k, np.stack(heads, axis=1)


def _recording_layer(thetas, ws):
    """An AttentionLayer that records the number of inputs of every forward pass."""
    sizes = []

    class Recording(AttentionLayer):
        def __call__(self, X, **kwargs):
            sizes.append(len(X))
            return super().__call__(X, **kwargs)

    return Recording(thetas, ws), sizes


def _gram_schmidt(G):
    """Q of G = QR with R's diagonal positive: Gram–Schmidt on the columns (twice, for orthogonality)."""
    Q = np.zeros_like(G)
    for j in range(G.shape[1]):
        v = G[:, j].copy()
        for _ in range(2):
            v -= Q[:, :j] @ (Q[:, :j].T @ v)
        Q[:, j] = v / np.linalg.norm(v)
    return Q


class TestCheckOneStep:
    @pytest.mark.parametrize("k", [2, 4])
    def test_zero_theta_is_exact(self, k):
        """Θ_i = 0: softmax = J/k exactly (k a power of two) and E_1 = ΣW_i with no rounding at all.

        W has entries in (1/4)Z so every product and sum is exact in binary; the
        relative error is then exactly 0, compared with ==.
        """
        layer = _dyadic_layer(2, 3, rng=k)
        result = check_one_step(layer, k)
        assert result.measured == 0.0
        assert_array_equal(result.estimate, layer.ws.sum(axis=0))
        assert result.holds and result.exact

    def test_zero_theta_control_variate_has_no_variance(self):
        """Θ_i = 0: with the control variate every per-input matrix equals ΣW_i, so the interval is a point."""
        layer = _dyadic_layer(2, 3, rng=0)
        result = check_one_step(layer, 4, method="monte_carlo", n_samples=5000, control_variate=True, rng=0)
        assert result.measured == 0.0 and result.interval == (0.0, 0.0)
        assert result.details["trace_covariance"] == 0.0

    def test_matches_brute_force(self):
        """Exact mode equals a plain itertools.product loop (k=2, d=3, 64 inputs).

        Tolerance 1e-12: both sum 64 terms of size O(‖W‖·k) in different orders
        with different softmax code; rounding is ~1e-15.
        """
        layer = random_layer(2, 3, logit_scale=2.0, check=False, rng=5)
        result = check_one_step(layer, 2)
        E1, M = _brute_force(layer, 2)
        assert_allclose(result.estimate, E1, rtol=0, atol=1e-12)
        assert_allclose(result.M, M, rtol=0, atol=1e-12)

    def test_details_match_brute_force(self):
        """The reported per-head distances and the identity residual follow their definitions.

        head_distances ‖M_i − I‖_F and head_distances_op ‖M_i − I‖_op (the largest
        singular value) from the plain loop's M_i, to 1e-12 as in the test above.
        W is scaled so that ‖E_1‖_F < 1, where the relative residual must still be
        divided by ‖E_1‖_F; rounding leaves a nonzero residual in this layer.
        """
        base = random_layer(2, 3, logit_scale=2.0, check=False, rng=5)
        layer = AttentionLayer(base.thetas, 0.3 * base.ws)
        result = check_one_step(layer, 2)
        _, M = _brute_force(layer, 2)
        eye = np.eye(3)
        details = result.details
        assert_allclose(details["head_distances"], [np.linalg.norm(Mi - eye) for Mi in M], rtol=0, atol=1e-12)
        assert_allclose(details["head_distances_op"], [np.linalg.svd(Mi - eye, compute_uv=False)[0] for Mi in M],
                        rtol=0, atol=1e-12)
        est_norm = math.sqrt(float(np.sum(result.estimate**2)))
        assert est_norm < 1
        residual = details["identity_residual"]
        assert residual == pytest.approx(
            math.sqrt(float(np.sum((result.estimate - np.einsum("icd,ide->ce", result.M, layer.ws)) ** 2))),
            rel=1e-12, abs=0)
        assert residual > 0
        assert details["identity_residual_relative"] == pytest.approx(residual / est_norm, rel=1e-12, abs=0)

    def test_zero_estimate_relative_residual(self):
        """A Monte Carlo estimate that is exactly 0 (every draw has Xᵀ1 = 0) reports the absolute residual, 0.

        k = 2, d = 1: s = x_1 + x_2 is 0 for both draws of seed 2 (checked on the raw
        draws), so E_1 = Σ M_i W_i = 0 exactly and the relative residual is undefined.
        """
        assert np.all(sample_inputs(2, 2, 1, rng=2).sum(axis=1) == 0)
        layer = AttentionLayer(np.zeros((1, 1, 1)), np.ones((1, 1, 1)))
        result = check_one_step(layer, 2, method="monte_carlo", n_samples=2, rng=2)
        assert_array_equal(result.estimate, [[0.0]])
        assert result.measured == 1.0
        assert result.details["identity_residual"] == 0.0 and result.details["identity_residual_relative"] == 0.0

    @pytest.mark.parametrize(
        ("distribution", "control_variate"),
        [("boolean", False), ("boolean", True), ("gaussian", False), ("gaussian", True)],
        ids=["boolean", "boolean-control-variate", "gaussian", "gaussian-control-variate"],
    )
    def test_monte_carlo_matches_raw_draws(self, distribution, control_variate):
        """The Monte Carlo mean, M_i and covariance trace equal numpy's over the same draws.

        The draws are replayed with sample_inputs from the same seed in the same
        blocks (batch = 1000 of 2500). Control variate: the averaged matrices are
        Z − (1/k) s sᵀ ΣW + ΣW and (1/k) s c_iᵀ − (1/k) s sᵀ + I. trace_covariance
        is the sum of the unbiased (ddof = 1) variances of the d² entries.
        Tolerances: means of 2500 terms summed in another order agree to ~1e-15
        relative (1e-12); the trace is a difference of two sums, so 1e-9.
        """
        layer = random_layer(2, 3, logit_scale=2.0, check=False, rng=1)
        k, n, seed = 3, 2500, 7
        rng = np.random.default_rng(seed)
        X = np.concatenate([sample_inputs(b, k, 3, distribution=distribution, rng=rng) for b in (1000, 1000, 500)])
        Z, Ms = _per_input_terms(layer, X, k)
        wbar = layer.ws.sum(axis=0)
        if control_variate:
            ssT = np.einsum("nc,nd->ncd", X.sum(axis=1), X.sum(axis=1)) / k
            Z = Z - ssT @ wbar + wbar
            Ms = Ms - ssT[:, None] + np.eye(3)
        result = check_one_step(layer, k, method="monte_carlo", distribution=distribution, n_samples=n,
                                control_variate=control_variate, batch=1000, rng=seed)
        scale = np.abs(Z).max()
        assert_allclose(result.estimate, Z.mean(axis=0), rtol=0, atol=1e-12 * scale)
        assert_allclose(result.M, Ms.mean(axis=0), rtol=0, atol=1e-12 * np.abs(Ms).max())
        trace_cov = float(Z.reshape(n, -1).var(axis=0, ddof=1).sum())
        details = result.details
        assert details["trace_covariance"] == pytest.approx(trace_cov, rel=1e-9)
        target_norm = np.linalg.norm(wbar)
        assert details["standard_error"] == pytest.approx(math.sqrt(trace_cov / n) / target_norm, rel=1e-9)
        assert details["n_inputs"] == n and result.parameters["batch"] == 1000
        assert "arXiv 2402.04084" in result.source and "Monte Carlo interval" in result.source
        assert ("Control variate" in result.source) == control_variate

    def test_exact_blocks_follow_batch(self):
        """Exact mode enumerates all 2^{kd} inputs in blocks of `batch` (k = 3, d = 2: 64 inputs, 4 blocks of 16)."""
        layer, sizes = _recording_layer(np.zeros((1, 2, 2)), np.eye(2)[None])
        result = check_one_step(layer, 3, batch=16)
        assert sizes == [16, 16, 16, 16]
        assert result.details["n_inputs"] == 64 and result.parameters["batch"] == 16

    @pytest.mark.parametrize(("m", "d", "expected"), [(1, 6, 58254), (3, 4, 65536), (1, 1, 65536)])
    def test_default_exact_block(self, m, d, expected):
        """Default block: the most inputs whose (m+1) d×d matrices fit in 2^22 floats (32 MiB), at most 65536.

        By hand: m = 1, d = 6 holds 72 floats per input and ⌊2^22/72⌋ = 58254;
        m = 3, d = 4 holds 64 and 2^22/64 = 65536 exactly; m = 1, d = 1 is capped
        at 65536 inputs (cube_expectation's own default block).
        """
        layer = AttentionLayer(np.zeros((m, d, d)), np.stack([np.eye(d)] * m))
        result = check_one_step(layer, 2)
        assert result.parameters["batch"] == expected
        assert result.details["n_inputs"] == 2 ** (2 * d)

    def test_default_exact_block_never_exceeds_32_mib(self):
        """2^21 heads with d = 1: one input's 2^21 + 1 floats already take 16 MiB, so blocks hold one input."""
        m = 2**21
        layer = AttentionLayer(np.zeros((m, 1, 1)), np.ones((m, 1, 1)))
        estimate, M, info = _exact_moments(layer, 1, None)
        assert info["batch"] == 1 and info["n_inputs"] == 2
        assert_array_equal(estimate, [[m]])  # Θ = 0: E_1 = ΣW_i exactly

    @pytest.mark.parametrize("kwargs", [{}, {"distribution": "gaussian"}], ids=["zero-target", "gaussian"])
    def test_exact_size_limit_is_inclusive(self, kwargs):
        """k·d = 22 is allowed for the exact method: a later check, not the size guard, rejects these calls."""
        layer = AttentionLayer(np.zeros((2, 11, 11)), np.stack([np.eye(11), -np.eye(11)]))
        with pytest.raises(ValueError, match="ΣW_i is the zero matrix|distribution='gaussian' needs"):
            check_one_step(layer, 2, **kwargs)

    @pytest.mark.parametrize("method", ["exact", "monte_carlo"])
    def test_linearity_identity(self, method):
        """E_1 (from the forward pass) = Σ M_i W_i (from the attention patterns).

        It holds input by input, so only rounding separates the two: about
        (number of summands)·eps relative; 1e-12 leaves a wide margin.
        """
        layer = random_layer(3, 4, logit_scale=2.0, check=False, rng=1)
        result = check_one_step(layer, 3, method=method, n_samples=20000, rng=0)
        assert result.details["identity_residual_relative"] < 1e-12
        assert_allclose(result.estimate, np.einsum("icd,ide->ce", result.M, layer.ws), rtol=0, atol=1e-12)

    @pytest.mark.parametrize("control_variate", [False, True], ids=["plain", "control-variate"])
    def test_exact_within_monte_carlo_interval_regression(self, control_variate):
        """Fixed seed: the exact error lies in the Monte Carlo interval and ‖Ê_1 − E_1‖_F <= t.

        Regression layer of the statistical test (seed 3, n = 50 000). The
        default case's layer and k: exact reference in 0.6 s.
        """
        layer = random_layer(2, 6, logit_scale=1.0, rng=0)
        exact = check_one_step(layer, 3)
        mc = check_one_step(layer, 3, method="monte_carlo", n_samples=50_000, control_variate=control_variate, rng=3)
        lo, hi = mc.interval
        assert lo <= exact.measured <= hi
        assert np.linalg.norm(mc.estimate - exact.estimate) <= mc.details["radius"]
        assert not mc.exact and mc.failure_probability == 0.05

    @pytest.mark.parametrize("seed", [11, 12, 13])
    def test_exact_within_monte_carlo_interval_any_seed(self, seed):
        """Principled layer: the interval covers the exact value for any seed, except with probability <= 0.05.

        Chebyshev's bound is distribution-free; for these sums of 20 000 i.i.d.
        matrices the normal approximation puts the real miss rate near
        P(‖N(0, Σ)‖ >= 4.5 sd) — far below 0.05 — so a failure here is a bug
        unless it recurs for no seed but this one.
        """
        layer = random_layer(2, 4, logit_scale=2.0, check=False, rng=2)
        exact = check_one_step(layer, 3)
        mc = check_one_step(layer, 3, method="monte_carlo", n_samples=20_000, rng=seed)
        assert mc.interval[0] <= exact.measured <= mc.interval[1]

    def test_gaussian_inputs_zero_theta(self):
        """Gaussian inputs, Θ = 0: E[XᵀJX] = kI holds for Gaussians too, so E_1 = ΣW_i and 0 is in the interval."""
        layer = _dyadic_layer(1, 4, rng=3)
        result = check_one_step(layer, 3, method="monte_carlo", distribution="gaussian", n_samples=20_000, rng=4)
        assert result.interval[0] == 0.0 and result.holds

    @pytest.mark.parametrize("k", [2, 3, 4])
    def test_first_order_expansion(self, k):
        """M = I + ((k−1)/k) Θ − (2(k−1)/k²) diag Θ + O(‖Θ‖²) for Boolean inputs (our computation).

        With Θ = εT, ‖T‖_F = 2, ε = 1e-4, the remainder (M − I)/ε − first order is
        O(ε‖T‖²) = O(4e-4) (measured below 3e-4); atol 2e-3.
        """
        T = random_layer(1, 3, logit_scale=2.0, check=False, rng=k).thetas[0]
        eps = 1e-4
        result = check_one_step(AttentionLayer(eps * T[None], np.eye(3)[None]), k)
        first = (k - 1) / k * T - 2 * (k - 1) / k**2 * np.diag(np.diag(T))
        assert_allclose((result.M[0] - np.eye(3)) / eps, first, rtol=0, atol=2e-3)

    def test_result_type_and_record(self):
        """The result is a CheckResult with the matrices attached, read-only, and a JSON-ready record."""
        layer = random_layer(2, 3, check=False, rng=0)
        result = check_one_step(layer, 2)
        assert isinstance(result, OneStepResult) and isinstance(result, CheckResult)
        assert result.estimate.shape == (3, 3) and result.M.shape == (2, 3, 3)
        assert not result.estimate.flags.writeable and not result.M.flags.writeable
        assert_array_equal(result.details["estimate"], result.estimate)
        assert_array_equal(result.details["target"], layer.ws.sum(axis=0))
        assert len(result.details["head_distances"]) == 2
        record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        assert_array_equal(record["M"], result.M)
        assert record["name"] == "one_step" and record["seed_entropy"] is None

    def test_monte_carlo_reproducible(self):
        """Same seed, same result (bit for bit); another seed differs; the seed entropy is recorded."""
        layer = random_layer(1, 4, check=False, rng=0)
        a = check_one_step(layer, 2, method="monte_carlo", n_samples=3000, batch=700, rng=9)
        b = check_one_step(layer, 2, method="monte_carlo", n_samples=3000, batch=700, rng=9)
        c = check_one_step(layer, 2, method="monte_carlo", n_samples=3000, batch=700, rng=10)
        assert a.seed_entropy == 9 and a.parameters["batch"] == 700
        assert_array_equal(a.estimate, b.estimate)
        assert a.measured == b.measured and a.interval == b.interval
        assert not np.array_equal(a.estimate, c.estimate)

    def test_stable_ranks_recorded(self):
        """details['stable_ranks'] is ‖Θ‖_F²/‖Θ‖_op², exactly r for the sweep's construction (nan for Θ = 0).

        The third head, diag(1/2, 1/2, 0, 0), has ‖Θ‖_op = 1/2 < 1 and stable rank (1/4 + 1/4)/(1/4) = 2.
        """
        theta = theta_of_stable_rank(4, 3, 2.0, rng=0)
        small = np.diag([0.5, 0.5, 0.0, 0.0])
        layer = AttentionLayer(np.stack([theta, np.zeros((4, 4)), small]), np.stack([np.eye(4)] * 3))
        ranks = check_one_step(layer, 2).details["stable_ranks"]
        assert ranks[0] == pytest.approx(3.0, rel=1e-12) and math.isnan(ranks[1])
        assert ranks[2] == 2.0

    _layer = AttentionLayer(np.zeros((1, 3, 3)), np.eye(3)[None])

    @pytest.mark.parametrize(
        ("args", "kwargs", "error", "match"),
        [
            ((np.eye(3), 2), {}, TypeError, "`layer` must be an AttentionLayer; got ndarray"),
            ((_layer, 0), {}, ValueError, "`k` must be at least 1; got k=0"),
            ((_layer, 2.0), {}, TypeError, "`k` must be an integer; got k=2.0"),
            ((_layer, 2), {"method": "sampling"}, ValueError, "`method` must be one of .*got method='sampling'"),
            ((_layer, 2), {"distribution": "uniform"}, ValueError, "`distribution` must be one of"),
            ((_layer, 2), {"failure_probability": 0}, ValueError,
             "`failure_probability` must be finite and positive; got failure_probability=0.0"),
            ((_layer, 2), {"failure_probability": 1.5}, ValueError,
             "`failure_probability` must be below 1; got failure_probability=1.5"),
            ((_layer, 2), {"failure_probability": "0.1"}, TypeError,
             "`failure_probability` must be a real number; got failure_probability='0.1'"),
            ((_layer, 2), {"bound": -0.1}, ValueError, "`bound` must be finite and non-negative; got bound=-0.1"),
            ((_layer, 2), {"bound": math.inf}, ValueError, "`bound` must be finite"),
            ((_layer, 2), {"n_samples": 1}, ValueError, "`n_samples` must be at least 2; got n_samples=1"),
            ((_layer, 2), {"batch": 0}, ValueError, "`batch` must be at least 1; got batch=0"),
            ((_layer, 8), {}, ValueError, f"needs k\\*d <= {MAX_EXACT_BITS}; got k=8, d=3 \\(k\\*d=24\\)"),
            ((_layer, 2), {"distribution": "gaussian"}, ValueError,
             "distribution='gaussian' needs method='monte_carlo'"),
            ((AttentionLayer(np.zeros((2, 2, 2)), np.stack([np.eye(2), -np.eye(2)])), 2), {}, ValueError,
             "ΣW_i is the zero matrix"),
        ],
        ids=[
            "not-a-layer", "k-zero", "k-float", "unknown-method", "unknown-distribution", "fp-zero", "fp-above-one",
            "fp-string", "bound-negative", "bound-inf", "n-samples-one", "batch-zero", "exact-too-large",
            "exact-gaussian", "zero-target",
        ],
    )
    def test_bad_inputs(self, args, kwargs, error, match):
        with pytest.raises(error, match=match):
            check_one_step(*args, **kwargs)


def _cube_one_step(layer, k):
    """E_1 = (1/k) E[Xᵀ J F(X)] over all 2^{kd} inputs, vectorised, with its own enumeration, softmax and F.

    Returns E_1 and the largest per-input term |s_c g_e|/k (s = Xᵀ1, g = F(X)ᵀ1: XᵀJF = s gᵀ).
    """
    d = layer.d
    bits = (np.arange(2 ** (k * d))[:, None] >> np.arange(k * d)) & 1
    X = (1.0 - 2.0 * bits).reshape(-1, k, d)
    F = np.zeros_like(X)
    for theta, w in zip(layer.thetas, layer.ws, strict=True):
        logits = np.einsum("nac,ce,nbe->nab", X, theta, X)
        P = np.exp(logits - logits.max(axis=2, keepdims=True))
        P /= P.sum(axis=2, keepdims=True)
        F += P @ X @ w
    s, g = X.sum(axis=1), F.sum(axis=1)
    return s.T @ g / (k * X.shape[0]), float(np.abs(s).max() * np.abs(g).max()) / k


class TestDefaultOneStep:
    def test_holds_and_matches_enumeration(self):
        """Seed 0: the exact error equals ‖E_1 − ΣW_i‖_F/‖ΣW_i‖_F from an independent pass over the 2^18 inputs."""
        result = default_one_step(rng=0)
        assert_check_holds(result)
        layer = random_layer(2, 6, logit_scale=1.0, rng=0)  # DEFAULT_CASE at seed 0
        assert_array_equal(result.target, layer.ws.sum(axis=0))
        E1, term = _cube_one_step(layer, 3)
        n_inputs = 2**18
        # Summing n terms of size <= term errs by at most n·eps·term in the mean (worst case, any order).
        atol = n_inputs * EPS * term
        assert_allclose(result.estimate, E1, rtol=0, atol=atol)
        target = np.linalg.norm(layer.ws.sum(axis=0))
        expected = np.linalg.norm(E1 - layer.ws.sum(axis=0)) / target
        # |‖a‖ − ‖b‖| <= ‖a − b‖_F <= d·max|a − b|.
        assert result.exact and result.measured == pytest.approx(expected, rel=0, abs=layer.d * atol / target)

    @pytest.mark.parametrize("seed", [1, 2])
    def test_holds_for_other_seeds(self, seed):
        """Over seeds 0–19 the error ranges 0.17–0.30; any planted layer should hold."""
        assert_check_holds(default_one_step(rng=seed))


class TestControlOneStep:
    @pytest.mark.parametrize("seed", [0, 1, 2, 3])
    def test_fails_with_margin(self, seed):
        """The negative control fails: error 0.727 against the bound 0.5, for every seed."""
        result = control_one_step(rng=seed)
        assert_check_fails(result)
        assert result.measured > 0.7

    def test_same_value_for_every_seed(self):
        """Coordinate sign flips preserve the cube, so every seed gives the same error (up to rounding, 1e-12)."""
        values = [control_one_step(rng=s).measured for s in range(6)]
        assert_allclose(values, values[0], rtol=1e-12)

    def test_layer_is_the_documented_construction(self):
        """Θ = −8 u uᵀ and W = √d u uᵀ with u = σ/√d, σ ∈ {±1}^4 drawn from the seed.

        So ΣW = σσᵀ/2 (entries ±1/2, rank one); the same seed gives the same σ and
        other seeds other sign patterns. The error equals an independent enumeration
        of the layer with σ = (1, 1, 1, 1) (2^16 inputs, summed in another order: 1e-12),
        since every sign pattern gives the same error.
        """
        d, k, scale = CONTROL_CASE["d"], CONTROL_CASE["k"], CONTROL_CASE["scale"]
        u = np.ones(d) / math.sqrt(d)
        layer = AttentionLayer(-scale * np.outer(u, u)[None], math.sqrt(d) * np.outer(u, u)[None])
        E1, _ = _cube_one_step(layer, k)
        expected = np.linalg.norm(E1 - layer.ws[0]) / np.linalg.norm(layer.ws[0])
        patterns = set()
        for seed in range(4):
            result = control_one_step(rng=seed)
            assert_array_equal(control_one_step(rng=seed).target, result.target)
            sigma = np.sign(result.target[0]) * np.sign(result.target[0, 0])
            assert_array_equal(result.target, np.outer(sigma, sigma) / 2)
            patterns.add(tuple(sigma))
            assert result.measured == pytest.approx(expected, rel=1e-12)
        assert len(patterns) > 1

    def test_premise_is_violated(self):
        """The control's Θ has stable rank 1 and operator norm λ = 8 (the lemma wants large r, bounded norm)."""
        result = control_one_step(rng=0)
        assert result.details["stable_ranks"][0] == pytest.approx(1.0, rel=1e-12)
        assert result.parameters["k"] == CONTROL_CASE["k"] <= result.parameters["d"]  # k <= d still holds


class TestOneStepGradientSymbolic:
    @pytest.mark.parametrize(("k", "d"), [(1, 1), (2, 2), (2, 3), (3, 2)], ids=["1x1", "2x2", "2x3", "3x2"])
    def test_identity_holds(self, k, d):
        """W_1 = (1/k)XᵀJY exactly, and its cube average with Y = F*(X) is W* exactly."""
        result = one_step_gradient_symbolic(k, d)
        assert result.holds and result.gradient_holds and result.population_holds
        assert result.gradient_residual == sympy.zeros(d, d)
        assert result.population_residual == sympy.zeros(d, d)

    @pytest.mark.parametrize(
        "kwargs",
        [{"step_size": sympy.Rational(1, 2)}, {"loss_factor": 1}, {"step_size": 3, "loss_factor": 0.5}],
        ids=["half-step", "loss-without-half", "step-3"],
    )
    def test_wrong_normalisation_fails(self, kwargs):
        """Negative control: 2·c·η ≠ 1 rescales W_1, and both identities fail."""
        result = one_step_gradient_symbolic(2, 2, **kwargs)
        assert not result.gradient_holds and not result.population_holds and not result.holds

    def test_only_the_product_matters(self):
        """c = 1/4 with η = 2 gives 2cη = 1 again, so the identity holds."""
        assert one_step_gradient_symbolic(2, 2, step_size=2, loss_factor=sympy.Rational(1, 4)).holds

    @pytest.mark.parametrize(
        ("args", "kwargs", "error", "match"),
        [
            ((0, 2), {}, ValueError, "`k` must be at least 1; got k=0"),
            ((2, 1.0), {}, TypeError, "`d` must be an integer"),
            ((3, 4), {}, ValueError, "needs k\\*d <= 9; got k=3, d=4"),
            ((2, 2), {"step_size": 0}, ValueError, "`step_size` must be positive; got step_size=0"),
            ((2, 2), {"loss_factor": -1}, ValueError, "`loss_factor` must be positive"),
            ((2, 2), {"step_size": "1"}, TypeError, "`step_size` must be a real number"),
            ((2, 2), {"step_size": sympy.sqrt(2)}, ValueError, "`step_size` must be rational"),
        ],
        ids=["k-zero", "d-float", "too-large", "step-zero", "loss-negative", "step-string", "step-irrational"],
    )
    def test_bad_inputs(self, args, kwargs, error, match):
        with pytest.raises(error, match=match):
            one_step_gradient_symbolic(*args, **kwargs)


class TestThetaOfStableRank:
    @pytest.mark.parametrize("r", [1, 3, 6])
    def test_exact_stable_rank_and_norm(self, r):
        """r equal singular values frobenius/√r: stable rank r and ‖Θ‖_F = frobenius (to 1e-12, rounding of an SVD)."""
        theta = theta_of_stable_rank(6, r, 2.5, rng=r)
        s = np.linalg.svd(theta, compute_uv=False)
        assert_allclose(s[:r], 2.5 / math.sqrt(r), rtol=1e-12)
        assert_allclose(s[r:], 0, atol=1e-12)


    @pytest.mark.parametrize("seed", [0, 3])
    def test_haar_orthogonal_is_positive_diagonal_qr(self, seed):
        """Q of the Gaussian's QR with R's diagonal made positive: Gram–Schmidt of the same draw, Qᵀ Q = I.

        Seeds 0 and 3 (d = 5) give a QR from numpy with negative diagonal entries of R
        and positive ones below 1, so every sign rule is exercised. Tolerance 1e-12:
        two orthogonalisations of a well-conditioned 5×5 matrix.
        """
        Q = _haar_orthogonal(5, np.random.default_rng(seed))
        G = np.random.default_rng(seed).standard_normal((5, 5))
        assert_allclose(Q, _gram_schmidt(G), rtol=0, atol=1e-12)
        assert_allclose(Q.T @ Q, np.eye(5), rtol=0, atol=1e-12)
        assert np.all(np.diag(Q.T @ G) > 0)

    def test_theta_from_haar_factors(self):
        """Θ = (frobenius/√r) U_r V_rᵀ with U, V the Haar factors of the seed's first two Gaussian 5×5 draws."""
        theta = theta_of_stable_rank(5, 4, 2.5, rng=0)
        rng = np.random.default_rng(0)
        U, V = _gram_schmidt(rng.standard_normal((5, 5))), _gram_schmidt(rng.standard_normal((5, 5)))
        assert_allclose(theta, 2.5 / 2 * U[:, :4] @ V[:, :4].T, rtol=0, atol=1e-12)

    @pytest.mark.parametrize(
        ("args", "error", "match"),
        [
            ((4, 5, 1.0), ValueError, "must be at most d=4; got r=5"),
            ((4, 0, 1.0), ValueError, "`r` must be at least 1; got r=0"),
            ((4, 2, 0.0), ValueError, "`frobenius` must be finite and positive"),
            ((4.0, 2, 1.0), TypeError, "`d` must be an integer"),
        ],
        ids=["rank-above-d", "rank-zero", "frobenius-zero", "d-float"],
    )
    def test_bad_inputs(self, args, error, match):
        with pytest.raises(error, match=match):
            theta_of_stable_rank(*args)


class TestStableRankSweep:
    def test_small_sweep(self):
        """A small exact sweep returns finite errors and exponents of the right shapes, and no noise floor."""
        result = stable_rank_sweep(d=4, k=4, ranks=(1, 2, 4), n_layers=1, method="exact", rng=0)
        assert isinstance(result, StableRankSweep)
        assert result.errors.shape == (3,) and result.errors_all.shape == (3, 1)
        assert np.all(np.isfinite(result.errors)) and np.all(result.errors > 0)
        assert math.isfinite(result.exponent) and math.isfinite(result.exponent_se)
        assert math.isfinite(result.worst_case_exponent)
        assert result.noise_floor == 0.0
        json.dumps(result.to_dict(), allow_nan=False)

    def test_fits_match_polyfit(self):
        """Exponent, intercept and slope standard error equal numpy.polyfit's degree-1 fit of log e on log r.

        polyfit's covariance scales by the residual sum over n − 2, the usual
        standard error of a least-squares slope. Four ranks, exact; 1e-9.
        """
        result = stable_rank_sweep(d=4, k=2, ranks=(1, 2, 3, 4), n_layers=1, method="exact", rng=0)
        logr = np.log([1.0, 2.0, 3.0, 4.0])
        for values, slope, se, intercept in [
            (result.errors, result.exponent, result.exponent_se, result.intercept),
            (result.worst_case, result.worst_case_exponent, result.worst_case_exponent_se,
             result.worst_case_intercept),
        ]:
            coef, cov = np.polyfit(logr, np.log(values), 1, cov=True)
            assert slope == pytest.approx(coef[0], rel=1e-9)
            assert intercept == pytest.approx(coef[1], rel=1e-9)
            assert se == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-9)

    def test_two_ranks_have_no_standard_error(self):
        """With two ranks the line fits exactly; the slope's standard error is undefined (nan)."""
        result = stable_rank_sweep(d=3, k=2, ranks=(1, 3), n_layers=1, method="exact", rng=0)
        assert math.isfinite(result.exponent) and math.isnan(result.exponent_se)

    def test_small_monte_carlo_sweep(self):
        """Monte Carlo sweep: the noise floor and standard error are reported and positive."""
        result = stable_rank_sweep(d=8, k=4, ranks=(1, 8), n_layers=1, n_samples=4000, rng=1)
        assert 0 < result.standard_error < result.noise_floor
        assert result.parameters["control_variate"] is True

    @pytest.mark.slow
    def test_full_sweep(self):
        """Default sizes (~25 s): the worst case over W decays in r, and the noise floor is far below the errors.

        Measured with seed 0: exponent (W = I) +0.08 ± 0.01, worst case −0.36 ± 0.01.
        """
        result = stable_rank_sweep(rng=0)
        assert math.isfinite(result.exponent)
        assert result.worst_case_exponent + 3 * result.worst_case_exponent_se < 0
        assert result.noise_floor < result.errors.min() / 5
        assert result.worst_case_noise_floor < result.worst_case.min() / 3

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"ranks": (2,)}, ValueError, "at least two distinct stable ranks"),
            ({"ranks": (1, 1)}, ValueError, "at least two distinct"),
            ({"d": 4, "ranks": (1, 5)}, ValueError, "at most d=4"),
            ({"ranks": "12"}, TypeError, "`ranks` must be a list of values; got ranks='12'"),
            ({"ranks": (1, 2.5)}, TypeError, "`ranks` must be an integer"),
            ({"frobenius": 0.0}, ValueError, "`frobenius` must be finite and positive"),
            ({"method": "mc"}, ValueError, "`method` must be one of"),
            ({"method": "exact"}, ValueError, "got k=4, d=16"),
            ({"n_layers": 0}, ValueError, "`n_layers` must be at least 1"),
        ],
        ids=["one-rank", "repeated-rank", "rank-above-d", "ranks-string", "rank-float", "frobenius-zero",
             "unknown-method", "exact-too-large", "no-layers"],
    )
    def test_bad_inputs(self, kwargs, error, match):
        with pytest.raises(error, match=match):
            stable_rank_sweep(**kwargs)


class TestPlotStableRankSweep:
    def test_writes_png(self, tmp_path):
        """A non-empty PNG file (checked by its signature)."""
        result = stable_rank_sweep(d=8, k=4, ranks=(1, 2, 8), n_layers=2, n_samples=2000, rng=0)
        path = plot_stable_rank_sweep(result, tmp_path / "sweep.png")
        data = path.read_bytes()
        assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"

    def test_rejects_other_results(self, tmp_path):
        with pytest.raises(TypeError, match="`result` must be a StableRankSweep"):
            plot_stable_rank_sweep(control_one_step(rng=0), tmp_path / "x.png")


class TestPlotOneStep:
    @pytest.mark.slow
    def test_writes_png(self, tmp_path):
        """The registry's figure: the default sweep (~25 s), written as a PNG."""
        data = plot_one_step(tmp_path / "one_step.png", rng=0).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
