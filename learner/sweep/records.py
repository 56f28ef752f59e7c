"""The records the studies write, in one place: their kinds and schema versions, the checks of their fields,
one reader and one summary writer (ours).

Every file is JSON (never pickle) and carries ``"kind"`` and ``"schema_version"``. :data:`KINDS` lists each
kind with the schema this version writes and the older schemas it still reads:

- ``scaling-run`` (schema 2; 1 lacked the planted layer's logit scale) — one run of the scaling, frontier
  or peers study (:class:`learner.sweep.runs.RunSpec`);
- ``hard-run`` (schema 2; schema 1 is read but not resumed: it drew each seed's subset on its own, so seeds
  of one cell could share a subset) — a learner on a hard instance (:mod:`lowerbounds.learnhard`);
- ``scaling-study``, ``peer-study``, ``race-study``, ``budget-study``, ``learn-hard-study`` (schema 1) — a study's
  claim on its directory, ``study.json`` (:func:`learner.sweep.engine.claim_study`);
- ``yield-study`` (schema 1) — :func:`theory.yield_study.yield_study`;
- ``growth-pricing`` (schema 1) — the growth study's price of phase 6 per cell (:mod:`learner.study.pricing`);
- ``command-record`` (schema 1) — what ``python -m learner learn --json`` and the other commands' ``--json``
  options write. Files written before it had a kind (a ``"command"`` field and no ``"kind"``) read as
  schema 0.

A reader that resumes a sweep needs the current schema (:func:`learner.sweep.engine.run_sweep` refuses
another); a reader that only looks (:func:`read_record`) takes any schema listed here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FileFormatError, NotRegularFile, RecordError
from ..hints import PathLike
from ..io import atomic_write, json_safe, read_json, write_json

__all__ = [
    "DIGEST_FIELD",
    "FIELD_CHECKS",
    "KINDS",
    "MAX_SECONDS",
    "StudyResult",
    "command_record",
    "digest_problem",
    "is_seconds",
    "print_study",
    "read_record",
    "read_run_record",
    "record_digest",
    "record_problem",
    "schema_of",
    "study_path",
    "timings_problem",
    "write_summary",
]

log = logging.getLogger(__name__)

#: kind -> (the schema this version writes, every schema it reads).
KINDS = {
    "scaling-run": (2, (2,)),
    "hard-run": (2, (1, 2)),
    "scaling-study": (1, (1,)),
    "peer-study": (1, (1,)),
    "race-study": (1, (1,)),
    "budget-study": (1, (1,)),
    "trained-study": (1, (1,)),
    "trained-run": (1, (1,)),
    "learn-hard-study": (1, (1,)),
    "yield-study": (1, (1,)),
    "growth-pricing": (1, (1,)),
    "command-record": (1, (0, 1)),
}


def schema_of(kind: str) -> int:
    """The schema version this version writes for ``kind`` (a KeyError names the known kinds).

    Parameters
    ----------
    kind : str
        A record kind, a key of :data:`KINDS`.

    Returns
    -------
    int
        The schema version written.

    Examples
    --------
    >>> schema_of("scaling-run"), schema_of("command-record")
    (2, 1)
    """
    try:
        return KINDS[kind][0]
    except KeyError:
        raise KeyError(f"unknown record kind {kind!r}; known: {sorted(KINDS)}") from None


def read_record(path: PathLike, *, kind: str | None = None) -> dict[str, Any]:
    """The record in ``path`` (a dict), after checking that its kind and schema are ones this version reads.

    A command's record without a kind (a ``"command"`` field, no ``"kind"``: schema 0) is returned with
    ``kind = "command-record"`` and ``schema_version = 0`` filled in; nothing else is changed.

    Parameters
    ----------
    path : str or path-like
        The JSON file.
    kind : str or None
        The kind the caller expects (a :class:`~learner.errors.RecordError` for another); None: any kind of
        :data:`KINDS`.

    Returns
    -------
    dict
        The record as read.

    Raises
    ------
    RecordError
        If the file cannot be read or parsed, is not a JSON object, or its kind or schema is not one this
        version reads (the message names the file and the field).
    """
    path = Path(path)
    try:
        rec = read_json(path, "record")
    except FileFormatError as exc:
        raise RecordError(str(exc)) from None
    except OSError as exc:
        raise RecordError(f"{path} is not a readable JSON record ({type(exc).__name__}: {exc}).") from None
    if not isinstance(rec, dict):
        raise RecordError(f"{path} is not a record: it holds a JSON {type(rec).__name__}, not an object.")
    if "kind" not in rec and "command" in rec:
        rec = {"kind": "command-record", "schema_version": 0} | rec
    got = rec.get("kind")
    if got not in KINDS:
        raise RecordError(f"{path}: field `kind` must be one of {sorted(KINDS)}; got {got!r:.60}.")
    if kind is not None and got != kind:
        raise RecordError(f"{path} is a {got} record, not a {kind} record.")
    readable = KINDS[got][1]
    if rec.get("schema_version") not in readable:
        raise RecordError(f"{path}: field `schema_version` of a {got} record must be one of {list(readable)}; "
                          f"got {rec.get('schema_version')!r:.60}.")
    return rec


#: The field of a study's run record that holds the SHA-256 of the rest of it (ours): written with the record, checked
#: on resume and on summarising, so a record edited or damaged after it was written is repeated, not trusted.
DIGEST_FIELD = "record_sha256"


def record_digest(rec: Mapping[str, Any]) -> str:
    """The SHA-256 of ``rec`` without :data:`DIGEST_FIELD`, as canonical JSON.

    Canonical: sorted keys, no spaces, the values :func:`learner.io.json_safe` writes, so the digest of a record
    read back equals the one written.

    Parameters
    ----------
    rec : mapping
        A record (its own :data:`DIGEST_FIELD`, if any, is left out).

    Returns
    -------
    str
        The digest, 64 hexadecimal digits.

    Examples
    --------
    >>> record_digest({"a": 1, "b": [1.5]}) == record_digest({"b": [1.5], "a": 1, DIGEST_FIELD: "x"})
    True
    """
    body = {key: value for key, value in rec.items() if key != DIGEST_FIELD}
    blob = json.dumps(json_safe(body), sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def digest_problem(rec: Mapping[str, Any]) -> str | None:
    """Why ``rec``'s :data:`DIGEST_FIELD` does not vouch for it, or None.

    The digest is required (ours): every run record the toolkit writes carries it, so a record without one, or
    with null, is one whose content nothing vouches for.

    Parameters
    ----------
    rec : mapping
        A record read back.

    Returns
    -------
    str or None
        The problem, in words, when the digest is missing, null, or differs from :func:`record_digest`; None when it
        matches.

    Examples
    --------
    >>> rec = {"outcome": "finished"}
    >>> rec[DIGEST_FIELD] = record_digest(rec)
    >>> digest_problem(rec) is None, digest_problem(rec | {"outcome": "error"}) is None
    (True, False)
    >>> print(digest_problem({"outcome": "finished"}))
    `record_sha256` is missing: nothing vouches for the record's content (the toolkit writes it with every record)
    """
    stored = rec.get(DIGEST_FIELD)
    if stored is None:
        state = "null" if DIGEST_FIELD in rec else "missing"
        return (f"`{DIGEST_FIELD}` is {state}: nothing vouches for the record's content (the toolkit writes it "
                "with every record)")
    if stored != record_digest(rec):
        return f"`{DIGEST_FIELD}` does not match the record's content: it was edited or damaged after it was written"
    return None


def study_path(out: PathLike, name: str) -> Path:
    """The path of ``name`` in the study folder ``out``, checked to stay inside it: every file a study writes.

    A study writes only its own files, inside its folder (ours): ``name`` is relative and has no ``..``, no
    part of it below ``out`` is a symbolic link (a link is never written through, whether it points out of the
    folder or into it: the link is the user's, and the study stops rather than replace it or write where it
    points), and the resolved path lies inside the resolved ``out``. ``out`` itself may be a link.

    Parameters
    ----------
    out : str or path-like
        The study's folder (it need not exist yet).
    name : str
        The file, relative to ``out``, with ``/`` between folders (``"summary.md"``, ``"runs/<run id>.json"``).

    Returns
    -------
    pathlib.Path
        ``out / name``, safe to write.

    Raises
    ------
    ValueError
        When ``name`` would leave ``out`` (absolute, or a ``..``), or a part of it is a symbolic link, or a folder
        on the way is a file; the message names the file.

    Examples
    --------
    >>> study_path("sc", "runs/a.json").as_posix()
    'sc/runs/a.json'
    >>> study_path("sc", "runs/../../notes.txt")
    Traceback (most recent call last):
    ...
    ValueError: `name` must be a file inside the study folder; got name='runs/../../notes.txt', which leaves it.
    """
    out = Path(out)
    parts = str(name).split("/")
    if not name or os.path.isabs(name) or any(part in ("", ".", "..") or os.sep in part or "\0" in part
                                               for part in parts):
        raise ValueError(f"`name` must be a file inside the study folder; got name={name!r:.200}, which leaves it.")
    here = out
    for i, part in enumerate(parts):
        here = here / part
        if here.is_symlink():
            raise ValueError(f"{str(here)!r} is a symbolic link (to {os.readlink(here)!r:.200}); a study writes "
                             f"only its own files, inside its folder {str(out)!r}, never through a link: remove "
                             "the link (its target is left as it is) and run again.")
        if i < len(parts) - 1 and here.exists() and not here.is_dir():
            raise ValueError(f"{str(here)!r} is a file where the study keeps a folder; move it away and run again.")
    root = os.path.realpath(out)
    if os.path.commonpath([root, os.path.realpath(here)]) != root:  # belt and braces: no link, no `..`, yet outside
        raise ValueError(f"{str(here)!r} resolves outside the study folder {str(out)!r}; a study writes only "
                         "inside its folder.")
    return here


def read_run_record(path: PathLike, kind: str, schema: int) -> dict[str, Any] | None:
    """A sweep's record of one run, to resume with: None (with a warning) if unreadable — its run is repeated.

    Parameters
    ----------
    path : str or path-like
        The record's file.
    kind : str
        The kind the sweep writes (its specification's ``RECORD_KIND``).
    schema : int
        The schema the sweep resumes (its specification's ``RECORD_SCHEMA``).

    Returns
    -------
    dict or None
        The record; None, with a warning, when the file cannot be read or parsed (damaged, or nested too deep).

    Raises
    ------
    ValueError
        When the record is of another kind (``out`` is not this sweep's directory) or another schema, or the
        path is not a regular file at all (a FIFO, a device: not ours to replace).
    """
    try:
        rec = read_json(path, "record")
    except NotRegularFile as exc:
        raise ValueError(f"{exc} It stands where the run's record goes and is not ours to replace: move it "
                         "away and run again.") from None
    except (OSError, FileFormatError) as exc:
        log.warning("ignoring unreadable record %s (%s); its run is repeated", path, exc)
        return None
    if not isinstance(rec, dict) or rec.get("kind") != kind:
        raise ValueError(f"{path} is not a {kind} record; `out` must be a directory of this sweep.")
    if rec.get("schema_version") != schema:
        raise ValueError(f"{path} has schema_version={rec.get('schema_version')!r}; this version resumes "
                         f"{schema}. Use a new `out` directory.")
    return rec


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_nonneg(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


#: The longest duration a record may hold, in seconds (ours: about three years; the longest run of the studies
#: took hours). A larger one (1e300, say) is a tampered or corrupted record, refused like a string would be.
MAX_SECONDS = 1e8


def is_seconds(v: Any) -> bool:
    """Whether ``v`` is a duration a record can hold: a finite number in [0, :data:`MAX_SECONDS`].

    Parameters
    ----------
    v : object
        Any JSON value.

    Returns
    -------
    bool
        True for an int or float (not a bool) that is finite, non-negative and at most :data:`MAX_SECONDS`.

    Examples
    --------
    >>> is_seconds(3.5), is_seconds(-1), is_seconds(True), is_seconds(float("nan"))
    (True, False, False, False)
    """
    return _is_nonneg(v) and v <= MAX_SECONDS


def timings_problem(timings: Any, name: str = "timings") -> str | None:
    """The first entry of a ``timings`` object that is not a duration, or None.

    Parameters
    ----------
    timings : object
        The record's timings, which must be a dict of durations (:func:`is_seconds`).
    name : str
        The field's name in the message (default ``"timings"``; a dotted name for a nested one).

    Returns
    -------
    str or None
        The problem, naming the entry (``"`timings.5_span` must be …"``), or None when every entry is a duration.

    Examples
    --------
    >>> timings_problem({"total": 2.0}) is None
    True
    >>> print(timings_problem({"total": "2 s"}))
    `timings.total` must be a duration in seconds (0 to 1e+08); got '2 s'
    """
    if not isinstance(timings, dict):
        return f"`{name}` must be an object of durations; got {timings!r:.60}"
    for key, value in timings.items():
        if not is_seconds(value):
            return f"`{name}.{key}` must be a duration in seconds (0 to {MAX_SECONDS:g}); got {value!r:.60}"
    return None


#: Field checks a record rule can name: (test, what the field must be).
FIELD_CHECKS = {
    "count": (_is_count, "a non-negative integer"),
    "nonneg": (_is_nonneg, "a finite non-negative number"),
    "nonneg?": (lambda v: v is None or _is_nonneg(v), "a finite non-negative number or null"),
    "seconds": (is_seconds, f"a duration in seconds (0 to {MAX_SECONDS:g})"),
    "count?": (lambda v: v is None or _is_count(v), "a non-negative integer or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "str?": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "dict": (lambda v: isinstance(v, dict), "an object"),
    "dict?": (lambda v: v is None or isinstance(v, dict), "an object or null"),
    "durations?": (lambda v: v is None or (isinstance(v, dict) and all(x is None or is_seconds(x) for x in v.values())),
                   f"an object of durations in seconds (0 to {MAX_SECONDS:g}) or nulls, or null"),
}


def record_problem(rec: Mapping[str, Any], rules: Mapping[str, str]) -> str | None:
    """The first field of ``rec`` that breaks ``rules``, or None (ours).

    A dotted name reads nested objects; a missing field is a problem unless the check allows null.

    Parameters
    ----------
    rec : mapping
        A record read back.
    rules : mapping
        ``{"a.b": check}``, in the order checked: each check a key of :data:`FIELD_CHECKS`, or ``"timings"``
        (:func:`timings_problem`).

    Returns
    -------
    str or None
        The first problem (``"`field` must be …; got …"`` or ``"`field` is missing"``), for the message naming the
        file; None when every rule holds.

    Examples
    --------
    >>> record_problem({"a": {"b": 1}}, {"a.b": "count", "c": "dict?"}) is None  # "dict?": c may be missing
    True
    >>> print(record_problem({"a": {"b": -1}}, {"a.b": "count"}))
    `a.b` must be a non-negative integer; got -1
    """
    value: Any  # the record, then each nested value the dotted name reaches
    for name, check in rules.items():
        value, here = rec, True
        for part in name.split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            else:
                value, here = None, False
                break
        if check == "timings":
            problem = timings_problem(value, name) if here else f"`{name}` is missing"
            if problem:
                return problem
            continue
        test, what = FIELD_CHECKS[check]
        if not here and not check.endswith("?"):
            return f"`{name}` is missing"
        if here and not test(value):
            return f"`{name}` must be {what}; got {value!r:.60}"
    return None


def command_record(command: str, **fields: Any) -> dict[str, Any]:
    """The JSON record of a command's ``--json`` option: its kind and schema, the command, the versions, and ``fields``.

    Parameters
    ----------
    command : str
        The command, as typed after ``python -m learner`` (``"bench --span"``).
    **fields
        The command's figures, JSON-ready; they come last, so a field of the same name replaces the head's.

    Returns
    -------
    dict
        ``{"kind": "command-record", "schema_version": ..., "command": ..., "versions": ...}`` and ``fields``.
    """
    from ..io import versions

    return {"kind": "command-record", "schema_version": schema_of("command-record"), "command": command,
            "versions": versions()} | fields


def write_summary(out: PathLike, summary: Mapping[str, Any], table: str) -> dict[str, str]:
    """Write a study's ``summary.json`` and ``summary.md`` into ``out``, each atomically.

    Parameters
    ----------
    out : str or path-like
        The study's folder (it must exist); both files are checked by :func:`study_path` first.
    summary : mapping
        The JSON summary, written to ``summary.json``.
    table : str
        The Markdown, written to ``summary.md`` as it is (UTF-8).

    Returns
    -------
    dict
        ``{"summary_json": path, "summary_md": path}``, the paths as strings.

    Raises
    ------
    ValueError
        When :func:`study_path` refuses either file (a symbolic link, say): nothing is written.
    """
    md, js = study_path(out, "summary.md"), study_path(out, "summary.json")  # both checked before either is written
    files = {"summary_json": str(write_json(js, summary))}
    atomic_write(md, lambda fh: fh.write(table.encode("utf-8")))
    files["summary_md"] = str(md)
    return files


@dataclass(frozen=True)
class StudyResult:
    """What a study measured: the result type of every study (scaling, peers, the learners on the hard instances).

    Each study adds :meth:`table`, its summary as Markdown.

    Parameters
    ----------
    records : list of dict
        Its runs' records.
    summary : dict
        The JSON summary (also written to ``out/summary.json``).
    stats : dict
        The sweep's counts: ``{"ran": runs run now, "skipped": runs whose finished records were kept}``.
    files : dict
        What was written: ``{name: path}`` (``summary_json``, ``summary_md``, and the plots).
    """

    records: list = field(repr=False)
    summary: dict
    stats: dict
    files: dict

    def table(self) -> str:
        """The summary as Markdown (each study's own; a NotImplementedError here).

        Returns
        -------
        str
            The study's tables.
        """
        raise NotImplementedError(f"{type(self).__name__} has no table")


def print_study(result: StudyResult, out: PathLike) -> None:
    """Print a sweep's table, then how many runs ran now or were kept and where the records and summaries are.

    The studies of ``learner`` and ``lowerbounds`` print the same way.

    Parameters
    ----------
    result : StudyResult
        What the study returned.
    out : str or path-like
        The study's folder, as named in the output.
    """
    print(result.table())
    print()
    print(f"runs: {result.stats['ran']} run now, {result.stats['skipped']} kept from earlier; records in "
          f"{out}/runs/; " + ", ".join(f"{k} {v}" for k, v in result.files.items()))
