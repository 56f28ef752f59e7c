"""Results pages built at documentation-build time from the records in ``docs/sweeps/``.

Each page's tables and figures are computed from the run records by the toolkit's own readers and
summarisers — the same functions the studies' ``--summarise-only`` runs — so a page cannot disagree with its
records: :func:`learner.sweep.records.read_record` (kind and schema checked), then
:func:`learner.study.scaling.summarise` and :func:`~learner.study.scaling.plot_scaling`, the frontier's
:func:`~learner.study.frontier.frontier_cells`, :func:`~learner.study.peers.peer_rows`,
:func:`lowerbounds.learnhard.summarise_hard`, and the yield study's records. The pages are written into
``docs/results/generated/`` (git-ignored), each file only when its content changes.

Every page opens with its provenance: the learner versions counted from its records, when and at which commit
they were committed, and, from ``docs/sweeps/provenance.json``, whether a later study supersedes it (then a
warning box links to the current one).
"""

import dataclasses
import functools
import json
import logging
import math
import time
from pathlib import Path

log = logging.getLogger(__name__)

SCALING = {  # folder -> (title, what the study asked)
    "main": ("Run time against m: the learner and Adam",
             "How the learner's time and examples grow with the number of heads m (k = 2, logit scale 1, d from "
             "`sound_d`), against Adam on the same planted layers."),
    "ksweep": ("The k sweep: the learner at m = 2 and 3, k = 3, 4, 5",
               "How the learner's cost grows with the number of tokens k (learner only)."),
    "m5-parallel": ("Five heads on two cores",
                    "The learner at m = 5 with its example phases on a local pool of two workers."),
    "frontier-adaptive": ("The frontier with budgets set by the data",
                          "The frontier's fifteen cells rerun with the learner's data-driven budgets: "
                          "its examples and time against the same cells with fixed budgets, on the same planted "
                          "layers, and against Adam."),
    "frontier-reach": ("The frontier to ten heads on two cores",
                       "The learner at k = 2 from m = 1 to 10 (d = 12, 16, 20, 24), one run at a time on the 2-core "
                       "machine with its batches, its search's starts and its refinement's products on two workers: "
                       "how its time and examples grow with m where the settings allow m = 10."),
    "frontier-gaussian": ("The frontier under Gaussian inputs",
                          "The frontier's k = 2 column (m = 1..6) and m = 2 at k = 3..5 with standard Gaussian "
                          "inputs (the paper's stated extension), the learner and Adam on the same planted layers; "
                          "the Boolean frontier's cells beside them."),
}


#: Every results page :func:`build` writes (``docs/sweeps/provenance.json`` has an entry for each).
PAGES = ("main", "ksweep", "m5-parallel", "frontier", "frontier-adaptive", "frontier-reach", "frontier-gaussian",
         "noise", "sharpness", "peers", "race", "race-ten", "growth", "bounds", "trained", "learn-hard", "yield",
         "bench", "blas", "reach", "torch")
#: The folder of ``docs/sweeps`` whose records a page is built from, where its name differs from the page's.
FOLDERS = {"sharpness": "reach-sharpness", "bounds": "growth"}


