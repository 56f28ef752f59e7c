"""
An SQ-hard instance and the query simulator
===========================================

The paper's statement: any statistical-query (SQ) algorithm that learns multi-head attention needs
``d^Ω(m)`` queries or inverse tolerance in the worst case. Which layers carry that bound is in the full
paper, which we do not have; the family here is ours. A member on two tokens hides a subset ``S`` of
``m − 1`` coordinates, and its output entry (1, o) is ``C x_2t + (x_1t − x_2t) χ_S(x_1 ⊙ x_2)``: a parity,
and distinct subsets give exactly orthogonal signals. The simulator (:func:`lowerbounds.simulate_queries`,
ours) runs a correlational search against an oracle that answers within a tolerance, on this family and on
a sparse *linear* control of the same shape.
"""

# %%
# One member
# ----------
# The layer computes the stated formula on every input (checked here on random ones), and, like every
# member, it breaks some of the paper's non-degeneracy conditions: the bound is a worst-case statement,
# not one about the layers the learner is guaranteed to learn.
import matplotlib.pyplot as plt
import numpy as np

from learner import sample_inputs
from lowerbounds import simulate_queries, sq_hard_instance

inst = sq_hard_instance(12, 3, rng=0)
Z = sample_inputs(4000, 2, 12, rng=1)
gap = np.abs(inst.layer(Z)[:, 0, inst.o] - inst.formula(Z)).max()
print(f"d = {inst.d}, m = {inst.m}: hidden subset {inst.subset}; max |F(X)_1o − formula| = {gap:.1e}")
print("the paper's conditions this member violates (as the toolkit measures them):")
print("\n".join(f"  {name}" for name in inst.assumption_report().failed))

# %%
# Queries against d
# -----------------
# Median queries over 25 random hidden subsets per cell. The search asks about every candidate set of
# size 1, then 2, and so on; on the hard family every degree below ``m − 1`` answers zero, so it must wade
# through the ``C(d − 1, m − 1)`` candidates of the last degree (dotted: half of them). On the control the
# hidden coordinates show up among the ``d − 1`` degree-1 candidates. For ``m = 2`` the hidden parity is a
# single coordinate, which is linear: the two families coincide.
ds, ms = [8, 12, 16, 24, 32], [2, 3]
fig, ax = plt.subplots(figsize=(6.5, 4.6), layout="constrained")
for family, style in (("hard", "o-"), ("control", "s--")):
    run = simulate_queries(ds, ms, trials=25, family=family, rng=2)
    for m in ms:
        cells = [c for c in run["cells"] if c["m"] == m]
        ax.loglog(ds, [c["median"] for c in cells], style, color=f"C{m - 2}", label=f"{family}, m = {m}")
        if family == "hard":
            ax.loglog(ds, [c["candidates"] / 2 for c in cells], ":", color=f"C{m - 2}",
                      label=f"C(d − 1, {m - 1}) / 2")
    print(f"{family:7s} slopes of log(median queries) in log d: "
          f"{ {m: round(s, 2) for m, s in run['slopes'].items()} }, predicted {run['predicted']}")
ax.set_xticks(ds, [str(d) for d in ds])
ax.minorticks_off()
ax.set_xlabel("d")
ax.set_ylabel("median queries")
# below the axes, off the data: a column per m (its colour), the families by line style
handles, labels = ax.get_legend_handles_labels()
order = sorted(range(len(labels)), key=lambda i: handles[i].get_color())
fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center", ncol=len(ms),
           fontsize=9)

# %%
# The slopes (``m − 1`` predicted for the hard family, 1 for the control) are what the search needs; that
# no SQ learner does much better on this family is the content of the lower bound of
# :class:`lowerbounds.HardFamily`, by a standard argument that we state for this family.
