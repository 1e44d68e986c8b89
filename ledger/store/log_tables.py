"""The log's own tables, written only inside the writers' append transaction.

Beside the eventsourcing library's event table, the log keeps two tables of its own:
`event_hashes` (one link of the hash chain per event, see ledger.chain) and `job_keys` (every
recorded job's (cluster, id) with the digest of what it said and the position that recorded
it). Both are part of the log, not read models: they are never rebuilt, only extended, and the
store refuses to change them (ledger.store.append_only). `job_keys` is what makes ingest
exactly-once without trusting a read model: a key there is never appended again.

Every writer takes one lock per ledger before it reads the state it validates against and
before it takes the time it stamps (SQLite: the database's write lock from BEGIN IMMEDIATE;
PostgreSQL: a transaction-level advisory lock per schema). So writers are serialized, each sees
the others' committed events, and timestamps never decrease along the log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ledger.store.connections import Connection

if TYPE_CHECKING:  # imported where an event is built: a read's start-up needs none
    from eventsourcing.persistence import StoredEvent

EVENT_HASHES = "event_hashes"
JOB_KEYS = "job_keys"
LOG_TABLES = (EVENT_HASHES, JOB_KEYS)
JOB_KEY_COLUMNS = ("cluster", "id", "digest", "position")  # JOB_KEYS's, in order
PAGE = 200  # stored events read at a time when linking or indexing a backlog
LOCK_TIMEOUT_SECONDS = 60

_DDL = {
    EVENT_HASHES: f"""
        CREATE TABLE IF NOT EXISTS {EVENT_HASHES} (
            position BIGINT PRIMARY KEY,
            link TEXT NOT NULL
        )""",
    JOB_KEYS: f"""
        CREATE TABLE IF NOT EXISTS {JOB_KEYS} (
            cluster TEXT NOT NULL,
            id TEXT NOT NULL,
            digest TEXT NOT NULL,
            position BIGINT NOT NULL,
            PRIMARY KEY (cluster, id)
        )""",
}


def events_table(conn: Connection) -> str:
    return "ledger_events" if conn.config.is_postgres else "stored_events"


def snapshots_table(conn: Connection) -> str:
    return "ledger_snapshots" if conn.config.is_postgres else "stored_snapshots"


def _position(conn: Connection) -> str:
    return "notification_id" if conn.config.is_postgres else "rowid"


def locked(conn: Connection, wait: bool = True) -> AbstractContextManager[Connection]:
    """A write transaction that holds the writers' lock until it ends. Without `wait`,
    WritersBusy at once if another writer holds it."""
    if not wait:
        return conn.transaction(first=[], wait=False, then=_try_lock(conn))
    return conn.transaction(first=lock_statements(conn))


def _lock_key(conn: Connection) -> str:
    # The schema's name is checked to be letters, digits and _; quoted all the same.
    return f"fairledger:{conn.config.schema}".replace("'", "''")


def lock_statements(conn: Connection) -> list[str]:
    """What takes the writers' lock at a transaction's start: parameterless, so that they
    travel with its BEGIN."""
    if not conn.config.is_postgres:
        return []  # BEGIN IMMEDIATE (Connection.transaction) holds the database's write lock
    return [
        f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT_SECONDS}s'",
        f"SELECT pg_advisory_xact_lock(hashtext('{_lock_key(conn)}'))",
    ]


def _try_lock(conn: Connection) -> str | None:
    """The query that takes the writers' lock only if it is free, answering whether it did;
    None on SQLite, where a BEGIN IMMEDIATE that does not wait does the same."""
    if not conn.config.is_postgres:
        return None
    return f"SELECT pg_try_advisory_xact_lock(hashtext('{_lock_key(conn)}'))"


def missing_tables(conn: Connection) -> list[str]:
    if conn.config.is_postgres:
        found = conn.execute(
            "SELECT " + ", ".join("to_regclass(?)" for _ in LOG_TABLES), LOG_TABLES
        ).fetchone()
        return [name for name, oid in zip(LOG_TABLES, found, strict=True) if oid is None]
    present = {
        row["name"] for row in conn.query("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    return [name for name in LOG_TABLES if name not in present]


def create_tables(conn: Connection, names: Sequence[str]) -> None:
    statements = [_DDL[name] for name in names]
    if JOB_KEYS in names:
        # keys_through, on every first write of a process: a max over a million keys otherwise.
        statements.append(f"CREATE INDEX IF NOT EXISTS job_keys_position ON {JOB_KEYS} (position)")
    conn.run_statements(statements)


# PostgreSQL compresses a large state (a batch of 1,000 jobs is ~150 KB of JSON) as it stores
# it. Its default, pglz, cost 2.3 ms of the server's time an event (125,000 jobs: 292 ms of
# the ingest's inserts; lz4 56 ms, the table the same size, the ingest 6.12 -> 5.88 s).
STATE_COMPRESSION = "lz4"


def compress_states(conn: Connection) -> None:
    """On PostgreSQL built with lz4, the event and snapshot states stored from now on are
    compressed with it rather than pglz (states already stored keep theirs; both are read).
    A catalog change of the tables' creator: create-db makes it."""
    if not conn.config.is_postgres:
        return
    row = conn.execute(
        "SELECT ? = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'",
        (STATE_COMPRESSION,),
    ).fetchone()
    if not row or not row[0]:
        return  # a server built without lz4 offers pglz alone
    for table in (events_table(conn), snapshots_table(conn)):
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN state SET COMPRESSION {STATE_COMPRESSION}")


