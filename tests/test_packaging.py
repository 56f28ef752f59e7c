"""The README's commands and examples are what CI runs, and they run."""

import ast
import contextlib
import importlib.util
import io
import json
import os
import re
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _test_command(marker="test-command"):
    match = re.search(rf"<!-- {marker} -->\s*```bash\n(.+?)\n```", README, re.DOTALL)
    assert match, f"README must mark its command with <!-- {marker} -->"
    return match.group(1).strip()


class TestReadme:
    def test_ci_runs_exactly_the_readme_test_commands(self):
        """`.ci/run` must end with the README's test command verbatim, then its slow-tier command: every tier."""
        lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip()]
        assert lines[-2].strip() == _test_command()
        assert lines[-1].strip() == _test_command("slow-command")
        assert "-m slow" in lines[-1] and "-m" not in lines[-2].split("pytest", 1)[1]

    def test_main_command_installs_and_runs_the_learner(self):
        assert "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/python -m learner learn" in README

    def test_ci_checks_the_wheel_before_the_tests(self):
        """`.ci/run` installs the wheel non-editable into a fresh venv and runs the main job from there."""
        lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
        assert "bash .ci/wheel-check" in lines[:-1]
        check = (ROOT / ".ci" / "wheel-check").read_text()
        assert "pip\" wheel" in check and "-m learner learn" in check and "-m theory all" in check

    def test_readme_is_a_summary_pointing_at_the_docs(self):
        """The README is a summary of at most 250 lines; the guide, the changelog and the references hold the
        rest. It says how to build the docs and names the console script."""
        assert len(README.splitlines()) <= 250, len(README.splitlines())
        assert "sphinx-build -W --keep-going -n docs" in README and "attention-learner" in README

    def test_ci_builds_the_docs_strictly_before_the_tests(self):
        """`.ci/run` builds the site with warnings as errors and nitpicky references, then its doctests,
        with the docs extra from a copy of what git tracks."""
        lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
        assert "bash .ci/docs" in lines[:-1]
        docs = (ROOT / ".ci" / "docs").read_text()
        assert "-W --keep-going -n" in docs and "-b doctest" in docs and "[docs," in docs and "git ls-files" in docs

    @pytest.mark.parametrize("index", range(len(re.findall(r"```python\n", README))))
    def test_python_examples_run(self, index, readme_runs):
        """Every ```python block of the README runs, in order, in one namespace (each block once); a block that
        imports torch is skipped where the torch extra is not installed."""
        if readme_runs[index] == NEEDS_TORCH:
            pytest.skip("this README block needs the torch extra (pip install -e '.[torch]')")
        assert readme_runs[index] is None, readme_runs[index]


NEEDS_TORCH = "needs torch"


@pytest.fixture(scope="module")
def readme_runs(tmp_path_factory):
    """Run the README's python blocks once, in order, in one namespace: the traceback of each (None if it ran)."""
    blocks = re.findall(r"```python\n(.+?)```", README, re.DOTALL)
    namespace, outcomes = {}, []
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("readme"))
    try:
        for block in blocks:
            if "import torch" in block and importlib.util.find_spec("torch") is None:
                outcomes.append(NEEDS_TORCH)
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102  (running the docs is the point)
                outcomes.append(None)
            except Exception:  # noqa: BLE001  (any failure is reported by the block's own test)
                outcomes.append(traceback.format_exc())
    finally:
        os.chdir(cwd)
    return outcomes


class TestDependencyDirection:
    @pytest.mark.parametrize("path", sorted((ROOT / "learner").rglob("*.py")), ids=lambda p: p.name)
    def test_learner_never_imports_theory_or_lowerbounds(self, path):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in {"theory", "lowerbounds"}, f"{path.name} imports {name}"


