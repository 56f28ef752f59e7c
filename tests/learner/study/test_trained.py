"""Tests for learner.study.trained: the control's norms, the recovery rule, the summary on constructed records, and
a small study run end to end (resumed without training again)."""

import json

import numpy as np
import pytest

from learner import random_layer
from learner.study.trained import (
    EVERY_CONDITION,
    RECOVERED_TOL,
    condition_margin,
    condition_table,
    learner_failures,
    norm_matched,
    plot_trained,
    recovered,
    trained_id,
    trained_markdown,
    trained_study,
    trained_summary,
)


class TestNormMatched:
    def test_keeps_every_heads_norms_and_changes_its_directions(self):
        layer = random_layer(3, 6, logit_scale=2.0, w_scale=0.7, rng=0)
        other = norm_matched(layer, rng=1)
        for mine, theirs in ((layer.thetas, other.thetas), (layer.ws, other.ws)):
            np.testing.assert_allclose(np.linalg.norm(theirs, axis=(1, 2)), np.linalg.norm(mine, axis=(1, 2)),
                                       rtol=1e-12)
            cosines = np.sum(mine * theirs, axis=(1, 2)) / (np.linalg.norm(mine, axis=(1, 2)) ** 2)
            assert np.all(np.abs(cosines) < 0.9)  # random directions in 36 dimensions: |cos| ~ 1/6

    def test_one_seed_gives_one_control(self):
        layer = random_layer(2, 5, logit_scale=1.0, rng=0)
        np.testing.assert_array_equal(norm_matched(layer, rng=3).thetas, norm_matched(layer, rng=3).thetas)
        assert not np.allclose(norm_matched(layer, rng=3).thetas, norm_matched(layer, rng=4).thetas)


class TestRecovered:
    @pytest.mark.parametrize(("run", "expected"), [
        ({"success": True, "relative_error": RECOVERED_TOL}, True),
        ({"success": True, "relative_error": RECOVERED_TOL * 1.01}, False),
        ({"success": False, "relative_error": 0.0}, False),
        ({"success": True, "relative_error": None}, False),
    ], ids=["at the tolerance", "above it", "a failure", "no error measured"])
    def test_the_rule(self, run, expected):
        assert recovered(run) is expected


def _row(name, ok, value=None, threshold=None, relation="<=", group="attention"):
    return {"name": name, "ok": ok, "value": value, "threshold": threshold, "relation": relation, "group": group,
            "quantity": f"the {name}", "source": "ours"}


def _record(task, m, *, final_failed, control_failed, given, unknown, adam, status="6_search", loss=0.1,
            incoherence=0.25, control_incoherence=0.25, examples=1000, setting_failed=()):
    report = {"failed": final_failed, "rows": [_row("theta_incoherence", "theta_incoherence" not in final_failed,
                                                    incoherence, 0.5),
                                               _row("cube_configurations", None, group="setting")]}
    start = {"failed": ["theta_incoherence"], "rows": [_row("theta_incoherence", False, 0.75, 0.5)]}
    control = {"failed": control_failed, "rows": [_row("theta_incoherence", "theta_incoherence" not in
                                                       control_failed, control_incoherence, 0.5)]}
    return {"task": task, "m": m, "d": 12, "k": 2, "exact": task == "teacher", "conditions": {"0": start,
            "100": report}, "control": control,
            "training": {"final_loss": loss},
            "learner": {"m_given": {"success": given, "relative_error": 1e-30 if given else 1.0, "status": status,
                                    "examples": examples, "message": f"{task}: {status}",
                                    "setting_failed": list(setting_failed)},
                        "m_unknown": {"success": unknown, "relative_error": 1e-30, "status": "6_search",
                                      "examples": examples, "message": "m unknown", "setting_failed": []}},
            "adam": {"success": adam}}


