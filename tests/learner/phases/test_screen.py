"""The float32 screen of certification: the same constraints, bit for bit, as the float64 fit of every row.

``certify_rows(..., screen=True)`` (the default) fits every row in float32 and refits in float64 only
the examples with a row that might pass; ``screen=False`` fits every row in float64. The margins of
the screen (``learner.phases.sculpt._screen_margins``) must keep every row the float64 fit certifies:
the near-threshold cases below plant rows whose relative residual is ``tol·(1 − 10⁻⁶)``, far inside
float32's rounding error, and the negative control shows that a screen without margins loses them.
"""

import numpy as np
import pytest

from learner import random_layer, sample_inputs
from learner.phases import sculpt
from learner.phases.sculpt import SCREEN_CHUNK, certify_rows, fit_patterns, screen_candidates, screen_weights

MIN_WEIGHT = 0.02


def _assert_identical(a, b):
    """The six outputs of certify_rows, compared bit for bit (np.array_equal: no tolerance)."""
    names = ("A", "b", "residual", "p_token", "p_ref", "rows_certified")
    for name, x, y in zip(names, a, b, strict=True):
        assert np.array_equal(x, y), f"{name} differs"


def _layer_examples(m, d, k, n, distribution, seed):
    layer_seed, input_seed = np.random.SeedSequence(seed).spawn(2)
    layer = random_layer(m, d, logit_scale=1.0, rng=layer_seed)
    X = sample_inputs(n, k, d, distribution=distribution, rng=input_seed)
    return X, layer(X), layer.ws.sum(axis=0)


def _near_threshold(n, k, d, tol, *, distribution, seed, delta=1e-6):
    """Examples whose first row has relative residual ``tol·(1 − delta)`` exactly (in exact arithmetic).

    With ``b_j = x_jᵀŴ``, ``y_0 = pᵀB + e`` where ``p`` is a proper distribution (every weight
    >= 0.05) and ``e ⊥ b_1..b_k``: the fit returns ``p`` and the residual ``‖e‖``, and
    ``‖y_0‖² = ‖pᵀB‖² + ‖e‖²``; ``‖e‖`` is chosen to make ``‖e‖/‖y_0‖ = tol·(1 − delta)``. The other
    rows are Gaussian noise of the same scale, far from certifying.
    """
    rng = np.random.default_rng(seed)
    w_sum = rng.standard_normal((d, d)) / np.sqrt(d)
    X = sample_inputs(n, k, d, distribution=distribution, rng=rng)
    B = X @ w_sum
    p = 0.05 + (1 - 0.05 * k) * rng.dirichlet(np.ones(k), size=n)  # (n, k), proper
    base = np.einsum("nj,njd->nd", p, B)
    Q, _ = np.linalg.qr(B.transpose(0, 2, 1))  # (n, d, k): an orthonormal basis of span(b_j)
    g = rng.standard_normal((n, d))
    e = g - np.einsum("ndj,nj->nd", Q, np.einsum("ndj,nd->nj", Q, g))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    t = tol * (1 - delta)
    e *= (t * np.linalg.norm(base, axis=1) / np.sqrt(1 - t * t))[:, None]
    Y = rng.standard_normal((n, k, d)) * np.linalg.norm(base, axis=1)[:, None, None] / np.sqrt(d)
    Y[:, 0] = base + e
    return X, Y, w_sum


