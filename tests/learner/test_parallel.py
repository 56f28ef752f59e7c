"""One learning run on several processes (learner.parallel): identical results, ordered merge, clean shutdown."""

import dataclasses
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from learner import LayerOracle, LearnConfig, learn, parallel, random_layer
from learner.errors import LearnInterrupted
from learner.oracle import ArraySource, ExamplesExhausted, batch_sizes
from learner.parallel import Workers, _Done
from learner.phases import crude_sculpt, crude_sum_w, refined_sculpt
from learner.sweep.engine import comparable

# Small budgets and batches of 20 000 so that every streaming phase has several batches to merge;
# (2, 12, 2) at logit scale 1 is learned exactly with these (measured).
CONFIG = LearnConfig(batch=20_000, n_crude=100_000, n_refine=100_000, crude_max_examples=400_000, outer_rounds=1)
# The same streams, stopped at phase 4 by a tolerance so tight that its 5 batches certify fewer than d² rows
# (measured: 81 constraints; phases 5 and 6 do not stream, and this keeps the Dask run and the control short).
SHORT = dataclasses.replace(CONFIG, max_examples=100_000, refined_tol=2e-4)


def _fixed(**fields):
    """Fixed budgets (every count drawn in full, in batches of ``batch``) with ``fields``, for one phase."""
    return LearnConfig(adaptive=False, **fields)


def _truth():
    return random_layer(2, 12, logit_scale=1.0, rng=1)


def _learn(**kw):
    truth = _truth()
    return learn(LayerOracle(truth, 2, rng=3), m=2, truth=truth, rng=0, config=kw.pop("config", CONFIG),
                 progress=False, **kw)


def _record(result):
    """What must agree across backends: everything but times and where the batches ran."""
    rec = result.to_dict()
    rec.pop("execution")
    return comparable(rec)


def _assert_same(a, b):
    assert a.success and b.success
    np.testing.assert_array_equal(a.layer.thetas, b.layer.thetas)
    np.testing.assert_array_equal(a.layer.ws, b.layer.ws)
    assert a.examples_drawn == b.examples_drawn
    assert json.dumps(_record(a), sort_keys=True) == json.dumps(_record(b), sort_keys=True)


def _square(x, delay=0.0):
    time.sleep(delay)
    return x * x


def _zombie(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] == "Z"


def _no_children(before=()):
    """Child processes started since ``before`` (pids) that are still alive: a finished or killed pool's
    processes are reaped, so anything listed would outlive the run. Children of earlier tests are not ours."""
    return [p for p in multiprocessing.active_children() if p.is_alive() and p.pid not in before]


