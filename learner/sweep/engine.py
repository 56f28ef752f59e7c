"""The sweep engine shared by the studies: run specifications, one JSON record per run, resume, locking,
backends, interruption, and the growth fits (ours).

A *specification* is a frozen dataclass describing one run completely (its
seeds included). The engine needs of it: ``run_id`` (a file-name-safe name,
unique in a sweep), ``method``, ``to_dict()``, ``run(learn_workers=None)``
returning the JSON-ready record (never raising for a failure of the run
itself), ``failure_record(message, traceback, timings, where)`` (the record of a
run whose worker died), the class attributes ``RECORD_KIND`` and
``RECORD_SCHEMA``, and ``example_stream`` (which stream of examples its record
was drawn from; records of another stream are run again on resume; a study method's is in its registry
entry, :mod:`learner.sweep.methods`).
:class:`learner.sweep.runs.RunSpec` (the run time against m) and
:class:`lowerbounds.learnhard.HardSpec` (learners on the hard instances) are
the two users.

Backends. ``"serial"`` runs in this process; ``"local"`` (the default) in a
pool of loky processes (fork + exec, as joblib starts them); ``"dask"`` on a Dask distributed cluster
(``scheduler=ADDRESS``; the optional extra ``distributed``). Local and Dask
workers run with one BLAS thread, so records agree bit for bit apart from
wall-clock times and where the run happened (:func:`comparable`).

Locking and interruption. A writing sweep holds ``OUT/sweep.lock`` (its pid,
host and start time); a second writer is refused with the owner's name, and a
lock left by a dead process of this host is replaced (:func:`sweep_lock`).
Ctrl-C stops the workers within seconds, keeps every finished run's record and
raises :class:`SweepInterrupted`; the same call again resumes.

Resume. A run whose record exists in ``OUT/runs/`` with the same
specification is skipped; a record of a run that raised (``"outcome":
"error"``) is retried, and so is a record that does not vouch for itself (its
digest missing, null or wrong, its ``run_id`` not its file's, a field of the
wrong type), with a warning naming the file. A record with the same name but another specification
stops the sweep with an error rather than mixing two studies in one directory.

Every file a sweep or a study writes in ``OUT`` goes through
:func:`learner.sweep.records.study_path`: inside ``OUT``, never through a symbolic link.

One study per directory. A study (scaling, learn-hard) claims its directory
with ``OUT/study.json`` — its kind and parameters (:func:`claim_study`) — and
another study, or the same one with other parameters, is refused there before
anything runs: its summaries would overwrite the first one's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import socket
import tempfile
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import SweepInterrupted, SweepLocked
from ..hints import PathLike
from ..io import foreign_file, read_json
from ..parallel import DeferredInterrupt, interrupts_deferred, pool_size, sigint_ignored
from ..parallel import kill_pool as _kill_pool
from ..validation import check_int
from .records import (
    DIGEST_FIELD,
    digest_problem,
    read_run_record,
    record_digest,
    record_problem,
    schema_of,
    study_path,
)

__all__ = [
    "BACKENDS",
    "LOCK_NAME",
    "STUDY_FILE",
    "STUDY_OUTPUTS",
    "check_learn_workers",
    "claim_study",
    "claimed_parameters",
    "comparable",
    "fit_growth",
    "median",
    "run_sweep",
    "sweep_lock",
]

log = logging.getLogger(__name__)

#: Where a sweep's runs go: this process, a local pool of processes, or a Dask distributed cluster.
BACKENDS = ("serial", "local", "dask")
#: Keys that hold wall-clock times or the place a run happened (and any key ending in
#: ``_seconds``); :func:`comparable` drops them.
VOLATILE_KEYS = frozenset({"timings", "seconds", "seconds_to", "where", "execution", DIGEST_FIELD})


def comparable(record: Any) -> Any:
    """The record without wall-clock times and the place it ran: what must agree across backends.

    Parameters
    ----------
    record : object
        A record, or any JSON value inside one (dicts and lists are walked).

    Returns
    -------
    object
        A copy of the dicts and lists without the keys of ``VOLATILE_KEYS`` and those ending in
        ``_seconds``; other values as they are.

    Examples
    --------
    >>> comparable({"status": "ok", "timings": {"total": 3.2}, "fit": [{"search_seconds": 1.0, "nfev": 9}]})
    {'status': 'ok', 'fit': [{'nfev': 9}]}
    """
    if isinstance(record, dict):
        return {key: comparable(value) for key, value in record.items()
                if key not in VOLATILE_KEYS and not key.endswith("_seconds")}
    if isinstance(record, list):
        return [comparable(value) for value in record]
    return record


class _Runner:
    """Runs specifications on a backend; iterate for ``(spec, record)`` as runs finish.

    After an interruption, :meth:`finished` gives every run that completed —
    including those that completed while the interruption was handled — and
    :meth:`stop` ends the workers at once (the local pool's processes are
    killed; Dask futures are cancelled).
    """

    def __init__(self, specs, *, backend, workers, scheduler, learn_workers=None, interrupt=None):
        self.specs, self.backend, self.workers, self.scheduler = list(specs), backend, workers, scheduler
        self.learn_workers = learn_workers
        # Where a Ctrl-C is noted while the runs are waited on (see learner.parallel.interrupts_deferred).
        self.interrupt = interrupt if interrupt is not None else DeferredInterrupt()
        self._futures, self._pool, self._client = {}, None, None

    def __iter__(self):
        if not self.specs:
            return
        if self.backend == "serial":
            from ..parallel import blas_threads

            for spec in self.specs:
                # One BLAS thread, as in the pool's and Dask's workers: records are bit-identical across
                # backends only for one thread setting (a multithreaded SVD sums in another order).
                with self.interrupt.interruptible(), blas_threads(1):  # a run here is stopped where it is
                    result = spec.run(learn_workers=self.learn_workers)
                yield spec, result
        elif self.backend == "local":
            from concurrent.futures import FIRST_COMPLETED, wait

            from ..parallel import INTERRUPT_POLL_SECONDS, local_pool

            self._pool = local_pool(self.workers)
            self._futures = {self._pool.submit(_execute, spec): spec for spec in self.specs}
            # Waits of a bounded length, a noted Ctrl-C checked between them: never a KeyboardInterrupt inside the
            # futures' own locks (one left held stops the pool's management thread, and the exit waits on it).
            order = {fut: i for i, fut in enumerate(self._futures)}
            pending = set(self._futures)
            while pending:
                self.interrupt.check()
                done, pending = wait(pending, timeout=INTERRUPT_POLL_SECONDS, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=order.__getitem__):
                    yield self._futures[fut], _collect(self._futures[fut], fut.result)
        else:
            from dask.distributed import as_completed

            from ..parallel import INTERRUPT_POLL_SECONDS, connect_client

            self._client = connect_client(self.scheduler)
            self._futures = {self._client.submit(_execute, spec, key=f"{spec.RECORD_KIND}-{spec.run_id}-{spec.entropy}",
                                                 pure=False): spec for spec in self.specs}
            finished = as_completed(self._futures)
            while True:
                self.interrupt.check()
                batch = finished.next_batch(block=False)
                if not batch:
                    if finished.is_empty():
                        break
                    time.sleep(INTERRUPT_POLL_SECONDS)
                for fut in batch:
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
            # Kill rather than wait: a worker may be minutes into a run. ``_processes`` is the executor's
            # own table (Python >= 3.14 has ``kill_workers()``; use it when present). A Ctrl-C meanwhile
            # would leave the pool half ended: it waits.
            with sigint_ignored():
                _kill_pool(self._pool)
                self._pool = None
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


#: Name of the lock file a writing sweep keeps in its directory.
LOCK_NAME = "sweep.lock"
_HELD_LOCKS: dict[Path, int] = {}


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@contextlib.contextmanager
def sweep_lock(out: PathLike, *, create: bool = True) -> Iterator[Path]:
    """Hold ``out/sweep.lock`` (owner's pid, host and start time) while a sweep writes ``out``.

    A second writer — another process, here or on another host sharing the
    directory — gets :class:`SweepLocked` naming the owner. A lock left by a
    process of this host that no longer exists is stale: it is replaced, with a
    warning. A lock from another host cannot be checked and is never taken
    over; the message says how to remove it. Re-entrant within one process. The lock is removed on leaving
    the block (if it is still this process's).

    Parameters
    ----------
    out : str or path-like
        The sweep's directory (created unless ``create`` is False).
    create : bool
        False (re-summarising what is there) refuses a missing ``out`` (ValueError) instead of creating it.

    Yields
    ------
    pathlib.Path
        The lock file's resolved path, held for the block.

    Raises
    ------
    SweepLocked
        When another live process holds the lock, or it is unreadable, or it could not be taken in 3 attempts.
    ValueError
        When ``out/sweep.lock`` is a symbolic link (:func:`~learner.sweep.records.study_path`), or ``create`` is
        False and ``out`` is not a folder.
    """
    out = Path(out)
    key = Path(os.path.realpath(out)) / LOCK_NAME
    if _HELD_LOCKS.get(key):
        _HELD_LOCKS[key] += 1
        try:
            yield key
        finally:
            _HELD_LOCKS[key] -= 1
        return
    if not create and not out.is_dir():
        raise ValueError(f"`out` must be the folder of a study to summarise; got out={str(out)!r}, which "
                         f"{'is not a folder' if out.exists() else 'does not exist'}: there is nothing to "
                         "summarise (run the study first).")
    out.mkdir(parents=True, exist_ok=True)
    path = study_path(out, LOCK_NAME)  # a link named sweep.lock is refused, never written through
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    blob = json.dumps(me).encode("utf-8")
    for _attempt in range(3):
        fd, name = tempfile.mkstemp(dir=out, prefix=f".{LOCK_NAME}.", suffix=".tmp")  # a new file, never a link
        tmp = Path(name)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        try:
            os.link(tmp, path)  # atomic: fails if the lock exists, and the lock is never seen half-written
            break
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        try:
            owner = read_json(path, "lock file")
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
    _HELD_LOCKS[key] = 1
    try:
        yield key
    finally:
        del _HELD_LOCKS[key]
        with contextlib.suppress(OSError, ValueError):
            if read_json(path, "lock file").get("pid") == me["pid"]:
                path.unlink()


def _collect(spec, get):
    """The record a worker returned, or a failure record when the worker itself died."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 — e.g. a killed worker process; recorded, the sweep goes on
        return spec.failure_record(f"the worker failed: {type(exc).__name__}: {exc}",
                                   "".join(traceback.format_exception_only(exc)), {}, {})


def _progress_bar(total, enabled, desc="sweep"):
    if not enabled:
        from ..progress import NoBar

        return NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="run", desc=desc, dynamic_ncols=True)


#: A study's claim on its directory: kind, parameters and schema (written by :func:`claim_study`).
STUDY_FILE = "study.json"
#: The files every study writes into its folder, summarising or not (:func:`claim_study` checks them first).
STUDY_OUTPUTS = ("summary.json", "summary.md")


def _normalised(value):
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _differences(mine, theirs):
    keys = sorted(set(mine) | set(theirs))
    return [f"{key}: {theirs.get(key, '(absent)')!r} there, {mine.get(key, '(absent)')!r} here" for key in keys
            if mine.get(key) != theirs.get(key)]


def check_learn_workers(learn_workers: int | None, backend: str) -> int | None:
    """``learn_workers`` checked against ``backend``: more than one needs ``"serial"`` (one run at a time).

    A study calls it before it claims its folder, :func:`run_sweep` again.

    Parameters
    ----------
    learn_workers : int or None
        Local processes of each learner run's own pool (``>= 1``), or None.
    backend : str
        The sweep's backend, one of :data:`BACKENDS`.

    Returns
    -------
    int or None
        ``learn_workers`` as an int, or None.

    Raises
    ------
    ValueError
        When more than one is asked for with a backend other than ``"serial"`` (a pool inside every pool worker
        would oversubscribe the machine).
    """
    if learn_workers is None:
        return None
    learn_workers = check_int("learn_workers", learn_workers)
    if learn_workers > 1 and backend != "serial":
        raise ValueError(f"`learn_workers` > 1 needs backend='serial' (one run at a time, its batches on the "
                         f"pool); got learn_workers={learn_workers}, backend={backend!r}.")
    return learn_workers


def claimed_parameters(out: PathLike, kind: str) -> dict[str, Any] | None:
    """The parameters of the ``kind`` study that ``out`` holds (its ``study.json``; for a folder that predates the
    claim, its ``summary.json``'s, as :func:`claim_study` compares them), or None: no such study, or one that
    cannot be read (which :func:`claim_study` then names).

    A study reads what it was asked for from here where its caller left a choice open (the methods it ran), so that
    registering a new method leaves a committed study as it was: it re-summarises, and resumes, as it ran.

    Parameters
    ----------
    out : str or path-like
        The study's directory (it need not exist).
    kind : str
        The study's kind (``"peer-study"``, ``"scaling-study"``, ...).

    Returns
    -------
    dict or None
        The claim's ``parameters``.
    """
    try:
        path, summary = Path(out) / STUDY_FILE, Path(out) / STUDY_OUTPUTS[0]
        if path.is_file():
            claim = read_json(path, "study file")
        elif summary.is_file():  # no claim: the summary's parameters stand in for it
            claim = {"kind": kind, "parameters": read_json(summary, "summary").get("parameters")}
        else:
            return None
    except (OSError, ValueError, TypeError, AttributeError):  # FileFormatError is a ValueError; a bad `out` is
        return None                                          # named by its own check, a bad summary by the claim's
    if not isinstance(claim, dict) or claim.get("kind") != kind or not isinstance(claim.get("parameters"), dict):
        return None
    return claim["parameters"]


def claim_study(out: PathLike, kind: str, record_kind: str, parameters: Mapping[str, Any], *,
                write: bool = True, files: Sequence[str] = ()) -> Path:
    """Make ``out`` the directory of one study, or raise ValueError saying whose it is (ours).

    ``kind`` names the study (e.g. ``"scaling-study"``), ``record_kind`` its runs' records and
    ``parameters`` (JSON-ready) what it was asked for. A directory already claimed (``study.json``)
    must hold the same kind with the same parameters (a resume); one claimed by nothing must hold
    no other kind of record in ``runs/``, and, when it holds a ``summary.json`` without a ``study.json``,
    the parameters both name must agree, and a directory that is neither empty nor a study (no
    ``study.json``, no records of this kind) is refused: its files are not ours. Then ``study.json`` is
    written (atomically). ``write`` False (re-summarising) checks the same and claims nothing: a folder
    without this study's records is refused, as there is nothing to summarise. Call it while holding
    :func:`sweep_lock`.

    Before anything is read, every file the study will write — :data:`STUDY_OUTPUTS`, ``files``, and when
    ``write`` is True ``study.json`` and ``runs/`` — is checked by :func:`~learner.sweep.records.study_path`: a
    symbolic link among them stops the study before it runs (ValueError naming it).

    Parameters
    ----------
    out : str or path-like
        The study's directory.
    kind : str
        The study's kind, a key of :data:`learner.sweep.records.KINDS` (``"scaling-study"``, ``"peer-study"``,
        ...).
    record_kind : str
        The kind of its runs' records (``"scaling-run"``, ``"hard-run"``).
    parameters : mapping
        What the study was asked for, JSON-ready; compared after a JSON round trip.
    write : bool
        Write ``study.json`` (default True); False only checks.
    files : sequence of str
        The study's other files in ``out`` (its figures, ``"scaling.png"``), checked as the summaries are.

    Returns
    -------
    pathlib.Path
        The path of ``study.json`` (written, or found with the same claim).
    """
    from ..io import write_json

    out = Path(out)
    mine = _normalised(parameters)
    for name in (*STUDY_OUTPUTS, *files, *((STUDY_FILE, "runs") if write else ())):
        study_path(out, name)
    path = out / STUDY_FILE
    hint = "use another `out` directory (or the same parameters to resume this one)"
    if path.exists():
        try:
            claim = read_json(path, "study file")
            theirs, their_kind = claim["parameters"], claim["kind"]
            if not isinstance(theirs, dict):
                raise TypeError("parameters is not an object")
        except (OSError, ValueError, KeyError, TypeError) as exc:  # FileFormatError is a ValueError
            raise ValueError(f"{path} is unreadable ({type(exc).__name__}: {exc}); the directory's study is "
                             f"unknown, so {kind} will not write there: {hint}.") from None
        if their_kind != kind:
            raise ValueError(f"{out} holds a {their_kind} (see {path}), not a {kind}; {hint}.")
        if claim.get("schema_version") != schema_of(kind):
            raise ValueError(f"{path} has schema_version={claim.get('schema_version')!r:.40}; this version "
                             f"resumes a {kind} of schema {schema_of(kind)} and will not rewrite another: {hint}.")
        diff = _differences(mine, theirs)
        if diff:
            raise ValueError(f"{out} holds a {kind} with other parameters ({'; '.join(diff)}); its summaries "
                             f"would be overwritten: {hint}.")
        return path
    runs = out / "runs"
    ours = 0
    if runs.is_dir():
        for rec_path in sorted(runs.glob("*.json")):
            try:
                other = read_json(rec_path, "record").get("kind")
            except (OSError, ValueError, AttributeError):  # FileFormatError is a ValueError
                continue  # unreadable records are the sweep's to report and re-run
            if other != record_kind:
                raise ValueError(f"{out} holds records of another kind ({rec_path.name}: {other!r}, not "
                                 f"{record_kind!r}); {hint}.")
            ours += 1
    summary = out / "summary.json"
    theirs = None
    if summary.exists():  # a study without a study.json: its summary names the parameters
        try:
            theirs = read_json(summary, "summary").get("parameters")
        except (OSError, ValueError, AttributeError):  # FileFormatError is a ValueError
            theirs = None
    if isinstance(theirs, dict) and foreign_file(summary) is None:  # a summary the toolkit wrote: its mark checks out
        ours += 1
        shared = set(mine) & set(theirs)
        diff = _differences({k: mine[k] for k in shared}, {k: theirs[k] for k in shared})
        if diff:
            raise ValueError(f"{out} holds a study with other parameters (from its summary.json: "
                             f"{'; '.join(diff)}); its summaries would be overwritten: {hint}.")
    others = sorted(p.name for p in out.iterdir() if p.name not in (LOCK_NAME, "runs")) if out.is_dir() else []
    if not write and not ours:
        raise ValueError(f"`out` must be the folder of a {kind} to summarise; got out={str(out)!r}, which holds "
                         f"none (no {STUDY_FILE}, no {record_kind} records in runs/): there is nothing to summarise; "
                         "run the study first, or give its folder.")
    if others and not ours:  # neither empty nor a study (a study without study.json still has its records)
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise ValueError(f"`out` must be a new or empty folder, or this {kind}'s own; got out={str(out)!r}, which is "
                         f"not empty and holds no study ({shown}; no {STUDY_FILE}, no {record_kind} records in "
                         "runs/): its files are not a study's to replace.")
    if write:
        write_json(study_path(out, STUDY_FILE), {"schema_version": schema_of(kind), "kind": kind, "parameters": mine})
    return path


def _checked_record(spec, out, invalid_then, other_spec_hint):
    """``spec``'s record in ``out/runs`` if it exists and can be trusted (else None, with a warning naming the file
    and field), or a ValueError when it records another specification.

    Trusted: its digest matches (:func:`~learner.sweep.records.digest_problem`; a record without one is not
    trusted), its ``run_id`` is the file's, and it passes the spec's ``record_rules`` (each field's type, before a
    summary reads it). Its path is checked by :func:`~learner.sweep.records.study_path` (a link is refused)."""
    path = study_path(out, f"runs/{spec.run_id}.json")
    rec = read_run_record(path, spec.RECORD_KIND, spec.RECORD_SCHEMA) if path.exists() else None
    rules = getattr(spec, "record_rules", None)
    problem = rec is not None and (digest_problem(rec) or _run_id_problem(rec, spec)
                                   or (rules and record_problem(rec, rules(rec))))
    if problem:
        log.warning("ignoring invalid record %s (%s)%s", path, problem, invalid_then)
        rec = None
    if rec is not None and rec["spec"] != json.loads(json.dumps(spec.to_dict())):
        raise ValueError(f"{path} records another specification ({str(rec['spec']):.300}) than this sweep's "
                         f"({spec.to_dict()}); {other_spec_hint}.")
    return rec


def _run_id_problem(rec, spec):
    """Why a record's ``run_id`` is not its file's (the spec's own), or None: a record names only itself."""
    if rec.get("run_id") != spec.run_id:
        return f"`run_id` must be {spec.run_id!r}, the name of its file; got {rec.get('run_id')!r:.80}"
    return None


def _recorded(specs, out, ids):
    """``run=False``: the finished records of ``specs`` as they are, or a ValueError counting the missing ones."""
    runs = out / "runs"
    done, missing, older = {}, [], 0
    for spec in specs:
        rec = _checked_record(spec, out, "", "give the parameters it was run with")
        if rec is None or rec.get("outcome") != "finished":
            missing.append(spec.run_id)
            continue
        older += rec.get("example_stream", 1) != spec.example_stream
        done[spec.run_id] = rec
    if missing:
        raise ValueError(f"{len(missing)} of {len(specs)} runs have no finished record in {runs} (e.g. "
                         f"{', '.join(missing[:3])}); nothing was run. Give the parameters the records were run "
                         "with, or run without the summarise-only option to complete them.")
    if older:
        log.info("%d of %d records were drawn from an earlier example stream; summarised as they are", older,
                 len(specs))
    return [done[i] for i in ids], {"ran": 0, "skipped": len(specs)}


def run_sweep(specs: Sequence[Any], out: PathLike, *, backend: str = "local", workers: int | str | None = None,
              scheduler: str | None = None, progress: bool = False, learn_workers: int | None = None,
              run: bool = True) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Run the specifications not yet finished in ``out/runs/`` and return every record, in ``specs`` order.

    With ``run=False`` nothing runs: the records found are returned as they are (those drawn from
    another example stream included, with a note in the log), and a specification without a
    finished record is a ValueError counting them — for re-summarising a directory of records.

    Parameters
    ----------
    specs : sequence of specifications
        All of one class (see the module's docstring).
    out : path
        Directory of the sweep (created); records go to ``out/runs/<run_id>.json``.
    backend : {"serial", "local", "dask"}
    workers : int, optional
        Processes of the local pool (default: every core this process may run on,
        :data:`learner.parallel.DEFAULT_POOL`).
    scheduler : str, optional
        Address of a Dask scheduler (``backend="dask"``).
    progress : bool
        Show a tqdm progress bar on stderr.
    learn_workers : int, optional
        Local processes of each learner run's own pool (:func:`learner.learn`'s
        ``workers``); only with ``backend="serial"`` (one run at a time, its
        batches spread over the cores) — a pool inside every pool worker would
        oversubscribe the machine.
    run : bool
        True (default): run what is missing. False: run nothing and return the finished records found.

    Returns
    -------
    records : list of dict
        One record per specification, in ``specs`` order.
    stats : dict
        ``{"ran": runs run now, "skipped": runs whose finished records were kept}``.

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
    workers = pool_size(workers)
    learn_workers = check_learn_workers(learn_workers, backend)
    kinds = {type(s) for s in specs}
    if len(kinds) > 1:
        raise ValueError(f"`specs` must all be of one class; got {sorted(k.__name__ for k in kinds)}.")
    ids = [s.run_id for s in specs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"`specs` must have distinct run ids; {dup!r} appears twice.")
    # Ctrl-C is held as a flag from here to the lock's release, and raised only where the runs are waited on (or
    # inside a run this process computes): the records and the lock are never left half written or held.
    with interrupts_deferred() as interrupt, sweep_lock(out):
        return _run_locked(specs, Path(out), ids, backend=backend, workers=workers, scheduler=scheduler,
                           progress=progress, learn_workers=learn_workers, run=run, interrupt=interrupt)


def _run_locked(specs, out, ids, *, backend, workers, scheduler, progress, learn_workers, run=True, interrupt=None):
    from ..io import write_json

    if not run:
        return _recorded(specs, out, ids)
    runs = study_path(out, "runs")
    runs.mkdir(parents=True, exist_ok=True)
    done, todo, paths = {}, [], {}
    for spec in specs:  # every record's path checked before anything runs
        path = paths[spec.run_id] = study_path(out, f"runs/{spec.run_id}.json")
        rec = _checked_record(spec, out, "; its run is repeated",
                              "use a new `out` directory or the same parameters")
        stream = spec.example_stream
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
        rec[DIGEST_FIELD] = record_digest(rec)
        write_json(study_path(out, f"runs/{spec.run_id}.json"), rec)  # checked again: a link made meanwhile
        done[spec.run_id] = read_json(paths[spec.run_id], "record")
        log.info("run %s: %s (%s)", spec.run_id, done[spec.run_id]["status"], done[spec.run_id]["message"][:120])

    runner = _Runner(todo, backend=backend, workers=workers, scheduler=scheduler, learn_workers=learn_workers,
                     interrupt=interrupt)
    bar = _progress_bar(len(todo), progress, desc=specs[0].RECORD_KIND.split("-")[0] if specs else "sweep")
    saved, clean = set(), False
    try:
        for spec, rec in runner:
            save(spec, rec)
            saved.add(spec.run_id)
            bar.update(1)
        clean = True
    except KeyboardInterrupt:
        # Keep every run that finished, including those that finished while we were interrupted, then end
        # the workers without waiting for the runs in flight. Further Ctrl-Cs (a user pressing it again)
        # must not cut this short: they are ignored until the records are saved.
        with sigint_ignored():
            late = [(spec, rec) for spec, rec in runner.finished() if spec.run_id not in saved]
            runner.stop()
            for spec, rec in late:
                save(spec, rec)
            bar.close()
        recorded = sum(1 for i in ids if i in done and done[i].get("outcome") == "finished")
        raise SweepInterrupted(recorded, len(specs), out) from None
    finally:
        if clean:
            runner.close()
        else:
            runner.stop()
        bar.close()
    return [done[i] for i in ids], {"ran": len(todo), "skipped": len(specs) - len(todo)}


def fit_growth(ms: ArrayLike, values: ArrayLike) -> dict[str, float]:
    """Least-squares fits of ``log value`` against ``log m`` (a power ``m^p``) and against ``m`` (``base^m``).

    With three points both fits have one degree of freedom: they describe the
    measured range and do not tell a polynomial from an exponential.

    Parameters
    ----------
    ms : array_like
        The numbers of heads, a vector.
    values : array_like
        The measured values (seconds, examples), a vector of the same length.

    Returns
    -------
    dict
        ``power`` (the exponent ``p``), ``power_rms_log``, ``base`` and ``base_rms_log`` (the root-mean-square
        residual in natural log of each fit), and ``points``. With fewer than two distinct ``m`` (or a
        non-positive value) the fitted figures are ``nan``.

    Examples
    --------
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


def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not None, or None when there are none.

    Parameters
    ----------
    values : iterable of float or None
        The values; None marks a missing one (a run that did not finish).

    Returns
    -------
    float or None
        The median as a float, or None.

    Examples
    --------
    >>> median([3, None, 1, 2]), median([None])
    (2.0, None)
    """
    kept = [v for v in values if v is not None]
    return float(np.median(kept)) if kept else None


def _execute(spec, learn_workers=None):
    """A pool or cluster worker's task: one run (the specification travels pickled, with its seeds)."""
    return spec.run(learn_workers=learn_workers)
