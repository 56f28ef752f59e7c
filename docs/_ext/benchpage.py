"""The benchmarks of ``docs/sweeps/bench/`` (``python -m learner bench ...``, each with ``--json``, and the BLAS
thread runs of ``learn --blas-threads``), read at the build: the results page ``bench``, the tables the guide's
"Cores, clusters and speed" includes, and its figures (:func:`figures`, MyST substitutions ``bench_*`` and
``span_*``). Every ratio here was measured in one run against a reference timed beside it; nothing is typed in.
"""

import json
import re
import statistics
from pathlib import Path

from learner.tables import markdown_table

#: The benchmark records of ``docs/sweeps/bench/``: file stem -> the command the record names (its ``command``).
BENCHMARKS = {"forward": "bench", "certification": "bench --certification", "parallel": "bench --parallel",
              "search": "bench --search", "span": "bench --span"}
#: Options the sitting added to a benchmark's command (``scripts/run.sh``), which the record does not name.
OPTIONS = {"search": " --repeat 3"}
#: The phases of a learning run's ``timings``, in order, and the total.
PHASES = ("1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt", "5_span", "6_search", "total")
_BLAS_NAME = re.compile(r"m(\d+)_d(\d+)_k(\d+)_b(\d+)_(quiet|loaded)_r(\d+)\.json$")


def command(stem):
    """The command line that made benchmark ``stem``'s record: ``"python -m learner bench --search --repeat 3"``."""
    return f"python -m learner {BENCHMARKS[stem]}{OPTIONS.get(stem, '')}"


def bench_records(folder):
    """``{stem: record}`` for every benchmark of :data:`BENCHMARKS` in ``folder``; a missing one is an error
    naming it, and a record written by another command than its stem's is refused."""
    folder = Path(folder)
    records = {}
    for stem, named in BENCHMARKS.items():
        path = folder / f"{stem}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no record of `{command(stem)} --json`")
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("command") != named:
            raise ValueError(f"{path}: written by {record.get('command')!r}, not {named!r}")
        records[stem] = record
    return records


def blas_runs(folder):
    """``{(m, d, k, load, threads): [result, ...]}`` of the BLAS-thread records in ``folder`` (named
    ``m{m}_d{d}_k{k}_b{threads}_{quiet|loaded}_r{repetition}.json``, each a ``learn --json`` record)."""
    runs = {}
    for path in sorted(Path(folder).glob("*.json")):
        match = _BLAS_NAME.search(path.name)
        if not match:
            continue
        m, d, k, b, load, _ = match.groups()
        result = json.loads(path.read_text(encoding="utf-8"))["result"]
        runs.setdefault((int(m), int(d), int(k), load, int(b)), []).append(result)
    if not runs:
        raise FileNotFoundError(f"no BLAS-thread records (m*_d*_k*_b*_quiet|loaded_r*.json) in {folder}")
    return runs


def blas_median(runs, key, phase="total"):
    """Median seconds of ``phase`` over the runs of setting ``key`` of :func:`blas_runs`."""
    return statistics.median(r["timings"].get(phase, 0.0) for r in runs[key])


def blas_table(folder):
    """The per-phase medians of :func:`blas_runs` as Markdown lines: one row per setting, load and thread count,
    with how many runs succeeded and whether the repetitions drew the same examples and learned the same layer."""
    runs = blas_runs(folder)
    rows = []
    for key in sorted(runs, key=lambda k: (k[:3], k[3] != "quiet", k[4])):
        rs = runs[key]
        same = len({r["examples_drawn"] for r in rs}) == 1 and len({r["errors"]["param_error"] for r in rs}) == 1
        rows.append([f"({key[0]}, {key[1]}, {key[2]})", key[3], str(key[4]),
                     f"{sum(r['success'] for r in rs)}/{len(rs)}",
                     " / ".join(f"{blas_median(runs, key, p):.1f}" for p in PHASES[:-1]),
                     f"{blas_median(runs, key):.1f}", "yes" if same else "no"])
    return markdown_table(["(m, d, k)", "load", "BLAS threads", "succeeded", "phases 1 / 2 / 3 / 4 / 5 / 6, s",
                           "total, s", "repetitions identical"], rows).splitlines()


def forward_table(record):
    """The forward pass's table of ``bench`` (``forward.json``): per case its size, examples/s, GFLOP/s and its
    ratios to the machine's GEMM rate, to an einsum per head and to torch."""
    rows = [[r["case"]["name"], f"{r['case']['n']:,}", str(r["case"]["k"]), str(r["case"]["d"]),
             str(r["case"]["m"]), _sci(r["examples_per_s"], 2), f"{r['gflops']:.1f}", f"{r['ratio_gemm']:.2f}",
             f"{r['speedup_einsum']:.1f}×", f"{r['speedup_torch']:.1f}×"] for r in record["rows"]]
    return markdown_table(["case", "n", "k", "d", "m", "examples/s", "GFLOP/s", "vs GEMM", "vs einsum", "vs torch"],
                          rows).splitlines()


