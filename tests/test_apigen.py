"""The API reference's pages (docs/_ext/apigen.py) end an entry that gallery examples use with those examples: a
rubric "Examples using" and a ``minigallery`` directive of the names sphinx-gallery recorded the uses under, so an
example that imports ``learner.random_layer`` shows on the page of ``learner.instances.random_layer``; an entry no
example uses gets neither."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("sphinx_gallery")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import apigen  # noqa: E402

MOD = '''
"""Two functions."""

__all__ = ["add", "sub"]


def add(a, b):
    """Add two numbers."""
    return a + b


def sub(a, b):
    """Subtract two numbers."""
    return a - b
'''


def _package(root):
    """A throwaway package ``galpkg`` whose module ``galpkg.mod`` defines ``add`` and ``sub``; ``add`` is
    re-exported."""
    pkg = root / "galpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A package."""\n\nfrom .mod import add\n\n__all__ = ["add"]\n')
    (pkg / "mod.py").write_text(MOD)
    return pkg


def _minigalleries(page):
    """``{entry: (heading, names)}`` of a page's entries that end with a minigallery (in their content, indented)."""
    pattern = (r"^\.\. (?:auto\w+|py:data)::\s*(\S+)\n(?:   .*\n|\n)*?   \.\. rubric:: (.+)\n\n"
               r"   \.\. minigallery:: (.+)\n")
    return {entry: (heading, names.split()) for entry, heading, names in re.findall(pattern, page, flags=re.M)}


@pytest.fixture
def galpkg(tmp_path, monkeypatch):
    _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "galpkg"]:
        del sys.modules[name]
    monkeypatch.setattr(apigen, "PACKAGES", ("galpkg",))
    return tmp_path


class TestExamplesUsing:
    @pytest.mark.parametrize("recorded", [["galpkg.add"], ["galpkg.mod.add"], ["galpkg.mod.add", "galpkg.add"]],
                             ids=["from-package", "from-module", "both"])
    def test_an_entry_lists_the_examples_recorded_under_any_of_its_public_names(self, galpkg, recorded):
        apigen.write(galpkg / "out", backrefs={name: [["plot_add.py"]] for name in recorded})
        page = (galpkg / "out" / "galpkg.mod.rst").read_text()
        # documented where it is defined (galpkg.mod.add), headed by its shortest public name
        names = [name for name in ("galpkg.mod.add", "galpkg.add") if name in recorded]
        assert _minigalleries(page) == {"galpkg.mod.add": ("Examples using galpkg.add", names)}
        # inside the entry (its content, indented), not a section of the module's page
        assert "\n.. minigallery::" not in page and "\n.. rubric:: Examples" not in page

    @pytest.mark.parametrize("backrefs", [None, {}, {"galpkg.other": [["plot_other.py"]]}],
                             ids=["no-gallery", "no-examples", "unrelated"])
    def test_an_entry_no_example_uses_gets_no_minigallery(self, galpkg, backrefs):
        apigen.write(galpkg / "out", backrefs=backrefs)
        for page in (galpkg / "out").glob("*.rst"):
            assert "minigallery" not in page.read_text() and "Examples using" not in page.read_text()


def _recorded(example):
    """The names sphinx-gallery records ``example``'s uses under when it parses it without running it (as with
    ``DOCS_GALLERY=0``): sphinx_gallery.gen_rst._get_backreferences without the example's globals."""
    from sphinx_gallery.backreferences import _make_ref_regex, identify_names
    from sphinx_gallery.py_source_parser import split_code_and_text_blocks

    _, blocks, node = split_code_and_text_blocks(str(example), return_node=True)
    found = identify_names(blocks, _make_ref_regex(), None, node)
    return {f"{c['module_short']}.{c['name']}" for cobjs in found.values() for c in cobjs
            if c["module"].split(".")[0] in apigen.PACKAGES}


def test_every_documented_name_the_gallery_uses_reaches_its_entry(tmp_path):
    recorded = {}
    for example in sorted((ROOT / "docs" / "examples").glob("plot_*.py")):
        for name in _recorded(example):
            recorded.setdefault(name, []).append([example.name])
    apigen.write(tmp_path, backrefs=recorded)
    galleries = {}
    for page in tmp_path.glob("*.rst"):
        galleries.update(_minigalleries(page.read_text()))
    assert galleries["learner.learn.learn"] == ("Examples using learner.learn", ["learner.learn"])
    # the heading is plain text: the underscore escaped, lest ``random_`` read as a reference
    heading, names = galleries["learner.instances.random_layer"]
    assert heading == r"Examples using learner.random\_layer" and names == ["learner.random_layer"]
    shown = {name for _, names in galleries.values() for name in names}
    # a name with no entry of its own (a method, a private name) is shown on no page
    assert {name for name in recorded if apigen.documented_home(name) is not None} <= shown


CONF = '''
import sys
sys.path[:0] = [{ext!r}, {pkgroot!r}]
import apigen
apigen.PACKAGES = ("galpkg",)
project = "t"
extensions = ["sphinx.ext.autodoc", "sphinx_gallery.gen_gallery", "apigen"]
exclude_patterns = ["_build", "examples"]
sphinx_gallery_conf = {{
    "examples_dirs": "examples", "gallery_dirs": "auto_examples", "filename_pattern": r"/plot_",
    "plot_gallery": False, "download_all_examples": False,
    "backreferences_dir": "gen_modules/backreferences", "doc_module": ("galpkg",),
}}
'''


@pytest.mark.slow  # a small Sphinx build (a few seconds)
def test_a_built_entry_links_to_the_example_that_uses_it(tmp_path):
    (tmp_path / "pkg").mkdir()
    _package(tmp_path / "pkg")
    src = tmp_path / "src"
    (src / "examples").mkdir(parents=True)
    (src / "conf.py").write_text(CONF.format(ext=str(ROOT / "docs" / "_ext"), pkgroot=str(tmp_path / "pkg")))
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n   api/generated/galpkg\n   auto_examples/index\n")
    (src / "examples" / "README.rst").write_text("Gallery\n=======\n")
    (src / "examples" / "plot_add.py").write_text(textwrap.dedent('''
        """
        Adding
        ======

        Two and two.
        """
        from galpkg import add

        print(add(2, 2))
        '''))
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", str(src), str(tmp_path / "html")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "html" / "api" / "generated" / "galpkg.mod.html").read_text()
    assert html.count("Examples using") == 1  # add's; sub, which no example uses, has no heading
    assert 'class="rubric">Examples using' in html  # like the entry's numpydoc sections, not a section of the page
    assert re.search(r'href="\.\./\.\./auto_examples/plot_add\.html', html)
    assert html.index('id="galpkg.mod.add"') < html.index("Examples using") < html.index('id="galpkg.mod.sub"')
