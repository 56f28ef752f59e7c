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


def span_gap_rows(sweeps):
    """Every learner run under ``sweeps`` whose phase 5 had at least two heads and whose phase 6 ran, as
    ``(success, ratio at m, hull distance)``: the ratio ``gap_ratios[m - 2]`` marks the true m. Records are learner
    results, at the top level or under ``"result"`` (``learn --json``)."""
    rows = []
    for path in sorted(Path(sweeps).rglob("*.json")):
        text = path.read_text(encoding="utf-8")
        if '"5_span"' not in text:
            continue
        record = json.loads(text)
        result = record.get("result", record)
        diagnostics = result.get("diagnostics") if isinstance(result, dict) else None
        span = (diagnostics or {}).get("5_span")
        if not isinstance(span, dict) or span.get("m", 0) < 2 or "6_search" not in diagnostics:
            continue
        rows.append((bool(result["success"]), span["gap_ratios"][span["m"] - 2], span.get("hull_distance")))
    return rows


def phase6_old_new(sweeps):
    """The phase-6 comparison of ``docs/sweeps/reach/phase6/phase6_s*.json`` (each: one seed's hull searched by
    the default and by the swap search with the trust-region refinement): ``phase6_new`` and ``phase6_old``
    (``"5.2–11.9 s (median 5.7 s)"``), ``phase6_faster`` (``"35–54×"``, each seed's old time over its new),
    ``phase6_faster_median``, ``phase6_seeds`` and ``phase6_worst_error`` (the larger held-out relative error
    of either search, as a power of ten it stays below)."""
    import math
    import statistics

    runs = [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((Path(sweeps) / "reach" / "phase6").glob("phase6_s*.json"))]
    if not runs:
        raise FileNotFoundError(f"no phase6_s*.json in {Path(sweeps) / 'reach' / 'phase6'}")

    def span(values, unit=" s"):
        return (f"{min(values):.2g}–{max(values):.3g}{unit} (median {statistics.median(values):.2g}{unit})"
                .replace("e+", "e"))

    new = [r["new"]["seconds"] for r in runs]
    old = [r["old"]["seconds"] for r in runs]
    faster = [o / n for o, n in zip(old, new, strict=True)]
    worst = max(max(r["new"]["heldout_relative_error"], r["old"]["heldout_relative_error"]) for r in runs)
    return {"phase6_new": span(new), "phase6_old": f"{min(old):.0f}–{max(old):.0f} s (median "
            f"{statistics.median(old):.0f} s)", "phase6_faster": f"{min(faster):.0f}–{max(faster):.0f}×",
            "phase6_faster_median": f"{statistics.median(faster):.0f}×", "phase6_seeds": WORDS.get(len(runs),
            str(len(runs))), "phase6_worst_error": f"$10^{{{math.ceil(math.log10(worst))}}}$"}


def _plain(value):
    """``"1.06"``, or ``"$3.4\\cdot10^{13}$"`` from 1,000 on."""
    if value < 1000:
        return f"{value:.2f}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"${mantissa}\\cdot10^{{{int(exponent)}}}$"


def span_gaps(sweeps):
    """Phase 5's gap against phase 6's outcome over every record (:func:`span_gap_rows`): ``span_gap_runs``,
    ``span_gap_recovered``, ``span_gap_lowest`` (the lowest ratio among recovered runs), ``span_gap_missed`` (the
    sentence about the runs not recovered, their ratios) and ``span_hull_farthest`` (the largest relative hull
    distance among recovered runs that kept the truth's diagnostics)."""
    rows = span_gap_rows(sweeps)
    won = [r for r in rows if r[0]]
    lost = sorted(r[1] for r in rows if not r[0])
    missed = (f"the {len(lost):,} it missed had ratios from {_plain(lost[0])} to {_plain(lost[-1])}" if lost
              else "it missed none")
    return {"span_gap_runs": f"{len(rows):,}", "span_gap_recovered": f"{len(won):,}",
            "span_gap_lowest": f"{min(r[1] for r in won):.2f}", "span_gap_missed": missed,
            "span_hull_farthest": f"{max(r[2] for r in won if r[2] is not None):.2f}"}


