"""The registry of hard families: every entry keeps its contract, and a new family is one entry.

The toy family at the end is registered by this test alone (nothing else in the toolkit names it): the learning
study's plan, runs, summary and figure, ``learn-hard --families`` and ``python -m lowerbounds families`` pick it up
from the registry, and its own subcommand joins the command line."""

import dataclasses
import json

import numpy as np
import pytest

from learner import AttentionLayer
from lowerbounds import HardInstance
from lowerbounds.cli import build_parser, main
from lowerbounds.learnhard import HardSpec, cell_subset, check_study, learn_hard_study, plan_hard_runs, planted_member
from lowerbounds.registry import CELLS, FAMILIES, SUBSETS_CODE, HardFamilyEntry, family_names, get, register

#: The families the toolkit registers itself, in order.
BUILT_IN = ("sq", "control", "lwr")


@pytest.fixture
def registry():
    """The registry as it was, restored after the test (a toy family must not leak into other tests)."""
    saved = dict(FAMILIES)
    yield FAMILIES
    FAMILIES.clear()
    FAMILIES.update(saved)


def _small_member(entry, seed=0):
    """A member of ``entry`` at a small size of its cells."""
    if entry.cells == "secrets":
        return entry.member(2, 5, np.random.default_rng(seed))
    return entry.member(6, 2, cell_subset(2, 6, seed, entropy=0))


class TestEveryEntryKeepsItsContract:
    @pytest.mark.parametrize("name", family_names())
    def test_a_member_is_a_hard_instance_with_its_index(self, name):
        entry = get(name)
        inst = _small_member(entry)
        assert isinstance(inst, HardInstance) and isinstance(inst.layer, AttentionLayer) and inst.layer.d == inst.d
        if entry.cells == "secrets":  # a secret of Z_q^n, read back from the member
            assert inst.q == 5 and len(inst.secret) == 2 and all(0 <= w < 5 for w in inst.secret)
        else:  # the hidden subset it was given, m − 1 coordinates
            assert tuple(inst.subset) == cell_subset(2, 6, 0, entropy=0) and inst.m >= 2

    @pytest.mark.parametrize("name", family_names())
    def test_its_seed_code_is_not_the_subsets_and_its_subcommands_parse(self, name):
        entry = get(name)
        assert entry.seed_code != SUBSETS_CODE and entry.cells in CELLS and entry.methods
        from lowerbounds.cli import _commands_of

        parser = build_parser()  # the command line, built from the registry
        assert all(parser.command(name) is not None for name in _commands_of(entry))

    def test_the_built_in_families_and_what_they_share(self):
        names = family_names()
        assert tuple(n for n in names if n in BUILT_IN) == BUILT_IN  # in their order; a new family may go anywhere
        assert get("sq").seed_code == get("control").seed_code != get("lwr").seed_code  # the control's examples
        assert family_names(cells="secrets")[:1] == ("lwr",) and "exhaustive" in get("lwr").methods
        assert get("sq").sq_prediction and not get("control").sq_prediction

    def test_unknown_and_duplicate_names(self, registry):
        with pytest.raises(ValueError, match=r"`family` must be one of \(.*'lwr'.*\); got family='dense'"):
            get("dense")
        with pytest.raises(ValueError, match="registered already"):
            register(dataclasses.replace(get("sq")))
        with pytest.raises(TypeError, match="must be a HardFamilyEntry"):
            register("sq")


class TestAnEntryIsChecked:
    @pytest.mark.parametrize(("change", "match"), [
        ({"cells": "cubes"}, r"`cells` must be one of \('subsets', 'secrets'\); got cells='cubes'"),
        ({"methods": ("adam", "sgd")}, r"`methods` must be entries of"),
        ({"methods": ()}, r"`methods` must be entries of"),
        ({"methods": ("adam", "exhaustive")}, r"'exhaustive' only with cells='secrets'; got cells='subsets'"),
        ({"seed_code": SUBSETS_CODE}, r"`seed_code` must be a non-negative integer other than 2"),
        ({"seed_code": -1}, r"`seed_code` must be"),
        ({"seed_code": True}, r"`seed_code` must be"),
        ({"name": "two words"}, r"`name` must be a word"),
        ({"commands": "lowerbounds.cli.sq_commands"}, r"`commands` must be 'module:function'"),
    ])
    def test_a_bad_field_is_named(self, change, match):
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(get("control"), **change)

    def test_control_the_built_in_entries_pass(self):
        for name in family_names():
            assert dataclasses.replace(get(name)) == get(name)


def _toy_member(d, m, subset):
    """The toy family: the sparse-linear control's member (a HardInstance of the subset contract)."""
    from lowerbounds.sq import sparse_linear_instance

    return sparse_linear_instance(d, m, subset)


def toy_commands(sub):
    """The toy family's own subcommand, ``toy-info``: prints a member's heads."""
    p = sub.add_parser("toy-info", help="the toy family's member at --d")
    p.add_argument("--d", type=int, default=6)
    p.set_defaults(handler=lambda args: print(f"toy member: m={_toy_member(args.d, 2, (1,)).m}") or 0)


