"""Helper processes: the CPUs this machine has free for them as a command starts, and how
one is started."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

# The most helper processes one command starts, whatever the CPUs (ingest's pass 1, a whole
# continuous reading).
MAX_HELPERS = 8
# Linux's count of runnable tasks blinks: on an idle 2-CPU machine, 1.9% of samples taken a
# millisecond apart after an ingest showed another task runnable, in bursts of at most 6 ms. A
# look that sees no other task is believed at once; one that sees some is checked against what
# the CPUs did over IDLE_WINDOW (their idle time in /proc/stat), which a moment of other work
# barely moves and work that stays (ingesters started together) fills. Five looks 2 ms apart,
# the rule before, once left a 125,000-job sacct ingest in `make bench` without its helpers
# (18.3 s and 355 MiB, against 8.5 s and 162 MiB in the next run).
IDLE_WINDOW = 0.05  # seconds


def idle_cpus() -> int:
    """The CPUs this process may run on that other work is not using now (never below 0).
    Several commands started together (one ingester per cluster, by a cron) find the CPUs
    taken, and work in their own processes: their helpers would only share the same CPUs."""
    try:
        mine = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
    others = _other_runnable()
    if others == 0:
        return len(mine)
    before = _cpu_times(mine)
    time.sleep(IDLE_WINDOW)
    after = _cpu_times(mine)
    if before is None or after is None or after[1] <= before[1]:
        return max(len(mine) - others, 0)
    idle_share = (after[0] - before[0]) / (after[1] - before[1])
    return int(idle_share * len(mine) + 0.5)


def _other_runnable() -> int:
    """Linux's count of tasks running or ready to run, this one aside (/proc/loadavg); 0 where
    it is not known."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            runnable = int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(runnable - 1, 0)


def _cpu_times(cpus: list[int]) -> tuple[int, int] | None:
    """(idle, all) clock ticks the CPUs `cpus` have counted since boot (/proc/stat); None where
    it is not known."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            return cpu_times_of(stat, cpus)
    except (OSError, ValueError, IndexError):
        return None


def cpu_counts_of(lines: Iterable[str], names: set[str]) -> list[list[int]]:
    """The clock ticks of /proc/stat's lines named in `names` ("cpu" for all CPUs, "cpu0"...),
    each line's user, nice, system, idle, iowait, irq, softirq and steal, in that order (the
    guests' time is in user already)."""
    found = []
    for line in lines:
        name, *ticks = line.split()
        if name in names:
            found.append([int(t) for t in ticks[:8]])
    return found


def cpu_times_of(lines: Iterable[str], cpus: list[int]) -> tuple[int, int] | None:
    """_cpu_times from /proc/stat's `lines`: idle and waiting on I/O count as idle; None when
    none of `cpus` is there."""
    counted = cpu_counts_of(lines, {f"cpu{n}" for n in cpus})
    idle = sum(counts[3] + counts[4] for counts in counted)
    total = sum(sum(counts) for counts in counted)
    return (idle, total) if total else None


def start_helper(module: str) -> subprocess.Popen[bytes]:
    """`python -m module`, reading its work from its stdin and answering on its stdout: a
    fresh interpreter (not a fork: the command holds a database connection, and may hold
    threads). The folder this package was imported from comes first on its path, so it runs
    this very code however the command was started."""
    here = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path},
    )
