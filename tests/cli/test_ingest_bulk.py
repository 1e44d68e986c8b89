"""Ingest's bulk writes, on both stores: job rows and keys appended in bulk (COPY on
PostgreSQL), a jobs row already present taking the old ON CONFLICT path, fresh planner
statistics after a large load for the tables that outgrew theirs (a rebuild is one too; the
largest analyzed on a second connection), a fold's job batches inserted together, the period
totals of a transaction's job batches added once, before it commits, and a backfill's keys
inserted without a lookup on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.chain import record_digest
from ledger.errors import StoreUnavailable
from ledger.store import connections, log_tables
from ledger.store.application import Conflict, Ledger
from ledger.store.connections import Connection, StoreConfig, parse_store_url
from ledger.usecases import ingest as ingest_usecase
from ledger.usecases.session import Session
from projections.writers import runner, usage_tables
from tests.builders import job_record, stored_record
from tests.conftest import T0, Store


def _site(store: Store) -> None:
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", "1", "--parent-bank", "root")
    store.run("add-user", "-u", "alice", "-i", "5001", "-B", "physics")


def _jobs_file(tmp_path: Path, ids: range) -> Path:
    path = tmp_path / "jobs.jsonl"
    lines = [json.dumps(job_record(n, user="alice", ncores=2)) for n in ids]
    path.write_text("\n".join(lines) + "\n")
    return path


def _count(conn: Connection, sql: str) -> int:
    return int(conn.query(sql)[0]["n"])


def test_bulk_rows_and_keys_are_all_written(ledger_store: Store, tmp_path: Path) -> None:
    _site(ledger_store)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 2501))))
    conn = Connection(parse_store_url(ledger_store.url))
    try:
        assert _count(conn, "SELECT COUNT(*) AS n FROM jobs") == 2500
        assert _count(conn, "SELECT COUNT(DISTINCT position) AS n FROM jobs") == 3  # 1000 a batch
        assert _count(conn, "SELECT COUNT(*) AS n FROM job_keys") == 2500
        assert _count(conn, "SELECT SUM(njobs) AS n FROM period_totals") == 2500
    finally:
        conn.close()
    again = ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 2501))))
    assert "recorded 0, duplicate 2500" in again.stdout


def test_a_jobs_row_already_there_is_kept_not_doubled(ledger_store: Store, tmp_path: Path) -> None:
    """The bulk insert refuses a duplicate key; the rows then go in one by one, and a jobs
    row already there keeps its first record and is counted once."""
    _site(ledger_store)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 4))))
    config = parse_store_url(ledger_store.url)
    conn = Connection(config)
    ledger = Ledger.open(config, conn=conn)
    try:
        rows = conn.query("SELECT cluster, id, position FROM jobs ORDER BY id")
        assert [r["id"] for r in rows] == ["1", "2", "3"]
        totals = conn.query("SELECT njobs FROM period_totals")
        records = [stored_record(n, username="alice") for n in (3, 4)]
        conn.execute("BEGIN")
        usage_tables.insert_jobs(conn, ledger.state(), records, 999)
        after = conn.query("SELECT id, position FROM jobs ORDER BY id")
        njobs = _count(conn, "SELECT SUM(njobs) AS n FROM period_totals")
        conn.execute("ROLLBACK")  # leave the ledger as ingest made it (verify checks it)
        # Job 3 keeps the position that recorded it; only job 4 is new, and counted.
        assert [(r["id"], r["position"]) for r in after] == [
            *((r["id"], r["position"]) for r in rows),
            ("4", 999),
        ]
        assert njobs == 4
        assert conn.query("SELECT njobs FROM period_totals") == totals
    finally:
        ledger.close()
        conn.close()


def test_job_batches_inserted_together_keep_a_repeated_jobs_first_record(
    ledger_store: Store,
) -> None:
    """A fold's job batches go into `jobs` in one bulk insert. Where two of them hold the same
    job (a log written before the key index), that insert refuses it, the rows go in one by
    one in log order, and the first record of the job is the one kept."""
    _site(ledger_store)
    config = parse_store_url(ledger_store.url)
    conn = Connection(config)
    ledger = Ledger.open(config, conn=conn)
    try:
        first = [stored_record(n, username="alice") for n in (1, 2)]
        again = [stored_record(n, username="alice", ncores=1) for n in (2, 3)]
        conn.execute("BEGIN")
        usage_tables.insert_job_batches(conn, ledger.state(), [(first, 998), (again, 999)])
        rows = conn.rows("SELECT id, ncores, position FROM jobs ORDER BY id")
        conn.execute("ROLLBACK")  # leave the ledger as it was (verify checks it)
        assert rows == [("1", 512, 998), ("2", 512, 998), ("3", 1, 999)]
    finally:
        ledger.close()
        conn.close()


_JOB_ROWS = "SELECT * FROM jobs ORDER BY cluster, id"


def test_a_rebuild_inserts_its_job_batches_in_parts_of_a_bounded_size(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild's fold gathers the job batches it meets and inserts them together, but never
    more rows at once than runner.JOB_ROWS_PER_INSERT: the jobs and totals it leaves are those
    the ingest wrote."""
    _site(ledger_store)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 2501))))  # 1,000 a batch
    conn = Connection(parse_store_url(ledger_store.url))
    try:
        jobs, totals = conn.rows(_JOB_ROWS), _totals(conn, _STORED_TOTALS)
    finally:
        conn.close()
    inserted: list[list[int]] = []
    insert_job_batches = usage_tables.insert_job_batches

    def counted(conn: Connection, state: Any, batches: Any) -> None:
        inserted.append([len(records) for records, _ in batches])
        insert_job_batches(conn, state, batches)

    monkeypatch.setattr(usage_tables, "insert_job_batches", counted)
    monkeypatch.setattr(runner, "JOB_ROWS_PER_INSERT", 1500)
    ledger_store.run("rebuild")
    assert inserted == [[1000, 1000], [500]]
    conn = Connection(parse_store_url(ledger_store.url))
    try:
        assert conn.rows(_JOB_ROWS) == jobs
        assert _totals(conn, _STORED_TOTALS) == totals
    finally:
        conn.close()


