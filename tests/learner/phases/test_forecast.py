"""learner.phases.forecast: phase 4's pilot forecast, the choice of tolerance, and the early budget stop."""

import dataclasses
import json
import logging
import math

import numpy as np
import pytest

from learner import LayerOracle, random_layer
from learner.cli import main
from learner.learn import learn
from learner.parallel import Workers
from learner.phases import LearnConfig, refined_sculpt
from learner.phases.forecast import (
    ADAPTIVE_CANDIDATES,
    AFFORDABLE_EXAMPLES,
    DEFAULT_CANDIDATES,
    DEFAULT_MAX_EXAMPLES,
    PILOT_EXAMPLES,
    PILOT_MAX_FRACTION,
    REACH_CANDIDATES,
    REACH_EXAMPLES,
    Forecast,
    covering_examples,
    pilot_forecast,
    poisson_interval,
    window_exponent,
    window_scale,
)
from learner.phases.sculpt import certify_rows


def _residuals(counts, seed=0):
    """Residuals with ``counts[t]`` values below each default candidate t (one constraint per row)."""
    rng = np.random.default_rng(seed)
    edges = (0.0, *DEFAULT_CANDIDATES)
    parts = [rng.uniform(lo, hi, c) for lo, hi, c in zip(edges[:-1], edges[1:], np.diff([0, *counts]), strict=True)]
    return rng.permutation(np.concatenate(parts))


class TestPoissonInterval:
    @pytest.mark.parametrize(("count", "expected"), [(0, (0.0, -math.log(0.025))), (1, (-math.log(0.975), 5.5716)),
                                                      (10, (4.7954, 18.3904))], ids=str)
    def test_garwood_values(self, count, expected):
        # Reference: closed forms where the chi-square has 2 degrees of freedom (−ln of a tail), else
        # Garwood's table to 4 decimals; rtol 2e-4 covers the table's rounding.
        np.testing.assert_allclose(poisson_interval(count, 0.05), expected, rtol=2e-4, atol=1e-12)

    @pytest.mark.parametrize(("count", "failure_probability", "name"), [
        (-1, 0.05, "count"), (1.5, 0.05, "count"), (3, -0.1, "failure_probability"),
        (3, 1.0, "failure_probability"), (3, 1.5, "failure_probability"),
    ], ids=str)
    def test_bad_input_is_named(self, count, failure_probability, name):
        # A failure probability of 1 or more is no interval (1 − a/2 ≤ 1/2): refused, not computed.
        with pytest.raises((TypeError, ValueError), match=f"`{name}`"):
            poisson_interval(count, failure_probability)


def _all_drawn(distinct, n):
    """The chance that ``n`` uniform draws among ``distinct`` inputs draw every one: the number drawn so far is a
    Markov chain that moves from c to c + 1 with probability (D − c)/D (no inclusion–exclusion, no cancellation)."""
    p = np.zeros(distinct + 1)
    p[0] = 1.0
    up = (distinct - np.arange(distinct + 1)) / distinct
    for _ in range(n):
        p[1:] = p[1:] * (1 - up[1:]) + p[:-1] * up[:-1]
        p[0] = 0.0
    return p[-1]


class TestCoveringExamples:
    @pytest.mark.parametrize("distinct", [1, 16, 256])
    def test_every_input_is_drawn_with_the_probability_stated(self, distinct):
        """At n* the chance of drawing all D inputs is at least 95 %; at 0.8 n* it is below (the union bound is
        within a fifth of the examples the exact chance needs, so the cap is not a loose one)."""
        n = covering_examples(distinct)
        assert _all_drawn(distinct, n) >= 0.95
        if distinct > 1:
            assert _all_drawn(distinct, int(0.8 * n)) < 0.95

    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"distinct": 0}, "distinct"), ({"distinct": 4, "failure_probability": 1.0}, "failure_probability"),
        ({"distinct": 4, "failure_probability": 0.0}, "failure_probability")], ids=["no-input", "alpha-1", "alpha-0"])
    def test_refuses(self, kwargs, match):
        with pytest.raises(ValueError, match=match):
            covering_examples(**kwargs)


class TestWindowLaw:
    def test_exponent_and_scale(self):
        assert window_exponent(3, 3) == 4 and window_exponent(6, 2) == 5 and window_exponent(1, 5) == 0
        # Exact: (1/2)^4.
        assert window_scale(0.015, 0.03, 4) == 0.0625


