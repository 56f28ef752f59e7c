"""
Lemma checks and their negative controls
========================================

Each check of :mod:`theory` measures one statement the learner rests on and compares it with a bound;
each has a negative control, an instance that breaks the statement's premises, which must fail. A check
whose control passes would test nothing. The statements are the paper's (the one-step lemma, softmax
concentration, the local CLT, the min-norm orthogonality) or ours (the yield prediction); every bound and
every control is ours.
"""

# %%
import matplotlib.pyplot as plt

from theory import CHECKS, run_case

names = list(CHECKS)
results = {(n, which): run_case(n, which, rng=0) for n in names for which in ("default", "control")}
for (n, which), r in results.items():
    print(f"{n:24s} {which:8s} measured {r.measured:.3g}  bound {r.bound:.3g}  holds: {r.holds}")

# %%
# Measured values (dots) against each check's bound (bar): every relation here is ``<=``, so a check holds
# at or below its bar and its control must land above it. A symmetric-log axis shows the exact zeros.
fig, ax = plt.subplots(figsize=(8, 3.6))
for i, n in enumerate(names):
    ax.hlines(results[n, "default"].bound, i - 0.3, i + 0.3, color="k")
    for j, which in enumerate(("default", "control")):
        ax.plot(i - 0.1 + 0.2 * j, results[n, which].measured, "o", color=f"C{j}",
                label=("check" if j == 0 else "negative control") if i == 0 else None)
ax.set_yscale("symlog", linthresh=1e-3)
ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
ax.set_ylabel("measured (bar: bound)")
ax.legend(fontsize=8)
fig.tight_layout()
