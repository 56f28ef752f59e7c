"""The run-time-versus-m study: the paper's learner and gradient descent on the same planted layers.

A sweep runs every method on every setting ``(m, d, k)`` and seed, writes one
JSON record per run into ``OUT/runs/``, and summarises them: success rate,
median time, median examples, examples against the parameter-counting limit,
and a fitted growth of time and examples in ``m``.

Seeding. Run ``s`` of setting ``(m, d, k)`` uses the instance seed
``SeedSequence(entropy, spawn_key=(role, m, d, k, s))`` (``role`` 0 for the
measured runs, 1 for the learning-rate tuning runs), split by ``spawn(3)`` into
the planted layer's seed, the example stream's seed and the method's seed. A
run's randomness is therefore a function of its specification alone — not of
the order in which runs start, the backend or the worker — and both methods
see the same planted layer and the same stream of examples.

Backends. ``"serial"`` runs in this process; ``"local"`` (the default) in a
pool of spawned processes; ``"dask"`` on a Dask distributed cluster
(``scheduler=ADDRESS``; the optional extra ``distributed``). Local and Dask
workers run with one BLAS thread (Dask's default for its workers, set here for
the local pool too), so the records agree bit for bit apart from wall-clock
times and where the run happened (:func:`comparable`).

Locking and interruption. A writing sweep holds ``OUT/sweep.lock`` (its pid,
host and start time); a second writer is refused with the owner's name, and a
lock left by a dead process of this host is replaced (:func:`sweep_lock`).
Ctrl-C stops the workers within seconds, keeps every finished run's record and
raises :class:`SweepInterrupted`; the same call again resumes.

Resume. A run whose record exists in ``OUT/runs/`` with the same
specification is skipped; a record of a run that raised (``"outcome":
"error"``) is retried. A record with the same name but another specification
stops the sweep with an error rather than mixing two studies in one directory.

The study's design — the instances, the common success criterion, the tuning
rule for Adam, the fits — is ours; the paper proves the learner's guarantee
and does not report experiments.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import platform
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._validation import check_distribution, check_int, check_positive_float
from .parallel import SCHEDULER_CONNECT_TIMEOUT, WORKER_ENV  # noqa: F401 — re-exported (tests, docs)
from .parallel import kill_pool as _kill_pool

__all__ = [
    "METHODS",
    "RunSpec",
    "SweepInterrupted",
    "SweepLocked",
    "SweepResult",
    "comparable",
    "fit_growth",
    "param_limit",
    "plan_runs",
    "planted_instance",
    "run_one",
    "run_sweep",
    "scaling_study",
    "sound_d",
    "summarise",
    "sweep_lock",
    "yield_of",
]

log = logging.getLogger(__name__)

RECORD_SCHEMA = 2  # 2: the planted layer's logit scale is part of the specification
METHODS = ("provable", "adam")
BACKENDS = ("serial", "local", "dask")
ROLES = {"eval": 0, "tune": 1}
#: Keys that hold wall-clock times or the place a run happened (and any key ending in
#: ``_seconds``); :func:`comparable` drops them.
VOLATILE_KEYS = frozenset({"timings", "seconds", "where", "execution"})
#: The study's family (ours): logit scale 1, k = 2, d from :func:`sound_d` (DESIGN §3, issue 15).
DEFAULT_LOGIT_SCALE = 1.0
SOUND_D_START, SOUND_D_STEP = 12, 4
#: ``--quick``: budgets small enough for a smoke test in seconds (not a measurement: the learner runs out
#: of examples and Adam of iterations).
QUICK_OPTIONS = {
    "provable": {"n_crude": 5000, "crude_max_examples": 20000, "max_examples": 20000, "n_refine": 5000,
                 "n_search": 500, "max_nfev": 20},
    "adam": {"max_iter": 30, "n_train": 300, "n_val": 100, "restarts": 1},
}
#: The example stream each method's records were drawn from. The learner's phases 1–4 draw
#: per-batch seeded streams since version 2 (issue 16, learner.parallel); its records of
#: stream 1 (sequential draws) no longer reproduce and are re-run on resume. Adam draws
#: sequentially as before.
EXAMPLE_STREAM = {"provable": 2, "adam": 1}


def param_limit(m, d, k):
    """The parameter-counting limit ``2md²/(kd)``: examples needed to match the number of unknowns.

    A layer has ``2md²`` parameters (``Θ_i`` and ``W_i``); an example gives ``k·d``
    numbers. No method can identify the layer from fewer examples than this
    (generically), so ``examples_drawn / param_limit`` measures the overhead.

    >>> param_limit(2, 8, 4)
    8.0
    """
    return 2.0 * m * d * d / (k * d)


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines one run (and nothing that does not).

    ``options`` are keyword arguments of the method: :class:`~learner.phases.LearnConfig`
    fields for ``"provable"``, :func:`~learner.baseline.fit_gradient` arguments for ``"adam"``.
    """

    method: str
    m: int
    d: int
    k: int
    seed_index: int
    entropy: int
    role: str = "eval"
    distribution: str = "boolean"
    options: tuple = ()  # sorted (name, value) pairs: hashable and order-free
    logit_scale: float = DEFAULT_LOGIT_SCALE

    @property
    def spawn_key(self):
        return (ROLES[self.role], self.m, self.d, self.k, self.seed_index)

    @property
    def run_id(self):
        """File-name-safe identifier, unique within a sweep."""
        lr = dict(self.options).get("lr")
        tag = f"-lr{lr:g}" if self.role == "tune" else ""
        return (f"{self.method}-{self.role}{tag}-m{self.m}-d{self.d}-k{self.k}-ls{self.logit_scale:g}"
                f"-{self.distribution}-s{self.seed_index}")

    def to_dict(self):
        return {"method": self.method, "role": self.role, "m": self.m, "d": self.d, "k": self.k,
                "distribution": self.distribution, "seed_index": self.seed_index, "entropy": self.entropy,
                "spawn_key": list(self.spawn_key), "options": dict(self.options), "logit_scale": self.logit_scale}

    @classmethod
    def from_dict(cls, rec):
        return cls(rec["method"], rec["m"], rec["d"], rec["k"], rec["seed_index"], rec["entropy"],
                   role=rec["role"], distribution=rec["distribution"], options=tuple(sorted(rec["options"].items())),
                   logit_scale=float(rec["logit_scale"]))


