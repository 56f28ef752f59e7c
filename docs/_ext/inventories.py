"""Intersphinx inventories for an offline build: the outside names these docs link to, with their real URLs.

The build must work without a network, so instead of downloading ``objects.inv`` from
python.org, numpy.org, scipy.org, pytorch.org and dask.org, the build writes small inventories of exactly
the names our pages and docstrings reference, in Sphinx's inventory format, and points
``intersphinx_mapping`` at them. A reference to an outside name missing here fails the nitpicky build
(``-n``): add the name (and its URL on the project's site) to ``NAMES``. Online, the links are the real
pages; nothing else of those projects is linked.
"""

import zlib
from pathlib import Path

#: project -> (base URL, {(name, "domain:role"): relative URI}); a URI ending in "#" gets the name appended
NAMES = {
    "python": ("https://docs.python.org/3/", {
        **{(n, "py:class"): "library/functions.html#" for n in ("int", "float", "str", "tuple", "dict", "list",
                                                                  "bool", "object", "bytes", "set", "frozenset",
                                                                  "range", "slice", "complex")},
        ("None", "py:data"): "library/constants.html#None",
        ("True", "py:data"): "library/constants.html#True",
        ("False", "py:data"): "library/constants.html#False",
        ("callable", "py:function"): "library/functions.html#callable",
        ("sequence", "std:term"): "glossary.html#term-sequence",
        ("iterable", "std:term"): "glossary.html#term-iterable",
        ("path-like object", "std:term"): "glossary.html#term-path-like-object",
        ("file object", "std:term"): "glossary.html#term-file-object",
        ("bltin-boolean-values", "std:label"): "library/stdtypes.html#bltin-boolean-values",
        ("fractions.Fraction", "py:class"): "library/fractions.html#",
        ("pathlib.Path", "py:class"): "library/pathlib.html#",
        ("argparse.ArgumentParser", "py:class"): "library/argparse.html#",
        ("concurrent.futures.Executor", "py:class"): "library/concurrent.futures.html#",
        ("decimal.Decimal", "py:class"): "library/decimal.html#",
        **{(n, "py:exception"): "library/exceptions.html#" for n in (
            "Exception", "ValueError", "TypeError", "RuntimeError", "OSError", "KeyboardInterrupt",
            "ImportError", "ModuleNotFoundError", "KeyError", "FileNotFoundError", "OverflowError",
            "MemoryError", "TimeoutError")},
    }),
    "numpy": ("https://numpy.org/doc/stable/", {
        ("numpy.ndarray", "py:class"): "reference/generated/numpy.ndarray.html#",
        ("numpy.dtype", "py:class"): "reference/generated/numpy.dtype.html#",
        ("numpy.float64", "py:class"): "reference/arrays.scalars.html#",
        ("numpy.random.Generator", "py:class"): "reference/random/generator.html#",
        ("numpy.random.SeedSequence", "py:class"):
            "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#",
        ("numpy.random.default_rng", "py:function"): "reference/random/generator.html#",
        ("array_like", "std:term"): "glossary.html#term-array_like",
    }),
    "scipy": ("https://docs.scipy.org/doc/scipy/", {
        ("scipy.optimize.least_squares", "py:function"):
            "reference/generated/scipy.optimize.least_squares.html#",
        ("scipy.optimize.linprog", "py:function"): "reference/generated/scipy.optimize.linprog.html#",
    }),
    "torch": ("https://docs.pytorch.org/docs/stable/", {
        ("torch.nn.Module", "py:class"): "generated/torch.nn.Module.html#",
        ("torch.nn.modules.module.Module", "py:class"): "generated/torch.nn.Module.html#torch.nn.Module",
        ("torch.nn.MultiheadAttention", "py:class"): "generated/torch.nn.MultiheadAttention.html#",
        ("torch.Tensor", "py:class"): "tensors.html#",
        ("torch.dtype", "py:class"): "tensor_attributes.html#",
        ("torch.device", "py:class"): "tensor_attributes.html#",
    }),
    "dask": ("https://distributed.dask.org/en/stable/", {
        ("dask.distributed.Client", "py:class"): "api.html#distributed.Client",
        ("distributed.Client", "py:class"): "api.html#",
    }),
    "sympy": ("https://docs.sympy.org/latest/", {
        ("sympy.ImmutableMatrix", "py:class"):
            "modules/matrices/immutablematrices.html#sympy.matrices.immutable.ImmutableDenseMatrix",
        ("sympy.Rational", "py:class"): "modules/core.html#sympy.core.numbers.Rational",
    }),
}


def write_inventory(path, project, entries):
    """Write ``entries`` (``{(name, "domain:role"): uri}``) as a Sphinx v2 inventory at ``path``."""
    lines = []
    for (name, role), uri in sorted(entries.items()):
        uri = uri + name if uri.endswith("#") else uri
        lines.append(f"{name} {role} 1 {uri} -\n")
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: \n"
              "# The remainder of this file is compressed using zlib.\n").encode()
    data = header + zlib.compress("".join(lines).encode())
    path = Path(path)
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def mapping(folder):
    """Write every inventory into ``folder``; the ``intersphinx_mapping`` that uses them."""
    out = {}
    for project, (base, entries) in NAMES.items():
        path = Path(folder) / f"{project}.inv"
        write_inventory(path, project, entries)
        out[project] = (base, str(path))
    return out


def setup(app):
    return {"parallel_read_safe": True, "version": "1"}