def _table_stat(url: str, table: str, query: str) -> float:
    """`query`'s n for `table` of the store's schema (query's parameters: schema, table)."""
    conn = Connection(parse_store_url(url))
    try:
        return float(conn.query(query, (conn.config.schema, table))[0]["n"])
    finally:
        conn.close()


def _planned_rows(url: str, table: str) -> float:
    """PostgreSQL's row estimate for `table` (-1: never analyzed)."""
    return _table_stat(
        url,
        table,
        "SELECT reltuples AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
        "WHERE s.nspname = ? AND c.relname = ?",
    )


def _analyzed(url: str, table: str) -> float:
    """How many times an ANALYZE command ran on `table` (autovacuum's are counted apart: it
    may analyze or vacuum a table at any time, which is why the estimate alone cannot tell)."""
    return _table_stat(
        url,
        table,
        "SELECT analyze_count AS n FROM pg_stat_user_tables WHERE schemaname = ? AND relname = ?",
    )


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_a_large_load_refreshes_postgresql_statistics(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _site(ledger_store)
    monkeypatch.setattr(ingest_usecase, "BULK_LOAD_JOBS", 5)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 5))))
    assert _analyzed(ledger_store.url, "jobs") == 0  # 4 jobs: not a large load
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(5, 12))))
    for table in ("jobs", "job_keys"):
        assert _analyzed(ledger_store.url, table) == 1
        assert _planned_rows(ledger_store.url, table) == 11


_ANALYZED = ("jobs", "job_keys", "period_totals")


def _analyze_all(url: str) -> dict[str, float]:
    """How many more times each of _ANALYZED was analyzed by one Connection.analyze of them
    (the statistics are read once the connection has closed, which sends its counts)."""
    before = {table: _analyzed(url, table) for table in _ANALYZED}
    conn = Connection(parse_store_url(url))
    try:
        conn.analyze(list(_ANALYZED))
    finally:
        conn.close()
    return {table: _analyzed(url, table) - before[table] for table in _ANALYZED}


