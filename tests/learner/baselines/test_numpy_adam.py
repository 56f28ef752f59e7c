"""fit_gradient: analytic gradients against finite differences, a planted fit, restarts, bad inputs."""

import json
import re

import numpy as np
import pytest

from learner import ArraySource, AttentionLayer, LayerOracle, LearnResult, random_layer
from learner.baselines import fit_gradient
from learner.baselines import numpy_adam as baseline

# Small problems that Adam fits to the tolerance in a few hundred iterations (measured for
# random_layer(1, 4, rng=0), k=2: 256 iterations, 0.2 s, validation relative error 2e-9).
FAST = {"n_train": 1000, "n_val": 300, "max_iter": 1000, "lr": 0.05}


def _params(m, d, rng, scale=1.0):
    return scale * np.random.default_rng(rng).standard_normal((2, m, d, d))


def _central_differences(params, X, Y, h=1e-5):
    grad = np.zeros_like(params)
    for idx in np.ndindex(params.shape):
        step = np.zeros_like(params)
        step[idx] = h
        grad[idx] = (baseline._loss(params + step, X, Y) - baseline._loss(params - step, X, Y)) / (2 * h)
    return grad


def _gradient_discrepancy(m=2, d=3, k=3, n=4, seed=0):
    """max |analytic − finite differences| / max |finite differences| on a tiny random problem."""
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((n, k, d)), rng.standard_normal((n, k, d))
    params = _params(m, d, rng)
    _, grad = baseline._loss_and_grad(params, X, Y)
    fd = _central_differences(params, X, Y)
    return float(np.max(np.abs(grad - fd)) / np.max(np.abs(fd)))


# Central differences with h = 1e-5 err by ~h²·|L'''|/6 ≈ 1e-9 (truncation) plus
# ~eps·|L|/h ≈ 1e-10 (rounding) relative to gradients of size ~10; measured 5e-11 to 8e-10
# for seeds 0-2 (and 3.3 for the negative control).
# 1e-6 leaves four orders of margin, while a wrong term changes the gradient by O(1).
GRAD_RTOL = 1e-6


class TestGradient:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_matches_central_differences(self, seed):
        assert _gradient_discrepancy(seed=seed) < GRAD_RTOL

    def test_wrong_softmax_backward_fails(self, monkeypatch):
        # Negative control: dropping the rowsum term of the softmax's Jacobian must be caught.
        monkeypatch.setattr(baseline, "_softmax_backward", lambda A, G, axis: A * G)
        assert _gradient_discrepancy() > 1e-2

    def test_loss_matches_the_layer(self):
        rng = np.random.default_rng(3)
        X, Y = rng.standard_normal((7, 3, 4)), rng.standard_normal((7, 3, 4))
        params = _params(2, 4, rng)
        expected = np.mean(np.sum((AttentionLayer(*params)(X) - Y) ** 2, axis=(1, 2)))
        # Same products in a different order: agreement to a few ulps of L ≈ 10.
        np.testing.assert_allclose(baseline._loss(params, X, Y), expected, rtol=1e-12)

    def test_chunks_add_up(self):
        # 1200 examples span several chunks (auto_batch caps a chunk at 512 examples);
        # the mean over chunks must equal the mean of the per-half results.
        rng = np.random.default_rng(4)
        X, Y = rng.standard_normal((1200, 2, 3)), rng.standard_normal((1200, 2, 3))
        params = _params(1, 3, rng)
        loss, grad = baseline._loss_and_grad(params, X, Y)
        halves = [baseline._loss_and_grad(params, X[s], Y[s]) for s in (slice(0, 600), slice(600, None))]
        # Summation order differs: rounding ~1e-15 relative.
        np.testing.assert_allclose(loss, np.mean([h[0] for h in halves]), rtol=1e-12)
        np.testing.assert_allclose(grad, np.mean([h[1] for h in halves], axis=0), rtol=1e-10, atol=1e-14)

    def test_huge_logits_and_ties_stay_finite(self):
        # Logits ~1e6 (one-hot patterns) and Θ = 0 (exact ties) under warnings-as-errors.
        rng = np.random.default_rng(5)
        X, Y = np.sign(rng.standard_normal((5, 3, 4))), rng.standard_normal((5, 3, 4))
        for scale in (1e6, 0.0):
            params = _params(2, 4, rng)
            params[0] *= scale
            loss, grad = baseline._loss_and_grad(params, X, Y)
            assert np.isfinite(loss) and np.isfinite(grad).all()