class TestCertifyRowsScreen:
    @pytest.mark.parametrize("m,d,k,distribution,quantile", [
        (3, 12, 2, "boolean", 0.05),
        (3, 12, 2, "gaussian", 0.2),
        (2, 8, 3, "gaussian", 0.05),
        (3, 12, 3, "boolean", 0.2),
        (3, 16, 4, "boolean", 0.01),
        (3, 16, 4, "gaussian", 0.1),
    ], ids=["k2-bool", "k2-gauss", "k3-gauss", "k3-bool", "k4-bool", "k4-gauss"])
    def test_identical_to_the_float64_fit(self, m, d, k, distribution, quantile):
        """With ``tol`` at a quantile of the rows' residuals, many rows sit near it on both sides."""
        X, Y, w_sum = _layer_examples(m, d, k, 3000, distribution, seed=11)
        _, res, _ = fit_patterns(X, Y, w_sum)
        tol = float(np.quantile(res, quantile))
        full = certify_rows(X, Y, w_sum, tol=tol, min_weight=MIN_WEIGHT, screen=False)
        screened = certify_rows(X, Y, w_sum, tol=tol, min_weight=MIN_WEIGHT)
        assert full[-1] > 20  # not vacuous: rows certify
        _assert_identical(full, screened)

    @pytest.mark.parametrize("k,distribution", [(2, "boolean"), (3, "gaussian"), (4, "boolean"), (4, "gaussian")],
                             ids=["k2-bool", "k3-gauss", "k4-bool", "k4-gauss"])
    def test_rows_just_below_tol_are_kept(self, k, distribution):
        X, Y, w_sum = _near_threshold(400, k, 16, 0.03, distribution=distribution, seed=k)
        full = certify_rows(X, Y, w_sum, tol=0.03, min_weight=MIN_WEIGHT, screen=False)
        assert full[-1] >= 390  # the planted rows certify in float64 (a few may be ill-posed)
        _assert_identical(full, certify_rows(X, Y, w_sum, tol=0.03, min_weight=MIN_WEIGHT))

    @pytest.mark.parametrize("k,distribution,margin", [
        (2, "boolean", 0.0), (4, "boolean", 0.0), (4, "gaussian", 0.0), (2, "boolean", 1e-3),
    ], ids=["k2-bool-none", "k4-bool-none", "k4-gauss-none", "k2-bool-thousandth"])
    def test_negative_control_without_margins_rows_are_lost(self, k, distribution, margin, monkeypatch):
        """A plain float32 test (margins 0), or a thousandth of the margins, drops rows the float64 fit certifies."""
        X, Y, w_sum = _near_threshold(400, k, 16, 0.03, distribution=distribution, seed=k)
        full = certify_rows(X, Y, w_sum, tol=0.03, min_weight=MIN_WEIGHT, screen=False)
        monkeypatch.setattr(sculpt, "_SCREEN_MARGIN", margin)
        tight = certify_rows(X, Y, w_sum, tol=0.03, min_weight=MIN_WEIGHT)
        # float32 moves a residual of 0.03 by ~10⁻⁴ relative, 100 times delta: with no margin about half
        # the planted rows fall out (measured 172–215 of 400 kept); a thousandth of the margins loses 53.
        assert tight[-1] < full[-1]
        if margin == 0:
            assert tight[-1] < 0.8 * full[-1]

    def test_the_screen_is_selective(self):
        """At phase 4's setting (3, 16, 4), tol 0.03, the screen refits a tiny share of the examples in float64."""
        X, Y, w_sum = _layer_examples(3, 16, 4, SCREEN_CHUNK, "boolean", seed=3)
        keep = screen_candidates(X, Y, screen_weights(w_sum), 0.03)
        # Measured (ours): 2·10⁻⁴ of the examples (repeated tokens and rows near tol); 1 % leaves room.
        assert keep.mean() < 0.01

    @pytest.mark.parametrize("scale", [2.0**-70, 1e-25, 1e25, 2.0**70], ids=["2^-70", "1e-25", "1e25", "2^70"])
    def test_extreme_scales(self, scale):
        """``Ŵ`` and ``Y`` scaled alike: float32 alone would under- or overflow; the screen rescales exactly."""
        X, Y, w_sum = _layer_examples(3, 12, 3, 2000, "boolean", seed=5)
        Y, w_sum = Y * scale, w_sum * scale
        full = certify_rows(X, Y, w_sum, tol=0.1, min_weight=MIN_WEIGHT, screen=False)
        assert full[-1] > 20
        _assert_identical(full, certify_rows(X, Y, w_sum, tol=0.1, min_weight=MIN_WEIGHT))
        keep = screen_candidates(X, Y, screen_weights(w_sum), 0.1)
        assert keep.mean() < 0.5  # still a screen, not "refit everything"

    def test_degenerate_examples(self):
        """Repeated tokens (0/0 in the fit), zero and non-finite output rows, and an empty batch."""
        X, Y, w_sum = _layer_examples(3, 12, 3, 1000, "boolean", seed=7)
        X[:50, 1] = X[:50, 0]
        Y[50:60, 2] = 0.0
        Y[60:70, 1] = np.nan
        Y[70:80, 0] = np.inf
        for x, y in ((X, Y), (X[:0], Y[:0])):
            _assert_identical(certify_rows(x, y, w_sum, tol=0.1, min_weight=MIN_WEIGHT, screen=False),
                              certify_rows(x, y, w_sum, tol=0.1, min_weight=MIN_WEIGHT))

    @pytest.mark.parametrize("screen", ["yes", 1, None], ids=["str", "int", "none"])
    def test_screen_must_be_bool(self, screen):
        X, Y, w_sum = _layer_examples(2, 8, 2, 10, "boolean", seed=0)
        with pytest.raises(TypeError, match="`screen` must be True or False; got screen="):
            certify_rows(X, Y, w_sum, tol=0.1, min_weight=MIN_WEIGHT, screen=screen)


