"""The trained-heads page (docs/_ext/results.py): its reading is worded by which way the records went, its test
is Fisher's exact test (checked against the hypergeometric sum by hand), and the committed study is complete, its
summary that of its records and every learner verdict consistent with the truth."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "docs" / "sweeps" / "trained"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
results = pytest.importorskip("results")
pytest.importorskip("scipy")


def _summary(meet, meet_recovered, fail, fail_recovered, control=40):
    layers = meet + fail
    return {"totals": {"layers": layers, "meet_all": meet, "control_meet_all": control,
                       "recovered_m_given": meet_recovered + fail_recovered, "recovered_m_unknown": 0,
                       "matched_m_given": meet_recovered + fail_recovered,
                       "adam_success": 0, "learner_runs": 2 * layers, "wrong_successes": 0, "late_refusals": 0},
            "recovery_by_conditions": {
                "meet_all": {"layers": meet, "recovered_m_given": meet_recovered, "recovered_m_unknown": 0},
                "fail_some": {"layers": fail, "recovered_m_given": fail_recovered, "recovered_m_unknown": 0}}}


def _fisher_two_sided(a, b, c, d):
    """Fisher's exact test on [[a, b], [c, d]] by enumeration: the tables with the same margins no likelier than
    the one seen."""
    row, col, n = a + b, a + c, a + b + c + d

    def prob(x):
        return math.comb(col, x) * math.comb(n - col, row - x) / math.comb(n, row)

    seen = prob(a)
    return sum(prob(x) for x in range(max(0, row + col - n), min(row, col) + 1) if prob(x) <= seen * (1 + 1e-7))


@pytest.mark.parametrize(("counts", "way", "below"), [
    ((10, 10, 10, 0), "more often", True),
    ((10, 0, 10, 10), "less often", True),
    ((10, 5, 10, 5), "as often", False),
    ((6, 4, 6, 2), "more often", False),
], ids=["separated", "reversed", "equal", "a difference too small to show"])
def test_the_reading_says_which_way_the_records_went(counts, way, below):
    meet, meet_rec, fail, fail_rec = counts
    text = " ".join(results.trained_reading(_summary(*counts)))
    assert f"recovers the layers that meet every condition {way} than those that fail one" in text
    p = _fisher_two_sided(meet_rec, meet - meet_rec, fail_rec, fail - fail_rec)
    assert f"p = {p:.2g}" in text
    assert ("(below 0.05)" in text) is below and ("do not show the conditions separating" in text) is not below
    assert f"{meet_rec} of {meet} ({100 * meet_rec / meet:.0f} %) against {fail_rec} of {fail}" in text


def test_the_reading_compares_with_the_controls_both_ways():
    fewer = " ".join(results.trained_reading(_summary(5, 5, 15, 0, control=18)))
    more = " ".join(results.trained_reading(_summary(19, 5, 1, 0, control=18)))
    assert "leaves fewer layers meeting every condition" in fewer
    assert "leaves as many or more layers meeting every condition" in more


def test_the_reading_names_a_task_that_goes_with_the_conditions():
    summary = _summary(9, 9, 36, 0)
    summary["cells"] = [{"task": "teacher", "meet_all": 9}, {"task": "copy", "meet_all": 0}]
    assert "Every layer that meets every condition here is a teacher layer" in " ".join(
        results.trained_reading(summary))
    summary["cells"].append({"task": "copy", "meet_all": 1})  # two tasks meet them: no such sentence
    assert "Every layer that meets every condition here" not in " ".join(results.trained_reading(summary))


def test_with_one_side_empty_the_reading_says_it_cannot_tell():
    text = " ".join(results.trained_reading(_summary(20, 20, 0, 0)))
    assert "every trained layer here meets every condition, so the records cannot say" in text
    assert "Fisher" not in text
    text = " ".join(results.trained_reading(_summary(0, 0, 20, 3)))
    assert "every trained layer here fails at least one condition, so the records cannot say" in text


def _committed():
    from learner.sweep.records import read_record

    if not (FOLDER / "study.json").exists():
        pytest.fail("docs/sweeps/trained/ holds no study: the trained study's records are committed with the page")
    from learner.study.trained import trained_id

    study = json.loads((FOLDER / "study.json").read_text(encoding="utf-8"))
    p = study["parameters"]  # the records in the study's order: settings, then tasks, then seeds
    plan = [trained_id(t, m, d, k, s) for (m, d, k) in p["settings"] for t in p["tasks"] for s in range(p["seeds"])]
    records = {r["id"]: r for r in (read_record(q) for q in sorted((FOLDER / "runs").glob("*.json")))}
    return study, [records[name] for name in plan if name in records] + [
        r for name, r in records.items() if name not in plan]


def test_the_committed_study_is_complete():
    from learner.study.trained import trained_id

    study, records = _committed()
    p = study["parameters"]
    assert len(p["tasks"]) >= 5 and len(p["settings"]) >= 3 and p["seeds"] >= 3
    expected = {trained_id(t, m, d, k, s) for t in p["tasks"] for (m, d, k) in p["settings"] for s in range(p["seeds"])}
    assert {r["id"] for r in records} == expected
    assert all(r["parameters"] == p for r in records)
    assert sorted(q.stem for q in (FOLDER / "layers").glob("*.npz")) == sorted(expected)


def test_the_committed_summary_is_that_of_its_records():
    from learner.study.trained import trained_summary

    _, records = _committed()
    written = json.loads((FOLDER / "summary.json").read_text(encoding="utf-8"))
    again = json.loads(json.dumps(trained_summary(records)))
    for key in again:
        assert written[key] == again[key], key


def test_every_learner_verdict_is_consistent_with_the_truth():
    from learner.study.trained import RECOVERED_TOL

    _, records = _committed()
    for rec in records:
        for label, run in rec["learner"].items():
            where = (rec["id"], label, run["status"])
            if run["success"]:  # a success is a recovery
                assert run["relative_error"] is not None and run["relative_error"] <= RECOVERED_TOL, where
            elif run["status"] == "setting":  # a refusal comes before the first example, naming its condition
                assert run["examples"] == 0 and run["setting_failed"], where
            else:  # a failure names the phase it ended in
                assert run["status"] in {"1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt",
                                         "5_span", "6_search", "budget", "assumptions"}, where


def test_the_readme_is_its_records_and_log():
    """``docs/sweeps/trained/README.md`` (shown at the end of the trained page) quotes the records' totals as the
    summary words them, the commit and learner version that made them, the number of layers, the time limit of
    Adam's refits, and the sitting's end from its log; the log names every layer once, in the study's order."""
    import re
    import subprocess

    from learner.study.trained import trained_markdown, trained_summary

    study, records = _committed()
    readme = " ".join((FOLDER / "README.md").read_text(encoding="utf-8").split())
    totals = trained_markdown(trained_summary(records)).split("\n\n")[1]
    assert " ".join(totals.split()) in readme
    (version,) = {r["versions"]["learner"] for r in records}
    assert f"learner {version}" in readme and f"{len(records)} trained layers" in readme
    p = study["parameters"]
    assert f"{p['adam_seconds']:g} s per refit" in readme and f"budget {p['max_examples']:,} examples" in readme
    assert f"({p['steps']} steps, learning rate {p['lr']:g}" in readme and f"each of {p['seeds']} seeds" in readme
    assert "checkpoints at steps " + ", ".join(map(str, p["checkpoints"])) + " and the last" in readme
    assert "each setting (m, d, k) of " + ", ".join(f"({m}, {d}, {k})" for m, d, k in p["settings"]) in readme
    commit = re.search(r"clean clone at commit ([0-9a-f]{7,40})", readme).group(1)
    shown = subprocess.run(["git", "cat-file", "-t", commit], cwd=ROOT, capture_output=True, text=True)
    if shown.returncode == 0:  # a shallow clone may lack it
        assert shown.stdout.strip() == "commit"
    log = (FOLDER / "progress-trained.log").read_text(encoding="utf-8")
    ids = re.findall(r"trained study: \d+ of \d+, (\S+)", log)
    assert sorted(ids) == sorted(r["id"] for r in records) and len(ids) == len(set(ids))
    end = re.search(r"^rc=0 end=(\S+)$", log, re.M).group(1)
    assert f"ended at {end[11:16]} UTC" in readme
