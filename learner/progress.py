"""Progress bars for the long loops of :func:`learner.learn`, shown on a terminal only.

:func:`learner.learn` sets whether bars are shown for the duration of a call
(``progress=None``: when standard error is a terminal); the phases ask
:func:`bar` for a bar and get a no-op one otherwise. Bars go to standard error,
never change a result, and disappear when their phase ends (the INFO log keeps
the figures).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from typing import Any

_ENABLED = contextvars.ContextVar("learner_progress", default=False)


class NoBar:
    """The bar used when progress is off: every method does nothing."""

    def update(self, n: float = 1) -> None:
        """Do nothing (tqdm's advances the bar by ``n``).

        Parameters
        ----------
        n : float, default 1
            Ignored.
        """

    def set_postfix_str(self, s: str) -> None:
        """Do nothing (tqdm's shows ``s`` after the bar).

        Parameters
        ----------
        s : str
            Ignored.
        """

    def close(self) -> None:
        """Do nothing (tqdm's removes the bar)."""


def resolve(progress: bool | None) -> bool:
    """``True``/``False`` as given; ``None`` means "standard error is a terminal".

    Parameters
    ----------
    progress : bool or None
        The caller's choice.

    Returns
    -------
    bool
        Whether bars are shown.

    Raises
    ------
    TypeError
        For anything but True, False or None (0 and 1 included).
    """
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    if not isinstance(progress, bool):
        raise TypeError(f"`progress` must be True, False or None (on a terminal); got progress={progress!r}.")
    return progress


@contextlib.contextmanager
def showing(flag: bool) -> Iterator[None]:
    """Show bars (or not) within the block.

    The setting is a context variable: it holds for this thread (or task) inside the block, and the previous one
    comes back on exit.

    Parameters
    ----------
    flag : bool
        Whether :func:`bar` gives real bars inside the block.

    Yields
    ------
    None
        Nothing; the block runs with the setting.
    """
    token = _ENABLED.set(bool(flag))
    try:
        yield
    finally:
        _ENABLED.reset(token)


def bar(total: float, desc: str, unit: str) -> Any:
    """A tqdm bar on standard error when progress is on, else a :class:`NoBar`.

    Parameters
    ----------
    total : float
        The count the bar fills to.
    desc : str
        The label before the bar (the phase).
    unit : str
        What is counted; ``"ex"`` (examples) also scales large counts (``1.2Mex``).

    Returns
    -------
    tqdm.tqdm or NoBar
        A bar that disappears when closed (``leave=False``), or one that does nothing.

    Examples
    --------
    >>> with showing(False):
    ...     print(type(bar(100, "phase 1", "ex")).__name__)
    NoBar
    """
    if not _ENABLED.get():
        return NoBar()
    from tqdm import tqdm

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):  # not a real file, or not a terminal
        size = os.terminal_size((0, 0))
    # A terminal that reports no size (a pty nobody sized) would make tqdm print nothing: fix one.
    width = {"dynamic_ncols": True} if min(size) > 0 else {"ncols": 100, "nrows": 24}
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "ex", leave=False, file=sys.stderr, **width)
