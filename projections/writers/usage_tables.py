"""The jobs, per-period charge totals, usage bins and fair-share columns of the read model.

Charges are summed as integers of 1e-5 (the charge's own rounding), so totals are exact and
never depend on the order jobs arrived in.

An opening balance (UsageBalanceImported: usage a flux-accounting site had accumulated) counts
like jobs do: each entry is a raw charge at a time, kept in `usage_balance` and added to the
period totals of the period holding that time, so decay, clear-usage, a half-life change and
as-of queries treat it exactly as they treat jobs. A job imported with the site whose charge
that balance already holds (`in_balance`) is recorded with charge_units 0: it never counts
twice."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.bounds import CHARGE_UNITS, charge_units
from ledger.fairshare import Ranking
from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE, shown_after_walk
from ledger.site_config import CONTINUOUS, WEIGHTED_WALK
from ledger.site_usage import (
    AssociationResolver,
    AssociationUsage,
    AssocKey,
    PeriodTotal,
    association_usage,
    bank_usage,
    rebinned_usage,
    record_billing,
    site_ranking,
    usage_params,
    window,
)
from ledger.state import Association, SiteState
from ledger.store.connections import Connection
from ledger.usage import UsageParams, period_of, period_start
from projections.writers import continuous_state, totals_snapshots, tracking, usage_scope
from projections.writers.bins import bins_blob, bins_of_blob
from projections.writers.tracking import USAGE_WRITTEN
from projections.writers.usage_scope import USERS_PER_QUERY, Who, who_of

TABLES: dict[str, str] = {
    "jobs": """
        CREATE TABLE IF NOT EXISTS jobs (
            cluster TEXT NOT NULL,
            id TEXT NOT NULL,
            userid BIGINT,
            username TEXT,
            bank TEXT,
            queue TEXT,
            project TEXT,
            t_submit DOUBLE PRECISION NOT NULL,
            t_run DOUBLE PRECISION NOT NULL,
            t_inactive DOUBLE PRECISION NOT NULL,
            nnodes BIGINT NOT NULL,
            ncores BIGINT NOT NULL,
            ngpus BIGINT NOT NULL,
            urgency INTEGER,
            charge DOUBLE PRECISION NOT NULL,
            charge_units BIGINT NOT NULL,
            period BIGINT NOT NULL,
            position BIGINT NOT NULL,
            extra TEXT,
            in_balance INTEGER NOT NULL DEFAULT 0,
            billing DOUBLE PRECISION NOT NULL DEFAULT 0,
            qos TEXT,
            PRIMARY KEY (cluster, id)
        )""",
    "period_totals": """
        CREATE TABLE IF NOT EXISTS period_totals (
            userid BIGINT NOT NULL,
            username TEXT NOT NULL,
            bank TEXT NOT NULL,
            period BIGINT NOT NULL,
            charge_units BIGINT NOT NULL,
            njobs BIGINT NOT NULL,
            PRIMARY KEY (userid, username, bank, period)
        )""",
    "job_usage_bins": """
        CREATE TABLE IF NOT EXISTS job_usage_bins (
            username TEXT NOT NULL,
            bank TEXT NOT NULL,
            bins BYTEA NOT NULL,
            PRIMARY KEY (username, bank)
        )""",
    # Opening balances: one row per entry of a UsageBalanceImported event.
    "usage_balance": """
        CREATE TABLE IF NOT EXISTS usage_balance (
            position BIGINT NOT NULL,
            entry BIGINT NOT NULL,
            username TEXT NOT NULL,
            bank TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            period BIGINT NOT NULL,
            charge_units BIGINT NOT NULL,
            PRIMARY KEY (position, entry)
        )""",
}
INDEXES = [
    "CREATE INDEX IF NOT EXISTS jobs_position_idx ON jobs (position)",
    "CREATE INDEX IF NOT EXISTS jobs_t_inactive_idx ON jobs (t_inactive)",
    "CREATE INDEX IF NOT EXISTS jobs_user_idx ON jobs (username, userid)",
]
# The period totals by period, for the reads of a window or of the periods a cycle changed. On
# SQLite the index holds the charge too (and, as every index of a WITHOUT ROWID table, the key),
# so those reads never look a row up in the table: on the 1M-job bench ledger a cron cycle's
# 33,000 totals took 39 ms instead of 72, a whole window's 109,000 took 156 ms instead of 261.
# A PostgreSQL server reads them in 17 and 42 ms through the plain index: it would only pay
# the upkeep of the wider one.
_TOTALS_BY_PERIOD = "CREATE INDEX IF NOT EXISTS period_totals_period_idx ON period_totals (period)"
_TOTALS_BY_PERIOD_WITH_UNITS = (
    "CREATE INDEX IF NOT EXISTS period_totals_period_units_idx "
    "ON period_totals (period, charge_units)"
)


def indexes(postgres: bool) -> list[str]:
    """This module's indexes on one store."""
    return [*INDEXES, _TOTALS_BY_PERIOD if postgres else _TOTALS_BY_PERIOD_WITH_UNITS]


def totals_index_step(postgres: bool) -> list[str]:
    """What takes a ledger of layout 19 to layout 20 (the period index that holds the charge
    on SQLite; nothing on PostgreSQL): the totals' rows stay as they are."""
    if postgres:
        return []
    return ["DROP INDEX IF EXISTS period_totals_period_idx", _TOTALS_BY_PERIOD_WITH_UNITS]