def _default_sigint():
    """In a child before exec: SIGINT as an interactive shell leaves it (Python then raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children():
    return {p.pid for p in multiprocessing.active_children()}


@pytest.fixture(scope="module")
def serial_result():
    return _learn()


class TestIdenticalResults:
    def test_two_local_workers_give_the_serial_result(self, serial_result):
        before = _children()
        parallel = _learn(workers=2)
        _assert_same(serial_result, parallel)
        assert parallel.execution["backend"] == "local" and parallel.execution["workers"] == 2
        assert serial_result.execution["backend"] == "serial"
        phases = parallel.execution["phases"]
        assert set(phases) == {"1_crude_sum", "2_crude_sculpt", "4_refined_sculpt"}
        # Phase 1 stops on its standard error: the batches merged are those of the serial run (5,000, then doubling).
        assert phases["1_crude_sum"]["examples"] == serial_result.diagnostics["1_crude_sum"]["examples"] == 35_000
        assert phases["1_crude_sum"]["batches"] == 3
        # Merged examples are what the run drew; batches computed ahead are counted apart.
        refine = sum(r["examples"] for r in parallel.diagnostics["3_refine_sum"]["rounds"])
        merged = sum(p["examples"] for p in phases.values()) + refine + 2 * CONFIG.n_search + CONFIG.certify_examples
        assert merged == parallel.examples_drawn
        assert serial_result.execution["phases"]["2_crude_sculpt"]["examples_ahead"] == 0
        assert _no_children(before) == []

    @pytest.mark.slow  # a whole phase 6 on a pool; the two-worker learn beside it stays in the default tier
    def test_phase_6_on_two_workers_gives_the_serial_result(self):
        """The variable-projection search's starts on the pool and the refinement's products on two BLAS threads
        (the serial run: one) give the serial run's layer, bit for bit."""
        config = dataclasses.replace(CONFIG, search="vp", vp_starts=4)
        serial, parallel = _learn(config=config), _learn(config=config, workers=2)
        _assert_same(serial, parallel)
        assert parallel.diagnostics["6_search"]["search"] == "vp"
        assert parallel.execution["phases"]["6_search"]["batches"] == 4  # the starts ran on the pool
        assert parallel.execution["backend"] == "local" and serial.execution["backend"] == "serial"
        assert serial.execution["blas_threads"]["phase6_products"] == 1
        assert parallel.execution["blas_threads"]["phase6_products"] == 2

    def test_the_comparison_sees_a_different_stream(self):
        """Negative control: batches of another size are another stream of examples, and the check notices."""
        a = _learn(config=SHORT)
        b = _learn(config=dataclasses.replace(SHORT, batch=10_000))
        assert a.status == b.status == "budget"  # refined_tol=2e-4: the pilot forecasts far more than the budget
        with pytest.raises(AssertionError):  # other examples, other constraints
            assert json.dumps(_record(a), sort_keys=True) == json.dumps(_record(b), sort_keys=True)

    @pytest.mark.slow  # 7 s: the local pool's identity above stays in the default run; Dask is an optional backend
    def test_dask_local_cluster_gives_the_serial_result(self):
        """Phases 1–4 (to phase 4's pilot) on a Dask cluster, by client and by address; the whole run: below."""
        distributed = pytest.importorskip("dask.distributed")
        serial = _learn(config=SHORT)
        assert serial.status == "budget" and "phase 4 would need" in serial.message
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            with distributed.Client(cluster) as client:
                on_client = _learn(config=SHORT, scheduler=client)
                assert client.status == "running"  # a client the caller owns stays open
            by_address = _learn(config=SHORT, scheduler=cluster.scheduler_address)
        for other in (on_client, by_address):
            assert json.dumps(_record(serial), sort_keys=True) == json.dumps(_record(other), sort_keys=True)
            assert other.examples_drawn == serial.examples_drawn
        assert on_client.execution["backend"] == by_address.execution["backend"] == "dask"
        assert on_client.execution["workers"] == 2
        # Phase 1 stops on its standard error after the batches of the serial run (5,000, 10,000, 20,000).
        assert on_client.execution["phases"]["1_crude_sum"]["batches"] == 3

    @pytest.mark.slow
    def test_dask_local_cluster_gives_the_whole_serial_run(self, serial_result):
        """The whole run (phase 4 past its pilot, phases 5–6) on a Dask cluster, as with local workers."""
        distributed = pytest.importorskip("dask.distributed")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            with distributed.Client(cluster) as client:
                on_dask = _learn(scheduler=client)
        _assert_same(serial_result, on_dask)
        assert on_dask.execution["backend"] == "dask"

    @pytest.mark.slow  # 4 s; TestOrderedMerge checks the split on one phase in the default run
    def test_fixed_arrays_are_split_by_index(self):
        truth = _truth()
        oracle = LayerOracle(truth, 2, rng=5)
        X, Y = oracle.draw(300_000)
        runs = [learn(ArraySource(X, Y), m=2, config=SHORT, rng=0, progress=False, workers=w) for w in (None, 2)]
        assert runs[0].status == runs[1].status
        assert runs[0].examples_drawn == runs[1].examples_drawn
        assert json.dumps(_record(runs[0]), sort_keys=True) == json.dumps(_record(runs[1]), sort_keys=True)


# A user's plain script: no `if __name__ == "__main__":` guard, two local workers, the SHORT run above.
PLAIN_SCRIPT = """
import json
from learner import LayerOracle, LearnConfig, learn, random_layer
from learner.sweep.engine import comparable
truth = random_layer(2, 12, logit_scale=1.0, rng=1)
cfg = LearnConfig(batch=20_000, n_crude=100_000, n_refine=100_000, crude_max_examples=400_000, outer_rounds=1,
                  max_examples=100_000, refined_tol=2e-4)
result = learn(LayerOracle(truth, 2, rng=3), m=2, truth=truth, rng=0, config=cfg, progress=False, workers=2)
record = result.to_dict()
backend = record.pop("execution")["backend"]
print("RECORD " + json.dumps({"backend": backend, "record": comparable(record)}, sort_keys=True))
"""


