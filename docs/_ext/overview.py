"""The results index's overview: the current studies first, each with one sentence of what it found computed from
its records at the build, then the superseded studies, grouped, each with what supersedes it and why
(``docs/sweeps/provenance.json``). :func:`results.build` writes it to ``docs/results/generated/overview.md``,
which ``docs/results/index.md`` includes; the index's table of contents follows :func:`page_order`.
"""

import json
import statistics
from pathlib import Path

import results

#: The current studies in the order the index tells them: the headline question (time against m) and its bounds,
#: the trained heads, the races, then the regimes (budgets, inputs, noise, sharpness) and the mechanisms.
CURRENT_ORDER = ("growth", "bounds", "trained", "race-ten", "race", "frontier-adaptive", "frontier-gaussian", "noise",
                 "sharpness", "yield", "learn-hard", "torch", "bench")


def all_learned_up_to(rows, key):
    """Per method, the largest value of ``rows[key]`` up to which every row of the method learned every layer
    (``successes == runs`` at that value and every smaller one), None where the smallest already missed one."""
    best = {}
    for method in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == method]
        values = sorted({r[key] for r in mine})
        ok = [v for v in values if all(r["successes"] == r["runs"] for r in mine if r[key] <= v)]
        best[method] = max(ok) if ok else None
    return best


def first_to(rows, milestone="1e-08"):
    """Per cell ``(m, d, k)`` of a race's summary rows, the method whose every layer reached ``milestone``, in the
    least median time; None where no method reached it on every layer."""
    cells = {}
    for r in rows:
        ms = r["milestones"][milestone]
        got = cells.setdefault((r["m"], r["d"], r["k"]), [])
        if ms["reached"] == r["runs"]:
            got.append((ms["median_seconds"], r["method"]))
    return {cell: min(got)[1] if got else None for cell, got in sorted(cells.items())}


def _race(sweeps, folder):
    rows = json.loads((sweeps / folder / "summary.json").read_text(encoding="utf-8"))["rows"]
    firsts = list(first_to(rows).values())
    counts = [f"{results.METHOD_NAMES[m]} in {firsts.count(m)}" for m in results.METHOD_NAMES if firsts.count(m)]
    none = f", no method in {firsts.count(None)}" if None in firsts else ""
    return (f"First to a relative error of 1e-8 on every layer of a cell, over {len(firsts)} cells: "
            + ", ".join(counts) + none + ".")


def _bounds(sweeps):
    from learner.study.growth import FRONTIER_BUDGET

    rows, _ = results.budget_rows(sweeps, results.growth_records(sweeps / "growth")[0])
    d = max(r["d"] for r in rows)
    rows = sorted((r for r in rows if r["d"] == d and r["m"] is not None),
                  key=lambda r: list(results.METHOD_NAMES).index(r["method"]))
    said = [f"{results.METHOD_NAMES[r['method']]} m = {r['m']}" + (" (exact)" if r["exact"] else " or more")
            for r in rows]
    return (f"The largest m whose median layer reached a relative error of 1e-3 within {FRONTIER_BUDGET:.0f} s "
            f"on two cores at d = {d}: " + ", ".join(said) + ".")


def _trained(sweeps):
    from learner.study.trained import trained_summary

    t = trained_summary(results._records(sweeps / "trained"))["totals"]
    return (f"{t['meet_all']} of {t['layers']} trained layers meet every condition (norm-matched random layers: "
            f"{t['control_meet_all']}); with m given the learner recovers {t['recovered_m_given']} of them and "
            f"matches the function of {t['matched_m_given']}.")


def _adaptive(sweeps):
    cells = {}
    for folder in ("frontier", "frontier-adaptive"):
        evals = [r for r in results._evals(sweeps / folder) if r["spec"]["method"] == "provable"]
        for c in results._frontier_cells(sweeps / folder, evals):
            if c["median_examples"]:
                cells.setdefault((c["m"], c["k"]), {})[folder] = c["median_examples"]
    ratios = sorted(v["frontier"] / v["frontier-adaptive"] for v in cells.values() if len(v) == 2)
    middle = statistics.median(ratios)
    return (f"Over the {len(ratios)} cells both ran, the fixed budgets drew {middle:.3g} times the data-driven "
            f"budgets' median examples (median over cells; {ratios[0]:.3g}–{ratios[-1]:.3g}).")


def _gaussian(sweeps):
    runs = [r for r in results._evals(sweeps / "frontier-gaussian") if r["spec"]["method"] == "provable"]
    return (f"Under Gaussian inputs the learner learned {sum(bool(r['success']) for r in runs)} of its {len(runs)} "
            "layers (its own criterion).")


