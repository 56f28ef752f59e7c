"""The run-time-versus-m study: the paper's learner and gradient descent on the same planted layers.

A sweep runs every method on every setting ``(m, d, k)`` and seed, writes one
JSON record per run into ``OUT/runs/``, and summarises them: success rate,
median time, median examples, examples against the parameter-counting limit,
and a fitted growth of time and examples in ``m``.

The runs, their seeding and their records are :mod:`learner.sweep.runs` (both
methods see the same planted layer and an oracle with the same seed: the learner's
phases 1–4 draw its per-batch streams, Adam its sequential stream, the same
distribution, not the same examples). Execution — backends (this process, a local
pool, a Dask cluster), one JSON record per run, resume, the lock on ``OUT`` and
Ctrl-C — is the shared sweep engine, :mod:`learner.sweep.engine`; the summary files
are written by :func:`learner.sweep.records.write_summary`. This module is the study:
Adam's tuning, the runs, the summary, the plot.

The study's design — the instances, the common success criterion, the tuning
rule for Adam, the fits — is ours; the paper proves the learner's guarantee
and does not report experiments.
"""

from __future__ import annotations

import logging
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..baselines import OPTION_RULES
from ..hints import PathLike
from ..io import versions as _versions
from ..oracle import NOISE_RULE
from ..sweep.engine import check_learn_workers, claim_study, claimed_parameters, fit_growth, run_sweep, sweep_lock
from ..sweep.engine import median as _median
from ..sweep.records import StudyResult, study_path, write_summary
from ..sweep.runs import (
    METHODS,
    STUDY_LOGIT_SCALE,
    RunSpec,
    param_limit,
    plan_runs,
    sound_d,
    yield_of,
)
from ..tables import fmt, markdown_table
from ..validation import DISTRIBUTIONS, Choice, Each, Integer, OrWord, Real, Scale, Seed, declare

__all__ = ["SweepResult", "plot_scaling", "scaling_study", "study_methods", "summarise"]

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- the study


def summarise(records: Iterable[Mapping[str, Any]], *, success_tol: float = 1e-3) -> dict[str, Any]:
    """Rows per (method, m, d, k) and fitted growth in m per method, from measured (``role="eval"``) records.

    ``success`` in the table is the common criterion: relative error of ``F``
    against the planted layer on fresh inputs at most ``success_tol``;
    ``own_success`` is each method's own criterion (the learner's is far
    stricter: ``1e-10`` and the paper's identifiability conditions). Times and
    examples are medians over all finished runs, successful or not (what a
    user pays); runs that raised count as failures and are excluded from the
    medians. The median relative error is over the runs that returned a layer
    (``layers_returned`` of them).

    Parameters
    ----------
    records : iterable of mapping
        Run records (``scaling-run``); only those whose ``spec["role"]`` is ``"eval"`` are counted.
    success_tol : float
        The common success criterion: a finished run succeeds when its relative error is at most this (default
        1e-3).

    Returns
    -------
    dict
        ``success_tol``; ``rows``, one dict per (method, m, d, k), sorted: ``runs``, ``errors_raised``,
        ``success_rate``, ``own_success_rate``, ``median_seconds``, ``median_examples``, ``param_limit``,
        ``median_examples_ratio``, ``median_relative_error``, ``layers_returned``, ``statuses`` (``{status:
        count}``), ``median_yield`` (:func:`~learner.sweep.runs.yield_of`) and ``tol_phase4`` (the learner's
        median phase-4 tolerance); and ``growth``, per method (and k, when there are several) the
        :func:`~learner.sweep.engine.fit_growth` of ``seconds`` and ``examples`` against the ``ms``.
    """
    groups: dict[tuple[str, int, int, int], list[Mapping[str, Any]]] = {}
    for rec in records:
        spec = rec["spec"]
        if spec["role"] != "eval":
            continue
        groups.setdefault((spec["method"], spec["m"], spec["d"], spec["k"]), []).append(rec)
    rows: list[dict[str, Any]] = []
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


