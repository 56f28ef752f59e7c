"""learner.oracle: example sources count what they hand out and validate their input."""

import numpy as np
import pytest

from learner import random_layer
from learner.oracle import (
    ArraySource,
    ExampleBatch,
    ExamplesExhausted,
    LayerOracle,
    SourceError,
    as_source,
    checked_examples,
)


@pytest.fixture(scope="module")
def layer():
    return random_layer(2, 6, rng=0)


class TestLayerOracle:
    def test_labels_are_the_layer_and_counted(self, layer):
        oracle = LayerOracle(layer, 3, rng=1)
        X, Y = oracle.draw(7)
        np.testing.assert_array_equal(Y, layer(X))
        oracle.draw(5)
        assert oracle.n_drawn == 12

    def test_reset_replays_the_stream(self, layer):
        oracle = LayerOracle(layer, 3, rng=2)
        first = oracle.draw(4)[0]
        oracle.reset()
        np.testing.assert_array_equal(oracle.draw(4)[0], first)
        assert oracle.n_drawn == 4

    def test_same_seed_same_examples(self, layer):
        a = LayerOracle(layer, 3, rng=5).draw(3)[0]
        b = LayerOracle(layer, 3, rng=5).draw(3)[0]
        np.testing.assert_array_equal(a, b)
        assert LayerOracle(layer, 3, rng=5).seed_entropy == 5

    def test_gaussian(self, layer):
        X, _ = LayerOracle(layer, 3, distribution="gaussian", rng=0).draw(3)
        assert not np.all(np.abs(X) == 1)

    @pytest.mark.parametrize(
        ("args", "kwargs", "error", "match"),
        [
            (("not a layer", 3), {}, TypeError, "AttentionLayer"),
            ((None, 0), {}, ValueError, "`k` must be at least 1; got k=0"),
            ((None, 3), {"distribution": "uniform"}, ValueError, "distribution='uniform'"),
        ],
        ids=["not-layer", "k=0", "bad-distribution"],
    )
    def test_bad_input(self, layer, args, kwargs, error, match):
        args = (layer if args[0] is None else args[0],) + args[1:]
        with pytest.raises(error, match=match):
            LayerOracle(*args, **kwargs)


class TestArraySource:
    def test_hands_out_in_order_then_runs_out(self, layer):
        X = np.sign(np.random.default_rng(0).standard_normal((5, 3, 6)))
        src = ArraySource(X, layer(X))
        np.testing.assert_array_equal(src.draw(2)[0], X[:2])
        np.testing.assert_array_equal(src.draw(3)[0], X[2:])
        with pytest.raises(ExamplesExhausted, match="only 0 of 5 remain"):
            src.draw(1)

    def test_boolean_is_checked(self, layer):
        X = np.full((2, 3, 6), 0.5)
        with pytest.raises(ValueError, match="must be Boolean"):
            ArraySource(X, layer(X), distribution="boolean")

    def test_shapes_must_match(self):
        with pytest.raises(ValueError, match="same shape"):
            ArraySource(np.ones((2, 3, 4)), np.ones((2, 3, 5)))


class TestAsSource:
    def test_pair_becomes_array_source(self, layer):
        X = np.ones((2, 3, 6))
        assert isinstance(as_source((X, layer(X))), ArraySource)

    def test_rejects_other_things(self):
        with pytest.raises(TypeError, match="LayerOracle, an ArraySource or a pair"):
            as_source([1, 2, 3])


class _NaNOracle(LayerOracle):
    """A user's oracle whose labels go NaN on every 97th example (its batches do not name their source)."""

    def batches(self, sizes):
        for b in super().batches(sizes):
            X, Y = b.examples()
            Y = Y.copy()
            Y[::97] = np.nan
            yield ExampleBatch(b.n, X=X, Y=Y)

    def draw(self, n_samples):
        X, Y = super().draw(n_samples)
        Y = Y.copy()
        Y[::97] = np.nan
        return X, Y


class TestSourceError:
    """Issue 35: a NaN from a user's oracle is named as the oracle's, not reported as a learner failure."""

    def test_learn_names_the_oracle(self):
        from learner import learn, random_layer

        with pytest.raises(SourceError, match=r"example source \(_NaNOracle\) handed out labels that are not finite"):
            learn(_NaNOracle(random_layer(1, 6, rng=0), 2, rng=1), m=1, workers=1, progress=False)

    def test_baseline_names_the_oracle(self):
        from learner import random_layer
        from learner.baselines import fit_gradient

        with pytest.raises(SourceError, match=r"\(_NaNOracle\).*2 of 100 examples.*holds nan"):
            fit_gradient(_NaNOracle(random_layer(1, 6, rng=0), 2, rng=1), m=1, n_train=90, n_val=10, max_iter=2)

    def test_control_finite_labels_pass(self, layer):
        """Control: the same checks let a finite batch through unchanged (and count every bad example)."""
        X = np.ones((4, 3, 6))
        Y = layer(X)
        out = checked_examples(X, Y, "mine")
        assert out[0] is X and out[1] is Y
        Y = Y.copy()
        Y[1, 0, 0] = np.inf
        Y[3, 2, 5] = np.nan
        with pytest.raises(SourceError, match=r"\(mine\) handed out labels .* 2 of 4 examples .* example 1, holds inf"):
            checked_examples(X, Y, "mine")
