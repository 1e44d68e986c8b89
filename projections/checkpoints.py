"""Fair-share checkpoints: what every update-fshare left in force, kept per snapshot.

At each FairshareUpdated the projection already computes every association's usage and the
weighted walk; it keeps the outcome here, one row per association that existed then, so a past
snapshot is a lookup instead of a recomputation from a million jobs (as-of reads, explain-job,
report fairshare-history). Like every read table it is rebuilt from the events, and a row at
position P depends only on events up to P, so the answer for a past moment never changes.

A row's `fairshare` is the value in force after that snapshot: the walk's value when the walk
ranked the association (`rank` set), otherwise (inactive, or in an inactive bank) the value
the last walk that ranked it gave, carried over as long as the association is the same one (its
creation time unchanged), with `source` the position of that walk. `source` NULL: no walk has
ranked it, so it has a new association's 0.5.

Cost: one row per association per update-fshare (about 100 bytes with its index), the price
of answering for any past snapshot without recomputing it: an hourly update-fshare at 1,000
associations adds about 0.9 GB a year.
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
            fairshare DOUBLE PRECISION NOT NULL,
            source BIGINT,
            job_usage DOUBLE PRECISION NOT NULL,
            rank BIGINT,
            ranked_of BIGINT NOT NULL,
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
    fairshare: float  # in force after the snapshot
    source: int | None  # the position of the walk that gave `fairshare`; None: never ranked
    job_usage: float
    rank: int | None  # fair-share = rank / N when this walk ranked it (ties share the higher)
    ranked_of: int  # N: how many associations this walk ranked

    @property
    def ranked(self) -> bool:
        """Whether this walk ranked the association (else it was left out: inactive)."""
        return self.rank is not None


_COLUMNS = "creation_time, active, fairshare, source, job_usage, rank, ranked_of"


def _entry(r: dict[str, Any]) -> Entry:
    return Entry(
        creation_time=float(r["creation_time"]),
        active=bool(r["active"]),
        fairshare=float(r["fairshare"]),
        source=None if r["source"] is None else int(r["source"]),
        job_usage=float(r["job_usage"]),
        rank=None if r["rank"] is None else int(r["rank"]),
        ranked_of=int(r["ranked_of"]),
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


def history(conn: Connection, key: AssocKey, first: int, last: int) -> dict[int, Entry]:
    """One association's rows of the checkpoints at positions in [first, last]: position ->
    its row (an index read, however many snapshots the range holds)."""
    rows = conn.query(
        f"SELECT position, {_COLUMNS} FROM fairshare_checkpoints "
        "WHERE username = ? AND bank = ? AND position >= ? AND position <= ?",
        (key[0], key[1], first, last),
    )
    return {int(r["position"]): _entry(r) for r in rows}


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
    ranks = _ranks(shares)
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
            fairshare=fairshare,
            source=source,
            job_usage=usage[key].usage,
            rank=ranks.get(key),
            ranked_of=len(shares),
        )
    return out


def _ranks(shares: dict[AssocKey, float]) -> dict[AssocKey, int]:
    """rank = N - (how many ranked strictly higher): the best has N, ties share the higher."""
    ordered = sorted(shares.values(), reverse=True)
    above: dict[float, int] = {}
    for index, value in enumerate(ordered):
        above.setdefault(value, index)
    return {key: len(shares) - above[value] for key, value in shares.items()}


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
        "fairshare, source, job_usage, rank, ranked_of) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                position,
                key[0],
                key[1],
                e.creation_time,
                int(e.active),
                e.fairshare,
                e.source,
                e.job_usage,
                e.rank,
                e.ranked_of,
            )
            for key, e in entries(state, position, usage, shares, previous).items()
        ],
    )