_INSERT_JOB = """
    INSERT INTO jobs (cluster, id, userid, username, bank, queue, project, t_submit, t_run,
                      t_inactive, nnodes, ncores, ngpus, urgency, charge, charge_units, period,
                      position, extra, in_balance, billing, qos)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (cluster, id) DO NOTHING"""

# Only rows this event inserted carry its position: a job already present (which the ingest's
# exactly-once check should have prevented) is never counted twice.
ADD_TOTALS = """
    INSERT INTO period_totals (userid, username, bank, period, charge_units, njobs)
    SELECT COALESCE(userid, -1), COALESCE(username, ''), COALESCE(bank, ''), period,
           SUM(charge_units), COUNT(*)
    FROM jobs WHERE position >= ? AND position <= ?
    GROUP BY COALESCE(userid, -1), COALESCE(username, ''), COALESCE(bank, ''), period
    ON CONFLICT (userid, username, bank, period) DO UPDATE SET
        charge_units = period_totals.charge_units + excluded.charge_units,
        njobs = period_totals.njobs + excluded.njobs"""


JOB_COLUMNS = (
    "cluster",
    "id",
    "userid",
    "username",
    "bank",
    "queue",
    "project",
    "t_submit",
    "t_run",
    "t_inactive",
    "nnodes",
    "ncores",
    "ngpus",
    "urgency",
    "charge",
    "charge_units",
    "period",
    "position",
    "extra",
    "in_balance",
    "billing",
    "qos",
)  # the order of _INSERT_JOB's values


def job_row(r: dict[str, Any], params: UsageParams, position: int) -> tuple[Any, ...]:
    """One job record as the jobs table holds it (JOB_COLUMNS)."""
    return (
        r["cluster"],
        r["id"],
        r.get("userid"),
        r.get("username"),
        r.get("bank"),
        r.get("queue"),
        r.get("project"),
        r["t_submit"],
        r["t_run"],
        r["t_inactive"],
        r["nnodes"],
        r["ncores"],
        r["ngpus"],
        r.get("urgency"),
        r["charge"],
        0 if r.get("in_balance") else charge_units(r["charge"]),
        period_of(r["t_inactive"], params),
        position,
        json.dumps(r["extra"]) if r.get("extra") else None,
        1 if r.get("in_balance") else 0,
        record_billing(r),
        # A record made before the job record named its QOS kept it under "extra".
        r.get("qos", (r.get("extra") or {}).get("qos")),
    )


def insert_jobs(
    conn: Connection,
    state: SiteState,
    records: list[dict[str, Any]],
    position: int,
    totals: bool = True,
) -> None:
    """The jobs of the batch at `position` into `jobs`, and (with `totals`) into the period
    totals; a fold of several batches leaves their totals to one `add_totals`."""
    insert_job_batches(conn, state, [(records, position)])
    if totals:
        add_totals(conn, position, position)


def insert_job_batches(
    conn: Connection, state: SiteState, batches: Sequence[tuple[Sequence[dict[str, Any]], int]]
) -> None:
    """The jobs of several batches, (records, log position) in log order, into `jobs` in one
    bulk insert. On PostgreSQL each insert costs round trips of its own (its COPY's start and
    finish, two savepoints): with an ingest's chunk of five batches sent in one COPY rather than
    five, 200,000 jobs took a median of 7.06 s against 7.78 s (thirteen alternated rounds). The
    records are read only while the rows are sent."""
    params = usage_params(state)

    def rows() -> Iterator[tuple[Any, ...]]:
        # Each row made as the COPY sends it (Connection.insert_rows).
        return (job_row(r, params, position) for records, position in batches for r in records)

    try:
        # In bulk (COPY on PostgreSQL): the log's key index already keeps every job out that
        # it holds, so a duplicate here is rare (a log written before the index existed). The
        # rows then go in one by one, in log order, so that the first record of a job wins.
        with conn.savepoint("insert_jobs"):
            _copy_jobs(conn, rows)
    except conn.duplicate_key_errors():
        conn.executemany(_INSERT_JOB, list(rows()))


def _copy_jobs(conn: Connection, rows: Callable[[], Iterator[tuple[Any, ...]]]) -> None:
    """The jobs' rows in binary form: the server stores a row in less time than it parses
    its text (a COPY of 1,000 rows into a table of 500,000 with the jobs' indexes: 14-19
    against 20-22 µs a row). A batch holding a value not of its column's type (a number an
    old record's `extra` gave as its QOS, for a text column) goes in as text, as before:
    binary refuses it with TypeError before the COPY ends, and the savepoint undoes it."""
    try:
        with conn.savepoint("jobs_in_binary"):
            conn.insert_rows("jobs", JOB_COLUMNS, rows(), binary=True)
    except TypeError:
        conn.insert_rows("jobs", JOB_COLUMNS, rows())


def add_totals(conn: Connection, first: int, last: int) -> None:
    """The jobs of the batches at log positions first..last added to the period totals, in
    one statement: an ingest's 25 batches of 1,000 jobs touch each (identity, period) up to 25
    times, where one statement upserts it once."""
    conn.execute(ADD_TOTALS, (first, last))


# rebin: at most this many periods are cut with a statement each; past that (a half-life of
# seconds over months of jobs), the jobs are renumbered a batch at a time.
PERIOD_RANGES_MAX = 10_000
REBIN_BATCH = 50_000


