"""Figures the prose quotes, read from records at build time (MyST substitutions such as ``{{ main_examples }}``).

The main job's figures — the examples it draws and the seconds it took — come from the ``learn --json`` records in
``docs/sweeps/main-job/records/``: ``docs/conf.py`` hands :func:`substitutions` to MyST, so the pages cannot quote
another number than the records hold, and ``tests/test_docs_figures.py`` checks that the README (which is not
built) quotes the same figures and that a fresh run of the main job still draws the examples the records say.
The test suite's and CI's figures come the same way from ``docs/sweeps/ci/runs.json``, one entry per fresh-clone
CI run, and the measurement history's timings of single learns from ``docs/sweeps/timings/records/``. The
related-work page's parity check has no record: :func:`parity_heads` computes it when the pages are built.
"""

import json
from pathlib import Path

MAIN_JOB = "main-job"
TIMINGS = "timings"
#: Options that change what a run prints or writes, not what it computes.
OUTPUT_OPTIONS = ("json", "no_progress", "verbose")
WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def main_job(sweeps):
    """The main job's records: ``{"examples", "seconds": (fastest, slowest), "runs", "workers", "version",
    "success"}``; every record must be the default ``learn`` (the same parameters) and draw the same examples."""
    paths = sorted((Path(sweeps) / MAIN_JOB / "records").glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no records in {Path(sweeps) / MAIN_JOB / 'records'}")
    records = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    params = {json.dumps({k: v for k, v in r["parameters"].items() if k not in OUTPUT_OPTIONS}, sort_keys=True)
              for r in records}
    examples = {r["result"]["examples_drawn"] for r in records}
    if len(params) != 1 or len(examples) != 1:
        raise ValueError(f"the main job's records disagree: parameters {sorted(params)}, examples {sorted(examples)}")
    seconds = sorted(r["result"]["timings"]["total"] for r in records)
    return {"examples": examples.pop(), "seconds": (seconds[0], seconds[-1]), "runs": len(records),
            "workers": records[0]["result"]["execution"]["workers"],
            "version": records[0]["versions"]["learner"], "success": all(r["result"]["success"] for r in records)}


def seconds_text(fastest, slowest):
    """``"2.6–2.8 s"`` (one decimal; one figure when both round alike)."""
    low, high = f"{fastest:.1f}", f"{slowest:.1f}"
    return f"{low} s" if low == high else f"{low}–{high} s"


def latest_ci(sweeps):
    """The last fresh-clone CI run of ``docs/sweeps/ci/runs.json``, with ``total`` as "9 min 48 s"."""
    run = dict(json.loads((Path(sweeps) / "ci" / "runs.json").read_text(encoding="utf-8"))["runs"][-1])
    run["total"] = f"{run['total_s'] // 60} min {run['total_s'] % 60} s"
    return run


def timing(record):
    """The figures of one ``learn --json`` record that the measurement history quotes, as text: ``total``,
    ``phase4`` and ``phase6`` (seconds, one decimal), ``rest`` (the total less phases 4 and 6: the other phases,
    the setting's checks and the report), ``examples`` (millions, one decimal), ``heldout`` (phase 6's held-out
    relative error, two figures), ``tol`` (the tolerance phase 4's pilot chose) and ``workers``."""
    result = record["result"]
    times = result["timings"]
    rest = times["total"] - times["4_refined_sculpt"] - times["6_search"]
    tol = result["diagnostics"]["0_setting"]["refined_tol_chosen"]
    return {"total": f"{times['total']:.1f}", "phase4": f"{times['4_refined_sculpt']:.1f}",
            "phase6": f"{times['6_search']:.1f}", "rest": f"{rest:.1f}",
            "examples": f"{result['examples_drawn'] / 1e6:.1f}",
            "heldout": f"{result['diagnostics']['6_search']['heldout_relative_error']:.2g}",
            "tol": ", ".join(f"{t:g}" for t in (tol if isinstance(tol, list) else [tol])),
            "workers": str(result["execution"]["workers"])}


def timings(sweeps):
    """``{stem}_{figure}`` for every record of ``docs/sweeps/timings/records/`` (``m10_d24_k2_l1_s103_total``, ...),
    the figures of :func:`timing`."""
    subs = {}
    for path in sorted((Path(sweeps) / TIMINGS / "records").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        subs |= {f"{path.stem}_{key}": value for key, value in timing(record).items()}
    return subs


#: The methods' names in the race's prose.
METHOD_NAMES = {"provable": "the learner", "adam": "numpy Adam", "torch-adam": "torch Adam",
                "torch-adam-gpu": "torch Adam on the GPU"}


def _seconds(value):
    """``"14 s"``, ``"2.7 s"``: two significant figures, as the race's table gives them."""
    return f"{float(f'{value:.2g}'):g} s"


def race_lead(rows, milestone="1e-08", phase4=None):
    """Per cell of a race's rows (``summary["rows"]`` of :func:`learner.study.peers.race_study`), who was first to
    ``milestone``, as a Markdown list: each method's median seconds to it and how many of its layers reached it
    (a method that reached it on none: its median best error), then the first — the fastest median among the
    methods whose every layer reached it — and its lead over the next such method as a ratio, or that no method
    reached it on every layer. ``phase4`` (``{(m, d, k): (seconds, total seconds, examples)}``, the learner's
    medians, :func:`learner_phase4`) adds where the learner's time went."""
    cells = {}
    for row in rows:
        cells.setdefault((row["m"], row["d"], row["k"]), []).append(row)
    lines = []
    for (m, d, k), got in sorted(cells.items()):
        got = sorted(got, key=lambda r: list(METHOD_NAMES).index(r["method"]))
        parts, full = [], []
        for r in got:
            ms = r["milestones"][milestone]
            name = METHOD_NAMES[r["method"]]
            if ms["reached"]:
                parts.append(f"{name} {_seconds(ms['median_seconds'])} ({ms['reached']} of {r['runs']} layers)")
            else:
                parts.append(f"{name} none of {r['runs']} layers (median best error "
                             f"{r['median_relative_error']:.2g})")
            if ms["reached"] == r["runs"]:
                full.append((ms["median_seconds"], name))
        full.sort()
        if not full:
            verdict = "no method reached it on every layer"
        elif len(full) == 1:
            verdict = f"first: {full[0][1]}, the only method to reach it on every layer"
        else:
            verdict = f"first: {full[0][1]}, {full[1][0] / full[0][0]:.1f}× faster than {full[1][1]}"
        spent = ""
        if phase4 and (m, d, k) in phase4:
            four, total, examples = phase4[(m, d, k)]
            spent = (f" The learner's phase 4: {_seconds(four)} of its {_seconds(total)}, "
                     f"{examples / 1e6:.1f} M examples (medians).")
        lines.append(f"- $({m}, {d}, {k})$: " + "; ".join(parts) + f" — {verdict}.{spent}")
    return "\n".join(lines)


def learner_phase4(records):
    """``{(m, d, k): (phase 4's seconds, total seconds, examples drawn)}``, the medians of the learner's finished
    measured runs among ``records`` (a race's run records)."""
    from statistics import median

    cells = {}
    for r in records:
        spec = r["spec"]
        if spec["method"] == "provable" and spec["role"] == "eval" and r.get("outcome") == "finished":
            cells.setdefault((spec["m"], spec["d"], spec["k"]), []).append(
                (r["timings"]["4_refined_sculpt"], r["timings"]["total"], r["examples_drawn"]))
    return {cell: tuple(median(v[i] for v in got) for i in range(3)) for cell, got in cells.items()}


def races(sweeps):
    """``race_ten_lead``: :func:`race_lead` of the race to ten heads (``docs/sweeps/race-ten/``: its summary's rows
    and its learner's records)."""
    folder = Path(sweeps) / "race-ten"
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "runs").glob("*.json"))]
    return {"race_ten_lead": race_lead(summary["rows"], phase4=learner_phase4(records))}


