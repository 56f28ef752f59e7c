"""Type hints: every public function and method of the public modules is annotated, and mypy passes on the three
packages (its settings in pyproject.toml's ``[tool.mypy]``).

A public module is one whose path has no part starting with ``_`` (``learner/phases/_config.py`` is private; the
package ``__init__`` files are public). A public function is a module-level ``def`` whose name does not start with
``_``; a public method one of a public class, not starting with ``_`` except ``__init__`` and ``__call__``. Each
needs an annotation on every parameter but ``self``/``cls`` and a return annotation. Nested functions and private
names are free (mypy still checks the calls they make into annotated code)."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# A mutation run copies the sources with mutmut's own unannotated trampolines in them; hints and mypy are checked
# on the real tree.
pytestmark = pytest.mark.skipif("MUTANT_UNDER_TEST" in os.environ, reason="a mutation run: mutmut's copy of the "
                                "sources holds its own unannotated functions")

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("learner", "theory", "lowerbounds")
SPECIAL = ("__init__", "__call__")


def public_modules(root, packages=PACKAGES):
    return [p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))
            if not any(part.startswith("_") and part != "__init__.py" for part in p.relative_to(root).parts)]


def _missing(func, method):
    args = func.args
    params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    if method and params and params[0].arg in ("self", "cls") and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list):
        params = params[1:]
    missing = [p.arg for p in params if p.annotation is None]
    if func.returns is None:
        missing.append("return")
    return missing


def unannotated(source):
    """``(qualified name, [what lacks a hint])`` of every public function and method of a module's source."""
    out = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            if missing := _missing(node, method=False):
                out.append((node.name, missing))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not item.name.startswith("_") or item.name in SPECIAL):
                    if missing := _missing(item, method=True):
                        out.append((f"{node.name}.{item.name}", missing))
    return out


@pytest.mark.parametrize("path", public_modules(ROOT), ids=lambda p: str(p.relative_to(ROOT)))
def test_public_functions_are_annotated(path):
    assert unannotated(path.read_text(encoding="utf-8")) == []


def test_control_missing_hints_are_found_and_private_names_are_free():
    source = '''
def f(a, b: int) -> int: ...
def g(*args: int, **kw) -> None: ...
def h(x: int): ...
def _private(a): ...
class C:
    def __init__(self, n): ...
    def m(self, x: int) -> int: ...
    @staticmethod
    def s(self) -> None: ...
    @classmethod
    def k(cls) -> None: ...
    def _p(self, q): ...
    def __repr__(self): ...
class _Hidden:
    def m(self, x): ...
'''
    assert unannotated(source) == [("f", ["a"]), ("g", ["kw"]), ("h", ["return"]), ("C.__init__", ["n", "return"]),
                                   ("C.s", ["self"])]


def test_control_private_modules_are_not_public(tmp_path):
    for rel in ("learner/__init__.py", "learner/layer.py", "learner/phases/_config.py", "learner/_version.py",
                "learner/_impl/x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    found = [str(p.relative_to(tmp_path)) for p in public_modules(tmp_path, ("learner",))]
    assert found == ["learner/__init__.py", "learner/layer.py"]


def _mypy():
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    assert mypy, "mypy is in the test extra; install it with pip install -e '.[test]'"
    return mypy


@pytest.mark.slow  # the whole packages through mypy; lint (ruff) stays in the default tier
def test_mypy_is_clean():
    """mypy on the three packages, with the settings of pyproject.toml (a cache under .mypy_cache)."""
    proc = subprocess.run([_mypy()], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


def test_control_mypy_finds_a_wrong_type(tmp_path):
    (tmp_path / "bad.py").write_text("def f(x: int) -> str:\n    return x\n")
    proc = subprocess.run([_mypy(), "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"),
                           str(tmp_path / "bad.py")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Incompatible return value type" in proc.stdout
