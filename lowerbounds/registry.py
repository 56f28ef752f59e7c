"""The registry of hard families: what ``learn-hard``, the command line and its listing read (ours).

Each family is one :class:`HardFamilyEntry` in :data:`FAMILIES`: its name, how a member is built, how its members
are indexed (a hidden subset of an ``(m, d)`` cell, or a secret of ``Z_q^n``), the seed code its examples are drawn
with, the study methods that apply to it, and the command-line subcommands it brings. The learning study on the hard
instances (:mod:`lowerbounds.learnhard`: its plan, runs, summary and figure), ``python -m lowerbounds learn-hard
--families`` and ``python -m lowerbounds families`` read this registry, so a new family is one entry
(:func:`register` adds one at run time, as the tests do with a toy family). The list below is written from the
registry when the module loads.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import argparse

    from .instance import HardInstance

__all__ = ["CELLS", "FAMILIES", "INTERPOLATION_MAX_M", "SUBSETS_CODE", "HardFamilyEntry", "SecretMember",
           "SubsetMember", "family_names", "get", "register"]

#: How a family's members are indexed: ``"subsets"`` — a hidden subset ``S`` of ``m − 1`` coordinates in an
#: ``(m, d)`` cell (the study's ``ds``, ``ms`` and ``subsets``); ``"secrets"`` — a uniform secret of ``Z_q^n``
#: (``lwr_ns``, ``q`` and ``lwr_secrets``).
CELLS = ("subsets", "secrets")
#: The study methods (:data:`lowerbounds.learnhard.METHODS`) a family may list.
FAMILY_METHODS = ("adam", "provable", "exhaustive")
#: Largest m of the SQ family and its control (ours: the interpolation meets lowerbounds.sq.FORMULA_ACCURACY up
#: to m = 7).
INTERPOLATION_MAX_M = 7
#: Spawn-key code of the cells' hidden subsets (:func:`lowerbounds.learnhard.cell_subset`; ours: any code apart
#: from the families' own, 0 and 1, chosen when the study was designed): no family's runs use it.
SUBSETS_CODE = 2


class SubsetMember(Protocol):
    """The contract of a ``"subsets"`` family's builder: the member of cell ``(m, d)`` with hidden ``subset``.

    The member is a :class:`~lowerbounds.HardInstance` with a ``subset`` (its hidden coordinates) and a ``layer``
    the learners are given samples of (``k = 2`` tokens, uniform Boolean inputs).

    Parameters
    ----------
    *args
        None: a protocol types the builders and is not made itself.
    **kwargs
        None, likewise.
    """

    def __call__(self, d: int, m: int, subset: tuple[int, ...]) -> HardInstance:
        """Build the member.

        Parameters
        ----------
        d, m : int
            Token dimension and heads of the cell.
        subset : tuple of int
            The hidden coordinates, ``m − 1`` of ``1..d − 1``.

        Returns
        -------
        HardInstance
            The member.
        """
        ...


class SecretMember(Protocol):
    """The contract of a ``"secrets"`` family's builder: a member with a uniform secret of ``Z_q^n``.

    The member is an :class:`~lowerbounds.LWRInstance`-like :class:`~lowerbounds.HardInstance`: ``secret``,
    ``q``, ``params`` and the LWR reduction's samples (:func:`~lowerbounds.attention_samples`).

    Parameters
    ----------
    *args
        None: a protocol types the builders and is not made itself.
    **kwargs
        None, likewise.
    """

    def __call__(self, n: int, q: int, rng: np.random.Generator) -> HardInstance:
        """Build the member.

        Parameters
        ----------
        n, q : int
            The secret's dimension and modulus.
        rng : numpy.random.Generator
            Draws the secret.

        Returns
        -------
        HardInstance
            The member.
        """
        ...


@dataclass(frozen=True)
class HardFamilyEntry:
    """One hard family of the learning study and the command line.

    Parameters
    ----------
    name : str
        The family's name in the records and on the command line (``"sq"``, ``"control"``, ``"lwr"``).
    summary : str
        What the family is, in one line (listed by ``python -m lowerbounds families`` and in this module's
        docstring).
    cells : {"subsets", "secrets"}
        How its members are indexed (:data:`CELLS`).
    member : SubsetMember or SecretMember
        Builds one member (the contract of its ``cells``).
    seed_code : int
        The first entry of its runs' spawn keys: families with the same code draw the same examples for the same
        seed (a control shares its family's). Not :data:`SUBSETS_CODE` (2), which the hidden subsets use.
    methods : tuple of str
        The study methods that apply (entries of ``("adam", "provable", "exhaustive")``; the exhaustive search
        needs ``cells="secrets"``). Default Adam and the learner.
    sq_prediction : bool
        Whether the growth table shows the SQ prediction ``m − 1`` for it (default False).
    max_m : int or None
        The largest ``m`` its builder is accurate at (``ms`` beyond it are refused), or None.
    commands : str or None
        ``"module:function"`` of ``function(subparsers)``, which adds the family's own subcommands to ``python -m
        lowerbounds`` (each with ``set_defaults(handler=...)``), or None.

    Raises
    ------
    ValueError
        A ``cells`` not in :data:`CELLS`, a method not in ``FAMILY_METHODS`` or the exhaustive search on a
        ``"subsets"`` family, the reserved seed code, or ``commands`` without its colon.
    """

    name: str
    summary: str
    cells: str
    member: SubsetMember | SecretMember
    seed_code: int
    methods: tuple[str, ...] = ("adam", "provable")
    sq_prediction: bool = False
    max_m: int | None = None
    commands: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"`name` must be a word (letters, digits, _); got name={self.name!r}.")
        if self.cells not in CELLS:
            raise ValueError(f"`cells` must be one of {CELLS}; got cells={self.cells!r}.")
        bad = [m for m in self.methods if m not in FAMILY_METHODS]
        if bad or not self.methods:
            raise ValueError(f"`methods` must be entries of {FAMILY_METHODS}; got methods={self.methods!r}.")
        if "exhaustive" in self.methods and self.cells != "secrets":
            raise ValueError(f"the exhaustive search tries secrets: `methods` may list 'exhaustive' only with "
                             f"cells='secrets'; got cells={self.cells!r}.")
        if isinstance(self.seed_code, bool) or not isinstance(self.seed_code, int) or self.seed_code < 0 \
                or self.seed_code == SUBSETS_CODE:
            raise ValueError(f"`seed_code` must be a non-negative integer other than {SUBSETS_CODE} (the hidden "
                             f"subsets' code); got seed_code={self.seed_code!r}.")
        if self.commands is not None and ":" not in self.commands:
            raise ValueError(f"`commands` must be 'module:function'; got commands={self.commands!r}.")

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        """Add the family's own subcommands to ``sub`` (nothing when it brings none).

        Parameters
        ----------
        sub : argparse subparsers
            ``python -m lowerbounds``'s subcommands.
        """
        if self.commands is None:
            return
        module, _, name = self.commands.partition(":")
        getattr(importlib.import_module(module), name)(sub)


def _sq(d: int, m: int, subset: tuple[int, ...]) -> HardInstance:
    from .sq import sq_hard_instance

    return sq_hard_instance(d, m, subset)


def _control(d: int, m: int, subset: tuple[int, ...]) -> HardInstance:
    from .sq import sparse_linear_instance

    return sparse_linear_instance(d, m, subset)


def _lwr(n: int, q: int, rng: np.random.Generator) -> HardInstance:
    from .lwr import LWRParams, lwr_hard_instance

    return lwr_hard_instance(LWRParams(n, q).draw_secret(rng=rng), q)


#: The registered families by name, in the order the study and the tables list them.
FAMILIES: dict[str, HardFamilyEntry] = {}


def register(entry: HardFamilyEntry) -> HardFamilyEntry:
    """Add ``entry`` to :data:`FAMILIES` (a ValueError if its name is taken).

    Parameters
    ----------
    entry : HardFamilyEntry
        The family; a TypeError for anything else.

    Returns
    -------
    HardFamilyEntry
        ``entry`` itself.
    """
    if not isinstance(entry, HardFamilyEntry):
        raise TypeError(f"`entry` must be a HardFamilyEntry; got {type(entry).__name__}.")
    if entry.name in FAMILIES:
        raise ValueError(f"a hard family named {entry.name!r} is registered already.")
    FAMILIES[entry.name] = entry
    return entry


def get(name: str) -> HardFamilyEntry:
    """The registered family called ``name`` (a ValueError names the registered ones).

    Parameters
    ----------
    name : str
        A key of :data:`FAMILIES`.

    Returns
    -------
    HardFamilyEntry
        Its entry.

    Examples
    --------
    >>> get("lwr").cells, get("control").seed_code == get("sq").seed_code
    ('secrets', True)
    """
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"`family` must be one of {tuple(FAMILIES)}; got family={name!r}.") from None


def family_names(*, cells: str | None = None) -> tuple[str, ...]:
    """The registered families' names, in registry order (those indexed by ``cells`` when given).

    Parameters
    ----------
    cells : {"subsets", "secrets"}, optional
        Only the families whose members are indexed so.

    Returns
    -------
    tuple of str
        The names.
    """
    return tuple(name for name, e in FAMILIES.items() if cells is None or e.cells == cells)


register(HardFamilyEntry(
    "sq", "the SQ-hard family: the parity of a hidden subset S of m − 1 coordinates, carried by m heads "
    "(sq_hard_instance, interpolation variant)", "subsets", _sq, seed_code=0, sq_prediction=True,
    max_m=INTERPOLATION_MAX_M, commands="lowerbounds.cli:sq_commands"))
register(HardFamilyEntry(
    "control", "its control: the same heads and hidden subset, a sparse-linear signal, not SQ-hard "
    "(sparse_linear_instance)", "subsets", _control, seed_code=0, max_m=INTERPOLATION_MAX_M))
register(HardFamilyEntry(
    "lwr", "the LWE-style family: 1-bit learning with rounding on two tokens, a uniform secret of Z_q^n "
    "(lwr_hard_instance; hardness assumed)", "secrets", _lwr, seed_code=1,
    methods=("adam", "provable", "exhaustive"), commands="lowerbounds.cli:lwr_commands"))


def _listing() -> str:
    return "\n".join(f"- ``{e.name}`` ({e.cells}; {', '.join(e.methods)}) — {e.summary}." for e in FAMILIES.values())


__doc__ = (__doc__ or "") + "\nThe families:\n\n" + _listing() + "\n"