class TestFitGradient:
    def test_fits_a_planted_layer(self):
        truth = random_layer(1, 4, rng=0)
        result = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, truth=truth, restarts=1, rng=2, **FAST)
        assert isinstance(result, LearnResult)
        assert result.success and result.status == "gradient", result.message
        diag = result.diagnostics["fit"]
        assert diag["val_relative_error"] <= 1e-3
        # Realizable and noiseless: Adam reaches the tol=1e-8 stop (measured ~2e-9 relative error).
        assert diag["stopped"] == ["tol"]
        assert result.errors["relative_error"] < 1e-6 and result.errors["param_error"] < 1e-2
        assert result.m == 1 and not result.m_estimated
        assert result.examples_drawn == FAST["n_train"] + FAST["n_val"]
        assert set(result.timings) == {"draw", "fit", "total"}
        json.dumps(result.to_dict())  # JSON-ready
        assert "[fit]" in result.report()

    def test_keeps_the_restart_with_the_lowest_validation_loss(self):
        truth = random_layer(1, 4, rng=0)
        X = np.sign(np.random.default_rng(6).standard_normal((500, 2, 4)))
        Y = truth(X)
        # Few iterations, so the restarts end at visibly different losses.
        result = fit_gradient(ArraySource(X, Y), m=1, n_train=400, n_val=100, max_iter=20, restarts=4, rng=7)
        diag = result.diagnostics["fit"]
        assert len(set(diag["val_loss"])) == 4
        assert diag["best_restart"] == int(np.argmin(diag["val_loss"]))
        # The returned layer is that restart's: its loss on the validation part (the last n_val examples).
        val_loss = np.mean(np.sum((result.layer(X[400:]) - Y[400:]) ** 2, axis=(1, 2)))
        np.testing.assert_allclose(val_loss, min(diag["val_loss"]), rtol=1e-12)  # same sums, reordered

    def test_same_rng_same_layer(self):
        truth = random_layer(2, 4, rng=0)
        runs = [fit_gradient(LayerOracle(truth, 2, rng=1), m=2, n_train=300, n_val=100, max_iter=30, restarts=2,
                             batch=64, rng=seed) for seed in (8, 8, 9)]
        np.testing.assert_array_equal(runs[0].layer.thetas, runs[1].layer.thetas)
        np.testing.assert_array_equal(runs[0].layer.ws, runs[1].layer.ws)
        assert not np.array_equal(runs[0].layer.thetas, runs[2].layer.thetas)
        # The record names the seed and the spawned child of every restart.
        assert runs[0].diagnostics["fit"]["seed_entropy"] == 8
        assert runs[0].diagnostics["fit"]["spawn_keys"] == [[0], [1]]

    @pytest.mark.parametrize(("optimizer", "lr", "batch"), [("gd", 0.1, None), ("adam", 0.02, 32)],
                             ids=["gd-full-batch", "adam-mini-batch"])
    def test_optimizers_lower_the_loss(self, optimizer, lr, batch):
        truth = random_layer(1, 4, logit_scale=1.0, rng=0)
        result = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, optimizer=optimizer, lr=lr, batch=batch,
                              n_train=500, n_val=200, max_iter=100, restarts=1, rng=3)
        diag = result.diagnostics["fit"]
        assert diag["optimizer"] == optimizer and diag["batch"] == batch
        assert diag["val_loss"][0] < 0.5 * diag["initial_val_loss"][0]

    def test_divergence_is_reported(self):
        truth = random_layer(1, 4, rng=0)
        result = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, optimizer="gd", lr=1e3, n_train=200, n_val=100,
                              restarts=2, rng=4)
        assert not result.success and result.status == "not_converged"
        assert result.diagnostics["fit"]["stopped"] == ["diverged", "diverged"]
        assert "did not fit" in result.message and result.layer is not None

    def test_too_few_examples_fail_with_a_reason(self):
        truth = random_layer(1, 4, rng=0)
        X = np.sign(np.random.default_rng(0).standard_normal((100, 2, 4)))
        result = fit_gradient((X, truth(X)), m=1, n_train=100, n_val=50)
        assert not result.success and result.status == "examples" and result.layer is None
        assert "n_train + n_val = 150" in result.message and result.examples_drawn == 0


