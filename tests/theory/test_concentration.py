"""theory.concentration: the pattern does not concentrate, its conditional expectation on slices does."""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from learner import AttentionLayer, assumptions, enumerate_cube
from theory import concentration
from theory.concentration import (
    BOUND_PER_ROOT_K,
    ExpectationVsSample,
    _averaging,
    _between_slice,
    _correlation,
    _folded_classes,
    _kappa,
    _orbits,
    _sample_slice,
    _slice_statistics,
    _typical_weights,
    check_softmax_concentration,
    control_softmax_concentration,
    default_softmax_concentration,
    expectation_vs_sample,
    plot_expectation_vs_sample,
)
from theory.testing import assert_check_fails, assert_check_holds

# --------------------------------------------------------------------------- exact reference


def _mask(k, d, positions):
    mask = np.zeros((k, d), dtype=bool)
    for a, c in positions:
        mask[a, c] = True
    return mask


def exact_slices(theta, k, positions):
    """Everything the check estimates, exactly, by visiting all 2^{kd} Boolean inputs.

    Returns the folded weights' probabilities, E[P | v], E[s ⊗ x_b | v] (for the
    between-slice formula), M − I and the unconditional spread. Sums of at most 2^{kd}
    float terms: rounding only (~1e-15 here).
    """
    d = theta.shape[0]
    mask = _mask(k, d, positions)
    size = int(mask.sum())
    layer = AttentionLayer(theta[None], np.zeros((1, d, d)))
    n_cls = size // 2 + 1
    count = np.zeros(n_cls)
    sum_p = np.zeros((n_cls, k, k))
    sum_sx = np.zeros((n_cls, k, d, d))  # Σ s ⊗ x_b
    sum_jp = np.zeros((d, d))  # Σ Xᵀ J P X
    sum_sq = 0.0
    for X in enumerate_cube(k, d):
        P = layer.attention(X)[:, 0]
        w = (X[:, mask] > 0).sum(axis=1)
        v = np.minimum(w, size - w)
        s = X.sum(axis=1)
        sum_jp += np.einsum("ne,nf->ef", s, np.einsum("nab,nbf->nf", P, X))
        sum_sq += float(np.sum(P**2))
        for c in range(n_cls):
            sel = v == c
            count[c] += sel.sum()
            sum_p[c] += P[sel].sum(axis=0)
            sum_sx[c] += np.einsum("ne,nbf->bef", s[sel], X[sel])
    total = 2.0 ** (k * d)
    prob = count / total
    cond = sum_p / count[:, None, None]
    mean = np.tensordot(prob, cond, axes=1)
    dist = np.sqrt(np.sum((cond - mean) ** 2, axis=(1, 2)))
    return {
        "mask": mask,
        "prob": prob,
        "cond": cond,
        "sx": sum_sx / count[:, None, None, None],
        "dist": dist,
        "spread": float(np.sqrt(prob @ dist**2)),
        "unconditional": math.sqrt(sum_sq / total - float(np.sum(mean**2))),
        "m_minus_i": sum_jp / (k * total) - np.eye(d),
    }


def softmax_patterns(theta, X):
    """softmax(X Θ Xᵀ) row by row for a stack of inputs (n, k, d), computed directly."""
    logits = np.einsum("nae,ef,nbf->nab", X, theta, X)
    z = np.exp(logits - logits.max(axis=2, keepdims=True))
    return z / z.sum(axis=2, keepdims=True)


def symmetrise(mask, M):
    """Mean of Π M Πᵀ over the token permutations Π that keep every row of ``mask`` (M: (..., k, k))."""
    perms = [list(p) for p in itertools.permutations(range(mask.shape[0])) if (mask[list(p)] == mask).all()]
    return sum(M[..., p, :][..., :, p] for p in perms) / len(perms)


def one_step_terms(P, X):
    """Y = s ⊗ Σ_b (c_b − 1) x_b / k per input, with s = Σ_a x_a and c_b = Σ_a P_ab."""
    u = np.einsum("nb,nbf->nf", P.sum(axis=1) - 1.0, X)
    return np.einsum("ne,nf->nef", X.sum(axis=1), u) / X.shape[1]


def count_matrices(mask):
    """R_b[e, f] = #{a : (a, e) ∈ S, (b, f) ∈ S, (a, e) ≠ (b, f)}, by visiting every pair of positions."""
    k, d = mask.shape
    R = np.zeros((k, d, d))
    for a, e, b, f in itertools.product(range(k), range(d), range(k), range(d)):
        if mask[a, e] and mask[b, f] and (a, e) != (b, f):
            R[b, e, f] += 1
    return R


