"""Every numeric constant of the packages says whose it is and why.

The project marks what the paper's seeds (its abstracts and the author's talk) do not state as ours; the
constants of the code follow the same rule. A *constant* is

- a module-level assignment (also inside a module-level ``if``/``try``/``with``, never inside a function or
  class) to an UPPER_CASE name (``STRUCTURE_ALPHA``, ``_MC_BATCH``; every one of ``A, B = 1e-3, 1e-6``) whose
  value is a numeric literal or a simple numeric expression of literals: ``1e-4``, ``-1e-3``, ``2**13``,
  ``10**9 // 4``, ``(0.5, 1.0)`` (dicts and names of other constants are not); or
- a field of ``LearnConfig`` whose default is such an expression (booleans, strings and ``None`` are not
  numbers).

Its *comment block* is the comment on its own lines (trailing the assignment) together with the contiguous
comment lines directly above it (no blank line, no code between); for ``LearnConfig`` these are the ``#:``
field comments the class documents its fields with, and a field that shares its neighbour's ``#:`` block
(the block sits above the first field of the group) carries its own trailing comment. The block is
*labelled* when it names the provenance, one of the words ``paper``, ``talk`` or ``ours`` (``LABEL``; the
paper's and the talk's count), and gives a reason: at least ``MIN_REASON_WORDS`` other words.

The checker reads the source with ``ast`` and ``tokenize`` and imports nothing of the packages.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("learner", "theory", "lowerbounds")
SOURCES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
CONFIG_CLASS = "LearnConfig"
#: A provenance label: whose the value is.
LABEL = re.compile(r"\b(paper|talk|ours)\b", re.IGNORECASE)
#: Words besides the label that a block must have to say why the value is what it is.
MIN_REASON_WORDS = 3
UPPER = re.compile(r"^_*[A-Z][A-Z0-9_]*$")


def _numeric(node):
    """Whether ``node`` is a numeric literal or an expression of them (signs, arithmetic, tuples, lists)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float | complex) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.Tuple | ast.List):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    return False


def _comments(source):
    """``{line: comment text}`` of every comment token, without the leading ``#`` or ``#:``."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = re.sub(r"^#:?\s?", "", tok.string).strip()
    return out


def _block(node, comments, lines):
    """The comment block attached to the statement ``node``: its trailing comments and the comment lines above."""
    text = [comments[n] for n in range(node.lineno, node.end_lineno + 1) if n in comments]
    above = []
    n = node.lineno - 1
    while n >= 1 and n in comments and lines[n - 1].lstrip().startswith("#"):
        above.insert(0, comments[n])
        n -= 1
    return " ".join(above + text)


def _module_constants(body):
    """Module-level ``(name, statement)`` pairs of numeric UPPER_CASE constants, descending into if/try/with."""
    for stmt in body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None and _numeric(stmt.value):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            # unpacking (``A, B = 1e-3, 1e-6``) names every target
            targets = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t])]
            names = [t.id for t in targets if isinstance(t, ast.Name) and UPPER.match(t.id)]
            if names:
                yield ", ".join(names), stmt
        elif isinstance(stmt, ast.If | ast.Try | ast.With):
            for part in ("body", "orelse", "finalbody"):
                yield from _module_constants(getattr(stmt, part, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _module_constants(handler.body)


def _default(value):
    """A field's default: ``value`` itself, or the ``default=`` of a ``field(...)`` call (None without one)."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) == "field":
        return next((kw.value for kw in value.keywords if kw.arg == "default"), None)
    return value


