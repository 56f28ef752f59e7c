"""The trained-heads study: do layers trained on tasks meet the paper's conditions, and does the learner recover them?

For every task of :data:`learner.trained.TASKS`, setting ``(m, d, k)`` and seed, :func:`trained_study` trains one
layer (:func:`learner.trained.train_layer`, checkpoints kept), measures the paper's conditions on it at every
checkpoint (:func:`learner.assumptions`) and on a random layer with the same norms per head (the control: what
the conditions say of a layer that differs from the trained one only in its directions), then learns the trained
layer from its own examples (Boolean inputs, fresh from a :class:`~learner.LayerOracle`) with the learner, m given
and m estimated, and refits it with torch Adam as the peer. One JSON record per trained layer (``runs/``), the
layer itself without pickle (``layers/``, :func:`learner.save_layer`), resumable: a layer whose record is there is
not trained again.

The learner is told the trained layer's logit scale (its largest ``‖Θ_i‖_F``), as the growth studies tell it the
planted one, so that its sharpness map can refuse before the first example a layer beyond its measured reach.
Every run has an example budget (``max_examples``), so a run the learner cannot finish ends at its forecast with
``status="budget"`` rather than running for hours. The study, its settings and its reading are ours; the paper
trains nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..hints import PathLike
from ..validation import Integer, Real, Seed, declare

__all__ = ["RECOVERED_TOL", "TRAINED_KIND", "TRAINED_RUN_KIND", "TRAINED_SETTINGS", "EVERY_CONDITION",
           "condition_margin", "function_matched",
           "condition_table", "learner_failures", "norm_matched", "plot_trained", "recovered", "trained_id",
           "trained_markdown", "trained_study", "trained_summary"]

log = logging.getLogger(__name__)

#: The study kind of the study's claim on its folder.
TRAINED_KIND = "trained-study"
#: The kind of its per-layer records (``runs/``).
TRAINED_RUN_KIND = "trained-run"
#: The settings ``(m, d, k)`` (ours): within the trained family's range (m ≤ 6, d ≤ 24, k ≤ 4) and sound for the
#: learner at logit scale 1 (the largest sound m at (12, 2), (16, 3) and (24, 4) is 4, 5 and 7), one per k.
TRAINED_SETTINGS = ((2, 12, 2), (3, 16, 3), (4, 24, 4))
#: The learner's example budget per run (ours: at (4, 24, 4) a planted layer at logit scale 1 needs about 4·10⁶
#: examples; 2·10⁷ leaves room for a sharper trained layer and ends a hopeless run at its forecast).
TRAINED_MAX_EXAMPLES = 20_000_000
#: torch Adam's time limit per refit (ours: a peer, not the study's subject).
TRAINED_ADAM_SECONDS = 120.0


def trained_id(task: str, m: int, d: int, k: int, seed: int) -> str:
    """The record's name of one trained layer: ``{task}-m{m}-d{d}-k{k}-s{seed}``.

    Parameters
    ----------
    task : str
        The task.
    m, d, k : int
        The setting.
    seed : int
        The layer's index in its cell.

    Returns
    -------
    str

    Examples
    --------
    >>> trained_id("copy", 2, 12, 2, 0)
    'copy-m2-d12-k2-s0'
    """
    return f"{task}-m{m}-d{d}-k{k}-s{seed}"


def norm_matched(layer: Any, *, rng: Any = None) -> Any:
    """A random layer with ``layer``'s norms: each ``Θ_i`` and ``W_i`` a Gaussian matrix rescaled to the Frobenius
    norm of ``layer``'s (the control of the conditions: the same scales, random directions).

    Parameters
    ----------
    layer : AttentionLayer
        The layer whose norms are kept.
    rng : None, int, SeedSequence or Generator
        The directions' seed.

    Returns
    -------
    AttentionLayer

    Examples
    --------
    >>> from learner import random_layer
    >>> layer = random_layer(2, 4, rng=0)
    >>> other = norm_matched(layer, rng=1)
    >>> bool(np.allclose(np.linalg.norm(other.thetas, axis=(1, 2)), np.linalg.norm(layer.thetas, axis=(1, 2))))
    True
    """
    from ..layer import AttentionLayer
    from ..validation import check_rng

    gen = check_rng(rng)

    def rescaled(mats):
        g = gen.standard_normal(mats.shape)
        return g * (np.linalg.norm(mats, axis=(1, 2)) / np.linalg.norm(g, axis=(1, 2)))[:, None, None]

    return AttentionLayer(rescaled(layer.thetas), rescaled(layer.ws))


def _learn_summary(result: Any) -> dict[str, Any]:
    """What the study keeps of a learner's or a baseline's run."""
    diag = result.diagnostics
    return {"success": result.success, "status": result.status, "message": result.message, "m": result.m,
            "relative_error": result.errors.get("relative_error"), "examples": result.examples_drawn,
            "seconds": result.timings.get("total"), "error_bound": getattr(result, "error_bound", None),
            "failed_conditions": (diag.get("assumptions") or {}).get("failed", []),
            "setting_failed": (diag.get("0_setting") or {}).get("failed", [])}


def _one(task: str, m: int, d: int, k: int, s: int, *, steps: int, lr: float, checkpoints: Sequence[int],
         seed: int, max_examples: int, adam_seconds: float, workers: int, layers: Path) -> dict[str, Any]:
    """Train, measure and learn one layer; its record."""
    from ..assumptions import assumptions
    from ..baselines import fit_torch
    from ..io import save_layer
    from ..learn import learn
    from ..oracle import LayerOracle
    from ..phases import LearnConfig
    from ..trained import TASKS, train_layer

    t0 = time.perf_counter()
    index = list(TASKS).index(task)
    seeds = np.random.SeedSequence(seed, spawn_key=(index, m, d, k, s)).spawn(4)
    train_seed, control_seed, learn_seed, adam_seed = seeds
    trained = train_layer(task, m=m, d=d, k=k, steps=steps, lr=lr, checkpoints=checkpoints, rng=train_seed)
    layer, name = trained.layer, trained_id(task, m, d, k, s)
    save_layer(layers / f"{name}.npz", layer, metadata={"task": task, "m": m, "d": d, "k": k, "seed": s})
    conditions = {str(step): assumptions(ckpt, k=k).to_dict() for step, ckpt in sorted(trained.checkpoints.items())}
    control = assumptions(norm_matched(layer, rng=control_seed), k=k).to_dict()
    scale = float(np.linalg.norm(layer.thetas, axis=(1, 2)).max())
    cfg = LearnConfig(max_examples=max_examples)
    runs = {}
    for label, given in (("m_given", m), ("m_unknown", None)):
        oracle = LayerOracle(layer, k, rng=np.random.default_rng([*learn_seed.generate_state(2), int(given is None)]))
        runs[label] = _learn_summary(learn(oracle, m=given, truth=layer, config=cfg, logit_scale=scale,
                                           workers=workers, rng=learn_seed, progress=False))
        log.info("%s: learner (%s) %s", name, label, runs[label]["status"])
    adam = fit_torch(LayerOracle(layer, k, rng=adam_seed), m=m, truth=layer, max_seconds=adam_seconds, threads=1,
                     rng=adam_seed)
    return {"id": name, "task": task, "exact": TASKS[task].exact(k), "m": m, "d": d, "k": k, "seed": s,
            "training": trained.record, "logit_scale": scale, "conditions": conditions, "control": control,
            "learner": runs, "adam": _learn_summary(adam), "seconds": time.perf_counter() - t0}


@declare(seeds=Integer(), steps=Integer(), lr=Real(), max_examples=Integer(), adam_seconds=Real(), workers=Integer(),
         seed=Seed())
def trained_study(out: PathLike, *, tasks: Sequence[str] | None = None,
                  settings: Sequence[tuple[int, int, int]] = TRAINED_SETTINGS, seeds: int = 3, steps: int = 1500,
                  lr: float = 0.01, checkpoints: Sequence[int] = (0, 150, 500),
                  max_examples: int = TRAINED_MAX_EXAMPLES, adam_seconds: float = TRAINED_ADAM_SECONDS,
                  workers: int = 2, seed: int = 0, progress: bool = False, run: bool = True) -> dict[str, Any]:
    """Train, measure and learn a layer per task, setting and seed; resumable from the records in ``out``.

    Parameters
    ----------
    out : str or path-like
        The study's folder: ``study.json`` (its claim), ``runs/`` (one record per trained layer), ``layers/``
        (the layers, ``.npz`` without pickle) and ``summary.json``.
    tasks : sequence of str, optional
        Keys of :data:`learner.trained.TASKS` (default: every task).
    settings : sequence of (m, d, k)
        The settings (default :data:`TRAINED_SETTINGS`).
    seeds : int
        Trained layers per task and setting.
    steps, lr : int, float
        The training's Adam steps and learning rate (:func:`learner.trained.train_layer`).
    checkpoints : sequence of int
        Steps at which the conditions are measured besides the last.
    max_examples : int
        The learner's example budget per run.
    adam_seconds : float
        torch Adam's time limit per refit.
    workers : int
        The learner's local workers.
    seed : int
        Entropy of every layer's seed (with the task, setting and index).
    progress : bool
        A progress bar over the trained layers on standard error (the study's records are the same either way).
    run : bool
        False: run nothing and summarise the records there.

    Returns
    -------
    dict
        ``records`` (one per trained layer, in the study's order), ``summary`` (:func:`trained_summary`, also
        written to ``out/summary.json`` and, as :func:`trained_markdown`, ``out/summary.md``) and ``parameters``.
    """
    from ..io import check_writable_dir, versions, write_json
    from ..progress import bar as progress_bar
    from ..progress import showing
    from ..sweep.engine import claim_study, sweep_lock
    from ..sweep.records import DIGEST_FIELD, read_run_record, record_digest, schema_of, write_summary
    from ..trained import TASKS

    tasks = list(TASKS) if tasks is None else list(tasks)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"`tasks` must be keys of TASKS {sorted(TASKS)}; got {unknown}.")
    for m, d, k in settings:
        if not (1 <= m <= 6 and 2 <= k <= 4 and k < d <= 24):
            raise ValueError(f"`settings` must hold (m, d, k) with m <= 6, 2 <= k <= 4 and k < d <= 24 (the trained "
                             f"family's range); got {(m, d, k)}.")
    out = Path(check_writable_dir("out", out))
    parameters = {"tasks": tasks, "settings": [list(s) for s in settings], "seeds": seeds, "steps": steps, "lr": lr,
                  "checkpoints": sorted(set(checkpoints)), "max_examples": max_examples,
                  "adam_seconds": adam_seconds, "seed": seed}
    schema = schema_of(TRAINED_RUN_KIND)
    records = []
    with sweep_lock(out, create=run):
        claim_study(out, TRAINED_KIND, TRAINED_RUN_KIND, parameters, write=run)
        (out / "runs").mkdir(exist_ok=True)
        (out / "layers").mkdir(exist_ok=True)
        plan = [(t, m, d, k, s) for (m, d, k) in settings for t in tasks for s in range(seeds)]
        with showing(progress and run):
            bar = progress_bar(len(plan), "trained layers", "layer")
        for i, (task, m, d, k, s) in enumerate(plan):
            path = out / "runs" / f"{trained_id(task, m, d, k, s)}.json"
            rec = read_run_record(path, TRAINED_RUN_KIND, schema) if path.exists() else None
            if rec is None:
                if not run:
                    raise ValueError(f"`out` has no record of {path.name}; run the study to make it.")
                log.info("trained study: %d of %d, %s", i + 1, len(plan), path.stem)
                rec = {"kind": TRAINED_RUN_KIND, "schema_version": schema, "parameters": parameters,
                       **_one(task, m, d, k, s, steps=steps, lr=lr, checkpoints=checkpoints, seed=seed,
                              max_examples=max_examples, adam_seconds=adam_seconds, workers=workers,
                              layers=out / "layers"),
                       "versions": versions()}
                rec[DIGEST_FIELD] = record_digest(rec)
                write_json(path, rec)
            records.append(rec)
            bar.update(1)
            bar.set_postfix_str(path.stem)
        bar.close()
        summary = trained_summary(records) | {"parameters": parameters, "versions": versions(),
                                              "note": "tasks, settings, training recipe and reading ours; the paper "
                                                      "trains nothing."}
        write_summary(out, summary, trained_markdown(summary) + "\n")
    return {"records": records, "summary": summary, "parameters": parameters}


#: The condition trace's entry for the share of layers that meet every condition of the report.
EVERY_CONDITION = "every condition"

#: A learned layer counts as recovered at this relative error against the trained layer or below (the study's
#: acceptance; ours: far above float64's rounding, where the learner's successes end, far below any misfit).
RECOVERED_TOL = 1e-8


def recovered(run: Mapping[str, Any]) -> bool:
    """Whether a learner's run (a record's ``learner["m_given"]`` or ``["m_unknown"]``) recovered the layer:
    success, and a relative error against the trained layer of at most :data:`RECOVERED_TOL`.

    Parameters
    ----------
    run : mapping
        ``success`` and ``relative_error`` (None when not measured).

    Returns
    -------
    bool

    Examples
    --------
    >>> recovered({"success": True, "relative_error": 1e-30}), recovered({"success": True, "relative_error": 1e-6})
    (True, False)
    >>> recovered({"success": False, "relative_error": 1e-30})
    False
    """
    error = run.get("relative_error")
    return bool(run.get("success")) and error is not None and error <= RECOVERED_TOL


def function_matched(run: Mapping[str, Any]) -> bool:
    """Whether a learner's run ended with a layer whose function is the trained layer's, to :data:`RECOVERED_TOL`
    in relative error, whatever its verdict: a recovery, or a run that matched F and declined success because the
    learned parameters break the paper's conditions (``status="assumptions"``).

    Parameters
    ----------
    run : mapping
        ``relative_error`` (None when not measured).

    Returns
    -------
    bool

    Examples
    --------
    >>> function_matched({"success": False, "status": "assumptions", "relative_error": 1e-29})
    True
    >>> function_matched({"success": False, "status": "6_search", "relative_error": 0.02})
    False
    """
    error = run.get("relative_error")
    return error is not None and error <= RECOVERED_TOL


def trained_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The study's tables from its records: per task and setting, the layers that meet every condition (trained,
    and their norm-matched controls), the conditions that fail, the learner's verdicts and Adam's.

    Parameters
    ----------
    records : sequence of dict
        The study's records (``trained-run``).

    Returns
    -------
    dict
        ``cells`` (one per task and setting, in the records' order), ``totals`` (counts over every layer, and the
        learner's verdicts that contradict the truth: ``wrong_successes``, runs that claim success yet miss the
        trained layer by more than :data:`RECOVERED_TOL`, and ``late_refusals``, refusals of the setting after
        examples were drawn), ``condition_trace`` (per task, the share of layers meeting each condition at each
        checkpoint), ``margin_trace`` (per task, each condition's median :func:`condition_margin` at each
        checkpoint, over the layers where it is finite), ``conditions`` (:func:`condition_table`), ``failures``
        (:func:`learner_failures`) and ``recovery_by_conditions`` (the layers that meet every condition at their
        last step and those that fail one: ``layers``, and the learner's recoveries with m given and m unknown).
    """
    cells: dict[tuple, dict[str, Any]] = {}
    for rec in records:
        key = (rec["task"], rec["m"], rec["d"], rec["k"])
        cell = cells.setdefault(key, {"task": rec["task"], "m": rec["m"], "d": rec["d"], "k": rec["k"],
                                      "exact": rec["exact"], "layers": 0, "meet_all": 0, "control_meet_all": 0,
                                      "failed": {}, "final_loss": [], "recovered_m_given": 0,
                                      "recovered_m_unknown": 0, "matched_m_given": 0, "statuses": {},
                                      "adam_success": 0})
        final = _final(rec)
        cell["layers"] += 1
        cell["meet_all"] += not final["failed"]
        cell["control_meet_all"] += not rec["control"]["failed"]
        for name in final["failed"]:
            cell["failed"][name] = cell["failed"].get(name, 0) + 1
        cell["final_loss"].append(rec["training"]["final_loss"])
        for label in ("m_given", "m_unknown"):
            cell[f"recovered_{label}"] += recovered(rec["learner"][label])
        cell["matched_m_given"] += function_matched(rec["learner"]["m_given"])
        status = rec["learner"]["m_given"]["status"]
        cell["statuses"][status] = cell["statuses"].get(status, 0) + 1
        cell["adam_success"] += bool(rec["adam"]["success"])
    rows = list(cells.values())
    for cell in rows:
        cell["median_final_loss"] = float(np.median(cell.pop("final_loss")))
    n = sum(c["layers"] for c in rows)
    totals = {"layers": n, **{key: sum(c[key] for c in rows) for key in
                              ("meet_all", "control_meet_all", "recovered_m_given", "recovered_m_unknown",
                               "matched_m_given", "adam_success")}, **_verdict_checks(records)}
    shares, margins = _traces(records)
    return {"cells": rows, "totals": totals, "condition_trace": shares, "margin_trace": margins,
            "conditions": condition_table(records),
            "failures": learner_failures(records), "recovery_by_conditions": _recovery_by_conditions(records)}


