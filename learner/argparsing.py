"""The command lines' argparse layer, shared by ``learner``, ``theory`` and ``lowerbounds``.

:class:`CommandParser` is the parser of every command line: one-line usage errors, and the options and
sub-commands it was built from kept through argparse's public API. :func:`declare_options` gives the options
passed to a function the rule that function declares (:mod:`learner.validation`), so that the command line and
the library check alike and name what the user typed; :func:`harden` bounds every other numeric option;
:func:`flag_message` renames a library error's parameters to their flags; :func:`check_output_options` checks
every output option before a command runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from .io import NAME_MAX, check_path, check_writable_dir, check_writable_file
from .parallel import kill_live_pools, set_ctrl_c
from .validation import SEED_MAX_DIGITS, Boolean, Choice, Each, Integer, OrWord, Real, Rule, Seed, limited

__all__ = [
    "CLI_INT_MAX",
    "INPUT_OPTIONS",
    "OUTPUT_OPTIONS",
    "CommandParser",
    "check_output_options",
    "cli_device",
    "cli_positive_int_or",
    "cli_seed",
    "cli_type",
    "command_parser",
    "declare_files",
    "declare_options",
    "flag_message",
    "same_file",
    "harden",
    "limit_options",
    "end_in_one_line",
    "rules_of",
]


def cli_seed(text: str) -> int:
    """argparse type of ``--seed``: the :class:`~learner.validation.Seed` rule, named ``--seed`` in the error.

    Parameters
    ----------
    text : str
        The option's text as typed.

    Returns
    -------
    int
        The seed: a non-negative integer of at most :data:`~learner.validation.SEED_MAX_DIGITS` digits.

    Raises
    ------
    argparse.ArgumentTypeError
        If ``text`` is not such a seed.
    """
    return cli_type("--seed", Seed())(text)


def cli_device(flag: str) -> Callable[[str], str]:
    """An argparse type: a torch device name torch can see (:func:`learner.arrays.torch_device`; the torch
    extra), returned as torch spells it; errors name ``flag``.

    Parameters
    ----------
    flag : str
        The option's flag (``--device``), named in the errors.

    Returns
    -------
    callable
        The type: ``str -> str``, raising ``argparse.ArgumentTypeError`` where torch is missing or does not see
        the device.
    """
    def parse(text):
        from .arrays import torch_device

        try:
            return str(torch_device(text))
        except (ImportError, TypeError, ValueError) as exc:
            message = str(exc).replace("`device`", flag).replace(f"got device={text!r}", f"got {flag} {text!r}")
            raise argparse.ArgumentTypeError(message.rstrip(".")) from None

    return parse


def cli_positive_int_or(flag: str, word: str, meaning: object) -> Callable[[str], Any]:
    """An argparse type: a positive integer, or ``word`` (which stands for ``meaning``); errors name ``flag``.

    Parameters
    ----------
    flag : str
        The option's flag, named in the errors.
    word : str
        The word accepted besides integers (``"auto"``).
    meaning : object
        What the type returns for ``word``.

    Returns
    -------
    callable
        The type: ``str -> int`` (an integer in ``[1, CLI_INT_MAX]``) or ``meaning``; anything else raises
        ``argparse.ArgumentTypeError``.
    """
    def parse(text):
        if text == word:
            return meaning
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be a positive integer or {word}; got {text!r}")
        if value > CLI_INT_MAX:
            raise argparse.ArgumentTypeError(f"{flag} must be at most {CLI_INT_MAX:,} or {word}; got {text!r}")
        return value

    return parse


#: The largest integer a command-line option takes (ours): 2³¹ − 1. No count, size or seed index beyond it is
#: feasible on the machines this toolkit targets (an array of that many float64 numbers is 16 GiB), and numpy
#: refuses some dimensions past it with a message that names no option. Seeds (``--seed``) are not capped.
CLI_INT_MAX = 2**31 - 1


def _declared_by(funcs, rename):
    """``{dest: (function, rule)}`` of the rules ``funcs`` declare (a class's are its ``__init__``'s); the first
    function to declare a name wins; ``rename`` maps a parameter's name to the option's ``dest``."""
    rename = rename or {}
    merged: dict[str, tuple[Any, Rule]] = {}
    for func in funcs:
        target = func.__init__ if isinstance(func, type) else func  # type: ignore[misc]  # a class's own __init__
        for name, rule in getattr(target, "rules", {}).items():
            merged.setdefault(rename.get(name, name), (func, rule))
    return merged


def rules_of(*funcs: Callable[..., Any], rename: Mapping[str, str] | None = None) -> dict[str, Rule]:
    """The declared rules of ``funcs`` by parameter name (the first function to declare a name wins).

    Parameters
    ----------
    *funcs : callable
        Functions decorated with :func:`~learner.validation.declare` (a class stands for its ``__init__``);
        others declare nothing.
    rename : mapping of str to str, optional
        A parameter's name to the option's ``dest`` (``{"n": "n_samples"}``).

    Returns
    -------
    dict
        ``{dest: rule}``.
    """
    return {dest: rule for dest, (_, rule) in _declared_by(funcs, rename).items()}


def declare_options(parser: CommandParser, *funcs: Callable[..., Any], rename: Mapping[str, str] | None = None,
                    rules: Mapping[str, Rule] | None = None) -> CommandParser:
    """Give each option of ``parser`` that is passed to one of ``funcs`` the function's declared rule as
    its argparse type (named by the option's flag), so the command line and the function check alike.

    A :class:`~learner.validation.Choice` becomes the option's ``choices``; a
    :class:`~learner.validation.Boolean` and flags without a value are left alone; an
    :class:`~learner.validation.Each` types each value and checks the whole list after parsing
    (:meth:`CommandParser.parse_known_args`).

    Parameters
    ----------
    parser : CommandParser
        The parser whose options (those of :attr:`CommandParser.options`, not its sub-commands') get types.
    *funcs : callable
        The functions the options are passed to, first declaration of a name winning (see :func:`rules_of`).
    rename : mapping of str to str, optional
        A parameter's name to the option's ``dest``.
    rules : mapping of str to rule, optional
        Rules by ``dest`` for options that are not one function's parameter; they override the functions'.

    Returns
    -------
    CommandParser
        ``parser``, changed in place.
    """
    # Each option's rule and the function that declared it (None for ``rules``): the tests check the very rule.
    table = _declared_by(funcs, rename) | {dest: (None, rule) for dest, rule in (rules or {}).items()}
    for action in parser.options:
        owner, rule = table.get(action.dest, (None, None))
        if rule is None or not action.option_strings or action.nargs == 0 or isinstance(rule, Boolean):
            continue
        if isinstance(rule, Choice):
            action.choices = rule.values
            continue
        flag = action.option_strings[-1]
        action.type = cli_type(flag, rule.rule if isinstance(rule, Each) else rule)
        action.declared = (owner, rule)  # type: ignore[attr-defined]
        if isinstance(rule, Each) and action.nargs in ("+", "*"):
            action.whole_rule = (flag, rule)  # type: ignore[attr-defined]  # whole list: after parsing (command_parser)
    return parser


def limit_options(parser: CommandParser, limits: Mapping[str, tuple[float, str]]) -> CommandParser:
    """Bound the options of ``parser`` named in ``limits`` (by ``dest``): each keeps its rule (the declared one,
    or an integer's or a number's) with the upper bound :func:`~learner.validation.limited` gives it, so that a
    size no run could finish is refused while the options are read, naming the flag.

    Parameters
    ----------
    parser : CommandParser
        A sub-command's parser, after :func:`declare_options`.
    limits : mapping of str to (number, str)
        ``{dest: (maximum, why)}``: the limit and how it was sized.

    Returns
    -------
    CommandParser
        ``parser``, changed in place.

    Raises
    ------
    ValueError
        If a name of ``limits`` is no option of ``parser`` (a limit that would bound nothing).
    """
    actions = {action.dest: action for action in parser.options if action.option_strings}
    unknown = sorted(set(limits) - set(actions))
    if unknown:
        raise ValueError(f"limit_options: {parser.prog} has no option(s) {unknown}")
    for dest, (maximum, why) in limits.items():
        action = actions[dest]
        whole = getattr(action, "whole_rule", (None, None))[1]
        rule = whole or getattr(action.type, "rule", None) or (Real(sign=False) if action.type is float
                                                               else Integer(minimum=None))
        action.unlimited = action.type  # type: ignore[attr-defined]  # the rule as declared, before its limit
        rule = limited(rule, maximum, why)
        flag = action.option_strings[-1]
        action.type = cli_type(flag, rule.rule if isinstance(rule, Each) else rule)
        if whole is not None:
            action.whole_rule = (flag, rule)  # type: ignore[attr-defined]
    return parser


def harden(parser: CommandParser) -> CommandParser:
    """Give every ``type=int`` / ``type=float`` option of ``parser`` and its sub-commands the validation layer's
    type: an integer of size at most :data:`CLI_INT_MAX`, a finite number; the message names the option.
    Ranges stay with the functions the options are passed to (their messages name the parameter).

    Parameters
    ----------
    parser : CommandParser
        The parser; its sub-commands' parsers are hardened too.

    Returns
    -------
    CommandParser
        ``parser``, changed in place.
    """
    for sub in (parser.commands.choices.values() if parser.commands is not None else ()):
        harden(sub)
    for action in parser.options:
        if action.option_strings and action.type in (int, float):
            flag = action.option_strings[-1]
            action.type = cli_type(flag, Integer(minimum=None) if action.type is int else Real(sign=False))
    return parser


class CommandParser(argparse.ArgumentParser):
    """The ``argparse.ArgumentParser`` of the toolkit's command lines.

    A usage error is one line on standard error, ``PROG: error: argument --flag: …``, and exit status 2
    (argparse's own prints the usage first). It keeps what it is built from through argparse's public
    API: :attr:`options`, the actions :meth:`add_argument` returned (also those added to a group), and
    :attr:`commands`, the sub-parsers' action :meth:`add_subparsers` returned (``None`` without sub-commands).
    Its sub-command parsers are of the same class.

    Parameters
    ----------
    *args : object
        ``argparse.ArgumentParser``'s positional arguments.
    **kwargs : object
        ``argparse.ArgumentParser``'s keyword arguments.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: The actions :meth:`add_argument` returned, in order, those added to a group included.
        self.options: list[argparse.Action] = []
        #: The sub-parsers' action :meth:`add_subparsers` returned; ``None`` without sub-commands.
        self.commands: argparse._SubParsersAction[CommandParser] | None = None
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """argparse's ``add_argument``; the action it returns is kept in :attr:`options`.

        Parameters
        ----------
        *args : str
            The option's flags, or a positional's name.
        **kwargs : object
            argparse's keywords (``type``, ``default``, ``help``, ...).

        Returns
        -------
        argparse.Action
            The new action.
        """
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action

    def _recording(self, group):
        add = group.add_argument

        def add_argument(*args, **kwargs):
            action = add(*args, **kwargs)
            self.options.append(action)
            return action

        group.add_argument = add_argument
        return group

    def add_argument_group(self, *args: Any, **kwargs: Any) -> argparse._ArgumentGroup:
        """argparse's ``add_argument_group``; the options added to the group are kept in :attr:`options`.

        Parameters
        ----------
        *args : object
            argparse's positional arguments (the title, the description).
        **kwargs : object
            argparse's keyword arguments.

        Returns
        -------
        argparse._ArgumentGroup
            The group; its ``add_argument`` records each action in :attr:`options`.
        """
        return self._recording(super().add_argument_group(*args, **kwargs))

    def add_mutually_exclusive_group(self, **kwargs: Any) -> argparse._MutuallyExclusiveGroup:
        """argparse's ``add_mutually_exclusive_group``; its options are kept in :attr:`options`.

        Parameters
        ----------
        **kwargs : object
            argparse's keyword arguments (``required``).

        Returns
        -------
        argparse._MutuallyExclusiveGroup
            The group; its ``add_argument`` records each action in :attr:`options`.
        """
        return self._recording(super().add_mutually_exclusive_group(**kwargs))

    def add_subparsers(self, **kwargs: Any) -> argparse._SubParsersAction[Any]:
        """argparse's ``add_subparsers``; the action it returns is :attr:`commands`.

        Parameters
        ----------
        **kwargs : object
            argparse's keyword arguments (``dest``, ``required``, ...).

        Returns
        -------
        argparse._SubParsersAction
            The sub-parsers' action, also kept as :attr:`commands`.
        """
        self.commands = super().add_subparsers(**kwargs)
        return self.commands

    def command(self, name: str) -> CommandParser | None:
        """The parser of sub-command ``name``.

        Parameters
        ----------
        name : str
            The sub-command.

        Returns
        -------
        CommandParser or None
            Its parser; ``None`` when there is no such sub-command (or no sub-commands).
        """
        return None if self.commands is None else self.commands.choices.get(name)

    def error(self, message: str) -> NoReturn:
        """Exit with status 2 after one line on standard error, ``PROG: error: MESSAGE`` (no usage).

        Parameters
        ----------
        message : str
            The error, as argparse words it (``argument --d: ...``).

        Raises
        ------
        SystemExit
            Always, with status 2.
        """
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args: Iterable[str] | None = None, namespace: Any = None) -> tuple[Any, list[str]]:
        """argparse's ``parse_known_args``, then the whole-list rules of :func:`declare_options` (distinct,
        non-empty lists), each failure a usage error naming the flag.

        Parameters
        ----------
        args : iterable of str, optional
            The arguments; ``sys.argv[1:]`` when None.
        namespace : argparse.Namespace, optional
            The namespace to fill; a new one when None.

        Returns
        -------
        namespace : argparse.Namespace
            The parsed options, the declared lists replaced by what their rule returns.
        extras : list of str
            The arguments not recognised.
        """
        namespace, extras = super().parse_known_args(args, namespace)
        for action in self.options:  # lists declared by a rule (declare_options): distinct, non-empty
            flag, rule = getattr(action, "whole_rule", (None, None))
            value = getattr(namespace, action.dest, None)
            if rule is not None and isinstance(value, list):
                try:
                    setattr(namespace, action.dest, rule.check(flag, value))
                except (TypeError, ValueError) as exc:
                    self.error(f"argument {flag}: {str(exc).rstrip('.')}")
        return namespace, extras


def command_parser(*, version: bool = True, **kwargs: Any) -> CommandParser:
    """A :class:`CommandParser`, with ``--version`` (the toolkit's version) unless ``version`` is False.

    Parameters
    ----------
    version : bool, default True
        Add ``--version``, which prints the program's name and ``learner.__version__`` and exits 0.
    **kwargs : object
        ``argparse.ArgumentParser``'s keyword arguments (``prog``, ``description``, ...).

    Returns
    -------
    CommandParser
        The new parser.

    Examples
    --------
    >>> parser = command_parser(prog="demo")
    >>> _ = parser.add_argument("--n", type=int)
    >>> parser.parse_args(["--n", "3"]).n, [a.dest for a in parser.options]
    (3, ['help', 'version', 'n'])
    """
    parser = CommandParser(**kwargs)
    if version:
        from ._version import __version__

        parser.add_argument("--version", action="version", version=f"%(prog)s (provable-attention {__version__})",
                            help="print the toolkit's version and exit")
    return parser


def _kind(rule):
    """What a rule's values are called in a parse error: "an integer", "a number", …"""
    if isinstance(rule, OrWord):
        return f"{_kind(rule.rule)} or the word {rule.word!r}"
    return {Integer: "an integer", Seed: "a non-negative integer (seed entropy)"}.get(type(rule), "a number")


def cli_type(flag: str, rule: Rule) -> Callable[[str], Any]:
    """The argparse type of option ``flag`` from a validation ``rule``: the same check as the library's,
    with the message naming ``flag`` (argparse prints it as ``argument --flag: …`` and exits 2).

    Parameters
    ----------
    flag : str
        The option's flag (``--epochs``), named in the messages.
    rule : Integer, Real, Seed, Boolean, Choice, Each or OrWord
        The rule: its ``parse`` reads the text, its ``check`` checks the value; an integer (an
        :class:`~learner.validation.Integer`, alone or in an :class:`~learner.validation.OrWord`) is also
        capped at :data:`CLI_INT_MAX` in size.

    Returns
    -------
    callable
        The type: ``str -> value``, raising ``argparse.ArgumentTypeError``; it carries ``rule`` as its ``rule``
        attribute.

    Examples
    --------
    >>> import argparse
    >>> from learner.validation import Integer
    >>> parse = cli_type("--epochs", Integer())
    >>> parse("5")
    5
    >>> try:
    ...     parse("0")
    ... except argparse.ArgumentTypeError as exc:
    ...     print(exc)
    `--epochs` must be at least 1; got --epochs=0
    """
    def parse(text):
        try:
            value = rule.parse(text)
        except ValueError as exc:
            kind = _kind(rule) + (f" of at most {SEED_MAX_DIGITS} digits" if "digits" in str(exc) else "")
            raise argparse.ArgumentTypeError(f"`{flag}` must be {kind}; got {flag} {text[:40]!r}"
                                             + ("…" if len(text) > 40 else "")) from None
        inner = rule.rule if isinstance(rule, OrWord) else rule
        if isinstance(inner, Integer) and isinstance(value, int) and abs(value) > CLI_INT_MAX:
            raise argparse.ArgumentTypeError(f"`{flag}` must be at most {CLI_INT_MAX:,} in size; got {flag} {text}")
        try:
            return rule.check(flag, value)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc).rstrip(".")) from None

    parse.__name__ = flag.lstrip("-").replace("-", "_")  # argparse names the type in some messages
    parse.rule = rule  # type: ignore[attr-defined]
    return parse


