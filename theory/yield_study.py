"""The learner's certification yield across settings: measured in scaling sweeps, predicted from Θ, and fitted.

Reads the records of one or more ``python -m learner scaling`` sweeps (their
``runs/*.json``), and for every finished learner run:

- takes the measured yield, phase 4's certified constraints per 1000 examples
  (:func:`learner.sweep.runs.yield_of`), with the tolerance and ``min_weight`` the
  run used (``diagnostics["0_setting"]["config"]``);
- rebuilds the run's planted layer from its specification
  (:func:`learner.sweep.runs.planted_instance`: the same seed, so the same layer)
  and predicts the yield of that layer at that tolerance with
  :func:`theory.yield_model.predicted_yield` — the Gaussian density of the
  ``n = (m−1)(k−1)`` logit disagreements at 0 times the linearised window, or
  with ``density="slice"`` that window's probability under the law of the
  disagreements given the row token and its slices;
- fits ``log(yield)`` against ``n`` over the runs at one common tolerance (a
  straight line: ``yield ≈ C·δ^n``; slope ``log δ``), with its root-mean-square
  residual, for the measured and for the predicted yields.

Everything here is ours: the paper proves that sculpting works and does not
quantify its yield; the expectation ``yield ∝ δ^{(m−1)(k−1)}`` is a
heuristic this module tests. Note that the measured yield uses the learner's
*estimated* ``ΣW`` (phase 3's), the prediction the true one.
"""

from __future__ import annotations

import io
import logging
import math
import numbers
import textwrap
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from learner.errors import FileFormatError
from learner.hints import PathLike, SeedLike
from learner.io import read_json
from learner.progress import bar, showing
from learner.sweep.records import KINDS, digest_problem, schema_of, timings_problem
from learner.sweep.runs import RunSpec, planted_instance, yield_of
from learner.tables import MISSING, fmt, markdown_table
from learner.validation import DISTRIBUTIONS, Choice, Integer, Real, check_rng, declare

from ._core import require_matplotlib
from .yield_model import DENSITIES, GEOMETRIES, measured_yield, predicted_yield

__all__ = ["YieldStudy", "fit_log_yield", "load_learner_records", "plot_yield", "yield_study", "CALIBRATION_EXAMPLES"]

log = logging.getLogger(__name__)

#: A prediction "misses" when measured / predicted lies outside [1/MISS_FACTOR, MISS_FACTOR] (ours: a
#: convention for a model of a yield that spans orders of magnitude; not tuned).
MISS_FACTOR = 3.0

#: The longest a yield study may be estimated to take unless told otherwise (ours: ten minutes).
DEFAULT_MAX_SECONDS = 600.0
#: Examples of the one prediction that calibrates the estimate of a study's time (ours, not tuned).
CALIBRATION_EXAMPLES = 400


# --------------------------------------------------------------------------- #
# the learner's run records, checked on load
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class _Unmeasured:
    """A learner run of a cell that ended before phase 4 measured a yield (its cell still gets a row)."""

    cell: tuple
    status: str


class _Unusable(Exception):
    """A run record the study cannot use; the message names the field (the caller adds the file)."""


def _text(value):
    if not isinstance(value, str) or not value:
        return "a non-empty string"


def _boolean(value):
    if not isinstance(value, bool):
        return "true or false"


def _mapping(value):
    if not isinstance(value, dict):
        return "a JSON object"


def _integer(minimum):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            return f"an integer >= {minimum}"
    return check


def _real(low, high=math.inf, *, open_low=False):
    """Finite, in ``[low, high)`` (``(low, high)`` with ``open_low``)."""
    wanted = (f"a finite number in {'(' if open_low else '['}{low:g}, {high:g})" if high < math.inf
              else f"a finite number {'>' if open_low else '>='} {low:g}")

    def check(value):
        ok = (isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
              and (value > low if open_low else value >= low) and value < high)
        return None if ok else wanted
    return check


def _one_of(options):
    def check(value):
        if value not in options:
            return f"one of {options}"
    return check


_P4 = "diagnostics.4_refined_sculpt"

#: What the study reads of a learner run's record (:func:`learner.sweep.runs.run_one`), and what each value
#: must be (ours: what the prediction and the fits need, and the learner's own ranges: ``k >= 2``,
#: phase 4's ``tol`` and ``min_weight`` in (0, 1)). ``rows_seen``, ``rank`` and ``planned_m`` are read
#: only to tie the specification to the diagnostics (:func:`_check_consistency`).
_FIELDS = (
    ("run_id", _text),
    ("success", _boolean),
    ("spec.m", _integer(1)),
    ("spec.d", _integer(1)),
    ("spec.k", _integer(2)),
    ("spec.seed_index", _integer(0)),
    ("spec.entropy", _integer(0)),
    ("spec.distribution", _one_of(DISTRIBUTIONS)),
    ("spec.options", _mapping),
    ("spec.logit_scale", _real(0, open_low=True)),
    ("diagnostics.0_setting.planned_m", _integer(1)),
    (f"{_P4}.examples", _integer(1)),
    (f"{_P4}.rows_seen", _integer(0)),
    (f"{_P4}.constraints", _integer(0)),
    (f"{_P4}.constraints_per_1000_examples", _real(0)),
    (f"{_P4}.rank", _integer(0)),
    (f"{_P4}.tol", _real(0, 1, open_low=True)),
    (f"{_P4}.min_weight", _real(0, 1, open_low=True)),
)


