"""The report use cases called directly: the association a fair-share history is about, and a
recorded job's explanation, on a real SQLite ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.errors import NotFound
from ledger.usecases import users
from ledger.usecases.reports import explain, fairshare_history_of
from ledger.usecases.session import Session
from tests.conftest import T0
from tests.usecases.ledgers import change, ended, new_ledger, record


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Session]:
    """root -> A (amy 5001, default bank), B (amy); one job of amy's in A; fair-share updated
    at T0 + 100 and T0 + 200."""
    session = new_ledger(tmp_path)
    change(session, lambda s, st: s.add_bank(st, "root", 1, "", None))
    for bank in ("A", "B"):
        change(session, lambda s, st, bank=bank: s.add_bank(st, bank, 1, "root", None))
    users.add_user(session, "amy", "A", 5001, {})
    users.add_user(session, "amy", "B", None, {})
    session.set_now(T0 + 60)
    record(session, ended(1, 5001, T0 + 50, 40))
    for at in (T0 + 100, T0 + 200):
        session.set_now(at)
        change(session, lambda s, st: s.mark_fairshare_updated(st))
    yield session
    session.close()


def test_the_history_of_the_default_bank_at_every_snapshot(site: Session) -> None:
    history = fairshare_history_of(site, "amy")
    assert (history.username, history.bank) == ("amy", "A")
    assert [row.at for row in history.rows] == [T0 + 100, T0 + 200]
    assert all(row.ranked == 2 and row.active for row in history.rows)
    assert history.rows[0].job_usage > 0  # amy's job in A counts


def test_a_window_without_snapshots_has_no_rows(site: Session) -> None:
    assert fairshare_history_of(site, "amy", "B", T0 + 300, None).rows == []
    assert [r.at for r in fairshare_history_of(site, "amy", "B", None, T0 + 150).rows] == [T0 + 100]


def test_an_association_that_never_existed_is_not_found(site: Session) -> None:
    with pytest.raises(NotFound, match="user nobody not found in association_table"):
        fairshare_history_of(site, "nobody")
    with pytest.raises(NotFound, match="user amy not found in bank root"):
        fairshare_history_of(site, "amy", "root")


def test_explain_a_recorded_job(site: Session) -> None:
    found = explain(site, 1)
    assert found.association == ("amy", "A")
    assert found.fairshare == 0.5  # submitted before any snapshot: a new association's 0.5
    assert found.snapshot is None
    with pytest.raises(NotFound):
        explain(site, 2, shown="ƒ2")
