"""The learner beside the gradient baselines a user would pick: our numpy Adam and torch Adam, on the same layers.

:func:`peer_study` plants layers as :func:`learner.study.scaling.scaling_study` does (the same
seeds: with ``seed=0`` and the same ``(m, d, k)`` its layer ``s`` is the scaling study's layer
``s``), runs the paper's learner (:func:`learner.learn`), :func:`learner.baselines.fit_gradient` (numpy,
full-batch Adam, restarts) and :func:`learner.baselines.torch_adam.fit_torch` (torch Adam,
mini-batches, cosine schedule, clipping) on each, and reports per method the time to a relative
error of 1e-3 and of 1e-8, the examples drawn and the final error. Runs are records of the
sweep engine (:mod:`learner.sweep.engine`): resumable, locked, on any backend. The comparison's design
is ours; the paper reports no experiments.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..baselines import check_milestones, milestone_key
from ..hints import PathLike
from ..io import versions
from ..sweep.engine import claim_study, claimed_parameters, median, run_sweep, sweep_lock
from ..sweep.methods import METHODS, check_methods, get, method_names, present_names
from ..sweep.records import StudyResult, study_path, write_summary
from ..sweep.runs import STUDY_LOGIT_SCALE, RunSpec, param_limit, plan_runs, sound_d
from ..tables import MISSING, fmt, markdown_table
from ..validation import Each, Integer, OrWord, Real, Scale, Seed, check_int, declare

__all__ = ["PeerResult", "RaceResult", "peer_methods", "peer_rows", "peer_study", "peer_table", "plot_race",
           "race_study", "race_table", "search_ladder", "search_options", "search_rows", "seconds_to"]

#: Relative errors whose first crossing is timed (ours: a coarse fit and near-exact recovery; not tuned).
MILESTONES = (1e-3, 1e-8)


def _order(method):
    """A method's place in the tables: its place in the registry (:mod:`learner.sweep.methods`)."""
    return list(METHODS).index(method)


def _study_options(methods, options, named):
    """Each method's options in a comparison: its registry entry's ``study_options`` (the one-thread rule), then
    ``options[method]``, then the shorthand keyword given for it (``named``: method -> dict or None)."""
    given = {name: dict(value or {}) for name, value in (options or {}).items()}
    for name, value in named.items():
        if value is not None:
            given[name] = given.get(name, {}) | dict(value)
    unknown = sorted(set(given) - set(methods))
    if unknown:
        raise ValueError(f"`options` name methods that do not run: {unknown}; the methods are {list(methods)}.")
    out = {name: dict(get(name).study_options) | given.get(name, {}) for name in methods}
    for name in methods:
        get(name).check_options(out[name])  # every option checked before the first run
    return out


def _require_extras(methods):
    """Each method's optional extra is installed, or one line saying how to install it, before anything runs."""
    for name in methods:
        get(name).require()


def seconds_to(rec: Mapping[str, Any], threshold: float) -> float | None:
    """Seconds from the start of the run to a relative error of ``threshold``, or None if it never got there.

    The baselines time their first validation below it (``diagnostics.fit.seconds_to``); the learner
    returns one layer, at the end, so its time is the run's total when that layer's error against the
    planted one is at most ``threshold``.

    Parameters
    ----------
    rec : mapping
        A run record of a registered study method.
    threshold : float
        A relative error; a baseline's must be one of the milestones it timed.

    Returns
    -------
    float or None
        The seconds, or None for a run that raised or never got there.
    """
    if rec.get("outcome") != "finished":
        return None
    if get(rec["spec"]["method"]).role == "learner":
        err = rec["errors"].get("relative_error")
        return rec["timings"]["total"] if err is not None and err <= threshold else None
    return ((rec.get("diagnostics") or {}).get("fit") or {}).get("seconds_to", {}).get(milestone_key(threshold))


def peer_rows(records: Iterable[Mapping[str, Any]], *,
              milestones: Iterable[float] = MILESTONES) -> list[dict[str, Any]]:
    """Per (m, d, k, method): runs, how many reached each milestone and when, and the medians of the finished runs.

    Parameters
    ----------
    records : iterable of mapping
        Run records of registered study methods (every role counts: give the measured ones).
    milestones : iterable of float
        The relative errors whose first crossing is timed: distinct, in (0, 1); default ``MILESTONES``.

    Returns
    -------
    list of dict
        One dict per (m, d, k, method), in that order (methods in registry order): ``method``, ``m``, ``d``,
        ``k``, ``runs``, ``errors_raised``, ``median_seconds`` and ``median_examples`` (over the finished runs),
        ``param_limit`` (:func:`~learner.sweep.runs.param_limit`), ``median_relative_error`` (the final error)
        and ``milestones``: per milestone key (``"1e-03"``) ``{"reached": runs that got there,
        "median_seconds": their median time to it}``.
    """
    milestones = check_milestones(milestones)
    groups: dict[tuple[int, int, int, int], list[Mapping[str, Any]]] = {}
    for rec in records:
        s = rec["spec"]
        groups.setdefault((s["m"], s["d"], s["k"], _order(s["method"])), []).append(rec)
    rows = []
    for (m, d, k, mi), recs in sorted(groups.items()):
        finished = [r for r in recs if r["outcome"] == "finished"]
        row: dict[str, Any] = {"method": list(METHODS)[mi], "m": m, "d": d, "k": k, "runs": len(recs),
                               "errors_raised": len(recs) - len(finished),
                               "median_seconds": median([r["timings"].get("total") for r in finished]),
                               "median_examples": median([r["examples_drawn"] for r in finished]),
                               "param_limit": param_limit(m, d, k),
                               "median_relative_error": median([r["errors"].get("relative_error") for r in finished]),
                               "milestones": {}}
        for t in milestones:
            times = [seconds_to(r, t) for r in recs]
            got = [x for x in times if x is not None]
            row["milestones"][milestone_key(t)] = {"reached": len(got), "median_seconds": median(got)}
        rows.append(row)
    return rows