def record_versions(folder):
    """``{learner version: number of JSON records under folder that carry it}``, most records first; a study's
    ``summary.json`` is computed from its records, not one of them, and is not counted."""
    counts = {}
    for path in sorted(Path(folder).rglob("*.json")):
        if path.name == "summary.json":
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        version = record.get("versions", {}).get("learner") if isinstance(record, dict) else None
        if isinstance(version, str):
            counts[version] = counts.get(version, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def provenance_lines(name, sweeps, current):
    """The provenance of study ``name``'s records: their learner versions, when they were committed, and a box
    naming the current study when a later one supersedes it, or saying that they are of the fixed-budget learner.
    ``current`` is the toolkit's version. The lines open the study's results page and, through the MyST
    substitution ``provenance_<name>`` (``docs/_ext/figures.py``), the guide's account of the study."""
    studies = json.loads((sweeps / "provenance.json").read_text(encoding="utf-8"))["studies"]
    if name not in studies:
        raise ValueError(f"docs/sweeps/provenance.json has no entry for the results page {name!r}")
    entry = studies[name]
    folder = sweeps / FOLDERS.get(name, name)
    versions = record_versions(folder) if folder.is_dir() else {}
    made = (", ".join(f"{v} ({n} record{'s' * (n != 1)})" for v, n in versions.items())
            or "not in these files (each section below names the studies whose records it reads)")
    lines = [f"*Provenance.* Records in `docs/sweeps/{folder.name}/`, committed on {entry['committed']} (commit "
             f"{entry['commit']}); learner version of the records: {made}; budgets: {entry['budgets']}. This site "
             f"documents version {current}.", ""]
    later = entry["superseded_by"]
    if not later and entry["budgets"] == "fixed budgets":
        lines[-1:-1] = ["", ":::{note}", "These records were made by the learner with fixed budgets, before its "
                        "data-driven budgets; no later study measures this question, so its times and example "
                        f"counts are that learner's ({entry['why']}).", ":::"]
    if later:
        links = " and ".join(f"{{doc}}`/results/generated/{p}`" for p in later)
        lines[-1:-1] = ["", ":::{warning}", f"**Superseded.** These records were made by an earlier learner; the "
                        f"current figures are on {links} ({entry['why']}). They are kept for comparison.", ":::"]
    return lines


def _records(folder):
    from learner.sweep.records import read_record

    return [read_record(p) for p in sorted((folder / "runs").glob("*.json"))]


def _image(path, alt):
    """The MyST directive that shows the PNG ``path`` at its own width in pixels (at most the column's, by the
    site's CSS; never enlarged), with Sphinx's link to the full-size image, which its caption points to."""
    with open(path, "rb") as fh:
        header = fh.read(24)
    if header[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    width = int.from_bytes(header[16:20], "big")
    return (f"```{{figure}} {Path(path).name}\n:alt: {alt}\n:width: {width}px\n\n"
            f"{alt[0].upper()}{alt[1:]} ({width} px wide: select it for the full-size image).\n```")


def _figure(write, path):
    """Write a PNG through ``write(path)`` with matplotlib's Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    write(path)
    return path.name


def _header(title, folder, question, sweeps, extra=""):
    rel = folder.relative_to(sweeps.parent.parent)
    readme = folder / "README.md"
    how = (f"How the records were made, by whom and on which machine: `{rel}/README.md` "
           "(shown at the end of this page).") if readme.exists() else ""
    return [f"# {title}", "", question, "",
            f"Computed at this site's build from the {{abbr}}`records (one JSON file per run)` in `{rel}/`. "
            "The study's design, the planted instances and every threshold are ours; the paper reports no "
            f"experiments. {how}", "", extra]


def _readme(folder):
    readme = folder / "README.md"
    if not readme.exists():
        return []
    text = readme.read_text()
    lines = []
    for ln in text.splitlines():  # its headings below the page's own
        lines.append("#" + ln if ln.startswith("#") else ln)
    return ["", "## Notes kept with the records", "", *lines]


def _paragraphs(text):
    """A study's plain-text table output as Markdown: its lines of prose become paragraphs of their own (a
    single newline would join them), table rows stay together."""
    out = []
    for line in text.splitlines():
        if out and line.strip() and not line.startswith("|") and out[-1].strip():
            out.append("")
        elif out and line.startswith("|") and out[-1].strip() and not out[-1].startswith("|"):
            out.append("")
        out.append(line)
    return "\n".join(out)


def _tuning(tuning):
    """Adam's tuning as the study holds it in memory: JSON made the learning rates' keys strings."""
    if not tuning:
        return tuning
    chosen = {cell: c | {"median_val_relative_error": {float(lr): v for lr, v in
                                                      c.get("median_val_relative_error", {}).items()}}
              for cell, c in tuning.get("chosen", {}).items()}
    return tuning | {"chosen": chosen}


def scaling_page(name, folder, out, sweeps):
    from learner.study.scaling import SweepResult, plot_scaling, summarise

    records = _records(folder)
    evals = [r for r in records if r["spec"]["role"] == "eval"]
    committed = json.loads((folder / "summary.json").read_text())
    tol = committed.get("success_tol", 1e-3)
    summary = summarise(evals, success_tol=tol) | {"tuning": _tuning(committed.get("tuning"))}
    study = json.loads((folder / "study.json").read_text()) if (folder / "study.json").exists() else {}
    params = study.get("parameters") or committed.get("parameters", {})
    if params.get("grid") is not None:
        from learner.study.frontier import fits_of, frontier_cells, plot_frontier

        rules = {tuple(c[:3]): c[3] for c in params["cell_seeds"]}
        cells = frontier_cells(evals, success_tol=tol, seed_rules=rules)
        summary |= {"frontier": cells, "fits": fits_of(cells)}
    table = _paragraphs(SweepResult(evals, summary, {}, {}).table())
    figures = [_figure(lambda p: plot_scaling(evals, p, success_tol=tol), out / f"{name}.png")]
    if "frontier" in summary:
        figures.append(_figure(lambda p: plot_frontier(summary["frontier"], p), out / f"{name}-frontier.png"))
    title, question = SCALING.get(name, ("The frontier over heads and tokens",
                                         "Where the learner and Adam succeed, and what they cost, over a grid of "
                                         "(m, k) cells."))
    tuning = len(records) - len(evals)
    lines = _header(title, folder, question, sweeps,
                    f"{len(evals)} measured runs" + (f" ({tuning} more tuned Adam's learning rate)" if tuning else "")
                    + f"; success means relative error ≤ {tol:g} against the planted layer.")
    lines += ["", "## Tables", "", table, "", "## Figures", ""]
    lines += [_image(out / f, title) + "\n" for f in figures]
    return lines + _readme(folder)


def _evals(folder, layers=None):
    """The measured runs in ``folder``, only those of the planted layers ``layers`` (seed indices) if given."""
    return [r for r in _records(folder) if r["spec"]["role"] == "eval"
            and (layers is None or r["spec"]["seed_index"] in layers)]


def _frontier_cells(folder, evals):
    from learner.study.frontier import frontier_cells

    tol = json.loads((folder / "summary.json").read_text()).get("success_tol", 1e-3)
    return frontier_cells(evals, success_tol=tol)


def distributions_section(sweeps):
    """The Gaussian frontier's cells beside the Boolean frontier's, on the same planted layers."""
    from learner.study.frontier import side_by_side

    gaussian = _evals(sweeps / "frontier-gaussian")
    layers = {r["spec"]["seed_index"] for r in gaussian}
    boolean = _evals(sweeps / "frontier", layers)
    table = side_by_side({"Boolean": _frontier_cells(sweeps / "frontier", boolean),
                          "Gaussian": _frontier_cells(sweeps / "frontier-gaussian", gaussian)})
    return ["", "## Beside the Boolean frontier", "",
            f"The cells both studies ran, on the same planted layers (layers {', '.join(map(str, sorted(layers)))} "
            "of each cell: a run's layer depends on its cell and index, not on the input distribution), from "
            "both folders' records (`docs/sweeps/frontier`, `docs/sweeps/frontier-gaussian`). The two studies "
            "ran on different days under different loads: compare successes and examples across them; the "
            "time ratio carries the difference in load (see the README below).", "", table, ""]


def budgets_section(sweeps):
    """The data-driven frontier's learner cells beside the fixed-budget frontier's, on the same planted layers."""
    from learner.study.frontier import budgets_table

    adaptive = _evals(sweeps / "frontier-adaptive")
    layers = {r["spec"]["seed_index"] for r in adaptive if r["spec"]["method"] == "provable"}
    fixed = _evals(sweeps / "frontier", layers)
    table = budgets_table(_frontier_cells(sweeps / "frontier", fixed),
                          _frontier_cells(sweeps / "frontier-adaptive", adaptive))
    return ["", "## Beside the fixed budgets", "",
            "The learner's cells of both studies on the same planted layers and example streams (a run's layer and "
            "oracle depend on its cell and index only), from `docs/sweeps/frontier` (fixed budgets, "
            "`LearnConfig(**FIXED_BUDGETS)`'s learner) and `docs/sweeps/frontier-adaptive`. Adam's records in the "
            "second folder are the first study's, copied so that the study resumed them (Adam's code did not "
            "change; its times are of that sitting and its load, see the README below). The fixed-budget study "
            "ran its larger cells on 3 layers, this one on 10: where the fixed study has 3, only those 3 are "
            "compared.", "", table, ""]


def grid_page(kind, folder, out, sweeps):
    """The noise study's or the sharpness map's page, from the records of its folders."""
    from learner.study import grids

    if kind == "noise":
        summary, lines = grids.noise_tables(folder)
        fig = _figure(lambda p: grids.plot_noise(summary["rows"], p), out / "noise.png")
        title, question = ("Label noise", "The learner and Adam on labels with additive Gaussian noise of standard "
                           "deviation σ, on the same layers, inputs and noise draws at every σ: parameter and "
                           "relative error against σ, and where each method stops succeeding.")
    else:
        summary, lines = grids.sharpness_tables(folder)
        fig = _figure(lambda p: grids.plot_sharpness(summary["rows"], p), out / "sharpness.png")
        title, question = ("Sharp attention: the map in logit scale", "Which layers of logit scale 0.5 to 8 the "
                           "learner and Adam learn at m = 2, d = 8, 12, 16, k = 2, 3 (Boolean inputs).")
    runs = sum(r["runs"] for r in summary["rows"])
    head = _header(title, folder, question, sweeps, f"{runs} measured runs; success is each method's own criterion.")
    return head + ["", "## Tables", "", *lines, "", "## Figure", "",
                   _image(out / fig, title), ""] + _readme(folder)


def peers_page(folder, out, sweeps):
    from learner.study.peers import peer_rows, peer_table

    records = [r for r in _records(folder) if r["spec"]["role"] == "eval"]
    rows = peer_rows(records)
    lines = _header("The learner, numpy Adam and torch Adam side by side", folder,
                    "The paper's learner and two gradient baselines (full-batch numpy Adam, mini-batch torch Adam "
                    "with a cosine schedule) on the same planted layers: time to relative error 1e-3 and 1e-8.",
                    sweeps, f"{len(records)} runs.")
    return lines + ["", "## Table", "", peer_table(rows)] + _readme(folder)


RACES = {  # folder -> its page's title
    "race": "The race: the learner, numpy Adam and torch Adam on the frontier's cells",
    "race-ten": "The race to ten heads: the learner, numpy Adam and torch Adam at m = 7 to 10",
}


def race_page(folder, out, sweeps):
    """A race's page (:data:`RACES`): its tables and figure, summarised again from its records' summary."""
    from learner.study.peers import _race_rows, plot_race, race_table, search_rows

    summary = json.loads((folder / "summary.json").read_text())  # the search's rows and the sitting's concurrency
    rows = _race_rows([r for r in _records(folder) if r["spec"]["role"] == "eval"])
    fig = _figure(lambda p: plot_race(rows, p, summary.get("search")), out / f"{folder.name}.png")
    lines = _header(RACES[folder.name], folder,
                    "Time and examples to a relative error of 1e-3 and 1e-8 per cell, each Adam's learning rate "
                    "tuned per cell, every method on the same planted layers and oracles.", sweeps)
    lines += ["## Tables", "", race_table(rows), "", summary["note"] + " One thread per method, "
              + summary["concurrency"] + "."]
    if summary.get("search"):
        lines += ["", "### The fewest examples", "", search_rows(summary["search"])]
    return lines + ["", "## Figure", "", _image(out / fig, "the race")] + _readme(folder)


def growth_records(folder):
    """The growth study's run records by line (each line's ``runs/``) and its pricing records (``pricing/``), read
    and checked by :func:`learner.sweep.records.read_record`."""
    from learner.study.growth import GROWTH_LINES
    from learner.study.pricing import PRICING_KIND
    from learner.sweep.records import read_record

    lines = {name: _records(folder / name) for name in GROWTH_LINES if (folder / name / "runs").is_dir()}
    prices = [read_record(p, kind=PRICING_KIND) for p in sorted((folder / "pricing").glob("*.json"))]
    return lines, prices


@functools.lru_cache(maxsize=2)
def growth_summary_of(folder):
    """The growth study's summary, computed again from its records with the study's seed and resamples (once per
    build: the results page and the pages' substitutions share it)."""
    from learner.study.growth import growth_summary

    stored = json.loads((folder / "growth.json").read_text())
    lines, prices = growth_records(folder)
    return growth_summary(lines, success_tol=stored["success_tol"], resamples=stored["resamples"], prices=prices)


def growth_yield_section(folder):
    """Phase 4's yield on the growth study's layers: the slice model (``theory.predicted_yield(density="slice")``,
    which simulates nothing of the learner) against the learner's own yield and against its certification rule
    simulated with the true ΣW, per cell, from ``yield-slice*.json`` (``python -m theory yield-study``: one record
    per sitting, each of the study's lines in one of them)."""
    from learner.sweep.records import read_record
    from learner.tables import markdown_table

    paths = sorted(folder.glob("yield-slice*.json"))
    if not paths:
        return []
    recs = [read_record(path, kind="yield-study") for path in paths]
    densities = sorted({str(rec.get("density")) for rec in recs})
    if len(densities) != 1:
        raise ValueError(f"the yield records in {folder} use different densities: {densities}")
    cells = {}
    for rec in recs:
        for r in rec["runs"]:
            if r.get("predicted_model") and r.get("measured"):
                cells.setdefault((r["d"], r["m"]), []).append(r)

    def gmean(values):
        return math.exp(sum(math.log(v) for v in values) / len(values))

    rows, worst = [], 1.0
    for (d, m), runs in sorted(cells.items()):
        learner = [r["measured"] / r["predicted_model"] for r in runs]
        rule = [r["predicted_simulated"] / r["predicted_model"] for r in runs if r.get("predicted_simulated")]
        # phase 4's examples: the learner's to its target against the target at the model's yield
        examples = [r["examples_measured"] / (r["target"] / (r["predicted_model"] / 1000)) for r in runs
                    if r.get("examples_measured") and r.get("target")]
        if m >= 7:
            worst = max([worst, *[max(v, 1 / v) for v in learner + rule + examples]])
        rows.append([d, m, len(runs), f"{gmean([r['predicted_model'] for r in runs]):.3g}",
                     f"{gmean([r['measured'] for r in runs]):.3g}",
                     f"{gmean(learner):.2f} ({min(learner):.2f}–{max(learner):.2f})",
                     f"{gmean(rule):.2f} ({min(rule):.2f}–{max(rule):.2f})" if rule else "–",
                     f"{gmean(examples):.2f} ({min(examples):.2f}–{max(examples):.2f})" if examples else "–"])
    verdict = (f"At m ≥ 7 every layer's model is within {worst:.2f}× of the learner's yield, of the simulated rule "
               f"and of the learner's phase-4 examples, inside the 3× asked of it." if worst <= 3 else
               f"At m ≥ 7 some layer's model misses by {worst:.2f}×, more than the 3× asked of it.")
    return ["## Phase 4's yield, predicted", "",
            f"Certified constraints per 1000 examples at the study's tolerance, predicted for each learned layer by "
            f"the slice model (density `{densities[0]}`, ours: the window's probability under the law of the "
            "logit disagreements given the row token and each other token's distance to it; it simulates nothing "
            "of the learner) against the learner's own yield and against the certification rule simulated with "
            "the true ΣW on a million examples (`python -m theory yield-study <line folders> --density slice "
            "--n-simulate 1000000 --max-seconds 0 --json <record>`; the records "
            f"{', '.join(f'`{p.name}`' for p in paths)}, each command in the records' README). "
            "Ratios are geometric means over the cell's layers, with their "
            "range; the model's phase-4 examples are the run's target of constraints at the model's yield.", "",
            markdown_table(["d", "m", "layers", "model", "learner", "learner / model", "simulated rule / model",
                            "phase-4 examples: learner / model"],
                           rows), "", verdict, ""]


def growth_page(folder, out, sweeps):
    """The growth study's page: the law stated from the records, the growth table, the priced phase 6, the cells
    and the figure."""
    from learner.study.growth import plot_growth, summary_markdown

    summary = growth_summary_of(folder)
    fig = _figure(lambda p: plot_growth(summary, p), out / "growth.png")
    body = summary_markdown(summary).splitlines()[1:]  # its own title gives way to the page's
    lines = _header("Run time against m at fixed (d, k)", folder,
                    "How the learner's time and examples grow with the number of heads m when nothing else changes: "
                    "d and k fixed per line, phase 4's tolerance and phase 6's search fixed in every cell; per "
                    "phase; the growth's shape chosen out of sample, with intervals; and the paper's own phase 6 "
                    "priced beside ours.", sweeps)
    return (lines + ["## The law, and the tables", *body, "", *growth_yield_section(folder), "## Figure", "",
                     _image(out / fig, "run time and examples against m per phase")]
            + _readme(folder))


def _growth_cells(folder):
    """``{d: {m: (median examples, median seconds)}}`` over the growth study's lines at k = 2."""
    from learner.study.growth import _cell_rows

    lines, _ = growth_records(folder)
    cells = {}
    for name, records in lines.items():
        if name in ("k", "exhaustive"):
            continue
        for c in _cell_rows(records, 1e-3):
            if c["k"] == 2 and c["successes"]:
                cells.setdefault(c["d"], {})[c["m"]] = (c["median_examples"], c["median_seconds"])
    return cells


def bounds_page(sweeps, out):
    """The upper and the lower side against m: the learner on random layers at fixed d (the growth study), the
    counting limit and the gradient baselines' fewest examples (the race's search), beside the SQ family's
    correlational queries and the LWE-style family's attacks (``docs/sweeps/growth/lower/``)."""
    from learner.tables import markdown_table

    folder = sweeps / "growth"
    cells = _growth_cells(folder)
    lower = folder / "lower"
    sq = json.loads((lower / "sq.json").read_text())["runs"]
    lwe = json.loads((lower / "lwe.json").read_text())
    race = json.loads((sweeps / "race" / "summary.json").read_text())
    fewest = {}
    for r in race["search"]:
        if r["k"] == 2 and r["min_examples"] is not None:
            key = (r["m"], r["d"])
            fewest.setdefault(key, {})[r["method"]] = r["min_examples"]
    ds = sorted(cells)
    ms = sorted({m for d in ds for m in cells[d]})

    def limit(m, d):  # 2md²/(kd) at k = 2: parameters over the numbers one example's labels carry
        return 2 * m * d * d / (2 * d)

    lines = _header("Upper and lower bounds against m", folder,
                    "What learning costs as the number of heads m grows: on random layers, the paper's learner "
                    "(its upper bound is the paper's; the study ours) and the counting limit; on the hard families "
                    "behind the paper's lower bounds (the families ours), what correlational statistical queries "
                    "and lattice-style attackers pay.", sweeps)
    lines += ["## The upper side: random layers", "",
              "Median examples and seconds per learned layer at fixed d, k = 2 (the growth study, "
              "{doc}`/results/generated/growth`), and the counting limit 2md²/(kd): the parameters over the "
              "numbers one example's labels carry, below which no method can pin the layer down.", "",
              markdown_table(["m", *[f"d = {d}: examples" for d in ds], *[f"d = {d}: seconds" for d in ds],
                              *[f"limit at d = {d}" for d in ds]],
                             [[m, *[f"{cells[d][m][0]:,.0f}" if m in cells[d] else "–" for d in ds],
                               *[f"{cells[d][m][1]:.3g}" if m in cells[d] else "–" for d in ds],
                               *[f"{limit(m, d):.0f}" for d in ds]] for m in ms]), "",
              "The gradient baselines' fewest examples to a relative error of 1e-8 (the race's search, "
              "{doc}`/results/generated/race`; its cells' d is the smallest sound one, not fixed):", "",
              markdown_table(["m", "d", "the learner", "numpy Adam", "torch Adam"],
                             [[m, d, f"{v.get('provable', 0):,}", f"{v['adam']:,}" if "adam" in v else "–",
                               f"{v['torch-adam']:,}" if "torch-adam" in v else "–"]
                              for (m, d), v in sorted(fewest.items())]), ""]
    lines += _budget_section(sweeps, lines_records=growth_records(folder)[0])
    hard, control = sq["hard"], sq["control"]
    sq_ds = sorted(hard["ds"])
    by = {(c["d"], c["m"]): c for c in hard["cells"]}
    cb = {(c["d"], c["m"]): c for c in control["cells"]}
    lines += ["## The lower side: the SQ family", "",
              f"Median correlational queries to find the hidden subset (`python -m lowerbounds sq-simulate`, "
              f"tolerance {hard['tolerance']}, {hard['adversary']} adversary, {hard['cells'][0]['trials']} hidden "
              "subsets per cell), against the candidates C(d − 1, m − 1), and on the sparse-linear control with "
              "the same heads and subset (which must stay cheap):", "",
              markdown_table(["m", *[f"d = {d}: hard" for d in sq_ds], *[f"d = {d}: C(d−1, m−1)" for d in sq_ds],
                              *[f"d = {d}: control" for d in sq_ds]],
                             [[m, *[f"{by[(d, m)]['median']:,.0f}" for d in sq_ds],
                               *[f"{math.comb(d - 1, m - 1):,}" for d in sq_ds],
                               *[f"{cb[(d, m)]['median']:,.0f}" for d in sq_ds]] for m in sorted(hard["ms"])]), ""]
    attacks = lwe["runs"]
    rows = []
    for name, run in attacks.items():
        for r in run["rows"]:
            rows.append([name, r["n"], r["m_typical"], f"{r['median_seconds']:.3g}",
                         f"{r['successes']}/{r['repeats']}"])
    lines += ["## The lower side: the LWE-style family", "",
              f"Attacks on one-bit learning with rounding, q = {lwe['q']}, median of {lwe['repeats']} fresh secrets "
              "per n (`python -m lowerbounds lwe-attack`); a typical secret needs m ≈ n heads. Linear algebra "
              "solves only the unrounded variant (its control).", "",
              markdown_table(["attack", "n", "heads m (typical)", "median s", "solved"], rows), "",
              "The lattice cost model (ours: primal uSVP, an assumption for binary public vectors), "
              "log₂ of the core-SVP cost:", "",
              markdown_table(["n", "log₂ core-SVP", "log₂ qⁿ"],
                             [[c["n"], "–" if c.get("log2_core_svp") is None else f"{c['log2_core_svp']:.1f}",
                               f"{c['n'] * math.log2(lwe['q']):.1f}"] for c in lwe["cost_table"]]), ""]
    fig = _figure(lambda p: _plot_bounds(cells, fewest, hard, control, attacks, p), out / "bounds.png")
    lines += ["## Figure", "", _image(out / fig, "upper and lower bounds against m")]
    return lines


def _budget_section(sweeps, lines_records):
    """The budgeted frontier: the learner from the growth study's lines, the two Adams from the races' records."""
    from learner.study.growth import FRONTIER_BUDGET, frontier_markdown

    rows, walk = budget_rows(sweeps, lines_records)
    walk_folder = sweeps / "growth" / "budget"
    return ["## The budgeted frontier", "",
            f"The largest m whose median layer reached a relative error of 1e-3 within {FRONTIER_BUDGET:.0f} s on "
            "the two-core machine (`learner.study.growth.budgeted_frontier`; in brackets that cell's median seconds "
            "and its layers within the budget). The learner's cells are the growth study's, whose lines stop at the "
            "largest m the learner calls sound at their d (beyond it the learner refuses before its first example). "
            + ("The two Adams' are the budget walk's (`python -m learner budget`, `docs/sweeps/growth/budget/`: each "
               "run stopped at the budget, the walk capped at the learner's sound m) where it walked that d, and the "
               "races' otherwise " if walk else "The two Adams' are the races' ")
            + "({doc}`/results/generated/race`, {doc}`/results/generated/race-ten`: cells at the smallest sound d of "
            "each m, runs without a time limit). ≥ marks a lower bound: no larger m was measured; \"not measured\": "
            "no records at that d (the budget walk, `python -m learner budget`, measures them).",
            "", frontier_markdown(rows, METHOD_NAMES), "", *_walk_notes(walk_folder)]


#: How the results pages name the methods of the records.
METHOD_NAMES = {"provable": "the learner", "adam": "numpy Adam", "torch-adam": "torch Adam"}


def budget_rows(sweeps, lines_records):
    """The budgeted frontier's rows (:func:`learner.study.growth.budgeted_frontier` at d = 16, 24, 32): the learner
    from the growth study's lines, each Adam from the budget walk where it walked a d and from the races
    otherwise; and the walk's records."""
    from learner.study.growth import budgeted_frontier

    learner = [r for name, recs in lines_records.items() if name in ("d16", "d24", "d32") for r in recs]
    walk_folder = sweeps / "growth" / "budget"
    walk = _evals(walk_folder) if (walk_folder / "runs").is_dir() else []
    walked = {(r["spec"]["method"], r["spec"]["d"]) for r in walk}
    races = [r for folder in ("race", "race-ten") for r in _evals(sweeps / folder)
             if r["spec"]["method"] != "provable" and (r["spec"]["method"], r["spec"]["d"]) not in walked]
    return budgeted_frontier(learner + races + walk, ds=(16, 24, 32)), walk


def _walk_notes(folder):
    """The budget walk's README below the frontier table, its headings two levels down (none without one)."""
    readme = folder / "README.md"
    if not readme.exists():
        return []
    return [("##" + ln if ln.startswith("#") else ln) for ln in readme.read_text(encoding="utf-8").splitlines()] + [""]


def _log_panel(ax, xlabel, ylabel, title):
    """A panel of the bounds figure: log scale, labels, title, grid, and the legend to its right, off the data."""
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)


