"""Sphinx configuration of the provable-attention documentation (``sphinx-build -W --keep-going -n docs OUT``).

The build works offline: the intersphinx inventories are written at build time from a curated list
(``docs/_ext/inventories.py``), the results pages are generated from the records in ``docs/sweeps/``
(``docs/_ext/results.py``), and the gallery runs its examples (set ``DOCS_GALLERY=0`` to skip running them).
"""

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

import apicheck  # noqa: E402  (docs/_ext, on the path above)
import apigen  # noqa: E402
import figures  # noqa: E402
import results  # noqa: E402

from learner import __version__  # noqa: E402

project = "provable-attention"
author = "the provable-attention developers"
copyright = "2026, " + author + f" · version {__version__}"  # the footer says which version a page documents
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 served from the site itself: math renders without a network
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "numpydoc",
    "myst_parser",
    "sphinxarg.ext",
    "sphinxcontrib.bibtex",
    "sphinx_gallery.gen_gallery",
    "inventories",
    "apigen",
    "apicheck",
    "results",
    "clipages",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "sweeps", "mutation", "results/tables", "results/generated/overview.md",
                    "examples/README.rst", "**/README.md",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.json"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_theme = "pydata_sphinx_theme"
# the navigation bar's title fits a 390 px phone beside its buttons; the version is in the footer (copyright)
html_title = "provable-attention"
html_favicon = "_static/favicon.svg"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    # the results pages' tables are wide: their width goes to the tables rather than to an "On this page" column
    "secondary_sidebar_items": {"**": ["page-toc"]} | {f"results/generated/{page}": [] for page in results.PAGES},
}
html_show_sourcelink = False
html_css_files = ["custom.css"]  # docs/_static/custom.css: long code, tables and equations stay inside their box
# pages without a section of their own have nothing for the left sidebar; an empty one only narrows the text
html_sidebars = {page: [] for page in ("index", "install", "getting-started", "cli", "formats", "citing", "changelog",
                                       "measurements", "related-work", "development", "search", "genindex",
                                       "py-modindex")}
# the results pages' tables have a dozen columns: the full width is theirs (the results index and the breadcrumb
# lead from one page to the next)
html_sidebars |= {f"results/generated/{page}": [] for page in results.PAGES}
copybutton_prompt_text = r"\$ |>>> |\.\.\. "  # the copy button copies commands and code, not prompts
copybutton_prompt_is_regexp = True

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "substitution"]
# figures the prose quotes, read from their records (docs/_ext/figures.py): {{ main_examples }}, {{ main_seconds }}
myst_substitutions = figures.substitutions(HERE / "sweeps")
myst_heading_anchors = 3

autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autoclass_content = "class"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# numpydoc's validator on every documented object: a summary, every parameter documented and none unknown, Returns
# or Yields; a failure is a warning, so the strict build fails (docs/_ext/apicheck.py adds See Also and Examples for
# the names of each package's top-level __all__, and lists failures without a build: python docs/_ext/apicheck.py)
numpydoc_validation_checks = set(apicheck.CHECKS)
# attributes and constants: numpydoc would read their values' docstrings; apicheck checks their #: comments instead
numpydoc_validation_exclude = {re.escape(name) + "$" for name in apicheck.attribute_names()}
numpydoc_xref_param_type = True
numpydoc_xref_ignore = "all"  # link only the aliases below and names written as roles
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "Generator": "numpy.random.Generator",
    "SeedSequence": "numpy.random.SeedSequence",
    "Path": "pathlib.Path",
    "AttentionLayer": "learner.AttentionLayer",
    "LearnResult": "learner.LearnResult",
    "LearnConfig": "learner.LearnConfig",
    "LayerOracle": "learner.LayerOracle",
}

bibtex_bibfiles = ["references.bib"]
bibtex_default_style = "plain"

nitpicky = True

doctest_global_setup = "import numpy as np"
# the pages' examples are ``doctest`` directives; the docstrings' ``>>>`` examples run in their own modules'
# namespaces under pytest (``--doctest-modules`` in pyproject.toml), where their imports are
doctest_test_doctest_blocks = ""

plot_gallery = os.environ.get("DOCS_GALLERY", "1") != "0"
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": plot_gallery,
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 0,
    # a block ending in a plotting call shows its figure, not the repr of the artist the call returns
    "ignore_repr_types": r"matplotlib\.(text|axes|legend|figure|lines|collections|image|patches|container)",
    # "Examples using" on the API pages (docs/_ext/apigen.py's minigallery directives): the examples' uses of these
    # packages' names, found by parsing the examples (also when DOCS_GALLERY=0), are written to this folder
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": tuple(apigen.PACKAGES),
}

import inventories  # noqa: E402  (docs/_ext, on the path above)

intersphinx_mapping = inventories.mapping(HERE / "_build" / "inventories")