def peer_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The side-by-side Markdown table: one row per (m, d, k, method).

    Parameters
    ----------
    rows : sequence of mapping
        The rows of :func:`peer_rows`, in the order shown.

    Returns
    -------
    str
        The Markdown table: per milestone the median time and how many runs reached it, then the median seconds,
        the median examples (with their multiple of the parameter-counting limit) and the median final error.
    """
    keys = list(rows[0]["milestones"]) if rows else []
    header = ["m", "d", "k", "method", "runs", *(f"time to {key} (reached)" for key in keys), "median s",
              "median examples (/ limit)", "median rel. err"]
    body = []
    for r in rows:
        ratio = "" if r["median_examples"] is None else f" ({r['median_examples'] / r['param_limit']:.0f}×)"
        body.append([r["m"], r["d"], r["k"], r["method"], r["runs"],
                     *(f"{fmt(r['milestones'][key]['median_seconds'], '.1f')} s "
                       f"({r['milestones'][key]['reached']}/{r['runs']})" for key in keys),
                     fmt(r["median_seconds"], ".1f"), f"{fmt(r['median_examples'], ',.0f')}{ratio}",
                     fmt(r["median_relative_error"], ".2g")])
    return markdown_table(header, body)


def _layers(cells):
    """The planted layers of a race's cells ``(m, d, k, n)``: the sum of their ``n``."""
    return sum(n for _, _, _, n in cells if isinstance(n, int))


def _counted_sweep(total, at_least, out, ex):
    """``sweep(specs, done=())``: :func:`run_sweep` of ``specs`` in ``out``, whose Ctrl-C counts the study's ``total``
    planned runs and the ``done`` finished records of the sweeps before it, not the one sweep's."""
    from ..errors import SweepInterrupted

    def sweep(specs, done=()):
        try:
            return run_sweep(specs, out, **ex)
        except SweepInterrupted as exc:
            raise exc.in_study(len(done), total, at_least=at_least) from None

    return sweep


def peer_methods(out: PathLike, kind: str = "peer-study") -> list[str]:
    """The methods a peer study (or a race) in ``out`` runs when none are named: those its ``study.json`` records
    (resuming or re-summarising it), else every method this machine can run
    (:func:`~learner.sweep.methods.present_names`).

    A study records the methods it ran (the keys of its ``options``), so registering a new method leaves a
    committed study as it was: it re-summarises, and resumes, with its own methods.

    Parameters
    ----------
    out : str or path-like
        The study's directory (it need not exist).
    kind : str
        ``"peer-study"`` (default) or ``"race-study"``.

    Returns
    -------
    list of str
        The method names, in registry order (a recorded method no longer registered is kept, last, for
        :func:`~learner.sweep.methods.check_methods` to name).
    """
    ran = (claimed_parameters(out, kind) or {}).get("options")
    if not isinstance(ran, dict) or not ran:
        return list(present_names())
    return [name for name in method_names() if name in ran] + sorted(set(ran) - set(method_names()))


def _previous(path):
    """The study's earlier summary as a dict (empty when missing, unreadable or not an object), its
    ``concurrency`` kept only when it is a string."""
    from ..io import read_json

    try:
        found = read_json(path, "summary")
    except (OSError, ValueError):  # FileFormatError is a ValueError
        return {}
    if not isinstance(found, dict):
        return {}
    return {key: value for key, value in found.items() if key != "concurrency" or isinstance(value, str)}


def _extra_versions(records, methods):
    """Per optional extra of ``methods``: the versions of it the finished runs recorded (``diagnostics.fit``'s
    ``<extra>_version``), joined, or None."""
    out = {}
    for name in methods:
        extra = get(name).extra
        if extra is None:
            continue
        found = {((r.get("diagnostics") or {}).get("fit") or {}).get(f"{extra}_version") for r in records
                 if r["spec"]["method"] == name and r.get("outcome") == "finished"}
        found.discard(None)
        out[extra] = ", ".join(sorted(str(v) for v in found)) or None
    return out


@dataclass(frozen=True)
class PeerResult(StudyResult):
    """What :func:`peer_study` measured (:class:`learner.sweep.records.StudyResult`).

    Parameters
    ----------
    records : list of dict
        Its runs' records.
    summary : dict
        The JSON summary (also written to ``out/summary.json``): ``rows`` (:func:`peer_rows`), ``parameters``,
        ``concurrency``, ``versions`` and ``note``.
    stats : dict
        The sweep's counts: ``{"ran": runs run now, "skipped": runs whose finished records were kept}``.
    files : dict
        What was written: ``{name: path}`` (``summary_json``, ``summary_md``).
    """

    def table(self) -> str:
        """The summary as Markdown: :func:`peer_table` and what its times mean.

        Returns
        -------
        str
            The table, then a paragraph defining "time to e" and saying how the runs shared the machine.
        """
        s = self.summary
        return (peer_table(s["rows"]) + "\n\n" + "time to e: seconds from the run's start to its first relative "
                "error ≤ e (Adam: validation error, checked after every update for numpy, every epoch for torch; "
                "the learner: its one layer's error against the planted layer, so its total time), median over "
                "the runs that reached it. One thread per method, " + s["concurrency"] + ".")


