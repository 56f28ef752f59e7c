"""Every results page says which learner made its records and when, and a superseded study says so and links to
the current one (docs/_ext/results.py, from docs/sweeps/provenance.json and the records themselves)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ROOT / "docs" / "sweeps"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
results = pytest.importorskip("results")
STUDIES = json.loads((SWEEPS / "provenance.json").read_text(encoding="utf-8"))["studies"]


def test_every_page_has_an_entry():
    assert set(STUDIES) == set(results.PAGES)


def test_a_superseded_study_points_at_current_pages():
    for name, entry in STUDIES.items():
        for later in entry["superseded_by"]:
            assert later in STUDIES and not STUDIES[later]["superseded_by"], (name, later)
            assert STUDIES[later]["committed"] >= entry["committed"], (name, later)


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_each_page_names_its_versions_and_date(name):
    lines = "\n".join(results.provenance_lines(name, SWEEPS, "9.9.9"))
    entry = STUDIES[name]
    assert entry["committed"] in lines and entry["commit"] in lines and "version 9.9.9" in lines
    assert ("**Superseded.**" in lines) == bool(entry["superseded_by"])
    for later in entry["superseded_by"]:
        assert f"{{doc}}`/results/generated/{later}`" in lines
    versions = results.record_versions(SWEEPS / results.FOLDERS.get(name, name))
    for version in versions:
        assert f"{version} (" in lines


def test_versions_are_counted_from_the_records(tmp_path):
    """An independent, constructed folder: two records of 0.2.0, one of 0.1.0, and files that are not records."""
    for i, version in enumerate(["0.2.0", "0.1.0", "0.2.0"]):
        (tmp_path / f"r{i}.json").write_text(json.dumps({"versions": {"learner": version}}))
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "study.json").write_text(json.dumps({"kind": "study"}))
    (tmp_path / "summary.json").write_text(json.dumps({"versions": {"learner": "0.2.0"}}))  # of the records
    assert results.record_versions(tmp_path) == {"0.2.0": 2, "0.1.0": 1}


def test_an_unknown_page_is_refused(tmp_path):
    (tmp_path / "provenance.json").write_text(json.dumps({"studies": {}}))
    with pytest.raises(ValueError, match="no entry for the results page 'main'"):
        results.provenance_lines("main", tmp_path, "0")


def test_the_recorded_commits_and_dates_are_git_history():
    try:
        subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for name, entry in STUDIES.items():
        shown = subprocess.run(["git", "show", "-s", "--format=%cs", entry["commit"]], cwd=ROOT, capture_output=True,
                               text=True)
        if shown.returncode and "unknown revision" in shown.stderr + shown.stdout:
            pytest.skip("a shallow clone without the studies' commits")
        assert shown.returncode == 0, (name, shown.stderr)
        assert shown.stdout.strip() == entry["committed"], (name, entry)


def test_every_generated_table_is_included_by_a_page():
    """The tables docs/_ext/results.py writes for the guide (results/tables/*.md) are each shown by a page."""
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md")
                      if "_build" not in p.parts and "generated" not in p.parts)
    names = [*results.PHASE_COLUMNS, "phase4-cost", "phase-seconds", "pool-threshold"]
    for name in names:
        assert f"results/tables/{name}.md" in pages, name