def _plot_bounds(cells, fewest, hard, control, attacks, path):
    import matplotlib.pyplot as plt

    from learner.io import save_figure

    fig, axes = plt.subplots(3, 1, figsize=(10, 11.5))  # one under another: readable at the page's width
    ax = axes[0]
    for i, d in enumerate(sorted(cells)):
        ms = sorted(cells[d])
        ax.plot(ms, [cells[d][m][0] for m in ms], marker="o", color=f"C{i}", label=f"learner, d = {d}")
        ax.plot(ms, [m * d for m in ms], ls=":", color=f"C{i}", label=f"counting limit, d = {d}")
    adam = sorted((m, min(v.get("adam") or math.inf, v.get("torch-adam") or math.inf)) for (m, _), v in fewest.items())
    best = {}
    for m, v in adam:
        best[m] = min(best.get(m, math.inf), v)
    ax.plot(list(best), list(best.values()), marker="s", color="grey", label="the better Adam's fewest (race)")
    _log_panel(ax, "heads m", "examples", "upper side: random layers, k = 2")
    ax = axes[1]
    for i, d in enumerate(sorted(hard["ds"])):
        mine = sorted((c for c in hard["cells"] if c["d"] == d), key=lambda c: c["m"])
        ctl = sorted((c for c in control["cells"] if c["d"] == d), key=lambda c: c["m"])
        ax.plot([c["m"] for c in mine], [c["median"] for c in mine], marker="o", color=f"C{i}",
                label=f"SQ family, d = {d}")
        ax.plot([c["m"] for c in ctl], [c["median"] for c in ctl], marker="x", ls="--", color=f"C{i}",
                label=f"control, d = {d}")
    _log_panel(ax, "heads m", "median correlational queries", "lower side: the SQ family")
    ax = axes[2]
    for i, (name, run) in enumerate((n, r) for n, r in attacks.items() if n != "linear"):  # linear: a control
        rows = sorted(run["rows"], key=lambda r: r["m_typical"])
        ax.plot([r["m_typical"] for r in rows], [r["median_seconds"] for r in rows], marker="o", color=f"C{i}",
                label=f"{name} attack")
    _log_panel(ax, "heads m (typical secret)", "median seconds",
               "lower side: the LWE-style family, measured attacks on rounded labels")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _share(part, whole):
    return f"{part} of {whole}" + (f" ({100 * part / whole:.0f} %)" if whole else "")