class TestPlainScripts:
    """`learn(..., workers=2)` from wherever Python starts: a script without a main guard, stdin, `-c`."""

    # The script file by default; standard input and -c (the same pool, ~6 s each) with -m slow.
    @pytest.mark.parametrize("how", ["script file", pytest.param("standard input", marks=pytest.mark.slow),
                                     pytest.param("-c", marks=pytest.mark.slow)])
    def test_gives_the_serial_result(self, how, tmp_path):
        assert PLAIN_SCRIPT.count("workers=2") == 1 and "__main__" not in PLAIN_SCRIPT
        env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        script = tmp_path / "user_script.py"
        script.write_text(PLAIN_SCRIPT)
        argv, stdin = {"script file": ([sys.executable, str(script)], None),
                       "standard input": ([sys.executable, "-"], PLAIN_SCRIPT),
                       "-c": ([sys.executable, "-c", PLAIN_SCRIPT], None)}[how]
        run = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
                             check=False)
        assert run.returncode == 0, run.stderr[-3000:]
        (line,) = [ln for ln in run.stdout.splitlines() if ln.startswith("RECORD ")]
        got = json.loads(line[len("RECORD "):])
        assert got["backend"] == "local"
        serial = _learn(config=SHORT)
        assert serial.status == "budget"
        assert json.dumps(got["record"], sort_keys=True) == json.dumps(json.loads(json.dumps(_record(serial))),
                                                                       sort_keys=True)


