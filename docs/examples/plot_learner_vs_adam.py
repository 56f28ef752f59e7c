"""
The learner against Adam on one instance
========================================

The same planted layer learned two ways: by the paper's algorithm (:func:`learner.learn`) and by Adam on
the squared loss (:func:`learner.baselines.fit_gradient`). The baseline is ours: the paper analyses no
gradient method. The learner's claim is a guarantee under the paper's conditions, not speed; which method is
cheaper on this layer, in seconds and in examples, is printed below from the two runs themselves.
"""

# %%
# Both methods on one instance
# ----------------------------
# Each gets its own oracle on the same layer; neither sees the layer itself. Adam uses one restart, 2,000
# training and 500 validation examples, and the larger of the two learning rates the scaling study tunes
# over (0.01 and 0.03).
import matplotlib.pyplot as plt

from learner import LayerOracle, learn, random_layer, relative_error
from learner.baselines import fit_gradient

m, d, k = 2, 8, 2
truth = random_layer(m, d, logit_scale=1.0, rng=0)
ours = learn(LayerOracle(truth, k, rng=1), m=m)
adam = fit_gradient(LayerOracle(truth, k, rng=2), m=m, lr=0.03, max_iter=1500, restarts=1,
                    n_train=2000, n_val=500, rng=3)
print(f"learner: {ours.message}")
print(f"Adam:    {adam.status}, stopped by {adam.diagnostics['fit']['stopped'][0]!r} after "
      f"{adam.diagnostics['fit']['iterations'][0]} iterations")

# %%
# Error, time and examples
# ------------------------
# The relative error of F against the planted layer is measured for both on the same 4,000 fresh inputs;
# the seconds are each result's own ``timings["total"]``.
rows = {name: (relative_error(truth, res.layer, k, n_samples=4000, rng=4), res.timings["total"],
               res.examples_drawn) for name, res in (("learner", ours), ("Adam", adam))}
for name, (err, sec, n) in rows.items():
    print(f"{name:8s} relative error {err:.1e}   {sec:5.2f} s   {n:>9,} examples")
print(f"examples, learner / Adam: {rows['learner'][2] / rows['Adam'][2]:.0f}")
for what, i, fmt in (("seconds", 1, "{:.2f} s"), ("examples", 2, "{:,}")):
    cheaper, dearer = sorted(rows, key=lambda name: rows[name][i])
    print(f"cheaper in {what}: {cheaper} ({fmt.format(rows[cheaper][i])} against "
          f"{fmt.format(rows[dearer][i])} for {dearer})")

fig, axes = plt.subplots(1, 3, figsize=(9, 3))
panels = (("relative error of F", "{:.0e}"), ("seconds", "{:.1f}"), ("examples drawn", "{:,}"))
for i, (ax, (title, fmt)) in enumerate(zip(axes, panels, strict=True)):
    for j, values in enumerate(rows.values()):
        ax.plot(j, values[i], "o", ms=9, color=f"C{j}")
        ax.annotate(fmt.format(values[i]), (j, values[i]), xytext=(8, 0), textcoords="offset points",
                    va="center", fontsize=9)
    ax.set_yscale("log")  # the two methods differ by orders of magnitude in every panel
    ax.set_xticks(range(len(rows)), list(rows))
    ax.set_xlim(-0.5, len(rows) - 0.2)
    ax.set_title(title, fontsize=10)
fig.tight_layout()

# %%
# Each method stops at its own criterion, the learner's far stricter than Adam's; the scaling studies judge
# both by a common one, a relative error of F at most 1e-3. Over many layers and larger m, see
# :ref:`sphx_glr_auto_examples_plot_runtime_vs_m.py`.
print(f"learner's own criterion: held-out relative error <= {ours.diagnostics['0_setting']['config']['success_tol']:g}")
print(f"Adam's own criterion:    validation relative error <= {adam.diagnostics['fit']['success_tol']:g}")