def trained_reading(summary):
    """The trained study's answer in words, every figure from ``summary``
    (:func:`learner.study.trained.trained_summary`) and every verdict worded by which way the records went; the
    reading is ours."""
    from scipy.stats import fisher_exact

    t, by = summary["totals"], summary["recovery_by_conditions"]
    meet, fail = by["meet_all"], by["fail_some"]
    lines = [f"**The answer.** {_share(t['meet_all'], t['layers'])} trained layers meet every condition of the "
             f"report at the end of training, against {_share(t['control_meet_all'], t['layers'])} random layers "
             "with the same norms per head. The learner recovers "
             f"{_share(t['recovered_m_given'], t['layers'])} with m given and "
             f"{_share(t['recovered_m_unknown'], t['layers'])} with m unknown (relative error at most 1e-8 against "
             f"the trained layer); with m given it matches the function of "
             f"{_share(t['matched_m_given'], t['layers'])}, counting the runs that matched F but declined success "
             "because the learned parameters break the paper's conditions (status `assumptions`: F is learned, "
             "the heads are not identified). torch Adam reaches 1e-3 on "
             f"{_share(t['adam_success'], t['layers'])}. Of the "
             f"learner's {t['learner_runs']} runs, {t['wrong_successes']} claimed a success that missed the layer and "
             f"{t['late_refusals']} refused its setting after drawing examples.", ""]
    more = "fewer" if t["meet_all"] < t["control_meet_all"] else "as many or more"
    reading = [f"*Our reading.* Training leaves {more} layers meeting every condition than directions drawn at "
               "random with the same norms"]
    if meet["layers"] and fail["layers"]:
        table = [[meet["recovered_m_given"], meet["layers"] - meet["recovered_m_given"]],
                 [fail["recovered_m_given"], fail["layers"] - fail["recovered_m_given"]]]
        p = fisher_exact(table).pvalue
        a, b = meet["recovered_m_given"] / meet["layers"], fail["recovered_m_given"] / fail["layers"]
        way = ("more often" if a > b else "less often" if a < b else "as often")
        tested = ("a difference Fisher's exact test finds at p = " f"{p:.2g}" + (" (below 0.05)" if p < 0.05 else
                  " (not below 0.05: these layers do not show the conditions separating recovered from unrecovered "
                  "layers)"))
        reading.append(f". The learner (m given) recovers the layers that meet every condition {way} than those "
                       f"that fail one: {_share(meet['recovered_m_given'], meet['layers'])} against "
                       f"{_share(fail['recovered_m_given'], fail['layers'])}, {tested}.")
    else:
        side = "meets every condition" if meet["layers"] else "fails at least one condition"
        reading.append(f"; every trained layer here {side}, so the records cannot say whether the conditions "
                       "separate the layers the learner recovers from those it does not.")
    tasks = sorted({c["task"] for c in summary.get("cells", []) if c["meet_all"]})
    if len(tasks) == 1 and fail["layers"]:
        reading.append(f" Every layer that meets every condition here is a {tasks[0]} layer, so the task and the "
                       "conditions go together in these records: they cannot tell which of the two the learner's "
                       "recoveries follow.")
    lines.append("".join(reading) + " The conditions are the talk's, their quantities and thresholds ours "
                 "({ref}`guide-assumptions`); a layer that fails one is outside what our reading of the theorem "
                 "covers, not a layer the learner must fail on.")
    return lines


