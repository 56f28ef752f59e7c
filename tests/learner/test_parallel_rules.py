"""The worker pool's small rules, run in this process: which OpenBLAS thread calls are found, what a worker's
initializer sets up, and when a worker whose parent is gone ends itself.

A worker's initializer runs in the worker, where the test process cannot watch it; here its pieces are called
directly, with the thread, the clock and the exit replaced by recorders, so a wrong rule fails a test in this
process. The answers are written from the rules (a pair per library, the parent's pid compared), not read from the
code.
"""

from __future__ import annotations

import ctypes
import os
import signal

import numpy as np  # noqa: F401  (loads numpy's OpenBLAS, which the first test looks for)
import pytest

from learner import parallel


def _openblas_paths():
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "openblas" in line.split()[-1].lower()})


class TestOpenblasCalls:
    @pytest.fixture(autouse=True)
    def _linux(self):
        if not os.path.exists("/proc/self/maps"):
            pytest.skip("reads /proc/self/maps, which only Linux has")

    def test_one_working_pair_per_openblas_loaded(self):
        import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS, where the wheels ship one)

        paths = _openblas_paths()
        if not paths:
            pytest.skip("this numpy is not linked to OpenBLAS")
        calls = parallel._openblas_thread_calls()
        assert isinstance(calls, list) and len(calls) == len(paths)
        for get, put in calls:
            before = get()
            try:
                put(1)
                assert get() == 1
            finally:
                put(before)

    class _Lib:
        """A library holding the named functions only."""

        def __init__(self, *names):
            for name in names:
                setattr(self, name, lambda: 1)

    @pytest.mark.parametrize("prefix, suffix", [("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")])
    def test_each_naming_of_the_calls_is_found(self, monkeypatch, prefix, suffix):
        get, put = f"{prefix}openblas_get_num_threads{suffix}", f"{prefix}openblas_set_num_threads{suffix}"
        monkeypatch.setattr(ctypes, "CDLL", lambda path: self._Lib(get, put))
        monkeypatch.setattr("builtins.open", _fake_maps(["/lib/libopenblas.so"]))
        calls = parallel._openblas_thread_calls()
        assert len(calls) == 1

    def test_a_library_with_only_one_of_the_two_calls_gives_none(self, monkeypatch):
        monkeypatch.setattr(ctypes, "CDLL", lambda path: self._Lib("openblas_get_num_threads"))
        monkeypatch.setattr("builtins.open", _fake_maps(["/lib/libopenblas.so"]))
        assert parallel._openblas_thread_calls() == []
        monkeypatch.setattr(ctypes, "CDLL", lambda path: self._Lib("openblas_set_num_threads"))
        assert parallel._openblas_thread_calls() == []

    def test_the_first_naming_wins_and_a_library_that_does_not_load_is_passed_over(self, monkeypatch):
        def load(path):
            if path.endswith("a-libopenblas.so"):
                raise OSError("cannot load")
            return self._Lib("openblas_get_num_threads", "openblas_set_num_threads",
                             "openblas_get_num_threads64_", "openblas_set_num_threads64_")

        monkeypatch.setattr(ctypes, "CDLL", load)
        monkeypatch.setattr("builtins.open", _fake_maps(["/lib/a-libopenblas.so", "/lib/b-libopenblas.so"]))
        calls = parallel._openblas_thread_calls()
        assert len(calls) == 1  # b's, once, though it has two namings


def _fake_maps(paths):
    """``open`` that serves ``/proc/self/maps`` listing ``paths`` (and a line of another library)."""
    import builtins
    import io

    real = builtins.open
    lines = [f"7f00-7f01 r-xp 00000000 08:01 {i} {p}\n" for i, p in enumerate(paths)]
    lines.append("7f02-7f03 r-xp 00000000 08:01 99 /lib/libc.so.6\n")

    def fake(file, *args, **kwargs):
        if file == "/proc/self/maps":
            return io.StringIO("".join(lines))
        return real(file, *args, **kwargs)

    return fake


class TestWorkerStart:
    def test_ignore_sigint_ignores_ctrl_c(self):
        before = signal.getsignal(signal.SIGINT)
        try:
            parallel.ignore_sigint()
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        finally:
            signal.signal(signal.SIGINT, before)

    def test_init_worker_ignores_ctrl_c_and_watches_its_parent_from_a_daemon_thread(self, monkeypatch):
        started = []

        class Thread:
            def __init__(self, target, args, daemon, name):
                started.append((target, args, daemon, name))

            def start(self):
                started.append("started")

        import threading

        monkeypatch.setattr(threading, "Thread", Thread)
        before = signal.getsignal(signal.SIGINT)
        try:
            parallel.init_worker(4321)
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        finally:
            signal.signal(signal.SIGINT, before)
        assert started == [(parallel._exit_with_parent, (4321,), True, "exit-with-parent"), "started"]