def search_table(record):
    """Phase 6 in one process against the pool (``bench --search``): median, search and refinement seconds."""
    s = record["search"]
    cell = f"({s['m']}, {s['d']}, {s['k']})"
    rows = [[label, f"{s[f'{which}_seconds']:.2f} s", f"{s[f'{which}_split']['search_seconds']:.2f} s",
             f"{s[f'{which}_split']['refine_seconds']:.2f} s ({s[f'{which}_split']['evaluations']})"]
            for label, which in (("one process, one BLAS thread", "serial"),
                                 (f"{s['workers']} workers, {s['workers']} threads", "parallel"))]
    return markdown_table([f"phase 6 at {cell}", f"median of {s['repeat']}", "search",
                           "refinement (evaluations)"], rows).splitlines()


def _times(value):
    return f"{value:.2f}×"


def _sci(value, digits=3):
    """``value`` with ``digits`` significant figures as Markdown math: ``"$1.19\\cdot10^{6}$"``."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"$10^{{{int(exponent)}}}$" if mantissa == "1" else f"${mantissa}\\cdot10^{{{int(exponent)}}}$"


def _rate(value):
    """Examples per second: :func:`_sci` with three figures."""
    return _sci(value)


def _verdict(one, two):
    """How one BLAS thread compared with two: ``"faster than"``, ``"as fast as"`` (within 5 %) or
    ``"slower than"``."""
    if one < 0.95 * two:
        return "faster than"
    return "as fast as" if one <= 1.05 * two else "slower than"


def blas_figures(folder):
    """The BLAS-thread sentences' figures: per setting ``(m, d, k)`` and load the median totals with one and two
    threads, the verdict, the phase that grew most with two threads beside other work, and whether the repetitions
    within a setting agreed bit for bit while the two settings differed."""
    runs = blas_runs(folder)
    subs = {}
    for tag, cell in (("main", (2, 8, 4)), ("five", (5, 16, 2))):
        for load in ("quiet", "loaded"):
            one, two = blas_median(runs, (*cell, load, 1)), blas_median(runs, (*cell, load, 2))
            subs[f"blas_{tag}_{load}"] = f"{one:.1f} s against {two:.1f} s"
            subs[f"blas_{tag}_{load}_verdict"] = _verdict(one, two)
    loaded = {p: (blas_median(runs, (5, 16, 2, "loaded", 1), p), blas_median(runs, (5, 16, 2, "loaded", 2), p))
              for p in PHASES[:-1]}
    worst = max(loaded, key=lambda p: loaded[p][1] - loaded[p][0])
    subs["blas_worst_phase"] = f"phase {worst[0]}"
    subs["blas_worst_phase_seconds"] = f"{loaded[worst][1]:.1f} s instead of {loaded[worst][0]:.1f} s"
    within = all(len({r["errors"]["param_error"] for r in rs}) == 1 and len({r["examples_drawn"] for r in rs}) == 1
                 for rs in runs.values())
    main = {b: runs[(2, 8, 4, "quiet", b)][0] for b in (1, 2)}
    subs["blas_within"] = "agreed bit for bit" if within else "did not all agree bit for bit"
    subs["blas_same_examples"] = ("the same" if main[1]["examples_drawn"] == main[2]["examples_drawn"]
                                  else "different")
    subs["blas_param_errors"] = (f"{_sci(main[1]['errors']['param_error'])} and "
                                 f"{_sci(main[2]['errors']['param_error'])}")
    return subs


def bench_page(folder, sweeps):
    """The results page ``bench``: every benchmark of ``folder`` (``docs/sweeps/bench``) with its command, table
    or figures, and the BLAS-thread runs, then the folder's README."""
    rec = bench_records(folder)
    f = figures(folder, rec)
    rel = Path(folder).relative_to(Path(sweeps).parent.parent)
    lines = ["# Benchmarks: the pieces, the pool and BLAS threads", "",
             "How fast the learner's pieces are, what a local pool gains and how many BLAS threads to use, each "
             "speed a ratio against a reference timed in the same run (interleaved medians).", "",
             f"Computed at this site's build from the records in `{rel}/` (`python -m learner bench ... --json`, "
             "one file per benchmark, and one `learn --json` record per BLAS-thread run); their README, at the "
             "end of this page, says how and on which machine they were made. The benchmarks are ours.", "",
             "## The forward pass", "", f"`{command('forward')}` (medians of "
             f"{rec['forward']['repeat']}; the machine's float64 GEMM rate: {f['bench_gemm']}):", "",
             *forward_table(rec["forward"]), "",
             "## Certification", "",
             f"At {f['bench_pipeline_cell']}: pipeline {f['bench_pipeline']} examples/s, "
             f"{f['bench_pipeline_ratio']} of the forward pass alone; the closed-form row fit "
             f"{f['bench_fit_speedup']} as fast as the batched solve. "
             f"`{command('certification')}` at {f['bench_screen_cell']}: the float32 screen "
             f"{f['bench_screen_speedup']} as fast as the float64 fit ({f['bench_screen_identical']} constraints, "
             f"{f['bench_screen_refit']} of the examples refitted).", "",
             "## The local pool", "",
             f"`{command('parallel')}`: one stream in {f['bench_pool_serial']} in one process "
             f"and {f['bench_pool_parallel']} on two workers, {f['bench_pool_speedup']} "
             f"({f['bench_pool_identical']} constraints; the pool's start, {f['bench_pool_startup']}, not "
             "included).", "",
             "## Phase 6 on every core", "", f"`{command('search')}`:", "",
             *search_table(rec["search"]), "",
             "## Phase 5's solve", "",
             f"`{command('span')}`: through a QR {f['span_qr_seconds']}, the thin SVD "
             f"{f['span_svd_seconds']} ({f['span_speedup']}).", "",
             "## BLAS threads", "",
             "`python -m learner learn --m M --d D --k K --logit-scale L --workers 2 --seed 0 --blas-threads B`, "
             "quiet and beside two CPU-bound busy loops, two repetitions (medians, seconds):", "",
             *blas_table(Path(folder) / "blas"), ""]
    readme = Path(folder) / "README.md"
    if readme.exists():
        lines += ["## How the records were made", ""] + [
            "#" + ln if ln.startswith("#") else ln for ln in readme.read_text(encoding="utf-8").splitlines()[1:]]
    return lines


