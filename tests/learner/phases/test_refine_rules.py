"""Phase 3's rules against hand-built cases: the regression's standard error, the certified regression's row
choice, stopping and extrapolation, the start quality's order statistic, and refine_sum_w's arguments."""

import math
import time
from types import SimpleNamespace

import numpy as np
import pytest

from learner import LearnConfig, random_layer, sample_inputs
from learner.oracle import ArraySource
from learner.phases import refine_sum as refine_module
from learner.phases import refine_sum_w
from learner.phases.refine_sum import certified_regression, regression_se
from learner.study.bench import fit_patterns_solve


class TestRegressionSeByHand:
    def test_mean_of_three_labels(self):
        # y = 0, 1, 2 on a constant column: Ŵ = 1, residuals −1, 0, 1, so σ² = 2/(3 − 1) = 1 and
        # tr((ZᵀZ)⁻¹) = 1/3: SE = √(1/3) relative to ‖Ŵ‖ = 1.
        Z, y = np.ones((3, 1)), np.array([[0.0], [1.0], [2.0]])
        assert regression_se(Z, y, np.array([[1.0]])) == pytest.approx(1 / math.sqrt(3), rel=1e-12)

    def test_singular_design_and_zero_coefficients_are_infinite(self):
        Z = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])  # the second column is zero: ZᵀZ is singular
        assert regression_se(Z, np.ones((3, 2)), np.ones((2, 2))) == float("inf")
        Z = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        assert regression_se(Z, np.ones((3, 2)), np.zeros((2, 2))) == float("inf")  # ‖Ŵ‖ = 0

    def test_a_trace_that_overflows_is_infinite_even_for_exact_labels(self):
        # Entries 1e-160: ZᵀZ is ~1e-320 and its inverse overflows, so the trace is not finite.
        Z = 1e-160 * np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        coef = np.array([[1.0, 2.0], [3.0, 4.0]])
        assert regression_se(Z, Z @ coef, coef) == float("inf")

    def test_exact_labels_have_zero_error_where_the_trace_underflows_to_zero(self):
        # ZᵀZ = 1e400 is inf in float64 and its inverse is exactly 0: with zero residuals the error is 0.
        Z, coef = np.array([[1e200], [1.0]]), np.array([[1.0]])
        with np.errstate(over="ignore"):
            assert regression_se(Z, Z @ coef, coef) == 0.0


def _example(*rows, tokens=((1.0, 0.0), (0.0, 1.0))):
    """One two-token example in d = 2 with the given output rows: X (1, 2, 2), Y (1, 2, 2)."""
    return np.array([tokens]), np.array([rows], dtype=float)


def _diag(e, f=1.0):
    return np.diag([e, f])


class _Fake:
    """Stands in for the regression's least squares (a given sequence of solutions, or a contraction towards
    ``A`` with a ratio per round) and records every row fit the certified regression makes."""

    def __init__(self, monkeypatch, solutions=None, ratios=None, fixed_point=None):
        self.solutions, self.ratios, self.fixed_point = solutions, ratios, fixed_point
        self.calls, self.fits, self.est = 0, [], None
        real_fit = refine_module.fit_patterns

        def fit(X, Y, w_sum):
            self.fits.append("all" if Y.shape[1] == X.shape[1] and X.shape[1] > 1 else "pool")
            self.est = np.array(w_sum, dtype=float)
            return real_fit(X, Y, w_sum)

        def lstsq(Z, y, rcond=None):
            r, self.calls = self.calls, self.calls + 1
            if self.solutions is not None:
                return self.solutions[r], None, None, None
            A = self.fixed_point
            return A + self.ratios[r] * (self.est - A), None, None, None

        monkeypatch.setattr(refine_module, "fit_patterns", fit)
        monkeypatch.setattr(np.linalg, "lstsq", lstsq)


# Under Ŵ = diag(e, 1) the tokens (1, 0) and (0, 1) are independent and these two rows fit patterns inside
# the simplex for every e in [0.5, 4]: the fake regression's solutions are all the rounds see of Ŵ.
_ROWS = _example((0.1, 0.9), (0.4, 0.7))


