"""theory.certification: the premise of sculpting, against an independent reference fit and on constructed
cases (a single head, an inclusive bound, equal W's)."""

import numpy as np
import pytest

from learner import AttentionLayer, random_layer, sample_inputs
from learner.study.bench import fit_patterns_solve
from theory.certification import (
    check_certification_premise,
    control_certification_premise,
    default_certification_premise,
)
from theory.registry import run_case
from theory.testing import assert_check_fails, assert_check_holds

D = 8


class TestCertificationPremiseCount:
    def test_counts_only_proper_rows(self):
        """certification_premise certifies the rows that the reference fit (a batched k × k solve) finds well
        posed, below tol and proper (no weight below -1e-3). At (2, 8, 4) many rows below tol are improper,
        so a count that ignored the sign would be far above the reference's."""
        layer, k, tol, n = random_layer(2, D, rng=0), 4, 0.01, 20_000
        result = check_certification_premise(layer, k, tol=tol, n_samples=n, rng=5)
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
        assert result.details["rows"] == n * k and strict <= result.details["certified"] <= loose



class TestCertificationPremiseFields:
    def test_defaults_and_echo(self):
        layer = random_layer(2, D, rng=0)
        result = check_certification_premise(layer, 2, tol=0.02, bound=0.2, quantile=0.9, rng=0)
        # The default draws 200 000 examples of 2 rows each.
        assert (result.parameters["tol"], result.bound, result.parameters["quantile"], result.details["rows"]) == (
            0.02, 0.2, 0.9, 400_000)

    def test_nothing_certified_below_zero(self):
        """A single head fits every row exactly (many residuals are exactly 0), yet ``residual < 0`` holds for
        none: nothing certifies, the quantile is NaN and the premise does not hold."""
        result = check_certification_premise(random_layer(1, D, rng=0), 2, tol=0.0, n_samples=2000, rng=0)
        assert result.details["certified"] == 0 and np.isnan(result.measured) and not result.holds

    def test_bound_is_inclusive(self):
        layer = random_layer(2, D, rng=0)
        first = check_certification_premise(layer, 2, n_samples=5000, rng=3)
        assert first.details["certified"] > 0
        # The premise holds when the quantile is at most the bound: equal counts.
        again = check_certification_premise(layer, 2, bound=first.measured, n_samples=5000, rng=3)
        assert again.holds and again.measured == first.measured



class TestWorstHead:
    """The premise is held against each row's worst head, not an average over heads. The constructed layer has two
    uniform heads (Θ = 0) carrying the labels and a third head with W_3 = 0, invisible in the labels, whose
    Θ_3 = 50·I makes it attend to the token itself: on ±1 tokens in d = 4 its logits are 200 on the token itself
    and at most 100 elsewhere. Every row fits the uniform pattern exactly, so the rows certify, and the third head
    is a total variation 1 − 1/k = 1/2 (k = 2) from the fit on every row whose two tokens differ (up to e^{−100}):
    the worst head is 1/2 off, the mean over the three heads 1/6."""

    @staticmethod
    def _layer(theta3_scale):
        w = np.random.default_rng(0).standard_normal((2, 4, 4))
        thetas = np.stack([np.zeros((4, 4)), np.zeros((4, 4)), theta3_scale * np.eye(4)])
        return AttentionLayer(thetas, np.stack([w[0], w[1], np.zeros((4, 4))]))

    def test_one_disagreeing_head_fails_the_premise(self):
        from scipy.special import softmax

        n = 5000
        result = check_certification_premise(self._layer(50.0), 2, bound=0.3, n_samples=n, rng=0)
        # The reference: the third head's patterns by scipy on the inputs the check draws (the first draw of seed
        # 0), and their total variation from the uniform fit, by hand 1/2 for distinct tokens and 0 for equal ones.
        X = sample_inputs(n, 2, 4, rng=np.random.default_rng(0))
        third = softmax(50.0 * X @ X.transpose(0, 2, 1), axis=2)
        tv = 0.5 * np.abs(third - 0.5).sum(axis=2)  # (n, a)
        distinct = np.any(X[:, 0] != X[:, 1], axis=1)
        np.testing.assert_allclose(tv[distinct], 0.5, rtol=0, atol=1e-40)
        assert np.all(tv[~distinct] == 0.0)
        assert result.details["certified"] > n  # most of the 2n rows certify: the quantile is over them
        # 95 % quantile of the worst head over the certified rows: 1/2 (rounding of the fit: ~1e-16, far below 1e-9),
        # above the bound 0.3; the mean over heads, 1/6, would be below it.
        assert result.measured == pytest.approx(0.5, abs=1e-9) and not result.holds
        assert np.mean([0.0, 0.0, 0.5]) < result.bound < result.measured

    def test_control_agreeing_heads_hold(self):
        """Control: with Θ_3 = 0 every head is uniform, the fit's, and the premise holds with room."""
        result = check_certification_premise(self._layer(0.0), 2, bound=0.3, n_samples=5000, rng=0)
        assert result.details["certified"] > 5000 and result.measured < 1e-9 and result.holds