PACKAGES = ("learner", "theory", "lowerbounds")
#: The command line sits on top of everything it offers: the only modules of learner/'s floor that may import
#: the layers above it (LAYERS), and they do so inside the commands.
ROOF = {"learner/cli.py", "learner/__main__.py"}
#: The layers above learner/'s floor, bottom to top: the baselines, the sweep engine (its method registry runs
#: the baselines), the studies.
LAYERS = ("learner.baselines", "learner.sweep", "learner.study")


def _package_of(module):
    """``"learner.study"`` for ``"learner.sweep.engine"``: the folder a module lives in."""
    path = ROOT.joinpath(*module.split("."))
    return module if (path / "__init__.py").exists() else module.rpartition(".")[0]


def _imports(source, module):
    """``(imported module, names)`` of every import in ``source``, relative imports resolved against ``module``."""
    package = _package_of(module)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            yield base, [a.name for a in node.names]


def _private_imports(source, module):
    """Imports in ``source`` (of ``module``) of a private name or module of *another* package: ``[(what, whose)]``."""
    mine, found = _package_of(module), []
    for target, names in _imports(source, module):
        if target.split(".")[0] not in PACKAGES:
            continue
        parts = target.split(".")
        # ``from pkg import _mod`` / ``from pkg.mod import _name`` / ``import pkg._mod``
        candidates = [(target, n) for n in names if n.startswith("_") and n != "__version__"]
        candidates += [(target, p) for p in parts if p.startswith("_")]
        for where, name in candidates:
            owner = _package_of(where) if (ROOT.joinpath(*where.split(".")).is_dir()
                                           or ROOT.joinpath(*where.split(".")).with_suffix(".py").exists()) else where
            if ROOT.joinpath(*where.split("."), name).with_suffix(".py").exists():
                owner = where  # a private module of the package ``where``
            if owner != mine:
                found.append((f"{where}:{name}", owner))
    return found


def _module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _roof_imports(source, module):
    """The imports in ``source`` (of ``module``) that reach learner's command line: learner.cli or learner.__main__."""
    roof = ("learner.cli", "learner.__main__")
    found = []
    for target, names in _imports(source, module):
        reached = {target} | {f"{target}.{n}" for n in names}
        found += sorted(r for r in reached if r in roof or r.startswith(tuple(f"{x}." for x in roof)))
    return found


def _folders_without_init(root):
    """Folders under the three packages of ``root`` that hold .py files but no __init__.py."""
    folders = {p.parent for pkg in PACKAGES for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts}
    return sorted(str(f.relative_to(root)) for f in folders if not (f / "__init__.py").exists())


#: The longest a function of the three packages may be, in code lines after its docstring (a function over
#: ~80 lines becomes named steps; the longest now is 78).
MAX_CODE_LINES = 80


def _long_functions(source, limit=MAX_CODE_LINES):
    """``[(name, code lines)]`` of the functions in ``source`` with more than ``limit`` non-blank, non-comment
    lines after the docstring."""
    lines, found = source.splitlines(), []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0]
        start = first.lineno
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            start = first.end_lineno + 1
        body = lines[start - 1:node.end_lineno]
        n = sum(1 for line in body if line.strip() and not line.strip().startswith("#"))
        if n > limit:
            found.append((node.name, n))
    return found


def _imports_above(source, module):
    """The modules ``source`` (the code of ``module``) imports from a layer above its own (:data:`LAYERS`)."""
    mine = [i for i, layer in enumerate(LAYERS) if module == layer or module.startswith(layer + ".")]
    above = LAYERS[mine[0] + 1:] if mine else LAYERS
    return [target for target, names in _imports(source, module)
            if any(r == a or r.startswith(a + ".") for r in {target} | {f"{target}.{n}" for n in names}
                   for a in above)]


