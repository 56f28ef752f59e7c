"""Workers for one learning run: batches of examples drawn and reduced in parallel, merged in a fixed order.

The example-hungry phases of :func:`learner.learn` (the sum of phase 1, the
certification of phases 2 and 4) are streams of independent batches: batch
``b`` is drawn from its own seed (:meth:`learner.oracle.LayerOracle.batches`),
reduced where it was drawn (a ``d × d`` partial sum, or the constraint rows of
the rows it certifies — never the examples themselves), and the reductions are
merged in the order ``b = 0, 1, 2, …``. The merge stops where a serial run
would stop, so the result is bit-identical whatever the number of workers and
whatever order batches finish in; batches computed ahead of the stopping point
are discarded and counted separately (``Workers.stats``), never as drawn
examples. All of this is ours; the paper's learner is sequential.

Backends: ``"serial"`` (this process, no batch computed ahead), ``"local"`` (a
pool of loky processes (fork + exec; no re-import of ``__main__``) with one BLAS thread each) and ``"dask"`` (a
``dask.distributed`` cluster: a scheduler address, or a ``Client`` the caller
owns). Local workers ignore Ctrl-C; the parent stops them (:meth:`Workers.kill`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from typing import Any

from .errors import MissingExtra
from .validation import check_int

log = logging.getLogger(__name__)
#: The worker counts already warned about in this process (a run asks for its pool more than once).
_WARNED: set[tuple[int, int]] = set()

__all__ = ["DEFAULT_POOL", "INTERRUPT_POLL_SECONDS", "POOL_FROM_EXAMPLES", "SCHEDULER_CONNECT_TIMEOUT", "WORKER_ENV",
           "DeferredInterrupt", "Workers", "as_workers", "available_cores", "pool_size",
           "blas_threads", "check_scheduler", "connect_client", "dask_client_class", "interrupt_on_sigterm",
           "interrupts_deferred", "kill_pool", "kill_live_pools", "race_reports_dropped", "set_ctrl_c",
           "sigint_ignored", "wait_one", "worker_env"]

#: Seconds to wait for a Dask scheduler before giving up with a ConnectionError naming its address (ours: fail
#: fast on a wrong address; not tuned).
SCHEDULER_CONNECT_TIMEOUT = 10.0
#: The environment of local-pool workers: one BLAS thread each (what Dask's nanny sets for its workers).
WORKER_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
#: Batches in flight per worker: two keeps every worker busy while the parent merges (ours).
AHEAD_PER_WORKER = 2
#: The examples :func:`learner.learn` computes in its own process before it starts a local pool (ours): starting the
#: pool and shipping batches costs more than it saves on a small run. Measured on a 2-core machine against one process
#: and against thresholds of 0 and 200,000 (``docs/sweeps/pool-threshold/``; the table is in the guide's page on
#: parallel runs): a pool from the first batch cost about 1 s at 89,000 and 139,000 examples, and 400,000 was the
#: fastest of the settings at 369,000 and 609,000. Below this many examples a run never starts its pool; above it,
#: the pool takes over from the next batch. The result does not depend on where a batch is computed.
POOL_FROM_EXAMPLES = 400_000


def _openblas_thread_calls():
    """``(get, set)`` pairs of every OpenBLAS loaded in this process (numpy's and scipy's may differ), via ctypes."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.split()[-1].lower()})
    except OSError:
        return []
    calls = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                calls.append((get, put))
                break
    return calls


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[str]:
    """Limit the BLAS to ``n`` threads inside the block, best effort; yields what was set, for the output.

    Uses threadpoolctl when installed, else OpenBLAS's own calls on every OpenBLAS loaded
    (numpy's and scipy's); otherwise nothing is changed and the description names the
    environment's setting. Results are bit-reproducible for a given thread setting only (a
    multithreaded LAPACK call may sum in another order), so every run of a sweep, whatever its
    backend, and every worker of a parallel learn, computes with one thread.

    Parameters
    ----------
    n : int
        BLAS threads inside the block (at least 1).

    Yields
    ------
    str
        What was set, in words for a record (``"1 BLAS thread (threadpoolctl)"``), or why nothing was.

    Examples
    --------
    >>> with blas_threads(1) as what:
    ...     print(what)
    1 BLAS thread (threadpoolctl)
    """
    n = check_int("n", n)
    plural = "" if n == 1 else "s"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(n, user_api="blas"):
            yield f"{n} BLAS thread{plural} (threadpoolctl)"
        return
    calls = _openblas_thread_calls()
    if not calls:
        env = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
        yield (f"BLAS threads not set here (OPENBLAS_NUM_THREADS={env}); "
               f"run with OPENBLAS_NUM_THREADS={n} for {n}-thread figures")
        return
    before = [int(get()) for get, _ in calls]
    for _, put in calls:
        put(n)
    try:
        yield f"{n} BLAS thread{plural} (OpenBLAS, set for the run)"
    finally:
        for (_, put), b in zip(calls, before, strict=True):
            put(b)


