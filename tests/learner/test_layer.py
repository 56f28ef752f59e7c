"""Tests for learner.layer: the attention layer F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i and softmax."""

import dataclasses
import warnings

import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal

from learner import AttentionLayer, softmax
from learner.layer import DEVICE_WORK_FLOATS, auto_batch, device_batch

# Entry bounds for generated layers and inputs. With |x| <= 2 and |θ| <= 3 every
# logit obeys Σ_{c,e} |x_c θ_ce x_e| <= 25·12 = 300, so the absolute rounding
# error of a logit is at most ~(d+1)·eps·300 ≈ 4e-13; that is also the relative
# error it causes in the attention weights.
THETA_BOUND = 3.0
W_BOUND = 3.0
X_BOUND = 2.0

# Two implementations that sum the same terms in a different order: error ~
# (logit error 4e-13) + (k + m·d)·eps ≈ 5e-13 in the worst case, typically 1e-15.
RTOL_REORDERED = 1e-12
# Same products, no softmax of reordered logits involved: (k + m·d + 2)·eps ≈ 5e-15.
RTOL_LINEAR = 1e-13
# A row of k <= 5 weights: k divisions (eps/2 each) plus k-1 additions, <= 1e-15.
ATOL_ROW_SUM = 1e-14


def _floats(bound):
    return st.floats(min_value=-bound, max_value=bound, allow_nan=False, allow_infinity=False)


@st.composite
def layer_and_inputs(draw, *, zero_thetas=False):
    """A small layer (m <= 3, d <= 5) and a batch X of shape (n, k, d), n <= 4, k <= 5."""
    m = draw(st.integers(1, 3))
    d = draw(st.integers(1, 5))
    k = draw(st.integers(1, 5))
    n = draw(st.integers(1, 4))
    if zero_thetas:
        thetas = np.zeros((m, d, d))
    else:
        thetas = draw(hnp.arrays(np.float64, (m, d, d), elements=_floats(THETA_BOUND)))
    ws = draw(hnp.arrays(np.float64, (m, d, d), elements=_floats(W_BOUND)))
    X = draw(hnp.arrays(np.float64, (n, k, d), elements=_floats(X_BOUND)))
    return AttentionLayer(thetas, ws), X


def reference(thetas, ws, X):
    """Plain loop over examples and heads with scipy's softmax.

    Returns ``(F, P, scale)``: ``F`` of shape (n, k, d), patterns ``P`` of shape
    (n, m, k, k) and, per example, ``scale = Σ_i ‖P_i |X| |W_i|‖_F``. The scale is
    the size of the terms being summed: an upper bound on ``‖F(X)‖_F``, equal to
    it when nothing cancels, and unlike ``‖F(X)‖_F`` still proportional to the
    rounding error when heads or coordinates do cancel.
    """
    X = np.asarray(X, dtype=np.float64)
    n, k, d = X.shape
    m = len(thetas)
    F = np.zeros((n, k, d))
    P = np.zeros((n, m, k, k))
    scale = np.zeros(n)
    for e in range(n):
        x = X[e]
        for i in range(m):
            p = scipy.special.softmax(x @ thetas[i] @ x.T, axis=1)
            P[e, i] = p
            F[e] += p @ x @ ws[i]
            scale[e] += np.linalg.norm(p @ np.abs(x) @ np.abs(ws[i]))
    return F, P, scale


def assert_close_normwise(actual, desired, scale, rtol):
    """``‖actual[e] − desired[e]‖_F <= rtol·scale[e]`` for every example ``e``.

    Normwise rather than entrywise: an entry that is zero up to cancellation has
    no meaningful relative error, but the whole output does.
    """
    assert actual.shape == desired.shape
    err = np.linalg.norm((actual - desired).reshape(len(scale), -1), axis=1)
    ratio = err / np.where(scale > 0, scale, 1.0)
    assert np.all(err <= rtol * scale), f"normwise relative errors {ratio} exceed {rtol}"


