"""How busy the machine's CPUs were over a measurement: what bounds a step that keeps them all
busy is the CPU it needs, not how its work is spread."""

from __future__ import annotations

import os

from ledger.machine import cpu_times_of


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
