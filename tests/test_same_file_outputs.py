"""No output of a command may be the same file as one of its inputs or another of its outputs, nor lie inside a
folder it reads: every command line goes through one check (``learner.argparsing.check_output_options``), which
compares resolved paths and inodes, so ``./x``, ``x``, a symlink to ``x`` and a hard link to it all count as ``x``,
and a symlink loop is refused by its option. Each case is refused before any work, naming the options, and the
files are left as they were.

The commands and their path options are read from the three parsers, so a new command or option is covered
without being listed here; a path option that is neither an input nor an output fails
:func:`test_every_path_option_is_an_input_or_an_output`.
"""

from __future__ import annotations

import os

import pytest

from learner.argparsing import INPUT_OPTIONS, OUTPUT_OPTIONS, check_output_options, same_file
from learner.io import write_json

PACKAGES = ("learner", "theory", "lowerbounds")


def _parser(package):
    return __import__(f"{package}.cli", fromlist=["build_parser"]).build_parser()


def _main(package):
    return __import__(f"{package}.cli", fromlist=["main"]).main


def _label(action):
    return action.option_strings[-1] if action.option_strings else "the input"


def _commands():
    """``(package, command, parser, path actions)`` of every sub-command that takes a path."""
    found = []
    for package in PACKAGES:
        for command, sub in _parser(package).commands.choices.items():
            actions = [a for a in sub.options if a.dest in INPUT_OPTIONS + OUTPUT_OPTIONS]
            if actions:
                found.append((package, command, sub, actions))
    return found


def _argv(command, sub, values):
    """The command line of ``command`` with ``values`` (``{dest: path}``) and what else it requires."""
    argv = [command]
    for action in sub.options:
        value = values.get(action.dest)
        if value is None and action.required:  # a choice, or a new name that collides with nothing
            value = sorted(action.choices)[0] if action.choices else f"fresh-{action.dest}"
        if not action.option_strings:
            argv.append(value)
        elif value is not None:
            argv += [action.option_strings[-1], value]
    return argv


def _targets(actions):
    """``(dest, value, shared, kind, label)`` of what an output may collide with: each input (a file or a folder),
    each file output, and each file a folder output declares (``declare_files``); ``shared`` is the file that
    exists, ``value`` what the option is given."""
    targets = []
    for action in actions:
        if action.dest in INPUT_OPTIONS and action.metavar == "DIR":
            targets.append((action.dest, "sc", "sc/runs/r.json", "folder", _label(action)))
        elif action.dest in INPUT_OPTIONS or action.metavar != "DIR":
            targets.append((action.dest, "f.bin", "f.bin", "file", _label(action)))
        for name in getattr(action, "files", ()):
            targets.append((action.dest, "pd", f"pd/{name}", "file", _label(action)))
    return targets


def _cases():
    """Every output file option against every other thing of its command it could replace."""
    cases = []
    for package, command, _, actions in _commands():
        outputs = [a for a in actions if a.dest in OUTPUT_OPTIONS and a.metavar != "DIR"]
        for out in outputs:
            for dest, value, shared, kind, label in _targets(actions):
                if dest != out.dest:
                    cases.append((package, command, out.dest, _label(out), dest, value, shared, kind, label))
    return cases


CASES = _cases()
IDS = [f"{c[0]}-{c[1]}-{c[3]}-vs-{c[8]}" for c in CASES]
#: How the output names the shared file: for a folder input, a file in it (the command reads the folder's runs).
SPELLINGS = {
    "file": {"same": "{shared}", "dot-slash": "./{shared}", "symlink": "link.bin", "hard-link": "hard.bin",
             "dangling-symlink": "link.bin"},
    "folder": {"same": "sc/summary.json", "dot-slash": "./sc/summary.json", "symlink": "link.bin",
               "hard-link": "hard.bin", "dangling-symlink": "link.bin"},
}


