"""One page per command-line sub-command, written at build time from the argparse parsers themselves.

For each package's ``cli.build_parser`` (``learner``, ``theory``, ``lowerbounds``), every sub-command gets
``docs/cli/<package>-<command>.rst`` with its help line and sphinx-argparse's rendering of that sub-command alone
(``:path:``), and ``docs/cli/<package>.rst`` lists them: the reference page links there, so that no page is
one long scroll and the contents name every sub-command. Files are rewritten only when their text changes
(``docs/cli/`` is git-ignored).
"""

import importlib
from pathlib import Path

#: The packages whose command lines are documented, in the reference's order.
PACKAGES = ("learner", "theory", "lowerbounds")


def subcommands(package):
    """``[(name, help), ...]`` of ``python -m <package>``'s sub-commands, in the parser's order."""
    import argparse

    parser = importlib.import_module(f"{package}.cli").build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = []
    for action in actions:
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        found += [(name, helps.get(name) or "") for name in action.choices]
    return found


def _rst_title(text, mark):
    return [text, mark * len(text), ""]


def pages(package):
    """``{file name: reStructuredText}`` of the package's command pages and of its index page."""
    prog = f"python -m {package}"
    commands = subcommands(package)
    files = {}
    for name, help_ in commands:
        files[f"{package}-{name}.rst"] = "\n".join(
            [*_rst_title(f"``{prog} {name}``", "="), help_[:1].upper() + help_[1:] + ("." if help_ else ""), "",
             ".. argparse::", f"   :module: {package}.cli", "   :func: build_parser", f"   :prog: {prog}",
             f"   :path: {name}", ""])
    files[f"{package}.rst"] = "\n".join(
        [*_rst_title(f"``{prog}``", "="),
         f"The sub-commands of ``{prog}``, one page each (generated from ``{package}.cli.build_parser``).", "",
         ".. toctree::", "   :maxdepth: 1", "", *[f"   {package}-{name}" for name, _ in commands], ""])
    return files


def write(docs):
    """Write every package's pages into ``docs/cli/``; returns the files' names."""
    out = Path(docs) / "cli"
    out.mkdir(exist_ok=True)
    names = []
    for package in PACKAGES:
        for name, text in pages(package).items():
            path = out / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            names.append(name)
    for stale in out.glob("*.rst"):  # a sub-command that is gone leaves no page behind
        if stale.name not in names:
            stale.unlink()
    return names


def _on_init(app):
    write(app.srcdir)


def setup(app):
    app.connect("builder-inited", _on_init)
    return {"parallel_read_safe": True, "version": "1"}
