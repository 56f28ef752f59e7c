"""``LearnConfig``'s groups and field metadata, its flat keyword API, and ``resolve_config``'s signature.

The ``#:`` comments are read from the source with ``ast`` and ``tokenize``, a reference independent of the
dataclass machinery that holds the metadata.
"""

import ast
import dataclasses
import inspect
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from learner.phases import CONFIG_RULES, LearnConfig, _config, resolve_config

SOURCE = Path(_config.__file__).read_text(encoding="utf-8")
#: ``dataclasses.asdict(LearnConfig())`` as captured before the fields were grouped: the records hold it, so its
#: keys, their order, the values and their types (``1.5`` against ``1``) must not change.
DEFAULTS = {
    "adaptive": True, "batch": 100000, "first_batch": 5000, "n_crude": 400000, "crude_se": 0.025,
    "crude_tol": 0.1, "refined_tol": None, "min_weight": 0.02, "crude_constraints": 1.5,
    "refined_constraints": None, "max_examples": None, "crude_max_examples": 2000000, "n_refine": 400000,
    "refine_first": 10000, "refine_se": 0.02, "refine_rounds": 8, "refine_keep": 0.02, "outer_rounds": 2,
    "hull_stability": 0.05, "gap_min": None, "hull_weighting": "precision", "max_m": 6, "net_radius": 2.0,
    "net_points": 41, "net_points_3d": None, "n_search": 2000, "keep_tuples": 20, "search": "auto",
    "max_tuples": 100000, "search_memory": 1073741824, "swap_starts": 8, "vp_starts": 8, "search_seed": 0,
    "refine": "vp", "refine_solver": "auto", "refine_examples_per_param": 2.0, "max_nfev": 200, "success_tol": 1e-10,
    "certify_examples": 4000, "certify_delta": 0.05, "noise_floor": True, "noise_z": 4.0, "allow_unsound": False,
}
FIELDS = list(DEFAULTS)
META_KEYS = ("group", "unit", "whose", "doc")
WHOSE = re.compile(r"^(ours, (measured|not tuned|convention)|the paper's)$")


def incomplete(cls):
    """Fields of the dataclass ``cls`` whose metadata lacks a key, holds an empty or multi-line value, or an
    unknown ``whose``."""
    def ok(meta):
        return (all(isinstance(meta.get(key), str) and meta[key].strip() and "\n" not in meta[key]
                    for key in META_KEYS) and WHOSE.match(meta["whose"]) is not None)

    return [f.name for f in dataclasses.fields(cls) if not ok(f.metadata)]


def doc_comments(source, class_name="LearnConfig"):
    """``{field: text}`` of the ``#:`` lines directly above each annotated field of ``class_name``, in order.

    The block stops at the first line above that is not a ``#:`` comment, so a field that shares the block
    above its neighbour gets ``""``.
    """
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    lines = source.splitlines()
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == class_name)
    out = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            block, n = [], stmt.lineno - 1
            while n in comments and comments[n].startswith("#:") and lines[n - 1].lstrip().startswith("#:"):
                block.insert(0, comments[n][2:].strip())
                n -= 1
            out[stmt.target.id] = " ".join(block)
    return out


class TestLearnConfigFields:
    def test_asdict_is_as_before(self):
        assert len(FIELDS) == 43
        assert list(dataclasses.asdict(LearnConfig())) == FIELDS
        assert json.dumps(dataclasses.asdict(LearnConfig())) == json.dumps(DEFAULTS)

    @pytest.mark.parametrize("name", FIELDS)
    def test_every_keyword_still_works(self, name):
        assert LearnConfig(**{name: DEFAULTS[name]}) == LearnConfig()

    def test_all_keywords_and_positions_at_once(self):
        assert LearnConfig(**DEFAULTS) == LearnConfig() == LearnConfig(*DEFAULTS.values())

    def test_every_field_is_still_validated(self):
        assert list(CONFIG_RULES) == FIELDS

    def test_every_field_has_complete_metadata(self):
        assert incomplete(LearnConfig) == []

    def test_the_completeness_check_catches_a_field_without_metadata(self):
        """Control: the check must fail on fields that lack metadata, lack a key or name no known owner."""
        meta = {"group": "budgets", "unit": "examples", "whose": "ours, not tuned", "doc": "a count"}

        @dataclass(frozen=True)
        class Tiny:
            good: int = field(default=1, metadata=meta)
            bare: int = 2
            no_doc: int = field(default=3, metadata={k: v for k, v in meta.items() if k != "doc"})
            two_lines: int = field(default=4, metadata=meta | {"doc": "a count\nover two lines"})
            nobody: int = field(default=5, metadata=meta | {"whose": "ours"})

        assert incomplete(Tiny) == ["bare", "no_doc", "two_lines", "nobody"]

    def test_every_field_has_its_own_doc_comment(self):
        comments = doc_comments(SOURCE)
        assert list(comments) == FIELDS
        assert [name for name, text in comments.items() if not text] == []

    def test_the_comment_check_catches_a_shared_comment(self):
        """Control: a field under its neighbour's ``#:`` block, or with a plain comment, has no comment of its own."""
        source = ("class LearnConfig:\n    #: ours: both counts, not tuned\n    a: int = 1\n    b: int = 2\n"
                  "    # a plain comment\n    c: int = 3\n    #: ours: a count, not tuned\n\n    d: int = 4\n")
        assert doc_comments(source) == {"a": "ours: both counts, not tuned", "b": "", "c": "", "d": ""}

    @pytest.mark.parametrize("name", FIELDS)
    def test_the_comment_says_whose_the_default_is(self, name):
        """The metadata's ``whose`` and the ``#:`` comment agree: the comment names the owner and how it was chosen."""
        whose = next(f for f in dataclasses.fields(LearnConfig) if f.name == name).metadata["whose"]
        owner, _, how = whose.partition(", ")
        text = doc_comments(SOURCE)[name].lower()
        assert ("paper" if owner == "the paper's" else owner) in text
        assert how in text