class TestCertifiedRegressionSteps:
    @pytest.mark.parametrize(("last", "extrapolated", "final"), [
        (0.125, True, -1.0),  # steps −0.5, −0.375: ρ = 0.75, so 0.125 − 0.375·0.75/0.25 = −1
        (0.25, False, 0.25),  # ρ = 0.25/0.5 = 0.5 exactly: not above 0.5
        ((1 - 0.99) / 2, False, (1 - 0.99) / 2),  # ρ = 0.99 exactly (the step is −0.99/2): not below 0.99
        (-0.25, False, -0.25),  # ρ = 1.5: not a contraction
    ])
    def test_aitken_step_of_the_fourth_round(self, monkeypatch, last, extrapolated, final):
        # Solutions e = 1.5, 1, 0.5, last from Ŵ = diag(2, 1): steps −0.5, −0.5, −0.5, then last − 0.5.
        _Fake(monkeypatch, solutions=[_diag(1.5), _diag(1.0), _diag(0.5), _diag(last)])
        truth = SimpleNamespace(ws=np.eye(2)[None])
        est, history = certified_regression(*_ROWS, _diag(2.0), rounds=4, keep=1.0, pool=1.0, rtol=0.0,
                                            truth=truth)
        np.testing.assert_array_equal(est, _diag(final))
        assert [h["round"] for h in history] == [0, 1, 2, 3]
        assert [h["extrapolated"] for h in history] == [False, False, False, extrapolated]
        assert all(type(h["extrapolated"]) is bool for h in history)
        # Change: ‖new − Ŵ‖/‖Ŵ‖ with ‖diag(e, 1)‖ = √(e² + 1); error: ‖Ŵ − I‖/‖I‖ = |e − 1|/√2.
        olds, news = [2.0, 1.5, 1.0, 0.5], [1.5, 1.0, 0.5, final]
        for h, old, new in zip(history, olds, news, strict=True):
            assert h["change"] == pytest.approx(abs(new - old) / math.sqrt(old**2 + 1), rel=1e-12)
            assert h["error"] == pytest.approx(abs(new - 1) / math.sqrt(2), rel=1e-12, abs=1e-15)

    def test_extrapolates_in_the_fourth_round_of_each_four_and_refits_the_pool_every_eight(self, monkeypatch):
        # A linear contraction towards I: ratio 0.995 (too slow to extrapolate) for four rounds, then 0.9. Round 5
        # and 6 measure ρ = 0.9 but only round 7 (of 4 … 7) extrapolates, and Aitken's step lands on I; round 8
        # then moves by rounding only and stops.
        fake = _Fake(monkeypatch, ratios=[0.995] * 4 + [0.9] * 20, fixed_point=np.eye(2))
        est, history = certified_regression(*_ROWS, _diag(2.0), keep=1.0, pool=1.0)
        assert [h["extrapolated"] for h in history] == [False] * 7 + [True, False]
        np.testing.assert_allclose(est, np.eye(2), rtol=0, atol=1e-12)
        assert history[-1]["change"] < 1e-4 <= history[-2]["change"]
        # The whole sample is refitted to choose the pool in rounds 0 and 8, the pool in every round.
        assert [i for i, f in enumerate(fake.fits) if f == "all"] == [0, 9]
        assert fake.fits.count("pool") == 9

    def test_stops_when_the_change_is_below_rtol_not_at_it(self, monkeypatch):
        # ‖diag(0.5, 0)‖/‖diag(3, 4)‖ = 0.5/5 = 0.1 exactly: with rtol = 0.1 the next round runs (and moves 0).
        _Fake(monkeypatch, solutions=[_diag(3.5, 4.0), _diag(3.5, 4.0)])
        est, history = certified_regression(*_ROWS, _diag(3.0, 4.0), rounds=5, keep=1.0, pool=1.0, rtol=0.1)
        assert [h["change"] for h in history] == [0.1, 0.0]
        np.testing.assert_array_equal(est, _diag(3.5, 4.0))


# Tokens (0, 1) and (1, 1) under Ŵ = I: the hull's line is y₂ = 1 with b₂ − b₁ = (1, 0), so the row
# (t, 1) fits exactly (residual 0) with p = (1 − t, t).
_LINE = ((0.0, 1.0), (1.0, 1.0))


