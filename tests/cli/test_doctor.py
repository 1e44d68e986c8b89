"""fairledger doctor: a ledger an earlier release poisoned (events recorded, then unprojectable)
is diagnosed read-only, and neutralized with recorded, reasoned events that every fold, the
Site aggregate, time travel and verify honour."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ledger import events as ev
from ledger.site import SITE_ID
from ledger.store.application import Ledger
from ledger.store.connections import parse_store_url
from tests.conftest import DATA, T0, Store

POISONED = DATA / "poisoned" / "ledger-0.1.0.db"
REASON = "0.1.0 recorded values its read models cannot hold"
BEFORE_POISON = T0 + 550  # the update-fshare the 0.1.0 read models stopped at
DOCTOR_0_1_0 = [
    "position 9  2023-11-14T22:25:00Z  JobsRecorded by root: job 2 (cluster cluster): "
    "charge_units 99999829999998992384 does not fit the read models "
    "(charge 9.99998e+14, t_inactive 1e+15)",
    "position 10  2023-11-14T22:26:40Z  BankAdded chem by root: "
    "shares 9223372036854775808 does not fit the read models",
]


@pytest.fixture
def old_ledger(tmp_path: Path) -> Store:
    """A copy of the checked-in 0.1.0 ledger (the file itself is never written)."""
    copy = tmp_path / "ledger-0.1.0.db"
    shutil.copyfile(POISONED, copy)
    return Store("sqlite", f"sqlite:///{copy}")


def _users(store: Store, *args: str) -> list[tuple[str, str, float, float]]:
    rows = json.loads(store.run("list-users", "--json", *args, now=None).stdout)
    return [(r["username"], r["bank"], r["job_usage"], r["fairshare"]) for r in rows]


def _banks(store: Store, *args: str) -> list[str]:
    return [
        r["bank"] for r in json.loads(store.run("list-banks", "--json", *args, now=None).stdout)
    ]


def _job_ends(store: Store) -> list[float]:
    rows = json.loads(store.run("view-job-records", "--json", now=None).stdout)
    return sorted(r["t_inactive"] for r in rows)


def _log_and_read_models(path: Path) -> str:
    """A digest of every event and every read-model row (opening a ledger may add the
    append-only triggers an earlier release lacked: that is not a write of the log)."""
    conn = sqlite3.connect(path)
    try:
        digest = hashlib.sha256()
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY 1'):
                digest.update(repr((table, row)).encode())
        return digest.hexdigest()
    finally:
        conn.close()


def test_doctor_names_the_poisoned_events_and_writes_nothing(old_ledger: Store) -> None:
    path = Path(old_ledger.url.removeprefix("sqlite:///"))
    before = _log_and_read_models(path)
    result = old_ledger.run("doctor", now=None, expect=1)
    assert result.stdout.splitlines() == DOCTOR_0_1_0
    assert "--neutralize 9 --neutralize 10 --reason" in result.stderr
    assert _log_and_read_models(path) == before


def test_a_wedged_ledger_says_to_run_the_doctor(old_ledger: Store) -> None:
    result = old_ledger.run("list-banks", expect=1)
    assert result.stderr.count("\n") == 1
    assert "run 'fairledger doctor'" in result.stderr


def test_a_rebuild_of_a_wedged_ledger_says_to_run_the_doctor(old_ledger: Store) -> None:
    # Opening it lays new tables out empty (its layout is old): the rebuild asked for must
    # still fold the log and name the cure, not take that for a rebuild done.
    result = old_ledger.run("rebuild", now=None, expect=1)
    assert result.stderr.count("\n") == 1
    assert "run 'fairledger doctor'" in result.stderr


def test_neutralize_refuses_what_would_leave_the_ledger_wedged(old_ledger: Store) -> None:
    head = old_ledger.log_position()
    no_reason = old_ledger.run("doctor", "--neutralize", "9", "--neutralize", "10", expect=1)
    assert "needs --reason" in no_reason.stderr
    alone = old_ledger.run(
        "doctor", "--neutralize", "10", "--reason", REASON, now=T0 + 1000, expect=1
    )
    assert "position 9 must be neutralized too" in alone.stderr
    healthy = old_ledger.run(
        "doctor", "--neutralize", "5", "--neutralize", "9", "--neutralize", "10",
        "--reason", REASON, now=T0 + 1000, expect=1,
    )  # fmt: skip
    assert "position 5 is not an event the doctor names" in healthy.stderr
    assert old_ledger.log_position() == head


def test_neutralizing_the_0_1_0_ledger_brings_it_back(old_ledger: Store) -> None:
    done = old_ledger.run(
        "doctor", "--neutralize", "9", "--neutralize", "10", "--reason", REASON,
        "--actor", "ops", now=T0 + 1000,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        "neutralized position 9: job 2 (cluster cluster)",
        "neutralized position 10: BankAdded chem",
    ]
    assert old_ledger.run("doctor", now=None).stdout == "no poisoned events\n"
    assert _banks(old_ledger) == ["root", "physics"]  # chem does not exist
    assert [u[:2] for u in _users(old_ledger)] == [("alice", "physics"), ("bob", "physics")]
    assert _job_ends(old_ledger) == [T0 + 400, T0 + 460]  # job 3 counts, job 2 does not
    # Time travel: before the poison as the 0.1.0 read models had it; then job 3 counts.
    assert _users(old_ledger, "--as-of", str(BEFORE_POISON)) == [("alice", "physics", 390.0, 1.0)]
    assert _users(old_ledger, "--as-of", str(T0 + 750))[0][2] == 390.0 + 900.0
    assert _banks(old_ledger, "--as-of", str(T0 + 850)) == ["root", "physics"]
    old_ledger.run("update-fshare", now=T0 + 1100)
    assert "physics" in old_ledger.run("view-bank", "root", "-t", now=T0 + 1100).stdout
    # The Site aggregate holds no chem either: it can be added now, with sane shares.
    old_ledger.run("add-bank", "chem", "5", "--parent-bank", "root", now=T0 + 1200)
    old_ledger.run("rebuild", now=None)
    old_ledger.run("verify", now=None)
    history = old_ledger.run("history", now=None).stdout
    assert f"ops  neutralize: set aside position 10 (BankAdded chem)  ({REASON})" in history
    assert "set aside position 9 (job 2 (cluster cluster))" in history


# --- both stores: a poisoned ledger made through the library -------------------------------------
GOOD_JOB = {
    "cluster": "c", "id": "1", "t_submit": T0, "t_run": T0 + 10.0, "t_inactive": T0 + 400.0,
    "nnodes": 1, "ncores": 4, "ngpus": 0, "charge": 390.0, "username": "alice", "bank": "physics",
}  # fmt: skip


def _job(job_id: str, **changes: Any) -> dict[str, Any]:
    return {**GOOD_JOB, "id": job_id, **changes}


def _unprojected(store: Store, now: float, change: Callable[[Ledger], Any]) -> None:
    """`change` made by a ledger that appends without projecting, as 0.1.0 did; then a
    snapshot of the Site as it stands (poison included: loads must not trust it)."""
    ledger = Ledger.open(parse_store_url(store.url), now=now, actor="root")
    ledger.projector = lambda conn, appended: lambda: None
    try:
        change(ledger)
        ledger.take_snapshot(SITE_ID)
    finally:
        ledger.close()


def _add_chem(ledger: Ledger) -> None:
    ledger.execute(
        lambda site, stamp: site.trigger_event(
            ev.BankAdded,
            bank="chem",
            parent_bank="root",
            shares=2**63,
            priority=0.0,
            bank_id=3,
            **stamp.kwargs(),
        )
    )


def _add_users(ledger: Ledger) -> None:
    ledger.execute(lambda site, stamp: site.add_user(stamp, "dave", "chem", None, {}))
    ledger.execute(lambda site, stamp: site.add_user(stamp, "bob", "physics", None, {}))


def _poison(store: Store) -> None:
    """Positions 1-6 healthy; then a job batch with one job too big (7), a bank with too many
    shares (8), a user added to that bank (9: it needs it), a user added to physics (10)."""
    store.run("create-db")
    store.run("add-bank", "root", "1", now=T0 + 100)
    store.run("add-bank", "physics", "10", "--parent-bank", "root", now=T0 + 200)
    store.run("add-user", "-u", "alice", "-B", "physics", now=T0 + 300)
    jobs = [_job("2", charge=1e15), _job("3", charge=900.0)]
    _unprojected(store, T0 + 700, lambda ledger: ledger.record_jobs(jobs))
    _unprojected(store, T0 + 800, _add_chem)
    _unprojected(store, T0 + 900, _add_users)


def test_neutralize_on_both_stores(store: Store) -> None:
    _poison(store)
    found = store.run("doctor", now=None, expect=1).stdout.splitlines()
    assert [line.split("  ")[0] for line in found] == ["position 7", "position 8", "position 9"]
    assert "job 2 (cluster c): charge_units" in found[0]
    assert "job 3" not in found[0]
    who = "postgres" if store.kind == "postgres" else "root"  # PostgreSQL records the role
    assert f"BankAdded chem by {who}: shares 9223372036854775808" in found[1]
    assert found[2].endswith(
        f"AssociationAdded dave/chem by {who}: bank chem does not exist: "
        "the event that added it is set aside"
    )
    store.run(
        "doctor", "--neutralize", "7", "--neutralize", "8", "--neutralize", "9",
        "--reason", REASON, now=T0 + 1000,
    )  # fmt: skip
    assert store.run("doctor", now=None).stdout == "no poisoned events\n"
    assert _banks(store) == ["root", "physics"]
    assert [u[:2] for u in _users(store)] == [("alice", "physics"), ("bob", "physics")]
    assert _users(store, "--as-of", str(T0 + 750)) == [("alice", "physics", 900.0, 0.5)]
    assert _users(store, "--as-of", str(T0 + 650)) == [("alice", "physics", 0.0, 0.5)]
    assert _banks(store, "--as-of", str(T0 + 850)) == ["root", "physics"]
    # Commands validate against the state without the neutralized events.
    store.run("add-user", "-u", "dave", "-B", "chem", now=T0 + 1100, expect=1)
    store.run("add-bank", "chem", "5", "--parent-bank", "root", now=T0 + 1100)
    store.run("add-user", "-u", "dave", "-B", "chem", now=T0 + 1200)
    store.run("update-fshare", now=T0 + 1300)
    store.run("rebuild", now=None)
    store.run("verify", now=None)  # the fixture verifies again


def test_a_healthy_ledger_has_nothing_to_neutralize(ledger_store: Store) -> None:
    assert ledger_store.run("doctor", now=None).stdout == "no poisoned events\n"
    result = ledger_store.run("doctor", "--neutralize", "1", "--reason", REASON, expect=1)
    assert result.stderr == "fairledger: no poisoned events: nothing to neutralize\n"