def main_swap_tuples(sweeps):
    """``main_swap_tuples``: the tuples phase 6's swap descent scored in the main study's learner runs of seed 0 at
    m = 3, 4 and 5 (``diagnostics["6_search"]["tuples_scored"]``), as ``"a, b and c"``."""
    from learner.sweep.records import read_record

    counts = []
    for m in (3, 4, 5):
        (path,) = sorted((Path(sweeps) / "main" / "runs").glob(f"provable-eval-m{m}-*-s0.json"))
        counts.append(f"{read_record(path)['diagnostics']['6_search']['tuples_scored']:,}")
    return {"main_swap_tuples": f"{counts[0]}, {counts[1]} and {counts[2]}"}


def _tolerances(values):
    """``"0.1, 0.12 and 0.15"``."""
    text = [f"{t:g}" for t in values]
    return ", ".join(text[:-1]) + f" and {text[-1]}" if len(text) > 1 else "".join(text)


def _power_of_ten(value):
    """``"10⁸"`` for 100,000,000; the digits with thousands separators for anything else."""
    exponent = len(str(int(value))) - 1
    if value == 10**exponent:
        return "10" + str(exponent).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{value:,}"


def settings():
    """The learner's settings the pages name, read from the learner itself: ``reach_candidates`` ("0.1, 0.12 and
    0.15"), ``reach_loosest``, ``reach_examples`` ("10⁸"), ``adaptive_loosest``, ``n_refine`` (LearnConfig's
    default, "400,000"), ``torch_adam_batch`` (:func:`learner.baselines.fit_torch`'s mini-batch),
    ``relative_error_samples`` (:func:`learner.relative_error`'s default inputs), ``max_json_size`` and
    ``max_json_depth`` (what :func:`learner.io.read_json` refuses), ``checkpoint_first`` and ``checkpoint_growth``
    (phase 4's hull checkpoints)."""
    from learner import relative_error
    from learner.baselines import fit_torch
    from learner.io import MAX_JSON_BYTES, MAX_JSON_DEPTH
    from learner.phases import LearnConfig
    from learner.phases.forecast import ADAPTIVE_CANDIDATES, REACH_CANDIDATES, REACH_EXAMPLES
    from learner.phases.sculpt import CHECKPOINT_FIRST, CHECKPOINT_GROWTH

    return {"reach_candidates": _tolerances(REACH_CANDIDATES), "reach_loosest": f"{max(REACH_CANDIDATES):g}",
            "reach_examples": _power_of_ten(REACH_EXAMPLES), "adaptive_loosest": f"{max(ADAPTIVE_CANDIDATES):g}",
            "n_refine": f"{LearnConfig().n_refine:,}", "torch_adam_batch": str(_default(fit_torch, "batch")),
            "relative_error_samples": f"{_default(relative_error, 'n_samples'):,}",
            "max_json_size": f"{MAX_JSON_BYTES >> 20} MiB", "max_json_depth": str(MAX_JSON_DEPTH),
            "checkpoint_first": f"{CHECKPOINT_FIRST:g}", "checkpoint_growth": f"{CHECKPOINT_GROWTH:g}"}


