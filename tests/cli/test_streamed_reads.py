"""Connection.stream_rows (and stream_query, its dicts): a read of every job held a few
thousand rows at a time, on both stores; a stream left unfinished by an error leaves the
connection usable, so the transaction it was in can still be rolled back."""

from __future__ import annotations

import threading

import pytest

from ledger.store.connections import Connection, parse_store_url
from tests.conftest import Store

ROWS = 2_500


def _numbers(conn: Connection) -> None:
    # One transaction: autocommitted, SQLite would sync the file once per row.
    with conn.transaction():
        conn.execute("CREATE TABLE numbers (n BIGINT NOT NULL, half DOUBLE PRECISION NOT NULL)")
        conn.executemany("INSERT INTO numbers VALUES (?, ?)", [(n, n / 2) for n in range(ROWS)])


def test_every_row_comes_in_batches_in_the_selects_order(store: Store) -> None:
    conn = Connection(parse_store_url(store.url))
    try:
        if store.kind == "postgres":
            conn.execute(f'CREATE SCHEMA "{conn.config.schema}"')
        _numbers(conn)
        with conn.stream_rows(
            "SELECT n, half FROM numbers WHERE n >= ? ORDER BY n", (10,), size=1_000
        ) as rows:
            got = list(rows)
        assert got == [(n, n / 2) for n in range(10, ROWS)]
        assert conn.rows("SELECT COUNT(*) FROM numbers") == [(ROWS,)]  # free again
        # The same rows as query() gives them, by column name.
        with conn.stream_query(
            "SELECT n, half FROM numbers WHERE n >= ? ORDER BY n", (10,), size=1_000
        ) as named:
            assert list(named) == [{"n": n, "half": n / 2} for n in range(10, ROWS)]
        assert conn.rows("SELECT COUNT(*) FROM numbers") == [(ROWS,)]
    finally:
        conn.close()


class Stop(Exception):
    pass


def test_an_error_mid_stream_leaves_the_connection_free_for_the_rollback(store: Store) -> None:
    outcome: list[BaseException | None] = []

    def run() -> None:
        conn = Connection(parse_store_url(store.url))
        try:
            if store.kind == "postgres":
                conn.execute(f'CREATE SCHEMA "{conn.config.schema}"')
            _numbers(conn)
            with pytest.raises(Stop), conn.transaction():
                conn.execute("INSERT INTO numbers VALUES (?, ?)", (-1, -0.5))
                with conn.stream_rows("SELECT n FROM numbers ORDER BY n", size=100) as rows:
                    for (n,) in rows:
                        if n == 150:
                            raise Stop  # a bad row, as add_jobs refuses one
            # Rolled back: the transaction's row is gone, the stream's rows are all there.
            assert conn.rows("SELECT COUNT(*), MIN(n) FROM numbers") == [(ROWS, 0)]
            outcome.append(None)
        except BaseException as err:  # handed to the test's thread
            outcome.append(err)
        finally:
            conn.close()

    # A stream still holding the connection would make the ROLLBACK wait for ever: run it in a
    # thread that cannot keep the test run from ending, and wait a while.
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(30)
    assert outcome, "the ROLLBACK after the error waited on the unfinished stream"
    if outcome[0] is not None:
        raise outcome[0]
