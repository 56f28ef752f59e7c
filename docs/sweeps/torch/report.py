"""What the assumption report says about default-initialised torch layers (README, torch section).

Run: python docs/sweeps/torch/report.py  (needs the torch extra; prints a Markdown table).
"""
import numpy as np
import torch

from learner import assumptions, from_torch

SETTINGS = [(8, 2, 2), (8, 4, 2), (12, 3, 2), (12, 6, 2), (16, 4, 2), (16, 8, 2), (16, 2, 4), (24, 4, 2), (32, 4, 4)]
SEEDS = range(3)

print("| embed_dim d | heads m | k | d_h = d/m | rank Θ_i, W_i | ‖Θ_i‖_F (median) | stable rank Θ (min) "
      "| stable rank W (min) | max \\|cos Θ\\| | report | rows failed (of 3 layers) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for d, m, k in SETTINGS:
    failed, fro, srt, srw, cos, ranks, oks = {}, [], [], [], [], set(), []
    for seed in SEEDS:
        torch.manual_seed(seed)
        layer = from_torch(torch.nn.MultiheadAttention(d, m, bias=False))  # torch's default init, float32
        rep = assumptions(layer, k=k)
        oks.append(rep.ok)
        for name in rep.failed:
            failed[name] = failed.get(name, 0) + 1
        fro += list(np.linalg.norm(layer.thetas.reshape(m, -1), axis=1))
        srt.append(rep["theta_stable_rank"].value)
        srw.append(rep["w_stable_rank"].value)
        cos.append(rep["theta_incoherence"].value)
        ranks |= {int(np.linalg.matrix_rank(a)) for a in list(layer.thetas) + list(layer.ws)}
    rows = ", ".join(f"{name} ({n})" for name, n in sorted(failed.items())) or "none"
    print(f"| {d} | {m} | {k} | {d // m} | {sorted(ranks)} | {np.median(fro):.2f} | {min(srt):.2f} | {min(srw):.2f} "
          f"| {max(cos):.2f} | {sum(oks)}/{len(oks)} pass | {rows} |")
