"""The log is tamper-evident and never takes an event its read models cannot hold: a change the
projection refuses writes nothing, and `verify` names a changed, removed or inserted event and a
read model that drifted from the log."""

from __future__ import annotations

import sqlite3
import tempfile
from typing import Any

import pytest

from tests.conftest import Store

JOB = (
    '{"id": %d, "username": "alice", "bank": "physics", "t_submit": 1699990000, '
    '"t_run": 1699990100, "t_inactive": 1699990700, "nnodes": 1, "ncores": 4}\n'
)


def small_site(store: Store) -> None:
    store.run("create-db", now=1_699_990_000)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", "10", "--parent-bank", "root")
    store.run("add-user", "--username", "alice", "--bank", "physics")
    store.run("ingest", "-", input="".join(JOB % n for n in range(1, 4)))
    store.run("update-fshare")


def tamper(store: Store, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run `sql` as someone with direct access to the database would, past the store's
    append-only guards (an attacker with the file, or a PostgreSQL superuser)."""
    if store.kind == "sqlite":
        path = store.url[len("sqlite:///") :]
        conn = sqlite3.connect(path)
        try:
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
                conn.execute(f'DROP TRIGGER "{name}"')
            conn.execute(sql, params)
            conn.commit()
        finally:
            conn.close()
        return
    import psycopg

    base, schema = store.url.split("?schema=")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute("SET session_replication_role = replica")  # no user triggers fire
        conn.execute(sql.replace("?", "%s"), params)


def events_table(store: Store) -> tuple[str, str]:
    return (
        ("stored_events", "rowid")
        if store.kind == "sqlite"
        else ("ledger_events", "notification_id")
    )


def verify_error(store: Store) -> str:
    result = store.run("verify", now=None, expect=1)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_no_room_for_the_rebuild_is_one_line(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    small_site(store)
    # A temporary directory that cannot be written (as a full TMPDIR): verify's rebuild and its
    # sorts have nowhere to go.
    monkeypatch.setattr(tempfile, "tempdir", "/nonexistent/fairledger-tmp")
    assert verify_error(store) == (
        "fairledger: cannot write a temporary file in /nonexistent/fairledger-tmp: "
        "No such file or directory (set TMPDIR to a directory with room)"
    )


def test_verify_passes_and_prints_the_chain_head(store: Store) -> None:
    small_site(store)
    out = store.run("verify", now=None).stdout
    head = store.log_position()
    assert f"{head} events linked, head at position {head} link " in out
    assert "tables equal a rebuild from the log" in out


@pytest.mark.tampered
def test_a_changed_byte_is_caught(store: Store) -> None:
    small_site(store)
    table, position = events_table(store)
    row = 5  # BankAdded physics
    if store.kind == "sqlite":
        tamper(
            store,
            f"UPDATE {table} SET state = CAST(replace(CAST(state AS TEXT), 'physics', "
            f"'physicx') AS BLOB) WHERE {position} = ?",
            (row,),
        )
    else:
        tamper(
            store,
            f"UPDATE {table} SET state = convert_to(replace(convert_from(state, "
            f"'UTF8'), 'physics', 'physicx'), 'UTF8') WHERE {position} = ?",
            (row,),
        )
    assert verify_error(store) == (
        f"fairledger: the event at log position {row} does not match its link: it was changed, "
        "or an event before it was removed or inserted"
    )


@pytest.mark.tampered
def test_a_removed_event_is_caught(store: Store) -> None:
    small_site(store)
    table, position = events_table(store)
    tamper(store, f"DELETE FROM {table} WHERE {position} = ?", (4,))
    assert verify_error(store) == "fairledger: the event at log position 4 is missing: removed"


@pytest.mark.tampered
def test_a_removed_last_event_is_caught(store: Store) -> None:
    small_site(store)
    table, position = events_table(store)
    head = store.log_position()
    tamper(store, f"DELETE FROM {table} WHERE {position} = ?", (head,))
    assert (
        verify_error(store) == f"fairledger: the event at log position {head} is missing: removed"
    )


@pytest.mark.tampered
def test_an_inserted_event_is_caught(store: Store) -> None:
    small_site(store)
    table, position = events_table(store)
    head = store.log_position()
    # A copy of the last Site event at the next version: a forged admin change.
    tamper(
        store,
        f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
        f"SELECT originator_id, originator_version + 1000, topic, state FROM {table} "
        f"WHERE {position} = ?",
        (4,),
    )
    assert verify_error(store) == (
        f"fairledger: the event at log position {head + 1} has no link: it was inserted "
        "outside fairledger"
    )


@pytest.mark.tampered
def test_a_drifted_read_model_is_caught(store: Store) -> None:
    small_site(store)
    tamper(store, "UPDATE association_table SET shares = 99 WHERE username = ?", ("alice",))
    assert verify_error(store) == (
        "fairledger: read model association_table differs from a rebuild from the log "
        "(1 rows missing, 1 rows not in the rebuild): run 'fairledger rebuild'"
    )
    store.run("rebuild", now=None)
    store.run("verify", now=None)


def test_a_row_moved_between_two_rows_is_caught(store: Store) -> None:
    """Verify compares each table by a digest of its rows: two rows that trade a value keep
    the table's sums of every column, and are still caught."""
    small_site(store)
    tamper(store, "UPDATE jobs SET ncores = 5 WHERE id = ?", ("1",))
    tamper(store, "UPDATE jobs SET ncores = 3 WHERE id = ?", ("2",))
    assert verify_error(store) == (
        "fairledger: read model jobs differs from a rebuild from the log "
        "(2 rows missing, 2 rows not in the rebuild): run 'fairledger rebuild'"
    )
    store.run("rebuild", now=None)
    store.run("verify", now=None)


@pytest.mark.tampered
def test_a_job_key_without_its_job_and_a_job_without_its_key_are_caught(store: Store) -> None:
    small_site(store)
    tamper(
        store,
        "INSERT INTO job_keys (cluster, id, position, digest) SELECT cluster, '99', "
        "position, digest FROM job_keys WHERE id = ?",
        ("1",),
    )
    assert verify_error(store) == (
        "fairledger: job 99 (cluster cluster) is in the key index but not the log"
    )
    tamper(store, "DELETE FROM job_keys WHERE id IN (?, ?)", ("99", "2"))
    assert verify_error(store) == (
        "fairledger: job 2 (cluster cluster) is in the log but not the index"
    )


def test_a_value_too_wide_for_the_read_models_writes_nothing(store: Store) -> None:
    """Before, the event stayed in the log and every later command failed (a wedged ledger)."""
    small_site(store)
    before = store.log_position()
    tables = store.tables()
    result = store.run("add-bank", "chem", str(2**63), "--parent-bank", "root", expect=1)
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.output
    assert store.log_position() == before
    assert store.tables() == tables
    store.run("add-bank", "chem", "5", "--parent-bank", "root")
    store.run("update-fshare")
    assert "chem" in store.run("list-banks").stdout


def test_an_event_whose_projection_fails_is_not_recorded(store: Store) -> None:
    """The projection runs inside the append's transaction: whatever it cannot hold rolls the
    events back with it (the safety net under the input validation)."""
    from ledger import events as ev
    from ledger.errors import Unprojectable
    from ledger.store.application import Ledger
    from ledger.store.connections import parse_store_url
    from projections.writers import runner

    small_site(store)
    before = store.log_position()
    ledger = Ledger.open(parse_store_url(store.url), now=1_700_000_000, actor="t")
    runner.attach(ledger)
    projector = ledger.projector
    assert projector is not None

    def refusing(conn: Any, appended: list[tuple[int, Any]]) -> Any:
        if any(isinstance(event, ev.BankAdded) for _, event in appended):
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return projector(conn, appended)

    ledger.projector = refusing
    try:
        with pytest.raises(Unprojectable, match="cannot hold this change.*nothing recorded"):
            ledger.execute(lambda site, stamp: site.add_bank(stamp, "chem", 5, "root", None))
        assert ledger.recorder.max_notification_id() == before
        ledger.execute(lambda site, stamp: site.mark_usage_updated(stamp))
    finally:
        ledger.close()
    # One event more (PostgreSQL's ids may skip the one the rolled-back append drew).
    linked = store.run("verify", now=None).stdout.split(" events linked")[0]
    assert linked == f"log: {before + 1}"
    assert "chem" not in store.run("list-banks").stdout