class TestPilotForecast:
    def test_direct_counts_and_intervals(self):
        """Counts 40/60/100 below 0.015/0.02/0.03 of 10^5 examples: every row direct, exponent ~1.32."""
        res = _residuals((40, 60, 100))
        fc = pilot_forecast(res, 100_000, target=1000, n=1)
        assert isinstance(fc, Forecast) and [r.constraints for r in fc.table] == [40, 60, 100]
        assert all(r.method == "direct" for r in fc.table)
        row = fc.at(0.03)
        assert row.per_1000 == 1.0 and row.predicted_examples == 1_000_000
        lo, hi = poisson_interval(100, 0.05)
        # Exact arithmetic of the same formulas: rtol 1e-12 for rounding.
        np.testing.assert_allclose(row.interval, (lo / 100, hi / 100), rtol=1e-12)
        np.testing.assert_allclose(row.predicted_interval, (1e6 * 100 / hi, 1e6 * 100 / lo), rtol=1e-12)
        assert fc.exponent == pytest.approx(math.log(100 / 40) / math.log(2), rel=1e-12)
        assert fc.model_ok  # 1.32 in [0.5, 1.5]·1
        # 0.015 needs 2.5·10^6 <= threshold: the smallest candidate is chosen.
        assert fc.tol == 0.015 and not fc.fixed and not fc.over_budget
        json.dumps(fc.to_dict())
        with pytest.raises(dataclasses.FrozenInstanceError):
            fc.tol = 0.02

    def test_rows_share_constraints(self):
        """A run of equal residuals is one row: the interval is the rows' Garwood interval, scaled by 2."""
        res = np.repeat(_residuals((0, 0, 50)), 2)
        row = pilot_forecast(res, 10_000, target=10, n=1).at(0.03)
        assert (row.constraints, row.rows) == (100, 50)
        lo, hi = poisson_interval(50, 0.05)
        np.testing.assert_allclose(row.interval, (2 * lo / 10, 2 * hi / 10), rtol=1e-12)  # rounding only

    def test_window_law_extrapolates_small_counts(self):
        """Below MIN_DIRECT constraints the window law (t/T)^n from the loosest tolerance is used, and said."""
        res = _residuals((2, 5, 160))  # exponent log(160/2)/log 2 = 6.3: its interval still meets [2, 6]
        fc = pilot_forecast(res, 100_000, target=100, n=4)
        assert fc.model_ok
        base = fc.at(0.03)
        for t in (0.015, 0.02):
            row = fc.at(t)
            assert row.method == "window law" and row.constraints < 10
            # Exact: the loosest rate times (t/0.03)^4.
            assert row.per_1000 == pytest.approx(base.per_1000 * (t / 0.03) ** 4, rel=1e-12)
        assert "window law" in fc.summary()

    def test_threshold_and_budget(self):
        res = _residuals((20, 60, 200))
        fc = pilot_forecast(res, 1_000_000, target=3000, n=3, threshold=1e7, budget=10**8)
        # 0.015: 1.5e8 > 1e7; 0.02: 5e7 > 1e7; 0.03: 1.5e7 > 1e7 -> the smallest forecast, the loosest.
        assert fc.tol == 0.03 and fc.predicted_examples == pytest.approx(1.5e7, rel=1e-12)
        assert not fc.over_budget and fc.settled
        tight = pilot_forecast(res, 1_000_000, target=3000, n=3, budget=10**7, seconds=10.0, workers=2)
        assert tight.over_budget
        msg = tight.budget_message()
        for text in ("1.5e+07 examples", "max_examples=10,000,000", "LearnConfig(max_examples=15000000)",
                     "--max-examples 15000000"):
            assert text in msg, msg
        assert "examples/s" not in msg  # deterministic: the same wherever the batches ran
        assert "100,000 examples/s with 2 workers" in tight.time_message()
        fixed = pilot_forecast(res, 1_000_000, target=3000, n=3, tol=0.015)
        assert fixed.tol == 0.015 and fixed.fixed

    def test_nothing_certified(self):
        fc = pilot_forecast(np.empty(0), 2_000_000, target=4800, n=6, budget=10**9)
        assert math.isinf(fc.predicted_examples) and fc.over_budget
        # Lower end from Garwood's 3.69: 4800·2e6/3.69 = 2.6e9 > budget, so the pilot has settled.
        assert fc.settled and fc.chosen.predicted_interval[0] > 10**9
        assert "more than 2.6e+09 examples" in fc.budget_message()

    def test_advice_never_exceeds_what_the_inputs_give(self):
        """On the cube of k·d = 8 coordinates (256 inputs), a pilot with no constraint in 38 M examples: no budget is
        advised (10 times the lower end, 1.1e10, is far past the 2,187 examples that draw every input), and the
        message says why. Control: with 2^32 inputs (n* = 1.1e11) or no limit, the same budget is advised."""
        import re

        fc = pilot_forecast(np.empty(0), 38_455_000, target=96, n=0, budget=10**9)
        capped = fc.budget_message(distinct_inputs=2**8)
        advised = [int(v.replace(",", "")) for v in re.findall(r"(?:at least |max_examples=|--max-examples )([\d,]+)",
                                                               capped)]
        assert advised == [10**9]  # only the budget the run had, quoted
        assert "No budget reaches it: the inputs take only 256 distinct values" in capped
        assert f"{covering_examples(256):,} examples draw every one of them" in capped
        for limit in (2**32, None):
            assert "pass a budget of at least 11,000,000,000 examples" in fc.budget_message(distinct_inputs=limit)

    @pytest.mark.parametrize(("k", "d", "noise", "distribution", "distinct"), [
        (2, 4, 0.0, "boolean", 256), (2, 31, 0.0, "boolean", 2**62), (4, 16, 0.0, "boolean", None),
        (2, 4, 0.01, "boolean", None), (2, 4, 0.0, "gaussian", None)],
        ids=["cube", "largest", "past-int64", "noisy", "gaussian"])
    def test_which_runs_are_capped(self, k, d, noise, distribution, distinct):
        """Exact labels on the cube are capped at 2^(kd) inputs; noisy labels, Gaussian inputs and cubes whose
        n* no budget comes near (2^64 inputs at (d, k) = (16, 4), past an int64) are not, and the message is
        still formed."""
        from types import SimpleNamespace

        from learner.learn import _distinct_inputs

        oracle = LayerOracle(random_layer(1, d, check=False, rng=0), k, noise=noise, distribution=distribution)
        distinct_inputs = _distinct_inputs(SimpleNamespace(source=oracle, k=k, d=d))
        assert distinct_inputs == distinct
        fc = pilot_forecast(np.empty(0), 38_455_000, target=96, n=0, budget=10**9)
        assert ("No budget reaches it" in fc.budget_message(distinct_inputs=distinct_inputs)) is (distinct == 256)

    @pytest.mark.slow
    def test_learn_on_a_cube_of_256_inputs(self):
        """The command's setting (1, 4, 2), exact labels: phase 4 certifies nothing, and the message advises no
        budget beyond what the cube's 256 inputs give (with a budget of 10⁶ so the test takes seconds)."""
        oracle = LayerOracle(random_layer(1, 4, logit_scale=3.0, rng=0), 2, rng=1)
        result = learn(oracle, m=1, config=LearnConfig(max_examples=10**6), progress=False, workers=1)
        assert result.status == "budget", result.message
        assert "256 distinct values" in result.message and "pass a budget" not in result.message

    def test_integer_layer_rejects_the_window_law(self):
        """Negative control: integer Θ put an atom at D = 0, the yield hardly depends on tol (exponent ~0):
        the forecast must say the law does not hold and use direct counts only."""
        from theory.yield_model import integer_layer

        layer = integer_layer(3, 12, rng=0)
        oracle = LayerOracle(layer, 2, rng=1)
        X, Y = oracle.draw(20_000)
        res = certify_rows(X, Y, layer.ws.sum(axis=0), tol=0.03, min_weight=0.02)[2]
        fc = pilot_forecast(res, 20_000, target=1000, n=2, min_count=10**9)
        assert not fc.model_ok and fc.exponent_interval[1] < 0.5 * 2
        assert all(r.method != "window law" for r in fc.table)
        assert "window law rejected" in fc.summary()
        # The planted layer of the same size passes the same test (measured exponent 1.9–2.1, n = 2).
        planted = random_layer(3, 12, logit_scale=1.0, rng=0)
        X, Y = LayerOracle(planted, 2, rng=1).draw(20_000)
        res = certify_rows(X, Y, planted.ws.sum(axis=0), tol=0.03, min_weight=0.02)[2]
        assert pilot_forecast(res, 20_000, target=1000, n=2).model_ok

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            pytest.param({"residuals": [0.01, 0.05]}, ValueError, r"`residuals` must lie in \[0, 0.03\)",
                         id="residual-above-loosest"),
            pytest.param({"residuals": [[0.01]]}, ValueError, r"`residuals`", id="residuals-2d"),
            pytest.param({"n_examples": 0}, ValueError, r"`n_examples` must be at least 1; got n_examples=0",
                         id="n_examples=0"),
            pytest.param({"target": 0}, ValueError, r"`target` must be at least 1; got target=0", id="target=0"),
            pytest.param({"n": -1}, ValueError, r"`n` must be at least 0; got n=-1", id="n=-1"),
            pytest.param({"candidates": ()}, ValueError, r"`candidates` must be non-empty", id="no-candidates"),
            pytest.param({"candidates": (0.01, 1.5)}, ValueError, r"`candidates` must be non-empty tolerances in "
                         r"\(0, 1\)", id="candidate>=1"),
            pytest.param({"candidates": (0.01, -0.1)}, ValueError, r"`candidates` must be finite and positive",
                         id="candidate<0"),
            pytest.param({"tol": 1.0}, ValueError, r"`tol` must be below 1; got tol=1.0", id="tol=1"),
            pytest.param({"threshold": 0}, ValueError, r"`threshold` must be finite and positive", id="threshold=0"),
            pytest.param({"budget": 0}, ValueError, r"`budget` must be at least 1; got budget=0", id="budget=0"),
            pytest.param({"band": (1.5, 0.5)}, ValueError, r"`band` must be \(low, high\)", id="band-reversed"),
            pytest.param({"failure_probability": 1.0}, ValueError, r"`failure_probability` must be in \(0, 1\)",
                         id="failure=1"),
            pytest.param({"n_examples": 1.5}, TypeError, r"`n_examples` must be an integer", id="n_examples-float"),
        ],
    )
    def test_bad_input(self, kwargs, error, match):
        args = {"residuals": [0.01], "n_examples": 100, "target": 10, "n": 1} | kwargs
        residuals, n_examples = args.pop("residuals"), args.pop("n_examples")
        with pytest.raises(error, match=match):
            pilot_forecast(residuals, n_examples, **args)


