"""Fair-share checkpoints: what every update-fshare left in force, kept per snapshot.

At each FairshareUpdated the projection already computes every association's usage and the
weighted walk; it keeps the outcome here, an entry per association that existed then, so a past
snapshot is a lookup instead of a recomputation from a million jobs (as-of reads, explain-job,
report fairshare-history). Like every read table it is rebuilt from the events, and a row at
position P depends only on events up to P, so the answer for a past moment never changes.

A row's `fairshare` is the value in force after that snapshot: the walk's value when the walk
ranked the association (`rank` set), otherwise (inactive, or in an inactive bank) the value
the last walk that ranked it gave, carried over as long as the association is the same one (its
creation time unchanged), with `source` the position of that walk (stored only for a carried
value: a ranked row's walk is its checkpoint's). No rank and no source: no walk has
ranked it, so it has a new association's value. The rules are the domain's
(ledger.fairshare_in_force); the rank is the walk's own (ledger.fairshare.Ranking).

Stored as changes: a checkpoint writes rows only for the associations whose entry changed
since the previous one (idle associations keep theirs), over a full checkpoint written whenever
the changes since the last full one would reach the number of associations, or one checkpoint's
changes reach half of them. So storage follows what changes (about 60 bytes a row in SQLite),
and reading any checkpoint reads at most about twice the site's associations.

The table is kept in its primary key's order, (position, username, bank), and has no other
index. An index by association put each checkpoint's rows all over it: a Fair Tree update's
10,000 rows dirtied nearly every page of it, and the commit wrote them all (on the 1M-job
bench ledger, 0.06-0.1 s of commit against 0.005 s without it, and 90 against 61 bytes a
row). One association's history reads instead by the key, a lookup per checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ledger.fairshare import Ranking
from ledger.fairshare_in_force import walk_gives
from ledger.site_usage import AssociationUsage, AssocKey
from ledger.state import SiteState
from ledger.store.connections import Connection

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
            gone INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (position, username, bank)
        )""",
    # One row per checkpoint: `base` is the full checkpoint it builds on (itself when full);
    # `chain_rows` counts the delta rows written since that base, this checkpoint's included.
    "fairshare_checkpoint_marks": """
        CREATE TABLE IF NOT EXISTS fairshare_checkpoint_marks (
            position BIGINT PRIMARY KEY,
            base BIGINT NOT NULL,
            chain_rows BIGINT NOT NULL
        )""",
}


class Entry(NamedTuple):
    """One association at one snapshot. A named tuple, not a frozen dataclass: each update
    builds and compares one per association twice (10,000 at a large site), and a frozen
    dataclass costs several times a tuple to build."""

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


def _entry(r: dict[str, Any], position: int) -> Entry:
    """A stored row as the entry of the checkpoint at `position`. A ranked row stores no
    source: the walk that gave its value is the checkpoint's own (so an unchanged association
    needs no new row)."""
    rank = r["rank"]
    if rank is not None:
        source: int | None = position
    else:
        source = None if r["source"] is None else int(r["source"])
    # Built whole: a checkpoint reads up to twice the site's associations.
    return Entry(
        float(r["creation_time"]),
        bool(r["active"]),
        float(r["fairshare"]),
        source,
        float(r["job_usage"]),
        None if rank is None else int(rank),
        int(r["ranked_of"]),
    )


def _mark(conn: Connection, position: int) -> tuple[int, int] | None:
    """(base, chain_rows) of the checkpoint at `position`."""
    rows = conn.query(
        "SELECT base, chain_rows FROM fairshare_checkpoint_marks WHERE position = ?", (position,)
    )
    return (int(rows[0]["base"]), int(rows[0]["chain_rows"])) if rows else None


