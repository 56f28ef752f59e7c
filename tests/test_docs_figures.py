"""The figures the prose quotes about the main job come from its records (docs/sweeps/main-job/), and the records
are those of today's learner: the README (not built, so not substituted) quotes them, and a fresh run of the main
job draws the examples they record."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
figures = pytest.importorskip("figures")
JOB = figures.main_job(ROOT / "docs" / "sweeps")


def test_the_records_are_the_default_job_and_succeeded():
    assert JOB["runs"] >= 3 and JOB["success"]


def test_the_readme_quotes_the_records():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    seconds = figures.seconds_text(*JOB["seconds"])
    assert f"{JOB['examples']:,} examples in {seconds}" in readme, (JOB["examples"], seconds)
    assert f"runs of version {JOB['version']}" in readme


def test_the_pages_quote_the_records_through_substitutions():
    pages = ["getting-started.md", "install.md", "guide/learner.md"]
    for page in pages:
        assert "{{ main_examples }}" in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
    subs = figures.substitutions(ROOT / "docs" / "sweeps")
    assert subs["main_examples"] == f"{JOB['examples']:,}" and subs["main_version"] == JOB["version"]


def test_seconds_text():
    assert figures.seconds_text(0.79, 0.81) == "0.8 s"
    assert figures.seconds_text(2.44, 2.51) == "2.4–2.5 s"


def test_records_that_disagree_are_refused(tmp_path):
    runs = tmp_path / "main-job" / "records"
    runs.mkdir(parents=True)
    base = json.loads(sorted((ROOT / "docs" / "sweeps" / "main-job" / "records").glob("*.json"))[0].read_text())
    for i, n in enumerate((89_000, 90_000)):
        rec = json.loads(json.dumps(base))
        rec["result"]["examples_drawn"] = n
        (runs / f"run-{i}.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match="disagree"):
        figures.main_job(tmp_path)
    # the same examples from another setting are refused too; another --json path is not another setting
    for i, (m, name) in enumerate(((2, "a.json"), (3, "b.json"))):
        rec = json.loads(json.dumps(base))
        rec["parameters"] |= {"m": m, "json": name}
        (runs / f"run-{i}.json").write_text(json.dumps(rec))
    with pytest.raises(ValueError, match="disagree"):
        figures.main_job(tmp_path)
    (runs / "run-1.json").write_text(json.dumps(json.loads(json.dumps(base)) | {
        "parameters": base["parameters"] | {"json": "b.json"}}))
    (runs / "run-0.json").write_text(json.dumps(base))
    assert figures.main_job(tmp_path)["runs"] == 2


def test_a_fresh_run_draws_the_recorded_examples(tmp_path):
    """The learner of this checkout, the main job's defaults (one process: the result does not depend on it)."""
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "learner", "learn", "--workers", "1", "--no-progress", "--json",
                           str(out)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())["result"]
    assert result["success"] and result["examples_drawn"] == JOB["examples"]


def test_the_readme_quotes_the_last_ci_run():
    run = figures.latest_ci(ROOT / "docs" / "sweeps")
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for quoted in (f"({run['default_tests']} tests", f"took {run['default_s']} s", f"(at {run['commit']})",
                   f"on {run['date']}", f"took {run['total']}", f"the wheel check {run['wheel_check_s']} s",
                   f"the documentation {run['docs_s']} s", f"install {run['docs_install_s']} s",
                   f"gallery {run['docs_site_s']} s", f"then {run['doctests']} doctests",
                   f"({run['slow_tests']} tests in {run['slow_s']} s)"):
        assert quoted in readme, quoted


def test_the_install_page_takes_the_ci_figures_from_the_record():
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    for key in ("ci_date", "ci_commit", "ci_default_tests", "ci_default_s", "ci_slow_tests", "ci_total"):
        assert "{{ " + key + " }}" in page, key
    assert figures.latest_ci(ROOT / "docs" / "sweeps")["total"].endswith(" s")