class TestCertifiedRegressionRows:
    def test_patterns_at_or_past_the_margin_are_not_rows(self):
        # p₂ = −0.05 is on the margin (rejected), −0.04 inside it, −1 far outside; 0.5 inside. Every residual is 0.
        Xa, Ya = _example((-0.05, 1.0), (0.5, 1.0), tokens=_LINE)
        Xb, Yb = _example((-0.04, 1.0), (-1.0, 1.0), tokens=_LINE)
        X, Y = np.concatenate([Xa, Xb]), np.concatenate([Ya, Yb])
        est, history = certified_regression(X, Y, np.eye(2), rounds=1, keep=1.0, pool=1.0)
        (h,) = history
        assert h["rows"] == 2 and h["cut"] == 0.0 and h["extrapolated"] is False and h["error"] is None
        # The two kept rows determine Ŵ = I exactly (up to rounding).
        np.testing.assert_allclose(est, np.eye(2), rtol=0, atol=1e-12)

    def test_a_pool_of_one_row_is_regressed_on(self):
        # Residuals 0, 0.1/‖y‖, …: the 0.1 quantile of four rows is below the second, so the pool is one row.
        Xa, Ya = _example((0.5, 1.0), (0.5, 1.1), tokens=_LINE)
        Xb, Yb = _example((0.5, 1.2), (0.5, 1.3), tokens=_LINE)
        _, history = certified_regression(np.concatenate([Xa, Xb]), np.concatenate([Ya, Yb]), np.eye(2),
                                          rounds=1, keep=0.1, pool=0.1)
        (h,) = history
        assert h["rows"] == 1 and h["cut"] == 0.0

    def test_no_finite_residual_stops_before_the_first_round(self):
        X, Y = _example((0.5, 1.0), (0.5, 1.1), tokens=_LINE)
        # NaN estimate: no residual ranks any row. Zero estimate: every example is ill-posed.
        for w in (np.full((2, 2), np.nan), np.zeros((2, 2))):
            out = certified_regression(X, Y, w, keep=1.0, pool=1.0)
            assert isinstance(out, tuple)
            est, history = out
            assert history == []
            np.testing.assert_array_equal(est, w)

    def test_zero_rounds_return_the_start_as_float(self):
        X, Y = _example((0.5, 1.0), (0.5, 1.1), tokens=_LINE)
        est, history = certified_regression(X, Y, [[1, 0], [0, 1]], rounds=0)
        assert history == [] and est.dtype == np.float64
        np.testing.assert_array_equal(est, np.eye(2))

    def test_defaults_run_sixty_rounds(self):
        truth = random_layer(2, 4, rng=0)
        X = sample_inputs(4000, 3, 4, rng=1)  # 0.3 % of 12 000 rows: 36 rows for d = 4
        _, history = certified_regression(X, truth(X), truth.ws.sum(axis=0) * 1.05, rtol=0.0)
        assert [h["round"] for h in history] == list(range(60))


class TestStartQuality:
    def test_input_quality_is_the_pool_order_statistic_of_the_row_fits(self):
        # 101 examples (202 rows; Boolean tokens repeat sometimes, and those examples' rows are ill-posed: inf).
        # The 0.05 quantile as an order statistic: the ⌈0.05·202⌉ = 11th smallest residual (reference: the
        # k × k solve of the row fits).
        truth = random_layer(2, 4, rng=0)
        X = sample_inputs(101, 2, 4, rng=2)
        Y = truth(X)
        w = truth.ws.sum(axis=0) * 1.05
        _, res, well_posed = fit_patterns_solve(X, Y, w)
        res = np.sort(np.where(well_posed[:, None], res, np.inf), axis=None)
        assert not well_posed.all() and np.isfinite(res[10])
        assert res[11] > res[10] * (1 + 1e-4)  # an interpolated quantile would differ from it
        est = refine_sum_w(ArraySource(X, Y), w, None, LearnConfig(adaptive=False, n_refine=101, refine_rounds=1),
                           cert_rounds=1, cert_pool=0.05)
        assert est.details["start_quality"]["input"] == pytest.approx(res[10], rel=1e-7)


class _Recording(ArraySource):
    """An ArraySource that records the batch sizes asked of it."""

    def __init__(self, X, Y):
        super().__init__(X, Y)
        self.sizes = []

    def batches(self, sizes):
        sizes = list(sizes)
        self.sizes.extend(sizes)
        return super().batches(sizes)