class TestSummary:
    def test_counts_each_cell_by_hand(self):
        records = [
            _record("teacher", 2, final_failed=[], control_failed=[], given=True, unknown=True, adam=True, loss=0.0),
            _record("teacher", 2, final_failed=[], control_failed=["w_incoherence"], given=True, unknown=False,
                    adam=False, loss=0.2),
            _record("copy", 2, final_failed=["theta_incoherence", "theta_diagonal"], control_failed=[], given=False,
                    unknown=False, adam=True, status="assumptions"),
        ]
        summary = trained_summary(records)
        teacher, copy = summary["cells"]
        assert (teacher["layers"], teacher["meet_all"], teacher["control_meet_all"]) == (2, 2, 1)
        assert (teacher["recovered_m_given"], teacher["recovered_m_unknown"], teacher["adam_success"]) == (2, 1, 1)
        assert teacher["median_final_loss"] == pytest.approx(0.1)
        assert copy["failed"] == {"theta_incoherence": 1, "theta_diagonal": 1}
        assert copy["statuses"] == {"assumptions": 1}
        assert summary["totals"] == {"layers": 3, "meet_all": 2, "control_meet_all": 2, "recovered_m_given": 2,
                                     "recovered_m_unknown": 1, "matched_m_given": 2, "adam_success": 2,
                                     "learner_runs": 6,
                                     "wrong_successes": 0, "late_refusals": 0}
        # the trace: at step 0 no copy layer met theta_incoherence, at the end none either; conditions without a
        # verdict (None) are left out
        assert summary["condition_trace"]["copy"]["theta_incoherence"] == {"0": 0.0, "100": 0.0}
        assert summary["condition_trace"]["teacher"]["theta_incoherence"] == {"0": 0.0, "100": 1.0}
        assert "cube_configurations" not in summary["condition_trace"]["teacher"]
        assert summary["recovery_by_conditions"] == {
            "meet_all": {"layers": 2, "recovered_m_given": 2, "recovered_m_unknown": 1},
            "fail_some": {"layers": 1, "recovered_m_given": 0, "recovered_m_unknown": 0}}
        assert summary["condition_trace"]["teacher"][EVERY_CONDITION] == {"0": 0.0, "100": 1.0}
        # margins: 0.75 / 0.5 at step 0 for every layer; at the end 0.25 / 0.5 (the fixture's incoherence)
        assert summary["margin_trace"]["teacher"]["theta_incoherence"] == {"0": pytest.approx(1.5),
                                                                           "100": pytest.approx(0.5)}
        assert summary["condition_trace"]["copy"][EVERY_CONDITION] == {"0": 0.0, "100": 0.0}
        table = trained_markdown(summary)
        assert "| teacher | (2, 12, 2) | yes | 0.1 | 2/2 | 1/2 | none | 2/2 | 1/2 | 2/2 | 6_search 2 | 1/2 |" in table
        assert "theta_diagonal (1)" in table and "theta_incoherence (1)" in table
        assert "of the learner's 6 runs, 0 claim a success that misses" in table.lower()
        assert "| task | step 0 | step 100 |" in table and "| copy | 0% | 0% |" in table
        assert "| teacher | 0% | 100% |" in table

    def test_a_success_that_misses_and_a_late_refusal_are_counted(self):
        # a run that says success at 1e-6 against the layer is a wrong verdict; a refusal after 5 examples is late
        miss = _record("teacher", 2, final_failed=[], control_failed=[], given=True, unknown=True, adam=True)
        miss["learner"]["m_given"]["relative_error"] = 1e-6
        late = _record("copy", 2, final_failed=[], control_failed=[], given=False, unknown=True, adam=True,
                       status="setting", examples=5, setting_failed=["certificate_sound"])
        early = _record("copy", 2, final_failed=[], control_failed=[], given=False, unknown=True, adam=True,
                        status="setting", examples=0, setting_failed=["certificate_sound"])
        totals = trained_summary([miss, late, early])["totals"]
        assert (totals["wrong_successes"], totals["late_refusals"]) == (1, 1)


