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
ones, and also those that counted when the copy before it was taken: a moment between the two
has a window that starts no earlier, so it can start from either copy, the nearer one. Holding
only its own window, a copy taken after the window had moved served none of the moments before
it: on a 1M-job, 10,000-association SQLite ledger, a moment one batch before such a copy grouped
the 250,000 jobs back to the copy before (0.61-0.91 s of a 1.5-2.0 s read), where it now takes
one batch's away from the copy after (0.003-0.006 s of 0.9-1.3 s). That copy held 113,370 rows,
not 57,061, and a copy's time grows with its rows (copying that ledger's totals: 150,688 rows in
0.52-0.68 s, 94,379 in 0.27-0.40 s), once in 250,000 jobs. A moment whose window starts before a
copy's first period does not use it. Everything is in whole charge units, so every base gives
exactly the same totals. A rebin (a new half-life) cuts the periods anew: the copies cut the old
way are dropped with it.
"""

from __future__ import annotations

from ledger.site_usage import window
from ledger.state import SiteState
from ledger.store.connections import Connection

# The fewest jobs between two copies. A copy holds a row per identity and period in its window
# and the copy before's (37,392 to 113,370 rows a copy on a 1M-job, 10,000-association ledger
# like the bench's): one every 250,000 jobs, or every as many jobs as the last copy's rows when
# those are more (spacing), keeps all the copies' rows under the jobs' own count, and leaves at
# most half the spacing to group.
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
    periods that count then and any later, and those that counted when the copy before it was
    taken, so that every moment between the two can start from this one (its window starts no
    earlier than that one's). The time of that copy is its log_index row's, which the projector
    has written: it writes the log rows it holds before each copy (runner._Folder._count_jobs),
    so a rebuild's one fold finds them as the commands did."""
    first, _last = window(state, at)
    before = conn.rows(
        "SELECT at FROM log_index WHERE position = "
        "(SELECT MAX(position) FROM period_totals_snapshot_marks)"
    )
    if before:
        first = min(first, window(state, float(before[0][0]))[0])
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