class TestRefinedSculptPilot:
    # (3, 12, 2): ~6 constraints per 1000 examples at 0.03 with the true ΣW, so the pilot is one batch.
    SETTING = (3, 12, 2)

    def _run(self, workers=None, *, tol, pilot=False, **fields):
        """Phase 4 with fixed budgets (the pilot's candidates DEFAULT_CANDIDATES, chosen by the affordable rule)
        for 300 constraints (``int(c·d²)`` at d = 12), planning for the layer's m = 3: the pilot's exponent is
        (3 − 1)(2 − 1) = 2. ``fields`` replace the config's."""
        m, d, k = self.SETTING
        layer = random_layer(m, d, logit_scale=1.0, rng=0)
        cfg = LearnConfig(**({"adaptive": False, "refined_tol": tol, "min_weight": 0.02,
                              "refined_constraints": 300.5 / d**2, "max_examples": 2_000_000, "batch": 20_000}
                             | fields))
        return refined_sculpt(LayerOracle(layer, k, rng=1), layer.ws.sum(axis=0), cfg, m=m, workers=workers,
                              pilot=pilot)

    @pytest.mark.parametrize("workers", [None, pytest.param(2, marks=pytest.mark.slow)], ids=["serial", "2-workers"])
    def test_pilot_then_continuation_equals_a_direct_run(self, workers):
        """The pilot's constraints below the chosen tol plus the continuation are exactly a run at that tol."""
        if workers:
            with Workers(workers) as pool:
                piloted = self._run(pool, tol=None, pilot=True)
        else:
            piloted = self._run(tol=None, pilot=True)
        fc = piloted.forecast
        assert fc is not None and piloted.tol == fc.tol == 0.015
        assert fc.n == 2 and fc.target == 300
        assert [r.tol for r in fc.table] == list(DEFAULT_CANDIDATES) and fc.rule == "affordable"
        assert fc.n_examples < piloted.n_examples  # the pilot stopped before the target: a continuation ran
        direct = self._run(tol=fc.tol)
        for name in ("A", "b", "residual", "p_token", "p_ref"):
            np.testing.assert_array_equal(getattr(piloted, name), getattr(direct, name), err_msg=name)
        assert (piloted.n_examples, piloted.rows_seen, piloted.rows_certified, piloted.examples_at_target) == \
               (direct.n_examples, direct.rows_seen, direct.rows_certified, direct.examples_at_target)
        # Negative control: the pilot's tolerance is not the chosen one, and a run there differs.
        assert self._run(tol=0.03).count != direct.count or self._run(tol=0.03).n_examples != direct.n_examples
        summary = piloted.summary()
        assert summary["tol_chosen"]["tol"] == 0.015 and summary["forecast"]["tol"] == 0.015
        assert 1 / 3 <= summary["forecast_ratio"] <= 3 and 1 / 3 <= summary["needed_ratio"] <= 3

    @pytest.mark.parametrize(("adaptive", "candidates", "rule", "reach"),
                             [(True, ADAPTIVE_CANDIDATES, "cost", REACH_CANDIDATES),
                              (False, DEFAULT_CANDIDATES, "affordable", ())],
                             ids=["adaptive", "fixed"])
    def test_the_config_chooses_the_candidates_and_the_rule(self, adaptive, candidates, rule, reach):
        """The data-driven budgets forecast ADAPTIVE_CANDIDATES and choose by cost, and over the budget the
        looser REACH_CANDIDATES too; the fixed budgets forecast DEFAULT_CANDIDATES and choose the smallest
        affordable one. A budget of 5,000 examples ends either run after its pilot's one batch: the fixed budgets'
        forecast is over it, the adaptive pilot reaches the target at the tightest tolerance within it."""
        out = self._run(tol=None, pilot=True, adaptive=adaptive, max_examples=5_000)
        fc = out.forecast
        # Over the budget the adaptive pilot chooses among the looser tolerances too, the tightest within it.
        assert [r.tol for r in fc.table] == [*candidates, *reach] and fc.n == 2
        assert fc.reach == reach and fc.rule == ("within" if reach else rule)
        if reach:  # the pilot certified at the loosest of them, not only at the candidates' loosest
            assert fc.at(max(reach)).constraints > fc.at(max(candidates)).constraints
        # The reach's threshold is the budget where that is below REACH_EXAMPLES.
        assert fc.threshold == (5_000 if reach else AFFORDABLE_EXAMPLES)
        if reach:
            # The cost rule's 0.05 needs 8,242 examples, over the 5,000; the tightest within them is 0.08 (3,409),
            # at which the pilot's own 5,000 examples reach the target.
            assert (fc.at(0.05).predicted_examples > 5_000 >= fc.at(0.08).predicted_examples
                    > fc.at(min(reach)).predicted_examples)
            assert fc.tol == 0.08 and not fc.over_budget and out.stopped == "target"
        else:
            assert out.stopped == "forecast" and fc.over_budget
        assert fc.n_examples == out.n_examples == 5_000

    def test_fixed_tol_is_kept(self):
        out = self._run(tol=0.02, pilot=True)
        assert out.tol == 0.02 and out.forecast.fixed and [r.tol for r in out.forecast.table] == [0.015, 0.02, 0.03]

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            pytest.param({"tol": None}, ValueError, r"`config.refined_tol` must be set unless pilot=True",
                         id="no-tol"),
            pytest.param({"tol": 0.015, "pilot": 1}, TypeError, r"`pilot` must be True or False; got pilot=1",
                         id="pilot=1"),
        ],
    )
    def test_bad_input(self, kwargs, error, match):
        with pytest.raises(error, match=match):
            self._run(**kwargs)

    def test_a_config_that_is_not_one_is_refused_before_an_example(self):
        m, d, k = self.SETTING
        layer = random_layer(m, d, logit_scale=1.0, rng=0)
        oracle = LayerOracle(layer, k, rng=1)
        with pytest.raises(TypeError, match="`config` must be a LearnConfig or None; got dict"):
            refined_sculpt(oracle, layer.ws.sum(axis=0), {"refined_tol": 0.015}, m=m)
        assert oracle.n_drawn == 0