class TestConditions:
    @pytest.mark.parametrize(("row", "expected"), [
        (_row("a", False, 0.75, 0.5), 1.5), (_row("a", True, 0.25, 0.5), 0.5),
        (_row("a", True, 3.0, 1.5, ">="), 0.5), (_row("a", False, 1.0, 1.5, ">="), 1.5),
        (_row("a", False, 12.0, 12.0, "<"), 1.0), (_row("a", None, 1.0, 2.0), None),
        (_row("a", False, 0.0, 0.1, ">="), None),
    ], ids=["upper, failed", "upper, met", "lower, met", "lower, failed", "strict, at it", "not measured",
            "lower, zero"])
    def test_the_margin_is_above_one_where_the_condition_fails(self, row, expected):
        assert condition_margin(row) == (None if expected is None else pytest.approx(expected))

    def test_counts_and_margins_by_hand(self):
        records = [
            _record("teacher", 2, final_failed=[], control_failed=[], given=True, unknown=True, adam=True,
                    incoherence=0.1, control_incoherence=0.2),
            _record("copy", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=False,
                    adam=True, incoherence=0.9, control_incoherence=0.3),
            _record("copy", 2, final_failed=["theta_incoherence"], control_failed=["theta_incoherence"],
                    given=False, unknown=False, adam=True, incoherence=0.6, control_incoherence=0.7),
        ]
        (row,) = condition_table(records)  # cube_configurations has no verdict: left out
        assert row["name"] == "theta_incoherence" and row["group"] == "attention"
        assert (row["measured"], row["met"], row["control_measured"], row["control_met"]) == (3, 1, 3, 2)
        assert row["median_margin"] == pytest.approx(1.2)  # 0.6 / 0.5, the middle of 0.2, 1.8, 1.2
        assert row["worst_margin"] == pytest.approx(1.8)
        assert row["control_median_margin"] == pytest.approx(0.6)

    def test_failures_are_grouped_by_phase_and_broken_condition(self):
        records = [
            _record("copy", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=True,
                    adam=True),
            _record("copy", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=True,
                    adam=True),
            _record("copy", 2, final_failed=[], control_failed=[], given=False, unknown=True, adam=True,
                    status="budget"),
            _record("parity", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=True,
                    adam=True, status="setting", examples=0, setting_failed=["sharpness_reach"]),
        ]
        failures = learner_failures(records)
        assert [(f["task"], f["m_given"], f["status"], f["conditions"], f["runs"]) for f in failures] == [
            ("copy", True, "6_search", ["theta_incoherence"], 2), ("copy", True, "budget", [], 1),
            ("parity", True, "setting", ["sharpness_reach"], 1)]  # a refusal names the setting's conditions
        assert failures[0]["median_relative_error"] == 1.0 and failures[0]["message"] == "copy: 6_search"
        table = trained_markdown(trained_summary(records))
        assert "| copy | given | 6_search | theta_incoherence | 2 | 1 | copy: 6_search |" in table
        assert "| copy | given | budget | none | 1 |" in table

    def test_the_figure_is_drawn(self, tmp_path):
        pytest.importorskip("matplotlib")
        records = [_record("teacher", 2, final_failed=[], control_failed=[], given=True, unknown=True, adam=True)]
        path = plot_trained(trained_summary(records), tmp_path / "trained.png")
        assert path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"


