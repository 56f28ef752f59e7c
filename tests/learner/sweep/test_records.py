"""Tampered run records are refused by the study readers, with the file and the field named; the readers' and
the study folder's rules, each against a constructed case."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from learner.cli import main
from learner.errors import RecordError
from learner.sweep.records import (
    DIGEST_FIELD,
    FIELD_CHECKS,
    KINDS,
    MAX_SECONDS,
    read_record,
    read_run_record,
    record_digest,
    record_problem,
    study_path,
    timings_problem,
    write_summary,
)
from learner.sweep.runs import RunSpec

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
    with caplog.at_level(logging.WARNING, logger="learner.sweep.engine"):
        assert main(["scaling", "--summarise-only", "--no-progress", "--out", str(out)]) == 2
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert f"ignoring invalid record {out / 'runs' / RECORD}" in warning and "`timings.total`" in warning
    assert "1 of 60 runs have no finished record" in capsys.readouterr().err


def _write(path, value):
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


class TestReadRecord:
    """Which files ``read_record`` takes as records, each case constructed, the answer written from the rule."""

    def test_control_a_record_of_each_kind_and_readable_schema_is_returned_as_it_is(self, tmp_path):
        for kind, (_, readable) in KINDS.items():
            for schema in readable:
                rec = {"kind": kind, "schema_version": schema, "x": [1, 2]}
                path = _write(tmp_path / "r.json", rec)
                assert read_record(path) == rec
                assert read_record(path, kind=kind) == rec

    def test_another_kind_than_the_one_asked_for_is_refused(self, tmp_path):
        path = _write(tmp_path / "r.json", {"kind": "scaling-study", "schema_version": 1})
        with pytest.raises(RecordError, match="is a scaling-study record, not a peer-study record"):
            read_record(path, kind="peer-study")

    def test_a_command_record_without_a_kind_is_schema_0(self, tmp_path):
        path = _write(tmp_path / "r.json", {"command": "bench --span", "seconds": 1.5})
        assert read_record(path) == {"kind": "command-record", "schema_version": 0, "command": "bench --span",
                                     "seconds": 1.5}

    @pytest.mark.parametrize("rec", [{}, {"seconds": 1.5}, {"kind": None, "command": "x"}, {"kind": "x-study"}],
                             ids=repr)
    def test_an_object_without_a_known_kind_is_refused(self, tmp_path, rec):
        with pytest.raises(RecordError, match="field `kind` must be one of"):
            read_record(_write(tmp_path / "r.json", rec))

    @pytest.mark.parametrize("schema", [None, 0, 3, "1", 1.5], ids=repr)
    def test_an_unreadable_schema_is_refused(self, tmp_path, schema):
        rec = {"kind": "scaling-run", "schema_version": schema}
        with pytest.raises(RecordError, match="field `schema_version` of a scaling-run record must be one of"):
            read_record(_write(tmp_path / "r.json", rec))

    @pytest.mark.parametrize("value, name", [([1, 2], "list"), ("text", "str"), (3, "int"), (None, "NoneType")])
    def test_a_json_value_that_is_not_an_object_is_refused(self, tmp_path, value, name):
        with pytest.raises(RecordError, match=f"is not a record: it holds a JSON {name}, not an object"):
            read_record(_write(tmp_path / "r.json", value))

    def test_a_damaged_file_is_named_as_a_record(self, tmp_path):
        path = tmp_path / "r.json"
        path.write_text('{"kind": ', encoding="utf-8")
        with pytest.raises(RecordError, match=r"r.json' is not a readable record \(JSONDecodeError"):
            read_record(path)


class TestReadRunRecord:
    def test_a_record_of_another_kind_is_refused_even_with_the_same_schema(self, tmp_path):
        path = _write(tmp_path / "r.json", {"kind": "hard-run", "schema_version": 2})
        with pytest.raises(ValueError, match="is not a scaling-run record; `out` must be a directory of this sweep"):
            read_run_record(path, "scaling-run", 2)

    def test_a_json_value_that_is_not_an_object_is_refused(self, tmp_path):
        with pytest.raises(ValueError, match="is not a scaling-run record"):
            read_run_record(_write(tmp_path / "r.json", [1, 2]), "scaling-run", 2)

    def test_a_damaged_record_is_repeated_with_a_warning_naming_the_file_and_the_reason(self, tmp_path, caplog):
        path = tmp_path / "r.json"
        path.write_text('{"kind": ', encoding="utf-8")
        with caplog.at_level(logging.WARNING, logger="learner.sweep.records"):
            assert read_run_record(path, "scaling-run", 2) is None
        warning = " ".join(r.getMessage() for r in caplog.records)
        assert f"ignoring unreadable record {path} (" in warning and "is not a readable record" in warning

    def test_control_the_kind_and_schema_asked_for(self, tmp_path):
        rec = {"kind": "scaling-run", "schema_version": 2}
        assert read_run_record(_write(tmp_path / "r.json", rec), "scaling-run", 2) == rec


class TestStudyPathRules:
    def test_a_name_with_a_nul_byte_is_refused_as_leaving_the_folder(self, tmp_path):
        with pytest.raises(ValueError, match="`name` must be a file inside the study folder"):
            study_path(tmp_path, "runs/a\0b.json")

    @pytest.mark.parametrize("name", ["runs/../summary.md", "runs/./a.json", ".."], ids=repr)
    def test_a_dot_part_is_refused_even_when_it_stays_inside(self, tmp_path, name):
        with pytest.raises(ValueError, match="`name` must be a file inside the study folder"):
            study_path(tmp_path, name)

    @pytest.mark.parametrize("name, blocker", [("runs/a.json", "runs"), ("runs/x/a.json", "runs/x")])
    def test_a_file_where_a_folder_goes_is_refused(self, tmp_path, name, blocker):
        (tmp_path / blocker).parent.mkdir(exist_ok=True)
        (tmp_path / blocker).write_text("a user's file")
        with pytest.raises(ValueError, match=f"{blocker}' is a file where the study keeps a folder"):
            study_path(tmp_path, name)

    def test_control_the_file_itself_may_exist(self, tmp_path):
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / "a.json").write_text("{}")
        assert study_path(tmp_path, "runs/a.json") == tmp_path / "runs" / "a.json"


class TestFieldRules:
    @pytest.mark.parametrize("value, ok", [(0, True), (7, True), (2**70, True), (-1, False), (1.5, False),
                                           (1.0, False), (True, False), ("3", False), (None, False)], ids=repr)
    def test_a_count_is_a_non_negative_int_not_a_bool(self, value, ok):
        assert FIELD_CHECKS["count"][0](value) is ok

    def test_a_missing_field_is_named_missing(self):
        assert record_problem({}, {"a": "count"}) == "`a` is missing"
        assert record_problem({"a": {}}, {"a.b": "str"}) == "`a.b` is missing"
        assert record_problem({}, {"a": "count?"}) is None

    def test_timings_missing_and_nested_are_named_by_their_field(self):
        assert record_problem({}, {"timings": "timings"}) == "`timings` is missing"
        assert record_problem({"run": {"timings": {"total": -1}}}, {"run.timings": "timings"}).startswith(
            "`run.timings.total` must be a duration")

    def test_the_rules_after_a_timings_rule_are_checked(self):
        assert record_problem({"timings": {"total": 1.0}}, {"timings": "timings", "n": "count"}) == "`n` is missing"


def test_write_summary_writes_both_files_and_returns_their_paths(tmp_path):
    table = "| m | seconds |\n|---|---|\n| 2 | 1.5 — ü |\n"
    files = write_summary(tmp_path, {"rows": [1]}, table)
    assert files == {"summary_json": str(tmp_path / "summary.json"), "summary_md": str(tmp_path / "summary.md")}
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == table
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))["rows"] == [1]


class TestClaimedParameters:
    """What a study reads of its own claim where its caller left a choice open (the methods it ran)."""

    def _write(self, path, obj):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj))

    def test_the_claim_of_that_kind_or_the_summary_of_an_older_study(self, tmp_path):
        from learner.sweep.engine import claimed_parameters

        self._write(tmp_path / "a" / "study.json", {"kind": "peer-study", "parameters": {"options": {"adam": {}}}})
        assert claimed_parameters(tmp_path / "a", "peer-study") == {"options": {"adam": {}}}
        assert claimed_parameters(tmp_path / "a", "race-study") is None  # control: another kind's claim
        self._write(tmp_path / "b" / "summary.json", {"parameters": {"methods": ["provable"]}})  # no claim: older
        assert claimed_parameters(tmp_path / "b", "scaling-study") == {"methods": ["provable"]}

    @pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"kind": "peer-study", "parameters": 3}'])
    def test_what_cannot_be_read_is_no_claim(self, tmp_path, content):
        from learner.sweep.engine import claimed_parameters

        (tmp_path / "study.json").write_text(content)
        assert claimed_parameters(tmp_path, "peer-study") is None
        assert claimed_parameters(tmp_path / "missing", "peer-study") is None
        assert claimed_parameters(5, "peer-study") is None  # a bad `out` is named by its own check, not here
