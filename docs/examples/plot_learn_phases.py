"""
Learn a planted layer, phase by phase
=====================================

Plant a two-head layer, learn it from random labelled examples with :func:`learner.learn`, and plot what
each of the six phases cost: its seconds and the examples it drew. The outline of the algorithm (a crude
estimate of ΣW, sculpting the affine hull of the Θ's, a refined ΣW, the hull's span, a search over it) is
the paper's; the defaults, the certification rule, the repetition of phases 3–5 and the forecast in
phase 4 are this toolkit's choices.
"""

# %%
# Plant and learn
# ---------------
# The learner sees nothing but the examples the oracle hands out; the planted layer is used afterwards, to
# measure the learned layer's error on fresh inputs. (Passing ``truth=`` to :func:`~learner.learn` would
# also record the error of every intermediate estimate, at some extra cost.)
import matplotlib.pyplot as plt

from learner import LayerOracle, learn, random_layer, relative_error

m, d, k = 2, 8, 2
truth = random_layer(m, d, logit_scale=1.0, rng=0)
result = learn(LayerOracle(truth, k, rng=1), m=m)
print(f"success: {result.success} ({result.status}): {result.message}")
print(f"relative error of F against the planted layer: {relative_error(truth, result.layer, k, rng=2):.1e}")

# %%
# Cost per phase
# --------------
# ``result.timings`` has the seconds of every phase, summed over rounds. The examples are in
# ``result.diagnostics``, where phases 3 and 4, run at most ``outer_rounds`` times, report their *last* round
# and list every round's examples under ``rounds``. Each phase stopped when its estimate was good enough
# (``stopped``: the data-driven budgets). Phase 5 works on phase 4's constraints and draws none; phase 6 draws a
# small held-out set, and the certificate (``certificate``) fresh examples for the error bound after it. The
# per-phase totals must add up to ``result.examples_drawn``.
diag = result.diagnostics
phases = [p for p in result.timings if p != "total"]
examples = {p: diag[p].get("examples", 0) for p in phases}
examples["3_refine_sum"] = sum(r["examples"] for r in diag["3_refine_sum"]["rounds"])
examples["4_refined_sculpt"] = sum(r["examples"] for r in diag["4_refined_sculpt"]["rounds"])
print(f"rounds: {len(diag['3_refine_sum']['rounds'])} ({diag['3_refine_sum']['rounds_stopped']}); per-phase "
      f"examples add up to examples_drawn: {sum(examples.values()) == result.examples_drawn} "
      f"({result.examples_drawn:,})")
for p in ("1_crude_sum", "2_crude_sculpt", "3_refine_sum", "4_refined_sculpt"):
    print(f"  {p} stopped: {diag[p]['stopped']}")
for p in phases:
    print(f"  {p:17s} {result.timings[p]:6.2f} s  {examples[p]:>9,} examples")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
ax1.barh(phases, [result.timings[p] for p in phases], color="C0")
ax1.set_xlabel("seconds (this machine, one BLAS thread)")
ax1.invert_yaxis()
bars = ax2.barh(phases, [examples[p] / 1e3 for p in phases], color="C1")
ax2.bar_label(bars, [f"{examples[p]:,}" for p in phases], fontsize=9, padding=2)
ax2.set_xlabel("examples drawn (thousands)")
ax2.set_xlim(0, 1.3 * max(examples.values()) / 1e3)
fig.suptitle(f"(m, d, k) = ({m}, {d}, {k}): {result.timings['total']:.1f} s, "
             f"{result.examples_drawn:,} examples in all")
fig.tight_layout()

# %%
# The examples are fixed by the seeds; the seconds are this machine's and vary from run to run. Which phase
# dominates depends on (m, d, k): here it is
slowest = max(phases, key=result.timings.get)
print(f"{slowest}: {result.timings[slowest] / result.timings['total']:.0%} of the time")
