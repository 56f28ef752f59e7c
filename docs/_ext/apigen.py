"""Write the API reference (``docs/api/generated/*.rst``) from the packages' ``__all__`` at build time.

Every public name is documented once (:func:`plan`): in the public module that defines it
(``learner.learn.learn``), or, when a private module defines it, at its shortest public path
(``learner.LearnConfig``); autodoc records the defining module as the canonical name, so references to either
resolve. A module page shows its docstring, a summary table of its public names (links to where each is
documented) and the full entries of the names documented there. A module is public when no part of its
dotted name starts with ``_`` and it is not a test module; its public names are its ``__all__`` (or, without
one, the names it defines that do not start with ``_``).

An entry that gallery examples use ends with them: a rubric "Examples using", like the entry's numpydoc sections,
over sphinx-gallery's ``minigallery`` directive. Which names the examples use is read from the backreferences the
gallery writes when it parses its examples, run or not (``DOCS_GALLERY=0``), before this extension writes the pages;
an entry no example uses gets neither.
"""

import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

PACKAGES = ("learner", "theory", "lowerbounds")


def public_modules(packages=None):
    """Dotted names of the public modules, packages first, in import order (``packages``: :data:`PACKAGES`)."""
    names = []
    for top in packages or PACKAGES:
        names.append(top)
        pkg = importlib.import_module(top)
        for info in pkgutil.walk_packages(pkg.__path__, top + "."):
            parts = info.name.split(".")
            if any(p.startswith("_") for p in parts[1:]) or parts[-1].startswith("test_") or parts[-1] == "__main__":
                continue
            names.append(info.name)
    return names


def public_names(module):
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [n for n, obj in vars(module).items() if not n.startswith("_") and not inspect.ismodule(obj)
            and getattr(obj, "__module__", module.__name__) == module.__name__]


def _shared(obj):
    """Objects whose identity says "the same name re-exported" (not ints or strings, which Python shares)."""
    return inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, (dict, tuple, list, frozenset))


def plan(packages=None):
    """``{module: [(name, documented_at), ...]}`` with ``documented_at`` the full name of the one entry.

    A name is documented in the module that defines it when that module is public and lists it; otherwise (a
    private module's name re-exported, ``learner.phases._config.LearnConfig``) at its shortest public path.
    """
    names = public_modules(packages)
    modules = {name: importlib.import_module(name) for name in names}
    listed = {}  # id -> [module names that list the object]
    for modname in names:
        for name in public_names(modules[modname]):
            obj = getattr(modules[modname], name)
            if _shared(obj):
                listed.setdefault(id(obj), []).append(modname)
    out = {}
    for modname in names:
        rows = []
        for name in public_names(modules[modname]):
            obj = getattr(modules[modname], name)
            if not _shared(obj):
                rows.append((name, f"{modname}.{name}"))
                continue
            where = listed[id(obj)]
            owner = getattr(obj, "__module__", None)
            home = owner if owner in where else min(where, key=lambda m: (m.count("."), names.index(m)))
            rows.append((name, f"{home}.{getattr(obj, '__name__', name) if home == owner else name}"))
        out[modname] = rows
    return out


def documented_home(target, module=None):
    """Where ``target`` is documented, or None: a dotted name, a name relative to ``module``, or a public name
    unique among those documented (docstrings say ``:func:`check_study``` of a name from their own module, and a
    module docstring's references carry no module); a method or attribute follows its class."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        head, rest = ".".join(parts[:cut]), parts[cut:]
        home = _home_of(head, module)
        if home is not None:
            return ".".join([home, *rest])
    return None


def _home_of(name, module):
    for full in ([f"{module}.{name}"] if module else []) + [name]:
        if full in _documented:
            return full
        obj = _lookup(full)
        if obj is not None and _shared(obj) and id(obj) in _homes:
            return _homes[id(obj)]
    if "." not in name and len(_by_short.get(name, ())) == 1:
        return next(iter(_by_short[name]))
    return None


def _lookup(full):
    parts = full.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


_homes = {}  # id of a class or function -> its documented full name
_aliases = {}  # documented full name -> every name sphinx-gallery may record an example's use of it under
_backrefs = {}  # name -> the gallery examples that use it (sphinx-gallery's backreferences_all.json)
_documented = set()  # every documented full name
_by_short = {}  # last component -> documented full names


def _directive(module, name):
    obj = getattr(module, name)
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "autoexception", []
        # documented members only: a field is described in its class's Parameters or Attributes section (or by a
        # ``#:`` comment), and docs/_ext/apicheck.py fails the build on a public member without documentation
        return "autoclass", [":members:"]
    if inspect.isroutine(obj):
        return "autofunction", []
    return "autodata", [":no-value:"] if isinstance(obj, (dict, list, tuple)) and len(repr(obj)) > 200 else []


def _borrowed_doc(modname, name):
    """The ``#:`` comment of constant ``name`` when it is written in another module than ``modname``, else None."""
    import apicheck
    if apicheck.attribute_docs(modname).get(("", name)):
        return None
    return apicheck.constant_doc(modname, name) or None


def _recorded_names(module, name, obj):
    """``module.name`` and the shorter paths sphinx-gallery records a use of it under: it shortens a module path while
    the package above holds the same object (``learner.sweep.records.read_record`` may become
    ``learner.sweep.read_record``; sphinx_gallery.backreferences._get_short_module_name)."""
    names = [f"{module}.{name}"]
    parts = module.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            package = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            break
        if getattr(package, name, None) is not obj:
            break
        names.append(f"{package.__name__}.{name}")
    return names


