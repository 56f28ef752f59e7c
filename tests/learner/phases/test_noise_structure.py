"""learner.phases.noise: the structure test, checked against a regression written out here with scipy."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import softmax
from scipy.stats import chi2

from learner import AttentionLayer, LearnConfig, random_layer
from learner.layer import layer_jacobian
from learner.phases.noise import STRUCTURE_ALPHA, NoiseFloor, _jacobian_rows, _structure, candidate_thetas, noise_floor

N, K, D = 30, 3, 4
CANDIDATES = 4


def _setting(seed=0, fitted=5):
    """Inputs, candidate Θ's and an orthonormal basis of ``fitted`` "fitted directions" of the residual space."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, K, D))
    names = [f"candidate {i}" for i in range(CANDIDATES)]
    thetas = [rng.standard_normal((D, D)) for _ in range(CANDIDATES)]
    basis, _ = np.linalg.qr(rng.standard_normal((N * K * D, fitted)))
    return rng, X, (names, thetas), basis


def _design(theta, X):
    """Columns vec(Φ E_ce), one per entry (c, e) of W: the outputs of a head with this Θ, softmax(XΘXᵀ)X W."""
    d = X.shape[2]
    phi = softmax(np.einsum("nad,de,nje->naj", X, theta, X), axis=-1) @ X  # (n, k, d)
    units = np.eye(d * d).reshape(d * d, d, d)  # E_ce
    return np.stack([(phi @ E).ravel() for E in units], axis=1)


def _reference(X, r, basis, sigma2, candidates):
    """Per candidate: the explained sum of squares of r on its design off the basis, its rank, its p-value."""
    out = []
    for theta in candidates[1]:
        G = _design(theta, X)
        G = G - basis @ np.linalg.lstsq(basis, G, rcond=None)[0]
        coef = np.linalg.lstsq(G, r.ravel(), rcond=None)[0]
        ss = float(np.sum((G @ coef) ** 2))
        rank = int(np.linalg.matrix_rank(G))
        if not rank:  # features that vanish off the fitted directions explain nothing
            out.append((0.0, 0, 1.0))
            continue
        out.append((ss, rank, float(chi2.sf(ss / sigma2, rank))))
    return out


def _bonferroni(X, r, basis, sigma2, candidates):
    """The smallest p-value times the number of candidates (at most 1), and the candidate it names (none when no
    candidate explains any of the residual, p = 1)."""
    ps = [p for _, _, p in _reference(X, r, basis, sigma2, candidates)]
    if not ps:
        return 1.0, ""
    best = int(np.argmin(ps))
    return min(1.0, len(ps) * ps[best]), candidates[0][best] if ps[best] < 1 else ""


def _residual(rng, X, basis, candidates, strength):
    """Noise, plus a large part along the fitted directions (which must not count), plus ``strength`` times the
    output of candidate 1 with a random W (which must)."""
    noise = rng.standard_normal(N * K * D)
    fitted = 50.0 * basis @ rng.standard_normal(basis.shape[1])
    signal = _design(candidates[1][1], X) @ rng.standard_normal(D * D)
    return (noise + fitted + strength * signal).reshape(N, K, D)


