"""The judging test sets of a mutation run (``.ci/mutants.toml``, applied by ``tests/conftest.py``).

A set that selected nothing would let every mutant survive, and one that kept the studies would make a run take
days: both are checked here on constructed test ids, and every pattern is checked against the test files.
"""

import ast
import fnmatch
import importlib.util
import re
import sys
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
        parts = pattern[1:].split("::")
        if len(parts) == 2:  # "!file::test[params]": a test function of a file matching the file's pattern
            func = re.sub(r"\[.*$", "", parts[1])
            assert any(fnmatch.fnmatchcase(f, parts[0]) and f"def {func}(" in (ROOT / f).read_text()
                       for f in files), pattern
            continue
        # "!*::Class::test[params]": the class and the test function are defined in a test file
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

    def test_a_fixture_asked_for_by_name_in_a_real_session_is_credited(self, monkeypatch, tmp_path):
        """A real pytest session, recorded as mutmut records it (each test's calls, then cleared): a module-scoped
        fixture set up by the first test is credited to a later test that lists it as an argument and to one that
        asks for it by name in its body (``request.getfixturevalue``), and not to a test that uses neither."""
        module, recorder = self._recording(monkeypatch)
        recorder._stats = set()
        monkeypatch.setattr(sys.modules[__name__], "_RECORDER", recorder, raising=False)
        (tmp_path / "test_shared.py").write_text(
            "import pytest\n"
            f"from {__name__} import _RECORDER\n"
            "@pytest.fixture(scope='module')\n"
            "def run():\n"
            "    _RECORDER._stats.add('learner.learn.x_learn')\n"
            "    return 1\n"
            "def test_first(run): pass\n"
            "def test_argument(run): pass\n"
            "def test_by_name(request): request.getfixturevalue('run')\n"
            "def test_neither(): pass\n")
        (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this repository's settings
        credited = {}

        class Mutmut:  # mutmut's own collector: after the conftest's hook, it files the record and clears it
            @pytest.hookimpl(trylast=True)
            def pytest_runtest_teardown(self, item, nextitem):
                credited[item.name] = set(recorder._stats)
                recorder._stats.clear()

        code = pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini")],
                           plugins=[module, Mutmut()])
        assert code == 0
        called = {"learner.learn.x_learn"}
        assert credited == {"test_first": called, "test_argument": called, "test_by_name": called,
                            "test_neither": set()}

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


class TestOverrunUnderAMutant:
    """Under a mutant, a test running past MUTANT_TEST_FACTOR × its clean time + MUTANT_TEST_SLACK is stopped as
    mutmut stops a mutant (here the stop raises instead of sending SIGXCPU); otherwise no timer is set."""

    NODEID = "tests/learner/phases/test_sculpt_rules.py::test_something"

    class Stopped(Exception):
        pass

    def _module(self, monkeypatch, mutant, clean):
        module = _conftest()
        if mutant is None:
            monkeypatch.delenv("MUTANT_UNDER_TEST", raising=False)
        else:
            monkeypatch.setenv("MUTANT_UNDER_TEST", mutant)
        monkeypatch.setattr(module, "_mutmut_durations", lambda: {self.NODEID: clean})
        monkeypatch.setattr(module, "MUTANT_TEST_SLACK", 0.05)

        def stop():
            raise self.Stopped

        monkeypatch.setattr(module, "_stop_as_timeout", stop)
        return module

    def _run(self, module, seconds, nodeid=NODEID):
        """Drive the hook around a test body that sleeps ``seconds``; the timer it set (the value it asked for, read
        from its call: no clock is compared), and whether it stopped."""
        import signal
        import time

        handler = signal.getsignal(signal.SIGALRM)
        asked, real = [], signal.setitimer

        def recording(which, value, *rest):
            asked.append(value)
            return real(which, value, *rest)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(signal, "setitimer", recording)
            call = module.pytest_runtest_call(SimpleNamespace(nodeid=nodeid))
            next(call)
        timer = asked[0] if asked else 0.0
        try:
            time.sleep(seconds)
        except self.Stopped:
            call.close()
            stopped = True
        else:
            with pytest.raises(StopIteration):
                call.send(None)
            stopped = False
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) == handler
        return timer, stopped

    def test_an_overrun_is_stopped(self, monkeypatch):
        module = self._module(monkeypatch, "learner.phases.sculpt.x__row_fit_two__mutmut_83", clean=0.01)
        timer, stopped = self._run(module, 2.0)
        assert timer == pytest.approx(10 * 0.01 + 0.05, rel=1e-12) and stopped

    def test_within_the_limit_nothing_happens(self, monkeypatch):
        module = self._module(monkeypatch, "learner.phases.sculpt.x__row_fit_two__mutmut_83", clean=0.1)
        assert self._run(module, 0.2) == (pytest.approx(1.05, rel=1e-12), False)

    def test_control_no_timer_outside_a_mutant_or_for_an_unrecorded_test(self, monkeypatch):
        module = self._module(monkeypatch, None, clean=0.0)
        assert self._run(module, 0.2) == (0.0, False)  # 0.05 s would have stopped it under a mutant
        module = self._module(monkeypatch, "learner.phases.sculpt.x__row_fit_two__mutmut_83", clean=0.0)
        assert self._run(module, 0.2, nodeid="tests/other.py::test_new") == (0.0, False)

    def test_the_stop_is_mutmuts_timeout_signal(self):
        # mutmut reads a child killed by SIGXCPU (exit code -24) as a timeout, which .ci/mutants counts as caught.
        import signal
        import subprocess
        import sys

        code = ("import importlib.util; s = importlib.util.spec_from_file_location('c', 'tests/conftest.py'); "
                "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); m._stop_as_timeout()")
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60)
        assert done.returncode == -signal.SIGXCPU


