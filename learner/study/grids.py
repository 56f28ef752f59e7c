"""Studies over a grid of scaling studies: label noise and attention sharpness (the design is ours).

Each point of the grid (a noise level σ, or a logit scale and a dimension d) is a
:func:`~learner.study.scaling.scaling_study` in a folder of ``out`` (for the sharpness map one per method) —
resumable, with its own records and summary — run on the same seeds, so every point meets the same planted
layers (for noise: the same inputs and the same noise draws, scaled). The grid's own summary (``summary.md``,
``summary.json``) and figure are made from those records.

- :func:`noise_study` — parameter and relative error against σ for the learner and Adam, per (m, d, k) cell,
  with the slope of ``log param error`` against ``log σ`` and where each method breaks.
- :func:`sharpness_study` — success over logit scale × d × k for both methods: the learner's reach.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..hints import PathLike
from ..io import atomic_write, save_figure, write_json
from ..oracle import NOISE_RULE
from ..sweep.records import digest_problem, read_record, record_problem, study_path
from ..sweep.runs import STUDY_LOGIT_SCALE
from ..tables import fmt, markdown_table
from ..validation import Each, Integer, Real, Scale, Seed, declare

__all__ = ["NOISE_CELLS", "NOISE_SIGMAS", "SHARPNESS_D", "SHARPNESS_K", "SHARPNESS_SCALES", "grid_rows",
           "noise_study", "noise_summary", "noise_tables", "plot_noise", "plot_sharpness", "reach_boundaries",
           "sharpness_study", "sharpness_summary", "sharpness_tables"]

log = logging.getLogger(__name__)

#: The noise study's levels and cells (ours: σ from exact labels to 10⁻¹ on a logarithmic ladder; at least
#: three (m, k) cells).
NOISE_SIGMAS = (0.0, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
#: The noise study's default cells, as blocks of :func:`learner.study.frontier.parse_grid`: (m, d) = (2, 8) at
#: k = 2 and 3, and (3, 12) at k = 2 (ours: small and cheap, not tuned).
NOISE_CELLS = ("m=2,k=2..3,d=8", "m=3,k=2,d=12")
#: The sharpness map's logit scales, dimensions and token counts (m = 2; ours: from soft to sharp attention,
#: not tuned).
SHARPNESS_SCALES = (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
#: The sharpness map's token dimensions (ours: small dimensions, as in the other studies; not tuned).
SHARPNESS_D = (8, 12, 16)
#: The sharpness map's token counts (ours: the fewest tokens, where runs are cheap; not tuned).
SHARPNESS_K = (2, 3)


def _point_dirs(out, prefix):
    return sorted(p for p in Path(out).glob(f"{prefix}*") if (p / "runs").is_dir())


def grid_rows(out: PathLike, prefix: str) -> list[dict[str, Any]]:
    """One row per evaluation run recorded in the grid's folders ``out/<prefix>*``: its spec, outcome and errors.

    Only folders with a ``runs/`` folder count, and only records whose ``spec["role"]`` is ``"eval"`` (Adam's
    tuning runs are left out); a run that raised is a row too, with its ``outcome``.

    Parameters
    ----------
    out : str or path-like
        The grid's folder.
    prefix : str
        The prefix of its points' folders: ``"sigma-"`` for the noise study, ``"ls-"`` for the sharpness map.

    Returns
    -------
    list of dict
        One dict per run, by folder then file name: ``folder``, ``method``, ``m``, ``d``, ``k``, ``seed`` (the
        seed index), ``logit_scale``, ``noise`` (σ), ``outcome``, ``success`` (the method's own criterion),
        ``status``, ``relative_error``, ``param_error``, ``noise_estimate`` (the learner's σ̂, None when it made
        none), ``expected_param_error``, ``seconds`` (the run's total) and ``message``.
    """
    rows = []
    for folder in _point_dirs(out, prefix):
        for path in sorted((folder / "runs").glob("*.json")):
            rec = read_record(path)
            problem = _untrusted(rec, path)
            if problem:
                log.warning("ignoring record %s (%s): not summarised", path, problem)
                continue
            spec = rec["spec"]
            if spec.get("role") != "eval":
                continue
            errors = rec.get("errors") or {}
            rows.append({"folder": folder.name, "method": spec["method"], "m": spec["m"], "d": spec["d"],
                         "k": spec["k"], "seed": spec["seed_index"], "logit_scale": spec["logit_scale"],
                         "noise": spec.get("noise", 0.0), "outcome": rec.get("outcome"),
                         "success": bool(rec.get("success")), "status": rec.get("status"),
                         "relative_error": errors.get("relative_error"), "param_error": errors.get("param_error"),
                         "noise_estimate": rec.get("noise"), "expected_param_error": rec.get("expected_param_error"),
                         "seconds": (rec.get("timings") or {}).get("total"), "message": rec.get("message", "")})
    return rows


def _untrusted(rec, path):
    """Why a point's record is not summarised, or None: its digest (required), the types of what the rows read,
    and its ``run_id``, which must be its file's and the one its specification gives."""
    from ..sweep.runs import RunSpec

    problem = digest_problem(rec) or record_problem(rec, RunSpec.record_rules(rec))
    if problem:
        return problem
    try:
        expected = RunSpec.from_dict(rec["spec"]).run_id
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"`spec` does not describe a run ({type(exc).__name__}: {exc})"
    if rec["run_id"] != expected or path.stem != expected:
        return f"`run_id` must be {expected!r}, the one its spec gives and its file's name; got {rec['run_id']!r:.80}"
    return None


def _median(values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.median(values)) if values else None


def _quick(quick):
    """The scaling study's options for ``quick`` (tiny budgets: a smoke test, not a measurement)."""
    if not quick:
        return {}
    from ..sweep.runs import QUICK_OPTIONS

    return {"adam_options": QUICK_OPTIONS["adam"], "provable_options": QUICK_OPTIONS["provable"]}


def _write(out, lines, summary):
    blob = ("\n".join(lines) + "\n").encode("utf-8")
    md, js = study_path(out, "summary.md"), study_path(out, "summary.json")  # both checked before either is written
    atomic_write(md, lambda fh: fh.write(blob))
    write_json(js, summary)


def _summarise(out, tables, plot, figure):
    """Write a grid's summary (``tables(out)``: the summary and its Markdown lines) and, with a ``plot``
    function, its figure ``out/<figure>`` (without matplotlib: a warning saying how to draw it); returns the
    summary."""
    out = Path(out)
    summary, lines = tables(out)
    _write(out, lines, summary)
    if plot is not None and summary["rows"]:
        path = study_path(out, figure)
        try:
            plot(summary["rows"], path)
        except ImportError as exc:  # matplotlib is the optional `plot` extra: the tables stand without the figure
            log.warning("%s not drawn: matplotlib is not installed (%s). The tables are in %s; to draw it, "
                        "install the plot extra (pip install 'matplotlib>=3.8') and summarise again (the same "
                        "command with --summarise-only).", figure, exc, out / "summary.md")
    return summary


def _claim_grid(out: Path, prefix: str, run: bool, what: str, figure: str) -> None:
    """Check ``out`` as the folder of a grid of scaling studies (its points ``out/<prefix>*``); create it when new.

    To run, the folder must be new, empty or already hold points of this grid: anything else is not ours to
    write summaries over (ValueError). To re-summarise (``run`` False), it must hold points: nothing is created.
    Either way the summaries and ``figure`` are checked first (:func:`~learner.sweep.records.study_path`).
    """
    out = Path(out)
    for name in ("summary.md", "summary.json", figure):
        study_path(out, name)
    points = _point_dirs(out, prefix) if out.is_dir() else []
    if not run:
        if not points:
            raise ValueError(f"`out` must be the folder of a {what} to summarise; got out={str(out)!r}, which "
                             f"{'holds no ' + prefix + '* study folders' if out.is_dir() else 'does not exist'}: "
                             "there is nothing to summarise (run the study first).")
        return
    others = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if others and not points:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise ValueError(f"`out` must be a new or empty folder, or a {what}'s own; got out={str(out)!r}, which is "
                         f"not empty and holds no {what} ({shown}; no {prefix}* study folders): its files are not "
                         "a study's to replace.")
    out.mkdir(parents=True, exist_ok=True)


def _run_points(points, common, run):
    """Run (or resume) the scaling study of every point. With ``run`` False nothing is run: each point's records
    are checked complete as its scaling study checks them (a ValueError counts the missing ones, and a point
    never run is named), so a summary never leaves a cell out silently."""
    from .scaling import scaling_study

    for folder, _ in points:  # every point's folder checked before any runs: a link to elsewhere is refused
        study_path(folder.parent, folder.name)
    for folder, kwargs in points:
        scaling_study(folder, **common, **kwargs, run=run)


@declare(sigmas=Each(NOISE_RULE), seeds=Integer(), logit_scale=Scale(), adam_lr=Real(), seed=Seed())
def noise_study(out: PathLike, *, sigmas: Iterable[float] = NOISE_SIGMAS, cells: str | Sequence[str] = NOISE_CELLS,
                seeds: int = 2, logit_scale: float = STUDY_LOGIT_SCALE, adam_lr: float = 1e-2, seed: int = 0,
                backend: str = "local", workers: int | str | None = None, progress: bool = False, run: bool = True,
                quick: bool = False) -> dict[str, Any]:
    """Run the noise study into ``out`` (one scaling study per σ in ``out/sigma-<σ>``) and summarise it.

    Both methods see the same layers and examples at every σ. Adam's learning rate is fixed (``adam_lr``, no
    tuning) so that σ is the only thing that changes.

    Parameters
    ----------
    out : str or path-like
        The study's folder: new, empty, or one of this study's (resumed); one scaling study per σ in
        ``out/sigma-<σ>``, then ``summary.md``, ``summary.json`` and ``noise.png``.
    sigmas : iterable of float
        The label noise's standard deviations, each finite and ``>= 0`` (0: exact labels). Default
        :data:`NOISE_SIGMAS`.
    cells : str or sequence of str
        The (m, d, k) cells, as blocks of :func:`learner.study.frontier.parse_grid` (one string is one block);
        checked before anything is written. Default :data:`NOISE_CELLS`.
    seeds : int
        Planted layers per cell and σ (``>= 1``); the same layers at every σ.
    logit_scale : float
        ``‖Θ_i‖_F`` of every planted layer (``> 0``); default the studies' 1.
    adam_lr : float
        Adam's learning rate, fixed (``> 0``).
    seed : int
        Entropy of every run's seed (a non-negative integer).
    backend : {"local", "serial"}
        Where the runs go, as in :func:`learner.sweep.engine.run_sweep`: a local pool, or this process.
    workers : int, str or None
        Processes of the local pool: a positive integer, or None (default) or ``"auto"`` for every core this
        process may run on.
    progress : bool
        Show a progress bar per point.
    run : bool
        False: run nothing, re-summarise the records in ``out`` (every run must have a finished record).
    quick : bool
        Tiny budgets for both methods (:data:`learner.sweep.runs.QUICK_OPTIONS`): a smoke test, not a measurement.

    Returns
    -------
    dict
        The summary :func:`noise_summary` wrote.
    """
    from .frontier import parse_grid

    if isinstance(cells, str):
        cells = [cells]
    try:  # the cells are checked before anything is written, and the error names `cells`
        parse_grid(list(cells), d=8, seeds=1)
    except ValueError as exc:
        raise ValueError(str(exc).replace("`grid`", "`cells`", 1)) from None
    out = Path(out)
    _claim_grid(out, "sigma-", run, "noise study", "noise.png")
    # The study compares the learner and Adam under noise: those two, whatever else is registered.
    common = {"grid": list(cells), "seeds": seeds, "logit_scale": logit_scale, "adam_lrs": (adam_lr,),
              "methods": ["provable", "adam"], "seed": seed, "backend": backend, "workers": workers,
              "progress": progress, "plot": False, **_quick(quick)}
    _run_points([(out / f"sigma-{s:g}", {"noise": float(s)}) for s in sigmas], common, run)
    return noise_summary(out)


def _slope(points):
    """Least-squares slope of log10 y against log10 x over points with x, y > 0, or None with fewer than 2."""
    pts = [(math.log10(x), math.log10(y)) for x, y in points if x and y and x > 0 and y > 0]
    if len(pts) < 2:
        return None
    xs, ys = np.array(pts).T
    return float(np.polyfit(xs, ys, 1)[0])


def noise_summary(out: PathLike, plot: bool = True) -> dict[str, Any]:
    """The noise study's table (per method, cell and σ: successes, median parameter and relative error, the
    learner's σ̂ and expected parameter error), the slopes of ``log param error`` against ``log σ`` over
    σ > 0, and the first σ at which each method stops succeeding by its own criterion; written to
    ``out/summary.md`` and ``out/summary.json`` (and ``out/noise.png`` with ``plot``).

    Parameters
    ----------
    out : str or path-like
        The noise study's folder (its points ``out/sigma-*``).
    plot : bool
        Also draw ``out/noise.png`` (:func:`plot_noise`) when there are rows (default True; without matplotlib
        the tables are written and a warning says how to draw the figure).

    Returns
    -------
    dict
        The summary written to ``summary.json``, as :func:`noise_tables` makes it.
    """
    return _summarise(out, noise_tables, plot_noise if plot else None, "noise.png")


def noise_tables(out: PathLike) -> tuple[dict[str, Any], list[str]]:
    """:func:`noise_summary` without writing anything: ``(summary, markdown lines)`` from the records in ``out``.

    Parameters
    ----------
    out : str or path-like
        The noise study's folder (its points ``out/sigma-*``).

    Returns
    -------
    summary : dict
        ``kind`` (``"noise-study-summary"``), ``schema_version`` (1), ``rows`` (per method, m, d, k and σ:
        ``runs``, ``successes`` and the medians ``param_error``, ``relative_error``, ``noise_estimate`` and
        ``expected_param_error``, with the ``statuses``), ``fits`` (per method and cell: the slopes
        ``slope_param_error`` and ``slope_relative_error`` of log error against log σ over σ > 0, and
        ``first_failure_sigma``, the smallest σ with a failure, or None) and ``note`` (the study's design, in
        words).
    lines : list of str
        The Markdown of ``summary.md``: the table of errors, a blank line, the table of slopes.
    """
    rows = grid_rows(out, "sigma-")
    groups: dict[tuple[str, int, int, int, float], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["method"], r["m"], r["d"], r["k"], r["noise"]), []).append(r)
    table = []
    for (method, m, d, k, sigma), runs in sorted(groups.items()):
        table.append({"method": method, "m": m, "d": d, "k": k, "sigma": sigma, "runs": len(runs),
                      "successes": sum(r["success"] for r in runs),
                      "param_error": _median([r["param_error"] for r in runs]),
                      "relative_error": _median([r["relative_error"] for r in runs]),
                      "noise_estimate": _median([r["noise_estimate"] for r in runs]),
                      "expected_param_error": _median([r["expected_param_error"] for r in runs]),
                      "statuses": sorted({r["status"] for r in runs})})
    fits = []
    for method, m, d, k in sorted({(t["method"], t["m"], t["d"], t["k"]) for t in table}):
        mine = [t for t in table if (t["method"], t["m"], t["d"], t["k"]) == (method, m, d, k)]
        broken = [t["sigma"] for t in mine if t["successes"] < t["runs"]]
        fits.append({"method": method, "m": m, "d": d, "k": k,
                     "slope_param_error": _slope([(t["sigma"], t["param_error"]) for t in mine]),
                     "slope_relative_error": _slope([(t["sigma"], t["relative_error"]) for t in mine]),
                     "first_failure_sigma": min(broken) if broken else None})
    errors = markdown_table(
        ["method", "m", "d", "k", "σ", "runs", "own success", "median param error", "median rel. error",
         "σ̂ (learner)", "expected param error", "statuses"],
        [[t["method"], t["m"], t["d"], t["k"], f"{t['sigma']:g}", t["runs"], f"{t['successes']}/{t['runs']}",
          fmt(t["param_error"], ".2g"), fmt(t["relative_error"], ".2g"), fmt(t["noise_estimate"], ".2g"),
          fmt(t["expected_param_error"], ".2g"), ", ".join(t["statuses"])] for t in table])
    slopes = markdown_table(
        ["method", "m", "d", "k", "slope of log param error vs log σ", "slope of log rel. error",
         "first σ with a failure"],
        [[f["method"], f["m"], f["d"], f["k"], fmt(f["slope_param_error"], ".2g"),
          fmt(f["slope_relative_error"], ".2g"), fmt(f["first_failure_sigma"], "g", missing="none")] for f in fits])
    lines = [*errors.split("\n"), "", *slopes.split("\n")]
    summary = {"kind": "noise-study-summary", "schema_version": 1, "rows": table, "fits": fits,
               "note": "study design ours; slopes over σ > 0 of the medians; success is each method's "
                       "own criterion (the learner: exact or at the noise floor; Adam: its validation error)"}
    return summary, lines


def plot_noise(table: Sequence[Mapping[str, Any]], path: PathLike) -> None:
    """The noise study's figure: median parameter error against σ per (m, d, k) cell, both methods.

    One panel per cell (three a row), log-log, with the line ``σ`` for reference; σ = 0 cannot be drawn on log
    axes. A method has one colour in every panel; one legend below the panels.

    Parameters
    ----------
    table : sequence of mapping
        The ``rows`` of :func:`noise_tables`' summary.
    path : str or path-like
        The PNG file written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = sorted({(t["m"], t["d"], t["k"]) for t in table})
    ncols = min(3, len(cells))  # three panels a row keep the figure within the site's width (about 1300 px)
    rows = -(-len(cells) // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(3.8 * ncols, 3.4 * rows + 0.4), squeeze=False,
                             layout="constrained")
    legend: dict[str, Any] = {}  # label -> the first line drawn with it
    for spare in axes.ravel()[len(cells):]:
        spare.set_visible(False)
    for ax, (m, d, k) in zip(axes.ravel(), cells, strict=False):
        for method, marker, colour in (("provable", "o", "C0"), ("adam", "s", "C1")):
            pts = sorted((t["sigma"], t["param_error"]) for t in table
                         if (t["method"], t["m"], t["d"], t["k"]) == (method, m, d, k) and t["sigma"] > 0
                         and t["param_error"] is not None)
            if pts:
                legend.setdefault(method, ax.loglog(*zip(*pts, strict=True), marker=marker, color=colour)[0])
        sig = sorted({t["sigma"] for t in table if t["sigma"] > 0})
        if sig and ax.get_lines():
            legend.setdefault("σ", ax.loglog(sig, sig, color="grey", linestyle=":")[0])
        ax.set_title(f"(m, d, k) = ({m}, {d}, {k})")
        ax.set_xlabel("label noise σ")
        ax.set_ylabel("median parameter error")
        if not ax.get_lines():  # only σ = 0, or no run returned a layer: nothing to draw on log axes
            ax.text(0.5, 0.5, "no run with σ > 0 returned a layer", ha="center", va="center",
                    transform=ax.transAxes)
    if legend:  # one legend below the panels, over no data; a method has one colour in every panel
        fig.legend(handles=list(legend.values()), labels=list(legend), loc="outside lower center", ncol=len(legend),
                   frameon=False)
    save_figure(fig, path, dpi=110)
    plt.close(fig)


@declare(scales=Each(Scale()), ds=Each(Integer(3)), ks=Each(Integer(2)), m=Integer(), seeds=Integer(),
         adam_seeds=Integer(0), adam_lr=Real(), seed=Seed())
def sharpness_study(out: PathLike, *, scales: Iterable[float] = SHARPNESS_SCALES, ds: Sequence[int] = SHARPNESS_D,
                    ks: Sequence[int] = SHARPNESS_K, m: int = 2, seeds: int = 6, adam_seeds: int = 1,
                    adam_lr: float = 1e-2, seed: int = 0, backend: str = "local", workers: int | str | None = None,
                    progress: bool = False, run: bool = True, quick: bool = False) -> dict[str, Any]:
    """Run the sharpness map into ``out`` and summarise it (:func:`sharpness_summary`).

    Per logit scale and d, two scaling studies over k in ``ks``: the learner on ``seeds`` planted layers per cell
    (``out/ls-<scale>-d<d>``) and Adam on the first ``adam_seeds`` of the same layers at the fixed learning rate
    ``adam_lr``, no tuning (``out/ls-<scale>-d<d>-adam``; none with ``adam_seeds=0``; at most ``seeds``). Adam
    is run on fewer layers because each of its runs costs several of the learner's at m = 2 (at logit scale 0.5
    and d = 8, 151 s against the learner's 7 s).

    Parameters
    ----------
    out : str or path-like
        The map's folder: new, empty, or one of this map's (resumed); then ``summary.md``, ``summary.json`` and
        ``sharpness.png``.
    scales : iterable of float
        The logit scales ``‖Θ_i‖_F`` (each ``> 0``). Default :data:`SHARPNESS_SCALES`.
    ds : sequence of int
        The token dimensions (each ``>= 3``). Default :data:`SHARPNESS_D`.
    ks : sequence of int
        The token counts (each ``>= 2``; the learner needs ``k < d``). Default :data:`SHARPNESS_K`.
    m : int
        Heads of every planted layer (``>= 1``; default 2).
    seeds : int
        The learner's planted layers per cell (``>= 1``).
    adam_seeds : int
        Adam's layers per cell (``>= 0``): the first of the learner's, at most ``seeds`` (a larger value is cut
        to ``seeds``); 0 runs the learner only.
    adam_lr : float
        Adam's learning rate, fixed (``> 0``).
    seed : int
        Entropy of every run's seed (a non-negative integer).
    backend : {"local", "serial"}
        Where the runs go, as in :func:`learner.sweep.engine.run_sweep`: a local pool, or this process.
    workers : int, str or None
        Processes of the local pool: a positive integer, or None (default) or ``"auto"`` for every core this
        process may run on.
    progress : bool
        Show a progress bar per point.
    run : bool
        False: run nothing, re-summarise the records in ``out`` (every run must have a finished record).
    quick : bool
        Tiny budgets for both methods (:data:`learner.sweep.runs.QUICK_OPTIONS`): a smoke test, not a measurement.

    Returns
    -------
    dict
        The summary :func:`sharpness_summary` wrote.
    """
    adam_seeds = min(adam_seeds, seeds)
    out = Path(out)
    _claim_grid(out, "ls-", run, "sharpness map", "sharpness.png")
    k_block = f"{min(ks)}..{max(ks)}" if list(ks) == list(range(min(ks), max(ks) + 1)) else None
    points = []
    for s in scales:
        for d in ds:
            grid = [f"m={m},k={k_block},d={d}"] if k_block else [f"m={m},k={k},d={d}" for k in ks]
            name = f"ls-{s:g}-d{d}"
            points.append((out / name, {"grid": grid, "logit_scale": float(s), "methods": ["provable"],
                                        "seeds": seeds}))
            if adam_seeds:
                points.append((out / f"{name}-adam", {"grid": grid, "logit_scale": float(s), "methods": ["adam"],
                                                      "seeds": adam_seeds, "adam_lrs": (adam_lr,)}))
    common = {"seed": seed, "backend": backend, "workers": workers, "progress": progress, "plot": False,
              **_quick(quick)}
    _run_points(points, common, run)
    return sharpness_summary(out)


def sharpness_summary(out: PathLike, plot: bool = True) -> dict[str, Any]:
    """The sharpness map: per method, (d, k) and logit scale the successes, and the statuses of the failures.

    Written to ``out/summary.md`` and ``out/summary.json`` (and ``out/sharpness.png`` with ``plot``).

    Parameters
    ----------
    out : str or path-like
        The map's folder (its points ``out/ls-*``).
    plot : bool
        Also draw ``out/sharpness.png`` (:func:`plot_sharpness`) when there are rows (default True; without
        matplotlib the tables are written and a warning says how to draw the figure).

    Returns
    -------
    dict
        The summary written to ``summary.json``, as :func:`sharpness_tables` makes it.
    """
    return _summarise(out, sharpness_tables, plot_sharpness if plot else None, "sharpness.png")


def sharpness_tables(out: PathLike) -> tuple[dict[str, Any], list[str]]:
    """:func:`sharpness_summary` without writing anything: ``(summary, markdown lines)`` from the records in ``out``.

    Parameters
    ----------
    out : str or path-like
        The map's folder (its points ``out/ls-*``).

    Returns
    -------
    summary : dict
        ``kind`` (``"sharpness-study-summary"``), ``schema_version`` (1), ``rows`` (per method, d, k and logit
        scale: ``runs``, ``successes``, ``failures`` (the failed runs' statuses, sorted), ``median_seconds`` and
        ``median_relative_error``) and ``note`` (the study's design, in words).
    lines : list of str
        The Markdown of ``summary.md``: per method (the learner first) a table of successes, (d, k) down and
        logit scale across.
    """
    rows = grid_rows(out, "ls-")
    cells: dict[tuple[str, int, int, float], list[dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["method"], r["d"], r["k"], r["logit_scale"]), []).append(r)
    table = [{"method": method, "d": d, "k": k, "logit_scale": s, "runs": len(runs),
              "successes": sum(r["success"] for r in runs),
              "failures": sorted(r["status"] for r in runs if not r["success"]),
              "median_seconds": _median([r["seconds"] for r in runs]),
              "median_relative_error": _median([r["relative_error"] for r in runs])}
             for (method, d, k, s), runs in sorted(cells.items())]
    scales = sorted({t["logit_scale"] for t in table})
    lines = []
    for method in sorted({t["method"] for t in table}, reverse=True):
        body = []
        for d, k in sorted({(t["d"], t["k"]) for t in table if t["method"] == method}):
            by = {t["logit_scale"]: t for t in table if (t["method"], t["d"], t["k"]) == (method, d, k)}
            cells_md = []
            for s in scales:
                t = by.get(s)
                if t is None:
                    cells_md.append("")
                    continue
                counts = {f: t["failures"].count(f) for f in sorted(set(t["failures"]))}
                fail = f" ({', '.join(f'{f} {n}' for f, n in counts.items())})" if counts else ""
                cells_md.append(f"{t['successes']}/{t['runs']}{fail}")
            body.append([d, k, *cells_md])
        lines += [f"**{method}** — successes per logit scale (failures by status)", "",
                  *markdown_table(["d", "k", *(f"{s:g}" for s in scales)], body).split("\n"), ""]
    summary = {"kind": "sharpness-study-summary", "schema_version": 1, "rows": table,
               "note": "study design ours; m = 2, random_layer at each logit scale; success is each "
                       "method's own criterion"}
    return summary, lines


def plot_sharpness(table: Sequence[Mapping[str, Any]], path: PathLike) -> None:
    """The sharpness map's figure: the fraction of layers learned against logit scale.

    One panel per method (the learner first), one line per (d, k), its colour the same in every panel, and one
    legend below the panels.

    Parameters
    ----------
    table : sequence of mapping
        The ``rows`` of :func:`sharpness_tables`' summary.
    path : str or path-like
        The PNG file written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = sorted({t["method"] for t in table}, reverse=True)  # the learner first
    lines = sorted({(t["d"], t["k"]) for t in table})
    colours = {line: f"C{i % 10}" for i, line in enumerate(lines)}  # one colour per (d, k) in every panel
    fig, axes = plt.subplots(1, len(methods), figsize=(min(11.5, 4.6 * len(methods)), 3.9), squeeze=False,
                             sharey=True, layout="constrained")
    legend: dict[str, Any] = {}  # label -> the first line drawn with it
    for ax, method in zip(axes[0], methods, strict=True):
        for d, k in sorted({(t["d"], t["k"]) for t in table if t["method"] == method}):
            pts = sorted((t["logit_scale"], t["successes"] / t["runs"], t["runs"]) for t in table
                         if (t["method"], t["d"], t["k"]) == (method, d, k))
            xs, ys, ns = zip(*pts, strict=True)
            (line,) = ax.plot(xs, ys, marker="o" if k == 2 else "s", linestyle="-" if k == 2 else "--",
                              color=colours[(d, k)])
            legend.setdefault(f"d = {d}, k = {k}", line)
        ax.set_xscale("log", base=2)
        scales = sorted({t["logit_scale"] for t in table})
        ax.set_xticks(scales, [f"{s:g}" for s in scales])
        ax.minorticks_off()
        ax.set_title({"provable": "the learner", "adam": "numpy Adam"}.get(method, method)
                     + " (lines at 1 overlap)")
        ax.set_xlabel("logit scale ‖Θ_i‖_F")
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].set_ylabel("fraction of layers learned (own criterion)")
    # one legend below the panels, over no data (the layers per point are in the page's table)
    fig.legend(handles=list(legend.values()), labels=list(legend), loc="outside lower center",
               ncol=min(len(legend), 4), frameon=False)
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _range(values, fmt="{:.2g}"):
    values = sorted(values)
    if not values:
        return ""
    lo, hi = fmt.format(values[0]), fmt.format(values[-1])
    return lo if lo == hi else f"{lo}–{hi}"


def _failure_words(runs):
    """The failures of ``runs`` by phase, in words (phase 5's ranks, phase 6's relative errors)."""
    import re

    parts = []
    p5 = [r for r in runs if not r["success"] and r["status"] == "5_span"]
    p6 = [r for r in runs if not r["success"] and r["status"] == "6_search"]
    other = [r for r in runs if not r["success"] and r["status"] not in ("5_span", "6_search")]
    if p5:
        ranks = [int(m.group(1)) for r in p5 if (m := re.search(r"of rank (\d+)", r["message"]))]
        parts.append(f"{len(p5)} in phase 5 for lack of certified constraints"
                     + (f" (rank {_range(ranks, '{}')})" if ranks else ""))
    if p6:
        errs = [float(m.group(1)) for r in p6
                if (m := re.search(r"held-out relative error ([0-9.e+-]+)", r["message"]))]
        parts.append(f"{len(p6)} in phase 6" + (f" (held-out relative error {_range(errs)})" if errs else ""))
    if other:
        parts.append(f"{len(other)} with status {', '.join(sorted({r['status'] for r in other}))}")
    return ", ".join(parts)


def reach_boundaries(out: PathLike, *, method: str = "provable",
                     distribution: str = "boolean") -> dict[tuple[int, int], tuple[float, str]]:
    """The learner's reach in logit scale per (d, k) from the records of a sharpness grid in ``out``
    (folders ``ls-*``; m = 2): the smallest measured scale from which on, at every larger measured scale too,
    at least half of the layers failed — ``{(d, k): (scale, words)}``, ``words`` saying what was measured
    (failures per scale and by phase). A (d, k) whose layers mostly succeed at every scale has no entry.
    This is how :data:`learner.assumptions.SHARPNESS_REACH` is made (a test checks it against the records).

    Parameters
    ----------
    out : str or path-like
        The sharpness map's folder (its points ``out/ls-*``).
    method : str
        Whose finished runs are read (default ``"provable"``, the learner).
    distribution : str
        The input distribution named in the words (default ``"boolean"``); it labels the text only and does
        not select records.

    Returns
    -------
    dict
        ``{(d, k): (scale, words)}``: the smallest measured logit scale from which on at least half of the
        layers failed at every measured scale, and what was measured, in words.
    """
    rows = [r for r in grid_rows(out, "ls-") if r["method"] == method and r["outcome"] == "finished"]
    out_table = {}
    for d, k in sorted({(r["d"], r["k"]) for r in rows}):
        by_scale: dict[float, list[dict[str, Any]]] = {}
        for r in rows:
            if (r["d"], r["k"]) == (d, k):
                by_scale.setdefault(r["logit_scale"], []).append(r)
        scales = sorted(by_scale)
        failing = [2 * sum(not r["success"] for r in by_scale[s]) >= len(by_scale[s]) for s in scales]
        start = next((i for i in range(len(scales)) if all(failing[i:])), None)
        if start is None:
            continue
        counts = "; ".join(f"scale {s:g}: {sum(not r['success'] for r in by_scale[s])} of {len(by_scale[s])} "
                           f"failed" + (f" ({_failure_words(by_scale[s])})"
                                        if any(not r["success"] for r in by_scale[s]) else "")
                           for s in scales)
        out_table[(d, k)] = (float(scales[start]), f"m = 2, {distribution} inputs, random_layer at each scale; "
                                                   f"{counts}")
    return out_table