def trained_markdown(summary: Mapping[str, Any]) -> str:
    """The summary as Markdown: per task and setting, the layers meeting every condition (and their controls), the
    conditions failed most, the median final loss, the learner's recoveries and Adam's successes; the totals; the
    condition table (:func:`condition_table`); the share meeting every condition by training step; and the
    learner's failures (:func:`learner_failures`).

    Parameters
    ----------
    summary : mapping
        :func:`trained_summary`'s result.

    Returns
    -------
    str
    """
    from ..tables import markdown_table

    rows = []
    for c in summary["cells"]:
        n = c["layers"]
        worst = ", ".join(f"{name} ({count})" for name, count in sorted(c["failed"].items(), key=lambda x: -x[1])[:3])
        rows.append([c["task"], f"({c['m']}, {c['d']}, {c['k']})", "yes" if c["exact"] else "no",
                     f"{c['median_final_loss']:.2g}", f"{c['meet_all']}/{n}", f"{c['control_meet_all']}/{n}",
                     worst or "none", f"{c['recovered_m_given']}/{n}", f"{c['recovered_m_unknown']}/{n}",
                     f"{c['matched_m_given']}/{n}", ", ".join(f"{k} {v}" for k, v in sorted(c["statuses"].items())),
                     f"{c['adam_success']}/{n}"])
    cells = markdown_table(["task", "(m, d, k)", "the form fits it", "median final loss", "meet every condition",
                            "norm-matched control", "failed most (layers)", "learner recovers (m given)",
                            "(m unknown)", "F matched (m given)", "learner's verdicts (m given)",
                            "Adam within 1e-3"], rows)
    t = summary["totals"]
    totals = (f"Over {t['layers']} trained layers: {t['meet_all']} meet every condition (norm-matched controls: "
              f"{t['control_meet_all']}); the learner recovers {t['recovered_m_given']} with m given and "
              f"{t['recovered_m_unknown']} with m unknown, and with m given matches the function of "
              f"{t['matched_m_given']} (a recovery, or F matched with the parameters left unidentified); torch Adam "
              f"reaches 1e-3 on {t['adam_success']}. Of the "
              f"learner's {t['learner_runs']} runs, {t['wrong_successes']} claim a success that misses the layer "
              f"by more than {RECOVERED_TOL:g} and {t['late_refusals']} refuse the setting after drawing examples.")
    margins = ("A condition's margin is its value over its threshold for an upper bound (≤, <) and the threshold over "
               "the value for a lower bound (≥, >): above 1 exactly where the condition fails (– where no margin is "
               "finite). Measured on each trained layer at its last step and on its norm-matched control.")
    return "\n\n".join([cells, totals, "## The conditions", margins, _conditions_markdown(summary["conditions"]),
                         "## Training length", "The share of each task's trained layers meeting every condition at "
                         "each checkpoint of training (step 0: the initial layer).",
                         _length_markdown(summary["condition_trace"]),
                         "## The learner's runs that did not recover the layer",
                         _failures_markdown(summary["failures"])])


