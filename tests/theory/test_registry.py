"""theory.registry: the registered checks, their cases, and run_case."""

import numpy as np
import pytest

import theory.minnorm as minnorm
from learner import random_layer
from theory.registry import CHECKS, get, run_case

#: The registry's names, read from it: a new check is one entry in theory/registry.py and no edit here (a check
#: function left out of the registry fails TestEveryCheckIsRegistered, which walks the modules).
NAMES = sorted(CHECKS)


class TestGet:
    @pytest.mark.parametrize("name", NAMES)
    def test_returns_the_spec_of_that_name(self, name):
        assert get(name) is CHECKS[name] and get(name).name == name

    def test_unknown_name_lists_the_known_ones(self):
        with pytest.raises(ValueError, match="unknown check 'no_such_check'; known: ") as info:
            get("no_such_check")
        listed = str(info.value).split("known: ", 1)[1].removesuffix(".").split(", ")
        assert sorted(listed) == NAMES


class TestCheckSpec:
    @pytest.mark.parametrize(("which", "function"), [
        ("default", minnorm.default_min_norm_orthogonality),
        ("control", minnorm.control_min_norm_orthogonality),
    ])
    def test_case_resolves_the_builder(self, which, function):
        assert get("min_norm_orthogonality").case(which) is function

    def test_check_function(self):
        assert get("min_norm_orthogonality").check_function is minnorm.check_min_norm_orthogonality

    def test_unknown_case(self):
        with pytest.raises(ValueError, match="`which` must be 'default' or 'control'; got which='other'"):
            get("min_norm_orthogonality").case("other")


class TestRunCase:
    def test_seed_sequence_is_used_as_given(self):
        # A spawned child has its parent's entropy but its own stream: the case must draw from the child itself.
        child = np.random.SeedSequence(11).spawn(1)[0]
        result = run_case("min_norm_orthogonality", "control", rng=child, m=2, d=3)
        thetas = random_layer(2, 3, rng=np.random.SeedSequence(11).spawn(1)[0]).thetas
        expected = minnorm.check_min_norm_orthogonality(thetas, point=thetas.mean(axis=0))
        assert result.details["inner_products"] == expected.details["inner_products"]
        assert result.seed_entropy == 11

    @pytest.mark.parametrize("which", ["default", "control"])
    def test_int_seed_is_recorded_and_replays(self, which):
        first, again = (run_case("min_norm_orthogonality", which, rng=5, m=2, d=3) for _ in range(2))
        assert first.seed_entropy == again.seed_entropy == 5
        assert first.details["inner_products"] == again.details["inner_products"]

    def test_no_seed_records_fresh_entropy(self):
        # d = 6: a planted layer at fresh entropy (at d = 3 one in a few hundred plantings fails its conditions)
        result = run_case("min_norm_orthogonality", rng=None, m=2, d=6)
        assert isinstance(result.seed_entropy, int)

    def test_unknown_parameter_names_what_the_case_takes(self):
        # The min-norm cases take m and d (rng is run_case's own argument, not a case parameter).
        with pytest.raises(ValueError, match=r"takes no parameter 'k'; it takes m, d\.$"):
            run_case("min_norm_orthogonality", "control", k=1)

    def test_case_without_parameters(self, monkeypatch):
        original = minnorm.default_min_norm_orthogonality

        def bare(*, rng=None):
            return original(m=2, d=3, rng=rng)

        monkeypatch.setattr(minnorm, "default_min_norm_orthogonality", bare)
        with pytest.raises(ValueError, match=r"takes no parameter 'm'; it takes none\.$"):
            run_case("min_norm_orthogonality", m=2)
        assert run_case("min_norm_orthogonality", rng=1).parameters["m"] == 2

    def test_case_with_keyword_catch_all_takes_anything(self, monkeypatch):
        original, seen = minnorm.default_min_norm_orthogonality, {}

        def loose(*, rng=None, **params):
            seen.update(params)
            return original(m=2, d=6, rng=rng)  # d = 6: plants at any entropy (d = 3 fails one in a few hundred)

        monkeypatch.setattr(minnorm, "default_min_norm_orthogonality", loose)
        run_case("min_norm_orthogonality", anything=1)
        assert seen == {"anything": 1}


def unregistered_checks(modules, registered):
    """``module.name`` of every public ``check_*`` function of ``modules`` (imported modules) that no registry entry
    names as its check: a lemma check that ``python -m theory all`` would not run."""
    found = []
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if name.startswith("check_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__:
                if (module.__name__.removeprefix("theory."), name) not in registered:
                    found.append(f"{module.__name__}.{name}")
    return sorted(found)


def _theory_modules():
    import importlib
    import pkgutil

    import theory

    return [importlib.import_module(f"theory.{info.name}") for info in pkgutil.iter_modules(theory.__path__)
            if not info.name.startswith("_") and info.name not in ("cli", "test_lemmas")]


class TestEveryCheckIsRegistered:
    """Every lemma check of ``theory`` is a registry entry, so ``python -m theory all`` runs it with its control."""

    def test_no_check_is_left_out(self):
        registered = {(spec.module, spec.check) for spec in CHECKS.values()}
        modules = _theory_modules()
        assert {m.__name__ for m in modules} >= {"theory.yield_model", "theory.minnorm", "theory.certification"}
        assert unregistered_checks(modules, registered) == []

    def test_control_an_unregistered_check_is_found(self):
        import types

        fake = types.ModuleType("theory.fake")
        exec("def check_new(x):\n    return x\ndef helper():\n    pass\n__all__ = ['check_new', 'helper']",
             fake.__dict__)
        fake.check_new.__module__ = "theory.fake"
        assert unregistered_checks([fake], set()) == ["theory.fake.check_new"]
        assert unregistered_checks([fake], {("fake", "check_new")}) == []


def test_a_toy_check_is_one_registry_entry(monkeypatch, capsys):
    """A new check is one entry (here the min-norm check's functions under another name): ``list`` shows it,
    ``check`` offers it, ``all`` runs its case and its control (the other checks left out for the length of the
    test, so that ``all`` stays quick)."""
    import dataclasses

    from theory.cli import build_parser, main

    toy = dataclasses.replace(get("min_norm_orthogonality"), name="toy_orthogonality",
                              summary="the toy: the min-norm point is orthogonal to the hull")
    monkeypatch.setitem(CHECKS, toy.name, toy)  # one entry in the registry's own dict
    assert main(["list"]) == 0 and "toy_orthogonality        the toy: the min-norm point" in capsys.readouterr().out
    (name,) = [a for a in build_parser().command("check").options if a.dest == "name"]
    assert "toy_orthogonality" in name.choices
    assert main(["check", "toy_orthogonality", "--seed", "1"]) == 0 and "holds" in capsys.readouterr().out
    for other in set(CHECKS) - {"min_norm_orthogonality", toy.name}:
        monkeypatch.delitem(CHECKS, other)
    assert main(["all", "--seed", "1"]) == 0
    table = capsys.readouterr().out
    assert table.count("toy_orthogonality") == 2 and "4 cases in" in table  # its case and its control
    assert "every check held and every negative control failed, as expected." in table
