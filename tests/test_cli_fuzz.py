"""The command-line fuzz: every option of every command against a table of bad values.

``tests/cli_fuzz.py`` holds the table, the runner and the verdict. The default run tries a sample drawn
by Hypothesis from the whole table (derandomized: the same cases every run); ``-m slow`` tries every case.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _load_fuzz():
    # Loaded by path: tests/ is not a package, and putting it on sys.path would shadow `learner` by tests/learner.
    spec = importlib.util.spec_from_file_location("cli_fuzz", Path(__file__).with_name("cli_fuzz.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cli_fuzz", module)
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzz()
CASES = fuzz.all_cases()
#: Cases of the default run (ours: about 15 s of the suite's time on 2 cores).
FAST_SAMPLE = 12


def _check(case):
    with tempfile.TemporaryDirectory() as tmp:
        outcome = fuzz.run(case, Path(tmp))
        problem = fuzz.verdict(case, outcome)
    assert problem is None, f"{case.id}: {problem} (argv {outcome[4] if outcome else None})"


def _commands_with_options():
    """Every (package, command) of the three parsers that takes an option besides ``--help``, read from the
    parsers (so a new command is counted without editing this test)."""
    from importlib import import_module

    found = set()
    for package in ("learner", "lowerbounds", "theory"):
        parser = import_module(f"{package}.cli").build_parser()
        for command, sub in parser.commands.choices.items():
            if any(a.dest != "help" for a in sub.options):
                found.add((package, command))
    return found


def test_the_table_covers_every_command():
    commands = {(c.package, c.command) for c in CASES}
    assert commands == _commands_with_options() and len(CASES) > 1100
    kinds = {c.value for c in CASES}
    assert {"1e308", "<read-only>", "<link-to-fifo>", "<long-name>", "<same-as-other>", "<deep-json>",
            "<fifo-record>"} <= kinds  # the reliability classes: huge values, files not ours, hangs, long names
    assert {"--json", "--out", "--plot", "--d", "--seed"} <= {c.option for c in CASES}


@settings(max_examples=FAST_SAMPLE, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES))
def test_fast_sample(case):
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_case(case):
    _check(case)


class TestVerdictControls:
    """The verdict must fail what the fuzz looks for (negative controls)."""

    case = fuzz.Case("learner", "demo", "--d", "0")

    def test_a_traceback_fails(self):
        assert fuzz.verdict(self.case, (None, "", "Traceback ...\nValueError: boom", None, ["demo"])).startswith(
            "traceback")

    def test_two_lines_fail(self):
        assert "2 lines" in fuzz.verdict(self.case, (2, "usage: x\nerror: --d\n", None, None, ["demo"]))

    def test_a_message_naming_another_option_fails(self):
        assert "does not name --d" in fuzz.verdict(self.case, (2, "error: `m` must be at least 1\n", None, None,
                                                               ["demo"]))

    def test_a_timeout_and_an_odd_status_fail(self):
        assert "longer than" in fuzz.verdict(self.case, ("timeout", "", None, None, ["demo"]))
        assert "exit status 3" in fuzz.verdict(self.case, (3, "", None, None, ["demo"]))

    def test_a_good_refusal_passes(self):
        assert fuzz.verdict(self.case, (2, "error: argument --d: `--d` must be at least 1; got --d=0\n", None, None,
                                         ["demo"])) is None

    def test_a_file_not_ours_must_be_refused_and_kept(self, tmp_path):
        kept = tmp_path / "kept"
        kept.write_bytes(b"KEEP")
        ro = fuzz.Case("learner", "demo", "--json", "<read-only>")
        assert "it must be refused" in fuzz.verdict(ro, (0, "", None, (str(kept), b"KEEP"), ["demo"]))
        assert "which was not the output's to replace" in fuzz.verdict(ro, (2, "error: `--json` read-only\n", None,
                                                                             (str(kept), b"OTHER"), ["demo"]))
        assert fuzz.verdict(ro, (2, "error: `--json` ... read-only\n", None, (str(kept), b"KEEP"), ["demo"])) is None

    def test_a_broken_symlink_fails(self, tmp_path):
        link = tmp_path / "link"
        link.symlink_to(tmp_path / "gone")
        case = fuzz.Case("learner", "demo", "--json", "<link-to-fifo>")
        assert "broke the symlink" in fuzz.verdict(case, (2, "error: --json\n", None, str(link), ["demo"]))

    def test_a_refusal_that_claimed_the_folder_fails(self, tmp_path):
        out = tmp_path / "out"
        out.mkdir()
        case = fuzz.Case("learner", "scaling", "--seeds", "0")
        argv = ["scaling", "--seeds", "0", "--out", str(out)]
        assert "claimed --out" in fuzz.verdict(case, (2, "error: --seeds must be at least 1\n", None, None, argv))
        out.rmdir()
        assert fuzz.verdict(case, (2, "error: --seeds must be at least 1\n", None, None, argv)) is None

    def test_the_parameters_spelling_fails(self):
        """On the command line the message names the flag as written, not the library's parameter."""
        assert "does not name --d" in fuzz.verdict(self.case, (2, "error: `d` must be at least 1; got d=0.\n", None,
                                                               None, ["demo"]))
