"""learner.baselines.fit_torch: the torch Adam peer baseline (quick budgets)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install -e '.[torch]')")

from learner import LayerOracle, LearnResult, random_layer  # noqa: E402
from learner.baselines import fit_gradient, fit_torch  # noqa: E402
from learner.baselines import torch_adam as torch_adam_module  # noqa: E402

# random_layer(1, 4, logit scale 1), k = 2: a problem torch Adam fits in a second (quick budget).
QUICK = {"n_train": 1000, "n_val": 300, "batch": 100, "epochs": 60, "lr": 0.05, "threads": 1}


def _truth():
    return random_layer(1, 4, logit_scale=1.0, rng=0)


class TestFitTorch:
    def test_fits_a_planted_layer(self):
        truth = _truth()
        result = fit_torch(LayerOracle(truth, 2, rng=1), m=1, truth=truth, restarts=1, rng=2, **QUICK)
        assert isinstance(result, LearnResult)
        assert result.success and result.status == "gradient", result.message
        diag = result.diagnostics["fit"]
        assert diag["recipe"] == "torch-adam" and diag["schedule"] == "cosine over 600 steps"
        assert diag["val_relative_error"] <= 1e-3 and result.errors["relative_error"] <= 1e-3
        assert result.examples_drawn == 1300
        s = diag["seconds_to"]
        assert s["1e-03"] is not None and s["1e-03"] <= result.timings["total"]
        assert s["1e-08"] is None or s["1e-03"] <= s["1e-08"]
        json.dumps(result.to_dict())

    def test_lowers_the_loss_where_a_control_without_steps_does_not(self):
        """Control: lr so small that Adam cannot move keeps the initial loss; the real run halves it."""
        truth = _truth()
        runs = [fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=2, **(QUICK | {"epochs": 5, "lr": lr}))
                for lr in (0.05, 1e-12)]
        moved, stuck = (r.diagnostics["fit"] for r in runs)
        assert moved["val_loss"][0] < 0.5 * moved["initial_val_loss"][0]
        np.testing.assert_allclose(stuck["val_loss"][0], stuck["initial_val_loss"][0], rtol=1e-6)

    def test_same_examples_and_start_as_fit_gradient(self):
        """Same rng: the same examples and initial parameters as numpy Adam, so both start at the same loss."""
        truth = random_layer(2, 4, rng=0)
        common = {"m": 2, "n_train": 300, "n_val": 100, "restarts": 2, "rng": 8}
        a = fit_torch(LayerOracle(truth, 2, rng=1), epochs=1, batch=100, **common)
        b = fit_gradient(LayerOracle(truth, 2, rng=1), max_iter=1, **common)
        # the same sums in another order (torch's einsum vs numpy's products): float64 rounding
        np.testing.assert_allclose(a.diagnostics["fit"]["initial_val_loss"],
                                   b.diagnostics["fit"]["initial_val_loss"], rtol=1e-12)

    def test_max_seconds_stops_at_the_first_validation_past_it(self):
        """A limit far below one epoch's time stops the first restart at its first validation after the start
        (one epoch of steps) and starts no other; the control without it runs every epoch of every restart."""
        truth = _truth()
        opts = QUICK | {"epochs": 4, "tol": 0.0}
        capped = fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=3, rng=2, max_seconds=1e-9, **opts)
        free = fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=3, rng=2, **opts)
        per_epoch = opts["n_train"] // opts["batch"]
        fit = capped.diagnostics["fit"]
        assert (fit["steps"], fit["stopped"], fit["restarts_run"]) == ([per_epoch], ["max_seconds"], 1)
        assert free.diagnostics["fit"]["steps"] == [4 * per_epoch] * 3
        assert free.diagnostics["fit"]["stopped"] == ["epochs"] * 3

    def test_same_rng_same_layer(self):
        truth = _truth()
        runs = [fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=seed, **(QUICK | {"epochs": 2}))
                for seed in (3, 3, 4)]
        np.testing.assert_array_equal(runs[0].layer.thetas, runs[1].layer.thetas)
        assert not np.array_equal(runs[0].layer.thetas, runs[2].layer.thetas)

    def test_full_batch_takes_every_example_at_every_step(self, monkeypatch):
        """batch=None: one step per epoch over all n_train examples (no permutation drawn), recorded as full batch;
        forty such steps halve the loss."""
        truth = _truth()
        seen = []
        real = torch_adam_module._train

        def spy(*args, **kwargs):
            seen.append(kwargs["full_batch"])
            return real(*args, **kwargs)

        monkeypatch.setattr(torch_adam_module, "_train", spy)
        result = fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=2, **(QUICK | {"batch": None,
                                                                                                "epochs": 40}))
        fit = result.diagnostics["fit"]
        assert seen == [True]
        assert fit["batch"] == 1000 and fit["full_batch"] is True
        assert fit["schedule"] == "cosine over 40 steps"
        assert fit["val_loss"][0] < 0.5 * fit["initial_val_loss"][0]
        assert fit["device"] == "cpu"

    def test_full_batch_step_is_the_whole_set_gradient(self):
        """One full-batch step from the same start is the step of a mini-batch as large as the training set (the
        same n_train examples, shuffled): the same mean loss summed in another order."""
        truth = _truth()
        a = fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=5, n_train=200, n_val=50, batch=None,
                      epochs=1, lr=1e-3, tol=0.0, clip=1e9, eval_every=1, threads=1)
        b = fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=5, n_train=200, n_val=50, batch=200,
                      epochs=1, lr=1e-3, tol=0.0, clip=1e9, eval_every=1, threads=1)
        # the same examples in another order: the same step to rounding (Adam's first step is lr·g/(|g|+ε))
        np.testing.assert_allclose(a.layer.thetas, b.layer.thetas, rtol=0, atol=1e-12)
        assert a.diagnostics["fit"]["full_batch"] is True
        assert b.diagnostics["fit"]["full_batch"] is False

    def test_a_cuda_device_torch_cannot_see_is_refused_before_any_example(self):
        if torch.cuda.is_available():
            pytest.skip("this machine has a CUDA device")
        oracle = LayerOracle(_truth(), 2, rng=1)
        with pytest.raises(ValueError, match=r"^`device` must be a device .* sees 0 CUDA devices\)"):
            fit_torch(oracle, m=1, device="cuda", **QUICK)
        assert oracle.n_drawn == 0

    def test_threads_are_restored(self):
        before = torch.get_num_threads()
        fit_torch(LayerOracle(_truth(), 2, rng=1), m=1, restarts=1, rng=2, **(QUICK | {"epochs": 1, "threads": 1}))
        assert torch.get_num_threads() == before

    def test_too_few_examples(self):
        truth = _truth()
        X = np.sign(np.random.default_rng(0).standard_normal((100, 2, 4)))
        result = fit_torch((X, truth(X)), m=1, n_train=100, n_val=50)
        assert result.status == "examples" and result.layer is None and "n_train + n_val = 150" in result.message


BAD = [
    ({"lr": 0.0}, ValueError, "`lr` must be finite and positive"),
    ({"epochs": 0}, ValueError, "`epochs` must be at least 1; got epochs=0"),
    ({"batch": 0}, ValueError, "`batch` must be at least 1"),
    ({"clip": -1.0}, ValueError, "`clip` must be finite and positive"),
    ({"eval_every": 0}, ValueError, "`eval_every` must be at least 1"),
    ({"threads": 0}, ValueError, "`threads` must be at least 1"),
    ({"dtype": "float16"}, ValueError, "`dtype` must be one of"),
    ({"milestones": (5.0,)}, ValueError, "`milestones` must be distinct relative errors below 1"),
    ({"k": 3}, ValueError, "`k` must match the examples' 2 tokens"),
    ({"truth": "layer"}, TypeError, "`truth` must be an AttentionLayer"),
    ({"device": "gpu7"}, ValueError, r"^`device` must be a device this torch build can use.*; got device='gpu7'"),
    ({"device": 3}, TypeError, r"^`device` must be a device this torch build can use.*; got device=3"),
    ({"device": "cuda:99"}, ValueError, r"^`device` must be a .* CUDA devices?\); got device='cuda:99'"),
]


@pytest.mark.parametrize(("kwargs", "exc", "match"), BAD, ids=[next(iter(b[0])) for b in BAD])
def test_bad_inputs(kwargs, exc, match):
    oracle = LayerOracle(_truth(), 2, rng=1)
    with pytest.raises(exc, match=match):
        fit_torch(oracle, **({"m": 1} | kwargs))
    assert oracle.n_drawn == 0