def _choose_lr(records, lrs):
    """Per setting (m, d, k), the learning rate with the lowest median validation relative error over the
    tuning runs; keys are ``"m=.., d=.., k=.."``."""
    by_m: dict[str, dict[float, list[float]]] = {}  # {setting: {lr: validation errors}}
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
class SweepResult(StudyResult):
    """What :func:`scaling_study` measured (:class:`learner.sweep.records.StudyResult`), and the tuning runs' records.

    Parameters
    ----------
    records : list of dict
        The measured runs' records.
    summary : dict
        The JSON summary (also written to ``out/summary.json``): :func:`summarise`'s, with ``tuning``,
        ``parameters``, ``versions`` and ``note``, and with a grid ``frontier`` and ``fits``.
    stats : dict
        The sweeps' counts: ``{"ran": runs run now, "skipped": runs whose finished records were kept}``.
    files : dict
        What was written: ``{name: path}`` (``summary_json``, ``summary_md``, and ``plot`` and ``frontier_plot``
        when drawn).
    tuning_records : list of dict
        Adam's learning-rate tuning runs' records (empty without tuning).
    """

    tuning_records: list = field(default_factory=list, repr=False)

    def table(self) -> str:
        """The summary as a Markdown table, followed by the fitted growth and the tuning choice.

        Returns
        -------
        str
            The table of :func:`summarise`'s rows; the growth in m per method (where there are two m or more);
            with a grid, the frontier per method, the cells and the fits; and Adam's learning rate per setting
            when it was tuned.
        """
        s = self.summary
        header = ["method", "m", "d", "k", "runs", f"success (rel. err ≤ {s['success_tol']:g})", "own criterion",
                  "median s", "median examples", "limit 2md²/(kd)", "examples / limit", "yield /1000 ex.",
                  "median rel. err (layers returned)", "statuses"]
        rows = [[r["method"], r["m"], r["d"], r["k"], r["runs"], f"{r['success_rate']:.0%}",
                 f"{r['own_success_rate']:.0%}", fmt(r["median_seconds"], ".1f"), fmt(r["median_examples"], ",.0f"),
                 f"{r['param_limit']:g}", fmt(r["median_examples_ratio"], ".3g"), fmt(r.get("median_yield"), ".3g"),
                 f"{fmt(r['median_relative_error'], '.2g')} ({r['layers_returned']}/{r['runs']})",
                 ", ".join(f"{k} {v}" for k, v in r["statuses"].items())] for r in s["rows"]]
        lines = [markdown_table(header, rows), ""]
        for method, g in s["growth"].items():
            if len(g["ms"]) < 2:  # one m at this k (a grid's column): no growth in m to fit
                continue
            for what in ("seconds", "examples"):
                f = g[what]
                power = round(f["power"], 2) + 0.0  # no "-0.00"
                lines.append(f"{method}, median {what} over m = {g['ms']}: ∝ m^{power:.2f} "
                             f"(rms log residual {f['power_rms_log']:.2f}) or ∝ {f['base']:.2f}^m "
                             f"(rms {f['base_rms_log']:.2f})")
        if s.get("frontier") is not None:
            from .frontier import AUTO_FIRST, AUTO_FULL, AUTO_SECONDS, cells_table, fits_table, frontier_table

            for method in sorted({c["method"] for c in s["frontier"]}, reverse=True):
                lines += ["", f"{method}: median time per run and successes per cell (m down, k across):", "",
                          frontier_table(s["frontier"], method)]
            lines += ["", "Cells (seeds: 'auto' = " + f"{AUTO_FIRST} layers, {AUTO_FULL} where their median time "
                      f"was under {AUTO_SECONDS:g} s):", "", cells_table(s["frontier"]), "",
                      "Fits of log(median over successful runs) per cell (natural log; ours):", "",
                      fits_table(s["fits"])]
        tuning = s.get("tuning")
        if tuning:
            lines.append("")
            lines.append(f"Adam's learning rate, per setting, from the grid {tuning['grid']} on {tuning['seeds']} "
                         "tuning instance(s) not among the measured ones (lowest median validation relative error):")
            for m, c in tuning["chosen"].items():
                meds = ", ".join(f"{lr:g}: {v:.2g}" for lr, v in c["median_val_relative_error"].items())
                lines.append(f"  {m}: lr = {c['lr']:g}  ({meds})")
        return "\n".join(lines)


