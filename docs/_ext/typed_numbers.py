"""Figures typed into the documentation's sources by hand: the scan behind the rule that a number on the site comes
from a record at build time, is compared with its record by a test, or is not there.

A *figure* is a number with a unit (seconds, a percentage, a ratio ``×``, a size, ``k``/``M`` for thousands and
millions) or with more than two significant digits (``13,689``, ``1.44``, ``0.325``). :func:`typed_figures` finds
them in a page's Markdown source, outside what the build generates or executes:

- ``{{ name }}`` substitutions (``docs/_ext/figures.py`` computes them from the records);
- ``{include}`` directives (the generated tables) and executed blocks (``{doctest}``, ``{testcode}``,
  ``{testoutput}``);
- identifiers that are not measurements: dates and times, versions, commit hashes, arXiv numbers, years, link
  targets and MyST roles' targets, a label line ``(name)=``;
- the commands and code a block shows (lines opening with ``$``, ``>>>`` or ``...``): their numbers are inputs;
  the output below them is scanned.

:data:`TESTED` names the hand-typed pages whose figures a test holds to their records; :func:`scan` reports every
other page's figures, and ``python docs/_ext/typed_numbers.py`` prints their count per page group (ours: the rule
and its thresholds are the project's, not a standard).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

#: Units that make a number a figure however few its digits (a space between number and unit or none).
UNITS = ("ms", "µs", "us", "ns", "s", "min", "minutes", "minute", "seconds", "second", "hours", "hour", "h", "%",
         "×", "GiB", "MiB", "KiB", "GB", "MB", "KB", "k", "M", "px", "years")
#: Blocks the build executes: their numbers are the code's output, checked at every build.
EXECUTED = ("{doctest}", "{testcode}", "{testoutput}", "{include}", "{literalinclude}")
#: Pages whose hand-typed figures a test compares with their records: page -> the test (``file::name``).
TESTED: dict[str, str] = {}
#: Single figures of a page that a test compares with the code or the records: page -> {figure: the test}.
TESTED_FIGURES = {"guide/learner.md": dict.fromkeys(
    ("256", "2,187"), "tests/learner/phases/test_forecast.py::test_the_guides_covering_figures_are_the_functions"),
    "guide/lower-bounds.md": {
        "0.292": "tests/test_docs_lower_bounds.py::test_the_core_svp_exponent_is_the_cost_tables",
        **dict.fromkeys(("406", "998", "624", "1427"),
                        "tests/test_docs_lower_bounds.py::test_the_kyber_checks_are_the_records"),
        "40 s": "tests/test_docs_lower_bounds.py::test_the_study_budget_is_the_records_and_the_default",
        "165": "tests/test_docs_lower_bounds.py::test_the_run_count_is_the_records",
        "1250": "tests/test_docs_lower_bounds.py::test_the_controls_successes_and_examples_are_the_records",
        "1.93": "tests/test_docs_lower_bounds.py::test_the_parity_familys_censored_slope_is_the_records",
        **dict.fromkeys(("39 s", "1.8 s"), "tests/test_docs_lower_bounds.py::test_the_lwr_figures_are_the_records")}}
#: Figures that are rules of the toolkit rather than measurements, allowed on every page: figure -> why.
ALLOWED = {"95 %": "the confidence level of every interval and bound the studies and checks state",
           "3×": "the yield model's acceptance factor (theory's yield check holds it to log 3)"}
#: Pages of dated history, left out of the scan: every figure on them is a past measurement quoted with its date,
#: commit and version, not a claim about today's toolkit (page -> why).
HISTORY = {"changelog.md": "what changed, release by release, with the figures of its day",
           "measurements.md": "past measurements, each with its commit and the version that made it"}

_NUMBER = re.compile(r"(?<![\w.\-/#:])((?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)")
_UNIT = re.compile(r"\s?(" + "|".join(sorted(map(re.escape, UNITS), key=len, reverse=True)) + r")(?![\w])")
_IDENTIFIERS = [
    re.compile(r"\{\{[^}]*\}\}"),  # substitutions
    re.compile(r"\{[a-z:-]+\}`[^`]*`"),  # roles: {doc}`…`, {func}`…`, {cite}`…`
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"https?://\S+"),
    re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?"),  # dates, times of day
    re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"),
    re.compile(r"\bv?\d+\.\d+\.\d+(?:[-+.\w]*)?"),  # versions
    re.compile(r"\b\d{4}\.\d{4,5}\b"),  # arXiv numbers
    re.compile(r"(?<![\d,.])(?:19|20)\d\d(?![\d,]|\.\d)"),  # years (a full stop may follow)
    re.compile(r"\b0[0-7]{3}\b"),  # file modes (0644)
    re.compile(r"\bPython \d+\.\d+\b"),  # a Python version
]


_HASH = re.compile(r"\b[0-9a-f]{7,40}\b")  # a commit hash: hex with at least one letter


def significant_digits(number: str) -> int:
    """The significant digits of a number as written: leading zeros and an integer's trailing zeros do not count.

    Examples
    --------
    >>> [significant_digits(n) for n in ("13,689", "0.325", "1.44", "100", "0.05", "1e-25", "2.0")]
    [5, 3, 3, 1, 1, 1, 2]
    """
    mantissa = re.split(r"[eE]", number.replace(",", ""))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    if "." not in mantissa:
        digits = digits.rstrip("0")
    return len(digits)


def _strip(line: str) -> str:
    """The line without the identifiers that are not measurements (each replaced by a space)."""
    line = _HASH.sub(lambda m: " " if re.search(r"[a-f]", m.group(0)) else m.group(0), line)
    for pattern in _IDENTIFIERS:
        line = pattern.sub(" ", line)
    return line


def typed_figures(text: str) -> list[tuple[int, str]]:
    """The figures typed into a page's Markdown source: ``(line number, the figure with its unit)``.

    Parameters
    ----------
    text : str
        The page's source.

    Returns
    -------
    list of (int, str)

    Examples
    --------
    >>> typed_figures("The run took 3.5 s and 13,689 tuples; m = 3, k = 2.\\nSee {{ growth_law }}.")
    [(1, '3.5 s'), (1, '13,689')]
    >>> typed_figures("```{doctest}\\n>>> 1.2345\\n```\\nReleased 2026-11-30 at abc1234, version 0.3.0.")
    []
    """
    found = []
    fence = None  # the open fence's backticks and whether its block is executed
    for number, line in enumerate(text.splitlines(), 1):
        opened = re.match(r"^\s*(`{3,}|~{3,}|:{3,})\s*(\S*)", line)
        if fence is None and opened:
            fence = (opened.group(1), opened.group(2).startswith(EXECUTED))
            continue
        if fence is not None and line.strip() == fence[0]:
            fence = None
            continue
        if (fence is not None and fence[1]) or re.match(r"^\s*\([\w-]+\)=\s*$", line) or line.startswith(":"):
            continue
        if fence is not None and re.match(r"^\s*(\$|>>>|\.\.\.) ", line):  # a command or code typed in: inputs
            continue
        rest = _strip(line)
        for match in _NUMBER.finditer(rest):
            token = match.group(1)
            unit = _UNIT.match(rest, match.end(1))
            if unit and unit.group(0).startswith(" ") and unit.group(1) == "×":
                unit = None  # "0 × window": a product, not a ratio (a ratio is written 1.4×)
            figure = token + (unit.group(0) if unit else "")
            if (unit or significant_digits(token) > 2) and " ".join(figure.split()) not in ALLOWED \
                    and figure.replace(" ", "") not in ALLOWED:
                found.append((number, figure))
    return found


def pages(docs: Path) -> list[Path]:
    """The documentation's hand-written Markdown pages: every ``.md`` under ``docs`` but the generated results,
    the records' folders (their notes are shown on a results page and held to the records by tests), the gallery's
    output and the build."""
    skip = ("_build", "sweeps", "results/generated", "results/tables", "auto_examples", "mutation", "api")
    return sorted(p for p in docs.rglob("*.md") if p.name != "README.md"  # notes the build leaves out
                  and not any(p.relative_to(docs).as_posix().startswith(s) for s in skip))


def scan(docs: Path) -> dict[str, list[tuple[int, str]]]:
    """Per page (its path under ``docs``), the figures typed into it, the pages of :data:`TESTED` and
    :data:`HISTORY` left out."""
    found = {}
    for page in pages(docs):
        name = page.relative_to(docs).as_posix()
        if name in TESTED or name in HISTORY:
            continue
        tested = TESTED_FIGURES.get(name, {})
        figures = [(line, f) for line, f in typed_figures(page.read_text(encoding="utf-8")) if f not in tested]
        if figures:
            found[name] = figures
    return found


def group_of(page: str) -> str:
    """The page group a count is reported under: ``guide/phases``, ``guide/studies.md``, ``(top level)``."""
    parts = page.split("/")
    return "/".join(parts[:2]) if parts[0] == "guide" else parts[0] if len(parts) > 1 else "(top level)"


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "-v"]
    docs = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    counts = Counter()
    for page, figures in scan(docs).items():
        counts[group_of(page)] += len(figures)
        if "-v" in sys.argv:
            for line, figure in figures:
                print(f"{page}:{line}: {figure}")
    for group, n in sorted(counts.items()):
        print(f"{n:5d}  {group}")
    print(f"{sum(counts.values()):5d}  in all")