class TestSoftmax:
    @given(
        z=hnp.arrays(
            np.float64,
            hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
            elements=_floats(50.0),
        ),
        data=st.data(),
    )
    def test_matches_scipy(self, z, data):
        """softmax(z, axis) equals scipy.special.softmax(z, axis) for any shape and axis."""
        axis = data.draw(st.integers(-z.ndim, z.ndim - 1), label="axis")
        # Same formula, summed in a possibly different order: <= 5 roundings of the
        # denominator (|z| <= 50 keeps every weight a normal float, no subnormal loss).
        assert_allclose(softmax(z, axis=axis), scipy.special.softmax(z, axis=axis), rtol=1e-14, atol=0)

    @given(z=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=5), elements=_floats(1e4)))
    def test_rows_are_distributions(self, z):
        """Every softmax slice is non-negative, finite and sums to one, even with logits ~1e4."""
        p = softmax(z)
        assert np.all(np.isfinite(p)) and np.all(p >= 0)
        assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=ATOL_ROW_SUM)

    @pytest.mark.parametrize(
        ("z", "expected"),
        [
            ([1e4, 1e4, 0.0], [0.5, 0.5, 0.0]),
            ([-1e4, -1e4], [0.5, 0.5]),
            ([-1e4, -2e4], [1.0, 0.0]),
            ([-1e300, 0.0], [0.0, 1.0]),
            ([3.0, 3.0, 3.0, 3.0], [0.25, 0.25, 0.25, 0.25]),
            ([1e300, 1e300], [0.5, 0.5]),
            ([7.0], [1.0]),
        ],
        ids=[
            "huge-tie-and-zero",
            "huge-negative-tie",
            "huge-negative-gap",
            "minus-1e300",
            "four-way-tie",
            "tie-at-1e300",
            "single-logit",
        ],
    )
    def test_extreme_logits_exact(self, z, expected):
        """Huge logits and exact ties give exactly the mathematically correct weights."""
        assert_array_equal(softmax(z), expected)

    def test_axis(self):
        """``axis`` selects the normalised direction; other axes are independent slices."""
        z = np.array([[0.0, 1e4], [0.0, 0.0]])
        assert_array_equal(softmax(z, axis=0), [[0.5, 1.0], [0.5, 0.0]])
        assert_array_equal(softmax(z, axis=1), [[0.0, 1.0], [0.5, 0.5]])

    def test_input_not_modified(self):
        """softmax works on a copy."""
        z = np.array([1.0, 2.0, 3.0])
        softmax(z)
        assert_array_equal(z, [1.0, 2.0, 3.0])

    def test_logits_of_any_finite_size_do_not_warn(self):
        """The docstring's promise 'logits of any finite size give finite correct weights', without warnings."""
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            assert_array_equal(softmax([1e308, -1e308]), [1.0, 0.0])


class TestAttentionLayer:
    def test_properties_and_repr(self):
        """m and d come from the parameter shapes; repr names them."""
        layer = AttentionLayer(np.zeros((2, 3, 3)), np.ones((2, 3, 3)))
        assert (layer.m, layer.d) == (2, 3)
        assert repr(layer) == "AttentionLayer(m=2, d=3)"

    def test_parameters_are_copied_and_read_only(self):
        """The layer is immutable: later changes to the caller's arrays do not reach it."""
        thetas, ws = np.zeros((1, 2, 2)), np.eye(2)[None].copy()
        layer = AttentionLayer(thetas, ws)
        thetas[0, 0, 0] = 5.0
        ws[0, 0, 0] = 5.0
        assert layer.thetas[0, 0, 0] == 0.0 and layer.ws[0, 0, 0] == 1.0
        with pytest.raises(ValueError, match="read-only"):
            layer.thetas[0, 0, 0] = 1.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            layer.ws = ws

    def test_integer_parameters_become_float64(self):
        """Integer parameters are accepted and stored as float64."""
        layer = AttentionLayer(np.zeros((1, 2, 2), dtype=int), np.ones((1, 2, 2), dtype=np.int32))
        assert layer.thetas.dtype == np.float64 and layer.ws.dtype == np.float64


