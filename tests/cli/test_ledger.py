"""The ledger itself on both stores: create-db, the clock, events' metadata, rebuild, and two
processes writing at once."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ledger import events as ev
from ledger.site import SITE_ID
from ledger.store import application, connections, log_tables
from ledger.store.application import SNAPSHOT_FORMS, Ledger
from ledger.store.connections import Connection, parse_store_url
from projections.queries import freshness
from projections.writers import runner, schema, tracking
from tests.cli.sites import build_flux_account_site
from tests.conftest import T0, Store

ROOT = Path(__file__).resolve().parents[2]


def site_events(store: Store) -> list:
    ledger = Ledger(parse_store_url(store.url))
    try:
        return list(ledger.events.get(SITE_ID))
    finally:
        ledger.close()


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_the_librarys_composite_type_is_described_once_and_only_for_its_writes(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event store library's composite type serves only its own writes (snapshots): an
    opening that reads describes nothing. psycopg builds new adapter classes for each new
    description, which a long-running process (a server, this test run) would keep for good:
    the same type is described by one object, fetched once; a type made again (another OID) is
    described afresh."""
    from psycopg.types.composite import CompositeInfo

    fetched: list[str] = []
    fetch = CompositeInfo.fetch

    def counted(conn: Any, name: str) -> Any:
        fetched.append(name)
        return fetch(conn, name)

    monkeypatch.setattr(CompositeInfo, "fetch", counted)

    def described(*bank: str) -> Any:
        ledger_store.run("add-bank", *bank)  # a new version of the Site to snapshot
        ledger = Ledger(parse_store_url(ledger_store.url))
        try:
            before = len(fetched)
            assert ledger.exists()  # the library's recorders are built and read through
            adapters = ledger.factory.datastore.psycopg_type_adapters
            assert adapters == {} and len(fetched) == before
            ledger.take_snapshot(SITE_ID)  # the library's write
            assert list(adapters) == ["stored_event_uuid"]
            return adapters["stored_event_uuid"]
        finally:
            ledger.close()

    first = described("root", "1")
    assert fetched == [f"{parse_store_url(ledger_store.url).schema}.stored_event_uuid"]
    assert described("other", "1", "--parent-bank", "root") is first
    assert len(fetched) == 1
    schema = parse_store_url(ledger_store.url).schema
    with psycopg.connect(ledger_store.url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    ledger_store.run("create-db")
    again = described("root", "1")
    assert again is not first and again.oid != first.oid
    assert len(fetched) == 2


def test_the_librarys_reads_join_a_commands_transaction(ledger_store: Store) -> None:
    """The event store library reads through the command's connection on both stores: inside
    a write transaction it sees what the transaction wrote, and leaves the transaction open;
    it may not write there."""

    class Abandoned(Exception):
        pass

    ledger = Ledger(parse_store_url(ledger_store.url))
    try:
        before = ledger.recorder.max_notification_id()
        with pytest.raises(Abandoned), ledger.conn.transaction() as conn:
            newest = log_tables.newest_event(conn)
            assert newest is not None
            later = dataclasses.replace(newest, originator_version=newest.originator_version + 1)
            [position] = log_tables.insert_events(conn, [later])
            assert ledger.recorder.max_notification_id() == position == before + 1
            assert conn._in_transaction()
            if ledger_store.kind == "sqlite":
                with pytest.raises(RuntimeError, match="wrote inside a command's write"):
                    ledger.recorder.insert_events([later])
            raise Abandoned  # the command fails: its transaction is rolled back
        assert ledger.recorder.max_notification_id() == before
    finally:
        ledger.close()


# Settings the event store library would take from the process's environment: each changes
# how events are stored, or (LEDGER_ outranks the unprefixed name) where the log is.
FOREIGN_SETTINGS = {
    "COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor",
    "LEDGER_COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor",
    "CIPHER_TOPIC": "eventsourcing.cipher:AESCipher",
    "LEDGER_POSTGRES_SCHEMA": "elsewhere",
    "LEDGER_SQLITE_DBNAME": ":memory:",
    "LEDGER_PERSISTENCE_MODULE": "eventsourcing.popo",
}


def test_the_environment_does_not_change_how_the_log_is_stored(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable set in a site's shell for another program never reaches the event store
    library: a write made under them is read back by a command without them, from the same
    log, and a read made under them sees what was written without them."""
    ledger_store.run("add-bank", "root", "1")
    with monkeypatch.context() as env:
        for name, value in FOREIGN_SETTINGS.items():
            env.setenv(name, value)
        ledger_store.run("add-bank", "a", "2", "--parent-bank", "root")
        under = ledger_store.run("list-banks", "--json").stdout
    assert [b["bank"] for b in json.loads(under)] == ["root", "a"]
    assert ledger_store.run("list-banks", "--json").stdout == under
    assert "read models: " in ledger_store.run("verify", now=None).stdout


@contextmanager
def writers_lock_held(store: Store) -> Iterator[None]:
    """Another fairledger writer holding the ledger's writers' lock, in an open transaction."""
    other = Connection(parse_store_url(store.url))
    try:
        with log_tables.locked(other):
            yield
    finally:
        other.close()


def test_a_writer_that_cannot_have_the_lock_gives_up_in_one_line_and_writes_nothing(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another writer holds the lock, a command waits out the lock timeout on each
    attempt, then says so in one line and records nothing; once the lock is free it writes."""
    monkeypatch.setattr(application, "MAX_ATTEMPTS", 2)
    monkeypatch.setattr(application, "BACKOFF_SECONDS", 0.01)
    monkeypatch.setattr(log_tables, "LOCK_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(connections, "SQLITE_BUSY_TIMEOUT_SECONDS", 1)  # whole seconds
    before = ledger_store.log_position()
    with writers_lock_held(ledger_store):
        refused = ledger_store.run("add-bank", "root", "1", expect=1)
    assert refused.stderr == (
        "fairledger: gave up after 2 attempts: the ledger stayed locked by other writers\n"
    )
    assert ledger_store.log_position() == before
    ledger_store.run("add-bank", "root", "1")
    assert ledger_store.log_position() > before


def test_a_writer_that_will_not_wait_is_told_at_once_and_waits_again_after(
    ledger_store: Store,
) -> None:
    """What an ingest that finds another ingester recording relies on: a transaction that
    does not wait for the writers' lock is refused while another writer holds it, without
    waiting out the lock timeout (the other writer here holds it longer) and with nothing
    left open; once the lock is free it is taken, and the connection waits again as before."""
    from ledger.errors import WritersBusy

    conn = Connection(parse_store_url(ledger_store.url))
    try:
        waits = (
            conn.execute("PRAGMA busy_timeout").fetchone()
            if ledger_store.kind == "sqlite"
            else None
        )
        with writers_lock_held(ledger_store):
            with pytest.raises(WritersBusy), log_tables.locked(conn, wait=False):
                pytest.fail("took the writers' lock another writer holds")
            assert not conn._in_transaction()
            if waits is not None:
                assert conn.execute("PRAGMA busy_timeout").fetchone() == waits
        with log_tables.locked(conn, wait=False):
            assert conn._in_transaction()
    finally:
        conn.close()


def test_create_db_options_and_refusals(store: Store) -> None:
    missing = store.run("list-banks", expect=1).stderr
    if store.kind == "sqlite":  # flux-accounting's words first: its tests grep them
        path = store.url.removeprefix("sqlite:///")
        assert missing == (
            f"fairledger: error opening DB: unable to open database file {path} (no ledger at"
            f" {store.url}: run 'fairledger create-db' first)\n"
        )
    else:
        assert missing == (
            f"fairledger: no ledger at {store.url}: run 'fairledger create-db' first\n"
        )
    assert "run 'fairledger create-db' first" in store.run("list-banks", expect=1).stderr
    store.run(
        "create-db",
        "--priority-decay-half-life",
        "2d",
        "--priority-usage-reset-period",
        "10d",
        "--decay-factor",
        "0.25",
    )
    values = {r["key"]: r["value"] for r in json.loads(store.run("list-configs", "--json").stdout)}
    assert (
        values["priority_decay_half_life"],
        values["priority_usage_reset_period"],
        values["decay_factor"],
    ) == ("172800", "864000", "0.25")
    assert store.run("create-db", expect=1).stderr.startswith(
        "fairledger: a ledger already exists at "
    )


def test_create_db_bad_values(store: Store) -> None:
    result = store.run("create-db", "--priority-decay-half-life", "3x", expect=2)
    assert "invalid Flux standard duration: '3x'" in result.stderr
    assert (
        store.run("create-db", "--decay-factor", "1.5", expect=1).stderr
        == "fairledger: invalid decay factor: 1.5 (must be 0 < F < 1)\n"
    )
    assert store.run("list-banks", expect=1).exit_code == 1  # nothing was created


def test_events_carry_actor_reason_and_old_new(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1", "--actor", "ops", "--reason", "new site")
    ledger_store.run("add-bank", "A", "10", "--parent-bank", "root", now=T0 + 60)
    ledger_store.run("edit-bank", "A", "--shares", "50", "--reason", "grant #12", now=T0 + 120)
    events = site_events(ledger_store)
    added = [e for e in events if isinstance(e, ev.BankAdded)]
    if ledger_store.kind == "postgres":  # the session's role, on behalf of --actor
        assert (added[0].actor, added[0].source) == ("postgres", {"on_behalf_of": "ops"})
        assert (added[1].actor, added[1].source) == ("postgres", {})
    else:
        assert added[0].actor == "ops"
    assert added[0].reason == "new site"
    (edit,) = [e for e in events if isinstance(e, ev.BankEdited)]
    assert edit.changes == {"shares": [10, 50]}
    assert edit.reason == "grant #12"
    assert edit.timestamp.timestamp() == T0 + 120
    assert [e.timestamp for e in events] == sorted(e.timestamp for e in events)


def test_clock_never_runs_backwards(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1", now=T0 + 100)
    before = ledger_store.log_position()
    result = ledger_store.run("add-bank", "A", "1", "--parent-bank", "root", now=T0 + 50, expect=1)
    assert result.stderr == (
        "fairledger: time 2023-11-14T22:14:10+00:00 is earlier than the newest event "
        "(2023-11-14T22:15:00+00:00); the ledger's clock never runs backwards\n"
    )
    assert ledger_store.log_position() == before
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root", now="2023-11-14T22:20:00+00:00")
    # A time without a zone is in the site's timezone (UTC here): the same moment, accepted.
    ledger_store.run("add-bank", "B", "1", "--parent-bank", "root", now="2023-11-14T22:20:00")
    ledger_store.run("add-bank", "C", "1", "--parent-bank", "root", now=None)  # system clock


def test_rebuild_gives_the_same_tables(ledger_store: Store) -> None:
    build_flux_account_site(ledger_store, with_e_users=True)
    ledger_store.run("add-queue", "gold", "-P", "5")
    ledger_store.run("add-project", "climate")
    ledger_store.run("edit-user", "user5011", "-q", "gold", "-P", "climate")
    ledger_store.run("delete-bank", "C")
    ledger_store.run("delete-user", "user5030", "E", "--force")
    ledger_store.run("edit-factor", "--factor", "queue", "--weight", "7")
    ledger_store.run("edit-config", "core_weight=1")
    before = ledger_store.tables()
    out = ledger_store.run("rebuild").stdout
    assert out.startswith("rebuilt read models to log position ")
    assert ledger_store.tables() == before


def test_a_rebuild_as_the_first_command_after_an_upgrade_folds_the_log_once(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening a ledger whose read models have an older layout rebuilds them; the rebuild the
    # admin then asks for (docs/security.md) is that one, not a second fold of every event.
    build_flux_account_site(ledger_store, with_e_users=True)
    before = ledger_store.tables()
    conn = Connection(parse_store_url(ledger_store.url))
    try:
        _lay_out_as(conn, _before_a_table_change(conn))
    finally:
        conn.close()
    folds: list[None] = []
    fold = runner.rebuild
    monkeypatch.setattr(runner, "rebuild", lambda *args: folds.append(fold(*args)))
    assert ledger_store.run("rebuild").stdout.startswith("rebuilt read models to log position ")
    assert len(folds) == 1
    ledger_store.run("rebuild")  # the layout is current now: the rebuild asked for folds
    assert len(folds) == 2
    assert ledger_store.tables() == before


def _lay_out_as(conn: Connection, version: int, *statements: str) -> None:
    """Make the read models look laid out by the release of layout `version`: `statements`
    undo what the later layouts changed."""
    with conn.transaction():
        for statement in statements:
            conn.execute(statement)
        conn.execute(
            "UPDATE projection_tracking SET position = ? WHERE name = ?",
            (version, tracking.READ_MODEL_KEY),
        )


def _before_a_table_change(conn: Connection) -> int:
    """A layout that only a rebuild takes to this release's: one below every index step."""
    return min(runner.index_steps(conn.config.is_postgres)) - 1


def _totals_indexes(conn: Connection) -> set[str]:
    if conn.config.is_postgres:
        sql = (
            "SELECT indexname FROM pg_indexes "
            "WHERE schemaname = current_schema() AND tablename = 'period_totals'"
        )
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'period_totals'"
    return {str(name) for (name,) in conn.rows(sql)}


def test_a_layout_an_index_step_behind_takes_the_step_without_a_rebuild(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Layout 19 had the period totals' plain index on SQLite too; 20 changed only that index,
    # so opening a ledger of 19 with the release of layout 20 runs the step and refolds nothing.
    # (21 changed what two tables hold, so this release rebuilds a ledger of 19 or 20.)
    build_flux_account_site(ledger_store, with_e_users=True)
    before = ledger_store.tables()
    for module in (schema, tracking, freshness):
        monkeypatch.setattr(module, "READ_MODEL_VERSION", 20)
    conn = Connection(parse_store_url(ledger_store.url))
    try:
        new_indexes = _totals_indexes(conn)
        undo = [
            "DROP INDEX period_totals_period_units_idx",
            "CREATE INDEX period_totals_period_idx ON period_totals (period)",
        ]
        _lay_out_as(conn, 19, *([] if conn.config.is_postgres else undo))
        assert (_totals_indexes(conn) == new_indexes) == conn.config.is_postgres
    finally:
        conn.close()
    folds: list[None] = []
    monkeypatch.setattr(runner, "rebuild", lambda *args: folds.append(None))
    assert "root" in ledger_store.run("view-bank", "root").stdout
    assert folds == []
    conn = Connection(parse_store_url(ledger_store.url))
    try:
        assert _totals_indexes(conn) == new_indexes
        assert tracking.position(conn, tracking.READ_MODEL_KEY) == schema.READ_MODEL_VERSION
        if not conn.config.is_postgres:
            plan = conn.rows(
                "EXPLAIN QUERY PLAN SELECT userid, username, bank, period, charge_units "
                "FROM period_totals WHERE period >= 0 AND period <= 3"
            )
            assert "COVERING INDEX period_totals_period_units_idx" in str(plan)
    finally:
        conn.close()
    assert ledger_store.tables() == before


def test_snapshots_keep_state_exact(ledger_store: Store) -> None:
    """Past the snapshot interval the Site is loaded from a snapshot: the state must not drift."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    ledger = Ledger(parse_store_url(ledger_store.url), now=T0, actor="t")
    runner.attach(ledger)
    try:
        for i in range(230):
            ledger.execute(lambda s, st, i=i: s.add_user(st, f"u{i:03d}", "A", 6000 + i, {}))
        assert ledger.snapshots is not None
        assert list(ledger.snapshots.get(SITE_ID))  # a snapshot was taken
        loaded = ledger.state()
        replayed = None
        for event in ledger.events.get(SITE_ID):  # every event, no snapshot
            replayed = event.mutate(replayed)
        assert replayed is not None
        assert len(loaded.associations) == 230
        assert loaded == replayed.state
    finally:
        ledger.close()
    ledger_store.run("rebuild")
    assert len(json.loads(ledger_store.run("list-users", "--json").stdout)) == 230


def test_a_snapshot_in_any_form_loads_the_state_the_events_give(ledger_store: Store) -> None:
    """A ledger keeps the snapshots earlier releases wrote, in their forms: whichever is the
    newest, the Site loads from it as from its events; and a snapshot taken now is written
    in the newest form."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    store = parse_store_url(ledger_store.url)
    writer = Ledger(store, now=T0, actor="t")
    runner.attach(writer)

    def newest_form(ledger: Ledger) -> str:
        assert ledger.snapshots is not None
        (newest,) = ledger.snapshots.recorder.select_events(SITE_ID, desc=True, limit=1)
        return str(json.loads(newest.state)["state"]["state"]["_type_"])

    def loads_as_replayed(ledger: Ledger) -> None:
        replayed = None
        for event in ledger.events.get(SITE_ID):  # every event, no snapshot
            replayed = event.mutate(replayed)
        assert replayed is not None
        assert ledger.state() == replayed.state

    try:
        for n, form in enumerate(SNAPSHOT_FORMS):
            writer.mapper.transcoder.register(form())  # registered last: the form written
            writer.execute(lambda s, st, n=n: s.add_user(st, f"u{n}", "A", 6000 + n, {}))
            writer.execute(lambda s, st, n=n: s.edit_user(st, f"u{n}", "A", {"shares": 3 + n}))
            writer.take_snapshot(SITE_ID)
            reader = Ledger(store)
            try:
                assert newest_form(reader) == form.name
                loads_as_replayed(reader)
                assert len(reader.state().all_associations()) == n + 1
            finally:
                reader.close()
    finally:
        writer.close()
    ledger_store.run("add-user", "--username", "late", "--bank", "A")
    ledger = Ledger(store)
    try:
        ledger.take_snapshot(SITE_ID)
        assert newest_form(ledger) == SNAPSHOT_FORMS[-1].name
        loads_as_replayed(ledger)
    finally:
        ledger.close()


def _edit_in_subprocess(url: str, queue: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "--db", url, "edit-user", "alice", "--add-queue", queue],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_concurrent_edits_lose_no_update(ledger_store: Store) -> None:
    """Several processes add a queue each to the same association at once: every addition
    survives (optimistic concurrency: the losers of a race retry against fresh state)."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "-u", "alice", "-B", "root")
    queues = [f"q{i}" for i in range(6)]
    for queue in queues:
        ledger_store.run("add-queue", queue)
    with ThreadPoolExecutor(max_workers=len(queues)) as pool:
        results = list(pool.map(lambda q: _edit_in_subprocess(ledger_store.url, q), queues))
    assert [r.returncode for r in results] == [0] * len(queues), [r.stderr for r in results]
    (row,) = json.loads(ledger_store.run("view-user", "alice", "--json", now=None).stdout)
    assert sorted(row["queues"].split(",")) == queues
    edits = [e for e in site_events(ledger_store) if isinstance(e, ev.AssociationEdited)]
    assert len(edits) == len(queues)


def test_fractional_now_is_not_earlier_than_itself(ledger_store: Store) -> None:
    """--now with more than microsecond digits, used twice: the stored time is rounded to
    microseconds, and the second command must not see the clock running backwards."""
    moment = str(T0 + 1000.0000006)  # rounds up to the next microsecond when stored
    ledger_store.run("add-bank", "root", "1", now=moment)
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root", now=moment)