# A small setting with a budget far below its forecast: phases 1–3 are cut short too, so the run is fast.
SMALL = {"n_crude": 50_000, "crude_max_examples": 100_000, "n_refine": 50_000, "batch": 20_000, "outer_rounds": 1}


class TestBudgetStop:
    @pytest.mark.parametrize("noise", [0.0, 1e-3], ids=["exact", "noisy"])
    def test_learn_stops_after_the_pilot(self, caplog, noise):
        """The forecast at tol 1e-4 (billions of examples) exceeds the budget. Exact labels on the cube of
        k·d = 24 coordinates: past the 3.3e8 examples that draw each of its 2^24 inputs, more only repeat them, so
        no budget is advised; noisy labels (each repeat with fresh noise, the control): a budget is advised."""
        truth = random_layer(3, 12, logit_scale=1.0, rng=0)
        oracle = LayerOracle(truth, 2, noise=noise, rng=1)
        budget = 200_000
        # refined_tol fixed so tight that the forecast far exceeds the budget (0 or few rows at 1e-4).
        cfg = LearnConfig(max_examples=budget, refined_tol=1e-4, **SMALL)
        with caplog.at_level(logging.INFO, logger="learner"):
            result = learn(oracle, m=3, config=cfg, truth=truth)
        assert not result.success and result.status == "budget" and result.layer is None
        # The loosest candidate of the data-driven budgets has the smallest forecast.
        for text in ("phase 4 would need", "max_examples=200,000", "tol 0.08"):
            assert text in result.message, result.message
        advice = ("LearnConfig(max_examples=", "--max-examples")
        if noise:
            assert all(text in result.message for text in advice), result.message
        else:
            assert not any(text in result.message for text in advice), result.message
            assert "No budget reaches it: the inputs take only 16,777,216 distinct values" in result.message
        fc = result.diagnostics["4_refined_sculpt"]["forecast"]
        assert fc["over_budget"] and fc["fixed"] and fc["tol"] == 1e-4
        pilot = result.diagnostics["4_refined_sculpt"]["examples"]
        assert pilot == fc["n_examples"] < budget / 2  # stopped long before the budget was spent
        assert result.diagnostics["0_setting"]["refined_tol_chosen"] == [1e-4]
        assert any("pilot of" in rec.getMessage() for rec in caplog.records)
        json.dumps(result.to_dict())

    @pytest.mark.slow  # a command line end to end
    def test_cli_prints_the_forecast(self, capsys, monkeypatch):
        import functools

        import learner.phases

        # The CLI's defaults for phases 1–3 with SMALL's sizes, so the test takes about a second.
        monkeypatch.setattr(learner.phases, "LearnConfig", functools.partial(LearnConfig, **SMALL))
        # A budget beyond reach even at the loosest tolerance (5,000 examples are enough there: the run succeeds).
        code = main(["learn", "--m", "3", "--d", "12", "--k", "2", "--logit-scale", "1", "--seed", "0",
                     "--max-examples", "1000", "--no-progress"])
        out = " ".join(capsys.readouterr().out.split())  # sentences wrapped at the report's width, joined again
        assert code == 1  # a run that ended without success (0: success; 2: a refused command line)
        assert "success: no (budget): phase 4 would need" in out and "--max-examples" in out
        assert "Time: the pilot ran at" in out