#: What the command lines' ``--workers`` and :func:`learner.sweep.engine.run_sweep`'s ``workers=None`` mean: a
#: local pool of every core this process may run on (:func:`pool_size`). Library calls that compute one run
#: (:func:`learner.learn`, the phases) default instead to this process alone (``workers=None``): a library
#: starts processes only when asked, a command uses the machine it was given.
DEFAULT_POOL = "auto"


def pool_size(workers: int | str | None = DEFAULT_POOL) -> int:
    """The number of local processes ``workers`` asks for: ``None`` or ``"auto"`` is :func:`available_cores`;
    otherwise a positive integer (a named error for anything else).

    A WARNING is logged (once per count and core count in a process) when the count exceeds the cores.

    Parameters
    ----------
    workers : int, "auto" or None
        The request.

    Returns
    -------
    int
        The number of processes, at least 1.

    Raises
    ------
    TypeError, ValueError
        For anything but None, ``"auto"`` or a positive integer, naming ``workers``.
    """
    if workers is None or workers == "auto":
        return available_cores()
    n = check_int("workers", workers)
    cores = available_cores()
    if n > cores and (n, cores) not in _WARNED:
        _WARNED.add((n, cores))
        log.warning("%d workers on %d core(s): the processes will take turns on the cores, and a CPU-bound run gets "
                    "slower, not faster; give at most %d, or 'auto'.", n, cores, cores)
    return n


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports it).

    Returns
    -------
    int
        The size of the CPU affinity set; ``os.cpu_count()`` where the OS has none (1 if unknown).
    """
    with contextlib.suppress(AttributeError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextlib.contextmanager
def worker_env() -> Iterator[None]:
    """Set :data:`WORKER_ENV` while processes are spawned (they inherit it), then restore.

    Yields
    ------
    None
        Inside the block the environment holds :data:`WORKER_ENV`; on exit each variable is restored (or
        removed where it was unset).
    """
    saved = {key: os.environ.get(key) for key in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ignore_sigint() -> None:
    """Initializer of local-pool workers: Ctrl-C at a terminal reaches the whole process group, and
    only the parent should act on it (it stops the workers itself)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: Seconds between a local worker's checks that the process that started it is still there (ours: an orphaned
#: worker exits within about a second; not tuned).
PARENT_CHECK_SECONDS = 1.0


def _exit_with_parent(parent_pid):
    while True:
        time.sleep(PARENT_CHECK_SECONDS)
        if os.getppid() != parent_pid:  # re-parented: the run's process is gone (e.g. killed with SIGKILL)
            os._exit(0)


