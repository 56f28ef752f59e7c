"""The learner beside the gradient baselines a user would pick: our numpy Adam and torch Adam, on the same layers.

:func:`peer_study` plants layers as :func:`learner.study.scaling.scaling_study` does (the same
seeds: with ``seed=0`` and the same ``(m, d, k)`` its layer ``s`` is the scaling study's layer
``s``), runs the paper's learner (:func:`learner.learn`), :func:`learner.baselines.fit_gradient` (numpy,
full-batch Adam, restarts) and :func:`learner.baselines.torch_adam.fit_torch` (torch Adam,
mini-batches, cosine schedule, clipping) on each, and reports per method the time to a relative
error of 1e-3 and of 1e-8, the examples drawn and the final error. Runs are records of the
sweep engine (:mod:`learner.study.sweep`): resumable, locked, on any backend. The comparison's design
is ours; the paper reports no experiments.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..baselines import check_milestones, milestone_key
from ..io import versions
from ..validation import Each, Integer, OrWord, Real, Seed, check_int, declare
from .records import StudyResult, write_summary
from .runs import QUICK_OPTIONS, STUDY_LOGIT_SCALE, RunSpec, param_limit, plan_runs, sound_d
from .sweep import claim_study, median, run_sweep, sweep_lock

__all__ = ["PEER_METHODS", "PeerResult", "peer_rows", "peer_study", "peer_table"]

PEER_METHODS = ("provable", "adam", "torch-adam")
#: Relative errors whose first crossing is timed.
MILESTONES = (1e-3, 1e-8)
#: Every method computes with one thread (numpy's BLAS in the sweep's workers, torch's intra-op threads here),
#: two runs at a time on two cores: like with like.
TORCH_THREADS = 1
#: ``--quick``: a smoke test in seconds (the learner runs out of examples, the baselines of iterations).
QUICK_PEER_OPTIONS = QUICK_OPTIONS | {
    "torch-adam": {"epochs": 3, "batch": 64, "n_train": 300, "n_val": 100, "restarts": 1}}


def _seconds_to(rec, threshold):
    """Seconds from the start of the run to a relative error of ``threshold``, or None if it never got there.

    The baselines time their first validation below it (``diagnostics.fit.seconds_to``); the learner
    returns one layer, at the end, so its time is the run's total when that layer's error against the
    planted one is at most ``threshold``.
    """
    if rec.get("outcome") != "finished":
        return None
    if rec["spec"]["method"] == "provable":
        err = rec["errors"].get("relative_error")
        return rec["timings"]["total"] if err is not None and err <= threshold else None
    return ((rec.get("diagnostics") or {}).get("fit") or {}).get("seconds_to", {}).get(milestone_key(threshold))


def peer_rows(records, *, milestones=MILESTONES):
    """Per (m, d, k, method): runs, how many reached each milestone and the median seconds of those that did,
    median total seconds, median examples (and per parameter-counting limit), median final relative error."""
    milestones = check_milestones(milestones)
    groups = {}
    for rec in records:
        s = rec["spec"]
        groups.setdefault((s["m"], s["d"], s["k"], PEER_METHODS.index(s["method"])), []).append(rec)
    rows = []
    for (m, d, k, mi), recs in sorted(groups.items()):
        finished = [r for r in recs if r["outcome"] == "finished"]
        row = {"method": PEER_METHODS[mi], "m": m, "d": d, "k": k, "runs": len(recs),
               "errors_raised": len(recs) - len(finished),
               "median_seconds": median([r["timings"].get("total") for r in finished]),
               "median_examples": median([r["examples_drawn"] for r in finished]),
               "param_limit": param_limit(m, d, k),
               "median_relative_error": median([r["errors"].get("relative_error") for r in finished]),
               "milestones": {}}
        for t in milestones:
            times = [_seconds_to(r, t) for r in recs]
            got = [x for x in times if x is not None]
            row["milestones"][milestone_key(t)] = {"reached": len(got), "median_seconds": median(got)}
        rows.append(row)
    return rows


def peer_table(rows):
    """The side-by-side Markdown table: one row per (m, method)."""
    keys = list(rows[0]["milestones"]) if rows else []
    head = ("| m | d | k | method | runs | " + " | ".join(f"time to {key} (reached)" for key in keys)
            + " | median s | median examples (/ limit) | median rel. err |")
    lines = [head, "|" + "---|" * (8 + len(keys))]

    def fmt(x, spec):
        return "–" if x is None else format(x, spec)

    for r in rows:
        cells = [f"{fmt(r['milestones'][key]['median_seconds'], '.1f')} s "
                 f"({r['milestones'][key]['reached']}/{r['runs']})" for key in keys]
        ratio = "" if r["median_examples"] is None else f" ({r['median_examples'] / r['param_limit']:.0f}×)"
        lines.append(f"| {r['m']} | {r['d']} | {r['k']} | {r['method']} | {r['runs']} | " + " | ".join(cells)
                     + f" | {fmt(r['median_seconds'], '.1f')} | {fmt(r['median_examples'], ',.0f')}{ratio} | "
                     f"{fmt(r['median_relative_error'], '.2g')} |")
    return "\n".join(lines)


def _previous(path):
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _torch_version(records):
    found = {((r.get("diagnostics") or {}).get("fit") or {}).get("torch_version") for r in records
             if r["spec"]["method"] == "torch-adam" and r.get("outcome") == "finished"}
    found.discard(None)
    return ", ".join(sorted(found)) or None


@dataclass(frozen=True)
class PeerResult(StudyResult):
    """What :func:`peer_study` measured (:class:`learner.study.records.StudyResult`)."""

    def table(self):
        s = self.summary
        return (peer_table(s["rows"]) + "\n\n" + "time to e: seconds from the run's start to its first relative "
                "error ≤ e (Adam: validation error, checked after every update for numpy, every epoch for torch; "
                "the learner: its one layer's error against the planted layer, so its total time), median over "
                "the runs that reached it. One thread per method, " + s["concurrency"] + ".")


@declare(ms=Each(Integer()), k=Integer(2), d=OrWord("auto", Integer()), seeds=Integer(), logit_scale=Real(),
         seed=Seed())
def peer_study(out, *, ms=(1, 2, 3, 4), k=2, d="auto", seeds=3, logit_scale=STUDY_LOGIT_SCALE, adam_options=None,
               torch_options=None, provable_options=None, seed=0, backend="local",
               workers=None, scheduler=None, progress=False, run=True):
    """Run the learner, numpy Adam and torch Adam on the same planted layers; the side-by-side summary.

    Parameters
    ----------
    out : path
        Directory of the study: ``runs/`` (one JSON record per run), ``study.json``,
        ``summary.json`` and ``summary.md``.
    ms : sequence of int
        Numbers of heads.
    k : int
        Tokens per sequence.
    d : int or "auto"
        Token dimension; ``"auto"`` is :func:`learner.study.runs.sound_d` per ``(m, k)`` (12 for m <= 4 at k = 2).
    seeds : int
        Planted layers per m; every method meets the same layers and oracle seeds.
    logit_scale : float
        Of the planted layers (the scaling study's 1).
    adam_options, torch_options, provable_options : dict, optional
        Keyword arguments of :func:`~learner.baselines.fit_gradient` / :func:`~learner.baselines.torch_adam.fit_torch`
        (default ``threads=1``) / fields of :class:`~learner.phases.LearnConfig`.
    seed : int
        Entropy of every run's seed.
    backend, workers, scheduler, progress, run
        As in :func:`learner.study.sweep.run_sweep` (``run=False``: summarise the records already there).

    Returns
    -------
    PeerResult
    """
    from pathlib import Path

    from ..io import check_writable_dir
    from ..phases import LearnConfig

    if d == "auto":
        dims = {m: sound_d(m, k) for m in ms}
    else:
        dims = dict.fromkeys(ms, check_int("d", d, minimum=k + 1))
    provable_options = dict(provable_options or {})
    LearnConfig(**provable_options)  # checked before any run
    # The baselines time MILESTONES, their default `milestones`.
    options = {"provable": provable_options, "adam": dict(adam_options or {}),
               "torch-adam": {"threads": TORCH_THREADS} | dict(torch_options or {})}
    if run:
        from ..torch_interop import require_torch

        require_torch()  # the extra is there before anything runs, or one line saying how to install it
    out = Path(check_writable_dir("out", out))
    # Where the runs went is not part of the study (a resume may use another backend); the summary says it.
    concurrency = ("one run at a time" if backend == "serial" else
                   f"{workers} runs at a time" if backend == "local" and workers else
                   "one run per core" if backend == "local" else "runs on a Dask cluster")
    parameters = {"ms": ms, "k": k, "d": {str(m): dd for m, dd in dims.items()}, "seeds": seeds,
                  "logit_scale": logit_scale, "options": options, "milestones": list(MILESTONES), "seed": seed}
    specs = [s for m in ms for s in plan_runs(ms=[m], d=dims[m], k=k, seeds=seeds, methods=PEER_METHODS,
                                              entropy=seed, options=options, logit_scale=logit_scale)]
    specs.sort(key=lambda s: (s.seed_index, s.m, PEER_METHODS.index(s.method)))
    with sweep_lock(out):
        claim_study(out, "peer-study", RunSpec.RECORD_KIND, parameters)
        records, stats = run_sweep(specs, out, backend=backend, workers=workers, scheduler=scheduler,
                                   progress=progress, run=run)
        if not run:  # re-summarising: the concurrency of the sitting that ran them, as its summary said
            concurrency = _previous(out / "summary.json").get("concurrency", "as recorded by the runs' sitting")
        summary = {"rows": peer_rows(records), "parameters": parameters, "concurrency": concurrency,
                   "versions": versions() | {"torch": _torch_version(records)},
                   "note": "comparison design ours (instances: learner.random_layer); the paper reports no "
                           "experiments. time to e: first relative error <= e, median over the runs that reached it."}
        files = {}
        result = PeerResult(records, summary, stats, files)
        files |= write_summary(out, summary, result.table() + "\n")
    return result
