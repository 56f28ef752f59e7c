"""
PyTorch in and out
==================

Convert a ``torch.nn.MultiheadAttention`` (no biases) to the paper's layer and back. A torch head's Θ_i and
W_i have rank at most ``d/m``; the conversion (ours, from torch's packing of the weights) is exact, and
:func:`learner.from_torch` checks the converted layer against the module's own output before returning it.
Without torch (the ``torch`` extra) the example says so and stops.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

try:
    import torch
except ImportError:
    torch = None
    print("torch is not installed (the `torch` extra): nothing to convert.")

if torch is not None:
    from learner import from_torch, to_torch_mha

    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(12, 3, bias=False, batch_first=True, dtype=torch.float64).eval()
    layer = from_torch(mha)
    X = np.random.default_rng(1).choice([-1.0, 1.0], size=(64, 4, 12))
    x = torch.from_numpy(X)
    with torch.no_grad():
        out, weights = mha(x, x, x, average_attn_weights=False)
    print(f"m = {layer.m}, d = {layer.d}; max |F(X) − torch| = {np.abs(layer(X) - out.numpy()).max():.1e}")
    back = to_torch_mha(layer, batch_first=True)  # like the module it came from
    with torch.no_grad():
        again, _ = back(x, x, x)
    print(f"round trip: max |torch(back) − torch| = {np.abs(again.numpy() - out.numpy()).max():.1e}")
    print("ranks of the heads' Θ_i:", [int(np.linalg.matrix_rank(t)) for t in layer.thetas])

    # %%
    # The three heads' attention patterns on one input, ours and torch's (identical).
    fig, axes = plt.subplots(2, 3, figsize=(7, 4.4))
    ours = layer.attention(X[:1])[0]
    for i in range(3):
        axes[0, i].imshow(ours[i], vmin=0, vmax=1)
        axes[1, i].imshow(weights.numpy()[0, i], vmin=0, vmax=1)
        axes[0, i].set_title(f"head {i}", fontsize=9)
    axes[0, 0].set_ylabel("learner")
    axes[1, 0].set_ylabel("torch")
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
