"""The suite's PostgreSQL copies of a template (tests/templates.py): a copy kept for the next test
holds exactly what a replayed copy holds, and a copy its test changed beyond its rows (DDL, a
GRANT, planner statistics) is dropped instead of kept."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests import templates
from tests.conftest import PG_BASE, REQUIRE_PG, T0, Store, _pg_reachable
from tests.templates import built, drop_schema


def _site(store: Store) -> None:
    store.run("create-db")
    store.run("add-bank", "root", "1")
    store.run("add-bank", "--parent-bank", "root", "A", "1")
    store.run("add-user", "--username", "alice", "--userid", "1001", "--bank", "A")


@pytest.fixture
def admin() -> Iterator[psycopg.Connection[Any]]:
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_BASE}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_BASE}: {problem}")
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        yield conn


@pytest.fixture
def schemas() -> Iterator[list[str]]:
    """Names for test schemas, each dropped at the end whatever became of it."""
    names = [f"t_{uuid.uuid4().hex[:12]}" for _ in range(3)]
    yield names
    for name in names:
        drop_schema(PG_BASE, name)


def _copy(schema: str) -> Store:
    store = Store("postgres", f"{PG_BASE}?schema={schema}")
    built(store, _site)
    return store


def _template() -> templates.PgTemplate:
    (found,) = [
        source
        for key, (source, _value) in templates._TEMPLATES.items()
        if key[0] == "postgres" and key[2] == _site.__qualname__ and key[1] == __name__
    ]
    assert isinstance(found, templates.PgTemplate)
    return found


def _contents(admin: psycopg.Connection[Any], schema: str) -> dict[str, Any]:
    """Every table's rows in the order a scan returns them, and the log's sequence."""
    tables = [
        name
        for (name,) in admin.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace "
            "AND relkind = 'r' ORDER BY relname",
            (schema,),
        )
    ]
    out: dict[str, Any] = {
        t: admin.execute(f'SELECT * FROM "{schema}"."{t}"').fetchall() for t in tables
    }
    out["sequence"] = admin.execute(
        f'SELECT last_value, is_called FROM "{schema}".ledger_events_notification_id_seq'
    ).fetchone()
    return out


ATTEMPTS = 3


def _ddl_mark() -> int:
    """The DDL log's newest entry, as a copy records it (the fixtures' connection installs the
    log when it is first made)."""
    return templates._ddl_mark(templates._admin(PG_BASE))


def _disturbed(admin: psycopg.Connection[Any], mark: int) -> bool:
    """Whether DDL that names no schema (a GRANT, ALTER DEFAULT PRIVILEGES: the other test
    process may be running tests/cli/test_roles.py) came after `mark`: it counts for every
    schema, so no copy made before it is kept, rightly. A test of keeping runs again then."""
    row = admin.execute(
        f"SELECT EXISTS (SELECT 1 FROM {templates._DDL_LOG} WHERE id > %s AND schema_name = '*')",
        (mark,),
    ).fetchone()
    return bool(row and row[0])


def _fresh(schemas: list[str], count: int) -> list[str]:
    """`count` new schema names, dropped at the end with the fixture's."""
    names = [f"t_{uuid.uuid4().hex[:12]}" for _ in range(count)]
    schemas.extend(names)
    return names


def _exists(admin: psycopg.Connection[Any], schema: str) -> bool:
    found = admin.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
    return found.fetchone() is not None


def test_a_kept_copy_holds_what_a_replayed_copy_holds(
    admin: psycopg.Connection[Any], schemas: list[str]
) -> None:
    for attempt in range(ATTEMPTS):
        names, mark = _fresh(schemas, 2), _ddl_mark()
        first = _copy(names[0])
        template = _template()
        spare = len(template.spare)
        replayed = _contents(admin, names[0])
        first.run("add-bank", "--parent-bank", "root", "B", "2")
        first.run("add-user", "--username", "bob", "--userid", "1002", "--bank", "B")
        drop_schema(PG_BASE, names[0])
        assert not _exists(admin, names[0])
        kept = len(template.spare) == spare + 1  # under a spare name
        if kept or attempt == ATTEMPTS - 1 or not _disturbed(admin, mark):
            break
    assert kept

    second = _copy(names[1])
    assert len(template.spare) == spare  # the kept copy, renamed
    assert _contents(admin, names[1]) == replayed
    # The log goes on from the template's last event, as in a replayed copy.
    second.run("add-bank", "--parent-bank", "root", "C", "1", now=T0 + 1)
    position = admin.execute(f'SELECT max(notification_id) FROM "{names[1]}".ledger_events')
    assert position.fetchone()[0] == replayed["sequence"][0] + 1
    second.run("verify", now=None)  # exit 0: the chain and the read models hold


@pytest.mark.parametrize(
    "change",
    [
        'CREATE INDEX ON "{schema}".jobs (cluster)',
        'GRANT USAGE ON SCHEMA "{schema}" TO PUBLIC',  # names no schema in the DDL log
        'ANALYZE "{schema}".bank_table',
    ],
)
def test_a_copy_changed_beyond_its_rows_is_dropped(
    admin: psycopg.Connection[Any], schemas: list[str], change: str
) -> None:
    _copy(schemas[0])
    template = _template()
    spare = len(template.spare)
    with psycopg.connect(PG_BASE, autocommit=True) as other:
        other.execute(change.format(schema=schemas[0]))
    drop_schema(PG_BASE, schemas[0])
    assert not _exists(admin, schemas[0])
    assert len(template.spare) == spare


def test_ddl_in_another_schema_leaves_a_copy_kept(
    admin: psycopg.Connection[Any], schemas: list[str]
) -> None:
    for attempt in range(ATTEMPTS):
        (copied, other_schema), mark = _fresh(schemas, 2), _ddl_mark()
        _copy(copied)
        template = _template()
        spare = len(template.spare)
        with psycopg.connect(PG_BASE, autocommit=True) as other:
            other.execute(
                f'CREATE SCHEMA "{other_schema}"; CREATE TABLE "{other_schema}".t (a int)'
            )
        drop_schema(PG_BASE, copied)
        kept = len(template.spare) == spare + 1
        if kept or attempt == ATTEMPTS - 1 or not _disturbed(admin, mark):
            break
    assert kept


def test_a_run_ending_while_this_one_runs_leaves_it_the_ddl_watch(
    admin: psycopg.Connection[Any],
) -> None:
    """Another run of the suite on the same database begins and ends while this one runs: it
    leaves the DDL triggers and their log, which this run's copies still rely on, and this
    run's share of the database stays held."""
    assert templates._watching(PG_BASE)  # this run installed them (the server's superuser)
    other = templates.start_run(PG_BASE)
    assert other is not None
    templates.finish_run(PG_BASE, other)
    triggers = admin.execute(
        "SELECT count(*) FROM pg_event_trigger WHERE evtname LIKE 'fairledger_tests_ddl_%'"
    ).fetchone()
    assert triggers == (2,)
    assert admin.execute("SELECT to_regclass(%s)", (templates._DDL_LOG,)).fetchone() != (None,)
    # Nobody can take the run lock alone while this run holds its share.
    alone = admin.execute(
        "SELECT pg_try_advisory_lock(hashtext(%s))", (templates._RUN_LOCK,)
    ).fetchone()
    assert alone == (False,)