@declare(ms=Each(Integer(), none=True), d=OrWord("auto", Integer()), k=Each(Integer(2), scalar=True, none=True),
         logit_scale=Scale(), seeds=OrWord("auto", Integer()), distribution=Choice(DISTRIBUTIONS),
         methods=Each(Choice(METHODS), none=True), adam_lrs=Each(OPTION_RULES["lr"]), tune_seeds=Integer(),
         success_tol=Real(),
         seed=Seed(), noise=NOISE_RULE)
def scaling_study(out: PathLike, *, ms: Sequence[int] | None = None, d: int | str = "auto",
                  k: int | Sequence[int] | None = None, grid: Sequence[str] | None = None,
                  logit_scale: float = STUDY_LOGIT_SCALE, noise: float = 0.0, seeds: int | str = 10,
                  methods: Sequence[str] | None = None, distribution: str = "boolean",
                  adam_lrs: Sequence[float] = (1e-2, 3e-2), tune_seeds: int = 1,
                  adam_options: Mapping[str, Any] | None = None, provable_options: Mapping[str, Any] | None = None,
                  options: Mapping[str, Mapping[str, Any]] | None = None, success_tol: float = 1e-3, seed: int = 0,
                  backend: str = "local", workers: int | str | None = None,
                  scheduler: str | None = None, progress: bool = False, plot: bool = True,
                  learn_workers: int | None = None, run: bool = True) -> SweepResult:
    """Run the study: tune Adam's learning rate, run every method on every ``(m, seed)``, summarise, plot.

    Parameters
    ----------
    out : path
        Directory of the sweep: ``runs/`` (one JSON record per run, tuning runs
        included), ``summary.json``, ``summary.md`` and ``scaling.png``.
    ms : sequence of int
        Numbers of heads (default 1..5 unless ``grid`` is given).
    d : int or "auto"
        Token dimension; ``"auto"`` (default) takes :func:`sound_d` per ``(m, k)``:
        12 for m <= 4 and 16 for m = 5 at k = 2. With ``grid``, the default of its blocks.
    k : int or sequence of int
        Tokens per sequence (default 2); several values sweep k too (every m at every k).
    grid : sequence of str, optional
        Instead of ``ms`` × ``k``: blocks of (m, k) cells such as ``"m=1..6,k=2"`` or
        ``"m=2,k=8,d=24,seeds=3"`` (:func:`learner.study.frontier.parse_grid`;
        :data:`learner.study.frontier.DEFAULT_GRID` is the default study). The summary then adds the frontier
        (per cell: successes, median time, failures by reason, forecasts of runs beyond the budget), the
        fits of :func:`learner.study.frontier.fit_shapes` and ``frontier.png``.
    logit_scale : float
        Frobenius norm of each planted ``Θ_i`` (:func:`~learner.random_layer`); default 1.
    noise : float
        The oracles' label noise (``LayerOracle(noise=)``, default 0); the layers and inputs do not depend on it.
    seeds : int or "auto"
        Planted layers per setting; run ``s`` of every method uses the same layer and oracle seed.
        ``"auto"``: 3 per method and setting, then 10 where the median time of those 3 is under two
        minutes (:func:`learner.study.frontier.seeds_for`).
    methods : sequence of str, optional
        Registered study methods (:mod:`learner.sweep.methods`) that need no optional extra. Default None: the
        methods the study in ``out`` ran (its ``study.json``), or for a new study every one.
    distribution : {"boolean", "gaussian"}
    adam_lrs : sequence of float
        Adam's learning-rate grid. With more than one value, each setting first
        runs Adam at every value on ``tune_seeds`` tuning layers (seeded apart
        from the measured ones) and the measured runs use the value with the
        lowest median validation relative error. Default (0.01, 0.03) on one
        tuning layer: in a d = 8 study (ours) 0.03 won at every m and 0.003,
        never chosen, cost 3–8× the time (55–166 s per run at m <= 2, d = 12).
    tune_seeds : int
    adam_options, provable_options : dict, optional
        Further keyword arguments of :func:`~learner.baselines.numpy_adam.fit_gradient` /
        fields of :class:`~learner.phases.LearnConfig`.
    options : dict, optional
        The options of every other method, by name (its registry entry's keyword arguments); each runs its first
        layers with the learner's, before Adam's tuning.
    success_tol : float
        The common success criterion of the summary (relative error of ``F`` on fresh inputs).
    seed : int
        Entropy of every run's seed (recorded).
    backend, workers, scheduler, progress, learn_workers
        As in :func:`run_sweep`.
    plot : bool
        Write ``scaling.png`` (needs matplotlib, the ``plot`` extra; skipped with a warning without it).
    run : bool
        False: run nothing, re-summarise the records in ``out`` (every run must have a finished
        record; records drawn from another example stream are used as they are). See
        :func:`learner.sweep.engine.run_sweep`.

    Returns
    -------
    SweepResult
        The measured records, the summary, the sweeps' counts, the files written and the tuning runs' records.
    """
    settings, seed_rules, ms, ks = _settings(ms, d, k, grid, seeds, distribution)
    methods = study_methods(out, methods)
    methods, adam_lrs, adam_options, provable_options = _check_methods(methods, settings, adam_lrs, adam_options,
                                                                       provable_options)
    options = _other_options(methods, options)
    entropy = seed
    from ..io import check_writable_dir

    out = check_writable_dir("out", out)
    learn_workers = check_learn_workers(learn_workers, backend)  # before the folder is claimed
    ex = {"backend": backend, "workers": workers, "scheduler": scheduler, "progress": progress,
          "learn_workers": learn_workers, "run": run}
    parameters = {"ms": ms, "d": d, "k": ks, "settings": [list(st) for st in settings], "logit_scale": logit_scale,
                  **({"noise": noise} if noise else {}), "seeds": seeds, "methods": methods,
                  "distribution": distribution, "adam_lrs": adam_lrs,
                  "tune_seeds": tune_seeds, "adam_options": adam_options, "provable_options": provable_options,
                  "seed": entropy}
    if options:  # only then: the claims of the studies of the learner and Adam alone stay as they were
        parameters["options"] = options
    if grid is not None:  # only then: the claims of studies without a grid stay as they were
        parameters["grid"] = list(grid)
        parameters["cell_seeds"] = [[m, dd, kk, ss] for (m, dd, kk), ss in seed_rules.items()]

    with sweep_lock(out, create=run):  # the whole study: tuning, measured runs, summary and plot
        claim_study(out, "scaling-study", RunSpec.RECORD_KIND, parameters, write=run,
                    files=("scaling.png", "frontier.png") if plot else ())
        plan = _Plan(settings, seed_rules, methods, adam_options, provable_options, options,
                     {"entropy": entropy, "distribution": distribution, "logit_scale": logit_scale,
                      "noise": noise})
        records, tuning_records, tuning, stats = plan.run(out, ex, adam_lrs, tune_seeds)
        summary = summarise(records, success_tol=success_tol)
        summary |= {"tuning": tuning, "parameters": parameters, "versions": _versions(),
            "note": f"study design ours (instances: learner.random_layer, logit scale {logit_scale:g}); the paper "
                    "reports no experiments. Medians over all finished runs, successful or not."}
        if grid is not None:
            from .frontier import fits_of, frontier_cells

            cells = frontier_cells(records, success_tol=success_tol, seed_rules=seed_rules)
            summary |= {"frontier": cells, "fits": fits_of(cells)}
        files: dict[str, str] = {}
        result = SweepResult(records, summary, stats, files, tuning_records=tuning_records)
        files |= write_summary(out, summary, result.table() + "\n")
        if plot:
            files |= _plots(records, summary, out, success_tol)
        return result


