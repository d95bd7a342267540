"""A progress bar over judge requests, whose total grows as the metrics' steps reveal them."""

from __future__ import annotations

import sys


class Progress:
    def expect(self, n: int) -> None:
        """n more requests are on their way."""

    def advance(self, n: int) -> None:
        """n requests were answered."""

    def close(self) -> None:
        pass


class NoProgress(Progress):
    pass


class BarProgress(Progress):
    def __init__(self, description: str = "judging"):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=0, desc=description, unit="req", file=sys.stderr, dynamic_ncols=True)

    def expect(self, n: int) -> None:
        self.bar.total += n
        self.bar.refresh()

    def advance(self, n: int) -> None:
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()
