"""numpydoc's validator over the public API: the checks the documentation build enforces, and a command to list
what fails them.

Every public callable (function, class, method) and every documented attribute or constant must have a summary,
every parameter documented and none unknown, and a Returns (or Yields) section where it returns (or yields)
something: :data:`CHECKS`, which ``docs/conf.py`` hands to numpydoc (``numpydoc_validation_checks``), so the build
warns, and with ``-W`` fails, on any of them. The names in each package's top-level ``__all__`` also need a See
Also and an Examples section (:data:`TOP_CHECKS`); numpydoc applies one set of checks to every object, so this
extension checks those names itself when the builder starts, together with the public members and fields that
autodoc does not render without documentation (the reference shows documented members only).

Run ``python docs/_ext/apicheck.py [PREFIX ...]`` (from the repository root) to list the failures under the given
dotted prefixes without building the site, one line each: ``name | code | message``. Its universe is the build's:
the objects :mod:`apigen` documents, their public methods and properties, and their attributes (an attribute is
documented by a ``#:`` comment above it or a docstring below it, which autodoc reads from the source, or in the
Parameters or Attributes section of its class's docstring).
"""

import importlib
import inspect
import sys
from pathlib import Path

#: numpydoc's codes checked on every public object: GL08 no docstring, SS01 no summary, PR01 a parameter not
#: documented, PR02 a documented parameter that does not exist, RT01 no Returns section, YD01 no Yields section.
CHECKS = frozenset({"GL08", "SS01", "PR01", "PR02", "RT01", "YD01"})
#: The codes checked on the names of a package's top-level ``__all__`` as well: SA01 no See Also, EX01 no Examples.
TOP_CHECKS = frozenset({"SA01", "EX01"})


def _documented():
    """``{full name: object}`` of the classes and routines :mod:`apigen` documents, the set of those that a
    package's top-level ``__all__`` names, and the documented constants without a ``#:`` comment."""
    import apigen
    found, top, data = {}, set(), []
    for modname, rows in apigen.plan().items():
        module = importlib.import_module(modname)
        for name, full in rows:
            obj = getattr(module, name)
            if full != f"{modname}.{name}":
                continue
            if inspect.isclass(obj) or inspect.isroutine(obj):
                found[full] = obj
            elif not constant_doc(modname, name):
                data.append(full)
    for package in apigen.PACKAGES:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            top.update(full for full, other in found.items() if other is obj)
    return found, top, data


def constant_doc(modname, name):
    """The ``#:`` comment lines of constant ``name`` of ``modname``: read where it is assigned, which for a name
    re-exported from a private module (``learner.phases.NOISE_MIN``) is a module of the same package."""
    obj = getattr(importlib.import_module(modname), name)
    package = modname.split(".")[0]
    homes = [modname] + sorted(other for other, module in list(sys.modules.items())
                               if other.split(".")[0] == package and other != modname
                               and getattr(module, name, None) is obj)
    for home in homes:
        doc = attribute_docs(home).get(("", name))
        if doc:
            return list(doc)
    return []


def attribute_docs(modname):
    """``{(class qualname or "", name): doc lines}`` of the ``#:`` comments and attribute docstrings in a module."""
    from sphinx.pycode import ModuleAnalyzer
    try:
        return ModuleAnalyzer.for_module(modname).find_attr_docs()
    except Exception:  # noqa: BLE001 - a module without source: nothing to read attribute docs from
        return {}


def _members(full, cls):
    """The public methods and properties ``cls`` defines itself, and its attributes: ``[(full name, kind)]`` with
    kind ``"routine"`` (validated by numpydoc) or ``"attribute"`` (needs a docstring of its own)."""
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        if inspect.isfunction(member) or isinstance(member, (classmethod, staticmethod, property)):
            out.append((f"{full}.{name}", "routine"))
    docs = attribute_docs(cls.__module__)
    from numpydoc.docscrape import NumpyDocString
    parsed = NumpyDocString(inspect.getdoc(cls) or "")
    described = {item.name.strip() for section in ("Parameters", "Attributes") for item in parsed[section]}
    described = {part.strip() for names in described for part in names.split(",")}
    fields = list(getattr(cls, "__dataclass_fields__", {})) or list(getattr(cls, "_fields", ()))
    for name in fields:
        if not name.startswith("_") and not docs.get((cls.__qualname__, name)) and name not in described:
            out.append((f"{full}.{name}", "undocumented attribute"))
    return out