class TestCostRule:
    """The data-driven budgets' choice: the smallest forecast × (tol / smallest)²."""

    def test_tightest_where_yield_grows_slower_than_tol_squared(self):
        # Counts ∝ tol (exponent 1): forecasts ∝ 1/tol, cost ∝ tol — the tightest candidate.
        fc = pilot_forecast(_residuals((150, 200, 300)), 100_000, target=1000, n=1, rule="cost")
        assert fc.tol == 0.015 and fc.rule == "cost"

    def test_loosest_where_yield_grows_faster(self):
        # Counts ∝ tol³: cost ∝ 1/tol — the loosest; the affordable rule (the control) keeps the tightest here.
        counts = (round(300 * 0.5**3), round(300 * (2 / 3) ** 3), 300)
        res = _residuals(counts)
        assert pilot_forecast(res, 100_000, target=1000, n=3, rule="cost").tol == 0.03
        assert pilot_forecast(res, 100_000, target=1000, n=3).tol == 0.015

    def test_cost_by_hand(self):
        fc = pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=1, rule="cost")
        cost = {r.tol: r.predicted_examples * (r.tol / 0.015) ** 2 for r in fc.table}
        assert fc.tol == min(cost, key=cost.get)

    def test_only_direct_counts_compete(self):
        """A tolerance forecast by the window law (too few constraints counted) is not chosen on the law's word:
        with counts ∝ tol², every window-law cost ties the loosest, and the tie would go to the tightest."""
        fc = pilot_forecast(_residuals((8, 12, 32)), 100_000, target=1000, n=2, rule="cost")
        assert fc.model_ok and fc.at(0.015).method == "window law" and fc.tol == 0.03
        # Control: with enough constraints at 0.015 it is counted directly and may win.
        fc = pilot_forecast(_residuals((300, 400, 600)), 100_000, target=1000, n=2, rule="cost")
        assert fc.at(0.015).method == "direct" and fc.tol == 0.015

    def test_bad_rule(self):
        with pytest.raises(ValueError,
                           match=r"`rule` must be one of \('affordable', 'cost', 'within'\); got rule='cheap'"):
            pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=1, rule="cheap")


def _steep(n_constraints, top=0.15):
    """Residuals in [0, top) whose count below t is ⌊N(t/top)⁴⌉: yields growing like t⁴, where the cost rule
    prefers the loosest tolerance it may choose (one constraint per row)."""
    return top * ((np.arange(n_constraints) + 0.5) / n_constraints) ** 0.25


class TestReach:
    """The looser tolerances, considered only where the candidates' choice is forecast above the reach threshold
    or over the budget; then the tightest tolerance forecast within it is chosen."""

    N, TARGET = 1_000_000, 1000

    def _fc(self, res, **kw):
        return pilot_forecast(res, self.N, target=self.TARGET, n=4, candidates=ADAPTIVE_CANDIDATES, rule="cost",
                              **kw)

    def test_the_constants(self):
        assert min(REACH_CANDIDATES) > max(ADAPTIVE_CANDIDATES) and max(REACH_CANDIDATES) < 1
        assert list(REACH_CANDIDATES) == sorted(REACH_CANDIDATES)
        assert AFFORDABLE_EXAMPLES < REACH_EXAMPLES < DEFAULT_MAX_EXAMPLES

    def test_within_the_threshold_the_candidates_decide_as_without_reach(self):
        res = _steep(2000)
        fc = self._fc(res, budget=10**9, reach=REACH_CANDIDATES)
        # By hand: 162 residuals below 0.08 (2000·(0.08/0.15)⁴ = 161.8), forecast 1000·10⁶/162 examples.
        below = int((res < 0.08).sum())
        assert below == 162 and fc.tol == 0.08 and fc.reach == () and fc.rule == "cost" and not fc.over_budget
        assert fc.predicted_examples == pytest.approx(self.TARGET * self.N / below, rel=1e-12)
        assert [r.tol for r in fc.table] == list(ADAPTIVE_CANDIDATES)
        # The same forecast as without reach from the residuals below the loosest candidate.
        assert fc.to_dict() == self._fc(res[res < 0.08], budget=10**9).to_dict()
        assert "looser" not in fc.summary()

    @pytest.mark.parametrize(("threshold", "chosen"), [(1_000_000, 0.15), (1_350_000, 0.12), (2_600_000, 0.12),
                                                       (3_000_000, 0.1)])
    def test_above_the_threshold_the_tightest_whose_interval_is_within_it(self, threshold, chosen):
        # Counts below 0.1, 0.12, 0.15: 395, 819, 2000. The upper ends of the forecasts, by hand from Garwood's
        # lower limit ½χ²_{2c}(0.025): 1000·10⁶/357.0 = 2.80e6, /763.9 = 1.31e6, /1913.3 = 5.23e5. At 2.6e6 the
        # point forecast at 0.1 (2.53e6) is within the threshold but its interval is not: 0.12.
        from scipy.stats import chi2

        res = _steep(2000)
        fc = self._fc(res, budget=10**9, reach=REACH_CANDIDATES, reach_threshold=threshold)
        counts = [int((res < t).sum()) for t in REACH_CANDIDATES]
        upper = {t: self.TARGET * self.N / (chi2.ppf(0.025, 2 * c) / 2) for t, c in zip(REACH_CANDIDATES, counts,
                                                                                           strict=True)}
        assert counts == [395, 819, 2000]
        assert chosen == min(t for t in REACH_CANDIDATES if upper[t] <= threshold)
        assert fc.at(0.08).predicted_examples > threshold  # the candidates' choice is above every threshold here
        assert fc.tol == chosen and fc.reach == REACH_CANDIDATES and not fc.over_budget
        assert fc.rule == "within" and fc.threshold == threshold
        assert fc.at(chosen).predicted_interval[1] == pytest.approx(upper[chosen], rel=1e-9)
        assert fc.predicted_examples == pytest.approx(self.TARGET * self.N / int((res < chosen).sum()), rel=1e-12)
        assert [r.tol for r in fc.table] == [*ADAPTIVE_CANDIDATES, *REACH_CANDIDATES]
        assert "looser tolerances 0.1, 0.12, 0.15 considered" in fc.summary()
        assert fc.to_dict()["reach"] == list(REACH_CANDIDATES)

    def test_without_a_budget_the_threshold_still_opens_it(self):
        fc = self._fc(_steep(2000), reach=REACH_CANDIDATES, reach_threshold=1_000_000)
        assert fc.tol == 0.15 and fc.reach == REACH_CANDIDATES and not fc.over_budget

    def test_over_the_budget_below_the_threshold(self):
        # A budget of 5e6 below the threshold of 1e8: 0.08's 6.2e6 is over it; the tightest whose interval is
        # within 5e6 is 0.1 (upper end 2.8e6).
        fc = self._fc(_steep(2000), budget=5_000_000, reach=REACH_CANDIDATES)
        assert fc.tol == 0.1 and fc.reach == REACH_CANDIDATES and fc.threshold == 5_000_000 and not fc.over_budget
        # Control: the same pilot without reach is over the budget at 0.08.
        res = _steep(2000)
        plain = self._fc(res[res < 0.08], budget=5_000_000)
        assert plain.tol == 0.08 and plain.over_budget

    def test_over_the_budget_even_with_reach(self):
        fc = self._fc(_steep(2000), budget=100_000, reach=REACH_CANDIDATES)
        assert fc.tol == 0.15 and fc.over_budget and fc.reach == REACH_CANDIDATES

    def test_a_forecast_equal_to_the_threshold_stays_within(self):
        # 128 residuals in [0.06, 0.08) and 1000 in [0.1, 0.15): among the candidates only 0.08 is counted
        # directly; its forecast is 1000·2²⁰/128 = 8,192,000 examples exactly.
        res = np.concatenate([np.linspace(0.06, 0.079, 128), np.linspace(0.1, 0.149, 1000)])
        kw = dict(target=1000, n=4, candidates=ADAPTIVE_CANDIDATES, rule="cost", reach=REACH_CANDIDATES)
        inside = pilot_forecast(res, 2**20, reach_threshold=8_192_000, **kw)
        assert inside.tol == 0.08 and inside.predicted_examples == 8_192_000 and inside.reach == ()
        outside = pilot_forecast(res, 2**20, reach_threshold=8_191_999, **kw)
        assert outside.reach == REACH_CANDIDATES and outside.tol in REACH_CANDIDATES
        # The budget the same way.
        assert pilot_forecast(res, 2**20, budget=8_192_000, **kw).reach == ()
        assert pilot_forecast(res, 2**20, budget=8_191_999, **kw).reach == REACH_CANDIDATES

    def test_unused_with_a_fixed_tolerance(self):
        res = _steep(2000)
        kw = {"tol": 0.05, "budget": 5_000_000}
        fc = self._fc(res, reach=REACH_CANDIDATES, reach_threshold=1_000, **kw)
        assert fc.reach == () and fc.tol == 0.05 and [r.tol for r in fc.table] == list(ADAPTIVE_CANDIDATES)
        assert fc.to_dict() == self._fc(res[res < 0.08], **kw).to_dict()

    @pytest.mark.parametrize(
        ("kw", "error", "match"),
        [
            ({"reach": (0.08, 0.1)}, ValueError, r"`reach` must be tolerances above every candidate \(0.08\) and "
                                                 r"below 1; got reach=\(0.08, 0.1\)"),
            ({"reach": (0.1, 1.0)}, ValueError, r"`reach` must be tolerances above every candidate"),
            ({"reach": (0.1, -0.2)}, ValueError, r"reach"),
            ({"reach": 0.1}, TypeError, r"`reach` must be a sequence of tolerances; got reach=0.1"),
            ({"reach": REACH_CANDIDATES, "reach_threshold": 0}, ValueError, r"reach_threshold"),
        ],
        ids=["not-above", "one", "negative", "scalar", "threshold"],
    )
    def test_bad_input_is_named(self, kw, error, match):
        with pytest.raises(error, match=match):
            self._fc(_steep(100), budget=10**6, **kw)


