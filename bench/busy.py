"""How busy the machine's CPUs were over a measurement: what bounds a step that keeps them all
busy is the CPU it needs, not how its work is spread."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ledger.machine import cpu_counts_of, cpu_times_of


def machine_busy_seconds() -> float:
    """Seconds every CPU has spent busy since boot (Linux /proc/stat, read as ingest reads it
    to count idle CPUs: all but idle and I/O wait); 0.0 where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            times = cpu_times_of(stat, list(range(os.cpu_count() or 1)))
    except (OSError, ValueError, IndexError):
        return 0.0
    if times is None:
        return 0.0
    idle, total = times
    return (total - idle) / os.sysconf("SC_CLK_TCK")


def stolen_and_total_ticks(lines: Iterable[str]) -> tuple[int, int] | None:
    """(steal, all) clock ticks of every CPU since boot, from /proc/stat's `lines` (its "cpu"
    line): steal is the time the hypervisor gave this machine's CPUs to another guest while
    they had work, which no reference loop taken before or after a run sees."""
    counted = cpu_counts_of(lines, {"cpu"})
    if not counted or len(counted[0]) < 8:
        return None
    return counted[0][7], sum(counted[0])


def read_stolen_and_total_ticks() -> tuple[int, int] | None:
    """stolen_and_total_ticks of this machine now; None where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            return stolen_and_total_ticks(stat)
    except (OSError, ValueError):
        return None


def stolen_share_text(before: tuple[int, int] | None, after: tuple[int, int] | None) -> str:
    """The caption's line: what share of the CPUs' time the hypervisor took between two
    readings."""
    if before is None or after is None or after[1] <= before[1]:
        return "The CPU time the hypervisor took (steal) could not be read here."
    share = 100 * (after[0] - before[0]) / (after[1] - before[1])
    return (
        f"The hypervisor took {share:.1f} % of the CPUs' time during the run (steal, in "
        "/proc/stat), time the run's steps lost; compare it too before comparing two runs."
    )
