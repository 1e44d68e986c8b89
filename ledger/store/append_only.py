"""The store itself refuses to rewrite the log: triggers on every append-only table turn an
UPDATE, DELETE (and on PostgreSQL a TRUNCATE) into an error, whoever sends it.

Installed by create-db, and when an existing ledger that lacks them is opened by a role that
may create them (on PostgreSQL the tables' owner; otherwise skipped, silently: a reader cannot
add them and need not). On PostgreSQL the privileges (`fairledger grant`) refuse the same
statements to readers and writers; the triggers hold for the owner too.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ledger.store.connections import Connection, StoreConfig, postgres_admin_connect

# Logical names; "events" and "snapshots" are the eventsourcing library's tables, named per
# store below. A table of our own is listed by its name, the same on both stores.
APPEND_ONLY_TABLES: tuple[str, ...] = ("events", "snapshots", "event_hashes", "job_keys")
_LIBRARY_TABLES = {
    "sqlite": {"events": "stored_events", "snapshots": "stored_snapshots"},
    "postgresql": {"events": "ledger_events", "snapshots": "ledger_snapshots"},
}
MESSAGE = "fairledger: the event log is append-only"
TRIGGER = "fairledger_append_only"
_INSTALL_LOCK = 7262002  # serialises concurrent installs (PostgreSQL's catalog races on DDL)


def table_names(config: StoreConfig, tables: tuple[str, ...] = APPEND_ONLY_TABLES) -> list[str]:
    names = _LIBRARY_TABLES[config.kind]
    return [names.get(table, table) for table in tables]


def install(config: StoreConfig, tables: list[str]) -> None:
    """Make `tables` (those that exist) refuse every change but INSERT. Idempotent."""
    if config.is_postgres:
        with postgres_admin_connect(config) as conn, conn.transaction():
            _install_postgres(conn, config, tables)
    else:
        conn = sqlite3.connect(config.path, timeout=30, isolation_level=None)
        try:
            _install_sqlite(conn, tables)
        finally:
            conn.close()


def install_in(conn: Connection, tables: list[str]) -> None:
    """Guard `tables` inside the caller's open transaction (a ledger's first write after an
    upgrade creates the log's own tables there)."""
    if conn.config.is_postgres:
        _install_postgres(conn.raw, conn.config, tables)
    else:
        _install_sqlite(conn.raw, tables)


def protect(config: StoreConfig, conn: Connection | None = None) -> list[str]:
    """On opening a ledger: install what is missing when this role may. One catalog query when
    all is there, through `conn` when given (the command's one connection), else a connection
    of its own. Returns which of the append-only tables exist (the same query answers whether
    there is a log at all)."""
    tables = table_names(config)
    if config.is_postgres:
        if conn is not None:
            return _protect_postgres(conn.raw, config, tables)
        with postgres_admin_connect(config) as raw:
            return _protect_postgres(raw, config, tables)
    if conn is not None:
        return _protect_sqlite(conn.raw, tables)
    try:
        raw = sqlite3.connect(config.path, timeout=30, isolation_level=None)
    except sqlite3.OperationalError:
        return []  # a file this process may not open: whoever may write it guards it
    try:
        return _protect_sqlite(raw, tables)
    finally:
        raw.close()


# --- SQLite ----------------------------------------------------------------------------------
_SQLITE_OPS = ("update", "delete")
_SQLITE_GUARDED = (
    f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '{TRIGGER}%'"
)


def _protect_sqlite(conn: sqlite3.Connection, tables: list[str]) -> list[str]:
    try:
        present = {row[0] for row in conn.execute(_SQLITE_GUARDED)}
        existing = _sqlite_tables(conn, tables)
        if not all(f"{TRIGGER}_{op}_{t}" in present for t in existing for op in _SQLITE_OPS):
            _install_sqlite(conn, tables)
        return existing
    except sqlite3.OperationalError:
        return []  # a read-only file: whoever may write it installs the triggers


def _sqlite_tables(conn: sqlite3.Connection, tables: list[str]) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    names = {row[0] for row in rows}
    return [t for t in tables if t in names]


def _install_sqlite(conn: sqlite3.Connection, tables: list[str]) -> None:
    for table in _sqlite_tables(conn, tables):
        for op in _SQLITE_OPS:
            conn.execute(
                f'CREATE TRIGGER IF NOT EXISTS "{TRIGGER}_{op}_{table}" '
                f'BEFORE {op.upper()} ON "{table}" '
                f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
            )


# --- PostgreSQL ------------------------------------------------------------------------------
_PG_STATE = f"""
SELECT c.relname AS name,
       pg_has_role(current_user, c.relowner, 'USAGE') AS owned,
       EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = '{TRIGGER}')
           AND EXISTS (SELECT 1 FROM pg_trigger t
                       WHERE t.tgrelid = c.oid AND t.tgname = '{TRIGGER}_truncate') AS guarded
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relkind IN ('r', 'p')
"""


def _complete(rows: list[Any]) -> bool:
    return all(guarded for _name, _owned, guarded in rows)


def _protect_postgres(conn: Any, config: StoreConfig, tables: list[str]) -> list[str]:
    rows = conn.execute(_PG_STATE, (config.schema, tables)).fetchall()
    if rows and not _complete(rows) and all(owned for _name, owned, _g in rows):
        with conn.transaction():
            conn.execute(f"SELECT pg_advisory_xact_lock({_INSTALL_LOCK})")
            # Another process may have installed them while this one waited.
            if not _complete(conn.execute(_PG_STATE, (config.schema, tables)).fetchall()):
                _install_postgres(conn, config, tables)
    return [name for name, _owned, _guarded in rows]


def _install_postgres(conn: Any, config: StoreConfig, tables: list[str]) -> None:
    schema = f'"{config.schema}"'
    conn.execute(f"SELECT pg_advisory_xact_lock({_INSTALL_LOCK})")
    conn.execute(
        f"CREATE OR REPLACE FUNCTION {schema}.fairledger_refuse_change() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$ BEGIN "
        f"RAISE EXCEPTION '{MESSAGE} (% on %.% refused)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME "
        f"USING ERRCODE = 'restrict_violation'; END $$"
    )
    present = {
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = ANY(%s)",
            (config.schema, tables),
        ).fetchall()
    }
    statements: list[str] = []
    for table in (t for t in tables if t in present):
        target = f'{schema}."{table}"'
        statements += [
            f"DROP TRIGGER IF EXISTS {TRIGGER} ON {target}",
            f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE OR DELETE ON {target} "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.fairledger_refuse_change()",
            f"DROP TRIGGER IF EXISTS {TRIGGER}_truncate ON {target}",
            f"CREATE TRIGGER {TRIGGER}_truncate BEFORE TRUNCATE ON {target} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.fairledger_refuse_change()",
        ]
    if statements:  # one round trip: a new ledger's triggers one by one were half its DDL waits
        conn.execute(";\n".join(statements))
