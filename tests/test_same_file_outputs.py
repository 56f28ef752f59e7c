"""No output of a command may be the same file as one of its inputs or another of its outputs: every command line
goes through one check (``learner.argparsing.check_output_options``), which compares resolved paths and inodes,
so ``./x``, ``x``, a symlink to ``x`` and a hard link to it all count as ``x``. Each case is refused before any
work, naming both options, and the file is left as it was."""

from __future__ import annotations

import os

import pytest

from learner.argparsing import same_file

# (package, argv with {a} and {b} for the two names, the option refused first, the option it collides with)
CASES = [
    ("learner", ["learn", "--torch-layer", "{a}", "--json", "{b}"], "--json", "--torch-layer"),
    ("learner", ["sample", "--layer", "{a}", "--examples", "{b}", "--n-samples", "5"], "--examples", "--layer"),
    ("learner", ["sample", "--out", "{a}", "--examples", "{b}", "--n-samples", "5"], "--out", "--examples"),
    ("learner", ["info", "{a}", "--json", "{b}"], "--json", "the input"),
    ("learner", ["demo", "--json", "{a}"], None, None),  # one output: nothing to collide with (control)
    ("theory", ["check", "one_step", "--json", "{a}", "--plot", "{b}"], "--json", "--plot"),
    ("theory", ["yield-study", "sweep", "--json", "{a}", "--plot", "{b}"], "--json", "--plot"),
    ("lowerbounds", ["sq-simulate", "--plot", "{a}", "--json", "{b}"], "--plot", "--json"),
    ("lowerbounds", ["lwe-attack", "--plot", "{a}", "--json", "{b}"], "--plot", "--json"),
]


def _main(package):
    return __import__(f"{package}.cli", fromlist=["main"]).main


@pytest.mark.parametrize("spelling", ["same", "dot-slash", "symlink", "hard-link"])
@pytest.mark.parametrize(("package", "argv", "first", "other"), [c for c in CASES if c[2]],
                         ids=[f"{c[0]}-{c[1][0]}-{c[2]}" for c in CASES if c[2]])
def test_a_shared_file_is_refused_before_any_work(tmp_path, monkeypatch, capsys, package, argv, first, other,
                                                  spelling):
    if "--plot" in argv:
        pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep").mkdir()
    target = tmp_path / "f.bin"
    own = b'{"kind": "command-record", "schema_version": 1}'  # a file of the toolkit's: only its sameness is at stake
    target.write_bytes(own)
    second = {"same": "f.bin", "dot-slash": "./f.bin", "symlink": "link.bin", "hard-link": "hard.bin"}[spelling]
    if spelling == "symlink":
        os.symlink("f.bin", "link.bin")
    elif spelling == "hard-link":
        os.link("f.bin", "hard.bin")
    code = _main(package)([x.format(a="f.bin", b=second) for x in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert err[-1].startswith(f"error: {first} ") and f"is the same file as {other}" in err[-1], err
    assert target.read_bytes() == own  # nothing was written


@pytest.mark.parametrize(("package", "argv", "first", "other"), [c for c in CASES if c[0] == "learner"][1:3])
def test_control_distinct_names_pass(tmp_path, monkeypatch, package, argv, first, other):
    """Control: the same commands with two names are not refused (``sample`` runs in well under a second)."""
    monkeypatch.chdir(tmp_path)
    from learner.cli import main

    assert main(["sample", "--m", "2", "--d", "6", "--out", "layer.npz"]) == 0
    names = {"--layer": "layer.npz", "--out": "new.npz"}
    a = names[argv[1]] if argv[1] in names else "x.npz"
    assert main([x.format(a=a, b="examples.npz") for x in argv]) == 0
    assert (tmp_path / "examples.npz").stat().st_size > 0


def test_same_file_against_a_reference(tmp_path):
    (tmp_path / "x").write_text("x")
    (tmp_path / "y").write_text("y")
    os.symlink(tmp_path / "x", tmp_path / "s")
    os.link(tmp_path / "x", tmp_path / "h")
    assert same_file(tmp_path / "x", tmp_path / "." / "x")
    assert same_file(tmp_path / "x", tmp_path / "s") and same_file(tmp_path / "x", tmp_path / "h")
    assert not same_file(tmp_path / "x", tmp_path / "y")  # control
    assert not same_file(tmp_path / "x", tmp_path / "new")  # a path that does not exist yet is another file
    assert same_file(tmp_path / "new", tmp_path / "." / "new")  # ... unless it is the same path
