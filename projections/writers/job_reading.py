"""A whole continuous reading of a large site's jobs, split over helper processes.

A Slurm site's usage read whole (the first update after a site event, an as-of with one
between) goes through every job recorded, a Python loop that bounds it by one CPU: 1.2 million
jobs took 3 s on a fast evening and 9 s on a slow one. Its anchored sums are exact integers, and
a running job's part is added with math.fsum (ContinuousReading.usage), so counting the jobs
in parts and adding the parts gives the same reading to the bit, whatever the split.

The jobs are split by log position into ranges, up to the last position this connection sees.
A helper process reads one range through a connection of its own; this process reads the
first. The columns read of a recorded job never change (a new half-life renumbers only its
period), so a helper sees the rows of its range as this connection does, whatever others have
committed since, unless this connection's open transaction inserted jobs itself (a rebuild, a
catch-up fold of job events): no other connection sees those rows, and the reading is then made
here alone (Connection.inserted).

A helper is given its range, the site and the empty reading on its stdin, and answers with the
reading of its range on its stdout, pickled. One that fails to answer has its range read here
instead: the reading is only slower."""

from __future__ import annotations

import contextlib
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ledger.machine import MAX_HELPERS, idle_cpus, start_helper
from ledger.site_usage import ContinuousReading, add_jobs
from ledger.state import SiteState
from ledger.store.connections import Connection, StoreConfig

# Below this many rows a helper's start-up (an interpreter and its imports, ~0.2-0.4 s) costs
# more than the part of the loop it takes over (~3-8 µs a row).
HELPER_MIN_ROWS = 200_000
HELPER_LOCK_WAIT = "2s"  # PostgreSQL: a lock a helper waits for longer is the command's

JOB_COLUMNS = "userid, username, bank, billing, t_run, t_inactive"


@dataclass(frozen=True)
class Part:
    """What one helper reads: the jobs of `where` (with `args`) whose position is in
    (`after`, `last`], counted into `reading` (empty, as continuous_reading made it) under
    `state`, through a connection to `store`."""

    store: StoreConfig
    where: str
    args: tuple[Any, ...]
    after: int
    last: int
    state: SiteState
    reading: ContinuousReading


def count_jobs(
    conn: Connection,
    state: SiteState,
    reading: ContinuousReading,
    where: str,
    args: tuple[Any, ...],
    upto: int | None = None,
) -> None:
    """add_jobs(state, reading, every job of `SELECT JOB_COLUMNS FROM jobs WHERE where`
    recorded up to log position `upto` (all: None)), in parts read at once where the site is
    large, CPUs are idle, and no job row this connection sees is hidden from others."""
    unseen = "jobs" in conn.inserted  # job rows of the open transaction
    ranges = [] if unseen else _ranges(conn, _helper_count(conn.config), upto)
    if len(ranges) < 2:
        bound, bounds = ("", ()) if upto is None else (" AND position <= ?", (upto,))
        with conn.stream_rows(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE {where}{bound}", (*args, *bounds)
        ) as rows:
            add_jobs(state, reading, rows)
        return
    parts = [
        Part(conn.config, where, args, after, last, state, _blank(reading))
        for after, last in ranges
    ]
    helpers = [_Helper(part) for part in parts[1:]]
    try:
        with _part_rows(conn, parts[0]) as rows:
            add_jobs(state, reading, rows)
        for helper, part in zip(helpers, parts[1:], strict=True):
            found = helper.answer()
            if found is None:  # the helper failed: its range is read here
                found = _blank(reading)
                with _part_rows(conn, part) as rows:
                    add_jobs(state, found, rows)
            _add(reading, found)
    finally:
        for helper in helpers:
            helper.close()


def _blank(reading: ContinuousReading) -> ContinuousReading:
    """A reading at the same moment, from the same starts (since), with no job counted yet."""
    return ContinuousReading(reading.at, reading.half_life, reading.boundary, reading.since)


def _helper_count(store: StoreConfig) -> int:
    """Helpers a reading may start: one per idle CPU but this process's, none for a database
    only this process can open (SQLite in memory)."""
    if not store.is_postgres and store.path == ":memory:":
        return 0
    return max(0, min(idle_cpus() - 1, MAX_HELPERS))


