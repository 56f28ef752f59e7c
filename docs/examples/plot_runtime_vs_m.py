"""
Run time against m, from the bundled records
============================================

The scaling study's records (``docs/sweeps/main``: m = 1..5, k = 2, logit scale 1, ten planted layers per
m, the learner and Adam on each) read back with :func:`learner.study.records.read_record` and plotted:
median seconds per run against the number of heads. The paper bounds the learner's time by
``(dk)^{O(m³)}`` and shows exponential dependence on m is unavoidable in the worst case; these runs
(ours) are on random layers, where gradient descent also succeeds.
"""

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from learner.study.records import read_record

try:
    here = Path(__file__).resolve().parent
except NameError:  # run by sphinx-gallery: the working directory is this folder
    here = Path.cwd()
runs = next(p for p in (here, *here.parents) if (p / "sweeps" / "main" / "runs").is_dir()) / "sweeps" / "main"
records = [read_record(p) for p in sorted((runs / "runs").glob("*.json"))]
evals = [r for r in records if r["spec"]["role"] == "eval" and r["outcome"] == "finished"]
print(f"{len(evals)} runs read from {runs.name}/runs")

# %%
fig, ax = plt.subplots(figsize=(6, 3.6))
for method, label in (("provable", "the paper's learner"), ("adam", "Adam (ours)")):
    ms = sorted({r["spec"]["m"] for r in evals if r["spec"]["method"] == method})
    med = [np.median([r["timings"]["total"] for r in evals
                      if (r["spec"]["method"], r["spec"]["m"]) == (method, m)]) for m in ms]
    ax.semilogy(ms, med, "o-", label=label)
    print(label, {m: round(float(t), 1) for m, t in zip(ms, med, strict=True)})
ax.set_xlabel("heads m")
ax.set_ylabel("median seconds per run")
ax.set_xticks(range(1, 6))
ax.legend()
fig.tight_layout()