class TestHouse:
    @pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
    def test_no_private_name_of_another_package(self, path):
        """A name two packages need has a public home; nothing imports another package's ``_private`` name."""
        assert _private_imports(path.read_text(encoding="utf-8"), _module_name(path)) == []

    @pytest.mark.parametrize("source, module", [
        ("from learner.validation import _check\n", "theory.one_step"),
        ("from learner import _version\n", "learner.sweep.runs"),
        ("from ..layer import _helper\n", "learner.baselines.numpy_adam"),
        ("import learner.phases._config\n", "learner.study.bench"),
    ], ids=["theory-from-learner", "study-from-learner", "relative-up", "private-module"])
    def test_control_private_imports_across_packages_are_found(self, source, module):
        """Negative control: each of these reaches into another package's private names and must be flagged."""
        assert _private_imports(source, module)

    def test_control_private_imports_within_a_package_are_allowed(self):
        assert _private_imports("from ._scaffold import GradientFit\n", "learner.baselines.numpy_adam") == []
        assert _private_imports("from .sculpt import _dot\n", "learner.phases.refine_sum") == []

    @pytest.mark.parametrize("path", [p for p in SOURCES if p.parts[len(ROOT.parts)] == "learner"],
                             ids=lambda p: str(p.relative_to(ROOT)))
    def test_layers_import_only_downward(self, path):
        """The model and learner never import the layers above them (LAYERS); a layer never one above it."""
        rel, module = str(path.relative_to(ROOT)), _module_name(path)
        if rel in ROOF:
            return
        assert _imports_above(path.read_text(encoding="utf-8"), module) == []

    @pytest.mark.parametrize(("source", "module", "found"), [
        ("from ..sweep.engine import run_sweep\n", "learner.baselines.numpy_adam", ["learner.sweep.engine"]),
        ("def f():\n    from ..study import scaling\n", "learner.sweep.runs", ["learner.study"]),
        ("from .sweep import records\n", "learner.layer", ["learner.sweep"]),
        ("from ..sweep.records import schema_of\n", "learner.study.peers", []),  # downward: fine
        ("from ..baselines import fit_gradient\n", "learner.sweep.methods", []),
    ], ids=["baselines-on-sweep", "sweep-on-study", "floor-on-sweep", "study-on-sweep", "sweep-on-baselines"])
    def test_control_an_import_of_a_layer_above_is_found(self, source, module, found):
        assert _imports_above(source, module) == found

    @pytest.mark.parametrize("path", [p for p in SOURCES if p.parts[len(ROOT.parts)] in ("theory", "lowerbounds")],
                             ids=lambda p: str(p.relative_to(ROOT)))
    def test_other_packages_do_not_import_learners_command_line(self, path):
        """theory and lowerbounds build on learner's library, never on its command line (the roof)."""
        assert _roof_imports(path.read_text(encoding="utf-8"), _module_name(path)) == []

    def test_control_an_import_of_the_roof_is_found(self):
        assert _roof_imports("from learner.cli import check_output_options\n", "theory.cli")
        assert _roof_imports("import learner.__main__\n", "lowerbounds.cli")
        assert _roof_imports("from learner import cli\n", "theory.cli")
        assert _roof_imports("from learner.argparsing import check_output_options\n", "theory.cli") == []

    @pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
    def test_no_long_function(self, path):
        """Long drivers become named steps: no function over MAX_CODE_LINES code lines."""
        assert _long_functions(path.read_text(encoding="utf-8")) == []

    def test_control_a_long_function_is_found(self):
        body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CODE_LINES + 1))
        source = f'def f():\n    """Doc."""\n    # a comment\n\n{body}'
        assert _long_functions(source) == [("f", MAX_CODE_LINES + 1)]
        assert _long_functions(source.replace("    x0 = 0\n", "")) == []

    def test_import_learner_loads_neither_baselines_nor_studies(self):
        code = (f"import sys, learner; bad = sorted(m for m in sys.modules if m.startswith({LAYERS!r})); "
                "print(bad); sys.exit(bool(bad))")
        import subprocess
        import sys

        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr


class TestLint:
    def test_ruff_check_is_clean(self):
        """`ruff check .` (E, F, I, B, UP; pyproject.toml) passes: lint is part of the tests."""
        import shutil
        import subprocess
        import sys

        ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
        assert ruff, "ruff is in the test extra; install it with pip install -e '.[test]'"
        proc = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


