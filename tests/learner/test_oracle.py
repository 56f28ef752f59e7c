"""learner.oracle: example sources count what they hand out and validate their input."""

import numpy as np
import pytest

from learner import random_layer
from learner.oracle import ArraySource, ExamplesExhausted, LayerOracle, as_source


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