@pytest.fixture
def recorded_draws(monkeypatch):
    """The (weight, inputs) of every call to the slice sampler, in order."""
    draws = []
    sample = concentration._sample_slice

    def recording(n, k, d, positions, weight, rng):
        X = sample(n, k, d, positions, weight, rng)
        draws.append((int(weight), X.copy()))
        return X

    monkeypatch.setattr(concentration, "_sample_slice", recording)
    return draws


TINY_THETA = np.random.default_rng(20240204).normal(0.0, 1.0, (4, 4))
TINY_BLOCK = TINY_THETA + 3.0 * np.outer([1, 1, 1, 0], [1, 1, 1, 0])
TINY_CASES = {
    # (theta, substring): a random Θ (logit std 4) and Θ with a heavy block on the substring's
    # coordinates (the truth is then far from 0, so the interval's lower end is tested too).
    "random-token0": (TINY_THETA, [(0, 0), (0, 1), (0, 2)]),
    "random-two-tokens": (TINY_THETA, [(0, 0), (0, 1), (1, 0), (1, 3)]),
    "block-token0": (TINY_BLOCK, [(0, 0), (0, 1), (0, 2)]),
}


@pytest.fixture(scope="module", params=sorted(TINY_CASES))
def tiny(request):
    theta, positions = TINY_CASES[request.param]
    return theta, positions, exact_slices(theta, 2, positions)


@pytest.fixture(scope="module")
def default_result():
    return default_softmax_concentration(rng=0)


@pytest.fixture(scope="module")
def control_result():
    return control_softmax_concentration(rng=0)


# --------------------------------------------------------------------------- the check


