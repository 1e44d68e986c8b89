"""Catch-up and rebuild: read the log after each projection's tracking position, apply, and
move the position in the same transaction, so a crash never leaves a read model half-applied
and two processes catching up at once apply each event once."""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from ledger import events as ev
from ledger.app import Ledger
from ledger.site import SITE_ID, Site
from ledger.state import SiteState
from ledger.storage import Connection
from projections.schema import INDEXES, READ_MODEL_VERSION, TABLES
from projections.site_tables import fold_all, write_touched

PAGE_SIZE = 1000
SITE_PROJECTION = "site"
READ_MODEL_KEY = "__read_model_version__"
SITE_TOPICS = tuple(
    get_topic(cls)
    for cls in vars(ev).values()
    if isinstance(cls, type)
    and issubclass(cls, (ev.SiteEvent, ev.LedgerCreated))
    and cls not in (ev.SiteEvent,)
)


def create_tables(conn: Connection) -> None:
    with conn.transaction():
        for ddl in TABLES.values():
            conn.execute(ddl)
        for ddl in INDEXES:
            conn.execute(ddl)
        for name in (SITE_PROJECTION,):
            if not conn.query("SELECT 1 AS x FROM projection_tracking WHERE name = ?", (name,)):
                conn.execute("INSERT INTO projection_tracking VALUES (?, 0)", (name,))
        if not conn.query(
            "SELECT 1 AS x FROM projection_tracking WHERE name = ?", (READ_MODEL_KEY,)
        ):
            conn.execute(
                "INSERT INTO projection_tracking VALUES (?, ?)",
                (READ_MODEL_KEY, READ_MODEL_VERSION),
            )


def drop_tables(conn: Connection) -> None:
    with conn.transaction():
        for name in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {name}")


def _lock_position(conn: Connection, name: str) -> int:
    suffix = " FOR UPDATE" if conn.config.is_postgres else ""
    rows = conn.query(f"SELECT position FROM projection_tracking WHERE name = ?{suffix}", (name,))
    return int(rows[0]["position"])


def _site_state_before(ledger: Ledger, version: int) -> SiteState:
    if version <= 0:
        return SiteState()
    site: Any = ledger.repository.get(SITE_ID, version=version)
    assert isinstance(site, Site)
    return site.state


def catch_up_site(ledger: Ledger, conn: Connection) -> int:
    """Apply every Site event after the projection's position; returns how many were applied."""
    with conn.transaction():
        position = _lock_position(conn, SITE_PROJECTION)
        head = ledger.recorder.max_notification_id() or 0
        if head <= position:
            return 0
        state: SiteState | None = None
        applied = 0
        start = position
        while True:
            page = ledger.recorder.select_notifications(
                start=start,
                limit=PAGE_SIZE,
                stop=head,
                topics=SITE_TOPICS,
                inclusive_of_start=False,
            )
            if not page:
                break
            domain_events: list[Any] = [ledger.mapper.to_domain_event(n) for n in page]
            if state is None:
                state = _site_state_before(ledger, domain_events[0].originator_version - 1)
            write_touched(conn, state, fold_all(state, domain_events))
            applied += len(page)
            start = page[-1].id
        conn.execute(
            "UPDATE projection_tracking SET position = ? WHERE name = ?", (head, SITE_PROJECTION)
        )
        return applied


def prepare(conn: Connection, ledger: Ledger) -> None:
    """Create the read models if missing, and rebuild them when their layout changed."""
    create_tables(conn)
    rows = conn.query("SELECT position FROM projection_tracking WHERE name = ?", (READ_MODEL_KEY,))
    if int(rows[0]["position"]) != READ_MODEL_VERSION:
        rebuild(ledger, conn)


def catch_up(ledger: Ledger, conn: Connection) -> None:
    catch_up_site(ledger, conn)


def rebuild(ledger: Ledger, conn: Connection) -> None:
    drop_tables(conn)
    create_tables(conn)
    catch_up(ledger, conn)
