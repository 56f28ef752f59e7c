"""Locking, Ctrl-C and resume of ``learner scaling`` with real processes (spawned here, signalled by pid).

The sweep runs Adam with a fixed iteration count (about half a second per run) so that a sweep of
12 runs on two workers is still going when the test interrupts it.
"""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from learner.sweep import runs
from learner.sweep.engine import LOCK_NAME, SweepLocked, run_sweep, sweep_lock
from learner.sweep.runs import plan_runs

# A driver: the CLI, with `--quick`'s Adam budget replaced by a fixed 150 iterations (no early stop).
DRIVER = """
import sys
from learner.sweep import runs
runs.QUICK_OPTIONS["adam"].update(max_iter=150, patience=150, tol=0.0, n_train=5000, n_val=500)
from learner.cli import main
sys.exit(main(sys.argv[1:]))
"""
SEEDS = 6  # × m in {1, 2}: 12 runs


def _argv(out):
    return [sys.executable, "-c", DRIVER, "scaling", "--m", "1", "2", "--d", "6", "--k", "3", "--seeds",
            str(SEEDS), "--methods", "adam", "--adam-lr", "0.03", "--quick", "--workers", "2", "--no-progress",
            "--out", str(out)]


def _env():
    return os.environ | {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _wait_for(predicate, proc, timeout=300.0):  # generous: a loaded CI machine starts Python slowly
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended (status {proc.returncode}) before the test could act: "
                        f"{proc.communicate()[1][-2000:]}")
        time.sleep(0.02)
    pytest.fail("timed out waiting for the sweep")


def _records(out):
    return [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]


