"""Figures the prose quotes, read from records at build time (MyST substitutions such as ``{{ main_examples }}``).

The main job's figures — the examples it draws and the seconds it took — come from the ``learn --json`` records in
``docs/sweeps/main-job/records/``: ``docs/conf.py`` hands :func:`substitutions` to MyST, so the pages cannot quote
another number than the records hold, and ``tests/test_docs_figures.py`` checks that the README (which is not
built) quotes the same figures and that a fresh run of the main job still draws the examples the records say.
The test suite's and CI's figures come the same way from ``docs/sweeps/ci/runs.json``, one entry per fresh-clone
CI run.
"""

import json
from pathlib import Path

MAIN_JOB = "main-job"
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


def substitutions(sweeps):
    """The MyST substitutions of the pages: ``main_examples``, ``main_seconds``, ``main_runs``, ``main_version``
    from the main job's records, and ``ci_*`` (``ci_commit``, ``ci_date``, ``ci_total``, ``ci_default_tests``, ...)
    from the last CI run, and ``provenance_<study>`` (``provenance_frontier_reach``, ...): the lines that open the
    study's results page, for the guide's account of it."""
    job = main_job(sweeps)
    subs = {"main_examples": f"{job['examples']:,}", "main_seconds": seconds_text(*job["seconds"]),
            "main_runs": WORDS.get(job["runs"], str(job["runs"])), "main_version": job["version"]}
    subs |= {f"ci_{key}": str(value) for key, value in latest_ci(sweeps).items()}
    import results  # docs/_ext: the studies' provenance, one home for the results pages and the guide

    from learner import __version__

    subs |= {f"provenance_{name.replace('-', '_')}": "\n".join(results.provenance_lines(name, Path(sweeps),
                                                                                       __version__))
             for name in results.PAGES}
    return subs