class TestCheckSoftmaxConcentration:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_intervals_contain_the_exact_values(self, tiny, seed):
        """Principled acceptance, any seed: each interval holds the exact value (k=2, d=4, 256 inputs).

        Each containment fails with probability <= failure_probability = 0.05 (Chebyshev
        with plug-in variance; Chebyshev is conservative, so failures are far rarer). The
        seeds are fixed, so the test is deterministic.
        """
        theta, positions, exact = tiny
        r = check_softmax_concentration(theta, 2, substring=positions, n_samples=4000, rng=seed)
        lo, hi = r.interval
        assert lo <= exact["spread"] <= hi
        lo_t, hi_t = r.details["max_typical_interval"]
        typical = r.details["typical_weights"]
        assert lo_t <= exact["dist"][typical].max() <= hi_t
        lo_m, hi_m = r.details["one_step_interval"]
        assert lo_m <= np.linalg.norm(exact["m_minus_i"]) <= hi_m

    def test_point_estimates_near_the_exact_values(self, tiny):
        theta, positions, exact = tiny
        r = check_softmax_concentration(theta, 2, substring=positions, n_samples=20_000, rng=5)
        assert_allclose(r.details["weight_probability"], exact["prob"], rtol=1e-15)  # exact binomials
        # The conditional spread's error is below the Chebyshev radius (fails w.p. <= 0.05).
        assert abs(r.measured - exact["spread"]) <= r.details["radius"]
        # A plug-in standard deviation from 20 000 inputs: its relative standard error here is
        # ~0.2% (30 seeds, largest error 0.5%), so 1% is 5 standard errors.
        assert_allclose(r.details["unconditional_spread"], exact["unconditional"], rtol=0.01)

    def test_conditional_means_are_orbit_invariant(self, tiny):
        """The symmetry the estimator averages over holds exactly: E[P | v] is constant on orbits."""
        _, _, exact = tiny
        labels, sizes = _orbits(exact["mask"])
        for cond in exact["cond"]:
            flat = cond.ravel()
            means = np.bincount(labels, weights=flat) / sizes
            assert_allclose(flat, means[labels], rtol=0, atol=1e-15)  # 256-term sums: rounding

    def test_between_slice_formula(self, tiny):
        """(1/k) Σ_v Pr ρ_v Σ_b (c_b(v) − 1) R_b equals the enumerated between-slice part, and ≤ κ·spread."""
        _, _, exact = tiny
        k = 2
        mask = exact["mask"]
        classes, prob = _folded_classes(int(mask.sum()))
        rho = np.array([_correlation(v, int(mask.sum())) for v in classes])
        enumerated = sum(
            p * np.einsum("b,bef->ef", cond.sum(axis=0) - 1.0, sx)
            for p, cond, sx in zip(exact["prob"], exact["cond"], exact["sx"], strict=True)
        ) / k
        formula = _between_slice(exact["cond"], prob, rho, mask)
        assert_allclose(formula, enumerated, rtol=0, atol=1e-14)  # sums of 256 terms of size <= 4
        assert np.linalg.norm(formula) <= _kappa(prob, rho, mask) * exact["spread"] + 1e-15

    @pytest.mark.parametrize("k", [1, 2, 3, 5])
    def test_constant_pattern_gives_exact_zeros(self, k):
        """Θ = 0: P = J/k for every X, so both spreads are exactly 0 and M = I up to rounding."""
        r = check_softmax_concentration(np.zeros((3, 3)), k, substring=[(0, 0), (0, 2), (k - 1, 1)],
                                        n_samples=300, rng=1)
        assert r.measured == 0.0 and r.interval == (0.0, 0.0)
        assert r.details["unconditional_spread"] == 0.0
        assert r.details["conditional_distance"] == [0.0] * len(r.details["folded_weights"])
        # c_b − 1 = Σ_a fl(1/k) − 1 is 0 or a few ulps; M − I sums d² products of it with ±1's.
        assert r.details["one_step_error"] <= 1e-14
        assert_check_holds(r)

    def test_regression_fixed_seed(self):
        # Values generated by this code (numpy 2, rng=7); they change only if the sampling
        # order or the estimators change. Sums of ~1e4 softmax outputs: rounding ~1e-15.
        theta = np.random.default_rng(3).normal(0.0, 0.5, (6, 6))
        r = check_softmax_concentration(theta, 4, substring=[(0, 0), (0, 1), (1, 0)], n_samples=3000, rng=7)
        assert_allclose(
            [r.measured, r.details["unconditional_spread"], r.details["one_step_error"]],
            REGRESSION_SMALL,
            rtol=1e-12,
        )

    def test_single_position_substring_has_zero_spread(self):
        # P(−X) = P(X), so the weight of one position carries no information: one folded class.
        theta = np.random.default_rng(0).normal(0.0, 1.0, (4, 4))
        r = check_softmax_concentration(theta, 3, substring=[(1, 2)], n_samples=200, rng=0)
        assert r.details["folded_weights"] == [0] and r.measured == 0.0

    @pytest.mark.parametrize(
        "substring",
        [[(0, 0), (0, 1)], np.array([[0, 0], [0, 1]]), _mask(3, 4, [(0, 0), (0, 1)]),
         _mask(3, 4, [(0, 0), (0, 1)]).tolist()],
        ids=["pairs", "int-array", "mask", "mask-list"],
    )
    def test_substring_forms_agree(self, substring):
        theta = np.random.default_rng(0).normal(0.0, 1.0, (4, 4))
        r = check_softmax_concentration(theta, 3, substring=substring, n_samples=200, rng=0)
        ref = check_softmax_concentration(theta, 3, substring=[(0, 1), (0, 0)], n_samples=200, rng=0)
        assert r.parameters["substring"] == [[0, 0], [0, 1]]
        assert r.measured == ref.measured and r.interval == ref.interval  # same mask, same draws

    def test_default_bound_scales_with_root_k(self):
        r = check_softmax_concentration(np.zeros((2, 2)), 9, substring=[(0, 0)], n_samples=10)
        assert r.bound == pytest.approx(BOUND_PER_ROOT_K * 3.0, rel=1e-15)

    def test_json_ready(self):
        r = check_softmax_concentration(np.eye(3), 2, substring=[(0, 0), (1, 1)], n_samples=50, rng=0)
        json.dumps(r.to_dict(), allow_nan=False)

    @pytest.mark.parametrize(
        ("theta", "delta"),
        [(TINY_THETA + 3.0, 0.5), (np.random.default_rng(8).normal(0.0, 0.002, (4, 4)), 0.05)],
        ids=["heavy", "faint"],
    )
    def test_estimates_and_intervals_from_the_raw_draws(self, recorded_draws, theta, delta):
        """Every reported estimate and radius, recomputed from the inputs the check drew.

        Substring: all 4 coordinates of token 0 (k=3, d=4), so the folded weights are 0, 1, 2
        with Pr = 2/16, 8/16, 6/16, the typical weights are {1, 2} (1/2 + 3/8 >= 0.8) and
        ρ = E[x_p x_q | v] = 1, 0, −1/3. Tokens 1 and 2 are exchangeable. "heavy" moves E[P | v]
        far (the typical interval's lower end is positive); "faint" has ‖Y − Ȳ‖² sums below 1.
        """
        k, positions = 3, [(0, 0), (0, 1), (0, 2), (0, 3)]
        mask = _mask(k, 4, positions)
        n_samples = 1000
        r = check_softmax_concentration(theta, k, substring=positions, n_samples=n_samples,
                                        failure_probability=delta, batch=7, rng=1)
        prob = np.array([2.0, 8.0, 6.0]) / 16
        rho = np.array([1.0, 0.0, -1.0 / 3.0])
        # n_samples spread proportionally to sqrt(Pr), at least 2 per weight.
        counts = np.maximum(2, np.round(n_samples * np.sqrt(prob) / np.sqrt(prob).sum())).astype(int)
        assert r.details["class_samples"] == counts.tolist()
        assert r.details["n_drawn"] == counts.sum() == sum(len(X) for _, X in recorded_draws)

        sym, ys, row_max = [], [], []
        for v in range(3):
            X = np.concatenate([X for w, X in recorded_draws if w == v])
            assert len(X) == counts[v] and np.all((X[:, mask] > 0).sum(axis=1) == v)
            P = softmax_patterns(theta, X)
            sym.append(symmetrise(mask, P))
            ys.append(one_step_terms(P, X))
            row_max.append(P.max(axis=2).mean())
        cond = np.array([s.mean(axis=0) for s in sym])  # estimates of E[P | v]
        var = np.array([np.sum((s - s.mean(axis=0)) ** 2) / (len(s) - 1) for s in sym])  # tr Cov, unbiased
        dist = np.sqrt(np.sum((cond - np.tensordot(prob, cond, axes=1)) ** 2, axis=(1, 2)))
        measured = math.sqrt(prob @ dist**2)
        radius = math.sqrt(prob @ (var / counts) / delta)  # vector Chebyshev: tr Cov / (n δ) = r²
        assert r.measured == pytest.approx(measured, rel=1e-9)
        assert_allclose(r.details["conditional_distance"], dist, rtol=1e-9)
        assert r.details["radius"] == pytest.approx(radius, rel=1e-9)
        assert_allclose(r.interval, [max(0.0, measured - radius), measured + radius], rtol=1e-9)
        assert r.details["mean_row_max"] == pytest.approx(prob @ np.array(row_max), rel=1e-12)

        # Typical weights: 2 per-weight statements and one for Ê[P], each at δ/3 (union bound).
        typical = [1, 2]
        assert r.details["typical_weights"] == typical
        split = delta / 3
        t_mean = math.sqrt((prob**2) @ (var / counts) / split)
        t_typ = np.sqrt(var[typical] / counts[typical] / split)
        assert r.details["max_typical"] == pytest.approx(dist[typical].max(), rel=1e-9)
        assert_allclose(r.details["max_typical_interval"],
                        [max(0.0, (dist[typical] - t_typ - t_mean).max()), (dist[typical] + t_typ + t_mean).max()],
                        rtol=1e-9)

        # M − I = Σ_v Pr[v] E[Y | v], its standard error from the per-weight unbiased variances.
        m_minus_i = sum(p * y.mean(axis=0) for p, y in zip(prob, ys, strict=True))
        var_y = np.array([np.sum((y - y.mean(axis=0)) ** 2) / (len(y) - 1) for y in ys])
        se = math.sqrt((prob**2) @ (var_y / counts))
        error = float(np.linalg.norm(m_minus_i))
        assert r.details["one_step_error"] == pytest.approx(error, rel=1e-9)
        assert r.details["one_step_standard_error"] == pytest.approx(se, rel=1e-9)
        assert_allclose(r.details["one_step_interval"],
                        [max(0.0, error - se / math.sqrt(delta)), error + se / math.sqrt(delta)], rtol=1e-9)

        # Between-slice part (1/k) Σ_v Pr ρ_v Σ_b (c_b(v) − 1) R_b and κ, with R_b counted.
        R = count_matrices(mask)
        between = sum(p * q * np.einsum("b,bef->ef", E.sum(axis=0) - 1.0, R)
                      for p, q, E in zip(prob, rho, cond, strict=True)) / k
        kappa = math.sqrt(prob @ rho**2 * np.sum(R**2) / k)
        assert r.details["one_step_between"] == pytest.approx(np.linalg.norm(between), rel=1e-9)
        assert r.details["kappa"] == pytest.approx(kappa, rel=1e-12)
        assert r.details["one_step_between_bound"] == pytest.approx(kappa * r.interval[1], rel=1e-12)

    def test_one_dimensional_theta_in_closed_form(self):
        """d = 1 is allowed. With S = both tokens' only coordinate, each folded weight fixes P.

        v = 0 (x_0 = x_1): all logits θ, P = J/2. v = 1 (x_0 = −x_1): P_aa = σ = 1/(1 + e^{−2θ}).
        Pr = (1/2, 1/2), so both distances, the spread and the unconditional spread are |σ − 1/2|,
        and no sample varies within a weight (radius 0 up to rounding).
        """
        theta = 0.7
        r = check_softmax_concentration(np.array([[theta]]), 2, substring=[(0, 0), (1, 0)], n_samples=40, rng=0)
        gap = 1.0 / (1.0 + math.exp(-2.0 * theta)) - 0.5
        assert r.details["weight_probability"] == [0.5, 0.5]
        assert_allclose(r.details["conditional_distance"], [gap, gap], rtol=1e-12)
        assert r.measured == pytest.approx(gap, rel=1e-12)
        assert r.details["unconditional_spread"] == pytest.approx(gap, rel=1e-6)
        assert r.details["radius"] <= 1e-6
        # E[P_aa] = (1/2)(1/2) + (1/2)σ; Chebyshev interval at failure probability 0.05.
        e = expectation_vs_sample(np.array([[theta]]), 2, n_samples=400, rng=0)
        assert abs(e.diagonal_mass - (0.5 + gap / 2)) <= e.diagonal_radius

    def test_long_substring_has_exact_float_probabilities(self):
        """|S| = 70: the binomial coefficients exceed int64, the probabilities are still exact floats."""
        size = 70
        r = check_softmax_concentration(np.zeros((10, 10)), 7, substring=np.ones((7, 10), dtype=bool),
                                        n_samples=2, rng=0)
        exact = [Fraction(math.comb(size, v) * (1 if 2 * v == size else 2), 2**size) for v in range(size // 2 + 1)]
        assert_allclose(r.details["weight_probability"], [float(p) for p in exact], rtol=1e-15)
        assert r.measured == 0.0  # Θ = 0: P = J/k for every input

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"theta": np.zeros((3, 4))}, ValueError, r"`theta` must be a square"),
            ({"theta": np.zeros((1, 3, 3))}, ValueError, r"`theta` must have 2 dimensions"),
            ({"theta": np.full((3, 3), np.inf)}, ValueError, r"`theta` must be finite"),
            ({"theta": np.full((3, 3), np.nan)}, ValueError, r"`theta` must be finite"),
            ({"k": 0}, ValueError, r"`k` must be at least 1; got k=0"),
            ({"k": 2.5}, TypeError, r"`k` must be an integer"),
            ({"substring": []}, ValueError, r"`substring` is empty"),
            ({"substring": np.zeros((2, 3), dtype=bool)}, ValueError, r"`substring` is empty"),
            ({"substring": [(2, 0)]}, ValueError, r"\(2, 0\) is out of range for k=2, d=3"),
            ({"substring": [(0, 3)]}, ValueError, r"\(0, 3\) is out of range for k=2, d=3"),
            ({"substring": [(-1, 0)]}, ValueError, r"\(-1, 0\) is out of range"),
            ({"substring": [(0, 0), (1, 2), (0, 7)]}, ValueError, r"\(0, 7\) is out of range for k=2, d=3"),
            ({"substring": [(0, 1), (0, 1)]}, ValueError, r"positions must be distinct"),
            ({"substring": [(0, 1), (1, 2), (0, 1)]}, ValueError, r"distinct; got 3 pairs for 2 positions\."),
            ({"substring": np.ones((3, 2), dtype=bool)}, ValueError, r"shape \(k, d\) = \(2, 3\); got shape \(3, 2\)"),
            ({"substring": [(0.0, 1.0)]}, ValueError, r"integer \(token, coordinate\) pairs"),
            ({"substring": [(0, 1, 2)]}, ValueError, r"pairs; got an array of shape \(1, 3\)"),
            ({"substring": [(0, 1), (2,)]}, ValueError, r"`substring` must be a boolean"),
            ({"n_samples": 1}, ValueError, r"`n_samples` must be at least 2; got n_samples=1"),
            ({"failure_probability": 0.0}, ValueError,
             r"`failure_probability` must be finite and positive; got failure_probability=0.0"),
            ({"failure_probability": 1.0}, ValueError,
             r"`failure_probability` must be below 1; got failure_probability=1.0"),
            ({"failure_probability": float("nan")}, ValueError,
             r"`failure_probability` must be finite and positive; got failure_probability=nan"),
            ({"failure_probability": "0.05"}, TypeError, r"`failure_probability` must be a real number"),
            ({"bound": -0.1}, ValueError, r"`bound` must be finite and non-negative"),
            ({"batch": 0}, ValueError, r"`batch` must be at least 1"),
        ],
        ids=[
            "theta-not-square", "theta-3d", "theta-inf", "theta-nan", "k-zero", "k-float", "substring-empty",
            "mask-all-false", "token-out-of-range", "coordinate-out-of-range", "negative-token",
            "third-pair-out-of-range", "duplicate", "duplicate-count",
            "mask-shape", "float-pairs", "triples", "ragged", "n-samples-1", "fp-zero", "fp-one", "fp-nan",
            "fp-string", "bound-negative", "batch-zero",
        ],
    )
    def test_bad_input(self, kwargs, error, match):
        args = {"theta": np.zeros((3, 3)), "k": 2, "substring": [(0, 0)], "n_samples": 10} | kwargs
        with pytest.raises(error, match=match):
            check_softmax_concentration(args.pop("theta"), args.pop("k"), **args)