def read(conn: Connection, position: int) -> dict[AssocKey, Entry]:
    """The checkpoint of the snapshot at `position` ({} when there is none): its base's rows
    with the changes of every checkpoint up to it applied."""
    mark = _mark(conn, position)
    if mark is None:
        return {}
    out: dict[AssocKey, Entry] = {}
    # Tuples, not query()'s dicts: up to twice the site's associations on every update. Each
    # entry is built by tuple.__new__ (Entry's own __new__ is a Python function), from the
    # columns as the store gives them: float columns come back as floats from either store.
    make = tuple.__new__
    for username, bank, gone, created, active, fairshare, source, usage, rank, of in conn.rows(
        f"SELECT username, bank, gone, {_COLUMNS} FROM fairshare_checkpoints "
        "WHERE position >= ? AND position <= ? ORDER BY position",
        (mark[0], position),
        binary=True,
    ):
        if gone:
            out.pop((username, bank), None)
        else:
            # As _entry: a ranked row's walk is this checkpoint's own.
            out[(username, bank)] = make(
                Entry,
                (
                    created,
                    active == 1,
                    fairshare,
                    position if rank is not None else source,
                    usage,
                    rank,
                    of,
                ),
            )
    return out


def history(conn: Connection, key: AssocKey, first: int, last: int) -> dict[int, Entry]:
    """One association's entry at every checkpoint with a position in [first, last] at which
    it existed: position -> entry. A key lookup per checkpoint from the range's first base on,
    however many associations each holds."""
    marks = conn.query(
        "SELECT position, base FROM fairshare_checkpoint_marks "
        "WHERE position >= ? AND position <= ? ORDER BY position",
        (first, last),
    )
    if not marks:
        return {}
    # A primary-key lookup per checkpoint position: the table has no index by association,
    # whose upkeep cost more than the rows themselves (see the module's docstring).
    rows = conn.query(
        f"SELECT position, gone, {_COLUMNS} FROM fairshare_checkpoints "
        "WHERE username = ? AND bank = ? AND position IN (SELECT position FROM "
        "fairshare_checkpoint_marks WHERE position >= ? AND position <= ?) ORDER BY position",
        (key[0], key[1], min(int(m["base"]) for m in marks), last),
    )
    out = {}
    latest: dict[str, Any] | None = None
    next_row = 0
    for mark in marks:  # both in position order: one pass
        position, base = int(mark["position"]), int(mark["base"])
        while next_row < len(rows) and int(rows[next_row]["position"]) <= position:
            latest = rows[next_row]
            next_row += 1
        # The key's latest row must lie in [base, position]: none there means it did not
        # exist then (the base holds every association that existed at it).
        if latest is not None and int(latest["position"]) >= base and not latest["gone"]:
            out[position] = _entry(latest, position)
    return out


def previous_position(conn: Connection, position: int) -> int | None:
    rows = conn.query(
        "SELECT MAX(position) AS p FROM fairshare_checkpoint_marks WHERE position < ?",
        (position,),
    )
    value = rows[0]["p"] if rows else None
    return None if value is None else int(value)


def entries(
    state: SiteState,
    position: int,
    usage: dict[AssocKey, AssociationUsage],
    ranking: Ranking,
    previous: dict[AssocKey, Entry],
) -> dict[AssocKey, Entry]:
    """The checkpoint of the walk at `position` that gave `ranking`, given the one before it:
    the value ledger.fairshare_in_force.walk_gives leaves each association, with the walk's
    rank. Pure. One pass, with no value object per association first: every update makes an
    entry for each (10,000 of a Fair Tree update: 60 -> 39 ms)."""
    walked = ranking.fairshare()
    ranks = ranking.ranks
    of = ranking.ranked_of
    out = {}
    # An entry built by tuple.__new__, not Entry's own __new__ (a Python function), and the
    # walk's value taken without a call where the walk ranked the association (most do).
    make = tuple.__new__
    for banks in state.associations.values():
        for assoc in banks.values():
            key = (assoc.username, assoc.bank)
            created = assoc.creation_time
            value = walked.get(key)
            if value is None:
                value, source = walk_gives(None, position, previous.get(key), created)
            else:
                source = position
            out[key] = make(
                Entry, (created, assoc.active, value, source, usage[key].usage, ranks.get(key), of)
            )
    return out


