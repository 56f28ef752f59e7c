"""torch is imported only where torch is asked for: every command line's help, and ``learn`` without a torch option,
run without it (importing torch costs seconds at start-up, and hundreds of MB that a small machine may not have).

Each check runs in a fresh interpreter, since a test process has usually imported torch already.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# One interpreter runs every help in turn and reports, per command, whether torch was loaded after it: the first
# command that imports torch is named, and the interpreter is started once, not forty times.
_HELPS = r"""
import contextlib, io, json, sys
from importlib import import_module

loaded = {}
for package in ("learner", "theory", "lowerbounds"):
    cli = import_module(f"{package}.cli")
    parser = cli.build_parser()
    commands = [None] + (sorted(parser.commands.choices) if parser.commands is not None else [])
    for command in commands:
        argv = ["--help"] if command is None else [command, "--help"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            cli.main(argv)
        loaded[" ".join([package, *argv])] = "torch" in sys.modules
print(json.dumps(loaded))
"""

_RUN = r"""
import contextlib, io, sys
from learner.cli import main

with contextlib.redirect_stdout(io.StringIO()):
    status = main(sys.argv[1:])
print(status, "torch" in sys.modules)
"""


def _python(code, *argv):
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_no_help_imports_torch():
    loaded = json.loads(_python(_HELPS))
    assert len(loaded) > 15  # every command of the three command lines was asked (learner alone has ten)
    assert [argv for argv, torch in loaded.items() if torch] == []


def test_learn_without_a_torch_option_runs_without_torch():
    assert _python(_RUN, "learn", "--m", "1", "--d", "8", "--k", "2", "--no-progress") == "0 False"


def test_control_a_torch_option_does_import_torch():
    """The probe sees torch when it is asked for (else the checks above could not fail)."""
    pytest.importorskip("torch", reason="the torch extra is needed to ask for a torch device")
    assert _python(_RUN, "learn", "--m", "1", "--d", "8", "--k", "2", "--no-progress", "--device", "cpu") == "0 True"
