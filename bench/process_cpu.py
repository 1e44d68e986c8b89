"""The CPU a command's own process takes, apart from its helper processes.

An ingest's wall time is bounded by its recording chain: the command's process and, on
PostgreSQL, the server backend it waits on, which take turns on one transaction. Its helpers
validate beside them, on the other CPUs. The rusage of a finished command counts the helpers
with it (os.wait4 reports what it reaped), so the process alone is read from Linux's
/proc/PID/stat while it runs: its own user + system time, which leaves its children out."""

from __future__ import annotations

import os
import threading
from pathlib import Path

# How often the process is read: what it spends after the last reading is missed, so a run of
# a few seconds is off by at most this much CPU (about 2%).
SAMPLE_SECONDS = 0.05


def cpu_ticks(pid: int, reaped: bool = False) -> int | None:
    """utime + stime of process `pid` alone, not its children, in clock ticks; None once it
    is gone. With `reaped`, also what its children that ended and were waited for took (cutime
    + cstime), which their own readings no longer give: summed over a process tree, that is
    all the CPU the tree has taken, which never falls when a helper ends."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = int(fields[11]) + int(fields[12])
        return own + int(fields[13]) + int(fields[14]) if reaped else own
    except (OSError, IndexError, ValueError):
        return None


def own_cpu_seconds(pid: int) -> float | None:
    """cpu_ticks in seconds."""
    ticks = cpu_ticks(pid)
    return None if ticks is None else ticks / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The child processes of `pid`, started by any of its threads; none once it is gone."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found.extend(int(child) for child in (task / "children").read_text().split())
    except (OSError, ValueError):
        return found
    return found


def first_child(pid: int) -> int | None:
    """The first child process of `pid` (the command under /usr/bin/time); None while it has
    none."""
    found = children(pid)
    return found[0] if found else None


class OwnCpu:
    """Reads a command's own CPU every SAMPLE_SECONDS until stopped. `wrapped`: `pid` is the
    /usr/bin/time that runs it, so the command is that process's child."""

    def __init__(self, pid: int, wrapped: bool) -> None:
        self._pid, self._wrapped = pid, wrapped
        self._seconds: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> OwnCpu:
        self._thread.start()
        return self

    def stop(self) -> float | None:
        """The last reading: None where /proc could not be read at all (not Linux)."""
        self._done.set()
        self._thread.join()
        return self._seconds

    def _watch(self) -> None:
        command = None if self._wrapped else self._pid
        while True:
            if command is None:
                command = first_child(self._pid)
            if command is not None:
                seconds = own_cpu_seconds(command)
                if seconds is not None:
                    self._seconds = seconds
            if self._done.wait(SAMPLE_SECONDS):
                return
