"""A Ctrl-C held as a flag while a command waits on workers, raised only where the command checks it.

The rule these tests hold the code to: a ``KeyboardInterrupt`` from the signal handler can land inside the standard
library's ``with lock:`` (after the lock is taken, before the block that releases it); a future's lock left held
that way stops the pool's management thread for good and the interpreter's exit then waits forever. So while a
sweep or a learn waits on its pool, the signal only sets a flag, and the interrupt is raised from
``DeferredInterrupt.check`` — the innermost frame of every interrupt these tests provoke while waiting.

Signals are sent with ``os.kill`` to this process (from a timer thread when the main thread is blocked); Python runs
the handler in the main thread, where pytest runs the test.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
import time
import traceback

import pytest

from learner import parallel
from learner.parallel import DeferredInterrupt, interrupts_deferred, wait_one

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")


@pytest.fixture(autouse=True)
def _python_default_handlers():
    """Each test starts from Python's own handlers (pytest may run under a shell that ignores SIGINT)."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGTERM, saved[1])


def _ctrl_c():
    """Send SIGINT to this process and give the main thread the chance to run its handler."""
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(100):  # the handler runs at the main thread's next bytecode; a few suffice
        time.sleep(0)


def _raised_by_the_check(exc):
    """Whether the interrupt started in ``DeferredInterrupt.check`` (a name mutation testing may decorate)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return frame.filename.endswith(os.path.join("learner", "parallel.py")) and "check" in frame.name


class TestTheFlag:
    def test_a_ctrl_c_inside_is_noted_not_raised_and_check_raises_it_once(self):
        with interrupts_deferred() as guard:
            assert guard.active is True and guard.requested is False  # documented as booleans
            _ctrl_c()
            assert guard.requested is True, "the Ctrl-C was noted"
            with pytest.raises(KeyboardInterrupt):
                guard.check()
            assert guard.requested is False, "a checked interrupt is forgotten"
            guard.check()  # nothing noted since: no interrupt

    def test_the_handlers_are_restored_on_the_way_out(self):
        with interrupts_deferred():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):  # and Ctrl-C interrupts again at once
            _ctrl_c()

    def test_a_ctrl_c_left_unchecked_ends_the_block_with_an_interrupt(self):
        reached = []
        with pytest.raises(KeyboardInterrupt), interrupts_deferred():
            _ctrl_c()
            reached.append("after the signal")
        assert reached == ["after the signal"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def test_an_error_on_the_way_out_is_not_replaced_by_the_noted_interrupt(self):
        with pytest.raises(ValueError, match="the block's own"), interrupts_deferred():
            _ctrl_c()
            raise ValueError("the block's own error")

    def test_inside_interruptible_a_ctrl_c_interrupts_at_once(self):
        with interrupts_deferred() as guard:
            with pytest.raises(KeyboardInterrupt), guard.interruptible():
                _ctrl_c()
                pytest.fail("not interrupted inside interruptible()")
            _ctrl_c()  # deferred again once the section ended
            assert guard.requested
            with pytest.raises(KeyboardInterrupt), guard.interruptible():  # a noted one is raised at the entry
                pytest.fail("entered with an interrupt noted")

    def test_nested_guards_each_defer_and_the_outer_handler_comes_back(self):
        with interrupts_deferred() as outer:
            handler = signal.getsignal(signal.SIGINT)
            with outer.interruptible(), interrupts_deferred() as inner:  # a wait inside a run computed here
                assert inner.active and inner is not outer
                _ctrl_c()
                assert inner.requested and not outer.requested
                with pytest.raises(KeyboardInterrupt):
                    inner.check()
            assert signal.getsignal(signal.SIGINT) == handler

    def test_a_sigterm_made_to_interrupt_is_deferred_too(self):
        parallel.interrupt_on_sigterm()
        with interrupts_deferred() as guard:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):
                time.sleep(0)
            assert guard.requested
            guard.requested = False
        assert signal.getsignal(signal.SIGTERM) is parallel._raise_interrupt

    def test_a_foreign_sigterm_handler_is_left_alone(self):
        def mine(signum, frame):
            pass

        signal.signal(signal.SIGTERM, mine)
        with interrupts_deferred():
            assert signal.getsignal(signal.SIGTERM) is mine


class TestWhereNothingChanges:
    def test_an_ignored_ctrl_c_stays_ignored(self):
        """A pool's worker ignores SIGINT (a terminal's Ctrl-C reaches the whole group): the guard must not catch it."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with interrupts_deferred() as guard:
            assert not guard.active
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            _ctrl_c()
            assert not guard.requested

    def test_a_handler_of_the_callers_own_is_kept(self):
        seen = []
        signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
        with interrupts_deferred() as guard:
            _ctrl_c()
        assert seen == [signal.SIGINT] and not guard.active

    def test_outside_the_main_thread_the_guard_is_inert(self):
        got = {}

        def body():
            with interrupts_deferred() as guard:
                got["active"] = guard.active
                got["handler"] = signal.getsignal(signal.SIGINT)

        t = threading.Thread(target=body)
        t.start()
        t.join()
        assert got == {"active": False, "handler": signal.default_int_handler}