def trained_page(folder, out, sweeps):
    """The trained-heads study's page: the answer and our reading, the cells, the condition table with margins, the
    conditions through training (figure), and the learner's failures by phase and broken condition."""
    from learner.study.trained import plot_trained, trained_markdown, trained_summary

    summary = trained_summary(_records(folder))
    fig = _figure(lambda p: plot_trained(summary, p), out / "trained.png")
    lines = _header("Trained heads and the paper's conditions", folder,
                    "Do attention layers that torch Adam trains on tasks (a teacher layer, copying, majority, match "
                    "and retrieve, sparse parity) meet the paper's non-degeneracy conditions, and does the learner "
                    "recover them from their own examples? The tasks, the settings, the training recipe and the "
                    "norm-matched control are ours; the paper trains nothing.", sweeps)
    body = trained_markdown(summary).split("\n\n")  # the cells, the totals (the answer says them), the rest
    rest = [line for part in body[2:] for line in (part, "")]
    return (lines + [*trained_reading(summary), "", "## Per task and setting", "", body[0], "", *rest,
                     "## The conditions through training", "",
                     _image(out / fig, "the share of trained layers meeting each condition per training step, "
                            "per task")] + _readme(folder))


def learn_hard_page(folder, out, sweeps):
    from lowerbounds.learnhard import HardStudyResult, plot_hard, summarise_hard

    records = _records(folder)
    schemas = sorted({r["schema_version"] for r in records})
    summary = summarise_hard(records)
    table = _paragraphs(HardStudyResult(records, summary, {}, {}).table())
    fig = _figure(lambda p: plot_hard(summary, p), out / "learn-hard.png")
    lines = _header("Learners on the hard instances", folder,
                    "What Adam, the paper's learner and an exhaustive search pay as the SQ-hard family, its "
                    "sparse-linear control and the LWE-style family grow. The lower bounds are the paper's; the "
                    "families, the "
                    "control and the protocol are ours.", sweeps,
                    f"{len(records)} runs, record schema {', '.join(map(str, schemas))} (schema 1 drew each seed's "
                    "hidden subset on its own, so a cell may repeat one; see {doc}`/formats`).")
    return lines + ["", "## Tables", "", table, "", "## Figure", "",
                    _image(out / fig, "learn-hard")] + _readme(folder)


