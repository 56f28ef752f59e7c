"""The array backend's rules, each against a constructed case: which CUDA devices a build that sees ``count`` of them
accepts, what the one refusal message says for each count, and the helpers' dtype and device on both backends.

A CPU-only machine cannot hold a CUDA device, so the CUDA rules are judged with torch's two availability queries
replaced (``torch.cuda.is_available`` and ``torch.cuda.device_count``): ``torch.device("cuda:1")`` is only a name
and needs no GPU. The expected answers are written from the rule (index 0 to count − 1; a bare ``"cuda"`` is the
current device) rather than read from the code. The ``meta`` device, which every build has and which holds no
data, stands in for a device other than the CPU where a helper must keep its input's device.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the device rules need the torch extra (pip install -e '.[torch]')")

from learner import arrays  # noqa: E402


@pytest.fixture
def cuda_devices(monkeypatch):
    """Make torch report ``count`` CUDA devices (availability true when count > 0), without a GPU."""

    def make(count, available=None):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0 if available is None else available)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)

    return make


class TestCudaDevicesSeen:
    @pytest.mark.parametrize("count", [1, 2, 3])
    def test_every_index_below_the_count_and_the_bare_name_are_accepted(self, cuda_devices, count):
        cuda_devices(count)
        assert arrays.torch_device("cuda") == torch.device("cuda")
        for i in range(count):
            assert arrays.torch_device(f"cuda:{i}") == torch.device("cuda", i)
            assert arrays.torch_device(torch.device("cuda", i)) == torch.device("cuda", i)

    @pytest.mark.parametrize("count", [1, 2, 3])
    def test_the_index_equal_to_the_count_and_beyond_is_refused(self, cuda_devices, count):
        cuda_devices(count)
        for i in (count, count + 1, 7):
            with pytest.raises(ValueError, match=rf"got device='cuda:{i}'"):
                arrays.torch_device(f"cuda:{i}")

    def test_no_cuda_device_refuses_every_cuda_name(self, cuda_devices):
        cuda_devices(0)
        for name in ("cuda", "cuda:0", "cuda:1"):
            with pytest.raises(ValueError, match="sees 0 CUDA devices"):
                arrays.torch_device(name)

    def test_devices_counted_while_cuda_is_unavailable_are_not_used(self, cuda_devices):
        # torch counts devices through NVML, which can see GPUs that CUDA cannot start (a driver too old for the
        # build): availability decides.
        cuda_devices(2, available=False)
        assert arrays._cuda_count(torch) == 0
        with pytest.raises(ValueError, match="sees 0 CUDA devices"):
            arrays.torch_device("cuda:0")

    def test_control_the_count_is_the_one_torch_reports(self, cuda_devices):
        cuda_devices(3)
        assert arrays._cuda_count(torch) == 3


class TestTheRefusalMessage:
    @pytest.mark.parametrize("count, listed, seen", [
        (0, "'cpu' (torch", "0 CUDA devices)"),
        (1, "'cpu', 'cuda' or 'cuda:0' (torch", "1 CUDA device)"),
        (2, "'cpu', 'cuda' or 'cuda:0' to 'cuda:1' (torch", "2 CUDA devices)"),
        (5, "'cpu', 'cuda' or 'cuda:0' to 'cuda:4' (torch", "5 CUDA devices)"),
    ])
    def test_lists_exactly_the_usable_devices(self, cuda_devices, count, listed, seen):
        cuda_devices(count)
        message = arrays._unusable(torch, "gpu7")
        assert f"in float64: {listed} {torch.__version__} sees {seen}; got device='gpu7'." in message


class TestOtherDeviceTypes:
    def test_a_device_type_that_holds_float64_is_accepted(self, monkeypatch):
        # As on a machine whose build has a working XPU: the probe decides, by the device's own name.
        monkeypatch.setattr(arrays, "_holds_float64", lambda name: name.startswith("xpu"))
        assert arrays.torch_device("xpu") == torch.device("xpu")
        assert arrays.torch_device("xpu:1") == torch.device("xpu", 1)

    def test_control_one_that_does_not_is_refused(self, monkeypatch):
        monkeypatch.setattr(arrays, "_holds_float64", lambda name: name.startswith("xpu"))
        with pytest.raises(ValueError, match="got device='hpu'"):
            arrays.torch_device("hpu")


class TestHelpers:
    def test_namespace_of_a_numpy_array_is_numpy_itself(self):
        assert arrays.namespace(np.ones(2)) is np
        assert arrays.namespace(torch.ones(2)) is not np

    def test_to_device_makes_float64_from_integers(self):
        t = arrays.to_device([1, 2, 3], "cpu")
        assert t.dtype == torch.float64 and t.tolist() == [1.0, 2.0, 3.0]

    def test_to_numpy_copies_a_tensor_to_the_host(self):
        class Tensor:  # a tensor on another device: only .to("cpu") brings it where numpy can read it
            def detach(self):
                return self

            def to(self, device):
                return torch.arange(3.0) if device == "cpu" else self

        assert arrays.to_numpy(Tensor()).tolist() == [0.0, 1.0, 2.0]

    @pytest.mark.parametrize("make", [arrays.zeros, arrays.empty])
    def test_numpy_arrays_are_float64_whatever_the_template(self, make):
        assert make((2, 3), like=np.ones(1, dtype=np.float32)).dtype == np.float64
        assert make((2, 3), like=np.ones(1, dtype=np.int64)).dtype == np.float64

    @pytest.mark.parametrize("make", [arrays.zeros, arrays.empty])
    def test_tensors_keep_the_templates_device_and_dtype(self, make):
        like = torch.empty(1, dtype=torch.float64, device="meta")
        made = make((2, 3), like=like)
        assert made.device.type == "meta" and made.dtype == torch.float64 and tuple(made.shape) == (2, 3)

    def test_vector_norm_of_a_tensor_that_records_gradients(self):
        # numpy cannot read such a tensor; the norm must not go through numpy.
        t = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
        assert arrays.vector_norm(t) == 5.0
        assert arrays.vector_norm(np.array([[3.0], [4.0]])) == 5.0

    def test_a_numpy_norm_has_the_bits_of_numpys_own_norm(self):
        # The numpy backend promises the bits of a plain numpy implementation. Summing the squares by BLAS's dot (the
        # norm) and by pairwise addition (the array API's vector_norm) differ in the last bit for some vectors: the
        # control shows these are such vectors, so the test can tell the two calls apart.
        rng = np.random.default_rng(0)
        vectors = [rng.standard_normal(100) for _ in range(20)]
        assert any(float(np.linalg.norm(v)) != float(np.linalg.vector_norm(v)) for v in vectors)  # control
        assert all(arrays.vector_norm(v) == float(np.linalg.norm(v)) for v in vectors)