def _default(function, parameter):
    """``function``'s default for ``parameter``, read from its signature."""
    import inspect

    return inspect.signature(function).parameters[parameter].default


#: The heads of the related-work page's parity check (:func:`lowerbounds.parity_heads_check`), each variant.
PARITY_HEADS = tuple(range(2, 9))


def _parity_cell(check):
    """``"4 of 4 right, margin 1"`` (how many patterns the readout's sign gets right, and the margin)."""
    return f"{check.agree} of {check.patterns} right, margin {check.margin:.3g}"


def parity_heads(heads=PARITY_HEADS):
    """The related-work page's parity check, computed at build time by :func:`lowerbounds.parity_heads_check`:
    ``parity_heads_<variant>`` (a Markdown table per variant: heads, bits, heads per bit, patterns, the member and
    its two controls) and ``parity_heads_summary`` (one sentence: how many members sign-represent the parity, how
    many controls fail, which members were refused)."""
    import re

    from lowerbounds import parity_heads_check
    from lowerbounds.parity import CONTROLS

    subs, members, controls, refused = {}, [], [], []
    for variant in ("interpolation", "steps"):
        rows = ["| heads $m$ | bits $n$ | $m/n$ | patterns $2^n$ | the member | " +
                " | ".join(f"control `{c}`" for c in CONTROLS) + " |", "|---:|---:|---:|---:|---|---|---|"]
        for m in heads:
            try:
                check = parity_heads_check(m, variant=variant)
            except ValueError as exc:
                error = re.search(r"misses its formula by (\S+) > FORMULA_ACCURACY = (\S+)", str(exc))
                why = (f"its float64 layer misses its formula by {error.group(1)} > {error.group(2)} "
                       "(`FORMULA_ACCURACY`)") if error else str(exc)
                refused.append(f"{variant} at $m = {m}$, where {why}")
                rows.append(f"| {m} | {m - 1} | {m / (m - 1):.3g} | {2 ** (m - 1)} | refused: {why} | — | — |")
                continue
            members.append(check.success)
            cells = []
            for control in CONTROLS:
                ctl = parity_heads_check(m, variant=variant, control=control)
                controls.append(not ctl.success)
                cells.append(("fails: " if not ctl.success else "passes: ") + _parity_cell(ctl))
            rows.append(f"| {check.heads} | {check.n_bits} | {check.heads_per_bit:.3g} | {check.patterns} | "
                        f"{'sign-represents: ' if check.success else 'fails: '}{_parity_cell(check)} | "
                        + " | ".join(cells) + " |")
        subs[f"parity_heads_{variant}"] = "\n".join(rows)
    summary = (f"{sum(members)} of the {len(members)} members built sign-represent the parity on every pattern, and "
               f"{sum(controls)} of their {len(controls)} controls fail")
    subs["parity_heads_summary"] = summary + (f"; refused: {', '.join(refused)}." if refused else ".")
    return subs