@declare(ms=Each(Integer()), k=Integer(2), d=OrWord("auto", Integer()), seeds=Integer(), logit_scale=Scale(),
         seed=Seed())
def peer_study(out: PathLike, *, ms: Sequence[int] = (1, 2, 3, 4), k: int = 2, d: int | str = "auto", seeds: int = 3,
               logit_scale: float = STUDY_LOGIT_SCALE, methods: Iterable[str] | None = None,
               options: Mapping[str, Mapping[str, Any] | None] | None = None,
               adam_options: Mapping[str, Any] | None = None, torch_options: Mapping[str, Any] | None = None,
               provable_options: Mapping[str, Any] | None = None, seed: int = 0, backend: str = "local",
               workers: int | str | None = None, scheduler: str | None = None, progress: bool = False,
               run: bool = True) -> PeerResult:
    """Run the learner, numpy Adam and torch Adam on the same planted layers; the side-by-side summary.

    Parameters
    ----------
    out : path
        Directory of the study: ``runs/`` (one JSON record per run), ``study.json``,
        ``summary.json`` and ``summary.md``.
    ms : sequence of int
        Numbers of heads (each ``>= 1``; default 1 2 3 4).
    k : int
        Tokens per sequence.
    d : int or "auto"
        Token dimension; ``"auto"`` is :func:`learner.sweep.runs.sound_d` per ``(m, k)`` (12 for m <= 4 at k = 2).
    seeds : int
        Planted layers per m; every method meets the same layers and oracle seeds.
    logit_scale : float
        Of the planted layers (the scaling study's 1).
    methods : sequence of str, optional
        The registered study methods to run (:mod:`learner.sweep.methods`); default None: :func:`peer_methods`, the
        methods the study in ``out`` ran, or for a new study every method present, in registry order.
    options : dict, optional
        Per method, its keyword arguments (on top of its registry entry's ``study_options``: ``threads=1`` for
        torch Adam).
    adam_options, torch_options, provable_options : dict, optional
        Shorthands for ``options["adam"]`` (:func:`~learner.baselines.fit_gradient`), ``options["torch-adam"]``
        (:func:`~learner.baselines.torch_adam.fit_torch`) and ``options["provable"]``
        (:class:`~learner.phases.LearnConfig` fields).
    seed : int
        Entropy of every run's seed.
    backend, workers, scheduler, progress, run
        As in :func:`learner.sweep.engine.run_sweep` (``run=False``: summarise the records already there).

    Returns
    -------
    PeerResult
    """
    from pathlib import Path

    from ..io import check_writable_dir

    if d == "auto":
        dims = {m: sound_d(m, k) for m in ms}
    else:
        dims = dict.fromkeys(ms, check_int("d", d, minimum=k + 1))
    methods = check_methods("methods", peer_methods(out) if methods is None else methods)
    # The baselines time MILESTONES, their default `milestones`.
    options = _study_options(methods, options, {"provable": provable_options, "adam": adam_options,
                                                "torch-adam": torch_options})
    if run:
        _require_extras(methods)
    out = Path(check_writable_dir("out", out))
    # Where the runs went is not part of the study (a resume may use another backend); the summary says it.
    concurrency = ("one run at a time" if backend == "serial" else
                   f"{workers} runs at a time" if backend == "local" and workers else
                   "one run per core" if backend == "local" else "runs on a Dask cluster")
    parameters = {"ms": ms, "k": k, "d": {str(m): dd for m, dd in dims.items()}, "seeds": seeds,
                  "logit_scale": logit_scale, "options": options, "milestones": list(MILESTONES), "seed": seed}
    specs = [s for m in ms for s in plan_runs(ms=[m], d=dims[m], k=k, seeds=seeds, methods=methods,
                                              entropy=seed, options=options, logit_scale=logit_scale)]
    specs.sort(key=lambda s: (s.seed_index, s.m, _order(s.method)))
    with sweep_lock(out, create=run):
        claim_study(out, "peer-study", RunSpec.RECORD_KIND, parameters, write=run)
        records, stats = run_sweep(specs, out, backend=backend, workers=workers, scheduler=scheduler,
                                   progress=progress, run=run)
        if not run:  # re-summarising: the concurrency of the sitting that ran them, as its summary said
            concurrency = _previous(out / "summary.json").get("concurrency", "as recorded by the runs' sitting")
        summary = {"rows": peer_rows(records), "parameters": parameters, "concurrency": concurrency,
                   "versions": versions() | _extra_versions(records, methods),
                   "note": "comparison design ours (instances: learner.random_layer); the paper reports no "
                           "experiments. time to e: first relative error <= e, median over the runs that reached it."}
        files: dict[str, str] = {}
        result = PeerResult(records, summary, stats, files)
        files |= write_summary(out, summary, result.table() + "\n")
    return result


