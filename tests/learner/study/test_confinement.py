"""A study writes only inside its folder, never through a symbolic link, and trusts only records that vouch for
themselves: a digest (required), a run id that is its file's, and fields of the types its summaries read.

Every study command is checked: ``scaling``, ``peers``, ``race``, ``noise-study``, ``sharpness`` (each with
``--summarise-only``, and ``scaling`` on resume) and ``learn-hard``; each refusal has its control, the same folder
without the planted link or edit, which the command accepts."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
from pathlib import Path

import pytest

from learner.cli import main
from learner.sweep.records import DIGEST_FIELD, record_digest, study_path

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="the torch extra is not installed (pip install -e '.[torch]')")
needs_mpl = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                               reason="the plot extra (matplotlib) is not installed")
NOTES = "my notes, not the toolkit's\n"
BASE = ["--quick", "--serial", "--no-progress", "--seed", "3"]
#: Each study command: its arguments (without --out), the folder whose runs/ holds its records, and its figure.
COMMANDS = {
    "scaling": (["scaling", "--m", "1", "--d", "6", "--k", "2", "--seeds", "2", "--methods", "provable", *BASE],
                "", "scaling.png"),
    "peers": (["peers", "--m", "1", "--d", "6", "--seeds", "1", *BASE], "", None),
    "race": (["race", "--grid", "m=1,k=2,d=6", "--seeds", "1", *BASE], "", "race.png"),
    "noise-study": (["noise-study", "--sigma", "0", "--cells", "m=1,k=2,d=6", "--seeds", "1", *BASE], "sigma-0",
                    "noise.png"),
    "sharpness": (["sharpness", "--logit-scale", "1", "--d", "6", "--seeds", "1", "--adam-seeds", "0", *BASE],
                  "ls-1-d6", "sharpness.png"),
}
TORCH = {"peers", "race"}


def _marks(command):
    return [needs_torch] if command in TORCH else []


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """Each study command run once, on the smallest budgets, into its own folder (built on first use)."""
    root, built = tmp_path_factory.mktemp("studies"), {}

    def get(command):
        if command not in built:
            out = root / command
            assert main([*COMMANDS[command][0], "--out", str(out)]) == 0
            built[command] = out
        return built[command]

    return get


def _copy(src, tmp_path):
    dst = tmp_path / "study"
    shutil.copytree(src, dst, symlinks=True)
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    return dst, notes


def _summarise(command, out):
    return main([*COMMANDS[command][0], "--summarise-only", "--out", str(out)])


class TestStudyPath:
    @pytest.mark.parametrize("name", ["../notes.txt", "runs/../../notes.txt", "/etc/passwd", "", "runs//a.json",
                                      "./summary.md", "runs/.."], ids=repr)
    def test_a_name_that_leaves_the_folder_is_refused(self, tmp_path, name):
        with pytest.raises(ValueError, match="`name` must be a file inside the study folder; got name="):
            study_path(tmp_path, name)

    @pytest.mark.parametrize("inside", [False, True], ids=["link out of the folder", "link inside the folder"])
    def test_a_link_is_refused_wherever_it_points(self, tmp_path, inside):
        out = tmp_path / "sc"
        (out / "runs").mkdir(parents=True)
        target = out / "runs" / "a.json" if inside else tmp_path / "notes.txt"
        target.write_text(NOTES)
        (out / "summary.md").symlink_to(target)
        with pytest.raises(ValueError, match=r"'.*summary.md' is a symbolic link .* never through a link"):
            study_path(out, "summary.md")
        assert target.read_text() == NOTES

    def test_a_linked_folder_on_the_way_is_refused(self, tmp_path):
        out = tmp_path / "sc"
        out.mkdir()
        (tmp_path / "elsewhere").mkdir()
        (out / "runs").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(ValueError, match=r"runs' is a symbolic link"):
            study_path(out, "runs/a.json")

    def test_control_own_files_and_a_linked_study_folder(self, tmp_path):
        """The folder itself may be a link (the user named it); files and folders of its own are accepted."""
        (tmp_path / "real" / "runs").mkdir(parents=True)
        (tmp_path / "real" / "summary.md").write_text("old")
        (tmp_path / "link").symlink_to(tmp_path / "real")
        assert study_path(tmp_path / "link", "summary.md") == tmp_path / "link" / "summary.md"
        assert study_path(tmp_path / "link", "runs/new.json") == tmp_path / "link" / "runs" / "new.json"
        assert study_path(tmp_path / "new", "summary.md") == tmp_path / "new" / "summary.md"  # nothing there yet


def _link_cases():
    cases = []
    for command, (_, _, figure) in COMMANDS.items():
        for name in ("summary.md", "summary.json", *([figure] if figure else [])):
            marks = _marks(command) + ([needs_mpl] if name == figure else [])
            cases.append(pytest.param(command, name, marks=marks, id=f"{command}-{name}"))
    return cases


@pytest.mark.parametrize(("command", "name"), _link_cases())
def test_summarise_only_never_writes_through_a_link(studies, tmp_path, capsys, command, name):
    """``DIR/summary.md -> ../notes.txt`` (and every other file a study writes) is refused by name; the notes are
    left as they were."""
    out, notes = _copy(studies(command), tmp_path)
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(Path("..") / "notes.txt")
    assert _summarise(command, out) == 2
    err = capsys.readouterr().err
    assert f"{name}' is a symbolic link" in err and len(err.strip().splitlines()) == 1
    assert notes.read_text() == NOTES


@pytest.mark.parametrize("command", [pytest.param(c, marks=_marks(c)) for c in COMMANDS])
def test_control_summarise_only_rewrites_its_own_files(studies, tmp_path, command):
    out, _ = _copy(studies(command), tmp_path)
    before = (out / "summary.json").read_text()
    assert _summarise(command, out) == 0
    assert json.loads((out / "summary.json").read_text())["rows"] == json.loads(before)["rows"]


@pytest.mark.parametrize("name", ["study.json", "sweep.lock", "runs",
                                  "runs/provable-eval-m1-d6-k2-ls1-boolean-s0.json"])
def test_resume_never_writes_through_a_link(studies, tmp_path, capsys, name):
    """A resumed study refuses a link among its own files before anything runs; the notes are left as they were."""
    out, notes = _copy(studies("scaling"), tmp_path)
    shutil.rmtree(out / name) if (out / name).is_dir() else (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(Path("../" * name.count("/")) / ".." / "notes.txt")
    assert main([*COMMANDS["scaling"][0], "--out", str(out)]) == 2
    assert f"{name}' is a symbolic link" in capsys.readouterr().err
    assert notes.read_text() == NOTES


def test_a_linked_point_folder_of_a_grid_is_refused(studies, tmp_path, capsys):
    out, _ = _copy(studies("noise-study"), tmp_path)
    shutil.move(out / "sigma-0", tmp_path / "elsewhere")
    (out / "sigma-0").symlink_to(tmp_path / "elsewhere")
    assert _summarise("noise-study", out) == 2
    assert "sigma-0' is a symbolic link" in capsys.readouterr().err


def test_learn_hard_never_writes_through_a_link(tmp_path, capsys):
    from lowerbounds.cli import main as lb_main

    out, notes = tmp_path / "lh", tmp_path / "notes.txt"
    out.mkdir()
    notes.write_text(NOTES)
    argv = ["learn-hard", "--quick", "--out", str(out), "--no-progress", "--serial"]
    for name in ("summary.md", "learn_hard.png"):
        (out / name).symlink_to(notes)
        assert lb_main(argv) == 2
        assert f"{name}' is a symbolic link" in capsys.readouterr().err and notes.read_text() == NOTES
        (out / name).unlink()
    assert lb_main(argv) == 0  # control: the folder without the links
    assert notes.read_text() == NOTES


# ------------------------------------------------------------------------------------------- forged records


def _edit(path, change, sign=True):
    rec = json.loads(path.read_text())
    change(rec)
    if sign:  # signed again: the record's own digest matches, so only the other checks can refuse it
        rec[DIGEST_FIELD] = record_digest(rec)
    path.write_text(json.dumps(rec))


def _set(dotted, value):
    def change(rec):
        *parents, last = dotted.split(".")
        for key in parents:
            rec = rec.setdefault(key, {})
        rec[last] = value
    return change


#: Edits that make a record untrustworthy: (id, edit, sign). The digest removed or null is not signed again.
FORGERIES = [
    ("digest missing", lambda rec: rec.pop(DIGEST_FIELD), False),
    ("digest null", _set(DIGEST_FIELD, None), False),
    ("run_id leaves the folder", _set("run_id", "../../x"), True),
    ("run_id of another run", _set("run_id", "provable-eval-m1-d6-k2-ls1-boolean-s9"), True),
    ("phase 4 a list", _set("diagnostics.4_refined_sculpt", []), True),
    ("phase 4 tol a string", _set("diagnostics.4_refined_sculpt.tol", "x"), True),
    ("forecast a string", _set("diagnostics.4_refined_sculpt.forecast", "x"), True),
    ("relative error a string", _set("errors.relative_error", "x"), True),
    ("noise estimate a list", _set("noise", []), True),
    ("fit a string", _set("diagnostics.fit", "x"), True),
    ("seconds_to a string", _set("diagnostics.fit.seconds_to", {"1e-03": "x"}), True),
    ("torch version a list", _set("diagnostics.fit.torch_version", [1]), True),
]


def _first_eval(out, command):
    runs = out / COMMANDS[command][1] / "runs"
    return next(p for p in sorted(runs.glob("*-eval-*.json")) if "provable" in p.name)


@pytest.mark.parametrize("forge", [pytest.param(f, id=f[0]) for f in FORGERIES])
def test_resume_repeats_a_forged_record(studies, tmp_path, caplog, capsys, forge):
    _, change, sign = forge
    out, _ = _copy(studies("scaling"), tmp_path)
    path = _first_eval(out, "scaling")
    _edit(path, change, sign)
    with caplog.at_level(logging.WARNING, logger="learner.sweep.engine"):
        assert main([*COMMANDS["scaling"][0], "--out", str(out)]) == 0
    assert f"ignoring invalid record {path}" in caplog.text and "its run is repeated" in caplog.text
    assert "1 run now, 1 kept from earlier" in capsys.readouterr().out
    rec = json.loads(path.read_text())
    assert rec[DIGEST_FIELD] == record_digest(rec) and rec["run_id"] == path.stem
    assert not (tmp_path.parent / "x.json").exists()


def test_control_resume_keeps_good_records(studies, tmp_path, capsys):
    out, _ = _copy(studies("scaling"), tmp_path)
    assert main([*COMMANDS["scaling"][0], "--out", str(out)]) == 0
    assert "0 run now, 2 kept from earlier" in capsys.readouterr().out


def _forgery_cases():
    return [pytest.param(command, forge, marks=_marks(command), id=f"{command}-{forge[0]}")
            for command in COMMANDS for forge in FORGERIES]


@pytest.mark.slow  # every study command times every forgery; the default tier keeps resume's forgeries
@pytest.mark.parametrize(("command", "forge"), _forgery_cases())
def test_summarise_only_refuses_a_forged_record(studies, tmp_path, caplog, capsys, command, forge):
    """A forged record is refused by name, never summarised and never a traceback; the command exits 2."""
    _, change, sign = forge
    out, _ = _copy(studies(command), tmp_path)
    path = _first_eval(out, command)
    _edit(path, change, sign)
    with caplog.at_level(logging.WARNING):
        assert _summarise(command, out) == 2
    assert f"ignoring invalid record {path}" in caplog.text
    assert "have no finished record" in capsys.readouterr().err


def test_a_grid_does_not_summarise_a_stray_record(studies, tmp_path, caplog):
    """A record that is no point's run (a copy under another name, unsigned) is left out of a grid's summary by
    name; the signed copy of a real run under another name is left out too (its run id is not its file's)."""
    out, _ = _copy(studies("noise-study"), tmp_path)
    path = _first_eval(out, "noise-study")
    rows = json.loads((out / "summary.json").read_text())["rows"]
    for name, sign in (("stray.json", False), ("provable-eval-m1-d6-k2-ls1-boolean-s7.json", True)):
        stray = path.with_name(name)
        shutil.copy(path, stray)
        _edit(stray, _set("success", True), sign)
    with caplog.at_level(logging.WARNING, logger="learner.study.grids"):
        assert _summarise("noise-study", out) == 0
    assert "stray.json" in caplog.text and "-s7.json" in caplog.text
    assert json.loads((out / "summary.json").read_text())["rows"] == rows


def test_a_link_is_refused_before_anything_runs(studies, tmp_path, capsys):
    """A resumed study with a run to repeat and a linked summary stops at once: the run is not repeated."""
    out, notes = _copy(studies("scaling"), tmp_path)
    record = _first_eval(out, "scaling")
    record.unlink()
    (out / "summary.md").unlink()
    (out / "summary.md").symlink_to(notes)
    assert main([*COMMANDS["scaling"][0], "--out", str(out)]) == 2
    assert "summary.md' is a symbolic link" in capsys.readouterr().err
    assert not record.exists() and notes.read_text() == NOTES


def test_summarise_only_does_not_read_a_record_through_a_link(studies, tmp_path, capsys):
    """A record linked from elsewhere (here: a faithful copy of the run's own) is not the study's: refused by name."""
    out, _ = _copy(studies("scaling"), tmp_path)
    record = _first_eval(out, "scaling")
    shutil.move(record, tmp_path / record.name)
    record.symlink_to(tmp_path / record.name)
    assert _summarise("scaling", out) == 2
    assert f"{record.name}' is a symbolic link" in capsys.readouterr().err


class TestASummaryIsOursByItsMark:
    """A folder holding only a ``summary.json`` is a study's only when the toolkit's mark on it checks out: a user's
    JSON with a ``parameters`` object is not a study to overwrite."""

    ARGV = ["scaling", "--m", "1", "--d", "6", "--k", "2", "--seeds", "1", "--methods", "provable", "--quick",
            "--serial", "--no-progress"]

    def test_a_users_summary_with_parameters_is_not_replaced(self, tmp_path, capsys):
        from learner.cli import main

        out = tmp_path / "mine"
        out.mkdir()
        blob = json.dumps({"parameters": {"m": [1]}, "notes": "my own"}).encode()
        (out / "summary.json").write_bytes(blob)
        assert main([*self.ARGV, "--out", str(out)]) == 2
        assert "not empty and holds no study" in capsys.readouterr().err
        assert (out / "summary.json").read_bytes() == blob and sorted(p.name for p in out.iterdir()) == ["summary.json"]

    def test_control_a_marked_summary_counts_as_a_study(self, tmp_path):
        from learner.io import foreign_file, write_json
        from learner.sweep.engine import claim_study

        out = tmp_path / "ours"
        out.mkdir()
        write_json(out / "summary.json", {"parameters": {"m": [1]}})
        assert foreign_file(out / "summary.json") is None
        claim_study(out, "scaling-study", "scaling-run", {"m": [1]})  # accepted: no error
        assert (out / "study.json").exists()
