"""A Slurm site's usage carried forward: the continuous model's anchored sums as the last usage
update left them, so that the next update reads only the jobs recorded since (and the few that
were still running then) instead of every job of the site.

ledger.site_usage.ContinuousReading holds the model at one moment: each association's exact
integer sum per anchor of the jobs that had ended by then, which does not depend on the moment,
and the parts that do (opening balances, running jobs). Adding jobs to an exact integer sum
gives the same integer whatever the order, so the carried-forward reading equals, to the bit,
the one a whole recomputation gives (tests/cli/test_continuous_incremental.py runs the two side
by side).

The sums are carried only while nothing but jobs, updates and changes that move no usage came
between (the same rule as the periods model's usage_tables.settled_position: no site event that
can move usage, opening balance or clear-usage, which could change whose a job is, from when it
counts, or the half-life; ledger.usage_effects) and no reset boundary was crossed (a reset
restarts every sum). A new association or default bank restarts only its users' sums, from
all their jobs (projections.writers.usage_scope).
"""

from __future__ import annotations

from typing import NamedTuple

from ledger.bounds import CHARGE_UNITS
from ledger.site_usage import (
    AnchoredSums,
    AssociationResolver,
    AssociationUsage,
    AssocKey,
    BalanceEntry,
    ContinuousReading,
    JobSpanTuple,
    add_jobs,
    continuous_reading,
)
from ledger.state import SiteState
from ledger.store.connections import Connection
from projections.writers import usage_scope
from projections.writers.job_reading import JOB_COLUMNS, count_jobs
from projections.writers.usage_scope import USERS_PER_QUERY

TABLES: dict[str, str] = {
    # One row per association and anchor with settled jobs: the exact sum as a hexadecimal
    # integer (it exceeds every SQL integer type).
    "continuous_sums": """
        CREATE TABLE IF NOT EXISTS continuous_sums (
            username TEXT NOT NULL,
            bank TEXT NOT NULL,
            anchor DOUBLE PRECISION NOT NULL,
            units TEXT NOT NULL,
            PRIMARY KEY (username, bank, anchor)
        )""",
    # At most one row: the update whose reading the sums hold (its log position, its time,
    # and the reset boundary then in force; NULL: no reset period).
    "continuous_mark": """
        CREATE TABLE IF NOT EXISTS continuous_mark (
            position BIGINT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            boundary DOUBLE PRECISION
        )""",
}


def read_at(
    conn: Connection, state: SiteState, at: float, max_position: int | None = None
) -> ContinuousReading:
    """The whole reading at `at` from the jobs and opening balances recorded up to
    `max_position` (all when None): what as-of queries and a full update compute."""
    reading = continuous_reading(state, _balances(conn, max_position), at)
    # Streamed, and in parts at once on a large site: a Slurm site's full update reads every
    # job recorded, and holding them all would grow with the site's history.
    count_jobs(conn, state, reading, "in_balance = 0 AND t_run < ?", (at,), max_position)
    return reading


class Updated(NamedTuple):
    """update's answer: every association's usage, and whether the associations are those of
    the update it carried the sums from (nothing but jobs, updates and changes that move no
    usage came between: none was added, removed or given jobs of another)."""

    usage: dict[AssocKey, AssociationUsage]
    same_associations: bool


def update(
    conn: Connection, state: SiteState, at: float, position: int, since: int | None
) -> Updated:
    """Every association's usage at `at` for the usage update at log position `position`,
    carried forward from the reading of the update at `since` (usage_tables.settled_position)
    when the stored sums are that reading's and no reset boundary came between; else read
    whole. Either way the sums are stored for the next update."""
    carried_forward = carried(conn, state, at, position, since)
    same = False
    if carried_forward is None:
        reading = read_at(conn, state, at)
        _store_all(conn, reading)
    else:
        reading, grown, restarted = carried_forward
        _store(conn, reading, grown | restarted)
        same = not restarted
    conn.execute("DELETE FROM continuous_mark")
    conn.execute("INSERT INTO continuous_mark VALUES (?, ?, ?)", (position, at, reading.boundary))
    return Updated(reading.usage(state), same)