def _ci_mutants():
    from importlib.machinery import SourceFileLoader

    loader = SourceFileLoader("_ci_mutants_under_test", str(ROOT / ".ci" / "mutants"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class TestEquivalentsArePinned:
    """An equivalent mutant is excused by name, and mutmut renumbers a function's mutants when the function changes:
    an entry counts only while the mutant of that name still changes the line the entry was judged on."""

    def test_the_changed_line_ignores_comments_spacing_and_the_mutants_name(self):
        ci = _ci_mutants()
        orig = ast.parse("def f__mutmut_orig(x):\n    y = x+1   # one more\n    return y\n").body[0]
        mutant = ast.parse("def f__mutmut_3(x):\n    y = x - 1\n    return y\n").body[0]
        assert ci.changed_lines(orig, mutant) == "y = x - 1"
        two = ast.parse("def f__mutmut_4(x):\n    y = x + 2\n    return None\n").body[0]
        assert ci.changed_lines(orig, two) == "y = x + 2 / return None"

    def test_an_entry_counts_only_while_its_mutant_changes_the_pinned_line(self, monkeypatch):
        ci = _ci_mutants()
        monkeypatch.setattr(ci, "_CHANGED", {"m.f__mutmut_3": "y = x - 1", "m.f__mutmut_4": "return None"})
        equivalent = ci.load_equivalents('"m.f__mutmut_3" = {reason = "r", line = "y = x - 1"}\n'
                                         '"m.f__mutmut_4" = {reason = "renumbered", line = "y = x * 1"}\n'
                                         '"m.gone__mutmut_1" = {reason = "r", line = "z = 1"}\n'
                                         '"m.f__mutmut_5" = {reason = "not looked at again", line = ""}\n')
        valid, stale = ci.pinned(equivalent, [])
        assert valid == {"m.f__mutmut_3"}
        assert dict(stale) == {"m.f__mutmut_4": "now changes: return None", "m.gone__mutmut_1": "no longer exists",
                               "m.f__mutmut_5": "no longer exists"}

    def test_an_entry_without_its_line_is_refused(self):
        ci = _ci_mutants()
        with pytest.raises(SystemExit, match="needs a table with `reason` and `line`"):
            ci.load_equivalents('"m.f__mutmut_3" = "a reason alone"\n')

    def test_the_projects_equivalents_all_read(self):
        ci = _ci_mutants()
        entries = ci.load_equivalents((ROOT / ".ci" / "mutants-equivalent.toml").read_text())
        assert entries and all(reason.strip() for reason, _ in entries.values())
