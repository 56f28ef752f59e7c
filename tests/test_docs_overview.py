"""The results index's overview (docs/_ext/overview.py): its rules on constructed rows (controls included), the
index's order (current studies first, then the superseded), and a finding for every current study."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
overview = pytest.importorskip("overview")


def _row(method, value, successes, runs=3):
    return {"method": method, "sigma": value, "successes": successes, "runs": runs}


def test_learned_up_to_stops_at_the_first_miss_even_when_a_larger_value_succeeds():
    rows = [_row("provable", 0.0, 3), _row("provable", 0.01, 3), _row("provable", 0.1, 2),
            _row("provable", 0.3, 3),  # every layer again past a miss: not "up to 0.3"
            _row("adam", 0.0, 2), _row("adam", 0.01, 3)]
    assert overview.all_learned_up_to(rows, "sigma") == {"adam": None, "provable": 0.01}


def _race_row(method, m, seconds, reached, runs=3):
    return {"method": method, "m": m, "d": 12, "k": 2, "runs": runs,
            "milestones": {"1e-08": {"median_seconds": seconds, "reached": reached}}}


def test_first_to_counts_only_methods_that_reached_the_milestone_on_every_layer():
    rows = [_race_row("provable", 2, 5.0, 3), _race_row("adam", 2, 1.0, 2),  # faster, but one layer missed it
            _race_row("provable", 3, 9.0, 3), _race_row("torch-adam", 3, 4.0, 3),
            _race_row("provable", 4, 9.0, 1), _race_row("adam", 4, 4.0, 0)]
    assert overview.first_to(rows) == {(2, 12, 2): "provable", (3, 12, 2): "torch-adam", (4, 12, 2): None}


def test_the_index_lists_the_pages_in_the_overviews_order():
    text = (ROOT / "docs" / "results" / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}\n(.*?)```", text, re.S).group(1)
    listed = [ln.removeprefix("generated/") for ln in toctree.splitlines() if ln.startswith("generated/")]
    order = overview.page_order(ROOT / "docs" / "sweeps")
    assert listed == order and len(set(order)) == len(order)
    assert list(order[:len(overview.CURRENT_ORDER)]) == list(overview.CURRENT_ORDER)


def test_every_current_study_has_a_finding_and_every_superseded_one_its_successor():
    pytest.importorskip("matplotlib")
    results = pytest.importorskip("results")
    titles = {page: page.upper() for page in results.PAGES}
    lines = overview.overview_lines(ROOT / "docs", titles)
    current = lines[lines.index("## Current studies"):lines.index("## Superseded studies")]
    for page in overview.CURRENT_ORDER:
        (line,) = [ln for ln in current if f"</results/generated/{page}>`**: " in ln]
        assert len(line.split("**: ", 1)[1]) > 40, page  # a sentence, not an empty finding
    superseded = lines[lines.index("## Superseded studies"):]
    for page in overview.page_order(ROOT / "docs" / "sweeps")[len(overview.CURRENT_ORDER):]:
        assert any(f"</results/generated/{page}>`, superseded by {{doc}}`/results/generated/" in ln
                   for ln in superseded), page
