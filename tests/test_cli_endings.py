"""Every command of the three command lines ends in one line on Ctrl-C (status 130) and when memory runs out (status
2), never in a traceback.

The commands are read from the parsers. Each runs in this process on the fast command line of the fuzz
(``tests/cli_fuzz.py``), with the exception raised where the command's work begins: the output check that every
``main`` runs, inside its error handling, before the command itself.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import signal
import sys
from pathlib import Path

import pytest


def _load_fuzz():
    # Loaded by path, as tests/test_cli_fuzz.py loads it (tests/ is not a package), once per process.
    if "cli_fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location("cli_fuzz", Path(__file__).with_name("cli_fuzz.py"))
        module = sys.modules["cli_fuzz"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["cli_fuzz"]


cli_fuzz = _load_fuzz()

PACKAGES = ("learner", "theory", "lowerbounds")


def _commands():
    found = []
    for package in PACKAGES:
        parser = importlib.import_module(f"{package}.cli").build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        found += [(package, command) for command in sub.choices]
    return found


COMMANDS = _commands()

#: The one line each exception ends in, by command (the detail of the MemoryError is "no room").
ENDINGS = {
    KeyboardInterrupt: (130, r"\ninterrupted: `{command}` stopped by Ctrl-C[.;][^\n]*\n"),
    MemoryError: (2, r"error: out of memory in `{command}`(?: \((?:--[a-z-]+ [^,)\n]+)(?:, --[a-z-]+ [^,)\n]+)*\))?: "
                     r"the arrays of this setting do not fit in RAM \(no room\); [^\n]+\n"),
}


@pytest.fixture
def sigint_kept():
    """The commands ignore SIGINT once they end on Ctrl-C (a second one changes nothing); the test run's handler
    comes back afterwards."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)


def _raise(exc):
    def check_output_options(parser, args):
        raise exc

    return check_output_options


def _argv(package, command, tmp_path):
    if (package, command) == ("theory", "list"):
        return ["list"]  # the fuzz's table has no line for it: it takes no options
    return cli_fuzz._base(package, command, tmp_path)


@pytest.mark.parametrize("exception", [KeyboardInterrupt, MemoryError], ids=lambda e: e.__name__)
@pytest.mark.parametrize(("package", "command"), COMMANDS, ids=[f"{p}-{c}" for p, c in COMMANDS])
def test_one_line_and_the_status(package, command, exception, tmp_path, monkeypatch, capsys, sigint_kept):
    cli = importlib.import_module(f"{package}.cli")
    monkeypatch.setattr(cli, "check_output_options", _raise(exception("no room") if exception is MemoryError
                                                            else exception()))
    try:
        status = cli.main(_argv(package, command, tmp_path))
    except BaseException as exc:  # escaped: the user would see a traceback (and a Ctrl-C would stop this run)
        pytest.fail(f"`{package} {command}` let {type(exc).__name__} escape")
    captured = capsys.readouterr()
    code, shape = ENDINGS[exception]
    assert status == code
    assert re.fullmatch(shape.format(command=re.escape(command)), captured.err), captured.err
    assert captured.out == ""
    if exception is KeyboardInterrupt:
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # a second Ctrl-C cannot interrupt the ending


def test_the_sizes_given_are_named(tmp_path, monkeypatch, capsys):
    """Control on the MemoryError line's contents: the numeric options given away from their defaults, the seed
    left out."""
    import lowerbounds.cli

    monkeypatch.setattr(lowerbounds.cli, "check_output_options", _raise(MemoryError()))
    assert lowerbounds.cli.main(["lwe", "--n", "3", "--q", "7", "--seed", "1"]) == 2
    assert capsys.readouterr().err == ("error: out of memory in `lwe` (--n 3, --q 7): the arrays of this setting do "
                                       "not fit in RAM; give smaller sizes.\n")