class Written:
    """A checkpoint written (or read back): its mark, and its entries (as read() gives them),
    read back from `conn` only when first asked for: an update that changes nothing (an idle
    cron cycle) needs only the mark."""

    def __init__(
        self,
        base: int,
        chain_rows: int,
        position: int,
        entries: dict[AssocKey, Entry] | None = None,
        conn: Connection | None = None,
    ) -> None:
        if entries is None and conn is None:
            raise ValueError("a checkpoint needs its entries or a connection to read them")
        self.base = base
        self.chain_rows = chain_rows
        self.position = position
        self._entries = entries
        self._conn = conn

    @property
    def entries(self) -> dict[AssocKey, Entry]:
        if self._entries is None:
            assert self._conn is not None
            self._entries = read(self._conn, self.position)
        return self._entries

    def read_back(self) -> None:
        """Read this checkpoint's entries if they were not yet: before statements are sent in
        an overlap (Connection.overlap), which a read would wait for."""
        _ = self.entries

    def ranking(self) -> Ranking:
        """The walk's ranks as this checkpoint keeps them: the ranking the walk at `position`
        gave (the weighted walk's; a Slurm algorithm's values are not kept whole here)."""
        ranks = {key: e.rank for key, e in self.entries.items() if e.rank is not None}
        ranked_of = next((e.ranked_of for e in self.entries.values() if e.ranked), 0)
        return Ranking(ranks, ranked_of)


def latest_before(conn: Connection, position: int) -> Written | None:
    """The last checkpoint before `position` (None: there is none); its entries are read
    when first asked for."""
    before = previous_position(conn, position)
    mark = _mark(conn, before) if before is not None else None
    if before is None or mark is None:
        return None
    return Written(mark[0], mark[1], before, conn=conn)


def repeat(conn: Connection, last: Written, position: int) -> Written:
    """Keep at `position` the checkpoint of a walk that left every entry as `last` did (the
    same associations, usage and ranks): its mark alone, over the same rows, as write would
    leave it having found no change."""
    conn.execute(
        "INSERT INTO fairshare_checkpoint_marks (position, base, chain_rows) VALUES (?, ?, ?)",
        (position, last.base, last.chain_rows),
    )
    return Written(last.base, last.chain_rows, position, conn=conn)


def _same_row(a: Entry, b: Entry | None) -> bool:
    """Whether `a` and `b` are stored as the same row: a ranked entry is stored without its
    source (see _entry), so two ranked ones are compared without it."""
    if b is None:
        return False
    return a[:3] == b[:3] and a[4:] == b[4:] and (a.rank is not None or a.source == b.source)


@dataclass(frozen=True)
class Planned:
    """A checkpoint's rows and mark, as plan made them, and what store returns."""

    rows: list[tuple[Any, ...]]
    written: Written


def plan(
    state: SiteState,
    position: int,
    usage: dict[AssocKey, AssociationUsage],
    ranking: Ranking,
    last: Written | None,
) -> Planned:
    """The checkpoint of the walk the projection just did at `position`, after `last` (the
    previous one, its entries read back; None if there is none, or if whole_without_previous
    found that this one takes nothing from it), without touching the database: store writes
    it.

    Only what changed since the previous checkpoint is written (most associations of a site
    are idle between two updates), as rows over a full checkpoint; a new full one is written
    when the changes since the last would reach its size, so reading any checkpoint reads at
    most about twice the site's associations. A walk that changed at least half the entries is
    a full one too (each under Fair Tree, whose decay moves every usage; most after a weighted
    walk that ranked many new jobs): the rest it writes again cost no more than the rows the
    next update would read back over the one before it (_writes_full)."""
    mark, previous = ((last.base, last.chain_rows), last.entries) if last else (None, {})
    walked = entries(state, position, usage, ranking, previous)
    # A different usage (every entry of a Fair Tree update: decay moves them all) is a
    # changed row without the call. With entries' own shortcuts, a Fair Tree update's plan of
    # 10,000 entries: 43 -> 28 ms (the fastest of 15, alternated in one process).
    get = previous.get
    changed = []
    for key, e in walked.items():
        before = get(key)
        if before is None or e.job_usage != before.job_usage or not _same_row(e, before):
            changed.append((key, e))
    gone = [key for key in previous if key not in walked]
    delta = len(changed) + len(gone)
    if mark is None or _writes_full(mark[1], delta, len(walked)):
        rows, base, chain = list(walked.items()), position, 0
        gone = []
    else:
        rows, base, chain = changed, mark[0], mark[1] + delta
    return Planned(
        [
            (
                position,
                username,
                bank,
                created,
                int(active),
                fairshare,
                source if rank is None else None,  # see _same_row
                job_usage,
                rank,
                ranked_of,
                0,
            )
            for (username, bank), (
                created,
                active,
                fairshare,
                source,
                job_usage,
                rank,
                ranked_of,
            ) in rows
        ]
        + [(position, key[0], key[1], 0.0, 0, 0.0, None, 0.0, None, 0, 1) for key in gone],
        Written(base, chain, position, walked),
    )