class TestOrderedMerge:
    def test_results_come_in_batch_order_whatever_order_they_finish(self):
        # Early batches sleep longest, so they finish last on two workers.
        tasks = [((i, 0.02 * (5 - i)), 1) for i in range(6)]
        with Workers(2) as pool:
            assert list(pool.ordered("t", _square, iter(tasks))) == [i * i for i in range(6)]
        assert pool.stats["t"]["batches"] == 6 and pool.stats["t"]["examples_ahead"] == 0

    def test_stopping_early_discards_the_batches_ahead(self):
        with Workers(2) as pool:
            gen = pool.ordered("t", _square, (((i,), 10) for i in range(100)))
            assert [next(gen) for _ in range(3)] == [0, 1, 4]
            gen.close()
        assert pool.stats["t"]["examples"] == 30
        assert 0 < pool.stats["t"]["examples_ahead"] <= 10 * 2 * 2  # at most two batches per worker in flight

    def test_serial_backend_computes_nothing_ahead(self):
        calls = []

        def task(i):
            calls.append(i)
            return i

        pool = Workers()
        gen = pool.ordered("t", task, (((i,), 1) for i in range(10)))
        assert [next(gen) for _ in range(3)] == [0, 1, 2]
        gen.close()
        assert calls == [0, 1, 2] and pool.stats["t"]["examples_ahead"] == 0

    def test_a_batch_that_cannot_be_formed_fails_in_its_turn(self):
        def tasks():
            yield (1,), 1
            yield (2,), 1
            raise ExamplesExhausted("only two")

        with Workers(2) as pool:
            gen = pool.ordered("t", _square, tasks())
            assert next(gen) == 1 and next(gen) == 4
            with pytest.raises(ExamplesExhausted, match="only two"):
                next(gen)

    @pytest.mark.parametrize("workers", [None, 2])
    def test_phases_agree_with_serial_and_count_only_what_they_merge(self, workers):
        layer = random_layer(3, 12, logit_scale=1.0, rng=2)
        w_sum = layer.ws.sum(axis=0)
        # Phase 4 at tol 0.03 without a pilot, for 200 constraints (int(c·d²) at d = 12).
        cfg4 = _fixed(refined_tol=0.03, min_weight=0.02, refined_constraints=200.5 / 144, max_examples=400_000,
                      batch=10_000)
        out = {}
        for name, w in (("serial", None), ("workers", workers)):
            with Workers(w) as pool:
                oracle = LayerOracle(layer, 2, rng=9)
                s1 = crude_sum_w(oracle, _fixed(n_crude=50_000, batch=10_000), workers=pool)
                c4 = refined_sculpt(oracle, w_sum, cfg4, workers=pool, pilot=False)
                out[name] = (s1, c4, oracle.n_drawn)
        (s1, c4, n), (t1, d4, n2) = out["serial"], out["workers"]
        np.testing.assert_array_equal(s1.w_sum, t1.w_sum)
        np.testing.assert_array_equal(c4.A, d4.A)
        np.testing.assert_array_equal(c4.b, d4.b)
        assert c4.count >= 200 and c4.n_examples < 400_000 and n == n2 == 50_000 + c4.n_examples

    @pytest.mark.slow  # a whole run end to end; the rules it meets have their own default-tier tests
    def test_phases_take_what_learn_takes(self):
        """An int, "auto" or None for ``workers``, as `learn` takes them: a pool for the call, the serial result."""
        layer = random_layer(2, 12, logit_scale=1.0, rng=2)
        w_sum = layer.ws.sum(axis=0)
        before = _children()
        runs = {}
        for w in (None, 1, 2, "auto"):
            oracle = LayerOracle(layer, 2, rng=9)
            s1 = crude_sum_w(oracle, _fixed(n_crude=30_000, batch=10_000), workers=w)
            # 100 constraints: int(c·d²) at d = 12
            c2 = crude_sculpt(oracle, w_sum, _fixed(crude_tol=0.05, min_weight=0.02, crude_constraints=100.5 / 144,
                                                    crude_max_examples=60_000, batch=10_000), workers=w)
            runs[w] = (s1.w_sum, c2.A, c2.b)
        for w in (1, 2, "auto"):
            for a, b in zip(runs[None], runs[w], strict=True):
                np.testing.assert_array_equal(a, b)
        assert _no_children(before) == []  # each call's pool ended with it

    @pytest.mark.parametrize("bad", [2.0, "two", True, [2]])
    def test_phases_name_a_bad_workers_value(self, bad):
        oracle = LayerOracle(random_layer(1, 6, rng=0), 2, rng=0)
        with pytest.raises(TypeError, match=r"`workers` must be an int, 'auto', None or a learner.parallel.Workers"):
            crude_sum_w(oracle, _fixed(n_crude=1000, batch=1000), workers=bad)
        with pytest.raises(TypeError, match=r"got workers="):
            refined_sculpt(oracle, np.eye(6), _fixed(refined_tol=0.03, refined_constraints=10.5 / 36, max_examples=1000,
                                                     batch=1000), workers=bad, pilot=False)

    def test_fixed_arrays_are_split_by_index_in_a_phase(self):
        """The default run's check of fixed arrays on two workers (the whole learner: the slow test above)."""
        layer = random_layer(2, 12, logit_scale=1.0, rng=2)
        X, Y = LayerOracle(layer, 2, rng=1).draw(40_000)
        sums = []
        for w in (None, 2):
            with Workers(w) as pool:
                sums.append(crude_sum_w(ArraySource(X, Y), _fixed(n_crude=40_000, batch=10_000), workers=pool).w_sum)
        np.testing.assert_array_equal(sums[0], sums[1])  # the same batches, merged in order: bit for bit
        other = crude_sum_w(ArraySource(X[::-1].copy(), Y[::-1].copy()), _fixed(n_crude=40_000, batch=10_000)).w_sum
        assert not np.array_equal(other, sums[0])  # control: the same examples in another order sum otherwise

    def test_fixed_arrays_run_out_at_the_same_batch(self):
        layer = random_layer(2, 12, logit_scale=1.0, rng=2)
        X, Y = LayerOracle(layer, 2, rng=1).draw(45_000)
        for w in (None, 2):
            source = ArraySource(X, Y)
            with Workers(w) as pool, pytest.raises(ExamplesExhausted, match="only 5000 of 45000 remain"):
                crude_sum_w(source, _fixed(n_crude=50_000, batch=10_000), workers=pool)


