"""Every legend the toolkit draws names its place, and no figure text is smaller than 9 pt.

matplotlib times a legend placed by default (no ``loc``) and warns when finding the best place took more than a
second ("Creating legend with loc="best" can be slow"); on a loaded machine that happens to small figures too, and
the suite turns warnings into errors, so a figure's test would fail by the clock. A legend given ``loc`` (even
``"best"``, the same place) is not timed.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["learner", "theory", "lowerbounds", "docs/_ext", "docs/examples"]


def unplaced_legends(source: str, name: str = "<string>") -> list[str]:
    """``name:line`` of every ``.legend(...)`` call in ``source`` without a ``loc`` (keyword, or the third
    positional argument)."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "legend"
                and not any(k.arg == "loc" for k in node.keywords) and len(node.args) < 3):
            found.append(f"{name}:{node.lineno}")
    return found


def test_the_check_finds_a_legend_without_loc():
    assert unplaced_legends("ax.legend(fontsize=7)\nfig.legend(h, l)\n") == ["<string>:1", "<string>:2"]
    assert unplaced_legends("ax.legend(fontsize=7, loc='best')\nax.legend(h, l, 'upper left')\n") == []


def test_every_legend_names_its_place():
    files = [p for folder in SOURCES for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 50
    bad = [hit for p in files for hit in unplaced_legends(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not bad, f"legends without loc (pass loc=\"best\" or a place): {bad}"


#: The smallest text a figure may draw, in points: the site shows a figure saved at 110 dpi at its natural width
#: (up to about 1300 pixels), where text below 9 pt is too small to read.
SMALLEST_FONT = 9
FONT_SOURCES = ["learner", "theory", "lowerbounds", "docs/examples", "docs/_ext"]
SMALL_NAMES = {"xx-small", "x-small", "small", "smaller"}  # matplotlib's relative sizes below 10 pt


def small_fonts(source: str, name: str = "<string>") -> list[str]:
    """``name:line`` of every ``fontsize=`` given a number below :data:`SMALLEST_FONT` or a size named smaller."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.keyword) and node.arg == "fontsize" and isinstance(node.value, ast.Constant):
            size = node.value.value
            if (isinstance(size, int | float) and size < SMALLEST_FONT) or size in SMALL_NAMES:
                found.append(f"{name}:{node.value.lineno}")
    return found


def test_the_check_finds_a_small_font():
    assert small_fonts("ax.legend(fontsize=7)\nax.text(0, 0, 's', fontsize=8.5)\nax.legend(fontsize='small')\n") == [
        "<string>:1", "<string>:2", "<string>:3"]
    assert small_fonts("ax.legend(fontsize=9)\nax.set_title('t', fontsize=10)\nax.legend(fontsize='large')\n") == []


def test_no_text_is_drawn_below_nine_points():
    files = [p for folder in FONT_SOURCES for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 50
    bad = [hit for p in files for hit in small_fonts(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not bad, f"text below {SMALLEST_FONT} pt (too small to read on the site): {bad}"
