"""CONTRIBUTING.md and .pre-commit-config.yaml stay true to the tree.

- Every repository path the guide names in backquotes (a span without spaces that contains ``/`` or ends in
  ``.py``, ``.md``, ``.toml`` or ``.yaml``; a test id's ``::`` part is dropped) exists, relative to the root.
- Every command of its fenced code blocks that runs ``python -m MODULE`` (``python``, ``python3`` or
  ``.venv/bin/python``) names a module that can be run, and a ``pytest`` command's path arguments exist; a
  ``python SCRIPT`` command names a script that exists.
- The pre-commit configuration parses, and its ruff hook's ``rev`` is ``v`` + the installed ruff's version.

Each checker runs on made-up text as its control.
"""

import importlib.metadata
import importlib.util
import os
import re
import shlex
from pathlib import Path

import pytest

# mutmut runs the tests in its copy of the tree (mutants/), which holds neither file ([tool.mutmut] also_copy);
# these tests judge no function of the packages, so a mutation run (tests/conftest.py reads the same variable)
# skips them rather than failing its statistics run.
pytestmark = pytest.mark.skipif("MUTANT_UNDER_TEST" in os.environ, reason="a mutation run: mutants/ has no "
                                "CONTRIBUTING.md or .pre-commit-config.yaml")

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "CONTRIBUTING.md"
PRE_COMMIT = ROOT / ".pre-commit-config.yaml"
RUFF_REPO = "https://github.com/astral-sh/ruff-pre-commit"
PATH_SUFFIXES = (".py", ".md", ".toml", ".yaml")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
PYTHONS = ("python", "python3", ".venv/bin/python")
# pytest options whose value is the next argument (not a path to check)
PYTEST_VALUE_OPTIONS = {"-m", "-k", "-n", "-p", "-o", "-c", "--durations", "--maxfail", "--rootdir", "--basetemp",
                        "--deselect", "--ignore"}


#: Where a reader's virtual environment lives is the reader's choice: a path into it (``.venv/bin/mypy``) names
#: no file of the repository, and the suite must pass from a venv anywhere (or none named ``.venv``).
ENVIRONMENT_PREFIXES = (".venv/", "venv/", ".tox/")


def backquoted_paths(text):
    """The backquoted spans outside fenced blocks that look like repository paths, test ids cut at ``::``; paths
    into a virtual environment (:data:`ENVIRONMENT_PREFIXES`) are not the repository's."""
    prose = FENCE.sub("", text)
    paths = []
    for span in re.findall(r"`([^`\s]+)`", prose):
        if "://" in span or span.startswith(ENVIRONMENT_PREFIXES):
            continue
        if "/" in span or span.endswith(PATH_SUFFIXES):
            paths.append(span.split("::", 1)[0])
    return sorted(set(paths))


def missing_paths(text, root=ROOT):
    return [p for p in backquoted_paths(text) if not (root / p).exists()]


def fenced_commands(text):
    """Each command of the fenced blocks: continuation lines joined, a ``$ `` prompt and comments dropped, split
    at ``&&`` and ``;``."""
    commands = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if not line or line.startswith("#"):
                continue
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
            current = []
            for word in words + ["&&"]:
                if word in ("&&", ";"):
                    if current:
                        commands.append(current)
                    current = []
                else:
                    current.append(word)
    return commands


def _runnable_module(name, root):
    """A module ``python -m`` can run: a package of the tree with ``__main__.py``, a module of the tree, or an
    installed one."""
    local = root / name.replace(".", "/")
    if local.is_dir():
        return (local / "__main__.py").is_file()
    if local.with_suffix(".py").is_file():
        return True
    return importlib.util.find_spec(name.split(".")[0]) is not None and importlib.util.find_spec(name) is not None


def _pytest_targets(args):
    """The positional arguments of a pytest command line (its options' values skipped)."""
    targets, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in PYTEST_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            targets.append(arg)
    return targets


def command_problems(text, root=ROOT):
    """What the Python commands of the fenced blocks name that does not exist, one line each."""
    problems = []
    for words in fenced_commands(text):
        if words[0] not in PYTHONS or len(words) < 2:
            continue
        if words[1] != "-m":
            if not words[1].startswith("-") and not (root / words[1]).is_file():
                problems.append(f"{' '.join(words)}: no script {words[1]}")
            continue
        if len(words) < 3:
            problems.append(f"{' '.join(words)}: -m without a module")
            continue
        module, args = words[2], words[3:]
        if not _runnable_module(module, root):
            problems.append(f"{' '.join(words)}: no runnable module {module}")
        elif module == "pytest":
            for target in _pytest_targets(args):
                if "--pyargs" in args:
                    if importlib.util.find_spec(target) is None and not (root / target).is_dir():
                        problems.append(f"{' '.join(words)}: no package {target}")
                elif not (root / target.split("::", 1)[0]).exists():
                    problems.append(f"{' '.join(words)}: no path {target}")
    return problems


def ruff_revs(text):
    """``rev`` of every ruff-pre-commit entry, and its hook ids: ``[(rev, [ids])]``. With PyYAML where it is
    installed, else :func:`ruff_revs_by_lines`."""
    try:
        import yaml
    except ImportError:
        return ruff_revs_by_lines(text)
    config = yaml.safe_load(text)
    assert isinstance(config, dict) and isinstance(config.get("repos"), list), "no list of repos"
    return [(str(r["rev"]), [h["id"] for h in r.get("hooks", [])]) for r in config["repos"]
            if r.get("repo") == RUFF_REPO]