def _percent(fraction):
    """``"0.3 %"`` for 0.003."""
    return f"{100 * fraction:.3g} %"


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
    (phase 4's hull checkpoints), ``search_memory`` (LearnConfig's, in GiB), ``crude_max_examples`` and
    ``refine_keep`` (LearnConfig's), ``vertex_chunk`` and ``cert_keep``, ``cert_pool``, ``cert_rounds``,
    ``cert_rtol`` (phase 3's certified-row regression, :func:`learner.phases.refine_sum.certified_regression`),
    ``pilot_rows``, ``pilot_examples`` and ``pilot_max_fraction`` (when phase 4's pilot settles),
    ``product_block`` (phase 6's product blocks)."""
    from learner import relative_error
    from learner.baselines import fit_torch
    from learner.io import MAX_JSON_BYTES, MAX_JSON_DEPTH
    from learner.phases import LearnConfig
    from learner.phases.forecast import (
        ADAPTIVE_CANDIDATES,
        PILOT_EXAMPLES,
        PILOT_MAX_FRACTION,
        PILOT_ROWS,
        REACH_CANDIDATES,
        REACH_EXAMPLES,
    )
    from learner.phases.refine_sum import VERTEX_CHUNK, certified_regression
    from learner.phases.sculpt import CHECKPOINT_FIRST, CHECKPOINT_GROWTH
    from learner.phases.search import PRODUCT_BLOCK

    return {"reach_candidates": _tolerances(REACH_CANDIDATES), "reach_loosest": f"{max(REACH_CANDIDATES):g}",
            "reach_examples": _power_of_ten(REACH_EXAMPLES), "adaptive_loosest": f"{max(ADAPTIVE_CANDIDATES):g}",
            "n_refine": f"{LearnConfig().n_refine:,}", "torch_adam_batch": str(_default(fit_torch, "batch")),
            "relative_error_samples": f"{_default(relative_error, 'n_samples'):,}",
            "max_json_size": f"{MAX_JSON_BYTES >> 20} MiB", "max_json_depth": str(MAX_JSON_DEPTH),
            "checkpoint_first": f"{CHECKPOINT_FIRST:g}", "checkpoint_growth": f"{CHECKPOINT_GROWTH:g}",
            "search_memory": f"{LearnConfig().search_memory / 2**30:g} GiB",
            "crude_max_examples": f"{LearnConfig().crude_max_examples:,}",
            "refine_keep": _percent(LearnConfig().refine_keep), "vertex_chunk": f"{VERTEX_CHUNK:,}",
            "cert_keep": _percent(_default(certified_regression, "keep")),
            "cert_pool": _percent(_default(certified_regression, "pool")),
            "cert_rounds": str(_default(certified_regression, "rounds")),
            "cert_rtol": f"{_default(certified_regression, 'rtol'):g}", "pilot_rows": str(PILOT_ROWS),
            "pilot_examples": f"{PILOT_EXAMPLES:,}", "pilot_max_fraction": _percent(PILOT_MAX_FRACTION),
            "product_block": str(PRODUCT_BLOCK)}


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
    ``main_swap_tuples`` (:func:`main_swap_tuples`); ``span_gap_*`` (:func:`span_gaps`); ``phase6_*``
    (:func:`phase6_old_new`); ``bench_*``, ``span_*`` and ``blas_*`` (:func:`benchpage.figures`)."""
    job = main_job(sweeps)
    subs = {"main_examples": f"{job['examples']:,}", "main_seconds": seconds_text(*job["seconds"]),
            "main_runs": WORDS.get(job["runs"], str(job["runs"])), "main_version": job["version"]}
    subs |= {f"ci_{key}": str(value) for key, value in latest_ci(sweeps).items()}
    subs |= timings(sweeps)
    subs |= settings()
    subs |= races(sweeps)
    subs |= main_swap_tuples(sweeps)
    subs |= span_gaps(sweeps)
    subs |= phase6_old_new(sweeps)
    import benchpage  # docs/_ext: the benchmarks' figures

    subs |= benchpage.figures(Path(sweeps) / "bench")
    subs |= parity_heads()
    import results  # docs/_ext: the studies' provenance, one home for the results pages and the guide

    subs |= growth_law(results.growth_summary_of(Path(sweeps) / "growth"))

    from learner import __version__

    subs |= {f"provenance_{name.replace('-', '_')}": "\n".join(results.provenance_lines(name, Path(sweeps),
                                                                                       __version__))
             for name in results.PAGES}
    return subs