class TestScreenMarginsCoverTheDerivation:
    """The margins cover each term of the first-order bound in ``_screen_margins``' docstring (u = 2⁻²⁴,
    γ_n = nu/(1 − nu), K = _SCREEN_KAPPA = 64): the data's rounding, ``(2 + tol)u + 3.1γ_{d+3}`` per unit of
    ``‖y‖ + Z`` (tol < 1), under η_a; the k dot products (γ_d each), the k − 1 subtractions (u each) and modified
    Gram–Schmidt's loss of orthogonality (2(k − 1)d·K·u) under η_b. A larger margin only sends more examples to the
    float64 fit, which alone decides (bit for bit, above); a smaller one could lose a row that certifies."""

    @pytest.mark.parametrize(("k", "d"), [(2, 8), (3, 16), (4, 5), (5, 2), (2, 1)])
    def test_each_term_is_covered(self, k, d):
        u, K = 2.0**-24, sculpt._SCREEN_KAPPA

        def gamma(n):
            return n * u / (1 - n * u)

        eta_a, eta_b = sculpt._screen_margins(k, d)
        assert eta_a >= 3 * u + 3.1 * gamma(d + 3)
        assert eta_b >= k * gamma(d) + (k - 1) * u + 2 * (k - 1) * d * K * u


class TestScreenWeights:
    """``(s·Ŵ, ‖1ᵀ|s·Ŵ|‖, s)``: s = 1 unless the largest |Ŵ| is outside (2⁻¹⁶, 2¹⁶); then the power of two that
    brings it into [1/2, 1)."""

    @pytest.mark.parametrize("big", [1.0, 2.0**-15.9, 2.0**15.9, 3.0, 100.0])
    def test_moderate_scales_are_kept(self, big):
        w = np.array([[big, -0.5 * big], [0.25 * big, 0.0]])
        w32, norm, s = screen_weights(w)
        assert s == 1.0 and w32.dtype == np.float32 and np.array_equal(w32, w.astype(np.float32))
        assert norm == np.float32(np.linalg.norm(np.abs(w).sum(axis=0)))

    @pytest.mark.parametrize("big", [2.0**16, 2.0**17, 2.0**20 * 3, 2.0**-16, 2.0**-16.5, 2.0**-20, 2.0**-30 * 1.5,
                                     1e300])
    def test_extreme_scales_get_a_power_of_two(self, big):
        w = np.array([[big, -0.5 * big], [0.25 * big, 0.0]])
        _, _, s = screen_weights(w)
        exponent = np.log2(s)
        assert exponent == round(exponent) and 0.5 <= big * s < 1.0

    @pytest.mark.parametrize("w", [np.zeros((0, 0)), np.zeros((3, 3)), np.full((2, 2), np.inf)], ids=["empty", "zero",
                                                                                                          "inf"])
    def test_no_scale_without_a_finite_positive_largest_entry(self, w):
        assert screen_weights(w)[2] == 1.0


def _screen_reference(X, Y, w_sum, tol):
    """The screen's documented rule, in float64: per example, False only where it is well conditioned
    ((k − 1)·log Σ_j‖D_j‖² − log det(DDᵀ) <= 2 log K) and every row has ‖y‖ > 0 and a squared residual above
    (tol‖y‖ + η_a(‖y‖ + Z))² + η_b‖y − b₁‖²; also how far each comparison is from its threshold."""
    w32, wcol, s = screen_weights(w_sum)
    n, k, d = X.shape
    eta_a, eta_b = sculpt._screen_margins(k, d)
    W = w_sum * s
    B = X @ W
    z = np.abs(X).max() * float(np.linalg.norm(np.abs(W).sum(axis=0)))
    D = B[:, 1:] - B[:, :1]  # (n, k−1, d)
    R = Y * s - B[:, :1]  # (n, k, d)
    rr = np.einsum("nad,nad->na", R, R)
    coef = np.linalg.lstsq  # per example below: the residual of R on span(D)
    res2 = np.empty((n, k))
    for i in range(n):
        c = coef(D[i].T, R[i].T, rcond=None)[0]
        res2[i] = np.sum((R[i].T - D[i].T @ c) ** 2, axis=0)
    gram = np.einsum("njd,nld->njl", D, D)
    lhs = (k - 1) * np.log(np.einsum("njd,njd->n", D, D)) - np.linalg.slogdet(gram)[1]
    conditioned = lhs <= 2 * np.log(sculpt._SCREEN_KAPPA)
    ynorm = np.linalg.norm(Y, axis=-1) * s
    bound = (tol * ynorm + eta_a * (ynorm + z)) ** 2 + eta_b * rr
    out = ~(((res2 > bound) & (ynorm > 0)).all(axis=1) & conditioned)
    # float32 moves a squared residual by up to 13u‖R‖² (measured, see _screen_margins) and the bound by ~1e-7
    # relative: 3e-6·‖R‖² + 1e-5·bound leaves four times that; the logs move by ~1e-3 at κ ~ 64.
    clear = (np.abs(res2 - bound) > 3e-6 * rr + 1e-5 * bound).all(axis=1) & (np.abs(lhs - 2 * np.log(64)) > 1e-2)
    return out, clear, res2 / bound, lhs - 2 * np.log(sculpt._SCREEN_KAPPA)


