"""The validation layer shared by the public functions and the command lines of the toolkit.

Each parameter's type and range is declared once, as a *rule* (:class:`Integer`, :class:`Real`,
:class:`Seed`, :class:`Choice`), next to the function that takes it: ``@declare(d=Integer(1), lr=Real())``
checks the arguments of every call, and :func:`learner.argparsing.declare_options` gives the command-line
options that are passed to that function the same rule as their argparse type (our design, in the spirit of
scikit-learn's ``validate_params``). Messages name the parameter as the caller wrote it: ``lr`` in Python
(``TypeError``/``ValueError``), ``--adam-lr`` on the command line (one line, exit status 2).
:func:`learner.argparsing.harden` gives every remaining numeric option a finite, bounded type. ``learner``,
``theory`` and ``lowerbounds`` all use these; ``check_*`` remain for checks that are not one parameter's range.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .hints import SeedLike

__all__ = [
    "DISTRIBUTIONS",
    "SEED_MAX_DIGITS",
    "Boolean",
    "Choice",
    "Each",
    "Integer",
    "OrWord",
    "Real",
    "SCALE_BELOW",
    "SIZE_LIMITS",
    "Scale",
    "Seed",
    "available_memory",
    "check_bool",
    "check_int",
    "check_memory",
    "check_positive_float",
    "check_real_array",
    "check_rng",
    "declare",
    "limited",
]

#: The input distributions the toolkit draws from: ``"boolean"`` (entries uniform on ±1, the paper's setting) and
#: ``"gaussian"`` (standard normal entries, the paper's stated extension).
DISTRIBUTIONS = ("boolean", "gaussian")

#: Exclusive upper bound of every scale a user gives (logit scale, W scale, label noise, sharpness; ours): a
#: label or logit of this size still has a square that fits float64 (1e200 < 1.8e308), which the least-squares
#: phases form, at every d the toolkit plants; larger values only overflow later, far from the option that set them.
#: The learner's measured reach in logit scale is below 10, so the bound refuses nothing learnable.
SCALE_BELOW = 1e100
#: Size limits of the command lines' options, ``{name: (maximum, how it was sized)}`` (ours), given to an option
#: by :func:`learner.argparsing.limit_options` and checked while the options are read: a run at a limit ends in
#: minutes to hours on a laptop; a larger one would run for days or exhaust memory before its first line of output.
#: Each entry says how it was sized (a measured rate or a memory formula). Commands with sizes of their own
#: (``lowerbounds``) keep theirs beside their parsers.
SIZE_LIMITS: dict[str, tuple[float, str]] = {
    # demo at its defaults (m = 2, k = 4, 20 000 inputs) measured 17 s at d = 250 and 57 s at d = 500 on 2 cores,
    # its attention figures costing n·k·m·d² products: about a minute at the limit, 15 min at d = 2000.
    "d": (512, " (ours: a pass over 20 000 inputs takes about a minute at d = 512, its time growing as d²)"),
    # the layer holds 2·m·d² float64 numbers: 268 MB at (m, d) = (64, 512), and every command's time grows as m.
    "m": (64, " (ours: the layer's 2·m·d² numbers take 268 MB at m = 64, d = 512)"),
    # each example holds m·k² attention logits: at k = 512 a batch of 1000 two-head examples holds 4 GB of them.
    "k": (512, " (ours: an example holds m·k² attention logits, 4 GB per 1000 at k = 512)"),
    # n·k·d float64 inputs: 10⁸ examples of 4 tokens at d = 8 are 26 GB (sample's memory check refuses sooner).
    "n_samples": (10**8, " (ours: 10⁸ examples of 4 tokens in dimension 8 take 26 GB)"),
    # phase 4 measured 97 628 examples/s at (2, 8, 4): 10⁹ examples are about 3 hours.
    "max_examples": (10**9, " (ours: phase 4 streams about 10⁵ examples/s, so 10⁹ take about 3 hours)"),
    # at (m, d, k) = (2, 8, 4) a learn measured 28 s at logit scale 1000, while at 10⁴, 10⁶, 10¹⁰ and 10⁹⁹
    # phase 4 had not finished after 60 s (it certifies almost no rows); the measured reach is below 10.
    "learn_logit_scale": (1e3, " (ours: beyond it phase 4 certifies almost no rows and runs for hours; the "
                               "learner's measured reach is below 10)"),
    # a worker process holds numpy, scipy and the learner, about 100 MB resident: 25 GB for 256.
    "workers": (256, " (ours: each worker process holds about 100 MB)"),
    # more BLAS threads than cores only slow the products down; 256 covers the largest machines.
    "threads": (256, " (ours: more threads than cores only slow BLAS down)"),
    # the studies' runs take 1 s to minutes each (docs/sweeps): 1000 layers per setting are hours to days.
    "seeds": (1000, " (ours: study runs take 1 s to minutes each, so 1000 per setting take hours to days)"),
    # a benchmark's figure is a median over repeats: 1000 of the default benchmark's (about 2 s) are 30 min.
    "repeat": (1000, " (ours: 1000 repeats of a 2 s benchmark take 30 min)"),
    # an epoch of torch Adam at the studies' sizes (4000 examples, batches of 64) is 62 steps: 10⁵ epochs per
    # restart are 6.2 M steps, hours at the milliseconds a step takes.
    "epochs": (10**5, " (ours: 10⁵ epochs of 62 steps are 6.2 M steps per restart, hours)"),
    # a mini-batch holds batch·k·d inputs and m·batch·k² logits: 10⁷ two-token examples at d = 12 are 2 GB.
    "batch": (10**7, " (ours: a batch of 10⁷ two-token examples at d = 12 holds 2 GB)"),
    # a training step of learner.trained.train_layer (256 inputs) took about 1 ms at (m, d, k) = (2, 12, 2) on one
    # thread: 10⁶ steps are about 20 minutes there and hours at the trained family's largest settings.
    "steps": (10**6, " (ours: a training step takes about 1 ms at (m, d, k) = (2, 12, 2), so 10⁶ take 20 minutes "
                     "there and hours at larger settings)"),
    # race's search halves its ladder once per round: 64 rounds reach below one example from 2⁶³.
    "search_rounds": (64, " (ours: 64 halvings reach below one example from any int64 budget)"),
}
_SCALE_WHY = " (larger values overflow float64 in the layer's products and their squares)"


def Scale(*, allow_zero: bool = False, none: bool = False) -> Real:  # noqa: N802 - a rule, named like the others
    """The :class:`Real` rule of a user's scale: finite, positive (or 0 with ``allow_zero``), below
    :data:`SCALE_BELOW`.

    Parameters
    ----------
    allow_zero : bool, default False
        Accept 0 as well (a label noise of zero, say).
    none : bool, default False
        Accept None (a default the function chooses).

    Returns
    -------
    Real
        The rule; its message says why the bound is there (float64 overflow).
    """
    return Real(allow_zero=allow_zero, none=none, below=SCALE_BELOW, why=_SCALE_WHY)


def available_memory() -> int | None:
    """Bytes of memory this machine can still give a process (Linux's ``MemAvailable``; elsewhere the free
    physical pages), or None where neither is known.

    Returns
    -------
    int or None
        The available memory in bytes, read at the call; None where the OS says neither.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 1024:.3g} KiB"