class TestStructure:
    def test_bonferroni_flips_the_verdict(self):
        """The best candidate alone is below STRUCTURE_ALPHA (3/10 of it), but times the 4 candidates it is above:
        the returned p is the Bonferroni one, and the residual counts as noise."""
        rng, X, candidates, basis = _setting()
        r = _residual(rng, X, basis, candidates, strength=0.2)
        ref = _reference(X, r, basis, 1.0, candidates)
        ranks = {rank for _, rank, _ in ref}
        assert ranks == {D * D}  # equal ranks: the p-values order as the sums of squares, whatever σ²
        best = int(np.argmax([ss for ss, _, _ in ref]))
        target = 0.3 * STRUCTURE_ALPHA
        sigma2 = ref[best][0] / chi2.isf(target, D * D)  # the σ² at which the best candidate has p = target
        ref = _reference(X, r, basis, sigma2, candidates)
        p_min = min(p for _, _, p in ref)
        assert_allclose(p_min, target, rtol=1e-9)  # the same chi-square inverted: rounding only
        p, worst = _structure(random_layer(1, D, rng=0), X, r, basis, sigma2, candidates)
        # The explained sums of squares by SVD in the code and by lstsq here agree to ~1e-13 relative; at a
        # chi-square statistic near 60 that moves log p by under 1e-10.
        assert_allclose(p, min(1.0, CANDIDATES * p_min), rtol=1e-8)
        assert worst == candidates[0][best]
        assert p_min < STRUCTURE_ALPHA <= p

    @pytest.mark.parametrize(("strength", "sigma2"), [(0.0, 2.0), (1.0, 1.0)],
                             ids=["noise overstated", "planted candidate"])
    def test_p_is_the_smallest_chi_square_p_times_the_candidates(self, strength, sigma2):
        """With noise alone, its variance overstated twice, every statistic is about half its rank, every p
        near 1, and the product is capped at 1; with candidate 1's output planted p is tiny and names it."""
        rng, X, candidates, basis = _setting(seed=1)
        r = _residual(rng, X, basis, candidates, strength)
        ref = _reference(X, r, basis, sigma2, candidates)
        p_min = min(p for _, _, p in ref)
        p, worst = _structure(random_layer(1, D, rng=0), X, r, basis, sigma2, candidates)
        # As above; at the planted statistic (about 600, stated to ~1e-13 relative) p moves by under 1e-9.
        assert_allclose(p, min(1.0, CANDIDATES * p_min), rtol=1e-6)
        if strength:
            assert worst == "candidate 1" and p < STRUCTURE_ALPHA
        else:
            assert CANDIDATES * p_min > 1 and p == 1.0


class TestNoiseFloorConsistent:
    @pytest.mark.parametrize(("structure_p", "consistent"),
                             [(STRUCTURE_ALPHA, True), (STRUCTURE_ALPHA * (1 - 1e-9), False)],
                             ids=["at alpha", "just below"])
    def test_structure_p_at_alpha_is_consistent(self, structure_p, consistent):
        """The documented rule is ``structure_p >= STRUCTURE_ALPHA`` (and |ρ − 1| <= z·sd, met here)."""
        floor = NoiseFloor(sigma=1.0, rank=1, residuals=10, heldout_residuals=10, heldout_mse=1.0, leverage=0.0,
                           rho=1.0, sd=0.1, z=4.0, expected_param_error=0.0, relative_noise=1.0,
                           structure_p=structure_p)
        assert floor.consistent is consistent


