"""Mass of D in a ball around 0: exact enumeration of the cube (k = 2) against the Gaussian, row and slice laws."""
import math
import sys

import numpy as np

from learner import random_layer
from theory.yield_model import _conditional_law, _window_probability, disagreement_moments

m, d = int(sys.argv[1]), int(sys.argv[2])
layer = random_layer(m, d, logit_scale=1.0, rng=int(sys.argv[3]) if len(sys.argv) > 3 else 0)
T = layer.thetas
q = m - 1
k = 2
cube = 1.0 - 2.0 * ((np.arange(2**d)[:, None] >> np.arange(d)) & 1)
Dl = T[1:] - T[:1]
radii = [0.25, 0.5, 1.0]
exact = np.zeros(len(radii))
U_all = np.einsum('bc,ice->bie', cube, Dl)
for a in range(2**d):
    D = np.einsum('ie,be->bi', U_all[a], cube - cube[a])
    nr = np.sqrt((D**2).sum(1))
    r_ = (cube != cube[a]).sum(1)
    okr = (r_ > 0) & (r_ < d)  # x_j = ±x_a left out: a fixed D, and an ill-posed row
    exact += np.array([((nr < h) & okr).mean() for h in radii])
exact /= 2**d
mean, cov = disagreement_moments(T, 2)
pmf0 = 2.0**-d
rng = np.random.default_rng(0)
def mass(mu, C, h, draws=256):
    b = mu.shape[0]
    V = np.broadcast_to(np.eye(q), (b, q, q)).copy()
    s = np.full((b, q), 1.0 / h)
    return _window_probability(V, s, mu, C, 1.0, draws, rng)
# gaussian
g = (1 - 2 * pmf0) * np.array([mass(mean[None, None], cov[None, None], h, 20000)[0] for h in radii])
# row: average over all x_a
mu_r, C_r, _, reg = _conditional_law(T, cube, 2)
row = (1 - 2 * pmf0) * np.array([(mass(mu_r[reg], C_r[reg], h) * 1).sum() / 2**d for h in radii])
# slice: average over x_a and r with binomial weights
pmf = np.array([math.comb(d, r) for r in range(d + 1)]) / 2**d
sl = np.zeros(len(radii))
for r in range(d + 1):
    if r in (0, d):
        continue
    mu_s, C_s, _, reg_s = _conditional_law(T, cube, 2, np.full((2**d, 1), r))
    sl += pmf[r] * np.array([mass(mu_s[reg_s], C_s[reg_s], h).sum() / 2**d for h in radii])
for i, h in enumerate(radii):
    print(f"m={m} d={d} h={h}: exact {exact[i]:.4g}  gaussian {g[i]:.4g} ({g[i]/exact[i]:.3f})  "
          f"row {row[i]:.4g} ({row[i]/exact[i]:.3f})  slice {sl[i]:.4g} ({sl[i]/exact[i]:.3f})")