def flag_message(parser: CommandParser, command: str, text: str) -> str:
    """``text`` (a library error) with each parameter of sub-command ``command`` that is one of its options
    named by the option's flag: "`d` must be at least 1; got d=0" becomes "`--d` must …; got --d=0".

    For the checks that run inside a function because they relate several parameters (``--d`` against
    ``--m``, ``--fit-tol`` against the runs' tolerances), this names what the user typed. Only exact parameter names are
    replaced (in backquotes, or before ``=`` after a space or bracket).

    Parameters
    ----------
    parser : CommandParser
        The command line's parser.
    command : str
        The sub-command whose options are looked up.
    text : str
        The library's message.

    Returns
    -------
    str
        The message with the option flags in place of the parameter names; ``text`` unchanged when there is no
        such sub-command.
    """
    import re

    p = parser.command(command)
    if p is None:
        return text
    for action in p.options:
        if not action.option_strings or not action.option_strings[-1].startswith("--"):
            continue
        flag, dest = action.option_strings[-1], action.dest
        text = re.sub(rf"`{re.escape(dest)}`", f"`{flag}`", text)
        text = re.sub(rf"(?<![\w.\-]){re.escape(dest)}(?==)", flag, text)
    return text


#: Options that name an output (a file, or a directory where their metavar is DIR); inputs are not listed.
OUTPUT_OPTIONS = ("json", "out", "examples", "plot", "plot_dir")
#: Options (and positionals) that name what a command reads, a file or a folder (metavar DIR): no output of the
#: same command may be that file or lie inside that folder.
INPUT_OPTIONS = ("layer", "torch_layer", "path", "sweeps")