def _single_tries(monkeypatch: pytest.MonkeyPatch, refuse: bool) -> list[int]:
    """The PostgreSQL connections tried once only (Connection.analyze's second), as they are
    opened; with `refuse`, each is refused as a server at its limit of connections refuses."""
    admin_connect = connections.postgres_admin_connect
    tried: list[int] = []

    def watched(config: StoreConfig, attempts: int = connections.CONNECT_ATTEMPTS) -> Any:
        if attempts == 1:
            tried.append(attempts)
            if refuse:
                raise StoreUnavailable("FATAL: sorry, too many clients already")
        return admin_connect(config, attempts)

    monkeypatch.setattr(connections, "postgres_admin_connect", watched)
    return tried


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
@pytest.mark.parametrize("refuse", [False, True], ids=["beside", "refused"])
def test_an_analyze_refreshes_each_table_once_its_largest_on_a_second_connection(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refuse: bool
) -> None:
    """The largest table (`jobs`) is analyzed on a second connection, tried once, while the
    first analyzes the others; where the server refuses that connection (at its limit), the
    first analyzes the largest too. Either way every table asked for is analyzed, and once."""
    _site(ledger_store)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 2001))))
    tried = _single_tries(monkeypatch, refuse)
    assert _analyze_all(ledger_store.url) == {table: 1 for table in _ANALYZED}
    assert tried == [1]


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_large_loads_refresh_only_the_statistics_the_tables_have_outgrown(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By autovacuum's rule (a tenth of the size the statistics saw): a load that grows a
    table by less leaves them, and the next that takes the growth past it refreshes them."""
    _site(ledger_store)
    monkeypatch.setattr(ingest_usecase, "BULK_LOAD_JOBS", 5)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 3001))))
    for table in ("jobs", "job_keys"):
        assert _analyzed(ledger_store.url, table) == 1  # none yet: analyzed
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(3001, 3061))))  # 2% more
    for table in ("jobs", "job_keys"):
        assert _analyzed(ledger_store.url, table) == 1
        assert _planned_rows(ledger_store.url, table) == 3000
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(3061, 3661))))  # 22% since
    for table in ("jobs", "job_keys"):
        assert _analyzed(ledger_store.url, table) == 2
        assert _planned_rows(ledger_store.url, table) == 3660


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_a_rebuild_leaves_planner_statistics(ledger_store: Store, tmp_path: Path) -> None:
    """New tables have none until autovacuum gets to them; a rebuild's reads of every job
    would be planned as scans meanwhile."""
    _site(ledger_store)
    ledger_store.run("ingest", str(_jobs_file(tmp_path, range(1, 4))))
    assert _analyzed(ledger_store.url, "jobs") == 0  # 3 jobs: not a large load
    ledger_store.run("rebuild")
    assert _planned_rows(ledger_store.url, "jobs") == 3
    assert _planned_rows(ledger_store.url, "association_table") == 1


def _chunk(ids: range) -> tuple[list[dict[str, Any]], list[str]]:
    """Stored records of alice's jobs `ids` (a chunk of ingest's pass 1) and their digests,
    ending in two periods of a week's half-life."""
    records = [
        stored_record(
            n, userid=5001, username="alice", bank="physics", t_inactive=T0 - (n % 2) * 7 * 86400.0
        )
        for n in ids
    ]
    return records, [record_digest(r) for r in records]


_ORDER = " ORDER BY username, bank, period"
_STORED_TOTALS = "SELECT username, bank, period, charge_units, njobs FROM period_totals" + _ORDER
# The period totals the jobs rows add up to.
_JOBS_TOTALS = (
    "SELECT username, bank, period, SUM(charge_units) AS charge_units, COUNT(*) AS njobs "
    "FROM jobs GROUP BY username, bank, period" + _ORDER
)


def _totals(conn: Connection, sql: str) -> list[tuple[Any, ...]]:
    return [
        (r["username"], r["bank"], int(r["period"]), int(r["charge_units"]), int(r["njobs"]))
        for r in conn.query(sql)
    ]


