"""`fairledger verify`: the log's hash chain walked link by link, and the read models compared
with a rebuild from the log made in a private temporary database.

Both sides are read a batch of rows at a time and compared by a digest of each table's rows
(an order-free sum of a salted hash per row), so that verify's memory does not grow with the
jobs held: holding both copies of every table to sort and compare them took 3.5 GB at 1.1
million jobs. Only a table whose digests differ is read whole, to count its differing rows.

The first break is named by its log position: an event whose content no longer matches its link
(changed, or one before it removed or inserted), a link whose event is gone, an event with no
link (written outside fairledger), timestamps that go backwards, read models ahead of the log,
a job key the log does not record, or a read-model table that differs from the rebuild.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ledger.chain import GENESIS, link
from ledger.errors import TamperedLog
from ledger.neutralizations import in_log
from ledger.store import log_tables
from ledger.store.application import UNPROJECTABLE, Ledger
from ledger.store.connections import Connection, scratch_sqlite
from projections.writers import runner


@dataclass(frozen=True)
class Verified:
    events: int
    head_position: int
    head_link: str
    tables: int
    unlinked: int  # events of a ledger written before the chain existed, linked by its next write


def verify(ledger: Ledger, conn: Connection) -> Verified:
    missing = log_tables.missing_tables(conn)
    if log_tables.EVENT_HASHES in missing:  # written before the chain: its next change links it
        events, head, head_link = 0, log_tables.head_position(conn), GENESIS
        unlinked = sum(1 for _ in log_tables.stored_after(conn, 0))
    else:
        events, head, head_link, unlinked = _walk_chain(conn)
    tracked = runner.tracked_position(conn)
    if tracked > head:
        raise TamperedLog(
            f"read models reflect log position {tracked} but the log ends at {head}: "
            "events were removed from its end"
        )
    with scratch_sqlite("verify") as rebuilt:
        try:
            runner.fold_into(ledger, rebuilt)
        except UNPROJECTABLE as err:
            raise TamperedLog(
                f"the log holds an event its read models cannot hold ({err}): "
                "run 'fairledger doctor'"
            ) from None
        _check_times(rebuilt)
        if log_tables.JOB_KEYS not in missing:
            neutralized = in_log(ledger).jobs.values()
            _check_job_keys(conn, rebuilt, set().union(*neutralized))
        tables = _compare_tables(conn, rebuilt)
    return Verified(events, head, head_link, tables, unlinked)


def _walk_chain(conn: Connection) -> tuple[int, int, str, int]:
    """(events linked, the log's last position, the head link, events not yet linked)."""
    links = _links(conn)
    chained = log_tables.chain_head(conn)[0] > 0
    previous, linked, last, unlinked = GENESIS, 0, 0, 0
    pending = next(links, None)
    for position, originator, version, topic, state in log_tables.stored_after(conn, 0):
        last = position
        if pending is not None and pending[0] < position:
            raise TamperedLog(f"the event at log position {pending[0]} is missing: removed")
        if pending is None or pending[0] > position:
            if not chained:  # a ledger written before the chain existed
                unlinked += 1
                continue
            raise TamperedLog(
                f"the event at log position {position} has no link: it was inserted outside "
                "fairledger"
            )
        if link(previous, position, originator, version, topic, state) != pending[1]:
            raise TamperedLog(
                f"the event at log position {position} does not match its link: it was "
                "changed, or an event before it was removed or inserted"
            )
        previous, linked = pending[1], linked + 1
        pending = next(links, None)
    if pending is not None:
        raise TamperedLog(f"the event at log position {pending[0]} is missing: removed")
    return linked, last, previous, unlinked


def _links(conn: Connection) -> Iterator[tuple[int, str]]:
    after = 0
    while rows := conn.query(
        f"SELECT position, link FROM {log_tables.EVENT_HASHES} WHERE position > ? "
        f"ORDER BY position LIMIT {log_tables.PAGE}",
        (after,),
    ):
        for row in rows:
            yield int(row["position"]), str(row["link"])
        after = int(rows[-1]["position"])


def _check_times(rebuilt: Connection) -> None:
    before: tuple[int, float] | None = None
    with rebuilt.stream_rows("SELECT position, at FROM log_index ORDER BY position") as rows:
        for position, at in rows:
            if before is not None and at < before[1]:
                raise TamperedLog(
                    f"the event at log position {position} is stamped before the one at "
                    f"{before[0]}: log order is not time order"
                )
            before = (position, at)


def _check_job_keys(
    conn: Connection, rebuilt: Connection, neutralized: set[tuple[str, str]]
) -> None:
    """Every key of the index is a job of the read models (but a neutralized one), and every
    job of the read models is in the index."""
    index = f"SELECT cluster, id FROM {log_tables.JOB_KEYS}"
    jobs = "SELECT cluster, id FROM jobs"
    if not conn.rows(f"{index} LIMIT 1"):
        return  # a ledger written before the key index: its next write builds it
    salts = _salts()
    with conn.stream_rows(index) as rows:
        logged = _Digest(salts, rows)
    with rebuilt.stream_rows(jobs) as rows:
        recorded = _Digest(salts, rows)
    # A neutralized job is set aside, yet still in the log: its key stays in the index.
    recorded.add_rows(
        key
        for key in sorted(neutralized)
        if _holds(conn, log_tables.JOB_KEYS, key) and not _holds(rebuilt, "jobs", key)
    )
    if logged == recorded:
        return
    keys = {(r[0], r[1]) for r in conn.rows(index)}
    held = {(r[0], r[1]) for r in rebuilt.rows(jobs)} | (keys & neutralized)
    for key in sorted(keys ^ held):
        where = "the key index but not the log" if key in keys else "the log but not the index"
        raise TamperedLog(f"job {key[1]} (cluster {key[0]}) is in {where}")


def _holds(conn: Connection, table: str, key: tuple[str, str]) -> bool:
    return bool(conn.rows(f"SELECT 1 FROM {table} WHERE cluster = ? AND id = ?", key))


def _compare_tables(conn: Connection, rebuilt: Connection) -> int:
    names = list(runner.all_tables())
    salts = _salts()
    for name in names:
        with conn.stream_rows(f"SELECT * FROM {name}") as rows:
            live_digest = _Digest(salts, rows)
        with rebuilt.stream_rows(f"SELECT * FROM {name}") as rows:
            rebuilt_digest = _Digest(salts, rows)
        if live_digest == rebuilt_digest:
            continue
        live = _rows(conn, name)
        again = _rows(rebuilt, name)
        missing = len([r for r in again if r not in live])
        extra = len([r for r in live if r not in again])
        raise TamperedLog(
            f"read model {name} differs from a rebuild from the log "
            f"({missing} rows missing, {extra} rows not in the rebuild): "
            "run 'fairledger rebuild'"
        )
    return len(names)


class _Digest:
    """A multiset of rows as its size and two sums (mod 2^64) of a hash of each row: two
    equal multisets, read in any order, give equal digests, and two that differ almost surely
    do not. Python's own hash keeps its equality: 1 and 1.0 are one value, as are True and 1,
    so each store's row compares as the rows themselves did. Each verify run salts the
    hashes afresh (and Python salts its hash of text per process), so no table's change can
    be made to keep its digest. A row costs about 0.4 µs a hash, where its text and a
    cryptographic hash cost 8."""

    def __init__(self, salts: tuple[str, str], rows: Iterable[tuple[Any, ...]] = ()) -> None:
        self.salts = salts
        self.count = 0
        self.sums = (0, 0)
        self.add_rows(rows)

    def add_rows(self, rows: Iterable[tuple[Any, ...]]) -> None:
        first, second = self.salts
        count, one, two = self.count, *self.sums
        for row in rows:
            one += hash((first, row))
            two += hash((second, row))
            count += 1
        self.count, self.sums = count, (one % _MODULUS, two % _MODULUS)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Digest) and (self.count, self.sums) == (other.count, other.sums)

    def __hash__(self) -> int:
        return hash((self.count, self.sums))


_MODULUS = 1 << 64


def _salts() -> tuple[str, str]:
    return secrets.token_hex(16), secrets.token_hex(16)


def _rows(conn: Connection, table: str) -> list[tuple[Any, ...]]:
    rows = conn.query(f"SELECT * FROM {table}")
    return sorted((tuple(_plain(v) for v in row.values()) for row in rows), key=repr)


def _plain(value: Any) -> Any:
    # Both stores' values compared as one: PostgreSQL hands back bytes as memoryview.
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, bool):
        return int(value)
    return value
