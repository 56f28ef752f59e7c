"""When a fixed set of examples runs out, the learner says whether an m-head attention layer fits them at all,
instead of asking for more examples that could not help: labels that are not an attention layer's get that
verdict (the best fit's held-out error), and a real layer's labels (control) are told to pass more. The fit's
error is judged against the noise floor the held-out labels show, so a layer's noisy labels are a layer's too."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from learner import ArraySource, LayerOracle, LearnConfig, check_setting, learn, random_layer
from learner.inputs import sample_inputs
from learner.phases import noise_floor
from learner.phases.search import refit

N = 20_000  # ours: runs out within phase 1 or 2 at (2, 8, 2), in a few seconds
EXHAUSTED = "asked for 5 examples; only 0 of 9 remain. Pass more examples."
FITS, NO_FIT = "An attention layer of 2 head(s) fits these labels", "No attention layer of 2 head(s) fitted"


def _module():
    return sys.modules["learner.learn"]


def _data(kind):
    rng = np.random.default_rng(0)
    truth = random_layer(2, 8, logit_scale=1.0, rng=1)
    X = sample_inputs(N, 2, 8, rng=2)
    other = random_layer(2, 8, logit_scale=1.0, rng=99)
    if kind == "layer":
        return X, truth(X)
    if kind.startswith("noise "):  # a planted layer's labels plus Gaussian noise of the level named
        # W's scale 0.7: labels of mean square 0.64, so σ = 0.1 leaves a held-out relative error of about
        # 0.1²/0.64 = 0.016, above the fixed 0.01 (the scale 1 layer's 1.3 would leave 0.008, below it)
        quiet = random_layer(2, 8, logit_scale=1.0, w_scale=0.7, rng=1)
        return X, quiet(X) + float(kind.split()[1]) * rng.standard_normal(X.shape)
    if kind == "shuffled":
        return X, truth(X)[rng.permutation(N)]
    if kind == "random":
        return X, rng.standard_normal(X.shape)
    if kind == "zeros":
        return X, np.zeros_like(X)
    if kind == "tanh":
        return X, np.tanh(X @ rng.standard_normal((8, 8)))
    if kind == "parity":  # every output entry the parity of three input coordinates
        return X, np.broadcast_to((X[:, 0, 0] * X[:, 0, 3] * X[:, 1, 5])[:, None, None], X.shape).copy()
    if kind == "square":  # x -> x**2 on Gaussian inputs (on the cube it would be the constant 1)
        Xg = sample_inputs(N, 2, 8, distribution="gaussian", rng=3)
        return Xg, Xg**2
    if kind == "mixed":  # each example labelled by one of two layers, at random
        pick = rng.random(N) < 0.5
        return X, np.where(pick[:, None, None], truth(X), other(X))
    if kind == "blocks":  # two layers' examples one after the other, as two files concatenated
        return X, np.concatenate([truth(X[:N // 2]), other(X[N // 2:])])
    return (X + 1) / 2, truth((X + 1) / 2)  # "01": a layer, on inputs in {0, 1}


def _message(kind):
    result = learn(_data(kind), m=2, progress=False, workers=1)
    assert not result.success and result.status == "examples"
    return result.message


def _verdict(kind, config=None):
    """The verdict alone on the examples of ``kind``, for a run with m = 2 (what learn says once they ran out)."""
    X, Y = _data(kind)
    run = SimpleNamespace(source=ArraySource(X, Y), m=2, plan_m=2, cfg=config or LearnConfig())
    return _module()._labels_verdict(run, EXHAUSTED)


@pytest.mark.slow  # whole runs; TestNoiseFloor's mixed labels give this verdict in the default tier
@pytest.mark.parametrize("kind", ["shuffled", "tanh"])
def test_labels_no_layer_fits(kind):
    message = _message(kind)
    assert NO_FIT + " these labels" in message and "Pass more" not in message


def test_control_a_layers_labels_are_told_to_pass_more():
    message = _message("layer")
    assert FITS in message and "pass more examples" in message


@pytest.mark.slow
def test_labels_all_zero_and_inputs_off_the_cube():
    assert "The labels are all zero" in _message("zeros")
    message = _message("01")
    assert "fits these labels" in message and "the inputs take the values {0, 1}, neither ±1 nor Gaussian" in message


class TestHeldOutSet:
    """The held-out examples that score the fit are examples the fit never saw."""

    def test_two_layers_one_after_the_other_fit_no_layer(self):
        """The first half labelled by one layer, the second by another: a fit on the front fits the first layer
        exactly, and only examples from the back show that it is not the labels' layer. Held-out examples taken
        among the fitted ones would score 1e-30 and call the set one layer's."""
        message = _verdict("blocks")
        assert NO_FIT in message and "pass more" not in message

    def test_control_the_first_layer_alone_fits(self):
        X, Y = _data("blocks")
        run = SimpleNamespace(source=ArraySource(X[:N // 2], Y[:N // 2]), m=2, plan_m=2, cfg=LearnConfig())
        assert FITS in _module()._labels_verdict(run, EXHAUSTED)

    @pytest.mark.parametrize("n", [200, 999, 2_500, 2_501, 20_000])
    def test_fit_and_held_out_rows_are_disjoint(self, monkeypatch, n):
        """Every example is numbered in its first entry; the examples the fit and the score receive share no
        number, and the score has a fifth of them, at most 1,000."""
        X = np.ones((n, 2, 8))
        X[:, 0, 0] = np.arange(n)
        seen = {"fit": set(), "held_out": set()}

        def fake_refit(theta0, Xf, Yf, **_):
            seen["fit"].update(Xf[:, 0, 0].tolist())

        def fake_error(layer, Xh, Yh):
            seen["held_out"].update(Xh[:, 0, 0].tolist())
            return 0.0

        monkeypatch.setattr(_module(), "refit", fake_refit)
        monkeypatch.setattr(_module(), "heldout_relative_error", fake_error)
        run = SimpleNamespace(source=ArraySource(X, np.ones_like(X)), m=2, plan_m=2, cfg=LearnConfig())
        _module()._labels_verdict(run, EXHAUSTED)
        assert seen["fit"] and not seen["fit"] & seen["held_out"]
        assert len(seen["held_out"]) == min(1000, n // 5)


class TestNoiseFloor:
    """An error above the fixed 0.01 is a layer's when it is label noise alone: judged by the noise-floor test
    (4 standard deviations, a false alarm about once in 10⁴ fits; the right layer's ratio was measured at
    1.02 ± 0.014 here), while labels no attention layer gives fail it or carry no signal."""

    @pytest.mark.parametrize("sigma", [pytest.param("0.01", marks=pytest.mark.slow), "0.1",
                                       pytest.param("0.3", marks=pytest.mark.slow)])
    def test_a_layers_noisy_labels_are_a_layers(self, sigma):
        message = _verdict(f"noise {sigma}")
        assert FITS in message and "pass more examples" in message
        error = float(message.split("relative error of ")[1].split()[0])
        if sigma == "0.01":  # 0.01²/0.64 = 1.6e-4: the fixed threshold decides
            assert error < 0.01
            return
        assert error > 0.01 and "all of it label noise" in message  # the floor decides
        # the level the floor shows is the one planted: σ̂ from 24,000 residuals is within a few per cent of σ
        # (its relative standard error is 1/sqrt(2·24,000) = 0.5 %)
        shown = float(message.split("σ̂ = ")[1].split(",")[0])
        assert shown == pytest.approx(float(sigma), rel=0.05)

    @pytest.mark.slow
    def test_through_learn(self):
        message = _message("noise 0.1")
        assert FITS in message and "pass more examples" in message

    @pytest.mark.parametrize(("kind", "why"), [
        pytest.param("random", "no better than zero", marks=pytest.mark.slow),
        ("mixed", "which this residual is not"),
        pytest.param("parity", "which this residual is not", marks=pytest.mark.slow),
        pytest.param("square", "which this residual is not", marks=pytest.mark.slow),
    ])
    def test_labels_no_layer_gives(self, kind, why):
        message = _verdict(kind)
        assert NO_FIT in message and why in message and "pass more" not in message


def _fake_floor(consistent, sd=0.015, z=4.0):
    return SimpleNamespace(consistent=consistent, sd=sd, z=z, sigma=0.1, test_clause=lambda: "the test's clause")


@pytest.mark.parametrize(("error", "floor", "switch", "fits"), [
    (0.009, None, True, True),  # below the fixed threshold: the floor is not consulted
    (0.01, _fake_floor(False), True, True),  # at it: still the fixed threshold, whatever the floor would say
    (0.011, None, False, False),  # the noise-floor test switched off: the fixed threshold alone
    (0.5, None, False, False),
    (0.5, _fake_floor(True), True, True),  # label noise alone, and a signal
    (0.93, _fake_floor(True), True, True),  # 1 − 4·0.015 = 0.94: just below, a signal
    (0.95, _fake_floor(True), True, False),  # just above: noise alone, no signal
    (0.95, _fake_floor(True, sd=0.01), True, True),  # 1 − 4·0.01 = 0.96
    (0.011, _fake_floor(False), True, False),  # a residual with structure
    (float("nan"), _fake_floor(True), True, False),
], ids=["fixed-fits", "fixed-at-0.01", "fixed-0.011", "fixed-0.5", "noise", "signal-0.93", "no-signal-0.95",
        "signal-sd", "structure", "nan"])
def test_the_rule(monkeypatch, error, floor, switch, fits):
    """The verdict's rule with the fit and the floor replaced: fits at or below 0.01, or above it when the floor finds
    label noise alone and the fit explains more than z·sd of the held-out labels."""
    module = _module()
    monkeypatch.setattr(module, "refit", lambda theta0, X, Y, **_: None)
    monkeypatch.setattr(module, "heldout_relative_error", lambda layer, X, Y: error)
    monkeypatch.setattr(module, "noise_floor", lambda *a, **k: floor)
    X = _data("layer")[0]
    run = SimpleNamespace(source=ArraySource(X, np.ones_like(X)), m=2, plan_m=2,
                          cfg=LearnConfig(noise_floor=switch))
    message = module._labels_verdict(run, EXHAUSTED)
    assert (FITS in message) is fits
    assert (NO_FIT in message) is not fits


@pytest.mark.parametrize(("n", "fit", "held_out"), [
    (200, range(0, 160), range(160, 200)),  # a fifth held out, the rest fitted
    (2_000, range(0, 1_500), range(1_600, 2_000)),  # the fit capped at 1,500: rows 1,500-1,599 unused
    (20_000, range(0, 1_500), range(19_000, 20_000)),  # both capped
])
def test_the_fit_takes_the_front_rows_and_the_score_the_back(n, fit, held_out):
    """The verdict's fit takes the first rows, at most 1,500; its score the last ones, a fifth and at most 1,000."""
    rows = np.arange(n)
    fit_rows, held_out_rows = _module()._verdict_split(n)
    assert rows[fit_rows].tolist() == list(fit) and rows[held_out_rows].tolist() == list(held_out)


class TestTheFloorOfTheRun:
    """``_labels_floor`` judges the fit with the run's own config: the test's width ``noise_z`` and the memory
    budget ``search_memory``. One head at (d, k) = (3, 2), refitted to 100 examples with label noise 10⁻³ and
    scored on 100 more: its residual is label noise alone."""

    @staticmethod
    def _case():
        one = random_layer(1, 3, rng=0)
        X = sample_inputs(200, 2, 3, rng=2)
        Y = one(X) + 1e-3 * np.random.default_rng(1).standard_normal(X.shape)
        fit_rows, held_out_rows = slice(0, 100), slice(100, 200)
        fit = refit(one.thetas, X[fit_rows], Y[fit_rows])
        return fit, X, Y, fit_rows, held_out_rows

    @staticmethod
    def _judge(config, error, case):
        fit, X, Y, fit_rows, held_out_rows = case
        return _module()._labels_floor(SimpleNamespace(cfg=config), fit, error, X, Y, fit_rows, held_out_rows)

    def test_the_width_is_the_runs_noise_z(self):
        """An error of 1.5 carries no signal at any width; the clause names the width the run set."""
        fits, clause = self._judge(LearnConfig(noise_z=3.0), 1.5, self._case())
        assert not fits and "no better than zero does" in clause and "at most 1 − 3·" in clause

    # The Jacobian of one head at (d, k) = (3, 2) takes 8 bytes · k·d rows · 2·m·d² columns = 864 bytes an
    # example: 86,400 for the 100 fitted.
    @pytest.mark.parametrize(("memory", "runs"), [(86_400, True), (86_399, False)])
    def test_the_memory_budget_is_the_runs_search_memory(self, memory, runs):
        """The test runs when the fit's Jacobian fits ``search_memory`` exactly, and is not run one byte below,
        where the labels are not called a layer's."""
        fits, clause = self._judge(LearnConfig(search_memory=memory), 0.05, self._case())
        if runs:
            assert fits and clause.startswith("; all of it label noise")
        else:
            assert not fits
            assert clause.endswith(f"the noise-floor test does not fit search_memory={memory:,} bytes here")

    def test_an_error_at_the_signal_bound_is_signal(self):
        """The labels carry a layer's signal when ``error <= 1 − z·sd``, the bound included."""
        case = self._case()
        fit, X, Y, fit_rows, held_out_rows = case
        config = LearnConfig()
        floor = noise_floor(fit, X[fit_rows], Y[fit_rows], X[held_out_rows], Y[held_out_rows], config,
                            max_bytes=config.search_memory)
        assert floor.consistent
        bound = 1.0 - floor.z * floor.sd
        assert self._judge(config, bound, case)[0] is True
        assert self._judge(config, float(np.nextafter(bound, 2.0)), case)[0] is False


def _fitted_by(module, monkeypatch, errors):
    """The verdict's fits replaced: each fit a placeholder of its own, scored by the next of ``errors``."""
    scores = iter(errors)
    monkeypatch.setattr(module, "refit", lambda theta0, X, Y, **_: object())
    monkeypatch.setattr(module, "heldout_relative_error", lambda layer, X, Y: next(scores))


@pytest.mark.parametrize("errors", [(0.005, float("nan")), (float("nan"), 0.005), (float("nan"), float("nan"))],
                         ids=["nan-second", "nan-first", "both-nan"])
def test_a_fit_ending_at_nan_never_replaces_a_finite_one(monkeypatch, errors):
    """Of the two fits, one that ends at a NaN error is never the best while the other ends at a number, whichever
    comes first: the verdict is the finite fit's. When both end at NaN, the message shows it, and no layer fits."""
    module = _module()
    _fitted_by(module, monkeypatch, errors)
    X = _data("layer")[0]
    run = SimpleNamespace(source=ArraySource(X, np.ones_like(X)), m=2, plan_m=2, cfg=LearnConfig())
    message = module._labels_verdict(run, EXHAUSTED)
    if np.isnan(errors).all():
        assert NO_FIT in message and "relative error of nan on" in message
    else:
        assert FITS in message and "relative error of 0.005 on" in message


class TestWhatTheVerdictNeeds:
    """The verdict needs the examples themselves, inputs and labels, and at least 200 of them; a source without
    them keeps its own words."""

    @staticmethod
    def _one_head(n):
        """``n`` examples of one head at (d, k) = (4, 2), where no more than one head is sound (so a run with m
        estimated plans for one)."""
        X = sample_inputs(n, 2, 4, rng=2)
        return X, random_layer(1, 4, logit_scale=1.0, rng=0)(X)

    def test_fewer_than_200_examples_get_no_verdict(self):
        X, Y = self._one_head(199)
        message = learn((X, Y), m=1, progress=False, workers=1).message
        assert message.startswith("asked for") and message.endswith("only 199 of 199 remain. Pass more examples or "
                                                                    "a LayerOracle.")

    @pytest.mark.parametrize("holds", ["nothing", "inputs", "labels"])
    def test_a_source_without_inputs_and_labels_keeps_its_own_words(self, holds):
        """A source that runs out without holding both arrays (a LayerOracle holds neither; a source of its own
        may hold its inputs and draw their labels): its message is returned as it is."""
        X, Y = self._one_head(300)
        source = {"nothing": LayerOracle(random_layer(1, 4, logit_scale=1.0, rng=0), 2, rng=1),
                  "inputs": SimpleNamespace(X=X), "labels": SimpleNamespace(Y=Y)}[holds]
        run = SimpleNamespace(source=source, m=1, plan_m=1, cfg=LearnConfig())
        assert _module()._labels_verdict(run, EXHAUSTED) == EXHAUSTED

    def test_with_m_estimated_the_verdict_fits_the_heads_the_run_plans_for(self):
        """m not given: the run plans for the most heads the setting allows, here one (check_setting), and the
        verdict fits that many."""
        assert check_setting(1, 4, 2).max_m == 1
        result = learn(self._one_head(300), progress=False, workers=1)
        assert result.status == "examples" and "An attention layer of 1 head(s) fits these labels" in result.message

    def test_the_message_counts_the_held_out_examples(self):
        """300 examples: a fifth of them, 60, score the fit."""
        message = learn(self._one_head(300), m=1, progress=False, workers=1).message
        assert "relative error of " in message and " on 60 examples)" in message


def test_the_fits_are_two_short_refinements_from_starts_of_order_one(monkeypatch):
    """What the message says of the fits holds: two of them, each of 30 steps with the run's step solver and
    memory budget (``search_memory``, as every other refit of the run), from starts whose logits ``x_i^T Θ x_j``
    on the cube are of order one (neither a saturated softmax nor a flat one),
    the same starts for the same examples, so that the verdict is reproducible."""
    module = _module()
    one = random_layer(1, 4, logit_scale=1.0, rng=0)
    X = sample_inputs(300, 2, 4, rng=2)
    calls = []

    def recording_refit(theta0, Xf, Yf, **options):
        calls.append((np.array(theta0), options))
        return one

    monkeypatch.setattr(module, "refit", recording_refit)
    cfg = LearnConfig(refine_solver="cg", search_memory=12345678)
    run = SimpleNamespace(source=ArraySource(X, one(X)), m=1, plan_m=1, cfg=cfg)
    first = module._labels_verdict(run, EXHAUSTED)
    assert "An attention layer of 1 head(s) fits" in first and len(calls) == 2
    assert [options for _, options in calls] == [{"max_iter": 30, "max_bytes": 12345678, "solver": "cg"}] * 2
    for theta0, _ in calls:
        logits = np.einsum("nid,de,nje->nij", X, theta0[0], X)
        assert 0.5 < logits.std() < 2.0
    assert module._labels_verdict(run, EXHAUSTED) == first and len(calls) == 4
    assert all(np.array_equal(calls[i][0], calls[i + 2][0]) for i in range(2))


@pytest.mark.parametrize(("values", "named"), [
    ([0.0, 1.0], "{0, 1}"),  # two values other than ±1: named
    ([-1.0, 0.0, 1.0], "{-1, 0, 1}"),  # three values: not the cube, and not continuous either
    (list(range(12)), "{0, 1, 2, 3, 4, 5, 6, 7, …}"),  # a dozen integers: the first eight shown
    (list(range(9)), "{0, 1, 2, 3, 4, 5, 6, 7, …}"),  # nine: one left out
    (list(range(8)), "{0, 1, 2, 3, 4, 5, 6, 7}"),  # eight: all shown
    ([-1.0, 1.0], None),  # the cube
    ([1.0], None),  # a corner of the cube
    ("gaussian", None),  # continuous: the learner's Gaussian case
], ids=["01", "three", "twelve", "nine", "eight", "cube", "ones", "gaussian"])
def test_inputs_neither_on_the_cube_nor_continuous_are_named(monkeypatch, values, named):
    """Labels a layer fits, on inputs the learner does not certify on (a few values other than ±1): "more examples
    may not help", with the values shown; on the cube or on continuous inputs, pass more."""
    module = _module()
    _fitted_by(module, monkeypatch, [0.0, 0.0])
    if values == "gaussian":
        X = sample_inputs(300, 2, 4, distribution="gaussian", rng=3)
    else:
        X = np.random.default_rng(0).choice(np.asarray(values, float), size=(300, 2, 4))
    run = SimpleNamespace(source=ArraySource(X, np.ones_like(X)), m=1, plan_m=1, cfg=LearnConfig())
    message = module._labels_verdict(run, EXHAUSTED)
    if named:
        assert f"the inputs take the values {named}, neither ±1 nor Gaussian" in message
        assert "more examples may not help" in message and "pass more" not in message
    else:
        assert "pass more examples" in message and "the inputs take the values" not in message


@pytest.mark.parametrize(("distinct", "continuous"), [(1_200, False), (1_201, True)])
def test_continuous_inputs_are_those_with_more_values_than_half_the_entries_read(monkeypatch, distinct, continuous):
    """The line between a few values and continuous inputs: 300 examples of 2 × 4 entries are 2,400 entries read;
    on exactly half as many distinct values the inputs are named, on one more they count as continuous."""
    module = _module()
    _fitted_by(module, monkeypatch, [0.0, 0.0])
    values = np.arange(2.0, 2.0 + distinct)  # none of them ±1
    X = np.resize(values, 2_400).reshape(300, 2, 4)
    assert len(np.unique(X)) == distinct
    run = SimpleNamespace(source=ArraySource(X, np.ones_like(X)), m=1, plan_m=1, cfg=LearnConfig())
    message = module._labels_verdict(run, EXHAUSTED)
    assert ("pass more examples" in message) is continuous
    assert ("the inputs take the values {2, 3, 4, 5, 6, 7, 8, 9, …}" in message) is not continuous


def test_the_inputs_values_are_read_from_the_first_1000_examples(monkeypatch):
    """A sample of the inputs, not all of them: a value first seen at example 1,001 is not among those shown."""
    module = _module()
    _fitted_by(module, monkeypatch, [0.0, 0.0])
    X = np.random.default_rng(0).choice([0.0, 1.0], size=(1_200, 2, 4))
    X[1_000:, 0, 0] = 2.0
    run = SimpleNamespace(source=ArraySource(X, np.ones_like(X)), m=1, plan_m=1, cfg=LearnConfig())
    assert "the inputs take the values {0, 1}, neither" in module._labels_verdict(run, EXHAUSTED)