_TRUTH5 = random_layer(1, 5, rng=0, check=False)

BAD_INPUTS = [
    pytest.param({"m": 0}, ValueError, "`m` must be at least 1; got m=0", id="m=0"),
    pytest.param({"m": 1.5}, TypeError, "`m` must be an integer; got m=1.5", id="m-not-int"),
    pytest.param({"lr": 0.0}, ValueError, "`lr` must be finite and positive; got lr=0.0", id="lr=0"),
    pytest.param({"lr": float("nan")}, ValueError, "`lr` must be finite and positive; got lr=nan", id="lr=nan"),
    pytest.param({"max_iter": 0}, ValueError, "`max_iter` must be at least 1; got max_iter=0", id="max_iter=0"),
    pytest.param({"restarts": 0}, ValueError, "`restarts` must be at least 1; got restarts=0", id="restarts=0"),
    pytest.param({"batch": 0}, ValueError, "`batch` must be at least 1; got batch=0", id="batch=0"),
    pytest.param({"n_train": 0}, ValueError, "`n_train` must be at least 1; got n_train=0", id="n_train=0"),
    pytest.param({"n_val": 0}, ValueError, "`n_val` must be at least 1; got n_val=0", id="n_val=0"),
    pytest.param({"patience": 0}, ValueError, "`patience` must be at least 1; got patience=0", id="patience=0"),
    pytest.param({"tol": -1.0}, ValueError, "`tol` must be finite and non-negative; got tol=-1.0", id="tol<0"),
    pytest.param({"init_scale": 0.0}, ValueError, "`init_scale` must be finite and positive; got init_scale=0.0",
                 id="init_scale=0"),
    pytest.param({"success_tol": -1e-3}, ValueError, "`success_tol` must be finite and positive", id="success_tol<0"),
    pytest.param({"optimizer": "sgd"}, ValueError,
                 re.escape("`optimizer` must be one of ('adam', 'gd'); got optimizer='sgd'"), id="optimizer-unknown"),
    pytest.param({"k": 3}, ValueError, "`k` must match the examples' 2 tokens; got k=3", id="k-mismatch"),
    pytest.param({"milestones": (1e-3, 1e-3)}, ValueError, "`milestones` must be distinct relative errors below 1",
                 id="milestones-repeated"),
    pytest.param({"milestones": (2.0,)}, ValueError, "`milestones` must be distinct", id="milestones>=1"),
    pytest.param({"milestones": (0.0,)}, ValueError, "`milestones` must be finite and positive", id="milestones=0"),
    pytest.param({"milestones": 1e-3}, TypeError, "`milestones` must be a sequence", id="milestones-scalar"),
    pytest.param({"truth": "layer"}, TypeError, "`truth` must be an AttentionLayer; got str", id="truth-not-layer"),
    pytest.param({"truth": _TRUTH5}, ValueError, "`truth` must have the examples' dimension d=4; got truth.d=5",
                 id="truth-other-d"),
]


class TestFitGradientInputs:
    @pytest.mark.parametrize(("kwargs", "error", "match"), BAD_INPUTS)
    def test_bad_inputs(self, kwargs, error, match):
        oracle = LayerOracle(random_layer(1, 4, rng=0), 2, rng=1)
        with pytest.raises(error, match=match):
            fit_gradient(oracle, **({"m": 1} | kwargs))
        assert oracle.n_drawn == 0  # validated before any example is drawn

    def test_bad_source(self):
        with pytest.raises(TypeError, match="`source` must be a LayerOracle"):
            fit_gradient("examples", m=1)


