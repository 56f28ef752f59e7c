"""The scan for figures typed into the documentation by hand (docs/_ext/typed_numbers.py), on constructed pages:
what it must find (a control), and what the build generates or executes, which it must leave."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
typed_numbers = pytest.importorskip("typed_numbers")


@pytest.mark.parametrize(("text", "found"), [
    ("the swap descent scored 15 k, 290 k and 1.3 M tuples", ["15 k", "290 k", "1.3 M"]),
    ("phase 6 is 1.44× faster (20.75 s against 14.42 s)", ["1.44×", "20.75 s", "14.42 s"]),
    ("13,689 tuples, 87 % of the runs, 0.325 of the budget", ["13,689", "87 %", "0.325"]),
    ("| m | seconds |\n|---|---|\n| 3 | 4.25 |", ["4.25"]),
    ("```console\n$ python -m theory all\n14 cases in 3.5 s\n```", ["3.5 s"]),  # pasted output is typed
], ids=["k and M", "ratios and seconds", "digits and percent", "a hand table", "pasted console output"])
def test_the_control_typed_figures_are_found(text, found):
    assert [figure for _, figure in typed_numbers.typed_figures(text)] == found


@pytest.mark.parametrize("text", [
    "{{ growth_law }} and {{ main_seconds }}",
    "```{doctest}\n>>> round(1.23456, 3)\n1.235\n```",
    "```{include} ../results/tables/phase-seconds.md\n```",
    "made on 2026-11-30 at 14:55 UTC, commit d34d451, learner 0.3.0, arXiv 2402.04084 (2024)",
    "Chen and Li, STOC 2025. Files are 0644; it needs Python 3.11 or later.",
    "m = 3, k = 2, d = 24, at most 10 heads and a 1e-8 tolerance",
    "see {doc}`/results/generated/growth` and [the paper](https://arxiv.org/abs/2402.04084)",
    "(guide-studies-trained)=",
    "95 % intervals; the model is within 3× of the measurement",  # ALLOWED: rules, not measurements
    "the density of the disagreements at 0 × window",  # a product, not a ratio
    "```console\n$ python -m learner scaling --max-examples 5000000 --refined-tol 0.015\n```",
], ids=["substitutions", "a doctest", "an included table", "identifiers", "a year, a mode, Python",
        "small settings", "link targets",
        "a label", "allowed rules", "a product", "a command's inputs"])
def test_what_the_build_makes_and_identifiers_are_left(text):
    assert typed_numbers.typed_figures(text) == []


def test_line_numbers_point_at_the_figure():
    assert typed_numbers.typed_figures("one\n\nthree took 12.5 s") == [(3, "12.5 s")]


@pytest.mark.parametrize(("number", "digits"), [("13,689", 5), ("0.325", 3), ("100", 1), ("1.0", 2),
                                                ("0.005473", 4), ("2e-30", 1), ("1,076,004", 7)])
def test_significant_digits_by_hand(number, digits):
    assert typed_numbers.significant_digits(number) == digits


def test_the_generated_and_the_records_pages_are_not_scanned(tmp_path):
    for name in ("guide/a.md", "results/generated/growth.md", "sweeps/growth/README.md", "_build/x.md", "b.md",
                 "changelog.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("took 12.5 s\n", encoding="utf-8")
    assert sorted(typed_numbers.scan(tmp_path)) == ["b.md", "guide/a.md"]


def test_the_swap_descents_tuples_come_from_the_main_studys_records():
    import json

    figures = pytest.importorskip("figures")
    runs = ROOT / "docs" / "sweeps" / "main" / "runs"
    counts = [json.loads(next(runs.glob(f"provable-eval-m{m}-*-s0.json")).read_text())["diagnostics"]["6_search"]
              ["tuples_scored"] for m in (3, 4, 5)]
    assert figures.main_swap_tuples(ROOT / "docs" / "sweeps")["main_swap_tuples"] == (
        f"{counts[0]:,}, {counts[1]:,} and {counts[2]:,}")
    assert "{{ main_swap_tuples }} tuples at $m = 3$, 4 and 5" in (ROOT / "docs/guide/studies.md").read_text()


def test_every_single_tested_figure_names_a_test_that_exists():
    for page, figures in typed_numbers.TESTED_FIGURES.items():
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        for figure, test in figures.items():
            path, name = test.split("::")
            assert figure in text, (page, figure)  # still on the page, or the entry is stale
            assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), test


def test_no_page_of_the_site_has_a_typed_figure():
    """Every figure on every page is generated, executed, tested against its record or allowed with a reason:
    ``python docs/_ext/typed_numbers.py -v`` lists any that is not."""
    found = typed_numbers.scan(ROOT / "docs")
    assert found == {}, {page: figures[:5] for page, figures in found.items()}


def test_the_control_a_figure_typed_into_a_real_page_is_found(tmp_path):
    """The site's own pages, copied, with one measurement typed into one of them: the scan finds exactly it."""
    import shutil

    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs" / "guide", docs / "guide")
    page = docs / "guide" / "parallel.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nOn the quiet machine this took 14.42 s.\n",
                    encoding="utf-8")
    assert typed_numbers.scan(docs) == {"guide/parallel.md": [(len(page.read_text().splitlines()), "14.42 s")]}


def test_a_port_in_an_address_is_not_a_figure_but_a_measurement_after_a_colon_and_space_is():
    assert typed_numbers.typed_figures('scheduler="tcp://HOST:8786"') == []
    assert typed_numbers.typed_figures("measured: 8786 examples") == [(1, "8786")]


@pytest.mark.parametrize(("page", "group"), [("guide/phases/5-span.md", "guide/phases"),
                                             ("guide/parallel.md", "guide/parallel.md"), ("install.md", "(top level)"),
                                             ("results/index.md", "results"), ("cli/learner-learn.md", "cli")])
def test_the_page_groups_by_hand(page, group):
    assert typed_numbers.group_of(page) == group