def rebin(conn: Connection, state: SiteState) -> None:
    """The half-life changed: periods are cut anew from the stored jobs (nothing is lost).
    A period holds the jobs that ended from its start to the next one's (period_of), so each
    is one ranged UPDATE over the jobs' end-time index, where a statement per job, with every
    job read first, took minutes and gigabytes at ten million jobs."""
    params = usage_params(state)
    ((lowest, highest),) = conn.rows("SELECT MIN(t_inactive), MAX(t_inactive) FROM jobs")
    if lowest is not None:
        first, last = period_of(float(lowest), params), period_of(float(highest), params)
        if last - first < PERIOD_RANGES_MAX:
            conn.executemany(
                "UPDATE jobs SET period = ? WHERE t_inactive >= ? AND t_inactive < ?",
                [
                    (p, period_start(p, params), period_start(p + 1, params))
                    for p in range(first, last + 1)
                ],
            )
        else:
            _rebin_in_batches(conn, params)
    conn.execute("DELETE FROM period_totals")
    conn.execute("""
        INSERT INTO period_totals (userid, username, bank, period, charge_units, njobs)
        SELECT COALESCE(userid, -1), COALESCE(username, ''), COALESCE(bank, ''), period,
               SUM(charge_units), COUNT(*)
        FROM jobs WHERE position >= 0
        GROUP BY COALESCE(userid, -1), COALESCE(username, ''), COALESCE(bank, ''), period""")
    balance = conn.query("SELECT position, entry, at FROM usage_balance")
    conn.executemany(
        "UPDATE usage_balance SET period = ? WHERE position = ? AND entry = ?",
        [(period_of(r["at"], params), r["position"], r["entry"]) for r in balance],
    )
    conn.execute(_ADD_BALANCE_TOTALS.format(where=""))


def _rebin_in_batches(conn: Connection, params: UsageParams) -> None:
    """Every job's period from its end time, REBIN_BATCH jobs at a time in key order."""
    after: tuple[str, str] = ("", "")
    while rows := conn.rows(
        "SELECT cluster, id, t_inactive FROM jobs WHERE cluster > ? OR (cluster = ? AND id > ?) "
        f"ORDER BY cluster, id LIMIT {REBIN_BATCH}",
        (after[0], after[0], after[1]),
    ):
        conn.executemany(
            "UPDATE jobs SET period = ? WHERE cluster = ? AND id = ?",
            [(period_of(float(t), params), cluster, id_) for cluster, id_, t in rows],
        )
        after = (rows[-1][0], rows[-1][1])


# Balance entries count under userid -1: an entry names its association (username, bank).
_ADD_BALANCE_TOTALS = """
    INSERT INTO period_totals (userid, username, bank, period, charge_units, njobs)
    SELECT -1, username, bank, period, SUM(charge_units), 0
    FROM usage_balance{where}
    GROUP BY username, bank, period
    ON CONFLICT (userid, username, bank, period) DO UPDATE SET
        charge_units = period_totals.charge_units + excluded.charge_units"""


def insert_balance(
    conn: Connection, state: SiteState, entries: list[list[Any]], position: int
) -> None:
    """An opening balance's entries, counted in the period holding each entry's time."""
    params = usage_params(state)
    conn.executemany(
        "INSERT INTO usage_balance VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (position, n, username, bank, float(at), period_of(float(at), params), charge_units(c))
            for n, (username, bank, at, c) in enumerate(entries)
        ],
    )
    conn.execute(_ADD_BALANCE_TOTALS.format(where=" WHERE position = ?"), (position,))


def show_balance(conn: Connection, state: SiteState, shown: list[list[Any]], at: float) -> None:
    """The values an opening balance's source showed: job_usage and fairshare of its
    associations (until the next update-usage / update-fshare recomputes them), their banks'
    usage, and the usage bins as our periods hold them now."""
    current = {
        (r["username"], r["bank"]): float(r["job_usage"])
        for r in conn.query("SELECT username, bank, job_usage FROM association_table")
    }
    conn.executemany(
        "UPDATE association_table SET job_usage = ?, fairshare = ? WHERE username = ? AND bank = ?",
        [(float(u), float(f), name, bank) for name, bank, u, f in shown],
    )
    current.update({(name, bank): float(u) for name, bank, u, _f in shown})
    usage = {
        (a.username, a.bank): AssociationUsage(
            usage=current.get((a.username, a.bank), 0.0), bins=[]
        )
        for a in state.all_associations()
    }
    conn.executemany(
        "UPDATE bank_table SET job_usage = ? WHERE bank = ?",
        [(value, name) for name, value in bank_usage(state, usage).items()],
    )
    _write_bins(conn, usage_at(conn, state, at))


def show_fairshare(conn: Connection, username: str, bank: str, value: float) -> None:
    """A fair-share set by hand (FairshareSet): the association's row shows it until a walk
    ranks the association (shown_after_walk)."""
    conn.execute(
        "UPDATE association_table SET fairshare = ? WHERE username = ? AND bank = ?",
        (value, username, bank),
    )


def _as_totals(rows: Iterable[Sequence[Any]]) -> list[PeriodTotal]:
    """Rows of (userid, username, bank, period, charge_units), as every totals query selects
    them (tuples, not query()'s dicts: an as-of read goes through one per identity and
    period, tens of thousands), as PeriodTotals."""
    return [
        (
            None if userid == -1 else int(userid),
            username or None,
            bank or None,
            int(period),
            int(units) / CHARGE_UNITS,
        )
        for userid, username, bank, period, units in rows
    ]