class TestAttentionLayerCall:
    @pytest.mark.parametrize("batch", [1, 2, None], ids=["batch=1", "batch=2", "batch=auto"])
    @given(case=layer_and_inputs())
    def test_matches_reference_loop(self, case, batch):
        """The vectorised F (any chunking of the batch) equals a per-example, per-head loop with scipy softmax.

        Tolerance RTOL_REORDERED = 1e-12 relative to the output's norm (see ``reference`` for the
        scale): both sides compute the same sums in different orders.
        """
        layer, X = case
        F, _, scale = reference(layer.thetas, layer.ws, X)
        out = layer(X, batch=batch)
        assert out.shape == X.shape and out.dtype == np.float64
        assert_close_normwise(out, F, scale, RTOL_REORDERED)

    @given(case=layer_and_inputs())
    def test_single_sequence_keeps_shape(self, case):
        """A 2-D input (k, d) gives a 2-D output equal to F of that sequence."""
        layer, X = case
        F, _, scale = reference(layer.thetas, layer.ws, X[:1])
        out = layer(X[0])
        assert out.shape == X[0].shape
        assert_close_normwise(out[None], F, scale, RTOL_REORDERED)

    @given(case=layer_and_inputs())
    def test_non_contiguous_inputs(self, case):
        """Fortran-ordered and strided views of X give the same F as a C-contiguous copy."""
        layer, X = case
        F, _, scale = reference(layer.thetas, layer.ws, X)
        fortran = np.asfortranarray(X)
        strided = np.repeat(X, 2, axis=0)[::2]  # same values, every other example of a bigger array
        transposed = np.ascontiguousarray(X.transpose(0, 2, 1)).transpose(0, 2, 1)
        for view in (fortran, strided, transposed):
            assert_close_normwise(layer(view, batch=2), F, scale, RTOL_REORDERED)

    @pytest.mark.parametrize("batch", [1, None], ids=["batch=1", "batch=auto"])
    def test_empty_batch(self, batch):
        """A batch of zero sequences gives an empty output of the right shape (and empty patterns)."""
        layer = AttentionLayer(np.ones((2, 3, 3)), np.ones((2, 3, 3)))
        assert layer(np.zeros((0, 4, 3)), batch=batch).shape == (0, 4, 3)
        assert layer.attention(np.zeros((0, 4, 3)), batch=batch).shape == (0, 2, 4, 4)

    @given(case=layer_and_inputs(), data=st.data())
    def test_token_permutation_equivariance(self, case, data):
        """F(ΠX) = Π F(X) for every permutation Π of the k tokens (axis 1 of X)."""
        layer, X = case
        perm = np.array(data.draw(st.permutations(range(X.shape[1])), label="perm"))
        _, _, scale = reference(layer.thetas, layer.ws, X)
        # Permuting tokens only reorders the sums inside softmax and P·X.
        assert_close_normwise(layer(X[:, perm]), layer(X)[:, perm], scale, RTOL_REORDERED)

    @given(case=layer_and_inputs(), data=st.data())
    def test_head_permutation_invariance(self, case, data):
        """Reordering the heads (Θ_i and W_i together) leaves F unchanged."""
        layer, X = case
        perm = np.array(data.draw(st.permutations(range(layer.m)), label="perm"))
        permuted = AttentionLayer(layer.thetas[perm], layer.ws[perm])
        _, _, scale = reference(layer.thetas, layer.ws, X)
        # Only the order of the sum over heads changes.
        assert_close_normwise(permuted(X), layer(X), scale, RTOL_REORDERED)

    @given(case=layer_and_inputs(), a=_floats(2.0), b=_floats(2.0), data=st.data())
    def test_linear_in_ws(self, case, a, b, data):
        """F is linear in the W's: F[Θ, aW1 + bW2](X) = a F[Θ, W1](X) + b F[Θ, W2](X)."""
        layer, X = case
        thetas, w1 = layer.thetas, layer.ws
        w2 = data.draw(hnp.arrays(np.float64, w1.shape, elements=_floats(W_BOUND)), label="w2")
        combined = AttentionLayer(thetas, a * w1 + b * w2)(X)
        separate = a * layer(X) + b * AttentionLayer(thetas, w2)(X)
        _, _, s1 = reference(thetas, w1, X)
        _, _, s2 = reference(thetas, w2, X)
        # The patterns are bitwise identical on both sides (they do not depend on W); what is
        # left is rounding in aW1 + bW2 and in the final products: RTOL_LINEAR.
        assert_close_normwise(combined, separate, abs(a) * s1 + abs(b) * s2, RTOL_LINEAR)

    @given(case=layer_and_inputs(zero_thetas=True))
    def test_zero_thetas_average_tokens(self, case):
        """With every Θ_i = 0 attention is uniform: F(X) = (1/k) J X Σ_i W_i, J the all-ones k×k matrix."""
        layer, X = case
        k = X.shape[1]
        J = np.ones((k, k))
        expected = (J @ X / k) @ layer.ws.sum(axis=0)
        scale = np.linalg.norm((J @ np.abs(X) / k) @ np.abs(layer.ws).sum(axis=0), axis=(1, 2))
        # Sums of <= k + m·d terms in different orders: RTOL_LINEAR.
        assert_close_normwise(layer(X), expected, scale, RTOL_LINEAR)

    @pytest.mark.parametrize("theta", [1e4, 1e300], ids=["theta=1e4", "theta=1e300"])
    def test_huge_tied_logits(self, theta):
        """Θ = c·I with identical tokens: all logits equal and huge, weights exactly 1/2, output exact."""
        layer = AttentionLayer(theta * np.eye(2)[None], np.eye(2)[None])
        X = np.array([[1.0, -1.0], [1.0, -1.0]])
        assert_array_equal(layer.attention(X), [[[0.5, 0.5], [0.5, 0.5]]])
        assert_array_equal(layer(X), X)

    def test_one_hot_with_gap_1e4(self):
        """Logits [1e4, 0] (gap 1e4) give exactly one-hot weights; F(X) then copies the attended token."""
        layer = AttentionLayer(5e3 * np.eye(2)[None], np.eye(2)[None])
        X = np.array([[1.0, 1.0], [1.0, -1.0]])  # x_a·x_a = 2, x_0·x_1 = 0
        assert_array_equal(layer.attention(X), [np.eye(2)])
        assert_array_equal(layer(X), X)

    def test_overflowing_logits_raise(self):
        """Logits that overflow float64 raise FloatingPointError instead of returning NaN."""
        layer = AttentionLayer(np.full((1, 2, 2), 1e300), np.eye(2)[None])
        X = np.full((2, 2), 1e10)  # x Θ = 2e310: overflow
        # Silence numpy's own overflow warnings here; whether they should appear at all
        # is test_overflow_does_not_warn_first.
        with np.errstate(over="ignore", invalid="ignore"):
            with pytest.raises(FloatingPointError, match="attention logits overflowed float64"):
                layer(X)
            with pytest.raises(FloatingPointError, match="attention logits overflowed float64"):
                layer.attention(X)

    def test_overflow_does_not_warn_first(self):
        """The overflow is reported only by the named FloatingPointError, not by numpy warnings first."""
        layer = AttentionLayer(np.full((1, 2, 2), 1e300), np.eye(2)[None])
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            with pytest.raises(FloatingPointError, match="attention logits overflowed float64"):
                layer(np.full((2, 2), 1e10))