def _config_fields(tree):
    """``(name, statement)`` pairs of the numeric-default fields of ``LearnConfig``, if the module defines it."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == CONFIG_CLASS:
            for field in stmt.body:
                if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                        and (default := _default(field.value)) is not None and _numeric(default)):
                    yield f"{CONFIG_CLASS}.{field.target.id}", field


def labelled(block):
    """Whether a comment block names whose the value is and gives a reason (a few more words)."""
    match = LABEL.search(block)
    if not match:
        return False
    words = re.findall(r"[^\W_]+", block[:match.start()] + block[match.end():])
    return len(words) >= MIN_REASON_WORDS


def constants(source):
    """``[(line, name, labelled)]`` for every constant of ``source`` (see the module docstring)."""
    tree = ast.parse(source)
    comments, lines = _comments(source), source.splitlines()
    found = list(_module_constants(tree.body)) + list(_config_fields(tree))
    return sorted((stmt.lineno, name, labelled(_block(stmt, comments, lines))) for name, stmt in found)


def unlabelled(source):
    """``[(line, name)]`` of the constants of ``source`` without a provenance label."""
    return [(line, name) for line, name, ok in constants(source) if not ok]


def _rel(path):
    return str(path.relative_to(ROOT))


class TestProvenance:
    def test_every_constant_says_whose_it_is_and_why(self):
        missing = [f"{_rel(p)}:{line}: {name}" for p in SOURCES
                   for line, name in unlabelled(p.read_text(encoding="utf-8"))]
        assert not missing, (f"{len(missing)} constants without a provenance label ({LABEL.pattern} and at least "
                             f"{MIN_REASON_WORDS} words of reason in the comment block):\n" + "\n".join(missing))

    def test_the_checker_sees_the_constants_it_must(self):
        """The scan is not vacuous: it finds LearnConfig's numeric fields and constants in every package."""
        found = {pkg: 0 for pkg in PACKAGES}
        fields = 0
        for p in SOURCES:
            for _, name, _ in constants(p.read_text(encoding="utf-8")):
                found[p.relative_to(ROOT).parts[0]] += 1
                fields += name.startswith(CONFIG_CLASS + ".")
        assert all(found.values()), found
        assert fields >= 20, fields


class TestControls:
    @pytest.mark.parametrize("source", [
        "ALPHA = 1e-4\n",
        "# a tolerance for the fit\nALPHA = -1e-4\n",
        "# tolerances for the fit\nALPHA, beta = 1e-3, 1e-6\n",
        "# ours\nALPHA = 2**13\n",  # a label without a reason
        "# ours: a batch size, not tuned\n\nALPHA = 2**13\n",  # a blank line detaches the block
        "X = 1  # ours: a batch size, not tuned\nALPHA = (0.5, 1.0)\n",  # its neighbour's comment is not its own
        "if True:\n    _ALPHA = 3 * 0.5  # our tolerance for the fit\n",  # "our" is not a label
        "class LearnConfig:\n    #: ours: a batch size, not tuned\n    batch: int = 100\n    n: int = 4\n",
        "class LearnConfig:\n    #: ours: a batch size, not tuned\n    batch: int = field(default=100)\n"
        "    n: int = dataclasses.field(default=4, metadata={'whose': 'ours'})\n",
    ])
    def test_an_unlabelled_constant_is_reported(self, source):
        found = unlabelled(source)
        assert len(found) == 1, found
        assert found[0][1] in ("ALPHA", "_ALPHA", "LearnConfig.n")

    @pytest.mark.parametrize("source", [
        "ALPHA = 1e-4  # ours: a tolerance for the fit; not tuned\n",
        "# The paper's choice: its Lemma 3\n# states this exponent.\nALPHA = -1e-4\n",
        "ALPHA = (\n    0.5,  # Ours, measured on planted layers\n    1.0,\n)\n",
        "class LearnConfig:\n    #: ours: a batch size, not tuned\n    batch: int = 100\n"
        "    n: int = 4  # the talk's choice of four tokens\n",
    ])
    def test_a_labelled_constant_is_not_reported(self, source):
        assert constants(source) and unlabelled(source) == []

    @pytest.mark.parametrize("source", [
        "alpha = 1e-4\n", "ALPHA = 'ours'\n", "ALPHA = True\n", "ALPHA = None\n", "ALPHA = f(3)\n",
        "ALPHA = BETA * 2\n", "def f():\n    ALPHA = 1e-4\n", "class C:\n    ALPHA = 1e-4\n",
        "class LearnConfig:\n    flag: bool = True\n    name: str = 'x'\n    cap: int | None = None\n",
    ])
    def test_what_is_not_a_numeric_constant_is_not_checked(self, source):
        assert constants(source) == []