class TestLearnConfigGroups:
    def test_every_field_once_in_field_order(self):
        groups = LearnConfig.groups()
        names = [name for members in groups.values() for name in members]
        assert sorted(names) == sorted(FIELDS) and len(names) == len(set(names)) == 43
        for members in groups.values():
            assert members and members == [name for name in FIELDS if name in members]

    def test_a_group_holds_the_fields_whose_metadata_names_it(self):
        group_of = {f.name: f.metadata["group"] for f in dataclasses.fields(LearnConfig)}
        assert {group: [n for n in FIELDS if group_of[n] == group] for group in LearnConfig.groups()} == \
            LearnConfig.groups()

    def test_the_groups(self):
        assert {group: len(members) for group, members in LearnConfig.groups().items()} == {
            "mode": 2, "budgets": 11, "tolerances": 8, "regression": 2, "span": 3, "search": 11, "refinement": 6}

    def test_the_class_docstring_names_every_group(self):
        assert all(f"``{group}``" in LearnConfig.__doc__ for group in LearnConfig.groups())


class TestLearnConfigDescribe:
    def test_one_row_per_field(self):
        header, *rows = LearnConfig.describe().splitlines()
        assert re.split(r"\s{2,}", header) == ["group", "field", "default", "unit", "whose"]
        fields = {f.name: f for f in dataclasses.fields(LearnConfig)}
        expected = [[group, name, repr(DEFAULTS[name]), fields[name].metadata["unit"], fields[name].metadata["whose"]]
                    for group, members in LearnConfig.groups().items() for name in members]
        assert [re.split(r"\s{2,}", row) for row in rows] == expected


class TestResolveConfig:
    def test_takes_only_the_config_and_m(self):
        assert list(inspect.signature(resolve_config).parameters) == ["cfg", "m"]
        with pytest.raises(TypeError):
            resolve_config(LearnConfig(), 3, 12, 2)

    @pytest.mark.parametrize(
        ("m", "chosen"),
        [
            (1, (6.0, 3.0, 13)), (3, (6.0, 3.0, 13)), (4, (12.0, 3.0, 13)), (5, (12.0, 2.0, 9)),
            (6, (12.0, 2.0, 7)), (8, (12.0, 2.0, 7)),
        ],
        ids=lambda v: str(v),
    )
    def test_chooses_from_m(self, m, chosen):
        cfg, names = resolve_config(LearnConfig(), m)
        assert names == ["gap_min", "max_examples", "net_points_3d", "refined_constraints"]
        assert (cfg.refined_constraints, cfg.gap_min, cfg.net_points_3d) == chosen
        assert cfg.max_examples == 1_000_000_000 and cfg.refined_tol is None  # phase 4's pilot chooses it
        assert dataclasses.replace(cfg, refined_constraints=None, gap_min=None, net_points_3d=None,
                                   max_examples=None) == LearnConfig()

    def test_keeps_what_is_given(self):
        given = LearnConfig(max_examples=123, net_points_3d=5, refined_constraints=2.0, gap_min=4.0)
        assert resolve_config(given, 5) == (given, [])


class TestFieldMetadata:
    """``_meta``, the metadata every field is declared with, refuses what a field's documentation must not be."""

    @pytest.mark.parametrize(("kwargs", "ok"), [
        ({}, True),
        ({"group": "parallel"}, False),  # not one of the groups
        ({"whose": "the reviewer's"}, False),
        ({"unit": ""}, False),
        ({"doc": ""}, False),
        ({"doc": "two\nlines"}, False),
    ])
    def test_rules(self, kwargs, ok):
        from learner.phases import _config

        given = {"group": "budgets", "unit": "examples", "whose": "ours, measured", "doc": "one line"} | kwargs
        if ok:
            assert _config._meta(**given) == given
        else:
            with pytest.raises(ValueError, match="bad field metadata"):
                _config._meta(**given)
