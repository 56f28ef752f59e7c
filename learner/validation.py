"""Validation helpers shared by the public functions and the command lines of the toolkit.

Every public function validates at its boundary and names the parameter and
the bad value in the message, so a user sees *what* was wrong, not a
traceback from deep inside numpy. ``learner``, ``theory`` and ``lowerbounds``
all use these (``check_*`` for arguments, ``cli_*`` as argparse types).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CLI_INT_MAX",
    "DISTRIBUTIONS",
    "Integer",
    "Real",
    "check_bool",
    "check_distribution",
    "check_int",
    "check_positive_float",
    "check_real_array",
    "check_rng",
    "cli_auto_or_int",
    "command_parser",
    "harden",
    "cli_positive_int_or",
    "cli_seed",
    "cli_type",
]

DISTRIBUTIONS = ("boolean", "gaussian")
#: The largest integer the checks pass on: numpy's sizes and counts are int64.
INT64_MAX = 2**63 - 1


def check_int(name, value, *, minimum=1):
    """Return ``value`` as an ``int`` if it is an integer ``>= minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {name}={value!r}.")
    value = int(value)
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}; got {name}={value}.")
    if value > INT64_MAX:  # numpy's sizes and counts are int64: larger ones overflow in its own words
        raise ValueError(f"`{name}` must be at most 2**63 - 1 (an int64); got {name}={value}.")
    return value


def check_bool(name, value):
    """Return ``value`` as a ``bool`` if it is one (numpy's included): a string such as "no" is not."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False; got {name}={value!r}.")
    return bool(value)


def check_positive_float(name, value, *, allow_zero=False):
    """Return ``value`` as a finite float that is positive (or zero if allowed)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {name}={value!r}.")
    value = float(value)
    ok = value >= 0 if allow_zero else value > 0
    if not (np.isfinite(value) and ok):
        bound = "non-negative" if allow_zero else "positive"
        raise ValueError(f"`{name}` must be finite and {bound}; got {name}={value!r}.")
    return value


def check_distribution(distribution):
    """Return ``distribution`` if it names a supported input distribution."""
    if not isinstance(distribution, str) or distribution not in DISTRIBUTIONS:
        raise ValueError(
            f"`distribution` must be one of {DISTRIBUTIONS}; got distribution={distribution!r}."
        )
    return distribution


def check_real_array(name, value, *, ndim=None):
    """Return ``value`` as a float64 array, rejecting complex, object and non-finite data."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"`{name}` could not be converted to an array: {exc}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == np.bool_
    ):
        raise TypeError(f"`{name}` must hold real numbers; got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if ndim is not None and arr.ndim not in np.atleast_1d(ndim):
        raise ValueError(f"`{name}` must have {_ndim_words(ndim)}; got shape {arr.shape}.")
    if not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        raise ValueError(f"`{name}` must be finite; it contains {bad}.")
    return arr


def _ndim_words(ndim):
    options = [f"{n} dimensions" for n in np.atleast_1d(ndim)]
    return " or ".join(options)


def cli_seed(text):
    """argparse type of ``--seed``: a non-negative integer (SeedSequence entropy), named in the error."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0 or str(text).strip() != str(value):
        raise argparse.ArgumentTypeError(f"must be a non-negative integer (seed entropy); got {text!r}")
    return value


def cli_positive_int_or(flag, word, meaning):
    """An argparse type: a positive integer, or ``word`` (which stands for ``meaning``); errors name ``flag``."""
    import argparse

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


def cli_auto_or_int(text):
    """An argparse type: the word ``auto`` or an integer."""
    import argparse

    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None
    if abs(value) > CLI_INT_MAX:
        raise argparse.ArgumentTypeError(f"expected an integer of at most {CLI_INT_MAX:,} in size or 'auto', "
                                         f"got {text!r}")
    return value