def ruff_revs_by_lines(text):
    """The same as :func:`ruff_revs` for the simple block layout of this file, read line by line (no PyYAML)."""
    entries, current = [], None
    for line in text.splitlines():
        line = line.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if m := re.fullmatch(r"\s*- repo:\s*(\S+)", line):
            current = [m.group(1), None, []]
            entries.append(current)
        elif current and (m := re.fullmatch(r"\s*rev:\s*['\"]?([^'\"\s]+)['\"]?", line)):
            current[1] = m.group(1)
        elif current and (m := re.fullmatch(r"\s*- id:\s*(\S+)", line)):
            current[2].append(m.group(1))
    return [(rev, ids) for repo, rev, ids in entries if repo == RUFF_REPO]


class TestGuidePaths:
    def test_every_path_the_guide_names_exists(self):
        paths = backquoted_paths(GUIDE.read_text(encoding="utf-8"))
        assert "theory/registry.py" in paths and "learner/phases/" in paths  # the guide was read
        assert missing_paths(GUIDE.read_text(encoding="utf-8")) == []

    def test_control_a_made_up_path_is_reported(self):
        text = ("Copy `theory/minnorm.py` and `theory/no_such_lemma.py`; see `tests/theory/test_core.py::TestX`,\n"
                "`no_such_notes.md` and `pip install pre-commit`; not `https://example.org/a/b` nor `.venv/bin/mypy`.\n"
                "```bash\ncat `theory/also_made_up.py`\n```\n")
        assert backquoted_paths(text) == ["no_such_notes.md", "tests/theory/test_core.py", "theory/minnorm.py",
                                          "theory/no_such_lemma.py"]
        assert missing_paths(text) == ["no_such_notes.md", "theory/no_such_lemma.py"]


class TestGuideCommands:
    def test_python_commands_name_what_exists(self):
        text = GUIDE.read_text(encoding="utf-8")
        commands = [c for c in fenced_commands(text) if c[0] in PYTHONS]
        assert ["python3", "-m", "venv", ".venv"] in commands  # the guide was read
        assert any(c[:4] == [".venv/bin/python", "-m", "pytest", "-q"] for c in commands)
        assert command_problems(text) == []

    def test_control_made_up_modules_paths_and_scripts_are_reported(self):
        text = ("```bash\n"
                "$ python -m learner learn --m 2   # fine\n"
                "python -m no_such_module_xyz all\n"
                "python3 -m venv .venv && .venv/bin/python -m pytest -m slow -n0 tests/no_such_test.py::TestA \\\n"
                "    tests/test_imports.py\n"
                ".venv/bin/python -m pytest --pyargs theory no_such_package_xyz\n"
                ".venv/bin/python -m theory.cli\n"
                ".venv/bin/python .ci/no_such_script learner/metrics.py; .venv/bin/python .ci/mutants --help\n"
                "```\n")
        assert command_problems(text) == [
            "python -m no_such_module_xyz all: no runnable module no_such_module_xyz",
            ".venv/bin/python -m pytest -m slow -n0 tests/no_such_test.py::TestA tests/test_imports.py: "
            "no path tests/no_such_test.py::TestA",
            ".venv/bin/python -m pytest --pyargs theory no_such_package_xyz: no package no_such_package_xyz",
            ".venv/bin/python .ci/no_such_script learner/metrics.py: no script .ci/no_such_script",
        ]

    def test_control_a_package_without_main_is_not_runnable(self, tmp_path):
        (tmp_path / "pkg_without_main").mkdir()
        (tmp_path / "pkg_without_main" / "__init__.py").write_text("")
        text = "```bash\npython -m pkg_without_main\n```\n"
        assert command_problems(text, tmp_path) == ["python -m pkg_without_main: no runnable module pkg_without_main"]
        (tmp_path / "pkg_without_main" / "__main__.py").write_text("")
        assert command_problems(text, tmp_path) == []


class TestPreCommit:
    def test_ruff_hook_pins_the_installed_ruff(self):
        text = PRE_COMMIT.read_text(encoding="utf-8")
        revs = ruff_revs(text)
        assert len(revs) == 1, revs
        rev, ids = revs[0]
        assert "ruff-check" in ids and "ruff-format" not in ids
        assert rev == "v" + importlib.metadata.version("ruff")

    def test_both_readers_agree_on_the_file(self):
        pytest.importorskip("yaml")
        text = PRE_COMMIT.read_text(encoding="utf-8")
        assert ruff_revs_by_lines(text) == ruff_revs(text)

    def test_control_a_wrong_rev_is_read_as_written(self):
        text = ("repos:\n"
                "  - repo: https://github.com/pre-commit/pre-commit-hooks\n"
                "    rev: v6.0.0\n"
                "    hooks:\n"
                "      - id: trailing-whitespace\n"
                "  - repo: https://github.com/astral-sh/ruff-pre-commit  # the linter\n"
                "    rev: 'v0.0.1'\n"
                "    hooks:\n"
                "      - id: ruff-check\n"
                "      - id: ruff-format\n")
        assert ruff_revs_by_lines(text) == [("v0.0.1", ["ruff-check", "ruff-format"])]
        assert ruff_revs(text) == [("v0.0.1", ["ruff-check", "ruff-format"])]
        assert ruff_revs(text)[0][0] != "v" + importlib.metadata.version("ruff")
