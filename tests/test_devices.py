"""Every way to name a torch device, ``device=`` in the API and ``--device`` on the command lines, refuses a device
this torch build cannot use with the same one message, before any example is drawn; ``"cpu"`` works everywhere.

The devices asked for are ones torch knows by name but a CPU build cannot use (``mps``, ``meta``, ``xpu``, ``hpu``,
``xla``, ``vulkan``), CUDA devices it does not see, and names torch does not know. Whether this machine could use one
is judged here from torch's own availability queries, not from the toolkit's check.
"""

import argparse
import importlib
import inspect
import pkgutil
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the device paths need the torch extra (pip install -e '.[torch]')")

from learner import LayerOracle, LearnConfig, arrays, learn, random_layer  # noqa: E402
from learner.baselines import fit_torch  # noqa: E402
from learner.oracle import ArraySource, ExampleBatch, device_name  # noqa: E402
from learner.phases.search import refine_layer, refit, search_heads  # noqa: E402

CUDA = torch.cuda.device_count() if torch.cuda.is_available() else 0
XPU = hasattr(torch, "xpu") and torch.xpu.is_available()

#: (device, whether this machine might use it). MPS is refused even on a Mac that has it: it holds no float64.
DEVICES = [("mps", False), ("meta", False), ("xpu", XPU), ("hpu", False), ("xla", False), ("vulkan", False),
           ("cuda", CUDA > 0), ("cuda:7", CUDA > 7), ("gpu7", False), ("", False), ("cuda:x", False),
           ("CPU", False), ("cpu ", False)]
UNUSABLE = [pytest.param(name, marks=pytest.mark.skipif(usable, reason=f"this machine can use {name!r}"),
                         id=name or "empty") for name, usable in DEVICES]


def expected(device, flag=None):
    """The one message, built from torch's own count of CUDA devices (and, on the command line, naming ``flag``)."""
    cuda = {0: "", 1: ", 'cuda' or 'cuda:0'"}.get(CUDA, f", 'cuda' or 'cuda:0' to 'cuda:{CUDA - 1}'")
    text = (f"`device` must be a device this torch build can use in float64: 'cpu'{cuda} (torch {torch.__version__} "
            f"sees {CUDA} CUDA device{'' if CUDA == 1 else 's'}); got device={device!r}.")
    if flag is None:
        return text
    return text.replace("`device`", flag).replace(f"got device={device!r}.", f"got {flag} {device!r}")


def _layer():
    return random_layer(1, 4, rng=0)


def _oracle(seen, m=1, d=4):
    oracle = LayerOracle(random_layer(m, d, rng=0), 2, rng=1)
    seen.append(oracle)
    return oracle


def _fit_case():
    layer = _layer()
    X, Y = LayerOracle(layer, 2, rng=1).draw(50)
    return layer.thetas, X, Y


def _search(device, seen):
    source = ArraySource(*LayerOracle(_layer(), 2, rng=1).draw(200))
    seen.append(source)
    search_heads(source, np.zeros((4, 4)), np.zeros((16, 1)), 1, LearnConfig(n_search=50), device=device)


#: Every public API that takes ``device``, by its qualified name (TestEveryEntryPointIsListed keeps this complete).
#: Each is called with the device and a list, to which it adds the sources of examples it uses.
API = {
    "learner.arrays.torch_device": lambda device, seen: arrays.torch_device(device),
    "learner.arrays.to_device": lambda device, seen: arrays.to_device(np.ones(2), device),
    "learner.arrays.backend": lambda device, seen: arrays.backend(device),
    "learner.arrays.Backend": lambda device, seen: arrays.Backend(device),
    "learner.oracle.LayerOracle.labelled_on": lambda device, seen: _oracle(seen).labelled_on(device).draw(3),
    "learner.oracle.device_name": lambda device, seen: device_name(device),
    "learner.layer.AttentionLayer.__call__": lambda device, seen: _layer()(np.ones((2, 4)), device=device),
    "learner.oracle.LayerOracle": lambda device, seen: seen.append(LayerOracle(_layer(), 2, device=device)),
    "learner.learn.learn": lambda device, seen: learn(_oracle(seen, 2, 8), m=2, device=device, rng=0,
                                                      progress=False, workers=1),  # (2, 8): learnt in seconds
    "learner.baselines.torch_adam.fit_torch": lambda device, seen: fit_torch(
        _oracle(seen), m=1, device=device, n_train=200, n_val=100, batch=100, epochs=1, restarts=1, threads=1),
    "learner.phases.search.search_heads": _search,
    "learner.phases.search.refit": lambda device, seen: refit(*_fit_case(), device=device),
    "learner.phases.search.refine_layer": lambda device, seen: refine_layer(*_fit_case(), device=device),
    "learner.oracle.ExampleBatch": lambda device, seen: ExampleBatch(
        10, layer=_layer(), k=2, distribution="boolean", seed=np.random.SeedSequence(0), device=device).examples(),
}


