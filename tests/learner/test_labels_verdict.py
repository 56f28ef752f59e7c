"""When a fixed set of examples runs out, the learner says whether an m-head attention layer fits them at all,
instead of asking for more examples that could not help: labels that are not an attention layer's get that
verdict (the best fit's held-out error), and a real layer's labels (control) are told to pass more."""

from __future__ import annotations

import numpy as np
import pytest

from learner import learn, random_layer
from learner.inputs import sample_inputs

N = 20_000  # ours: runs out within phase 1 or 2 at (2, 8, 2), in a few seconds


def _data(kind):
    rng = np.random.default_rng(0)
    truth = random_layer(2, 8, logit_scale=1.0, rng=1)
    X = sample_inputs(N, 2, 8, rng=2)
    if kind == "layer":
        return X, truth(X)
    if kind == "shuffled":
        return X, truth(X)[rng.permutation(N)]
    if kind == "zeros":
        return X, np.zeros_like(X)
    if kind == "tanh":
        return X, np.tanh(X @ rng.standard_normal((8, 8)))
    return (X + 1) / 2, truth((X + 1) / 2)  # "01": a layer, on inputs in {0, 1}


def _message(kind):
    result = learn(_data(kind), m=2, progress=False, workers=1)
    assert not result.success and result.status == "examples"
    return result.message


@pytest.mark.parametrize("kind", ["shuffled", pytest.param("tanh", marks=pytest.mark.slow)])
def test_labels_no_layer_fits(kind):
    message = _message(kind)
    assert "No attention layer of 2 head(s) fitted these labels" in message and "Pass more" not in message


def test_control_a_layers_labels_are_told_to_pass_more():
    message = _message("layer")
    assert "An attention layer of 2 head(s) fits these labels" in message and "pass more examples" in message


@pytest.mark.slow
def test_labels_all_zero_and_inputs_off_the_cube():
    assert "The labels are all zero" in _message("zeros")
    message = _message("01")
    assert "fits these labels" in message and "the inputs take the values {0, 1}, neither ±1 nor Gaussian" in message


@pytest.mark.parametrize(("error", "fits"), [(0.009, True), (0.011, False), (0.5, False)])
def test_the_threshold_is_one_percent(monkeypatch, error, fits):
    """The verdict's rule at the threshold (0.01): fits just below it, no fit just above (the fit itself replaced)."""
    import sys

    module = sys.modules["learner.learn"]
    monkeypatch.setattr(module, "refit", lambda theta0, X, Y, **_: None)
    monkeypatch.setattr(module, "heldout_relative_error", lambda layer, X, Y: error)
    run = type("Run", (), {"source": type("S", (), {"X": _data("layer")[0], "Y": np.ones((N, 2, 8))})(),
                           "m": 2, "plan_m": 2})()
    message = module._labels_verdict(run, "asked for 5 examples; only 0 of 9 remain. Pass more examples.")
    assert ("An attention layer of 2 head(s) fits" in message) is fits
    assert ("No attention layer of 2 head(s) fitted" in message) is not fits
