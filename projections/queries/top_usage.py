"""The largest decayed usages, for show-usage's bar chart."""

from __future__ import annotations

from ledger.store.connections import Connection


def top_associations(conn: Connection, limit: int) -> list[tuple[str, float]]:
    """The `limit` associations with the most usage, as ("user / bank", usage); ties by name."""
    rows = conn.query(
        "SELECT username, bank, job_usage FROM association_table "
        "ORDER BY job_usage DESC, username, bank"
    )
    return [(f"{r['username']} / {r['bank']}", float(r["job_usage"])) for r in rows[:limit]]


def top_banks(conn: Connection, limit: int) -> list[tuple[str, float]]:
    """The `limit` banks below the root with the most usage, as (bank, usage); ties by name."""
    rows = conn.query(
        "SELECT bank, job_usage FROM bank_table WHERE parent_bank <> '' "
        "ORDER BY job_usage DESC, bank"
    )
    return [(r["bank"], float(r["job_usage"])) for r in rows[:limit]]