def _settings(ms, d, k, grid, seeds, distribution):
    """The study's settings ``(m, d, k)``, the seed rule of each, and the ``ms`` and ``ks`` they span."""
    from .frontier import parse_grid

    if grid is not None:
        if ms is not None or k is not None:
            raise ValueError(f"give either `grid` or `ms` and `k`, not both; got grid={grid!r}, ms={ms!r}, k={k!r}.")
        cells = parse_grid(grid, d=d, seeds=seeds, sound_d=lambda m, kk: sound_d(m, kk, distribution=distribution))
        settings = [(m, dd, kk) for m, dd, kk, _ in cells]
        seed_rules = {(m, dd, kk): ss for m, dd, kk, ss in cells}
        return settings, seed_rules, sorted({m for m, _, _ in settings}), sorted({kk for _, _, kk in settings})
    ms = [1, 2, 3, 4, 5] if ms is None else ms  # checked by scaling_study's rules
    k = 2 if k is None else k
    ks = k if isinstance(k, list) else [k]
    settings = [(m, sound_d(m, kk, distribution=distribution) if d == "auto" else d, kk) for kk in ks for m in ms]
    return settings, dict.fromkeys(settings, seeds), ms, ks


def study_methods(out: PathLike, methods: Sequence[str] | None = None) -> list[str]:
    """The methods a scaling study in ``out`` runs: ``methods`` when given, else those its claim records (resuming
    or re-summarising it), else every registered method without an optional extra (:data:`METHODS`).

    Parameters
    ----------
    out : str or path-like
        The study's directory (it need not exist).
    methods : sequence of str, optional
        The methods asked for.

    Returns
    -------
    list of str
        The method names.

    Raises
    ------
    ValueError
        A recorded method this toolkit does not register.
    """
    if methods is not None:
        return list(methods)
    ran = (claimed_parameters(out, "scaling-study") or {}).get("methods")
    chosen = list(ran) if isinstance(ran, list) and ran else list(METHODS)
    unknown = [name for name in chosen if name not in METHODS]
    if unknown:
        raise ValueError(f"`methods`: the study in {out} ran {unknown}, which this toolkit does not register "
                         f"(it registers {list(METHODS)}); give the methods.")
    return chosen


