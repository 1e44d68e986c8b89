"""The store refuses to rewrite the log: UPDATE, DELETE (and TRUNCATE on PostgreSQL) of the
event and snapshot tables fail whoever sends them; a ledger that lacks the triggers gets them
when it is next opened; a new SQLite file is readable by its owner only."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ledger.store.append_only import APPEND_ONLY_TABLES, MESSAGE, table_names
from ledger.store.connections import parse_store_url
from tests.conftest import DATA, Store

REFUSED = "fairledger: the event log is append-only"


@contextmanager
def raw(store: Store) -> Iterator[Callable[[str], Any]]:
    """Run SQL on the store directly, as the owner (autocommit), bypassing the application."""
    config = parse_store_url(store.url)
    if config.is_postgres:
        import psycopg

        with psycopg.connect(store.url.split("?")[0], autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{config.schema}"')
            yield conn.execute
        return
    conn = sqlite3.connect(config.path, isolation_level=None)
    try:
        yield conn.execute
    finally:
        conn.close()


def refused(store: Store, sql: str) -> str:
    with raw(store) as execute, pytest.raises(Exception) as caught:
        execute(sql)
    return str(caught.value)


def tables(store: Store) -> tuple[str, str]:
    events, snapshots, *_log_tables = table_names(parse_store_url(store.url))
    return events, snapshots


def test_the_message_is_the_one_named_in_the_issue() -> None:
    assert MESSAGE == REFUSED
    assert APPEND_ONLY_TABLES == ("events", "snapshots", "event_hashes", "job_keys")


def add_snapshot_row(store: Store) -> None:
    """INSERT stays allowed: a row (a copy of the first event) to try the other statements on;
    a row trigger fires only for rows there are."""
    events, snapshots = tables(store)
    with raw(store) as execute:
        execute(
            f"INSERT INTO {snapshots} (originator_id, originator_version, topic, state) "
            f"SELECT originator_id, originator_version, topic, state FROM {events} "
            f"ORDER BY originator_version LIMIT 1"
        )


def test_update_and_delete_of_events_and_snapshots_are_refused(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    events, snapshots = tables(ledger_store)
    add_snapshot_row(ledger_store)
    before = ledger_store.log_position()
    for table in (events, snapshots):
        assert REFUSED in refused(ledger_store, f"UPDATE {table} SET topic = 'x'")
        assert REFUSED in refused(ledger_store, f"DELETE FROM {table}")
        assert REFUSED in refused(ledger_store, f"DELETE FROM {table} WHERE originator_version = 1")
    assert ledger_store.log_position() == before
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")  # appending still works
    assert ledger_store.run("list-banks").stdout.count("\n") >= 2


def test_the_hash_chain_and_the_job_keys_are_append_only(ledger_store: Store) -> None:
    job = (
        '{"id": 1, "username": "u", "t_submit": 1.7e9, "t_run": 1.7e9, '
        '"t_inactive": 1.7e9, "nnodes": 1, "ncores": 1}'
    )
    ledger_store.run("ingest", "-", input=job + "\n")
    for table, column in (("event_hashes", "link"), ("job_keys", "digest")):
        assert REFUSED in refused(ledger_store, f"UPDATE {table} SET {column} = 'x'")
        assert REFUSED in refused(ledger_store, f"DELETE FROM {table}")
    ledger_store.run("ingest", "-", input=job.replace('"id": 1', '"id": 2') + "\n")


def test_truncate_is_refused_on_postgres(ledger_store: Store) -> None:
    if ledger_store.kind != "postgres":
        pytest.skip("SQLite has no TRUNCATE")
    for table in tables(ledger_store):
        assert REFUSED in refused(ledger_store, f"TRUNCATE {table}")
    assert ledger_store.log_position() > 0


def test_opening_a_ledger_without_the_triggers_installs_them(ledger_store: Store) -> None:
    events, snapshots = tables(ledger_store)
    with raw(ledger_store) as execute:
        if ledger_store.kind == "postgres":
            for table in (events, snapshots):
                execute(f"DROP TRIGGER fairledger_append_only ON {table}")
                execute(f"DROP TRIGGER fairledger_append_only_truncate ON {table}")
        else:
            for table in (events, snapshots):
                for op in ("update", "delete"):
                    execute(f"DROP TRIGGER fairledger_append_only_{op}_{table}")
        execute(f"UPDATE {snapshots} SET topic = 'x' WHERE false")  # no longer refused
    ledger_store.run("list-configs")  # any command opens the ledger
    add_snapshot_row(ledger_store)
    assert REFUSED in refused(ledger_store, f"DELETE FROM {events}")
    assert REFUSED in refused(ledger_store, f"UPDATE {snapshots} SET topic = 'x'")


def _mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_sqlite_file_is_private(store: Store) -> None:
    if store.kind != "sqlite":
        pytest.skip("file modes are SQLite's")
    old = os.umask(0o022)
    try:
        store.run("create-db")
        path = parse_store_url(store.url).path
        assert _mode(path) == 0o600
        # The -wal and -shm files SQLite creates take the database file's mode.
        conn = sqlite3.connect(path)
        try:
            conn.execute("SELECT count(*) FROM stored_events").fetchone()
            for suffix in ("-wal", "-shm"):
                if os.path.exists(path + suffix):
                    assert _mode(path + suffix) == 0o600, suffix
        finally:
            conn.close()
    finally:
        os.umask(old)


def test_a_sqlite_file_made_by_an_import_or_the_demo_is_private(store: Store) -> None:
    """The commands that create a ledger without create-db make the same 0600 file."""
    if store.kind != "sqlite":
        pytest.skip("file modes are SQLite's")
    old = os.umask(0o022)
    try:
        source = DATA / "test_dbs" / "FluxAccountingv0-60-0.db"
        store.run("import-flux-accounting", str(source))
        assert _mode(parse_store_url(store.url).path) == 0o600
    finally:
        os.umask(old)


def test_group_readable_sqlite_file(store: Store) -> None:
    if store.kind != "sqlite":
        result = store.run("create-db", "--group-readable", expect=1)
        assert result.stderr == (
            "fairledger: --group-readable is for SQLite; on PostgreSQL use 'grant --reader'\n"
        )
        return
    old = os.umask(0o077)  # even a strict umask: the option says what the mode is
    try:
        store.run("create-db", "--group-readable")
    finally:
        os.umask(old)
    assert _mode(parse_store_url(store.url).path) == 0o640
    store.run("add-bank", "root", "1")
