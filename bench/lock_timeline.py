"""`fairledger`, with each of its writers'-lock transactions timed: where concurrent ingesters'
time goes, the one recording chain they share against the validating each does alone.

    FAIRLEDGER_LOCK_TIMELINE=FILE python -m bench.lock_timeline --db URL ingest PATH

runs the command as `fairledger` runs it, and appends to FILE one line per moment: `tried`
(the lock asked for), `held` (taken), `committed` (its transaction committed) and `ended`
(the command's end), each with the wall clock, the process's own CPU seconds and those of its
PostgreSQL server backend (read from /proc, so only with the server on this machine; -1
elsewhere or before the first transaction). `timelines` reads such files back; the bench's
`--timeline` prints them. The lock is `ledger.store.log_tables.locked`, wrapped here only:
nothing of the product's code knows it is watched."""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.process_cpu import own_cpu_seconds

TIMELINE_FILE = "FAIRLEDGER_LOCK_TIMELINE"
NO_READING = -1.0  # a backend's CPU where it cannot be read


@dataclass
class Timeline:
    """One command's transactions under the writers' lock, as its file tells them."""

    started: float
    ended: float | None = None
    tried: list[float] = field(default_factory=list)  # when each lock was asked for
    held: list[tuple[float, float]] = field(default_factory=list)  # (taken, committed)
    cpu: float = 0.0  # the process's own CPU seconds at its end
    server_cpu: float = NO_READING  # its server backend's, at its last commit or end

    @property
    def held_seconds(self) -> float:
        return sum(end - start for start, end in self.held)

    @property
    def first_tried(self) -> float | None:
        return self.tried[0] if self.tried else None


def parse_timeline(lines: list[str]) -> Timeline:
    """A Timeline from the lines one command appended (`_Watch.note`'s format)."""
    timeline: Timeline | None = None
    taken: float | None = None
    for line in lines:
        what, at, cpu, server = line.split()
        moment, server_cpu = float(at), float(server)
        if what == "started":
            timeline = Timeline(started=moment)
            continue
        if timeline is None:
            raise ValueError(f"a timeline must begin with 'started': {line!r}")
        if server_cpu != NO_READING:
            timeline.server_cpu = server_cpu
        if what == "tried":
            timeline.tried.append(moment)
        elif what == "held":
            taken = moment
        elif what == "committed" and taken is not None:
            timeline.held.append((taken, moment))
            taken = None
        elif what == "ended":
            timeline.ended, timeline.cpu = moment, float(cpu)
    if timeline is None:
        raise ValueError("an empty timeline")
    return timeline


def timelines(folder: str) -> list[Timeline]:
    """The timelines written into `folder`, in files named 0, 1, ..., in that order (the
    order the commands were started in: a command run under `nice` may start its own process
    later than one started after it)."""
    files = sorted(Path(folder).iterdir(), key=lambda path: int(path.name))
    return [parse_timeline(path.read_text().splitlines()) for path in files]


class _Watch:
    """Appends the moments of one process to its file, with the CPU each has taken so far."""

    def __init__(self, path: str) -> None:
        self._out = open(path, "a", encoding="ascii")  # noqa: SIM115 - closed at the end
        self._backend: int | None = None
        self.note("started")

    def note(self, what: str) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        backend = None if self._backend is None else own_cpu_seconds(self._backend)
        self._out.write(
            f"{what} {time.time():.4f} {usage.ru_utime + usage.ru_stime:.3f} "
            f"{NO_READING if backend is None else backend:.3f}\n"
        )
        self._out.flush()

    def learn_backend(self, conn: Any) -> None:
        if self._backend is None and conn.config.is_postgres:
            self._backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])

    def close(self) -> None:
        self.note("ended")
        self._out.close()


def _watched(watch: _Watch) -> None:
    """Wrap the writers' lock so that each transaction under it notes its moments."""
    from ledger.store import log_tables

    unwatched = log_tables.locked

    @contextmanager
    def locked(conn: Any, wait: bool = True) -> Iterator[Any]:
        watch.note("tried")
        with unwatched(conn, wait) as held:
            watch.learn_backend(held)
            watch.note("held")
            yield held
        watch.note("committed")  # only once it has: a rolled-back one raises past this

    log_tables.locked = locked  # type: ignore[assignment]


def main() -> None:
    watch = _Watch(os.environ[TIMELINE_FILE])
    _watched(watch)
    from cli.main import main as fairledger

    sys.argv[0] = "fairledger"
    try:
        fairledger()
    finally:
        watch.close()


if __name__ == "__main__":
    main()