def _other_options(methods, options):
    """Each method's options but the learner's and Adam's (their own parameters), checked by its registry entry."""
    from ..sweep.methods import get

    given = {name: dict(value or {}) for name, value in (options or {}).items()}
    named = sorted(set(given) & {"provable", "adam"})
    if named:
        raise ValueError(f"`options` must not name {named}: give `provable_options` and `adam_options`.")
    unknown = sorted(set(given) - set(methods))
    if unknown:
        raise ValueError(f"`options` name methods that do not run: {unknown}; the methods are {list(methods)}.")
    out = {name: given.get(name, {}) for name in methods if name not in ("provable", "adam")}
    for name, value in out.items():
        get(name).check_options(value)  # before the first run
    return {name: value for name, value in out.items() if value or name in given}


def _check_methods(methods, settings, adam_lrs, adam_options, provable_options):
    """The methods, Adam's learning-rate grid and both methods' options, checked before anything runs."""
    methods = list(methods)  # each one of METHODS, distinct: scaling_study's rule
    for _m, dd, kk in settings:
        if "provable" in methods and kk >= dd:
            raise ValueError(f"the provable learner needs k < d; got k={kk}, d={dd}.")
    adam_options = dict(adam_options or {})
    if "lr" in adam_options:
        raise ValueError("`adam_options` must not set 'lr'; give the grid as `adam_lrs`.")
    provable_options = dict(provable_options or {})
    if "provable" in methods:
        from ..learn import phase5_memory_problem
        from ..phases import LearnConfig, resolve_config

        cfg = LearnConfig(**provable_options)  # every option checked before the first run, not in each run's record
        for m, dd, kk in settings:  # before anything is planted: a run refuses a d this large only after planting
            problem = phase5_memory_problem(resolve_config(cfg, m)[0], dd)
            if problem:
                raise ValueError(f"`d` must fit in this machine's memory: at (m, d, k) = ({m}, {dd}, {kk}) the "
                                 f"learner's {problem}; got d={dd}.")
    return methods, adam_lrs, adam_options, provable_options