class TestWaiting:
    def test_wait_one_returns_the_result_and_raises_its_error(self):
        fut = concurrent.futures.Future()
        threading.Timer(0.3, fut.set_result, args=(7,)).start()
        assert wait_one(fut, DeferredInterrupt()) == 7  # waits past several polls
        bad = concurrent.futures.Future()
        bad.set_exception(TimeoutError("the run's own timeout"))
        with pytest.raises(TimeoutError, match="the run's own"):
            wait_one(bad, DeferredInterrupt())

    def test_a_ctrl_c_during_a_wait_is_raised_by_the_check(self):
        fut = concurrent.futures.Future()  # never finishes
        timer = threading.Timer(0.2, os.kill, args=(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt) as info, interrupts_deferred() as guard:
            timer.start()
            wait_one(fut, guard)
        assert _raised_by_the_check(info.value), "".join(traceback.format_tb(info.value.__traceback__))
        assert time.monotonic() - start < 30  # a guard against a wait that never looks: the poll is 0.1 s

    def test_a_pool_s_wait_is_interrupted_at_the_check(self):
        """``Workers.ordered`` on a local pool: the Ctrl-C lands in the check, not in the future's locks."""
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt) as info, parallel.Workers(2) as pool:
            threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGINT)).start()
            list(pool.ordered("demo", time.sleep, [((60,), 1)]))
        assert _raised_by_the_check(info.value), "".join(traceback.format_tb(info.value.__traceback__))
        assert time.monotonic() - start < 30, "interrupted only once the 60 s batch had ended"  # a guard, not a timing
        assert pool.pids() == []

    def test_a_ctrl_c_during_a_submit_is_raised_once_the_submit_returns(self):
        """A submit takes the pool's locks; a Ctrl-C arriving inside it must not cut it short."""
        done = []

        class Pool:  # stands for the executor: the signal arrives while its submit runs
            def submit(self, fn, *args):
                _ctrl_c()  # a handler that raised would raise here, inside the pool's lock
                done.append("submitted")
                return concurrent.futures.Future()

        pool = parallel.Workers(2)
        pool._pool = Pool()
        try:
            with pytest.raises(KeyboardInterrupt):
                pool._submit(abs, (1,))
        finally:
            pool._pool = None
        assert done == ["submitted"]


#: What a Dask task of this module waits on (the cluster runs in this process); set once the test is done with it.
_RELEASE = threading.Event()


def _held():
    return _RELEASE.wait(60)


@pytest.fixture(scope="module")
def client():
    """An in-process Dask cluster of one thread."""
    distributed = pytest.importorskip("distributed", reason="Dask's futures need the `dask` extra")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as c:
        yield c


class TestDaskWaits:
    """``wait_one`` on Dask's futures: it waits for the computation in bounded steps (a timeout on ``result`` would
    also bound the transfer of the result)."""

    def test_a_result_that_takes_several_polls_arrives(self, client):
        future = client.submit(lambda: (time.sleep(0.5), 7)[1], pure=False)
        assert wait_one(future, DeferredInterrupt()) == 7

    def test_a_ctrl_c_during_the_wait_is_raised_by_the_check(self, client):
        _RELEASE.clear()
        future = client.submit(_held, pure=False)
        timer = threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))
        try:
            with pytest.raises(KeyboardInterrupt) as info, interrupts_deferred() as guard:
                timer.start()
                wait_one(future, guard)
            assert _raised_by_the_check(info.value), "".join(traceback.format_tb(info.value.__traceback__))
            assert not future.done(), "the interrupt came while the task still ran, not after it"
        finally:
            _RELEASE.set()
