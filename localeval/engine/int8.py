"""Weight-only int8 for a judge's linear layers on a CPU (`--dtype int8`).

On a CPU a decoding pass is bound by memory bandwidth: every weight is read once per pass, however
few tokens the pass feeds. Stored as int8 with one scale per output channel (symmetric, the row's
largest magnitude maps to 127), a weight costs a quarter of float32's bytes and half of
bfloat16's. Activations stay bfloat16.

Two ways to multiply, chosen per pass by its width (tokens x rows), both measured on the judges'
layer shapes (docs/benchmarks.md):
- a narrow pass (a decoding step) runs torch's weight-only kernel, which reads the int8 weights
  as they are: 3x faster than bfloat16 weights for one token, 10x faster than float32;
- a wide pass (a prefill) converts the layer to bfloat16 and uses the ordinary matrix product,
  whose blocking the int8 kernel lacks: at 256 tokens 3x faster than the int8 kernel.
The registered judges are GGUF files already quantized (4 to 8 bits), so rounding their
dequantized weights to int8 again loses little; bench measures how little (docs/judges.md).
"""

from __future__ import annotations

import torch
from torch import nn

from .linears import replace_linears

# Widest pass (rows x tokens) the int8 kernel takes; wider ones dequantize. Measured on 2 cores
# (avx512_bf16): the kernel's time grows with the width, the dequantized product's hardly at all,
# and they cross between 8 and 16.
NARROW_PASS = 8
ACTIVATIONS = torch.bfloat16


class Int8Linear(nn.Module):
    """A linear layer whose weight is int8 with one bfloat16 scale per output channel."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        weight = linear.weight.detach().float()  # a copy, rounded in place (a judge's load time counts)
        scale = torch.linalg.vector_norm(weight, ord=float("inf"), dim=1).clamp_(min=torch.finfo(torch.float32).tiny) / 127
        self.register_buffer("weight_int8", weight.div_(scale[:, None]).round_().to(torch.int8))  # within ±127
        self.register_buffer("scale", scale.to(ACTIVATIONS))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(ACTIVATIONS))
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).contiguous()  # the head's input is a strided view of the last tokens
        if flat.shape[0] <= NARROW_PASS:
            out = torch.ops.aten._weight_int8pack_mm(flat, self.weight_int8, self.scale.to(flat.dtype))
        else:  # the scale is per output channel, so it applies after the product
            out = (flat @ self.weight_int8.to(flat.dtype).T) * self.scale
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], self.out_features)


def quantize_linears(model: nn.Module) -> int:
    """Replace every linear layer of `model` (the output head included) by an Int8Linear, in place;
    the count replaced. The model must already be in bfloat16."""
    return replace_linears(model, Int8Linear)