def test_a_toy_family_is_one_registry_entry(registry, tmp_path, capsys):
    entry = register(HardFamilyEntry("toy", "the control under another name", "subsets", _toy_member, seed_code=5,
                                     commands=f"{__name__}:toy_commands"))
    assert family_names()[-1] == "toy"
    # Its runs: planned like any family of subsets, seeded with its own code, built by its entry.
    checked = check_study(ds=[6], ms=[2], subsets=1, lwr_ns=[2], q=5, families=["toy"], methods=["adam"], start=200,
                          max_examples=800, max_seconds=5.0, target=1e-3, provable_seeds=1)
    (spec,) = plan_hard_runs(checked, entropy=7)
    assert (spec.family, spec.method, spec.m, spec.d, spec.spawn_key[0]) == ("toy", "adam", 2, 6, 5)
    inst, _, _ = planted_member(spec)
    assert inst.subset == _toy_member(6, 2, cell_subset(2, 6, 0, entropy=7)).subset
    # The listing and the command line read the registry: its name, its choices, its own subcommand.
    assert main(["families"]) == 0
    listing = capsys.readouterr().out
    assert "toy" in listing and "commands: toy-info" in listing and "the control under another name" in listing
    assert main(["toy-info", "--d", "6"]) == 0 and capsys.readouterr().out == "toy member: m=2\n"
    (families,) = [a for a in build_parser().command("learn-hard").options if a.dest == "families"]
    assert "toy" in families.choices and "toy" in families.help
    # A quick study on it, from the command line: its rows, its growth fit, its line in the table and figure.
    out = tmp_path / "study"
    assert main(["learn-hard", "--quick", "--serial", "--no-progress", "--families", "toy", "control",
                 "--methods", "adam", "--d", "6", "--m", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert [(r["family"], r["method"], r["m"], r["d"]) for r in summary["rows"]] == [
        ("control", "adam", 2, 6), ("toy", "adam", 2, 6)]  # registry order
    assert list(summary["growth"]) == ["control, m=2", "toy, m=2"] and summary["lwr"] == []
    # The same member as the control, with other examples (its own seed code): the same sizes drawn.
    toy, control = (json.loads(p.read_text()) for p in sorted((out / "runs").glob("adam-*.json"))[::-1])
    assert toy["member"] == control["member"] and toy["spec"]["spawn_key"][0] == 5
    table = (out / "summary.md").read_text()
    assert "| toy | adam | 2 | 6 |" in table and (out / "learn_hard.png").stat().st_size > 0
    assert entry is get("toy")


def test_control_an_unregistered_family_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"`families` entries must be in \(.*\); got 'toy'"):
        learn_hard_study(tmp_path / "never", families=["toy"], methods=["adam"])
    with pytest.raises(SystemExit) as parse_error:  # the parser's choices: the families registered
        main(["learn-hard", "--families", "toy", "--out", str(tmp_path / "never")])
    assert parse_error.value.code == 2 and "--families: invalid choice: 'toy'" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
    with pytest.raises(ValueError, match="`family` must be one of"):
        planted_member(HardSpec("toy", "adam", 2, 6, 0, 7))


@pytest.mark.parametrize(("families", "methods", "match"), [
    (["sq"], ["exhaustive"], r"`methods` \['exhaustive'\] apply to the lwr family only, not to 'sq'; add 'adam' or "
                             r"'provable', or families=\['lwr'\]"),
    (["lwr", "control"], ["exhaustive"], r"not to 'control'"),
])
def test_a_family_no_method_applies_to_is_refused(families, methods, match):
    with pytest.raises(ValueError, match=match):
        check_study(ds=[6], ms=[2], subsets=1, lwr_ns=[2], q=5, families=families, methods=methods, start=200,
                    max_examples=800, max_seconds=5.0, target=1e-3, provable_seeds=1)
    # Control: the family the method applies to alone passes.
    check_study(ds=[6], ms=[2], subsets=1, lwr_ns=[2], q=5, families=["lwr"], methods=methods, start=200,
                max_examples=800, max_seconds=5.0, target=1e-3, provable_seeds=1)


@pytest.mark.parametrize("m", [3, 4, 5])
def test_the_common_type_measures_a_fractional_target_exactly(m):
    """A new family can take the common type's sharpness error as it is: a target with fractional values (the
    control's ``1 − 2h/r``, r = m − 1) is measured as it is, never truncated to an integer. Reference: the control's
    own closed form (its override, with the target exact in mpmath); at r = 3 and 4 the target takes the values
    ±1/3 and ±1/2, which truncation would make 0 (an error of 2/3 or 1)."""
    from lowerbounds.sq import sparse_linear_instance

    control = sparse_linear_instance(10, m, tuple(range(1, m)))
    common = HardInstance.sharpness_error.func(control)  # the common type's rule, not the override
    assert common == pytest.approx(control.sharpness_error, abs=4e-16)  # the float target's rounding, 2 ulp of 1
    assert common < 1e-14
