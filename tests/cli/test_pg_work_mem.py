"""A PostgreSQL session of ours groups an as-of read's jobs in memory: its work_mem is at least
WORK_MEM_FLOOR, and a server configured with more keeps its own."""

from __future__ import annotations

import psycopg
import pytest

from ledger.store.connections import RAISE_WORK_MEM, Connection, parse_store_url

MIB = 2**20


def _work_mem(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_size_bytes(current_setting('work_mem'))").fetchone()
    assert row is not None
    return int(row[0])


def test_our_session_runs_with_the_floor_at_least(server: str) -> None:
    conn = Connection(parse_store_url(f"{server}?schema=t_work_mem"))
    try:
        assert _work_mem(conn.raw) >= 64 * MIB  # the CI server: 4 MB by default
    finally:
        conn.close()


@pytest.mark.parametrize(("configured", "expected"), [("4MB", 64 * MIB), ("256MB", 256 * MIB)])
def test_a_lower_setting_is_raised_and_a_higher_one_kept(
    server: str, configured: str, expected: int
) -> None:
    with psycopg.connect(server, autocommit=True) as raw:
        raw.execute(f"SET work_mem = '{configured}'")
        raw.execute(RAISE_WORK_MEM)
        assert _work_mem(raw) == expected