def _lay_out(tmp_path, shared, spelling):
    """The files of a case: the shared file (one of the toolkit's, so only its sameness is at stake), the
    folder input's summary, and the link the spelling needs; returns the bytes of every file, to compare after."""
    (tmp_path / "sc" / "runs").mkdir(parents=True)
    (tmp_path / "pd").mkdir()
    write_json(tmp_path / "sc" / "summary.json", {"parameters": {"m": [1]}})
    if spelling == "dangling-symlink":  # to a file not yet written, which the other option will write or read
        os.symlink(shared if not shared.startswith("sc/") else "sc/new.json", tmp_path / "link.bin")
        return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    write_json(tmp_path / shared, {"kind": "command-record", "schema_version": 1})
    if spelling == "symlink":
        os.symlink(shared if not shared.startswith("sc/") else "sc/summary.json", tmp_path / "link.bin")
    elif spelling == "hard-link":
        os.link(tmp_path / shared, tmp_path / "hard.bin")
    elif spelling == "loop":
        os.symlink("loop-b", tmp_path / "loop-a")
        os.symlink("loop-a", tmp_path / "loop-b")
    return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


def _refusal(package, command, values):
    """The check's refusal (the check itself: a missed refusal must not start the command's work)."""
    parser = _parser(package)
    with pytest.raises(ValueError) as exc:
        check_output_options(parser, parser.parse_args(_argv(command, parser.command(command), values)))
    return str(exc.value)