class TestCertificationPremise:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_certified_rows_agree(self, seed):
        """Rows with residual < 0.01 have every head within TV 0.1 of the fit (95 % of them)."""
        result = check_certification_premise(random_layer(2, 8, rng=seed), 4, n_samples=100_000, rng=seed)
        assert result.holds and result.details["certified"] > 100
        assert result.details["uncertified_median"] > 0.3  # the test does separate agreeing rows

    def test_negative_control_equal_ws(self):
        """W_1 = W_2: every row fits exactly, so disagreeing rows are certified and the premise fails."""
        planted = random_layer(2, 8, rng=0)
        twin = AttentionLayer(planted.thetas, np.stack([planted.ws[0]] * 2))
        result = check_certification_premise(twin, 4, n_samples=50_000, rng=0)
        assert not result.holds and result.measured > 0.3


class TestCases:
    def test_default_holds_and_control_fails(self):
        assert_check_holds(default_certification_premise(n_samples=30_000, rng=1))
        result = control_certification_premise(n_samples=20_000, rng=1)
        assert_check_fails(result)
        assert result.measured > 0.3 and result.details["certified"] > 0.5 * result.details["rows"]

    def test_registered(self):
        result = run_case("certification_premise", "default", rng=2, n_samples=20_000)
        assert result.name == "certification_premise" and result.relation == "<=" and result.seed_entropy == 2

    def test_not_a_layer(self):
        with pytest.raises(TypeError, match="`layer` must be an AttentionLayer; got ndarray"):
            check_certification_premise(np.zeros((2, 8, 8)), 4)


class TestConstructedFits:
    """The certification rule on constructed fits (the phase-2 fit replaced by a stand-in returning chosen patterns
    and residuals), where the certified rows are known by hand."""

    @staticmethod
    def _run(monkeypatch, edit=None, residual=0.0, n=50):
        import theory.certification as cert

        layer = random_layer(1, 4, rng=0)

        def fit_patterns(X, Y, w_sum):
            P = layer.attention(X)[:, 0].copy()  # the one head's true pattern: every row fits it exactly
            if edit is not None:
                edit(P)
            return P, np.full(P.shape[:2], residual), np.ones(len(X), dtype=bool)

        monkeypatch.setattr(cert, "fit_patterns", fit_patterns)
        return check_certification_premise(layer, 2, n_samples=n, rng=0)

    def test_every_row_certified_leaves_no_uncertified_median(self, monkeypatch):
        result = self._run(monkeypatch)
        assert result.details["certified"] == result.details["rows"] == 100
        assert result.measured == 0.0 and result.holds and np.isnan(result.details["uncertified_median"])

    def test_a_weight_of_exactly_minus_1e_3_is_not_proper(self, monkeypatch):
        def edit(P):
            P[0, 0, 0] = -1e-3  # row (0, 0): one weight at the threshold; the filter is strict

        def edit_inside(P):
            P[0, 0, 0] = -0.999e-3

        assert self._run(monkeypatch, edit).details["certified"] == 99
        assert self._run(monkeypatch, edit_inside).details["certified"] == 100

    def test_nothing_certified_has_a_median_of_every_row(self, monkeypatch):
        result = self._run(monkeypatch, residual=1.0)  # residual above tol: no row certifies
        assert result.details["certified"] == 0 and np.isnan(result.measured) and not result.holds
        assert result.details["uncertified_median"] == 0.0  # every row's pattern is the fit's

    def test_claim_source_and_time(self):
        result = check_certification_premise(random_layer(2, D, rng=0), 2, tol=0.02, bound=0.2, quantile=0.9,
                                             n_samples=2000, rng=0)
        assert result.claim == ("rows whose fit with the true ΣW has residual < 0.02 have every head within total "
                                "variation 0.2 of the fitted pattern (90% of them)")
        assert result.source.startswith("ours: ") and result.seconds > 0
        assert result.parameters == {"m": 2, "d": D, "k": 2, "tol": 0.02, "quantile": 0.9, "n_samples": 2000}


class TestCaseBuilders:
    """The default and control cases against their construction written out here: one generator plants the layer
    and then draws the examples."""

    def test_default_is_a_planted_layer_then_its_examples(self):
        gen = np.random.default_rng(5)
        expected = check_certification_premise(random_layer(2, 8, rng=gen), 4, n_samples=20_000, rng=gen)
        got = default_certification_premise(n_samples=20_000, rng=5)
        assert (got.measured, got.details) == (expected.measured, expected.details)

    def test_control_gives_every_head_the_first_heads_w(self):
        gen = np.random.default_rng(5)
        planted = random_layer(2, 8, rng=gen)
        twin = AttentionLayer(planted.thetas, np.stack([planted.ws[0]] * 2))
        expected = check_certification_premise(twin, 4, n_samples=20_000, rng=gen)
        got = control_certification_premise(n_samples=20_000, rng=5)
        assert (got.measured, got.details) == (expected.measured, expected.details)

    def test_default_sizes(self):
        import inspect

        for builder, n in ((default_certification_premise, 100_000), (control_certification_premise, 50_000)):
            defaults = {name: p.default for name, p in inspect.signature(builder).parameters.items()}
            assert defaults == {"m": 2, "d": 8, "k": 4, "n_samples": n, "rng": None}
        result = control_certification_premise(rng=0)  # the control's own size (50,000 examples of 4 rows)
        assert result.details["rows"] == 200_000 and result.parameters["m"] == 2
        result = default_certification_premise(rng=0)  # the default's own size (100,000 examples of 4 rows)
        assert result.details["rows"] == 400_000 and result.parameters["m"] == 2 and result.holds