def _versions():
    import scipy

    from . import __version__

    return {"learner": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "python": platform.python_version(), "machine": platform.machine()}


def planted_instance(spec):
    """The planted layer, the oracle of its examples and the method's seed of a run.

    ``SeedSequence(spec.entropy, spawn_key=spec.spawn_key).spawn(3)`` seeds, in
    order, :func:`~learner.instances.random_layer` (default logit scale 3), the
    :class:`~learner.oracle.LayerOracle` and the method. The method is not part
    of the key, so every method of a sweep meets the same layer and examples.
    """
    from .instances import random_layer
    from .oracle import LayerOracle

    layer_seed, oracle_seed, method_seed = np.random.SeedSequence(spec.entropy, spawn_key=spec.spawn_key).spawn(3)
    truth = random_layer(spec.m, spec.d, logit_scale=spec.logit_scale, rng=layer_seed)
    return truth, LayerOracle(truth, spec.k, distribution=spec.distribution, rng=oracle_seed), method_seed


def run_one(spec, learn_workers=None):
    """Run one specification (a :class:`RunSpec` or its dict) and return its JSON-ready record.

    ``learn_workers`` is the learner's own local pool (:func:`learner.learn`'s
    ``workers``); it changes where the batches run, never the record
    (``execution`` says where they ran).

    Never raises for a failure of the run itself: an exception becomes a
    record with ``"outcome": "error"`` and its traceback, so a sweep goes on.
    """
    if isinstance(spec, dict):
        spec = RunSpec.from_dict(spec)
    from .baseline import fit_gradient
    from .learn import learn
    from .phases import LearnConfig

    t0 = time.perf_counter()
    limit = param_limit(spec.m, spec.d, spec.k)
    where = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        truth, oracle, method_seed = planted_instance(spec)
        options = dict(spec.options)
        if spec.method == "provable":
            result = learn(oracle, m=spec.m, config=LearnConfig(**options), truth=truth, rng=method_seed,
                           progress=False,  # workers share the terminal with the sweep's own bar
                           workers=learn_workers)
        elif spec.method == "adam":
            result = fit_gradient(oracle, m=spec.m, optimizer="adam", truth=truth, rng=method_seed, **options)
        else:
            raise ValueError(f"`method` must be one of {METHODS}; got method={spec.method!r}.")
    except Exception as exc:  # noqa: BLE001 — a failed run is recorded, the sweep goes on
        log.warning("run %s failed: %s: %s", spec.run_id, type(exc).__name__, exc)
        return _failure_record(spec, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                               {"total": time.perf_counter() - t0}, where)
    full = result.to_dict()
    return _record_head(spec) | {
        "outcome": "finished", "success": bool(result.success), "status": result.status,
        "message": result.message, "examples_drawn": int(result.examples_drawn),
        "examples_ratio": result.examples_drawn / limit, "errors": full["errors"],
        "diagnostics": full["diagnostics"], "timings": full["timings"], "where": where,
        "execution": full.get("execution", {})}


def _record_head(spec):
    return {"schema_version": RECORD_SCHEMA, "kind": "scaling-run", "run_id": spec.run_id, "spec": spec.to_dict(),
            "example_stream": EXAMPLE_STREAM.get(spec.method, 1), "versions": _versions(),
            "param_limit": param_limit(spec.m, spec.d, spec.k)}


def _failure_record(spec, message, tb, timings, where):
    """The record of a run that raised (or whose worker died): no result, the reason and traceback."""
    return _record_head(spec) | {
        "outcome": "error", "success": False, "status": "error", "message": message, "traceback": tb,
        "examples_drawn": None, "examples_ratio": None, "errors": {}, "diagnostics": {}, "timings": timings,
        "where": where}


def comparable(record):
    """The record without wall-clock times and the place it ran: what must agree across backends."""
    if isinstance(record, dict):
        return {key: comparable(value) for key, value in record.items()
                if key not in VOLATILE_KEYS and not key.endswith("_seconds")}
    if isinstance(record, list):
        return [comparable(value) for value in record]
    return record


