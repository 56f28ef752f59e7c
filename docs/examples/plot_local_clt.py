"""
The local CLT on a Boolean slice
================================

On a slice of the cube (inputs with a fixed number of +1 coordinates), the sum ``S = ⟨a, x⟩`` is close to
Gaussian *at fine scales* when the coefficients ``a`` are non-arithmetic, but not when they lie on a
lattice: integer coefficients put all the mass on a grid. That is why the paper assumes the entries of
the Θ's are far from any lattice (a condition from the talk's "fine print"): certification needs the
heads' logit disagreements to fall in small windows near 0 often enough. The distribution here is exact
(:func:`theory.slice_distribution`, by dynamic programming); the windows and the comparison are ours.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm

from theory import slice_distribution

rng = np.random.default_rng(0)
n, weight = 24, 12
cases = {"arithmetic (integers)": (rng.integers(1, 4, n).astype(float), None),
         "non-arithmetic": (rng.uniform(1, 3, n), 1e-3)}

# %%
# The mass of windows of width δ = σ/8 against the Gaussian's, over the central range.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
for ax, (label, (a, quantum)) in zip(axes, cases.items(), strict=True):
    dist = slice_distribution(a, weight, quantum=quantum)
    sd = np.sqrt(dist.variance)
    delta = sd / 8
    edges = dist.mean + np.arange(-2.5 * sd, 2.5 * sd, delta)
    values, probs = np.asarray(dist.values), np.asarray(dist.probabilities)
    mass = [probs[(values >= t) & (values < t + delta)].sum() for t in edges]
    gauss = norm.cdf(edges + delta, dist.mean, sd) - norm.cdf(edges, dist.mean, sd)
    ax.bar(edges, mass, width=delta, align="edge", alpha=0.6, label="exact window mass")
    ax.plot(edges + delta / 2, gauss, "k.-", label="Gaussian")
    worst = np.max(np.abs(np.array(mass) - gauss)) / gauss.max()
    print(f"{label}: worst window error / peak window mass = {worst:.3f}")
    ax.set_title(f"{label}: error {worst:.2f} of the peak", fontsize=9)
    ax.set_xlabel("⟨a, x⟩")
axes[0].set_ylabel("P(S in window)")
axes[1].legend(fontsize=8)
fig.tight_layout()
