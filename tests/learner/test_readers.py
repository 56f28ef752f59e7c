"""Readers that cannot hang or crash: every JSON and .npz reader opens only regular files, bounds the size and
the nesting of what it parses, and names the file in its own error.

A FIFO opened for reading blocks until a writer comes, so each FIFO case runs in a thread that must finish
within a few seconds; a reader that waits on the FIFO fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import logging
import os
import threading

import pytest

from learner import io as lio
from learner.errors import FileFormatError, NotRegularFile, RecordError
from learner.sweep.records import read_record, read_run_record

# Nesting far past Python's recursion limit (json's parser raises RecursionError there) and just past the cap.
DEEP = 100_000


def _fifo(tmp_path, name="fifo.json"):
    path = tmp_path / name
    try:
        os.mkfifo(path)
    except (OSError, AttributeError) as exc:  # pragma: no cover - platforms without FIFOs
        pytest.skip(f"mkfifo refused here: {exc}")
    return path


def _nested(path, levels):
    path.write_text("[" * levels + "]" * levels)
    return path


def _finishes(call, seconds=10.0):
    """``call()``'s exception (or None), from a daemon thread that must end within ``seconds``."""
    box: list = []

    def target():
        try:
            call()
            box.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the reader blocked (it waits on the FIFO)"
    return box[0]


class TestReadJson:
    def test_a_record_reads(self, tmp_path):
        path = tmp_path / "r.json"
        path.write_text(json.dumps({"a": [1, {"b": [2.5]}]}))
        assert lio.read_json(path) == {"a": [1, {"b": [2.5]}]}

    def test_a_fifo_is_refused_without_waiting(self, tmp_path):
        fifo = _fifo(tmp_path)
        exc = _finishes(lambda: lio.read_json(fifo, "record"))
        assert isinstance(exc, NotRegularFile) and isinstance(exc, FileFormatError)
        assert str(fifo) in str(exc) and "is a FIFO, not a record" in str(exc)

    def test_a_device_and_a_directory_are_refused(self, tmp_path):
        with pytest.raises(NotRegularFile, match="a character device"):
            lio.read_json("/dev/null")
        with pytest.raises(NotRegularFile, match="a directory"):
            lio.read_json(tmp_path)

    @pytest.mark.parametrize("levels", [DEEP, lio.MAX_JSON_DEPTH + 1])
    def test_deep_nesting_is_refused(self, tmp_path, levels):
        path = _nested(tmp_path / "deep.json", levels)
        with pytest.raises(FileFormatError, match="nested") as exc:
            lio.read_json(path, "record")
        assert str(path) in str(exc.value)

    def test_control_nesting_at_the_cap_reads(self, tmp_path):
        value = lio.read_json(_nested(tmp_path / "ok.json", lio.MAX_JSON_DEPTH))
        assert isinstance(value, list)

    def test_size_is_bounded(self, tmp_path, monkeypatch):
        path = tmp_path / "big.json"
        path.write_text(json.dumps(list(range(100))))
        assert len(lio.read_json(path)) == 100  # control: under the cap
        monkeypatch.setattr(lio, "MAX_JSON_BYTES", 50)
        with pytest.raises(FileFormatError, match="larger than"):
            lio.read_json(path)

    def test_damaged_bytes_name_the_file(self, tmp_path):
        path = tmp_path / "bad.json"
        path.write_bytes(b"\xff\xfe{")
        with pytest.raises(FileFormatError, match="not a readable record") as exc:
            lio.read_json(path, "record")
        assert str(path) in str(exc.value)

    def test_missing_files_stay_oserrors(self, tmp_path):
        with pytest.raises(FileNotFoundError):
            lio.read_json(tmp_path / "missing.json")


class TestRecords:
    def test_read_record_refuses_a_fifo(self, tmp_path):
        fifo = _fifo(tmp_path)
        exc = _finishes(lambda: read_record(fifo))
        assert isinstance(exc, RecordError) and "FIFO" in str(exc)

    def test_read_record_refuses_deep_nesting(self, tmp_path):
        with pytest.raises(RecordError, match="nested"):
            read_record(_nested(tmp_path / "deep.json", DEEP))

    def test_a_fifo_among_a_sweeps_records_is_named_not_waited_on(self, tmp_path):
        fifo = _fifo(tmp_path, "run.json")
        exc = _finishes(lambda: read_run_record(fifo, "scaling-run", 1))
        assert isinstance(exc, ValueError) and "FIFO" in str(exc) and "move it away" in str(exc)

    def test_a_deep_run_record_is_repeated_with_a_warning(self, tmp_path, caplog):
        path = _nested(tmp_path / "run.json", DEEP)
        with caplog.at_level(logging.WARNING):
            assert read_run_record(path, "scaling-run", 1) is None
        assert "its run is repeated" in caplog.text

    def test_control_a_good_run_record_reads(self, tmp_path):
        path = tmp_path / "run.json"
        path.write_text(json.dumps({"kind": "scaling-run", "schema_version": 1, "spec": {}}))
        assert read_run_record(path, "scaling-run", 1)["kind"] == "scaling-run"


class TestNpz:
    def test_load_layer_refuses_a_fifo(self, tmp_path):
        from learner.io import load_layer

        fifo = _fifo(tmp_path, "layer.npz")
        exc = _finishes(lambda: load_layer(fifo))
        assert isinstance(exc, FileFormatError) and "FIFO" in str(exc)


class TestStudies:
    def test_a_newer_study_file_is_not_resumed(self, tmp_path):
        from learner.sweep.engine import STUDY_FILE, claim_study
        from learner.sweep.records import schema_of

        claim_study(tmp_path, "scaling-study", "scaling-run", {"m": [1]})
        claim_study(tmp_path, "scaling-study", "scaling-run", {"m": [1]})  # control: the same study resumes
        study = tmp_path / STUDY_FILE
        text = json.loads(study.read_text()) | {"schema_version": schema_of("scaling-study") + 1}
        study.write_text(json.dumps(text))
        with pytest.raises(ValueError, match="schema_version=2; this version resumes"):
            claim_study(tmp_path, "scaling-study", "scaling-run", {"m": [1]})
        assert json.loads(study.read_text()) == text  # not rewritten

    def test_a_deep_study_file_is_named(self, tmp_path):
        from learner.sweep.engine import STUDY_FILE, claim_study

        _nested(tmp_path / STUDY_FILE, DEEP)
        with pytest.raises(ValueError, match="is unreadable .*nested"):
            claim_study(tmp_path, "scaling-study", "scaling-run", {"m": [1]})

    def test_the_yield_study_skips_a_fifo_among_its_records(self, tmp_path):
        from theory import yield_study

        fifo = _fifo(tmp_path, "run.json")
        exc = _finishes(lambda: yield_study._read_run(fifo))
        assert isinstance(exc, yield_study._Unusable) and "FIFO" in str(exc)
