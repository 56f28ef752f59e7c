"""The README's commands and examples are what CI runs, and they run."""

import ast
import contextlib
import importlib.util
import io
import os
import re
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _test_command():
    match = re.search(r"<!-- test-command -->\s*```bash\n(.+?)\n```", README, re.DOTALL)
    assert match, "README must mark its test command with <!-- test-command -->"
    return match.group(1).strip()


class TestReadme:
    def test_ci_runs_exactly_the_readme_test_command(self):
        """`.ci/run` must run the README's test command verbatim, as its last line."""
        lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip()]
        assert lines[-1].strip() == _test_command()

    def test_main_command_installs_and_runs_the_learner(self):
        assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python -m learner learn" in README

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
