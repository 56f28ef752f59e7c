"""learner.phases.noise: the structure test, checked against a regression written out here with scipy."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import softmax
from scipy.stats import chi2

from learner import random_layer
from learner.phases.noise import STRUCTURE_ALPHA, NoiseFloor, _structure

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
    phi = softmax(np.einsum("nad,de,nje->naj", X, theta, X), axis=-1) @ X  # (n, k, d)
    units = np.eye(D * D).reshape(D * D, D, D)  # E_ce
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
        out.append((ss, rank, float(chi2.sf(ss / sigma2, rank))))
    return out


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
