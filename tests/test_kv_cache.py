"""The decoder's key/value cache when rows finish: the rows that go on keep exactly their keys and
values, in the order asked, and the next pass appends after them."""

from __future__ import annotations

import pytest
import torch

from localeval.engine.kv_cache import growing_cache

ROWS, HEADS, DIM = 6, 2, 4


def filled_cache(tokens: int):
    cache = growing_cache()
    keys = torch.randn(ROWS, HEADS, tokens, DIM)
    values = torch.randn(ROWS, HEADS, tokens, DIM)
    cache.update(keys, values, 0)
    return cache, keys, values


@pytest.mark.parametrize("order", [[0, 5, 2, 3], [1, 2, 3], [5, 4, 3, 2, 1, 0], [0, 1, 2, 3, 4, 5], [3]])
def test_kept_rows_hold_their_own_keys_and_values_in_their_new_slots(order):
    cache, keys, values = filled_cache(tokens=7)
    cache.batch_select_indices(torch.tensor(order))
    layer = cache.layers[0]
    assert torch.equal(layer.keys, keys[order]) and torch.equal(layer.values, values[order])
    more_keys, more_values = torch.randn(len(order), HEADS, 3, DIM), torch.randn(len(order), HEADS, 3, DIM)
    cache.update(more_keys, more_values, 0)  # a decoding pass after the rows left
    assert torch.equal(layer.keys, torch.cat([keys[order], more_keys], dim=2))
    assert torch.equal(layer.values, torch.cat([values[order], more_values], dim=2))


def test_the_model_is_given_its_cache_by_the_name_its_transformers_takes(tiny_judge):
    """No deprecation warning today (transformers removes `past_key_values` in 5.40), and the
    cache is the one the forward pass extended."""
    import warnings

    from transformers import AutoModelForCausalLM

    from localeval.engine.kv_cache import forward_over

    model = AutoModelForCausalLM.from_pretrained(tiny_judge)
    cache = growing_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logits = forward_over(model, cache, input_ids=torch.tensor([[1, 2, 3]])).logits
        forward_over(model, cache, input_ids=torch.tensor([[4]]))
    assert logits.shape[:2] == (1, 3) and cache.layers[0].keys.shape[2] == 4