class _Plan:
    """The order of a study's sweeps: the learner's first runs with Adam's tuning, Adam's first runs, then
    (for ``seeds="auto"``) the further layers of the cells whose first runs were quick."""

    def __init__(self, settings, seed_rules, methods, adam_options, provable_options, options, common):
        from .frontier import AUTO_FIRST

        self.settings, self.seed_rules, self.methods, self.common = settings, seed_rules, methods, common
        self.adam_options, self.provable_options, self.options = adam_options, provable_options, options
        self.first = {st: AUTO_FIRST if rule == "auto" else rule for st, rule in seed_rules.items()}
        self.lr_for, self.by_id, self.stats = {}, {}, None
        self.total, self.at_least = 0, False

    def measured(self, method, counts):
        """The measured runs of ``method``: ``counts[setting]`` seeds per setting, seed-major (a sweep stopped
        early has every setting for its first seeds)."""
        specs = []
        for st in self.settings:
            m, dd, kk = st
            opts = (self.provable_options if method == "provable" else self.adam_options | {"lr": self.lr_for[st]}
                    if method == "adam" else self.options.get(method, {}))
            specs += plan_runs(ms=[m], d=dd, k=kk, seeds=counts[st], methods=[method], options={method: opts},
                               **self.common)
        return sorted(specs, key=lambda s: (s.seed_index, s.k, s.m))

    def sweep(self, specs, out, ex):
        """Run ``specs`` (resuming), keep their records by id and add up the counts of runs run and kept. On
        Ctrl-C the count is the whole study's: the finished runs of the sweeps before it too, of every run
        planned."""
        from ..errors import SweepInterrupted

        try:
            got, stats = run_sweep(specs, out, **ex)
        except SweepInterrupted as exc:
            ids = {s.run_id for s in specs}
            before = sum(1 for i, r in self.by_id.items() if i not in ids and r.get("outcome") == "finished")
            raise exc.in_study(before, self.total, at_least=self.at_least) from None
        self.by_id |= {r["run_id"]: r for r in got}
        self.stats = stats if self.stats is None else {key: self.stats[key] + stats[key] for key in stats}

    def run(self, out, ex, adam_lrs, tune_seeds):
        """Every sweep of the study: ``(records, tuning records, tuning summary, stats)``."""
        from .frontier import AUTO_SECONDS

        self.lr_for = dict.fromkeys(self.settings, adam_lrs[0])
        tuning_specs, tuning = [], None
        if "adam" in self.methods and len(adam_lrs) > 1:
            tuning_specs = [s for lr in adam_lrs for (m, dd, kk) in self.settings
                            for s in plan_runs(ms=[m], d=dd, k=kk, seeds=tune_seeds, methods=["adam"], role="tune",
                                               options={"adam": self.adam_options | {"lr": lr}}, **self.common)]
        # The learner's first runs go before Adam's tuning (they need nothing of it), then Adam's first runs,
        # then — for seeds="auto" — the further layers of the cells whose first runs were quick.
        head = [s for method in self.methods if method != "adam" for s in self.measured(method, self.first)]
        # What the study plans before any run (seeds="auto" adds layers where the first runs were quick).
        self.total = len(tuning_specs) + len(self.methods) * sum(self.first.values())
        self.at_least = any(rule == "auto" for rule in self.seed_rules.values())
        if tuning_specs:
            log.info("tuning Adam's learning rate: %d runs", len(tuning_specs))
        self.sweep(head + tuning_specs, out, ex)
        tuning_records = [self.by_id[s.run_id] for s in tuning_specs]
        if tuning_specs:
            chosen = _choose_lr(tuning_records, adam_lrs)
            self.lr_for = {st: chosen[_setting_label(*st)]["lr"] for st in self.settings}
            tuning = {"grid": adam_lrs, "seeds": tune_seeds, "chosen": chosen, "rule": "lowest median validation "
                      "relative error over the tuning runs; ties go to the first value in the grid"}
        plans = {method: self.measured(method, self.first) for method in self.methods}
        if "adam" in self.methods:
            self.sweep(plans["adam"], out, ex)
        rest = []
        for method in self.methods:
            plans[method] = self.measured(method, self.counts(plans[method]))
            rest += [s for s in plans[method] if s.run_id not in self.by_id]
        if rest:
            log.info("seeds='auto': %d more runs in the cells whose first runs took under %g s", len(rest),
                     AUTO_SECONDS)
            self.sweep(rest, out, ex)
        records = [self.by_id[s.run_id] for method in self.methods for s in plans[method]]
        return records, tuning_records, tuning, self.stats

    def counts(self, specs):
        """Seeds per setting after the first runs: the seed rule applied to their finished runs' times."""
        from .frontier import seeds_for

        times: dict[tuple[int, int, int], list[float]] = {}
        for spec in specs:
            rec = self.by_id[spec.run_id]
            if rec.get("outcome") == "finished":
                times.setdefault((spec.m, spec.d, spec.k), []).append(rec["timings"].get("total"))
        return {st: max(self.first[st], seeds_for(self.seed_rules[st], times.get(st, []))) for st in self.settings}


