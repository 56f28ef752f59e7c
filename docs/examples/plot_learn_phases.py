"""
Learn a planted layer, phase by phase
=====================================

Plant a two-head layer, learn it from examples with the paper's six-phase algorithm
(:func:`learner.learn`), and plot what each phase cost: its seconds and the examples it drew. The
algorithm's outline is the paper's; the defaults, the certification details and the forecast are ours.
"""

# %%
# Plant and learn. ``truth`` is passed for diagnostics only (errors against the planted layer); the
# learner sees examples through the oracle.
import matplotlib.pyplot as plt
import numpy as np

from learner import LayerOracle, learn, random_layer

truth = random_layer(2, 8, logit_scale=1.0, rng=0)
result = learn(LayerOracle(truth, 2, rng=1), m=2, truth=truth)
print(result.message)
print(f"relative error of F on held-out inputs: {result.errors['relative_error']:.2e}")

# %%
# Per-phase cost. Phases 1–4 draw examples (``diagnostics[phase]["examples"]``); phases 5 and 6 work on
# what was drawn (phase 6 draws a small held-out set of its own).
phases = [p for p in result.timings if p != "total"]
seconds = [result.timings[p] for p in phases]
examples = [result.diagnostics[p].get("examples", 0) for p in phases]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
ax1.barh(phases, seconds, color="C0")
ax1.set_xlabel("seconds")
ax1.invert_yaxis()
ax2.barh(phases, np.maximum(examples, 1), color="C1", log=True)
ax2.set_xlabel("examples drawn")
ax2.invert_yaxis()
ax2.set_yticklabels([])
fig.suptitle(f"(m, d, k) = (2, 8, 2): {result.timings['total']:.1f} s, {result.examples_drawn:,} examples")
fig.tight_layout()
