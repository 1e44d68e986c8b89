"""Copies of the period totals kept every SNAPSHOT_EVERY_JOBS jobs, so that a past moment's
totals read the jobs between it and the nearest copy, not half of all jobs.

An as-of read (projections.queries.as_of) needs every identity's totals per period from the
jobs recorded up to its log position P. Before these copies it had two ways: group every job up
to P, or take today's totals and subtract the jobs recorded after P. A moment in the middle of
the history read half the jobs either way (on the 1M-job bench ledger, 500,000 jobs grouped:
1.0-1.3 s of a 1.5-2.5 s read). With a copy of the totals as they stood every
SNAPSHOT_EVERY_JOBS jobs or so (spacing), the nearest copy before or after P (or today's
totals, or nothing) leaves at most half that spacing to group. Copies are taken only under
the periods model, the only one that reads them.

A copy holds the periods that counted when it was taken (ledger.site_usage.window) and later
ones, and also those counted by the moments nearer to it than to the copy before it (in job
batches between, as usage_tables._totals_up_to chooses), which start from it. Holding only its
own window, a copy taken after the window had moved served none of the moments before it: on a
1M-job, 10,000-association SQLite ledger, a moment one batch before such a copy grouped the
250,000 jobs back to the copy before (0.61-0.91 s of a 1.5-2.0 s read), where it now takes one
batch's away from the copy after (0.004-0.006 s of 0.9-1.5 s). That copy held 75,978 rows, not
57,061 (one period more), and a copy's time grows with its rows (that ledger's totals from one
period earlier, 113,296 rows against 94,379: 0.34-0.55 against 0.28-0.36 s on SQLite, 1.38-1.69
against 0.96-1.36 s on PostgreSQL), once in 250,000 jobs. A moment whose window starts before a
copy's first period does not use it. Everything is in whole charge units, so every base gives
exactly the same totals. A rebin (a new half-life) cuts the periods anew: the copies cut the old
way are dropped with it.
"""

from __future__ import annotations

from ledger.site_usage import window
from ledger.state import SiteState
from ledger.store.connections import Connection

# The fewest jobs between two copies. A copy holds a row per identity and period in the windows
# of the moments that start from it (37,392 to 75,978 rows a copy on a 1M-job, 10,000-association
# ledger like the bench's): one every 250,000 jobs, or every as many jobs as the last copy's rows
# when those are more (spacing), keeps all the copies' rows under the jobs' own count, and leaves
# at most half the spacing to group.
SNAPSHOT_EVERY_JOBS = 250_000

TABLES: dict[str, str] = {
    "period_totals_snapshots": """
        CREATE TABLE IF NOT EXISTS period_totals_snapshots (
            position BIGINT NOT NULL,
            userid BIGINT NOT NULL,
            username TEXT NOT NULL,
            bank TEXT NOT NULL,
            period BIGINT NOT NULL,
            charge_units BIGINT NOT NULL,
            PRIMARY KEY (position, userid, username, bank, period)
        )""",
    # One row per copy: the first period it holds, and its rows.
    "period_totals_snapshot_marks": """
        CREATE TABLE IF NOT EXISTS period_totals_snapshot_marks (
            position BIGINT PRIMARY KEY,
            first_period BIGINT NOT NULL,
            copied BIGINT NOT NULL
        )""",
}


def spacing(conn: Connection) -> int:
    """The jobs to fold before the next copy: SNAPSHOT_EVERY_JOBS, or the last copy's rows if
    more (a site of many associations and few jobs would otherwise keep more rows than jobs)."""
    rows = conn.rows(
        "SELECT copied FROM period_totals_snapshot_marks "
        "WHERE position = (SELECT MAX(position) FROM period_totals_snapshot_marks)"
    )
    return max(SNAPSHOT_EVERY_JOBS, int(rows[0][0]) if rows else 0)


def take(conn: Connection, state: SiteState, position: int, at: float) -> None:
    """Copy the totals as they stand after the log position `position` (time `at`): the
    periods that count then and any later, and those that counted at the first moment nearer
    to this copy than to the one before it (_nearer_from), so that every such moment can start
    from this one."""
    first, _last = window(state, at)
    nearer = _nearer_from(conn, position)
    if nearer is not None:
        first = min(first, window(state, nearer)[0])
    copied = conn.execute(
        "INSERT INTO period_totals_snapshots "
        "(position, userid, username, bank, period, charge_units) "
        "SELECT ?, userid, username, bank, period, charge_units FROM period_totals "
        "WHERE period >= ?",
        (position, first),
    ).rowcount
    conn.execute(
        "INSERT INTO period_totals_snapshot_marks (position, first_period, copied) "
        "VALUES (?, ?, ?)",
        (position, first, copied),
    )


# The job batches recorded after a log position (each up to 1,000 jobs), from the log index,
# which is far smaller than the jobs table.
_JOB_BATCHES_AFTER = "FROM log_index WHERE kind = 'jobs' AND position > ?"


def job_batches_between(conn: Connection, low: int, high: int | None) -> int:
    """The job batches recorded at positions in (low, high] (no bound: None): how far a moment
    lies from a base of its totals. Only the choice of a base depends on it
    (usage_tables._totals_up_to, and what a copy holds: _nearer_from); every base gives
    exactly the same totals."""
    bound, params = ("", (low,)) if high is None else (" AND position <= ?", (low, high))
    return int(conn.rows(f"SELECT COUNT(*) {_JOB_BATCHES_AFTER}{bound}", params)[0][0])


def _nearer_from(conn: Connection, position: int) -> float | None:
    """The time of the first moment a copy at `position` is nearer to than the copy before it
    (None: there is none before it): an as-of read starts from the copy after its moment when
    fewer job batches lie between them than between the copy before and the moment
    (usage_tables._totals_up_to), so from the batch past the middle of those between the two
    copies. Later moments have later times, and windows that start no earlier. From
    log_index, which the projector writes before each copy (runner._Folder._count_jobs), so a
    rebuild's one fold finds the rows the commands found."""
    before = conn.rows("SELECT MAX(position) FROM period_totals_snapshot_marks")[0][0]
    if before is None:
        return None
    batches = job_batches_between(conn, int(before), position)
    middle = conn.rows(
        f"SELECT at {_JOB_BATCHES_AFTER} AND position <= ? ORDER BY position LIMIT 1 OFFSET ?",
        (before, position, batches // 2),
    )
    return float(middle[0][0]) if middle else None


def drop_all(conn: Connection) -> None:
    """The periods were cut anew (a rebin): no copy holds them the new way."""
    conn.execute("DELETE FROM period_totals_snapshots")
    conn.execute("DELETE FROM period_totals_snapshot_marks")


def nearest(conn: Connection, position: int, first: int) -> tuple[int | None, int | None]:
    """The positions of the last copy at or before `position` and of the first after it, among
    those that hold the period `first` (None: there is none)."""
    rows = conn.rows(
        "SELECT (SELECT MAX(position) FROM period_totals_snapshot_marks "
        "WHERE position <= ? AND first_period <= ?), "
        "(SELECT MIN(position) FROM period_totals_snapshot_marks "
        "WHERE position > ? AND first_period <= ?)",
        (position, first, position, first),
    )
    before, after = rows[0]
    return (
        None if before is None else int(before),
        None if after is None else int(after),
    )
