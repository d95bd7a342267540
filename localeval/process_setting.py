"""A process-wide setting held at a value while blocks that ask for it run, then given back.

Blocks in different threads overlap rather than nest (A starts, B starts, A ends, B ends), so a block
that saved the value on entry and wrote it back on exit would give the setting back while another
still needs it, and leave the held value behind after both. The value is saved when the first block
starts and written back when the last one ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class ProcessSetting:
    def __init__(self, read: Callable[[], Any], write: Callable[[Any], None], held: Any):
        self.read, self.write, self.held = read, write, held
        self._lock = threading.Lock()
        self._depth = 0  # blocks running, across threads
        self._saved: Any = None

    @contextmanager
    def holding(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._saved = self.read()
            self._depth += 1
            self.write(self.held)
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self.write(self._saved)
