"""learner.phases.sculpt: the certification rules, on rows built to an exact, chosen fitted pattern."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from learner import random_layer, sample_inputs
from learner.phases.sculpt import certification_premise, certify_rows
from learner.study.bench import fit_patterns_solve

D = 8
TOL, MIN_WEIGHT = 0.01, 0.1


def _rows_with_pattern(p, n=5, seed=0):
    """``n`` examples of ``k = len(p)`` Gaussian tokens whose every output row is exactly ``pᵀXŴ``.

    With ``k < d`` the rows of ``XŴ`` are independent, so the fit (``Σp = 1``) recovers ``p`` to rounding
    (~1e-15) at a residual of rounding size (~1e-8), far below the tolerance: the only rule left to decide
    is the pattern's sign.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, len(p), D))
    w_sum = rng.standard_normal((D, D))
    Y = np.einsum("j,njd,de->ne", np.asarray(p, dtype=float), X, w_sum)[:, None, :].repeat(len(p), axis=1)
    return X, Y, w_sum


# The documented rule: a certified row has a proper distribution, no fitted weight below -1e-3.
PATTERNS = [
    ((0.6, 0.25, 0.15), True),
    ((0.7, 0.3005, -5e-4), True),  # -5e-4: inside the rounding allowance
    ((0.7, 0.302, -2e-3), False),  # just past it
    ((0.7, 0.5, -0.2), False),  # clearly improper, yet fitted with zero residual
    ((1.2, -0.2), False),  # two tokens (a separate fit)
    ((0.8, 0.2), True),
]


class TestCertifyRowsProperPattern:
    @pytest.mark.parametrize("screen", [True, False], ids=["screen", "no screen"])
    @pytest.mark.parametrize(("p", "proper"), PATTERNS, ids=[str(p) for p, _ in PATTERNS])
    def test_only_proper_patterns_certify(self, p, proper, screen):
        """Rows that fit exactly certify iff their pattern is proper; an improper one gives no constraint, though
        it has tokens above min_weight that would (log(p_j / p_j0) of a proper row, checked from p here)."""
        X, Y, w_sum = _rows_with_pattern(p)
        A, b, residual, p_token, p_ref, certified = certify_rows(X, Y, w_sum, tol=TOL, min_weight=MIN_WEIGHT,
                                                                screen=screen)
        n, k = X.shape[:2]
        if not proper:
            assert certified == 0 and A.shape == (0, D * D) and b.size == 0
            return
        assert certified == n * k
        used = [j for j in range(k) if p[j] >= MIN_WEIGHT and j != int(np.argmax(p))]
        assert b.size == n * k * len(used)
        # p is recovered to rounding: the logs to ~1e-14 absolute.
        assert_allclose(b, np.tile([np.log(p[j] / max(p)) for j in used], n * k), atol=1e-12)
        assert_allclose(p_ref, max(p), atol=1e-12)
        assert residual.max() < 1e-6  # the root of a difference of squares: rounding leaves ~sqrt(eps) ≈ 1e-8
        j0 = int(np.argmax(p))
        rows = [np.outer(X[e, a], X[e, j] - X[e, j0]).ravel() for e in range(n) for a in range(k) for j in used]
        assert_allclose(A, rows, rtol=1e-15, atol=0)  # the same products, formed elementwise: exact or one rounding
        assert p_token.size == b.size


class TestCertificationPremiseCount:
    def test_counts_only_proper_rows(self):
        """certification_premise certifies the rows that the reference fit (a batched k × k solve) finds well
        posed, below tol and proper (no weight below -1e-3). At (2, 8, 4) many rows below tol are improper,
        so a count that ignored the sign would be far above the reference's."""
        layer, k, tol, n = random_layer(2, D, rng=0), 4, 0.01, 20_000
        result = certification_premise(layer, k, tol=tol, n_samples=n, rng=5)
        X = sample_inputs(n, k, D, rng=np.random.default_rng(5))  # the inputs it draws: the first draw of seed 5
        P, res, well_posed = fit_patterns_solve(X, layer(X), layer.ws.sum(axis=0))
        p_min = P.min(axis=2)

        def count(margin):
            """Rows certified with every threshold moved by ``margin`` (the reference's 1e-9 ridge moves p and
            the residual by about that much, so rows that close to a threshold may go either way)."""
            return int(np.sum(well_posed[:, None] & (res < tol + margin) & (p_min > -1e-3 - margin)))

        strict, loose = count(-1e-6), count(1e-6)
        improper = int(np.sum(well_posed[:, None] & (res < tol) & (p_min <= -1e-3)))
        assert improper > loose / 10  # the case discriminates: many small-residual rows are improper
        assert result.rows == n * k and strict <= result.certified <= loose