class TestStreams:
    def test_batch_seeds_do_not_depend_on_the_batches_before(self):
        layer = random_layer(2, 8, rng=0)
        a = list(LayerOracle(layer, 3, rng=4).batches([5, 5, 5]))
        b = list(LayerOracle(layer, 3, rng=4).batches([7, 7, 5]))
        np.testing.assert_array_equal(a[2].examples()[0], b[2].examples()[0])
        # A second stream of the same oracle is new examples; reset() starts the numbering again.
        oracle = LayerOracle(layer, 3, rng=4)
        first = next(oracle.batches([5])).examples()[0]
        second = next(oracle.batches([5])).examples()[0]
        assert not np.array_equal(first, second)
        oracle.reset()
        np.testing.assert_array_equal(next(oracle.batches([5])).examples()[0], first)

    def test_sequential_draws_are_untouched_by_streams(self):
        """Adam and phase 6 draw sequentially: opening streams must not move that stream."""
        layer = random_layer(2, 8, rng=0)
        plain = LayerOracle(layer, 3, rng=4)
        mixed = LayerOracle(layer, 3, rng=4)
        list(mixed.batches(batch_sizes(30, 10)))
        mixed.consume(30)
        np.testing.assert_array_equal(plain.draw(10)[0], mixed.draw(10)[0])
        assert mixed.n_drawn == 40 and plain.n_drawn == 10

    def test_batches_pickle_as_recipes(self):
        import pickle

        layer = random_layer(2, 8, rng=0)
        batch = next(LayerOracle(layer, 3, rng=4).batches([1000]))
        again = pickle.loads(pickle.dumps(batch))
        np.testing.assert_array_equal(batch.examples()[1], again.examples()[1])
        assert len(pickle.dumps(batch)) < 20_000  # the layer and a seed, not 1000 examples


@pytest.fixture(params=["quiet", pytest.param("two CPU-bound processes beside it", marks=pytest.mark.slow)])
def load(request):
    """Nothing, or two busy-looping processes for the test's duration (a loaded 2-core machine)."""
    if request.param == "quiet":
        yield request.param
        return
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield request.param
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


