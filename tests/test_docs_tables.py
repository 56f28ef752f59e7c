"""Every Markdown table the documentation's sources hold or a page includes (the pages, the records' notes and
summaries, the results pages' inputs) is a table: markdown-it-py (MyST's parser) reads it as one, and each row has
the header's cells, counted on the unescaped pipes (GFM splits a row there, inside code spans too)."""

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _cells(line: str) -> int:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return len(re.split(r"(?<!\\)\|", inner))


def table_problems(text: str) -> list[str]:
    """Each block of lines opening with ``|`` that is not a table, or whose rows differ from its header in cells."""
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with the docs extra")
    problems, lines, fenced = [], text.splitlines(), False
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or not lines[i].lstrip().startswith("|"):
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            i += 1
        block = textwrap.dedent("\n".join(lines[start:i])).splitlines()  # a table inside a list item is indented
        tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse("\n".join(block))
        if not any(t.type == "table_open" for t in tokens):
            problems.append(f"line {start + 1}: not a table ({_cells(block[0])} header cells, "
                            f"{_cells(block[1]) if len(block) > 1 else 0} in the separator)")
            continue
        width = _cells(block[0])
        problems += [f"line {start + j + 1}: {_cells(row)} cells, the header {width}"
                     for j, row in enumerate(block[1:], 1) if _cells(row) != width]
    return problems


def test_the_control_a_header_with_bare_pipes_is_caught():
    broken = "| a | |cos Θ| (max) |\n|---|---|\n| 1 | 0.1 |"
    assert table_problems(broken) == ["line 1: not a table (4 header cells, 2 in the separator)"]
    assert table_problems(broken.replace("|cos Θ|", "\\|cos Θ\\|")) == []
    assert table_problems("| a | b |\n|---|---|\n| 1 | 2 | 3 |") == ["line 3: 3 cells, the header 2"]


def test_every_table_of_the_sources_is_a_table():
    sources = [p for p in sorted(DOCS.rglob("*.md")) if "_build" not in p.parts and "generated" not in p.parts]
    assert len(sources) > 40
    bad = {str(p.relative_to(ROOT)): found for p in sources if (found := table_problems(p.read_text(encoding="utf-8")))}
    assert not bad, bad
