"""
The local CLT on a Boolean slice
================================

On a slice of the cube (inputs ``x ∈ {±1}^n`` with a fixed number of +1 coordinates) the sum
``S = ⟨a, x⟩`` is close to Gaussian in the ordinary sense for almost any coefficients ``a``. The paper needs
more (the talk's "approximation errors"): a *local* CLT, the mass of small windows matching the Gaussian's,
which holds for non-arithmetic ``a`` and fails when ``a`` lies on a lattice; that is where its assumption
that the entries of the Θ's are far from any lattice enters. The distributions here are exact
(:func:`theory.slice_distribution`, by dynamic programming); the window statistic, its normalisation and
the bound 0.25 of :func:`theory.check_local_clt` are ours.
"""

# %%
# Two kinds of coefficients on one slice
# --------------------------------------
# Integers from {1, 2, 3} (arithmetic) and Gaussian coefficients (non-arithmetic), ``n = 24``, weight 12.
# Real coefficients are rounded to a grid of spacing ``quantum``; ``check_local_clt`` brackets the
# rounding's effect, so its verdict is conservative.
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm

from theory import check_local_clt, local_clt_sweep, slice_distribution

rng = np.random.default_rng(0)
n, weight = 24, 12
cases = {"arithmetic: a in {1, 2, 3}": (rng.integers(1, 4, n).astype(float), None),
         "non-arithmetic: a Gaussian": (rng.standard_normal(n), 1e-4)}

fig, axes = plt.subplots(1, 2, figsize=(9, 4.0), sharey=True, layout="constrained")
for ax, (label, (a, quantum)) in zip(axes, cases.items(), strict=True):
    dist = slice_distribution(a, weight, quantum=quantum)
    sd = np.sqrt(dist.variance)
    delta = sd / 8  # window width for the picture (ours)
    edges = dist.mean + delta * np.arange(-24, 25)
    mass, _ = np.histogram(dist.values, bins=edges, weights=dist.probabilities)
    z = (edges - dist.mean) / sd
    ax.stairs(mass, z, fill=True, alpha=0.6, label="P(S in window), exact")
    ax.plot((z[:-1] + z[1:]) / 2, np.diff(norm.cdf(z)), "k.-", ms=3, label="Gaussian mass")
    r = check_local_clt(a, weight, delta=delta, quantum=quantum)
    print(f"{label}: local error {r.measured:.3f} in [{r.interval[0]:.3f}, {r.interval[1]:.3f}] "
          f"(bound {r.bound}): {'holds' if r.holds else 'FAILS'}; Kolmogorov error {r.details['kolmogorov']:.3f}")
    ax.set_title(f"{label}\nlocal error {r.measured:.2f}", fontsize=10)
    ax.set_xlabel("(⟨a, x⟩ − E S) / σ, windows of width σ/8")
axes[0].set_ylabel("probability")
# one legend for both panels, below them, off the data
fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=9)

# %%
# Against n
# ---------
# :func:`theory.local_clt_sweep` draws fresh coefficients for each ``n``, scaled to σ = 1, and uses
# windows of width ``δ = 1/(4√n)``. The ordinary CLT's error (the Kolmogorov distance) falls with ``n`` for
# both kinds, for lattice coefficients like ``1/√n`` (printed: √n times it); the local error falls only for
# the non-arithmetic ones.
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
for kind, color in (("arithmetic", "C3"), ("nonarithmetic", "C0")):
    sweep = local_clt_sweep(ns=(16, 32, 64), kind=kind, rng=1)
    ax.loglog(sweep.ns, sweep.local_error, "o-", color=color, label=f"{kind}: local error")
    ax.loglog(sweep.ns, sweep.kolmogorov, "s--", color=color, label=f"{kind}: Kolmogorov distance")
    print(f"{kind:13s} n = {sweep.ns}: local {np.round(sweep.local_error, 3)}, "
          f"Kolmogorov {np.round(sweep.kolmogorov, 4)}, √n·Kolmogorov {np.round(sweep.sqrt_n_kolmogorov, 3)}")
ax.axhline(sweep.results[0].bound, color="k", lw=0.8, label="bound of the check (ours)")
ax.set_xticks(sweep.ns, [str(v) for v in sweep.ns])
ax.minorticks_off()
ax.set_xlabel("n (weight n/2)")
ax.set_ylabel("error")
fig.legend(loc="outside right center", fontsize=9)  # beside the axes, off the data