def _validate(full):
    """numpydoc's errors for the object named ``full``. A Hypothesis strategy made with ``@st.composite`` has no
    source (Hypothesis writes its signature with ``exec``), so numpydoc cannot read whether it returns: it always
    returns a strategy, and a Returns section is required of it."""
    from numpydoc.docscrape import get_doc_object
    from numpydoc.validate import Validator, validate

    class Sourceless(Validator):
        def __init__(self, obj_name):
            super().__init__(get_doc_object(Validator._load_obj(obj_name)))

        method_returns_something = True

    try:
        return validate(full)["errors"]
    except OSError:
        return validate(full, validator_cls=Sourceless)["errors"]


def attribute_names():
    """The documented full names of the public attributes, fields and constants. numpydoc validates an
    attribute from its value's docstring (``None``'s, ``float``'s), not from the ``#:`` comment autodoc shows, so
    ``docs/conf.py`` leaves them out of numpydoc's validation; :func:`problems` checks their documentation."""
    found, _, data = _documented()
    names = set(data)
    for modname, rows in __import__("apigen").plan().items():
        module = importlib.import_module(modname)
        names.update(full for name, full in rows if full == f"{modname}.{name}"
                     and not (inspect.isclass(getattr(module, name)) or inspect.isroutine(getattr(module, name))))
    for full, cls in found.items():
        if not inspect.isclass(cls):
            continue
        for name, member in vars(cls).items():
            if not name.startswith("_") and not (inspect.isfunction(member) or inspect.isclass(member)
                                                 or isinstance(member, (classmethod, staticmethod, property))):
                names.add(f"{full}.{name}")
        names.update(f"{full}.{name}" for name in getattr(cls, "__dataclass_fields__", {}))
        names.update(f"{full}.{name}" for name in getattr(cls, "_fields", ()))
    return sorted(names)


def problems(prefixes=("",), top_only=False):
    """``[(full name, code, message)]``: every failure of :data:`CHECKS` (and of :data:`TOP_CHECKS` for top-level
    names) under the dotted ``prefixes``; with ``top_only``, only the :data:`TOP_CHECKS` of top-level names."""
    found, top, data = _documented()
    targets = [] if top_only else [(full, "undocumented constant") for full in data]
    for full, obj in found.items():
        targets.append((full, "routine"))
        if inspect.isclass(obj) and not top_only:
            targets += _members(full, obj)
    out = []
    for full, kind in sorted(targets):
        if not any(full.startswith(p) for p in prefixes):
            continue
        if kind != "routine":
            where = ", or the class's Attributes section)" if kind.endswith("attribute") else ")"
            out.append((full, "GL08", f"The {kind.split()[-1]} is not documented (a #: comment above it{where}"))
            continue
        wanted = (TOP_CHECKS if full in top else frozenset()) | (frozenset() if top_only else CHECKS)
        try:
            errors = _validate(full)
        except Exception as exc:  # noqa: BLE001 - reported, not hidden
            out.append((full, "ERROR", f"numpydoc could not validate it: {exc}"))
            continue
        out += [(full, code, message) for code, message in errors if code in wanted]
    return out


def _on_init(app):
    from sphinx.util import logging
    logger = logging.getLogger(__name__)
    for full, code, message in problems():
        logger.warning("[apicheck] %s: %s %s", full, code, message)


def setup(app):
    app.connect("builder-inited", _on_init)
    return {"parallel_read_safe": True, "version": "1"}


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]
    rows = problems(tuple(sys.argv[1:]) or ("",))
    for row in rows:
        print(" | ".join(row))
    counts = {}
    for _, code, _ in rows:
        counts[code] = counts.get(code, 0) + 1
    print(f"{len(rows)} problems: " + ", ".join(f"{c} {n}" for c, n in sorted(counts.items())), file=sys.stderr)
    sys.exit(1 if rows else 0)