def _public_device_takers():
    """Qualified names of every public function, class and public method in the three packages with a parameter
    named ``device``."""
    found = set()
    for package in ("learner", "theory", "lowerbounds"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if any(part.startswith("_") for part in info.name.split(".")) or info.name.endswith(("__main__", "cli")):
                continue
            module = importlib.import_module(info.name)
            for name in getattr(module, "__all__", ()):
                obj = getattr(module, name)
                if getattr(obj, "__module__", None) != module.__name__:
                    continue  # listed where it is defined
                members = [(name, obj)]
                if inspect.isclass(obj):
                    # "__mutmut_" names are mutmut's copies of a method during a mutation run, not an API
                    members = [(name, obj)] + [(f"{name}.{m}", f) for m, f in vars(obj).items()
                                               if inspect.isfunction(f) and (m == "__call__" or not m.startswith("_"))
                                               and "__mutmut_" not in m]
                for qual, f in members:
                    try:
                        params = inspect.signature(f).parameters
                    except (TypeError, ValueError):
                        continue
                    if "device" in params:
                        found.add(f"{module.__name__}.{qual}")
    return found


class TestEveryEntryPointIsListed:
    def test_the_table_holds_every_public_api_with_a_device(self):
        assert _public_device_takers() == set(API)


class TestTheApi:
    @pytest.mark.parametrize("device", UNUSABLE)
    @pytest.mark.parametrize("entry", sorted(API))
    def test_refused_with_the_one_message_before_any_example(self, entry, device):
        seen = []
        with pytest.raises(ValueError) as exc:
            API[entry](device, seen)
        assert str(exc.value) == expected(device)
        assert [source.n_drawn for source in seen] == [0] * len(seen)

    @pytest.mark.parametrize("entry", sorted(API))
    def test_control_cpu_works(self, entry):
        API[entry]("cpu", [])

    def test_a_device_object_of_this_build_is_refused_alike(self):
        with pytest.raises(ValueError) as exc:
            arrays.torch_device(torch.device("meta"))
        assert str(exc.value) == expected(torch.device("meta"))

    def test_a_non_name_is_a_type_error_with_the_message(self):
        with pytest.raises(TypeError) as exc:
            _layer()(np.ones((2, 4)), device=3)
        assert str(exc.value) == expected(3)


def _device_commands():
    """(package, command) of every command line with a ``--device`` option, read from the parsers."""
    found = []
    for package in ("learner", "theory", "lowerbounds"):
        parser = importlib.import_module(f"{package}.cli").build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        found += [(package, command) for command, p in sub.choices.items()
                  if any("--device" in a.option_strings for a in p._actions)]
    return found


COMMANDS = _device_commands()


class TestTheCommandLines:
    def test_there_are_some(self):
        assert ("learner", "learn") in COMMANDS

    @pytest.mark.parametrize("device", UNUSABLE)
    @pytest.mark.parametrize(("package", "command"), COMMANDS, ids=[f"{p}-{c}" for p, c in COMMANDS])
    def test_refused_in_one_line_naming_the_flag(self, package, command, device, capsys):
        main = importlib.import_module(f"{package}.cli").main
        with pytest.raises(SystemExit) as exc:  # refused while the options are read: nothing runs
            main([command, "--device", device])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert re.fullmatch(rf"[^\n]*{command}: error: argument --device: (?P<m>.*)\n", err).group("m") == \
            expected(device, "--device")

    @pytest.mark.parametrize(("package", "command"), COMMANDS, ids=[f"{p}-{c}" for p, c in COMMANDS])
    def test_control_cpu_is_read(self, package, command):
        parser = importlib.import_module(f"{package}.cli").build_parser()
        assert parser.parse_args([command, "--device", "cpu"]).device == "cpu"