def _grid(sweeps, kind):
    from learner.study import grids

    if kind == "noise":
        summary, _ = grids.noise_tables(sweeps / "noise")
        best = all_learned_up_to(summary["rows"], "sigma")
        what = "label noise σ"
    else:
        summary, _ = grids.sharpness_tables(sweeps / "reach-sharpness")
        best = all_learned_up_to(summary["rows"], "logit_scale")
        what = "logit scale"
    return (f"The largest {what} up to which every layer was learned (each method's own criterion): "
            + ", ".join(f"{results.METHOD_NAMES.get(m, m)} {v:g}" if v is not None else
                        f"{results.METHOD_NAMES.get(m, m)} none" for m, v in sorted(best.items(), reverse=True))
            + ".")


def _yield(docs):
    study = json.loads((docs / "yield.json").read_text(encoding="utf-8"))
    measured, predicted = study["fit_measured"]["delta"], study["fit_predicted"]["delta"]
    return (f"Phase 4's yield falls by a factor δ per disagreement: δ = {measured:.2g} fitted to the measured "
            f"yields, {predicted:.2g} to the predicted (the scaling study and the k sweep).")


def _hard(sweeps):
    from lowerbounds.learnhard import summarise_hard

    growth = summarise_hard(results._records(sweeps / "learn-hard"))["growth"]
    m = max(g["m"] for g in growth.values())
    hard, control = growth[f"sq, m={m}"], growth[f"control, m={m}"]
    return (f"At m = {m}, Adam's examples grow like d^{hard['examples_slope']:.2g} on the SQ family and "
            f"d^{control['examples_slope']:.2g} on its control"
            + (" (a fit over cells some run left at its budget)" if hard["censored"] else "") + ".")


def _torch(sweeps):
    rows = [ln for ln in (sweeps / "torch" / "report.md").read_text(encoding="utf-8").splitlines()
            if ln.startswith("| ") and " pass |" in ln]
    passing = [ln for ln in rows if ln.split(" pass |")[0].rsplit("| ", 1)[1].split("/")[0]
               == ln.split(" pass |")[0].rsplit("/", 1)[1]]
    return (f"Default-initialised torch layers meet every condition in {len(passing)} of {len(rows)} settings "
            "(every layer of the setting).")


def _bench(sweeps):
    bench = json.loads((sweeps / "bench" / "parallel.json").read_text(encoding="utf-8"))["parallel"]
    return (f"Two workers certify one stream {bench['speedup']:.2g} times as fast as one process "
            f"({'identical' if bench['identical'] else 'different'} constraints; the pool's start, "
            f"{bench['startup_seconds']:.2g} s, not included).")


def finding(name, docs):
    """One sentence of what the current study ``name`` found, computed from its records."""
    sweeps = Path(docs) / "sweeps"
    table = {"growth": lambda: results.growth_summary_of(sweeps / "growth")["headline"],
             "bounds": lambda: _bounds(sweeps), "trained": lambda: _trained(sweeps),
             "race-ten": lambda: _race(sweeps, "race-ten"), "race": lambda: _race(sweeps, "race"),
             "frontier-adaptive": lambda: _adaptive(sweeps), "frontier-gaussian": lambda: _gaussian(sweeps),
             "noise": lambda: _grid(sweeps, "noise"), "sharpness": lambda: _grid(sweeps, "sharpness"),
             "yield": lambda: _yield(Path(docs)), "learn-hard": lambda: _hard(sweeps), "torch": lambda: _torch(sweeps),
             "bench": lambda: _bench(sweeps)}
    return table[name]()


def page_order(sweeps):
    """The results pages in the index's order: :data:`CURRENT_ORDER`, then the superseded ones in
    :data:`results.PAGES`' order. A page neither current in that list nor superseded is a ValueError."""
    studies = json.loads((Path(sweeps) / "provenance.json").read_text(encoding="utf-8"))["studies"]
    superseded = [p for p in results.PAGES if studies[p]["superseded_by"]]
    current = [p for p in results.PAGES if not studies[p]["superseded_by"]]
    if sorted(current) != sorted(CURRENT_ORDER):
        raise ValueError(f"overview.CURRENT_ORDER {sorted(CURRENT_ORDER)} must list the current studies "
                         f"{sorted(current)}")
    return list(CURRENT_ORDER) + superseded


def overview_lines(docs, titles):
    """The overview's Markdown lines; ``titles`` maps a page to its title."""
    sweeps = Path(docs) / "sweeps"
    studies = json.loads((sweeps / "provenance.json").read_text(encoding="utf-8"))["studies"]
    order = page_order(sweeps)
    lines = ["## Current studies", ""]
    for page in CURRENT_ORDER:
        lines.append(f"- **{{doc}}`{titles[page]} </results/generated/{page}>`**: {finding(page, docs)}")
    lines += ["", "## Superseded studies", "",
              "Kept for comparison: later studies measure their questions with the current learner.", ""]
    for page in order[len(CURRENT_ORDER):]:
        later = " and ".join(f"{{doc}}`/results/generated/{p}`" for p in studies[page]["superseded_by"])
        lines.append(f"- {{doc}}`{titles[page]} </results/generated/{page}>`, superseded by {later}: "
                     f"{studies[page]['why']}.")
    return lines
