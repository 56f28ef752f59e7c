"""The phase pages' figures read from records at the build (docs/_ext/figures.py): phase 5's gap against phase 6's
outcome over every record, and phase 6's two searches on the same hulls; and the defaults they quote, read from the
code. Checked on constructed records counted by hand and against the committed records read independently."""

import json
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
figures = pytest.importorskip("figures")


def _run(m, ratios, success, hull=0.1, search=True):
    diagnostics = {"5_span": {"m": m, "gap_ratios": ratios, "hull_distance": hull}}
    if search:
        diagnostics["6_search"] = {}
    return {"diagnostics": diagnostics, "success": success}


def test_the_gap_against_the_outcome_on_constructed_records(tmp_path):
    runs = {"a/won.json": _run(3, [9.0, 1.5, 1.1], True, hull=0.3),         # ratio at m: gap_ratios[1] = 1.5
            "a/won_wrapped.json": {"result": _run(2, [2.5], True, hull=0.7)},  # learn --json: under "result"
            "b/lost.json": _run(2, [4200.0], False),
            "b/lost_too.json": _run(4, [1.0, 1.0, 1.2], False),
            "c/one_head.json": _run(1, [], True),                           # m = 1: no gap
            "c/no_search.json": _run(3, [5.0, 0.9], False, search=False),  # phase 6 never ran
            "c/other.json": {"kind": "something else, mentioning \"5_span\""}}
    for name, record in runs.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(json.dumps(record))
    subs = figures.span_gaps(tmp_path)
    assert subs["span_gap_runs"] == "4" and subs["span_gap_recovered"] == "2"
    assert subs["span_gap_lowest"] == "1.50" and subs["span_hull_farthest"] == "0.70"
    assert subs["span_gap_missed"] == "the 2 it missed had ratios from 1.20 to $4.2\\cdot10^{3}$"


def test_every_run_recovered_says_so(tmp_path):
    (tmp_path / "won.json").write_text(json.dumps(_run(2, [3.0], True)))
    assert figures.span_gaps(tmp_path)["span_gap_missed"] == "it missed none"


def test_the_phase6_comparison_is_its_records():
    runs = [json.loads(p.read_text()) for p in sorted((ROOT / "docs/sweeps/reach/phase6").glob("phase6_s*.json"))]
    subs = figures.phase6_old_new(ROOT / "docs" / "sweeps")
    ratios = sorted(r["old"]["seconds"] / r["new"]["seconds"] for r in runs)
    assert subs["phase6_faster"] == f"{ratios[0]:.0f}–{ratios[-1]:.0f}×"
    assert subs["phase6_faster_median"] == f"{statistics.median(ratios):.0f}×"
    new = sorted(r["new"]["seconds"] for r in runs)
    assert subs["phase6_new"].startswith(f"{new[0]:.2g}–{new[-1]:.3g} s")
    assert subs["phase6_seeds"] == str(len(runs)) and len(runs) >= 6
    errors = sorted(e for r in runs for e in (r["new"]["heldout_relative_error"], r["old"]["heldout_relative_error"]))
    exponent = int(subs["phase6_worst_error"].strip("$").split("{")[1].rstrip("}"))
    assert 10.0 ** (exponent - 1) < errors[-1] <= 10.0 ** exponent  # the smallest power of ten above every error
    old = sorted(r["old"]["seconds"] for r in runs)
    assert subs["phase6_old"] == f"{old[0]:.0f}–{old[-1]:.0f} s (median {statistics.median(old):.0f} s)"


def test_no_phase6_records_is_an_error_naming_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="phase6_s.*json in .*reach/phase6"):
        figures.phase6_old_new(tmp_path)


def test_the_defaults_the_phase_pages_quote_are_the_codes():
    from learner.phases import LearnConfig
    from learner.phases.refine_sum import VERTEX_CHUNK, certified_regression

    subs = figures.settings()
    assert subs["refine_keep"] == f"{100 * LearnConfig().refine_keep:g} %"
    assert subs["cert_keep"] == "0.3 %" and certified_regression.__kwdefaults__["keep"] == 0.003
    assert subs["vertex_chunk"] == f"{VERTEX_CHUNK:,}"
    assert subs["search_memory"] == f"{LearnConfig().search_memory >> 30} GiB"
    for page, names in {"3-refine-sum.md": ("refine_keep", "cert_keep", "cert_pool", "cert_rounds", "vertex_chunk"),
                        "4-refined-sculpt.md": ("pilot_rows", "pilot_examples", "pilot_max_fraction"),
                        "5-span.md": ("span_gap_runs", "span_qr_seconds"), "6-search.md": ("phase6_faster",)}.items():
        text = (ROOT / "docs/guide/phases" / page).read_text(encoding="utf-8")
        assert all("{{ " + name + " }}" in text for name in names), page
