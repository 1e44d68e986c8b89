"""The association a question names: its name checked, then found in the read models."""

from __future__ import annotations

from typing import Any

from ledger import bounds
from ledger.errors import NotFound
from ledger.store.connections import Connection
from projections.queries import site as queries

Row = dict[str, Any]


def check_names(**names: str | None) -> None:
    """Names asked about must be names the ledger could hold (a NUL is refused by PostgreSQL)."""
    for kind, name in names.items():
        if name is not None:
            bounds.check_name(kind, name)


def association_row(conn: Connection, username: str, bank: str | None) -> Row:
    """USERNAME's association in BANK, or in its default bank when BANK is None."""
    rows = queries.user_rows(conn, username)
    wanted = bank or rows[0]["default_bank"]
    for row in rows:
        if row["bank"] == wanted:
            return row
    raise NotFound(f"user {username} not found in bank {wanted}")
