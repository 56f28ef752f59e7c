"""Shared test configuration: one BLAS thread, deterministic hypothesis profiles, and the hooks of a mutation run
(its judging test sets, and the calls of shared fixtures credited to every test that uses them).

``HYPOTHESIS_PROFILE=ci`` (the default) runs a fixed, derandomised set of 40
examples per property so CI is reproducible and fast; ``HYPOTHESIS_PROFILE=dev``
explores 200 random examples per property for local bug hunting.
"""

import os

# One BLAS thread for the whole test run (ours): results are bit-reproducible for a given thread
# setting only, and on a 2-core machine numpy's default threads oversubscribe the cores as soon as
# a test starts worker processes. The environment reaches the processes tests start; threadpoolctl
# limits this process, whose BLAS may already be loaded (a plugin imported numpy).
os.environ.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

_BLAS_LIMIT = threadpool_limits(1, user_api="blas")

from hypothesis import HealthCheck, settings  # noqa: E402

# The test classes hold no state, so a test method called on two instances is the same test: hypothesis's
# differing-executors check misfires when a runner (mutmut) runs two pytest sessions in one process, where the
# second session calls the first session's test functions on new instances.
_QUIET = [HealthCheck.differing_executors]
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40, print_blob=True,
                          suppress_health_check=_QUIET)
settings.register_profile("dev", deadline=None, max_examples=200, print_blob=True, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _skip_torch_doctests(items):
    """Without the torch extra, the docstring examples that use torch are skipped with that reason."""
    import importlib.util
    import re

    if importlib.util.find_spec("torch") is not None:
        return
    mark = pytest.mark.skip(reason="the example uses torch; install the torch extra")
    for item in items:
        dtest = getattr(item, "dtest", None)
        if dtest is not None and any(re.search(r"\btorch\b", ex.source) for ex in dtest.examples):
            item.add_marker(mark)


def pytest_collection_modifyitems(config, items):
    """Under a mutation run (``.ci/mutants``), keep only the tests ``.ci/mutants.toml`` names for the module.

    mutmut runs each mutant against every fast-tier test that calls its function; for a module with a ``tests``
    set, the tests outside it are deselected, so that a mutant of a phase is judged by the tests of the learner
    and its phases rather than by the studies built on them (minutes per surviving mutant). Deselecting can only
    let more mutants survive, never kill one. Outside a mutation run only the examples that need torch are
    skipped when it is missing.
    """
    _skip_torch_doctests(items)
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if "__mutmut_" not in mutant:
        return
    import fnmatch
    import tomllib

    table = config.rootpath / ".ci" / "mutants.toml"
    if not table.is_file():
        return
    path = mutant.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[0].replace(".", "/") + ".py"
    table = tomllib.loads(table.read_text())
    entry = next((e for e in table["module"] if e["path"] == path), None)
    if entry is None or "tests" not in entry:
        return
    patterns = table["test_sets"][entry["tests"]]
    take = [p for p in patterns if not p.startswith("!")]
    leave = [p[1:] for p in patterns if p.startswith("!")]
    keep, drop = [], []
    for item in items:
        names = (item.nodeid.split("::", 1)[0], item.nodeid)  # a pattern names a test file or a test
        chosen = any(fnmatch.fnmatchcase(name, p) for name in names for p in take)
        chosen = chosen and not any(fnmatch.fnmatchcase(name, p) for name in names for p in leave)
        (keep if chosen else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# mutmut maps each function to the tests that call it by clearing its record of calls at the end of every test.
# A module- or class-scoped fixture is set up once, inside the first test that asks for it, so the functions it
# calls are credited to that test alone; the other tests that read the fixture's result would never judge a
# mutant of those functions, and a mutant they catch would be counted as a survivor. During mutmut's stats run
# these two hooks credit a shared fixture's calls to every test that uses it.
_SHARED_FIXTURE_CALLS = {}  # FixtureDef -> the functions mutmut recorded while it was set up


def _mutmut_stats_state():
    """mutmut's state while it collects which tests call which function; None otherwise."""
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return None
    from mutmut.state import state

    return state()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    recorder = _mutmut_stats_state()
    if recorder is None or fixturedef.scope == "function":
        return (yield)
    outer, recorder._stats = recorder._stats, set()
    try:
        return (yield)
    finally:
        _SHARED_FIXTURE_CALLS[fixturedef] = set(recorder._stats)
        recorder._stats = outer | recorder._stats


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    recorder = _mutmut_stats_state()
    if recorder is None:
        return
    used = [fixturedef for defs in item._fixtureinfo.name2fixturedefs.values() for fixturedef in defs]
    # and the fixtures a test asks for by name in its body (request.getfixturevalue), which its signature does not
    # list: pytest keeps every fixture a test's request resolved in the request's _fixture_defs
    used += getattr(getattr(item, "_request", None), "_fixture_defs", {}).values()
    for fixturedef in used:
        recorder._stats |= _SHARED_FIXTURE_CALLS.get(fixturedef, set())


# A mutant can make a test loop: a phase that never certifies a row draws its whole example budget. mutmut stops a
# mutant only when its tests together overrun their clean time (three times over; for a phase's mutant that is
# minutes, during which a core judges nothing else). Under a mutant, one test that runs more than
# MUTANT_TEST_FACTOR times its clean time plus MUTANT_TEST_SLACK seconds is stopped at once the way mutmut stops a
# mutant, by SIGXCPU, so that mutmut records the same verdict: a timeout, which counts as caught.
MUTANT_TEST_FACTOR = 10.0  # ours: a loaded machine runs a test 2-3 times slower; a loop runs it without end
MUTANT_TEST_SLACK = 5.0  # ours, seconds: start-up of a test whose clean run is too short to scale (imports, a pool)


def _mutmut_durations():
    from mutmut.state import state

    return state().duration_by_test


def _clean_seconds(nodeid):
    """The test's clean run time in mutmut's record, under a mutant; None otherwise (or when not recorded)."""
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return None
    return _mutmut_durations().get(nodeid)


def _stop_as_timeout():
    import signal

    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGXCPU)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    clean = _clean_seconds(item.nodeid)
    if clean is None:
        return (yield)
    import signal

    old = signal.signal(signal.SIGALRM, lambda signum, frame: _stop_as_timeout())
    signal.setitimer(signal.ITIMER_REAL, MUTANT_TEST_FACTOR * clean + MUTANT_TEST_SLACK)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True)