def insert_events(conn: Connection, stored: Sequence[Any]) -> list[int]:
    """Append stored events (eventsourcing StoredEvent) in order; their log positions."""
    table = events_table(conn)
    positions = []
    for event in stored:
        if conn.config.is_postgres:
            row = conn.execute(
                f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
                "VALUES (?, ?, ?, ?) RETURNING notification_id",
                (event.originator_id, event.originator_version, event.topic, event.state),
            ).fetchone()
            positions.append(int(row[0]))
        else:
            cursor = conn.execute(
                f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
                "VALUES (?, ?, ?, ?)",
                (_hex(event.originator_id), event.originator_version, event.topic, event.state),
            )
            positions.append(int(cursor.lastrowid))
    return positions


def _hex(originator_id: Any) -> str:
    return originator_id.hex if isinstance(originator_id, UUID) else UUID(str(originator_id)).hex


def newest_event(conn: Connection) -> StoredEvent | None:
    """The log's newest event as stored (its time is the clock's floor), in one query."""
    pos = _position(conn)
    row = conn.execute(
        f"SELECT originator_id, originator_version, topic, state FROM {events_table(conn)} "
        f"ORDER BY {pos} DESC LIMIT 1",
        binary=True,
    ).fetchone()
    if row is None:
        return None
    originator, version, topic, state = row
    from eventsourcing.persistence import StoredEvent

    return StoredEvent(
        originator_id=originator if isinstance(originator, UUID) else UUID(str(originator)),
        originator_version=int(version),
        topic=str(topic),
        state=_bytes(state),
    )


def head_position(conn: Connection) -> int:
    row = conn.query(f"SELECT MAX({_position(conn)}) AS p FROM {events_table(conn)}")[0]
    return int(row["p"] or 0)


def stream_version(conn: Connection, originator_id: UUID) -> int:
    key: Any = originator_id if conn.config.is_postgres else originator_id.hex
    row = conn.query(
        f"SELECT MAX(originator_version) AS v FROM {events_table(conn)} WHERE originator_id = ?",
        (key,),
    )[0]
    return int(row["v"] or 0)


# stored_after's start: after the newest position the key index holds (keys_through), asked in
# the first page's own query.
AFTER_KEYS = -1


def stored_after(
    conn: Connection, after: int, topic: str | None = None
) -> Iterator[tuple[int, str, int, str, bytes]]:
    """(position, originator hex, version, topic, state) of the events after `after` (or
    AFTER_KEYS), in log order, a page at a time; with `topic`, only those of that topic."""
    where = " AND topic = ?" if topic else ""
    pos = _position(conn)
    while True:
        keyed = after == AFTER_KEYS
        start = f"(SELECT COALESCE(MAX(position), 0) FROM {JOB_KEYS})" if keyed else "?"
        params = () if keyed else (after,)
        rows = conn.execute(
            f"SELECT {pos}, originator_id, originator_version, topic, state "
            f"FROM {events_table(conn)} WHERE {pos} > {start}{where} ORDER BY {pos} LIMIT {PAGE}",
            (*params, topic) if topic else params,
            binary=True,
        ).fetchall()
        for position, originator, version, row_topic, state in rows:
            yield int(position), _hex(originator), int(version), str(row_topic), _bytes(state)
        if len(rows) < PAGE:
            return
        after = int(rows[-1][0])


