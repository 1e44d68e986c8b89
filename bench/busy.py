"""How busy the machine's CPUs were over a measurement: what bounds a step that keeps them all
busy is the CPU it needs, not how its work is spread."""

from __future__ import annotations

import os


def machine_busy_seconds() -> float:
    """Seconds every CPU has spent busy since boot (Linux /proc/stat: all but idle and
    iowait); 0.0 where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
