"""A CPU judge's linear layers with their weights prepacked for oneDNN: the same products, faster.

torch's CPU linear hands the weight to the matrix library as it is stored, and the library lays
it out for its kernel on every call. Laid out once at load (`_reorder_linear_weight`, the op
torch's own compiler uses for CPU linears), the products on the judges' layer shapes ran, on 2
cores with avx512_bf16 (docs/benchmarks.md): float32 2-5x faster, bfloat16 1.4-1.7x at decoding
widths and 1.05-1.3x at prefill widths.

The numbers: bfloat16 products are the same bit for bit. float32 ones differ from torch's kernel
in the last bits, but a row's result does not depend on the rows beside it, so a sample's scores
still do not depend on its batch, with one exception handled here: oneDNN computes a single row
with another kernel, so a single row is computed as a pair (tests/test_engine_speed.py).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

BATCH_HINT = 32  # the rows oneDNN lays the weight out for; any number of rows may then be fed
PACKABLE = (torch.float32, torch.bfloat16)


def packable(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether this torch can prepack a judge's weights on `device` in `dtype`; known without a model,
    so the judge's identity (which keys the answer cache) can say so before loading."""
    mkldnn = torch.ops.mkldnn
    if device.type != "cpu" or dtype not in PACKABLE or not torch.backends.mkldnn.is_available():
        return False
    if not (hasattr(mkldnn, "_reorder_linear_weight") and hasattr(mkldnn, "_linear_pointwise")):
        return False
    return dtype != torch.bfloat16 or mkldnn._is_mkldnn_bf16_supported()


class PackedLinear(nn.Module):
    """A linear layer whose weight is laid out for oneDNN's kernel once, not on every call."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.register_buffer("weight_packed", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), BATCH_HINT))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)
        single = flat.shape[0] == 1
        if single:  # oneDNN's one-row kernel sums in another order: as a pair, a row gets what it gets in a batch
            flat = flat.expand(2, -1)
        out = torch.ops.mkldnn._linear_pointwise(flat.contiguous(), self.weight_packed, self.bias, "none", [], "")
        return (out[:1] if single else out).reshape(*x.shape[:-1], self.out_features)


def replace_linears(model: nn.Module, make: Callable[[nn.Linear], nn.Module]) -> int:
    """Replace every linear layer of `model` (the output head included) by `make(layer)`, in place;
    the count replaced. A head tied to the input embeddings gets its own copy: the embedding lookup
    reads one row per token and keeps its weight."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                setattr(parent, name, make(child))
                replaced += 1
    return replaced


def pack_linears(model: nn.Module) -> int:
    """Prepack every linear layer of a CPU model (see `packable`); the count replaced."""
    return replace_linears(model, PackedLinear)