def carried(
    conn: Connection, state: SiteState, at: float, position: int, since: int | None
) -> tuple[ContinuousReading, set[AssocKey], set[AssocKey]] | None:
    """The reading at `at` of the jobs recorded before `position` from the stored sums and
    the jobs they do not hold, the associations whose sums that grew, and those of the users
    whose sums restarted (a new association or default bank of theirs: usage_scope); or None
    when the sums cannot be carried to `at`: `since` is usage_tables.settled_position."""
    if since is None:
        return None
    stored = _stored_mark(conn)
    # The sums of the update settled_position names: the last update written, which stored
    # them (tracking.USAGE_WRITTEN moves with every write of the sums, so a later stored
    # mark with only jobs and updates between would carry to the same numbers too).
    if stored is None or not since <= stored.position < position:
        return None
    mark, mark_at = stored.position, stored.at
    if at < mark_at:
        return None  # the sums hold jobs that had not ended by `at`
    reading = continuous_reading(state, _balances(conn, position - 1), at)
    if reading.boundary != stored.boundary:
        return None  # a reset: every sum starts again
    if conn.query("SELECT 1 FROM usage_balance WHERE at > ? LIMIT 1", (mark_at,)):
        return None  # a balance dated after the mark now moves when its jobs count from
    reading.settled = _stored_sums(conn)
    # The jobs recorded since the mark, and those the mark's reading held as running (ended
    # after it): both are counted now, settled if they have ended by `at`.
    jobs: list[JobSpanTuple] = conn.execute(
        f"SELECT {JOB_COLUMNS} FROM jobs WHERE in_balance = 0 AND position > ? AND position < ?",
        (mark, position),
    ).fetchall()
    jobs += conn.execute(
        f"SELECT {JOB_COLUMNS} FROM jobs WHERE in_balance = 0 AND position <= ? AND t_inactive > ?",
        (mark, mark_at),
    ).fetchall()
    resolver = AssociationResolver(state)
    scoped = usage_scope.users_between(conn, state, since, position)
    restarted: set[AssocKey] = set()
    if scoped:
        # A new association or default bank may have given these users jobs or taken some
        # away: their sums start again from every job of theirs, the others' carry.
        restarted = {
            (a.username, a.bank)
            for name in scoped
            for a in state.associations.get(name, {}).values()
        }
        for key in [key for key in reading.settled if key[0] in scoped]:
            del reading.settled[key]
            restarted.add(key)
        jobs = [job for job in jobs if not _theirs(resolver, job, scoped)]
        jobs += [
            job for job in _jobs_of(conn, state, scoped, position) if _theirs(resolver, job, scoped)
        ]
    grown = add_jobs(state, reading, jobs, resolver)
    return reading, grown, restarted


def subtracted(
    conn: Connection, state: SiteState, at: float, position: int
) -> ContinuousReading | None:
    """The reading at `at` of the jobs recorded before `position`, a moment before the last
    usage update (the mark): the mark's stored sums less the jobs they hold that the moment
    does not (recorded after it, or ended after `at`), plus the jobs running at `at`. Exact:
    a job's anchored term is an integer that depends only on the job and on when its
    association's jobs count from, so subtracting it gives what never adding it gives. None
    unless nothing but jobs, updates and changes that move no usage came between the moment
    and the mark (no site event, new association, balance or reset boundary): then the jobs
    would count as they did for the mark. Reads the jobs that ended since `at`, not every
    job: an as-of of a Slurm site's last week, where a whole reading took 5.9 s at 1.4
    million jobs."""
    stored = _stored_mark(conn)
    if stored is None or stored.position < position:
        return None
    mark, mark_at = stored.position, stored.at
    if at > mark_at:
        return None
    if conn.query(
        "SELECT 1 FROM log_index WHERE position >= ? AND position <= ? "
        "AND kind NOT IN ('jobs', 'usage', 'fairshare', 'policy') LIMIT 1",
        (position, mark),
    ):
        return None  # something that can move usage, or whose it is, came between
    balances = _balances(conn, position - 1)
    reading = continuous_reading(state, balances, at)
    at_mark = continuous_reading(state, balances, mark_at)
    if not reading.boundary == at_mark.boundary == stored.boundary:
        return None  # a reset between: the mark's sums started again after it
    if conn.query("SELECT 1 FROM usage_balance WHERE at > ? AND at <= ? LIMIT 1", (at, mark_at)):
        return None  # a balance between moves when its association's jobs count from
    if reading.since != at_mark.since:
        return None
    # What the mark counted that the moment does not: counted again as the mark counted it.
    resolver = AssociationResolver(state)
    with conn.stream_rows(
        f"SELECT {JOB_COLUMNS} FROM jobs WHERE in_balance = 0 AND position <= ? "
        "AND t_inactive <= ? AND (position >= ? OR t_inactive > ?)",
        (mark, mark_at, position, at),
    ) as later:
        add_jobs(state, at_mark, later, resolver)
    reading.settled = _stored_sums(conn)
    for key, sums in at_mark.settled.items():
        held = reading.settled.get(key, {})
        for anchor, units in sums.items():
            left = held.get(anchor, 0) - units
            if left < 0:
                return None  # not the sums this moment's jobs were counted into
            if left:
                held[anchor] = left
            else:
                held.pop(anchor, None)
        if not held:
            reading.settled.pop(key, None)
    # The jobs running at `at` (recorded by then) count their part up to it.
    with conn.stream_rows(
        f"SELECT {JOB_COLUMNS} FROM jobs WHERE in_balance = 0 AND position < ? "
        "AND t_inactive > ? AND t_run < ?",
        (position, at, at),
    ) as running:
        add_jobs(state, reading, running, resolver)
    return reading


