"""The command-line layer's rules on constructed parsers: which options get a declared rule as their type, what a
parse error calls the values, and when an output overlaps an input or another output (a folder holding a file, a
hard link anywhere), each answer written from the rule, not read from the code.

The toolkit's own commands are covered by ``tests/test_same_file_outputs.py``; the parsers here hold the
combinations no present command has (a folder output beside a file input, an input folder given to an option
without the ``DIR`` metavar), which the check promises to handle for the next command.
"""

from __future__ import annotations

import argparse
import os

import pytest

from learner import argparsing
from learner.argparsing import (
    CLI_INT_MAX,
    check_output_options,
    cli_type,
    command_parser,
    declare_files,
    declare_options,
    harden,
    rules_of,
)
from learner.io import NAME_MAX
from learner.validation import Boolean, Each, Integer, OrWord, Real, Seed, declare


@declare(n=Integer(1), flag=Boolean(), sizes=Each(Integer(1)), one=Each(Integer(1), scalar=True), scale=Real())
def _function(n=1, flag=False, sizes=(1,), one=1, scale=1.0):
    return n


def _undeclared(n=1):
    return n


class TestDeclaredRules:
    def test_a_function_without_declared_rules_declares_nothing(self):
        assert rules_of(_undeclared) == {}
        parser = command_parser(prog="t")
        action = parser.add_argument("--n")
        declare_options(parser, _undeclared)
        assert action.type is None and parser.parse_args(["--n", "x"]).n == "x"

    def test_the_first_declaring_function_wins_over_an_undeclared_one(self):
        assert set(rules_of(_undeclared, _function)) == {"n", "flag", "sizes", "one", "scale"}

    def test_rename_maps_a_parameter_to_its_options_dest(self):
        rules = rules_of(_function, rename={"n": "n_samples"})
        assert "n_samples" in rules and "n" not in rules and rules["n_samples"] == Integer(1)

    def test_which_options_get_the_rule_as_their_type(self):
        parser = command_parser(prog="t")
        n = parser.add_argument("--n")
        positional = parser.add_argument("scale")
        flag_value = parser.add_argument("--flag")  # a Boolean's option is left as it is, with or without a value
        switch = parser.add_argument("--one", action="store_true")  # no value: nothing to type
        single = parser.add_argument("--sizes", nargs=1)
        declare_options(parser, _function)
        assert n.type is not None and single.type is not None
        assert positional.type is None and flag_value.type is None and switch.type is None
        assert parser.parse_args(["--n", "3", "2.5"]).n == 3
        with pytest.raises(SystemExit):
            parser.parse_args(["--n", "0", "2.5"])

    def test_a_list_option_has_its_whole_list_checked_and_a_single_value_option_does_not(self):
        parser = command_parser(prog="t")
        many = parser.add_argument("--sizes", nargs="+")
        once = parser.add_argument("--one")
        declare_options(parser, _function)
        assert hasattr(many, "whole_rule") and not hasattr(once, "whole_rule")
        with pytest.raises(SystemExit):  # distinct entries: the whole list's rule
            parser.parse_args(["--sizes", "2", "2"])
        assert parser.parse_args(["--sizes", "2", "3"]).sizes == [2, 3]


class TestParseErrorWords:
    @pytest.mark.parametrize("rule, words", [
        (Integer(1), "must be an integer"),
        (Seed(), "must be a non-negative integer (seed entropy)"),
        (Real(), "must be a number"),
        (OrWord("auto", Integer(1)), "must be an integer or the word 'auto'"),
        (OrWord("none", Real()), "must be a number or the word 'none'"),
    ], ids=["integer", "seed", "real", "integer-or-word", "real-or-word"])
    def test_what_a_value_that_does_not_parse_is_told(self, rule, words):
        with pytest.raises(argparse.ArgumentTypeError) as exc:
            cli_type("--x", rule)("banana")
        assert words in str(exc.value)


def _run_parser():
    """A parser with one command ``run``, and that command's parser."""
    parser = command_parser(prog="t")
    return parser, parser.add_subparsers(dest="command").add_parser("run")


def _io_parser(*, out_files=None, input_metavar="FILE"):
    """A command ``run`` with an input file ``--layer``, an output folder ``--out`` and an output file ``--json``."""
    parser, sub = _run_parser()
    sub.add_argument("--layer", metavar=input_metavar)
    out = sub.add_argument("--out", metavar="DIR")
    if out_files:
        declare_files(out, out_files)
    sub.add_argument("--json", metavar="FILE")
    return parser