class _Exit(Exception):
    pass


class TestExitWithParent:
    def test_exits_with_status_0_once_re_parented_and_not_before(self, monkeypatch):
        parents = iter([100, 100, 100, 1])  # the parent (pid 100) dies after three checks: init adopts the worker
        naps, exits = [], []
        monkeypatch.setattr(parallel.time, "sleep", naps.append)
        monkeypatch.setattr(os, "getppid", lambda: next(parents))

        def leave(status):
            exits.append(status)
            raise _Exit

        monkeypatch.setattr(os, "_exit", leave)
        with pytest.raises(_Exit):
            parallel._exit_with_parent(100)
        assert exits == [0] and naps == [parallel.PARENT_CHECK_SECONDS] * 4


class _Client:
    """A Dask client's surface that Workers uses."""

    def __init__(self):
        self.closed = 0

    def submit(self, *a, **k):  # pragma: no cover - never called here
        raise AssertionError

    def scheduler_info(self):
        return {"workers": {"a": {}, "b": {}}}

    def close(self):
        self.closed += 1


class TestWorkersKill:
    @pytest.mark.parametrize("end", ["kill", "close"])
    def test_a_client_it_opened_is_closed_once_and_one_it_was_given_is_left_open(self, monkeypatch, end):
        opened = _Client()
        monkeypatch.setattr(parallel, "connect_client", lambda address, name="scheduler": opened)
        own = parallel.Workers(scheduler="tcp://example:8786")
        own._ensure()
        assert own.workers == 2
        getattr(own, end)()
        getattr(own, end)()  # idempotent
        assert opened.closed == 1

        given = _Client()
        theirs = parallel.Workers(scheduler=given)
        theirs._ensure()
        getattr(theirs, end)()
        assert given.closed == 0


def _worker_facts():
    """What a local-pool worker runs with (called in the worker)."""
    import threading

    return (sorted(t.name for t in threading.enumerate()), os.environ.get("OMP_NUM_THREADS"),
            os.environ.get("OPENBLAS_NUM_THREADS"), signal.getsignal(signal.SIGINT) == signal.SIG_IGN)


