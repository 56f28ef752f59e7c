"""One array backend per run: :class:`learner.arrays.Backend`, resolved once from a device, and the oracle's view
that computes labels there without changing the oracle.

Each backend method is checked against numpy's own call (the host) and against the host's result (torch's CPU
build); the view is checked against a second oracle of the same seed, which is what "the same stream" means.
"""

import numpy as np
import pytest

from learner import LayerOracle, arrays, learn, random_layer


class TestTheHost:
    def test_numpy_is_the_default_and_passes_through(self):
        assert arrays.backend(None) is arrays.NUMPY and arrays.backend(arrays.NUMPY) is arrays.NUMPY
        assert arrays.NUMPY.on_host and arrays.NUMPY.name is None and arrays.NUMPY.shares_threads
        assert arrays.backend_of(np.ones(2)) is arrays.NUMPY

    def test_methods_are_numpys_own(self):
        rng = np.random.default_rng(0)
        B = rng.standard_normal((5, 5))
        M, g = B @ B.T + 5 * np.eye(5), rng.standard_normal(5)
        np.testing.assert_allclose(arrays.NUMPY.solve_spd(M, g), np.linalg.solve(M, g), rtol=1e-12)
        a = rng.standard_normal((2, 3))
        assert arrays.NUMPY.asarray(a) is a  # float64 already: not copied
        flat = arrays.NUMPY.flat_copy(a)
        flat[0] = 99.0
        assert a[0, 0] != 99.0  # a copy
        np.testing.assert_array_equal(arrays.NUMPY.concat([a, a], axis=1), np.concatenate([a, a], axis=1))
        assert arrays.NUMPY.zeros((2, 3)).shape == (2, 3) and not arrays.NUMPY.zeros((2,)).any()
        with pytest.raises(np.linalg.LinAlgError):
            arrays.NUMPY.solve_spd(-M, g)


class TestADevice:
    def test_methods_agree_with_the_host(self):
        torch = pytest.importorskip("torch", reason="the torch extra is not installed")
        cpu = arrays.backend("cpu")
        assert not cpu.on_host and cpu.name == "cpu" and not cpu.shares_threads
        assert arrays.backend(cpu) is cpu and cpu == arrays.Backend("cpu")
        rng = np.random.default_rng(1)
        B = rng.standard_normal((4, 4))
        M, g = B @ B.T + 4 * np.eye(4), rng.standard_normal(4)
        t = cpu.solve_spd(cpu.asarray(M), cpu.asarray(g))
        assert isinstance(t, torch.Tensor) and t.dtype == torch.float64
        np.testing.assert_allclose(arrays.to_numpy(t), np.linalg.solve(M, g), rtol=1e-12)
        x = cpu.asarray(np.arange(6.0).reshape(2, 3))
        assert cpu.asarray(x) is x  # a tensor there already is not copied
        flat = cpu.flat_copy(x)
        flat[0] = 99.0
        assert float(x[0, 0]) == 0.0
        joined = arrays.to_numpy(cpu.concat([x, x], axis=0))
        np.testing.assert_array_equal(joined, np.arange(6.0).reshape(2, 3)[[0, 1, 0, 1]])
        assert arrays.backend_of(x) == cpu and tuple(cpu.empty((2, 2)).shape) == (2, 2)
        with pytest.raises(np.linalg.LinAlgError):
            cpu.solve_spd(cpu.asarray(-M), cpu.asarray(g))

    def test_learn_resolves_its_device_once(self, monkeypatch):
        pytest.importorskip("torch", reason="the torch extra is not installed")
        calls = []
        real = arrays.torch_device
        monkeypatch.setattr(arrays, "torch_device", lambda device: calls.append(device) or real(device))
        truth = random_layer(2, 8, logit_scale=1.0, rng=1)
        result = learn(LayerOracle(truth, 2, rng=3), m=2, rng=0, progress=False, workers=1, device="cpu")
        assert result.success and result.execution["device"] == "cpu"
        assert calls == ["cpu"]  # the labels of phases 1-4 and phase 6 ask the one backend, not the name again

    def test_control_a_name_is_checked_at_every_use(self, monkeypatch):
        # The count above can tell: a layer called with the name (not the backend) checks it at each call.
        pytest.importorskip("torch", reason="the torch extra is not installed")
        calls = []
        real = arrays.torch_device
        monkeypatch.setattr(arrays, "torch_device", lambda device: calls.append(device) or real(device))
        layer = random_layer(1, 4, rng=0)
        for _ in range(3):
            layer(np.ones((2, 4)), device="cpu")
        assert len(calls) == 3


