"""The fair-share an association's row shows now: the old value of a --fairshare change."""

from __future__ import annotations

from ledger.store.connections import Connection


def shown_fairshare(conn: Connection) -> dict[tuple[str, str], float]:
    """(username, bank) -> the value association_table shows."""
    rows = conn.query("SELECT username, bank, fairshare FROM association_table")
    return {(r["username"], r["bank"]): float(r["fairshare"]) for r in rows}
