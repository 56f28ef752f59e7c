"""learner.baselines.fit_torch: the torch Adam peer baseline (quick budgets)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install -e '.[torch]')")

from learner import LayerOracle, LearnResult, random_layer  # noqa: E402
from learner.baselines import fit_gradient, fit_torch  # noqa: E402

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

    def test_same_rng_same_layer(self):
        truth = _truth()
        runs = [fit_torch(LayerOracle(truth, 2, rng=1), m=1, restarts=1, rng=seed, **(QUICK | {"epochs": 2}))
                for seed in (3, 3, 4)]
        np.testing.assert_array_equal(runs[0].layer.thetas, runs[1].layer.thetas)
        assert not np.array_equal(runs[0].layer.thetas, runs[2].layer.thetas)

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
]


@pytest.mark.parametrize(("kwargs", "exc", "match"), BAD, ids=[next(iter(b[0])) for b in BAD])
def test_bad_inputs(kwargs, exc, match):
    oracle = LayerOracle(_truth(), 2, rng=1)
    with pytest.raises(exc, match=match):
        fit_torch(oracle, **({"m": 1} | kwargs))
    assert oracle.n_drawn == 0