def _check(parser, *argv):
    check_output_options(parser, parser.parse_args(["run", *argv]))


class TestFolderOutputs:
    def test_a_folder_output_that_holds_an_input_file_is_refused(self, tmp_path):
        (tmp_path / "sc").mkdir()
        (tmp_path / "sc" / "layer.npz").write_bytes(b"x")
        with pytest.raises(ValueError, match=r"--out '.*sc' holds --layer '.*layer.npz', which the command reads"):
            _check(_io_parser(), "--out", str(tmp_path / "sc"), "--layer", str(tmp_path / "sc" / "layer.npz"))

    def test_a_folder_output_that_holds_another_output_is_refused(self, tmp_path):
        (tmp_path / "sc").mkdir()
        with pytest.raises(ValueError, match=r"--out '.*sc' holds --json '.*x.json', which the command also writes"):
            _check(_io_parser(), "--out", str(tmp_path / "sc"), "--json", str(tmp_path / "sc" / "x.json"))

    def test_control_apart_they_are_accepted(self, tmp_path):
        (tmp_path / "layer.npz").write_bytes(b"x")
        _check(_io_parser(), "--out", str(tmp_path / "sc"), "--layer", str(tmp_path / "layer.npz"),
               "--json", str(tmp_path / "x.json"))

    def test_an_input_folder_given_to_an_option_without_the_dir_metavar_is_a_folder(self, tmp_path):
        (tmp_path / "sc").mkdir()
        with pytest.raises(ValueError, match=r"--json '.*summary.json' lies inside --layer '.*sc', a folder"):
            _check(_io_parser(), "--layer", str(tmp_path / "sc"), "--json", str(tmp_path / "sc" / "summary.json"))

    def test_a_user_file_where_a_folder_writes_is_named_by_the_folder_given(self, tmp_path):
        (tmp_path / "pd").mkdir()
        (tmp_path / "pd" / "a.png").write_text("a user's notes")
        with pytest.raises(ValueError, match=r"would replace '.*a.png', .* got --out='[^']*pd'\."):
            _check(_io_parser(out_files=["a.png"]), "--out", str(tmp_path / "pd"))

    def test_a_user_file_given_to_a_file_output_is_named_as_given(self, tmp_path):
        (tmp_path / "x.json").write_text("a user's notes")
        with pytest.raises(ValueError, match=r"would replace '.*x.json', .* got --json='[^']*x.json'\."):
            _check(_io_parser(), "--json", str(tmp_path / "x.json"))

    def test_two_files_of_one_folder_that_are_one_file_are_refused(self, tmp_path):
        # a.png links to b.png, not yet written: writing a.png writes b.png, which the folder's next file replaces.
        (tmp_path / "pd").mkdir()
        os.symlink("b.png", tmp_path / "pd" / "a.png")
        with pytest.raises(ValueError, match=r"--out '.*a.png' is the same file as --out '.*b.png', which the command "
                                             "also writes"):
            _check(_io_parser(out_files=["a.png", "b.png"]), "--out", str(tmp_path / "pd"))
        _check(_io_parser(out_files=["a.png", "b.png"]), "--out", str(tmp_path / "elsewhere"))  # control


class TestHardLinks:
    def test_a_hard_link_to_a_file_of_the_folder_is_inside_it(self, tmp_path):
        (tmp_path / "sc").mkdir()
        (tmp_path / "sc" / "r.json").write_text("{}")
        os.link(tmp_path / "sc" / "r.json", tmp_path / "hard.json")
        assert argparsing._inside(tmp_path / "hard.json", tmp_path / "sc")

    def test_a_hard_link_is_found_past_entries_that_cannot_be_read(self, tmp_path):
        # Dangling links fail os.stat; the search goes on past each of them (directory order is the file system's,
        # so fifty of them make it all but certain that some come before the link).
        (tmp_path / "sc").mkdir()
        for i in range(50):
            os.symlink(tmp_path / "missing", tmp_path / "sc" / f"dangling-{i}")
        (tmp_path / "sc" / "r.json").write_text("{}")
        os.link(tmp_path / "sc" / "r.json", tmp_path / "hard.json")
        assert argparsing._inside(tmp_path / "hard.json", tmp_path / "sc")

    def test_a_file_a_symlink_in_the_folder_leads_to_is_inside_it(self, tmp_path):
        """The command reads the folder, the link with it, and so the file: writing the file changes what it reads."""
        (tmp_path / "sc").mkdir()
        (tmp_path / "out.json").write_text("{}")  # one link only: no hard link anywhere
        os.symlink(tmp_path / "out.json", tmp_path / "sc" / "r.json")
        assert argparsing._inside(tmp_path / "out.json", tmp_path / "sc")
        os.symlink(tmp_path / "elsewhere.json", tmp_path / "sc" / "dangling.json")
        (tmp_path / "elsewhere2.json").write_text("{}")
        assert not argparsing._inside(tmp_path / "elsewhere2.json", tmp_path / "sc")  # control: no name leads to it

    def test_control_a_hard_linked_file_whose_links_are_all_outside(self, tmp_path):
        (tmp_path / "sc").mkdir()
        (tmp_path / "sc" / "other.json").write_text("{}")
        (tmp_path / "a.json").write_text("{}")
        os.link(tmp_path / "a.json", tmp_path / "b.json")
        assert not argparsing._inside(tmp_path / "a.json", tmp_path / "sc")


