"""A CPU judge's linear layers with their weights prepacked for oneDNN: faster products.

torch's CPU linear hands the weight to the matrix library as it is stored, and the library lays
it out for its kernel on every call. Laid out once at load (`_reorder_linear_weight`, the op
torch's own compiler uses for CPU linears), float32 products on the judges' layer shapes ran 2-5x
faster on 2 cores (docs/benchmarks.md), and the float32 judges' runs 1.7-2.2x.

The numbers differ from torch's kernel in the last bits, but a row's result does not depend on
the rows beside it, so a sample's scores still do not depend on its batch (why float32 is the CPU
default), with one exception handled here: oneDNN computes a single row with another kernel, so a
single row is computed as a pair (tests/test_engine_speed.py).

bfloat16 is prepacked where the CPU computes it natively (where it does not, bfloat16 is not a
judge's default). Its products gain less (Qwen-1.5B's runs 1.04-1.4x, docs/benchmarks.md), and its
weights come memory-mapped from the model file: the file stays mapped, with every page that
packing read, while any tensor of it is alive. So what is not packed (embeddings, norms) is copied
out of it, and the mapping goes; the process then holds what plain bfloat16 held (Qwen-1.5B: 3.7 GB).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..device import native_bf16

BATCH_HINT = 32  # the rows oneDNN lays the weight out for; any number of rows may then be fed


def packable(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether a judge's weights are prepacked on `device` in `dtype` with this torch; known without a
    model, so the judge's identity (which keys the answer cache) can say so before loading."""
    mkldnn = torch.ops.mkldnn
    fast = dtype == torch.float32 or (dtype == torch.bfloat16 and native_bf16())
    return (device.type == "cpu" and fast and torch.backends.mkldnn.is_available()
            and hasattr(mkldnn, "_reorder_linear_weight") and hasattr(mkldnn, "_linear_pointwise"))


class PackedLinear(nn.Module):
    """A linear layer whose weight is laid out for oneDNN's kernel once, not on every call."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.register_buffer("weight_packed", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), BATCH_HINT))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())  # out of the file
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
    # Where each layer sits, not the layers: each original is then freed as soon as it is replaced,
    # so a load never holds two copies of every weight.
    places = [(parent, name) for parent in model.modules() for name, child in parent.named_children()
              if isinstance(child, nn.Linear)]
    for parent, name in places:
        setattr(parent, name, make(getattr(parent, name)))
    return len(places)


def pack_linears(model: nn.Module) -> int:
    """Prepack every linear layer of a CPU model (see `packable`); the count replaced. The model's
    other weights are then copied out of the model file, so that its memory map is released."""
    count = replace_linears(model, PackedLinear)
    for parameter in model.parameters():
        parameter.data = parameter.data.clone()
    return count