def declare_files(action: argparse.Action, names: Iterable[str]) -> argparse.Action:
    """Declare the files a folder option (metavar ``DIR``) writes into its folder, so that each is checked as a
    file output is (:func:`check_output_options`): not a file the toolkit did not write, not the same file as
    another output or an input.

    Parameters
    ----------
    action : argparse.Action
        The folder option, as ``add_argument`` returned it.
    names : iterable of str
        The names of the files the command writes into the folder.

    Returns
    -------
    argparse.Action
        ``action``, which now carries the names as its ``files`` attribute.
    """
    action.files = tuple(names)  # type: ignore[attr-defined]
    return action


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: the same resolved path (``./x``, ``x`` and a symlink to ``x`` count as
    one), or, when both exist, the same device and inode (hard links).

    Parameters
    ----------
    a, b : str or os.PathLike
        The two paths; neither needs to exist.

    Returns
    -------
    bool
        True when writing one would replace the other.
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _inside(path, folder):
    """Whether ``path`` is ``folder`` or lies in it: by resolved paths, or as a file the folder reads under another
    name (a hard link in it, or a symlink in it that leads to the file)."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    if real == top or os.path.commonpath([real, top]) == top:
        return True
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or not os.path.isdir(folder):
        return False
    for root, _, names in os.walk(folder):  # another name in the folder for a file outside it (stat follows links)
        for name in names:
            try:
                other = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return True
    return False


def _collision(output, other, role):
    """The message when ``output`` (``(option, path, kind)``) overlaps ``other``, which the command ``role``s;
    None when they are apart."""
    (option, path, kind), (them, their_path, their_kind) = output, other
    folder, their_folder = kind == "dir", their_kind == "dir"
    if not folder and not their_folder:
        if same_file(path, their_path):
            return (f"{option} {path!r} is the same file as {them} {their_path!r}, which the command {role}: "
                    f"one would replace the other. Give {option} another name.")
        return None
    if their_folder and _inside(path, their_path):
        return (f"{option} {path!r} lies inside {them} {their_path!r}, a folder the command {role}: what it writes "
                f"there could replace what is there. Give {option} a path outside it.")
    if folder and _inside(their_path, path):
        return (f"{option} {path!r} holds {them} {their_path!r}, which the command {role}: what it writes into the "
                f"folder could replace it. Give {option} another folder.")
    return None


def _paths_of(parser, args):
    """``(outputs, inputs)`` of ``args``: ``(option, path, kind)`` of every path given, ``kind`` one of ``"file"``,
    ``"dir"`` (a folder), ``"listed"`` (a folder whose files are declared, :func:`declare_files`) and ``"in"``
    (one of those files, which count as file outputs of the folder's option)."""
    outputs, inputs = [], []
    for action in parser.command(args.command).options:
        value = getattr(args, action.dest, None)
        option = action.option_strings[-1] if action.option_strings else "the input"
        listed = getattr(action, "files", ())
        for path in (str(v) for v in (value if isinstance(value, list) else [value])
                     if isinstance(v, (str, os.PathLike))):
            if action.dest in INPUT_OPTIONS:
                inputs.append((option, path, "dir" if action.metavar == "DIR" or os.path.isdir(path) else "file"))
            elif action.dest in OUTPUT_OPTIONS:
                kind = "file" if action.metavar != "DIR" else "listed" if listed else "dir"
                outputs.append((option, path, kind))
                outputs += [(option, os.path.join(path, name), "in") for name in listed]
    return outputs, inputs


def _check_input(option, path):
    """A name too long or a symlink loop in an input, named by its option (a positional: by its path)."""
    try:  # else either fails later, inside the reader, as an OSError
        check_path(option, path)
    except ValueError as exc:
        if option != "the input":
            raise
        why = (f"a name in it is longer than {NAME_MAX} bytes, which file systems refuse." if "bytes long" in str(exc)
               else "it runs into a symlink loop (a link that leads back to itself); remove the loop.")
        raise ValueError(f"cannot read {path!r}: {why}") from None


def _check_output(option, path, kind):
    """The checks of one output before the command runs (see :func:`check_output_options`)."""
    if option.startswith("--plot") and kind != "in":
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise ValueError(f"{option} needs matplotlib (the `plot` extra: pip install -e '.[plot]'); "
                             f"got {option} {path!r} without it.")
    if kind in ("dir", "listed"):
        check_writable_dir(option, path)
    elif kind == "file" or os.path.lexists(path):
        check_writable_file(option, path, given=path if kind == "file" else os.path.dirname(path))
    else:  # a file the folder option will write into a folder that may not exist yet
        check_path(option, path)


def check_output_options(parser: CommandParser, args: argparse.Namespace) -> None:
    """Check every output option of ``args`` before the command runs (a lost record costs the whole run).

    A file's directory must exist and take files, and an existing file must be one the toolkit wrote
    (:func:`~learner.io.check_writable_file`); a directory (metavar ``DIR``) must take files, or be creatable
    where files can be (:func:`~learner.io.check_writable_dir`; nothing is created here), and the files declared
    for it (:func:`declare_files`) are checked as file outputs; a plot needs matplotlib. No output may be the same
    file (:func:`same_file`) as another output or as one of the command's inputs (:data:`INPUT_OPTIONS`), nor lie
    inside a folder the command reads (``theory yield-study sc --json sc/summary.json``), nor be a folder that
    holds an input. Every path, input or output, is refused by its option when a name in it is too long for a
    file system or it runs into a symlink loop. Shared by the ``learner``, ``theory`` and ``lowerbounds``
    command lines.

    Parameters
    ----------
    parser : CommandParser
        The command line's parser (its sub-command ``args.command`` names the options).
    args : argparse.Namespace
        The parsed arguments; ``args.command`` is the sub-command.

    Raises
    ------
    ValueError
        Naming the option, for the first path that cannot be read or written, or that would replace another.
    """
    outputs, inputs = _paths_of(parser, args)
    for option, path, _ in inputs:
        _check_input(option, path)
    for output in outputs:
        _check_output(*output)
    outputs = [o for o in outputs if o[2] != "listed"]  # a listed folder collides through its files
    for i, output in enumerate(outputs):
        others = [(o, "also writes") for o in outputs[i + 1:]] + [(o, "reads") for o in inputs]  # a folder's files too
        for other, role in others:
            problem = _collision(output, other, role)
            if problem:
                raise ValueError(problem)


def _sizes_given(parser, args):
    """The numeric options of ``args.command`` set away from their defaults (``--lattice-n 500``), seeds left out."""
    sub = parser.command(args.command)
    given = [(a.option_strings[-1], getattr(args, a.dest, None), a.default) for a in sub.options if a.option_strings]
    return [f"{flag} {value}" for flag, value, default in given
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value != default
            and flag != "--seed"]


def end_in_one_line(parser: CommandParser, args: argparse.Namespace, exc: KeyboardInterrupt | MemoryError) -> int:
    """End a command stopped by Ctrl-C or by memory run out with one line on standard error, no traceback.

    Ctrl-C: SIGINT is ignored from then on (the command is ending: more Ctrl-Cs change nothing) and the status is
    the shell's for SIGINT. Memory run out: the line names the numeric options set away from their defaults.

    Parameters
    ----------
    parser : CommandParser
        The command line's parser.
    args : argparse.Namespace
        The parsed arguments; ``args.command`` is the sub-command.
    exc : KeyboardInterrupt or MemoryError
        What stopped the command.

    Returns
    -------
    int
        130 for Ctrl-C, 2 for memory run out.
    """
    if isinstance(exc, KeyboardInterrupt):
        set_ctrl_c(signal.SIG_IGN)
        kill_live_pools()
        print(f"\ninterrupted: `{args.command}` stopped by Ctrl-C.", file=sys.stderr)
        return 130
    sizes = ", ".join(_sizes_given(parser, args))
    print(f"error: out of memory in `{args.command}`{f' ({sizes})' if sizes else ''}: the arrays of this setting do "
          f"not fit in RAM{f' ({exc})' if str(exc) else ''}; give smaller sizes.", file=sys.stderr)
    return 2
