"""The command lines' parser keeps what it is built from through argparse's public API: every option (also those
of a group) in ``options``, the sub-commands in ``commands``. Checked against argparse's own list of actions, the
independent reference, on the three real command lines and on constructed parsers."""

import argparse
import importlib

import pytest

from learner.argparsing import CommandParser, command_parser, declare_options, flag_message, harden
from learner.validation import Integer, declare


def _commands(parser):
    return parser.commands.choices.items()


@pytest.mark.parametrize("package", ["learner", "theory", "lowerbounds"])
def test_every_option_of_the_three_command_lines_is_kept(package):
    parser = importlib.import_module(f"{package}.cli").build_parser()
    assert isinstance(parser, CommandParser)
    # argparse's private list is the reference here: the parser must keep every action it holds, in its order
    # (the sub-commands' action apart, in ``commands``).
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert subs == [parser.commands] and parser.options == [a for a in parser._actions if a not in subs]
    for name, sub in _commands(parser):
        assert isinstance(sub, CommandParser), name
        assert sub.options == sub._actions and len(sub.options) >= 1, name
        assert parser.command(name) is sub
    assert parser.command("no-such-command") is None


def test_control_groups_and_exclusive_groups_are_kept_and_a_side_door_is_seen():
    parser = command_parser(prog="toy", version=False)
    parser.add_argument("--a", type=int)
    parser.add_argument_group("budgets").add_argument("--b", type=float)
    parser.add_mutually_exclusive_group().add_argument("--c", type=int)
    assert [a.dest for a in parser.options] == ["help", "a", "b", "c"]
    assert parser.options == parser._actions and parser.commands is None and parser.command("x") is None
    # An action added behind the public API (argparse's private container method) is missed: the control that the
    # comparison above can fail.
    parser._add_action(argparse._StoreAction(["--d"], "d"))
    assert parser.options != parser._actions


def test_rules_hardening_and_flag_names_reach_options_in_groups_and_sub_commands():
    @declare(n=Integer(minimum=2))
    def run(n=2):
        return n

    parser = command_parser(prog="toy")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("go")
    p.add_argument_group("sizes").add_argument("--n", type=int)
    p.add_argument("--x", type=float)
    declare_options(p, run)
    harden(parser)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["go", "--n", "1"])
    assert exc.value.code == 2
    assert parser.parse_args(["go", "--n", "3", "--x", "0.5"]).n == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["go", "--x", "nan"])  # hardened: a finite number
    assert flag_message(parser, "go", "`n` must be at least 2; got n=1") == "`--n` must be at least 2; got --n=1"
    assert flag_message(parser, "stop", "`n` must be at least 2") == "`n` must be at least 2"


def _list_parser():
    from learner.validation import Each

    @declare(ms=Each(Integer(minimum=1)))
    def run(ms=(1,)):
        return ms

    parser = command_parser(prog="toy", version=False)
    parser.add_argument("--m", dest="ms", type=int, nargs="+")
    declare_options(parser, run)
    return parser


def test_a_whole_list_refusal_is_one_line_naming_the_flag(capsys):
    parser = _list_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["--m", "2", "2"])
    # The rule's message with the flag in it, after argparse's "argument --m: ", its final full stop dropped once.
    expected = "toy: error: argument --m: `--m` must hold distinct values; got --m=[2, 2]"
    assert capsys.readouterr().err.splitlines()[-1] == expected
    assert parser.parse_args(["--m", "2", "3"]).ms == [2, 3]  # control


def test_a_namespace_given_to_the_parser_is_the_one_filled():
    parser = _list_parser()
    given = argparse.Namespace(kept="from the caller")
    parsed = parser.parse_args(["--m", "2"], namespace=given)
    assert parsed is given and given.kept == "from the caller" and given.ms == [2]


def test_limit_options_refuses_a_name_that_is_no_option():
    from learner.argparsing import limit_options

    with pytest.raises(ValueError, match=r"limit_options: toy has no option\(s\) \['n'\]"):
        limit_options(_list_parser(), {"n": (10, "a test's limit")})


def test_limit_options_bounds_undeclared_options_by_their_type_and_says_why(capsys):
    """Options without a declared rule: a float takes any finite number, an int any integer, each up to its limit
    (the number's exclusive, the integer's inclusive), and a refusal says how the limit was sized."""
    from learner.argparsing import limit_options

    parser = command_parser(prog="toy", version=False)
    parser.add_argument("--x", type=float)
    parser.add_argument("--n", type=int)
    limit_options(parser, {"x": (10.0, " (the x limit)"), "n": (5, " (the n limit)")})
    got = parser.parse_args(["--x", "-2.5", "--n", "5"])
    assert (got.x, got.n) == (-2.5, 5)
    for argv, said in ((["--x", "10"], "(the x limit)"), (["--n", "6"], "(the n limit)"), (["--n", "2.5"], "--n")):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        assert said in capsys.readouterr().err, argv


def test_argparse_s_own_arguments_reach_it_through_the_parser_and_its_groups():
    parser = CommandParser("toy", "the usage line")  # argparse's positional prog and usage
    assert (parser.prog, parser.usage) == ("toy", "the usage line")
    group = parser.add_argument_group("sizes", "how large")
    other = parser.add_argument_group(title="budgets", description="how long")
    group.add_argument("--n", type=int, default=3, help="the n")
    other.add_argument("--t", type=float, default=0.5)
    assert (group.title, group.description, other.title, other.description) == ("sizes", "how large", "budgets",
                                                                                "how long")
    assert vars(parser.parse_args([])) == {"n": 3, "t": 0.5}
    assert vars(parser.parse_args(["--n", "4"])) == {"n": 4, "t": 0.5}
    assert [a.dest for a in parser.options] == ["help", "n", "t"]


def test_harden_keeps_a_float_s_sign_and_an_int_s_whole_values():
    parser = command_parser(prog="toy", version=False)
    parser.add_argument("--x", type=float)
    parser.add_argument("--n", type=int)
    harden(parser)
    got = parser.parse_args(["--x", "-1.5", "--n", "-2"])
    assert (got.x, got.n) == (-1.5, -2)
    for argv in (["--x", "inf"], ["--n", "2.5"]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