# --------------------------------------------------------------------------------------------------------- #
# The race (ours): the peers on the frontier's cells, both Adams' learning rates tuned per cell
# --------------------------------------------------------------------------------------------------------- #

def _race_rows(records):
    """:func:`peer_rows` with, per milestone, the median examples of the runs that reached it."""
    rows = peer_rows(records)
    for row in rows:
        mine = [r for r in records if (r["spec"]["m"], r["spec"]["d"], r["spec"]["k"], r["spec"]["method"])
                == (row["m"], row["d"], row["k"], row["method"])]
        for t in MILESTONES:
            got = [r["examples_drawn"] for r in mine if seconds_to(r, t) is not None]
            row["milestones"][milestone_key(t)]["median_examples"] = median(got)
    return rows


def race_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The race's Markdown table: per cell and method, time and examples to each milestone, and the best error.

    Parameters
    ----------
    rows : sequence of mapping
        The race's rows (``summary["rows"]`` of :func:`race_study`: :func:`peer_rows` with each milestone's
        ``median_examples``).

    Returns
    -------
    str
        The Markdown table, ordered by m, k, d and the methods' registry order.
    """
    keys = list(rows[0]["milestones"]) if rows else []
    header = ["(m, d, k)", "method", "runs", *(f"to {key}: reached, time, examples" for key in keys),
              "best rel. err (median)"]
    body = []
    for r in sorted(rows, key=lambda r: (r["m"], r["k"], r["d"], _order(r["method"]))):
        ms = r["milestones"]
        body.append([f"({r['m']}, {r['d']}, {r['k']})", r["method"], r["runs"],
                     *(f"{ms[key]['reached']}/{r['runs']}, {fmt(ms[key]['median_seconds'], '.2g')} s, "
                       f"{fmt(ms[key]['median_examples'], ',.0f')}" for key in keys),
                     fmt(r["median_relative_error"], ".2g")])
    return markdown_table(header, body)


def _race_panel(ax, what, rows, search, cells, present, label):
    """One panel of :func:`plot_race`: each method's milestones (or fewest examples) per cell; whether any point
    was drawn. A method keeps its colour and marker whichever others ran; ``label``: name the milestones."""
    drawn = False
    for i, method in enumerate(METHODS):
        if method not in present:
            continue
        colour, marker, x = f"C{i}", "os^vD"[i % 5], 0.2 * (i - 1)
        if what == "fewest":
            found = {(r["m"], r["d"], r["k"]): r for r in search if r["method"] == method}
            for pick, mark in ((lambda r: r["min_examples"], marker),
                               (lambda r: max(t["examples"] for t in r["tried"]) if r["min_examples"] is None
                                else None, "x")):
                pts = [(j + x, pick(found[c])) for j, c in enumerate(cells) if c in found]
                pts = [(px, py) for px, py in pts if py]
                if pts:
                    ax.scatter(*zip(*pts, strict=True), marker=mark, s=36, color=colour)
                drawn = drawn or bool(pts)
            continue
        for key, fill in ((milestone_key(1e-8), True), (milestone_key(1e-3), False)):
            xs, ys = [], []
            for j, cell in enumerate(cells):
                row = next((r for r in rows if (r["m"], r["d"], r["k"]) == cell and r["method"] == method), None)
                value = None if row is None else row["milestones"].get(key, {}).get(what)
                if value:
                    xs.append(j + x)
                    ys.append(value)
            ax.scatter(xs, ys, marker=marker, s=36, color=colour, facecolors=colour if fill else "none",
                       label=f"{method}, to {key}" if label else None)
            drawn = drawn or bool(ys)
    return drawn


def plot_race(rows: Sequence[Mapping[str, Any]], path: PathLike,
              search: Iterable[Mapping[str, Any]] | None = None) -> str:
    """Time and examples to a relative error of 1e-8 (filled) and 1e-3 (open) per cell and method (log scales).

    With a search, a third panel: each method's fewest examples with which every layer reached 1e-8, and a
    cross at the largest size tried where no size learned every layer. A method has one colour and marker in
    every panel; the legend lies below the panels.

    Parameters
    ----------
    rows : sequence of mapping
        The race's rows (``summary["rows"]`` of :func:`race_study`).
    path : str or path-like
        The PNG file written (atomically).
    search : iterable of mapping or None
        ``summary["search"]`` of :func:`race_study`; None or empty: two panels only.

    Returns
    -------
    str
        ``path``, as a string.
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from ..io import atomic_write

    search = [r for r in (search or []) if r["tried"]]
    cells = sorted({(r["m"], r["d"], r["k"]) for r in rows} | {(r["m"], r["d"], r["k"]) for r in search},
                   key=lambda c: (c[0], c[2], c[1]))
    panels = ("median_seconds", "median_examples") + (("fewest",) if search else ())
    # at most 11.8 in wide: the site shows the figure at its natural width, up to about 1300 pixels
    fig, axes = plt.subplots(len(panels), 1, figsize=(min(11.8, max(7, 0.6 * len(cells) + 2)),
                                                      3.8 * len(panels)), sharex=True, layout="constrained")
    present = {r["method"] for r in rows} | {r["method"] for r in search}
    for panel, (ax, what) in enumerate(zip(axes, panels, strict=True)):
        if _race_panel(ax, what, rows, search, cells, present, label=panel == 0):
            ax.set_yscale("log")
        else:  # no run reached either milestone (e.g. tiny budgets): an empty panel, said so
            ax.text(0.5, 0.5, "no run reached 1e-3" if what != "fewest" else "no size searched",
                    transform=ax.transAxes, ha="center", va="center")
        ax.set_ylabel({"median_seconds": "seconds", "median_examples": "examples",
                       "fewest": "fewest examples,\nevery layer to 1e-8"}[what])
        ax.grid(True, which="major", alpha=0.3)
    axes[-1].set_xticks(range(len(cells)), [f"({m}, {d}, {k})" for m, d, k in cells], rotation=45, ha="right")
    axes[-1].set_xlabel("cell (m, d, k)")
    handles, labels = axes[0].get_legend_handles_labels()
    ncol = max(1, len(set(lb.split(",")[0] for lb in labels)))  # a column per method
    if any(r["min_examples"] is None for r in search):
        handles.append(Line2D([], [], ls="none", marker="x", color="0.3"))
        labels.append("no size learned:\nthe largest tried\n(method's colour)")
        ncol += 1
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)
    axes[0].set_title("The race: median time and examples to a relative error\nof 1e-8 (filled) and 1e-3 (open)"
                      + ("; below, the fewest examples" if search else ""))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda fh: fh.write(buf.getvalue()))
    return str(path)