# --------------------------------------------------------------------------- execution


class _Runner:
    """Runs specifications on a backend; iterate for ``(spec, record)`` as runs finish.

    After an interruption, :meth:`finished` gives every run that completed —
    including those that completed while the interruption was handled — and
    :meth:`stop` ends the workers at once (the local pool's processes are
    killed; Dask futures are cancelled).
    """

    def __init__(self, specs, *, backend, workers, scheduler, learn_workers=None):
        self.specs, self.backend, self.workers, self.scheduler = list(specs), backend, workers, scheduler
        self.learn_workers = learn_workers
        self._futures, self._pool, self._client = {}, None, None

    def __iter__(self):
        if not self.specs:
            return
        if self.backend == "serial":
            for spec in self.specs:
                yield spec, run_one(spec.to_dict(), self.learn_workers)
        elif self.backend == "local":
            from concurrent.futures import as_completed

            from .parallel import local_pool

            self._pool = local_pool(self.workers)
            self._futures = {self._pool.submit(run_one, spec.to_dict()): spec for spec in self.specs}
            for fut in as_completed(self._futures):
                yield self._futures[fut], _collect(self._futures[fut], fut.result)
        else:
            from dask.distributed import as_completed

            from .parallel import connect_client

            self._client = connect_client(self.scheduler)
            self._futures = {self._client.submit(run_one, spec.to_dict(), key=f"scaling-{spec.run_id}-{spec.entropy}",
                                                 pure=False): spec for spec in self.specs}
            for fut in as_completed(self._futures):
                yield self._futures[fut], _collect(self._futures[fut], fut.result)

    def finished(self):
        """``(spec, record)`` of every run whose worker has returned a record so far."""
        out = []
        for fut, spec in self._futures.items():
            if self.backend == "dask":
                ok = fut.status == "finished"
            else:
                ok = fut.done() and not fut.cancelled() and fut.exception() is None
            if ok:
                out.append((spec, fut.result()))
        return out

    def stop(self):
        """End the workers now (idempotent); runs in flight are lost, finished ones were returned."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            # Kill rather than wait: a worker may be minutes into a run. ``_processes`` is the executor's
            # own table (Python >= 3.14 has ``kill_workers()``; use it when present).
            _kill_pool(pool)
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(Exception):
                client.cancel(list(self._futures))
            client.close()

    def close(self):
        """Release the backend after a normal end (every run already returned)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True)
        if self._client is not None:
            client, self._client = self._client, None
            client.close()


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (SIGINT): every run that finished is recorded; rerun to resume.

    Attributes ``recorded`` (records in ``out/runs`` of this sweep), ``total`` (runs
    of the sweep) and ``out``.
    """

    def __init__(self, recorded, total, out):
        self.recorded, self.total, self.out = recorded, total, Path(out)
        super().__init__(f"interrupted: {recorded} of {total} runs are recorded in {self.out / 'runs'}; run the "
                         "same command again to resume (recorded runs are skipped).")


class SweepLocked(RuntimeError):
    """Another process is writing the same sweep directory."""


#: Name of the lock file a writing sweep keeps in its directory.
LOCK_NAME = "sweep.lock"
_HELD_LOCKS = {}


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@contextlib.contextmanager
def sweep_lock(out):
    """Hold ``out/sweep.lock`` (owner's pid, host and start time) while a sweep writes ``out``.

    A second writer — another process, here or on another host sharing the
    directory — gets :class:`SweepLocked` naming the owner. A lock left by a
    process of this host that no longer exists is stale: it is replaced, with a
    warning. A lock from another host cannot be checked and is never taken
    over; the message says how to remove it. Re-entrant within one process.
    """
    out = Path(out)
    path = (out / LOCK_NAME).resolve()
    if _HELD_LOCKS.get(path):
        _HELD_LOCKS[path] += 1
        try:
            yield path
        finally:
            _HELD_LOCKS[path] -= 1
        return
    out.mkdir(parents=True, exist_ok=True)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    blob = json.dumps(me).encode("utf-8")
    for _attempt in range(3):
        tmp = path.with_name(f".{LOCK_NAME}.{me['pid']}.tmp")
        tmp.write_bytes(blob)
        try:
            os.link(tmp, path)  # atomic: fails if the lock exists, and the lock is never seen half-written
            break
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        try:
            owner = json.loads(path.read_text(encoding="utf-8"))
            pid, host = int(owner["pid"]), str(owner["host"])
        except FileNotFoundError:
            continue  # released meanwhile: try again
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SweepLocked(f"{path} exists but is not a readable lock ({exc}); if no sweep is writing {out}, "
                              "delete it and run again.") from None
        if host == me["host"] and not _pid_alive(pid):
            log.warning("removing the stale lock %s of process %d on %s (no longer running)", path, pid, host)
            path.unlink(missing_ok=True)
            continue
        where = "this host" if host == me["host"] else f"host {host!r}"
        raise SweepLocked(f"another sweep is writing {out}: process {pid} on {where} holds {path} (since "
                          f"{owner.get('started', '?')}). Wait for it, stop it, or use another --out; if that "
                          "process is gone, delete the lock file and run again.")
    else:
        raise SweepLocked(f"could not take the lock {path} after 3 attempts; another sweep is starting in {out}.")
    _HELD_LOCKS[path] = 1
    try:
        yield path
    finally:
        del _HELD_LOCKS[path]
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == me["pid"]:
                path.unlink()


def _collect(spec, get):
    """The record a worker returned, or a failure record when the worker itself died."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 — e.g. a killed worker process; recorded, the sweep goes on
        return _failure_record(spec, f"the worker failed: {type(exc).__name__}: {exc}",
                               "".join(traceback.format_exception_only(exc)), {}, {})


def _progress(total, enabled):
    if not enabled:
        from ._progress import NoBar

        return NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="run", desc="scaling", dynamic_ncols=True)