class TestRealProcesses:
    @pytest.mark.slow  # ~20 s; the default run keeps the three Ctrl-Cs' test with real processes
    def test_second_writer_refused_ctrl_c_keeps_finished_runs_and_resume_completes(self, tmp_path):
        out = tmp_path / "sweep"
        # Its own group, as a shell job is, with SIGINT as an interactive shell leaves it (a test run started
        # in the background by a non-interactive shell ignores SIGINT, and the child would inherit that).
        first = subprocess.Popen(_argv(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=_env(), start_new_session=True,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            _wait_for(lambda: (out / LOCK_NAME).exists(), first)
            owner = json.loads((out / LOCK_NAME).read_text())
            assert owner["pid"] == first.pid and owner["host"] == socket.gethostname()

            # A second writer on the same directory is refused at once and writes nothing.
            second = subprocess.run(_argv(out), check=False, capture_output=True, text=True, env=_env(), timeout=300)
            assert second.returncode == 2, second.stderr
            assert f"process {first.pid}" in second.stderr and "another sweep is writing" in second.stderr
            assert "Traceback" not in second.stderr

            # Ctrl-C (SIGINT to the whole process group, as a terminal sends it) once two runs are recorded.
            _wait_for(lambda: len(list((out / "runs").glob("*.json"))) >= 2, first)
            os.killpg(first.pid, signal.SIGINT)
            _, err = first.communicate(timeout=300)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
                first.wait()
        assert first.returncode == 130, err
        assert "Traceback" not in err and "run the same command again to resume" in err
        kept = _records(out)
        assert 2 <= len(kept) < 2 * SEEDS, "the interrupt must land mid-sweep"
        assert all(r["outcome"] == "finished" for r in kept)
        assert f"interrupted: {len(kept)} of {2 * SEEDS} runs of the study are recorded" in err
        assert not (out / LOCK_NAME).exists(), "the lock is released on an interrupt"
        before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}

        resumed = subprocess.run(_argv(out), check=False, capture_output=True, text=True, env=_env(), timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{2 * SEEDS - len(kept)} run now, {len(kept)} kept from earlier" in resumed.stdout
        after = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
        assert len(after) == 2 * SEEDS and all(after[name] == blob for name, blob in before.items())
        assert not (out / LOCK_NAME).exists()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the pool's processes")
def test_three_quick_ctrl_cs_end_in_one_message_and_keep_the_runs(tmp_path):
    """A user pressing Ctrl-C three times in a row: still exit 130 with the message, no traceback, no worker left."""
    out = tmp_path / "sweep"
    proc = subprocess.Popen(_argv(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for(lambda: len(list((out / "runs").glob("*.json"))) >= 1, proc)
        workers = [c for c in _children(proc.pid) if b"popen_loky_posix" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(workers) >= 2, "the local pool's worker processes"
        # Each Ctrl-C is sent as soon as the one before reached the process (no longer pending in /proc): three in
        # a row as fast as the process takes them, none merged with another (a pending signal absorbs a second
        # of its kind).
        for _ in range(3):
            os.killpg(proc.pid, signal.SIGINT)
            deadline = time.monotonic() + 60  # a guard, not a measurement
            while _sigint_pending(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.001)
            assert not _sigint_pending(proc.pid), "a Ctrl-C was never delivered"
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted" in err
    kept = _records(out)
    assert kept and all(r["outcome"] == "finished" for r in kept)
    assert not (out / LOCK_NAME).exists()
    deadline = time.monotonic() + 10
    while not all(_gone(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(w) for w in workers)


def _sigint_pending(pid):
    """Whether a SIGINT sent to ``pid`` waits undelivered (its bit in /proc's pending masks; False once it exited)."""
    bit = 1 << (signal.SIGINT - 1)
    try:
        with open(f"/proc/{pid}/status") as fh:
            masks = dict(line.split(":", 1) for line in fh if line.startswith(("SigPnd:", "ShdPnd:")))
    except OSError:
        return False
    return any(int(mask, 16) & bit for mask in masks.values())


def _children(pid):
    """Pids of the direct children of ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has exited
    except OSError:
        return True


@pytest.mark.slow  # real processes, like the three Ctrl-Cs' test in the default tier
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to find the pool's processes")
def test_sigterm_stops_like_ctrl_c_and_leaves_no_worker(tmp_path):
    out = tmp_path / "sweep"
    proc = subprocess.Popen(_argv(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        _wait_for(lambda: len(list((out / "runs").glob("*.json"))) >= 1, proc)
        workers = [c for c in _children(proc.pid) if b"popen_loky_posix" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(workers) >= 2, "the local pool's worker processes"
        proc.send_signal(signal.SIGTERM)  # to the parent only, as `kill PID` or a batch scheduler does
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "run the same command again to resume" in err, err
    deadline = time.monotonic() + 10
    while not all(_gone(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(w) for w in workers), "a worker outlived the sweep"
    assert all(r["outcome"] == "finished" for r in _records(out)) and not (out / LOCK_NAME).exists()


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: the pid names no process now (reuse within the test is vanishingly unlikely)
    return proc.pid


def _tiny(entropy=3):
    return plan_runs(ms=(1,), d=6, k=3, seeds=1, methods=("adam",), entropy=entropy,
                     options={"adam": runs.QUICK_OPTIONS["adam"] | {"lr": 0.03}})


class TestLockFile:
    def test_stale_lock_of_a_dead_process_is_replaced(self, tmp_path, caplog):
        pid = _dead_pid()
        (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": pid, "host": socket.gethostname()}))
        with caplog.at_level(logging.WARNING, logger="learner.sweep.engine"):
            records, stats = run_sweep(_tiny(), tmp_path, backend="serial")
        assert stats["ran"] == 1 and records[0]["outcome"] == "finished"
        assert "stale lock" in caplog.text and str(pid) in caplog.text
        assert not (tmp_path / LOCK_NAME).exists()

    def test_lock_of_a_live_process_is_respected(self, tmp_path):
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": proc.pid, "host": socket.gethostname()}))
            with pytest.raises(SweepLocked, match=f"process {proc.pid} on this host"):
                run_sweep(_tiny(), tmp_path, backend="serial")
        finally:
            proc.kill()
            proc.wait()
        assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())
        assert (tmp_path / LOCK_NAME).exists(), "someone else's lock is left alone"

    @pytest.mark.parametrize("content, match", [
        (json.dumps({"pid": 1, "host": "elsewhere.example"}), "host 'elsewhere.example'"),
        ("{not json", "not a readable lock"),
        (json.dumps({"host": "x"}), "not a readable lock"),
    ], ids=["other-host", "corrupt", "no-pid"])
    def test_locks_that_cannot_be_checked_are_never_taken_over(self, tmp_path, content, match):
        (tmp_path / LOCK_NAME).write_text(content)
        with pytest.raises(SweepLocked, match=match):
            run_sweep(_tiny(), tmp_path, backend="serial")
        assert (tmp_path / LOCK_NAME).read_text() == content

    def test_reentrant_in_one_process_and_released(self, tmp_path):
        with sweep_lock(tmp_path) as path:
            assert json.loads(path.read_text())["pid"] == os.getpid()
            run_sweep(_tiny(), tmp_path, backend="serial")  # the study holds the lock around its sweeps
            assert path.exists()
        assert not path.exists()


def _innermost_frame(exc):
    import traceback

    return traceback.extract_tb(exc.__traceback__)[-1]  # where the interrupt started


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_a_ctrl_c_while_the_sweep_waits_is_raised_where_it_checks_not_inside_the_pool_s_locks(tmp_path):
    """A local sweep in this process, interrupted while it waits on its pool: the interrupt starts in the sweep's own
    check (a KeyboardInterrupt inside a future's lock can leave the lock held, and the pool's thread then blocks the
    interpreter's exit), the finished runs are kept and the lock file is gone."""
    import threading

    from learner.errors import SweepInterrupted

    specs = plan_runs(ms=(1,), d=6, k=3, seeds=SEEDS, methods=("adam",), entropy=5,
                      options={"adam": runs.QUICK_OPTIONS["adam"] | {"lr": 0.03, "max_iter": 150, "patience": 150,
                                                                     "tol": 0.0, "n_train": 5000, "n_val": 500}})
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Thread(target=lambda: (_wait_for(lambda: list((tmp_path / "runs").glob("*.json")), _Alive()),
                                             os.kill(os.getpid(), signal.SIGINT)), daemon=True)
    try:
        timer.start()
        with pytest.raises(SweepInterrupted) as info:
            try:
                run_sweep(specs, tmp_path, backend="local", workers=2)
            except KeyboardInterrupt as exc:  # a bare one would end the whole test run: fail this test instead
                if isinstance(exc, SweepInterrupted):
                    raise
                pytest.fail(f"the Ctrl-C escaped the sweep as {exc!r}")
    finally:
        timer.join(timeout=300)
        signal.signal(signal.SIGINT, saved)
    cause = info.value.__context__
    assert isinstance(cause, KeyboardInterrupt)
    start = _innermost_frame(cause)  # the check's name, which mutation testing may decorate, in learner/parallel.py
    assert start.filename.endswith(os.path.join("learner", "parallel.py")) and "check" in start.name, start
    kept = _records(tmp_path)
    assert 1 <= len(kept) < SEEDS and all(r["outcome"] == "finished" for r in kept)
    assert not (tmp_path / LOCK_NAME).exists()


class _Alive:
    """A stand-in process for ``_wait_for`` in this process's own thread: it never ends."""

    returncode = None

    def poll(self):
        return None
