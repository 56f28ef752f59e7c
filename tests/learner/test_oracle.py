"""learner.oracle: example sources count what they hand out and validate their input."""

import copy
import itertools
import pickle

import numpy as np
import pytest

from learner import random_layer
from learner.inputs import sample_inputs
from learner.oracle import (
    ArraySource,
    ExampleBatch,
    ExamplesExhausted,
    LayerOracle,
    SourceError,
    as_source,
    batch_sizes,
    checked_examples,
    draw_checked,
    growing_sizes,
    name_source,
    noisy_labels,
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
    """A NaN from a user's oracle is named as the oracle's, not reported as a learner failure."""

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


# ---------------------------------------------------------------------------------------------------------------
# References the tests below compare against: the layer's formula, and the documented seeding of the streams.

#: The documented first element of a streamed batch's spawn key: ASCII "ST".
STREAM_TAG_REF = int.from_bytes(b"ST", "big")

# Labels recomputed from the formula differ from the layer's stacked forward pass by summation order only.
FORMULA_RTOL, FORMULA_ATOL = 1e-12, 1e-12


def _formula(layer, X):
    """``F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i``, the softmax over each row (the key tokens), head by head."""
    out = np.zeros(X.shape)
    for theta, w in zip(layer.thetas, layer.ws, strict=True):
        s = X @ theta @ np.swapaxes(X, -1, -2)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        out += p @ X @ w
    return out


def _replay(generator, n, k, d, distribution, noise):
    """The next ``n`` examples of a stream driven by ``generator``: the inputs, then (if any) the noise."""
    X = sample_inputs(n, k, d, distribution=distribution, rng=generator)
    Y = _formula_layer(X)
    if noise:
        Y = Y + noise * generator.standard_normal(Y.shape)
    return X, Y


_LAYER = random_layer(2, 6, rng=0)


def _formula_layer(X):
    return _formula(_LAYER, X)


def _assert_labels(Y, expected):
    np.testing.assert_allclose(Y, expected, rtol=FORMULA_RTOL, atol=FORMULA_ATOL)


class TestFormulaReference:
    def test_reference_is_the_layer(self):
        """Control for the reference itself: it agrees with the layer on Boolean and Gaussian inputs."""
        for distribution in ("boolean", "gaussian"):
            X = sample_inputs(4, 3, 6, distribution=distribution, rng=9)
            _assert_labels(_LAYER(X), _formula_layer(X))


class TestCheckedExamples:
    def test_message_counts_examples_not_entries(self):
        """1,500 examples; example 3 holds two bad entries (counted once), examples 5..1202 one each: 1,199 bad."""
        X = np.zeros((1500, 2, 2))
        X[3, 0, 1], X[3, 1, 1] = -np.inf, np.nan
        X[5:1203, 1, 0] = np.nan
        Y = np.zeros((1500, 2, 2))
        with pytest.raises(SourceError) as info:
            checked_examples(X, Y, "Mine")
        assert str(info.value) == (
            "the example source (Mine) handed out inputs that are not finite: 1,199 of 1,500 examples of a batch "
            "hold NaN or inf (the first, example 3, holds -inf). The source is at fault, not the learner: check "
            "the oracle's layer or the labels it computes.")

    def test_labels_are_checked_before_inputs(self):
        X = np.zeros((3, 1, 2))
        Y = np.zeros((3, 1, 2))
        X[0, 0, 0] = Y[2, 0, 1] = np.nan
        with pytest.raises(SourceError, match=r"labels that are not finite: 1 of 3 examples .* example 2, holds nan"):
            checked_examples(X, Y, "Mine")

    @pytest.mark.parametrize("origin", [None, ""])
    def test_without_origin_the_source_is_unnamed(self, origin):
        Y = np.array([[[np.inf]]])
        with pytest.raises(SourceError, match=r"^the example source handed out labels .* holds inf\)"):
            checked_examples(np.zeros((1, 1, 1)), Y, origin)

    def test_default_origin_is_unnamed(self):
        with pytest.raises(SourceError, match=r"^the example source handed out inputs"):
            checked_examples(np.full((1, 1, 1), np.nan), np.zeros((1, 1, 1)))


class TestNameSource:
    def test_names_an_unnamed_source_once_at_the_head(self, layer):
        exc = SourceError("the example source handed out labels; the example source is at fault")
        named = name_source(exc, LayerOracle(layer, 3, rng=0))
        assert type(named) is SourceError
        assert str(named) == "the example source (LayerOracle) handed out labels; the example source is at fault"

    @pytest.mark.parametrize("text", ["the example source (Mine) handed out labels",
                                      "a message: the example source handed out labels"])
    def test_leaves_other_messages(self, layer, text):
        named = name_source(SourceError(text), ArraySource(np.ones((1, 2, 6)), np.ones((1, 2, 6))))
        assert type(named) is SourceError and str(named) == text


class _ListSource:
    """A user's source that hands out nested lists; its second example's labels hold a NaN."""

    def draw(self, n_samples):
        X = np.ones((n_samples, 2, 3))
        Y = np.ones((n_samples, 2, 3))
        Y[1, 1, 2] = np.nan
        return X.tolist(), Y.tolist()


class TestDrawChecked:
    def test_checks_and_names_the_class(self):
        with pytest.raises(SourceError, match=r"^the example source \(_ListSource\) handed out labels .* 1 of 4 "
                                              r"examples .* example 1, holds nan"):
            draw_checked(_ListSource(), 4)

    def test_finite_draw_passes_as_arrays(self, layer):
        X, Y = draw_checked(LayerOracle(layer, 3, rng=4), 5)
        assert isinstance(X, np.ndarray) and X.shape == Y.shape == (5, 3, 6)
        _assert_labels(Y, _formula(layer, X))


def _at_most_100(sizes):
    """The first 100 sizes at most (every schedule below has fewer): a schedule that never ends fails, not hangs."""
    return list(itertools.islice(sizes, 100))


class TestSizes:
    @pytest.mark.parametrize(("total", "batch", "sizes"), [
        (10, 4, [4, 4, 2]), (8, 4, [4, 4]), (3, 5, [3]), (0, 4, []), (1, 1, [1])])
    def test_batch_sizes(self, total, batch, sizes):
        assert batch_sizes(total, batch) == sizes

    @pytest.mark.parametrize(("total", "batch", "first", "sizes"), [
        (20, 8, 2, [2, 4, 8, 6]),       # doubles 2 -> 4 -> 8, then the short rest 20 - 14 = 6
        (30, 8, 3, [3, 6, 8, 8, 5]),    # 3 -> 6 -> min(12, 8) = 8: capped at batch
        (5, 8, 2, [2, 3]),              # the total cuts the second batch short
        (10, 4, None, [4, 4, 2]),       # no first: fixed batches
        (10, 4, 4, [4, 4, 2]),          # first == batch: fixed batches
        (10, 4, 9, [4, 4, 2]),          # first > batch: capped at batch
        (0, 4, 1, []),
        (1, 4, 1, [1]),
    ])
    def test_growing_sizes(self, total, batch, first, sizes):
        assert _at_most_100(growing_sizes(total, batch, first)) == sizes

    def test_growing_sizes_default_first_is_fixed(self):
        assert _at_most_100(growing_sizes(9, 4)) == [4, 4, 1]

    def test_growing_sizes_is_lazy(self):
        """A total no list could hold: the first sizes come at once (1, 2, 4, then batch 5 at a time)."""
        assert list(itertools.islice(growing_sizes(10**18, 5, 1), 6)) == [1, 2, 4, 5, 5, 5]


class TestNoisyLabels:
    def test_zero_noise_is_the_labels_and_draws_nothing(self):
        Y = np.arange(6.0).reshape(1, 2, 3)
        rng = np.random.default_rng(3)
        state = rng.bit_generator.state
        assert noisy_labels(Y, 0.0, rng) is Y
        assert rng.bit_generator.state == state

    def test_noise_is_scaled_standard_normal_from_the_generator(self):
        Y = np.arange(24.0).reshape(2, 3, 4)
        out = noisy_labels(Y, 0.25, np.random.default_rng(8))
        # Same draws, same operations: only the final rounding of Y + 0.25·z, which is exact to the last bit.
        np.testing.assert_array_equal(out, Y + 0.25 * np.random.default_rng(8).standard_normal((2, 3, 4)))


class TestExampleBatch:
    def test_default_noise_is_none(self, layer):
        seed = np.random.SeedSequence(12)
        X, Y = ExampleBatch(4, layer=layer, k=3, distribution="boolean", seed=seed).examples()
        X_ref = sample_inputs(4, 3, 6, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(X, X_ref)
        np.testing.assert_array_equal(Y, layer(X_ref))  # exact labels: no noise added, nothing else drawn

    def test_recipe_replays_inputs_then_noise(self):
        seed = np.random.SeedSequence(13)
        X, Y = ExampleBatch(5, layer=_LAYER, k=3, distribution="gaussian", seed=seed, noise=0.5).examples()
        X_ref, Y_ref = _replay(np.random.default_rng(seed), 5, 3, 6, "gaussian", 0.5)
        np.testing.assert_array_equal(X, X_ref)
        _assert_labels(Y, Y_ref)

    def test_arrays_are_served_and_checked(self):
        X, Y = np.ones((2, 1, 2)), np.ones((2, 1, 2))
        out = ExampleBatch(2, X=X.tolist(), Y=Y.tolist(), origin="Mine").examples()
        assert all(isinstance(a, np.ndarray) for a in out)
        np.testing.assert_array_equal(out[0], X)
        Y[1, 0, 0] = np.inf
        with pytest.raises(SourceError, match=r"^the example source \(Mine\) handed out labels .* 1 of 2"):
            ExampleBatch(2, X=X, Y=Y, origin="Mine").examples()

    def test_recipe_names_its_origin(self, layer):
        # Noise 1e308 · N(0, 1) overflows where |z| > 1.8: of 40 x 3 x 6 entries, some are (the seed is fixed).
        with pytest.raises(SourceError, match=r"^the example source \(Mine\) handed out labels"):
            with np.errstate(over="ignore"):
                ExampleBatch(40, layer=layer, k=3, distribution="gaussian", seed=np.random.SeedSequence(0),
                             origin="Mine", noise=1e308).examples()

    def test_a_drawn_batch_profiles_its_three_steps_and_counts_the_forward_pass(self):
        """Per example and head the forward pass forms ``XΘ_i`` (2kd² operations, a multiply-add counting two) and
        its logits against ``Xᵀ`` (2k²d), then ``P_iᵀX`` (2k²d) and the product with ``W_i`` (2kd²): 4kd(d + k)
        in all, times n examples and m heads. With n, m, k, d = 5, 3, 4, 7 (no two alike, none 1) that is
        4·5·3·4·7·11 = 18,480. Fixed arrays are served without any of these sections."""
        from learner.profiling import recording

        layer = random_layer(3, 7, rng=0)
        with recording() as profile:
            ExampleBatch(5, layer=layer, k=4, distribution="gaussian", seed=np.random.SeedSequence(1)).examples()
        assert list(profile) == ["examples: inputs", "examples: labels F(X)", "examples: checks and noise"]
        assert all(entry.calls == 1 for entry in profile.values())
        assert profile["examples: labels F(X)"].flops == 18_480
        assert profile["examples: inputs"].flops == profile["examples: checks and noise"].flops == 0
        with recording() as served:
            ExampleBatch(2, X=np.ones((2, 1, 2)), Y=np.ones((2, 1, 2))).examples()
        assert served == {}

    @pytest.mark.parametrize("how", ["pickle", "copy"])
    def test_survives_pickling(self, layer, how):
        batch = ExampleBatch(3, layer=layer, k=3, distribution="gaussian", seed=np.random.SeedSequence(5),
                             origin="Mine", noise=0.5)
        back = pickle.loads(pickle.dumps(batch)) if how == "pickle" else copy.copy(batch)
        for name in ("n", "k", "distribution", "origin", "noise", "X", "Y"):
            assert getattr(back, name) == getattr(batch, name)
        for a, b in zip(back.examples(), batch.examples(), strict=True):
            np.testing.assert_array_equal(a, b)


class TestLayerOracleStreams:
    def test_defaults_are_boolean_inputs_and_exact_labels(self):
        oracle = LayerOracle(_LAYER, 3, rng=21)
        assert (oracle.layer, oracle.k, oracle.d, oracle.distribution, oracle.noise) == (_LAYER, 3, 6, "boolean", 0.0)
        X, Y = oracle.draw(6)
        X_ref, Y_ref = _replay(np.random.default_rng(np.random.SeedSequence(21)), 6, 3, 6, "boolean", 0.0)
        np.testing.assert_array_equal(X, X_ref)
        _assert_labels(Y, Y_ref)

    @pytest.mark.parametrize("distribution", ["boolean", "gaussian"])
    def test_draw_continues_one_generator_inputs_then_noise(self, distribution):
        oracle = LayerOracle(_LAYER, 2, distribution=distribution, noise=0.3, rng=22)
        assert (oracle.distribution, oracle.noise) == (distribution, 0.3)
        generator = np.random.default_rng(np.random.SeedSequence(22))
        for n in (3, 4):
            X, Y = oracle.draw(n)
            X_ref, Y_ref = _replay(generator, n, 2, 6, distribution, 0.3)
            np.testing.assert_array_equal(X, X_ref)
            _assert_labels(Y, Y_ref)
        assert oracle.n_drawn == 7

    def test_noise_has_the_stated_variance(self):
        """Residuals ``Y - F(X)`` of N = 200·3·6 = 3600 entries, i.i.d. N(0, σ²) if the noise is as stated.

        S = Σ r²/σ² is χ²_N: Laurent–Massart gives P(|S - N| > 2√(Nx) + 2x) <= 2e^{-x}; the mean r̄·√N/σ is
        N(0, 1): P(|·| > √(2x)) <= 2e^{-x}. With x = 20 each check fails with probability below 5e-9.
        """
        sigma, x = 0.5, 20.0
        X, Y = LayerOracle(_LAYER, 3, noise=sigma, rng=23).draw(200)
        r = (Y - _formula(_LAYER, X)).ravel()
        n = r.size
        assert abs(np.sum(r**2) / sigma**2 - n) <= 2 * np.sqrt(n * x) + 2 * x
        assert abs(r.mean()) * np.sqrt(n) / sigma <= np.sqrt(2 * x)

    def test_draw_checks_its_count(self):
        oracle = LayerOracle(_LAYER, 3, rng=0)
        with pytest.raises(TypeError, match=r"`n_samples` must be an integer; got n_samples=2.0"):
            oracle.draw(2.0)
        with pytest.raises(ValueError, match=r"`n_samples` must be at least 1; got n_samples=0"):
            oracle.draw(0)
        X, _ = oracle.draw(np.int64(2))
        assert X.shape == (2, 3, 6) and oracle.n_drawn == 2 and type(oracle.n_drawn) is int

    def test_generator_seed_is_one_draw_from_it(self):
        """A Generator gives the oracle one integer below 2**63 as its entropy (replayed from the same seed)."""
        oracle = LayerOracle(_LAYER, 3, rng=np.random.default_rng(24))
        entropy = int(np.random.default_rng(24).integers(2**63))
        assert oracle.seed_entropy == entropy
        X, _ = oracle.draw(3)
        X_ref, _ = _replay(np.random.default_rng(np.random.SeedSequence(entropy)), 3, 3, 6, "boolean", 0.0)
        np.testing.assert_array_equal(X, X_ref)

    def test_seed_sequence_is_taken_as_is(self):
        """Its entropy, spawn key and pool size all reach the streamed batches' seeds."""
        seq = np.random.SeedSequence(25, spawn_key=(7,), pool_size=8)
        oracle = LayerOracle(_LAYER, 3, rng=seq)
        assert oracle.seed_entropy == 25
        X, _ = oracle.draw(2)
        np.testing.assert_array_equal(X, sample_inputs(2, 3, 6, rng=np.random.default_rng(seq)))
        (batch,) = oracle.batches([2])
        ref = np.random.SeedSequence(25, spawn_key=(7, STREAM_TAG_REF, 0, 0), pool_size=8)
        assert batch.seed.spawn_key == ref.spawn_key and batch.seed.pool_size == 8
        np.testing.assert_array_equal(batch.seed.generate_state(4), ref.generate_state(4))

    @pytest.mark.parametrize(("rng", "error", "match"), [
        (-1, ValueError, r"`rng` must be a non-negative integer seed; got rng=-1"),
        ("seed", TypeError, r"`rng` must be None, a non-negative integer"),
        (1.5, TypeError, r"`rng` must be None, a non-negative integer"),
    ])
    def test_bad_seed_is_named(self, rng, error, match):
        with pytest.raises(error, match=match):
            LayerOracle(_LAYER, 3, rng=rng)

    @pytest.mark.parametrize("noise", [-0.1, float("nan"), float("inf")])
    def test_bad_noise_is_named(self, noise):
        with pytest.raises(ValueError, match=r"`noise`"):
            LayerOracle(_LAYER, 3, noise=noise)

    def test_batches_follow_the_documented_seeds(self):
        """Stream s, batch b: ``SeedSequence(entropy, spawn_key=(STREAM_TAG, s, b))``; inputs, then noise."""
        oracle = LayerOracle(_LAYER, 2, distribution="gaussian", noise=0.2, rng=26)
        for s in range(2):
            batches = list(oracle.batches(iter([np.int64(3), 2])))
            assert [b.n for b in batches] == [3, 2] and all(type(b.n) is int for b in batches)
            for b, batch in enumerate(batches):
                assert (batch.layer, batch.k, batch.distribution, batch.noise) == (_LAYER, 2, "gaussian", 0.2)
                assert batch.origin == "LayerOracle" and batch.X is None
                seed = np.random.SeedSequence(26, spawn_key=(STREAM_TAG_REF, s, b))
                assert batch.seed.entropy == 26 and batch.seed.spawn_key == seed.spawn_key
                X, Y = batch.examples()
                X_ref, Y_ref = _replay(np.random.default_rng(seed), batch.n, 2, 6, "gaussian", 0.2)
                np.testing.assert_array_equal(X, X_ref)
                _assert_labels(Y, Y_ref)
        assert oracle.n_drawn == 0  # formed, not consumed

    def test_subclass_batches_name_the_subclass(self):
        class MyOracle(LayerOracle):
            pass

        (batch,) = MyOracle(_LAYER, 2, rng=0).batches([1])
        assert batch.origin == "MyOracle"

    def test_consume_counts_and_reset_restarts_everything(self):
        oracle = LayerOracle(_LAYER, 3, rng=27)
        first_draw = oracle.draw(3)[0]
        first_seeds = [b.seed.spawn_key for b in oracle.batches([1, 1])]
        second_seeds = [b.seed.spawn_key for b in oracle.batches([1])]
        third_seeds = [b.seed.spawn_key for b in oracle.batches([1])]
        oracle.consume(5)
        oracle.consume(2)
        assert oracle.n_drawn == 3 + 5 + 2
        assert first_seeds == [(STREAM_TAG_REF, 0, 0), (STREAM_TAG_REF, 0, 1)]
        assert second_seeds == [(STREAM_TAG_REF, 1, 0)]
        assert third_seeds == [(STREAM_TAG_REF, 2, 0)]
        oracle.reset()
        assert oracle.n_drawn == 0
        assert [b.seed.spawn_key for b in oracle.batches([1])] == [(STREAM_TAG_REF, 0, 0)]
        np.testing.assert_array_equal(oracle.draw(3)[0], first_draw)


class TestArraySourceContract:
    def _data(self, n=5, distribution="boolean"):
        X = sample_inputs(n, 3, 6, distribution=distribution, rng=30)
        return X, _formula_layer(X)

    def test_attributes_and_non_boolean_inputs(self):
        X, Y = self._data(distribution="gaussian")
        for distribution in (None, "gaussian"):
            src = ArraySource(X, Y, distribution=distribution)
            assert (src.k, src.d, src.distribution, src.remaining, src.n_drawn) == (3, 6, distribution, 5, 0)
        assert ArraySource(*self._data(), distribution="boolean").distribution == "boolean"

    def test_labels_must_be_three_dimensional(self):
        X = np.ones((3, 6))  # one sequence, promoted to a batch of one
        with pytest.raises(ValueError, match=r"`Y` must have 3 dimensions; got shape \(3, 6\)"):
            ArraySource(X, np.ones((3, 6)))
        src = ArraySource(X, np.ones((1, 3, 6)))
        assert src.X.shape == (1, 3, 6) and src.remaining == 1

    def test_labels_must_be_finite(self):
        Y = np.ones((1, 3, 6))
        Y[0, 1, 2] = np.nan
        with pytest.raises(ValueError, match=r"`Y` must be finite"):
            ArraySource(np.ones((1, 3, 6)), Y)

    def test_batches_start_at_the_position_and_fit_exactly(self):
        X, Y = self._data(n=6)
        src = ArraySource(X, Y)
        src.draw(1)
        batches = list(src.batches([np.int64(2), 3]))  # 1 + 2 + 3 = 6: the last one fits exactly
        assert [b.n for b in batches] == [2, 3] and all(type(b.n) is int for b in batches)
        np.testing.assert_array_equal(batches[0].examples()[0], X[1:3])
        np.testing.assert_array_equal(batches[1].examples()[1], Y[3:6])
        assert all(b.origin == "ArraySource" for b in batches)
        assert src.n_drawn == 1  # formed, not handed out
        src.consume(5)
        assert src.remaining == 0

    def test_a_batch_that_does_not_fit_raises_when_formed(self):
        src = ArraySource(*self._data(n=5))
        src.draw(1)
        stream = src.batches([2, 3])
        assert next(stream).n == 2  # 1 + 2 <= 5
        with pytest.raises(ExamplesExhausted, match=r"^asked for 3 examples; only 2 of 5 remain. Pass more examples"):
            next(stream)

    def test_batches_name_their_source(self):
        class MySource(ArraySource):
            pass

        X, Y = self._data(n=2)
        src = MySource(X, Y)
        src.Y[1, 0, 0] = np.nan  # a user's array changed after the source checked it (the source keeps a view)
        (batch,) = src.batches([2])
        with pytest.raises(SourceError, match=r"^the example source \(MySource\) handed out labels .* 1 of 2"):
            batch.examples()

    def test_consume_hands_out_up_to_what_remains(self):
        src = ArraySource(*self._data(n=5))
        src.consume(2)
        with pytest.raises(ExamplesExhausted, match=r"^asked for 4 examples; only 3 of 5 remain.$"):
            src.consume(4)
        assert src.n_drawn == 2
        src.consume(3)
        assert src.remaining == 0
        src.reset()
        assert (src.n_drawn, src.remaining) == (0, 5)

    def test_draw_up_to_what_remains(self):
        X, Y = self._data(n=5)
        src = ArraySource(X, Y)
        Xa, Ya = src.draw(np.int64(2))
        np.testing.assert_array_equal(Ya, Y[:2])
        assert type(src.n_drawn) is int
        with pytest.raises(ExamplesExhausted, match=r"^asked for 4 examples; only 3 of 5 remain. Pass more"):
            src.draw(4)
        with pytest.raises(TypeError, match=r"`n_samples` must be an integer"):
            src.draw(1.0)
        Xb, Yb = src.draw(3)  # exactly what remains
        np.testing.assert_array_equal(Xb, X[2:])
        np.testing.assert_array_equal(Yb, Y[2:])
        src.reset()
        np.testing.assert_array_equal(src.draw(1)[0], X[:1])


class TestAsSourceContract:
    def test_sources_are_returned_as_given(self, layer):
        oracle = LayerOracle(layer, 3, rng=0)
        src = ArraySource(np.ones((1, 3, 6)), np.ones((1, 3, 6)))
        assert as_source(oracle) is oracle and as_source(src) is src

    @pytest.mark.parametrize("bad", [(np.ones((1, 3, 6)),) * 3, [np.ones((1, 3, 6))] * 2, (np.ones((1, 3, 6)),)])
    def test_only_a_pair_tuple(self, bad):
        with pytest.raises(TypeError, match=rf"a pair \(X, Y\); got {type(bad).__name__}\.$"):
            as_source(bad)
