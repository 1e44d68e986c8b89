"""Reads by a role that may not write: the read models are caught up when this role may update
them; when it may not (a reader on PostgreSQL, a read-only SQLite file) and they lag the log,
the read answers from them as they are, and says so."""

from __future__ import annotations

from ledger.store.application import Ledger
from ledger.store.connections import Connection, is_permission_error
from projections.writers import runner


def catch_up_if_allowed(ledger: Ledger, conn: Connection) -> str | None:
    """Catch up; None when the read models now reflect the whole log, else why they do not."""
    try:
        runner.catch_up(ledger, conn)
    except Exception as err:
        if not is_permission_error(err):
            raise
        rows = conn.query(
            "SELECT position FROM projection_tracking WHERE name = ?", (runner.PROJECTION,)
        )
        position = int(rows[0]["position"])
        head = ledger.recorder.max_notification_id() or 0
        return (
            f"the read models are at log position {position} of {head} and this role may not "
            f"update them; answering from them as they are (a writer's next command, or "
            f"'fairledger rebuild', catches them up)"
        )
    return None
