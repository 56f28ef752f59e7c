"""A study's run records carry the SHA-256 of their content: a record edited or damaged after it was written (a
failure turned into a success by hand, say) is repeated with a warning on resume and not summarised, never trusted."""

from __future__ import annotations

import json
import logging

import pytest

from learner.cli import main
from learner.sweep.records import DIGEST_FIELD, digest_problem, record_digest

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
        assert "`record_sha256` is missing" in digest_problem({"a": 1})  # required: nothing vouches for it
        assert "`record_sha256` is null" in digest_problem({"a": 1, DIGEST_FIELD: None})
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


def test_ctrl_c_counts_the_whole_study(tmp_path, monkeypatch):
    """Interrupted in its second sweep, a study says how many of all its planned runs are kept: the first sweep's
    too (a sweep alone counted only its own, e.g. "20 of 24" in a study of 44)."""
    from learner.errors import SweepInterrupted
    from learner.study import scaling

    calls = []

    def fake(specs, out, **_):
        calls.append(len(specs))
        if len(calls) == 2:  # Adam's measured runs: three of them finished before Ctrl-C
            raise SweepInterrupted(3, len(specs), out)
        return [{"run_id": s.run_id, "outcome": "finished", "timings": {"total": 1.0}} for s in specs], \
            {"ran": len(specs), "skipped": 0}

    monkeypatch.setattr(scaling, "run_sweep", fake)
    with pytest.raises(SweepInterrupted) as exc:
        scaling.scaling_study(tmp_path / "s", ms=[1, 2], d=8, k=2, seeds=3, methods=["provable", "adam"],
                              adam_lrs=(0.01,), backend="serial", plot=False)
    # The learner's 6 runs in the first sweep (finished), Adam's 6 planned in the second: 12 in all, 9 kept.
    assert calls == [6, 6] and (exc.value.recorded, exc.value.total) == (9, 12)
    assert str(exc.value).startswith("interrupted: 9 of 12 runs of the study are recorded")


def test_ctrl_c_in_the_race_counts_its_measured_runs_too(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="the race runs torch Adam: the torch extra")
    from learner.errors import SweepInterrupted
    from learner.study import peers

    calls = []

    def fake(specs, out, **_):
        calls.append([s.role for s in specs])
        raise SweepInterrupted(2, len(specs), out)

    monkeypatch.setattr(peers, "run_sweep", fake)
    with pytest.raises(SweepInterrupted) as exc:
        peers.race_study(tmp_path / "r", grid=["m=1,k=2,d=6"], seeds=2, backend="serial", plot=False)
    [roles] = calls
    tuned = roles.count("tune") // 2  # each tuned method tries two learning rates on one layer
    assert exc.value.recorded == 2 and exc.value.total == len(roles) + 2 * tuned  # + each tuned method's 2 layers
    assert "runs of the study are recorded" in str(exc.value)


def test_every_committed_run_record_carries_its_digest():
    """The studies' committed records (docs/sweeps) are read by resume, --summarise-only and the yield study, which
    require the digest: each carries one that matches its content (checked against a fresh SHA-256 of the canonical
    JSON, independent of record_digest)."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "docs" / "sweeps"
    paths = sorted(root.glob("*/runs/*.json"))
    if not paths:
        pytest.skip("no committed sweeps")
    for path in paths:
        rec = json.loads(path.read_text(encoding="utf-8"))
        body = {key: value for key, value in rec.items() if key != DIGEST_FIELD}
        blob = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        assert rec.get(DIGEST_FIELD) == hashlib.sha256(blob.encode("utf-8")).hexdigest(), path
