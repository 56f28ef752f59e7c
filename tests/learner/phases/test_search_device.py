"""Phase 6's refinement on torch tensors (``device=``) against the numpy path: the same layer to float64's
accuracy, on the CPU build of torch that CI has (a GPU runs the same code)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install -e '.[torch]')")

from learner import (  # noqa: E402
    LayerOracle,
    LearnConfig,
    arrays,  # noqa: E402
    learn,
    min_norm_point,
    random_layer,
)
from learner.metrics import match_heads  # noqa: E402
from learner.oracle import ArraySource  # noqa: E402
from learner.phases.search import (  # noqa: E402
    _normal_equations,
    _refine_vp,
    _structured_normal_equations,
    _vp_solve,
    refine_layer,
    search_heads,
)
from learner.profiling import recording  # noqa: E402

# Parameters of the same fit on the two backends agree to ~1e-15 (measured 1.0e-15 to 1.3e-15 at (2, 6), (3, 8),
# (5, 16)): the same operations in another library's order. 1e-12 leaves room for the iterations' amplification.
PARITY = 1e-12


def _case(m, d, n, seed, noise=0.0):
    layer = random_layer(m, d, logit_scale=1.0, rng=seed)
    X, Y = LayerOracle(layer, 2, noise=noise, rng=seed + 1).draw(n)
    start = layer.thetas + 0.05 * np.random.default_rng(seed + 2).standard_normal(layer.thetas.shape)
    return layer, X, Y, start


class TestPieces:
    def test_the_projection_and_the_normal_equations_agree(self):
        """One step's pieces on both backends: the W's, the residual, the projector QQᵀ (Q itself is defined up to
        signs), JᵀJ and Jᵀr."""
        _, X, Y, start = _case(3, 6, 40, seed=1)
        ws, r, Q, P = _vp_solve(start, X, Y)
        tX, tY, tT = (arrays.to_device(a, "cpu") for a in (X, Y, start))
        tws, tr, tQ, tP = _vp_solve(tT, tX, tY)
        for a, b in ((ws, tws), (r, tr), (P, tP), (Q @ Q.T, tQ @ tQ.T)):
            np.testing.assert_allclose(arrays.to_numpy(b), a, rtol=0, atol=1e-12)
        A, g = _structured_normal_equations(start, ws, X, P, Q, r)
        tA, tg = _structured_normal_equations(tT, tws, tX, tP, tQ, tr)
        np.testing.assert_allclose(arrays.to_numpy(tA), A, rtol=0, atol=1e-12 * np.abs(A).max())
        np.testing.assert_allclose(arrays.to_numpy(tg), g, rtol=0, atol=1e-12 * np.abs(g).max())

    @pytest.mark.parametrize("c", [1.0, 2.0**-20])
    def test_a_full_rank_design_gives_its_thin_qr_at_any_scale(self, c):
        """Distinct heads on torch: Q is the design's own thin-QR factor (as numpy's LAPACK computes it), not another
        basis of its columns, also with X → cX and Θ → Θ/c² (the same patterns): the full-rank test is relative to
        the design's scale."""
        layer, X, Y, _ = _case(2, 3, 30, seed=1, noise=0.1)
        P = np.exp(np.einsum("nac,icd,nbd->niab", X, layer.thetas, X))
        P /= P.sum(-1, keepdims=True)
        D = np.einsum("nmab,nbc->namc", P, c * X).reshape(60, 6)  # the design, built here from its definition
        tX, tY, tT = (arrays.to_device(a, "cpu") for a in (c * X, Y, layer.thetas / c**2))
        _, _, tQ, _ = _vp_solve(tT, tX, tY)
        np.testing.assert_allclose(arrays.to_numpy(tQ), np.linalg.qr(D)[0], rtol=0, atol=1e-10)

    def test_zero_inputs_have_zero_ws_and_no_directions(self):
        """A design of zeros on torch (every pivot 0, none above 1e-10 of the largest): the min-norm W's are zero, the
        residual is −Y and the residual space has no directions, as on numpy."""
        Y = np.random.default_rng(1).standard_normal((5, 2, 3))
        tT, tX, tY = (arrays.to_device(a, "cpu") for a in (np.ones((2, 3, 3)), np.zeros((5, 2, 3)), Y))
        ws, r, Q, _ = _vp_solve(tT, tX, tY)
        np.testing.assert_array_equal(arrays.to_numpy(ws), np.zeros((2, 3, 3)))
        np.testing.assert_array_equal(arrays.to_numpy(r), -Y.reshape(10, 3))
        assert tuple(Q.shape) == (10, 0)

    @pytest.mark.parametrize("blocks", [1, 4], ids=["whole", "blocks"])
    def test_hull_coordinates_in_blocks_agree(self, blocks):
        """In the hull's coordinates (a basis of 3 directions) the torch path builds the normal equations in
        ``blocks`` blocks of examples as numpy builds them from its whole projected Jacobian."""
        _, X, Y, start = _case(2, 5, 40, seed=5)
        basis = np.linalg.qr(np.random.default_rng(6).standard_normal((25, 3)))[0]
        ws, r, Q, P = _vp_solve(start, X, Y)
        A, g = _normal_equations(start, ws, X, P, Q, r, basis)
        tT, tX, tY, tB = (arrays.to_device(a, "cpu") for a in (start, X, Y, basis))
        tws, tr, tQ, tP = _vp_solve(tT, tX, tY)
        per_example = 8 * 2 * 5 * 2 * 3  # k·d rows of m·r columns
        tA, tg = _normal_equations(tT, tws, tX, tP, tQ, tr, tB, max_bytes=40 // blocks * per_example)
        np.testing.assert_allclose(arrays.to_numpy(tA), A, rtol=0, atol=1e-12 * np.abs(A).max())
        np.testing.assert_allclose(arrays.to_numpy(tg), g, rtol=0, atol=1e-12 * np.abs(g).max())

    def test_helpers_match_numpy(self):
        a = np.array([[4.0, 1.0], [1.0, 3.0]])
        t = arrays.to_device(a, "cpu")
        assert arrays.is_numpy(a) and not arrays.is_numpy(t)
        np.testing.assert_array_equal(arrays.to_numpy(arrays.permute(t, (1, 0))), a.T)
        np.testing.assert_array_equal(arrays.to_numpy(arrays.floor_at(t, 2.0)), np.maximum(a, 2.0))
        v = arrays.to_device([1.0, 2.0], "cpu")
        np.testing.assert_array_equal(arrays.to_numpy(arrays.diag(v)), np.diag([1.0, 2.0]))
        assert arrays.vector_norm(t) == pytest.approx(np.linalg.norm(a), rel=1e-15)
        g = np.array([1.0, 2.0])
        np.testing.assert_allclose(arrays.to_numpy(arrays.cholesky_solve(t, arrays.to_device(g, "cpu"))),
                                   np.linalg.solve(a, g), rtol=1e-14)
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
            arrays.cholesky_solve(-t, arrays.to_device(g, "cpu"))
        assert arrays.to_numpy(a) is a and arrays.empty((2, 3), t).shape == (2, 3)


class TestParity:
    @pytest.mark.parametrize(("m", "d", "n"), [(2, 6, 60), (3, 8, 120)])
    def test_the_refinement_reaches_the_same_layer(self, m, d, n):
        layer, X, Y, start = _case(m, d, n, seed=3)
        z, ws, _, rel = _refine_vp(start, X, Y, max_iter=200)
        tz, tws, _, trel = _refine_vp(start, X, Y, max_iter=200, backend=arrays.backend("cpu"))
        assert isinstance(tz, np.ndarray) and isinstance(tws, np.ndarray)
        np.testing.assert_allclose(tz, z, rtol=0, atol=PARITY)
        np.testing.assert_allclose(tws, ws, rtol=0, atol=PARITY)
        assert rel < 1e-26 and trel < 1e-26

    def test_noisy_labels_reach_the_same_least_squares_fit(self):
        """With label noise the fit is the least-squares one, not the layer: both backends find the same one."""
        _, X, Y, start = _case(2, 6, 80, seed=4, noise=1e-2)
        z, _, _, rel = _refine_vp(start, X, Y, max_iter=200, ftol=1e-12)
        tz, _, _, trel = _refine_vp(start, X, Y, max_iter=200, ftol=1e-12, backend=arrays.backend("cpu"))
        np.testing.assert_allclose(tz, z, rtol=0, atol=1e-9)
        assert trel == pytest.approx(rel, rel=1e-9)

    def test_control_another_start_is_told_apart(self):
        """Control: from a start near another layer the fit differs, and the comparison above would see it."""
        layer, X, Y, start = _case(2, 6, 80, seed=4, noise=1e-2)
        other = start + 0.5 * np.random.default_rng(9).standard_normal(start.shape)
        z, _, _, _ = _refine_vp(start, X, Y, max_iter=3, ftol=1e-12)
        tz, _, _, _ = _refine_vp(other, X, Y, max_iter=3, ftol=1e-12, backend=arrays.backend("cpu"))
        assert np.abs(tz - z).max() > 1e-3

    def test_search_heads_refines_on_the_device(self):
        layer = random_layer(3, 8, logit_scale=1.0, rng=6)
        X, Y = LayerOracle(layer, 2, rng=7).draw(400)
        T = layer.thetas.reshape(3, -1)
        hull = min_norm_point(layer.thetas), np.linalg.qr((T[1:] - T[0]).T)[0]
        config = LearnConfig(n_search=200, search="vp", vp_starts=2)
        a = search_heads(ArraySource(X, Y), *hull, 3, config)
        b = search_heads(ArraySource(X, Y), *hull, 3, config, device="cpu")
        # The search runs on the device too: the same heads, possibly in another order (both fit to ~1e-31).
        assert match_heads(a.warm_start, b.warm_start).max_error < 1e-6
        assert match_heads(a.layer, b.layer).max_error < PARITY
        assert a.search_details["vp_starts"] == b.search_details["vp_starts"] == 2
        assert b.search_details["best_in_sample_residual"] < 1e-26
        assert a.heldout_error < 1e-26 and b.heldout_error < 1e-26

    def test_the_search_starts_run_here_on_the_device(self, monkeypatch):
        """With a device the starts are not sent to the workers (tensors on a GPU do not travel to processes): they
        run in this process, on the device, where the examples were copied once for all of them."""
        from learner.parallel import Workers
        from learner.phases import search as search_module

        layer, X, Y, _ = _case(2, 6, 200, seed=8)
        T = layer.thetas.reshape(2, -1)
        hull = min_norm_point(layer.thetas), np.linalg.qr((T[1:] - T[0]).T)[0]
        seen = []
        real = search_module._vp_start

        def spy(*args):
            seen.append((str(args[1].device), args[1], args[2]))
            return real(*args)

        monkeypatch.setattr(search_module, "_vp_start", spy)
        with Workers(2) as pool:
            search_heads(ArraySource(X, Y), *hull, 2, LearnConfig(n_search=100, search="vp", vp_starts=3),
                         device="cpu", workers=pool)
            assert "6_search" not in pool.stats  # nothing went to the pool
        assert [device for device, _, _ in seen] == ["cpu"] * 3  # tensors on the device
        assert all(x is seen[0][1] and y is seen[0][2] for _, x, y in seen)  # the same copy for every start

    def test_learn_on_the_device(self):
        truth = random_layer(3, 12, logit_scale=1.0, rng=1)
        a = learn(LayerOracle(truth, 2, rng=3), m=3, truth=truth, rng=0, progress=False)
        b = learn(LayerOracle(truth, 2, rng=3), m=3, truth=truth, rng=0, progress=False, device="cpu")
        assert a.success and b.success and a.examples_drawn == b.examples_drawn
        assert match_heads(a.layer, b.layer).max_error < PARITY
        assert b.execution["device"] == "cpu" and "device" not in a.execution


class TestSettingsOnTheDevice:
    """The refinement's settings reach the torch path as they reach numpy's."""

    def test_ftol_ends_at_the_first_small_decrease(self):
        """ftol = 1 stops after the first kept step (no kept step lowers the residual by more than all of it): the
        layer of a run capped at two evaluations, whose first step is kept."""
        _, X, Y, start = _case(2, 6, 80, seed=4, noise=1e-2)
        one_step = refine_layer(start, X, Y, max_iter=2, device="cpu")
        fit = refine_layer(start, X, Y, ftol=1.0, device="cpu")
        unrefined = refine_layer(start, X, Y, max_iter=1, device="cpu")  # the start's residual
        assert one_step.evaluations == fit.evaluations == 2 and fit.residual < unrefined.residual
        np.testing.assert_array_equal(fit.layer.thetas, one_step.layer.thetas)
        assert refine_layer(start, X, Y, device="cpu").evaluations > 2  # control: the default ftol goes on

    @pytest.mark.parametrize(("max_bytes", "blocks"), [(1, 30), (2**30, 1)])
    def test_the_normal_equations_keep_to_max_bytes(self, max_bytes, blocks):
        """Fewer bytes than one example's arrays: the normal equations of the one step a run capped at two
        evaluations takes are built one example at a time, 30 blocks for 30 examples; a GiB holds them all."""
        _, X, Y, start = _case(2, 6, 30, seed=4)
        with recording() as profile:
            refine_layer(start, X, Y, max_iter=2, max_bytes=max_bytes, device="cpu")
        assert profile["refinement: head gradients G and G Gᵀ"].calls == blocks
        assert profile["refinement: Cholesky solve"].calls == 1  # one step, so one build

    def test_refine_layer_computes_on_the_backend_it_is_given(self):
        """A Backend passed as ``device`` is the one the fit runs on: the start and the examples are copied to it
        once (three arrays), and the fit agrees with numpy's."""
        copied = []

        class Recording(arrays.Backend):
            def asarray(self, a):
                copied.append(np.shape(a))
                return super().asarray(a)

        layer, X, Y, start = _case(2, 6, 30, seed=4)
        fit = refine_layer(start, X, Y, max_iter=3, device=Recording("cpu"))
        assert sorted(copied) == sorted([start.shape, X.shape, Y.shape])
        host = refine_layer(start, X, Y, max_iter=3)
        np.testing.assert_allclose(fit.layer.thetas, host.layer.thetas, rtol=0, atol=PARITY)

    def test_conjugate_gradients_are_refused_on_the_device(self):
        """``refine_solver="cg"`` solves on numpy only: search_heads on a device refuses it rather than running
        another solver than the one configured."""
        layer, X, Y, _ = _case(2, 6, 80, seed=4)
        T = layer.thetas.reshape(2, -1)
        hull = min_norm_point(layer.thetas), np.linalg.qr((T[1:] - T[0]).T)[0]
        config = LearnConfig(n_search=40, refine_solver="cg")
        with pytest.raises(ValueError, match="`solver='cg'` runs on numpy only"):
            search_heads(ArraySource(X, Y), *hull, 2, config, device="cpu")
        assert search_heads(ArraySource(X, Y), *hull, 2, config).nfev >= 1  # control: numpy runs it


# The layer's entries on the two backends agree to a few units of 1e-16 relative (measured 6.5e-16 over 20,000
# examples at (8, 24, 2)): the same products and softmax in another library's order. 1e-13 leaves a margin.
LABELS = 1e-13


def _naive(layer, X):
    """F(X) written out head by head with an explicit max-subtracted softmax: a reference independent of both."""
    out = np.zeros(X.shape)
    for theta, w in zip(layer.thetas, layer.ws, strict=True):
        logits = X @ theta @ X.transpose(0, 2, 1)
        weights = np.exp(logits - logits.max(axis=2, keepdims=True))
        out += (weights / weights.sum(axis=2, keepdims=True)) @ X @ w
    return out


class TestLabelsOnTheDevice:
    @pytest.mark.parametrize(("m", "d", "k", "n", "batch", "distribution"), [
        (1, 4, 2, 7, None, "boolean"), (3, 8, 3, 50, 16, "gaussian"), (8, 24, 2, 300, 128, "boolean")])
    def test_the_layer_agrees_with_numpy_and_a_reference(self, m, d, k, n, batch, distribution):
        from learner.inputs import sample_inputs

        layer = random_layer(m, d, logit_scale=1.0, rng=m)
        X = sample_inputs(n, k, d, distribution=distribution, rng=d)
        on = layer(X, batch=batch, device="cpu")
        assert isinstance(on, np.ndarray) and on.shape == X.shape
        scale = np.abs(on).max()
        np.testing.assert_allclose(on, layer(X), rtol=0, atol=LABELS * scale)
        np.testing.assert_allclose(on, _naive(layer, X), rtol=0, atol=LABELS * scale)
        np.testing.assert_allclose(layer(X[3], device="cpu"), layer(X[3]), rtol=0, atol=LABELS * scale)

    def test_control_another_layer_is_told_apart(self):
        layer, other = random_layer(2, 8, logit_scale=1.0, rng=0), random_layer(2, 8, logit_scale=1.0, rng=1)
        X = LayerOracle(layer, 2, rng=2).draw(40)[0]
        assert np.abs(layer(X, device="cpu") - other(X)).max() > 1e3 * LABELS * np.abs(other(X)).max()

    def test_overflow_is_named(self):
        from learner.layer import AttentionLayer

        huge = AttentionLayer(np.full((1, 4, 4), 1e308), np.eye(4)[None])
        with pytest.raises(FloatingPointError, match="attention logits overflowed"):
            huge(np.ones((2, 2, 4)), device="cpu")
        wide = AttentionLayer(np.zeros((1, 4, 4)), np.full((1, 4, 4), 1e308))
        with pytest.raises(FloatingPointError, match="F\\(X\\) overflowed"):
            wide(np.ones((2, 2, 4)), device="cpu")

    @pytest.mark.parametrize("noise", [0.0, 0.1])
    def test_the_oracle_draws_the_same_examples(self, noise):
        import pickle

        layer = random_layer(3, 8, logit_scale=1.0, rng=4)
        a, b = (LayerOracle(layer, 2, noise=noise, rng=5, device=dev) for dev in (None, "cpu"))
        assert b.device == "cpu" and a.device is None
        (Xa, Ya), (Xb, Yb) = a.draw(200), b.draw(200)
        np.testing.assert_array_equal(Xa, Xb)
        np.testing.assert_allclose(Yb, Ya, rtol=0, atol=LABELS * np.abs(Ya).max())
        if noise:  # the noise itself comes from the same numpy stream, after the inputs
            np.testing.assert_allclose(Yb - layer(Xb), Ya - layer(Xa), rtol=0, atol=LABELS * np.abs(Ya).max())
        batch = pickle.loads(pickle.dumps(next(b.batches([64]))))  # a worker's copy keeps the device
        assert batch.device.name == "cpu"
        Xc, Yc = batch.examples()
        Xd, Yd = next(a.batches([64])).examples()
        np.testing.assert_array_equal(Xc, Xd)
        np.testing.assert_allclose(Yc, Yd, rtol=0, atol=LABELS * np.abs(Yd).max())

    def test_learn_lends_its_device_to_the_oracle(self, monkeypatch):
        from learner.layer import AttentionLayer

        seen = []
        real = AttentionLayer._call_on
        monkeypatch.setattr(AttentionLayer, "_call_on", lambda self, X, batch, device: (
            seen.append((len(X), device)), real(self, X, batch, device))[1])
        truth = random_layer(2, 8, logit_scale=1.0, rng=1)
        oracle = LayerOracle(truth, 2, rng=3)
        learn(oracle, m=2, rng=0, progress=False, workers=1)
        assert seen == []  # control: without a device the labels stay on numpy
        result = learn(oracle, m=2, rng=0, progress=False, workers=1, device="cpu")
        assert result.success and seen and {backend.name for _, backend in seen} == {"cpu"}
        assert sum(n for n, _ in seen) >= result.examples_drawn  # every drawn label came from the device
        assert oracle.device is None  # lent for the run only

    def test_a_bad_oracle_device_is_named(self):
        with pytest.raises(ValueError, match="`device` must be a device this torch build can use"):
            LayerOracle(random_layer(2, 8, rng=0), 2, device="gpu7")


class TestRefused:
    @pytest.mark.parametrize(("device", "error", "words"), [
        ("gpu7", ValueError, r"^`device` must be a device this torch build can use.*; got device='gpu7'"),
        (3, TypeError, r"^`device` must be a device this torch build can use.*; got device=3"),
        ("cuda:99", ValueError, r"^`device` must be a device this torch build can use.*; got device='cuda:99'"),
    ])
    def test_before_any_example(self, device, error, words):
        oracle = LayerOracle(random_layer(2, 8, rng=0), 2, rng=1)
        with pytest.raises(error, match=words):
            learn(oracle, m=2, device=device, progress=False)
        assert oracle.n_drawn == 0
        source = ArraySource(*LayerOracle(random_layer(2, 8, rng=0), 2, rng=1).draw(100))
        with pytest.raises(error, match=words):
            search_heads(source, np.zeros((8, 8)), np.zeros((64, 1)), 2, device=device)
        assert source.n_drawn == 0

    def test_the_command_line_names_it(self, capsys):
        from learner.cli import main

        if torch.cuda.is_available():
            pytest.skip("this machine has a CUDA device")
        with pytest.raises(SystemExit) as exc:  # refused while the options are read, before anything runs
            main(["learn", "--m", "2", "--d", "8", "--k", "2", "--device", "cuda"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "argument --device: --device must be a device this torch build can use in float64" in err
        assert "sees 0 CUDA devices)" in err
        assert "got --device 'cuda'" in err and "Traceback" not in err


BACKENDS = [pytest.param(None, id="numpy"), pytest.param("cpu", id="torch-cpu")]

def _row_offset_case(n, seed=0):
    """Tokens whose first coordinate is 1 and ``Θ_i = 1000·v_i e_0ᵀ + G_i`` (unit ``v_i``, ``‖G_i‖_F = 1``): every
    logit of row a is offset by ``1000·x_a·v_i`` (row maxima from about −2900 to +3300), which leaves the patterns
    those of the ``G_i`` alone (spread weights), with the labels from a head-by-head reference."""
    rng = np.random.default_rng(seed)
    m, d, k = 2, 6, 2
    X = rng.standard_normal((n, k, d))
    X[:, :, 0] = 1.0
    v = rng.standard_normal((m, d))
    G = rng.standard_normal((m, d, d))
    thetas = 1000.0 * np.einsum("ic,e->ice", v / np.linalg.norm(v, axis=1, keepdims=True), np.eye(d)[0])
    thetas += G / np.linalg.norm(G, axis=(1, 2), keepdims=True)
    from learner.layer import AttentionLayer

    layer = AttentionLayer(thetas, rng.standard_normal((m, d, d)))
    logits = np.einsum("nac,ice,nbe->niab", X, thetas, X).max(axis=-1)
    assert logits.max() > 800 and logits.min() < -800  # beyond exp's range both ways
    return layer, X, _naive(layer, X), thetas + 0.05 * rng.standard_normal(thetas.shape)


# Float64 logits of size L ≈ 3300 are off by up to ~(2d + 1)·eps·L ≈ 1e-11 (d = 6), and the labels a fit reproduces
# by about as much relative: a relative residual ‖F − Y‖²/‖Y‖² of ~1e-22 at worst (measured 1e-27 to 2e-27 on both
# backends). The start, 0.05 off, is at ~1e-3.
LARGE_FIT = 1e-22


class TestLargeLogits:
    """Phase 6 at logits far beyond exp's range, on both backends, against hand-computed patterns and labels from
    a head-by-head reference."""

    @pytest.mark.parametrize("device", BACKENDS)
    def test_the_projection_has_the_hand_computed_patterns(self, device, large_logit_case):
        """The hand-made heads of the ``large_logit_case`` fixture (logits of ±1000 to ±3000, one-hot rows, ties)."""
        c = large_logit_case
        perms = [np.arange(4), np.arange(4)[::-1], np.array([2, 0, 3, 1])]
        X = np.stack([c.x[p] for p in perms])  # permuting the tokens permutes each pattern's rows and columns
        expected = np.stack([c.patterns[:, p][:, :, p] for p in perms])
        Y = np.einsum("nmab,nbc,mce->nae", expected, X, c.ws)
        args = (c.thetas, X, Y) if device is None else (arrays.to_device(a, device) for a in (c.thetas, X, Y))
        _, residual, _, patterns = _vp_solve(*args)
        np.testing.assert_array_equal(arrays.to_numpy(patterns), expected)
        # The labels lie in the span of the design: the least-squares residual is rounding alone (entries <= 12).
        assert np.abs(arrays.to_numpy(residual)).max() < 1e-12

    @pytest.mark.parametrize("device", BACKENDS)
    def test_the_refinement_fits_row_offsets_of_1000(self, device):
        _, X, Y, start = _row_offset_case(60)
        z, ws, _, rel = _refine_vp(start, X, Y, max_iter=100, backend=arrays.backend(device))
        assert rel < LARGE_FIT
        assert np.isfinite(z).all() and np.isfinite(ws).all()

    @pytest.mark.parametrize("device", BACKENDS)
    def test_the_search_fits_row_offsets_of_1000(self, device):
        layer, X, Y, _ = _row_offset_case(400)
        T = layer.thetas.reshape(layer.m, -1)
        hull = min_norm_point(layer.thetas), np.linalg.qr((T[1:] - T[0]).T)[0]
        found = search_heads(ArraySource(X, Y), *hull, layer.m, LearnConfig(n_search=200, search="vp", vp_starts=2),
                             device=device)
        # The held-out labels come from the reference; the Θ's themselves are not compared: a shift along v_i e_0ᵀ
        # adds a constant to every logit of a row and changes no label.
        assert found.heldout_error < LARGE_FIT

    def test_control_an_unrefined_start_is_told_apart(self):
        """Control: the start itself, with its best W's, is far above the threshold."""
        _, X, Y, start = _row_offset_case(60)
        ws, residual, _, _ = _vp_solve(start, X, Y)
        assert float((residual**2).sum() / (Y**2).sum()) > 1e6 * LARGE_FIT