def yield_page(docs, out, sweeps):
    from learner.sweep.records import read_record
    from theory.yield_study import YieldStudy, plot_yield

    lines = ["# Certification yield: measured against the model", "",
             "Phase 4's certified constraints per 1000 examples, measured in the learner's runs, against the "
             "prediction from the planted layers (`theory yield-study`, ours): the certification rule simulated "
             "with the true ΣW where it certifies at least 100 rows in 100,000 examples, else the window model "
             "built on the local-CLT picture of the disagreements (the column \"predicted by\"; records made "
             "before the simulation have the model only). Computed at this site's build from the yield-study "
             "records `docs/yield.json` (the scaling and k sweeps), `docs/frontier-yield.json` (the frontier with "
             "the data-driven budgets), `docs/frontier-reach-yield.json` (the frontier to ten heads, simulated on a "
             "million examples per run) and "
             "`docs/frontier-yield-fixed.json` (the frontier with fixed budgets).", ""]
    for stem, what in (("yield", "The scaling study and the k sweep"),
                       ("frontier-yield", "The frontier with budgets set by the data"),
                       ("frontier-reach-yield", "The frontier to ten heads"),
                       ("frontier-yield-fixed", "The frontier with fixed budgets")):
        rec = read_record(docs / f"{stem}.json", kind="yield-study")
        fields = {f.name for f in dataclasses.fields(YieldStudy)}
        # a record without `density` predates the choice: its predictions are the single Gaussian's
        defaults = {"skipped": [], "density": "gaussian"}
        study = YieldStudy(**{k: rec.get(k, defaults[k]) if k in defaults else rec[k] for k in fields})
        fig = _figure(lambda p, s=study: plot_yield(s, p), out / f"{stem}.png")
        lines += [f"## {what}", "", f"Sweeps read: {', '.join(f'`{s}`' for s in rec.get('sweeps', []))}.", "",
                  _paragraphs(study.table()), "", _image(out / fig, what), ""]
    return lines


def reach_table(folder):
    """Per setting: runs, successes, median examples and seconds, and per-phase median seconds, from the
    ``learn --json`` command records in ``folder`` (read and checked by :func:`read_record`)."""
    import statistics

    from learner.sweep.records import read_record

    groups = {}
    for path in sorted(folder.glob("*.json")):
        rec = read_record(path, kind="command-record")
        p = rec["parameters"]
        groups.setdefault((p["m"], p["d"], p["k"], p["logit_scale"]), []).append(rec["result"])
    phases = ["1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt", "5_span", "6_search"]
    lines = ["| (m, d, k), logit scale | runs | success | examples, median | seconds, median | phases 1–6, median s |",
             "|---|---|---|---|---|---|"]
    for (m, d, k, ls), res in sorted(groups.items()):
        med = lambda xs: statistics.median(xs) if xs else float("nan")  # noqa: E731
        per_phase = " / ".join(f"{med([r['timings'].get(ph, 0.0) for r in res]):.0f}" for ph in phases)
        lines.append(f"| ({m}, {d}, {k}), {ls:g} | {len(res)} | {sum(bool(r['success']) for r in res)} "
                     f"| {med([r['examples_drawn'] for r in res]):,.0f} "
                     f"| {med([r['timings']['total'] for r in res]):.0f} "
                     f"| {per_phase} |")
    return lines


PHASES = ("1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt", "5_span", "6_search")
#: The study whose records the guide's phase tables are built from: the current learner's frontier to ten heads.
GUIDE_STUDY = "frontier-reach"


def _guide_runs(sweeps):
    """The learner's measured runs of :data:`GUIDE_STUDY`, grouped by (m, d, k), and the learner versions."""
    groups = {}
    for rec in _records(sweeps / GUIDE_STUDY):
        spec = rec["spec"]
        if spec["role"] == "eval" and spec["method"] == "provable":
            groups.setdefault((spec["m"], spec["d"], spec["k"]), []).append(rec)
    versions = sorted({r["versions"]["learner"] for runs in groups.values() for r in runs})
    return dict(sorted(groups.items())), versions


def _source_line(sweeps, versions, runs):
    return (f"Generated at this site's build from the {runs} measured runs of the learner in "
            f"`docs/sweeps/{GUIDE_STUDY}/` (learner {', '.join(versions)}, its default configuration; "
            f"{{doc}}`/results/generated/{GUIDE_STUDY}` says how they were made): medians over the runs of each "
            "setting.")


def phase_seconds_table(sweeps):
    """Median seconds per phase and in all, per (m, d, k), for the phases' overview in the guide."""
    import statistics

    groups, versions = _guide_runs(sweeps)
    lines = [_source_line(sweeps, versions, sum(map(len, groups.values()))), "",
             "| $(m, d, k)$ | $n$ | runs | 1 | 2 | 3 | 4 | 5 | 6 | total, s | examples |", "|" + "---|" * 11]
    for (m, d, k), runs in groups.items():
        med = [statistics.median(r["timings"].get(ph, 0.0) for r in runs) for ph in PHASES]
        lines.append(f"| ({m}, {d}, {k}) | {(m - 1) * (k - 1)} | {len(runs)} | " + " | ".join(f"{x:.2g}" for x in med)
                     + f" | {statistics.median(r['timings']['total'] for r in runs):.3g} "
                     f"| {statistics.median(r['examples_drawn'] for r in runs):,.0f} |")
    return lines


