"""The gallery shows a block's figure, not the repr of the artist its last plotting call returns: the types that
``sphinx_gallery_conf["ignore_repr_types"]`` (docs/conf.py) leaves out, matched as sphinx-gallery matches them."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _gallery_conf():
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "sphinx_gallery_conf":
            return {ast.literal_eval(k): v for k, v in zip(node.value.keys, node.value.values, strict=True)}
    raise AssertionError("docs/conf.py sets no sphinx_gallery_conf")


@pytest.mark.parametrize(("kind", "ignored"), [
    ("matplotlib.legend.Legend", True), ("matplotlib.figure.Figure", True), ("matplotlib.lines.Line2D", True),
    ("matplotlib.text.Text", True), ("matplotlib.axes._axes.Axes", True),
    ("matplotlib.collections.PathCollection", True), ("builtins.dict", False), ("numpy.ndarray", False)])
def test_artists_reprs_are_left_out_and_results_are_not(kind, ignored):
    pattern = ast.literal_eval(_gallery_conf()["ignore_repr_types"])
    module, _, name = kind.rpartition(".")
    shown = f"<class '{kind}'>" if module != "builtins" else f"<class '{name}'>"
    assert bool(re.search(pattern, shown)) is ignored, shown
