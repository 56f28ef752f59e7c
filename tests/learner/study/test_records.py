"""Tampered run records are refused by the study readers, with the file and the field named."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from learner.cli import main
from learner.study.records import DIGEST_FIELD, MAX_SECONDS, record_digest, record_problem, timings_problem
from learner.study.runs import RunSpec

ROOT = Path(__file__).resolve().parents[3]
MAIN = ROOT / "docs" / "sweeps" / "main"
RECORD = "provable-eval-m1-d12-k2-ls1-boolean-s0.json"


def _record():
    return json.loads((MAIN / "runs" / RECORD).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("field", "value", "words"), [
    ("total", "61 s", "`timings.total` must be a duration in seconds (0 to 1e+08); got '61 s'"),
    ("total", 1e300, "`timings.total` must be a duration in seconds (0 to 1e+08); got 1e+300"),
    ("total", float("nan"), "`timings.total` must be a duration in seconds"),
    ("5_span", -2.0, "`timings.5_span` must be a duration in seconds"),
    ("5_span", None, "`timings.5_span` must be a duration in seconds"),
    ("1_crude_sum", True, "`timings.1_crude_sum` must be a duration in seconds"),
])
def test_run_rules_refuse_tampered_timings(field, value, words):
    rec = _record()
    rec["timings"][field] = value
    problem = record_problem(rec, RunSpec.record_rules(rec))
    assert problem is not None and problem.startswith(words)


def test_control_the_committed_record_and_the_longest_duration_pass():
    rec = _record()
    assert record_problem(rec, RunSpec.record_rules(rec)) is None
    assert timings_problem({"total": MAX_SECONDS, "6_search": 0}) is None
    assert timings_problem([1.0]).startswith("`timings` must be an object of durations")


def test_summarise_only_names_the_file_and_field_and_does_not_use_the_record(tmp_path, caplog, capsys):
    out = tmp_path / "main"
    shutil.copytree(MAIN, out, ignore=shutil.ignore_patterns("*.png"))
    rec = _record()
    rec["timings"]["total"] = 1e300
    rec[DIGEST_FIELD] = record_digest(rec)  # signed again: the field's own check must refuse it
    (out / "runs" / RECORD).write_text(json.dumps(rec), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="learner.study.sweep"):
        assert main(["scaling", "--summarise-only", "--no-progress", "--out", str(out)]) == 2
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert f"ignoring invalid record {out / 'runs' / RECORD}" in warning and "`timings.total`" in warning
    assert "1 of 60 runs have no finished record" in capsys.readouterr().err
