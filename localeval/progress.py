"""Progress over judge requests, whose total grows as the metrics' steps reveal them.

On a terminal, a bar redrawn in place; anywhere else (a CI log, a file), a plain line now and
then, because a bar's carriage-return frames would fill the log with thousands of them.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from typing import TextIO

from .errors import for_terminal


def to_stderr(message: str) -> None:
    """Where a run's notes go (preparing a model, what was kept when it stopped): stdout is the
    caller's, for the summary table or the JSON a pipeline reads."""
    print(for_terminal(message, lines=True), file=sys.stderr)  # names from data, bench.json, judge folders


class Progress:
    def expect(self, n: int) -> None:
        """n more requests are on their way."""

    def advance(self, n: int) -> None:
        """n requests were answered."""

    def finished(self, n: int) -> None:
        """n samples were scored: how far a run is, where the requests' total still grows."""

    def close(self) -> None:
        pass


class NoProgress(Progress):
    pass


def progress_for(description: str = "judging", stream: TextIO | None = None, unit: str = "requests",
                 samples: int | None = None) -> Progress:
    """A bar on a terminal or in a notebook (whose stderr is no terminal, but draws tqdm's widget),
    plain lines elsewhere. `unit`: what expect() and advance() count; `samples`: how many are to be
    scored, where the unit is requests (the lines then say about how long the rest takes)."""
    stream = stream or sys.stderr
    if stream.isatty() or "ipykernel" in sys.modules:
        return BarProgress(description, stream, unit, samples)
    return LineProgress(description, stream, unit=unit, samples=samples)


class BarProgress(Progress):
    """A bar over the samples where their number is known (its time left is then the run's), the requests
    answered beside it; else over the requests. A bar over requests showed 100% and nothing left at the
    end of every step, whose requests were all it knew of (a long-run probe). A clock redraws it each
    second: a first batch of minutes left it still, its time frozen, as if hung."""

    REDRAW_EVERY = 1.0  # seconds
    FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} UNIT [{elapsed}<{remaining}, {rate_inv_fmt}{postfix}]"

    def __init__(self, description: str = "judging", stream: TextIO | None = None, unit: str = "requests",
                 samples: int | None = None):
        tqdm = _bar_class()
        self.by_samples = samples is not None and unit != "samples"
        self.unit, self.done, self.total = unit, 0, 0
        counted = "samples" if self.by_samples else unit
        # Seconds per sample (or request), with its noun in the singular: tqdm's own format wrote "4.00s/ samples".
        self.bar = tqdm(total=samples if self.by_samples else 0, desc=description, unit=counted.removesuffix("s"),
                        bar_format=self.FORMAT.replace("UNIT", counted), file=stream or sys.stderr, dynamic_ncols=True)
        self._clock = _Clock(self.REDRAW_EVERY, self.bar.refresh, "localeval-bar")

    def expect(self, n: int) -> None:
        if self.by_samples:
            self.total += n
            self._show_requests()
        else:
            self.bar.total += n
            self.bar.refresh()

    def advance(self, n: int) -> None:
        if self.by_samples:
            self.done += n
            self._show_requests()
        else:
            self.bar.update(n)

    def finished(self, n: int) -> None:
        if self.by_samples:
            self.bar.update(n)

    def close(self) -> None:
        if self._clock.stop():
            self.bar.close()

    def _show_requests(self) -> None:
        self.bar.set_postfix_str(f"{self.done}/{self.total} {self.unit}", refresh=True)


def _bar_class():
    """tqdm's notebook widget where the kernel can draw it, else its text bar."""
    tqdm_imported_quietly()
    from tqdm.auto import tqdm

    return tqdm


def tqdm_imported_quietly() -> None:
    """tqdm.auto imported once, where a notebook has no ipywidgets without its "IProgress not found" warning,
    which the user cannot act on (a notebook probe): it then gives its text bar, and transformers, which imports
    it too, finds it imported."""
    import importlib.util

    if "ipykernel" in sys.modules and "tqdm.auto" not in sys.modules and importlib.util.find_spec("ipywidgets") is None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="IProgress not found")
            import tqdm.auto  # noqa: F401


class LineProgress(Progress):
    """`judging 30 samples: 8 done, 120/480 requests, 41 s, about 2 min left` every `every` seconds, and
    at the end.

    A clock thread writes the lines, not advance(): answers come in bursts as a batch finishes, and
    a large first batch can take minutes, which is when a log most needs to show the run is alive.
    The time left is the samples' pace so far (the requests' total grows as the metrics' steps reveal
    them, so it cannot say): a nightly job of 5,000 samples said nothing of its five hours (a probe).
    """

    def __init__(self, description: str = "judging", stream: TextIO | None = None, every: float = 30.0,
                 unit: str = "requests", samples: int | None = None):
        self.description, self.stream, self.every, self.unit = description, stream or sys.stderr, every, unit
        self.samples = samples
        self.done = self.total = self.samples_finished = 0
        self.started = time.monotonic()
        self._clock = _Clock(every, self._tick, "localeval-progress")

    def expect(self, n: int) -> None:
        self.total += n

    def advance(self, n: int) -> None:
        self.done += n

    def finished(self, n: int) -> None:
        self.samples_finished += n

    def close(self) -> None:
        if self._clock.stop() and self.total:
            self._line()

    def _tick(self) -> None:
        if self.total:  # nothing to count before the first requests are known
            self._line()

    def _line(self) -> None:
        samples = "" if self.unit == "samples" else f"{self.samples_finished} done, "  # else counted twice
        elapsed = time.monotonic() - self.started
        print(f"{self.description}: {samples}{self.done}/{self.total} {self.unit}, {elapsed:.0f} s{self._left(elapsed)}",
              file=self.stream, flush=True)

    def _left(self, elapsed: float) -> str:
        """About how long the rest takes at the pace of the samples done so far; nothing before the first."""
        done, total = (self.done, self.total) if self.unit == "samples" else (self.samples_finished, self.samples)
        if not total or not done or done >= total:
            return ""
        return f", about {_duration(elapsed * (total - done) / done)} left"


class _Clock:
    """Calls `tick` every `every` seconds on a thread of its own until stopped."""

    def __init__(self, every: float, tick, name: str):
        self.every, self.tick = every, tick
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> bool:
        """True the first time: a runner's finally after Ctrl-C closes a progress that may be closed already."""
        if self._stopped.is_set():
            return False
        self._stopped.set()
        self._thread.join()
        return True

    def _run(self) -> None:
        while not self._stopped.wait(self.every):
            self.tick()


def _duration(seconds: float) -> str:
    """40 s, 12 min, 5 h 3 min."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60} min"
