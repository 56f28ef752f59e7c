"""The judging test sets of a mutation run (``.ci/mutants.toml``, applied by ``tests/conftest.py``).

A set that selected nothing would let every mutant survive, and one that kept the studies would make a run take
days: both are checked here on constructed test ids, and every pattern is checked against the test files.
"""

import fnmatch
import importlib.util
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
TABLE = tomllib.loads((ROOT / ".ci" / "mutants.toml").read_text())


def _hook():
    spec = importlib.util.spec_from_file_location("_conftest_under_test", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.pytest_collection_modifyitems


IDS = {
    "unit": "tests/learner/test_learn.py::TestGapNote::test_one_head_has_no_gap",
    "phase": "tests/learner/phases/test_sculpt_rules.py::test_something",
    "serial pilot": "tests/learner/phases/test_forecast.py::TestRefinedSculptPilot::"
                    "test_pilot_then_continuation_equals_a_direct_run[serial]",
    "pool pilot": "tests/learner/phases/test_forecast.py::TestRefinedSculptPilot::"
                  "test_pilot_then_continuation_equals_a_direct_run[2-workers]",
    "cli": "tests/learner/phases/test_forecast.py::TestBudgetStop::test_cli_prints_the_forecast",
    "study": "tests/learner/study/test_bench.py::test_bench_runs",
    "pool": "tests/learner/test_parallel.py::test_pool",
    "validation": "tests/learner/test_validation.py::test_k_at_least_d_is_refused",
    "fuzz": "tests/test_api_fuzz.py::test_learn",
}


def _select(monkeypatch, mutant):
    if mutant is None:
        monkeypatch.delenv("MUTANT_UNDER_TEST", raising=False)
    else:
        monkeypatch.setenv("MUTANT_UNDER_TEST", mutant)
    deselected = []
    config = SimpleNamespace(rootpath=ROOT,
                             hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    items = [SimpleNamespace(nodeid=nodeid, key=key) for key, nodeid in IDS.items()]
    _hook()(config, items)
    assert len(items) + len(deselected) == len(IDS)
    return {item.key for item in items}


def test_a_learner_mutant_is_judged_by_the_unit_tests_only(monkeypatch):
    kept = _select(monkeypatch, "learner.learn.x__tight_retry__mutmut_7")
    assert kept == {"unit", "phase", "serial pilot", "validation", "fuzz"}


def test_a_method_mutant_finds_its_module(monkeypatch):
    kept = _select(monkeypatch, "learner.oracle.xǁLayerOracleǁreset__mutmut_3")
    assert kept == {"unit", "phase", "serial pilot", "validation", "fuzz"}


@pytest.mark.parametrize("mutant", [None, "learner.learn", "learner.metrics.x_match_heads__mutmut_2"],
                         ids=["no mutation run", "not a mutant", "module without a set"])
def test_control_everything_is_kept_outside_a_judging_set(monkeypatch, mutant):
    assert _select(monkeypatch, mutant) == set(IDS)


def _test_files():
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py"))


@pytest.mark.parametrize("name", sorted(TABLE["test_sets"]))
def test_every_pattern_names_existing_tests(name):
    """A misspelt file or test name would silently judge the mutants by fewer tests."""
    files = _test_files()
    for pattern in TABLE["test_sets"][name]:
        if not pattern.startswith("!"):
            assert any(fnmatch.fnmatchcase(f, pattern) for f in files), pattern
            continue
        if "::" not in pattern:  # "!file": a test file left out
            assert any(fnmatch.fnmatchcase(f, pattern[1:]) for f in files), pattern
            continue
        # "!*::Class::test[params]": the class and the test function are defined in a test file
        parts = pattern[1:].split("::")
        cls, func = parts[-2], re.sub(r"\[.*$", "", parts[-1])
        sources = [(ROOT / f).read_text() for f in files]
        assert any(f"class {cls}" in s and f"def {func}(" in s for s in sources), pattern


def test_every_module_names_a_declared_set():
    for entry in TABLE["module"]:
        assert (ROOT / entry["path"]).is_file(), entry["path"]
        assert entry.get("tests", "learner") in TABLE["test_sets"], entry["path"]


def _conftest():
    spec = importlib.util.spec_from_file_location("_conftest_for_fixtures", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _FixtureDef:
    """Stands in for pytest's FixtureDef: hashable, with a scope."""

    def __init__(self, scope):
        self.scope = scope


def _set_up(module, fixturedef, called):
    """Drive the fixture-setup wrapper around a fixture whose body calls the functions ``called``."""
    setup = module.pytest_fixture_setup(fixturedef, request=None)
    next(setup)
    module._mutmut_stats_state()._stats.update(called)
    with pytest.raises(StopIteration) as done:
        setup.send("value")
    return done.value.value


class TestSharedFixtureCalls:
    """During mutmut's stats run, the functions a module- or class-scoped fixture calls are credited to every test
    that uses the fixture, not only to the test in which it was set up; function-scoped fixtures are left alone."""

    def _recording(self, monkeypatch):
        module = _conftest()
        recorder = SimpleNamespace(_stats={"called before the fixture"})
        monkeypatch.setattr(module, "_mutmut_stats_state", lambda: recorder)
        return module, recorder

    def test_a_later_test_using_a_shared_fixture_is_credited_with_its_calls(self, monkeypatch):
        module, recorder = self._recording(monkeypatch)
        shared, own = _FixtureDef("module"), _FixtureDef("function")
        assert _set_up(module, shared, {"learner.learn.x_truth_errors"}) == "value"
        assert recorder._stats == {"called before the fixture", "learner.learn.x_truth_errors"}
        _set_up(module, own, {"learner.metrics.x_match_heads"})
        recorder._stats = set()  # mutmut clears its record after each test; the next test reads the fixture
        later = SimpleNamespace(_fixtureinfo=SimpleNamespace(name2fixturedefs={"run": (shared,), "own": (own,)}))
        module.pytest_runtest_teardown(later, None)
        assert recorder._stats == {"learner.learn.x_truth_errors"}  # not the function-scoped fixture's call

    def test_outside_the_stats_run_nothing_is_recorded(self, monkeypatch):
        module = _conftest()
        monkeypatch.setenv("MUTANT_UNDER_TEST", "learner.learn.x_truth_errors__mutmut_1")
        assert module._mutmut_stats_state() is None
        setup = module.pytest_fixture_setup(_FixtureDef("module"), request=None)
        next(setup)
        with pytest.raises(StopIteration):
            setup.send("value")
        assert module._SHARED_FIXTURE_CALLS == {}
        module.pytest_runtest_teardown(SimpleNamespace(), None)  # does not even look at the item