def _field(rec, path, rule=None):
    """The value at the dotted ``path`` of ``rec``; :class:`_Unusable` naming the field when it is missing or
    breaks ``rule`` (a function returning what the value must be, or None when it is fine)."""
    value = rec
    walked: list[str] = []
    for key in path.split("."):
        if not isinstance(value, dict):
            where = ".".join(walked)
            raise _Unusable(f"field `{where}` must be a JSON object; got {value!r}")
        if key not in value:
            raise _Unusable(f"field `{'.'.join([*walked, key])}` is missing")
        value = value[key]
        walked.append(key)
    wanted = rule(value) if rule is not None else None
    if wanted is not None:
        raise _Unusable(f"field `{path}` must be {wanted}; got {value!r}")
    return value


def _check_consistency(rec, v):
    """The specification against the diagnostics of the run it names (ours; every record the learner
    writes passes). The prediction uses the spec's ``m, d, k``, the measurement the diagnostics: a record
    whose spec was edited would compare one setting's yield with another's."""
    m, d, k = v["spec.m"], v["spec.d"], v["spec.k"]
    if k >= d:
        raise _Unusable(f"field `spec.k` must be smaller than `spec.d` for certification; got k={k}, d={d}")
    if v["diagnostics.0_setting.planned_m"] != m:
        raise _Unusable(f"field `diagnostics.0_setting.planned_m` must equal `spec.m` (the learner plans the m "
                        f"it is given); got planned_m={v['diagnostics.0_setting.planned_m']}, m={m}")
    examples, constraints = v[f"{_P4}.examples"], v[f"{_P4}.constraints"]
    if v[f"{_P4}.rows_seen"] != k * examples:
        raise _Unusable(f"field `{_P4}.rows_seen` must be k × examples = {k * examples} (k={k} rows per "
                        f"example); got rows_seen={v[f'{_P4}.rows_seen']}")
    if v[f"{_P4}.rank"] > min(constraints, d * d):
        raise _Unusable(f"field `{_P4}.rank` must be at most min(constraints, d²) = {min(constraints, d * d)}; "
                        f"got rank={v[f'{_P4}.rank']} (d={d})")
    per_1000 = 1000 * constraints / examples
    if not math.isclose(v[f"{_P4}.constraints_per_1000_examples"], per_1000, rel_tol=1e-9, abs_tol=1e-12):
        raise _Unusable(f"field `{_P4}.constraints_per_1000_examples` must be 1000 × constraints / examples "
                        f"= {per_1000:.6g}; got {v[f'{_P4}.constraints_per_1000_examples']!r}")
    forecast = _field(rec, _P4).get("forecast")
    if forecast is not None:  # phase 4's pilot (records with a forecast): its window exponent (m−1)(k−1)
        n = _field(rec, f"{_P4}.forecast.n", _integer(0))
        if n != (m - 1) * (k - 1):
            raise _Unusable(f"field `{_P4}.forecast.n` must be (m−1)(k−1) = {(m - 1) * (k - 1)} for m={m}, "
                            f"k={k}; got n={n}")
    # Last: the run id names m, d and k too (and is the only place d shows beyond rank <= d²).
    expected_id = RunSpec.from_dict(rec["spec"]).run_id
    if v["run_id"] != expected_id:
        raise _Unusable(f"field `run_id` must be the one its spec gives, {expected_id!r}; got {v['run_id']!r}")