_GROUPED_JOBS = (
    "SELECT COALESCE(userid, -1) AS userid, COALESCE(username, '') AS username, "
    "COALESCE(bank, '') AS bank, period, SUM(charge_units) AS charge_units FROM jobs "
    "WHERE period >= ? AND period <= ?{filters} "
    "GROUP BY COALESCE(userid, -1), COALESCE(username, ''), COALESCE(bank, ''), period"
)
# The same, over opening-balance entries: their time `at` plays the part of t_inactive.
_BALANCE_AS_JOBS = (
    "(SELECT -1 AS userid, username, bank, period, at AS t_inactive, charge_units, position "
    "FROM usage_balance) AS balance"
)


_Identity = tuple[Any, Any, Any, Any]  # (userid, username, bank, period) as the totals hold it


def _units_as_totals(units: Mapping[_Identity, int], nonzero: bool = False) -> list[PeriodTotal]:
    """Whole units per identity and period, keyed as the totals queries select them (with
    `nonzero`, only the totals that are not 0), as PeriodTotals: one pass over the items,
    without a row built for each first (75,000 totals, as an as-of read holds: 34 -> 13 ms)."""
    return [
        (
            None if userid == -1 else userid,
            username or None,
            bank or None,
            period,
            total / CHARGE_UNITS,
        )
        for (userid, username, bank, period), total in units.items()
        if total or not nonzero
    ]


def _job_totals(
    conn: Connection,
    state: SiteState,
    first: int,
    last: int,
    max_position: int | None,
    ended_by: float | None,
    periods_current: bool,
    who: Who | None = None,
) -> list[PeriodTotal]:
    """Per-period totals straight from the jobs and opening balances (for as-of and
    clear-usage cutoffs). Jobs recorded without a userid share their identity with an opening
    balance's entries (userid -1, username, bank), so both are added in whole units into one
    total per identity and period, as period_totals holds them: two totals added as floats
    could differ from it in the last bit."""
    args = (state, first, last, max_position, ended_by, periods_current, who)
    units: dict[_Identity, int] = defaultdict(int)
    for table in ("jobs", _BALANCE_AS_JOBS):
        for userid, username, bank, period, recorded in _counted_units(conn, table, *args):
            units[(userid, username, bank, period)] += int(recorded)
    return _units_as_totals(units)


def _counted_units(
    conn: Connection,
    table: str,
    state: SiteState,
    first: int,
    last: int,
    max_position: int | None,
    ended_by: float | None,
    periods_current: bool,
    who: Who | None = None,
) -> Iterable[Sequence[Any]]:
    """(userid, username, bank, period, charge_units) of `table`'s rows in the window, a row
    per identity and period."""
    filters = ""
    params: list[Any] = []
    if who is not None:
        clause, values = who.clause()
        filters += clause
        params += values
    if max_position is not None:
        filters += " AND position <= ?"
        params.append(max_position)
    if ended_by is not None:
        filters += " AND t_inactive <= ?"
        params.append(ended_by)
    if periods_current:
        sql = _GROUPED_JOBS.replace("FROM jobs", f"FROM {table}").format(filters=filters)
        return conn.rows(sql, [first, last, *params])
    # The half-life in force then differs from today's, so jobs.period (cut with today's) does
    # not apply: cut the periods again from t_inactive.
    usage = usage_params(state)
    rows = conn.rows(
        "SELECT COALESCE(userid, -1) AS userid, COALESCE(username, '') AS username, "
        f"COALESCE(bank, '') AS bank, t_inactive, charge_units FROM {table} "
        f"WHERE t_inactive >= ? AND t_inactive < ?{filters}",
        [period_start(first, usage), period_start(last + 1, usage), *params],
    )
    grouped: dict[_Identity, int] = defaultdict(int)
    for userid, username, bank, t_inactive, units in rows:
        grouped[(userid, username, bank, period_of(t_inactive, usage))] += int(units)
    return [(*key, units) for key, units in grouped.items()]


def _totals_up_to(conn: Connection, first: int, last: int, position: int) -> list[PeriodTotal]:
    """The totals of the jobs and opening balances recorded up to `position`, from the base
    nearest to it: the last copy of the totals before it (totals_snapshots) plus the jobs
    recorded since, or the first copy after it (else today's totals) less the jobs recorded
    after it, or, early on, the jobs alone. In integer units, so each gives exactly what
    summing the earlier jobs gives; the nearest reads the fewest jobs."""
    before, after = totals_snapshots.nearest(conn, position, first)
    low = before if before is not None else 0
    from_below = totals_snapshots.job_batches_between(conn, low, position)
    from_above = totals_snapshots.job_batches_between(conn, position, after)
    if from_above < from_below:
        base = _snapshot_units(conn, after, first, last)
        _add_recorded(conn, base, first, last, position, after, -1)
    elif before is None:
        base = {}
        _add_recorded(conn, base, first, last, 0, position, 1)
    else:
        base = _snapshot_units(conn, before, first, last)
        _add_recorded(conn, base, first, last, before, position, 1)
    return _units_as_totals(base, nonzero=True)


def _snapshot_units(
    conn: Connection, position: int | None, first: int, last: int
) -> dict[_Identity, int]:
    """The units per identity and period of the copy at `position` (None: today's totals)."""
    if position is None:
        rows = conn.rows(
            "SELECT userid, username, bank, period, charge_units FROM period_totals "
            "WHERE period >= ? AND period <= ?",
            (first, last),
        )
    else:
        rows = conn.rows(
            "SELECT userid, username, bank, period, charge_units FROM period_totals_snapshots "
            "WHERE position = ? AND period >= ? AND period <= ?",
            (position, first, last),
        )
    return {
        (userid, username, bank, period): int(units)
        for userid, username, bank, period, units in rows
    }


