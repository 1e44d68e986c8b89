"""An association's fair-share and usage at every snapshot in a range (`report
fairshare-history`).

A snapshot is a FairshareUpdated marker; its checkpoint (projections.writers.checkpoints) holds what
that update-fshare computed for every association, so a year of snapshots is a year of lookups.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.fairshare_in_force import in_force
from ledger.site_usage import AssocKey
from ledger.store.connections import Connection
from projections.queries.as_of import Moment, Snapshots
from projections.writers import checkpoints


def markers_between(conn: Connection, start: float | None, end: float | None) -> list[Moment]:
    """Every FairshareUpdated recorded at a time in [start, end], in log order."""
    clauses = ["kind = 'fairshare'"]
    params: list[float] = []
    if start is not None:
        clauses.append("at >= ?")
        params.append(start)
    if end is not None:
        clauses.append("at <= ?")
        params.append(end)
    rows = conn.query(
        "SELECT position, at, site_version FROM log_index WHERE "
        + " AND ".join(clauses)
        + " ORDER BY position",
        params,
    )
    return [
        Moment(float(r["at"]), int(r["position"]), float(r["at"]), int(r["site_version"]))
        for r in rows
    ]


@dataclass(frozen=True)
class HistoryRow:
    """The association at one snapshot: its usage then and the fair-share in force after it."""

    at: float
    position: int
    job_usage: float
    fairshare: float
    rank: int | None  # None: the walk left it out (inactive), it kept an earlier value
    ranked: int  # N
    active: bool


def fairshare_history(
    snapshots: Snapshots, key: AssocKey, start: float | None, end: float | None
) -> list[HistoryRow]:
    """The association at every snapshot in [start, end] at which it existed."""
    markers = markers_between(snapshots.conn, start, end)
    if not markers:
        return []
    found = checkpoints.history(snapshots.conn, key, markers[0].position, markers[-1].position)
    rows = []
    for marker in markers:
        entry = found.get(marker.position)
        if entry is None:
            continue
        brought = snapshots.imported(marker.position).get(key)
        rows.append(
            HistoryRow(
                at=marker.event_time,
                position=marker.position,
                job_usage=entry.job_usage,
                fairshare=in_force(entry, marker.position, brought).value,
                rank=entry.rank,
                ranked=entry.ranked_of,
                active=entry.active,
            )
        )
    return rows