class TestTheOraclesView:
    def _pair(self):
        truth = random_layer(2, 6, rng=0)
        return LayerOracle(truth, 2, noise=0.1, rng=5), LayerOracle(truth, 2, noise=0.1, rng=5)

    def test_the_view_draws_the_oracles_stream_and_leaves_it_as_it_was(self):
        pytest.importorskip("torch", reason="the torch extra is not installed")
        oracle, twin = self._pair()
        view = oracle.labelled_on("cpu")
        assert isinstance(view, LayerOracle) and view.device == "cpu" and oracle.device is None
        Xv, Yv = view.draw(7)
        Xt, Yt = twin.draw(7)
        np.testing.assert_array_equal(Xv, Xt)
        np.testing.assert_allclose(Yv, Yt, rtol=0, atol=1e-12)  # labels on the device: rounding apart
        assert oracle.n_drawn == 7 and view.n_drawn == 7
        # Streams are numbered by the oracle: the view's first stream is the oracle's stream 0, the oracle's next
        # one is stream 1, as the twin's second.
        (bv,) = view.batches([4])
        view.consume(4)
        (bo,) = oracle.batches([4])
        twin_batches = [next(iter(twin.batches([4]))) for _ in range(2)]
        np.testing.assert_array_equal(bv.examples()[0], twin_batches[0].examples()[0])
        np.testing.assert_array_equal(bo.examples()[0], twin_batches[1].examples()[0])
        assert bv.device.name == "cpu" and bo.device is None and oracle.n_drawn == 11
        assert view._origin == "LayerOracle"  # errors name the oracle, not the view
        view.reset()
        assert oracle.n_drawn == 0

    def test_learn_leaves_the_callers_oracle_as_it_was(self, monkeypatch):
        pytest.importorskip("torch", reason="the torch extra is not installed")
        truth = random_layer(2, 8, logit_scale=1.0, rng=1)
        oracle = LayerOracle(truth, 2, rng=3)
        seen = []
        real = LayerOracle.labelled_on
        monkeypatch.setattr(LayerOracle, "labelled_on", lambda self, device: seen.append(
            (self.device, str(device.device))) or real(self, device))
        result = learn(oracle, m=2, rng=0, progress=False, workers=1, device="cpu")
        assert seen == [(None, "cpu")] and oracle.device is None
        assert result.examples_drawn == oracle.n_drawn  # drawn through the view, counted on the oracle


class TestWhatEachMethodMakes:
    """The constructors' promises, type by type: float64 whatever the input's type, numpy on the host and torch on a
    device, and on the backend's own device. This machine's torch may see no device but the CPU, where a tensor made
    without a device lands anyway; torch's ``meta`` device (shapes and dtypes, no data) stands in for a second
    device, on a backend made around the device check, which refuses ``meta`` for holding no data."""

    def test_the_host_makes_float64_numpy_arrays(self):
        for a in ([1, 2], np.arange(3), np.ones(2, dtype=np.float32)):
            out = arrays.NUMPY.asarray(a)
            assert arrays.is_numpy(out) and out.dtype == np.float64
        for make in (arrays.NUMPY.empty, arrays.NUMPY.zeros):
            out = make((2, 3))
            assert arrays.is_numpy(out) and out.dtype == np.float64 and out.shape == (2, 3)

    def test_the_host_takes_a_tensor_that_tracks_gradients(self):
        torch = pytest.importorskip("torch", reason="the torch extra is not installed")
        out = arrays.NUMPY.asarray(torch.ones(2, dtype=torch.float32, requires_grad=True))  # detached, not refused
        assert arrays.is_numpy(out) and out.dtype == np.float64
        np.testing.assert_array_equal(out, [1.0, 1.0])

    def test_a_device_makes_float64_tensors(self):
        torch = pytest.importorskip("torch", reason="the torch extra is not installed")
        cpu = arrays.backend("cpu")
        for a in ([1, 2], np.arange(3), torch.arange(3), torch.ones(2, dtype=torch.float32)):
            out = cpu.asarray(a)
            assert isinstance(out, torch.Tensor) and out.dtype == torch.float64, type(a)
        for make in (cpu.empty, cpu.zeros):
            out = make((2, 3))
            assert isinstance(out, torch.Tensor) and out.dtype == torch.float64 and tuple(out.shape) == (2, 3)
        assert not cpu.zeros((4,)).any()
        one = cpu.asarray(np.arange(3.0))
        np.testing.assert_array_equal(arrays.to_numpy(cpu.concat([one], axis=0)), np.arange(3.0))  # one part

    def test_a_device_makes_its_arrays_there(self):
        torch = pytest.importorskip("torch", reason="the torch extra is not installed")
        meta = object.__new__(arrays.Backend)
        object.__setattr__(meta, "device", torch.device("meta"))
        made = [meta.asarray(np.ones(2)), meta.asarray(torch.ones(2)), meta.empty((2,)), meta.zeros((2,))]
        assert [t.device.type for t in made] == ["meta"] * 4
        assert all(t.dtype == torch.float64 for t in made)