def _bytes(state: Any) -> bytes:
    # The library writes bytes; a hand edit may leave text, which must still hash (and differ).
    return state.encode("utf-8") if isinstance(state, str) else bytes(state)


def chain_head(conn: Connection) -> tuple[int, str]:
    from ledger.chain import GENESIS  # with hashlib, only where the chain is read or extended

    rows = conn.query(f"SELECT position, link FROM {EVENT_HASHES} ORDER BY position DESC LIMIT 1")
    return (int(rows[0]["position"]), str(rows[0]["link"])) if rows else (0, GENESIS)


def extend_chain(conn: Connection) -> tuple[int, str]:
    """Link every event after the chain's head (this transaction's, and those of a ledger
    written before the chain existed); the new head."""
    from ledger.chain import link

    head, previous = chain_head(conn)
    rows = []
    for position, originator, version, topic, state in stored_after(conn, head):
        previous = link(previous, position, originator, version, topic, state)
        head = position
        rows.append((position, previous))
        if len(rows) >= PAGE:
            conn.executemany(f"INSERT INTO {EVENT_HASHES} VALUES (?, ?)", rows)
            rows = []
    conn.executemany(f"INSERT INTO {EVENT_HASHES} VALUES (?, ?)", rows)
    return head, previous


# Parameters: the ids (an array), the cluster.
KEY_LOOKUP_POSTGRES = (
    "SELECT k.id, k.digest, k.position FROM unnest(CAST(? AS TEXT[])) AS w(id) "
    f"CROSS JOIN LATERAL (SELECT id, digest, position FROM {JOB_KEYS} "
    "WHERE cluster = ? AND id = w.id LIMIT 1) AS k"
)


def known_keys(
    conn: Connection, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, int]]:
    """Which of `keys` the log already holds: key -> (digest, position)."""
    by_cluster: dict[str, list[str]] = {}
    for cluster, job_id in keys:
        by_cluster.setdefault(cluster, []).append(job_id)
    found: dict[tuple[str, str], tuple[str, int]] = {}
    for cluster, ids in by_cluster.items():
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            if conn.config.is_postgres:
                # A key lookup per id, whatever the statistics say. `cluster = ? AND id =
                # ANY(?)` was planned, for a cluster newer than the statistics (which expect
                # no row of it), as a scan of every key of that cluster with the ids as a
                # filter: a first load of a cluster then grew with the square of its jobs
                # (0.2 s a lookup at a million keys; 1.25M sacct jobs into the 10M-job bench
                # ledger ran at 3,563 jobs/s). LIMIT 1 keeps the subquery a lookup per row,
                # and planning it each time keeps a plan made while the table was empty (a
                # scan of it per id) from outliving its first rows.
                rows = conn.query(KEY_LOOKUP_POSTGRES, (chunk, cluster), replan=True)
            else:
                marks = ", ".join("?" * len(chunk))
                rows = conn.query(
                    f"SELECT id, digest, position FROM {JOB_KEYS} "
                    f"WHERE cluster = ? AND id IN ({marks})",
                    (cluster, *chunk),
                )
            for row in rows:
                found[(cluster, str(row["id"]))] = (str(row["digest"]), int(row["position"]))
    return found


def insert_keys(conn: Connection, rows: Sequence[tuple[str, str, str, int]]) -> None:
    """(cluster, id, digest, position) rows; a key already there keeps its first record."""
    conn.executemany(
        f"INSERT INTO {JOB_KEYS} VALUES (?, ?, ?, ?) ON CONFLICT (cluster, id) DO NOTHING", rows
    )


def keys_through(conn: Connection) -> int:
    row = conn.query(f"SELECT MAX(position) AS p FROM {JOB_KEYS}")[0]
    return int(row["p"] or 0)