def phase4_table(sweeps):
    """Phase 4 per (m, d, k): the tolerance its pilot chose, its median seconds and examples, the pilot's forecast
    and the examples needed to reach the target against it."""
    import statistics

    groups, versions = _guide_runs(sweeps)
    lines = [_source_line(sweeps, versions, sum(map(len, groups.values()))), "",
             "| $(m, d, k)$ | $n$ | tolerance chosen | phase 4, median s | examples, median | forecast, median "
             "| needed / forecast, range |", "|" + "---|" * 7]
    for (m, d, k), runs in groups.items():
        p4 = [r["diagnostics"]["4_refined_sculpt"] for r in runs]
        tols = sorted({p["tol"] for p in p4})
        ratios = [p["needed_ratio"] for p in p4 if p.get("needed_ratio") is not None]
        low, high = (f"{min(ratios):.2f}", f"{max(ratios):.2f}") if ratios else ("–", "–")
        span = low if low == high else f"{low}–{high}"
        lines.append(f"| ({m}, {d}, {k}) | {(m - 1) * (k - 1)} | {', '.join(f'{t:g}' for t in tols)} "
                     f"| {statistics.median(p['seconds'] for p in p4):.2g} "
                     f"| {statistics.median(p['examples'] for p in p4):,.0f} "
                     f"| {statistics.median(p['forecast']['predicted_examples'] for p in p4):,.0f} | {span} |")
    return lines


def _range(values, fmt):
    """``"a–b"`` of the smallest and largest value (one figure when they print alike), ``"–"`` for none."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}–{high}"


def _gap_at_m(d, m):
    ratios = d.get("gap_ratios") or []
    return ratios[m - 2] if m >= 2 and len(ratios) > m - 2 else None


#: Per phase page: the phase's diagnostics key and its columns, (header, value of a run's diagnostics and m,
#: "median" or "range", format).
PHASE_COLUMNS = {
    "phase1-cost": ("1_crude_sum", [("examples, median", lambda d, m: d["examples"], "median", "{:,.0f}"),
                                     ("ΣW error", lambda d, m: d.get("sum_w_error"), "range", "{:.1%}")]),
    "phase2-cost": ("2_crude_sculpt", [("examples, median", lambda d, m: d["examples"], "median", "{:,.0f}"),
                                        ("constraints, median", lambda d, m: d["constraints"], "median", "{:,.0f}"),
                                        ("per 1000 examples", lambda d, m: d["constraints_per_1000_examples"],
                                         "median", "{:.3g}")]),
    "phase3-cost": ("3_refine_sum", [("examples, median", lambda d, m: d["examples"], "median", "{:,.0f}"),
                                      ("ΣW error", lambda d, m: d.get("sum_w_error"), "range", "{:.2%}")]),
    "phase5-cost": ("5_span", [("ratio at m", _gap_at_m, "range", "{:.2f}"),
                                ("smallest principal cosine", lambda d, m: min(d["principal_cosines"])
                                 if d.get("principal_cosines") else None, "range", "{:.3f}")]),
    "phase6-cost": ("6_search", [("refinement, median s", lambda d, m: d.get("refine_seconds"), "median", "{:.2g}"),
                                  ("held-out relative error", lambda d, m: d.get("heldout_relative_error"), "range",
                                   "{:.0e}")]),
}


def phase_cost_table(sweeps, name):
    """A phase page's cost table (:data:`PHASE_COLUMNS`): per (m, d, k) of the guide's study, the phase's median
    seconds and its own figures, from the runs' diagnostics."""
    import statistics

    key, columns = PHASE_COLUMNS[name]
    groups, versions = _guide_runs(sweeps)
    lines = [_source_line(sweeps, versions, sum(map(len, groups.values()))), "",
             "| $(m, d, k)$ | runs | seconds, median | " + " | ".join(c[0] for c in columns) + " |",
             "|" + "---|" * (3 + len(columns))]
    for (m, d, k), runs in groups.items():
        diags = [r["diagnostics"][key] for r in runs]
        cells = []
        for _, value, how, fmt in columns:
            values = [value(diag, m) for diag in diags]
            present = [v for v in values if v is not None]
            cells.append(fmt.format(statistics.median(present)) if how == "median" and present
                         else _range(values, fmt) if how == "range" else "–")
        lines.append(f"| ({m}, {d}, {k}) | {len(runs)} | {statistics.median(r['timings'][key] for r in runs):.2g} | "
                     + " | ".join(cells) + " |")
    return lines


def pool_threshold_table(sweeps):
    """Median seconds per cell and setting of ``docs/sweeps/pool-threshold/runs.json``: one process, and a local
    pool started from the first batch or after a number of merged examples."""
    import statistics

    rec = json.loads((sweeps / "pool-threshold" / "runs.json").read_text(encoding="utf-8"))
    cells, settings = {}, []
    for run in rec["runs"]:
        key = "one process" if run["workers"] == 1 else (
            "pool at once" if run["pool_from"] == 0 else f"pool from {run['pool_from']:,}")
        if key not in settings:
            settings.append(key)
        cell = (run["m"], run["d"], run["k"], run["logit_scale"], run["examples_drawn"])
        cells.setdefault(cell, {}).setdefault(key, []).append(run["seconds"])
    rounds = {len(v) for by in cells.values() for v in by.values()}
    lines = [f"Medians of {'/'.join(map(str, sorted(rounds)))} runs per setting, from `docs/sweeps/pool-threshold/` "
             f"({rec['date']}, learner {rec['versions']['learner']}; its README says how they were made):", "",
             "| $(m, d, k)$, logit scale | examples | " + " | ".join(settings) + " |",
             "|" + "---|" * (2 + len(settings))]
    for (m, d, k, ls, n), by in cells.items():
        lines.append(f"| ({m}, {d}, {k}), {ls:g} | {n:,} | "
                     + " | ".join(f"{statistics.median(by[s]):.2f} s" if s in by else "–" for s in settings) + " |")
    return lines


def lemma_table():
    """Every lemma check's default case and negative control at seed 0 (:func:`theory.run_case`), as the lemma
    page's table: measured (exact, or with its interval), bound, and whether it holds; run at each build."""
    from learner.tables import markdown_table
    from theory import CHECKS, run_case

    rows = []
    for name in CHECKS:
        for which in ("default", "control"):
            result = run_case(name, which, rng=0)
            lo, hi = result.interval
            measured = (f"{result.measured:.3g} (exact)" if lo == hi
                        else f"{result.measured:.3g}, interval [{lo:.3g}, {hi:.3g}]")
            rows.append([f"`{name}`", "default" if which == "default" else "negative control", measured,
                         f"{result.relation} {result.bound:.3g}", "yes" if result.holds else "no"])
    return markdown_table(["check", "case", "measured", "bound", "holds"], rows).splitlines()


