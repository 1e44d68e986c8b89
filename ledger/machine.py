"""What this machine has free for helper processes, read as a command starts."""

from __future__ import annotations

import os


def idle_cpus() -> int:
    """The CPUs this process may run on that other work is not using now: Linux's count of
    tasks running or ready to run (/proc/loadavg), this one aside, taken from them. Several
    commands started together (one ingester per cluster, by a cron) find the CPUs taken, and
    work in their own processes: their helpers would only share the same CPUs."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return cpus - _other_runnable()


def _other_runnable() -> int:
    """Linux's count of tasks running or ready to run, this one aside (/proc/loadavg); 0 where
    it is not known."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            runnable = int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(runnable - 1, 0)