def _read_record(path):
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring unreadable record %s (%s); its run is repeated", path, exc)
        return None
    if not isinstance(rec, dict) or rec.get("kind") != "scaling-run":
        raise ValueError(f"{path} is not a scaling-run record; `out` must be a directory of this sweep.")
    if rec.get("schema_version") != RECORD_SCHEMA:
        raise ValueError(f"{path} has schema_version={rec.get('schema_version')!r}; this version reads "
                         f"{RECORD_SCHEMA}. Use a new `out` directory.")
    return rec


def run_sweep(specs, out, *, backend="local", workers=None, scheduler=None, progress=False, learn_workers=None):
    """Run the specifications not yet finished in ``out/runs/`` and return every record, in ``specs`` order.

    Parameters
    ----------
    specs : sequence of RunSpec
    out : path
        Directory of the sweep (created); records go to ``out/runs/<run_id>.json``.
    backend : {"serial", "local", "dask"}
    workers : int, optional
        Processes of the local pool (default: the number of CPUs).
    scheduler : str, optional
        Address of a Dask scheduler (``backend="dask"``).
    progress : bool
        Show a tqdm progress bar on stderr.
    learn_workers : int, optional
        Local processes of each learner run's own pool (:func:`learner.learn`'s
        ``workers``); only with ``backend="serial"`` (one run at a time, its
        batches spread over the cores) — a pool inside every pool worker would
        oversubscribe the machine.

    Returns
    -------
    records : list of dict
    stats : dict
        ``{"ran": ..., "skipped": ...}``.

    Raises
    ------
    SweepLocked
        Another live process holds ``out/sweep.lock`` (see :func:`sweep_lock`).
    SweepInterrupted
        On Ctrl-C (a ``KeyboardInterrupt``): the workers are stopped at once, every
        run that finished is recorded, and calling again resumes.
    """
    if backend not in BACKENDS:
        raise ValueError(f"`backend` must be one of {BACKENDS}; got backend={backend!r}.")
    if backend == "dask" and not scheduler:
        raise ValueError("`scheduler` (a Dask scheduler address) is needed with backend='dask'; got scheduler=None.")
    if workers is None:
        workers = os.cpu_count() or 1
    workers = check_int("workers", workers)
    if learn_workers is not None:
        learn_workers = check_int("learn_workers", learn_workers)
        if learn_workers > 1 and backend != "serial":
            raise ValueError(f"`learn_workers` > 1 needs backend='serial' (one run at a time, its batches on the "
                             f"pool); got learn_workers={learn_workers}, backend={backend!r}.")
    ids = [s.run_id for s in specs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"`specs` must have distinct run ids; {dup!r} appears twice.")
    with sweep_lock(out):
        return _run_locked(specs, Path(out), ids, backend=backend, workers=workers, scheduler=scheduler,
                           progress=progress, learn_workers=learn_workers)


def _run_locked(specs, out, ids, *, backend, workers, scheduler, progress, learn_workers):
    from .io import write_json

    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    done, todo = {}, []
    for spec in specs:
        path = runs / f"{spec.run_id}.json"
        rec = _read_record(path) if path.exists() else None
        if rec is not None and rec["spec"] != json.loads(json.dumps(spec.to_dict())):
            raise ValueError(f"{path} records another specification ({rec['spec']}) than this sweep's "
                             f"({spec.to_dict()}); use a new `out` directory or the same parameters.")
        stream = EXAMPLE_STREAM.get(spec.method, 1)
        if rec is not None and rec.get("example_stream", 1) != stream:
            log.info("%s was drawn from example stream %s; this version draws stream %s: run again",
                     path.name, rec.get("example_stream", 1), stream)
            rec = None
        if rec is not None and rec.get("outcome") == "finished":
            done[spec.run_id] = rec
        else:
            todo.append(spec)
    if done:
        log.info("resuming: %d of %d runs already recorded in %s", len(done), len(specs), runs)

    def save(spec, rec):
        rec["where"] = rec.get("where", {}) | {"backend": backend}
        write_json(runs / f"{spec.run_id}.json", rec)
        done[spec.run_id] = json.loads((runs / f"{spec.run_id}.json").read_text(encoding="utf-8"))
        log.info("run %s: %s (%s)", spec.run_id, done[spec.run_id]["status"], done[spec.run_id]["message"][:120])

    runner = _Runner(todo, backend=backend, workers=workers, scheduler=scheduler, learn_workers=learn_workers)
    bar = _progress(len(todo), progress)
    saved, clean = set(), False
    try:
        for spec, rec in runner:
            save(spec, rec)
            saved.add(spec.run_id)
            bar.update(1)
        clean = True
    except KeyboardInterrupt:
        # Keep every run that finished, including those that finished while we were interrupted, then end
        # the workers without waiting for the runs in flight.
        late = [(spec, rec) for spec, rec in runner.finished() if spec.run_id not in saved]
        runner.stop()
        for spec, rec in late:
            save(spec, rec)
        recorded = sum(1 for i in ids if i in done and done[i].get("outcome") == "finished")
        raise SweepInterrupted(recorded, len(specs), out) from None
    finally:
        if clean:
            runner.close()
        else:
            runner.stop()
        bar.close()
    return [done[i] for i in ids], {"ran": len(todo), "skipped": len(specs) - len(todo)}


