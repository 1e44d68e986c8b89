"""The admin use cases called directly: create's rules, rebuild and verify, grant on SQLite,
and the doctor on the checked-in ledger an earlier release poisoned."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.errors import InvalidValue
from ledger.usecases import admin
from ledger.usecases.session import Session
from tests.conftest import DATA, T0
from tests.usecases.ledgers import WEEK, change, new_ledger


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    opened = new_ledger(tmp_path)
    change(opened, lambda s, st: s.add_bank(st, "root", 1, "", None))
    yield opened
    opened.close()


@pytest.mark.parametrize(
    ("half_life", "decay", "message"),
    [
        (WEEK, 1.0, r"invalid decay factor: 1.0 \(must be 0 < F < 1\)"),
        (WEEK, 0.0, r"invalid decay factor: 0.0 \(must be 0 < F < 1\)"),
        (0.0, 0.5, r"invalid half-life: 0.0 \(must be > 0\)"),
    ],
)
def test_create_refuses_a_decay_that_would_not_decay(
    tmp_path: Path, half_life: float, decay: float, message: str
) -> None:
    session = Session(f"sqlite:///{tmp_path / 'ledger.db'}", str(T0))
    with pytest.raises(InvalidValue, match=message):
        admin.create_ledger(session, half_life, 4 * WEEK, decay, False, None, None)
    assert not (tmp_path / "ledger.db").exists()  # refused before anything was created


def test_create_group_readable_makes_the_file_0640(tmp_path: Path) -> None:
    session = Session(f"sqlite:///{tmp_path / 'ledger.db'}", str(T0))
    try:
        described = admin.create_ledger(session, WEEK, 4 * WEEK, 0.5, True, None, None)
    finally:
        session.close()
    assert described == session.store.describe()
    assert (tmp_path / "ledger.db").stat().st_mode & 0o777 == 0o640


def test_rebuild_and_verify_report_the_log_they_read(session: Session) -> None:
    rebuilt = admin.rebuild(session)
    checked = admin.verify(session)
    assert rebuilt.position == checked.verified.head_position == checked.verified.events
    assert rebuilt.position is not None and rebuilt.position >= 2  # created, then root added
    assert checked.verified.tables > 0 and checked.verified.unlinked == 0
    assert rebuilt.seconds >= 0 and checked.seconds >= 0


def test_grant_is_for_postgresql(session: Session) -> None:
    with pytest.raises(InvalidValue, match="grant works on PostgreSQL only"):
        admin.grant(session, ["alice"], [], [])


def test_the_doctor_names_and_sets_aside_the_poisoned_events(tmp_path: Path) -> None:
    copy = tmp_path / "ledger-0.1.0.db"
    shutil.copyfile(DATA / "poisoned" / "ledger-0.1.0.db", copy)
    session = Session(f"sqlite:///{copy}", None)
    try:
        assert [f.position for f in admin.diagnose(session)] == [9, 10]
        with pytest.raises(InvalidValue, match="doctor --neutralize needs --reason"):
            admin.neutralize(session, [9, 10], "tester", "  ")
        done = admin.neutralize(session, [9, 10], "tester", "values no column holds")
        assert [(f.position, f.event) for f in done] == [(9, "JobsRecorded"), (10, "BankAdded")]
        assert admin.diagnose(session) == []
        admin.verify(session)
    finally:
        session.close()
