"""A study's run records carry the SHA-256 of their content: a record edited or damaged after it was written (a
failure turned into a success by hand, say) is repeated with a warning on resume and not summarised, never trusted."""

from __future__ import annotations

import json
import logging

import pytest

from learner.cli import main
from learner.study.records import DIGEST_FIELD, digest_problem, record_digest

ARGV = ["scaling", "--m", "1", "--d", "6", "--k", "2", "--seeds", "2", "--methods", "provable", "--quick", "--serial",
        "--no-progress", "--success-tol", "1e-30"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("digest") / "study"
    assert main([*ARGV, "--out", str(out)]) == 0
    return out


def _copy(study, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(study, copy)
    return copy, sorted((copy / "runs").glob("provable-eval-*.json"))


class TestPieces:
    def test_the_digest_is_of_the_content_without_itself(self):
        rec = {"a": 1, "b": [1.5, None], DIGEST_FIELD: "x"}
        assert record_digest(rec) == record_digest({"b": [1.5, None], "a": 1})  # order does not matter
        assert record_digest(rec) != record_digest({"a": 2, "b": [1.5, None]})  # content does
        assert digest_problem({"a": 1}) is None  # a record of a version that wrote none
        assert digest_problem({"a": 1, DIGEST_FIELD: record_digest({"a": 1})}) is None
        assert "edited or damaged" in digest_problem({"a": 2, DIGEST_FIELD: record_digest({"a": 1})})


def test_every_record_is_written_with_its_digest(study):
    for path in (study / "runs").glob("*.json"):
        rec = json.loads(path.read_text())
        assert rec[DIGEST_FIELD] == record_digest(rec)


def test_an_edited_record_is_repeated_with_a_warning(study, tmp_path, caplog, capsys):
    copy, records = _copy(study, tmp_path)
    rec = json.loads(records[0].read_text())
    rec["success"] = not rec["success"]  # the hand edit the summary would otherwise trust
    records[0].write_text(json.dumps(rec))
    before = records[1].stat().st_mtime_ns
    with caplog.at_level(logging.WARNING):
        assert main([*ARGV, "--out", str(copy)]) == 0
    assert "edited or damaged after it was written" in caplog.text and records[0].name in caplog.text
    assert "1 run now, 1 kept from earlier" in capsys.readouterr().out
    fresh = json.loads(records[0].read_text())
    assert fresh[DIGEST_FIELD] == record_digest(fresh) and fresh["success"] != rec["success"]
    assert records[1].stat().st_mtime_ns == before  # control: the untouched record was kept as it was


def test_summarising_refuses_an_edited_record(study, tmp_path, capsys):
    copy, records = _copy(study, tmp_path)
    rec = json.loads(records[0].read_text())
    rec["message"] = "held-out relative error 0 <= 1e-30"
    records[0].write_text(json.dumps(rec))
    assert main([*ARGV, "--out", str(copy), "--summarise-only"]) == 2
    assert "1 of 2 runs have no finished record" in capsys.readouterr().err
    fine, _ = _copy(study, tmp_path / "fine")
    assert main([*ARGV, "--out", str(fine), "--summarise-only"]) == 0  # control: the same records untouched