#: A message in the failures' table is cut after this many characters (ours: a table cell, not a log; the record
#: keeps the whole message).
MESSAGE_CHARS = 160


def _clipped(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS - 1].rstrip() + "…"


def _length_markdown(trace: Mapping[str, Any]) -> str:
    """Per task, the share of its layers meeting every condition at each checkpoint, as Markdown."""
    from ..tables import markdown_table

    steps = sorted({step for per in trace.values() for step in per.get(EVERY_CONDITION, {})}, key=int)
    rows = [[task, *(f"{per[EVERY_CONDITION][t]:.0%}" if t in per.get(EVERY_CONDITION, {}) else "–" for t in steps)]
            for task, per in trace.items()]
    return markdown_table(["task", *(f"step {t}" for t in steps)], rows)


def _conditions_markdown(conditions: Sequence[Mapping[str, Any]]) -> str:
    """The condition table as Markdown (margins: :func:`condition_margin`, above 1 where a condition fails)."""
    from ..tables import fmt, markdown_table

    rows = [[c["name"], c["quantity"], f"{c['relation']} threshold", f"{c['met']}/{c['measured']}",
             f"{c['control_met']}/{c['control_measured']}",
             *(fmt(c[key], ".3g") for key in ("median_margin", "worst_margin", "control_median_margin")),
             c["source"]] for c in conditions]
    return markdown_table(["condition", "quantity", "holds when", "trained layers meeting it", "controls meeting it",
                           "median margin", "worst margin", "controls' median margin", "source"], rows)


