"""Reads by a role that may not write: the read models are caught up when this role may update
them; when it may not (a reader on PostgreSQL, a read-only SQLite file) and they lag the log,
the read answers from them as they are, and says so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.store import log_tables
from ledger.store.connections import Connection, is_permission_error
from projections.writers.schema import READ_MODEL_VERSION

if TYPE_CHECKING:
    from ledger.store.application import Ledger

# The projection_tracking rows of the projector (projections.writers.runner's PROJECTION and
# READ_MODEL_KEY, which tests/cli/test_startup.py holds equal to these): named here so that a
# read can check them without importing the projector and the whole domain under it.
TRACKED_POSITION = "ledger"
TRACKED_LAYOUT = "__read_model_version__"


def current(conn: Connection) -> bool:
    """Whether the read models reflect the whole log in this release's layout: a read may then
    answer from them without opening the Ledger application (a small read's start-up). Missing
    tables or rows answer False: the full path creates or rebuilds them."""
    try:
        rows = conn.query(
            "SELECT name, position FROM projection_tracking WHERE name IN (?, ?)",
            (TRACKED_POSITION, TRACKED_LAYOUT),
        )
    except Exception:  # no tracking table yet (either store's "no such table" error)
        return False
    tracked = {str(row["name"]): int(row["position"]) for row in rows}
    head = log_tables.head_position(conn)
    return (
        head > 0
        and tracked.get(TRACKED_POSITION) == head
        and tracked.get(TRACKED_LAYOUT) == READ_MODEL_VERSION
    )


def catch_up_if_allowed(ledger: Ledger, conn: Connection) -> str | None:
    """Catch up; None when the read models now reflect the whole log, else why they do not."""
    from projections.writers import runner

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
