"""Reads of recorded jobs: view-job-records' filters and the usage report's rows."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ledger.store.connections import Connection

_OPS = {"<": "<", "<=": "<=", "=": "=", ">=": ">=", ">": ">"}


def job_clusters(conn: Connection) -> list[str]:
    """The clusters the recorded jobs name, each found by a seek in the jobs' primary key
    (cluster, id): a site has a handful, and a job asked for by id alone is then a key lookup
    per cluster. `WHERE id = ?` alone scans every job (on PostgreSQL's 10M-job scale ledger a
    parallel scan, about 0.4 s of explain-job's 3.5-4 s); PostgreSQL has no skip scan, and
    SQLite uses one only once ANALYZE has run."""
    found: list[str] = []
    while True:
        # ORDER BY and LIMIT, not MIN(): for a cluster newer than PostgreSQL's statistics the
        # planner expects no row after it and computes MIN() over every one (0.3 s a million).
        after, params = (" WHERE cluster > ?", (found[-1],)) if found else ("", ())
        rows = conn.rows(f"SELECT cluster FROM jobs{after} ORDER BY cluster LIMIT 1", params)
        if not rows:
            return found
        found.append(str(rows[0][0]))


def by_id(conn: Connection, job_id: str) -> tuple[str, list[Any]]:
    """A clause selecting the jobs with this id on any cluster, and its parameters, as key
    lookups (job_clusters); it selects nothing when no job is recorded."""
    clusters = job_clusters(conn)
    if not clusters:
        return "1 = 0", []
    return f"cluster IN ({', '.join('?' * len(clusters))}) AND id = ?", [*clusters, job_id]


@contextmanager
def job_records(
    conn: Connection,
    user: str | None = None,
    job_id: int | None = None,
    after_start: float | None = None,
    before_end: float | None = None,
    project: str | None = None,
    bank: str | None = None,
    requested: list[tuple[str, float]] | None = None,
    actual: list[tuple[str, float]] | None = None,
    delta: list[tuple[str, float]] | None = None,
    max_position: int | None = None,
) -> Iterator[Iterator[dict[str, Any]]]:
    """The jobs the filters select, in the order they ended, streamed from the store (a
    listing of every job of a 10-million-job ledger must not hold them all); use the
    connection for nothing else inside the block."""
    clauses: list[str] = []
    params: list[Any] = []
    if max_position is not None:  # as of a past moment: the jobs recorded by then
        clauses.append("position <= ?")
        params.append(max_position)
    if user is not None:
        if user.isdecimal():  # not isdigit(): "²" is a digit that int() refuses
            clauses.append("(username = ? OR userid = ?)")
            params += [user, int(user)]
        else:
            clauses.append(
                "(username = ? OR userid IN (SELECT userid FROM association_table "
                "WHERE username = ?))"
            )
            params += [user, user]
    if job_id is not None:
        clause, values = by_id(conn, str(job_id))
        clauses.append(clause)
        params += values
    if after_start is not None:
        clauses.append("t_run > ?")
        params.append(after_start)
    if before_end is not None:
        clauses.append("t_inactive < ?")
        params.append(before_end)
    if project is not None:
        clauses.append("project = ?")
        params.append(project)
    if bank is not None:
        clauses.append("bank = ?")
        params.append(bank)
    for op, value in actual or []:
        clauses.append(f"(t_inactive - t_run) {_OPS[op]} ?")
        params.append(value)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    sql = (
        "SELECT cluster, id, userid, username, bank, queue, project, t_submit, t_run, t_inactive,"
        " nnodes, ncores, ngpus, charge, extra FROM jobs"
        + where
        + " ORDER BY t_inactive, LENGTH(id), id"  # decimal ids: numeric order
    )
    with conn.stream_query(sql, params) as rows:
        yield _selected(rows, requested, delta)


def _selected(
    rows: Iterator[dict[str, Any]],
    requested: list[tuple[str, float]] | None,
    delta: list[tuple[str, float]] | None,
) -> Iterator[dict[str, Any]]:
    for row in rows:
        extra = json.loads(row.pop("extra") or "{}")
        row["requested_duration"] = _seconds(extra.get("requested_duration"))
        row["actual_duration"] = row["t_inactive"] - row["t_run"]
        row["duration_delta"] = row["requested_duration"] - row["actual_duration"]
        if _passes(row["requested_duration"], requested) and _passes(row["duration_delta"], delta):
            yield row


def _seconds(value: Any) -> float:
    """A requested duration kept as sent (ingest keeps unknown fields as they are): a value
    that is not a finite number of seconds (null, "1h", true) reads as 0.0, flux-accounting's
    default, rather than breaking every later view-job-records."""
    if isinstance(value, bool):
        return 0.0
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return 0.0
    return seconds if math.isfinite(seconds) else 0.0


def _passes(value: float, tests: list[tuple[str, float]] | None) -> bool:
    checks = {
        "<": value.__lt__,
        "<=": value.__le__,
        "=": value.__eq__,
        ">=": value.__ge__,
        ">": value.__gt__,
    }
    return all(checks[op](limit) for op, limit in tests or [])


@contextmanager
def usage_report_jobs(
    conn: Connection, start: float, end: float
) -> Iterator[Iterator[dict[str, Any]]]:
    """Jobs for view-usage-report: ended within [start, end] (flux-accounting also requires
    t_run > start - 7 days, which we keep so the numbers match); streamed, since a report over
    a year reads most of the ledger. Use the connection for nothing else inside the block."""
    with conn.stream_query(
        "SELECT username, userid, bank, nnodes, t_run, t_inactive FROM jobs "
        "WHERE t_inactive >= ? AND t_inactive <= ? AND t_run > ?",
        (start, end, start - 7 * 86400),
    ) as rows:
        yield rows


def newest_t_inactive(conn: Connection) -> float | None:
    rows = conn.query("SELECT MAX(t_inactive) AS newest FROM jobs")
    newest = rows[0]["newest"] if rows else None
    return float(newest) if newest is not None else None
