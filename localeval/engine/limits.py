"""How much the engine may put in one batch: light on purpose, so `--help` can show the defaults
without importing the engine (torch)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import UserError

DEFAULT_BATCH_SIZE = 32
DEFAULT_MAX_BATCH_TOKENS = 24_576


@dataclass(frozen=True)
class BatchLimits:
    # rows per batch; 1 gives the one-at-a-time baseline. None: the judge's own (models.batch_size), which
    # build_pipeline sets: DEFAULT_BATCH_SIZE, or fewer on a CPU where that measured faster for the judge
    batch_size: int | None = None
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
            if value is None and name == "batch_size":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                unset = " (or None, the judge's own)" if name == "batch_size" else ""
                raise UserError(f"BatchLimits {name}=: give a whole number, at least 1{unset}; got {value!r}")

    def with_batch_size(self, size: int) -> "BatchLimits":
        """These limits, with `size` rows where no batch size was given."""
        return self if self.batch_size is not None else replace(self, batch_size=size)
