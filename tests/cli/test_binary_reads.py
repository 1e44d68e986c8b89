"""Reads of an event's state (bytea) fetch in binary on PostgreSQL: the event store library's,
through the command's one connection (ledger.store.connections.SharedConnectionPool), its rows
as dictionaries for the length of a loan, the connection handed back to our own queries as it
was; and ours that ask for it (Connection.execute(binary=True): the log's own reads)."""

from __future__ import annotations

from psycopg.pq import Format

from ledger.store.connections import Connection, SharedConnectionPool, parse_store_url


def test_a_loan_fetches_in_binary_and_hands_the_connection_back_as_it_was(server: str) -> None:
    conn = Connection(parse_store_url(f"{server}?schema=t_binary_loans"))
    try:
        pool = SharedConnectionPool(lambda: conn)
        with pool.connection() as raw, raw.cursor() as cur:
            cur.execute("SELECT %s::bytea AS state, 7::bigint AS version", (b"\x00\xff\\x",))
            assert cur.format == Format.BINARY
            assert cur.fetchall() == [{"state": b"\x00\xff\\x", "version": 7}]
        with conn.raw.cursor() as cur:
            cur.execute("SELECT 'text' AS word")
            assert cur.format == Format.TEXT
            assert cur.fetchall() == [("text",)]
    finally:
        conn.close()


def test_our_read_asks_for_binary_and_gets_the_same_values(server: str) -> None:
    conn = Connection(parse_store_url(f"{server}?schema=t_binary_reads"))
    try:
        sql = "SELECT CAST(? AS bytea) AS state, CAST(? AS uuid) AS id, 7 AS version"
        values = (b"\x00\xff\\x", "8c8a5d3e-3c6a-4f1e-9d2a-0d4f2b7f3e11")
        as_text = conn.execute(sql, values)
        as_binary = conn.execute(sql, values, binary=True)
        assert (as_text.format, as_binary.format) == (Format.TEXT, Format.BINARY)
        assert as_binary.fetchall() == as_text.fetchall()
    finally:
        conn.close()