def _cell(figures):
    """``"(3, 12, 2)"``: the setting ``(m, d, k)`` of a benchmark's figures."""
    return f"({figures['m']}, {figures['d']}, {figures['k']})"


def figures(folder, records=None):
    """The MyST substitutions of the guide's benchmark figures, from the records of ``folder``
    (``docs/sweeps/bench``; ``records``: :func:`bench_records` of it, when already read): ``bench_*`` and
    ``span_*``; see :func:`blas_figures` for ``blas_*``."""
    rec = records or bench_records(folder)
    fwd, cert, par = rec["forward"], rec["certification"]["certification"], rec["parallel"]["parallel"]
    pipe, search, span = fwd["certification"], rec["search"]["search"], rec["span"]["span"]
    subs = {"bench_version": f"learner {fwd['versions']['learner']}, numpy {fwd['versions']['numpy']}",
            "bench_gemm": f"{fwd['gemm_gflops']:.0f} GFLOP/s", "bench_cube_seconds": f"{fwd['cube_seconds']:.1f} s",
            "bench_pool_serial": f"{par['serial_seconds']:.2f} s",
            "bench_pool_serial_rate": _rate(par["examples"] / par["serial_seconds"]),
            "bench_pool_parallel": f"{par['parallel_seconds']:.2f} s",
            "bench_pool_parallel_rate": _rate(par["examples"] / par["parallel_seconds"]),
            "bench_pool_per_worker": _rate(par["per_worker_per_s"]), "bench_pool_speedup": _times(par["speedup"]),
            "bench_pool_startup": f"{par['startup_seconds']:.2f} s",
            "bench_pool_identical": "identical" if par["identical"] else "different",
            "bench_pool_cell": _cell(par), "bench_pool_batches": f"{par['examples'] // par['batch']:,}",
            "bench_pool_batch": _sci(par["batch"], 1), "bench_pipeline_cell": _cell(pipe),
            "bench_pipeline_tol": f"{pipe['tol']:g}", "bench_screen_cell": _cell(cert),
            "bench_screen_tol": f"{cert['tol']:g}",
            "bench_pipeline_forward": _rate(pipe["forward_per_s"]), "bench_pipeline": _rate(pipe["pipeline_per_s"]),
            "bench_pipeline_ratio": f"{pipe['pipeline_ratio']:.2f}", "bench_fit_speedup": _times(pipe["fit_speedup"]),
            "bench_fit_same": "the same" if pipe["same_rows"] else "different",
            "bench_screen_sample": _rate(cert["sample_per_s"]), "bench_screen_forward": _rate(cert["forward_per_s"]),
            "bench_screen_64": _rate(cert["certify64_per_s"]), "bench_screen_32": _rate(cert["screened_per_s"]),
            "bench_screen_speedup": _times(cert["screen_speedup"]),
            "bench_screen_refit": f"{100 * cert['refit_fraction']:.2g} %",
            "bench_screen_identical": "identical" if cert["identical"] else "different",
            "bench_screen_pipeline": _times(cert["pipeline_per_s"] / cert["pipeline64_per_s"]),
            "bench_screen_small": _times(pipe["screen_speedup"]),
            "bench_forward_cost": f"{cert['screened_per_s'] / cert['forward_per_s']:.1f}",
            "bench_search_serial": f"{search['serial_seconds']:.2f} s",
            "bench_search_parallel": f"{search['parallel_seconds']:.2f} s",
            "bench_search_speedup": _times(search["speedup"]),
            "bench_search_error": _sci(search["heldout_error"], 2),
            "bench_search_identical": "identical" if search["identical"] else "different",
            "span_qr_seconds": f"{span['qr_seconds']:.1f} s", "span_svd_seconds": f"{span['svd_seconds']:.1f} s",
            "span_speedup": _times(span["speedup"]),
            "span_bench_version": f"learner {rec['span']['versions']['learner']}",
            "span_theta_difference": _sci(span["theta_difference"], 1)}
    return subs | blas_figures(Path(folder) / "blas")