def test_a_transactions_job_batches_add_their_period_totals_once_before_it_commits(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingest records a file's chunks in one transaction: their totals are added in one
    statement over every batch, before the commit, and match the jobs."""
    _site(ledger_store)
    ranges: list[tuple[int, int]] = []
    add_totals = usage_tables.add_totals

    def counted(conn: Connection, first: int, last: int) -> None:
        ranges.append((first, last))
        add_totals(conn, first, last)

    monkeypatch.setattr(usage_tables, "add_totals", counted)
    s = Session(ledger_store.url, None)
    try:
        outcomes = s.ledger.record_job_chunks(
            iter([_chunk(range(1, 1500)), _chunk(range(1500, 2500)), _chunk(range(2500, 2600))]),
            lambda outcome: outcome.span,
        )
        totals, expected = _totals(s.conn, _STORED_TOTALS), _totals(s.conn, _JOBS_TOTALS)
    finally:
        s.close()
    assert ranges == [(outcomes[0][0], outcomes[-1][1])]
    assert sum(n for *_, n in totals) == 2599
    assert totals == expected


def test_a_chunk_after_a_fresh_one_skips_its_lookup_and_a_logged_key_still_counts_as_one(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL, a chunk after one whose keys the log did not hold is recorded without
    looking its keys up; one that then holds a logged key (a duplicate, a conflict with the
    log, a repeat of an earlier chunk's job) is undone and looked up, and counted as a lookup
    counts it. SQLite looks every chunk up, and counts the same."""
    _site(ledger_store)
    lookups: list[int] = []
    known_keys = log_tables.known_keys

    def counted(conn: Connection, keys: Any) -> Any:
        lookups.append(len(keys))
        return known_keys(conn, keys)

    monkeypatch.setattr(log_tables, "known_keys", counted)
    s = Session(ledger_store.url, None)
    try:
        records, digests = _chunk(range(1, 11))
        first = s.ledger.record_jobs(records, digests=digests)
        lookups.clear()
        mixed = _chunk(range(300, 311))
        for record in (
            _chunk(range(5, 6))[0][0],
            {**_chunk(range(7, 8))[0][0], "ncores": 3},
            {**_chunk(range(150, 151))[0][0], "ncores": 3},
        ):
            mixed[0].append(record)
            mixed[1].append(record_digest(record))
        outcomes = s.ledger.record_job_chunks(
            iter(
                [_chunk(range(100, 200)), _chunk(range(200, 300)), mixed, _chunk(range(400, 500))]
            ),
            lambda outcome: (len(outcome.recorded), outcome.duplicate, outcome.conflicts),
        )
        records, digests = _chunk(range(495, 505))  # a transaction of its own, half logged
        overlap = s.ledger.record_jobs(records, digests=digests, expect_fresh=True)
        jobs = _count(s.conn, "SELECT COUNT(*) AS n FROM jobs")
        keys = _count(s.conn, "SELECT COUNT(*) AS n FROM job_keys")
    finally:
        s.close()
    # Looked up: the first chunk, the mixed one once its keys were refused, the one after it,
    # and the last transaction once its keys were refused.
    looked = [100, 14, 100, 10] if ledger_store.kind == "postgres" else [100, 100, 14, 100, 10]
    assert lookups == looked
    assert first.span is not None
    assert outcomes == [
        (100, 0, []),
        (100, 0, []),
        (11, 1, [Conflict(("cluster", "7"), first.span[0]), Conflict(("cluster", "150"), 0)]),
        (100, 0, []),
    ]
    assert (len(overlap.recorded), overlap.duplicate, overlap.conflicts) == (5, 5, [])
    assert jobs == keys == 326


# Values whose stored form a text COPY and a binary one could tell apart, if either rounded,
# wrapped or re-encoded anything.
_EDGE_ROWS = [
    ("ünïcode ✓ 'quoted'\t\\", 2**63 - 1, 2**31 - 1, 0.1 + 0.2),
    ("", -(2**63), -(2**31), 5e-324),
    (None, None, None, 1.7976931348623157e308),
    ("plain", 0, 0, -2.5e-7),
    ("int into a double", 1, 1, 1767225600),
]


def test_a_binary_copy_stores_what_a_text_copy_stores(store: Store) -> None:
    """insert_rows(binary=True) stores every value exactly as the text form does (on SQLite
    both are the same executemany)."""
    store.run("create-db")
    conn = Connection(parse_store_url(store.url))
    try:
        stored = {}
        for name, binary in (("as_text", False), ("as_binary", True)):
            with conn.transaction():
                conn.execute(
                    f"CREATE TABLE {name} (t TEXT, big BIGINT, small INTEGER, d DOUBLE PRECISION)"
                )
                conn.insert_rows(name, ("t", "big", "small", "d"), iter(_EDGE_ROWS), binary)
            stored[name] = [
                (t, big, small, None if d is None else float(d).hex())
                for t, big, small, d in conn.rows(f"SELECT t, big, small, d FROM {name}")
            ]
        assert stored["as_binary"] == stored["as_text"]
        assert stored["as_text"] == [
            (t, big, small, float(d).hex()) for t, big, small, d in _EDGE_ROWS
        ]
    finally:
        conn.close()


def test_a_job_whose_values_are_not_of_their_columns_types_is_stored_as_text(
    ledger_store: Store, tmp_path: Path
) -> None:
    """A record an older release wrote with its QOS under `extra`, as a number: the binary
    COPY refuses an int for the text column before the COPY ends, and the batch goes in as
    text, stored as every text COPY stored it."""
    _site(ledger_store)
    config = parse_store_url(ledger_store.url)
    conn = Connection(config)
    ledger = Ledger.open(config, conn=conn)
    try:
        record = stored_record(7, username="alice", extra={"qos": 5})
        conn.execute("BEGIN")
        usage_tables.insert_jobs(conn, ledger.state(), [record], 999)
        rows = conn.rows("SELECT id, qos, position FROM jobs")
        conn.execute("ROLLBACK")  # leave the ledger as it was (verify checks it)
        assert rows == [("7", "5", 999)]
    finally:
        ledger.close()
        conn.close()