class TestWindowLawInput:
    @pytest.mark.parametrize(("call", "name"), [
        (lambda: window_exponent(2.5, 3), "m"), (lambda: window_exponent(3, 2.5), "k"),
        (lambda: window_scale(0.0, 0.03, 2), "tol"), (lambda: window_scale(0.015, -1.0, 2), "tol_ref"),
        (lambda: window_scale(0.015, 0.03, 1.5), "n"), (lambda: window_scale(0.015, 0.03, -1), "n"),
    ], ids=["m", "k", "tol", "tol_ref", "n-float", "n-negative"])
    def test_errors_name_the_parameter(self, call, name):
        with pytest.raises((TypeError, ValueError), match=f"`{name}`"):
            call()

    def test_exponent_zero_is_flat(self):
        # n = 0 (m = 1 or k = 1): the window has no disagreements, the yield does not depend on tol: (t/T)^0 = 1.
        assert window_scale(0.015, 0.03, 0) == 1.0 and window_scale(0.015, 0.03, 1) == 0.5


class TestExponentInterval:
    """The exponent's interval is the Clopper–Pearson interval [q_lo, q_hi] of R_lo / R_hi (R rows below 0.015 and
    0.03), mapped by q -> -log(q) / log 2; the reference interval is scipy's exact binomial interval."""

    @pytest.mark.parametrize("counts", [(40, 60, 100), (1, 3, 5), (0, 3, 5), (5, 5, 5), (0, 0, 1)], ids=str)
    def test_clopper_pearson(self, counts):
        from scipy.stats import binomtest

        lo_rows, hi_rows = counts[0], counts[-1]
        ci = binomtest(lo_rows, hi_rows).proportion_ci(confidence_level=0.95, method="exact")
        expected = (-math.log(ci.high) / math.log(2), -math.log(ci.low) / math.log(2) if ci.low > 0 else math.inf)
        fc = pilot_forecast(_residuals(counts), 100_000, target=1000, n=1)
        np.testing.assert_allclose(fc.exponent_interval, expected, rtol=1e-9, atol=1e-12)
        assert fc.exponent == (math.log(hi_rows / lo_rows) / math.log(2) if lo_rows else math.inf)

    def test_no_rows(self):
        # Documented: NaN and (0, inf) without rows at the loosest tolerance.
        fc = pilot_forecast(np.empty(0), 100_000, target=1000, n=1)
        assert math.isnan(fc.exponent) and fc.exponent_interval == (0.0, math.inf)


class TestChoice:
    def test_forecast_equal_to_the_threshold_is_affordable(self):
        # 32 constraints in 2^17 examples: exactly 2^-12 per example, so 0.015 needs exactly 1000·2^12 examples.
        res = _residuals((32, 48, 64))
        threshold = 1000 * 2**12
        fc = pilot_forecast(res, 2**17, target=1000, n=1, threshold=threshold)
        assert fc.at(0.015).predicted_examples == threshold and fc.tol == 0.015
        # Control: one example less of threshold and 0.015 no longer fits; 0.02 (2730667 examples) does.
        assert pilot_forecast(res, 2**17, target=1000, n=1, threshold=threshold - 1).tol == 0.02

    def test_equal_forecasts_go_to_the_loosest(self):
        # Every constraint below the tightest tolerance: equal forecasts, none affordable; the loosest wins the tie.
        fc = pilot_forecast(_residuals((50, 50, 50)), 100_000, target=1000, n=1, threshold=1.0)
        assert len({r.predicted_examples for r in fc.table}) == 1 and fc.tol == 0.03

    def test_cost_rule_at_tiny_tolerances(self):
        # Only the ratio t / t_min matters: 10 constraints below 1e-100 and 100 below 2e-100 cost 10·1 against
        # 1·4 (in units of target·N/100): the looser one. A cost in absolute t² (≈1e-400) would underflow to ties.
        rng = np.random.default_rng(0)
        res = np.concatenate([rng.uniform(0, 1e-100, 10), rng.uniform(1e-100, 2e-100, 90)])
        fc = pilot_forecast(res, 100_000, target=1000, n=2, candidates=(1e-100, 2e-100), rule="cost")
        assert [r.method for r in fc.table] == ["direct", "direct"] and fc.tol == 2e-100