@dataclass(frozen=True)
class RaceResult(StudyResult):
    """What :func:`race_study` measured (:class:`learner.sweep.records.StudyResult`).

    Parameters
    ----------
    records : list of dict
        Its runs' records (the measured runs, then the search's).
    summary : dict
        The JSON summary (also written to ``out/summary.json``): ``rows``, ``parameters``, ``tuning`` (each
        Adam's learning rate per cell), ``concurrency``, ``search`` (the rows :func:`search_rows` shows),
        ``search_tol``, ``versions`` and ``note``.
    stats : dict
        The sweep's counts: ``{"ran": runs run now, "skipped": runs whose finished records were kept}``.
    files : dict
        What was written: ``{name: path}`` (``summary_json``, ``summary_md`` and ``plot``).
    """

    def table(self) -> str:
        """The summary as Markdown: :func:`race_table`, its note, and the search's table when there was one.

        Returns
        -------
        str
            The race's table and note; with a search, a paragraph on how it was made and :func:`search_rows`.
        """
        s = self.summary
        out = race_table(s["rows"]) + "\n\n" + s["note"] + " One thread per method, " + s["concurrency"] + "."
        if s.get("search"):
            out += ("\n\nThe fewest examples: fixed sets of each oracle's first N examples (the same for every "
                    "method), N on a ladder of halvings, bisected between the fewest with which every layer reached a "
                    "relative error of 1e-8 on fresh inputs and the most with which one did not. The "
                    "Adams train on 4/5 of a set and validate on the rest, with the steps of their measured runs "
                    "(numpy Adam is full-batch; torch Adam's epochs are raised on a smaller set).\n\n"
                    + search_rows(s["search"]))
        return out


#: The search's success: a relative error of F at most this on fresh inputs (ours: the race's tighter milestone).
SEARCH_TOL = 1e-8