def _plots(records, summary, out, success_tol):
    """``scaling.png`` and, with a grid, ``frontier.png`` (skipped with a warning without matplotlib)."""
    files = {}
    try:
        files["plot"] = str(plot_scaling(records, study_path(out, "scaling.png"), success_tol=success_tol))
    except ImportError:
        log.warning("matplotlib is not installed (the `plot` extra): no scaling.png")
    if summary.get("frontier") is not None:
        from .frontier import plot_frontier

        try:
            files["frontier_plot"] = str(plot_frontier(summary["frontier"], study_path(out, "frontier.png"))[0])
        except ImportError:
            log.warning("matplotlib is not installed (the `plot` extra): no frontier.png")
    return files


_METHOD_STYLES = {"provable": ("-", "o"), "adam": ("--", "s")}
_MORE_STYLES = [("-.", "^"), (":", "D"), ((0, (5, 1, 1, 1)), "v")]


def _scaling_keys(evals):
    """Colour and (linestyle, marker) of every (method, k) series, and the figure legend's rows of handles.

    One k: a colour per method. Several k: a colour per k and a linestyle and marker per method, and the legend
    names the colours (k) in one row and the styles (methods) in the next, so that every series reads off it.
    """
    from matplotlib.lines import Line2D

    methods = sorted({r["spec"]["method"] for r in evals}, key=lambda m: (m != "provable", m != "adam", m))
    ks = sorted({r["spec"]["k"] for r in evals})
    more = iter(_MORE_STYLES * len(methods))
    styles = {m: _METHOD_STYLES.get(m) or next(more) for m in methods}
    if len(ks) == 1:
        colours = {(m, k): f"C{i % 10}" for i, m in enumerate(methods) for k in ks}
        return colours, styles, [[Line2D([], [], color=colours[m, ks[0]], ls=styles[m][0], marker=styles[m][1],
                                         label=f"{m} (median)") for m in methods]]
    colours = {(m, k): f"C{i % 10}" for m in methods for i, k in enumerate(ks)}
    return colours, styles, [[Line2D([], [], color=colours[methods[0], k], lw=4, label=f"k = {k}") for k in ks],
                             [Line2D([], [], color="0.25", ls=styles[m][0], marker=styles[m][1],
                                     label=f"{m} (median)") for m in methods]]