def _pool_from_the_first_batch(monkeypatch):
    """``learn`` computes a run's first ``POOL_FROM_EXAMPLES`` examples in its own process and starts its local pool
    only after them (small runs never start it). The tests' runs are small: here the pool starts at the first
    batch, as in a large run, so that the tests of workers test workers. The rule itself is tested with the
    threshold set explicitly (``tests/learner/test_parallel.py::TestPoolFrom``)."""
    import sys

    import learner  # noqa: F401  (learner.learn, the module, is in sys.modules from here on)

    monkeypatch.setattr(sys.modules["learner.learn"], "POOL_FROM_EXAMPLES", 0)


@pytest.fixture(scope="session")
def large_logit_case():
    """Hand-made heads with logits beyond exp's range, and their exact patterns: ``x`` (4 tokens of ±1 in
    dimension 3), ``thetas``, ``ws`` and ``patterns`` (three heads).

    Each Θ_i is ±1000 times a 0/1 matrix, so every logit is an integer of size 1000 to 3000 (exp overflows above
    709.8 and gives 0 below −745.1): a softmax that does not subtract its row maximum returns inf/inf or 0/0 here.
    Row by row the logits tie or fall at least 2000 below the row maximum, and exp(−2000) is exactly 0 in float64,
    so the weights are exactly 0, 1/4, 1/2 or 1 and every backend must give them to the bit.
    """
    from types import SimpleNamespace

    import numpy as np

    return SimpleNamespace(
        x=np.array([[1.0, 1.0, -1.0], [1.0, 1.0, 1.0], [-1.0, 1.0, 1.0], [-1.0, 1.0, -1.0]]),
        thetas=np.array([
            1000.0 * np.eye(3),  # x_a·x_a = 3 and x_a·x_b <= 1 (a ≠ b): each token attends to itself alone
            1000.0 * np.diag([1.0, 0.0, 0.0]),  # logit 1000·x_a[0]·x_b[0]: ties at +1000 between same-sign tokens
            -1000.0 * np.diag([0.0, 1.0, 0.0]),  # x_b[1] = 1 for every token: all logits tie at −1000
        ]),
        patterns=np.array([
            np.eye(4),
            [[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]],
            np.full((4, 4), 0.25),
        ]),
        ws=np.array([np.eye(3), [[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]], 3.0 * np.eye(3)]),
    )