def test_a_timings_figures_by_hand():
    """A constructed record: the rest is the total less phases 4 and 6 (the other phases and what lies between
    them), the examples are in millions, the error has two figures and the pilot's tolerances are listed."""
    record = {"result": {
        "timings": {"1_crude_sum": 0.32, "2_crude_sculpt": 4.05, "3_refine_sum": 6.15, "4_refined_sculpt": 57.71,
                    "5_span": 1.48, "6_search": 27.89, "total": 98.64},
        "examples_drawn": 36_609_000, "execution": {"workers": 2},
        "diagnostics": {"0_setting": {"refined_tol_chosen": [0.08, 0.05]},
                        "6_search": {"heldout_relative_error": 1.9331e-30}}}}
    assert figures.timing(record) == {"total": "98.6", "phase4": "57.7", "phase6": "27.9", "rest": "13.0",
                                      "examples": "36.6", "heldout": "1.9e-30", "tol": "0.08, 0.05", "workers": "2"}


def test_the_measurement_history_quotes_every_timing_record():
    """Each figure of each record under docs/sweeps/timings/records/ is quoted through its substitution, and the
    figures are the record's, and the rest covers at least phases 1-3 and 5."""
    sweeps = ROOT / "docs" / "sweeps"
    page = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    paths = sorted((sweeps / "timings" / "records").glob("*.json"))
    assert paths
    subs = figures.substitutions(sweeps)
    for path in paths:
        figs = figures.timing(json.loads(path.read_text(encoding="utf-8")))
        for key in figs:
            assert f"{{{{ {path.stem}_{key} }}}}" in page, (path.stem, key)
            assert subs[f"{path.stem}_{key}"] == figs[key]
        times = json.loads(path.read_text(encoding="utf-8"))["result"]["timings"]
        others = sum(times[name] for name in ("1_crude_sum", "2_crude_sculpt", "3_refine_sum", "5_span"))
        assert float(figs["rest"]) >= round(others, 1) - 0.1, (path.stem, figs["rest"], others)