def _failures_markdown(failures: Sequence[Mapping[str, Any]]) -> str:
    """The learner's failures as Markdown: by task, m given or not, the phase it ended in and the broken
    conditions."""
    from ..tables import fmt, markdown_table

    if not failures:
        return "None: the learner recovered every trained layer."
    rows = [[f["task"], "given" if f["m_given"] else "unknown", f["status"], ", ".join(f["conditions"]) or "none",
             str(f["runs"]), fmt(f["median_relative_error"], ".3g"), _clipped(f["message"])] for f in failures]
    return markdown_table(["task", "m", "ended in (status)", "conditions its layer fails", "runs",
                           "median relative error", "one run's message"], rows)


def _traces(records: Sequence[Mapping[str, Any]]) -> tuple[dict, dict]:
    """Per task, condition and checkpoint: the share of layers meeting the condition (and every condition), and the
    condition's median margin."""
    met: dict[str, dict[str, dict[str, list[int]]]] = {}  # task -> condition -> step -> [met, measured]
    margins: dict[str, dict[str, dict[str, list[float]]]] = {}  # task -> condition -> step -> margins
    for rec in records:
        per, spread = met.setdefault(rec["task"], {}), margins.setdefault(rec["task"], {})
        for step, report in rec["conditions"].items():
            for row in report["rows"]:
                if row["ok"] is None:
                    continue
                count = per.setdefault(row["name"], {}).setdefault(step, [0, 0])
                count[0] += bool(row["ok"])
                count[1] += 1
                margin = condition_margin(row)
                if margin is not None:
                    spread.setdefault(row["name"], {}).setdefault(step, []).append(margin)
            every = per.setdefault(EVERY_CONDITION, {}).setdefault(step, [0, 0])
            every[0] += not report["failed"]
            every[1] += 1

    def by_step(steps):
        return sorted(steps.items(), key=lambda s: int(s[0]))

    shares = {task: {name: {step: ok / total for step, (ok, total) in by_step(steps)} for name, steps in per.items()}
              for task, per in met.items()}
    medians = {task: {name: {step: float(np.median(values)) for step, values in by_step(steps)}
                      for name, steps in per.items()} for task, per in margins.items()}
    return shares, medians