def _read_run(path):
    """The record at ``path`` if it is a run the study uses; None for other runs (skipped quietly);
    :class:`_Unusable` (naming the field) for a record that cannot be read or trusted."""
    try:
        rec = read_json(path, "record")
    except FileFormatError as exc:  # names the file and what is wrong with it
        raise _Unusable(str(exc)) from None
    except OSError as exc:
        raise _Unusable(f"unreadable ({exc})") from None
    if not isinstance(rec, dict):
        raise _Unusable(f"the record must be a JSON object; got {type(rec).__name__}")
    problem = digest_problem(rec)
    if problem:
        raise _Unusable(problem)
    # Which runs the study takes: finished evaluation runs of the provable learner that reached phase 4.
    if _field(rec, "kind", _text) != "scaling-run":
        return None
    readable = KINDS["scaling-run"][1]
    if rec.get("schema_version") not in readable:  # a record of another version's layout: not read as if it were ours
        raise _Unusable(f"field `schema_version` must be one of {list(readable)}; "
                        f"got {rec.get('schema_version')!r:.40}")
    if _field(rec, "spec.method", _text) != "provable" or _field(rec, "spec.role", _text) != "eval":
        return None
    if _field(rec, "outcome", _text) != "finished" or _field(rec, "diagnostics", _mapping).get(
            "4_refined_sculpt") is None:
        cell = tuple(_field(rec, f"spec.{key}", _integer(1)) for key in ("m", "d", "k"))
        return _Unmeasured(cell, str(rec.get("status")))
    values = {path: _field(rec, path, rule) for path, rule in _FIELDS}
    if "noise" in rec["spec"]:  # optional (exact runs have none); the run id is rebuilt from it
        _field(rec, "spec.noise", _real(0))
    _check_consistency(rec, values)
    # The time predictions read the timings where a record has them (a record without them gets none).
    problem = None if rec.get("timings") is None else timings_problem(rec["timings"])
    if problem:
        raise _Unusable(f"field {problem}")
    return rec


def _load(dirs):
    """``(records, skipped)``: the usable runs of ``dirs`` sorted by run id, and ``{"file", "reason"}`` of every
    record skipped as unreadable or invalid (each also logged as a warning)."""
    records, skipped = [], []
    unmeasured: dict[Any, list[Any]] = {}  # {cell: statuses} of the runs that did not reach phase 4
    dirs = [dirs] if isinstance(dirs, (str, Path)) else list(dirs)
    if not dirs:
        raise ValueError("`dirs` must name at least one sweep directory; got none.")
    for d in dirs:
        runs = Path(d) / "runs"
        if not runs.is_dir():
            raise FileNotFoundError(f"{str(d)!r} is not a scaling sweep: it has no runs/ directory.")
        for path in sorted(runs.glob("*.json")):
            try:
                rec = _read_run(path)
            except _Unusable as exc:
                # As the sweep engine treats an unreadable record (learner.sweep.engine): say so, and go on without it.
                log.warning("ignoring record %s: %s", path, exc)
                skipped.append({"file": str(path), "reason": str(exc)})
                continue
            if isinstance(rec, _Unmeasured):
                unmeasured.setdefault(rec.cell, []).append(rec.status)
            elif rec is not None:
                rec["_source"] = str(path)
                records.append(rec)
    ids = [r["run_id"] for r in records]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"run {dup!r} appears in two of the sweeps {dirs}; give each setting once.")
    return sorted(records, key=lambda r: r["run_id"]), skipped, unmeasured


def load_learner_records(dirs: str | Path | Iterable[PathLike]) -> list[dict[str, Any]]:
    """Finished learner runs (``role="eval"``) of the sweeps in ``dirs`` that reached phase 4, sorted by run id.

    Every record is checked on load against what the study reads (the fields of ``_FIELDS``: types,
    finiteness, ranges) and for agreement of its specification with its diagnostics (planned ``m``,
    rows per example ``k``, rank at most ``d²``, the run id, phase 4's yield against its counts). A record
    that cannot be read or fails a check is skipped with a warning (``logging``) naming the file and the
    field, as the sweep engine treats unreadable records; it is never used. The checks are ours.

    Parameters
    ----------
    dirs : path or iterable of paths
        Sweep directories written by ``python -m learner scaling`` (each with a ``runs/`` directory).

    Returns
    -------
    list of dict
        The run records as the learner wrote them (:func:`learner.sweep.runs.run_one`), each with ``"_source"``
        added: the file it was read from.

    Raises
    ------
    ValueError
        No directory given, or one run id in two sweeps.
    FileNotFoundError
        A directory without ``runs/``.
    """
    return _load(dirs)[0]


def fit_log_yield(n: ArrayLike, yields: ArrayLike) -> dict[str, float]:
    """Least squares ``log y = a + b·n``, the fit of ``yield ≈ C·δ^n``.

    Zero yields are excluded (their log is −∞) and counted.

    Parameters
    ----------
    n : array_like
        The runs' numbers of disagreements ``(m−1)(k−1)``.
    yields : array_like
        Their yields (constraints per 1000 examples), ``>= 0``.

    Returns
    -------
    dict
        ``slope`` (b), ``delta`` (``e^b``), ``intercept`` (a), ``rms`` (root-mean-square residual, natural log),
        ``points`` (runs fitted) and ``zeros`` (runs left out). The four numbers are NaN when the positive yields
        have fewer than two distinct ``n``.

    Examples
    --------
    >>> fit = fit_log_yield([1, 2, 3, 3], [100.0, 10.0, 1.0, 0.0])
    >>> round(fit["delta"], 6), fit["points"], fit["zeros"]
    (0.1, 3, 1)
    """
    n = np.asarray(n, dtype=float)
    y = np.asarray(yields, dtype=float)
    keep = y > 0
    out = {"points": int(keep.sum()), "zeros": int((~keep).sum())}
    if len(set(n[keep].tolist())) < 2:
        return out | {"slope": math.nan, "delta": math.nan, "intercept": math.nan, "rms": math.nan}
    b, a = np.polyfit(n[keep], np.log(y[keep]), 1)
    rms = float(np.sqrt(np.mean((np.log(y[keep]) - (a + b * n[keep])) ** 2)))
    return out | {"slope": float(b), "delta": float(math.exp(b)), "intercept": float(a), "rms": rms}