def command_output(module, argv, shown):
    """A console block of ``python -m <module> <argv>``'s output, run at the build (``shown`` is the command line
    the block displays: the same arguments, and options that only write files)."""
    import contextlib
    import importlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = importlib.import_module(f"{module}.cli").main(list(argv))
    if status:
        raise RuntimeError(f"python -m {module} {' '.join(argv)} exited {status}")
    return ["```console", f"$ {shown}", *out.getvalue().rstrip().splitlines(), "```"]


def shortened_report(lines, head=3, per_phase=4, tail=2):
    """A run's printed report shortened for a page: its first ``head`` lines, each phase block's header and first
    ``per_phase - 1`` lines, its last ``tail`` lines, and ``…`` where lines were left out."""
    keep = set(range(head)) | set(range(len(lines) - tail, len(lines)))
    for i, line in enumerate(lines):
        if line.startswith("["):
            keep |= set(range(i, min(i + per_phase, len(lines))))
    out = []
    for i, line in enumerate(lines):
        if i in keep:
            out.append(line)
        elif not out or out[-1] != "…":
            out.append("…")
    return out


def notes_page(folder, title, what, sweeps):
    rel = folder.relative_to(sweeps.parent.parent)
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    shown = ", ".join(f"`{f}`" for f in files[:12]) + (f" and {len(files) - 12} more" if len(files) > 12 else "")
    lines = [f"# {title}", "", what, "", f"The records are in `{rel}/` ({shown}); its notes follow.", ""]
    for md in sorted(folder.glob("*.md")):
        lines += ["#" + ln if ln.startswith("#") else ln for ln in md.read_text().splitlines()] + [""]
    return lines


def build(docs, out=None):
    """Write every results page; returns ``{page: seconds}``."""
    docs = Path(docs)
    sweeps = docs / "sweeps"
    out = Path(out) if out else docs / "results" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    pages, took = {}, {}
    for name in ("main", "ksweep", "m5-parallel", "frontier", "frontier-adaptive", "frontier-reach",
                 "frontier-gaussian"):
        t0 = time.perf_counter()
        pages[name] = scaling_page(name, sweeps / name, out, sweeps)
        took[name] = time.perf_counter() - t0
    at = pages["frontier-gaussian"].index("## Tables") - 1  # the comparison first, then the study's own tables
    pages["frontier-gaussian"][at:at] = distributions_section(sweeps)
    at = pages["frontier-adaptive"].index("## Tables") - 1
    pages["frontier-adaptive"][at:at] = budgets_section(sweeps)
    for name, folder in (("noise", "noise"), ("sharpness", "reach-sharpness")):
        t0 = time.perf_counter()
        pages[name] = grid_page(name, sweeps / folder, out, sweeps)
        took[name] = time.perf_counter() - t0
    for name, make in (("peers", lambda: peers_page(sweeps / "peers", out, sweeps)),
                       ("race", lambda: race_page(sweeps / "race", out, sweeps)),
                       ("race-ten", lambda: race_page(sweeps / "race-ten", out, sweeps)),
                       ("growth", lambda: growth_page(sweeps / "growth", out, sweeps)),
                       ("bounds", lambda: bounds_page(sweeps, out)),
                       ("trained", lambda: trained_page(sweeps / "trained", out, sweeps)),
                       ("learn-hard", lambda: learn_hard_page(sweeps / "learn-hard", out, sweeps)),
                       ("yield", lambda: yield_page(docs, out, sweeps))):
        t0 = time.perf_counter()
        pages[name] = make()
        took[name] = time.perf_counter() - t0
    import benchpage  # docs/_ext: the benchmarks' page, tables and figures

    pages["bench"] = benchpage.bench_page(sweeps / "bench", sweeps)
    pages["blas"] = notes_page(sweeps / "blas", "BLAS threads and the local pool",
                               "Benchmarks of the learner's example phases on a local pool and under BLAS thread "
                               "settings (`python -m learner bench --parallel`).", sweeps)
    pages["blas"][6:6] = ["## Per phase", "", "Computed at this build from `records/`:", "",
                          *benchpage.blas_table(sweeps / "blas" / "records"), ""]
    pages["reach"] = notes_page(sweeps / "reach", "The learner's reach", "Runs of the learner at the largest "
                                "settings it reaches ((3, 16, 4), (4, 12, 3), (6, 16, 2), …).", sweeps)
    reach = ["## Tables", "", "Computed at this build from the `learn --json` records (success: the run's own "
             "verdict, held-out relative error of F at most 1e-10).", ""]
    for sub in ("records", "records-52cb266"):
        reach += [f"### `{sub}/`", "", *reach_table(sweeps / "reach" / sub), ""]
    pages["reach"][4:4] = reach
    pages["torch"] = notes_page(sweeps / "torch", "Torch heads and the paper's conditions",
                                "What the paper's conditions say about layers converted from "
                                "`torch.nn.MultiheadAttention`.", sweeps)
    from learner import __version__
    if set(pages) != set(PAGES):
        raise RuntimeError(f"results.PAGES lists {sorted(PAGES)} but build wrote {sorted(pages)}")
    for name, lines in pages.items():
        lines[2:2] = provenance_lines(name, sweeps, __version__)
        _write(out / f"{name}.md", "\n".join(lines).rstrip() + "\n")
    import overview  # docs/_ext: the index's account of the studies, current first

    titles = {name: lines[0].removeprefix("# ") for name, lines in pages.items()}
    _write(out / "overview.md", "\n".join(overview.overview_lines(docs, titles)) + "\n")
    # tables the guide includes (```{include}```), not pages of their own
    (out.parent / "tables").mkdir(parents=True, exist_ok=True)
    tables = {"phase-seconds": phase_seconds_table(sweeps), "phase4-cost": phase4_table(sweeps),
              "pool-threshold": pool_threshold_table(sweeps), "lemma-checks": lemma_table()}
    tables |= {f"reach-{sub}": reach_table(sweeps / "reach" / sub) for sub in ("records", "records-52cb266")}
    tables["sq-simulate"] = command_output("lowerbounds", ["sq-simulate"],
                                           "python -m lowerbounds sq-simulate --plot sq.png")
    report = command_output("learner", ["learn", "--workers", "1"], "python -m learner learn --workers 1")
    tables["main-report"] = ["```text", *shortened_report(report[2:-1]), "```"]
    tables |= {name: phase_cost_table(sweeps, name) for name in PHASE_COLUMNS}
    bench = benchpage.bench_records(sweeps / "bench")
    tables |= {"bench-forward": benchpage.forward_table(bench["forward"]),
               "bench-search": benchpage.search_table(bench["search"]),
               "blas-threads": benchpage.blas_table(sweeps / "bench" / "blas")}
    for name, lines in tables.items():
        _write(out.parent / "tables" / f"{name}.md", "\n".join(lines) + "\n")
    return took


def _write(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _on_init(app):
    took = build(app.srcdir)
    log.info("results pages: %s", ", ".join(f"{k} {v:.1f} s" for k, v in took.items()))


def setup(app):
    app.connect("builder-inited", _on_init)
    return {"parallel_read_safe": True, "version": "1"}