def _stub_refine(calls, se_of_n=lambda n: float("inf")):
    """A stand-in for one sample's estimate: records its keyword arguments, returns ``w_sum`` with a
    standard error given by the sample's size."""

    def refine_on(X, Y, w_sum, theta_star, **kwargs):
        calls.append((len(X), kwargs))
        return w_sum, {"certified_rounds": [{"standard_error": se_of_n(len(X))}]}

    return refine_on


class TestRefineSumArguments:
    def test_fixed_budgets(self, monkeypatch):
        calls = []
        monkeypatch.setattr(refine_module, "_refine_on", _stub_refine(calls))
        ones = np.ones((400_000, 1, 1))
        source = _Recording(ones, ones)
        est = refine_sum_w(source, np.ones((1, 1)), None, LearnConfig(adaptive=False))
        assert est.n_examples == 400_000 and source.sizes == [100_000] * 4
        assert calls == [(400_000, {"rounds": 8, "keep": 0.02, "cert_rounds": 60, "cert_keep": 0.003,
                                    "cert_pool": 0.05, "truth": None})]
        assert est.details["stopped"] == "fixed" and est.details["se_target"] is None

    def test_defaults_double_from_10_000_to_the_cap(self, monkeypatch):
        calls = []
        monkeypatch.setattr(refine_module, "_refine_on", _stub_refine(calls))  # never below the target
        ones = np.ones((400_000, 1, 1))
        est = refine_sum_w(_Recording(ones, ones), np.ones((1, 1)))
        assert [n for n, _ in calls] == [10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 400_000]
        assert est.details["stopped"] == "cap" and est.details["se_target"] == 0.02

    def test_doubles_from_first_example_and_without_first_draws_the_cap(self, monkeypatch):
        # Standard error 1/n against the target 0.3: 1 and 0.5 are above it, 0.25 (4 examples) is not.
        calls = []
        monkeypatch.setattr(refine_module, "_refine_on", _stub_refine(calls, lambda n: 1 / n))
        ones = np.ones((8, 1, 1))
        est = refine_sum_w(ArraySource(ones, ones), np.ones((1, 1)), None,
                           LearnConfig(n_refine=8, refine_se=0.3, refine_first=1))
        assert [s["examples"] for s in est.details["stages"]] == [1, 2, 4] == [n for n, _ in calls]
        assert est.details["stopped"] == "standard error" and est.n_examples == 4
        calls.clear()
        est = refine_sum_w(ArraySource(ones, ones), np.ones((1, 1)), None, LearnConfig(adaptive=False, n_refine=8))
        assert [s["examples"] for s in est.details["stages"]] == [8] and est.details["standard_error"] == 0.125

    @pytest.mark.parametrize(("name", "value"), [("refine_se", -1.0), ("refine_se", 0.0), ("refine_first", 0),
                                                  ("refine_first", 1.5)])
    def test_bad_setting_is_named(self, monkeypatch, name, value):
        monkeypatch.setattr(refine_module, "_refine_on", _stub_refine([]))
        ones = np.ones((8, 1, 1))
        kwargs = {"n_refine": 8, "refine_se": 0.5, "refine_first": 2, name: value}
        with pytest.raises((TypeError, ValueError), match=name):
            refine_sum_w(ArraySource(ones, ones), np.ones((1, 1)), None, LearnConfig(**kwargs))


