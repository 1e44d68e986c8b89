"""A command that records markers alone (usage or fair-share brought up to date: update-usage,
update-fshare, a cron cycle's updates) starts the projector from a copy of the state that
shares its tables; the numbers are those of a full copy, and any other event from such a
command is refused, with nothing recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.state import state_to_dict
from ledger.usecases.cron import cron
from ledger.usecases.updates import update_fairshare, update_usage
from projections.writers import runner
from tests.conftest import T0
from tests.usecases.ledgers import change, ended, new_ledger, record


def _site(site: Any, stamp: Any) -> None:
    site.add_bank(stamp, "root", 1, "", None)
    site.add_bank(stamp, "A", 1, "root", None)
    site.add_user(stamp, "alice", "A", 5001, {})
    site.add_user(stamp, "bob", "A", 5002, {})


def _shown(session: Any) -> list[tuple[Any, ...]]:
    return session.conn.rows(
        "SELECT username, bank, shares, job_usage, fairshare FROM association_table "
        "ORDER BY username, bank"
    )


def _both(site: Any, stamp: Any) -> None:
    site.mark_usage_updated(stamp)
    site.mark_fairshare_updated(stamp)


@pytest.mark.parametrize(
    ("update", "plain"),
    [
        (cron, _both),
        (update_usage, lambda site, stamp: site.mark_usage_updated(stamp)),
        (update_fairshare, lambda site, stamp: site.mark_fairshare_updated(stamp)),
    ],
)
def test_an_update_copies_none_of_the_state_and_shows_what_a_full_copy_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update: Any, plain: Any
) -> None:
    """`full` runs the same markers as a plain command (the state copied whole), `shared` as
    the markers-only use case."""
    (tmp_path / "full").mkdir()
    (tmp_path / "shared").mkdir()
    full = new_ledger(tmp_path / "full")
    shared = new_ledger(tmp_path / "shared")
    try:
        for session in (full, shared):
            change(session, _site)
            record(session, ended(1, 5001, T0 + 50, 30), ended(2, 5002, T0 + 55, 10))
            session.set_now(T0 + 3600)
        change(full, plain)

        def refused(state: Any) -> Any:
            raise AssertionError("a markers-only command copied the whole state")

        monkeypatch.setattr(runner, "copy_state", refused)
        update(shared)
        assert _shown(shared) == _shown(full)
        assert all(row[3] > 0 for row in _shown(shared))  # the jobs count
        monkeypatch.undo()
        # The same process goes on with a command that changes the state, then an update: the
        # state the first update left to the projector is not the one the next command changes.
        for session in (full, shared):
            change(session, lambda site, stamp: site.edit_user(stamp, "bob", "A", {"shares": 3}))
            record(session, ended(3, 5001, T0 + 60, 5))
            session.set_now(T0 + 7200)
        change(full, plain)
        update(shared)
        assert _shown(shared) == _shown(full)
        assert [row[2] for row in _shown(shared)] == [1, 3]
        assert state_to_dict(shared.ledger.state()) == state_to_dict(full.ledger.state())
    finally:
        full.close()
        shared.close()


def test_a_markers_only_command_that_records_another_event_records_nothing(
    tmp_path: Path,
) -> None:
    session = new_ledger(tmp_path)
    try:
        change(session, _site)
        version = session.ledger.site().version

        def mislabelled(site: Any, stamp: Any) -> None:
            site.mark_usage_updated(stamp)
            site.edit_user(stamp, "bob", "A", {"shares": 3})

        with pytest.raises(RuntimeError, match="UsageUpdated, AssociationEdited"):
            session.change(mislabelled, "a test", markers_only=True)
        assert session.ledger.site().version == version
        assert session.ledger.state().associations["bob"]["A"].shares == 1
    finally:
        session.close()
