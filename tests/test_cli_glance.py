"""The command-line reference's "At a glance" table (docs/cli.rst) cannot go stale: every command line in it is
parsed by its package's own parser, brackets (optional parts) included, and every subcommand of the three
parsers appears in it."""

import argparse
import importlib
import re
import shlex
from pathlib import Path

import pytest

CLI_PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.rst"
PLACEHOLDERS = {"DIR": "study-dir", "FILE": "out.json", "ADDRESS": "tcp://127.0.0.1:8786"}


def glance_commands():
    text = CLI_PAGE.read_text(encoding="utf-8")
    table = text.split("At a glance", 1)[1].split("``python -m learner``", 1)[0]
    return re.findall(r"^     - ``(python -m .+?)``$", table, flags=re.M)


def argv_of(line):
    words = shlex.split(line.replace("[", " ").replace("]", " "))
    assert words[:2] == ["python", "-m"], line
    return words[2], [PLACEHOLDERS.get(w, w) for w in words[3:]]


def parse(package, argv):
    parser = importlib.import_module(f"{package}.cli").build_parser()
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"python -m {package} {shlex.join(argv)} does not parse (exit {exc.code})") from exc


def test_the_table_has_the_commands():
    assert len(glance_commands()) >= 20


@pytest.mark.parametrize("line", glance_commands())
def test_every_glance_line_parses(line):
    package, argv = argv_of(line)
    parse(package, argv)


def test_every_subcommand_is_in_the_table():
    shown = {(argv_of(line)[0], argv_of(line)[1][0]) for line in glance_commands()}
    for package in ("learner", "theory", "lowerbounds"):
        parser = importlib.import_module(f"{package}.cli").build_parser()
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name in subparsers.choices:
            assert (package, name) in shown, f"python -m {package} {name} is missing from the At a glance table"


def test_a_wrong_line_is_caught():
    """The control: an option that does not exist, or a value of the wrong type, does not parse."""
    with pytest.raises(AssertionError, match="does not parse"):
        parse("learner", ["learn", "--heads", "2"])
    with pytest.raises(AssertionError, match="does not parse"):
        parse("learner", ["learn", "--m", "two"])


@pytest.mark.parametrize("package", ["learner", "theory", "lowerbounds"])
def test_version_on_every_command(package, capsys):
    """`--version` prints the program and the toolkit's version (learner.__version__, from pyproject.toml)."""
    import learner

    parser = importlib.import_module(f"{package}.cli").build_parser()
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"python -m {package} (provable-attention {learner.__version__})"
