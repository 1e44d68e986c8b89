"""Helper processes: the CPUs this machine has free for them as a command starts, and how
one is started."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# The most helper processes one command starts, whatever the CPUs (ingest's pass 1, a whole
# continuous reading).
MAX_HELPERS = 8
# Linux's count of runnable tasks blinks: on an idle 2-CPU machine, 1.9% of samples taken a
# millisecond apart after an ingest showed another task runnable, in bursts of at most 6 ms. One
# sample made an ingest skip its helpers now and then (125,000 jobs on SQLite: 4.87 s against
# 4.44, 233 MiB peak RSS against 139). A CPU that looks busy is looked at again, up to
# IDLE_SAMPLES times IDLE_SAMPLE_GAP apart; work that keeps it busy (ingesters started together)
# is seen every time.
IDLE_SAMPLES = 5
IDLE_SAMPLE_GAP = 0.002  # seconds


def idle_cpus() -> int:
    """The CPUs this process may run on that other work is not using now: Linux's count of
    tasks running or ready to run (/proc/loadavg), this one aside, taken from them. Several
    commands started together (one ingester per cluster, by a cron) find the CPUs taken, and
    work in their own processes: their helpers would only share the same CPUs."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    idle = cpus - _other_runnable()
    for _ in range(IDLE_SAMPLES - 1):
        if idle >= cpus:
            break
        time.sleep(IDLE_SAMPLE_GAP)
        idle = max(idle, cpus - _other_runnable())
    return idle


def _other_runnable() -> int:
    """Linux's count of tasks running or ready to run, this one aside (/proc/loadavg); 0 where
    it is not known."""
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            runnable = int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(runnable - 1, 0)


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