def _ranges(conn: Connection, helpers: int, upto: int | None) -> list[tuple[int, int]]:
    """Position ranges (after, last], one per process, of equal spans of the log (a site's
    jobs are spread along it by its ingests), covering every job this connection sees up to
    position `upto` (all: None); [] when there are too few jobs for helpers to pay."""
    if helpers < 1:
        return []
    bound, bounds = ("", ()) if upto is None else (" WHERE position <= ?", (upto,))
    # Counted up to the threshold only, and each end of the log looked up alone in the position
    # index: a count of every job, or MIN and MAX in one SELECT, scans them all (0.16-0.21 s on
    # SQLite at 1.2M jobs, ten times that at 12M).
    ((enough,),) = conn.rows(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM jobs{bound} LIMIT ?) AS enough",
        (*bounds, HELPER_MIN_ROWS),
    )
    if enough < HELPER_MIN_ROWS:
        return []
    ((lowest, highest),) = conn.rows(
        f"SELECT (SELECT MIN(position) FROM jobs{bound}), (SELECT MAX(position) FROM jobs{bound})",
        (*bounds, *bounds),
    )
    parts = min(helpers + 1, int(highest) - int(lowest) + 1)
    start = int(lowest) - 1
    span = int(highest) - start
    cuts = [start + span * n // parts for n in range(parts + 1)]
    return [(cuts[n], cuts[n + 1]) for n in range(parts) if cuts[n] < cuts[n + 1]]


@contextlib.contextmanager
def _part_rows(conn: Connection, part: Part) -> Iterator[Iterator[tuple[Any, ...]]]:
    sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE {part.where} AND position > ? AND position <= ?"
    with conn.stream_rows(sql, (*part.args, part.after, part.last)) as rows:
        yield rows


def _add(reading: ContinuousReading, part: ContinuousReading) -> None:
    """Count a part's jobs into `reading`: integer sums added, running parts put beside (their
    order does not matter to math.fsum)."""
    for key, sums in part.settled.items():
        mine = reading.settled.setdefault(key, {})
        for anchor, units in sums.items():
            mine[anchor] = mine.get(anchor, 0) + units
    for key, spans in part.running.items():
        reading.running.setdefault(key, []).extend(spans)


class _Helper:
    """One helper process reading one part, started at once: its part is written to its stdin
    by a thread, so that a helper still importing never holds up this process."""

    def __init__(self, part: Part) -> None:
        self.proc = start_helper("projections.writers.job_reading")
        self.writer = threading.Thread(target=self._give, args=(part,), daemon=True)
        self.writer.start()

    def _give(self, part: Part) -> None:
        assert self.proc.stdin is not None
        # A helper that ended early has its part read by the command (answer()).
        with contextlib.suppress(OSError), self.proc.stdin:
            pickle.dump(part, self.proc.stdin, pickle.HIGHEST_PROTOCOL)

    def answer(self) -> ContinuousReading | None:
        """The part's reading, or None if the helper ended without one or met an error (a
        connection refused, say): its part is then read here, which raises the error again
        if it was the jobs'."""
        assert self.proc.stdout is not None
        try:
            found = pickle.load(self.proc.stdout)
        except (EOFError, pickle.UnpicklingError):
            return None
        return found if isinstance(found, ContinuousReading) else None

    def close(self) -> None:
        """End the helper: one that answered has ended; one still reading (this process met
        an error first) ends when it writes to the closed pipe, or is killed after a second."""
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.writer.join(timeout=1)
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _serve() -> None:
    """A helper process: read the part on stdin, answer its reading on stdout (or what went
    wrong, as text: the command then reads the part itself). Ctrl-C reaches the whole process
    group: the command says it was interrupted and ends its helpers, which must not print
    their own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    part: Part = pickle.load(sys.stdin.buffer)
    answer: ContinuousReading | str
    try:
        conn = Connection(part.store)
        try:
            if part.store.is_postgres:
                # Never wait on the command's own locks (a table it dropped, say): the command
                # waits for this answer, and reads the part itself on an error.
                conn.execute(f"SET lock_timeout = '{HELPER_LOCK_WAIT}'")
            with _part_rows(conn, part) as rows:
                add_jobs(part.state, part.reading, rows)
        finally:
            conn.close()
        answer = part.reading
    except Exception as err:  # noqa: BLE001 - the command reads the part itself
        answer = f"{type(err).__name__}: {err}"
    with contextlib.suppress(BrokenPipeError):
        pickle.dump(answer, sys.stdout.buffer, pickle.HIGHEST_PROTOCOL)
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    _serve()