def check_memory(name: str, nbytes: float, what: str, value: object) -> None:
    """ValueError naming ``name`` (a parameter or the option typed) and ``value`` when ``what`` needs about
    ``nbytes`` bytes, more than :func:`available_memory` says there is: checked before the work allocates it,
    instead of a MemoryError, or the kernel ending the process, after it. Nothing is checked where the
    available memory is unknown.

    Parameters
    ----------
    name : str
        The parameter (``n_samples``) or the option typed (``--n``) that asked for the memory; an option is
        written ``--n 10`` in the message, a parameter ``n=10``.
    nbytes : float
        The bytes the work needs (an estimate).
    what : str
        What needs them, in words (``"10,000,000 examples"``), for the message.
    value : object
        The value that was given for ``name``, for the message.

    Raises
    ------
    ValueError
        If ``nbytes`` exceeds :func:`available_memory`.
    """
    free = available_memory()
    if free is not None and nbytes > free:
        raise ValueError(f"`{name}` asks for {what}, about {_size(nbytes)}, more than the {_size(free)} of memory "
                         f"this machine has free; got {name}{' ' if name.startswith('-') else '='}{value!r}. "
                         "Give a smaller value.")
#: The largest integer the checks pass on (ours to impose: numpy's sizes and counts are int64).
INT64_MAX = 2**63 - 1