# --------------------------------------------------------------------------- the study


def plan_runs(*, ms, d, k, seeds, methods, entropy, role="eval", distribution="boolean", options=None,
              logit_scale=DEFAULT_LOGIT_SCALE):
    """The specifications of ``methods × ms × seeds`` (``options[method]`` are the method's keyword arguments)."""
    options = options or {}
    return [RunSpec(method, m, d, k, s, entropy, role=role, distribution=distribution,
                    options=tuple(sorted((options.get(method) or {}).items())), logit_scale=float(logit_scale))
            for method in methods for m in ms for s in range(seeds)]


def sound_d(m, k, *, distribution="boolean", start=SOUND_D_START, step=SOUND_D_STEP, limit=64):
    """The study's token dimension for ``(m, k)``: the smallest ``d`` in ``start, start + step, …`` that
    :func:`learner.assumptions.check_setting` calls sound (ours: 12 for m <= 4 at k = 2, 16 for m = 5).

    Starting at 12 rather than at the smallest sound d keeps clear of the small-d instances where the
    learner's phase 3 is unreliable (e.g. (1, 6, 2) and (2, 8, 2) fail on some seeds).
    """
    from .assumptions import check_setting

    m, k = check_int("m", m), check_int("k", k, minimum=2)
    for d in range(max(start, k + 1), limit + 1, step):
        if check_setting(m, d, k, distribution=distribution).ok:
            return d
    raise ValueError(f"no sound d <= {limit} for m={m}, k={k} ({distribution} inputs); give `d` explicitly.")


def fit_growth(ms, values):
    """Least-squares fits of ``log value`` against ``log m`` (a power ``m^p``) and against ``m`` (``base^m``).

    Returns a dict with ``power``, ``base``, the root-mean-square residual in
    natural log of each fit, and the number of points. With fewer than two
    distinct ``m`` (or a non-positive value) the fitted figures are ``nan``.
    With three points both fits have one degree of freedom: they describe the
    measured range and do not tell a polynomial from an exponential.

    >>> g = fit_growth([1, 2, 3], [2.0, 8.0, 18.0])
    >>> round(g["power"], 6), g["points"]
    (2.0, 3)
    >>> round(fit_growth([1, 2, 3], [3.0, 9.0, 27.0])["base"], 6)
    3.0
    """
    ms = np.asarray(ms, dtype=float)
    vals = np.asarray(values, dtype=float)
    if ms.shape != vals.shape or ms.ndim != 1:
        raise ValueError(f"`ms` and `values` must be vectors of one length; got {ms.shape} and {vals.shape}.")
    out = {"power": math.nan, "power_rms_log": math.nan, "base": math.nan, "base_rms_log": math.nan,
           "points": int(ms.size)}
    if len(np.unique(ms)) < 2 or not np.all(vals > 0) or not np.all(ms > 0):
        return out
    y = np.log(vals)
    for name, x, transform in (("power", np.log(ms), float), ("base", ms, math.exp)):
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
        out[name] = transform(slope)
        out[f"{name}_rms_log"] = float(np.sqrt(np.mean(resid**2)))
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def summarise(records, *, success_tol=1e-3):
    """Rows per (method, m, d, k) and fitted growth in m per method, from measured (``role="eval"``) records.

    ``success`` in the table is the common criterion: relative error of ``F``
    against the planted layer on fresh inputs at most ``success_tol``;
    ``own_success`` is each method's own criterion (the learner's is far
    stricter: ``1e-10`` and the paper's identifiability conditions). Times and
    examples are medians over all finished runs, successful or not (what a
    user pays); runs that raised count as failures and are excluded from the
    medians. The median relative error is over the runs that returned a layer
    (``layers_returned`` of them).
    """
    groups = {}
    for rec in records:
        spec = rec["spec"]
        if spec["role"] != "eval":
            continue
        groups.setdefault((spec["method"], spec["m"], spec["d"], spec["k"]), []).append(rec)
    rows = []
    for (method, m, d, k), recs in sorted(groups.items()):
        finished = [r for r in recs if r["outcome"] == "finished"]
        rel = [r["errors"].get("relative_error") for r in finished]
        ok = [r is not None and r <= success_tol for r in rel] + [False] * (len(recs) - len(finished))
        rows.append({
            "method": method, "m": m, "d": d, "k": k, "runs": len(recs), "errors_raised": len(recs) - len(finished),
            "success_rate": float(np.mean(ok)), "own_success_rate": float(np.mean([r["success"] for r in recs])),
            "median_seconds": _median([r["timings"].get("total") for r in finished]),
            "median_examples": _median([r["examples_drawn"] for r in finished]),
            "param_limit": param_limit(m, d, k),
            "median_examples_ratio": _median([r["examples_ratio"] for r in finished]),
            "median_relative_error": _median(rel),  # over the runs that returned a layer
            "layers_returned": sum(r is not None for r in rel),
            "statuses": {s: sum(r["status"] == s for r in recs) for s in sorted({r["status"] for r in recs})},
            "median_yield": _median([yield_of(r) for r in finished]),
            "tol_phase4": _median([((r.get("diagnostics") or {}).get("4_refined_sculpt") or {}).get("tol")
                                   for r in finished]),
        })
    growth = {}
    for method, k in sorted({(r["method"], r["k"]) for r in rows}):
        mine = [r for r in rows if (r["method"], r["k"]) == (method, k) and r["median_seconds"] is not None]
        label = method if len({r["k"] for r in rows}) == 1 else f"{method}, k={k}"
        growth[label] = {
            "seconds": fit_growth([r["m"] for r in mine], [r["median_seconds"] for r in mine]),
            "examples": fit_growth([r["m"] for r in mine], [r["median_examples"] for r in mine]),
            "ms": [r["m"] for r in mine],
        }
    return {"success_tol": success_tol, "rows": rows, "growth": growth}