class TestHelpers:
    @given(st.integers(2, 7).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
    def test_slice_correlation(self, n_w):
        """E[x_p x_q | w] for distinct positions equals ((2w − n)² − n)/(n(n − 1)) (enumerating the slice)."""
        n, w = n_w
        values = [
            (1 if 0 in ones else -1) * (1 if 1 in ones else -1) for ones in itertools.combinations(range(n), w)
        ]
        assert _correlation(w, n) == pytest.approx(np.mean(values), abs=1e-15)

    @pytest.mark.parametrize("weight", [0, 1, 3, 5])
    def test_sampler_puts_the_weight_on_the_substring(self, weight):
        mask = _mask(3, 4, [(0, 0), (0, 3), (1, 1), (2, 2), (2, 3)])
        X = _sample_slice(500, 3, 4, np.nonzero(mask), weight, np.random.default_rng(0))
        assert set(np.unique(X)) <= {-1.0, 1.0}
        assert np.all((X[:, mask] > 0).sum(axis=1) == weight)

    def test_slice_statistics_against_the_raw_draws(self, recorded_draws):
        """Each accumulated sum of _Stats, recomputed from the recorded inputs (several chunks per weight)."""
        theta = np.random.default_rng(6).normal(0.0, 1.0, (4, 4))
        k, d = 3, 4
        mask = _mask(k, d, [(0, 0), (0, 1), (1, 3), (2, 3)])  # tokens 1 and 2 exchangeable
        classes, prob = _folded_classes(4)
        counts = np.array([5, 9, 7])
        labels, sizes = _orbits(mask)
        layer = AttentionLayer(theta[None], np.zeros((1, d, d)))
        st = _slice_statistics(layer, k, np.nonzero(mask), classes, prob, counts, _averaging(labels, sizes),
                               sizes, 4, np.random.default_rng(0))
        assert [len(X) for _, X in recorded_draws] == [4, 1, 4, 4, 1, 4, 3]
        ref = softmax_patterns(theta, recorded_draws[0][1][:1])[0]  # the first input's pattern
        assert_allclose(st.ref, ref, rtol=1e-13)
        m_minus_i = np.zeros((d, d))
        for v in classes:
            X = np.concatenate([X for w, X in recorded_draws if w == v])
            P = softmax_patterns(theta, X)
            Q = P - ref
            Y = one_step_terms(P, X)
            # sum_q holds orbit means; spread back over the k×k entries they are Π ΣQ.
            assert_allclose(st.sum_q[v][labels].reshape(k, k), symmetrise(mask, Q.sum(axis=0)), rtol=1e-12, atol=1e-14)
            assert st.sq_sym[v] == pytest.approx(np.sum(symmetrise(mask, Q) ** 2), rel=1e-12)
            assert st.sq_raw[v] == pytest.approx(np.sum(Q**2), rel=1e-12)
            assert st.row_max[v] == pytest.approx(np.sum(P.max(axis=2).mean(axis=1)), rel=1e-12)
            assert st.sq_y[v] == pytest.approx(np.sum(Y**2), rel=1e-12)
            assert st.mean_y_sq[v] == pytest.approx(np.sum(Y.mean(axis=0) ** 2), rel=1e-12)
            m_minus_i += prob[v] * Y.mean(axis=0)
        assert_allclose(st.m_minus_i, m_minus_i, rtol=1e-12, atol=1e-15)

    def test_between_slice_and_kappa_against_count_matrices(self):
        """The formula and κ for any conditional means and weights, with R_b counted position by position.

        Here Σ_v Pr ρ_v != 0 (the check's own ρ averages to E[x_p x_q] = 0), so the −1 in
        c_b − 1 matters; k = 3 != d = 5, and a coordinate is shared by two tokens.
        """
        k = 3
        mask = _mask(k, 5, [(0, 0), (0, 3), (1, 3), (2, 1), (2, 4)])
        R = count_matrices(mask)
        cond = np.random.default_rng(4).random((2, k, k))
        prob, rho = np.array([0.25, 0.75]), np.array([0.6, -0.4])
        expected = sum(p * q * np.einsum("b,bef->ef", E.sum(axis=0) - 1.0, R)
                       for p, q, E in zip(prob, rho, cond, strict=True)) / k
        assert_allclose(_between_slice(cond, prob, rho, mask), expected, rtol=1e-13, atol=1e-15)
        # κ = ‖ρ‖_{L²(Pr)} (Σ_b ‖R_b‖_F²)^{1/2} / sqrt(k)
        assert _kappa(prob, rho, mask) == pytest.approx(math.sqrt(prob @ rho**2) * math.sqrt(np.sum(R**2) / k),
                                                        rel=1e-13)

    @pytest.mark.parametrize(
        ("prob", "typical"),
        [([0.3, 0.5, 0.2], [0, 1]), ([0.29, 0.5, 0.21], [0, 1, 2]), ([0.1, 0.9, 0.0], [1])],
        ids=["reaches-mass", "just-short", "one-weight"],
    )
    def test_typical_weights_stop_once_the_mass_is_reached(self, prob, typical):
        # The most probable weights are taken until they carry TYPICAL_MASS = 0.8; reaching it
        # exactly (0.5 + 0.3) stops there.
        r = _typical_weights(np.array(prob), np.array([10, 10, 10]), np.array([0.3, 0.1, 0.2]), np.zeros(3), 0.05)
        assert r["index"].tolist() == typical
        assert r["max"] == max([0.3, 0.1, 0.2][i] for i in typical)

    @pytest.mark.parametrize("size", [1, 2, 5, 8])
    def test_folded_probabilities(self, size):
        classes, prob = _folded_classes(size)
        binom = np.array([math.comb(size, w) for w in range(size + 1)]) / 2.0**size
        folded = np.bincount(np.minimum(np.arange(size + 1), size - np.arange(size + 1)), weights=binom)
        assert_allclose(prob, folded, rtol=1e-15)
        assert classes.tolist() == list(range(size // 2 + 1))


# --------------------------------------------------------------------------- the cases


class TestDefaultSoftmaxConcentration:
    def test_holds(self, default_result):
        assert_check_holds(default_result)

    def test_pattern_does_not_concentrate(self, default_result):
        # The talk's point: the pattern itself is far from its expectation. Nearly one-hot rows
        # (mean row max ≈ 0.95) give an unconditional spread ≈ sqrt(k − 1) ≈ 2.6 at k = 8;
        # against the conditional spread's *upper* end (≈ 0.036) that is ≈ 70× (measured over
        # seeds 0–7: 66–73×). 20× leaves a > 3× margin.
        d = default_result.details
        assert d["mean_row_max"] > 0.9
        assert d["unconditional_spread"] > 0.8 * math.sqrt(default_result.parameters["k"] - 1)
        assert d["unconditional_spread"] > 20 * default_result.interval[1]

    def test_conditioning_removes_the_weight_driven_one_step_bias(self, default_result):
        d = default_result.details
        # On the verdict's event the between-slice part of M − I is at most κ × (upper end);
        # the total ‖M − I‖_F is only bounded by Monte Carlo noise at d = 200 (d² entries).
        assert d["one_step_between"] <= d["one_step_between_bound"] < 0.05
        assert d["one_step_interval"][0] <= d["one_step_error"] <= d["one_step_interval"][1]

    def test_regression_fixed_seed(self, default_result):
        # Generated by this code with rng=0 (see test_regression_fixed_seed above for the tolerance).
        assert_allclose(
            [default_result.measured, default_result.details["unconditional_spread"]],
            REGRESSION_DEFAULT,
            rtol=1e-12,
        )
        assert default_result.seed_entropy == 0

    def test_substring_and_theta_scale(self):
        # The first 4 coordinates of token 0; Θ has N(0, 0.01) entries, so ‖Θ‖_F ≈ 0.1·d
        # (relative standard deviation 1/sqrt(2d²) = 1.4% at d = 50).
        r = default_softmax_concentration(k=2, d=50, n_samples=20, rng=0)
        assert r.parameters["substring"] == [[0, 0], [0, 1], [0, 2], [0, 3]]
        assert r.parameters["theta_fro"] == pytest.approx(5.0, rel=0.05)

    def test_talk_theta_satisfies_the_assumptions(self):
        theta = np.random.default_rng(0).normal(0.0, 0.1, (200, 200))
        assert assumptions(AttentionLayer(theta[None], np.eye(200)[None]), k=8).ok

    def test_bad_d(self):
        with pytest.raises(ValueError, match=r"`d` must be at least 4; got d=3"):
            default_softmax_concentration(d=3)


class TestControlSoftmaxConcentration:
    def test_fails(self, control_result):
        assert_check_fails(control_result)

    def test_fails_with_margin(self, control_result):
        # Measured ≈ 0.29 (seeds 0–7: 0.287–0.292, lower ends 0.253–0.259) against the bound
        # 0.05·sqrt(8) ≈ 0.141: the lower end must clear the bound by a margin, not just fail.
        assert control_result.interval[0] > 1.5 * control_result.bound

    def test_heavy_block_violates_column_condition(self):
        theta = np.random.default_rng(0).normal(0.0, 0.1, (200, 200))
        theta[:4, :4] += 10.0
        report = assumptions(AttentionLayer(theta[None], np.eye(200)[None]), k=8)
        assert "theta_columns" in report.failed

    def test_heavy_diagonal_is_invisible_to_a_one_token_substring(self):
        # λ·diag(1_C) adds λ⟨x_a|_C, x_b|_C⟩ to the logits, whose law does not depend on the
        # first token's weight: E[P | w] stays put (measured ≈ 0.003; see the control's Notes).
        theta = np.random.default_rng(0).normal(0.0, 0.1, (200, 200))
        theta[range(4), range(4)] += 25.0
        r = check_softmax_concentration(theta, 8, substring=[(0, c) for c in range(4)], n_samples=6000, rng=1)
        assert_check_holds(r)

    def test_weak_block_is_not_caught(self):
        # A block of height 0.1 (the random part's entry scale) leaves the check holding.
        assert_check_holds(control_softmax_concentration(block=0.1, n_samples=6000, rng=1))

    def test_bad_block(self):
        with pytest.raises(ValueError, match=r"`block` must be finite and positive; got block=0.0"):
            control_softmax_concentration(block=0.0)


# --------------------------------------------------------------------------- expectation vs reality


class TestExpectationVsSample:
    def test_expected_is_row_stochastic_and_symmetric(self):
        theta = np.random.default_rng(1).normal(0.0, 0.1, (50, 50))
        r = expectation_vs_sample(theta, 6, n_samples=500, rng=0)
        assert isinstance(r, ExpectationVsSample)
        assert_allclose(r.expected.sum(axis=1), 1.0, rtol=1e-15)
        off = r.expected[~np.eye(6, dtype=bool)]
        assert np.all(off == off[0])
        assert_allclose(r.sample.sum(axis=1), 1.0, rtol=1e-15)

    def test_talk_example_expectation_vs_reality(self):
        # Θ ~ N(0, 0.01) at d = 200: logits have standard deviation ‖Θ‖_F ≈ 20, so one sample's
        # rows are nearly one-hot while E[P] is nearly uniform (α ≈ 1/k).
        theta = np.random.default_rng(2).normal(0.0, 0.1, (200, 200))
        r = expectation_vs_sample(theta, 16, n_samples=1000, rng=0)
        assert r.sample_row_max > 0.8
        assert abs(r.diagonal_mass - 1 / 16) < 0.02
        assert r.distance > 2.0 and r.spread > 3.0

    def test_diagonal_mass_against_enumeration(self):
        theta = np.random.default_rng(3).normal(0.0, 1.0, (4, 4))
        exact = exact_slices(theta, 2, [(0, 0)])
        alpha = float(np.trace(np.tensordot(exact["prob"], exact["cond"], axes=1))) / 2
        r = expectation_vs_sample(theta, 2, n_samples=4000, rng=0)
        # Chebyshev interval at failure probability 0.05.
        assert abs(r.diagonal_mass - alpha) <= r.diagonal_radius

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"theta": np.zeros((2, 3))}, ValueError, r"`theta` must be a square"),
            ({"k": 0}, ValueError, r"`k` must be at least 1"),
            ({"n_samples": 1}, ValueError, r"`n_samples` must be at least 2"),
        ],
        ids=["theta-not-square", "k-zero", "n-samples-1"],
    )
    def test_bad_input(self, kwargs, error, match):
        args = {"theta": np.zeros((3, 3)), "k": 2} | kwargs
        with pytest.raises(error, match=match):
            expectation_vs_sample(args.pop("theta"), args.pop("k"), **args)


class TestPlotExpectationVsSample:
    def test_writes_png(self, tmp_path):
        pytest.importorskip("matplotlib")
        path = tmp_path / "evs.png"
        r = plot_expectation_vs_sample(path, n_samples=500, rng=0)
        assert path.stat().st_size > 1000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert r.expected.shape == (16, 16)

    def test_k_above_d(self, tmp_path):
        with pytest.raises(ValueError, match=r"`k` must be at most `d`.*k=5, d=4"):
            plot_expectation_vs_sample(tmp_path / "x.png", d=4, k=5)


REGRESSION_SMALL = [0.1386639798393296, 1.3024571615490284, 0.8978158229484818]
REGRESSION_DEFAULT = [0.006291924524461003, 2.5373868075383403]
