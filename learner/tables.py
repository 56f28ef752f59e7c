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

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MISSING", "fmt", "markdown_table"]

#: How a missing value (None) appears in a table.
MISSING = "–"


def fmt(value: Any, spec: str = "", *, missing: str = MISSING) -> str:
    """``value`` formatted by ``spec`` (Python's format mini-language: ``".3g"``, ``","``, ``".1f"``), or
    ``missing`` when it is None."""
    return missing if value is None else format(value, spec)


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table: the ``header`` row, the separator (``|---|`` per column), then one line per row; cells are
    written with ``str`` (format numbers with :func:`fmt` first). A row of another length than the header is a
    ValueError naming it."""
    width = len(header)
    lines = ["| " + " | ".join(str(cell) for cell in header) + " |", "|" + "---|" * width]
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != width:
            raise ValueError(f"row {i} has {len(row)} cells, the header {width}: {row!r}")
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)
