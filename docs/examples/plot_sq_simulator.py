"""
An SQ-hard instance and the query simulator
===========================================

The paper proves that any statistical-query learner of multi-head attention needs ``d^Ω(m)`` queries.
Our instance of that statement (the construction is ours) hides a subset ``S`` of ``m − 1``
coordinates: output entry (1, o) is ``C x_2t + (x_1t − x_2t) χ_S(x_1 ⊙ x_2)``, a parity that distinct
subsets make exactly orthogonal. A correlational searcher against a tolerant oracle
(:func:`lowerbounds.simulate_queries`, ours) needs about ``d^{m−1}`` queries on it, while on a sparse
*linear* control of the same shape it needs about ``d``.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from learner import sample_inputs
from lowerbounds import simulate_queries, sq_hard_instance

inst = sq_hard_instance(12, 3, rng=0)
Z = sample_inputs(4000, 2, 12, rng=1)
half = inst.on_signal_half(Z)
gap = np.abs(inst.layer(Z)[half, 0, inst.o] - inst.formula(Z[half])).max()
print(f"hidden subset {inst.subset}; |F(X)_1o − formula| <= {gap:.1e} on the signal half")
print("paper's conditions this member violates:\n  " + "\n  ".join(inst.assumption_report().failed))

# %%
# Median queries of the search over 9 random hidden subsets per cell, the hard family and the control.
ds = [8, 12, 16, 24]
fig, ax = plt.subplots(figsize=(6, 3.6))
for family, style in (("hard", "-"), ("control", "--")):
    run = simulate_queries(ds, [2, 3], trials=9, family=family, rng=2)
    for m in (2, 3):
        med = [c["median"] for c in run["cells"] if c["m"] == m]
        ax.loglog(ds, med, style, marker="o", color=f"C{m - 2}", label=f"{family}, m = {m}")
    print(family, "fitted slopes in d:", {m: round(s, 2) for m, s in run["slopes"].items()},
          "predicted:", run["predicted"])
ax.set_xlabel("d")
ax.set_ylabel("median queries")
ax.legend(fontsize=8)
fig.tight_layout()
