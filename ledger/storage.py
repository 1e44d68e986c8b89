"""Where a ledger lives: the storage URL, the eventsourcing environment for it, and plain DB-API
connections for the read models that share its database. The only module of `ledger/` that
knows about SQLite and PostgreSQL.

Fault injection (tests only): FAIRLEDGER_SQLITE_MAX_PAGES=N caps every SQLite connection this
module opens at N database pages (`PRAGMA max_page_count`), so a write that would grow the file
past it fails with SQLITE_FULL ("database or disk is full"), as on a full disk, without needing
a small filesystem. Every write of the ledger goes through these connections (ledger.app); the
eventsourcing library's own connection only reads, and writes the snapshots after a commit,
which may fail harmlessly. The cap never shrinks a file: a value below its size holds it at its
size.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from ledger.errors import InvalidValue

DEFAULT_URL = "sqlite:///fairledger.db"
SQLITE_MAX_PAGES_ENV = "FAIRLEDGER_SQLITE_MAX_PAGES"
SQLITE_BUSY_TIMEOUT_SECONDS = 30
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class StoreConfig:
    kind: str  # "sqlite" | "postgresql"
    path: str = ""
    host: str = "127.0.0.1"
    port: int = 5432
    user: str = "postgres"
    password: str = ""
    dbname: str = ""
    schema: str = "public"

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def describe(self) -> str:
        if self.is_postgres:
            return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}?schema={self.schema}"
        return f"sqlite:///{self.path}"

    def eventsourcing_env(self) -> dict[str, str]:
        if not self.is_postgres:
            return {
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": self.path,
                "SQLITE_LOCK_TIMEOUT": str(SQLITE_BUSY_TIMEOUT_SECONDS),
            }
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": self.dbname,
            "POSTGRES_HOST": self.host,
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_USER": self.user,
            "POSTGRES_PASSWORD": self.password,
            "POSTGRES_SCHEMA": self.schema,
            "POSTGRES_POOL_SIZE": "2",
            "POSTGRES_MAX_OVERFLOW": "2",
            "POSTGRES_LOCK_TIMEOUT": "30",
            # Our catch-up transactions do Python work between statements on big rebuilds.
            "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": "0",
        }


def parse_store_url(url: str) -> StoreConfig:
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise InvalidValue(f"invalid --db URL: {url!r} (sqlite:///PATH)")
        return StoreConfig(kind="sqlite", path=os.path.abspath(path))
    if url.startswith(("postgresql://", "postgres://")):
        parsed = urlparse(url)
        schema = parse_qs(parsed.query).get("schema", ["public"])[0]
        if not _SCHEMA_NAME.match(schema):
            raise InvalidValue(f"invalid schema name: {schema!r}")
        dbname = parsed.path.lstrip("/")
        if not dbname:
            raise InvalidValue(f"invalid --db URL: {url!r} (no database name)")
        return StoreConfig(
            kind="postgresql",
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or 5432,
            user=unquote(parsed.username or "postgres"),
            password=unquote(parsed.password or ""),
            dbname=dbname,
            schema=schema,
        )
    raise InvalidValue(f"invalid --db URL: {url!r} (use sqlite:///PATH or postgresql://...)")


class Connection:
    """A DB-API connection with one parameter style (`?`) for both stores."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.raw: Any
        if config.is_postgres:
            self.raw = postgres_admin_connect(config)
            self.raw.execute(f'SET search_path TO "{config.schema}"')
        else:
            self.raw = sqlite_connect(config.path)

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.config.is_postgres else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(self._sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self.config.is_postgres:
            with self.raw.cursor() as cur:
                cur.executemany(self._sql(sql), [tuple(r) for r in rows])
        else:
            self.raw.executemany(sql, [tuple(r) for r in rows])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction; SQLite takes the write lock at BEGIN so that concurrent
        catch-ups queue instead of failing on a lock upgrade."""
        self.execute("BEGIN" if self.config.is_postgres else "BEGIN IMMEDIATE")
        try:
            yield self
            self.execute("COMMIT")
        except BaseException:
            self._rollback_if_open()
            raise

    def _rollback_if_open(self) -> None:
        """Roll back what is still open: SQLite ends a transaction by itself on some errors
        (SQLITE_FULL among them) and a broken PostgreSQL connection has none left; a ROLLBACK
        then would fail and hide the error that matters."""
        if self.config.is_postgres:
            from psycopg import pq

            status = self.raw.info.transaction_status
            if status not in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
                return
        elif not self.raw.in_transaction:
            return
        self.execute("ROLLBACK")

    def close(self) -> None:
        self.raw.close()


def sqlite_connect(path: str) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) that waits for the write lock,
    capped by the fault-injection knob when it is set (see the module's docstring): a disk
    holds files, so the in-memory databases of verify and as-of are never capped."""
    raw = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS, isolation_level=None)
    raw.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_SECONDS * 1000}")
    max_pages = os.environ.get(SQLITE_MAX_PAGES_ENV, "")
    if max_pages and path != ":memory:":
        if not max_pages.isdigit():
            raw.close()
            raise InvalidValue(f"{SQLITE_MAX_PAGES_ENV}={max_pages!r}: not a number of pages")
        raw.execute(f"PRAGMA max_page_count = {int(max_pages)}")
    return raw


def postgres_admin_connect(config: StoreConfig) -> Any:
    import psycopg

    return psycopg.connect(
        host=config.host,
        port=config.port,
        user=config.user,
        password=config.password or None,
        dbname=config.dbname,
        autocommit=True,
    )


def ensure_schema(config: StoreConfig) -> None:
    if config.is_postgres:
        with postgres_admin_connect(config) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{config.schema}"')
    else:
        os.makedirs(os.path.dirname(config.path) or ".", exist_ok=True)


def event_table_exists(config: StoreConfig) -> bool:
    """Whether the event log's table is there, checked without creating anything."""
    if config.is_postgres:
        with postgres_admin_connect(config) as conn:
            row = conn.execute(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = %s "
                "AND table_name = 'ledger_events'",
                (config.schema,),
            ).fetchone()
            return row is not None
    if not os.path.exists(config.path):
        return False
    conn = sqlite3.connect(config.path)
    try:
        row = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stored_events'"
        ).fetchone()
        return row is not None
    finally:
        conn.close()