class TestTimes:
    def test_seconds_for(self):
        # 10^6 examples in 10 s on 2 workers: 10^5 examples/s, 5·10^4 per worker.
        fc = pilot_forecast(_residuals((40, 60, 100)), 1_000_000, target=1000, n=1, seconds=10.0, workers=2)
        assert fc.examples_per_second == 100_000
        assert fc.seconds_for(1_000_000) == 10.0  # the pilot's own workers
        assert fc.seconds_for(1_000_000, workers=4) == 5.0 and fc.seconds_for(1_000_000, workers=1) == 20.0
        assert fc.seconds_for(math.inf) == math.inf
        untimed = pilot_forecast(_residuals((40, 60, 100)), 1_000_000, target=1000, n=1)
        assert untimed.seconds_for(1_000_000) is None and untimed.seconds_for(math.inf) is None

    @pytest.mark.parametrize(("seconds", "text"), [
        (None, "unknown time"), (math.inf, "forever"), (119.4, "119 s"), (120.0, "2 min"), (3000.0, "50 min"),
        (7199.0, "120 min"), (7200.0, "2.0 h"), (3_600_000.0, "1000.0 h")], ids=str)
    def test_duration(self, seconds, text):
        from learner.phases.forecast import _duration

        # Seconds below 2 minutes, minutes below 2 hours, then hours to a tenth.
        assert _duration(seconds) == text


class TestPilotForecastArguments:
    @pytest.mark.parametrize(("kwargs", "name"), [
        ({"workers": 1.5}, "workers"), ({"min_count": 1.5}, "min_count"), ({"seconds": -1.0}, "seconds"),
        ({"failure_probability": -0.1}, "failure_probability"), ({"failure_probability": 1.0}, "failure_probability"),
        ({"failure_probability": 1.5}, "failure_probability"), ({"tol": -0.01}, "tol"),
        ({"candidates": (0.015, 1.0)}, "candidates"), ({"band": (1.0, 1.0)}, "band"),
    ], ids=str)
    def test_bad_argument_is_named(self, kwargs, name):
        with pytest.raises((TypeError, ValueError), match=f"`{name}`"):
            pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=1, **kwargs)

    def test_boundaries_that_are_allowed(self):
        # No time yet (0 s) is a time; a band may start at 0.
        fc = pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=1, seconds=0.0, band=(0.0, 1.0))
        assert fc.seconds == 0.0 and fc.band == (0.0, 1.0)
        assert fc.workers == 1  # the pilot ran in this process unless told otherwise

    def test_a_residual_at_the_loosest_tolerance_is_refused(self):
        # The pilot certifies strictly below the loosest tolerance.
        with pytest.raises(ValueError, match="`residuals` must lie in"):
            pilot_forecast(np.array([0.01, 0.03]), 100_000, target=1000, n=1)


class TestPilotForecastCounts:
    def test_a_residual_equal_to_a_tolerance_is_not_below_it(self):
        # Residuals 0.015 and 0.02 exactly: below 0.015 there is one (0.01), below 0.02 two, below 0.03 three.
        fc = pilot_forecast(np.array([0.01, 0.015, 0.02]), 1000, target=10, n=1, min_count=1)
        assert [(r.constraints, r.rows) for r in fc.table] == [(1, 1), (2, 2), (3, 3)]

    def test_one_candidate_has_no_exponent(self):
        fc = pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=1, candidates=(0.03,))
        assert math.isnan(fc.exponent) and fc.exponent_interval == (0.0, math.inf)

    def test_constraints_per_row_scale_the_interval(self):
        # Two rows of one constraint below 0.02 (none below 0.015), four rows of three constraints in [0.02, 0.03):
        # at 0.02 a row holds 1 constraint, at 0.03 14/6, and at 0.015 (no row) the loosest's 14/6 is used. n = 0
        # puts the exponent's interval outside the band, so no tolerance is extrapolated.
        res = np.array([0.016, 0.017] + [r for r in (0.021, 0.022, 0.023, 0.024) for _ in range(3)])
        a, N = 0.05, 1000
        fc = pilot_forecast(res, N, target=10, n=0, min_count=1, failure_probability=a)
        assert not fc.model_ok
        for row, rows, per_row in zip(fc.table, (0, 2, 6), (14 / 6, 1.0, 14 / 6), strict=True):
            lo, hi = poisson_interval(rows, a)
            assert row.rows == rows
            np.testing.assert_allclose(row.interval, (1000 * per_row * lo / N, 1000 * per_row * hi / N), rtol=1e-12)


