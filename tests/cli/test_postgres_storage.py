"""PostgreSQL storage of the read models: the tables every update rewrites keep room for a
row's new version on its own page (projections.writers.runner.HOT_UPDATED_TABLES), from
create-db and after a rebuild."""

from __future__ import annotations

import pytest

from ledger.store.connections import Connection, parse_store_url
from tests.conftest import Store

REWRITTEN = [
    "association_table",
    "bank_table",
    "job_usage_bins",
    "period_totals",
    "projection_tracking",
]


def _options(url: str) -> dict[str, list[str] | None]:
    conn = Connection(parse_store_url(url))
    try:
        rows = conn.rows(
            "SELECT c.relname, c.reloptions FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = ? AND c.relkind = 'r'",
            (conn.config.schema,),
        )
        return {name: options for name, options in rows}
    finally:
        conn.close()


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_the_tables_each_update_rewrites_leave_half_of_each_page_free(
    ledger_store: Store,
) -> None:
    for when in ("create-db", "rebuild"):
        if when == "rebuild":
            ledger_store.run("rebuild")
        options = _options(ledger_store.url)
        for table in REWRITTEN:
            assert options[table] == ["fillfactor=50"], (when, table)
        # Tables only appended to keep PostgreSQL's default (full pages).
        assert options["jobs"] is None and options["fairshare_checkpoints"] is None, when
