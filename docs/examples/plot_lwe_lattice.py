"""
An LWE-style instance and the lattice attack
============================================

The paper's statement: under a variant of learning with errors (LWE), no polynomial-time algorithm learns
multi-head attention in the worst case. Which layers carry it is in the full paper, which we do not have.
Our LWE-style family (the construction is ours, its hardness an assumption) embeds *learning with rounding*
in a two-token layer: the member with secret ``w ∈ Z_q^n`` has one head per switch of the square wave
``h ↦ round_1(h mod q)``, and its output entry (1, o) reads off the label of the hidden sum ``h = ⟨w, b⟩``.
The lattice attack (:func:`lowerbounds.lattice_attack`, ours, after the standard primal attack) recovers
``w`` from samples by lattice reduction; it needs fpylll, and without it this example skips the attack.
"""

# %%
# The smallest member, and one with n = 8
# ---------------------------------------
# :func:`lowerbounds.named_lwr_instance` gives the family's named members (:data:`lowerbounds.NAMED_LWR`);
# :func:`lowerbounds.lwr_hard_instance` builds the member of any secret. Here :func:`lowerbounds.sample_lwr`
# draws a uniform secret with 400 labelled public vectors ``b ∈ {0, 1}^n``.
import matplotlib.pyplot as plt
import numpy as np

from learner import sample_inputs
from lowerbounds import (
    NAMED_LWR,
    LWRParams,
    fpylll_available,
    lattice_attack,
    lwr_hard_instance,
    lwr_predictor,
    named_lwr_instance,
    predictor_accuracy,
    sample_lwr,
)

small = named_lwr_instance("one-slab")
print(f"one-slab: {NAMED_LWR['one-slab']['about']}; d = {small.d}, m = {small.m}")

q = 7
draw = sample_lwr(LWRParams(8, q), 400, rng=0)
inst = lwr_hard_instance(draw.secret, q)
print(f"secret {draw.secret}, q = {q}: d = {inst.d}, m = {inst.m} heads; the formula holds to "
      f"{inst.sharpness_error:.1e} where it is claimed")

# %%
# What the layer computes: on inputs where the formula is claimed and the reader coordinates differ,
# ``(F(X)_1o − C x_2t) / (x_1t − x_2t)`` is the label of the hidden sum, a square wave of period ``q``.
X = sample_inputs(4000, 2, inst.d, rng=1)
t, o = inst.layout.t, inst.layout.o
keep = inst.on_signal_half(X) & (X[:, 0, t] != X[:, 1, t])
X = X[keep]
read = (inst.layer(X)[:, 0, o] - inst.total * X[:, 1, t]) / (X[:, 0, t] - X[:, 1, t])
h = inst.hidden_sum(X)
print(f"{len(X)} such inputs of 4000; max |read − round_1(h mod q)| = {np.abs(read - inst.target(h)).max():.1e}")
fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
ax.plot(h, read, "o", ms=4, alpha=0.3, label="the layer, on random inputs")
hs = np.arange(inst.max_sum + 1)
ax.step(hs, inst.target(hs), "k", where="mid", lw=0.8, label="round_1(h mod q)")
ax.set_xticks(hs[::2])
ax.set_xlabel("hidden sum h = ⟨w, b⟩")
ax.set_ylabel("label read off F")
fig.legend(loc="outside right upper", fontsize=9)  # beside the axes, off the data

# %%
# So whoever predicts F well enough predicts LWR labels, which the hardness assumption says no efficient
# algorithm can: that is the reduction (ours) behind the family. :func:`lowerbounds.lwr_predictor` turns a
# predictor of F into one of the labels; here the planted layer itself, on the 400 public vectors:
accuracy = predictor_accuracy(lwr_predictor(inst.layer, inst.layout), draw.public)
print(f"labels predicted by the layer: {accuracy:.1%} of {len(draw.public.labels)}")

# %%
# The lattice attack
# ------------------
# It sees only the public vectors and labels; ``secret`` only fills in ``matches_secret``.
if fpylll_available():
    out = lattice_attack(draw.public.B, draw.public.labels, q, secret=draw.secret, rng=2)
    print(f"success: {out.success}; the secret itself: {out.matches_secret}; {out.message}")
else:
    print("fpylll is not installed here (the `lattice` extra), so the lattice attack is skipped; "
          "the instance above does not need it.")
