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


def test_rows_in_binary_give_the_values_and_types_of_text(server: str) -> None:
    """An update's reads of a row per association (its usage and fair-share, a checkpoint's
    entries) ask for binary: each column must load to the value and type the text form gives,
    or the update would compare and write other numbers."""
    conn = Connection(parse_store_url(f"{server}?schema=t_binary_rows"))
    try:
        with conn.transaction():
            conn.execute("DROP SCHEMA IF EXISTS t_binary_rows CASCADE")
            conn.execute("CREATE SCHEMA t_binary_rows")
            conn.execute(
                "CREATE TABLE t (username TEXT, bank TEXT, usage DOUBLE PRECISION, "
                "active INTEGER, rank BIGINT)"
            )
            conn.executemany(
                "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                [
                    ("alice", "bank ä", 0.1 + 0.2, 1, 2**40),
                    ("bob", 'b,"q"', 5e-324, 0, None),
                    ("carol", "", 1.7976931348623157e308, -1, -(2**62)),
                    ("dave", "x", -0.0, 0, 0),
                ],
            )
        sql = "SELECT username, bank, usage, active, rank FROM t ORDER BY username"
        as_text = conn.rows(sql)
        as_binary = conn.rows(sql, binary=True)
        assert as_binary == as_text
        assert [[type(v) for v in row] for row in as_binary] == [
            [type(v) for v in row] for row in as_text
        ]
        assert as_binary[0][2] == 0.30000000000000004 and as_binary[3][2] == 0.0
        assert str(as_binary[3][2]) == "-0.0"
    finally:
        with conn.transaction():
            conn.execute("DROP SCHEMA t_binary_rows CASCADE")
        conn.close()