#: The largest integer a command-line option takes (ours): 2³¹ − 1. No count, size or seed index beyond it is
#: feasible on the machines this toolkit targets (an array of that many float64 numbers is 16 GiB), and numpy
#: refuses some dimensions past it with a message that names no option. Seeds (``--seed``) are not capped.
CLI_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Integer:
    """Declared once, checked everywhere: an integer ``>= minimum`` (a rule of the validation layer).

    ``rule.check(name, value)`` is the library's check (``TypeError``/``ValueError`` naming ``name``, as the
    caller wrote it: ``epochs``); :func:`cli_type` turns the same rule into an argparse type whose error
    names the option (``--epochs``).
    """

    minimum: int | None = 1

    def check(self, name, value):
        if self.minimum is None:  # any integer: the range is the library's to check
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise TypeError(f"`{name}` must be an integer; got {name}={value!r}.")
            return int(value)
        return check_int(name, value, minimum=self.minimum)

    def parse(self, text):
        return int(text)


@dataclass(frozen=True)
class Real:
    """A finite real number, ``> 0`` (or ``>= 0`` with ``allow_zero``; any sign with ``sign=False``): a rule of
    the validation layer."""

    allow_zero: bool = False
    sign: bool = True

    def check(self, name, value):
        if not self.sign:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"`{name}` must be a real number; got {name}={value!r}.")
            if not np.isfinite(value):
                raise ValueError(f"`{name}` must be finite; got {name}={float(value)!r}.")
            return float(value)
        return check_positive_float(name, value, allow_zero=self.allow_zero)

    def parse(self, text):
        return float(text)


def harden(parser):
    """Give every ``type=int`` / ``type=float`` option of ``parser`` and its sub-commands the validation layer's
    type: an integer of size at most :data:`CLI_INT_MAX`, a finite number; the message names the option.
    Ranges stay with the functions the options are passed to (their messages name the parameter)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                harden(sub)
        elif action.option_strings and action.type in (int, float):
            flag = action.option_strings[-1]
            action.type = cli_type(flag, Integer(minimum=None) if action.type is int else Real(sign=False))
    return parser


def command_parser(**kwargs):
    """The ``argparse.ArgumentParser`` of the toolkit's command lines: a usage error is one line on standard
    error, ``PROG: error: argument --flag: …``, and exit status 2 (argparse's own prints the usage first).
    Its sub-command parsers are of the same class."""
    import argparse

    class CommandParser(argparse.ArgumentParser):
        def error(self, message):
            self.exit(2, f"{self.prog}: error: {message}\n")

    return CommandParser(**kwargs)


def cli_type(flag, rule):
    """The argparse type of option ``flag`` from a validation ``rule``: the same check as the library's,
    with the message naming ``flag`` (argparse prints it as ``argument --flag: …`` and exits 2)."""
    import argparse

    def parse(text):
        try:
            value = rule.parse(text)
        except ValueError:
            kind = "an integer" if isinstance(rule, Integer) else "a number"
            raise argparse.ArgumentTypeError(f"`{flag}` must be {kind}; got {flag} {text!r}") from None
        if isinstance(rule, Integer) and abs(value) > CLI_INT_MAX:
            raise argparse.ArgumentTypeError(f"`{flag}` must be at most {CLI_INT_MAX:,} in size; got {flag} {text}")
        try:
            return rule.check(flag, value)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc).rstrip(".")) from None

    parse.__name__ = flag.lstrip("-").replace("-", "_")  # argparse names the type in some messages
    return parse


def check_rng(rng, name="rng"):
    """``np.random.default_rng(rng)`` for the accepted seeds, else an error naming ``name`` and the value.

    Accepted: None (fresh entropy), a non-negative integer, a ``SeedSequence``, a
    ``BitGenerator`` or a ``Generator`` (returned as is), as SPEC 7 describes.
    """
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator, np.random.Generator)):
        return np.random.default_rng(rng)
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, numbers.Integral):
        raise TypeError(f"`{name}` must be None, a non-negative integer, a SeedSequence or a Generator; "
                        f"got {name}={rng!r}.")
    if rng < 0:
        raise ValueError(f"`{name}` must be a non-negative integer seed; got {name}={int(rng)}.")
    return np.random.default_rng(int(rng))