def init_worker(parent_pid: int) -> None:
    """Initializer of local-pool workers: Ctrl-C ignored (:func:`ignore_sigint`), and the worker ends
    itself within :data:`PARENT_CHECK_SECONDS` of its parent's death — a parent killed outright
    (SIGKILL, the OOM killer) cannot stop its workers, and loky's idle workers would otherwise
    outlive it (measured: orphans still alive 14 min later)."""
    import threading

    ignore_sigint()
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True, name="exit-with-parent").start()


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def interrupt_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt in the main thread, as Ctrl-C does.

    A batch scheduler or ``kill`` then stops a command's workers and keeps its finished runs, rather than
    ending the process and leaving the pool's processes behind. For command lines; libraries never call it.
    """
    import signal

    signal.signal(signal.SIGTERM, _raise_interrupt)


#: CPython's report of a Ctrl-C that arrived while the SIGINT handler was being replaced by SIG_IGN: it finds no
#: Python handler left to call and writes this as an "Exception ignored" traceback (measured on 2 cores: one in 10⁴-10⁵
#: handler changes while signals stream in).
_RACE_REPORT = "ignored due to race condition"


@contextlib.contextmanager
def race_reports_dropped() -> Iterator[None]:
    """Drop CPython's report of a SIGINT that found its handler just changed to SIG_IGN; pass every other
    unraisable exception on to ``sys.unraisablehook``, which is restored on exit.

    Yields
    ------
    None
    """
    import signal
    import sys

    hook = sys.unraisablehook
    race = f"Signal {int(signal.SIGINT)} {_RACE_REPORT}"

    def drop_the_race_report(unraisable):
        if not (isinstance(unraisable.exc_value, OSError) and str(unraisable.exc_value) == race):
            hook(unraisable)

    sys.unraisablehook = drop_the_race_report
    try:
        yield
    finally:
        sys.unraisablehook = hook


def set_ctrl_c(handler: Any) -> Any:
    """``signal.signal(SIGINT, handler)`` without CPython's traceback for a Ctrl-C caught mid-change.

    CPython runs pending signal handlers before it changes one; a Ctrl-C that lands between that check and the
    change to ``SIG_IGN`` is reported, at the next check, as an unraisable ``OSError("Signal 2 ignored due to
    race condition")`` with its traceback — on a terminal, after a user pressed Ctrl-C at a command that is
    ending. The Ctrl-C was meant to be ignored, so that report (and only it) is dropped: the pending signals are
    run at once, inside this call, under :func:`race_reports_dropped`.

    Parameters
    ----------
    handler : callable, signal.SIG_IGN or signal.SIG_DFL
        The new SIGINT handler.

    Returns
    -------
    object
        The previous handler, as ``signal.signal`` returns it.
    """
    import signal

    with race_reports_dropped():
        saved = signal.signal(signal.SIGINT, handler)
        if hasattr(signal, "pthread_sigmask"):  # POSIX
            signal.pthread_sigmask(signal.SIG_BLOCK, [])  # changes no mask; runs the pending handlers now
    return saved


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while processes are started: they inherit the disposition, and Python keeps an ignored
    SIGINT ignored, so a Ctrl-C while a worker is still importing cannot print its traceback (the
    initializer alone comes too late for that). Only the main thread may change signal handlers.

    Yields
    ------
    None
        Inside the block SIGINT is ignored (in the main thread; elsewhere nothing changes); the previous
        handler is restored on exit.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = set_ctrl_c(signal.SIG_IGN)
    try:
        yield
    finally:
        set_ctrl_c(saved)


#: Seconds between a waiting command's checks for a deferred Ctrl-C (:func:`interrupts_deferred`): a Ctrl-C is acted
#: on within about this long (ours; not tuned).
INTERRUPT_POLL_SECONDS = 0.1


class DeferredInterrupt:
    """A Ctrl-C (or a SIGTERM made to interrupt, :func:`interrupt_on_sigterm`) noted while
    :func:`interrupts_deferred` holds, and raised as ``KeyboardInterrupt`` only where the caller checks.

    Parameters
    ----------
    active : bool, default False
        Whether the signals are noted here (:func:`interrupts_deferred` makes an active guard where it installs one).

    Attributes
    ----------
    requested : bool
        Whether a signal arrived since the last :meth:`check`.
    active : bool
        Whether the signals are being noted here (False: the guard changes nothing, as outside the main thread).
    """

    def __init__(self, active: bool = False) -> None:
        self.requested = False
        self.active = active
        self._raising = False

    def _note(self, signum: int, frame: Any) -> None:
        if self._raising:  # inside interruptible(): the signal interrupts at once, as without the guard
            raise KeyboardInterrupt(f"signal {signum}")
        self.requested = True

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` here if a signal was noted (and forget it).

        Raises
        ------
        KeyboardInterrupt
            When ``requested`` is set.
        """
        if self.requested:
            self.requested = False
            raise KeyboardInterrupt("Ctrl-C")

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A section a signal interrupts at once (a computation in this process that may take minutes).

        Yields
        ------
        None

        Raises
        ------
        KeyboardInterrupt
            At entry, when a signal was noted before it.
        """
        self.check()
        saved, self._raising = self._raising, True
        try:
            yield
        finally:
            self._raising = saved


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[DeferredInterrupt]:
    """Hold Ctrl-C (and a SIGTERM made to interrupt) as a flag, acted on where the caller checks.

    A ``KeyboardInterrupt`` raised by the signal handler lands at any bytecode, including inside the standard
    library's ``with lock:`` right after the lock was taken and before the block that releases it; a future's lock
    left held that way blocks the pool's management thread for good, and the interpreter's exit waits on that
    thread. A command that waits on workers therefore notes the signal here and raises ``KeyboardInterrupt`` itself
    (:meth:`DeferredInterrupt.check`) between waits of :data:`INTERRUPT_POLL_SECONDS`.

    Only the main thread receives signals: elsewhere, or when Ctrl-C is not Python's default handler (ignored, as in
    a pool's worker, or a handler of the caller's own), nothing is changed and the guard never requests.

    Yields
    ------
    DeferredInterrupt
        The guard. A signal noted and not yet checked when the block ends without an exception is raised then.
    """
    import signal
    import threading

    guard = DeferredInterrupt()
    current = signal.getsignal(signal.SIGINT)
    guarded = getattr(current, "__func__", None) is DeferredInterrupt._note  # an outer guard's
    python_default = current is signal.default_int_handler or guarded
    if threading.current_thread() is not threading.main_thread() or not python_default:
        yield guard
        return
    guard.active = True
    term = signal.getsignal(signal.SIGTERM)
    saved = set_ctrl_c(guard._note)
    if term is _raise_interrupt:
        signal.signal(signal.SIGTERM, guard._note)
    try:
        yield guard
    finally:
        if term is _raise_interrupt:
            signal.signal(signal.SIGTERM, term)
        set_ctrl_c(saved)
    guard.check()  # reached only without an exception: a signal that came after the last check ends the command


def wait_one(future: Any, guard: DeferredInterrupt) -> Any:
    """``future.result()``, checking ``guard`` every :data:`INTERRUPT_POLL_SECONDS` (see :func:`interrupts_deferred`).

    Parameters
    ----------
    future : concurrent.futures.Future or dask.distributed.Future
        The result to wait for.
    guard : DeferredInterrupt
        Where a Ctrl-C is noted.

    Returns
    -------
    object
        The future's result (its exception is raised).
    """
    import concurrent.futures

    guard.check()
    if isinstance(future, concurrent.futures.Future):  # the local pools' (loky's futures are of this class)
        while not concurrent.futures.wait([future], timeout=INTERRUPT_POLL_SECONDS).done:
            guard.check()
    else:  # Dask's: `wait` bounds the computation only (a timeout on `result` would also bound the transfer)
        from distributed import wait

        while True:
            try:
                wait(future, timeout=INTERRUPT_POLL_SECONDS)
                break
            except TimeoutError:
                guard.check()
    return future.result()


def local_pool(workers: int) -> Executor:
    """A process pool of ``workers`` processes that ignore Ctrl-C, one BLAS thread each (loky's executor).

    loky (the executor joblib uses) starts its workers by fork + exec without re-running the
    caller's ``__main__``, so a plain script without an ``if __name__ == "__main__":`` guard, a
    script read from standard input and ``python -c`` all work; the standard library's spawned
    ``ProcessPoolExecutor`` re-imports ``__main__`` in every worker and fails in the first two.
    The processes are started here (one no-op task each), not on first use, so that they start with
    Ctrl-C ignored (:func:`sigint_ignored`).
    """
    from loky import ProcessPoolExecutor

    with worker_env(), sigint_ignored():
        pool = ProcessPoolExecutor(max_workers=workers, initializer=init_worker, initargs=(os.getpid(),),
                                   env=dict(WORKER_ENV))
        _LIVE_POOLS.add(pool)
        pool.submit(_noop)  # the first submit starts every process (fork + exec, in this call)
    return pool


#: The local pools started by :func:`local_pool` and not yet ended by :func:`kill_pool` (weakly held: a pool
#: shut down and dropped leaves the set by itself).
_LIVE_POOLS: weakref.WeakSet[Any] = weakref.WeakSet()


def kill_live_pools() -> int:
    """End every local pool still running (:func:`kill_pool` on each), with Ctrl-C ignored meanwhile.

    For a command line that is ending on Ctrl-C: a second Ctrl-C can cut a sweep's own clean-up short and
    leave a pool running, and the interpreter's exit would then wait on the pool's threads.

    Returns
    -------
    int
        The number of pools ended.
    """
    pools = list(_LIVE_POOLS)
    with sigint_ignored():
        for pool in pools:
            kill_pool(pool)
    return len(pools)


def _noop():
    return None


def pool_pids(pool: Executor) -> list[int]:
    """Process ids of a local pool's workers (for tests and diagnostics)."""
    return sorted(proc.pid for proc in (getattr(pool, "_processes", None) or {}).values())


def kill_pool(pool: Any) -> None:
    """End a local pool now: its processes are killed and reaped, pending work cancelled (a worker may be
    minutes into a task). ``_processes`` is the executor's own table (``shutdown`` clears it, so it is read
    first). loky's executor kills its workers itself (``shutdown(kill_workers=True)``); for the standard
    library's, the processes are killed here (Python >= 3.14 has ``kill_workers()``).

    Parameters
    ----------
    pool : concurrent.futures.Executor
        A loky or standard-library process pool. The call returns once each process is gone, or after about
        5 seconds in all.
    """
    procs = list((getattr(pool, "_processes", None) or {}).values())
    _LIVE_POOLS.discard(pool)
    from loky import ProcessPoolExecutor as LokyExecutor

    if isinstance(pool, LokyExecutor):
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.kill()
        pool.shutdown(wait=False, kill_workers=True)
    else:
        if hasattr(pool, "kill_workers"):
            pool.kill_workers()
        else:
            for proc in procs:
                with contextlib.suppress(Exception):
                    proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)
    # The executor's management thread may join (and close) a killed process at the same time, so our
    # join can fail at once while the process is still dying: wait until each one is gone.
    deadline = time.monotonic() + 5
    for proc in procs:
        while time.monotonic() < deadline:
            try:
                proc.join(timeout=0.05)
                if not proc.is_alive():
                    break
            except (ValueError, AssertionError):  # closed, or reaped by the executor: gone
                break


