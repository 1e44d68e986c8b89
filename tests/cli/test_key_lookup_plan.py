"""The exactly-once check looks each id up by its key on PostgreSQL, whatever the statistics
say: for a cluster they do not know yet, or a table they saw empty, the planner expects almost
no row, and an earlier form of the query was then planned as a scan of all the cluster's keys
(a first load of a cluster grew with the square of its jobs). The plan is checked, not timed."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ledger.store import log_tables
from ledger.store.connections import Connection, parse_store_url
from tests.templates import drop_schema


@pytest.fixture
def conn(server: str) -> Iterator[Connection]:
    # A schema of its own per case: the suite's workers may run two of them at once.
    schema = f"t_key_lookup_plan_{uuid.uuid4().hex[:8]}"
    connection = Connection(parse_store_url(f"{server}?schema={schema}"))
    connection.raw.execute(f'CREATE SCHEMA "{schema}"')
    try:
        log_tables.create_tables(connection, [log_tables.JOB_KEYS])
        yield connection
    finally:
        connection.raw.rollback()
        connection.close()
        drop_schema(server, schema)


def _add_keys(conn: Connection, cluster: str, ids: range) -> None:
    conn.insert_rows(
        log_tables.JOB_KEYS,
        log_tables.JOB_KEY_COLUMNS,
        [(cluster, str(n), f"d{n}", n) for n in ids],
    )


def _scans(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if plan.get("Relation Name") == log_tables.JOB_KEYS:
        yield plan
    for child in plan.get("Plans", []):
        yield from _scans(child)


def _lookup_scans(conn: Connection, cluster: str, ids: list[str]) -> list[dict[str, Any]]:
    sql = "EXPLAIN (FORMAT JSON) " + log_tables.KEY_LOOKUP_POSTGRES.replace("?", "%s")
    (row,) = conn.raw.execute(sql, (ids, cluster), prepare=False).fetchall()
    document = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return list(_scans(document[0]["Plan"]))


def _is_key_lookup(scan: dict[str, Any]) -> bool:
    condition = scan.get("Index Cond", "")
    return scan["Node Type"] in ("Index Scan", "Index Only Scan") and "id =" in condition


@pytest.mark.parametrize("analyzed_with", ["another cluster", "no row"])
def test_a_cluster_the_statistics_do_not_know_is_looked_up_by_key(
    conn: Connection, analyzed_with: str
) -> None:
    if analyzed_with == "another cluster":
        _add_keys(conn, "alpha", range(1, 2_001))
    conn.execute(f"ANALYZE {log_tables.JOB_KEYS}")
    _add_keys(conn, "beta", range(1, 20_001))
    ids = [str(n) for n in range(19_801, 20_301)]  # 200 of them recorded, 300 not
    scans = _lookup_scans(conn, "beta", ids)
    assert scans and all(_is_key_lookup(scan) for scan in scans), scans
    found = log_tables.known_keys(conn, [("beta", i) for i in ids])
    assert sorted(found, key=lambda k: int(k[1])) == [
        ("beta", str(n)) for n in range(19_801, 20_001)
    ]
    assert found[("beta", "19801")] == ("d19801", 19_801)


def test_the_lookup_is_planned_anew_each_time(conn: Connection) -> None:
    """Not a prepared statement whose plan, made while the table was empty (a scan per id),
    would stay in use as it grows: psycopg prepares a query after its fifth run."""
    conn.execute(f"ANALYZE {log_tables.JOB_KEYS}")
    for n in range(10):
        log_tables.known_keys(conn, [("beta", str(n))])
        _add_keys(conn, "beta", range(n * 100, n * 100 + 100))
    prepared = conn.raw.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    assert not [s for (s,) in prepared if "LATERAL" in s], prepared