class TestInputNames:
    def test_a_positional_input_with_a_name_too_long_says_so(self):
        name = "x" * (NAME_MAX + 1) + ".npz"
        parser, sub = _run_parser()
        sub.add_argument("path")
        with pytest.raises(ValueError, match=rf"cannot read '{name}': a name in it is longer than {NAME_MAX} bytes"):
            check_output_options(parser, parser.parse_args(["run", name]))


class TestPlotsNeedMatplotlib:
    def test_only_a_plot_option_asks_for_matplotlib(self, tmp_path, monkeypatch):
        import importlib.util

        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else
                            real(name, *a))
        parser, sub = _run_parser()
        sub.add_argument("--json", metavar="FILE")
        sub.add_argument("--plot", metavar="FILE")
        check_output_options(parser, parser.parse_args(["run", "--json", str(tmp_path / "x.json")]))
        with pytest.raises(ValueError, match="--plot needs matplotlib"):
            check_output_options(parser, parser.parse_args(["run", "--plot", str(tmp_path / "x.png")]))


class TestIntegerCap:
    """Integers on the command line are capped at CLI_INT_MAX in size (the cap itself accepted), alone or beside a
    word."""

    @pytest.mark.parametrize("rule", [Integer(minimum=None), OrWord("auto", Integer(minimum=None))],
                             ids=["integer", "integer-or-word"])
    def test_the_cap_is_inclusive(self, rule):
        parse = cli_type("--n", rule)
        assert parse(str(CLI_INT_MAX)) == CLI_INT_MAX and parse(str(-CLI_INT_MAX)) == -CLI_INT_MAX
        for text in (str(CLI_INT_MAX + 1), str(-CLI_INT_MAX - 1), "1" + "0" * 40):
            with pytest.raises(argparse.ArgumentTypeError, match=f"`--n` must be at most {CLI_INT_MAX:,} in size"):
                parse(text)

    def test_the_type_is_named_after_the_flag(self):
        assert cli_type("--max-steps", Integer()).__name__ == "max_steps"


class TestHarden:
    def test_int_options_stay_integers_and_float_options_numbers(self):
        parser = command_parser(prog="t")
        parser.add_argument("--n", type=int)
        parser.add_argument("--x", type=float)
        harden(parser)
        args = parser.parse_args(["--n", "3", "--x", "3"])
        assert type(args.n) is int and args.n == 3 and type(args.x) is float
        with pytest.raises(SystemExit):
            parser.parse_args(["--n", "3.5"])


def test_version_has_its_help_line(capsys):
    with pytest.raises(SystemExit):
        command_parser(prog="t").parse_args(["--help"])
    assert "print the toolkit's version and exit" in capsys.readouterr().out


def test_a_positive_integer_or_a_word():
    from learner.argparsing import cli_positive_int_or

    parse = cli_positive_int_or("--workers", "auto", "AUTO")
    assert parse("auto") == "AUTO" and parse("1") == 1 and parse(str(CLI_INT_MAX)) == CLI_INT_MAX
    for text in ("0", "-3", "x", "1.5", "Auto", ""):
        words = f"--workers must be a positive integer or auto; got {text!r}"
        with pytest.raises(argparse.ArgumentTypeError, match=words):
            parse(text)
    with pytest.raises(argparse.ArgumentTypeError, match=f"--workers must be at most {CLI_INT_MAX:,} or auto"):
        parse(str(CLI_INT_MAX + 1))