def check_int(name: str, value: object, *, minimum: int = 1) -> int:
    """Return ``value`` as an ``int`` if it is an integer ``>= minimum``.

    Parameters
    ----------
    name : str
        The parameter's name, for the messages.
    value : object
        The value to check: a Python or numpy integer (``bool`` is refused).
    minimum : int, default 1
        The smallest value accepted.

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If it is below ``minimum`` or above ``INT64_MAX`` (2**63 − 1).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {name}={value!r}.")
    value = int(value)
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}; got {name}={value}.")
    if value > INT64_MAX:  # numpy's sizes and counts are int64: larger ones overflow in its own words
        raise ValueError(f"`{name}` must be at most 2**63 - 1 (an int64); got {name}={value}.")
    return value


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` as a ``bool`` if it is one (numpy's included): a string such as "no" is not.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : object
        The value to check.

    Returns
    -------
    bool
        ``value`` as a Python bool.

    Raises
    ------
    TypeError
        If ``value`` is not a ``bool`` or ``numpy.bool_`` (0 and 1 are not accepted either).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False; got {name}={value!r}.")
    return bool(value)


def check_positive_float(name: str, value: object, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a finite float that is positive (or zero if allowed).

    Parameters
    ----------
    name : str
        The parameter's name, for the messages.
    value : object
        The value to check: a real number (``bool`` is refused).
    allow_zero : bool, default False
        Accept 0 as well.

    Returns
    -------
    float
        ``value`` as a Python float.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is not finite, or not positive (negative with ``allow_zero``).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {name}={value!r}.")
    value = float(value)
    ok = value >= 0 if allow_zero else value > 0
    if not (np.isfinite(value) and ok):
        bound = "non-negative" if allow_zero else "positive"
        raise ValueError(f"`{name}` must be finite and {bound}; got {name}={value!r}.")
    return value


def check_real_array(name: str, value: ArrayLike, *, ndim: int | Sequence[int] | None = None) -> np.ndarray:
    """Return ``value`` as a float64 array, rejecting complex, object and non-finite data.

    Parameters
    ----------
    name : str
        The parameter's name, for the messages.
    value : array_like
        Real numbers (float, integer or bool dtype).
    ndim : int or sequence of int, optional
        The number(s) of dimensions accepted; any when None.

    Returns
    -------
    numpy.ndarray
        ``value`` as float64: ``value`` itself (not a copy) when it already is a float64 array.

    Raises
    ------
    TypeError
        If the data are not real numbers (complex, object, strings).
    ValueError
        If it cannot be made an array (ragged lists), has another number of dimensions, or is not finite.
    """
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


@dataclass(frozen=True)
class Integer:
    """Declared once, checked everywhere: an integer ``>= minimum`` (a rule of the validation layer).

    ``rule.check(name, value)`` is the library's check (``TypeError``/``ValueError`` naming ``name``, as the
    caller wrote it: ``epochs``); :func:`~learner.argparsing.cli_type` turns the same rule into an argparse type
    whose error names the option (``--epochs``).

    Parameters
    ----------
    minimum : int or None, default 1
        The smallest value accepted; None accepts any integer (the range is then the library's to check).
    none : bool, default False
        Accept None (it stands for a default the function chooses).
    maximum : int or None, default None
        The largest value accepted (a size limit; see :func:`limited`); None: no upper bound but int64's.
    why : str, default ""
        What ``maximum`` protects, said in the message (``" (ours: ...)"``).
    """

    minimum: int | None = 1
    none: bool = False  # None is accepted (it stands for a default the function chooses)
    maximum: int | None = None  # an inclusive upper bound: a size limit checked before the work it sizes
    why: str = ""  # what the upper bound protects, said in the message

    def check(self, name: str, value: object) -> int | None:
        """The library's check of ``value``: an integer of at least ``minimum`` (see :func:`check_int`).

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given.

        Returns
        -------
        int or None
            ``value`` as a Python int; None when it is None and ``none`` allows it.

        Raises
        ------
        TypeError
            If ``value`` is not an integer.
        ValueError
            If it is out of range.
        """
        if value is None and self.none:
            return None
        if self.minimum is None:  # any integer: the range is the library's to check
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise TypeError(f"`{name}` must be an integer; got {name}={value!r}.")
            value = int(value)
        else:
            value = check_int(name, value, minimum=self.minimum)
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"`{name}` must be at most {self.maximum:,}{self.why}; got {name}={value}.")
        return value

    def parse(self, text: str) -> int:
        """The command line's reading of ``text``, before :meth:`check`: Python's ``int``.

        Parameters
        ----------
        text : str
            The option's text as typed.

        Returns
        -------
        int
            The integer written.

        Raises
        ------
        ValueError
            If ``text`` is not an integer literal.
        """
        return int(text)


@dataclass(frozen=True)
class Real:
    """A finite real number, ``> 0`` (or ``>= 0`` with ``allow_zero``; any sign with ``sign=False``): a rule of
    the validation layer.

    Parameters
    ----------
    allow_zero : bool, default False
        Accept 0 as well.
    sign : bool, default True
        Require a positive (or, with ``allow_zero``, non-negative) value; False accepts any finite number.
    none : bool, default False
        Accept None (a default the function chooses).
    below : float, optional
        An exclusive upper bound (a fraction or a tolerance: below 1; a scale: :data:`SCALE_BELOW`).
    why : str, default ""
        What the bound protects, said in the message (``" (larger values overflow ...)"``).
    """

    allow_zero: bool = False
    sign: bool = True
    none: bool = False
    below: float | None = None  # an exclusive upper bound (a fraction or a tolerance: below 1)
    why: str = ""  # what the bound protects, said in the message

    def check(self, name: str, value: object) -> float | None:
        """The library's check of ``value``: finite, of the rule's sign, below ``below`` when set.

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given (``bool`` is refused).

        Returns
        -------
        float or None
            ``value`` as a Python float; None when it is None and ``none`` allows it.

        Raises
        ------
        TypeError
            If ``value`` is not a real number.
        ValueError
            If it is not finite, of the wrong sign, or not below ``below``.
        """
        if value is None and self.none:
            return None
        if not self.sign:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"`{name}` must be a real number; got {name}={value!r}.")
            if not np.isfinite(value):  # type: ignore[call-overload]
                raise ValueError(f"`{name}` must be finite; got {name}={float(value)!r}.")
            value = float(value)
        else:
            value = check_positive_float(name, value, allow_zero=self.allow_zero)
        if self.below is not None and value >= self.below:
            raise ValueError(f"`{name}` must be below {self.below:g}{self.why}; got {name}={value!r}.")
        return value

    def parse(self, text: str) -> float:
        """The command line's reading of ``text``, before :meth:`check`: Python's ``float``.

        Parameters
        ----------
        text : str
            The option's text as typed.

        Returns
        -------
        float
            The number written (``inf`` and ``nan`` too: :meth:`check` refuses them).

        Raises
        ------
        ValueError
            If ``text`` is not a number.
        """
        return float(text)


#: Python refuses to convert integers of more decimal digits than this (ours to mirror: Python's default
#: ``sys.get_int_max_str_digits``).
SEED_MAX_DIGITS = 4300


@dataclass(frozen=True)
class Seed:
    """A seed: a non-negative integer of any size (``SeedSequence`` entropy), or None for fresh entropy when
    ``none``: a rule of the validation layer. On the command line, at most :data:`SEED_MAX_DIGITS` digits.

    Parameters
    ----------
    none : bool, default False
        Accept None (fresh entropy from the OS).
    """

    none: bool = False

    def check(self, name: str, value: object) -> int | None:
        """The library's check of ``value``: a non-negative integer.

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given (``bool`` is refused).

        Returns
        -------
        int or None
            ``value`` as a Python int; None when it is None and ``none`` allows it.

        Raises
        ------
        TypeError
            If ``value`` is not an integer.
        ValueError
            If it is negative.
        """
        if value is None and self.none:
            return None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"`{name}` must be a non-negative integer (seed entropy); got {name}={value!r}.")
        if value < 0:
            raise ValueError(f"`{name}` must be a non-negative integer (seed entropy); got {name}={int(value)}.")
        return int(value)

    def parse(self, text: str) -> int:
        """The command line's reading of ``text``, before :meth:`check`: plain decimal digits.

        Parameters
        ----------
        text : str
            The option's text as typed.

        Returns
        -------
        int
            The seed written.

        Raises
        ------
        ValueError
            If ``text`` is not plain decimal digits (``1_000``, ``+3`` and ``-1`` are refused), or has more
            than :data:`SEED_MAX_DIGITS` of them (the message then says ``at most ... digits``).
        """
        digits = str(text).strip()
        if len(digits) > SEED_MAX_DIGITS and digits.isdigit():
            raise ValueError(f"at most {SEED_MAX_DIGITS} digits")
        value = int(text)
        if digits != str(value) or value < 0:  # "1_000", "+3", "-1": not how a seed is written
            raise ValueError(digits)
        return value


@dataclass(frozen=True)
class Boolean:
    """True or False (numpy's included; a string such as ``"no"`` is not): a rule of the validation layer."""

    def check(self, name: str, value: object) -> bool:
        """The library's check of ``value``: :func:`check_bool`.

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given.

        Returns
        -------
        bool
            ``value`` as a Python bool.

        Raises
        ------
        TypeError
            If ``value`` is not a bool.
        """
        return check_bool(name, value)

    def parse(self, text: str) -> NoReturn:  # command lines spell a flag as its presence (store_true), never as a value
        """Refuse every text: a command line spells a flag by its presence (``store_true``), never as a value.

        Parameters
        ----------
        text : str
            The text typed.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(text)


@dataclass(frozen=True)
class Choice:
    """One of ``values`` (strings): a rule of the validation layer. On the command line, argparse's
    ``choices`` says the same (:func:`~learner.argparsing.declare_options` sets them).

    Parameters
    ----------
    values : tuple of str
        The accepted strings.
    """

    values: tuple

    def check(self, name: str, value: object) -> str:
        """The library's check of ``value``: one of ``values``.

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given.

        Returns
        -------
        str
            ``value``, unchanged.

        Raises
        ------
        ValueError
            If ``value`` is not one of ``values`` (a non-string included).
        """
        if not isinstance(value, str) or value not in self.values:
            raise ValueError(f"`{name}` must be one of {self.values}; got {name}={value!r}.")
        return value

    def parse(self, text: str) -> str:
        """The command line's reading of ``text``: unchanged (argparse's ``choices`` checks it).

        Parameters
        ----------
        text : str
            The option's text as typed.

        Returns
        -------
        str
            ``text``.
        """
        return text


@dataclass(frozen=True)
class Each:
    """A non-empty list whose every entry follows ``rule`` (distinct entries when ``distinct``); a single value
    is taken as itself when ``scalar``: a rule of the validation layer. On the command line the option takes
    several values (``nargs``), each parsed by ``rule``, and the whole list is checked after parsing.

    Parameters
    ----------
    rule : Integer, Real, Seed, Boolean, Choice or OrWord
        The rule every entry follows.
    distinct : bool, default True
        Refuse a list with repeated entries.
    scalar : bool, default False
        Accept a single number or string, checked by ``rule`` and returned as itself (not as a list).
    none : bool, default False
        Accept None (a default the function chooses).
    """

    rule: Rule
    distinct: bool = True
    scalar: bool = False
    none: bool = False

    def check(self, name: str, value: object) -> Any:
        """The library's check of ``value``: a non-empty iterable whose entries pass ``rule``.

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given: an iterable (not a string, bytes or dict), or one value with ``scalar``.

        Returns
        -------
        list or object or None
            The entries as ``rule`` returns them, in a list; a single value as ``rule`` returns it (with
            ``scalar``); None when ``value`` is None and ``none`` allows it.

        Raises
        ------
        TypeError
            If ``value`` is not a list of values, or an entry has the wrong type.
        ValueError
            If the list is empty, an entry is out of range, or entries repeat with ``distinct``.
        """
        if value is None and self.none:
            return None
        if self.scalar and isinstance(value, (numbers.Number, str)):
            return self.rule.check(name, value)
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise TypeError(f"`{name}` must be a list of values; got {name}={value!r}.")
        values = [self.rule.check(name, v) for v in value]
        if not values:
            raise ValueError(f"`{name}` must hold at least one value; got {name}={value!r}.")
        if self.distinct and len(set(values)) != len(values):
            raise ValueError(f"`{name}` must hold distinct values; got {name}={values}.")
        return values

    def parse(self, text: str) -> Any:
        """The command line's reading of one entry: ``rule``'s ``parse``.

        Parameters
        ----------
        text : str
            One of the option's values as typed.

        Returns
        -------
        object
            The entry as ``rule`` reads it.

        Raises
        ------
        ValueError
            If ``rule`` cannot read it.
        """
        return self.rule.parse(text)


@dataclass(frozen=True)
class OrWord:
    """The word ``word`` (``"auto"``) or a value of ``rule``: a rule of the validation layer.

    Parameters
    ----------
    word : str
        The word accepted as itself (``"auto"``).
    rule : Integer, Real, Seed, Boolean, Choice or Each
        The rule of every other value.
    """

    word: str
    rule: Rule

    def check(self, name: str, value: object) -> Any:
        """The library's check of ``value``: ``word`` itself, or a value ``rule`` accepts.

        Parameters
        ----------
        name : str
            The parameter's name as the caller wrote it (``lr`` in Python, ``--adam-lr`` on the command line),
            named in the error message.
        value : object
            The value given.

        Returns
        -------
        object
            ``word``, or ``value`` as ``rule`` returns it.

        Raises
        ------
        TypeError, ValueError
            ``rule``'s error, its message saying that ``word`` is accepted too.
        """
        if isinstance(value, str) and value == self.word:
            return value
        try:
            return self.rule.check(name, value)
        except (TypeError, ValueError) as exc:
            head, sep, tail = str(exc).partition("; got ")
            raise type(exc)(f"{head} (or the word {self.word!r}){sep}{tail}") from None

    def parse(self, text: str) -> Any:
        """The command line's reading of ``text``: ``word`` as itself, anything else by ``rule``.

        Parameters
        ----------
        text : str
            The option's text as typed.

        Returns
        -------
        object
            ``word``, or what ``rule`` reads.

        Raises
        ------
        ValueError
            If ``rule`` cannot read it.
        """
        return text if text == self.word else self.rule.parse(text)


#: A rule of the validation layer (what :func:`declare` takes and :func:`learner.argparsing.cli_type` turns into an
#: argparse type).
Rule: TypeAlias = "Integer | Real | Seed | Boolean | Choice | Each | OrWord"

_F = TypeVar("_F", bound=Callable[..., Any])


def declare(**rules: Rule) -> Callable[[_F], _F]:
    """Declare the rules of a function's parameters; every call checks them (a decorator).

    ``@declare(m=Integer(1), lr=Real())`` binds each call's arguments to the signature and passes every
    declared one that was given through its rule (so ``m=np.int64(2)`` arrives as ``2``); defaults are not
    checked. The rules stay on the function as ``func.rules`` for :func:`~learner.argparsing.declare_options` and
    the tests.

    Parameters
    ----------
    **rules : Integer, Real, Seed, Boolean, Choice, Each or OrWord
        One rule per parameter name of the decorated function.

    Returns
    -------
    callable
        The decorator. It raises ``TypeError`` at once when a rule names no parameter of the function; the
        function it returns checks its arguments at each call and carries ``rules`` (the function's own merged
        with these).

    Examples
    --------
    >>> @declare(n=Integer())
    ... def twice(n):
    ...     return 2 * n
    >>> twice(3)
    6
    >>> twice(0)
    Traceback (most recent call last):
        ...
    ValueError: `n` must be at least 1; got n=0.
    """
    import functools
    import inspect

    def decorate(func):
        signature = inspect.signature(func)
        unknown = set(rules) - set(signature.parameters)
        if unknown:
            raise TypeError(f"declare: {func.__qualname__} has no parameter(s) {sorted(unknown)}")

        @functools.wraps(func)
        def checked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name, rule in rules.items():
                if name in bound.arguments:
                    bound.arguments[name] = rule.check(name, bound.arguments[name])
            return func(*bound.args, **bound.kwargs)

        checked.rules = dict(getattr(func, "rules", {})) | rules  # type: ignore[attr-defined]  # the function's own
        return checked

    return decorate


def limited(rule: Rule, maximum: float, why: str) -> Rule:
    """``rule`` with an upper bound: the size limit of a command-line option, checked while the options are read,
    before any work.

    An :class:`Integer` (alone, or in an :class:`Each` or :class:`OrWord`) gets ``maximum`` as its inclusive
    ``maximum``; a :class:`Real` gets it as its exclusive ``below``. The rule's other terms (its minimum, None)
    are kept.

    Parameters
    ----------
    rule : Integer, Real, Each or OrWord
        The option's rule (the function's declared one, or ``Integer(minimum=None)`` for an undeclared count).
    maximum : int or float
        The limit, sized from a time or memory estimate by the command that sets it.
    why : str
        How the limit was sized, said in the message (``" (ours: ...)"``).

    Returns
    -------
    Integer, Real, Each or OrWord
        A new rule of the same kind.

    Raises
    ------
    TypeError
        If ``rule`` has no number to bound (a :class:`Choice`, a :class:`Seed`, a :class:`Boolean`).

    Examples
    --------
    >>> rule = limited(Integer(), 100, " (ours: a minute at 0.6 s each)")
    >>> rule.check("trials", 100)
    100
    >>> rule.check("trials", 101)
    Traceback (most recent call last):
        ...
    ValueError: `trials` must be at most 100 (ours: a minute at 0.6 s each); got trials=101.
    """
    import dataclasses

    if isinstance(rule, Each):
        return dataclasses.replace(rule, rule=limited(rule.rule, maximum, why))
    if isinstance(rule, OrWord):
        return dataclasses.replace(rule, rule=limited(rule.rule, maximum, why))
    if isinstance(rule, Integer):
        return dataclasses.replace(rule, maximum=int(maximum), why=why)
    if isinstance(rule, Real):
        return dataclasses.replace(rule, below=float(maximum), why=why)
    raise TypeError(f"`rule` must be an Integer, Real, Each or OrWord rule to bound; got {rule!r}.")


def check_rng(rng: SeedLike, name: str = "rng") -> np.random.Generator:
    """``np.random.default_rng(rng)`` for the accepted seeds, else an error naming ``name`` and the value.

    Accepted: None (fresh entropy), a non-negative integer, a ``SeedSequence``, a
    ``BitGenerator`` or a ``Generator`` (returned as is), as SPEC 7 describes.

    Parameters
    ----------
    rng : None, int, SeedSequence, BitGenerator or Generator
        The seed.
    name : str, default "rng"
        The parameter's name, for the messages.

    Returns
    -------
    numpy.random.Generator
        ``rng`` itself when it is a Generator, else a new one seeded from it.

    Raises
    ------
    TypeError
        If ``rng`` is of another type (``bool`` included).
    ValueError
        If it is a negative integer.
    """
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator, np.random.Generator)):
        return np.random.default_rng(rng)
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, numbers.Integral):
        raise TypeError(f"`{name}` must be None, a non-negative integer, a SeedSequence or a Generator; "
                        f"got {name}={rng!r}.")
    if rng < 0:
        raise ValueError(f"`{name}` must be a non-negative integer seed; got {name}={int(rng)}.")
    return np.random.default_rng(int(rng))
