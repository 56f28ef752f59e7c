"""The toolkit's version, defined once: ``version`` in ``pyproject.toml``.

Installed (a wheel, ``pip install .`` or editable), it is read from the package metadata. From a source
tree that was never installed, it is read from the tree's ``pyproject.toml`` and marked ``+source``; a
copy with neither says ``0+unknown`` rather than guessing.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "provable-attention"


def _from_source_tree():
    import tomllib

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    try:
        meta = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    except (OSError, ValueError, KeyError):
        return "0+unknown"
    return f"{meta['version']}+source" if meta.get("name") == DISTRIBUTION else "0+unknown"


try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = _from_source_tree()
