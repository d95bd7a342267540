"""How much the engine may put in one batch: light on purpose, so `--help` can show the defaults
without importing the engine (torch)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError

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

    def __post_init__(self):
        # Built by hand for evaluate(limits=...): no rows would fail deep inside the engine, and no
        # tokens would quietly judge one request at a time (a row is always let in alone).
        for name in ("batch_size", "max_batch_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"BatchLimits {name}=: give a whole number, at least 1; got {value!r}")