@dataclass(frozen=True)
class YieldStudy:
    """Per-run and per-setting yields (measured, predicted) and the fits; :meth:`YieldStudy.table` prints them.

    Returned by :func:`yield_study`.

    Parameters
    ----------
    runs : list of dict
        One row per learner run, in run-id order: its setting (``m``, ``d``, ``k``, ``n``, ``tol``, ...), the
        ``measured`` yield and the ``predicted`` one with ``predicted_by`` (``"simulation"`` or ``"model"``),
        both predictions, and the examples and seconds measured and predicted.
    settings : list of dict
        One row per ``(m, d, k, tol)``: the medians of its runs' figures and whether the median ratio is within
        a factor ``MISS_FACTOR`` (3); a cell whose every run ended before phase 4 gets a row with ``tol`` None and the
        runs' statuses.
    fit_tol : float
        The tolerance of the runs the fits use.
    fit_measured, fit_predicted : dict
        :func:`fit_log_yield` of the measured and of the predicted yields against ``n`` at ``fit_tol``.
    geometry : str
        The prediction's ``geometry`` (see :func:`~theory.yield_model.predicted_yield`).
    seconds : float
        Wall-clock time of the study.
    skipped : list of dict
        ``{"file", "reason"}`` of every record skipped as unreadable or invalid (:func:`load_learner_records`).
    density : str
        The prediction's ``density`` (see :func:`~theory.yield_model.predicted_yield`).
    """

    runs: list = field(repr=False)
    settings: list
    fit_tol: float
    fit_measured: dict
    fit_predicted: dict
    geometry: str
    seconds: float
    skipped: list = field(default_factory=list)
    density: str = "gaussian"

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of the study (``kind`` ``"yield-study"``, with its schema version).

        Returns
        -------
        dict
            The fields, ``miss_factor`` (``MISS_FACTOR``, 3) and a note saying what "measured" and "predicted" are.
        """
        return {"schema_version": schema_of("yield-study"), "kind": "yield-study", "runs": self.runs,
                "settings": self.settings,
                "fit_tol": self.fit_tol, "fit_measured": self.fit_measured, "fit_predicted": self.fit_predicted,
                "geometry": self.geometry, "density": self.density, "miss_factor": MISS_FACTOR,
                "seconds": self.seconds,
                "skipped": self.skipped,
                "note": "measured: phase-4 constraints per 1000 examples of the learner (estimated ΣW); predicted: "
                        "the certification rule simulated on the same planted layer with the true ΣW "
                        "(theory.yield_model.measured_yield) where it certified at least 100 rows, else "
                        "theory.yield_model.predicted_yield (the window model); both per run. Model ours."}

    def table(self) -> str:
        """The settings as a Markdown table, then one line per fit.

        Returns
        -------
        str
            One row per setting (medians of the measured and predicted yields, their ratio, whether it is within
            3×, the examples and seconds measured and predicted), then the measured and predicted fits at
            ``fit_tol`` (slope, ``δ``, residual, runs).
        """
        header = ["m", "d", "k", "n = (m−1)(k−1)", "tol", "runs", "measured /1000 (median)", "predicted /1000 (median)",
                  "measured / predicted", "within 3×", "phase-4 examples: measured / predicted (median)",
                  "time per run: measured / predicted (median)", "predicted by"]
        rows = []
        for s in sorted(self.settings, key=lambda s: (s["m"], s["k"], s["d"], s["tol"] or 0)):
            if s["tol"] is None:
                why = ", ".join(f"{k} {v}" for k, v in s["statuses"].items())
                rows.append([s["m"], s["d"], s["k"], s["n"], MISSING, 0, f"no run reached phase 4 ({why})",
                             *[MISSING] * 6])
                continue
            ratio = s["ratio_median"]
            rows.append([s["m"], s["d"], s["k"], s["n"], f"{s['tol']:g}", s["runs"], f"{s['measured_median']:.3g}",
                         f"{s['predicted_median']:.3g}", f"{ratio:.2f}", "yes" if s["within"] else "NO",
                         f"{fmt(s.get('examples_measured_median'), '.3g')} / "
                         f"{fmt(s.get('examples_predicted_median'), '.3g')}",
                         f"{fmt(s.get('seconds_median'), '.0f')} s / {fmt(s.get('seconds_predicted_median'), '.0f')} s",
                         ", ".join(f"{k} {v}" for k, v in (s.get("predicted_by") or {}).items())])
        lines = [markdown_table(header, rows)]
        for label, fit in (("measured", self.fit_measured), ("predicted", self.fit_predicted)):
            lines.append(f"\nlog(yield) against n at tol = {self.fit_tol:g}, {label}: slope {fit['slope']:.3f} "
                         f"(δ = e^slope = {fit['delta']:.3g}), rms residual {fit['rms']:.2f} in natural log, "
                         f"{fit['points']} runs" + (f" ({fit['zeros']} with no constraint left out)" if fit['zeros']
                                                     else ""))
        return "\n".join(lines)


def _median_of(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return float(np.median(values)) if values else None


def _counts(statuses):
    out: dict[str, int] = {}
    for status in statuses:
        out[str(status)] = out.get(str(status), 0) + 1
    return dict(sorted(out.items()))


def _run_tol(rec):
    # Phase 4's own tolerance and weight (checked on load): the config's refined_tol may be null (chosen by the
    # pilot), so it is no fallback.
    p4 = rec["diagnostics"]["4_refined_sculpt"]
    return float(p4["tol"]), float(p4["min_weight"])


#: Examples of each run's simulation of the certification rule, and the rows it must certify to be the
#: prediction (ours: Garwood's 95 % interval of 100 counts spans 0.81–1.22 times the count).
SIMULATE_EXAMPLES, SIMULATE_MIN_ROWS = 100_000, 100


# n_geometry: predicted_yield's minimum, checked up front; fit_tol: in (0, 1), as phase 4's tolerance is.
@declare(geometry=Choice(GEOMETRIES), density=Choice(DENSITIES), n_geometry=Integer(2),
         fit_tol=Real(none=True, below=1), n_simulate=Integer(0), max_seconds=Real(none=True))
def yield_study(dirs: str | Path | Iterable[PathLike], *, geometry: str = "conditional", density: str = "gaussian",
                n_geometry: int = 20_000, fit_tol: float | None = None, rng: SeedLike = None, progress: bool = False,
                max_seconds: float | None = DEFAULT_MAX_SECONDS, n_simulate: int = SIMULATE_EXAMPLES) -> YieldStudy:
    """Measured against predicted yield for every learner run of the sweeps in ``dirs``, and the fits in ``n``.

    Parameters
    ----------
    dirs : path or sequence of paths
        Sweep directories written by ``python -m learner scaling``.
    geometry : {"independent", "conditional"}
        Passed to :func:`~theory.yield_model.predicted_yield` (default ``"conditional"``).
    density : {"gaussian", "slice"}
        Passed to :func:`~theory.yield_model.predicted_yield` (default ``"gaussian"``). ``"slice"`` takes
        3–8 times as long a prediction (measured at ``d = 6–24``, ``k = 2–4``) and, where the rule certifies
        too few rows to be simulated, is the closer model (ours, measured: see its Notes).
    n_geometry : int
        Monte Carlo examples of each prediction, at least 2.
    fit_tol : float, optional
        Tolerance of the runs the fits use, in (0, 1) and one of the runs' phase-4 tolerances
        (default: the most common one).
    rng : None, int, SeedSequence or Generator
        Seeds the predictions' Monte Carlo (one child per run, in run-id order).
    progress : bool
        A progress bar of the predictions on standard error.
    max_seconds : float or None
        Refuse (ValueError, before the predictions) a study estimated to take longer; None for no limit.
        The estimate times one prediction of :data:`CALIBRATION_EXAMPLES` examples and scales it linearly
        in ``n_geometry`` and the number of runs (ours).
    n_simulate : int
        Examples of each run's simulation (0: none). The prediction of a run is the certification rule
        simulated on its planted layer with the true ``ΣW`` (:func:`~theory.yield_model.measured_yield`) where
        the simulation certifies at least ``SIMULATE_MIN_ROWS`` (100) rows, else the window model
        (:func:`~theory.yield_model.predicted_yield`); both are in every run's row (``predicted_model``,
        ``predicted_simulated``, ``predicted_by``). Ours: the window model linearises the residual, which
        holds for narrow windows and over-predicts wide ones (at tol 0.08 and k >= 4, 2–1,600 times on the
        frontier's layers), where the rule is cheap to simulate.

    Returns
    -------
    YieldStudy
        Its ``skipped`` lists the records left out as unreadable or invalid (see
        :func:`load_learner_records`; each is also logged as a warning).

    Raises
    ------
    ValueError
        A bad argument (named with its value), no usable run, or a ``fit_tol`` no run used; all
        before the first prediction.
    FileNotFoundError
        A directory without ``runs/``.
    """
    t0 = time.perf_counter()
    rng = check_rng(rng)
    records, skipped, unmeasured = _load(dirs)
    if not records:
        raise ValueError(f"no finished learner run that reached phase 4 in {dirs}"
                         + (f" ({len(skipped)} records skipped as unreadable or invalid; see the warnings)."
                            if skipped else "."))
    tols = [_run_tol(rec)[0] for rec in records]
    if fit_tol is not None:
        # A tolerance no run used would fit nothing (ours: matched to 1e-9 relative, so 0.015 is 0.015).
        match = [t for t in sorted(set(tols)) if math.isclose(t, fit_tol, rel_tol=1e-9)]
        if not match:
            raise ValueError(f"`fit_tol` must be a tolerance the runs used, one of "
                             f"{', '.join(f'{t:g}' for t in sorted(set(tols)))}; got fit_tol={fit_tol!r}.")
        fit_tol = match[0]
    if max_seconds is not None:
        estimate = _estimated_seconds(records, geometry, n_geometry, density)
        if estimate > max_seconds:
            raise ValueError(f"`n_geometry`={n_geometry:,} over {len(records)} runs would take up to about "
                             f"{_duration(estimate)} (estimated from one prediction of {CALIBRATION_EXAMPLES} "
                             f"examples on the largest run's layer), over max_seconds={max_seconds:g}; lower "
                             "n_geometry, or raise max_seconds (None for no limit).")
    seeds = rng.bit_generator.seed_seq.spawn(len(records))  # type: ignore[attr-defined]  # stubs: ISeedSequence
    runs = []
    with showing(bool(progress)):  # the phases' bar helper shows only inside `showing`
        progress_bar = bar(len(records), "yield predictions", "run")
    for rec, seed in zip(records, seeds, strict=True):
        runs.append(_run_row(rec, seed, geometry=geometry, density=density, n_geometry=n_geometry,
                             n_simulate=n_simulate))
        progress_bar.update(1)
    progress_bar.close()
    settings = _settings_rows(runs, unmeasured)
    if fit_tol is None:
        fit_tol = max(sorted(set(tols)), key=tols.count)
    used = [r for r in runs if r["tol"] == fit_tol]
    fit_m = fit_log_yield([r["n"] for r in used], [r["measured"] for r in used])
    fit_p = fit_log_yield([r["n"] for r in used], [r["predicted"] for r in used])
    return YieldStudy(runs, settings, fit_tol, fit_m, fit_p, geometry, time.perf_counter() - t0, skipped, density)


def _estimated_seconds(records, geometry, n_geometry, density="gaussian"):
    """Seconds the predictions of ``n_geometry`` examples for ``records`` would take, estimated from one small
    prediction on the layer of the largest run (largest m·k·d²: an upper estimate) with its own generator, so
    that the study's random streams are untouched (ours)."""
    n_runs = len(records)
    rec = max(records, key=lambda r: r["spec"]["m"] * r["spec"]["k"] * r["spec"]["d"] ** 2)
    spec = RunSpec.from_dict(rec["spec"])
    layer = planted_instance(spec)[0]
    tol, min_weight = _run_tol(rec)
    t0 = time.perf_counter()
    predicted_yield(layer, spec.k, tol=tol, min_weight=min_weight, distribution=spec.distribution,
                    geometry=geometry, density=density, n_geometry=CALIBRATION_EXAMPLES, rng=0)
    return (time.perf_counter() - t0) * n_runs * n_geometry / CALIBRATION_EXAMPLES


def _duration(seconds):
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"


def _run_row(rec, seed, *, geometry, n_geometry, n_simulate=SIMULATE_EXAMPLES, density="gaussian"):
    """One run's row: its measured yield, the yield model's prediction for its planted layer, and what follows."""
    spec = RunSpec.from_dict(rec["spec"])
    layer = planted_instance(spec)[0]
    tol, min_weight = _run_tol(rec)
    model = predicted_yield(layer, spec.k, tol=tol, min_weight=min_weight, distribution=spec.distribution,
                            geometry=geometry, density=density, n_geometry=n_geometry, rng=seed)
    sim = (measured_yield(layer, spec.k, tol=tol, min_weight=min_weight, n_examples=n_simulate,
                          distribution=spec.distribution, rng=seed.spawn(1)[0]) if n_simulate else None)
    if sim is not None and sim.rows_certified >= SIMULATE_MIN_ROWS:
        by, per_1000, se = "simulation", sim.constraints_per_1000, (sim.interval[1] - sim.interval[0]) / (2 * 1.96)
    else:
        by, per_1000, se = "model", model.constraints_per_1000, model.standard_error
    p4 = rec["diagnostics"]["4_refined_sculpt"]
    target = (p4.get("forecast") or {}).get("target")
    if p4.get("stopped") in ("stable", "target"):
        # The data-driven budgets: phase 5 got p4["constraints"] (a stable prefix, or the cap), and
        # examples_at_target is the example that gave the last of them.
        target = p4["constraints"]
    measured_examples = p4.get("examples_at_target") or p4["examples"]
    predicted_examples = 1000.0 * target / per_1000 if target and per_1000 > 0 else None
    timings = rec.get("timings") or {}
    rate = (((rec.get("execution") or {}).get("phases") or {}).get("4_refined_sculpt") or {}).get(
        "examples_per_second")
    predicted_seconds = None
    measured = yield_of(rec)
    assert measured is not None, "_load keeps the runs that reached phase 4"
    if predicted_examples is not None and rate and timings.get("total") is not None:
        # Ours: the run's other phases as measured, phase 4 replaced by the yield model's examples at the
        # run's own phase-4 speed, once per round it ran.
        rounds = max(1, len(p4.get("rounds") or [None]))
        predicted_seconds = (timings["total"] - timings.get("4_refined_sculpt", 0.0)
                             + rounds * predicted_examples / rate)
    return {"run_id": rec["run_id"], "m": spec.m, "d": spec.d, "k": spec.k, "n": (spec.m - 1) * (spec.k - 1),
            "logit_scale": spec.logit_scale, "seed_index": spec.seed_index, "tol": tol,
            "min_weight": min_weight, "measured": float(measured),
            "constraints": p4["constraints"], "examples": p4["examples"],
            "predicted": per_1000, "predicted_se": se, "predicted_by": by,
            "predicted_model": model.constraints_per_1000,
            "predicted_simulated": None if sim is None else sim.constraints_per_1000,
            "simulated_rows": None if sim is None else sim.rows_certified,
            "rank_deficient_fraction": model.rank_deficient_fraction, "success": bool(rec["success"]),
            "status": rec.get("status"), "target": target, "examples_measured": measured_examples,
            "examples_predicted": predicted_examples, "seconds": timings.get("total"),
            "seconds_predicted": predicted_seconds}


def _settings_rows(runs, unmeasured):
    """Per (m, d, k, tol): medians of the runs' measured and predicted figures; cells with no yield at the end."""
    settings = []
    for key in sorted({(r["m"], r["d"], r["k"], r["tol"]) for r in runs}):
        mine = [r for r in runs if (r["m"], r["d"], r["k"], r["tol"]) == key]
        meas = float(np.median([r["measured"] for r in mine]))
        pred = float(np.median([r["predicted"] for r in mine]))
        ratio = meas / pred if pred > 0 else math.inf
        settings.append({"m": key[0], "d": key[1], "k": key[2], "tol": key[3], "n": mine[0]["n"], "runs": len(mine),
                         "measured_median": meas, "predicted_median": pred, "ratio_median": ratio,
                         "within": bool(1 / MISS_FACTOR <= ratio <= MISS_FACTOR),
                         "examples_measured_median": _median_of(mine, "examples_measured"),
                         "examples_predicted_median": _median_of(mine, "examples_predicted"),
                         "seconds_median": _median_of(mine, "seconds"),
                         "seconds_predicted_median": _median_of(mine, "seconds_predicted"),
                         "predicted_by": _counts(r.get("predicted_by", "model") for r in mine),
                         "statuses": _counts(r["status"] for r in mine)})
    measured_cells = {(s["m"], s["d"], s["k"]) for s in settings}
    for (m, d, k), statuses in sorted(unmeasured.items()):
        if (m, d, k) not in measured_cells:  # a cell whose every run ended before phase 4 measured a yield
            settings.append({"m": m, "d": d, "k": k, "tol": None, "n": (m - 1) * (k - 1), "runs": 0,
                             "measured_median": None, "predicted_median": None, "ratio_median": None,
                             "within": None, "statuses": _counts(statuses)})
    return settings


def _yield_legend(fig, ax, ms, ks, markers):
    """One legend below the panels, a line each (wrapped where too long for the figure): the fits (δ: the yield's
    factor per disagreement), the colours (m) and the markers (k)."""
    from matplotlib.lines import Line2D

    groups = [list(zip(*ax.get_legend_handles_labels(), strict=True)),
              [(Line2D([], [], ls="none", marker="o", color=f"C{i % 10}"), f"m = {m}") for i, m in enumerate(ms)],
              [(Line2D([], [], ls="none", marker=markers.get(k, "o"), color="grey"), f"k = {k}") for k in ks]]
    groups = [g for g in groups if g]

    def wrapped(ncol):
        return [g[i:i + ncol] for g in groups for i in range(0, len(g), ncol)]

    def inches(rows, ncol):  # the legend's width at 9 pt: per column its widest entry, a marker and spacing
        return sum(0.55 + 0.07 * max((max(map(len, row[j][1].split("\n"))) for row in rows if j < len(row)),
                                     default=0) for j in range(ncol))

    ncol = next((n for n in range(max(map(len, groups)), 1, -1) if inches(wrapped(n), n) < 0.9 * fig.get_figwidth()),
                1)
    rows = wrapped(ncol)
    # the legend fills its columns first: entry j of every line in column j keeps each line level, padded with
    # blanks as tall as the line's entries
    pad = [[(Line2D([], [], alpha=0), "\n" * max(lb.count("\n") for _, lb in row))] * ncol for row in rows]
    entries = [(row + filler)[j] for j in range(ncol) for row, filler in zip(rows, pad, strict=True)]
    fig.legend(*zip(*entries, strict=True), loc="outside lower center", ncol=ncol, fontsize=9, frameon=False,
               columnspacing=1.2, handletextpad=0.4)


def plot_yield(study: YieldStudy, path: PathLike) -> Path:
    """``log`` yield against ``n``: every run's measurement (filled) and prediction (hollow), the fitted lines.

    Two more panels set the examples phase 4 took against those the predicted yield implies, and each run's
    seconds against those with phase 4 at the predicted examples, each drawn only where some run has the quantity
    (records made before the simulation have the yield alone). A colour per m, a marker per k, one legend below
    the panels. Needs matplotlib (the ``plot`` extra);
    without it, a ValueError saying so before anything is drawn.

    Parameters
    ----------
    study : YieldStudy
        The study to draw (from :func:`yield_study`).
    path : str or PathLike
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.
    """
    matplotlib = require_matplotlib("plot_yield")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from learner.io import atomic_write

    quantities = [(("measured", "predicted"), "certified constraints per 1000 examples",
                   f"sculpting yield (fits at tol = {study.fit_tol:g}): measured (filled), predicted (hollow)"),
                  (("examples_measured", "examples_predicted"), "phase-4 examples per round",
                   "examples to phase 4's target: measured (filled), target / predicted yield (hollow)"),
                  (("seconds", "seconds_predicted"), "seconds per run",
                   "time per run: measured (filled), with phase 4 at the predicted examples (hollow)")]
    # a panel only where some run has its quantity (records made before the simulation have the yield alone)
    quantities = quantities[:1] + [q for q in quantities[1:]
                                   if any((r.get(name) or 0) > 0 for r in study.runs for name in q[0])]
    # at most 11.8 in wide: the site shows a figure at its natural width, up to about 1300 pixels
    fig, grid = plt.subplots(1, len(quantities), figsize=(max(7.5, 3.93 * len(quantities)), 5.4), squeeze=False,
                             layout="constrained")
    axes = list(grid[0])
    ms = sorted({r["m"] for r in study.runs})
    markers = {2: "o", 3: "s", 4: "^", 5: "D", 6: "v", 7: "P", 8: "X"}
    for r in study.runs:
        color = f"C{ms.index(r['m']) % 10}"
        mk = markers.get(r["k"], "o")
        x = r["n"] + 0.06 * (r["k"] - 3)
        for panel, ((meas, pred), _, _) in zip(axes, quantities, strict=True):
            if (r.get(meas) or 0) > 0:
                panel.scatter(x, r[meas], color=color, marker=mk, s=22, alpha=0.8)
            if (r.get(pred) or 0) > 0:
                panel.scatter(x, r[pred], facecolors="none", edgecolors=color, marker=mk, s=30, alpha=0.8)
    ns = np.linspace(0, max(r["n"] for r in study.runs), 50)
    for fit, style, label in ((study.fit_measured, "-", "measured"), (study.fit_predicted, "--", "predicted")):
        if math.isfinite(fit["slope"]):
            axes[0].plot(ns, np.exp(fit["intercept"] + fit["slope"] * ns), "k" + style, lw=1,
                         label=f"fit to {label}:\nδ = {fit['delta']:.3g} per disagreement")
    for panel, (_, ylabel, heading) in zip(axes, quantities, strict=True):
        panel.set_yscale("log")
        panel.set_xlabel("disagreements n = (m−1)(k−1)")
        panel.set_ylabel(ylabel)
        panel.set_title(textwrap.fill(heading, 44 if len(quantities) > 1 else 60), fontsize=10)
        panel.grid(True, alpha=0.3)
    _yield_legend(fig, axes[0], ms, sorted({r["k"] for r in study.runs}), markers)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(Path(path), lambda fh: fh.write(buf.getvalue()))
    return Path(path)