def _setting_label(m, d, k):
    return f"m={m}, d={d}, k={k}"


def yield_of(record):
    """The certification yield of a learner run: phase 4's constraints per 1000 examples (its last round).

    None for other methods and for runs that did not reach phase 4.
    """
    p4 = (record.get("diagnostics") or {}).get("4_refined_sculpt")
    return None if not p4 else p4.get("constraints_per_1000_examples")


def _choose_lr(records, lrs):
    """Per setting (m, d, k), the learning rate with the lowest median validation relative error over the
    tuning runs; keys are ``"m=.., d=.., k=.."``."""
    by_m = {}
    for rec in records:
        spec = rec["spec"]
        val = None
        if rec["outcome"] == "finished":
            val = rec["diagnostics"].get("fit", {}).get("val_relative_error")
        key = _setting_label(spec["m"], spec["d"], spec["k"])
        by_m.setdefault(key, {}).setdefault(spec["options"]["lr"], []).append(math.inf if val is None else val)
    chosen = {}
    for m, per_lr in by_m.items():
        medians = {lr: float(np.median(per_lr[lr])) for lr in lrs}
        best = min(lrs, key=lambda lr: (medians[lr], lrs.index(lr)))  # ties: the first in the grid
        chosen[m] = {"lr": best, "median_val_relative_error": medians}
    return chosen


