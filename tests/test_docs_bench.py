"""The benchmarks' page, tables and figures (docs/_ext/benchpage.py) against their records in docs/sweeps/bench/ and
against the BLAS study's own summary script, a separate reading of the same records."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
benchpage = pytest.importorskip("benchpage")
BENCH = ROOT / "docs" / "sweeps" / "bench"


def _summarize(folder):
    """``{((m, d, k), load, threads): total}`` as ``docs/sweeps/blas/scripts/summarize.py`` prints it."""
    out = subprocess.run([sys.executable, str(ROOT / "docs/sweeps/blas/scripts/summarize.py"), str(folder)],
                         capture_output=True, text=True, check=True).stdout.splitlines()[1:]
    totals = {}
    for line in out:
        cell, rest = line.split(")", 1)
        load, threads, _, _, *phases = rest.split()
        totals[(cell + ")", load, threads)] = phases[-1]
    return totals


@pytest.mark.parametrize("folder", [BENCH / "blas", ROOT / "docs/sweeps/blas/records"], ids=["0.3.0", "0.1.0"])
def test_the_blas_table_agrees_with_the_studys_own_script(folder):
    rows = [[cell.strip() for cell in r.strip("|").split("|")] for r in benchpage.blas_table(folder)[2:]]
    table = {(r[0], r[1], r[2]): r[5] for r in rows}
    assert table == _summarize(folder)
    assert all(r[3] == "2/2" and r[6] == "yes" for r in rows)


def test_the_pool_and_search_figures_are_the_records_ratios():
    par = json.loads((BENCH / "parallel.json").read_text())["parallel"]
    search = json.loads((BENCH / "search.json").read_text())["search"]
    subs = benchpage.figures(BENCH)
    assert subs["bench_pool_speedup"] == f"{par['serial_seconds'] / par['parallel_seconds']:.2f}×"
    assert subs["bench_search_speedup"] == f"{search['serial_seconds'] / search['parallel_seconds']:.2f}×"
    assert subs["bench_pool_startup"] == f"{par['startup_seconds']:.2f} s"
    assert par["identical"] and subs["bench_pool_identical"] == "identical"


def test_the_blas_sentences_follow_the_records(tmp_path):
    """The verdict is read from the medians: with the two-thread runs made faster, the sentence turns round."""
    subs = benchpage.blas_figures(BENCH / "blas")
    runs = benchpage.blas_runs(BENCH / "blas")
    one, two = benchpage.blas_median(runs, (2, 8, 4, "quiet", 1)), benchpage.blas_median(runs, (2, 8, 4, "quiet", 2))
    assert subs["blas_main_quiet"] == f"{one:.1f} s against {two:.1f} s"
    for path in (BENCH / "blas").glob("*.json"):
        record = json.loads(path.read_text())
        if "_b2_" in path.name:
            record["result"]["timings"] = {k: v / 100 for k, v in record["result"]["timings"].items()}
        (tmp_path / path.name).write_text(json.dumps(record))
    assert benchpage.blas_figures(tmp_path)["blas_main_quiet_verdict"] == "slower than"


@pytest.mark.parametrize(("one", "two", "verdict"), [(1.0, 2.0, "faster than"), (1.0, 1.04, "as fast as"),
                                                     (1.04, 1.0, "as fast as"), (1.2, 1.0, "slower than")])
def test_the_verdict_by_hand(one, two, verdict):
    assert benchpage._verdict(one, two) == verdict


def test_a_record_of_another_command_is_refused(tmp_path):
    for stem in benchpage.BENCHMARKS:
        (tmp_path / f"{stem}.json").write_text((BENCH / f"{stem}.json").read_text())
    record = json.loads((BENCH / "span.json").read_text())
    (tmp_path / "search.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="search.json: written by 'bench --span', not 'bench --search'"):
        benchpage.bench_records(tmp_path)
    (tmp_path / "search.json").write_text((BENCH / "search.json").read_text())
    (tmp_path / "span.json").unlink()
    with pytest.raises(FileNotFoundError, match="span.json"):
        benchpage.bench_records(tmp_path)


def test_the_guide_quotes_the_benchmarks_through_substitutions():
    text = (ROOT / "docs/guide/parallel.md").read_text(encoding="utf-8")
    for name in ("bench_pool_speedup", "bench_search_speedup", "bench_screen_speedup", "blas_five_loaded_verdict"):
        assert "{{ " + name + " }}" in text, name
    assert "{{ span_speedup }}" in (ROOT / "docs/guide/phases/5-span.md").read_text(encoding="utf-8")


def _blas_record(path, timings, examples=1000, param_error=1e-15):
    path.write_text(json.dumps({"result": {"timings": timings, "examples_drawn": examples, "success": True,
                                           "errors": {"param_error": param_error}}}))


def _constructed_blas(folder, *, loaded_two_phase5=30.0, examples_two=1000, repeat_error=None):
    """Two repetitions per setting of both cells; every phase 1 s and the total 6 s, except where said: with two
    threads beside other work phase 5 takes ``loaded_two_phase5`` and phase 6 10 s at (5, 16, 2); the main job with
    two threads takes 3 s quietly."""
    phases = [p for p in benchpage.PHASES[:-1] if p != "2_crude_sculpt"]  # a phase a record lacks counts as 0 s
    for cell in ("m2_d8_k4", "m5_d16_k2"):
        for load in ("quiet", "loaded"):
            for b in (1, 2):
                for rep in (0, 1):
                    t = dict.fromkeys(phases, 1.0)
                    if cell == "m5_d16_k2" and load == "loaded":  # phase 4 long either way: the largest, not the
                        t["4_refined_sculpt"] = 20.0 + b          # phase that grew most
                    if cell == "m5_d16_k2" and load == "loaded" and b == 2:
                        t |= {"5_span": loaded_two_phase5, "6_search": 10.0}
                    t["total"] = sum(t.values()) if not (cell == "m2_d8_k4" and b == 2 and load == "quiet") else 3.0
                    error = (repeat_error if rep and repeat_error else 1e-15) * (2 if b == 2 else 1)
                    _blas_record(folder / f"{cell}_b{b}_{load}_r{rep}.json", t,
                                 examples_two if b == 2 else 1000, error)


def test_the_blas_figures_by_hand(tmp_path):
    _constructed_blas(tmp_path)
    subs = benchpage.blas_figures(tmp_path)
    assert subs["blas_main_quiet"] == "5.0 s against 3.0 s" and subs["blas_main_quiet_verdict"] == "slower than"
    assert subs["blas_five_loaded"] == "25.0 s against 64.0 s" and subs["blas_five_loaded_verdict"] == "faster than"
    assert subs["blas_five_quiet_verdict"] == "as fast as"
    assert subs["blas_worst_phase"] == "phase 5" and subs["blas_worst_phase_seconds"] == "30.0 s instead of 1.0 s"
    assert subs["blas_within"] == "agreed bit for bit" and subs["blas_same_examples"] == "the same"
    assert subs["blas_param_errors"] == "$1.00\\cdot10^{-15}$ and $2.00\\cdot10^{-15}$"
    _constructed_blas(tmp_path, loaded_two_phase5=2.0, examples_two=999, repeat_error=3e-15)
    subs = benchpage.blas_figures(tmp_path)
    assert subs["blas_worst_phase"] == "phase 6" and subs["blas_worst_phase_seconds"] == "10.0 s instead of 1.0 s"
    assert subs["blas_within"] == "did not all agree bit for bit" and subs["blas_same_examples"] == "different"


def test_the_blas_table_by_hand(tmp_path):
    _constructed_blas(tmp_path, repeat_error=3e-15)
    rows = [[c.strip() for c in r.strip("|").split("|")] for r in benchpage.blas_table(tmp_path)[2:]]
    assert [(r[0], r[1], r[2]) for r in rows[:4]] == [("(2, 8, 4)", "quiet", "1"), ("(2, 8, 4)", "quiet", "2"),
                                                      ("(2, 8, 4)", "loaded", "1"), ("(2, 8, 4)", "loaded", "2")]
    assert rows[0][4] == "1.0 / 0.0 / 1.0 / 1.0 / 1.0 / 1.0" and rows[0][5] == "5.0"
    assert rows[7][4] == "1.0 / 0.0 / 1.0 / 22.0 / 30.0 / 10.0" and rows[7][5] == "64.0"
    assert {r[6] for r in rows} == {"no"}  # the repetitions learned layers that differ
    _constructed_blas(tmp_path, examples_two=999)
    rows = [[c.strip() for c in r.strip("|").split("|")] for r in benchpage.blas_table(tmp_path)[2:]]
    assert {r[6] for r in rows} == {"yes"}


def _value(math_text):
    """The number a ``$a\\cdot10^{e}$`` substitution shows."""
    mantissa, exponent = math_text.strip("$").split("\\cdot10^")
    return float(mantissa) * 10.0 ** int(exponent.strip("{}"))


def test_the_rates_and_ratios_by_hand():
    par = json.loads((BENCH / "parallel.json").read_text())["parallel"]
    cert = json.loads((BENCH / "certification.json").read_text())["certification"]
    subs = benchpage.figures(BENCH)
    for name, value in (("bench_pool_serial_rate", par["examples"] / par["serial_seconds"]),
                        ("bench_pool_parallel_rate", par["examples"] / par["parallel_seconds"]),
                        ("bench_screen_32", cert["screened_per_s"]), ("bench_screen_forward", cert["forward_per_s"])):
        assert _value(subs[name]) == pytest.approx(value, rel=5e-3), name
    assert subs["bench_screen_pipeline"] == f"{cert['pipeline_per_s'] / cert['pipeline64_per_s']:.2f}×"
    assert subs["bench_forward_cost"] == f"{cert['screened_per_s'] / cert['forward_per_s']:.1f}"
    assert subs["bench_screen_refit"] == f"{cert['refit_fraction'] * 100:.2g} %"
    span = json.loads((BENCH / "span.json").read_text())["span"]
    assert _value(subs["span_theta_difference"]) == pytest.approx(span["theta_difference"], rel=0.1)
    assert subs["span_theta_difference"].count(".") == 0  # one significant figure
    search = json.loads((BENCH / "search.json").read_text())["search"]
    assert subs["bench_search_error"] == benchpage._sci(search["heldout_error"], 2)
    assert len(subs["bench_search_error"].split("\\cdot")[0].strip("$").replace(".", "")) == 2


@pytest.mark.parametrize(("value", "digits", "text"), [(1234567.0, 3, "$1.23\\cdot10^{6}$"),
                                                       (7.4e-15, 1, "$7\\cdot10^{-15}$"),
                                                       (0.000512, 2, "$5.1\\cdot10^{-4}$"), (100000, 1, "$10^{5}$"),
                                                       (100000, 2, "$1.0\\cdot10^{5}$")])
def test_scientific_notation_by_hand(value, digits, text):
    assert benchpage._sci(value, digits) == text


def test_the_rates_have_three_figures():
    assert benchpage._rate(2176931.0) == "$2.18\\cdot10^{6}$"


@pytest.mark.parametrize(("one", "two", "verdict"), [(0.95, 1.0, "as fast as"), (1.05, 1.0, "as fast as"),
                                                     (0.9499, 1.0, "faster than"), (1.0501, 1.0, "slower than")])
def test_the_verdicts_edges(one, two, verdict):
    assert benchpage._verdict(one, two) == verdict


def test_the_records_readme_quotes_the_records():
    """The README's versions, settings and sitting are those the records and the progress log hold."""
    readme = " ".join((BENCH / "README.md").read_text(encoding="utf-8").split())
    records = benchpage.bench_records(BENCH)
    for stem, record in records.items():
        v = record["versions"]
        assert (f"learner {v['learner']}; numpy {v['numpy']} with OpenBLAS, scipy {v['scipy']}," in readme
                and f"Python {v['python']})" in readme), stem
    assert f"torch {records['forward']['torch_version'].split('+')[0]} CPU build" in readme
    subs = benchpage.figures(BENCH, records)
    assert f"pipeline at {subs['bench_pipeline_cell']}, tolerance {subs['bench_pipeline_tol']};" in readme
    assert f"certification at {subs['bench_screen_cell']}, tolerance {subs['bench_screen_tol']}," in readme
    par = records["parallel"]["parallel"]
    assert f"{par['examples'] // par['batch']} batches of {par['batch']:,} at {subs['bench_pool_cell']}" in readme
    search = records["search"]["search"]
    assert f"phase 6 at ({search['m']}, {search['d']}, {search['k']})" in readme
    times = [line.split()[0] for line in (BENCH / "progress.log").read_text().splitlines()]
    start, end = re.search(r"between (\d\d:\d\d) and (\d\d:\d\d) UTC", readme).groups()
    assert start <= min(times)[:5] and max(times)[:5] <= end
