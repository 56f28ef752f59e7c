"""One documentation page per sub-command (docs/_ext/clipages.py): every sub-command of the three parsers has its
page, rendering that sub-command alone, and its package's page lists them all; a removed sub-command's page goes."""

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
clipages = pytest.importorskip("clipages")


@pytest.mark.parametrize("package", clipages.PACKAGES)
def test_every_subcommand_has_its_page(package):
    import importlib

    parser = importlib.import_module(f"{package}.cli").build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    files = clipages.pages(package)
    for name in action.choices:  # read from the parser here, not from clipages.subcommands
        page = files[f"{package}-{name}.rst"]
        assert f":path: {name}\n" in page and f":prog: python -m {package}\n" in page
        assert f"   {package}-{name}\n" in files[f"{package}.rst"]
    assert len(files) == len(action.choices) + 1


def test_a_page_of_a_removed_subcommand_is_deleted(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "learner-gone.rst").write_text("old\n")
    names = clipages.write(tmp_path)
    assert "learner-gone.rst" not in names and not (tmp_path / "cli" / "learner-gone.rst").exists()
    assert (tmp_path / "cli" / "learner-learn.rst").exists()
