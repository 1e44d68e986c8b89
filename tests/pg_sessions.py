"""PostgreSQL sessions kept open between the commands a test process runs in-process.

Every fairledger command opens its own connection and closes it when it ends; run as a process
per command that is what a site sees. The suite runs thousands of commands in two processes, and
a new session costs the server a backend and its cold catalog caches each time: about a fifth of
the suite's time on PostgreSQL. Here a closed connection is kept instead, and the next connect
with the same arguments gets it back, in the state a new session starts in: the reset is what
DISCARD ALL does (as a pooler such as PgBouncer resets a server connection) except dropping the
prepared statements, which psycopg's own cache of them still names.

A connection is kept only when it is idle (no transaction, no unfinished result); one closed in
any other state, or whose reset fails (a server that dropped it), is really closed. Connections
to a server or database that cannot be reached are never pooled: they are never made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

import psycopg
from psycopg import pq

_RESET = (
    "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; UNLISTEN *; "
    "SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES"
)
_KEPT_PER_KEY = 4  # concurrent commands of one test (threads) each hold one

_free: dict[Hashable, list[psycopg.Connection[Any]]] = {}
_lock = threading.Lock()
_real_connect: list[Callable[..., psycopg.Connection[Any]]] = []


def install() -> None:
    """Route psycopg.connect through the kept sessions, once per process."""
    if _real_connect:
        return
    _real_connect.append(psycopg.Connection.connect)
    psycopg.connect = _connect  # type: ignore[assignment]
    psycopg.Connection.connect = _connect  # type: ignore[assignment,method-assign]


def _connect(conninfo: str = "", *, autocommit: bool = False, **kwargs: Any) -> Any:
    # The connect timeout changes with each attempt's deadline; it does not make another session.
    key = (
        conninfo,
        autocommit,
        tuple(sorted((k, repr(v)) for k, v in kwargs.items() if k != "connect_timeout")),
    )
    while True:
        with _lock:
            free = _free.get(key)
            conn = free.pop() if free else None
        if conn is None:
            break
        if _reset(conn):
            return conn
    conn = _real_connect[0](conninfo, autocommit=autocommit, **kwargs)
    real_close = conn.close

    def close() -> None:
        if conn.closed:
            return
        if (
            conn.info.transaction_status != pq.TransactionStatus.IDLE
            or conn.autocommit != autocommit
        ):
            real_close()
            return
        with _lock:
            free = _free.setdefault(key, [])
            if len(free) < _KEPT_PER_KEY:
                free.append(conn)
                return
        real_close()

    conn.close = close  # type: ignore[method-assign]
    conn._fairledger_real_close = real_close  # type: ignore[attr-defined]
    return conn


def _reset(conn: psycopg.Connection[Any]) -> bool:
    """The session as a new one starts; False (and closed) when it cannot be."""
    try:
        conn.execute(_RESET)
        if not conn.autocommit:
            conn.commit()  # the reset opened a transaction; a new session has none
        return True
    except psycopg.Error:
        conn._fairledger_real_close()  # type: ignore[attr-defined]
        return False
