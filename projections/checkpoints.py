"""Fair-share checkpoints: what every update-fshare left in force, kept per snapshot.

At each FairshareUpdated the projection already computes every association's usage and the
weighted walk; it keeps the outcome here, one row per association that existed then, so a past
snapshot is a lookup instead of a recomputation from a million jobs (as-of reads, explain-job,
report fairshare-history). Like every read table it is rebuilt from the events, and a row at
position P depends only on events up to P, so the answer for a past moment never changes.

A row's `fairshare` is the value in force after that snapshot: the walk's value when the walk
ranked the association (`ranked` = 1), otherwise (inactive, or in an inactive bank) the value
the last walk that ranked it gave, carried over as long as the association is the same one (its
creation time unchanged), with `source` the position of that walk. `source` NULL: no walk has
ranked it, so it has a new association's 0.5.

Cost: one row per association per update-fshare (about 60-100 bytes), the price of answering
for any past snapshot without recomputing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.site_usage import AssociationUsage, AssocKey
from ledger.state import SiteState
from ledger.storage import Connection

TABLES: dict[str, str] = {
    "fairshare_checkpoints": """
        CREATE TABLE IF NOT EXISTS fairshare_checkpoints (
            position BIGINT NOT NULL,
            username TEXT NOT NULL,
            bank TEXT NOT NULL,
            creation_time DOUBLE PRECISION NOT NULL,
            active INTEGER NOT NULL,
            ranked INTEGER NOT NULL,
            fairshare DOUBLE PRECISION NOT NULL,
            source BIGINT,
            job_usage DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (position, username, bank)
        )""",
}
INDEXES = [
    "CREATE INDEX IF NOT EXISTS fairshare_checkpoints_assoc_idx "
    "ON fairshare_checkpoints (username, bank, position)",
]

NEW_ASSOCIATION_FAIRSHARE = 0.5  # design §4: a new association has 0.5 until a walk ranks it


@dataclass(frozen=True)
class Entry:
    """One association at one snapshot."""

    creation_time: float
    active: bool
    ranked: bool
    fairshare: float  # in force after the snapshot
    source: int | None  # the position of the walk that gave `fairshare`; None: never ranked
    job_usage: float


_COLUMNS = "creation_time, active, ranked, fairshare, source, job_usage"


def _entry(r: dict[str, Any]) -> Entry:
    return Entry(
        creation_time=float(r["creation_time"]),
        active=bool(r["active"]),
        ranked=bool(r["ranked"]),
        fairshare=float(r["fairshare"]),
        source=None if r["source"] is None else int(r["source"]),
        job_usage=float(r["job_usage"]),
    )


def read(conn: Connection, position: int) -> dict[AssocKey, Entry]:
    """The checkpoint of the snapshot at `position` ({} when there is none)."""
    return {
        (r["username"], r["bank"]): _entry(r)
        for r in conn.query(
            f"SELECT username, bank, {_COLUMNS} FROM fairshare_checkpoints WHERE position = ?",
            (position,),
        )
    }


def read_entry(conn: Connection, position: int, key: AssocKey) -> Entry | None:
    """One association's row of the checkpoint at `position`."""
    rows = conn.query(
        f"SELECT {_COLUMNS} FROM fairshare_checkpoints "
        "WHERE position = ? AND username = ? AND bank = ?",
        (position, key[0], key[1]),
    )
    return _entry(rows[0]) if rows else None


def previous_position(conn: Connection, position: int) -> int | None:
    rows = conn.query(
        "SELECT MAX(position) AS p FROM fairshare_checkpoints WHERE position < ?", (position,)
    )
    value = rows[0]["p"] if rows else None
    return None if value is None else int(value)


def entries(
    state: SiteState,
    position: int,
    usage: dict[AssocKey, AssociationUsage],
    shares: dict[AssocKey, float],
    previous: dict[AssocKey, Entry],
) -> dict[AssocKey, Entry]:
    """The checkpoint of a walk at `position` that ranked `shares`, given the one before it.

    Pure. An association the walk left out keeps the value of the last walk that ranked it, if
    it is still the association that walk saw (same creation time); else it never had one."""
    out = {}
    for assoc in state.all_associations():
        key = (assoc.username, assoc.bank)
        creation = assoc.creation_time
        value = shares.get(key)
        source: int | None
        if value is not None:
            fairshare, source = value, position
        else:
            before = previous.get(key)
            if before is not None and before.creation_time == creation:
                fairshare, source = before.fairshare, before.source
            else:
                fairshare, source = NEW_ASSOCIATION_FAIRSHARE, None
        out[key] = Entry(
            creation_time=creation,
            active=assoc.active,
            ranked=value is not None,
            fairshare=fairshare,
            source=source,
            job_usage=usage[key].usage,
        )
    return out


def write(
    conn: Connection,
    state: SiteState,
    position: int,
    usage: dict[AssocKey, AssociationUsage],
    shares: dict[AssocKey, float],
) -> None:
    """Keep the checkpoint of the walk the projection just did at `position`."""
    before = previous_position(conn, position)
    previous = read(conn, before) if before is not None else {}
    conn.executemany(
        "INSERT INTO fairshare_checkpoints (position, username, bank, creation_time, active, "
        "ranked, fairshare, source, job_usage) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                position,
                key[0],
                key[1],
                e.creation_time,
                int(e.active),
                int(e.ranked),
                e.fairshare,
                e.source,
                e.job_usage,
            )
            for key, e in entries(state, position, usage, shares, previous).items()
        ],
    )
