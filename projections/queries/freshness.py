"""Reads by a role that may not write: the read models are caught up when this role may update
them; when it may not (a reader on PostgreSQL, a read-only SQLite file) and they lag the log,
the read answers from them as they are, and says so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.store import log_tables
from ledger.store.connections import Connection, is_permission_error
from projections.writers import tracking
from projections.writers.tracking import PROJECTION, READ_MODEL_KEY, READ_MODEL_VERSION

if TYPE_CHECKING:
    from ledger.store.application import Ledger


def current(conn: Connection) -> bool:
    """Whether the read models reflect the whole log in this release's layout: a read may then
    answer from them without opening the Ledger application (a small read's start-up). Missing
    tables or rows answer False: the full path creates or rebuilds them."""
    try:
        tracked = tracking.positions(conn, (PROJECTION, READ_MODEL_KEY))
    except Exception:  # no tracking table yet (either store's "no such table" error)
        return False
    head = log_tables.head_position(conn)
    return (
        head > 0
        and tracked.get(PROJECTION) == head
        and tracked.get(READ_MODEL_KEY) == READ_MODEL_VERSION
    )


def catch_up_if_allowed(ledger: Ledger, conn: Connection) -> str | None:
    """Catch up; None when the read models now reflect the whole log, else why they do not."""
    from projections.writers import runner

    try:
        runner.catch_up(ledger, conn)
    except Exception as err:
        if not is_permission_error(err):
            raise
        position = tracking.position(conn, PROJECTION)
        head = ledger.recorder.max_notification_id() or 0
        return (
            f"the read models are at log position {position} of {head} and this role may not "
            f"update them; answering from them as they are (a writer's next command, or "
            f"'fairledger rebuild', catches them up)"
        )
    return None
