"""Connection.send: a read sent ahead, its rows taken later, on both stores. Inside an overlap
block several go out at once and each gives the rows its own SELECT found; outside one, and on
SQLite, it gives what `rows` gives. A sent read's rows are taken once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger.store.connections import Connection, parse_store_url
from tests.conftest import Store


@pytest.fixture
def conn(store: Store) -> Iterator[Connection]:
    opened = Connection(parse_store_url(store.url))
    try:
        if store.kind == "postgres":
            opened.execute(f'CREATE SCHEMA "{opened.config.schema}"')
        with opened.transaction():
            opened.execute("CREATE TABLE numbers (n BIGINT NOT NULL, name TEXT NOT NULL)")
            opened.executemany(
                "INSERT INTO numbers VALUES (?, ?)", [(n, f"n{n}") for n in range(100)]
            )
        yield opened
    finally:
        opened.close()


def test_reads_sent_together_each_give_their_own_rows(conn: Connection) -> None:
    with conn.transaction(), conn.overlap():
        high = conn.send("SELECT n FROM numbers WHERE n >= 50 ORDER BY n")
        named = conn.send("SELECT name FROM numbers WHERE n < ? ORDER BY n", (3,))
        count = conn.send("SELECT COUNT(*) FROM numbers")
        # Taken out of the order they were sent in, with a plain read between.
        assert count.rows() == [(100,)]
        assert conn.rows("SELECT MAX(n) FROM numbers") == [(99,)]
        assert named.rows() == [("n0",), ("n1",), ("n2",)]
        assert high.rows() == [(n,) for n in range(50, 100)]


def test_a_sent_read_outside_an_overlap_gives_what_rows_gives(conn: Connection) -> None:
    sql = "SELECT n, name FROM numbers WHERE n >= ? ORDER BY n"
    assert conn.send(sql, (95,)).rows() == conn.rows(sql, (95,))


def test_a_sent_reads_rows_are_taken_once(conn: Connection) -> None:
    sent = conn.send("SELECT COUNT(*) FROM numbers")
    assert sent.rows() == [(100,)]
    with pytest.raises(RuntimeError, match="taken once"):
        sent.rows()
