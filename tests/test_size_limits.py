"""Every size option of the three command lines has a limit, checked while the options are read: an absurd size is
refused at once (exit 2, one line naming the option and the value), before any work; an ordinary size passes.

The options are found from the parsers: every option whose rule takes an integer (a count, a dimension, a budget),
so a size option added without a limit fails here.
"""

from __future__ import annotations

import time
from importlib import import_module

import pytest

from learner.validation import Each, Integer, OrWord

PACKAGES = ("learner", "lowerbounds", "theory")
#: Arguments a command needs before an option can be tried (its folder, its input).
NEEDS = {"info": ["layer.npz"], "learn-hard": ["--out", "{out}"], "scaling": ["--out", "{out}"],
         "peers": ["--out", "{out}"], "race": ["--out", "{out}"], "noise-study": ["--out", "{out}"],
         "sharpness": ["--out", "{out}"], "growth": ["--out", "{out}"], "budget": ["--out", "{out}"],
         "trained": ["--out", "{out}"],
         "yield-study": ["{out}"]}


def _integer(rule):
    inner = rule.rule if isinstance(rule, (Each, OrWord)) else rule
    inner = inner.rule if isinstance(inner, (Each, OrWord)) else inner
    return inner if isinstance(inner, Integer) else None


def _size_options():
    for package in PACKAGES:
        parser = import_module(f"{package}.cli").build_parser()
        for command, sub in sorted(parser.commands.choices.items()):
            for action in sub.options:
                rule = getattr(action.type, "rule", None)
                if action.option_strings and rule is not None and _integer(rule) is not None:
                    yield pytest.param(package, command, action, id=f"{package}-{command}-{action.option_strings[-1]}")


SIZE_OPTIONS = list(_size_options())


def test_the_parsers_have_size_options():
    assert len(SIZE_OPTIONS) > 50  # control: the search finds them (demo --d, sq-simulate --trials, ...)


@pytest.mark.parametrize(("package", "command", "action"), SIZE_OPTIONS)
def test_an_absurd_size_is_refused_before_work(tmp_path, capsys, package, command, action):
    flag, limit = action.option_strings[-1], _integer(action.type.rule).maximum
    assert limit is not None and limit < 2**31, f"{flag} of {command} has no size limit"
    main = import_module(f"{package}.cli").main
    argv = [command, *(a.replace("{out}", str(tmp_path / "out")) for a in NEEDS.get(command, [])), flag]
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main([*argv, str(limit + 1)])
    assert time.perf_counter() - start < 2  # refused while reading the options: no work was done
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert f"`{flag}` must be at most {limit:,}" in err and f"got {flag}={limit + 1}" in err
    assert not (tmp_path / "out").exists()
    # Control: the limit itself, and the option's default, are accepted by the same type.
    assert action.type(str(limit)) in (limit, [limit])
    if isinstance(action.default, int) and not isinstance(action.default, bool):
        action.type(str(action.default))


@pytest.mark.parametrize(("package", "argv", "flag"), [
    ("learner", ["learn", "--logit-scale", "1e99"], "--logit-scale"),
    ("learner", ["demo", "--d", "5000"], "--d"),
    ("learner", ["bench", "--certification", "--d", "5000"], "--d"),
    ("learner", ["scaling", "--seeds", "1000000000", "--out", "{out}"], "--seeds"),
    ("lowerbounds", ["lwe", "--n", "300"], "--n"),
    ("lowerbounds", ["lwe-attack", "--lattice-n", "500"], "--lattice-n"),
    ("lowerbounds", ["lwe-attack", "--repeats", "1000000000"], "--repeats"),
    ("lowerbounds", ["sq-simulate", "--trials", "1000000000"], "--trials"),
    ("lowerbounds", ["learn-hard", "--d", "10000", "--out", "{out}"], "--d"),
])
def test_the_sizes_that_ran_for_hours(tmp_path, capsys, package, argv, flag):
    main = import_module(f"{package}.cli").main
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main([a.replace("{out}", str(tmp_path / "out")) for a in argv])
    assert time.perf_counter() - start < 2 and exc.value.code == 2
    assert f"argument {flag}: `{flag}` must be" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "words"), [
    (["lwe", "--n", "200", "--q", "31"], "`--n` asks for an instance of about 3,000 heads"),
    (["lwe-attack", "--n", "9", "--q", "31", "--linear-n", "8", "--lattice-n"], "`--n` asks exhaustive search"),
])
def test_the_combined_sizes_are_refused_before_work(capsys, argv, words):
    from lowerbounds.cli import main

    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {words}") and captured.out == ""


def test_control_an_ordinary_lwe_runs():
    from lowerbounds.cli import _check_lwe_work

    _check_lwe_work("--n", 200, 7)  # the measured setting passes
    with pytest.raises(ValueError, match="got --n 201 with --q 7"):
        _check_lwe_work("--n", 201, 7)


def test_a_layer_file_is_sized_from_its_header_before_inflation(tmp_path, capsys):
    """A 0.5 MB file that inflates to a d = 4096 layer (512 MiB) is refused from its header; a small layer is read."""
    import hashlib
    import json

    import numpy as np

    from learner import random_layer, save_layer
    from learner.cli import main
    from learner.io import _META, SCHEMA_VERSION

    m, d = 2, 4096
    zeros = np.zeros((m, d, d))
    digest = hashlib.sha256(zeros.tobytes()).hexdigest()
    meta = {"format": "attention-layer", "schema_version": SCHEMA_VERSION, "created_by": "test",
            "arrays": {name: {"shape": [m, d, d], "sha256": digest} for name in ("thetas", "ws")}, "metadata": {}}
    del digest
    bomb = tmp_path / "bomb.npz"
    with open(bomb, "wb") as fh:
        np.savez_compressed(fh, thetas=zeros, ws=zeros, **{_META: np.frombuffer(json.dumps(meta).encode(), np.uint8)})
    del zeros
    assert bomb.stat().st_size < 2**20
    start = time.perf_counter()
    assert main(["info", str(bomb)]) == 2
    assert time.perf_counter() - start < 2  # nothing inflated: 512 MiB of zeros takes seconds to inflate and hash
    assert "holds a layer of d = 4096 (m = 2), more than the d = 512" in capsys.readouterr().err
    small = save_layer(tmp_path / "small.npz", random_layer(2, 8, rng=0))
    assert main(["info", str(small)]) == 0  # control


def test_a_member_larger_than_its_declared_shape_is_refused(tmp_path):
    """The header cannot hide a large member behind a small declared shape."""
    import json

    import numpy as np

    from learner import FileFormatError, load_layer, random_layer, save_layer
    from learner.io import _META

    path = save_layer(tmp_path / "L.npz", random_layer(2, 4, check=False, rng=0))
    with np.load(path) as archive:
        meta = json.loads(archive[_META].tobytes())
        arrays = {name: archive[name] for name in archive.files}
    arrays["thetas"] = np.zeros((2, 64, 64))  # 65 KB behind a declared (2, 4, 4)
    forged = tmp_path / "forged.npz"
    with open(forged, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    assert meta["arrays"]["thetas"]["shape"] == [2, 4, 4]
    with pytest.raises(FileFormatError, match="array 'thetas' inflates to .* its header declares float64 of shape"):
        load_layer(forged)
    assert load_layer(path).d == 4  # control