def test_restarts_stop_once_one_reaches_tol():
    """A restart that reaches `tol` ends the fit; without reaching it every restart runs (the control)."""
    truth = random_layer(1, 4, rng=0)
    common = {"m": 1, "n_train": 400, "n_val": 100, "restarts": 3, "lr": 0.05, "rng": 5}
    easy = fit_gradient(LayerOracle(truth, 2, rng=1), max_iter=3000, tol=1e-3, **common)
    hard = fit_gradient(LayerOracle(truth, 2, rng=1), max_iter=5, tol=1e-3, **common)
    assert easy.diagnostics["fit"]["restarts_run"] == 1 and easy.diagnostics["fit"]["stopped"] == ["tol"]
    assert len(easy.diagnostics["fit"]["spawn_keys"]) == 1
    assert hard.diagnostics["fit"]["restarts_run"] == 3 and len(hard.diagnostics["fit"]["val_loss"]) == 3


def _validation_clock(monkeypatch):
    """Replace the fit's clock by the number of validation evaluations so far (the validation set is the one of
    ``FAST["n_val"]`` examples); returns the list that each evaluation appends its relative error to."""
    from types import SimpleNamespace

    from learner.baselines import _scaffold

    rel_errors = []  # relative error of every validation evaluation, in order
    real_loss = baseline._loss

    def loss(params, X, Y):
        if X.shape[0] == FAST["n_val"]:  # the validation set (n_train is 1000)
            fit = AttentionLayer(params[0], params[1])(X)
            rel_errors.append(float(np.sum((fit - Y) ** 2) / np.sum(Y**2)))
        return real_loss(params, X, Y)

    clock = SimpleNamespace(perf_counter=lambda: float(len(rel_errors)))
    monkeypatch.setattr(baseline, "_loss", loss)
    monkeypatch.setattr(baseline, "time", clock)
    monkeypatch.setattr(_scaffold, "time", clock)
    return rel_errors


class TestMilestones:
    def test_times_of_first_crossings(self, monkeypatch):
        """Each milestone is timed at its first validation below it (the control: a run of 5 iterations reaches
        neither). The clock is replaced by one that reads the number of validation evaluations so far, so the
        time of a milestone is the count at the first evaluation whose relative error, computed here from the
        parameters evaluated, is at most the milestone."""
        rel_errors = _validation_clock(monkeypatch)
        truth = random_layer(1, 4, rng=0)
        result = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=2, milestones=(1e-8, 1e-3), **FAST)
        seconds = result.diagnostics["fit"]["seconds_to"]
        assert list(seconds) == ["1e-03", "1e-08"]  # descending, one spelling
        first = {key: next(i for i, e in enumerate(rel_errors) if e <= float(key)) + 1 for key in seconds}
        assert seconds == first and 1 < first["1e-03"] < first["1e-08"]
        # One validation before the first iteration and one after each; the total is read after the last.
        assert result.timings["total"] == len(rel_errors) == result.diagnostics["fit"]["iterations"][0] + 1
        short = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=2, **(FAST | {"max_iter": 5}))
        assert short.diagnostics["fit"]["seconds_to"] == {"1e-03": None, "1e-08": None}
        assert short.diagnostics["fit"]["val_relative_error"] > 1e-3

    def test_max_seconds_stops_at_the_first_validation_past_it(self, monkeypatch):
        """With a clock that counts validation evaluations, ``max_seconds=10.5`` stops the fit at the 11th
        evaluation (the 10th iteration) and no further restart starts; the control without it runs every
        iteration of every restart. A limit of 0 or below is refused by name."""
        count = _validation_clock(monkeypatch)
        truth = random_layer(1, 4, rng=0)
        opts = FAST | {"max_iter": 40, "tol": 0.0, "patience": 10**6}
        capped = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, restarts=3, rng=2, max_seconds=10.5, **opts)
        fit = capped.diagnostics["fit"]
        assert (fit["iterations"], fit["stopped"], fit["restarts_run"], fit["max_seconds"]) == ([10], ["max_seconds"],
                                                                                              1, 10.5)
        count.clear()
        free = fit_gradient(LayerOracle(truth, 2, rng=1), m=1, restarts=3, rng=2, **opts)
        assert free.diagnostics["fit"]["iterations"] == [40, 40, 40] and "max_seconds" not in free.diagnostics["fit"]
        with pytest.raises(ValueError, match="max_seconds"):
            fit_gradient(LayerOracle(truth, 2, rng=1), m=1, max_seconds=0.0, **FAST)
