"""Every copy of the version agrees with ``pyproject.toml``: CITATION.cff (version and release date, the
changelog's newest release), the BibTeX entry of the citing page and docs/references.bib."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def cff_field(name):
    match = re.search(rf"^{name}: *(.+)$", (ROOT / "CITATION.cff").read_text(encoding="utf-8"), flags=re.M)
    assert match, f"CITATION.cff has no top-level {name}"
    return match.group(1).strip().strip('"')


def newest_release():
    """(version, date) of the changelog's first ``## [X.Y.Z] - YYYY-MM-DD`` heading."""
    match = re.search(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$",
                      (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8"), flags=re.M)
    assert match, "the changelog has no release heading"
    return match.group(1), match.group(2)


def test_citation_cff_is_this_release():
    assert cff_field("cff-version") == "1.2.0"
    assert cff_field("version") == VERSION
    assert newest_release() == (VERSION, cff_field("date-released"))


def test_the_bibtex_entries_name_this_version():
    for page in ("docs/citing.md", "docs/references.bib"):
        notes = re.findall(r"note *= *\{Python package, version ([^}]+)\}", (ROOT / page).read_text(encoding="utf-8"))
        assert notes == [VERSION], (page, notes)


def test_the_changelog_is_in_keep_a_changelog_form():
    """Releases newest first, each with Added/Changed/Fixed/Removed subsections only."""
    text = (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+)\.(\d+)\.(\d+)\] - \d{4}-\d{2}-\d{2}$", text, flags=re.M)
    assert len(releases) >= 3 and releases == sorted(releases, key=lambda v: tuple(map(int, v)), reverse=True)
    for section in re.split(r"^## \[", text, flags=re.M)[1:]:
        kinds = re.findall(r"^### (.+)$", section.split("\n## ", 1)[0], flags=re.M)
        assert kinds and set(kinds) <= {"Added", "Changed", "Fixed", "Removed", "Deprecated", "Security"}, kinds
