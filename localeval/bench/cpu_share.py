"""How much CPU other work took while a judge ran: bench's warning that a speed is not comparable.

A judge keeps every core it may use busy, and its threads meet at every product: one core taken by
another process slows all of them. The load average missed that: over a judge of half a minute it has
barely moved (a probe's judge ran 2.8x slower beside other work at a load of 1.27 on 2 cores, under the
warning's threshold). What is counted instead is the CPU time the kernel gave, on the cores this process
may run on, to anything but this process and the judges' processes it waited for: other programs, and a
virtual machine's stolen time. Linux's /proc/stat; elsewhere nothing is measured, and the load average
(bench's other reading) is all there is.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")
# /proc/stat's columns after the cpu's name: user nice system idle iowait irq softirq steal (guest is in user)
BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class CpuClock:
    """One reading: the wall clock, the busy seconds of the cores this process may use, and this process's
    CPU seconds with its children's (those it has waited for: a judge's process, once it ended)."""

    wall: float
    busy: float
    own: float


def read_clock() -> CpuClock | None:
    """Now's reading; None where the system keeps no /proc/stat."""
    busy = _busy_seconds()
    if busy is None:
        return None
    own = os.times()
    return CpuClock(time.monotonic(), busy, own.user + own.system + own.children_user + own.children_system)


def others_cores(before: CpuClock | None, after: CpuClock | None) -> float | None:
    """The cores other work kept busy on average between two readings (0.5: half a core all along)."""
    if before is None or after is None or after.wall <= before.wall:
        return None
    others = (after.busy - before.busy) - (after.own - before.own)
    return max(0.0, others) / (after.wall - before.wall)


def _busy_seconds() -> float | None:
    try:
        lines = STAT.read_text(encoding="ascii").splitlines()
        allowed = {f"cpu{number}" for number in os.sched_getaffinity(0)}
    except (OSError, AttributeError):  # no /proc (macOS, Windows), or no affinity to ask (macOS)
        return None
    ticks = 0
    for fields in (line.split() for line in lines):
        if fields and fields[0] in allowed:
            columns = [int(value) for value in fields[1:]]
            ticks += sum(columns[index] for index in BUSY_COLUMNS if index < len(columns))
    return ticks / os.sysconf("SC_CLK_TCK")