def _scaling_legend(fig, rows, footnote):
    """The legend's rows of handles below both panels, the footnote under them, the panels laid out above."""
    width, height = fig.get_size_inches()
    bottom = 0.3 / height
    fig.text(0.5, 0.01, footnote, ha="center", va="bottom", fontsize=9)
    for handles in reversed([r for r in rows if r]):
        per = 0.8 + 0.08 * max(len(h.get_label()) for h in handles)  # inches an entry takes at 10 pt
        ncol = max(1, min(len(handles), int(0.95 * width // per)))
        fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, bottom), ncol=ncol, frameon=False,
                   borderaxespad=0, borderpad=0.2)
        bottom += (0.25 * -(-len(handles) // ncol) + 0.05) / height
    fig.tight_layout(rect=(0, bottom + 0.05 / height, 1, 1))


def plot_scaling(records: Sequence[Mapping[str, Any]], path: PathLike, *, success_tol: float = 1e-3) -> Path:
    """Two panels, log scale: seconds and examples drawn against m, every run a point, medians joined.

    Successful runs (relative error at most ``success_tol``) are filled, failed ones hollow.
    The examples panel also shows the parameter-counting limit ``2md²/(kd)``. When no run finished, the panels
    say so (and a warning is logged). With one k each method has its colour; with several, each k has its colour
    and each method its linestyle and marker. The legend lies below the panels.

    Parameters
    ----------
    records : sequence of mapping
        Run records; the finished ones with ``spec["role"] == "eval"`` are drawn, one line per (method, k).
    path : str or path-like
        The PNG file written (atomically).
    success_tol : float
        The common success criterion that fills a point (default 1e-3).

    Returns
    -------
    pathlib.Path
        The file written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from ..io import atomic_write

    evals = [r for r in records if r["spec"]["role"] == "eval" and r["outcome"] == "finished"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8))
    colours, styles, handles = _scaling_keys(evals)
    ks = sorted({r["spec"]["k"] for r in evals})
    for method, k in sorted(colours):
        mine = [r for r in evals if (r["spec"]["method"], r["spec"]["k"]) == (method, k)]
        if not mine:
            continue
        ms = sorted({r["spec"]["m"] for r in mine})
        colour, (style, marker) = colours[method, k], styles[method]
        for ax, key in zip(axes, ("seconds", "examples"), strict=False):
            def value(r, key=key):
                return r["timings"]["total"] if key == "seconds" else r["examples_drawn"]

            for r in mine:
                ok = (r["errors"].get("relative_error") or math.inf) <= success_tol
                jitter = 0.08 if method == "adam" else -0.08
                ax.scatter(r["spec"]["m"] + jitter, value(r), s=18, marker=marker, color=colour,
                           facecolors=colour if ok else "none", alpha=0.8)
            meds = [np.median([value(r) for r in mine if r["spec"]["m"] == m]) for m in ms]
            ax.plot(ms, meds, ls=style, color=colour)
    if evals:
        ms = sorted({r["spec"]["m"] for r in evals})
        dk: dict[int, tuple[int, int]] = {}
        for r in evals:
            dk.setdefault(r["spec"]["m"], (r["spec"]["d"], r["spec"]["k"]))
        axes[1].plot(ms, [param_limit(m, *dk[m]) for m in ms], "k:")
        handles[-1].append(Line2D([], [], color="k", ls=":", label="limit 2md²/(kd)"))
        ds = ", ".join(f"{m}: {dk[m][0]}" for m in ms)
        # wrapped: with ten values of m the title is wider than its panel
        axes[0].set_title(textwrap.fill(f"time per run (d per m: {ds}; k = {', '.join(map(str, ks))})", 48),
                          fontsize=10)
        axes[1].set_title("examples drawn")
    for ax, label in zip(axes, ("seconds", "examples"), strict=False):
        if evals:
            ax.set_xticks(ms)
        ax.set_yscale("log")
        ax.set_xlabel("heads m")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
    if not evals:  # every run raised: say so on the figure instead of drawing empty axes
        raised = sum(1 for r in records if r["spec"]["role"] == "eval")
        note = (f"no run finished: {raised} of {raised} runs raised an error\n(each record's `error` says which; "
                "summary.md counts them)")
        for ax in axes:
            ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes, fontsize=10, color="C3")
        log.warning("scaling.png: %s", note.replace("\n", " "))
    _scaling_legend(fig, handles, f"points: runs; lines: medians; filled: relative error ≤ {success_tol:g} "
                                  "against the planted layer; hollow: not")
    path = Path(path)
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda fh: fh.write(buf.getvalue()))
    return path
