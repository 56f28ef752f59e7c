"""The benchmarks' page, tables and figures (docs/_ext/benchpage.py) against their records in docs/sweeps/bench/ and
against the BLAS study's own summary script, a separate reading of the same records."""

import json
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
    with pytest.raises(ValueError, match="search.json: written by 'bench --span', not 'bench --search"):
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
