"""The site's tables in flux-accounting's column layout and row order, for export-db."""

from __future__ import annotations

from typing import Any

from ledger.flux_accounting.columns import TABLE_COLUMNS
from ledger.store.connections import Connection
from projections.queries import site

# The order flux-accounting's export-db writes each table's rows in (factors and config come in
# the order of their known names, as the other commands list them).
_ORDER = {
    "bank_table": "bank_id",
    "association_table": "creation_time, username, bank",
    "queue_table": "queue",
    "project_table": "project_id",
}


def table_rows(conn: Connection, table: str) -> list[dict[str, Any]]:
    """Every row of `table` (a key of TABLE_COLUMNS), with at least its TABLE_COLUMNS."""
    if table == "priority_factor_weight_table":
        return site.factors(conn)
    if table == "config_table":
        return site.configs(conn)
    columns = TABLE_COLUMNS[table]
    return conn.query(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {_ORDER[table]}")