def test_the_settings_are_the_learners_own():
    """The phase-4 settings the pages name are read from the learner, formatted as the prose writes them."""
    from learner.phases import LearnConfig
    from learner.phases.forecast import ADAPTIVE_CANDIDATES, REACH_CANDIDATES, REACH_EXAMPLES

    subs = figures.settings()
    assert subs["reach_candidates"].replace(" and ", ", ").split(", ") == [f"{t:g}" for t in REACH_CANDIDATES]
    assert subs["reach_loosest"] == f"{max(REACH_CANDIDATES):g}"
    assert subs["adaptive_loosest"] == f"{max(ADAPTIVE_CANDIDATES):g}"
    assert subs["n_refine"] == f"{LearnConfig().n_refine:,}"
    assert int(subs["reach_examples"][:2]) == 10 and 10 ** int(subs["reach_examples"][2:].translate(
        str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789"))) == REACH_EXAMPLES


@pytest.mark.parametrize(("values", "text"), [((0.1, 0.12, 0.15), "0.1, 0.12 and 0.15"), ((0.2, 0.3), "0.2 and 0.3"),
                                              ((0.5,), "0.5")])
def test_tolerances_as_prose(values, text):
    assert figures._tolerances(values) == text


@pytest.mark.parametrize(("value", "text"), [(100_000_000, "10⁸"), (10, "10¹"), (10**12, "10¹²"),
                                             (400_000, "400,000"), (200_000_000, "200,000,000")])
def test_powers_of_ten_as_prose(value, text):
    assert figures._power_of_ten(value) == text


@pytest.mark.parametrize(("page", "names", "typed"), [
    ("guide/learner.md", ("reach_examples", "reach_candidates"), ("0.1, 0.12, 0.15", "$10^8$ examples (`REACH")),
    ("guide/phases/4-refined-sculpt.md", ("reach_examples", "reach_candidates", "reach_loosest"),
     ("0.1, 0.12 and 0.15", "$10^8$ examples (`REACH", "(0.15 with `adaptive`")),
    ("measurements.md", ("n_refine",), ("its cap of 400,000",)),
])
def test_the_pages_name_the_settings_through_substitutions(page, names, typed):
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    for name in names:
        assert f"{{{{ {name} }}}}" in text, (page, name)
    for figure in typed:
        assert figure not in text, (page, figure)


def _race_row(method, m, reached, seconds, runs=3, best=1e-30):
    return {"method": method, "m": m, "d": 20, "k": 2, "runs": runs, "median_relative_error": best,
            "milestones": {"1e-08": {"reached": reached, "median_seconds": seconds if reached else None}}}


def test_the_race_lead_by_hand():
    rows = [_race_row("torch-adam", 7, 3, 61.0), _race_row("provable", 7, 3, 14.34),
            _race_row("adam", 7, 0, None, best=1.2e-6),
            # a cell where a method reached it on two layers only: it is not first, however fast
            _race_row("provable", 8, 3, 40.0), _race_row("torch-adam", 8, 2, 20.0), _race_row("adam", 8, 3, 100.0),
            # a cell no method finished on every layer
            _race_row("provable", 9, 2, 30.0), _race_row("torch-adam", 9, 0, None, best=2e-8)]
    lines = figures.race_lead(rows).split("\n")
    assert lines == [
        "- $(7, 20, 2)$: the learner 14 s (3 of 3 layers); numpy Adam none of 3 layers (median best error 1.2e-06); "
        "torch Adam 61 s (3 of 3 layers) — first: the learner, 4.3× faster than torch Adam.",
        "- $(8, 20, 2)$: the learner 40 s (3 of 3 layers); numpy Adam 100 s (3 of 3 layers); torch Adam 20 s "
        "(2 of 3 layers) — first: the learner, 2.5× faster than numpy Adam.",
        "- $(9, 20, 2)$: the learner 30 s (2 of 3 layers); torch Adam none of 3 layers (median best error 2e-08) — "
        "no method reached it on every layer."]
    # the learner behind: the verdict names the faster method
    slow = figures.race_lead([_race_row("provable", 7, 3, 90.0), _race_row("torch-adam", 7, 3, 30.0)])
    assert slow.endswith("first: torch Adam, 3.0× faster than the learner.")
    # where the learner's time went: phase 4's median seconds of its median total, and its median examples
    records = [{"spec": {"method": "provable", "role": "eval", "m": 7, "d": 20, "k": 2}, "outcome": "finished",
                "timings": {"4_refined_sculpt": four, "total": total}, "examples_drawn": n}
               for four, total, n in ((10.0, 14.0, 3_000_000), (11.0, 15.0, 3_400_000), (12.0, 30.0, 3_500_000),
                                      (99.0, 99.0, 9_000_000))]
    records[-1]["outcome"] = "error"  # not counted
    records.append({"spec": {"method": "provable", "role": "tune", "m": 7, "d": 20, "k": 2},
                    "outcome": "finished", "timings": {"4_refined_sculpt": 1.0, "total": 1.0}, "examples_drawn": 1})
    assert figures.learner_phase4(records) == {(7, 20, 2): (11.0, 15.0, 3_400_000)}
    spent = figures.race_lead(rows[:3], phase4=figures.learner_phase4(records))
    assert spent.endswith("4.3× faster than torch Adam. The learner's phase 4: 11 s of its 15 s, 3.4 M examples "
                          "(medians).")
    only = figures.race_lead([_race_row("provable", 7, 3, 9.96), _race_row("adam", 7, 1, 5.0)])
    assert only.endswith("the learner 10 s (3 of 3 layers); numpy Adam 5 s (1 of 3 layers) — first: the learner, "
                         "the only method to reach it on every layer.")


@pytest.mark.parametrize("folder", ["race", "race-ten"])
def test_a_races_summary_is_that_of_its_records(folder):
    """The race pages and the guide's figures read ``summary.json``'s rows: they are those of the committed records
    (recomputed here from the run records, so a summary left behind by a resumed or edited study fails)."""
    from learner.study.peers import _race_rows
    from learner.sweep.records import read_record

    root = ROOT / "docs" / "sweeps" / folder
    records = [read_record(p) for p in sorted((root / "runs").glob("*.json"))]
    rows = json.loads(json.dumps(_race_rows([r for r in records if r["spec"]["role"] == "eval"])))
    summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    key = lambda r: (r["m"], r["d"], r["k"], r["method"])  # noqa: E731
    assert sorted(summary["rows"], key=key) == sorted(rows, key=key)
    if folder == "race-ten":
        assert figures.substitutions(ROOT / "docs" / "sweeps")["race_ten_lead"] == figures.race_lead(
            rows, phase4=figures.learner_phase4(records))
        assert "{{ race_ten_lead }}" in (ROOT / "docs" / "guide" / "studies.md").read_text(encoding="utf-8")


def test_the_race_to_ten_heads_readme_quotes_its_log_and_study():
    """The sitting's times in ``docs/sweeps/race-ten/README.md`` (shown on its results page) are its log's: the start
    and end, and each cell's minutes between the log's markers; its learning rates are the study's."""
    import re
    from datetime import datetime

    root = ROOT / "docs" / "sweeps" / "race-ten"
    readme = " ".join((root / "README.md").read_text(encoding="utf-8").split())
    marks = [datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ") for t in
             re.findall(r"^=== (\S+) m=", (root / "progress.log").read_text(encoding="utf-8"), re.M)]
    ends = [datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ") for t in
            re.findall(r"^=== (\S+) rc=0 ", (root / "progress.log").read_text(encoding="utf-8"), re.M)]
    assert len(marks) == len(ends) == 4
    minutes = [round((b - a).total_seconds() / 60) for a, b in zip(marks, ends, strict=True)]
    assert f"took {minutes[0]}, {minutes[1]}, {minutes[2]} and {minutes[3]} minutes" in readme, minutes
    assert f"{marks[0]:%Y-%m-%d}, {marks[0]:%H:%M}–{ends[-1]:%H:%M} UTC" in readme, (
        marks[0], ends[-1])
    lrs = json.loads((root / "study.json").read_text(encoding="utf-8"))["parameters"]["lrs"]
    assert "learning rates " + " and ".join(f"{x:g}" for x in lrs) + " on" in readme, lrs


GROWTH = ROOT / "docs" / "sweeps" / "growth"


def _line_runs():
    """The run records of the growth study's lines (its folder also holds the budget walk's, which are not)."""
    from learner.study.growth import GROWTH_LINES

    return sorted(p for line in GROWTH_LINES for p in (GROWTH / line / "runs").glob("*.json"))


def test_the_growth_law_is_stated_once_and_quoted_from_the_study():
    """The README (not built) quotes the growth study's law as its summary states it; the site's pages state it
    through the one substitution, never typed in."""
    stored = json.loads((GROWTH / "growth.json").read_text(encoding="utf-8"))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert " ".join(stored["headline"].split()) in readme
    for page in ("index.md", "getting-started.md", "guide/studies.md"):
        assert "{{ growth_law }}" in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
    # the results index states it as the growth study's finding, from the same summary
    overview = pytest.importorskip("overview")
    results = pytest.importorskip("results")
    assert overview.finding("growth", ROOT / "docs") == figures.growth_law(
        results.growth_summary_of(GROWTH))["growth_law"]


def test_the_growth_readme_quotes_its_logs_and_records():
    """The sitting's times, the yield study's seconds and the worst error of the learned layers in
    ``docs/sweeps/growth/README.md`` (shown on its results page) are its logs' and its records'."""
    import re

    readme = " ".join((GROWTH / "README.md").read_text(encoding="utf-8").split())
    d24 = (GROWTH / "progress-d24.log").read_text(encoding="utf-8")
    start, = re.findall(r"^=== d24 start (\S+)$", d24, re.M)
    (done, seconds), = re.findall(r"^=== d24 done (\S+) in (\d+) s$", d24, re.M)
    stopped, = re.findall(r"^=== launch.py stopped (\S+)$", d24, re.M)
    assert f"`d24`, {start}–{done} ({seconds} s)" in readme and f"stopped at {stopped}," in readme
    rest = (GROWTH / "progress.log").read_text(encoding="utf-8")
    begun, = re.findall(r"^=== growth d16 d24 exhaustive start (\S+)$", rest, re.M)
    ended, = re.findall(r"^=== growth d16 d24 exhaustive done rc=0 (\S+)$", rest, re.M)
    assert f"the pricing, {begun}–{ended}," in readme
    for path in sorted(GROWTH.glob("yield-slice*.json")):
        yield_seconds = json.loads(path.read_text(encoding="utf-8"))["seconds"]
        assert f"`{path.name}`" in readme and f"({yield_seconds:.0f} s, its record's `seconds`" in readme, path.name
    records = [json.loads(p.read_text(encoding="utf-8")) for p in _line_runs()]
    learned = [r for r in records if r["status"] != "setting"]
    assert all(r["success"] for r in learned)
    versions = {r["versions"]["learner"] for r in records}
    assert len(versions) == 1 and f"Every sitting ran learner {versions.pop()}" in readme
    slowest = max((r for r in learned if r["spec"]["d"] == 32), key=lambda r: r["timings"]["total"])
    assert f"one run took {slowest['timings']['total'] / 60:.0f} minutes at m = {slowest['spec']['m']}" in readme
    from learner.assumptions import max_sound_m

    refused = {(r["spec"]["m"], r["spec"]["d"], r["spec"]["k"]) for r in records if r["status"] == "setting"}
    for m, d, k in refused:
        assert f"At (m, k) = ({m}, {k}) the learner refuses" in readme
        assert f"the largest m it calls sound at (d, k) = ({d}, {k}) is {max_sound_m(d, k)}" in readme
    assert max(r["errors"]["relative_error"] for r in learned) <= 1e-29
    assert "relative error against the planted layer at most 1e-29" in readme


def test_every_growth_line_is_complete_and_refused_only_where_unsound():
    """Each line's folder holds one record per layer of its grid (:data:`GROWTH_LINES`), no more; a record the
    learner refused is one of a setting :func:`max_sound_m` calls unsound, and the README gives each line's grid
    blocks as the study runs them."""
    from learner.assumptions import max_sound_m
    from learner.study.frontier import parse_grid
    from learner.study.growth import GROWTH_LINES

    readme = " ".join((GROWTH / "README.md").read_text(encoding="utf-8").split())
    for folder in sorted(p.parent for p in GROWTH.glob("*/study.json") if p.parent.name in GROWTH_LINES):
        line = folder.name
        cells = {(m, d, k): seeds for m, d, k, seeds in parse_grid(GROWTH_LINES[line])}
        found: dict = {}
        for path in sorted((folder / "runs").glob("*.json")):
            r = json.loads(path.read_text(encoding="utf-8"))
            cell = (r["spec"]["m"], r["spec"]["d"], r["spec"]["k"])
            found[cell] = found.get(cell, 0) + 1
            refused = r["status"] == "setting"
            assert refused == (cell[0] > max_sound_m(cell[1], cell[2])), (path.name, r["status"])
        assert found == cells, line
        for block in GROWTH_LINES[line]:
            assert f"`{block}`" in readme, (line, block)


def test_the_growth_readme_counts_each_sitting_from_its_records_and_log():
    """Each row of the README's sittings table (line, log, commit, process, runs recorded) is what the line's
    records made by that process and the log say: the log exists, as many of the line's records name the process,
    and the log's own count of the runs it found recorded is the sum of the line's sittings before it."""
    import re

    readme = (GROWTH / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^ *\| `(\w+)` \| `(progress-[\w-]+\.log)` \| ([0-9a-f]{7}) \| (\d+) \| (\d+) \|$", readme,
                      re.M)
    assert len(rows) >= 3
    pids: dict = {}
    for path in _line_runs():
        key = (path.parent.parent.name, json.loads(path.read_text(encoding="utf-8"))["where"]["pid"])
        pids[key] = pids.get(key, 0) + 1
    before: dict = {}
    for line, log, _commit, pid, n in rows:
        text = (GROWTH / log).read_text(encoding="utf-8")
        assert pids.get((line, int(pid))) == int(n), (line, log, pid, n)
        found = re.findall(rf"resuming: (\d+) of \d+ runs already recorded in \S+/{line}/runs", text)
        assert (int(found[0]) if found else 0) == before.get(line, 0), (log, found, before)
        before[line] = before.get(line, 0) + int(n)
    assert {line: sum(v for (name, _), v in pids.items() if name == line) for line in before} == before


@pytest.mark.slow
def test_the_growth_summary_is_its_records():
    """growth.json is what the records give now: the results page's computation (docs/_ext/results.py) from the
    committed records, with the study's seed and resamples, reproduces the committed summary's law and fits."""
    results = pytest.importorskip("results")
    again = results.growth_summary_of(GROWTH)
    stored = json.loads((GROWTH / "growth.json").read_text(encoding="utf-8"))
    assert again["headline"] == stored["headline"]
    assert again["statements"] == stored["statements"]
    assert [(g["line"], g["quantity"], g["chosen"]) for g in again["growth"]] == [
        (g["line"], g["quantity"], g["chosen"]) for g in stored["growth"]]


def _yield_record(tmp_path, runs):
    from learner.io import write_json
    from learner.sweep.records import schema_of

    write_json(tmp_path / "yield-slice.json", {"kind": "yield-study", "schema_version": schema_of("yield-study"),
                                               "density": "slice", "runs": runs})
    return tmp_path


def test_the_growth_pages_yield_section_holds_the_model_to_the_learner_and_the_rule(tmp_path):
    results = pytest.importorskip("results")
    run = {"d": 24, "m": 8, "predicted_model": 2.0, "measured": 4.0, "predicted_simulated": 1.0, "target": 1000,
           "examples_measured": 500_000}  # the model's examples: 1000 / (2 / 1000) = 500,000
    lines = results.growth_yield_section(_yield_record(tmp_path, [run, run | {"measured": 1.0}]))
    table = "\n".join(lines)
    # learner / model: 2 and 0.5, geometric mean 1; rule / model: 0.5 both
    assert "| 24 | 8 | 2 | 2 | 2 | 1.00 (0.50–2.00) | 0.50 (0.50–0.50) | 1.00 (1.00–1.00) |" in table
    assert "within 2.00× of the learner's yield" in table
    far = results.growth_yield_section(_yield_record(tmp_path, [run | {"measured": 7.0}]))
    assert "misses by 3.50×, more than the 3×" in "\n".join(far)
    assert results.growth_yield_section(tmp_path / "nowhere") == []
    # a second sitting's record (another d) joins the first's in one table; a different density is refused
    from learner.io import write_json
    from learner.sweep.records import schema_of

    write_json(tmp_path / "yield-slice-d32.json", {"kind": "yield-study", "schema_version": schema_of("yield-study"),
                                                   "density": "slice", "runs": [run | {"d": 32, "measured": 8.0}]})
    both = "\n".join(results.growth_yield_section(_yield_record(tmp_path, [run])))
    assert "| 24 | 8 | 1 |" in both and "| 32 | 8 | 1 | 2 | 8 | 4.00 (4.00–4.00) |" in both
    assert "misses by 4.00×" in both and "`yield-slice-d32.json`, `yield-slice.json`" in both
    write_json(tmp_path / "yield-slice-d32.json", {"kind": "yield-study", "schema_version": schema_of("yield-study"),
                                                   "density": "window", "runs": [run]})
    with pytest.raises(ValueError, match="different densities"):
        results.growth_yield_section(tmp_path)


def test_the_slice_models_docstrings_quote_its_measurements():
    """The figures ``theory/yield_model.py`` quotes for ``density="slice"`` are those of
    ``docs/sweeps/yield-model/`` (records.json: the growth study's d = 24 layers; settings.json: other settings)."""
    import math

    folder = ROOT / "docs" / "sweeps" / "yield-model"
    text = " ".join((ROOT / "theory" / "yield_model.py").read_text(encoding="utf-8").split())
    runs = json.loads((folder / "records.json").read_text(encoding="utf-8"))
    rule = [r["sim"] / r["slice"] for r in runs if r["m"] >= 2]
    learner = [r["learner_certified"] / r["slice"] for r in runs if r["m"] >= 2]
    assert f"within {min(rule):.2f}–{max(rule):.2f} of the rule at every ``m = 1..10``" in text
    assert f"are {min(learner):.2f}–{max(learner):.2f} of the slice model's" in text
    gauss = []
    for m in (7, 8, 9, 10):
        v = [r["sim"] / r["gaussian"] for r in runs if r["m"] == m]
        gauss.append(f"{math.exp(sum(map(math.log, v)) / len(v)):.1f}×")
    assert "(the Gaussian: " + ", ".join(gauss) + " below at ``m = 7..10``" in text
    other = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
    boolean = [r["sim"] / r["slice"] for r in other if r["distribution"] == "boolean"]
    assert f"On {len(boolean)} other Boolean layers" in text
    assert f"it is within {min(boolean):.2f}–{max(boolean):.2f} everywhere" in text


def test_the_budget_walk_readme_is_its_records_and_log():
    """``docs/sweeps/growth/budget/README.md`` (shown on the bounds page) says of each cell what its records say:
    the learning rate, the verdict, how many layers reached 1e-3 within the budget and when, and of each method's
    frontier whether it is exact; its log's verdicts are the summary's cells, and the cap is the learner's sound m."""
    import re

    from learner.assumptions import max_sound_m
    from learner.study.growth import budgeted_frontier
    from learner.study.peers import seconds_to

    folder = GROWTH / "budget"
    readme = " ".join((folder / "README.md").read_text(encoding="utf-8").split())
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "runs").glob("*.json"))]
    names = {"adam": "numpy Adam", "torch-adam": "torch Adam"}
    words = {1: "one", 2: "two", 3: "three"}
    log = (folder / "progress-budget.log").read_text(encoding="utf-8")
    walked = re.findall(r"budget walk: (\S+) at \(m, d\) = \((\d+), (\d+)\), lr (\S+): (passed|failed)", log)
    assert walked == [(c["method"], str(c["m"]), str(c["d"]), f"{c['lr']:g}", "passed" if c["passed"] else "failed")
                      for c in summary["cells"]]
    budget = summary["parameters"]["budget"]
    for cell in summary["cells"]:
        evals = [r for r in runs if r["spec"]["role"] == "eval" and r["spec"]["method"] == cell["method"]
                 and r["spec"]["m"] == cell["m"] and r["spec"]["d"] == cell["d"]]
        assert {r["spec"]["options"]["lr"] for r in evals} == {cell["lr"]}
        secs = sorted(s for r in evals if (s := seconds_to(r, 1e-3)) is not None and s <= budget)
        verdict = "passed" if cell["passed"] else "failed"
        said = f"{names[cell['method']]} at m = {cell['m']}, lr {cell['lr']:g}: {verdict}"
        assert said in readme, said
        times = " and ".join([", ".join(f"{s:.0f}" for s in secs[:-1]), f"{secs[-1]:.0f}"] if len(secs) > 1
                             else [f"{secs[0]:.0f}"])
        assert f"{said} ({words[len(secs)]} of {words[len(evals)]}" in readme and f"at {times} s" in readme, said
        if cell["passed"]:  # a passing cell's layer that missed is quoted with the error it ended at
            for r in evals:
                if seconds_to(r, 1e-3) is None:
                    assert f"at {r['errors']['relative_error']:.2g})" in readme, r["run_id"]
    for row in budgeted_frontier(runs, ds=summary["parameters"]["ds"], budget=budget):
        name = names[row["method"]]
        assert (f"{name}'s frontier at d = {row['d']} is {row['m']}, exact" in readme if row["exact"]
                else f"{name}'s is at least {row['m']}" in readme), row
    for d in summary["parameters"]["ds"]:
        assert summary["parameters"]["caps"][str(d)] == max_sound_m(d, 2)
        assert f"the largest m the learner calls sound at d = {d} ({max_sound_m(d, 2)})" in readme
    assert {r["versions"]["learner"] for r in runs} == {"0.3.0"} and "learner 0.3.0" in readme
    assert f"{len(runs)} runs" in readme and len(runs) == 5 * len(summary["cells"])
