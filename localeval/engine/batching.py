"""Continuous batching: which requests decode together, and when the next ones join.

Every judge runs its requests through `decode_continuously`. Requests are admitted in the
order given (the engine sorts them shortest first) as rows free up, within the batch limits:
a batch keeps decoding while finished rows are replaced, instead of waiting for its longest row.
What a row is and how it decodes belongs to the judge's `Rows` (decode.py for a model, the
scripted judge's for tests): this module knows only counts and prompt sizes, so the limits are
applied by one piece of code whichever judge runs, and tests of the limits test that code.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Admission:
    """How many requests decode together: the scheduler's limits, applied as rows free up."""

    rows: int  # most rows decoding at once; 1 decodes one request at a time
    prompt_tokens: int  # most rows x longest prompt suffix prefilled in one pass

    @staticmethod
    def all_at_once(requests: int) -> "Admission":
        """Every request in the first batch: the default of a judge called without limits."""
        return Admission(rows=max(requests, 1), prompt_tokens=sys.maxsize)

    def fits(self, rows: int, prefilling: int, widest: int) -> bool:
        """Whether `rows` rows in all, `prefilling` of them new prompts padded to `widest` tokens, fit."""
        return rows <= self.rows and prefilling * widest <= self.prompt_tokens

    def refill_at(self) -> int:
        """Free rows worth a refill: a prefill and a cache merge cost about a few decoding passes."""
        return max(1, self.rows // 4)


class Rows(Protocol):
    """The rows of one batch as a judge decodes them."""

    def decoding(self) -> int: ...  # rows in the batch now

    def admit(self, requests: list[int]) -> None: ...  # add rows for these requests (by index) after the others

    # Advance every row by one forward pass; `on_done(request, output)` hears of each row that finished.
    def step(self, on_done: Callable[[int, Any], None]) -> None: ...


def decode_continuously(prompt_sizes: list[int], admission: Admission, rows: Rows,
                        on_done: Callable[[int, Any], None]) -> None:
    """Decode every request (by index, in order) through `rows`, admitting new ones as rows free up:
    a refill waits until enough rows are free to be worth a prefill pass, and takes the next
    requests while rows and padded prompt tokens stay within `admission`."""
    if admission.rows < 1:
        raise ValueError(f"a batch needs at least one row, not {admission.rows}")
    queue = deque(range(len(prompt_sizes)))
    while queue or rows.decoding():
        free = admission.rows - rows.decoding()
        if queue and free >= min(admission.refill_at(), len(queue)):
            rows.admit(_next_requests(queue, prompt_sizes, admission, rows.decoding()))
        rows.step(on_done)


def _next_requests(queue: deque, prompt_sizes: list[int], admission: Admission, decoding: int) -> list[int]:
    """The next requests that fit beside the `decoding` rows, by row count and prefill token budget.
    The first always does, so a prompt wider than the budget still gets a pass of its own."""
    admitted = [queue.popleft()]
    widest = prompt_sizes[admitted[0]]
    while queue:
        wider = max(widest, prompt_sizes[queue[0]])
        if not admission.fits(decoding + len(admitted) + 1, len(admitted) + 1, wider):
            break
        admitted.append(queue.popleft())
        widest = wider
    return admitted