class TestWheel:
    def test_every_folder_of_modules_is_a_regular_package(self):
        """Each folder of .py files has an __init__.py: no implicit namespace package, which
        ``packages.find`` without namespaces, Sphinx and ``pkgutil`` would skip."""
        assert _folders_without_init(ROOT) == []

    def test_control_a_folder_without_init_is_found(self, tmp_path):
        (tmp_path / "learner" / "study").mkdir(parents=True)
        (tmp_path / "learner" / "__init__.py").write_text("")
        (tmp_path / "learner" / "study" / "sweep.py").write_text("")
        assert _folders_without_init(tmp_path) == ["learner/study"]

    def test_the_wheel_holds_every_module_of_the_source_tree(self, tmp_path):
        """Build the wheel from a copy of the tree (as `pip install .` would) and compare its modules with ours."""
        import shutil
        import subprocess
        import sys
        import zipfile

        src = tmp_path / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, src / name)
        for pkg in PACKAGES:
            shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                               str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        (wheel,) = (tmp_path / "dist").glob("*.whl")
        with zipfile.ZipFile(wheel) as zf:
            in_wheel = {n for n in zf.namelist() if n.endswith(".py")}
        in_tree = {str(p.relative_to(ROOT)) for p in SOURCES}
        assert in_tree - in_wheel == set(), "modules missing from the wheel"
        assert in_wheel - in_tree == set(), "modules in the wheel that the tree does not have"
        assert {"learner/phases/sculpt.py", "learner/sweep/engine.py", "learner/baselines/_scaffold.py"} <= in_wheel


RECORD_DIRS = ("runs", "records", "records-52cb266")


def _committed_records():
    docs = ROOT / "docs"
    found = sorted(docs.glob("*.json")) + sorted(docs.glob("sweeps/*/study.json"))
    found += sorted(p for d in RECORD_DIRS for p in docs.glob(f"sweeps/*/{d}/*.json"))
    return found + sorted(docs.glob("sweeps/*/bench*.json"))


def _record_groups():
    groups = {}
    for path in _committed_records():
        groups.setdefault(str(path.parent.relative_to(ROOT)), []).append(path)
    return sorted(groups.items())


class TestRecords:
    @pytest.mark.parametrize("folder, paths", _record_groups(), ids=[g for g, _ in _record_groups()])
    def test_every_committed_record_loads(self, folder, paths):
        """Old records still load: every record under docs/ is of a kind and schema this version reads."""
        from learner.sweep.records import KINDS, read_record

        for path in paths:
            rec = read_record(path)
            assert rec["schema_version"] in KINDS[rec["kind"]][1], path

    def test_there_are_records_of_every_study(self):
        kinds = {json.loads(p.read_text(encoding="utf-8")).get("kind") for p in _committed_records()}
        assert {"scaling-run", "hard-run", "scaling-study", "peer-study", "yield-study"} <= kinds

    @pytest.mark.parametrize("path", sorted((ROOT / "docs").glob("sweeps/*/summary.json")),
                             ids=lambda p: p.parent.name)
    def test_every_summary_is_a_json_object(self, path):
        assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)

    @pytest.mark.parametrize("change, field", [
        ({"kind": "scaling-runs"}, "kind"),
        ({"schema_version": 3}, "schema_version"),
        ({"schema_version": "2"}, "schema_version"),
    ], ids=["unknown-kind", "future-schema", "schema-as-string"])
    def test_control_a_tampered_record_is_refused_naming_the_field(self, tmp_path, change, field):
        from learner.sweep.records import RecordError, read_record

        src = next(p for p in _committed_records() if p.parent.name == "runs")
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(json.loads(src.read_text(encoding="utf-8")) | change), encoding="utf-8")
        with pytest.raises(RecordError, match=rf"bad\.json.*`{field}`"):
            read_record(bad)