def _recovery_by_conditions(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """The learner's recoveries among the layers that meet every condition and among those that fail one."""
    groups = {side: {"layers": 0, "recovered_m_given": 0, "recovered_m_unknown": 0} for side in ("meet_all",
                                                                                                 "fail_some")}
    for rec in records:
        group = groups["fail_some" if _final(rec)["failed"] else "meet_all"]
        group["layers"] += 1
        for label in ("m_given", "m_unknown"):
            group[f"recovered_{label}"] += recovered(rec["learner"][label])
    return groups


def _verdict_checks(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The learner's runs whose verdict the truth contradicts: a success that misses the layer, a late refusal."""
    runs = [run for rec in records for run in rec["learner"].values()]
    return {"learner_runs": len(runs),
            "wrong_successes": sum(bool(r["success"]) and not recovered(r) for r in runs),
            "late_refusals": sum(r["status"] == "setting" and (r["examples"] or 0) > 0 for r in runs)}


def condition_margin(row: Mapping[str, Any]) -> float | None:
    """How far a measured condition is from its threshold, as a ratio above 1 exactly where it fails (``ok`` is
    False, up to the strict relations' equality): ``value / threshold`` for an upper bound (``<=``, ``<``),
    ``threshold / value`` for a lower bound (``>=``, ``>``); None for a row not measured, and for a lower bound
    whose value is 0 (infinitely far).

    Parameters
    ----------
    row : mapping
        A row of :meth:`learner.assumptions.AssumptionReport.to_dict`: ``value``, ``threshold``, ``relation``, ``ok``.

    Returns
    -------
    float or None

    Examples
    --------
    >>> condition_margin({"value": 0.75, "threshold": 0.5, "relation": "<=", "ok": False})
    1.5
    >>> condition_margin({"value": 3.0, "threshold": 1.5, "relation": ">=", "ok": True})
    0.5
    >>> condition_margin({"value": 0.0, "threshold": 0.1, "relation": ">=", "ok": False}) is None
    True
    """
    if row.get("ok") is None or row.get("value") is None or row.get("threshold") is None:
        return None
    value, threshold = float(row["value"]), float(row["threshold"])
    if row["relation"] in ("<=", "<"):
        return value / threshold if threshold > 0 else None
    return threshold / value if value > 0 else None


def _final(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    return rec["conditions"][max(rec["conditions"], key=int)]


def condition_table(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per condition of the assumption report, over the trained layers (at their last step) and their controls:
    how many were measured and met, and how far from the threshold they sit (:func:`condition_margin`: the median,
    and the largest over the trained layers, above 1 where a condition fails).

    Parameters
    ----------
    records : sequence of dict
        The study's records (``trained-run``).

    Returns
    -------
    list of dict
        One per condition measured on at least one layer, in the report's order: ``name``, ``group``,
        ``quantity``, ``relation``, ``source``, ``measured``, ``met``, ``control_measured``, ``control_met``,
        ``median_margin``, ``worst_margin`` and ``control_median_margin`` (None where no margin is finite).
    """
    table: dict[str, dict[str, Any]] = {}
    for rec in records:
        for which, report in (("", _final(rec)), ("control_", rec["control"])):
            for row in report["rows"]:
                if row["ok"] is None:
                    continue
                entry = table.setdefault(row["name"], {key: row[key] for key in
                                                       ("name", "group", "quantity", "relation", "source")}
                                         | {"measured": 0, "met": 0, "control_measured": 0, "control_met": 0,
                                            "margins": [], "control_margins": []})
                entry[f"{which}measured"] += 1
                entry[f"{which}met"] += bool(row["ok"])
                margin = condition_margin(row)
                if margin is not None:
                    entry[f"{which}margins"].append(margin)
    for entry in table.values():
        ours, control = entry.pop("margins"), entry.pop("control_margins")
        entry["median_margin"] = float(np.median(ours)) if ours else None
        entry["worst_margin"] = float(max(ours)) if ours else None
        entry["control_median_margin"] = float(np.median(control)) if control else None
    return list(table.values())


def learner_failures(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The learner's runs that did not recover their layer, grouped by task, whether m was given, the phase the
    run ended in (its ``status``) and the conditions its layer fails (at its last step; the setting's failed
    conditions for a refusal): how many, their median relative error and one message.

    Parameters
    ----------
    records : sequence of dict
        The study's records (``trained-run``).

    Returns
    -------
    list of dict
        ``task``, ``m_given`` (bool), ``status``, ``conditions`` (list of names; empty: the layer meets every
        condition), ``runs``, ``median_relative_error`` (None where none was measured) and ``message``.
    """
    groups: dict[tuple, dict[str, Any]] = {}
    for rec in records:
        for label, run in rec["learner"].items():
            if recovered(run):
                continue
            broken = sorted(run.get("setting_failed") or []) if run["status"] == "setting" else \
                sorted(_final(rec)["failed"])
            key = (rec["task"], label == "m_given", run["status"], tuple(broken))
            group = groups.setdefault(key, {"task": key[0], "m_given": key[1], "status": key[2],
                                            "conditions": list(key[3]), "runs": 0, "errors": [],
                                            "message": run["message"]})
            group["runs"] += 1
            if run["relative_error"] is not None:
                group["errors"].append(run["relative_error"])
    rows = []
    for group in groups.values():
        errors = group.pop("errors")
        rows.append(group | {"median_relative_error": float(np.median(errors)) if errors else None})
    return rows


def plot_trained(summary: Mapping[str, Any], path: Any) -> Any:
    """``trained.png``: per task, each condition's median margin (:func:`condition_margin`; the setting's
    conditions, which training cannot change, left out) over its trained layers at each checkpoint of training,
    against the threshold (the black line at 1; above it the condition fails), and in the title the share of layers
    meeting every condition at each checkpoint. Two panels a row; one legend for all of them, in the empty panel
    if there is one, else below.

    Parameters
    ----------
    summary : mapping
        :func:`trained_summary`'s result.
    path : str or path-like
        The PNG file (written atomically).

    Returns
    -------
    pathlib.Path
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import save_figure

    trace, shares = summary["margin_trace"], summary["condition_trace"]
    shown = [c["name"] for c in summary["conditions"] if c["group"] != "setting"]
    colours = {name: f"C{i % 10}" for i, name in enumerate(shown)}
    rows = (len(trace) + 1) // 2
    fig, grid = plt.subplots(rows, 2, figsize=(11, 3.9 * rows + 0.3), squeeze=False, layout="constrained")
    legend = {}
    for ax, (task, per) in zip(grid.ravel(), trace.items(), strict=False):
        for name in (n for n in shown if n in per):
            steps = sorted(per[name], key=int)
            legend[name], = ax.plot([max(int(t), 1) for t in steps], [per[name][t] for t in steps], marker=".",
                                    lw=1, ls="-" if shown.index(name) < 10 else "--", color=colours[name])
        legend["threshold (above it the condition fails)"] = ax.axhline(1.0, color="k", lw=1.2)
        every = shares[task][EVERY_CONDITION]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training step (step 0 drawn at 1)")
        ax.set_ylabel("median margin (above 1: fails)")
        ax.set_title(f"{task}: meeting every condition, by step: "
                     + ", ".join(f"{every[t]:.0%}" for t in sorted(every, key=int)), fontsize=9.5)
        ax.grid(True, alpha=0.3)
    order = sorted(legend, key=lambda n: shown.index(n) if n in shown else len(shown))
    handles = [legend[n] for n in order]
    spares = grid.ravel()[len(trace):]
    for spare in spares:
        spare.set_axis_off()
    if len(spares):  # the empty panel holds the legend, which every panel shares (a colour per condition)
        spares[0].legend(handles, order, loc="center", ncol=2, title="condition")
    elif handles:
        fig.legend(handles, order, loc="outside lower center", ncol=4, title="condition")
    out = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return out