def _add_recorded(
    conn: Connection,
    units: dict[_Identity, int],
    first: int,
    last: int,
    low: int,
    high: int | None,
    sign: int,
) -> None:
    """Add to `units` (`sign` -1: take away) the jobs and opening balances recorded at
    positions in (low, high] (no bound: None)."""
    bound = "" if high is None else " AND position <= ?"
    params = (first, last, low) if high is None else (first, last, low, high)
    for table in ("jobs", _BALANCE_AS_JOBS):
        sql = _GROUPED_JOBS.replace("FROM jobs", f"FROM {table}").format(
            filters=f" AND position > ?{bound}"
        )
        for userid, username, bank, period, recorded in conn.rows(sql, params):
            key = (userid, username, bank, period)
            units[key] = units.get(key, 0) + sign * int(recorded)


def usage_at(
    conn: Connection,
    state: SiteState,
    at: float,
    max_position: int | None = None,
    periods_current: bool = True,
) -> dict[tuple[str, str], AssociationUsage]:
    """Every association's usage at `at`: from the running totals, or, for an as-of query,
    from the jobs recorded up to `max_position` (`periods_current`: jobs.period was cut with
    the half-life of `state`). Under the continuous model, from the jobs' times and billing."""
    if state.usage_model == CONTINUOUS:
        return continuous_usage_at(conn, state, at, max_position)
    first, last = window(state, at)
    if max_position is None and periods_current:
        totals = _as_totals(
            conn.rows(
                "SELECT userid, username, bank, period, charge_units FROM period_totals "
                "WHERE period >= ? AND period <= ?",
                (first, last),
            )
        )
    elif periods_current and max_position is not None:
        totals = _totals_up_to(conn, first, last, max_position)
    else:
        totals = _job_totals(conn, state, first, last, max_position, None, periods_current)
    cleared = _cleared_totals(
        conn, state, state.all_associations(), first, last, max_position, periods_current
    )
    return association_usage(state, totals, at, cleared)


def continuous_usage_at(
    conn: Connection, state: SiteState, at: float, max_position: int | None = None
) -> dict[AssocKey, AssociationUsage]:
    """The continuous model's usage (ledger.site_usage.ContinuousReading) from the jobs and
    opening balances recorded up to `max_position` (all when None). A job whose charge an
    opening balance already holds (`in_balance`) is left out, as under the periods model.

    A moment at or after the last usage update (sshare and view-bank now, an as-of since
    then) carries that update's stored sums forward, as the next update would, when nothing
    but jobs and updates came between (settled_position): the jobs recorded since, not every
    job. A moment before it takes from those sums the jobs the moment had not seen
    (continuous_state.subtracted). Each gives the whole reading's numbers to the bit; a
    whole reading took 6.8 s for sshare at 1.4 million jobs."""
    if max_position is not None:
        position = max_position + 1
        since = settled_position(conn, state, position, at)
        carried = continuous_state.carried(conn, state, at, position, since)
        if carried is not None:
            return carried[0].usage(state)
        earlier = continuous_state.subtracted(conn, state, at, position)
        if earlier is not None:
            return earlier.usage(state)
    return continuous_state.read_at(conn, state, at, max_position).usage(state)


def _cleared_totals(
    conn: Connection,
    state: SiteState,
    associations: Iterable[Association],
    first: int,
    last: int,
    max_position: int | None,
    periods_current: bool,
    who: Who | None = None,
) -> dict[float, list[PeriodTotal]]:
    """For each usage cutoff of `associations` inside the window (clear-usage's, or a bank's
    ignore_older_than), the totals of the jobs that ended by it (association_usage takes them
    back out for those associations)."""
    start = period_start(first, usage_params(state))
    cutoffs = {state.usage_cutoff(a) for a in associations}
    cutoffs = {cutoff for cutoff in cutoffs if cutoff >= start}
    return {
        cutoff: _job_totals(conn, state, first, last, max_position, cutoff, periods_current, who)
        for cutoff in cutoffs
    }


def association_usage_at(
    conn: Connection,
    state: SiteState,
    key: AssocKey,
    at: float,
    max_position: int | None = None,
    periods_current: bool = True,
) -> AssociationUsage:
    """usage_at(...)[key], reading only the jobs that can belong to that association (its
    user's, by name or userid) instead of the whole site's totals."""
    if state.usage_model == CONTINUOUS:
        return continuous_usage_at(conn, state, at, max_position)[key]
    who = who_of(state, [key[0]])
    first, last = window(state, at)
    totals = _job_totals(conn, state, first, last, max_position, None, periods_current, who)
    assoc = state.association(*key)
    mine = [assoc] if assoc is not None else []
    cleared = _cleared_totals(conn, state, mine, first, last, max_position, periods_current, who)
    return association_usage(state, totals, at, cleared, only={key})[key]


def mark_usage_written(conn: Connection, position: int) -> None:
    tracking.move(conn, USAGE_WRITTEN, position)