def _search_start(method, eval_records, options=None):
    """Where a method's search starts: a baseline's own ``n_train + n_val`` (its options', 25,000 by default: what
    its measured runs drew); for the learner, which draws what it needs, twice its most examples over its measured
    runs of the cell (a fixed set is not the oracle's streams, so its rules may stop elsewhere), rounded up to a
    thousand."""
    if get(method).role == "baseline":
        given = get(method).defaults() | dict(options or {})
        return int(given["n_train"]) + int(given["n_val"])
    drawn = [r["examples_drawn"] for r in eval_records if r.get("examples_drawn")]
    return int(-(-2 * max(drawn) // 1000) * 1000) if drawn else None


def search_options(method: str, options: Mapping[str, Any], size: int) -> dict[str, Any]:
    """A method's options on a fixed set of ``size`` examples in the search (ours).

    The baselines train on the first 4/5 of the set and validate on the rest (:func:`learner.sweep.runs.run_one`).
    A method whose budget does not depend on the set's size keeps its options (numpy Adam is full-batch: its steps
    per restart, ``max_iter``, are the same at every size); one whose budget is counted in passes over the set has
    a rule in its registry entry (:meth:`learner.sweep.methods.StudyMethod.on_fixed_set`: torch Adam's ``epochs``
    are raised so that its steps per restart are at least those of its measured runs). The search then asks how
    few examples a method needs, not how few steps.

    Parameters
    ----------
    method : str
        A registered study method.
    options : mapping
        Its options on the measured runs (an Adam's with its tuned ``lr``).
    size : int
        Examples in the fixed set.

    Returns
    -------
    dict
        ``options`` with ``examples`` set to ``size`` (which makes :func:`~learner.sweep.runs.run_one` use the
        oracle's first ``size`` examples), changed by the method's ``fixed_set`` rule if it has one.

    Examples
    --------
    >>> search_options("adam", {"lr": 0.03}, 1000)
    {'lr': 0.03, 'examples': 1000}
    """
    return get(method).on_fixed_set(dict(options) | {"examples": int(size)}, size)


def _reached(rec, tol=SEARCH_TOL):
    err = (rec.get("errors") or {}).get("relative_error")
    return rec.get("outcome") == "finished" and err is not None and err <= tol


def search_rows(search: Iterable[Mapping[str, Any]]) -> str:
    """The search's Markdown table: per cell and method, the sizes tried and the fewest examples that sufficed.

    Parameters
    ----------
    search : iterable of mapping
        ``summary["search"]`` of :func:`race_study`: per cell and method, ``tried`` (``examples``, ``runs``,
        ``reached``), ``min_examples``, and ``open`` or ``at_limit`` where they apply.

    Returns
    -------
    str
        The Markdown table: the sizes tried, largest first, each with the layers that reached 1e-8 of those run,
        and the fewest examples with which every layer did ("open" where the rounds ran out first; marked where
        it is the last rung above the parameter-counting limit).
    """
    body = []
    for row in sorted(search, key=lambda r: (r["m"], r["k"], r["d"], _order(r["method"]))):
        tried = ", ".join(f"{t['examples']:,}: {t['reached']}/{t['runs']}"
                          for t in sorted(row["tried"], key=lambda t: -t["examples"])) or MISSING
        best = ("open (more rounds)" if row.get("open") else MISSING if row["min_examples"] is None
                else f"{row['min_examples']:,}" + (" (the counting limit's rung)" if row.get("at_limit") else ""))
        body.append([f"({row['m']}, {row['d']}, {row['k']})", row["method"], tried, best])
    return markdown_table(
        ["(m, d, k)", "method", "examples tried: layers reaching 1e-8", "fewest examples, every layer"], body)


def search_ladder(start: int, m: int, d: int, k: int) -> list[int]:
    """The sizes the search may try: ``start // 2**j`` for ``j = 0, 1, …`` while at least the parameter-counting limit.

    The floor is :func:`~learner.sweep.runs.param_limit`, rounded up (and at least 2, a training and a validation
    example); below it no method can identify the layer (generically), so the search counts that as a failure
    without running it.

    Parameters
    ----------
    start : int
        The first size (a method's measured examples, or the learner's twice its most).
    m : int
        Heads.
    d : int
        Token dimension.
    k : int
        Tokens per example.

    Returns
    -------
    list of int
        The sizes, decreasing; empty when ``start`` is below the floor.

    Examples
    --------
    >>> search_ladder(25000, 2, 12, 2)  # the floor is 2·2·12/2 = 24
    [25000, 12500, 6250, 3125, 1562, 781, 390, 195, 97, 48, 24]
    """
    floor = max(2, math.ceil(param_limit(m, d, k)))
    sizes: list[int] = []
    while start >= floor and (not sizes or start < sizes[-1]):
        sizes.append(int(start))
        start //= 2
    return sizes


def _search(cells, methods, options, evals, out, ex, common, rounds):
    """The minimum-examples search: per method and cell, fixed sets of the oracles' first N examples, N on the
    halving ladder :func:`search_ladder` from :func:`_search_start`, bisected (ours): between the smallest size at
    which every layer reached :data:`SEARCH_TOL` and the largest at which one did not (below the ladder: the
    parameter-counting limit), the next size tried is the middle rung, until the two are neighbours. The answer is
    the same as halving down to the first failure's wherever success in N examples means success in more, in about
    log2 of the ladder's length sizes instead of its length. The baselines' first rung is their measured runs
    themselves (they draw their n_train + n_val once from the same oracle), at most ``rounds`` sizes are run."""
    rows, state = {}, {}
    for m, d, k, n in cells:
        for method in methods:
            mine = [r for r in evals if (r["spec"]["m"], r["spec"]["d"], r["spec"]["k"], r["spec"]["method"])
                    == (m, d, k, method)]
            start = _search_start(method, mine, options[method]((m, d, k, method)))
            row = rows[(m, d, k, method)] = {"m": m, "d": d, "k": k, "method": method, "tried": [],
                                             "min_examples": None}
            ladder = search_ladder(start, m, d, k) if start else []
            lo, hi = -1, len(ladder)  # rungs known to succeed (every layer) / to fail; hi = len: below the limit
            if ladder and get(method).role == "baseline":  # the measured runs are the first rung
                row["tried"].append({"examples": start, "runs": len(mine), "reached": sum(map(_reached, mine))})
                if mine and row["tried"][-1]["reached"] == len(mine):
                    lo, row["min_examples"] = 0, start
                else:
                    hi = 0
            if hi - lo > 1:
                state[(m, d, k, method)] = [ladder, lo, hi, n]
    records: list[dict[str, Any]] = []
    stats: dict[str, int] = {}
    for _ in range(rounds):
        active = {key: v for key, v in state.items() if v[2] - v[1] > 1}
        if not active:
            break
        sizes = {key: ladder[(lo + hi) // 2] for key, (ladder, lo, hi, _) in active.items()}
        specs = {key: plan_runs(ms=[key[0]], d=key[1], k=key[2], seeds=v[3], methods=[key[3]], role="min",
                                options={key[3]: search_options(key[3], options[key[3]](key), sizes[key])}, **common)
                 for key, v in active.items()}
        got, more = run_sweep([s for group in specs.values() for s in group], out, **ex)
        stats = {key: stats.get(key, 0) + more[key] for key in more}
        by_id = {r["run_id"]: r for r in got}
        records += got
        for key, group in specs.items():
            recs = [by_id[s.run_id] for s in group]
            reached = sum(map(_reached, recs))
            rows[key]["tried"].append({"examples": sizes[key], "runs": len(recs), "reached": reached})
            v = state[key]
            if reached == len(recs):
                v[1] = (v[1] + v[2]) // 2
                rows[key]["min_examples"] = sizes[key]
            else:
                v[2] = (v[1] + v[2]) // 2
    for key, (ladder, lo, hi, _) in state.items():
        if hi - lo > 1:  # a bracket left open when the rounds ran out: no answer
            rows[key]["min_examples"] = None
            rows[key]["open"] = True
        elif lo == len(ladder) - 1:  # every layer learned at the last rung above the parameter-counting limit
            rows[key]["at_limit"] = True
    return list(rows.values()), records, stats


@declare(seeds=Integer(), lrs=Each(Real()), tune_seeds=Integer(), seed=Seed(), search_rounds=Integer(0))
def race_study(out: PathLike, *, grid: Sequence[str] | None = None, seeds: int = 3,
               lrs: Iterable[float] = (1e-2, 3e-2), tune_seeds: int = 1,
               options: Mapping[str, Mapping[str, Any] | None] | None = None,
               adam_options: Mapping[str, Any] | None = None, torch_options: Mapping[str, Any] | None = None,
               provable_options: Mapping[str, Any] | None = None, seed: int = 0, backend: str = "local",
               workers: int | str | None = None, scheduler: str | None = None, progress: bool = False,
               plot: bool = True, run: bool = True, search_rounds: int = 0,
               search_methods: Iterable[str] | None = None) -> RaceResult:
    """The learner, numpy Adam and torch Adam on the frontier's cells, each Adam's learning rate tuned per cell.

    The runs are those of :func:`peer_study` (the same planted layers and oracle seeds for every method) on the
    cells of ``grid`` (:func:`learner.study.frontier.parse_grid`; default the frontier's
    :data:`~learner.study.frontier.DEFAULT_GRID`, ``seeds`` layers each). Each Adam first runs at every learning
    rate of ``lrs`` on ``tune_seeds`` tuning layers per cell, seeded apart (as the frontier tunes numpy Adam:
    :func:`learner.study.scaling.scaling_study`), and its measured runs use the value with the lowest median
    validation error. A run's id is its specification's, so the frontier's records of the same runs (the
    learner's, numpy Adam's and its tuning runs, same options) can be copied in and are resumed, not rerun.

    The summary (:func:`race_table`, ``race.png`` by :func:`plot_race`) gives per cell and method the runs that
    reached a relative error of 1e-3 and 1e-8, their median time and examples to it, and the median final error
    (the method's best). Ours, as is the whole comparison.

    With ``search_rounds`` (ours) each method's fewest examples is searched for in every cell: fixed sets of the
    first N examples of each measured run's oracle (the same examples for every method), N on a ladder of
    halvings (:func:`search_ladder`) from the learner's twice its most examples or the baselines' own
    ``n_train + n_val`` (25,000 by default; their measured runs are that first rung) down to the
    parameter-counting limit, bisected for at most ``search_rounds`` sizes between the fewest examples with which
    every layer reached a relative error of 1e-8 and the most with which one did not (``summary["search"]``,
    :func:`search_rows`), for the methods of ``search_methods``. The Adams keep the optimisation budget of their
    measured runs at every size (:func:`search_options`), so the search counts examples, not steps. Neither is
    part of the study's claim: a later call with more rounds or methods goes on from the records there.

    Parameters
    ----------
    out : str or path-like
        Directory of the study: ``runs/``, ``study.json``, ``summary.json``, ``summary.md`` and ``race.png``.
    grid : sequence of str or None
        The cells, as blocks of :func:`learner.study.frontier.parse_grid` (a block's ``seeds=auto`` is not
        supported here); None: :data:`~learner.study.frontier.DEFAULT_GRID`.
    seeds : int
        Planted layers per cell whose block names none (``>= 1``; default 3).
    lrs : iterable of float
        The learning rates each Adam is tuned over, per cell (each ``> 0``; default 0.01 and 0.03).
    tune_seeds : int
        Tuning layers per cell and learning rate (``>= 1``).
    options : mapping or None
        Per method, its keyword arguments (on top of its registry entry's ``study_options``); an Adam's must not
        set ``lr``.
    adam_options, torch_options, provable_options : mapping or None
        Shorthands for ``options["adam"]``, ``options["torch-adam"]`` and ``options["provable"]``.
    seed : int
        Entropy of every run's seed (a non-negative integer).
    backend, workers, scheduler, progress, run
        As in :func:`learner.sweep.engine.run_sweep` (``run=False``: summarise the records already there).
    plot : bool
        Write ``race.png`` (:func:`plot_race`; skipped with a warning without matplotlib).
    search_rounds : int
        Sizes the minimum-examples search may run per method and cell (``>= 0``; 0: no search).
    search_methods : iterable of str or None
        The methods searched: registered methods this machine can run; None: every one the race runs.

    Returns
    -------
    RaceResult
        The records, the summary, the sweeps' counts and the files written.
    """
    from pathlib import Path

    from ..io import check_writable_dir
    from .frontier import DEFAULT_GRID, parse_grid
    from .scaling import _choose_lr, _setting_label

    cells = parse_grid(list(grid or DEFAULT_GRID), seeds=seeds, sound_d=sound_d)
    lrs = [float(x) for x in lrs]
    methods = check_methods("methods", peer_methods(out, "race-study"))  # a race re-summarises with its own
    search_methods = check_methods("search_methods", methods if search_methods is None else search_methods)
    absent = [name for name in search_methods if name not in methods]
    if absent:
        raise ValueError(f"`search_methods` names {absent}, which this machine cannot run (the race runs "
                         f"{methods}); got search_methods={list(search_methods)!r}.")
    base = _study_options(methods, options, {"provable": provable_options, "adam": adam_options,
                                             "torch-adam": torch_options})
    tuned = [name for name in method_names(tuned_lr=True) if name in methods]
    for method in tuned:
        if "lr" in base[method]:
            raise ValueError(f"the {method} options must not set 'lr'; give the grid as `lrs`.")
    if run:
        _require_extras(methods)
    out = Path(check_writable_dir("out", out))
    ex: dict[str, Any] = {"backend": backend, "workers": workers, "scheduler": scheduler, "progress": progress,
                          "run": run}
    parameters = {"grid": list(grid or DEFAULT_GRID), "cells": [list(c) for c in cells], "lrs": lrs,
                  "tune_seeds": tune_seeds, "options": base, "milestones": list(MILESTONES), "seed": seed}
    common: dict[str, Any] = {"entropy": seed, "logit_scale": STUDY_LOGIT_SCALE}
    with sweep_lock(out, create=run):
        claim_study(out, "race-study", RunSpec.RECORD_KIND, parameters, write=run, files=("race.png",) if plot else ())
        tune = [s for method in tuned for lr in lrs for m, d, k, _ in cells
                for s in plan_runs(ms=[m], d=d, k=k, seeds=tune_seeds, methods=[method], role="tune",
                                   options={method: base[method] | {"lr": lr}}, **common)]
        # n is a cell's number of layers; a block's seeds=auto (parse_grid's "auto") is not supported here.
        learner = [s for m, d, k, n in cells
                   for s in plan_runs(ms=[m], d=d, k=k, seeds=n,  # type: ignore[arg-type]
                                      methods=[mt for mt in methods if mt not in tuned],
                                      options=base, **common)]
        # Ctrl-C in either sweep counts the race's planned runs, not the sweep's (the search adds more later).
        sweep = _counted_sweep(len(learner + tune) + len(tuned) * _layers(cells), bool(search_rounds), out, ex)
        tuning_records, stats = sweep(learner + tune)
        by_id = {r["run_id"]: r for r in tuning_records}
        chosen = {method: _choose_lr([by_id[s.run_id] for s in tune if s.method == method], lrs)
                  for method in tuned}
        measured = [s for method in tuned for m, d, k, n in cells
                    for s in plan_runs(ms=[m], d=d, k=k, seeds=n, methods=[method], options={  # type: ignore[arg-type]
                        method: base[method] | {"lr": chosen[method][_setting_label(m, d, k)]["lr"]}}, **common)]
        got, more = sweep(measured, [r for r in tuning_records if r.get("outcome") == "finished"])
        stats = {key: stats[key] + more[key] for key in stats}
        by_id |= {r["run_id"]: r for r in got}
        records = [by_id[s.run_id] for s in learner + measured]
        rows = _race_rows(records)
        search, search_records = [], []
        if search_rounds:
            lr = {method: chosen[method] for method in tuned}

            def opts(key, lr=lr):
                method = key[3]
                extra = {"lr": lr[method][_setting_label(*key[:3])]["lr"]} if method in tuned else {}
                return base[method] | extra

            searched = [mt for mt in methods if mt in search_methods]
            search, search_records, more = _search(cells, searched, dict.fromkeys(searched, opts), records, out, ex,
                                                   common, search_rounds)
            stats = {key: stats[key] + more.get(key, 0) for key in stats}  # the search's runs counted too
        concurrency = ("one run at a time" if backend == "serial" else
                       f"{workers} runs at a time" if backend == "local" and workers else
                       "one run per core" if backend == "local" else "runs on a Dask cluster")
        if not run:
            concurrency = _previous(out / "summary.json").get("concurrency", "as recorded by the runs' sitting")
        summary = {"rows": rows, "parameters": parameters, "tuning": chosen, "concurrency": concurrency,
                   "search": search, "search_tol": SEARCH_TOL,
                   "versions": versions() | _extra_versions(records, methods),
                   "note": "comparison design ours; the paper reports no experiments. to e: the runs whose relative "
                           "error reached e (Adam: validation error at its checks; the learner: its one layer's error "
                           "against the planted layer at the end of the run), their median seconds from the run's "
                           "start and median examples drawn."}
        files: dict[str, str] = {}
        result = RaceResult(records + search_records, summary, stats, files)
        files |= write_summary(out, summary, result.table() + "\n")
        if plot:
            try:
                files["plot"] = plot_race(rows, study_path(out, "race.png"), search)
            except ImportError as exc:  # matplotlib is the plot extra
                logging.getLogger(__name__).warning("race.png not written: %s", exc)
    return result
