"""How much the engine may put in one batch: light on purpose, so `--help` can show the defaults
without importing the engine (torch)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_BATCH_SIZE = 32
DEFAULT_MAX_BATCH_TOKENS = 24_576


@dataclass(frozen=True)
class BatchLimits:
    batch_size: int = DEFAULT_BATCH_SIZE  # rows per batch; 1 gives the one-at-a-time baseline
    # rows x longest prompt: the padded prompt tokens one forward pass computes at once (a prompt's
    # instructions, shared by every request of a metric, are computed once and not counted). Output
    # bounds are not counted: they are worst cases (every string at full length in 4-byte
    # characters) that real answers come nowhere near, and counting them would cut batches tiny.
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
