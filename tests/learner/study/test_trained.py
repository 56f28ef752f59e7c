"""Tests for learner.study.trained: the control's norms, the recovery rule, the summary on constructed records, and
a small study run end to end (resumed without training again)."""

import json

import numpy as np
import pytest

from learner import random_layer
from learner.study.trained import (
    RECOVERED_TOL,
    norm_matched,
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


class TestRecovered:
    @pytest.mark.parametrize(("run", "expected"), [
        ({"success": True, "relative_error": RECOVERED_TOL}, True),
        ({"success": True, "relative_error": RECOVERED_TOL * 1.01}, False),
        ({"success": False, "relative_error": 0.0}, False),
        ({"success": True, "relative_error": None}, False),
    ], ids=["at the tolerance", "above it", "a failure", "no error measured"])
    def test_the_rule(self, run, expected):
        assert recovered(run) is expected


def _record(task, m, *, final_failed, control_failed, given, unknown, adam, status="6_search", loss=0.1):
    report = {"failed": final_failed, "rows": [{"name": "theta_incoherence", "ok": "theta_incoherence" not in
                                                final_failed}, {"name": "cube_configurations", "ok": None}]}
    start = {"failed": ["theta_incoherence"], "rows": [{"name": "theta_incoherence", "ok": False}]}
    return {"task": task, "m": m, "d": 12, "k": 2, "exact": task == "teacher", "conditions": {"0": start,
            "100": report}, "control": {"failed": control_failed},
            "training": {"final_loss": loss},
            "learner": {"m_given": {"success": given, "relative_error": 1e-30 if given else 1.0, "status": status},
                        "m_unknown": {"success": unknown, "relative_error": 1e-30}},
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
                                     "recovered_m_unknown": 1, "adam_success": 2}
        # the trace: at step 0 no copy layer met theta_incoherence, at the end none either; conditions without a
        # verdict (None) are left out
        assert summary["condition_trace"]["copy"]["theta_incoherence"] == {"0": 0.0, "100": 0.0}
        assert summary["condition_trace"]["teacher"]["theta_incoherence"] == {"0": 0.0, "100": 1.0}
        assert "cube_configurations" not in summary["condition_trace"]["teacher"]
        table = trained_markdown(summary)
        assert "| teacher | (2, 12, 2) | yes | 0.1 | 2/2 | 1/2 | none | 2/2 | 1/2 | 6_search 2 | 1/2 |" in table
        assert "theta_diagonal (1)" in table and "theta_incoherence (1)" in table


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