def _picked_case(n=41, k=3, d=2, seed=0):
    """Examples whose labels are the value of one token per row (the one the planted Θ's pattern peaks on),
    plus noise, so that every residual is distinct; a start ``w_sum`` unrelated to the projection, so that the
    token nearest a label under it is often not the picked one."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, k, d))
    theta, W, start = rng.standard_normal((3, d, d))
    pick = np.einsum("nad,de,nje->naj", X, theta, X).argmax(axis=-1)  # row a's scores x_aᵀΘx_j over tokens j
    Y = np.take_along_axis(X, pick[..., None], axis=1) @ W + 0.1 * rng.standard_normal((n, k, d))
    return X, Y, W, theta, start, pick


class TestRefineOnVertexRounds:
    """One sample's vertex rounds against a by-hand reference: the token each row is given, the kept quantile
    (inclusive), the fraction halved from the fourth round, the reported errors and the certified step's
    arguments."""

    def _run(self, X, Y, start, theta, *, rounds, keep, truth=None, **cert):
        cert = {"cert_rounds": 2, "cert_keep": 0.5, "cert_pool": 0.5} | cert
        return refine_module._refine_on(X, Y, start, theta, rounds=rounds, keep=keep, truth=truth, **cert)

    def test_first_round_uses_the_planted_pattern_token_and_keeps_the_inclusive_quantile(self):
        X, Y, W, theta, start, pick = _picked_case()
        tokens = X[np.arange(len(X))[:, None], pick]  # (n, a, d): row a's picked token
        res = (np.linalg.norm(Y - tokens @ start, axis=-1) / np.linalg.norm(Y, axis=-1)).ravel()
        nearest = np.linalg.norm(Y[:, :, None] - (X @ start)[:, None], axis=-1) / np.linalg.norm(Y, axis=-1)[..., None]
        assert (nearest.min(axis=-1).ravel() < res - 1e-9).sum() > 20  # the nearest token is often another one
        # 123 rows: the 0.5 quantile's virtual index 0.5·122 = 61 is a data point, so `<=` keeps 62 rows.
        cut = np.sort(res)[61]
        truth = SimpleNamespace(ws=W[None])
        _, details = self._run(X, Y, start, theta, rounds=1, keep=0.5, truth=truth)
        (first,) = details["vertex_rounds"]
        assert first["round"] == 0 and first["cut"] == pytest.approx(cut, rel=1e-12) and first["rows"] == 62
        kept = res <= cut
        rows = tokens.reshape(-1, 2)[kept]
        est = np.linalg.lstsq(rows, Y.reshape(-1, 2)[kept], rcond=None)[0]
        assert first["error"] == pytest.approx(np.linalg.norm(est - W) / np.linalg.norm(W), rel=1e-9)

    def test_rounds_from_the_fourth_keep_half_the_fraction(self):
        # Distinct residuals: the inclusive 0.5 quantile of 123 keeps 62 rows; 0.25 (index 30.5, between two
        # data points) keeps 31.
        X, Y, _, theta, start, _ = _picked_case(seed=1)
        _, details = self._run(X, Y, start, theta, rounds=5, keep=0.5)
        assert [h["rows"] for h in details["vertex_rounds"]] == [62, 62, 62, 31, 31]
        assert [h["round"] for h in details["vertex_rounds"]] == list(range(5))
        assert all(h["error"] is None for h in details["vertex_rounds"])  # no truth given

    def test_a_zero_label_row_has_zero_residual_and_no_division_by_zero(self):
        X, Y, _, theta, start, _ = _picked_case(seed=2)
        Y[0, 0] = 0.0
        _, details = self._run(X, Y, start, theta, rounds=1, keep=0.5)
        assert details["vertex_rounds"][0]["rows"] == 62  # still 123 distinct residuals, one of them 0

    def test_no_finite_residual_keeps_no_row_in_that_round(self):
        # A start of nan: every residual is nan, the cut is inf and no row is at or below it. The next round
        # starts from the empty regression's zero, where every residual is ‖y‖/‖y‖ = 1: all rows tie at the cut.
        X, Y, _, theta, _, _ = _picked_case(seed=3)
        _, details = self._run(X, Y, np.full((2, 2), np.nan), theta, rounds=2, keep=0.5)
        first, second = details["vertex_rounds"]
        assert first["cut"] == float("inf") and first["rows"] == 0
        assert second["cut"] == 1.0 and second["rows"] == 123

    def test_start_is_the_better_quality_and_the_certified_step_gets_the_arguments(self, monkeypatch):
        seen = []

        def certified(X, Y, est, **kwargs):
            seen.append((est.copy(), kwargs))
            return est, []

        monkeypatch.setattr(refine_module, "certified_regression", certified)
        X, Y, W, theta, start, _ = _picked_case(seed=4)
        truth = SimpleNamespace(ws=W[None])
        est, details = self._run(X, Y, start, theta, rounds=3, keep=0.5, truth=truth, cert_rounds=7,
                                 cert_keep=0.125, cert_pool=0.25)
        quality = details["start_quality"]
        assert set(quality) == {"input", "vertex"} and details["start"] in quality
        assert quality[details["start"]] == min(quality.values())
        assert seen[0][1] == {"rounds": 7, "keep": 0.125, "pool": 0.25, "truth": truth}
        assert np.array_equal(seen[0][0], start) == (details["start"] == "input")
        monkeypatch.undo()
        _, details = self._run(X, Y, W, theta, rounds=0, keep=0.5, truth=truth)
        assert details["start"] in ("input", "vertex") and details["vertex_rounds"] == []


class TestRefineSumWiring:
    """What refine_sum_w hands one sample's estimate, and what it reads back: the planted pattern, the truth,
    the standard error of the last certified round (inf where there is none), the stop at the target
    inclusive, and the bar's total, label, unit, updates and postfix."""

    def test_pattern_and_truth_reach_the_sample_and_the_stages(self, monkeypatch):
        seen = []

        def refine_on(X, Y, w_sum, theta_star, **kwargs):
            seen.append((theta_star, kwargs["truth"]))
            return w_sum * 2.0, {"certified_rounds": [{"standard_error": 0.5}]}

        monkeypatch.setattr(refine_module, "_refine_on", refine_on)
        ones = np.ones((4, 1, 1))
        theta, truth = np.full((1, 1), 3.0), SimpleNamespace(ws=np.full((1, 1, 1), 1.0))
        est = refine_sum_w(ArraySource(ones, ones), np.ones((1, 1)), theta, LearnConfig(adaptive=False, n_refine=4),
                           truth=truth)
        assert seen == [(theta, truth)]
        # The estimate 2 against the planted sum 1: relative error 1, in the stage and in the result.
        assert est.details["stages"] == [{"examples": 4, "standard_error": 0.5, "error": 1.0}] and est.error == 1.0

    def test_no_certified_round_is_an_infinite_error_and_runs_to_the_cap(self, monkeypatch):
        monkeypatch.setattr(refine_module, "_refine_on", lambda X, Y, w, t, **kw: (w, {"certified_rounds": []}))
        ones = np.ones((4, 1, 1))
        est = refine_sum_w(ArraySource(ones, ones), np.ones((1, 1)), None,
                           LearnConfig(n_refine=4, refine_se=0.5, refine_first=2))
        assert [s["standard_error"] for s in est.details["stages"]] == [float("inf")] * 2
        assert est.details["stopped"] == "cap" and est.n_examples == 4

    def test_stops_at_a_standard_error_equal_to_the_target_and_shows_it(self, monkeypatch, record_bars):
        bars = record_bars(refine_module)
        monkeypatch.setattr(refine_module, "_refine_on", _stub_refine([], lambda n: 1.0 / n))
        ones = np.ones((8, 1, 1))
        est = refine_sum_w(ArraySource(ones, ones), np.ones((1, 1)), None,
                           LearnConfig(n_refine=8, refine_se=0.25, refine_first=2, batch=3))
        assert est.details["stopped"] == "standard error" and est.n_examples == 4  # 1/4 is the target itself
        (shown,) = bars
        assert shown.args == (8, "phase 3", "ex") and shown.done == 4 and shown.closed
        assert len(shown.postfix) == 2 and all("standard error" in s and "0.25" in s for s in shown.postfix)


    def test_seconds_is_the_wall_time_of_the_call(self):
        # A real run on a small planted sample: the time recorded lies within the time the call took, measured
        # around it here.
        layer = random_layer(1, 3, rng=0)
        X = sample_inputs(64, 2, 3, rng=1)
        t0 = time.perf_counter()
        est = refine_sum_w(ArraySource(X, layer(X)), layer.ws[0], None, LearnConfig(adaptive=False, n_refine=64))
        wall = time.perf_counter() - t0
        assert isinstance(est.seconds, float) and 0.0 <= est.seconds <= wall


class TestVertexResidualsZeroLabel:
    def test_a_zero_label_row_is_zero_without_a_division_by_zero(self):
        # Tokens e1, e2 and Ŵ = I: row 0's label is 0 (residual 0 by the ynorm = inf convention), row 1's label
        # (3, 4) is nearest e2 = (0, 1), at distance √(9 + 9) = √18 over ‖y‖ = 5.
        X, Y = _example((0.0, 0.0), (3.0, 4.0))
        j, res = refine_module.vertex_residuals(X, Y, np.eye(2))
        assert j[0, 1] == 1 and res[0, 0] == 0.0
        assert res[0, 1] == pytest.approx(math.sqrt(18) / 5, rel=1e-12)
