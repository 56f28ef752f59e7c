"""
A lemma check and its negative control
======================================

Each check of :mod:`theory` measures one statement the learner rests on and holds the measurement against
a bound; each comes with a *negative control*, an instance that breaks the statement's premises and must
fail. A check whose control passes would test nothing. The statements are the paper's (as its abstract and
the author's talk give them), standard geometry (the min-norm point) or ours (the yield prediction); every
quantity, bound and control is ours, and each result says which is which in its ``source`` field.
"""

# %%
# One check in detail: the one-step estimate of ΣW
# ------------------------------------------------
# The paper's statement: one gradient step from W = 0 on a single Θ = 0 head estimates ΣW_i, to an error
# that shrinks with the stable rank of the Θ_i. The check computes the relative error exactly, over every
# Boolean input of a small layer; the control is a sharp rank-one head, where the estimate is poor.
import matplotlib.pyplot as plt

from theory import CHECKS, run_case

check, control = run_case("one_step", rng=0), run_case("one_step", "control", rng=0)
print("source:", check.source)
for r in (check, control):
    print(f"\n{r.summary()}\n  parameters: {r.parameters}")

# %%
# Every registered check
# ----------------------
# The same for the five checks of the registry (``python -m theory list``), each at its default case and
# its control. Monte Carlo checks report a confidence interval (the error bars; the verdict uses its far
# end), exact ones a point.
done = {("one_step", "default"): check, ("one_step", "control"): control}
results = {(n, which): done.get((n, which)) or run_case(n, which, rng=0)
           for n in CHECKS for which in ("default", "control")}
for (n, which), r in results.items():
    print(f"{n:23s} {which:8s} {r.measured:9.3g} {r.relation} {r.bound:.3g}: {'holds' if r.holds else 'FAILS'}")

fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
for i, n in enumerate(CHECKS):
    ax.hlines(results[n, "default"].bound, i - 0.3, i + 0.3, color="k", label="bound" if i == 0 else None)
    for j, which in enumerate(("default", "control")):
        r = results[n, which]
        lo, hi = r.interval
        ax.errorbar(i - 0.1 + 0.2 * j, r.measured, yerr=[[r.measured - lo], [hi - r.measured]], fmt="o",
                    color=f"C{j}", capsize=3, label=("check" if j == 0 else "negative control") if i == 0 else None)
ax.set_yscale("symlog", linthresh=1e-3)  # linear near 0: one check measures an exact zero
ax.set_xticks(range(len(CHECKS)), list(CHECKS), rotation=30, ha="right", fontsize=9)
ax.set_ylabel("measured (bar: bound)")
fig.legend(loc="outside right upper", fontsize=9)  # beside the axes, off the data

# %%
# Every relation here is ``measured <= bound``, so a check holds at or below its bar and its control must
# land above it:
print("relations:", {r.relation for r in results.values()})
print("every check holds and every control fails:",
      all(results[n, "default"].holds and not results[n, "control"].holds for n in CHECKS))
