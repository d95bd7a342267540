"""A key/value cache that grows in place, so a decode step costs no copy of the whole cache.

transformers' DynamicCache appends each step's keys with `torch.cat`, which copies every
layer's cache on every step: on a CPU, with 32 rows of 700 tokens, that copy costs more than
the attention that reads the cache. This layer writes into a buffer with room to spare and
hands attention a view of the part in use; the buffer grows by doubling, so copies are rare.
"""

from __future__ import annotations

import functools
import inspect

import torch
from transformers.cache_utils import Cache, DynamicLayer

HEADROOM = 256  # tokens of room added beyond the prompt on first write: most answers fit in it


class GrowingLayer(DynamicLayer):
    """One layer's keys and values: `keys`/`values` are views of the first `length` buffer slots."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self.length = 0
        self._key_buffer = self._value_buffer = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        new = key_states.shape[-2]
        self._reserve(key_states, value_states, self.length + new)
        self._key_buffer[:, :, self.length:self.length + new] = key_states
        self._value_buffer[:, :, self.length:self.length + new] = value_states
        self.length += new
        self._view()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized and self.length > 0:
            self._key_buffer = self._key_buffer[indices]
            self._value_buffer = self._value_buffer[indices]
            self._view()

    def append_rows(self, other: "GrowingLayer", width: int, unused: int = 0) -> None:
        """Stack `other`'s rows under ours, both right-aligned in `width` columns (the rest is masked),
        dropping our first `unused` columns."""
        ours = self._key_buffer.shape[0]
        keys = self.keys.new_zeros((ours + other.keys.shape[0], self.keys.shape[1], width + HEADROOM,
                                    self.keys.shape[3]))
        values = self.values.new_zeros((keys.shape[0], self.values.shape[1], width + HEADROOM, self.values.shape[3]))
        kept = self.length - unused
        keys[:ours, :, width - kept:width] = self.keys[:, :, unused:]
        values[:ours, :, width - kept:width] = self.values[:, :, unused:]
        keys[ours:, :, width - other.length:width] = other.keys
        values[ours:, :, width - other.length:width] = other.values
        self._key_buffer, self._value_buffer, self.length = keys, values, width
        self._view()

    def _reserve(self, key_states: torch.Tensor, value_states: torch.Tensor, needed: int) -> None:
        capacity = 0 if self._key_buffer is None else self._key_buffer.shape[-2]
        if needed <= capacity:
            return
        size = max(needed + HEADROOM, 2 * capacity)
        keys = key_states.new_empty((*key_states.shape[:2], size, key_states.shape[-1]))
        values = value_states.new_empty((*value_states.shape[:2], size, value_states.shape[-1]))
        if self.length:
            keys[:, :, :self.length] = self._key_buffer[:, :, :self.length]
            values[:, :, :self.length] = self._value_buffer[:, :, :self.length]
        self._key_buffer, self._value_buffer = keys, values

    def _view(self) -> None:
        self.keys = self._key_buffer[:, :, :self.length]
        self.values = self._value_buffer[:, :, :self.length]


def growing_cache() -> Cache:
    return Cache(layer_class_to_replicate=GrowingLayer)


def forward_over(model, cache: Cache, **inputs):
    """The model's forward pass extending `cache` in place (its output: logits and all)."""
    return model(**inputs, **{_cache_keyword(type(model)): cache}, use_cache=True)


@functools.cache
def _cache_keyword(model_class: type) -> str:
    """transformers renamed the forward's `past_key_values` to `cache` within 5.x and removes the
    old name in 5.40: each version gets the name it takes, without a deprecation warning."""
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"
