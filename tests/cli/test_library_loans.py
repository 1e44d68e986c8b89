"""The event store library reads through the command's one PostgreSQL connection
(ledger.store.connections.SharedConnectionPool): its rows as dictionaries fetched in binary for
the length of a loan, and the connection handed back to our own queries as it was."""

from __future__ import annotations

from psycopg.pq import Format

from ledger.store.connections import Connection, SharedConnectionPool, parse_store_url


def test_a_loan_fetches_in_binary_and_hands_the_connection_back_as_it_was(server: str) -> None:
    conn = Connection(parse_store_url(f"{server}?schema=t_library_loans"))
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