def settled_position(conn: Connection, state: SiteState, position: int, at: float) -> int | None:
    """The log position up to which the stored usage columns already hold every job, when
    nothing but jobs changed them since: the last usage update written before the update at
    `position` (at time `at`; USAGE_WRITTEN), in the same period, with no site event that can
    move anyone's usage (a clear-usage, a removal, a config change, an opening balance...;
    not a new share, limit, queue or QOS, nor a new association or default bank, which move
    only their users': ledger.usage_effects, usage_scope) between them. None: recompute all.

    The mark is the update this fold, or the command before it, actually wrote: an
    update-usage run on its own is one, and the update-fshare after it then recomputes only
    the users with jobs recorded since (the cron pair of flux-accounting's sites, two
    commands); a replay that folds the two together marks the update before them instead.
    Log times only grow, so the columns are of the mark's period. The caller rules out a mark
    the log sets aside (neutralized). Under the continuous model the mark's anchored sums are
    carried forward instead (continuous_state.update), unless a reset boundary came
    between."""
    mark = tracking.positions(conn, (USAGE_WRITTEN,)).get(USAGE_WRITTEN, 0)
    if not 0 < mark < position:
        return None
    return mark if nothing_moved_usage(conn, state, mark, position, at) else None


def nothing_moved_usage(
    conn: Connection, state: SiteState, since: int, position: int, at: float
) -> bool:
    """Whether the usage columns as they were at the update at `since` still hold at `at`
    for the update at `position`, but for jobs recorded between (and the users a new
    association or default bank gives or takes jobs from): the same period, and no site
    event that can move anyone's usage between the two."""
    mark_at = conn.query("SELECT at FROM log_index WHERE position = ?", (since,))[0]["at"]
    continuous = state.usage_model == CONTINUOUS  # its resets: continuous_state's check
    params = usage_params(state)
    if not continuous and period_of(float(mark_at), params) != period_of(at, params):
        return False  # a period boundary: every association's bins moved
    changed = conn.query(
        "SELECT position FROM log_index WHERE position > ? AND position < ? "
        "AND kind IN ('site', 'balance') LIMIT 1",
        (since, position),
    )
    return not changed


def _touched(
    conn: Connection, resolver: AssociationResolver, since: int, position: int
) -> tuple[set[str], set[int]]:
    """The users of the jobs recorded after `since` and before `position`, and the periods
    those jobs ended in."""
    users, periods = set(), set()
    for userid, username, bank, period in conn.rows(
        "SELECT DISTINCT userid, username, bank, period FROM jobs "
        "WHERE position > ? AND position < ?",
        (since, position),
    ):
        key = resolver.resolve_cached(userid, username, bank)
        if key is not None:
            users.add(key[0])
            periods.add(int(period))
    return users, periods


def _users_usage(
    conn: Connection,
    state: SiteState,
    at: float,
    users: set[str],
    periods: set[int],
    stored_bins: dict[AssocKey, bytes],
    resolver: AssociationResolver,
    every_period: bool = False,
) -> dict[AssocKey, AssociationUsage]:
    """usage_at(...) of every association of `users` only, whose totals changed only in
    `periods`: those periods' bins from their period totals, the others' as stored (or every
    bin from the totals, where an association's jobs stop counting at a cutoff in the window,
    its bins are not stored, or `every_period`: jobs may have moved between their
    associations). `resolver`: the one that found `users` (its cache reused)."""
    first, last = window(state, at)
    names = sorted(users)
    mine = [a for name in names for a in state.associations.get(name, {}).values()]
    keys = {(a.username, a.bank) for a in mine}
    start = period_start(first, usage_params(state))
    rebin = (
        not every_period
        and all(key in stored_bins for key in keys)
        and not any(state.usage_cutoff(a) >= start for a in mine)
    )
    changed = sorted(p for p in periods if first <= p <= last) if rebin else []
    if rebin and not changed:  # only periods out of the window: nothing that counts moved
        return {}
    if rebin:
        kept = {key: bins_of_blob(stored_bins[key]) for key in keys}
        changed_totals = _changed_periods_totals(conn, state, names, first, last, changed)
        return rebinned_usage(state, changed_totals, at, kept, set(changed), resolver)
    totals: list[PeriodTotal] = []
    cleared: dict[float, list[PeriodTotal]] = defaultdict(list)
    for n in range(0, len(names), USERS_PER_QUERY):
        who = who_of(state, names[n : n + USERS_PER_QUERY])
        clause, values = who.clause(in_totals=True)
        totals += _as_totals(
            conn.rows(
                "SELECT userid, username, bank, period, charge_units FROM period_totals "
                f"WHERE period >= ? AND period <= ?{clause}",
                [first, last, *values],
            )
        )
        part = [a for name in who.usernames for a in state.associations[name].values()]
        for cutoff, dropped in _cleared_totals(
            conn, state, part, first, last, None, True, who
        ).items():
            cleared[cutoff] += dropped
    return association_usage(state, totals, at, cleared, only=keys)


def _changed_periods_totals(
    conn: Connection,
    state: SiteState,
    names: list[str],
    first: int,
    last: int,
    changed: list[int],
) -> list[PeriodTotal]:
    """The period totals of the users `names` in the periods `changed` (within first..last)."""
    select = (
        "SELECT userid, username, bank, period, charge_units FROM period_totals "
        f"WHERE period >= ? AND period <= ? AND period IN ({', '.join('?' * len(changed))})"
    )
    if len(names) <= USERS_PER_QUERY:
        clause, values = who_of(state, names).clause(in_totals=True)
        return _as_totals(conn.rows(select + clause, [first, last, *changed, *values]))
    # The rows are found through the period index however the users are asked for, so each
    # chunk of users scanned the changed periods again: one scan, filtered here. (10,000 new
    # jobs at 10,000 associations: 83 ms in six chunks of users, 33 ms in one scan.)
    who = who_of(state, names)
    usernames, userids = set(who.usernames), set(who.userids)
    return _as_totals(
        row
        for row in conn.rows(select, [first, last, *changed])
        if row[1] in usernames or (row[1] == "" and row[0] in userids)
    )