class TestAttentionLayerAttention:
    @given(case=layer_and_inputs())
    def test_rows_are_distributions(self, case):
        """Every row of every attention pattern is non-negative and sums to 1."""
        layer, X = case
        P = layer.attention(X)
        n, k, _ = X.shape
        assert P.shape == (n, layer.m, k, k)
        assert np.all(P >= 0)
        assert_allclose(P.sum(axis=-1), 1.0, rtol=0, atol=ATOL_ROW_SUM)

    @pytest.mark.parametrize("batch", [1, 2, None], ids=["batch=1", "batch=2", "batch=auto"])
    @given(case=layer_and_inputs())
    def test_matches_reference_loop(self, case, batch):
        """attention(X)[n, i] = softmax(X_n Θ_i X_nᵀ) row by row, as in the per-example, per-head loop."""
        layer, X = case
        _, P, _ = reference(layer.thetas, layer.ws, X)
        # Weights lie in [0, 1]; their error is the absolute logit error, <= ~4e-13 (see THETA_BOUND).
        assert_allclose(layer.attention(X, batch=batch), P, rtol=0, atol=1e-12)

    @given(case=layer_and_inputs())
    def test_single_sequence_keeps_shape(self, case):
        """A 2-D input (k, d) gives patterns of shape (m, k, k)."""
        layer, X = case
        _, P, _ = reference(layer.thetas, layer.ws, X[:1])
        out = layer.attention(X[0])
        assert out.shape == (layer.m, X.shape[1], X.shape[1])
        assert_allclose(out, P[0], rtol=0, atol=1e-12)  # as in test_matches_reference_loop

    @given(case=layer_and_inputs(zero_thetas=True))
    def test_zero_thetas_exactly_uniform(self, case):
        """With Θ = 0 every weight is exactly 1/k (exp(0) = 1 and k·1 are exact)."""
        layer, X = case
        k = X.shape[1]
        assert_array_equal(layer.attention(X), np.full((X.shape[0], layer.m, k, k), 1.0 / k))