class TestShutdown:
    def test_a_pool_left_running_is_ended_by_kill_live_pools(self):
        """A pool whose owner was cut short (a Ctrl-C in its clean-up) is found and ended; one ended by
        kill_pool is no longer counted."""
        from learner.parallel import kill_live_pools, kill_pool, local_pool, pool_pids

        left, ended = local_pool(1), local_pool(1)
        pids = pool_pids(left)
        kill_pool(ended)
        assert pids and kill_live_pools() == 1
        assert all(not os.path.exists(f"/proc/{pid}") or _zombie(pid) for pid in pids)
        assert kill_live_pools() == 0  # control: nothing left to end

    def test_interrupted_run_ends_its_workers_and_keeps_the_diagnostics(self, load):
        """Interrupted in phase 4: no worker outlives the run, on a quiet machine and under load (the
        guarantee failed once on a loaded machine: the executor's thread and ours raced to reap a worker)."""
        class StopInPhase4(LayerOracle):
            streams = 0

            def batches(self, sizes):
                self.streams += 1
                for i, batch in enumerate(super().batches(sizes)):
                    if self.streams == 4 and i == 3:  # phase 4's stream, a few batches in
                        raise KeyboardInterrupt
                    yield batch

        truth = _truth()
        before = _children()
        with pytest.raises(LearnInterrupted) as info:
            learn(StopInPhase4(truth, 2, rng=3), m=2, config=SHORT, truth=truth, progress=False, workers=2)
        result = info.value.result
        assert isinstance(info.value, KeyboardInterrupt)
        assert result.status == "interrupted" and not result.success and result.layer is None
        assert "4_refined_sculpt" in result.message
        assert set(result.diagnostics) >= {"0_setting", "1_crude_sum", "2_crude_sculpt", "3_refine_sum"}
        assert "4_refined_sculpt" not in result.diagnostics
        assert result.execution["backend"] == "local"
        assert _no_children(before) == []

    @pytest.mark.slow
    def test_workers_end_when_their_parent_is_killed_outright(self):
        """SIGKILL (or the OOM killer) gives the parent no chance to stop its pool: the workers end themselves."""
        code = ("import sys, time\nfrom learner.parallel import local_pool, pool_pids\n"
                "pool = local_pool(2)\nprint(*pool_pids(pool), flush=True)\ntime.sleep(600)\n")
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            pids = [int(p) for p in proc.stdout.readline().split()]
            assert len(pids) == 2 and all(os.path.exists(f"/proc/{pid}") for pid in pids)
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
        end = time.monotonic() + 10 * parallel.PARENT_CHECK_SECONDS + 5
        while any(os.path.exists(f"/proc/{pid}") and not _zombie(pid) for pid in pids) and time.monotonic() < end:
            time.sleep(0.05)
        assert not any(os.path.exists(f"/proc/{pid}") and not _zombie(pid) for pid in pids), "an orphaned worker"

    def test_ctrl_c_on_the_cli_ends_the_workers(self, tmp_path):
        """A real `learner learn --workers 2`, interrupted by SIGINT to its process group once its pool exists and
        phase 1 has begun (its log line, -v): the workers have batches to compute when Ctrl-C comes."""
        import threading

        # the command line as `python -m learner`, its pool started at the first batch (this run is smaller than
        # learner.parallel.POOL_FROM_EXAMPLES, below which the pool would not start at all)
        argv = [sys.executable, "-c", "import sys, learner; sys.modules['learner.learn'].POOL_FROM_EXAMPLES = 0; "
                "from learner.cli import main; sys.exit(main(sys.argv[1:]))",
                "-v", "learn", "--m", "4", "--d", "12", "--k", "2", "--logit-scale", "1", "--workers", "2",
                "--no-progress"]
        env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        # Ctrl-C's disposition as a terminal's shell gives it: a test run started in the background by a
        # non-interactive shell (`... &`) ignores SIGINT, and the child would inherit that.
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True, preexec_fn=_default_sigint)
        err_lines, out_parts, phase1 = [], [], threading.Event()

        def read_err():
            for line in proc.stderr:
                err_lines.append(line)
                if "learner.learn: phase 1:" in line:
                    phase1.set()

        readers = [threading.Thread(target=read_err, daemon=True),
                   threading.Thread(target=lambda: out_parts.append(proc.stdout.read()), daemon=True)]
        for reader in readers:
            reader.start()

        def workers():
            """The CLI's pool processes (loky's workers, `popen_loky_posix`; not the resource trackers)."""
            try:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
                    pids = [int(p) for p in fh.read().split()]
            except OSError:
                return []
            out = []
            for pid in pids:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        if b"popen_loky_posix" in fh.read():
                            out.append(pid)
                except OSError:
                    pass
            return out

        def ready():
            """The pool's two processes exist and the CLI catches SIGINT again: it ignores SIGINT while it starts
            the pool (its workers inherit that), and a Ctrl-C in that moment is not the one tested here. The
            workers are read first: once they exist, the pool's start has begun."""
            return len(workers()) == 2 and _catches_sigint(proc.pid)

        try:
            end = time.monotonic() + 120  # a guard against a run that never gets there, not a measurement
            while not ready() and time.monotonic() < end and proc.poll() is None:
                time.sleep(0.01)
            pids = workers()
            assert len(pids) == 2 and _catches_sigint(proc.pid), "the pool never started"
            # The pool starts with phase 1's first batches, after its log line.
            assert phase1.wait(timeout=120), "phase 1 never started: " + "".join(err_lines)[-2000:]
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            for reader in readers:
                reader.join(timeout=30)
            proc.stdout.close()
            proc.stderr.close()
        out, err = "".join(out_parts), "".join(err_lines)
        assert proc.returncode == 130, err[-2000:]
        assert "interrupted: interrupted by the user in phase" in err
        assert "Traceback" not in err and "Traceback" not in out
        assert "success: no (interrupted)" in out
        end = time.monotonic() + 5  # killed and reaped by the CLI before it exits; a moment for /proc
        while any(os.path.exists(f"/proc/{pid}") and not _zombie(pid) for pid in pids) and time.monotonic() < end:
            time.sleep(0.05)
        for pid in pids:
            assert not os.path.exists(f"/proc/{pid}") or _zombie(pid), f"worker {pid} outlived the run"


def _catches_sigint(pid):
    """Whether ``pid`` has a handler for SIGINT and does not ignore it (its bits in /proc's SigCgt and SigIgn)."""
    bit = 1 << (signal.SIGINT - 1)
    try:
        with open(f"/proc/{pid}/status") as fh:
            masks = dict(line.split(":", 1) for line in fh if line.startswith(("SigIgn:", "SigCgt:")))
    except OSError:
        return False
    return bool(int(masks["SigCgt"], 16) & bit) and not int(masks["SigIgn"], 16) & bit


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