def test_a_small_study_runs_and_resumes_without_training_again(tmp_path, capsys):
    pytest.importorskip("torch")
    kwargs = {"tasks": ["teacher", "parity"], "settings": [(1, 6, 2)], "seeds": 1, "steps": 60,
              "checkpoints": (0, 30), "max_examples": 200_000, "adam_seconds": 1.0, "workers": 1}
    first = trained_study(tmp_path, **kwargs, progress=True)
    assert "trained layers" in capsys.readouterr().err  # the bar, on standard error
    names = sorted(p.name for p in (tmp_path / "runs").glob("*.json"))
    assert names == [f"{trained_id(t, 1, 6, 2, 0)}.json" for t in ("parity", "teacher")]
    assert sorted(p.name for p in (tmp_path / "layers").glob("*.npz")) == [n.replace(".json", ".npz") for n in names]
    teacher = next(r for r in first["records"] if r["task"] == "teacher")
    assert sorted(teacher["conditions"], key=int) == ["0", "30", "60"]
    assert teacher["learner"]["m_given"]["status"] == "6_search" and recovered(teacher["learner"]["m_given"])
    before = {n: (tmp_path / "runs" / n).read_bytes() for n in names}
    again = trained_study(tmp_path, **kwargs, run=False, progress=True)
    assert "trained layers" not in capsys.readouterr().err  # nothing to run, no bar
    assert {n: (tmp_path / "runs" / n).read_bytes() for n in names} == before
    assert again["summary"]["totals"] == first["summary"]["totals"]
    assert json.loads((tmp_path / "summary.json").read_text())["totals"]["layers"] == 2


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"tasks": ["nope"]}, "tasks"),
    ({"settings": [(7, 12, 2)]}, r"m <= 6, 2 <= k <= 4 and k < d <= 24 .*got \(7, 12, 2\)"),
    ({"settings": [(2, 32, 2)]}, r"got \(2, 32, 2\)"),
    ({"seeds": 0}, "seeds"),
], ids=["unknown task", "too many heads", "too wide", "no seeds"])
def test_bad_input_is_refused_by_name(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        trained_study(tmp_path, **kwargs)


def test_a_function_matched_without_identified_parameters_is_matched_not_recovered():
    """The learner matched F to 1e-29 but declined success (its parameters break the conditions): counted as F
    matched, not as recovered; a run that missed F is neither."""
    declined = _record("copy", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=False,
                       adam=True, status="assumptions")
    declined["learner"]["m_given"]["relative_error"] = 1e-29
    missed = _record("copy", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=False,
                     adam=True)
    totals = trained_summary([declined, missed])["totals"]
    assert (totals["recovered_m_given"], totals["matched_m_given"]) == (0, 1)


class TestEdges:
    """The rules at the inputs where a plausible slip shows: checkpoints compared as text, boundaries, a recovered run
    before a failed one, a group without any measured error."""

    def test_the_last_step_is_the_largest_number_not_the_last_string(self):
        rec = _record("teacher", 2, final_failed=[], control_failed=[], given=True, unknown=True, adam=True)
        late = {"failed": ["theta_incoherence"], "rows": [_row("theta_incoherence", False, 0.9, 0.5)]}
        rec["conditions"] = {"0": rec["conditions"]["0"], "500": late, "1500": rec["conditions"]["100"]}
        (row,) = condition_table([rec])
        assert row["met"] == 1  # step 1500's report (met), not step "500"'s, which sorts last as text
        assert trained_summary([rec])["totals"]["meet_all"] == 1

    def test_a_refusal_after_one_example_is_late(self):
        rec = _record("copy", 2, final_failed=[], control_failed=[], given=False, unknown=True, adam=True,
                      status="setting", examples=1, setting_failed=["certificate_sound"])
        assert trained_summary([rec])["totals"]["late_refusals"] == 1

    def test_the_tolerance_itself_counts_as_matched(self):
        from learner.study.trained import function_matched

        assert function_matched({"relative_error": RECOVERED_TOL})
        assert not function_matched({"relative_error": RECOVERED_TOL * 1.01})

    @pytest.mark.parametrize(("row", "expected"), [
        (_row("a", True, 0.3, 0.0), None),  # an upper bound of 0: no finite ratio
        (_row("a", True, None, 0.5), None),  # not measured
        (_row("a", True, 0.3, None), None),  # no threshold
    ], ids=["zero threshold", "no value", "no threshold"])
    def test_a_margin_without_a_finite_ratio_is_none(self, row, expected):
        assert condition_margin(row) is expected

    def test_a_recovered_run_does_not_hide_the_failed_one_after_it(self):
        rec = _record("copy", 2, final_failed=["theta_incoherence"], control_failed=[], given=True, unknown=False,
                      adam=True)
        rec["learner"]["m_unknown"]["relative_error"] = 0.3  # m given recovered first, m unknown failed after it
        failures = learner_failures([rec])
        assert [(f["m_given"], f["runs"]) for f in failures] == [(False, 1)]

    def test_a_group_without_a_measured_error_has_no_median(self):
        rec = _record("parity", 2, final_failed=["theta_incoherence"], control_failed=[], given=False, unknown=True,
                      adam=False, status="budget")
        rec["learner"]["m_given"]["relative_error"] = None
        (failure,) = learner_failures([rec])
        assert failure["median_relative_error"] is None