def plan_usage(
    conn: Connection,
    state: SiteState,
    at: float,
    fairshare: bool,
    position: int | None = None,
    since: int | None = None,
    walked: Callable[[int, dict[AssocKey, AssociationUsage]], Ranking | None] | None = None,
) -> UsageWrite:
    """What brings the job_usage (and with `fairshare`, the fair-share) columns to their values
    at `at`: what update-usage / update-fshare recorded at log position `position`, with the
    usage and the walk (no ranks without `fairshare`).

    `since` (settled_position): the columns already hold every job up to that position and
    nothing else changed, so only the associations of the users with jobs recorded after it
    are recomputed from their period totals; every other keeps its stored usage (and its bins,
    left out of the returned usage). The numbers are those a whole recomputation gives. The
    weighted walk is the one `walked(since, usage)` gives, if it gives one (the walk of that
    update, when it ranked this very usage and no policy change came since: the same tree
    over the same usage ranks the same; a Slurm algorithm's values are always recomputed).
    Under the continuous model the usage is continuous_state.update's, which carries the sums
    of the update at `since` forward and stores them: the one write made here. The columns are
    store_usage's."""
    # (job_usage, fairshare) per association, as tuples: a row per association on every update.
    current: dict[AssocKey, tuple[float, float]] = {
        (username, bank): (job_usage, fairshare)
        for username, bank, job_usage, fairshare in conn.rows(
            "SELECT username, bank, job_usage, fairshare FROM association_table", binary=True
        )
    }
    stored_bins: dict[AssocKey, bytes] | None = None
    recomputed: set[AssocKey] | None = None
    continuous = state.usage_model == CONTINUOUS and position is not None
    if continuous and position is not None:
        usage, same_associations = continuous_state.update(conn, state, at, position, since)
        if same_associations:
            # This model keeps no bins (each association's are empty), and no association came
            # or went since the update that wrote them: none is new, and none is read (a Fair
            # Tree update after 10,000 jobs read and compared 10,000 rows: 34 ms on average).
            recomputed = set()
    elif since is not None and position is not None:
        keys = [(a.username, a.bank) for a in state.all_associations()]
        if all(key in current for key in keys):
            resolver = AssociationResolver(state)
            users, periods = _touched(conn, resolver, since, position)
            # Users a new association or default bank may have given or taken jobs from:
            # every period of theirs is recomputed.
            scoped = usage_scope.users_between(conn, state, since, position)
            usage = {key: AssociationUsage(float(current[key][0]), []) for key in keys}
            fresh = {}
            if users or scoped:
                stored_bins = _stored_bins(conn)
                fresh = _users_usage(
                    conn, state, at, users | scoped, periods, stored_bins, resolver, bool(scoped)
                )
            usage.update(fresh)
            recomputed = set(fresh)
    if recomputed is None and not continuous:
        usage = usage_at(conn, state, at)
    ranking = Ranking({}, 0)
    if fairshare:
        kept = None
        if (
            recomputed is not None
            and since is not None
            and position is not None
            and walked is not None
            and state.fairshare_algorithm == WEIGHTED_WALK
            and not policy_changed_between(conn, since, position)
            and not _moved(usage, current)
        ):
            kept = walked(since, usage)
        ranking = kept if kept is not None else site_ranking(state, usage)
    shares = ranking.fairshare()
    updates = []
    for key, value in usage.items():
        row = current.get(key)
        new_share = shown_after_walk(shares.get(key), row[1] if row else None)
        if row is None or row[0] != value.usage or row[1] != new_share:
            updates.append((value.usage, new_share, key[0], key[1]))
    shown = dict(conn.rows("SELECT bank, job_usage FROM bank_table"))
    banks = [
        (value, name)
        for name, value in bank_usage(state, usage).items()
        if name in shown and shown[name] != value
    ]
    if recomputed is None or recomputed:
        stored_bins = stored_bins if stored_bins is not None else _stored_bins(conn)
    return UsageWrite(usage, ranking, updates, banks, recomputed, stored_bins)


def _moved(
    usage: dict[AssocKey, AssociationUsage], current: dict[AssocKey, tuple[float, float]]
) -> bool:
    """Whether any association's usage differs from its column. The columns hold the usage of
    the update at `since` (settled_position), which its walk ranked: a usage that moved is not
    the one that walk ranked, and asking `walked` would read its checkpoint back (10,000 rows)
    only to find that out."""
    return any(key not in current or current[key][0] != value.usage for key, value in usage.items())


@dataclass(frozen=True)
class UsageWrite:
    """What plan_usage found to write: every read done, only writes left (store_usage), so
    that on PostgreSQL they can be sent while the projector computes on (Connection.overlap)."""

    usage: dict[AssocKey, AssociationUsage]
    ranking: Ranking
    associations: list[tuple[float, float, str, str]]  # (job_usage, fairshare, user, bank)
    banks: list[tuple[float, str]]  # (job_usage, bank)
    recomputed: set[AssocKey] | None  # whose bins are new (None: everyone's)
    stored_bins: dict[AssocKey, bytes] | None  # the table's bins, read if any are new


def store_usage(conn: Connection, planned: UsageWrite) -> None:
    """Write what plan_usage planned: statements only, no read."""
    _update_by_association(
        conn, "association_table", ("job_usage", "fairshare"), planned.associations
    )
    # One statement over arrays, where executemany sent one per bank (520 on the bench's site:
    # 6.6 ms of a cron cycle on average, about 1 ms as one).
    conn.update_rows("bank_table", ("job_usage",), ("bank",), ["float8[]", "text[]"], planned.banks)
    _write_bins(conn, planned.usage, planned.recomputed, planned.stored_bins)


