"""How much CPU other work took while a judge ran: bench's warning that a speed is not comparable.

A judge keeps every core it may use busy, and its threads meet at every product: one core taken by
another process slows all of them. The load average missed that: over a judge of half a minute it has
barely moved (a probe's judge ran 2.8x slower beside other work at a load of 1.27 on 2 cores, under the
warning's threshold). What is counted instead, from Linux's /proc/stat on the cores this process may run
on, is the CPU time the kernel gave to anything but this process and the judges' processes it waited for
(other programs, and a virtual machine's stolen time), and the time those cores stood idle: other work
that fitted in idle time took nothing from the judge (a machine of many cores, the judge on some).

Where that cannot be read truly, nothing is measured, and the load average is all there is: no
/proc/stat (macOS, Windows), a /proc/stat that does not number the cores as the affinity does (lxcfs),
or a container held to a CPU quota, whose /proc/stat is the whole host's.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")
# /proc/stat's columns after the cpu's name: user nice system idle iowait irq softirq steal (guest is in user)
BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)
IDLE_COLUMN = 3
QUOTAS = (Path("/sys/fs/cgroup/cpu.max"), Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"))  # cgroup v2, v1


@dataclass(frozen=True)
class CpuClock:
    """One reading: the wall clock; the busy and idle seconds of the cores this process may use; and this
    process's CPU seconds with its children's (those it has waited for: a judge's process, once it ended)."""

    wall: float
    busy: float
    idle: float
    own: float


@dataclass(frozen=True)
class Sharing:
    """Between two readings, on average: the cores other work kept busy, and the cores left idle."""

    others: float
    idle: float


# a judge's threads meet at every product, so a quarter of a core taken from them slows them all
OTHERS_BUSY_CORES = 0.25


def crowded(measures: dict, cores: int) -> tuple[str, float] | None:
    """What says other work ran beside a judge, from its bench.json measures, and how much: ("other work",
    the cores it kept busy) where it took more than the cores left idle could give; where that is not
    measured, ("load average", the load), of which the judge itself makes about as many as there are
    cores, so a core above that is someone else's. None where neither says so. `cores`: where the measures
    do not name the cores the judge had (a bench.json written before they were kept)."""
    others, load, cores = measures.get("other_work_cores"), measures.get("load_average"), measures.get("cores", cores)
    if others is not None:
        busy = others >= OTHERS_BUSY_CORES and others > (measures.get("idle_cores") or 0.0)
        return ("other work", others) if busy else None
    return ("load average", load) if load is not None and load >= cores + 1 else None


def read_clock() -> CpuClock | None:
    """Now's reading; None where it cannot be read truly (the module's docstring)."""
    ticks = None if _under_a_quota() else _ticks()
    if ticks is None:
        return None
    own, per_second = os.times(), os.sysconf("SC_CLK_TCK")
    return CpuClock(time.monotonic(), ticks[0] / per_second, ticks[1] / per_second,
                    own.user + own.system + own.children_user + own.children_system)


def sharing(before: CpuClock | None, after: CpuClock | None) -> Sharing | None:
    if before is None or after is None or after.wall <= before.wall:
        return None
    seconds = after.wall - before.wall
    others = (after.busy - before.busy) - (after.own - before.own)  # ticks are coarser than os.times: >= 0
    return Sharing(max(0.0, others) / seconds, (after.idle - before.idle) / seconds)


def allowed_cores() -> int:
    """The cores this process may run on (all of the machine's where the system cannot say)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The system's load average over the last minute; None where there is none to read (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _ticks() -> tuple[int, int] | None:
    """(busy, idle) clock ticks of the cores this process may use, since boot."""
    try:
        lines = STAT.read_text(encoding="ascii").splitlines()
        allowed = {f"cpu{number}" for number in os.sched_getaffinity(0)}
    except (OSError, AttributeError):  # no /proc (macOS, Windows), or no affinity to ask (macOS)
        return None
    rows = [[int(value) for value in fields[1:]] for fields in map(str.split, lines) if fields and fields[0] in allowed]
    if len(rows) != len(allowed):  # numbered otherwise than the affinity (lxcfs): another machine's cores
        return None
    busy = sum(row[index] for row in rows for index in BUSY_COLUMNS if index < len(row))
    return busy, sum(row[IDLE_COLUMN] for row in rows)


def _under_a_quota() -> bool:
    """Whether a cgroup holds this process to a CPU quota (a container's limit): its /proc/stat is the host's."""
    for path in QUOTAS:
        try:
            quota = path.read_text(encoding="ascii").split()[0]
        except (OSError, IndexError):
            continue
        return quota not in ("max", "-1")
    return False