def _planted_screen_case(k, scale, seed, n=600, d=8, tol=0.03):
    """Examples with one row planted at residual² = ρ·bound, ρ log-spread over 1 ± [3e-3, 0.5], the other rows far
    above it; a third of the examples with a near-repeated token (κ spread around K = 64); one token entry −40 (so
    that Z is set by a negative entry)."""
    rng = np.random.default_rng(seed)
    w_sum = scale * rng.standard_normal((d, d)) / np.sqrt(d)
    X = rng.standard_normal((n, k, d))
    near = rng.random(n) < 1 / 3
    X[near, -1] = X[near, 0] + 10 ** rng.uniform(-3.5, -0.5, (near.sum(), 1)) * rng.standard_normal((near.sum(), d))
    X[0, 0, 0] = -40.0
    eta_a, eta_b = sculpt._screen_margins(k, d)
    z = np.abs(X).max() * float(np.linalg.norm(np.abs(w_sum).sum(axis=0)))
    B = X @ w_sum
    p = 0.1 + (1 - 0.1 * k) * rng.dirichlet(np.ones(k), size=n)
    base = np.einsum("nj,njd->nd", p, B)
    Q = np.linalg.qr(B.transpose(0, 2, 1))[0]
    g = rng.standard_normal((n, d))
    e = g - np.einsum("ndj,nj->nd", Q, np.einsum("ndj,nd->nj", Q, g))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    rho = 1 + rng.choice([-1, 1], n) * 10 ** rng.uniform(np.log10(3e-3), np.log10(0.5), n)
    t = np.full(n, tol * np.linalg.norm(base, axis=1))
    for _ in range(30):  # t² = ρ·bound(t): the bound grows slowly with t, so the iteration contracts
        ynorm = np.sqrt(np.sum(base**2, axis=1) + t**2)
        rr = np.sum((base - B[:, 0]) ** 2, axis=1) + t**2
        t = np.sqrt(rho * ((tol * ynorm + eta_a * (ynorm + z)) ** 2 + eta_b * rr))
    Y = B[:, ::-1] * 3.0  # the other rows: 3·b_{k−1−a}, far from the hull's fit (residual² ~ 9‖b‖²)
    Y[:, 0] = base + t[:, None] * e
    return X, Y, w_sum, tol


class TestScreenCandidatesAgainstTheRule:
    @pytest.mark.parametrize("k", [2, 3])
    @pytest.mark.parametrize("scale", [1.0, 0.02], ids=["|y|~1-10", "|y|<1"])
    def test_decisions_where_float32_cannot_flip_them(self, k, scale):
        X, Y, w_sum, tol = _planted_screen_case(k, scale, seed=10 * k + int(scale == 1.0))
        expected, clear, rho, cond = _screen_reference(X, Y, w_sum, tol)
        got = screen_candidates(X, Y, screen_weights(w_sum), tol)
        assert clear.mean() > 0.9
        np.testing.assert_array_equal(got[clear], expected[clear])
        # The cases reach both sides of both thresholds, and close to them: within 3 % of the bound, where Z's term
        # (η_a(‖y‖ + Z), with Z set by the entry −40) is some 2 % of it.
        rho0 = rho[:, 0]
        assert np.sum(clear & (np.abs(rho0 - 1) < 0.03) & (cond < 0)) > 50
        if k > 2:  # at k = 2 the bound on κ(D) is 1: every example is conditioned
            assert np.sum(clear & (cond > 0) & (cond < 1)) > 5 and np.sum(clear & (cond < 0) & (cond > -1)) > 5
        assert expected[clear].any() and not expected[clear].all()
        if scale < 1:  # outputs of norm below 1 that are screened out
            small = (np.linalg.norm(Y, axis=-1) < 1).all(axis=1)
            assert np.sum(clear & small & ~expected) > 50

    def test_an_empty_batch(self):
        X, Y, w_sum, tol = _planted_screen_case(2, 1.0, seed=1, n=3)
        got = screen_candidates(X[:0], Y[:0], screen_weights(w_sum), tol)
        assert got.shape == (0,) and got.dtype == bool
