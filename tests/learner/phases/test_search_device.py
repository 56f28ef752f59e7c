"""Phase 6's refinement on torch tensors (``device=``) against the numpy path: the same layer to float64's
accuracy, on the CPU build of torch that CI has (a GPU runs the same code)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra is not installed (pip install -e '.[torch]')")

from learner import (  # noqa: E402
    LayerOracle,
    arrays,  # noqa: E402
    learn,
    min_norm_point,
    random_layer,
)
from learner.metrics import match_heads  # noqa: E402
from learner.oracle import ArraySource  # noqa: E402
from learner.phases.search import _refine_vp, _structured_normal_equations, _vp_solve, search_heads  # noqa: E402

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
        tz, tws, _, trel = _refine_vp(start, X, Y, max_iter=200, device="cpu")
        assert isinstance(tz, np.ndarray) and isinstance(tws, np.ndarray)
        np.testing.assert_allclose(tz, z, rtol=0, atol=PARITY)
        np.testing.assert_allclose(tws, ws, rtol=0, atol=PARITY)
        assert rel < 1e-26 and trel < 1e-26

    def test_noisy_labels_reach_the_same_least_squares_fit(self):
        """With label noise the fit is the least-squares one, not the layer: both backends find the same one."""
        _, X, Y, start = _case(2, 6, 80, seed=4, noise=1e-2)
        z, _, _, rel = _refine_vp(start, X, Y, max_iter=200, ftol=1e-12)
        tz, _, _, trel = _refine_vp(start, X, Y, max_iter=200, ftol=1e-12, device="cpu")
        np.testing.assert_allclose(tz, z, rtol=0, atol=1e-9)
        assert trel == pytest.approx(rel, rel=1e-9)

    def test_control_another_start_is_told_apart(self):
        """Control: from a start near another layer the fit differs, and the comparison above would see it."""
        layer, X, Y, start = _case(2, 6, 80, seed=4, noise=1e-2)
        other = start + 0.5 * np.random.default_rng(9).standard_normal(start.shape)
        z, _, _, _ = _refine_vp(start, X, Y, max_iter=3, ftol=1e-12)
        tz, _, _, _ = _refine_vp(other, X, Y, max_iter=3, ftol=1e-12, device="cpu")
        assert np.abs(tz - z).max() > 1e-3

    def test_search_heads_refines_on_the_device(self):
        layer = random_layer(3, 8, logit_scale=1.0, rng=6)
        X, Y = LayerOracle(layer, 2, rng=7).draw(400)
        T = layer.thetas.reshape(3, -1)
        hull = min_norm_point(layer.thetas), np.linalg.qr((T[1:] - T[0]).T)[0]
        a = search_heads(ArraySource(X, Y), *hull, 3, n_search=200, search="vp", vp_starts=2)
        b = search_heads(ArraySource(X, Y), *hull, 3, n_search=200, search="vp", vp_starts=2, device="cpu")
        # The search runs on the device too: the same heads, possibly in another order (both fit to ~1e-31).
        assert match_heads(a.warm_start, b.warm_start).max_error < 1e-6
        assert match_heads(a.layer, b.layer).max_error < PARITY
        assert a.search_details["vp_starts"] == b.search_details["vp_starts"] == 2
        assert b.search_details["best_in_sample_residual"] < 1e-26
        assert a.heldout_error < 1e-26 and b.heldout_error < 1e-26

    def test_the_search_starts_run_here_on_the_device(self, monkeypatch):
        """With a device the starts are not sent to the workers (tensors on a GPU do not travel to processes): they
        run in this process, each on the device."""
        from learner.parallel import Workers
        from learner.phases import search as search_module

        layer, X, Y, _ = _case(2, 6, 200, seed=8)
        T = layer.thetas.reshape(2, -1)
        hull = min_norm_point(layer.thetas), np.linalg.qr((T[1:] - T[0]).T)[0]
        seen = []
        real = search_module._vp_start

        def spy(*args):
            seen.append((args[-1], type(args[1]).__name__))
            return real(*args)

        monkeypatch.setattr(search_module, "_vp_start", spy)
        with Workers(2) as pool:
            search_heads(ArraySource(X, Y), *hull, 2, n_search=100, search="vp", vp_starts=3, device="cpu",
                         workers=pool)
            assert "6_search" not in pool.stats  # nothing went to the pool
        assert seen == [("cpu", "ndarray")] * 3  # moved to the device inside the start

    def test_learn_on_the_device(self):
        truth = random_layer(3, 12, logit_scale=1.0, rng=1)
        a = learn(LayerOracle(truth, 2, rng=3), m=3, truth=truth, rng=0, progress=False)
        b = learn(LayerOracle(truth, 2, rng=3), m=3, truth=truth, rng=0, progress=False, device="cpu")
        assert a.success and b.success and a.examples_drawn == b.examples_drawn
        assert match_heads(a.layer, b.layer).max_error < PARITY
        assert b.execution["device"] == "cpu" and "device" not in a.execution


class TestRefused:
    @pytest.mark.parametrize(("device", "error", "words"), [
        ("gpu7", ValueError, "`device` must be a device name torch knows"),
        (3, TypeError, "`device` must be a device name such as 'cpu' or 'cuda'; got device=3"),
        ("cuda:99", ValueError, "`device` asks for cuda:99 but torch sees"),
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
        assert "argument --device: --device asks for cuda but torch sees 0 CUDA device(s)" in err
        assert "got --device 'cuda'" in err and "Traceback" not in err
