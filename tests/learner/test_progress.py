"""Progress bars of learn's example-drawing phases: on a terminal only, never changing a result."""

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from learner import progress as bars
from learner import random_layer
from learner.cli import main
from learner.learn import learn
from learner.oracle import LayerOracle
from learner.phases import LearnConfig
from learner.sweep.engine import comparable
from learner.sweep.runs import QUICK_OPTIONS

# Small budgets: every phase runs in well under a second (the run fails; the bars are the point).
QUICK = QUICK_OPTIONS["provable"]


def _learn(progress):
    truth = random_layer(1, 6, rng=1)
    return learn(LayerOracle(truth, 3, rng=2), m=1, config=LearnConfig(**QUICK), truth=truth, rng=3,
                 progress=progress)


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("progress, stderr, expected", [
    (None, io.StringIO(), False),
    (None, _Tty(), True),
    (True, io.StringIO(), True),
    (False, _Tty(), False),
], ids=["auto-file", "auto-terminal", "on", "off"])
def test_resolve(monkeypatch, progress, stderr, expected):
    monkeypatch.setattr(sys, "stderr", stderr)
    assert bars.resolve(progress) is expected


@pytest.mark.parametrize("progress", ["yes", 1, 0.0], ids=["str", "int", "float"])
def test_bad_progress_is_named(progress):
    with pytest.raises(TypeError, match="progress="):
        _learn(progress)


def test_bars_for_phases_1_to_4_and_the_same_result(capsys):
    quiet = _learn(False)
    assert capsys.readouterr().err == ""
    shown = _learn(True)
    err = capsys.readouterr().err
    for phase in ("phase 1", "phase 2", "phase 3", "phase 4"):
        assert f"{phase}:" in err
    assert "constraint" in err and "of at most" in err
    assert comparable(quiet.to_dict()) == comparable(shown.to_dict())


@pytest.mark.parametrize("rows_cols", [(24, 80), pytest.param((0, 0), marks=pytest.mark.slow)],
                         ids=["sized", "unsized"])
def test_auto_shows_bars_on_a_real_terminal_only(rows_cols):
    code = ("from learner import random_layer, LayerOracle, learn\n"
            "from learner.phases import LearnConfig\nfrom learner.sweep.runs import QUICK_OPTIONS\n"
            "from learner.sweep.engine import comparable\n"
            "t = random_layer(1, 6, rng=1)\n"
            "learn(LayerOracle(t, 3, rng=2), m=1, config=LearnConfig(**QUICK_OPTIONS['provable']))\n")
    master, slave = pty.openpty()  # a real terminal; one nobody sized reports 0 rows and 0 columns
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *rows_cols, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    assert b"phase 2:" in b"".join(chunks)
    piped = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=120)
    assert b"phase 2:" not in piped.stderr


@pytest.mark.parametrize("flag, expected", [([], None), (["--no-progress"], False)], ids=["auto", "off"])
def test_cli_flag(monkeypatch, capsys, flag, expected):
    seen = {}

    def fake_learn(*args, progress, **kwargs):
        seen["progress"] = progress
        raise ValueError("stop here")

    monkeypatch.setattr(sys.modules["learner.learn"], "learn", fake_learn)
    assert main(["learn", "--m", "1", "--d", "6", "--k", "3"] + flag) == 2
    assert seen == {"progress": expected}
