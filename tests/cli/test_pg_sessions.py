"""The suite's kept PostgreSQL sessions (tests/pg_sessions.py) start as new ones: a command that
left its settings, locks or temporary tables behind hands none of them to the next."""

from __future__ import annotations

import psycopg


def _state(conn: psycopg.Connection) -> tuple[object, ...]:
    return tuple(
        conn.execute(
            "SELECT current_setting('search_path'), current_setting('lock_timeout'), "
            "current_user, (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
            "AND pid = pg_backend_pid()), (SELECT count(*) FROM pg_class "
            "WHERE relname = 'fairledger_left_behind' AND relpersistence = 't')"
        ).fetchone()
        or ()
    )


def test_a_kept_session_is_reset_to_a_new_ones_state(server: str) -> None:
    fresh = psycopg.connect(server, autocommit=True, application_name="pg_sessions_test")
    new_state = _state(fresh)
    backend = fresh.info.backend_pid
    fresh.execute('SET search_path TO "elsewhere"')
    fresh.execute("SET lock_timeout = '1s'")
    fresh.execute("SELECT pg_advisory_lock(7262099)")
    fresh.execute("CREATE TEMPORARY TABLE fairledger_left_behind (x int)")
    fresh.close()
    again = psycopg.connect(server, autocommit=True, application_name="pg_sessions_test")
    try:
        assert again.info.backend_pid == backend  # the same session, kept
        assert _state(again) == new_state
    finally:
        again.close()


def test_a_session_closed_in_a_transaction_is_not_kept(server: str) -> None:
    first = psycopg.connect(server, autocommit=True, application_name="pg_sessions_test_tx")
    backend = first.info.backend_pid
    first.execute("BEGIN")
    first.close()
    second = psycopg.connect(server, autocommit=True, application_name="pg_sessions_test_tx")
    try:
        assert second.info.backend_pid != backend
    finally:
        second.close()