def whole_without_previous(
    state: SiteState, ranking: Ranking, last: Written, changed_columns: int, since: int | None
) -> bool:
    """Whether plan, after `last`, would write the checkpoint of `ranking` whole and take
    nothing from `last`'s entries, so that they need not be read back (10,000 rows at 10,000
    associations): when the walk ranked every association (entries carries no value over) and
    the changes known without them already make the checkpoint whole (_writes_full).

    Known without them: `changed_columns`, the associations whose usage or fair-share columns
    the update changes, where the columns hold what `last` holds: `since`, the update whose
    values they hold (usage_tables.settled_position; None: none), is the one that wrote
    `last`. Each such association's entry changes too: a ranked entry's usage and value are its
    columns', an entry the last walk did not rank now has a rank, and a new association had no
    entry. A weighted walk after 10,000 new jobs changes 89-93 % of the entries, a Fair Tree
    update all."""
    if since != last.position:
        return False
    ranked = ranking.fairshare()
    associations = 0
    for username, banks in state.associations.items():
        associations += len(banks)
        if any((username, bank) not in ranked for bank in banks):
            return False
    return _writes_full(last.chain_rows, changed_columns, associations)


def _writes_full(chain_rows: int, delta: int, associations: int) -> bool:
    """Whether a checkpoint that changes `delta` rows, over `chain_rows` changes written since
    the last full one, is written whole: when the chain would reach the site's size, so that
    reading any checkpoint reads at most about twice the site's associations; or when its own
    changes are at least half the site, whose other rows (no more than `delta`) cost less to
    write again than the next update's read of the base and the chain under them: on the bench's
    site a weighted walk after 10,000 new jobs changes 89-93 % of the entries, and reading back
    19,000 rows took 0.10 s, 10,000 0.05 s."""
    return chain_rows + delta >= associations or delta * 2 >= associations


def store(conn: Connection, planned: Planned) -> Written:
    """Write a planned checkpoint: its rows, then its mark."""
    _insert(conn, planned.rows)
    written = planned.written
    conn.execute(
        "INSERT INTO fairshare_checkpoint_marks (position, base, chain_rows) VALUES (?, ?, ?)",
        (written.position, written.base, written.chain_rows),
    )
    return written


_ROW_COLUMNS = (
    "position",
    "username",
    "bank",
    "creation_time",
    "active",
    "fairshare",
    "source",
    "job_usage",
    "rank",
    "ranked_of",
    "gone",
)


def _insert(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """The checkpoint's rows in bulk (a cycle whose walk moved most ranks writes a row per
    association): COPY on PostgreSQL, half the time of one INSERT over arrays (44 against 86
    ms for 10,000 rows), in binary, which the server stores without parsing each number's
    text (10,000 rows copied alone: 26-28 against 33-43 ms; inside a cron cycle, which waits
    for it last, 35-37 ms either way)."""
    conn.insert_rows("fairshare_checkpoints", _ROW_COLUMNS, rows, binary=True)
