"""
PyTorch in and out
==================

Convert a ``torch.nn.MultiheadAttention`` without biases to the paper's layer
``F(X) = Σ_i softmax(X Θ_i Xᵀ) X W_i`` and back. Head ``i`` of the torch module gives
``Θ_i = W_{Q,i}ᵀ W_{K,i} / √d_h`` and ``W_i = W_{V,i}ᵀ W_O[:, s_i]ᵀ``, with ``s_i`` the head's ``d_h = d/m``
columns, so its Θ_i and W_i have rank at most ``d/m``. The layer is the paper's; the conversion (from
torch's packing of the weights) is this toolkit's, and :func:`learner.from_torch` documents its output as
equal to the module's to rounding. Without torch (the ``torch`` extra) the example says so and stops.
"""

# %%
# Torch to the paper's layer, and back
# ------------------------------------
import matplotlib.pyplot as plt
import numpy as np

try:
    import torch
except ImportError:
    torch = None
    print("torch is not installed (the `torch` extra): nothing to convert.")

if torch is not None:
    from learner import TorchConversionError, from_torch, random_layer, sample_inputs, to_torch_mha

    torch.manual_seed(0)  # the module's initial weights come from torch's global generator
    mha = torch.nn.MultiheadAttention(12, 3, bias=False, batch_first=True, dtype=torch.float64).eval()
    layer = from_torch(mha)
    X = sample_inputs(64, 4, 12, rng=1)
    x = torch.from_numpy(X)
    with torch.no_grad():
        out, weights = mha(x, x, x, average_attn_weights=False)
    print(f"m = {layer.m}, d = {layer.d}; max |F(X) − torch| = {np.abs(layer(X) - out.numpy()).max():.1e}")
    print("ranks of the heads' Θ_i:", [int(np.linalg.matrix_rank(t)) for t in layer.thetas])
    back = to_torch_mha(layer, batch_first=True)
    with torch.no_grad():
        again, _ = back(x, x, x)
    print(f"round trip: max |torch(back) − torch| = {np.abs(again.numpy() - out.numpy()).max():.1e}")

# %%
# The converse needs that rank: a planted layer of :func:`learner.random_layer` has full-rank heads, and
# :func:`learner.to_torch_mha` refuses it, saying why (:func:`learner.to_torch` wraps any layer instead).
if torch is not None:
    try:
        to_torch_mha(random_layer(3, 12, rng=0))
    except TorchConversionError as exc:
        print(f"refused: {exc}")

# %%
# The three heads' attention patterns on one input, from the converted layer and from torch.
if torch is not None:
    fig, axes = plt.subplots(2, 3, figsize=(7, 4.4))
    ours = layer.attention(X[:1])[0]
    for i in range(layer.m):
        axes[0, i].imshow(ours[i], vmin=0, vmax=1)
        axes[1, i].imshow(weights.numpy()[0, i], vmin=0, vmax=1)
        axes[0, i].set_title(f"head {i}", fontsize=9)
    axes[0, 0].set_ylabel("learner")
    axes[1, 0].set_ylabel("torch")
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    print(f"max |pattern difference| = {np.abs(ours - weights.numpy()[0]).max():.1e}")
    fig.tight_layout()
