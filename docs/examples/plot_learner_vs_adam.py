"""
The learner against Adam on one instance
========================================

The same planted layer, learned by the paper's algorithm (:func:`learner.learn`) and by Adam on the
squared loss (:func:`learner.baselines.fit_gradient`, our baseline; the paper analyses no gradient
method). The learner's claim is a guarantee, not a speed-up: on random layers like this one gradient
descent is the economical method, and the learner draws far more examples.
"""

# %%
import time

import matplotlib.pyplot as plt

from learner import LayerOracle, learn, random_layer, relative_error
from learner.baselines import fit_gradient

truth = random_layer(2, 8, logit_scale=1.0, rng=0)
t0 = time.perf_counter()
ours = learn(LayerOracle(truth, 2, rng=1), m=2, truth=truth)
t_ours = time.perf_counter() - t0
t0 = time.perf_counter()
adam = fit_gradient(LayerOracle(truth, 2, rng=5), m=2, max_iter=800, restarts=1, n_train=4000, n_val=1000,
                    rng=6, truth=truth)
t_adam = time.perf_counter() - t0

# %%
# Relative error of F against the planted layer on fresh inputs, time, and examples used.
rows = {"learner": (relative_error(truth, ours.layer, 2, n_samples=4000, rng=7), t_ours, ours.examples_drawn),
        "Adam": (relative_error(truth, adam.layer, 2, n_samples=4000, rng=7), t_adam, adam.examples_drawn)}
for name, (err, sec, n) in rows.items():
    print(f"{name:8s} relative error {err:.1e}   {sec:5.1f} s   {n:,} examples")

fig, axes = plt.subplots(1, 3, figsize=(9, 3))
panels = (("relative error", True), ("seconds", False), ("examples", True))
for i, (ax, (label, log)) in enumerate(zip(axes, panels, strict=True)):
    ax.bar(list(rows), [v[i] for v in rows.values()], color=["C0", "C1"], log=log)
    ax.set_title(label)
fig.tight_layout()
