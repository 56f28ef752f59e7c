"""The one Markdown table writer and number formatter of the toolkit's summaries and reports.

Every table a study, a check or an attack prints or writes (``summary.md``, the console) is a GitHub-flavoured
Markdown table built by :func:`markdown_table`, and every number in one is formatted by :func:`fmt`: a missing
value (None) is an en dash, everything else goes through Python's format mini-language.

>>> print(markdown_table(["m", "seconds"], [[1, fmt(0.25, ".1f")], [2, fmt(None, ".1f")]]))
| m | seconds |
|---|---|
| 1 | 0.2 |
| 2 | – |
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["MISSING", "REPORT_WIDTH", "fmt", "markdown_table", "plain", "report_lines"]

#: How a missing value (None) appears in a table.
MISSING = "–"


def fmt(value: Any, spec: str = "", *, missing: str = MISSING) -> str:
    """``value`` formatted by ``spec`` (Python's format mini-language: ``".3g"``, ``","``, ``".1f"``), or
    ``missing`` when it is None.

    Parameters
    ----------
    value : object
        The value; None stands for a missing one.
    spec : str, default ""
        The format specification (``""``: ``str``).
    missing : str, default :data:`MISSING`
        What a missing value is written as.

    Returns
    -------
    str
        The formatted value.

    Examples
    --------
    >>> fmt(0.123456, ".3g"), fmt(1234567, ","), fmt(None, ".3g")
    ('0.123', '1,234,567', '–')
    """
    return missing if value is None else format(value, spec)


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table: the ``header`` row, the separator (``|---|`` per column), then one line per row; cells are
    written with ``str`` (format numbers with :func:`fmt` first), a ``|`` inside a cell escaped (``\\|``) so that it
    does not split the cell. A row of another length than the header is a ValueError naming it.

    Parameters
    ----------
    header : sequence
        The column names.
    rows : iterable of sequence
        The rows, each with as many cells as ``header``.

    Returns
    -------
    str
        The table's lines joined by newlines (no trailing newline); the module docstring shows one.

    Raises
    ------
    ValueError
        If a row's length differs from the header's.
    """
    width = len(header)

    def cells(row):
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |"

    lines = [cells(header), "|" + "---|" * width]
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != width:
            raise ValueError(f"row {i} has {len(row)} cells, the header {width}: {row!r}")
        lines.append(cells(row))
    return "\n".join(lines)


#: The widest line of a text report (ours: fits a 120-column terminal with a character to spare).
REPORT_WIDTH = 119


def plain(value: Any) -> str:
    """One value in words for a text report: yes/no, an en dash for None, floats to 4 significant digits, integers
    from 10,000 on with thousands separators, a list as its items joined by commas ("none" when empty), a mapping as
    ``key = value`` pairs; never a Python repr.

    Parameters
    ----------
    value : object
        The value; lists, tuples and mappings are written item by item, recursively.

    Returns
    -------
    str
        The words.

    Examples
    --------
    >>> plain([1.23456, None, True, 12345]), plain({"tol": 0.015, "fixed": False}), plain([])
    ('1.235, –, yes, 12,345', 'tol = 0.015; fixed = no', 'none')
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        return "; ".join(f"{k} = {plain(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value) or "none"
    return str(value)


def _wrapped(head: str, text: str, indent: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=head, subsequent_indent=indent + "    ",
                         break_long_words=True, break_on_hyphens=False) or [head.rstrip()]


def report_lines(key: str, value: Any, indent: str = "    ", width: int = REPORT_WIDTH) -> list[str]:
    """The lines of one ``key: value`` of a text report, none wider than ``width``: scalars and short lists on one
    line (wrapped, continuation lines indented), a mapping with nested values as indented lines of its own, and a
    list of mappings as an aligned table (one row per mapping, a column per key) when it fits, else one wrapped line
    per mapping.

    Parameters
    ----------
    key : str
        The figure's name.
    value : object
        Its value, written by :func:`plain` (mappings and lists of mappings as described).
    indent : str, default four spaces
        The indentation of the first line; nested lines add four spaces each.
    width : int, default :data:`REPORT_WIDTH`
        The widest line.

    Returns
    -------
    list of str
        The lines, without newlines.

    Examples
    --------
    >>> print("\\n".join(report_lines("rounds", [{"round": 0, "examples": 10000}, {"round": 1, "examples": 25000}])))
        rounds:
            round  examples
                0    10,000
                1    25,000
    """
    if isinstance(value, Mapping) and any(isinstance(v, (Mapping, list, tuple)) for v in value.values()):
        lines = [f"{indent}{key}:"]
        for k, v in value.items():
            lines += report_lines(str(k), v, indent + "    ", width)
        return lines
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
        columns = list(dict.fromkeys(k for row in value for k in row))
        cells = [[plain(row.get(c)) for c in columns] for row in value]
        widths = [max(len(str(c)), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
        inner = indent + "    "
        if len(inner) + sum(widths) + 2 * (len(widths) - 1) <= width:
            def line(parts):
                return inner + "  ".join(p.rjust(w) for p, w in zip(parts, widths, strict=True))
            return [f"{indent}{key}:", line([str(c) for c in columns]), *(line(r) for r in cells)]
        lines = [f"{indent}{key}:"]
        for i, row in enumerate(value, 1):
            lines += _wrapped(f"{inner}{i}. ", plain(row), inner, width)
        return lines
    return _wrapped(f"{indent}{key}: ", plain(value), indent, width)
