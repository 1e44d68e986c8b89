"""Where a ledger lives: the storage URL, the eventsourcing environment for it, and plain DB-API
connections for the read models that share its database. The only module of `ledger/` that
knows about SQLite and PostgreSQL.

Fault injection (tests only): FAIRLEDGER_SQLITE_MAX_PAGES=N caps every SQLite connection this
module opens at N database pages (`PRAGMA max_page_count`), so a write that would grow the file
past it fails with SQLITE_FULL ("database or disk is full"), as on a full disk, without needing
a small filesystem. Every write of the ledger goes through these connections
(ledger.store.application), and so do the library's snapshots after a commit, which may fail
harmlessly. The cap never shrinks a file: a value below its size holds it at its size.

A command holds one connection: the library's recorders borrow it (SharedConnectionPool,
SharedSQLitePool) instead of opening a pool of their own. Only create-db lets the library open
its own, on SQLite, to put the new file in WAL mode.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from ledger.errors import InvalidValue, StoreUnavailable, WritersBusy
from ledger.spill import no_room

DEFAULT_URL = "sqlite:///fairledger.db"
# Lowercase only: PostgreSQL folds unquoted names to lowercase, so "Acct" would name one schema
# in our quoted DDL and another in any unquoted SQL a person types.
SCHEMA_NAME_LENGTH = 63  # PostgreSQL's longest identifier (NAMEDATALEN - 1)
_SCHEMA_NAME = re.compile(rf"^[a-z_][a-z0-9_]{{0,{SCHEMA_NAME_LENGTH - 1}}}$")
_RESERVED_SCHEMA = re.compile(r"^(pg_.*|information_schema)$")
URL_PARAMETERS = ("schema",)
CONNECT_TIMEOUT_ENV = "FAIRLEDGER_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT = 10.0
# Transient connection failures (a restarting server, a full connection table) are retried
# this many times, with doubling waits, but never past the connect timeout.
CONNECT_ATTEMPTS = 3
STREAM_BATCH_ROWS = 10_000  # Connection.stream_rows: rows held at once, a few MB
FIRST_BACKOFF = 0.25
# The PostgreSQL errors worth another try: no SQLSTATE (the network), "cannot connect now",
# "too many connections".
_TRANSIENT_SQLSTATES = (None, "57P03", "53300")
SQLITE_FILE_MODE = 0o600
SQLITE_GROUP_READABLE_MODE = 0o640


def connect_timeout() -> float:
    """Seconds a command may spend reaching PostgreSQL before it gives up (all attempts)."""
    text = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_CONNECT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < 3600:
        raise InvalidValue(f"invalid {CONNECT_TIMEOUT_ENV}: {text!r} (seconds, 0 < T < 3600)")
    return seconds


SQLITE_MAX_PAGES_ENV = "FAIRLEDGER_SQLITE_MAX_PAGES"
SQLITE_BUSY_TIMEOUT_SECONDS = 30
# SQLite's page cache per connection, in KiB (its default is 2,000). An ingest inserts each job
# into the `jobs` user index at random: at 250,000 jobs that index outgrows 2 MB, and every
# insert re-read its pages from the OS. 16 MiB: a 125,000-job ingest 4.54 -> 4.29-4.34 s, for
# 14 MiB more peak RSS (64 MiB gained no more).
SQLITE_CACHE_KIB = 16_384
# The least work_mem a session of ours runs with. An as-of read groups the jobs before (or
# after) its moment, hundreds of thousands of rows into about a hundred thousand groups
# (26 MB of hash table on the 1M-job bench ledger); at PostgreSQL's default 4 MB the planner
# sorts them instead, spilling to disk (1.0 s against 0.6 s for the bench's worst moment).
# A server configured higher keeps its own.
WORK_MEM_FLOOR = "64MB"
RAISE_WORK_MEM = (
    f"SELECT set_config('work_mem', '{WORK_MEM_FLOOR}', false) "
    f"WHERE pg_size_bytes(current_setting('work_mem')) < pg_size_bytes('{WORK_MEM_FLOOR}')"
)


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
    # A SQLite path as the user typed it (`path` is made absolute): flux-accounting's messages
    # print the path they were given, and its tests grep them so.
    typed_path: str = field(default="", compare=False)

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def describe(self) -> str:
        if self.is_postgres:
            return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}?schema={self.schema}"
        return f"sqlite:///{self.path}"

    def missing_ledger(self) -> str:
        """What a command says where no ledger is: for a file, flux-accounting's own words first
        (its tests and admins' scripts grep `error opening DB: unable to open database file
        PATH`), then ours."""
        ours = f"no ledger at {self.describe()}: run 'fairledger create-db' first"
        if self.is_postgres:
            return ours
        path = self.typed_path or self.path
        return f"error opening DB: unable to open database file {path} ({ours})"

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
            # The pool's wait for a connection (whole seconds); bound_connection_waits then
            # shortens each of the library's retried attempts.
            "POSTGRES_CONNECT_TIMEOUT": str(max(1, math.ceil(connect_timeout()))),
            # Our catch-up transactions do Python work between statements on big rebuilds.
            "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": "0",
        }


def parse_store_url(url: str) -> StoreConfig:
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise InvalidValue(f"invalid --db URL: {url!r} (sqlite:///PATH)")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            # Bytes that are not UTF-8 reach us as lone surrogates; SQLite takes UTF-8 names.
            raise InvalidValue(
                f"invalid --db URL: {url.encode('utf-8', 'backslashreplace').decode()!r} "
                "(the path is not valid UTF-8)"
            ) from None
        if os.path.isdir(path):
            # SQLite would say only "unable to open database file".
            raise InvalidValue(f"invalid --db URL: {url!r} ({path} is a directory)")
        return StoreConfig(kind="sqlite", path=os.path.abspath(path), typed_path=path)
    if url.startswith(("postgresql://", "postgres://")):
        parsed = urlparse(url)
        schema = _schema_parameter(parsed.query)
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


def _schema_parameter(query: str) -> str:
    """The `?schema=` of a PostgreSQL URL; anything else in the query is refused, so that a typo
    (`?shema=x`, `?schema=`) cannot silently mean the `public` schema."""
    params = parse_qs(query, keep_blank_values=True)
    for key in params:
        if key not in URL_PARAMETERS:
            raise InvalidValue(f"unknown parameter in --db URL: {key!r} (only ?schema=NAME)")
    for piece in query.split("&") if query else ():
        if "=" not in piece:
            raise InvalidValue(f"invalid parameter in --db URL: {piece!r} (use ?schema=NAME)")
    values = params.get("schema", ["public"])
    if len(values) > 1:
        raise InvalidValue(f"--db URL names the schema {len(values)} times: {values!r}")
    schema = values[0]
    if not schema:
        raise InvalidValue("invalid schema name: '' (?schema= needs a name)")
    if not _SCHEMA_NAME.match(schema):
        raise InvalidValue(
            f"invalid schema name: {schema!r} (lowercase letters, digits and _, at most 63)"
        )
    if _RESERVED_SCHEMA.match(schema):
        raise InvalidValue(f"invalid schema name: {schema!r} (reserved by PostgreSQL)")
    return schema


class Connection:
    """A DB-API connection with one parameter style (`?`) for both stores."""

    def __init__(self, config: StoreConfig, attempts: int = CONNECT_ATTEMPTS) -> None:
        """`attempts`: how many times PostgreSQL is tried (postgres_admin_connect)."""
        self.config = config
        # The tables insert_rows added rows to in the open transaction: rows no other
        # connection sees until it commits (projections.writers.job_reading asks).
        self.inserted: set[str] = set()
        # Each table's column types as PostgreSQL's catalog names them, looked up once
        # (insert_rows' binary COPY).
        self._column_types: dict[str, dict[str, str]] = {}
        self.raw: Any
        if config.is_postgres:
            self.raw = postgres_admin_connect(config, attempts)
            self.raw.execute(f'SET search_path TO "{config.schema}"; {RAISE_WORK_MEM}')
        else:
            self.raw = sqlite_connect(config.path)

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.config.is_postgres else sql

    def execute(
        self, sql: str, params: Sequence[Any] = (), replan: bool = False, binary: bool = False
    ) -> Any:
        """`replan`: PostgreSQL plans the statement anew each time, with the table's size at
        that moment, instead of keeping a plan psycopg's prepared statement made earlier: a
        plan made while a table was empty (or had no statistics yet) stays in use after it has
        grown, and a lookup planned as a scan of a few rows then scans millions.

        `binary`: PostgreSQL sends the results in binary, for rows that carry bytea (an
        event's state), which the text form sends as hex for psycopg to decode again (see
        _binary_cursor). The values load to the same Python types either way."""
        if self.config.is_postgres and (replan or binary):
            return self.raw.execute(
                self._sql(sql), tuple(params), prepare=False if replan else None, binary=binary
            )
        return self.raw.execute(self._sql(sql), tuple(params))

    def run_statements(self, statements: Sequence[str]) -> None:
        """Parameterless statements (DDL) in the open transaction: on PostgreSQL one round trip
        for all of them, since a new ledger's ~100 statements one by one made create-db the
        slowest step of opening one; SQLite runs in-process, and its executescript would commit."""
        if not statements:
            return
        if self.config.is_postgres:
            self.raw.execute(";\n".join(statements))
            return
        for statement in statements:
            self.raw.execute(statement)

    def array_parameters(self, types: Sequence[str]) -> str:
        """PostgreSQL: a parameter per array type, for one statement over arrays (unnest), each
        sent in binary: psycopg's text form checks every element against a regular expression
        for quoting, three times the cost at 10,000 elements (a cycle sends several)."""
        return ", ".join(f"CAST(%b AS {t})" for t in types)

    def update_rows(
        self,
        table: str,
        columns: Sequence[str],
        keys: Sequence[str],
        types: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """UPDATE `table` SET `columns` to each row's first values WHERE `keys` equal its last
        ones, in the open transaction (`types`: the PostgreSQL array type of each column, then
        of each key). See _by_keys."""
        assignments = ", ".join(f"{c} = ?" for c in columns)
        self._by_keys(
            f"UPDATE {table} SET {assignments}",
            f"UPDATE {table} SET {', '.join(f'{c} = v.{c}' for c in columns)} FROM",
            table,
            [*columns, *keys],
            keys,
            types,
            rows,
        )

    def delete_rows(
        self,
        table: str,
        keys: Sequence[str],
        types: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """DELETE the rows of `table` whose `keys` equal one of `rows`, in the open transaction
        (`types`: each key's PostgreSQL array type). See _by_keys."""
        self._by_keys(
            f"DELETE FROM {table}", f"DELETE FROM {table} USING", table, keys, keys, types, rows
        )

    def _by_keys(
        self,
        sqlite_head: str,
        postgres_head: str,
        table: str,
        columns: Sequence[str],
        keys: Sequence[str],
        types: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """A statement per row matched on `keys` (its values are `columns`, keys last): on
        PostgreSQL one statement over arrays, where executemany sends one per row (a cycle
        changes the fair-share of most associations: 10,000 statements); SQLite runs in
        process, where executemany is the fast way."""
        if not rows:
            return
        if self.config.is_postgres:
            where = " AND ".join(f"{table}.{k} = v.{k}" for k in keys)
            self.execute(
                f"{postgres_head} unnest({self.array_parameters(types)}) "
                f"AS v ({', '.join(columns)}) WHERE {where}",
                [list(values) for values in zip(*rows, strict=True)],
            )
            return
        matches = " AND ".join(f"{k} = ?" for k in keys)
        self.raw.executemany(f"{sqlite_head} WHERE {matches}", [tuple(r) for r in rows])

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self.config.is_postgres:
            with self.raw.cursor() as cur:
                cur.executemany(self._sql(sql), [tuple(r) for r in rows])
        else:
            self.raw.executemany(sql, [tuple(r) for r in rows])

    def insert_rows(
        self,
        table: str,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        binary: bool = False,
    ) -> None:
        """Rows appended to `table` in bulk, in the open transaction: COPY on PostgreSQL (one
        stream, where executemany costs a pipelined statement per row), executemany on SQLite
        (in-process, no round trip to save). No ON CONFLICT: a duplicate key is an error.

        `rows` may be a generator that makes each row as it is sent: on PostgreSQL the server
        then stores the rows already sent while this process makes the next, where rows made
        first left it idle meanwhile, and this process idle while it caught up.

        `binary`: on PostgreSQL the COPY sends each value in its column's binary form, which
        the server stores without parsing text. Each value must then be of the Python type its
        column's type takes (str for text, int for an integer, int or float for a double), or
        TypeError is raised before the COPY ends, and an INTEGER column's values must fit in
        32 bits (a binary value is not range-checked as a text one is)."""
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return
        self.inserted.add(table)
        names = ", ".join(columns)
        if self.config.is_postgres:
            form = " (FORMAT BINARY)" if binary else ""
            types = self._types_of(table, columns) if binary else None
            with (
                self.raw.cursor() as cur,
                cur.copy(f"COPY {table} ({names}) FROM STDIN{form}") as copy,
            ):
                if types is not None:
                    copy.set_types(types)
                write = copy.write_row
                write(first)
                for row in rows:
                    write(row)
            return
        marks = ", ".join("?" * len(columns))
        self.raw.executemany(
            f"INSERT INTO {table} ({names}) VALUES ({marks})", itertools.chain([first], rows)
        )

    def _types_of(self, table: str, columns: Sequence[str]) -> list[str]:
        """PostgreSQL: the catalog's type of each of `columns` of `table` (in the search
        path), as the table really is, whatever layout made it."""
        known = self._column_types.get(table)
        if known is None or any(column not in known for column in columns):
            known = self._column_types[table] = {
                name: type_name
                for name, type_name in self.execute(
                    "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
                    "WHERE attrelid = to_regclass(?) AND attnum > 0 AND NOT attisdropped",
                    (table,),
                ).fetchall()
            }
        return [known[column] for column in columns]

    def analyze(self, tables: Sequence[str]) -> None:
        """Fresh planner statistics for `tables` on PostgreSQL, outside any transaction:
        autovacuum would get there, but only after the next commands planned against row counts
        a large load left far behind. SQLite keeps no statistics unless ANALYZE ran once.

        The largest table is analyzed on a second connection while this one analyzes the rest:
        a server backend analyzes on one CPU, and a load's two largest tables took as long side
        by side as the larger alone (`jobs` and `job_keys` at 1.2M jobs: 0.43 and 0.30 s in
        turn, 0.44 s together). Where no second connection can be had, this one does it all."""
        if not (self.config.is_postgres and tables):
            return
        largest = self._largest(tables) if len(set(tables)) > 1 else None
        if largest is None:
            self.execute(f"ANALYZE {', '.join(tables)}")
            return
        beside = _AnalyzeBeside(self.config, largest)
        self.execute(f"ANALYZE {', '.join(t for t in tables if t != largest)}")
        if not beside.done():
            self.execute(f"ANALYZE {largest}")

    def _largest(self, tables: Sequence[str]) -> str | None:
        """PostgreSQL: the one of `tables` with the most pages (an ANALYZE reads a sample of
        them), or None if none exists."""
        rows = self.rows(
            "SELECT t FROM unnest(?::text[]) AS t WHERE to_regclass(t) IS NOT NULL "
            "ORDER BY pg_relation_size(to_regclass(t)) DESC LIMIT 1",
            (list(tables),),
        )
        return str(rows[0][0]) if rows else None

    def outgrown_statistics(self, tables: Sequence[str]) -> list[str]:
        """Of `tables`, those on PostgreSQL that have grown by the server's
        autovacuum_analyze_scale_factor (a tenth, by default) since their statistics were
        taken, or that have none: the rule by which autovacuum would analyze them, measured
        in pages against the size the statistics saw (pg_class.relpages, which a VACUUM sets
        too, with the row count), so that loads too small to count one by one still add up.
        None on SQLite, which keeps no statistics unless ANALYZE ran once."""
        if not self.config.is_postgres or not tables:
            return []
        grown = {
            name
            for (name,) in self.rows(
                "SELECT t FROM unnest(?::text[]) AS t JOIN pg_class c ON c.oid = to_regclass(t) "
                "WHERE pg_relation_size(c.oid) / current_setting('block_size')::float8 >= "
                "c.relpages * (1 + current_setting('autovacuum_analyze_scale_factor')::float8)",
                (list(tables),),
            )
        }
        return [name for name in tables if name in grown]

    def duplicate_key_errors(self) -> tuple[type[BaseException], ...]:
        """What a row whose key is already there raises (insert_rows)."""
        if self.config.is_postgres:
            import psycopg

            return (psycopg.errors.UniqueViolation,)
        return (sqlite3.IntegrityError,)

    @contextmanager
    def savepoint(self, name: str) -> Iterator[None]:
        """A nested transaction inside the open one: an error inside undoes only what it did
        (on PostgreSQL the transaction stays usable), and is re-raised."""
        self.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            if self._in_transaction():  # see _rollback_if_open: the error that matters first
                self.execute(f"ROLLBACK TO SAVEPOINT {name}")
            raise
        self.execute(f"RELEASE SAVEPOINT {name}")

    @contextmanager
    def overlap(self) -> Iterator[None]:
        """On PostgreSQL, the statements sent inside the block run on the server while this
        process goes on (psycopg's pipeline mode): their results, and any error, come when a
        read inside the block needs them or when it ends. Meant for writes followed by
        computing (a read in the block waits for every statement before it, and COPY may not
        run in it). On SQLite, which runs in this process, the block runs as it is."""
        if not self.config.is_postgres:
            yield
            return
        with self.raw.pipeline():
            yield

    def query(
        self, sql: str, params: Sequence[Any] = (), replan: bool = False
    ) -> list[dict[str, Any]]:
        cur = self.execute(sql, params, replan)
        rows = cur.fetchall()  # first: in an overlap block the description comes with the rows
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in rows]

    def rows(
        self, sql: str, params: Sequence[Any] = (), binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows as tuples, in the SELECT's column order: for reads of a row per association
        on every update, where building a dict per row (query) cost more than the read.

        `binary` (execute's): for such a read of numbers, which the server then sends without
        formatting each as text, nor psycopg parsing it back (10,000 rows of association_table,
        median of 7: 14.5-17.9 -> 7.4-11.1 ms; of a checkpoint: 37-41 -> 27-35 ms)."""
        return list(self.execute(sql, params, binary=binary).fetchall())

    @contextmanager
    def stream_rows(
        self, sql: str, params: Sequence[Any] = (), size: int = STREAM_BATCH_ROWS
    ) -> Iterator[Iterator[tuple[Any, ...]]]:
        """The rows as tuples, fetched `size` at a time, for a read of every job: a Slurm
        site's whole reading goes through them all, and fetched at once 1.4 million took
        500 MB (10 million would take several GB). PostgreSQL streams them from the server in
        chunks (libpq's chunked rows mode). Use the connection for nothing else inside the
        block: on leaving it, a stream not read to its end is cancelled, so that an error
        while reading leaves the connection free for the ROLLBACK."""
        rows = self._stream(sql, params, size, named=False)
        try:
            yield rows
        finally:
            rows.close()

    @contextmanager
    def stream_query(
        self, sql: str, params: Sequence[Any] = (), size: int = STREAM_BATCH_ROWS
    ) -> Iterator[Iterator[dict[str, Any]]]:
        """query()'s rows (dicts by column name), streamed as stream_rows streams its tuples:
        for a listing of every job, where a dict per row costs little beside printing it."""
        rows = self._stream(sql, params, size, named=True)
        try:
            yield rows
        finally:
            rows.close()

    def _stream(
        self, sql: str, params: Sequence[Any], size: int, named: bool
    ) -> Generator[Any, None, None]:
        if self.config.is_postgres:
            from psycopg import pq, rows

            # Chunks need libpq 17 (psycopg's binary wheel brings its own); an older one
            # streams a row at a time.
            chunk = size if pq.version() >= 170000 else 1
            factory = rows.dict_row if named else rows.tuple_row
            with self.raw.cursor(row_factory=factory) as cur:
                yield from cur.stream(self._sql(sql), tuple(params), size=chunk)
            return
        cur = self.raw.execute(sql, tuple(params))
        names = [d[0] for d in cur.description] if named else []
        while batch := cur.fetchmany(size):
            if named:
                yield from (dict(zip(names, row, strict=True)) for row in batch)
            else:
                yield from batch

    @contextmanager
    def transaction(
        self, first: Sequence[str] = (), wait: bool = True, then: str | None = None
    ) -> Iterator[Connection]:
        """One write transaction; SQLite takes the write lock at BEGIN so that concurrent
        catch-ups queue instead of failing on a lock upgrade. `first`: parameterless statements
        that open it (the writers' lock), on PostgreSQL sent with the BEGIN in one round trip.
        Without `wait`, WritersBusy at once where SQLite's BEGIN finds another writer, or where
        `then`, a query run after the BEGIN, answers false (PostgreSQL's try of a lock)."""
        try:
            if self.config.is_postgres:
                self.raw.execute(";\n".join(("BEGIN", *first)))
                if then is not None and not self.execute(then).fetchone()[0]:
                    raise WritersBusy("another writer holds the ledger")
            elif wait:
                self.execute("BEGIN IMMEDIATE")
                self.run_statements(first)
            else:
                self._begin_unless_busy()
                self.run_statements(first)
            yield self
            self.execute("COMMIT")
        except BaseException:
            self._rollback_if_open()
            raise
        finally:
            self.inserted.clear()

    def _begin_unless_busy(self) -> None:
        """SQLite's BEGIN IMMEDIATE without waiting for another writer to end."""
        (waits_ms,) = self.execute("PRAGMA busy_timeout").fetchone()
        self.execute("PRAGMA busy_timeout = 0")
        try:
            self.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) and "busy" not in str(err):
                raise
            raise WritersBusy("another writer holds the ledger") from None
        finally:
            self.execute(f"PRAGMA busy_timeout = {int(waits_ms)}")

    def _rollback_if_open(self) -> None:
        """Roll back what is still open: SQLite ends a transaction by itself on some errors
        (SQLITE_FULL among them) and a broken PostgreSQL connection has none left; a ROLLBACK
        then would fail and hide the error that matters."""
        if self._in_transaction():
            self.execute("ROLLBACK")

    def _in_transaction(self) -> bool:
        if self.config.is_postgres:
            from psycopg import pq

            status = self.raw.info.transaction_status
            return status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)
        return bool(self.raw.in_transaction)

    def close(self) -> None:
        self.raw.close()


class _AnalyzeBeside:
    """ANALYZE of one PostgreSQL table on a connection of its own, in a thread, started at
    once (Connection.analyze)."""

    def __init__(self, config: StoreConfig, table: str) -> None:
        import threading

        self.error: BaseException | None = None
        self.opened = False
        self._thread = threading.Thread(target=self._run, args=(config, table), daemon=True)
        self._thread.start()

    def _run(self, config: StoreConfig, table: str) -> None:
        try:
            # Once: a server at its limit of connections answers at once, and this one is
            # only worth having if it comes before the other connection's work is done.
            conn = Connection(config, attempts=1)
        except Exception:  # noqa: BLE001 -- none to spare: done() says so, and the caller's does it
            return
        self.opened = True
        try:
            conn.execute(f"ANALYZE {table}")
        except BaseException as err:  # noqa: BLE001 -- raised again in the caller's thread
            self.error = err
        finally:
            conn.close()

    def done(self) -> bool:
        """Whether the table was analyzed; its error, if any, raised here."""
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.opened


@contextmanager
def scratch_sqlite(purpose: str) -> Iterator[Connection]:
    """A SQLite database in a temporary file that nothing else reads and nobody keeps (verify's
    and doctor's rebuild of the read models), removed afterwards. On disk rather than in
    memory: it holds a row per job, and a process's memory should not grow with the jobs held.
    Written without a journal or waits for the disk."""
    try:
        with tempfile.TemporaryDirectory(prefix=f"fairledger-{purpose}-") as folder:
            path = os.path.join(folder, "scratch.db")
            scratch = Connection(StoreConfig(kind="sqlite", path=path))
            try:
                scratch.execute("PRAGMA journal_mode = OFF")
                scratch.execute("PRAGMA synchronous = OFF")
                yield scratch
            finally:
                scratch.close()
    except OSError as err:
        raise no_room(err) from None
    except sqlite3.OperationalError as err:
        if "full" not in str(err):  # SQLITE_FULL: "database or disk is full"
            raise
        raise no_room(err) from None


def sqlite_connect(path: str) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) that waits for the write lock,
    capped by the fault-injection knob when it is set (see the module's docstring): a disk
    holds files, so the in-memory databases of verify and as-of are never capped."""
    raw = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_SECONDS, isolation_level=None)
    raw.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_SECONDS * 1000}")
    # The pragma reads the schema: a file this user cannot read is told by the first read
    # (event_table_exists), in words that say what to change.
    with contextlib.suppress(sqlite3.OperationalError):
        raw.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    max_pages = os.environ.get(SQLITE_MAX_PAGES_ENV, "")
    if max_pages and path != ":memory:":
        if not max_pages.isdigit():
            raw.close()
            raise InvalidValue(f"{SQLITE_MAX_PAGES_ENV}={max_pages!r}: not a number of pages")
        raw.execute(f"PRAGMA max_page_count = {int(max_pages)}")
    return raw


def postgres_admin_connect(config: StoreConfig, attempts: int = CONNECT_ATTEMPTS) -> Any:
    """An autocommit psycopg connection; a server that cannot be reached within the connect
    timeout (all `attempts` together) is one StoreUnavailable line."""
    import psycopg

    deadline = time.monotonic() + connect_timeout()
    backoff = FIRST_BACKOFF
    for attempt in range(1, attempts + 1):
        # libpq counts whole seconds and treats anything under 2 as 2.
        remaining = max(2, math.ceil(deadline - time.monotonic()))
        try:
            return psycopg.connect(
                host=config.host,
                port=config.port,
                user=config.user,
                password=config.password or None,
                dbname=config.dbname,
                autocommit=True,
                connect_timeout=remaining,
            )
        except psycopg.OperationalError as err:
            transient = getattr(err, "sqlstate", None) in _TRANSIENT_SQLSTATES
            if not transient or attempt == attempts:
                raise StoreUnavailable(_unreachable(config, err, attempt)) from None
            if time.monotonic() + backoff >= deadline:
                raise StoreUnavailable(_unreachable(config, err, attempt)) from None
            time.sleep(backoff)
            backoff *= 2
    raise AssertionError("unreachable")  # the loop returns or raises


def _unreachable(config: StoreConfig, err: Exception, attempts: int) -> str:
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    # libpq: 'connection failed: connection to server at "h", port p failed: REASON' then
    # hints; the URL we print names the server already.
    reason = lines[0].rsplit("failed: ", 1)[-1] if lines else type(err).__name__
    reason = reason.removeprefix("FATAL:").strip()
    tries = f" (after {attempts} attempts)" if attempts > 1 else ""
    return f"cannot connect to {config.describe()}: {reason}{tries}"


def bound_connection_waits(recorder: Any, config: StoreConfig) -> None:
    """Bound how long the eventsourcing library waits on a lost server: it retries each read
    and append 10 times, 0.2 s apart, each attempt waiting its pool's timeout (30 s by
    default: four minutes of silence). Each attempt's wait becomes a tenth of what remains of
    the connect timeout, and the pool's own connects get the same limit as ours."""
    if not config.is_postgres or isinstance(recorder.datastore.pool, SharedConnectionPool):
        return
    total = connect_timeout()
    datastore = recorder.datastore
    datastore.pool.timeout = max(0.3, (total - 2.0) / 10)
    if isinstance(datastore.pool.kwargs, dict):
        datastore.pool.kwargs["connect_timeout"] = max(2, math.ceil(total))


class SharedConnectionPool:
    """Stands in for the eventsourcing library's connection pool on PostgreSQL: it lends the
    command's one connection (`lend` returns it, connecting on first use), so a command opens
    one connection instead of one for each of the library's recorders and of ours. Its reads
    made inside our write transaction see that transaction, under the writers' lock: the state
    a command validates against is the one its events extend.

    The library's rows are dictionaries, ours tuples: the connection's row factory is switched
    for the length of each loan (one thread; the library fetches everything inside it). Its
    cursors fetch in binary during a loan (_binary_cursor). A lost connection is not replaced:
    the library's retries then fail at once, and the command fails as ours would."""

    def __init__(self, lend: Callable[[], Connection]) -> None:
        self.lend = lend
        self.timeout = 0.0  # what bound_connection_waits would set on the library's own pool
        self.kwargs: dict[str, Any] = {}

    def open(self, wait: bool = False, timeout: float = 0.0) -> None:
        """Nothing to open: the connection comes with the first loan."""

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        from psycopg.rows import dict_row

        raw = self.lend().raw
        factory, cursors = raw.row_factory, raw.cursor_factory
        raw.row_factory = dict_row
        raw.cursor_factory = _binary_cursor()
        try:
            yield raw
        finally:
            raw.row_factory = factory
            raw.cursor_factory = cursors

    def close(self) -> None:
        """The connection is the ledger's to close, not the library's."""

    def __enter__(self) -> SharedConnectionPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@cache
def _binary_cursor() -> type[Any]:
    """A psycopg cursor that fetches its results in binary. The library's rows carry each
    event's state as bytea, which the text form sends as hex and psycopg decodes again: a Site
    snapshot of 1.7 MB (10,000 associations) came in 13-16 ms as text and 2.5-3 ms in binary,
    and a rebuild's read of 11,908 events (291 MB) took 1.5-1.8 s against 0.5 s. Every column
    the library reads (bigint, uuid, text, bytea) loads to the same Python type either way."""
    import psycopg
    from psycopg.pq import Format

    class _BinaryCursor(psycopg.Cursor):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.format = Format.BINARY

    return _BinaryCursor


class SharedSQLitePool:
    """SharedConnectionPool's counterpart on SQLite: the library's recorders read through the
    command's one connection, so a command opens its file once instead of twice (each new
    connection reads the whole schema again), and the library's reads made inside our write
    transaction see that transaction, as on PostgreSQL.

    The library wraps each read in BEGIN ... ROLLBACK. Each of its reads is one statement, so
    here it runs alone: inside our transaction (under the writers' lock) it joins it and leaves
    it open, whatever happens, since the transaction and its outcome are ours; outside one it
    is a transaction of its own. The library writes only outside our transactions (the
    snapshots after a commit), in its own BEGIN ... COMMIT. Its rows are sqlite3.Row, ours
    tuples: the row factory is switched for the length of each loan, and the library fetches
    everything inside it."""

    def __init__(self, lend: Callable[[], Connection]) -> None:
        self.lend = lend

    def get_connection(self, timeout: float | None = None, is_writer: bool | None = None) -> Any:
        return _LentSQLite(self.lend().raw)

    def put_connection(self, conn: Any) -> None:
        """Nothing to give back: the connection stays the ledger's."""

    def close(self) -> None:
        """The connection is the ledger's to close, not the library's."""


class _LentSQLite:
    """What the library's SQLite datastore asks of a pooled connection: `transaction()`."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[Any]:
        from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor

        if commit and self.raw.in_transaction:
            # Our own code writes inside our transactions; a library write there would commit
            # or roll back what is not its own.
            raise RuntimeError("the event store library wrote inside a command's write")
        factory = self.raw.row_factory
        self.raw.row_factory = sqlite3.Row
        try:
            if commit:
                with SQLiteConnection(self.raw, max_age=None).transaction(commit=True) as own:
                    yield own
                return
            cursor = self.raw.cursor()
            try:
                yield SQLiteCursor(cursor)
            finally:
                cursor.close()
        finally:
            self.raw.row_factory = factory


# Every composite type the library has described, by its description: one object for each.
_TYPE_INFOS: dict[tuple[Any, ...], Any] = {}
# The description last fetched for a type, by server, database and qualified name.
_FETCHED: dict[tuple[str, int, str, str], Any] = {}


def defer_type_adapters(datastore: Any, store: StoreConfig) -> Callable[[], None]:
    """Make the library's PostgreSQL `datastore` (of `store`) register the adapters of its
    composite types only when asked through the function returned, and with one CompositeInfo
    per distinct type in this process.

    When: the library registers them as each recorder is built, a catalog query and psycopg's
    registration on every opening, about 0.5 ms. Only its own writes use them (it writes
    nothing but snapshots here; our events go in through log_tables), so the recorders that
    write call the function first (`registered_before_writes`).

    Once: the library fetches a new description each time, and psycopg builds new adapter
    classes for each new object (its builders are cached by the object) and keeps them: a
    process that opens many ledgers (a server, a test run) grows without end, and each
    registration gets slower as they pile up (0.2 ms at first, 0.7 ms after 2,000). A type
    this process has described already is looked up by name alone (`to_regtype`, about 0.1 ms,
    against about 0.5 ms for the description's catalog query on a warm session): the same OID
    is the same type, since the library never alters it in place. A type made again (a schema
    dropped and made anew) has another OID and is described afresh.

    The registration is the library's own `register_type_adapters` (eventsourcing 9.5.6,
    pinned), but for how the description is found."""
    from psycopg.rows import tuple_row
    from psycopg.types.composite import CompositeInfo, register_composite

    def described(conn: Any, name: str) -> Any:
        qualified = f"{datastore.schema}.{name}"
        key = (store.host, store.port, store.dbname, qualified)
        known = _FETCHED.get(key)
        if known is not None:
            with conn.cursor(row_factory=tuple_row) as cur:
                row = cur.execute("SELECT to_regtype(%s)::oid", (qualified,)).fetchone()
            oid = row[0] if row is not None else None
            if oid is None:
                return None
            if oid == known.oid:
                return known
        fetched = CompositeInfo.fetch(conn, qualified)
        if fetched is None:
            return None
        info = _FETCHED[key] = _TYPE_INFOS.setdefault(_description(fetched), fetched)
        return info

    def register_type_adapters() -> None:
        names = [n for n in datastore.db_type_names if n not in datastore.psycopg_type_adapters]
        if not names:
            return
        with datastore.get_connection() as conn:
            for name in names:
                info = described(conn, name)
                if info is None:
                    continue
                register_composite(info, conn)
                datastore.psycopg_type_adapters[name] = info
                datastore.psycopg_python_types[name] = info.python_type

    datastore.register_type_adapters = lambda: None
    return register_type_adapters


def registered_before_writes(recorder: Any, register: Callable[[], None]) -> None:
    """The library's `recorder` registers its types (`register`, from defer_type_adapters)
    before it writes: a cursor takes its connection's adapters when it is made, so they must
    be there before the library's insert makes its own."""
    insert_events = recorder.insert_events

    def registered_first(stored_events: Any, **kwargs: Any) -> Any:
        register()
        return insert_events(stored_events, **kwargs)

    recorder.insert_events = registered_first


def _description(info: Any) -> tuple[Any, ...]:
    return (
        info.name,
        info.oid,
        info.array_oid,
        tuple(info.field_names),
        tuple(info.field_types),
    )


def is_permission_error(err: BaseException) -> bool:
    """Whether the store refused `err`'s statement for lack of a privilege (a reader's role on
    PostgreSQL, a read-only file on SQLite)."""
    if isinstance(err, sqlite3.OperationalError):
        return "readonly" in str(err) or "read-only" in str(err)
    # 42501: a role without the privilege; 25006: a read-only transaction (a hot standby, or
    # a session with default_transaction_read_only), which may read but never write.
    return getattr(err, "sqlstate", None) in ("42501", "25006")


def ensure_schema(
    config: StoreConfig, group_readable: bool = False, conn: Connection | None = None
) -> None:
    """The place for a new ledger: its PostgreSQL schema (through `conn` when given), or its
    SQLite file, created 0600 (0640 with `group_readable`) whatever the umask, since the log
    holds every user's usage. An existing file keeps its mode."""
    if config.is_postgres:
        ddl = f'CREATE SCHEMA IF NOT EXISTS "{config.schema}"'
        if conn is not None:
            conn.raw.execute(ddl)
            return
        with postgres_admin_connect(config) as raw:
            raw.execute(ddl)
        return
    mode = SQLITE_GROUP_READABLE_MODE if group_readable else SQLITE_FILE_MODE
    try:
        # Missing parent directories are created, as flux-accounting's create-db does.
        os.makedirs(os.path.dirname(config.path) or ".", exist_ok=True)
        fd = os.open(config.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    except FileExistsError:
        return
    except OSError as err:
        # A read-only or unwritable directory, a file where a directory should be, a full disk.
        where = err.filename or config.path
        raise StoreUnavailable(
            f"cannot create the ledger at {config.describe()}: {where}: {err.strerror or err}"
        ) from None
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def event_table_exists(config: StoreConfig, conn: Connection | None = None) -> bool:
    """Whether the event log's table is there, checked without creating anything: through
    `conn` when given (the command's one connection; on SQLite opened only once the file is
    known to exist, see sqlite_file_exists), else a connection of its own."""
    if config.is_postgres:
        query = (
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name = 'ledger_events'"
        )
        if conn is not None:
            return conn.raw.execute(query, (config.schema,)).fetchone() is not None
        with postgres_admin_connect(config) as raw:
            return raw.execute(query, (config.schema,)).fetchone() is not None
    if not sqlite_file_exists(config):
        return False
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stored_events'"
    try:
        if conn is not None:
            return conn.raw.execute(query).fetchone() is not None
        lite = sqlite3.connect(config.path)
        try:
            return lite.execute(query).fetchone() is not None
        finally:
            lite.close()
    except sqlite3.OperationalError as err:
        raise StoreUnavailable(_sqlite_unreadable(config, err)) from None


def sqlite_file_exists(config: StoreConfig) -> bool:
    """Whether a SQLite ledger's file is there: a connection to a missing file would create
    it (with the umask's mode, not create-db's 0600), so none is opened before this holds."""
    return os.path.exists(config.path)


def _sqlite_unreadable(config: StoreConfig, err: sqlite3.OperationalError) -> str:
    """Why a SQLite ledger cannot even be read, in words that say what to change: SQLite's own
    messages ("attempt to write a readonly database" for a read) do not."""
    where = f"cannot read the ledger at {config.describe()}"
    if not os.access(config.path, os.R_OK):
        return f"{where}: permission denied"
    if is_permission_error(err):
        # A WAL-mode database is read through its -wal and -shm files, which SQLite creates
        # beside it when absent: a reader that may not write the directory cannot.
        directory = os.path.dirname(config.path)
        return (
            f"{where}: SQLite must create its -wal and -shm files in {directory}, which this "
            "user may not write (give the user write access to the directory)"
        )
    return f"{where}: {err}"