def examples_using(full):
    """The RST, indented for an entry's content, that shows the gallery examples using ``full`` under the rubric
    "Examples using" its shortest public name, or nothing when no example uses it. An example's use is recorded
    under the path it imports the object from (``learner.random_layer``, documented as
    ``learner.instances.random_layer``), so every public path of the object is looked up."""
    names = sorted(_aliases.get(full, {full}), key=lambda n: (n != full, n))
    used = [name for name in names if _backrefs.get(name)]
    if not used:
        return []
    shortest = min(names, key=lambda n: (n.count("."), n)).replace("_", r"\_")
    # plain text: the theme sets a rubric's parts one under the other, a literal would take a line of its own
    return [f"   .. rubric:: Examples using {shortest}", "", f"   .. minigallery:: {' '.join(used)}", ""]


_ROLE = re.compile(r":[a-z:]+:`~?([^`<]*?)(?:\s*<([^>]*)>)?`")


def _summary(obj):
    """The first sentence of ``obj``'s docstring as plain RST (roles become literals: the table has no module
    context to resolve them in); a constant without a docstring of its own gets an empty cell."""
    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        return ""
    doc = inspect.getdoc(obj) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    cut = re.search(r"(?<=[.!?])\s", first)
    first = first[:cut.start()] if cut else first
    first = _ROLE.sub(lambda mt: "``" + (mt.group(1) or mt.group(2)).split(".")[-1] + "``", first)
    return first.replace("|", "\\|")


def module_page(modname, rows):
    module = importlib.import_module(modname)
    title = f"``{modname}``"
    # a module shadowed by a public function of the same name (learner.learn, learner.assumptions): the function
    # owns the name, the module's entry is not indexed
    parent, _, last = modname.rpartition(".")
    shadowed = bool(parent) and last in public_names(importlib.import_module(parent))
    lines = [title, "=" * len(title), "", f".. automodule:: {modname}", "   :no-members:"]
    if shadowed:
        lines.append("   :no-index:")
    lines.append("")
    if rows:
        lines += [".. rubric:: Public names", "", ".. list-table::", "   :widths: 30 70", ""]
        for name, full in rows:
            lines += [f"   * - :py:obj:`{name} <{full}>`", f"     - {_summary(getattr(module, name))}"]
        lines.append("")
    here = [(name, full) for name, full in rows if full == f"{modname}.{name}"]
    for name, full in here:
        directive, options = _directive(module, name)
        borrowed = _borrowed_doc(modname, name) if directive == "autodata" else None
        if borrowed:
            # a constant re-exported from a private module: autodoc reads ``#:`` comments in the module it is
            # asked about only, so the entry carries the comment from where the constant is assigned
            value = [] if options else [f"   :value: {getattr(module, name)!r}"]
            lines += [f".. py:data:: {name}", f"   :module: {modname}", *value, ""]
            lines += [f"   {line}" for line in borrowed] + [""]
            lines += examples_using(full)
            continue
        lines += [f".. {directive}:: {full}"] + [f"   {o}" for o in options] + [""]
        # the directive's content follows the docstring (and precedes a class's members)
        lines += examples_using(full)
    subs = [m for m in plan_cache[0] if m.rpartition(".")[0] == modname]
    if subs:
        lines += [".. rubric:: Modules", "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {m}" for m in subs] + [""]
    return "\n".join(lines)


plan_cache = ([], [])


def write(outdir, *, backrefs=None):
    """Write one page per public module into ``outdir`` (stale pages removed). ``backrefs``: ``{name: examples}``,
    the names the gallery's examples use (sphinx-gallery's ``backreferences_all.json``); an entry whose object they
    use ends with those examples. None: no gallery, no examples listed."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    plans = plan()
    plan_cache[0][:] = list(plans)
    plan_cache[1][:] = [row for rows in plans.values() for row in rows]
    _homes.clear()
    _documented.clear()
    _by_short.clear()
    _aliases.clear()
    _backrefs.clear()
    _backrefs.update(backrefs or {})
    for modname, rows in plans.items():
        module = importlib.import_module(modname)
        for name, full in rows:
            obj = getattr(module, name)
            if _shared(obj):
                _homes[id(obj)] = full
                _aliases.setdefault(full, {full}).update(_recorded_names(modname, name, obj))
            if full == f"{modname}.{name}":
                _documented.add(full)
                _by_short.setdefault(name, set()).add(full)
    written = set()
    for modname, rows in plans.items():
        path = outdir / f"{modname}.rst"
        text = module_page(modname, rows)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.add(path.name)
    for stale in outdir.glob("*.rst"):
        if stale.name not in written:
            stale.unlink()
    return plans


def _on_init(app):
    backrefs = None
    if "sphinx_gallery.gen_gallery" in app.extensions and app.config.sphinx_gallery_conf.get("backreferences_dir"):
        found = Path(app.srcdir) / app.config.sphinx_gallery_conf["backreferences_dir"] / "backreferences_all.json"
        backrefs = json.loads(found.read_text()) if found.exists() else None
    write(Path(app.srcdir) / "api" / "generated", backrefs=backrefs)


def _on_missing(app, env, node, contnode):
    """A reference to a re-exported name (``learner.AttentionLayer``, or ``LearnConfig`` from a module that
    imports it) resolves to the one entry of the object it names."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    home = documented_home(target, node.get("py:module"))
    if home is None or home == target:
        return None
    domain = env.get_domain("py")
    moved = node.deepcopy()
    moved["reftarget"] = home
    moved["refspecific"] = False
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], home, moved, contnode)


def setup(app):
    # after sphinx-gallery's builder-inited (priority 500), which parses the examples and writes their backreferences
    app.connect("builder-inited", _on_init, priority=600)
    app.connect("missing-reference", _on_missing)
    return {"parallel_read_safe": True, "version": "1"}
