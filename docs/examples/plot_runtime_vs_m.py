"""
Run time against m, from the bundled records
============================================

The paper bounds the learner's time by :math:`(dk)^{O(m^3)}` and shows that exponential dependence on the
number of heads m is unavoidable in the worst case; it reports no experiments. The studies whose records ship
with this site are ours: random planted layers (:func:`learner.random_layer`, logit scale 1, k = 2 tokens),
several per m, each learned by the paper's algorithm. This example reads two of them back
(:func:`learner.sweep.records.read_record`): the frontier to ten heads (the learner at m = 1..10, its
data-driven budgets) and the race (numpy Adam on the frontier's cells, its learning rate tuned per cell), and
summarises each with the study's own :func:`learner.study.scaling.summarise`.
"""

# %%
# Read the records
# ----------------
# The records are in the repository's ``docs/sweeps/frontier-reach/runs`` and ``docs/sweeps/race/runs``, one
# JSON file per run; each names the learner version that made it. The example looks for them in
# ``ATTENTION_SWEEPS`` (a copy of ``docs/sweeps``) when set, next to itself (sphinx-gallery runs it from its own
# folder and defines no ``__file__``) and above the working directory; downloaded on its own, it says where to
# get them and stops.
import os
import sys
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from learner.study.scaling import summarise
from learner.sweep.records import read_record

STUDIES = ("frontier-reach", "race")
places = [Path(os.environ["ATTENTION_SWEEPS"])] if os.environ.get("ATTENTION_SWEEPS") else []
try:
    places.append(Path(__file__).resolve().parents[1] / "sweeps")
except NameError:
    pass
places += [p / sub for p in (Path.cwd(), *Path.cwd().parents) for sub in ("sweeps", "docs/sweeps")]
sweeps = next((p for p in places if all((p / s / "runs").is_dir() for s in STUDIES)), None)
if sweeps is None:
    print(f"This example reads the records of docs/sweeps/{{{','.join(STUDIES)}}}/runs, which ship with the "
          "toolkit's repository, not with the package: run it inside a checkout, or set ATTENTION_SWEEPS to a "
          "copy of docs/sweeps.")
    sys.exit(0)


def measured(study, method):
    """The measured runs (role "eval") of one method at k = 2 in one study's records."""
    records = [read_record(p, kind="scaling-run") for p in sorted((sweeps / study / "runs").glob("*.json"))]
    return [r for r in records if r["spec"]["role"] == "eval" and r["spec"]["method"] == method
            and r["spec"]["k"] == 2]


runs = {"the paper's learner": measured("frontier-reach", "provable"), "Adam (our baseline)": measured("race", "adam")}
for label, mine in runs.items():
    versions = Counter(r["versions"]["learner"] for r in mine)
    summary = summarise(mine)
    print(f"{label}: {len(mine)} runs by learner version {dict(versions)}; success: relative error of F at most "
          f"{summary['success_tol']:g} on fresh inputs")
    for row in summary["rows"]:
        print(f"  m = {row['m']:2d}, d = {row['d']}: {row['runs']} runs, success {row['success_rate']:.0%}, "
              f"median {row['median_seconds']:6.1f} s, {row['median_examples']:>12,.0f} examples")

# %%
# Seconds per run
# ---------------
# Every run is a dot (spread sideways to stay visible), the medians a line. The cells do not all have the
# same d (printed above): for each m the study takes a d that the toolkit's soundness check
# (:func:`learner.check_setting`, ours) accepts. The seconds are those of the 2-core machines that ran the
# studies (each study's page says how).
fig, ax = plt.subplots(figsize=(6.5, 4.2), layout="constrained")
for j, (label, mine) in enumerate(runs.items()):
    ms = np.array([r["spec"]["m"] for r in mine])
    offset = 0.12 * (2 * j - 1)
    ax.scatter(ms + offset + np.random.default_rng(j).uniform(-0.04, 0.04, len(ms)),
               [r["timings"]["total"] for r in mine], s=10, alpha=0.5, color=f"C{j}")
    rows = summarise(mine)["rows"]
    ax.plot([row["m"] + offset for row in rows], [row["median_seconds"] for row in rows], "o-", color=f"C{j}",
            label=label)
ax.set_yscale("log")
ax.set_xticks(sorted({r["spec"]["m"] for mine in runs.values() for r in mine}))
ax.set_xlabel("heads m")
ax.set_ylabel("seconds per run")
fig.legend(loc="outside lower center", ncol=len(runs))  # below the axes, off the data

# %%
# Where the learner's time goes: its slowest phase at each m (median share of a run's time). The records hold
# every phase's seconds, so a jump in the medians can be traced to a phase.
learner_runs = runs["the paper's learner"]
for m in sorted({r["spec"]["m"] for r in learner_runs}):
    mine = [r["timings"] for r in learner_runs if r["spec"]["m"] == m]
    share = {p: np.median([t.get(p, 0.0) / t["total"] for t in mine]) for p in mine[0] if p != "total"}
    slowest = max(share, key=share.get)
    print(f"m = {m:2d}: {slowest} takes {share[slowest]:.0%} of the time")