class TestPilotForecastBoundaries:
    def test_the_band_is_inclusive_at_both_ends(self):
        # n = 1: the band is compared with the exponent's interval itself; an interval end equal to a band end is in.
        res = _residuals((40, 60, 100))
        lo, hi = pilot_forecast(res, 100_000, target=1000, n=1).exponent_interval
        assert 0 < lo < hi < math.inf
        assert pilot_forecast(res, 100_000, target=1000, n=1, band=(hi, hi + 1)).model_ok
        assert pilot_forecast(res, 100_000, target=1000, n=1, band=(0.0, lo)).model_ok
        assert not pilot_forecast(res, 100_000, target=1000, n=1, band=(0.0, lo * (1 - 1e-9))).model_ok

    def test_the_window_law_needs_min_direct_constraints_at_the_loosest(self):
        # 10 constraints below 0.03 (MIN_DIRECT), 2 below 0.02 and 1 below 0.015: the tighter ones are extrapolated.
        res = np.array([0.01, 0.016] + [0.021 + 0.0005 * i for i in range(8)])
        fc = pilot_forecast(res, 1000, target=10, n=1, band=(0.0, 10.0))
        assert fc.model_ok and [r.method for r in fc.table] == ["window law", "window law", "direct"]
        # With one constraint fewer at the loosest, every count stays direct, flagged as few.
        fc = pilot_forecast(res[:-1], 1000, target=10, n=1, band=(0.0, 10.0))
        assert fc.model_ok and [r.method for r in fc.table] == ["direct, few"] * 3

    def test_the_loosest_is_never_extrapolated(self):
        fc = pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=1, min_count=1000)
        assert fc.model_ok and fc.table[-1].method == "direct, few" and fc.table[0].method == "window law"

    def test_a_forecast_equal_to_the_budget_is_not_over_it(self):
        # 32 constraints below 0.015 in 2^17 examples: 0.015 needs exactly 1000·2^12 examples.
        res, need = _residuals((32, 48, 64)), 1000 * 2**12
        assert not pilot_forecast(res, 2**17, target=1000, n=1, tol=0.015, budget=need).over_budget
        assert pilot_forecast(res, 2**17, target=1000, n=1, tol=0.015, budget=need - 1).over_budget

    def test_settled_with_a_budget(self):
        # Fewer than PILOT_ROWS rows (9) throughout; the chosen tolerance is 0.015 (4 rows, forecast ~1e6 examples).
        res = _residuals((4, 6, 9))
        assert pilot_forecast(res, PILOT_EXAMPLES, target=10, n=1, budget=10**9).settled  # enough examples, affordable
        assert not pilot_forecast(res, PILOT_EXAMPLES - 1, target=10, n=1, budget=10**9).settled
        # Enough examples but over the budget: not settled (target 1000: forecast 2.5e8, low end ~9.8e7 below 1e8,
        # and 1e6 examples are under PILOT_MAX_FRACTION of it).
        fc = pilot_forecast(res, PILOT_EXAMPLES, target=1000, n=1, budget=10**8)
        assert fc.over_budget and fc.at(fc.tol).predicted_interval[0] < 10**8 and not fc.settled
        # PILOT_MAX_FRACTION of the budget spent: 1000 examples of a 20,000 budget (0.05 · 20,000 = 1000 exactly).
        assert PILOT_MAX_FRACTION * 20_000 == 1000
        assert pilot_forecast(res, 1000, target=10, n=1, budget=20_000).settled
        assert not pilot_forecast(res, 999, target=10, n=1, budget=20_000).settled

    def test_settled_when_even_the_low_end_is_over_the_budget(self):
        # target 1000 in 1000 examples: the forecast's interval at 0.015 is about (9.8e4, 9.2e5).
        res = _residuals((4, 6, 9))
        lo, hi = pilot_forecast(res, 1000, target=1000, n=1).at(0.015).predicted_interval
        assert 9e4 < lo < 1e5 and 9e5 < hi < 1e6
        assert pilot_forecast(res, 1000, target=1000, n=1, budget=90_000).settled
        # A budget inside the interval: the pilot goes on (only the low end counts).
        assert not pilot_forecast(res, 1000, target=1000, n=1, budget=200_000).settled

    def test_a_budget_equal_to_the_low_end_is_not_exceeded(self, monkeypatch):
        # Constructed interval: every count's Poisson interval is (4, 16), one constraint per row, 1024 examples, so
        # the low end is 640 / (16/1024) = 40960 exactly (powers of two), for the fixed tolerance 0.03.
        from learner.phases import forecast

        monkeypatch.setattr(forecast, "poisson_interval", lambda count, a: (4.0, 16.0))
        res = _residuals((4, 6, 9))
        fc = pilot_forecast(res, 1024, target=640, n=1, tol=0.03, min_count=1, budget=40960)
        assert fc.at(0.03).predicted_interval[0] == 40960 and not fc.settled
        assert pilot_forecast(res, 1024, target=640, n=1, tol=0.03, min_count=1, budget=40959).settled

    def test_an_underflowing_window_law_forecasts_no_end(self):
        # n = 2000: (0.5)^2000 and (2/3)^2000 underflow to 0, so the window law's rate and both ends are 0 and the
        # forecast is unbounded (∞), not a division error.
        res = np.array([0.01, 0.016] + [0.021 + 0.0005 * i for i in range(8)])
        fc = pilot_forecast(res, 1000, target=10, n=2000, band=(0.0, 10.0))
        assert [r.method for r in fc.table] == ["window law", "window law", "direct"]
        for row in fc.table[:2]:
            assert row.per_1000 == 0.0 and row.predicted_examples == math.inf
            assert row.predicted_interval == (math.inf, math.inf)

    def test_the_forecast_records_its_inputs(self):
        fc = pilot_forecast(_residuals((40, 60, 100)), 100_000, target=1000, n=3, failure_probability=0.1)
        assert (fc.n_examples, fc.target, fc.n, fc.failure_probability) == (100_000, 1000, 3, 0.1)

    def test_settled_at_pilot_rows_or_pilot_examples(self):
        # A budget far above every forecast, few examples: settled only by PILOT_ROWS rows at the loosest.
        budget = 10**12
        assert pilot_forecast(_residuals((40, 60, 100)), 1000, target=10, n=1, budget=budget).settled
        assert not pilot_forecast(_residuals((40, 60, 99)), 1000, target=10, n=1, budget=budget).settled
        # Without a budget: settled from PILOT_EXAMPLES examples on, not before.
        assert pilot_forecast(_residuals((4, 6, 9)), 1_000_000, target=10, n=1).settled
        assert not pilot_forecast(_residuals((4, 6, 9)), 999_999, target=10, n=1).settled


def test_the_guides_covering_figures_are_the_functions():
    """The learner guide's example (``--m 1 --d 4 --k 2``) names the cube's inputs and the examples that draw them
    all: both figures as :func:`covering_examples` and 2^(kd) give them, not typed-in ones."""
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[3] / "docs" / "guide" / "learner.md").read_text().split())
    match = re.search(r"--m 1 --d 4 --k 2`.*?names the cube's ([\d,]+) inputs and the ([\d,]+) examples", text)
    assert match, "the guide's covering example is gone"
    inputs, examples = (int(g.replace(",", "")) for g in match.groups())
    assert inputs == 2 ** (2 * 4) and examples == covering_examples(inputs)
