"""transformers' SDPA attention, without the copy of the grouped key/value heads on wide passes.

The judges use grouped-query attention (Qwen2.5-1.5B: 12 query heads share 2 key/value heads).
For a pass of one token per row, transformers folds the query heads onto the shared ones; for a
pass of several (a prefill, forced tokens fed together) it copies every cached key and value once
per query head sharing it (`repeat_kv`) before calling SDPA. With 32 rows of 1,200 cached tokens
that copy made a 4-token pass cost 15x what SDPA's own grouped attention (`enable_gqa`) costs on a
CPU, and both give the same numbers bit for bit (measured, float32 and bfloat16). So: SDPA's
grouped attention on a CPU's passes of several tokens, transformers' own function everywhere else.

On CUDA, attention runs without cuDNN's kernel (`kernels`): cuDNN builds an execution plan for each
new shape, about 40 ms of host time on an H200 (torch 2.11, cuDNN 9.19), and a judge's shapes change
on every pass, as its cache grows by the tokens fed. That plan cost was most of a decoding pass
(docs/benchmarks.md, "A lent GPU"); the memory-efficient kernel takes the same inputs with none.
"""

from __future__ import annotations

import contextlib

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from ..process_setting import ProcessSetting

NAME = "localeval_sdpa"


def grouped_sdpa(module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                 is_causal: bool | None = None, **kwargs) -> tuple[torch.Tensor, None]:
    if not _grouped_pays(module, query, kwargs):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    # transformers' rule: causal by the flag only where no mask says more (a prefix computed alone)
    causal = attention_mask is None and (is_causal if is_causal is not None else getattr(module, "is_causal", True))
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                           dropout_p=dropout, scale=scaling, is_causal=causal,
                                                           enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


def _grouped_pays(module, query: torch.Tensor, kwargs: dict) -> bool:
    """A pass of several tokens per row, on a CPU (on CUDA, SDPA with a mask and enable_gqa falls back
    to its slowest kernel: transformers' copy is the better path there), with nothing transformers'
    function handles that this one does not (a softcap, returned attentions, a paged cache, a bias)."""
    unusual = any(kwargs.get(key) is not None for key in ("softcap", "position_bias", "cache")) or kwargs.get("output_attentions")
    return (query.shape[2] > 1 and query.device.type == "cpu" and getattr(module, "num_key_value_groups", 1) > 1
            and not unusual)


# cuDNN's attention kernel off while a judge or an embedder runs on CUDA, in any thread; the other
# kernels as the process has them (flash where there is no mask and the dtype is 16-bit, else the
# memory-efficient one, else the plain one)
_CUDNN = ProcessSetting(torch.backends.cuda.cudnn_sdp_enabled, torch.backends.cuda.enable_cudnn_sdp, False)


def kernels(device: torch.device, torch_choice: bool = False) -> contextlib.AbstractContextManager:
    """Where attention on `device` may run, for the block it wraps: on CUDA not in cuDNN's kernel (see
    the module's note) unless `torch_choice` leaves torch its own choice (scripts/bench_speed.py measures
    both); elsewhere whatever torch chooses. The setting is torch's, process-wide: it is held while
    any such block runs, in any thread, and given back as it was when the last one ends."""
    if device.type != "cuda" or torch_choice:
        return contextlib.nullcontext()
    return _CUDNN.holding()


def register() -> str:
    """Make `NAME` an attention implementation (with SDPA's masks) that from_pretrained accepts."""
    AttentionInterface.register(NAME, grouped_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