@dataclass(frozen=True)
class SweepResult:
    """What :func:`scaling_study` measured; ``summary`` is also written to ``out/summary.json``."""

    records: list = field(repr=False)
    tuning_records: list = field(repr=False)
    summary: dict
    stats: dict
    files: dict

    def table(self):
        """The summary as a Markdown table, followed by the fitted growth and the tuning choice."""
        s = self.summary
        lines = [(f"| method | m | d | k | runs | success (rel. err ≤ {s['success_tol']:g}) | own criterion "
                  "| median s | median examples | limit 2md²/(kd) | examples / limit | yield /1000 ex. "
                  "| median rel. err (layers returned) | statuses |"),
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

        def fmt(x, spec):
            return "–" if x is None else format(x, spec)

        for r in s["rows"]:
            statuses = ", ".join(f"{k} {v}" for k, v in r["statuses"].items())
            lines.append(f"| {r['method']} | {r['m']} | {r['d']} | {r['k']} | {r['runs']} | {r['success_rate']:.0%} | "
                         f"{r['own_success_rate']:.0%} | {fmt(r['median_seconds'], '.1f')} | "
                         f"{fmt(r['median_examples'], ',.0f')} | {r['param_limit']:g} | "
                         f"{fmt(r['median_examples_ratio'], '.3g')} | {fmt(r.get('median_yield'), '.3g')} | "
                         f"{fmt(r['median_relative_error'], '.2g')} "
                         f"({r['layers_returned']}/{r['runs']}) | "
                         f"{statuses} |")
        lines.append("")
        for method, g in s["growth"].items():
            for what in ("seconds", "examples"):
                f = g[what]
                power = round(f["power"], 2) + 0.0  # no "-0.00"
                lines.append(f"{method}, median {what} over m = {g['ms']}: ∝ m^{power:.2f} "
                             f"(rms log residual {f['power_rms_log']:.2f}) or ∝ {f['base']:.2f}^m "
                             f"(rms {f['base_rms_log']:.2f})")
        tuning = s.get("tuning")
        if tuning:
            lines.append("")
            lines.append(f"Adam's learning rate, per setting, from the grid {tuning['grid']} on {tuning['seeds']} "
                         "tuning instance(s) not among the measured ones (lowest median validation relative error):")
            for m, c in tuning["chosen"].items():
                meds = ", ".join(f"{lr:g}: {v:.2g}" for lr, v in c["median_val_relative_error"].items())
                lines.append(f"  {m}: lr = {c['lr']:g}  ({meds})")
        return "\n".join(lines)


def scaling_study(out, *, ms=(1, 2, 3, 4, 5), d="auto", k=2, logit_scale=DEFAULT_LOGIT_SCALE, seeds=10,
                  methods=METHODS, distribution="boolean", adam_lrs=(1e-2, 3e-2), tune_seeds=1,
                  adam_options=None, provable_options=None, success_tol=1e-3, seed=0, backend="local", workers=None,
                  scheduler=None, progress=False, plot=True, learn_workers=None):
    """Run the study: tune Adam's learning rate, run every method on every ``(m, seed)``, summarise, plot.

    Parameters
    ----------
    out : path
        Directory of the sweep: ``runs/`` (one JSON record per run, tuning runs
        included), ``summary.json``, ``summary.md`` and ``scaling.png``.
    ms : sequence of int
        Numbers of heads.
    d : int or "auto"
        Token dimension; ``"auto"`` (default) takes :func:`sound_d` per ``(m, k)``:
        12 for m <= 4 and 16 for m = 5 at k = 2.
    k : int or sequence of int
        Tokens per sequence; several values sweep k too (every m at every k).
    logit_scale : float
        Frobenius norm of each planted ``Θ_i`` (:func:`~learner.random_layer`); default 1.
    seeds : int
        Planted layers per ``m``; run ``s`` of every method uses the same layer and examples.
    methods : sequence of {"provable", "adam"}
    distribution : {"boolean", "gaussian"}
    adam_lrs : sequence of float
        Adam's learning-rate grid. With more than one value, each setting first
        runs Adam at every value on ``tune_seeds`` tuning layers (seeded apart
        from the measured ones) and the measured runs use the value with the
        lowest median validation relative error. Default (0.01, 0.03) on one
        tuning layer: in the earlier d = 8 study 0.03 won at every m and 0.003,
        never chosen, cost 3–8× the time (55–166 s per run at m <= 2, d = 12).
    tune_seeds : int
    adam_options, provable_options : dict, optional
        Further keyword arguments of :func:`~learner.baseline.fit_gradient` /
        fields of :class:`~learner.phases.LearnConfig`.
    success_tol : float
        The common success criterion of the summary (relative error of ``F`` on fresh inputs).
    seed : int
        Entropy of every run's seed (recorded).
    backend, workers, scheduler, progress, learn_workers
        As in :func:`run_sweep`.
    plot : bool
        Write ``scaling.png`` (needs matplotlib, the ``plot`` extra; skipped with a warning without it).

    Returns
    -------
    SweepResult
    """
    ms = [check_int("ms", m) for m in ms]
    if not ms or len(set(ms)) != len(ms):
        raise ValueError(f"`ms` must be distinct positive integers; got ms={ms}.")
    ks = [check_int("k", kk, minimum=2) for kk in (k if isinstance(k, (list, tuple)) else [k])]
    if not ks or len(set(ks)) != len(ks):
        raise ValueError(f"`k` must be distinct integers >= 2; got k={k}.")
    if not (isinstance(d, str) and d == "auto"):
        d = check_int("d", d)
    logit_scale = check_positive_float("logit_scale", logit_scale)
    distribution = check_distribution(distribution)
    settings = [(m, sound_d(m, kk, distribution=distribution) if d == "auto" else d, kk) for kk in ks for m in ms]
    seeds, tune_seeds = check_int("seeds", seeds), check_int("tune_seeds", tune_seeds)
    methods = list(methods)
    if not methods or any(mt not in METHODS for mt in methods) or len(set(methods)) != len(methods):
        raise ValueError(f"`methods` must be distinct entries of {METHODS}; got methods={methods}.")
    for m, dd, kk in settings:
        if "provable" in methods and kk >= dd:
            raise ValueError(f"the provable learner needs k < d; got k={kk}, d={dd}.")
    adam_lrs = [check_positive_float("adam_lrs", lr) for lr in adam_lrs]
    if not adam_lrs or len(set(adam_lrs)) != len(adam_lrs):
        raise ValueError(f"`adam_lrs` must be distinct positive numbers; got adam_lrs={adam_lrs}.")
    success_tol = check_positive_float("success_tol", success_tol)
    entropy = check_int("seed", seed, minimum=0)
    adam_options = dict(adam_options or {})
    if "lr" in adam_options:
        raise ValueError("`adam_options` must not set 'lr'; give the grid as `adam_lrs`.")
    provable_options = dict(provable_options or {})
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"`out` must be a directory; got out={str(out)!r}, which is a file.")
    ex = {"backend": backend, "workers": workers, "scheduler": scheduler, "progress": progress,
          "learn_workers": learn_workers}

    with sweep_lock(out):  # the whole study: tuning, measured runs, summary and plot
        tuning_records, tuning = [], None
        lr_for = dict.fromkeys(settings, adam_lrs[0])
        common = {"entropy": entropy, "distribution": distribution, "logit_scale": logit_scale}
        if "adam" in methods and len(adam_lrs) > 1:
            specs = [s for lr in adam_lrs for (m, dd, kk) in settings
                     for s in plan_runs(ms=[m], d=dd, k=kk, seeds=tune_seeds, methods=["adam"], role="tune",
                                        options={"adam": adam_options | {"lr": lr}}, **common)]
            log.info("tuning Adam's learning rate: %d runs", len(specs))
            tuning_records, tstats = run_sweep(specs, out, **ex)
            chosen = _choose_lr(tuning_records, adam_lrs)
            lr_for = {st: chosen[_setting_label(*st)]["lr"] for st in settings}
            tuning = {"grid": adam_lrs, "seeds": tune_seeds, "chosen": chosen, "rule": "lowest median validation "
                      "relative error over the tuning runs; ties go to the first value in the grid"}
        else:
            tstats = {"ran": 0, "skipped": 0}
        specs = []
        for method in methods:
            for st in settings:
                m, dd, kk = st
                opts = provable_options if method == "provable" else adam_options | {"lr": lr_for[st]}
                specs += plan_runs(ms=[m], d=dd, k=kk, seeds=seeds, methods=[method], options={method: opts},
                                   **common)
        # Seed-major order: a sweep stopped early has every setting for its first seeds.
        specs.sort(key=lambda s: (s.seed_index, s.k, s.m, methods.index(s.method)))
        records, stats = run_sweep(specs, out, **ex)
        summary = summarise(records, success_tol=success_tol)
        summary |= {"tuning": tuning, "parameters": {
            "ms": ms, "d": d, "k": ks, "settings": [list(st) for st in settings], "logit_scale": logit_scale,
            "seeds": seeds, "methods": methods, "distribution": distribution,
            "adam_lrs": adam_lrs, "tune_seeds": tune_seeds, "adam_options": adam_options,
            "provable_options": provable_options, "seed": entropy}, "versions": _versions(),
            "note": f"study design ours (instances: learner.random_layer, logit scale {logit_scale:g}); the paper "
                    "reports no experiments. Medians over all finished runs, successful or not."}
        stats = {"ran": stats["ran"] + tstats["ran"], "skipped": stats["skipped"] + tstats["skipped"]}
        from .io import _atomic_write, write_json

        files = {"summary_json": str(write_json(out / "summary.json", summary))}
        result = SweepResult(records, tuning_records, summary, stats, files)
        table = result.table().encode("utf-8") + b"\n"
        _atomic_write(out / "summary.md", lambda fh: fh.write(table))
        files["summary_md"] = str(out / "summary.md")
        if plot:
            try:
                files["plot"] = str(plot_scaling(records, out / "scaling.png", success_tol=success_tol))
            except ImportError:
                log.warning("matplotlib is not installed (the `plot` extra): no scaling.png")
        return result


