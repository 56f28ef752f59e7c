"""
Run time against m, from the bundled records
============================================

The paper bounds the learner's time by :math:`(dk)^{O(m^3)}` and shows that exponential dependence on the
number of heads m is unavoidable in the worst case; it reports no experiments. The scaling study whose
records ship with this site is ours: random planted layers (:func:`learner.random_layer`, at a small logit
scale where gradient descent also succeeds), several per m, each learned by the paper's algorithm and by
Adam. This example reads the records back (:func:`learner.study.records.read_record`), summarises them with
the study's own :func:`learner.study.scaling.summarise`, and plots the seconds of every run against m.
"""

# %%
# Read the records
# ----------------
# sphinx-gallery runs examples from their own folder and defines no ``__file__``; the records are in
# ``docs/sweeps/main/runs``, one JSON file per run.
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from learner.study.records import read_record
from learner.study.scaling import summarise

try:
    sweeps = Path(__file__).resolve().parents[1] / "sweeps"
except NameError:
    sweeps = next((p / "sweeps" for p in (Path.cwd(), *Path.cwd().parents) if (p / "sweeps" / "main").is_dir()),
                  None)
if sweeps is None or not (sweeps / "main" / "runs").is_dir():
    raise FileNotFoundError(f"no docs/sweeps/main/runs above {Path.cwd()}")
records = [read_record(p, kind="scaling-run") for p in sorted((sweeps / "main" / "runs").glob("*.json"))]
runs = [r for r in records if r["spec"]["role"] == "eval"]  # the rest tuned Adam's learning rate
print(f"{len(records)} records, {len(runs)} measured runs; logit scales "
      f"{sorted({r['spec']['logit_scale'] for r in runs})}, inputs {sorted({r['spec']['distribution'] for r in runs})}")
summary = summarise(runs)
print(f"success: relative error of F at most {summary['success_tol']:g} on fresh inputs")
for row in summary["rows"]:
    print(f"{row['method']:8s} m = {row['m']}, d = {row['d']}, k = {row['k']}: {row['runs']} runs, "
          f"success {row['success_rate']:.0%}, median {row['median_seconds']:6.1f} s, "
          f"{row['median_examples']:>12,.0f} examples")

# %%
# Seconds per run
# ---------------
# Every run is a dot (spread sideways to stay visible), the medians a line. The cells do not all have the
# same d (printed above): for each (m, k) the study takes the smallest d from 12 up that the toolkit's
# soundness check (:func:`learner.check_setting`, ours) accepts. The seconds are those of the machine that
# ran the study.
labels = {"provable": "the paper's learner", "adam": "Adam (our baseline)"}
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for j, (method, label) in enumerate(labels.items()):
    mine = [r for r in runs if r["spec"]["method"] == method]
    ms = np.array([r["spec"]["m"] for r in mine])
    offset = 0.12 * (2 * j - 1)
    ax.scatter(ms + offset + np.random.default_rng(j).uniform(-0.04, 0.04, len(ms)),
               [r["timings"]["total"] for r in mine], s=10, alpha=0.5, color=f"C{j}")
    rows = [row for row in summary["rows"] if row["method"] == method]
    ax.plot([row["m"] + offset for row in rows], [row["median_seconds"] for row in rows], "o-", color=f"C{j}",
            label=label)
ax.set_yscale("log")
ax.set_xticks(sorted({r["spec"]["m"] for r in runs}))
ax.set_xlabel("heads m")
ax.set_ylabel("seconds per run")
ax.legend()
fig.tight_layout()

# %%
# Where the learner's time goes: its slowest phase in each cell (median share of a run's time). The
# records hold every phase's seconds, so non-monotone medians can be traced to a phase.
for m in sorted({r["spec"]["m"] for r in runs}):
    mine = [r["timings"] for r in runs if r["spec"]["method"] == "provable" and r["spec"]["m"] == m]
    share = {p: np.median([t[p] / t["total"] for t in mine]) for p in mine[0] if p != "total"}
    slowest = max(share, key=share.get)
    print(f"m = {m}: {slowest} takes {share[slowest]:.0%} of the time")