def growth_law(summary):
    """The growth study's law (``growth_law``: :func:`learner.study.growth.headline`) and its sentence per line and
    quantity (``growth_statements``, a Markdown list), from the summary computed again from the records."""
    return {"growth_law": summary["headline"],
            "growth_statements": "\n".join(f"- {s}" for s in summary["statements"])}


def substitutions(sweeps):
    """The MyST substitutions of the pages: ``main_examples``, ``main_seconds``, ``main_runs``, ``main_version``
    from the main job's records, and ``ci_*`` (``ci_commit``, ``ci_date``, ``ci_total``, ``ci_default_tests``, ...)
    from the last CI run, and ``provenance_<study>`` (``provenance_frontier_reach``, ...): the lines that open the
    study's results page, for the guide's account of it; ``parity_heads_*`` (:func:`parity_heads`): the related-work
    page's parity check, computed at build time; ``growth_law`` and ``growth_statements`` (:func:`growth_law`);
    ``main_swap_tuples`` (:func:`main_swap_tuples`)."""
    job = main_job(sweeps)
    subs = {"main_examples": f"{job['examples']:,}", "main_seconds": seconds_text(*job["seconds"]),
            "main_runs": WORDS.get(job["runs"], str(job["runs"])), "main_version": job["version"]}
    subs |= {f"ci_{key}": str(value) for key, value in latest_ci(sweeps).items()}
    subs |= timings(sweeps)
    subs |= settings()
    subs |= races(sweeps)
    subs |= main_swap_tuples(sweeps)
    subs |= parity_heads()
    import results  # docs/_ext: the studies' provenance, one home for the results pages and the guide

    subs |= growth_law(results.growth_summary_of(Path(sweeps) / "growth"))

    from learner import __version__

    subs |= {f"provenance_{name.replace('-', '_')}": "\n".join(results.provenance_lines(name, Path(sweeps),
                                                                                       __version__))
             for name in results.PAGES}
    return subs
