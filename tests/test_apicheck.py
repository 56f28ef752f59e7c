"""The documentation build's API check (docs/_ext/apicheck.py) finds what it must: a missing Returns, an
undocumented parameter, an undocumented field, a top-level name without See Also or Examples. It needs the docs
extra (numpydoc, Sphinx); the strict build in CI (.ci/docs) is the gate, these are the checker's own tests."""

import sys
import textwrap
import types
from pathlib import Path

import pytest

pytest.importorskip("numpydoc")
pytest.importorskip("sphinx")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import apicheck  # noqa: E402

GOOD = '''
def add(a, b):
    """Add two numbers.

    Parameters
    ----------
    a : int
        The first.
    b : int
        The second.

    Returns
    -------
    int
        Their sum.
    """
    return a + b
'''


def _package(tmp_path, monkeypatch, source, top=("add",)):
    """A throwaway package ``fakepkg`` with one module ``fakepkg.mod`` holding ``source``."""
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"from .mod import {', '.join(top)}\n__all__ = {list(top)!r}\n")
    (pkg / "mod.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "fakepkg"]:
        del sys.modules[name]
    import apigen

    monkeypatch.setattr(apigen, "PACKAGES", ("fakepkg",))
    return types.SimpleNamespace(problems=lambda: {(name, code) for name, code, _ in apicheck.problems(("fakepkg",))})


def test_a_documented_function_lacks_only_see_also_and_examples(tmp_path, monkeypatch):
    found = _package(tmp_path, monkeypatch, GOOD).problems()
    assert found == {("fakepkg.mod.add", "SA01"), ("fakepkg.mod.add", "EX01")}


def test_missing_returns_and_parameter_are_found(tmp_path, monkeypatch):
    source = GOOD.replace("    Returns\n    -------\n    int\n        Their sum.\n", "").replace(
        "    b : int\n        The second.\n", "")
    found = _package(tmp_path, monkeypatch, source).problems()
    assert {("fakepkg.mod.add", "RT01"), ("fakepkg.mod.add", "PR01")} <= found


def test_an_undocumented_field_is_found(tmp_path, monkeypatch):
    source = '''
    import dataclasses

    @dataclasses.dataclass
    class Box:
        """A box.

        Parameters
        ----------
        width : float
            Its width.

        See Also
        --------
        fakepkg.mod.Box : Itself.

        Examples
        --------
        >>> Box(1.0, 2.0).width
        1.0
        """

        width: float
        height: float
    '''
    found = _package(tmp_path, monkeypatch, source, top=("Box",)).problems()
    assert ("fakepkg.mod.Box.height", "GL08") in found and ("fakepkg.mod.Box.width", "GL08") not in found
    assert ("fakepkg.mod.Box", "PR01") in found