class TestStructureCases:
    """Exact and constructed cases of the structure test, against the regression written out above."""

    def test_one_token_dimension_and_small_features(self):
        """d = 1: each block is a single column (rank 1), features of norm well below 1, a single candidate, so
        the Bonferroni factor is 1."""
        rng = np.random.default_rng(5)
        X = 1e-3 * rng.standard_normal((20, 3, 1))
        candidates = (["only"], [np.array([[2.0]])])
        basis, _ = np.linalg.qr(rng.standard_normal((60, 2)))
        r = (rng.standard_normal(60) + 1.3e3 * _design(candidates[1][0], X)[:, 0]).reshape(20, 3, 1)
        p_ref, worst_ref = _bonferroni(X, r, basis, 1.0, candidates)
        assert 1e-12 < p_ref < STRUCTURE_ALPHA  # the planted column is found, but not at the underflow
        p, worst = _structure(random_layer(1, D, rng=0), X, r, basis, 1.0, candidates)
        # A chi-square statistic near 40 stated to ~1e-13 relative moves p by under 1e-10 relative.
        assert_allclose(p, p_ref, rtol=1e-8)
        assert worst == worst_ref == "only"

    def test_a_zero_residual_names_no_candidate(self):
        """Nothing to explain: every statistic is 0, every p-value exactly 1, and no candidate is named."""
        _, X, candidates, basis = _setting(seed=2)
        assert _structure(random_layer(1, D, rng=0), X, np.zeros((N, K, D)), basis, 1.0, candidates) == (1.0, "")

    def test_zero_features_explain_nothing(self):
        """Zero inputs: every candidate's features vanish, so none explains the (nonzero) residual."""
        rng, _, candidates, basis = _setting(seed=3)
        r = rng.standard_normal((N, K, D))
        assert _structure(random_layer(1, D, rng=0), np.zeros((N, K, D)), r, basis, 1.0, candidates) == (1.0, "")

    def test_a_candidate_without_features_does_not_end_the_search(self):
        """Tokens in pairs x, −x: uniform attention averages them to exactly 0, so that first candidate has no
        features; the planted candidate after it still counts, with the factor of 2 candidates."""
        rng = np.random.default_rng(4)
        half = rng.standard_normal((N, 1, D))
        X = np.concatenate([half, -half], axis=1)
        theta = rng.standard_normal((D, D))
        candidates = (["uniform", "planted"], [np.zeros((D, D)), theta])
        assert not np.any(_design(np.zeros((D, D)), X))
        basis, _ = np.linalg.qr(rng.standard_normal((N * 2 * D, 3)))
        r = (rng.standard_normal(N * 2 * D) + _design(theta, X) @ rng.standard_normal(D * D)).reshape(N, 2, D)
        p_ref, worst_ref = _bonferroni(X, r, basis, 1.0, candidates)
        assert worst_ref == "planted" and p_ref < STRUCTURE_ALPHA
        p, worst = _structure(random_layer(1, D, rng=0), X, r, basis, 1.0, candidates)
        assert worst == "planted"
        assert_allclose(np.log(p), np.log(p_ref), rtol=1e-6)  # p underflows towards 1e-100: compare log p

    def test_a_blocks_rank_does_not_depend_on_the_inputs_scale(self):
        """Uniform attention's features are the tokens' mean, linear in X: scaling X scales the block and leaves its
        column space, hence p, unchanged. With the tokens' second coordinate 0 the block has rank 2 of 4, even at
        denormal inputs (1e-317), where the relative cut-off underflows to 0."""
        rng = np.random.default_rng(6)
        X = rng.standard_normal((6, 2, 2))
        X[:, :, 1] = 0.0
        candidates = (["uniform"], [np.zeros((2, 2))])
        basis, _ = np.linalg.qr(rng.standard_normal((24, 2)))
        r = rng.standard_normal((6, 2, 2))
        p, _ = _structure(random_layer(1, D, rng=0), X, r, basis, 0.05, candidates)
        p_ref, _ = _bonferroni(X, r, basis, 0.05, candidates)
        assert_allclose(p, p_ref, rtol=1e-9)  # normal-range inputs: rounding only
        assert 1e-6 < p < 0.5
        tiny, _ = _structure(random_layer(1, D, rng=0), X * 1e-317, r, basis, 0.05, candidates)
        # Denormal inputs carry about 21 significant bits (relative 5e-7); the statistic follows to ~1e-5.
        assert_allclose(tiny, p, rtol=1e-3)

    def test_names_and_patterns_must_pair_up(self):
        _, X, (names, thetas), basis = _setting()
        with pytest.raises(ValueError):
            _structure(random_layer(1, D, rng=0), X, np.ones((N, K, D)), basis, 1.0, (names[:-1], thetas))