def plot_scaling(records, path, *, success_tol=1e-3):
    """Two panels, log scale: seconds and examples drawn against m, every run a point, medians joined.

    Successful runs (relative error at most ``success_tol``) are filled, failed ones hollow.
    The examples panel also shows the parameter-counting limit ``2md²/(kd)``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .io import _atomic_write

    evals = [r for r in records if r["spec"]["role"] == "eval" and r["outcome"] == "finished"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"provable": "C0", "adam": "C1"}
    ks = sorted({r["spec"]["k"] for r in evals})
    styles = ["-", "--", "-.", ":"]
    for method, k in sorted({(r["spec"]["method"], r["spec"]["k"]) for r in evals}):
        mine = [r for r in evals if (r["spec"]["method"], r["spec"]["k"]) == (method, k)]
        ms = sorted({r["spec"]["m"] for r in mine})
        name = method if len(ks) == 1 else f"{method}, k={k}"
        style = styles[ks.index(k) % len(styles)]
        for ax, key in zip(axes, ("seconds", "examples")):
            def value(r, key=key):
                return r["timings"]["total"] if key == "seconds" else r["examples_drawn"]

            for r in mine:
                ok = (r["errors"].get("relative_error") or math.inf) <= success_tol
                jitter = 0.08 if method == "adam" else -0.08
                ax.scatter(r["spec"]["m"] + jitter, value(r), s=18, color=colors.get(method, "k"),
                           facecolors=colors.get(method, "k") if ok else "none", alpha=0.8)
            meds = [np.median([value(r) for r in mine if r["spec"]["m"] == m]) for m in ms]
            ax.plot(ms, meds, style, color=colors.get(method, "k"), label=f"{name} (median)")
    if evals:
        ms = sorted({r["spec"]["m"] for r in evals})
        dk = {}
        for r in evals:
            dk.setdefault(r["spec"]["m"], (r["spec"]["d"], r["spec"]["k"]))
        axes[1].plot(ms, [param_limit(m, *dk[m]) for m in ms], "k:", label="limit 2md²/(kd)")
        ds = ", ".join(f"{m}: {dk[m][0]}" for m in ms)
        axes[0].set_title(f"time per run (d per m: {ds}; k = {', '.join(map(str, ks))})", fontsize=9)
        axes[1].set_title("examples drawn")
    for ax, label in zip(axes, ("seconds", "examples")):
        if evals:
            ax.set_xticks(ms)
        ax.set_yscale("log")
        ax.set_xlabel("heads m")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    fig.text(0.5, 0.005, f"filled: relative error ≤ {success_tol:g} against the planted layer; hollow: not",
             ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = Path(path)
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    _atomic_write(path, lambda fh: fh.write(buf.getvalue()))
    return path