def _run(package, argv, capsys):
    code = _main(package)(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


@pytest.mark.parametrize("spelling", ["same", "dot-slash", "symlink", "dangling-symlink", "hard-link", "loop"])
@pytest.mark.parametrize(("package", "command", "dest", "option", "other_dest", "value", "shared", "kind", "other"),
                         CASES, ids=IDS)
def test_an_output_that_would_replace_what_the_command_reads_or_writes_is_refused(
        tmp_path, monkeypatch, package, command, dest, option, other_dest, value, shared, kind, other,
        spelling):
    """Refused by the check before any work, naming the output's option and the other (or the loop), every file
    as it was and nothing new written (the exit status and the one line: below). A dangling symlink is one to a
    file not yet written (``sample --out new.npz --examples link.npz``, the link to new.npz): only resolving the
    link, not comparing inodes, sees it."""
    sub = _parser(package).command(command)
    if any(a.dest.startswith("plot") for a in sub.options if a.dest in (dest, other_dest)):
        pytest.importorskip("matplotlib", reason="a plot option needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    before = _lay_out(tmp_path, shared, spelling)
    name = "loop-a" if spelling == "loop" else SPELLINGS[kind][spelling].format(shared=shared)
    message = _refusal(package, command, {dest: name, other_dest: value})
    if spelling == "loop":
        assert f"`{option}` cannot be followed" in message and "symlink loop" in message, message
    else:
        assert option in message and other in message, message
        assert ("is the same file as" if kind == "file" else "lies inside") in message, message
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing replaced, nothing written


@pytest.mark.parametrize(("package", "command", "dest", "option", "other_dest", "value", "shared", "kind", "other"),
                         CASES, ids=IDS)
def test_control_distinct_names_pass(tmp_path, monkeypatch, package, command, dest, option, other_dest, value, shared,
                                     kind, other):
    """Control: the same command lines with a name of its own for the output pass the check."""
    parser = _parser(package)
    sub = parser.command(command)
    if any(a.dest.startswith("plot") for a in sub.options if a.dest in (dest, other_dest)):
        pytest.importorskip("matplotlib", reason="a plot option needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    _lay_out(tmp_path, shared, "same")
    check_output_options(parser, parser.parse_args(_argv(command, sub, {dest: "elsewhere.json", other_dest: value})))


PATH_OPTIONS = [(package, command, action.dest, _label(action)) for package, command, _, actions in _commands()
                for action in actions]


@pytest.mark.parametrize(("package", "command", "dest", "option"), PATH_OPTIONS,
                         ids=[f"{p}-{c}-{o}" for p, c, _, o in PATH_OPTIONS])
def test_a_symlink_loop_is_refused_naming_the_option(tmp_path, monkeypatch, package, command, dest, option):
    """``a.json → b.json → a.json`` given to any path option, input or output, file or folder: refused naming the
    option (a positional input: naming the path), never an OSError."""
    if dest.startswith("plot"):
        pytest.importorskip("matplotlib", reason="a plot option needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    os.symlink("b.json", "a.json")
    os.symlink("a.json", "b.json")
    message = _refusal(package, command, {dest: "a.json"})
    named = f"`{option}` cannot be followed" if option != "the input" else "cannot read 'a.json'"
    assert named in message and "symlink loop" in message, message
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]


MAINS = [("learner", ["sample", "--layer", "f.bin", "--out", "{name}"], "--out"),
         ("learner", ["info", "f.bin", "--json", "{name}"], "--json"),
         ("theory", ["yield-study", "sc", "--json", "{name}"], "--json"),
         ("lowerbounds", ["lwe-attack", "--plot", "f.bin", "--json", "{name}"], "--json")]


@pytest.mark.parametrize("spelling", ["same", "loop"])
@pytest.mark.parametrize(("package", "argv", "option"), MAINS, ids=[f"{p}-{a[0]}" for p, a, _ in MAINS])
def test_the_command_lines_exit_2_with_one_line(tmp_path, monkeypatch, capsys, package, argv, option, spelling):
    """Through ``main``: exit status 2 and one line on standard error, no traceback, nothing written."""
    if "--plot" in argv:
        pytest.importorskip("matplotlib", reason="a plot option needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    before = _lay_out(tmp_path, "f.bin", "loop" if spelling == "loop" else "same")
    name = "loop-a" if spelling == "loop" else "sc/summary.json" if argv[0] == "yield-study" else "f.bin"
    code, err = _run(package, [a.format(name=name) for a in argv], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: "), err
    assert ("symlink loop" if spelling == "loop" else option) in err[0], err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_loop_inside_a_folder_option_is_named_too(tmp_path, monkeypatch):
    """A file that a folder option writes into its folder, when it is a loop, is named by the folder's option."""
    pytest.importorskip("matplotlib", reason="--plot-dir needs matplotlib (the `plot` extra)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pd").mkdir()
    os.symlink("other.png", "pd/one_step.png")
    os.symlink("one_step.png", "pd/other.png")
    message = _refusal("theory", "all", {"plot_dir": "pd"})
    assert "`--plot-dir` cannot be followed" in message and "loop" in message, message


def test_every_path_option_is_an_input_or_an_output():
    """The check knows every option that names a file or a folder (metavar FILE or DIR) as an input or an output,
    so none escapes the comparison; and every command with both is among the cases above."""
    for package in PACKAGES:
        for command, sub in _parser(package).commands.choices.items():
            for action in sub.options:
                if action.metavar in ("FILE", "DIR"):
                    assert action.dest in INPUT_OPTIONS + OUTPUT_OPTIONS, (package, command, action.dest)
    covered = {(c[0], c[1]) for c in CASES}
    assert {("learner", "sample"), ("learner", "learn"), ("learner", "info"), ("theory", "yield-study"),
            ("theory", "all"), ("lowerbounds", "lwe-attack")} <= covered


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
    os.symlink("new", tmp_path / "dangling")  # ... or a link to it, made before either is written
    assert same_file(tmp_path / "dangling", tmp_path / "new") and same_file(tmp_path / "new", tmp_path / "dangling")
    assert not same_file(tmp_path / "dangling", tmp_path / "other")  # control: a link to the one new name only


def _lay_out_links(root, layout):
    """Make ``layout`` in the folder ``root``: ``{name: what}``, ``what`` being ``"=text"`` (a file), ``"/"``
    (a folder), ``"hard:x"`` (a hard link to x) or any other name (a symbolic link to it, which may not exist)."""
    root.mkdir()
    for name, what in layout.items():
        if what == "/":
            (root / name).mkdir()
        elif what.startswith("="):
            (root / name).write_text(what[1:])
        elif what.startswith("hard:"):
            os.link(root / what[5:], root / name)
        else:
            os.symlink(what, root / name)
    return root


# (layout, a, b, the same file?) — the last by hand; the test checks it by writing too.
SAME_FILE_CASES = {
    "dangling-link-to-the-other": ({"link.npz": "new.npz"}, "new.npz", "link.npz", True),
    "chain-of-dangling-links": ({"a": "b", "b": "new"}, "a", "new", True),
    "dangling-link-into-a-folder": ({"sub": "/", "link": "sub/new"}, "link", "sub/new", True),
    "folder-link-to-a-file-not-yet-written": ({"sub": "/", "alias": "sub"}, "alias/new", "sub/new", True),
    "dot-dot-after-a-folder-link": ({"sub": "/", "sub/deep": "/", "alias": "sub/deep"}, "alias/../new", "sub/new",
                                    True),
    "existing-file-by-link": ({"x": "=x", "s": "x"}, "s", "x", True),
    "hard-link": ({"x": "=x", "h": "hard:x"}, "h", "x", True),
    "control-two-new-names": ({}, "new", "other", False),
    "control-dangling-link-elsewhere": ({"link": "elsewhere"}, "link", "new", False),
    "control-folder-link-elsewhere": ({"sub": "/", "deep": "/", "alias": "deep"}, "alias/new", "sub/new", False),
    "control-existing-and-new": ({"x": "=x"}, "x", "new", False),
    # alias/.. is sub, not the folder alias sits in: the same name spelt lexically is another file
    "control-dot-dot-after-a-folder-link": ({"sub": "/", "sub/deep": "/", "alias": "sub/deep"}, "alias/../new", "new",
                                            False),
}


@pytest.mark.parametrize(("layout", "a", "b", "same"), SAME_FILE_CASES.values(), ids=SAME_FILE_CASES.keys())
def test_same_file_against_writing_one_and_reading_the_other(tmp_path, layout, a, b, same):
    """Asked before anything is written (when a command asks), ``same_file`` says what writing then shows: bytes
    written through one path are read through the other. A dangling link, to a file not yet written, is the case
    that only resolving the links (not comparing the inodes of existing files) sees."""
    root = _lay_out_links(tmp_path / "asked", layout)
    assert same_file(root / a, root / b) is same and same_file(root / b, root / a) is same
    written = _lay_out_links(tmp_path / "written", layout)
    (written / a).write_bytes(b"through a")  # through a dangling link: creates its target, as an output would
    assert ((written / b).exists() and (written / b).read_bytes() == b"through a") is same


@pytest.mark.parametrize("order", ["link-is-the-examples", "link-is-the-output"])
def test_sample_refuses_a_dangling_link_to_its_other_output(tmp_path, monkeypatch, capsys, order):
    """``python -m learner sample --out new.npz --examples link.npz``, the link to new.npz (not yet written), run
    as a user runs it: exit 2 with one line naming both options, nothing written (the link still dangles)."""
    if "MUTANT_UNDER_TEST" in os.environ:  # mutmut's copy of the tree runs only under mutmut's own process state
        pytest.skip("a mutation run: a child process of mutmut's copy cannot import it (the reference tests judge)")
    import subprocess
    import sys

    from learner.cli import main

    os.symlink("new.npz", tmp_path / "link.npz")
    out, examples = ("new.npz", "link.npz") if order == "link-is-the-examples" else ("link.npz", "new.npz")
    argv = ["sample", "--m", "2", "--d", "6", "--n-samples", "5", "--out", out, "--examples", examples]
    import learner

    # The child imports the learner under test, wherever it is (an installed or a checked-out copy).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(learner.__file__)), *filter(None, [os.environ.get("PYTHONPATH")])])}
    run = subprocess.run([sys.executable, "-m", "learner", *argv], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=env)
    err = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(err) == 1, run.stderr
    assert "is the same file as" in err[0] and "--out" in err[0] and "--examples" in err[0], err
    assert sorted(os.listdir(tmp_path)) == ["link.npz"] and not (tmp_path / "link.npz").exists()  # still dangling
    # Control: the link pointed elsewhere, the same command writes both files.
    os.remove(tmp_path / "link.npz")
    os.symlink("elsewhere.npz", tmp_path / "link.npz")
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    assert (tmp_path / "new.npz").stat().st_size > 0 and (tmp_path / "elsewhere.npz").stat().st_size > 0