class TestBadInput:
    @pytest.mark.parametrize("kw, match", [
        ({"workers": 0}, r"`workers` must be at least 1; got workers=0"),
        ({"workers": -2}, r"got workers=-2"),
        ({"workers": 2.5}, r"`workers`"),
        ({"workers": "many"}, r"`workers`"),
        ({"workers": 2, "scheduler": "tcp://127.0.0.1:1"}, r"either `workers` .* or `scheduler`"),
        ({"scheduler": 5}, r"`scheduler` must be an address string or a dask.distributed.Client; got int"),
    ])
    def test_refused_with_the_parameter_named(self, kw, match):
        with pytest.raises((TypeError, ValueError), match=match):
            learn(LayerOracle(_truth(), 2, rng=3), m=2, config=CONFIG, progress=False, **kw)

    @pytest.mark.slow  # waits for a connection to fail
    def test_unreachable_scheduler_is_named(self, monkeypatch):
        pytest.importorskip("dask.distributed")
        from learner import parallel

        monkeypatch.setattr(parallel, "SCHEDULER_CONNECT_TIMEOUT", 1.0)
        with pytest.raises(ConnectionError, match=r"'tcp://127.0.0.1:1' \(scheduler\)"):
            learn(LayerOracle(_truth(), 2, rng=3), m=2, config=CONFIG, progress=False, scheduler="tcp://127.0.0.1:1")

    def test_cli_workers_flag(self, capsys):
        from learner.cli import main

        with pytest.raises(SystemExit):
            main(["learn", "--workers", "0"])
        assert "--workers must be a positive integer or auto; got '0'" in capsys.readouterr().err

    @pytest.mark.parametrize(("workers", "threads"), [("1", 1), ("2", 2)])
    def test_cli_report_names_phase_6_threads(self, capsys, workers, threads):
        """The report's last line says where the batches ran and on how many threads phase 6 formed its products."""
        from learner.cli import main

        assert main(["learn", "--m", "1", "--d", "6", "--k", "2", "--seed", "1", "--workers", workers]) in (0, 1)
        out = capsys.readouterr().out
        last = " ".join(out[out.rindex("batches:"):].split())  # the last sentence, wrapped at the report's width
        assert last.startswith(f"batches: {'serial' if workers == '1' else 'local'} with {workers} worker(s)")
        assert last.endswith(f"BLAS threads: 1 here alone, 1 while workers stream; phase 6's products on "
                             f"{threads} thread(s)")


class TestDaskFailures:
    def test_a_stopped_cluster_is_a_connection_error_naming_it(self):
        """A cluster killed mid-run cancels the futures (FutureCancelledError) or closes the comm: one clear error."""
        import concurrent.futures

        class Client:  # what Workers uses of a dask.distributed.Client
            def __init__(self, exc):
                self.exc = exc

            def submit(self, fn, *args, pure=False):
                future = concurrent.futures.Future()  # what is waited on: a future that failed as Dask's do
                future.set_exception(self.exc)
                return future

            def scheduler_info(self):
                return {"workers": {"a": {}, "b": {}}}

        for exc in (concurrent.futures.CancelledError("lost"), OSError("comm closed")):
            pool = Workers(scheduler=Client(exc))
            with pytest.raises(ConnectionError, match=r"the Dask cluster \(the client's cluster\) lost this run's "
                                                      r"batches \((CancelledError|OSError)"):
                list(pool.ordered("x", _square, [((2,), 1)]))
        # A cluster given by its address is named by it (the client stands in for the one the address opens).
        pool = Workers(scheduler="tcp://10.1.2.3:8786")
        pool._client = Client(OSError("comm closed"))
        with pytest.raises(ConnectionError, match=r"the Dask cluster \(tcp://10\.1\.2\.3:8786\) lost this run's"):
            list(pool.ordered("x", _square, [((2,), 1)]))
        # Control: a value arrives as it is; an error of the task itself is not turned into a cluster failure.
        class Ok(Client):
            def submit(self, fn, *args, pure=False):
                return _Done(fn(*args))

        assert list(Workers(scheduler=Ok(None)).ordered("x", _square, [((3,), 1)])) == [9]
        with pytest.raises(ZeroDivisionError):
            list(Workers(scheduler=Client(ZeroDivisionError("task"))).ordered("x", _square, [((2,), 1)]))


