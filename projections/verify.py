"""`fairledger verify`: the log's hash chain walked link by link, and the read models compared
with a rebuild from the log made in a private in-memory database.

The first break is named by its log position: an event whose content no longer matches its link
(changed, or one before it removed or inserted), a link whose event is gone, an event with no
link (written outside fairledger), timestamps that go backwards, read models ahead of the log,
a job key the log does not record, or a read-model table that differs from the rebuild.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ledger.chain import GENESIS, link
from ledger.errors import TamperedLog
from ledger.neutralizations import in_log
from ledger.store import log_tables
from ledger.store.application import UNPROJECTABLE, Ledger
from ledger.store.connections import Connection, StoreConfig
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
    memory = Connection(StoreConfig(kind="sqlite", path=":memory:"))
    try:
        try:
            runner.fold_into(ledger, memory)
        except UNPROJECTABLE as err:
            raise TamperedLog(
                f"the log holds an event its read models cannot hold ({err}): "
                "run 'fairledger doctor'"
            ) from None
        _check_times(memory)
        if log_tables.JOB_KEYS not in missing:
            neutralized = in_log(ledger).jobs.values()
            _check_job_keys(conn, memory, set().union(*neutralized))
        tables = _compare_tables(conn, memory)
    finally:
        memory.close()
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


def _check_times(memory: Connection) -> None:
    rows = memory.query("SELECT position, at FROM log_index ORDER BY position")
    for before, after in zip(rows, rows[1:], strict=False):
        if after["at"] < before["at"]:
            raise TamperedLog(
                f"the event at log position {after['position']} is stamped before the one at "
                f"{before['position']}: log order is not time order"
            )


def _check_job_keys(
    conn: Connection, memory: Connection, neutralized: set[tuple[str, str]]
) -> None:
    """Every key of the index is a job of the read models (but a neutralized one), and every
    job of the read models is in the index."""
    logged = {
        (r["cluster"], r["id"])
        for r in conn.query(f"SELECT cluster, id FROM {log_tables.JOB_KEYS}")
    }
    if not logged:
        return  # a ledger written before the key index: its next write builds it
    recorded = {(r["cluster"], r["id"]) for r in memory.query("SELECT cluster, id FROM jobs")}
    recorded |= logged & neutralized  # set aside, yet still in the log: its key stays
    for key in sorted(logged ^ recorded):
        where = "the key index but not the log" if key in logged else "the log but not the index"
        raise TamperedLog(f"job {key[1]} (cluster {key[0]}) is in {where}")


def _compare_tables(conn: Connection, memory: Connection) -> int:
    names = list(runner.all_tables())
    for name in names:
        live = _rows(conn, name)
        rebuilt = _rows(memory, name)
        if live != rebuilt:
            missing = len([r for r in rebuilt if r not in live])
            extra = len([r for r in live if r not in rebuilt])
            raise TamperedLog(
                f"read model {name} differs from a rebuild from the log "
                f"({missing} rows missing, {extra} rows not in the rebuild): "
                "run 'fairledger rebuild'"
            )
    return len(names)


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