class _Mark(NamedTuple):
    """The update whose reading continuous_sums holds: its log position, its time and the
    reset boundary then in force (None: no reset period)."""

    position: int
    at: float
    boundary: float | None


def _stored_mark(conn: Connection) -> _Mark | None:
    marks = conn.rows("SELECT position, at, boundary FROM continuous_mark")
    if len(marks) != 1:
        return None
    position, at, boundary = marks[0]
    return _Mark(int(position), float(at), None if boundary is None else float(boundary))


def _theirs(resolver: AssociationResolver, job: JobSpanTuple, users: set[str]) -> bool:
    """Whether `job` resolves to an association of one of `users`."""
    key = resolver.resolve_cached(job[0], job[1], job[2])
    return key is not None and key[0] in users


def _jobs_of(
    conn: Connection, state: SiteState, users: set[str], position: int
) -> list[JobSpanTuple]:
    """Every job recorded before `position` that can resolve to one of `users`: naming one of
    them, or naming no user and a userid one of them holds."""
    names = sorted(users)
    out: list[JobSpanTuple] = []
    for n in range(0, len(names), USERS_PER_QUERY):
        clause, values = usage_scope.who_of(state, names[n : n + USERS_PER_QUERY]).clause()
        out += conn.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE in_balance = 0 AND position < ?{clause}",
            (position, *values),
        ).fetchall()
    return out


def _balances(conn: Connection, max_position: int | None) -> list[BalanceEntry]:
    where = "" if max_position is None else " WHERE position <= ?"
    return [
        BalanceEntry(r["username"], r["bank"], float(r["at"]), r["charge_units"] / CHARGE_UNITS)
        for r in conn.query(
            f"SELECT username, bank, at, charge_units FROM usage_balance{where}",
            () if max_position is None else (max_position,),
        )
    ]


def _stored_sums(conn: Connection) -> AnchoredSums:
    sums: AnchoredSums = {}
    # Plain tuples: a warm update reads a row per association (10,000 at a large site).
    for username, bank, anchor, units in conn.execute(
        "SELECT username, bank, anchor, units FROM continuous_sums"
    ).fetchall():
        sums.setdefault((username, bank), {})[float(anchor)] = int(units, 16)
    return sums


def _store_all(conn: Connection, reading: ContinuousReading) -> None:
    conn.execute("DELETE FROM continuous_sums")
    _insert(conn, reading, set(reading.settled))


def _store(conn: Connection, reading: ContinuousReading, grown: set[AssocKey]) -> None:
    """Rewrite only the rows of the associations whose sums grew or started again."""
    if not grown:
        return
    conn.delete_rows("continuous_sums", ("username", "bank"), ("text[]", "text[]"), sorted(grown))
    _insert(conn, reading, grown)


def _insert(conn: Connection, reading: ContinuousReading, keys: set[AssocKey]) -> None:
    """The sums of `keys`, copied in binary on PostgreSQL, where the server then parses no
    anchor's text: 4,500 rows, as a Fair Tree cycle writes them, in 19-28 against 25-38 ms
    (8 copies each, alternated; median 23 against 30)."""
    conn.insert_rows(
        "continuous_sums",
        ("username", "bank", "anchor", "units"),
        [
            (key[0], key[1], anchor, format(units, "x"))
            for key in sorted(keys)
            for anchor, units in sorted(reading.settled.get(key, {}).items())
        ],
        binary=True,
    )