# The PostgreSQL array type of each column _update_by_association sets.
_ARRAY_TYPES = {"job_usage": "float8[]", "fairshare": "float8[]", "bins": "bytea[]"}


def _update_by_association(
    conn: Connection, table: str, columns: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """UPDATE `table` SET `columns` to each row's first values WHERE username, bank are its
    last two (Connection.update_rows)."""
    types = [_ARRAY_TYPES[c] for c in columns] + ["text[]", "text[]"]
    conn.update_rows(table, columns, ("username", "bank"), types, rows)


def _stored_bins(conn: Connection) -> dict[AssocKey, bytes]:
    return {
        (username, bank): bins
        for username, bank, bins in conn.rows(
            "SELECT username, bank, bins FROM job_usage_bins", binary=True
        )
    }


def _write_bins(
    conn: Connection,
    usage: dict[tuple[str, str], AssociationUsage],
    only: set[AssocKey] | None = None,
    stored: dict[AssocKey, bytes] | None = None,
) -> None:
    """Every association's bins as `usage` holds them; with `only`, the bins of those
    associations alone are new (the others' are kept). `stored`: the table's bins, if read.
    Rows hold no time: the bins are those of the last usage update (log_index), and stamping
    every row on each update rewrote 10,000 rows for nothing."""
    if only is not None and not only:
        return
    if stored is None:
        stored = _stored_bins(conn)
    fresh = {
        key: bins_blob(value.bins) for key, value in usage.items() if only is None or key in only
    }
    gone = [key for key in stored if key not in usage]
    conn.executemany("DELETE FROM job_usage_bins WHERE username = ? AND bank = ?", gone)
    _update_by_association(
        conn,
        "job_usage_bins",
        ("bins",),
        [(bins, *k) for k, bins in fresh.items() if k in stored and stored[k] != bins],
    )
    conn.executemany(
        "INSERT INTO job_usage_bins (username, bank, bins) VALUES (?, ?, ?)",
        [(k[0], k[1], bins) for k, bins in fresh.items() if k not in stored],
    )


def jobs_recorded_between(conn: Connection, since: int, position: int) -> bool:
    """Whether any job was recorded after log position `since` and before `position`.
    Ordered by position, so that the answer is the first entry of the position index in the
    range: unordered, PostgreSQL planned a range holding many jobs as a scan of the table in
    its physical order, which reaches the newest jobs last (1.6 s in a cron cycle after 1.25M
    jobs on the 10M-job scale ledger; 0.26 s against 0.5 ms for 1.9M jobs at the end)."""
    return bool(
        conn.rows(
            "SELECT position FROM jobs WHERE position > ? AND position < ? "
            "ORDER BY position LIMIT 1",
            (since, position),
        )
    )


def policy_changed_between(conn: Connection, since: int, position: int) -> bool:
    """Whether a change that may move the fair-share but no usage (shares, a new bank), or
    only some users' (a new association: ledger.usage_effects), was recorded after log
    position `since` and before `position`."""
    return bool(
        conn.rows(
            "SELECT 1 FROM log_index WHERE kind IN ('policy', 'users') "
            "AND position > ? AND position < ? LIMIT 1",
            (since, position),
        )
    )


def clear_association_values(conn: Connection, state: SiteState, pairs: list[list[str]]) -> None:
    """clear-usage shows zero usage at once (flux-accounting does too), in the associations and
    in every bank above them; the next update recomputes from the jobs after the cutoff. Like
    flux-accounting's, it also puts the cleared associations back at a new association's
    fair-share until the next walk ranks them (fairshare_in_force: a stored value)."""
    conn.executemany(
        "UPDATE association_table SET job_usage = 0.0, fairshare = ? "
        "WHERE username = ? AND bank = ?",
        [(NEW_ASSOCIATION_FAIRSHARE, *p) for p in pairs],
    )
    shown = {
        (r["username"], r["bank"]): AssociationUsage(usage=float(r["job_usage"]), bins=[])
        for r in conn.query("SELECT username, bank, job_usage FROM association_table")
    }
    missing = AssociationUsage(usage=0.0, bins=[])
    usage = {
        (a.username, a.bank): shown.get((a.username, a.bank), missing)
        for a in state.all_associations()
    }
    conn.executemany(
        "UPDATE bank_table SET job_usage = ? WHERE bank = ?",
        [(value, name) for name, value in bank_usage(state, usage).items()],
    )


def total_charge_units(conn: Connection) -> int | None:
    """Every charge unit recorded, summed (None when the sum itself overflows SQLite's
    integers): when it and an input's are small, no identity's total can be near the bound."""
    try:
        rows = conn.query("SELECT SUM(charge_units) AS units FROM period_totals")
    except sqlite3.OperationalError:  # "integer overflow"
        return None
    return int(rows[0]["units"] or 0)


def identity_charge_units(conn: Connection) -> dict[tuple[int, str, str], int]:
    """The charge units recorded per job identity (userid, username, bank as period_totals
    keys them), over every period: ingest keeps each within bounds.ASSOCIATION_CHARGE_UNITS_MAX."""
    rows = conn.query(
        "SELECT userid, username, bank, SUM(charge_units) AS units FROM period_totals "
        "GROUP BY userid, username, bank"
    )
    return {(int(r["userid"]), r["username"], r["bank"]): int(r["units"]) for r in rows}
