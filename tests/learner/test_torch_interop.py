"""learner.torch_interop: nn.MultiheadAttention to the paper's layer and back."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install -e '.[torch]')")

from learner import (  # noqa: E402
    AttentionLayer,
    TorchConversionError,
    from_torch,
    load_torch_layer,
    random_layer,
    to_torch,
    to_torch_mha,
)
from learner.torch_interop import AttentionModule, _from_state  # noqa: E402

# float64 throughout: the conversion is a product of two weight blocks and a 1/√d_h, and the two forward passes
# sum in different orders, so they agree to a few ulps of the output scale (~1e-15); 1e-12 leaves room for k·d terms.
RTOL = 1e-12


def _mha(E, h, *, batch_first=False, seed=0, scale=1.0, **kwargs):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(E, h, bias=False, batch_first=batch_first, dtype=torch.float64, **kwargs)
    with torch.no_grad():
        for p in mha.parameters():
            p.mul_(scale)  # larger weights: attention far from uniform, so a wrong pattern shows
    return mha.eval()


def _inputs(n, k, E, seed=1):
    return np.random.default_rng(seed).normal(size=(n, k, E))


def _torch_out(mha, X, *, weights=False):
    x = torch.from_numpy(X)
    if not mha.batch_first:
        x = x.transpose(0, 1)  # (k, n, E)
    with torch.no_grad():
        out, w = mha(x, x, x, need_weights=weights, average_attn_weights=False)
    if not mha.batch_first:
        out = out.transpose(0, 1)
    return out.numpy(), (None if w is None else w.numpy())


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


CASES = [(4, 1, False), (8, 2, True), (8, 4, False), (12, 3, True), (16, 4, False), (16, 8, True)]


class TestFromTorch:
    @pytest.mark.parametrize(("E", "h", "batch_first"), CASES, ids=[f"E{e}-h{h}-bf{int(b)}" for e, h, b in CASES])
    def test_forward_and_patterns_equal_torch(self, E, h, batch_first):
        mha = _mha(E, h, batch_first=batch_first, seed=E + h, scale=3.0)
        layer = from_torch(mha)
        assert (layer.m, layer.d) == (h, E)
        X = _inputs(7, 5, E)
        out, _ = _torch_out(mha, X)
        assert _rel(layer(X), out) < RTOL
        _, weights = _torch_out(mha, X, weights=True)
        np.testing.assert_allclose(layer.attention(X), weights, rtol=0, atol=1e-13)  # weights in [0, 1]
        # the patterns are far from uniform, so the comparison above could see a wrong one
        assert np.abs(weights - 1 / 5).max() > 0.1

    def test_negative_control_a_wrong_conversion_fails(self):
        """Θ_i without the 1/√d_h, or with query and key swapped, is measurably another function."""
        mha = _mha(8, 2, seed=3, scale=3.0)
        X = _inputs(7, 5, 8)
        out, _ = _torch_out(mha, X)
        layer = from_torch(mha)
        unscaled = AttentionLayer(layer.thetas * np.sqrt(4), layer.ws)
        swapped = AttentionLayer(layer.thetas.transpose(0, 2, 1), layer.ws)
        assert _rel(layer(X), out) < RTOL
        assert _rel(unscaled(X), out) > 1e-3
        assert _rel(swapped(X), out) > 1e-3

    def test_state_dict_equals_module(self):
        mha = _mha(12, 3, seed=5)
        a, b = from_torch(mha), from_torch(mha.state_dict(), num_heads=3)
        np.testing.assert_array_equal(a.thetas, b.thetas)
        np.testing.assert_array_equal(a.ws, b.ws)

    def test_float32_layer_converts_in_float64(self):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(8, 2, bias=False).eval()
        layer = from_torch(mha)
        X = _inputs(4, 3, 8)
        with torch.no_grad():
            x = torch.from_numpy(X).float().transpose(0, 1)
            out = mha(x, x, x, need_weights=False)[0].transpose(0, 1).double().numpy()
        assert _rel(layer(X), out) < 1e-5  # torch computes in float32 here: ~1e-7 relative per operation

    def test_heads_have_rank_at_most_d_over_m(self):
        layer = from_torch(_mha(12, 3, seed=2))
        for mat in list(layer.thetas) + list(layer.ws):
            assert np.linalg.matrix_rank(mat) <= 4


def _kv(**kw):
    return dict(kdim=4, vdim=4) | kw


REFUSALS = [
    ("bias", lambda: torch.nn.MultiheadAttention(8, 2, bias=True), {}, "biases"),
    ("add_bias_kv", lambda: torch.nn.MultiheadAttention(8, 2, bias=False, add_bias_kv=True), {}, "add_bias_kv"),
    ("add_zero_attn", lambda: torch.nn.MultiheadAttention(8, 2, bias=False, add_zero_attn=True), {}, "add_zero_attn"),
    ("kdim_vdim", lambda: torch.nn.MultiheadAttention(8, 2, bias=False, kdim=4, vdim=4), {}, "separate key/value"),
    ("vdim_only", lambda: torch.nn.MultiheadAttention(8, 2, bias=False, vdim=6), {}, "separate key/value"),
    ("attn_mask", lambda: torch.nn.MultiheadAttention(8, 2, bias=False), {"attn_mask": torch.zeros(3, 3)},
     "attention masks"),
    ("key_padding_mask", lambda: torch.nn.MultiheadAttention(8, 2, bias=False),
     {"key_padding_mask": torch.zeros(1, 3, dtype=torch.bool)}, "attention masks"),
    ("is_causal", lambda: torch.nn.MultiheadAttention(8, 2, bias=False), {"is_causal": True}, "attention masks"),
    ("bias_state_dict", lambda: torch.nn.MultiheadAttention(8, 2, bias=True).state_dict(), {"num_heads": 2},
     "biases"),
    ("state_dict_extra_key", lambda: {"in_proj_weight": torch.zeros(24, 8), "out_proj.weight": torch.zeros(8, 8),
                                      "scale": torch.ones(1)}, {"num_heads": 2}, "unexpected \\['scale'\\]"),
    ("state_dict_missing_key", lambda: {"in_proj_weight": torch.zeros(24, 8)}, {"num_heads": 2},
     "missing \\['out_proj.weight'\\]"),
    ("state_dict_shapes", lambda: {"in_proj_weight": torch.zeros(16, 8), "out_proj.weight": torch.zeros(8, 8)},
     {"num_heads": 2}, "shape \\(3E, E\\)"),
    ("state_dict_integer", lambda: {"in_proj_weight": torch.zeros(24, 8, dtype=torch.int64),
                                    "out_proj.weight": torch.zeros(8, 8)}, {"num_heads": 2}, "real floating-point"),
    ("state_dict_nan", lambda: {"in_proj_weight": torch.full((24, 8), float("nan")),
                                "out_proj.weight": torch.zeros(8, 8)}, {"num_heads": 2}, "finite"),
]


class TestRefusals:
    @pytest.mark.parametrize(("make", "kwargs", "match"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
    def test_refused_with_named_reason(self, make, kwargs, match):
        with pytest.raises(TorchConversionError, match=match):
            from_torch(make(), **kwargs)

    BAD_ARGS = [
        ("not_a_layer", lambda: torch.nn.Linear(8, 8), {}, TypeError, "must be an nn.MultiheadAttention"),
        ("state_dict_without_heads", lambda: _mha(8, 2).state_dict(), {}, ValueError, "num_heads. is needed"),
        ("heads_not_divisor", lambda: _mha(8, 2).state_dict(), {"num_heads": 3}, ValueError, "divisor of embed_dim=8"),
        ("heads_zero", lambda: _mha(8, 2).state_dict(), {"num_heads": 0}, ValueError, "divisor"),
        ("heads_float", lambda: _mha(8, 2).state_dict(), {"num_heads": 2.0}, TypeError, "must be an integer"),
        ("heads_mismatch", lambda: _mha(8, 2), {"num_heads": 4}, ValueError, "match the module's 2 heads"),
    ]

    @pytest.mark.parametrize(("make", "kwargs", "exc", "match"), [r[1:] for r in BAD_ARGS],
                             ids=[r[0] for r in BAD_ARGS])
    def test_bad_arguments(self, make, kwargs, exc, match):
        with pytest.raises(exc, match=match):
            from_torch(make(), **kwargs)

    def test_the_good_state_dict_of_the_table_converts(self):
        """Control for the table: the same construction without the defect converts."""
        layer = _from_state({"in_proj_weight": torch.ones(24, 8), "out_proj.weight": torch.ones(8, 8)}, 2)
        assert (layer.m, layer.d) == (2, 8)


class TestToTorch:
    @pytest.mark.parametrize("m,d", [(1, 4), (3, 6)])
    def test_round_trip_is_exact(self, m, d):
        layer = random_layer(m, d, logit_scale=3.0, rng=m)
        module = to_torch(layer)
        assert isinstance(module, AttentionModule)
        back = from_torch(module)
        np.testing.assert_array_equal(back.thetas, layer.thetas)
        np.testing.assert_array_equal(back.ws, layer.ws)
        X = _inputs(6, 3, d)
        with torch.no_grad():
            out = module(torch.from_numpy(X)).numpy()
            patterns = module.attention(torch.from_numpy(X)).numpy()
        assert _rel(out, layer(X)) < RTOL
        np.testing.assert_allclose(patterns, layer.attention(X), rtol=0, atol=1e-14)
        with torch.no_grad():
            one = module(torch.from_numpy(X[0])).numpy()
        assert _rel(one, layer(X[0])) < RTOL

    def test_float32(self):
        layer = random_layer(2, 4, rng=0)
        module = to_torch(layer, dtype="float32")
        assert module.thetas.dtype == torch.float32
        X = _inputs(3, 2, 4)
        with torch.no_grad():
            out = module(torch.from_numpy(X).float()).double().numpy()
        assert _rel(out, layer(X)) < 1e-5  # float32 rounding

    def test_gradients_are_those_of_f(self):
        """Autograd's gradients of ``L = Σ G ⊙ F(X)`` (G fixed, random) against references from the numpy layer:
        ``∂L/∂W_i = Σ_n (P_i X)ᵀ G`` exactly (F is linear in W), ``∂L/∂Θ`` by central differences."""
        layer = random_layer(2, 4, logit_scale=3.0, rng=0)
        X = _inputs(3, 2, 4)
        G = np.random.default_rng(7).normal(size=X.shape)
        module = to_torch(layer)
        (module(torch.from_numpy(X)) * torch.from_numpy(G)).sum().backward()

        P = layer.attention(X)  # (n, m, a, b)
        grad_w = np.einsum("niab,nbc,nae->ice", P, X, G)
        # Both sides sum a few dozen float64 products in different orders: ~1e-15 of the gradient's scale.
        np.testing.assert_allclose(module.ws.grad.numpy(), grad_w, rtol=0, atol=1e-12 * np.abs(grad_w).max())

        def loss(thetas):
            return float(np.sum(G * AttentionLayer(thetas, layer.ws)(X)))

        h = 1e-5
        grad_theta = np.zeros_like(layer.thetas)
        for idx in np.ndindex(layer.thetas.shape):
            step = np.zeros_like(layer.thetas)
            step[idx] = h
            grad_theta[idx] = (loss(layer.thetas + step) - loss(layer.thetas - step)) / (2 * h)
        # Central differences at h = 1e-5: truncation ~h² and rounding ~1e-16/h of the scale, ~1e-10 together
        # (measured 6e-11); 1e-7 of the gradient's scale is far above that and far below any wrong gradient.
        np.testing.assert_allclose(module.thetas.grad.numpy(), grad_theta, rtol=0,
                                   atol=1e-7 * np.abs(grad_theta).max())
        assert np.abs(grad_theta).max() > 0.1  # the patterns are not saturated: Θ's gradient is not trivially zero

    @pytest.mark.parametrize(("args", "kwargs", "exc", "match"), [
        ((np.zeros((2, 4, 4)),), {}, TypeError, "must be an AttentionLayer"),
        ((random_layer(1, 4, rng=0),), {"dtype": "float16"}, ValueError, "dtype. must be one of"),
    ], ids=["not_a_layer", "dtype"])
    def test_bad_arguments(self, args, kwargs, exc, match):
        with pytest.raises(exc, match=match):
            to_torch(*args, **kwargs)


class TestToTorchMha:
    @pytest.mark.parametrize(("E", "h", "batch_first"), CASES[1:4], ids=[f"E{e}-h{h}" for e, h, _ in CASES[1:4]])
    def test_factorisation_is_exact(self, E, h, batch_first):
        layer = from_torch(_mha(E, h, seed=11, scale=3.0))
        mha = to_torch_mha(layer, batch_first=batch_first)
        assert mha.batch_first == batch_first and mha.in_proj_bias is None
        X = _inputs(5, 4, E)
        out, _ = _torch_out(mha, X)
        assert _rel(out, layer(X)) < RTOL
        back = from_torch(mha)
        assert _rel(back.thetas, layer.thetas) < RTOL and _rel(back.ws, layer.ws) < RTOL

    def test_full_rank_layer_is_refused_with_its_ranks(self):
        with pytest.raises(TorchConversionError, match=r"rank at most d/m = 4.*Θ: \[8, 8\], W: \[8, 8\]"):
            to_torch_mha(random_layer(2, 8, rng=0))

    def test_low_rank_layer_is_accepted(self):
        """Control: the same layer cut to rank d/m by its SVD converts."""
        layer = random_layer(2, 8, rng=0)

        def cut(mat):
            u, s, vt = np.linalg.svd(mat)
            return (u[:, :4] * s[:4]) @ vt[:4]

        low = AttentionLayer(np.array([cut(t) for t in layer.thetas]), np.array([cut(w) for w in layer.ws]))
        X = _inputs(5, 3, 8)
        assert _rel(_torch_out(to_torch_mha(low), X)[0], low(X)) < 1e-10

    def test_heads_must_divide_d(self):
        with pytest.raises(TorchConversionError, match="num_heads to divide embed_dim; got m=3, d=8"):
            to_torch_mha(random_layer(3, 8, rng=0))


class TestLoadTorchLayer:
    def test_saved_state_dict(self, tmp_path):
        mha = _mha(8, 2, seed=4)
        path = tmp_path / "mha.pt"
        torch.save(mha.state_dict(), path)
        layer = load_torch_layer(str(path), num_heads=2)
        np.testing.assert_array_equal(layer.thetas, from_torch(mha).thetas)

    def test_pickled_module_is_refused(self, tmp_path):
        path = tmp_path / "whole.pt"
        torch.save(_mha(8, 2), path)  # a pickled module: weights_only=True will not run its pickle
        with pytest.raises(TorchConversionError, match="weights_only=True.*save the layer's state dict"):
            load_torch_layer(str(path), num_heads=2)

    def test_missing_file(self, tmp_path):
        with pytest.raises(FileNotFoundError, match="torch layer file not found"):
            load_torch_layer(str(tmp_path / "nope.pt"), num_heads=2)

    def test_not_a_mapping(self, tmp_path):
        path = tmp_path / "tensor.pt"
        torch.save(torch.zeros(3), path)
        with pytest.raises(TorchConversionError, match="holds a Tensor, not a state dict"):
            load_torch_layer(str(path), num_heads=2)


class TestLearnCommand:
    """``python -m learner learn --torch-layer FILE``."""

    @pytest.fixture
    def saved(self, tmp_path):
        path = tmp_path / "mha.pt"
        torch.save(_mha(6, 1, seed=7, scale=3.0).state_dict(), path)
        return path

    def test_learns_the_saved_layer(self, saved, tmp_path, capsys):
        from learner.cli import main

        record = tmp_path / "run.json"
        code = main(["learn", "--torch-layer", str(saved), "--m", "1", "--k", "2", "--workers", "1", "--no-progress",
                     "--json", str(record)])
        out = capsys.readouterr().out
        assert f"Learning the torch layer {saved} (1 head of embed_dim 6: head dim 6; ranks of Θ_i" in out
        assert "): m=1, d=6, k=2" in out
        rec = json.loads(record.read_text(encoding="utf-8"))
        assert rec["parameters"]["d"] == 6 and rec["parameters"]["torch_layer"] == str(saved)
        # (1, 6, 2) is too small a cube for phase 5 (measured: it stops there, 1568 constraints of rank 15 < 36),
        # but phases 1-4 ran on examples labelled by the converted torch layer; the exit status follows the result
        assert code == (0 if rec["result"]["success"] else 1)
        assert rec["result"]["diagnostics"]["1_crude_sum"]["examples"] > 0

    @pytest.mark.parametrize(("extra", "match"), [
        (["--d", "8"], "fixes the layer; --d 8 would be ignored"),
        (["--logit-scale", "2"], "--logit-scale 2.0 would be ignored"),
        ([], "is a bare state dict, which does not record its head count: give --m"),
    ], ids=["d", "logit-scale", "no-m"])
    def test_named_errors(self, saved, extra, match, capsys):
        from learner.cli import main

        argv = ["learn", "--torch-layer", str(saved), "--k", "2"] + extra + ([] if extra == [] else ["--m", "1"])
        assert main(argv) == 2
        assert match in capsys.readouterr().err

    def test_wrong_heads_and_pickled_module(self, saved, tmp_path, capsys):
        from learner.cli import main

        assert main(["learn", "--torch-layer", str(saved), "--m", "4", "--k", "2"]) == 2
        assert "--m must be a positive divisor of embed_dim=6; got --m 4" in capsys.readouterr().err
        whole = tmp_path / "whole.pt"
        torch.save(_mha(6, 1), whole)
        assert main(["learn", "--torch-layer", str(whole), "--m", "1", "--k", "2"]) == 2
        assert "torch.save(mha.state_dict(), path)" in capsys.readouterr().err


class TestConversionsThatWouldMislead:
    """Conversions that would give another function, or crash, are refused or say what they imply: a wrong
    head count, ``add_zero_attn``, a forward that differs, the meta device, ``rank_rtol`` of 1 or more."""

    def test_bare_state_dict_with_a_wrong_head_count_differs_and_says_what_it_implies(self):
        """A 4-head state dict read as 2 heads converts (nothing in it can tell), but the layer is another
        function (measured 7 % relative on these inputs); describe_heads shows the head dim and ranks."""
        from learner.torch_interop import describe_heads

        mha = _mha(16, 4, scale=2.0)
        right, wrong = from_torch(mha.state_dict(), num_heads=4), from_torch(mha.state_dict(), num_heads=2)
        X = _inputs(200, 3, 16)
        assert _rel(wrong(X), _torch_out(mha, X)[0]) > 0.01 > RTOL > _rel(right(X), _torch_out(mha, X)[0])
        assert describe_heads(wrong).startswith("2 heads of embed_dim 16: head dim 8; ranks of Θ_i [8, 8]")
        assert describe_heads(right).startswith("4 heads of embed_dim 16: head dim 4; ranks of Θ_i [4, 4, 4, 4]")

    def test_saved_file_records_the_head_count_and_refuses_another(self, tmp_path):
        from learner.torch_interop import save_torch_layer

        mha = _mha(16, 4, scale=2.0)
        path = save_torch_layer(mha, tmp_path / "mha.pt")
        layer = load_torch_layer(path)  # no num_heads needed
        X = _inputs(50, 3, 16)
        assert layer.m == 4 and _rel(layer(X), _torch_out(mha, X)[0]) < RTOL
        assert load_torch_layer(path, num_heads=4).m == 4
        with pytest.raises(ValueError, match="`num_heads` must match the 4 heads recorded in"):
            load_torch_layer(path, num_heads=2)

    def test_bare_state_dict_still_needs_the_head_count(self, tmp_path):
        path = tmp_path / "bare.pt"
        torch.save(_mha(16, 4).state_dict(), path)
        with pytest.raises(ValueError, match="a bare state dict does not record its head count"):
            load_torch_layer(path)
        assert load_torch_layer(path, num_heads=4).m == 4  # control: with the count it converts

    def test_add_zero_attn_is_refused_by_save_and_by_a_recorded_file(self, tmp_path):
        from learner.torch_interop import TORCH_FILE_FORMAT, TORCH_FILE_SCHEMA, save_torch_layer

        mha = _mha(16, 4, add_zero_attn=True)
        with pytest.raises(TorchConversionError, match="add_zero_attn=True"):
            save_torch_layer(mha, tmp_path / "z.pt")
        assert not (tmp_path / "z.pt").exists()
        record = {"format": TORCH_FILE_FORMAT, "schema_version": TORCH_FILE_SCHEMA, "num_heads": 4,
                  "add_zero_attn": True, "state_dict": dict(mha.state_dict())}
        torch.save(record, tmp_path / "z.pt")
        with pytest.raises(TorchConversionError, match="add_zero_attn=True"):
            load_torch_layer(tmp_path / "z.pt")

    def test_a_module_whose_forward_differs_is_refused(self):
        """A module is checked against its own output: one whose forward is not nn.MultiheadAttention's fails."""

        class Scaled(torch.nn.MultiheadAttention):
            def forward(self, *args, **kwargs):
                out, w = super().forward(*args, **kwargs)
                return 1.5 * out, w

        torch.manual_seed(0)
        mha = Scaled(16, 4, bias=False, dtype=torch.float64).eval()
        with pytest.raises(TorchConversionError, match=r"from_torch: the module's output and the layer's differ"):
            from_torch(mha)
        assert from_torch(_mha(16, 4)).m == 4  # control: the plain module passes the same check

    def test_the_check_leaves_a_training_module_in_training_mode(self):
        mha = _mha(16, 4).train()
        from_torch(mha)
        assert mha.training

    def test_meta_device_module_gives_a_named_error(self):
        mha = torch.nn.MultiheadAttention(16, 4, bias=False, device="meta")
        with pytest.raises(TorchConversionError, match="meta device"):
            from_torch(mha)
        with pytest.raises(TorchConversionError, match="meta device"):
            from_torch(mha.state_dict(), num_heads=4)

    @pytest.mark.parametrize("rank_rtol", [1.0, 2.0])
    def test_rank_rtol_of_one_or_more_is_refused(self, rank_rtol):
        """rank_rtol=2.0 used to drop every singular value and return an all-zero module."""
        layer = from_torch(_mha(16, 4))
        with pytest.raises(ValueError, match=f"`rank_rtol` must be below 1.*got rank_rtol={rank_rtol}"):
            to_torch_mha(layer, rank_rtol=rank_rtol)
        assert float(to_torch_mha(layer, rank_rtol=0.5).in_proj_weight.detach().abs().max()) > 0  # control
