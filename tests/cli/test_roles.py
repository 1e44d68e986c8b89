"""PostgreSQL roles: `grant` makes readers, writers and admins; each can do its part and no more,
and the recorded actor is the session's role. Roles are cluster-wide: each test makes its own,
with a unique suffix, and drops them (and the schema's group roles) afterwards."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ledger.store.application import Ledger
from ledger.store.connections import parse_store_url
from ledger.store.roles import group_role
from tests.conftest import PG_URL, REQUIRE_PG, T0, Store, _pg_reachable

BASE = PG_URL.split("?")[0]


@dataclass
class Site:
    owner: Store
    schema: str
    reader: Store
    writer: Store
    admin: Store
    names: dict[str, str]


def _as(role: str, schema: str) -> Store:
    host = BASE.split("@", 1)[1] if "@" in BASE else BASE.split("//", 1)[1]
    return Store("postgres", f"postgresql://{role}@{host}?schema={schema}")


def _drop_role(conn: object, role: str) -> None:
    execute = conn.execute  # type: ignore[attr-defined]
    if execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        execute(f'REASSIGN OWNED BY "{role}" TO CURRENT_USER')
        execute(f'DROP OWNED BY "{role}"')
        execute(f'DROP ROLE "{role}"')


@pytest.fixture
def site() -> Iterator[Site]:
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {problem}")
    import psycopg

    suffix = uuid.uuid4().hex[:10]
    schema = f"t_{suffix}"
    names = {kind: f"fl_{kind}_{suffix}" for kind in ("reader", "writer", "admin")}
    groups = [group_role(schema, g) for g in ("admin", "writer", "reader")]
    owner = Store("postgres", f"{BASE}?schema={schema}")
    with psycopg.connect(BASE, autocommit=True) as conn:
        for role in names.values():
            conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        owner.run("create-db")
        owner.run("add-bank", "root", "1")
        owner.run("add-bank", "A", "1", "--parent-bank", "root")
        owner.run("add-user", "-u", "alice", "-B", "A", "-i", "1001")
        yield Site(
            owner,
            schema,
            _as(names["reader"], schema),
            _as(names["writer"], schema),
            _as(names["admin"], schema),
            names,
        )
    finally:
        with psycopg.connect(BASE, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            for role in [*names.values(), *groups]:
                _drop_role(conn, role)


def granted(site: Site) -> Site:
    result = site.owner.run(
        "grant",
        "--reader",
        site.names["reader"],
        "--writer",
        site.names["writer"],
        "--admin",
        site.names["admin"],
    )
    assert result.stdout.splitlines() == [
        f"granted {site.names['reader']}: fairledger_{site.schema}_reader",
        f"granted {site.names['writer']}: fairledger_{site.schema}_writer",
        f"granted {site.names['admin']}: fairledger_{site.schema}_admin",
    ]
    return site


JOB = json.dumps(
    {
        "id": 1,
        "username": "alice",
        "bank": "A",
        "t_run": T0 + 10,
        "t_inactive": T0 + 90,
        "nnodes": 1,
        "ncores": 1,
    }
)


def one_line(result: object) -> str:
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert stderr.count("\n") == 1 and stderr.startswith("fairledger: "), stderr
    assert "Traceback" not in stderr
    return stderr


def test_a_reader_reads_everything(site: Site) -> None:
    granted(site)
    reader = site.reader
    assert "alice" in reader.run("list-users").stdout
    assert (
        reader.run("view-bank", "root", "-t").stdout
        == site.owner.run("view-bank", "root", "-t").stdout
    )
    assert json.loads(reader.run("export-json").stdout) == json.loads(
        site.owner.run("export-json").stdout
    )
    assert "add-bank A" in reader.run("history").stdout
    as_of = reader.run("list-banks", "--as-of", str(T0))
    assert "root" in as_of.stdout and as_of.exit_code == 0
    assert reader.run("list-users").stderr == ""


def test_a_reader_may_not_write(site: Site) -> None:
    granted(site)
    before = site.owner.log_position()
    stderr = one_line(site.reader.run("add-bank", "B", "1", "--parent-bank", "root", expect=1))
    assert site.names["reader"] in stderr and "may not change the site" in stderr
    assert "permission denied" in one_line(site.reader.run("ingest", "-", input=JOB, expect=1))
    assert "permission denied" in one_line(site.reader.run("update-fshare", expect=1))
    assert site.owner.log_position() == before
    import psycopg

    with psycopg.connect(site.reader.url.split("?")[0], autocommit=True) as conn:
        for sql in (
            f'DELETE FROM "{site.schema}".bank_table',
            f'INSERT INTO "{site.schema}".ledger_events (originator_id, originator_version) '
            f"VALUES (gen_random_uuid(), 1)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)


def test_a_reader_answers_from_read_models_that_lag_the_log(site: Site) -> None:
    granted(site)
    # An event appended without folding the read models, as an earlier release's writer that
    # crashed between its append and its projection would leave it.
    ledger = Ledger.open(parse_store_url(site.owner.url), now=T0 + 100)
    ledger.projector = lambda conn, appended: lambda: None
    try:
        ledger.execute(lambda s, st: s.add_bank(st, "late", 1, "root", None))
        head = ledger.recorder.max_notification_id()
    finally:
        ledger.close()
    result = site.reader.run("list-banks")
    assert "late" not in result.stdout and "root" in result.stdout
    assert result.stderr == (
        f"fairledger: warning: the read models are at log position {head - 1} of {head} and "
        "this role may not update them; answering from them as they are (a writer's next "
        "command, or 'fairledger rebuild', catches them up)\n"
    )
    site.writer.run("list-banks")  # a writer's read catches up
    result = site.reader.run("list-banks")
    assert "late" in result.stdout and result.stderr == ""


def test_a_writer_ingests_and_updates_but_does_not_change_the_site(site: Site) -> None:
    granted(site)
    writer = site.writer
    assert "recorded 1" in writer.run("ingest", "-", input=JOB, now=T0 + 100).stdout
    writer.run("update-usage", now=T0 + 200)
    writer.run("update-fshare", "--actor", "cron", now=T0 + 200)
    before = site.owner.log_position()
    stderr = one_line(
        writer.run("add-bank", "B", "1", "--parent-bank", "root", now=T0 + 300, expect=1)
    )
    assert stderr == (
        f"fairledger: role '{site.names['writer']}' may not change the site of schema "
        f"'{site.schema}': that needs fairledger_{site.schema}_admin "
        f"(fairledger grant --admin {site.names['writer']})\n"
    )
    one_line(writer.run("edit-config", "decay_factor=0.25", now=T0 + 300, expect=1))
    one_line(writer.run("clear-usage", "A", now=T0 + 300, expect=1))
    assert site.owner.log_position() == before
    history = writer.run("history", now=T0 + 300).stdout.splitlines()
    assert f"  {site.names['writer']} (on behalf of cron)  update-fshare" in history[-1]
    import psycopg

    with psycopg.connect(writer.url.split("?")[0], autocommit=True) as conn:
        for sql in ("UPDATE {}.ledger_events SET topic = 'x'", "TRUNCATE {}.ledger_snapshots"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.format(f'"{site.schema}"'))


def test_a_writer_runs_the_cron_in_one_process_and_a_reader_may_not(site: Site) -> None:
    granted(site)
    before = site.owner.log_position()
    refused = site.reader.run("cron", "--ingest", "-", input=JOB, now=T0 + 100, expect=1)
    one_line(refused)
    assert site.owner.log_position() == before
    result = site.writer.run("cron", "--ingest", "-", input=JOB, now=T0 + 100)
    assert result.stdout.splitlines()[0] == "recorded 1, duplicate 0, unmatched 0"
    history = site.writer.run("history", now=T0 + 100).stdout.splitlines()
    assert f"  {site.names['writer']}  update-usage" in history[-2]
    assert f"  {site.names['writer']}  update-fshare" in history[-1]


def test_an_admin_changes_the_site_and_is_recorded_as_its_role(site: Site) -> None:
    granted(site)
    admin = site.admin
    admin.run("add-bank", "B", "1", "--parent-bank", "root", "--actor", "ops", now=T0 + 300)
    admin.run("edit-bank", "B", "--shares", "5", now=T0 + 300)
    admin.run("ingest", "-", input=JOB, now=T0 + 300)
    lines = admin.run("history", "--bank", "B", now=T0 + 300).stdout.splitlines()
    role = site.names["admin"]
    assert lines == [
        f"2023-11-14T22:18:20+00:00  {role} (on behalf of ops)  add-bank B: parent_bank root, "
        "shares 1, priority 0.0",
        f"2023-11-14T22:18:20+00:00  {role}  edit-bank B: shares 1 → 5",
    ]
    entries = json.loads(admin.run("history", "--bank", "B", "--json", now=T0 + 300).stdout)
    assert [(e["actor"], e["source"]) for e in entries] == [
        (role, {"on_behalf_of": "ops"}),
        (role, {}),
    ]


def test_grant_refuses_what_it_cannot_do(site: Site, tmp_path: object) -> None:
    stderr = one_line(site.owner.run("grant", "--reader", "no_such_role_x1", expect=1))
    assert stderr == (
        "fairledger: no such role: 'no_such_role_x1' (create it first: CREATE ROLE)\n"
    )
    assert one_line(site.owner.run("grant", expect=1)) == (
        "fairledger: grant needs at least one --reader, --writer or --admin ROLE\n"
    )
    granted(site)
    granted(site)  # idempotent
    one_line(site.writer.run("grant", "--admin", site.names["writer"], expect=1))
    one_line(site.admin.run("grant", "--admin", site.names["writer"], expect=1))
    sqlite = Store("sqlite", f"sqlite:///{tmp_path}/l.db")
    sqlite.run("create-db")
    assert one_line(sqlite.run("grant", "--reader", "x", expect=1)).startswith(
        "fairledger: grant works on PostgreSQL only"
    )