class TestAutoBatch:
    @pytest.mark.parametrize(
        ("k", "d", "m"),
        [(1, 1, 1), (4, 8, 2), (16, 64, 4), (64, 256, 8), (512, 512, 16)],
        ids=["tiny", "small", "medium", "large", "huge"],
    )
    def test_bounded_integer(self, k, d, m):
        """The automatic chunk size is an int between 16 and 512 examples."""
        b = auto_batch(k, d, m)
        assert type(b) is int and 16 <= b <= 512

    def test_extremes(self):
        """Tiny problems get the cap, huge ones the floor."""
        assert auto_batch(1, 1, 1) == 512
        assert auto_batch(512, 512, 16) == 16

    @pytest.mark.parametrize("axis", [0, 1, 2], ids=["k", "d", "m"])
    def test_non_increasing_in_problem_size(self, axis):
        """Bigger sequences, dimensions or head counts never get bigger chunks."""
        sizes = [1, 2, 4, 8, 16, 32, 64, 128]
        batches = [auto_batch(*[s if j == axis else 8 for j in range(3)]) for s in sizes]
        assert batches == sorted(batches, reverse=True)


def test_the_work_arrays_stay_near_their_budget_when_tokens_outnumber_dimensions():
    """k = 64 tokens of d = 2: the chunk must be sized by k·m·max(d, k) (128 examples), not as if k were d (512, four
    times the memory). Peak memory traced, less the input, against WORK_FLOATS floats: about 1.1 measured here, 4.3
    with chunks of 512; the bound of 2 leaves room for numpy's own temporaries."""
    import tracemalloc

    from learner import random_layer
    from learner.layer import WORK_FLOATS

    layer = random_layer(1, 2, rng=0, check=False)
    X = np.random.default_rng(0).standard_normal((1024, 64, 2))
    tracemalloc.start()
    try:
        layer(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (peak - X.nbytes) / (WORK_FLOATS * 8) < 2


class TestDeviceBatch:
    """The device's chunk: 2**25 floats over k·m·max(d, k) per example, at least 16, with no cap (the values are
    worked out here by hand)."""

    @pytest.mark.parametrize(("k", "d", "m", "chunk"), [
        (4, 8, 2, 2**25 // 64),           # k·m·max(d, k) = 4·2·8
        (8, 4, 2, 2**25 // 128),          # k > d: max(d, k) = k = 8
        (3, 10, 5, 2**25 // 150),         # a remainder: 2**25 = 150·223696 + 32
        (1, 1, 1, 2**25),                 # no upper limit, unlike the CPU's chunk
        (512, 512, 16, 16),               # 2**25 // 2**22 = 8, raised to the floor of 16
        (256, 256, 32, 16),               # exactly 16 from the formula too
    ])
    def test_the_formula(self, k, d, m, chunk):
        assert DEVICE_WORK_FLOATS == 2**25
        assert device_batch(k, d, m) == chunk and type(device_batch(k, d, m)) is int


class TestDevicePathArguments:
    """The device path checks its arguments as the numpy path does, and covers every example whatever the chunk."""

    @pytest.fixture
    def layer_and_inputs(self):
        pytest.importorskip("torch", reason="the device path needs the torch extra (pip install -e '.[torch]')")
        from learner import random_layer

        return random_layer(2, 4, rng=0), np.random.default_rng(1).standard_normal((5, 3, 4))

    @pytest.mark.parametrize("batch", [1, 2, 3, 5, 64])
    def test_every_chunk_size_gives_the_numpy_result(self, layer_and_inputs, batch):
        # Inputs of their own per case: an output buffer left unfilled could otherwise hold the equal result of the
        # case before it, freed and handed out again.
        layer, _ = layer_and_inputs
        X = np.random.default_rng(100 + batch).standard_normal((5, 3, 4))
        expected = layer(X)
        assert_allclose(layer(X, batch=batch, device="cpu"), expected, rtol=1e-12, atol=1e-14)

    @pytest.mark.parametrize("batch", [0, -1, 2.5, True])
    def test_a_bad_batch_is_refused_naming_it(self, layer_and_inputs, batch):
        layer, X = layer_and_inputs
        with pytest.raises((ValueError, TypeError), match="`batch`"):
            layer(X, batch=batch, device="cpu")

    def test_inputs_of_another_dimension_are_refused_naming_d(self, layer_and_inputs):
        layer, X = layer_and_inputs
        with pytest.raises(ValueError, match="d = 4|d=4"):
            layer(np.ones((5, 3, 6)), device="cpu")
        with pytest.raises(ValueError, match="d = 4|d=4"):
            layer(np.ones((5, 3, 6)))  # control: the numpy path's message


def test_softmax_names_its_argument_in_errors():
    with pytest.raises(ValueError, match="`z` must be finite; it contains nan"):
        softmax([1.0, float("nan")])


def test_output_overflow_is_a_named_error():
    """W = 1e308: F(X) is not representable in float64, so the forward pass refuses instead of returning inf."""
    from learner import random_layer

    base = random_layer(2, 4, rng=0)
    layer = AttentionLayer(base.thetas, base.ws * 1e308)
    with pytest.raises(FloatingPointError, match="F\\(X\\) overflowed float64"):
        layer(np.ones((3, 2, 4)))


# Large logits on every backend: the numpy forward pass and the one on torch tensors (``device=``), on the
# hand-made heads of the ``large_logit_case`` fixture (tests/conftest.py), whose outputs are exact to the bit.
HEAD_SETS = [pytest.param([0], id="one-hot"), pytest.param([1], id="tie-at-plus-1000"),
             pytest.param([2], id="tie-at-minus-1000"), pytest.param([0, 1, 2], id="three-heads")]
BACKENDS = [pytest.param(None, id="numpy"), pytest.param("cpu", id="torch-cpu")]


def _forward(layer, X, device, batch=None):
    """``layer(X)`` on the numpy path (``device`` None) or on torch tensors on ``device`` (skipped without torch)."""
    if device is not None:
        pytest.importorskip("torch", reason="the torch extra is not installed (pip install -e '.[torch]')")
        pytest.importorskip("array_api_compat", reason="the torch extra is not installed (pip install -e '.[torch]')")
    return layer(X, batch=batch, device=device)


def _mp_forward(thetas, ws, X, digits=60):
    """F(X) with every logit, exponential and sum in mpmath at ``digits`` digits, from the float64 parameters, and
    the size of the terms summed, ``S = Σ_i P_i |X| |W_i|``.

    An independent reference: at 60 digits the products of three float64 numbers are exact and the softmax needs
    no shift (mpmath's exponent range is unbounded).
    """
    import mpmath

    n, k, d = X.shape
    out, size = np.zeros(X.shape), np.zeros(X.shape)
    with mpmath.workdps(digits):
        for e in range(n):
            x = mpmath.matrix(X[e].tolist())
            total, terms = mpmath.zeros(k, d), mpmath.zeros(k, d)
            for theta, w in zip(thetas, ws, strict=True):
                logits = x * mpmath.matrix(theta.tolist()) * x.T
                weights = mpmath.matrix(k, k)
                for a in range(k):
                    exps = [mpmath.exp(logits[a, b]) for b in range(k)]
                    for b in range(k):
                        weights[a, b] = exps[b] / mpmath.fsum(exps)
                total += weights * x * mpmath.matrix(w.tolist())
                terms += weights * mpmath.matrix(np.abs(X[e]).tolist()) * mpmath.matrix(np.abs(w).tolist())
            out[e], size[e] = (np.array(t.tolist(), dtype=np.float64) for t in (total, terms))
    return out, size


class TestLargeLogitsOnEveryBackend:
    @pytest.mark.parametrize("device", BACKENDS)
    @pytest.mark.parametrize("heads", HEAD_SETS)
    def test_hand_computed_outputs_to_the_bit(self, heads, device, large_logit_case):
        """Logits of ±1000 to ±3000, one-hot rows and ties: F(X) = Σ_i P_i X W_i with the hand-made P_i exactly."""
        c = large_logit_case
        layer = AttentionLayer(c.thetas[heads], c.ws[heads])
        expected = sum(c.patterns[i] @ c.x @ c.ws[i] for i in heads)
        assert_array_equal(_forward(layer, c.x, device), expected)
        X = np.stack([c.x, c.x[::-1], c.x])  # a token permutation permutes the output rows alike
        assert_array_equal(_forward(layer, X, device, batch=2), np.stack([expected, expected[::-1], expected]))

    @pytest.mark.parametrize("heads", HEAD_SETS)
    def test_hand_computed_patterns(self, heads, large_logit_case):
        """The patterns themselves (the numpy path's :meth:`AttentionLayer.attention`) are the hand-made ones."""
        c = large_logit_case
        layer = AttentionLayer(c.thetas[heads], c.ws[heads])
        assert_array_equal(layer.attention(c.x), c.patterns[heads])

    @pytest.mark.parametrize("device", BACKENDS)
    @pytest.mark.parametrize("spread", [1000.0, 1.0], ids=["gaps-of-1000", "gaps-of-1"])
    def test_logit_scale_1000_matches_mpmath(self, device, spread):
        """Gaussian tokens whose first coordinate is 1, and Θ_i = 1000·v_i e_0ᵀ + G_i with ‖G_i‖_F = ``spread``:
        each row's logits are offset by 1000·x_a·v_i (both signs, beyond exp's range), and differ by ~1000 (nearly
        one-hot rows) or ~1 (spread weights). Against the 60-digit reference."""
        rng = np.random.default_rng(0)
        m, d, k, n = 2, 4, 3, 6
        X = rng.standard_normal((n, k, d))
        X[:, :, 0] = 1.0
        v = rng.standard_normal((m, d))
        G = rng.standard_normal((m, d, d))
        thetas = 1000.0 * np.einsum("ic,e->ice", v / np.linalg.norm(v, axis=1, keepdims=True), np.eye(d)[0])
        thetas += spread * G / np.linalg.norm(G, axis=(1, 2), keepdims=True)
        ws = rng.standard_normal((m, d, d))
        logits = np.einsum("nac,ice,nbe->niab", X, thetas, X)
        assert logits.max(axis=-1).max() > 800 and logits.max(axis=-1).min() < -800  # beyond exp's range both ways
        # A float64 logit is off by at most (2d + 1)·eps·L, L = max_ab Σ_ce |x_a[c] θ_ce x_b[e]|; a weight then by a
        # relative 2·that plus (k + 2)·eps for the exponential and the normalisation, and each output entry by that
        # times S = Σ_i P_i |X| |W_i| plus (k + m·d)·eps·S for the two products.
        L = np.einsum("nac,ice,nbe->niab", np.abs(X), np.abs(thetas), np.abs(X)).max()
        eps = np.finfo(np.float64).eps
        rtol = 2 * (2 * d + 1) * eps * L + (2 * k + m * d + 2) * eps
        reference, scale = _mp_forward(thetas, ws, X)
        assert np.all(np.abs(_forward(AttentionLayer(thetas, ws), X, device) - reference) <= rtol * scale)
