"""The import graph of the three packages: no circle and no arrow back up.

``learner`` holds the layer and the learner; ``theory`` and ``lowerbounds`` build on it, never the reverse. Inside
a package, a module does not import the package that contains it (its ``__init__`` imports the modules, so such an
import runs back up, and works only by the order of imports). The graph is read from the sources (every import
statement, also those inside functions), so it holds for imports that run late as well. Two modules that need
each other share a third that both import.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("learner", "theory", "lowerbounds")


def _modules(root, packages):
    """Dotted name -> path of every module of the packages under ``root``."""
    mods = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def import_edges(root, packages=PACKAGES):
    """``(importer, imported)`` for every import between modules of the packages: ``from X import name`` imports
    the module ``X.name`` when there is one, else ``X`` itself."""
    mods = _modules(root, packages)
    edges = set()
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in mods:  # `import learner.phases.search as s`, a name in a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add((name, target))
    return edges


def arrows_up(edges):
    """Imports of a package by one of its own modules, and of ``theory`` or ``lowerbounds`` by ``learner``."""
    up = {(a, b) for a, b in edges if a.startswith(b + ".")}
    up |= {(a, b) for a, b in edges if a.split(".")[0] == "learner" and b.split(".")[0] in ("theory", "lowerbounds")}
    return sorted(up)


def on_the_studies(edges):
    """Imports of a study module (``learner.study``) by anything but the studies and the command line above them:
    the sweep engine (``learner.sweep``), ``theory`` and ``lowerbounds`` build on a library layer, not on the
    studies."""
    roof = ("learner.study", "learner.cli", "learner.__main__")
    return sorted((a, b) for a, b in edges if (b == "learner.study" or b.startswith("learner.study."))
                  and not any(a == r or a.startswith(r + ".") for r in roof))


def circles(edges):
    """Every import circle between modules, as the list of its modules."""
    import networkx as nx

    return sorted(sorted(c) for c in nx.simple_cycles(nx.DiGraph(list(edges))))


def test_no_circle():
    assert circles(import_edges(ROOT)) == []


def test_control_a_circle_through_a_late_import_is_found(tmp_path):
    pkg = tmp_path / "learner"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "noise.py").write_text("def floor():\n    from .search import jacobian\n    return jacobian\n")
    (pkg / "search.py").write_text("from .noise import floor\njacobian = 1\n")
    (pkg / "layer.py").write_text("from .noise import floor\n")
    assert circles(import_edges(tmp_path)) == [["learner.noise", "learner.search"]]


def test_no_arrow_back_up():
    edges = import_edges(ROOT)
    # The graph was read: imports at the top (local_clt's lattice_distance) and inside a function (the search's
    # noise test) are both there.
    assert ("theory.local_clt", "learner.assumptions") in edges and ("learner.phases.search", "learner.phases.noise") \
        in edges and len(edges) > 100
    assert arrows_up(edges) == []


def test_control_an_import_of_the_own_package_is_found(tmp_path):
    pkg = tmp_path / "learner"
    (pkg / "phases").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .io import save\n__version__ = '1'\n")
    (pkg / "io.py").write_text("def save():\n    from . import __version__\n    return __version__\n")
    (pkg / "layer.py").write_text("from . import io\nfrom .io import save\n")  # modules: no arrow up
    (pkg / "phases" / "__init__.py").write_text("")
    (pkg / "phases" / "search.py").write_text("from .. import layer\nimport learner\n")
    (tmp_path / "theory").mkdir()
    (tmp_path / "theory" / "__init__.py").write_text("import learner.layer\n")
    (pkg / "study.py").write_text("from theory import registry\n")
    edges = import_edges(tmp_path)
    assert ("learner.layer", "learner.io") in edges and ("theory", "learner.layer") in edges
    assert arrows_up(edges) == [("learner.io", "learner"), ("learner.phases.search", "learner"),
                                ("learner.study", "theory")]


def test_nothing_below_the_studies_imports_them():
    edges = import_edges(ROOT)
    # The graph was read: the command line imports the studies, and the yield study the sweep engine's records.
    assert ("learner.cli", "learner.study.cli") in edges and ("theory.yield_study", "learner.sweep.records") in edges
    assert on_the_studies(edges) == []


def test_control_a_library_module_on_the_studies_is_found(tmp_path):
    pkg = tmp_path / "learner"
    (pkg / "study").mkdir(parents=True)
    (pkg / "sweep").mkdir()
    for init in (pkg, pkg / "study", pkg / "sweep"):
        (init / "__init__.py").write_text("")
    (pkg / "study" / "scaling.py").write_text("from ..sweep import engine\n")  # the studies on the engine: fine
    (pkg / "study" / "runs.py").write_text("")
    (pkg / "sweep" / "engine.py").write_text("def plan():\n    from ..study.runs import RunSpec\n")
    (pkg / "cli.py").write_text("from .study import scaling\n")  # the roof: fine
    (tmp_path / "theory").mkdir()
    (tmp_path / "theory" / "__init__.py").write_text("")
    (tmp_path / "theory" / "yield_study.py").write_text("import learner.study.runs\n")
    (tmp_path / "lowerbounds").mkdir()
    (tmp_path / "lowerbounds" / "__init__.py").write_text("from learner import study\n")
    assert on_the_studies(import_edges(tmp_path)) == [("learner.sweep.engine", "learner.study.runs"),
                                                      ("lowerbounds", "learner.study"),
                                                      ("theory.yield_study", "learner.study.runs")]