def _hull(d=D, q=2, radius=3.0, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((d, d)), np.linalg.qr(rng.standard_normal((d * d, q)))[0], radius


class TestCandidateThetas:
    def test_patterns_without_a_hull(self):
        """Uniform attention (Θ = 0), each head at half and twice its scale, then attention to the token (4·I)."""
        layer = random_layer(2, D, rng=0)
        names, thetas = candidate_thetas(layer)
        expected = [np.zeros((D, D)), 0.5 * layer.thetas[0], 2 * layer.thetas[0], 0.5 * layer.thetas[1],
                    2 * layer.thetas[1], 4 * np.eye(D)]
        assert len(names) == len(thetas) == len(expected)
        for got, want in zip(thetas, expected, strict=True):
            assert_allclose(got, want, rtol=0, atol=0)  # products by 0.5, 2 and 4 are exact
        assert all(isinstance(name, str) for name in names) and len(set(names)) == len(names)
        # The labels the report prints for the fixed patterns (the docstring's words).
        assert names[0] == "uniform attention" and names[-1] == "self-attention 4·I"

    def test_hull_points_lie_in_the_search_box(self):
        """Given a hull: Θ*, then ``points`` points Θ* + Σ α_j u_j with α uniform in [−radius, radius]^q, drawn by
        a generator seeded with ``rng``; 48 points by default."""
        layer = random_layer(1, D, rng=0)
        theta_star, directions, radius = hull = _hull()
        names, thetas = candidate_thetas(layer, hull)
        assert len(names) == len(thetas) == 4 + 1 + 48
        assert names[4] == "Θ*" and all(isinstance(name, str) for name in names) and len(set(names)) == len(names)
        assert_allclose(thetas[4], theta_star, rtol=0, atol=0)
        alphas = np.array([directions.T @ (t - theta_star).ravel() for t in thetas[5:]])  # orthonormal directions
        # Coordinates recovered to ~1e-15 relative; the box's edges are not reached in 48 draws.
        assert np.all(np.abs(alphas) <= radius)
        # P(all 48 draws of one coordinate above −radius/2) = (3/4)^48 ≈ 1e-6, likewise below radius/2.
        assert np.all(alphas.min(axis=0) < -radius / 2) and np.all(alphas.max(axis=0) > radius / 2)
        draws = np.random.default_rng(0).uniform(-radius, radius, size=(48, 2))
        assert_allclose(alphas, draws, rtol=0, atol=1e-12)  # the default seed is rng=0

    def test_points_and_seed_are_honoured(self):
        layer = random_layer(1, D, rng=0)
        hull = _hull()
        names, thetas = candidate_thetas(layer, hull, points=5, rng=7)
        assert len(names) == len(thetas) == 4 + 1 + 5
        again = candidate_thetas(layer, hull, points=5, rng=7)[1]
        other = candidate_thetas(layer, hull, points=5, rng=8)[1]
        assert all(np.array_equal(a, b) for a, b in zip(thetas, again, strict=True))
        assert not np.allclose(thetas[-1], other[-1])

    def test_a_hull_without_directions_adds_only_its_centre(self):
        layer = random_layer(1, D, rng=0)
        theta_star, _, radius = _hull()
        names, thetas = candidate_thetas(layer, (theta_star, np.zeros((D * D, 0)), radius))
        assert names[-1] == "Θ*" and len(thetas) == 5


class TestJacobianRows:
    @pytest.mark.parametrize("n", [1, 3, 5])
    def test_as_many_examples_as_the_bytes_allow(self, n):
        """At exactly the bytes of the Jacobian on n examples, n rows' examples; one byte less, n − 1 (at
        least 1). k ≠ d and m = 2 so that no factor of the size can hide behind another."""
        layer = random_layer(2, 3, rng=0)
        X = np.random.default_rng(0).standard_normal((5, 2, 3))
        size = layer_jacobian(layer.thetas, layer.ws, X[:n]).nbytes
        J, used = _jacobian_rows(layer, X, size)
        assert used == n
        assert_allclose(J, layer_jacobian(layer.thetas, layer.ws, X[:n]), rtol=0, atol=0)
        assert _jacobian_rows(layer, X, size - 1)[1] == max(n - 1, 1)
        assert _jacobian_rows(layer, X, 1)[1] == 1


def _floor_reference(layer, X, Y, Xh, Yh, candidates, max_bytes=None):
    """The noise floor's quantities as the module's docstring states them, through pseudo-inverses and Frobenius
    norms instead of singular value decompositions."""
    J = layer_jacobian(layer.thetas, layer.ws, X)
    nh = len(Xh) if max_bytes is None else max_bytes // (J.nbytes // len(X))
    Jh = layer_jacobian(layer.thetas, layer.ws, Xh[:nh])
    r = (layer(X) - Y).ravel()
    rh = (layer(Xh) - Yh).ravel()
    p = int(np.linalg.matrix_rank(J))
    assert r.size - p >= 1
    sigma2 = float(r @ r) / (r.size - p)
    pinv = np.linalg.pinv(J, rtol=max(J.shape) * np.finfo(float).eps)  # the rank's cut-off
    A = Jh @ pinv  # h = tr((JᵀJ)⁺ J_hᵀJ_h)/N_h = ‖J_h J⁺‖²_F/N_h, Σλ² = ‖(J_h J⁺)ᵀ(J_h J⁺)‖²_F/N_h²
    h = float(np.sum(A**2)) / Jh.shape[0]
    lam2 = float(np.sum((A.T @ A) ** 2)) / Jh.shape[0] ** 2
    mse_h = float(np.mean(rh**2))
    m, d = layer.m, layer.d
    blocks = np.sum(pinv**2, axis=1).reshape(2, m, d * d).sum(axis=2)  # block traces of (JᵀJ)⁺ = J⁺J⁺ᵀ
    norms = np.array([[np.linalg.norm(t) for t in layer.thetas], [np.linalg.norm(w) for w in layer.ws]])
    structure_p, worst = _bonferroni(X, r.reshape(X.shape), J, sigma2, candidates)
    return dict(sigma=np.sqrt(sigma2), rank=p, residuals=r.size, heldout_residuals=rh.size, heldout_mse=mse_h,
                leverage=h, rho=mse_h / (sigma2 * (1 + h)),
                sd=np.sqrt(2 / (r.size - p) + 2 / rh.size + 2 * lam2 / (1 + h) ** 2),
                expected_param_error=np.max(np.sqrt(sigma2 * blocks) / norms),
                relative_noise=sigma2 / np.mean(Y**2), structure_p=structure_p, structure_worst=worst,
                structure_features=len(candidates[0]))


def _compare(floor, ref):
    got = floor.summary()
    for key in ("rank", "residuals", "heldout_residuals", "structure_features", "structure_worst"):
        assert got[key] == ref[key], key
    # Pseudo-inverse and SVD routes agree to ~1e-12 relative on these well-conditioned Jacobians; the p-value
    # (a chi-square tail at a statistic stated to that accuracy) to ~1e-9.
    for key in ("sigma", "heldout_mse", "leverage", "rho", "sd", "expected_param_error", "relative_noise",
                "structure_p"):
        assert_allclose(got[key], ref[key], rtol=1e-7, err_msg=key)
    assert got["consistent"] is floor.consistent


def _small_layer(m=2, d=3, seed=0):
    """W's of norm below 1 and outputs of mean square below 1: no floor of 1 can hide in a maximum."""
    return random_layer(m, d, logit_scale=2.0, w_scale=0.1, rng=seed)


class TestNoiseFloorReference:
    @pytest.mark.parametrize("scale", [0.02, 0.05], ids=["weak", "strong"])
    def test_noise_floor_against_the_formulas(self, scale):
        """A residual orthogonal to the fitted directions (as after a fit): noise plus the output of a head at twice
        the scale of head 0 (a candidate). Every field of the floor against the reference; the weak head leaves
        p between 0 and 1, the strong one is refused."""
        layer = _small_layer()
        rng = np.random.default_rng(1)
        X, Xh = rng.standard_normal((20, 2, 3)), rng.standard_normal((10, 2, 3))
        extra = AttentionLayer(2 * layer.thetas[:1], scale * rng.standard_normal((1, 3, 3)))
        v = (0.01 * rng.standard_normal(X.shape) + extra(X)).ravel()
        J = layer_jacobian(layer.thetas, layer.ws, X)
        Y = layer(X) + (v - J @ np.linalg.lstsq(J, v, rcond=None)[0]).reshape(X.shape)
        Yh = layer(Xh) + 0.01 * rng.standard_normal(Xh.shape)
        floor = noise_floor(layer, X, Y, Xh, Yh)
        ref = _floor_reference(layer, X, Y, Xh, Yh, candidate_thetas(layer))
        assert 1e-6 < ref["structure_p"] < 1 and ref["structure_worst"]
        assert ref["leverage"] > 0.1 and np.mean(Y**2) < 1  # the terms tested are not negligible
        _compare(floor, ref)
        assert floor.z == 4.0
        assert floor.consistent is (abs(ref["rho"] - 1) <= 4 * ref["sd"] and ref["structure_p"] >= STRUCTURE_ALPHA)

    def test_given_candidates_and_z(self):
        layer = _small_layer(seed=2)
        rng = np.random.default_rng(2)
        X, Xh = rng.standard_normal((12, 2, 3)), rng.standard_normal((10, 2, 3))
        Y = layer(X) + 0.01 * rng.standard_normal(X.shape)
        Yh = layer(Xh) + 0.01 * rng.standard_normal(Xh.shape)
        candidates = candidate_thetas(layer, _hull(d=3), points=3)
        floor = noise_floor(layer, X, Y, Xh, Yh, LearnConfig(noise_z=2.5), candidates=candidates)
        _compare(floor, _floor_reference(layer, X, Y, Xh, Yh, candidates))
        assert floor.z == 2.5

    def test_the_heldout_jacobian_is_cut_to_the_bytes(self):
        """max_bytes fits the fit's examples exactly: the held-out Jacobian (h, λ) on as many held-out examples,
        the held-out mean square on all of them."""
        layer = _small_layer(seed=3)
        rng = np.random.default_rng(3)
        X, Xh = rng.standard_normal((12, 2, 3)), rng.standard_normal((30, 2, 3))
        Y = layer(X) + 0.01 * rng.standard_normal(X.shape)
        Yh = layer(Xh) + 0.01 * rng.standard_normal(Xh.shape)
        size = layer_jacobian(layer.thetas, layer.ws, X).nbytes
        floor = noise_floor(layer, X, Y, Xh, Yh, max_bytes=size, candidates=([], []))
        ref = _floor_reference(layer, X, Y, Xh, Yh, ([], []), max_bytes=size)
        _compare(floor, ref)
        assert floor.heldout_residuals == Xh.size and floor.structure_p == 1.0
        # Without max_bytes the budget is a quarter of the config's search_memory: the same cut.
        assert noise_floor(layer, X, Y, Xh, Yh, LearnConfig(search_memory=4 * size), candidates=([], [])) == floor

    def test_refuses_a_fit_whose_jacobian_exceeds_the_bytes(self):
        """Fewer examples fit than were fitted (here still more than k of them): refused, naming the count and
        the budget."""
        layer = _small_layer()
        X = np.random.default_rng(0).standard_normal((12, 2, 3))
        size = layer_jacobian(layer.thetas, layer.ws, X[:5]).nbytes
        with pytest.raises(ValueError, match=f"on 12 examples exceeds max_bytes={size};"):
            noise_floor(layer, X, layer(X), X, layer(X), max_bytes=size)
        # Without max_bytes the budget is a quarter of search_memory in whole bytes: (4·size + 3) // 4 = size.
        with pytest.raises(ValueError, match=f"on 12 examples exceeds max_bytes={size};"):
            noise_floor(layer, X, layer(X), X, layer(X), LearnConfig(search_memory=4 * size + 3))

    @pytest.mark.parametrize("config", [{"noise_z": 2.5}, 2.5, "defaults"])
    def test_a_config_that_is_not_one_is_refused(self, config):
        layer = _small_layer()
        X = np.random.default_rng(0).standard_normal((12, 2, 3))
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got"):
            noise_floor(layer, X, layer(X), X, layer(X), config)

    def test_duplicate_heads_lose_half_the_directions(self):
        """Two identical heads: the Jacobian's columns repeat, its rank is that of one head's, and the
        pseudo-inverse ignores the repeated directions."""
        one = _small_layer(m=1, seed=4)
        layer = AttentionLayer(np.concatenate([one.thetas] * 2), np.concatenate([one.ws] * 2))
        rng = np.random.default_rng(4)
        X, Xh = rng.standard_normal((12, 2, 3)), rng.standard_normal((10, 2, 3))
        Y = layer(X) + 0.01 * rng.standard_normal(X.shape)
        Yh = layer(Xh) + 0.01 * rng.standard_normal(Xh.shape)
        floor = noise_floor(layer, X, Y, Xh, Yh, candidates=([], []))
        assert floor.rank == np.linalg.matrix_rank(layer_jacobian(one.thetas, one.ws, X))
        _compare(floor, _floor_reference(layer, X, Y, Xh, Yh, ([], [])))

    def test_one_residual_more_than_directions(self):
        """One token of dimension 1: attention is trivial, Θ has no effect (a zero column), the Jacobian has rank
        1; on 2 examples N − p = 1, and on 1 example the single residual is fitted (rank 1)."""
        layer = AttentionLayer(np.array([[[0.3]]]), np.array([[[0.5]]]))
        X, Xh = np.array([[[1.0]], [[-2.0]]]), np.array([[[0.5]], [[1.5]], [[-1.0]]])
        Y, Yh = layer(X) + np.array([[[0.01]], [[-0.02]]]), layer(Xh) + 0.01
        floor = noise_floor(layer, X, Y, Xh, Yh, candidates=([], []))
        _compare(floor, _floor_reference(layer, X, Y, Xh, Yh, ([], [])))
        assert floor.rank == 1 and floor.residuals == 2
        assert noise_floor(layer, X[:1], Y[:1], Xh, Yh, candidates=([], [])).rank == 1

    def test_zero_inputs_have_no_fitted_directions(self):
        """X = 0: the Jacobian vanishes (rank 0), σ̂² is the labels' mean square, h = 0, and the expected
        parameter error 0."""
        layer = _small_layer(seed=5)
        rng = np.random.default_rng(5)
        X, Xh = np.zeros((4, 2, 3)), rng.standard_normal((10, 2, 3))
        Y, Yh = rng.standard_normal(X.shape), layer(Xh) + 0.1 * rng.standard_normal(Xh.shape)
        floor = noise_floor(layer, X, Y, Xh, Yh)
        assert floor.rank == 0 and floor.leverage == 0 and floor.expected_param_error == 0
        assert_allclose(floor.sigma**2, np.mean(Y**2), rtol=1e-12)  # layer(0) = 0: r = −Y; rounding only
        assert_allclose(floor.sd, np.sqrt(2 / Y.size + 2 / Yh.size), rtol=1e-12)
        assert floor.structure_p == 1.0 and floor.structure_worst == ""

    def test_exact_labels_with_noisy_heldout_are_infinitely_far(self):
        """σ̂ = 0 but a held-out residual: ρ = MSE_h/0 is infinite and the fit is not at a noise floor."""
        layer = _small_layer(seed=6)
        rng = np.random.default_rng(6)
        X, Xh = rng.standard_normal((12, 2, 3)), rng.standard_normal((10, 2, 3))
        Yh = layer(Xh) + 0.01 * rng.standard_normal(Xh.shape)
        floor = noise_floor(layer, X, layer(X), Xh, Yh, candidates=([], []))
        assert floor.sigma == 0 and floor.rho == float("inf") and not floor.consistent


def _floor(rho=1.0, sd=0.1, z=4.0, structure_p=1.0):
    return NoiseFloor(sigma=1.0, rank=1, residuals=10, heldout_residuals=10, heldout_mse=1.0, leverage=0.0,
                      rho=rho, sd=sd, z=z, expected_param_error=0.0, relative_noise=1.0, structure_p=structure_p,
                      structure_features=3, structure_worst="head 0 at 2×")


class TestNoiseFloorWords:
    @pytest.mark.parametrize(("rho", "sd", "within"), [(1.0, 0.1, True), (1.5, 0.125, True), (1.625, 0.125, False),
                                                       (3.0, 0.125, False), (0.5, 0.125, True)],
                             ids=["centre", "at the edge", "past the edge", "far", "lower edge"])
    def test_within_or_outside_the_band(self, rho, sd, within):
        """|ρ − 1| <= z·sd with z = 4 (the edges are exact in binary: 4·0.125 = 0.5)."""
        floor = _floor(rho=rho, sd=sd)
        clause = floor.test_clause()
        assert (" within 1 ± " in clause) is within and (" outside 1 ± " in clause) is not within
        assert floor.consistent is within
        assert floor.summary()["consistent"] is within

    @pytest.mark.parametrize("structure_p", [1.0, STRUCTURE_ALPHA, STRUCTURE_ALPHA / 2])
    def test_the_features_verdict(self, structure_p):
        clause = _floor(structure_p=structure_p).test_clause()
        passes = structure_p >= STRUCTURE_ALPHA
        assert clause.endswith("3 attention features explain no more of the residual than chance") is passes
        assert ("head 0 at 2×" in clause) is not passes and clause.startswith("held-out mean square")

    def test_summary_is_the_fields_and_the_verdict(self):
        floor = _floor(rho=3.0)
        fields = {name: getattr(floor, name) for name in NoiseFloor.__dataclass_fields__}
        assert floor.summary() == fields | {"consistent": False}