class TestALocalPool:
    def test_its_size_threads_environment_and_ctrl_c(self):
        """Three workers (not the machine's core count), each watching its parent, with one BLAS thread and Ctrl-C
        ignored."""
        pool = parallel.local_pool(3)
        try:
            facts = [pool.submit(_worker_facts).result(timeout=120) for _ in range(3)]
            assert len(parallel.pool_pids(pool)) == 3
        finally:
            parallel.kill_pool(pool)
        for threads, omp, openblas, ignored in facts:
            assert "exit-with-parent" in threads and (omp, openblas, ignored) == ("1", "1", True)

    def test_workers_started_later_get_the_worker_environment_too(self, monkeypatch):
        """loky starts a worker again outside local_pool's environment block (after a worker's idle exit or loss):
        the pool itself must carry WORKER_ENV for those (loky's ``env``), not only the environment of its start."""
        import loky

        seen = {}

        class Spy(loky.ProcessPoolExecutor):
            def __init__(self, *args, **kwargs):
                seen.update(kwargs)
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(loky, "ProcessPoolExecutor", Spy)
        parallel.kill_pool(parallel.local_pool(1))
        assert seen["env"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

    def test_workers_sizes_its_pool_from_its_own_count(self):
        with parallel.Workers(3) as pool:
            pool._ensure()
            assert len(pool.pids()) == 3


class _Ahead(parallel.Workers):
    """A pool that forms batches ahead as a local pool of two workers does (a window of 2 × AHEAD_PER_WORKER) and
    computes them here."""

    def __init__(self):
        super().__init__(None)
        self.backend, self.workers = "in-process, ahead", 2

    def _ensure(self):
        pass

    def _submit(self, fn, args):
        return parallel._Done(fn(*args))


class _FailsOnce:
    """Tasks: batch 1 of 5 examples, an error forming batch 2, then further batches to whoever asks."""

    def __init__(self):
        self.asked = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.asked += 1
        if self.asked == 2:
            raise ValueError("batch 2 cannot be formed")
        return ((-self.asked,), 5)


def test_available_cores_without_cpu_affinity_is_the_cpu_count(monkeypatch):
    """Where the OS reports no CPU affinity (macOS has no ``os.sched_getaffinity``), the cores are the CPU count,
    and one where that is unknown too; control: with an affinity of one core, one."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert parallel.available_cores() == 1
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 7)
    assert parallel.available_cores() == 7
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert parallel.available_cores() == 1


def test_a_pool_not_started_says_so_with_a_bool():
    """``pool_started`` is a bool from the start (JSON false in a run's record, which the report's sentence reads
    with ``is False``), and True once the local pool starts."""
    pool = parallel.Workers(2)
    assert pool.pool_started is False and parallel.Workers().pool_started is False


class TestOrderedStats:
    """What ``Workers.ordered`` adds to ``stats`` per label, against counts and a clock read here."""

    def test_a_batch_that_cannot_be_formed_ends_the_stream_in_its_turn(self):
        pool, tasks = _Ahead(), _FailsOnce()
        stream = pool.ordered("x", abs, tasks)
        assert next(stream) == 1  # the batch before it arrives first
        with pytest.raises(ValueError, match="batch 2 cannot be formed"):
            next(stream)
        assert tasks.asked == 2  # nothing after the failure was formed, though the window had room

    def test_an_exhausted_stream_is_not_asked_again(self):
        # Three batches, then StopIteration: the window (4) asks once past the end and never again, however many
        # batches are still to be handed out.
        asked = []

        def tasks():
            for i in range(3):
                asked.append(i)
                yield (-i,), 1
            asked.append("end")

        class Counting:
            def __init__(self):
                self.calls, self.inner = 0, tasks()

            def __iter__(self):
                return self

            def __next__(self):
                self.calls += 1
                return next(self.inner)

        stream = Counting()
        assert list(_Ahead().ordered("x", abs, stream)) == [0, 1, 2]
        assert stream.calls == 4 and asked == [0, 1, 2, "end"]

    def test_a_failed_batch_left_in_flight_counts_no_examples_ahead(self):
        import contextlib

        pool, tasks = _Ahead(), _FailsOnce()
        with contextlib.closing(pool.ordered("x", abs, tasks)) as stream:
            assert next(stream) == 1
        stats = pool.stats["x"]
        assert (stats["batches"], stats["examples"], stats["examples_ahead"]) == (1, 5, 0) and tasks.asked == 2

    def test_batches_left_in_flight_add_up_ahead(self):
        # A window of 2 × AHEAD_PER_WORKER batches of sizes 1, 2, 3, ...: stopping after the first merged batch leaves
        # the next window − 1 in flight, their sizes summed (each batch's, not the last one's alone).
        import contextlib
        import itertools

        pool = _Ahead()
        window = parallel.AHEAD_PER_WORKER * pool.workers
        with contextlib.closing(pool.ordered("x", abs, (((-i,), i) for i in itertools.count(1)))) as stream:
            assert next(stream) == 1
        assert window >= 3 and pool.stats["x"]["examples_ahead"] == sum(range(2, window + 1))

    def test_seconds_add_up_over_calls(self, monkeypatch):
        # A clock that moves 10 s per reading: each call reads it twice (start and end), so two calls count 20 s.
        clock = iter(range(0, 1000, 10))
        monkeypatch.setattr(parallel.time, "perf_counter", lambda: float(next(clock)))
        pool = parallel.Workers()
        assert list(pool.ordered("x", abs, [((-2,), 3)])) == [2]
        assert list(pool.ordered("x", abs, [((-1,), 2)])) == [1]
        assert pool.stats["x"]["seconds"] == 20.0

    def test_calls_add_up_and_seconds_are_the_time_spent(self):
        import time

        pool = parallel.Workers()
        t0 = time.perf_counter()
        assert list(pool.ordered("x", abs, [((-2,), 3), ((-5,), 4)])) == [2, 5]
        assert list(pool.ordered("x", abs, [((-1,), 2)])) == [1]
        wall = time.perf_counter() - t0
        stats = pool.stats["x"]
        assert (stats["calls"], stats["batches"], stats["examples"]) == (2, 3, 9)
        assert 0.0 <= stats["seconds"] <= wall  # from zero: no time is counted that was not spent


class TestDaskClientOfWorkers:
    """What ``Workers`` takes from a scheduler: the address it connects to, the count of workers it reports."""

    class _Client:
        def __init__(self, count):
            self.count = count

        def scheduler_info(self):
            return {"workers": {f"w{i}": {} for i in range(self.count)}}

        def submit(self, *args, **kwargs):  # what marks a client; no batch is submitted here
            raise AssertionError("nothing is submitted in these tests")

    def test_the_address_given_is_the_one_connected_to(self, monkeypatch):
        seen = []
        monkeypatch.setattr(parallel, "connect_client", lambda address: seen.append(address) or self._Client(2))
        pool = parallel.Workers(scheduler="tcp://scheduler.example:8786")
        pool._ensure()
        assert seen == ["tcp://scheduler.example:8786"] and pool.workers == 2

    @pytest.mark.parametrize("count, workers", [(0, 1), (1, 1), (3, 3)])
    def test_the_workers_counted_are_the_clusters_with_one_at_least(self, count, workers):
        pool = parallel.Workers(scheduler=self._Client(count))
        pool._ensure()
        assert pool.workers == workers
