"""Progress over judge requests, whose total grows as the metrics' steps reveal them.

On a terminal, a bar redrawn in place; anywhere else (a CI log, a file), a plain line now and
then, because a bar's carriage-return frames would fill the log with thousands of them.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def expect(self, n: int) -> None:
        """n more requests are on their way."""

    def advance(self, n: int) -> None:
        """n requests were answered."""

    def close(self) -> None:
        pass


class NoProgress(Progress):
    pass


def progress_for(description: str = "judging", stream: TextIO | None = None, unit: str = "requests") -> Progress:
    """A bar on a terminal or in a notebook (whose stderr is no terminal, but draws tqdm's widget),
    plain lines elsewhere. `unit`: what expect() and advance() count."""
    stream = stream or sys.stderr
    if stream.isatty() or "ipykernel" in sys.modules:
        return BarProgress(description, stream, unit)
    return LineProgress(description, stream, unit=unit)


class BarProgress(Progress):
    def __init__(self, description: str = "judging", stream: TextIO | None = None, unit: str = "requests"):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=0, desc=description, unit=" " + unit, file=stream or sys.stderr, dynamic_ncols=True)

    def expect(self, n: int) -> None:
        self.bar.total += n
        self.bar.refresh()

    def advance(self, n: int) -> None:
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


class LineProgress(Progress):
    """`judging 30 samples: 120/480 requests, 41 s` at most every `every` seconds, and at the end."""

    def __init__(self, description: str = "judging", stream: TextIO | None = None, every: float = 30.0,
                 unit: str = "requests"):
        self.description, self.stream, self.every, self.unit = description, stream or sys.stderr, every, unit
        self.done = self.total = 0
        self.started = self.last = time.monotonic()
        self.closed = False

    def expect(self, n: int) -> None:
        self.total += n

    def advance(self, n: int) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.every:
            self._line()

    def close(self) -> None:
        if not self.closed and self.total:
            self._line()
        self.closed = True

    def _line(self) -> None:
        self.last = time.monotonic()
        print(f"{self.description}: {self.done}/{self.total} {self.unit}, {self.last - self.started:.0f} s",
              file=self.stream, flush=True)