class TestOversubscription:
    def test_more_workers_than_cores_is_said_once(self, caplog, monkeypatch):
        import logging

        from learner import parallel

        monkeypatch.setattr(parallel, "available_cores", lambda: 2)
        monkeypatch.setattr(parallel, "_WARNED", set())
        with caplog.at_level(logging.WARNING, logger="learner.parallel"):
            assert parallel.pool_size(2) == 2 and parallel.pool_size("auto") == 2  # control: nothing said
            assert caplog.records == []
            assert parallel.pool_size(64) == 64 and parallel.pool_size(64) == 64
        [record] = caplog.records
        assert record.getMessage().startswith("64 workers on 2 core(s)") and "give at most 2" in record.getMessage()


def _pid_of(x):
    return os.getpid(), x


class TestPoolFrom:
    """A local pool starts only after ``pool_from`` merged examples (learn's POOL_FROM_EXAMPLES): below it the
    batches are computed in this process, above it on the pool, and the results are the same."""

    def test_batches_below_the_threshold_run_here_and_the_rest_on_the_pool(self):
        # sizes 4: batches 0 and 1 are formed after 0 and 4 merged examples (< 8): here; batch 2, after exactly 8,
        # and the rest: the pool
        with Workers(2, pool_from=8) as pool:
            out = list(pool.ordered("demo", _pid_of, [((i,), 4) for i in range(8)]))
            assert pool.pool_started and len(pool.pids()) == 2
        assert [x for _, x in out] == list(range(8))
        here = [pid == os.getpid() for pid, _ in out]
        assert here[:2] == [True] * 2 and not any(here[2:]), here
        assert pool.merged == 32 and pool.info["pool_started"] is True and pool.info["pool_from"] == 8

    def test_a_small_run_never_starts_the_pool(self):
        with Workers(2, pool_from=100) as pool:
            out = list(pool.ordered("demo", _pid_of, [((i,), 4) for i in range(5)]))
            assert pool.pids() == []
        assert all(pid == os.getpid() for pid, _ in out) and not pool.pool_started

    def test_zero_starts_the_pool_at_the_first_batch(self):
        with Workers(2) as pool:
            out = list(pool.ordered("demo", _pid_of, [((i,), 4) for i in range(4)]))
        assert not any(pid == os.getpid() for pid, _ in out) and pool.pool_started

    @pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), (True, TypeError),
                                            ("10", TypeError), (None, TypeError)])
    def test_pool_from_must_be_a_count(self, bad, error):
        with pytest.raises(error, match="pool_from"):
            Workers(2, pool_from=bad)

    @pytest.mark.slow  # a whole run end to end; the rules it meets have their own default-tier tests
    def test_learn_with_the_default_threshold(self, monkeypatch):
        """The default threshold (the conftest starts pools at once for the other tests): a run of this size
        stays in this process, with the result of one process; with the threshold at 0 it starts its pool."""
        monkeypatch.setattr(sys.modules["learner.learn"], "POOL_FROM_EXAMPLES", parallel.POOL_FROM_EXAMPLES)
        truth = _truth()
        cfg = LearnConfig(n_crude=40_000, n_refine=40_000, batch=20_000, outer_rounds=1)
        small = learn(LayerOracle(truth, 2, rng=1), m=2, config=cfg, rng=2, workers=2)
        alone = learn(LayerOracle(truth, 2, rng=1), m=2, config=cfg, rng=2, workers=1)
        assert small.examples_drawn < parallel.POOL_FROM_EXAMPLES
        assert small.execution["backend"] == "local" and small.execution["pool_started"] is False
        assert np.array_equal(small.layer.thetas, alone.layer.thetas) and small.examples_drawn == alone.examples_drawn
        monkeypatch.setattr(sys.modules["learner.learn"], "POOL_FROM_EXAMPLES", 0)
        pooled = learn(LayerOracle(truth, 2, rng=1), m=2, config=cfg, rng=2, workers=2)
        assert pooled.execution["pool_started"] is True
        assert np.array_equal(pooled.layer.thetas, alone.layer.thetas)

    def test_the_report_says_where_the_batches_ran(self):
        from learner.cli import _execution_sentence

        here = _execution_sentence({"backend": "local", "workers": 2, "pool_from": 400_000, "pool_started": False})
        assert here.startswith("batches: this process (the run merged fewer than 400,000 examples, below which")
        pooled = _execution_sentence({"backend": "local", "workers": 2, "pool_from": 400_000, "pool_started": True})
        assert pooled.startswith("batches: local with 2 worker(s);")
