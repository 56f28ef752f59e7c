"""Users read the code, its help, its records and its pages without our tracker or our design notes: no line of
what git tracks names an issue number or the design document."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the word issue (capitalised or plural, before a space, an underscore, a hash or nothing) then a digit; the design
# document's name before a section sign or ".md". The patterns are assembled from parts, so that this file, which
# git tracks too, does not name them itself.
TRACKER, DOCUMENT = "iss" + "ue", "DES" + "IGN"
FORBIDDEN = re.compile(rf"[Ii]{TRACKER[1:]}s?[ _]?#?\d|{DOCUMENT} ?§|{DOCUMENT}\.md")
SUFFIXES = {".py", ".md", ".rst", ".txt", ".json", ".toml", ".cfg", ".cff", ".sh", ".yaml", ".yml", ".css", ".bib", ""}


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [ROOT / name for name in out.decode().split("\0") if name]


def offending_lines(paths):
    found = []
    for path in paths:
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
                  for n, line in enumerate(text.splitlines(), 1) if FORBIDDEN.search(line)]
    return found


def test_no_issue_numbers_or_design_document():
    lines = offending_lines(tracked_files())
    assert not lines, f"{len(lines)} lines name an issue number or the design document:\n" + "\n".join(lines[:40])


@pytest.mark.parametrize("line", [f"see {TRACKER} 35", f"{TRACKER.title()} 22's acceptance runs",
                                  f"({TRACKER} #1)", f"class Test{TRACKER.title()}35:", f"(toolkit {DOCUMENT} §{5})",
                                  f"read {DOCUMENT}.md"])
def test_the_pattern_catches(tmp_path, line):
    """The control: each way of naming an issue or the design is caught."""
    path = tmp_path / "x.md"
    path.write_text(f"fine\n{line}\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert offending_lines([path]) == [f"x.md:2: {line}"]
    finally:
        ROOT = saved


def test_the_pattern_spares_ordinary_words():
    assert not FORBIDDEN.search("the issue is the tolerance; 35 issues of a journal; designed for section 5")


#: Markup that Sphinx shows raw: a tilde before a literal (``~``X````), a role inside a literal (````:meth:`x` ````).
RAW_MARKUP = re.compile(r"~``|``:[a-z]+:`")


def test_no_markup_that_renders_raw():
    rendered = ("learner", "theory", "lowerbounds", "docs")  # the packages' docstrings and the pages, not tools
    sources = [p for p in tracked_files() if p.suffix in {".py", ".md", ".rst"} and p.relative_to(ROOT).parts[0]
               in rendered and p.relative_to(ROOT).parts[:2] != ("docs", "_ext")]
    lines = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}" for p in sources if p.is_file()
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if RAW_MARKUP.search(line)]
    assert not lines, "\n".join(lines[:40])


def test_the_raw_markup_pattern_catches():
    assert RAW_MARKUP.search("hold ~``WORK_FLOATS``") and RAW_MARKUP.search("see ``:meth:`close` ``")
    assert not RAW_MARKUP.search("hold about ``WORK_FLOATS``; see :meth:`close`")