def dask_client_class() -> Any:
    """``dask.distributed.Client``, or :class:`MissingExtra` saying how to install it.

    Returns
    -------
    type
        The ``Client`` class.

    Raises
    ------
    MissingExtra
        If the ``distributed`` extra is not installed.
    """
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise MissingExtra("a Dask scheduler needs the optional extra `distributed`: "
                           "pip install -e '.[distributed]'") from exc
    return Client


def connect_client(scheduler: str, name: str = "scheduler") -> Any:
    """A ``dask.distributed.Client`` for the scheduler at address ``scheduler``, or a one-line ConnectionError
    naming it and ``name`` (the parameter, or the option typed).

    Parameters
    ----------
    scheduler : str
        The scheduler's address (``"tcp://host:8786"``).
    name : str, default "scheduler"
        The parameter or option that gave it, for the message.

    Returns
    -------
    dask.distributed.Client
        A client connected to it; the caller closes it.

    Raises
    ------
    ConnectionError
        If the scheduler is not reached within :data:`SCHEDULER_CONNECT_TIMEOUT` seconds.
    MissingExtra
        If the ``distributed`` extra is not installed.
    """
    Client = dask_client_class()
    try:
        return Client(scheduler, timeout=SCHEDULER_CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(
            f"could not reach the Dask scheduler at {scheduler!r} ({name}) within {SCHEDULER_CONNECT_TIMEOUT:g} s "
            f"({type(exc).__name__}); start one (`dask scheduler`) or run without it.") from None


def check_scheduler(scheduler: str, name: str = "scheduler") -> None:
    """Connect to the Dask scheduler at ``scheduler`` and disconnect: a command calls it before it claims or writes
    anything, so an unreachable address is one line (:func:`connect_client`'s ConnectionError) and costs nothing.

    Parameters
    ----------
    scheduler : str
        The scheduler's address.
    name : str, default "scheduler"
        The parameter or option that gave it, for the message.

    Raises
    ------
    ConnectionError
        If the scheduler cannot be reached.
    MissingExtra
        If the ``distributed`` extra is not installed.
    """
    connect_client(scheduler, name).close()


class _Exhausted:
    """A batch that could not be formed (a fixed set of examples ran out): raised when the merge reaches it."""

    def __init__(self, exc):
        self.exc = exc

    def result(self):
        raise self.exc


class _Done:
    """A batch computed in this process (the serial backend)."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class Workers:
    """Where the batches of one learning run are computed.

    Use as a context manager; :meth:`close` waits for nothing that is not
    needed (batches computed ahead are cancelled) and :meth:`kill` ends local
    workers at once (leaving the block by Ctrl-C kills them). The pool or the
    client is made at the first batch, not here.

    Parameters
    ----------
    workers : int, "auto" or None
        Local processes. ``None`` or 1 (without ``scheduler``) computes in this
        process; ``"auto"`` uses :func:`available_cores`.
    scheduler : str or dask.distributed.Client, optional
        A Dask scheduler's address (a client is opened and closed here) or a
        client the caller owns (left open). ``workers`` must then be None.
    pool_from : int, default 0
        Examples this process computes itself before a local pool starts (:data:`POOL_FROM_EXAMPLES` is
        :func:`learner.learn`'s); 0 starts the pool at the first batch. Ignored by the other backends.

    Attributes
    ----------
    backend : {"serial", "local", "dask"}
        Where the batches run.
    workers : int
        The processes that compute them (a Dask cluster's workers, counted at its first batch).
    stats : dict
        Per phase label: ``batches`` and ``examples`` merged, ``examples_ahead`` (computed ahead and
        discarded), ``seconds`` and ``calls``.
    merged : int
        Examples merged so far, over every phase label.
    pool_started : bool
        Whether the local pool has started (a local backend under ``pool_from`` examples never starts it).

    Examples
    --------
    >>> with Workers() as pool:  # serial: this process computes every batch
    ...     squares = list(pool.ordered("demo", lambda x: x * x, [((x,), 1) for x in range(4)]))
    >>> squares, pool.backend, pool.stats["demo"]["examples"]
    ([0, 1, 4, 9], 'serial', 4)
    """

    _pool: Executor | None  # the local pool, once started
    _client: Any  # the dask.distributed.Client, once connected

    def __init__(self, workers: int | str | None = None, scheduler: Any = None, pool_from: int = 0) -> None:
        if workers is not None:
            workers = pool_size(workers)
        if scheduler is not None and workers is not None:
            raise ValueError(f"give either `workers` (local processes) or `scheduler` (a Dask cluster), not both; "
                             f"got workers={workers}, scheduler={scheduler!r}.")
        if isinstance(scheduler, str) and not scheduler.strip():
            raise ValueError(f"`scheduler` must be a Dask scheduler's address (e.g. 'tcp://host:8786') or a "
                             f"dask.distributed.Client; got scheduler={scheduler!r}.")
        if scheduler is not None and not isinstance(scheduler, str) and not hasattr(scheduler, "submit"):
            raise TypeError(f"`scheduler` must be an address string or a dask.distributed.Client; "
                            f"got {type(scheduler).__name__}.")
        self.scheduler = scheduler
        self.backend = "dask" if scheduler is not None else "local" if (workers or 1) > 1 else "serial"
        self.workers = workers or 1
        self.pool_from = check_int("pool_from", pool_from, minimum=0)
        self.merged = 0  # examples merged so far, over every phase
        self.pool_started = False
        self._pool = self._client = None
        self._own_client = False
        self.stats: dict[str, dict[str, Any]] = {}

    # -- lifetime ---------------------------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, BaseException) and not issubclass(exc_type, Exception):
            self.kill()  # KeyboardInterrupt, SystemExit: do not wait for anything
        else:
            self.close()
        return False

    def _in_process(self):
        """Whether the next batch is computed here: a local backend whose pool has not started, below
        ``pool_from`` merged examples."""
        return self.backend == "local" and self._pool is None and self.merged < self.pool_from

    def _ensure(self):
        if self.backend == "local" and self._pool is None:
            self._pool = local_pool(self.workers)
            self.pool_started = True
        elif self.backend == "dask" and self._client is None:
            if isinstance(self.scheduler, str):
                self._client, self._own_client = connect_client(self.scheduler), True
            else:
                self._client = self.scheduler
            self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    def pids(self) -> list[int]:
        """Process ids of the local pool's workers (empty before the first batch and after close).

        Returns
        -------
        list of int
            The ids, sorted; empty for the serial and Dask backends.
        """
        return pool_pids(self._pool) if self._pool is not None else []

    def close(self) -> None:
        """Release the backend after a normal end (nothing is in flight then)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True)  # nothing is in flight after a normal end (ordered() cancels what was ahead)
        if self._client is not None:
            client, self._client = self._client, None
            if self._own_client:
                client.close()

    def kill(self) -> None:
        """End the workers now (idempotent): local processes are killed, Dask futures cancelled."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            kill_pool(pool)
        if self._client is not None:
            client, self._client = self._client, None
            if self._own_client:
                client.close()

    @property
    def info(self) -> dict[str, Any]:
        """JSON-ready description: backend, workers, and per-phase figures (examples/s)."""
        phases = {}
        for label, s in self.stats.items():
            rate = s["examples"] / s["seconds"] if s["seconds"] > 0 else None
            phases[label] = dict(s, examples_per_second=rate,
                                 examples_per_second_per_worker=None if rate is None else rate / self.workers)
        return {"backend": self.backend, "workers": self.workers, "phases": phases, "pool_from": self.pool_from,
                "pool_started": self.pool_started}

    # -- the ordered map -------------------------------------------------------------------------

    def ordered(self, label: str, fn: Callable[..., Any],
                tasks: Iterable[tuple[tuple[Any, ...], int]]) -> Iterator[Any]:
        """Yield ``fn(*args)`` for ``(args, size)`` in ``tasks``, in order, computing up to a few batches ahead.

        ``tasks`` is an iterator of argument tuples with the batch's number of
        examples (for the statistics); it may raise
        :class:`~learner.errors.ExamplesExhausted`, which is raised when the
        merge reaches that batch. Stop early by closing the generator
        (``contextlib.closing``): batches in flight are cancelled and counted
        as computed ahead, not as merged.

        Parameters
        ----------
        label : str
            The phase's label, the key of ``stats``.
        fn : callable
            The batch's computation; for local and Dask workers it must pickle (a module-level function).
        tasks : iterable of (tuple, int)
            ``(args, size)`` per batch, in the merge order; read lazily, at most
            ``AHEAD_PER_WORKER · workers`` batches ahead of the merge (one on the serial backend).

        Yields
        ------
        object
            ``fn(*args)`` of each batch, in the order of ``tasks``, whatever the order they finish in.
        """
        stats = self.stats.setdefault(label, {"batches": 0, "examples": 0, "examples_ahead": 0, "seconds": 0.0,
                                              "calls": 0})
        stats["calls"] += 1
        t0 = time.perf_counter()
        tasks = iter(tasks)
        inflight: list[tuple[Any, int]] = []  # (future-like, size)
        finished = False
        try:
            while True:
                here = self.backend == "serial" or self._in_process()
                if not here:
                    self._ensure()
                window = 1 if here else AHEAD_PER_WORKER * self.workers
                while not finished and len(inflight) < window:
                    try:
                        args, size = next(tasks)
                    except StopIteration:
                        finished = True
                        break
                    except Exception as exc:  # noqa: BLE001 — the batch that cannot be formed fails in its turn
                        inflight.append((_Exhausted(exc), 0))
                        finished = True
                        break
                    inflight.append((_Done(fn(*args)) if here else self._submit(fn, args), size))
                if not inflight:
                    return
                fut, size = inflight.pop(0)
                value = self._result(fut)
                stats["batches"] += 1
                stats["examples"] += size
                self.merged += size
                yield value
        finally:
            for fut, size in inflight:
                stats["examples_ahead"] += size
                with contextlib.suppress(Exception):
                    fut.cancel()
            stats["seconds"] += time.perf_counter() - t0

    def _result(self, fut):
        if isinstance(fut, (_Done, _Exhausted)):
            return fut.result()
        if self.backend != "dask":
            with interrupts_deferred() as guard:  # a Ctrl-C while waiting is raised here, not inside the future's lock
                return wait_one(fut, guard)
        import concurrent.futures

        try:
            with interrupts_deferred() as guard:
                return wait_one(fut, guard)
        except (concurrent.futures.CancelledError, OSError, TimeoutError) as exc:
            # A cluster that stopped (its scheduler or every worker) cancels the futures or closes the comm.
            where = self.scheduler if isinstance(self.scheduler, str) else "the client's cluster"
            raise ConnectionError(f"the Dask cluster ({where}) lost this run's batches ({type(exc).__name__}: "
                                  f"{exc}); it stopped or is unreachable. Start it again, or run with local "
                                  "workers.") from exc

    def _submit(self, fn, args):
        """Hand one batch to the pool (``ordered`` computes the serial backend's batches itself)."""
        with interrupts_deferred():  # submit takes the pool's locks: a Ctrl-C is raised once it returns
            if self.backend == "local":
                return self._pool.submit(fn, *args)  # type: ignore[union-attr]  # _ensure started it
            return self._client.submit(fn, *args, pure=False)


@contextlib.contextmanager
def as_workers(workers: Workers | int | str | None) -> Iterator[Workers]:
    """The :class:`Workers` a phase called on its own computes on.

    ``workers`` is a :class:`Workers` (used as it is and left open: :func:`learner.learn` shares
    one pool across its phases) or what :func:`learner.learn` accepts — an int, ``"auto"`` or
    None — for a pool that lives for this call only (ended on any exit, killed on Ctrl-C).

    Parameters
    ----------
    workers : Workers, int, "auto" or None
        The caller's pool, or the request for one.

    Yields
    ------
    Workers
        The pool to compute on.

    Raises
    ------
    TypeError
        For any other type (``bool`` included).
    """
    if isinstance(workers, Workers):
        yield workers
        return
    if workers is not None and workers != "auto" and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"`workers` must be an int, 'auto', None or a learner.parallel.Workers; "
                        f"got workers={workers!r} ({type(workers).__name__}).")
    with Workers(workers) as pool:
        yield pool
