"""
An LWE-style instance and the lattice attack
============================================

The paper's second lower bound rests on LWE-type hardness. Our LWE-style family (the construction is ours)
embeds learning with rounding in a two-token attention layer: a member with secret ``w ∈ Z_q^n`` has one
head per switch of a square wave, and its output entry (1, o) reads off ``round_1(⟨w, b⟩ mod q)``. The
attack here recovers the secret from LWR samples by lattice reduction (fpylll; :func:`lowerbounds.lattice_attack`).
Without fpylll the example shows the instance and skips the attack.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from lowerbounds import fpylll_available, lattice_attack, lwr_hard_instance

q = 7
inst = lwr_hard_instance([2, 0, 4, 2, 3, 1], q)
print(f"n = 6, q = {q}: d = {inst.layer.d}, m = {inst.layer.m} heads")

# %%
# The attack's time against n (fresh secrets; it must reproduce every label to count as a success).
ns, seconds = [4, 6, 8, 10], []
if fpylll_available():
    import time

    rng = np.random.default_rng(0)
    for n in ns:
        secret = rng.integers(0, q, n)
        B = rng.integers(0, 2, (40 * n, n))
        labels = ((B @ secret) % q >= q / 2).astype(int)  # the LWR label round_1(<w, b> mod q)
        t0 = time.perf_counter()
        out = lattice_attack(B, labels, q, secret=secret, rng=1)
        seconds.append(time.perf_counter() - t0)
        print(f"n = {n:2d}: {seconds[-1]:.2f} s, lattice dimension {out.dimension}, labels reproduced: "
              f"{out.success}, the secret itself: {out.matches_secret}")
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.semilogy(ns, seconds, "o-")
    ax.set_xlabel("n (secret dimension)")
    ax.set_ylabel("seconds")
    ax.set_title(f"lattice attack, q = {q}")
    fig.tight_layout()
else:
    print("fpylll is not installed (the `lattice` extra): the attack is skipped.")
