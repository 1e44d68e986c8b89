"""A cron cycle whose walk ranks everyone and changes at least half the columns writes its
checkpoint whole without reading the last one back (checkpoints.whole_without_previous), and
does not read it to learn that the last walk ranked another usage (usage_tables._moved). The
checkpoints are those of a ledger that reads the last one back at every update."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.usecases.cron import cron
from ledger.usecases.updates import update_usage
from projections.writers import checkpoints
from tests.cli.test_cron_incremental import store_calls
from tests.conftest import T0
from tests.usecases.ledgers import change, ended, new_ledger, record

USERS = ["alice", "bob", "carol", "dave"]


def _site(site: Any, stamp: Any) -> None:
    site.add_bank(stamp, "root", 1, "", None)
    site.add_bank(stamp, "A", 1, "root", None)
    for n, username in enumerate(USERS):
        site.add_user(stamp, username, "A", 5001 + n, {})


def _checkpoints(session: Any) -> list[tuple[Any, ...]]:
    return session.conn.rows(
        "SELECT * FROM fairshare_checkpoints ORDER BY position, username, bank"
    ) + session.conn.rows("SELECT * FROM fairshare_checkpoint_marks ORDER BY position")


def test_a_walk_that_changes_half_the_columns_reads_no_checkpoint_and_writes_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = store_calls(monkeypatch, checkpoints, "read")
    whole_without_previous = checkpoints.whole_without_previous
    (tmp_path / "reads").mkdir()
    (tmp_path / "skips").mkdir()
    reads_back = new_ledger(tmp_path / "reads")
    skips = new_ledger(tmp_path / "skips")

    def cycle(*jobs: dict[str, Any], at: float, update: Any = cron) -> list[str]:
        """`jobs`, then `update` on both ledgers; the checkpoint reads of the one that skips."""
        for session in (reads_back, skips):
            record(session, *jobs)
            session.set_now(at)
        monkeypatch.setattr(checkpoints, "whole_without_previous", lambda *args: False)
        update(reads_back)
        monkeypatch.setattr(checkpoints, "whole_without_previous", whole_without_previous)
        reads.clear()
        update(skips)
        assert _checkpoints(skips) == _checkpoints(reads_back)
        return list(reads)

    try:
        for session in (reads_back, skips):
            change(session, _site)
        jobs = [ended(n, 5001 + n, T0 + 50, 10 * (n + 1)) for n in range(4)]
        assert cycle(*jobs, at=T0 + 3600) == []  # the first: no checkpoint before it
        # Three users' jobs move their usage and everyone's rank: read nothing.
        jobs = [ended(10 + n, 5001 + n, T0 + 3650, 40 - 10 * n) for n in range(3)]
        assert cycle(*jobs, at=T0 + 7200) == []
        # An update-usage alone since: the columns are no longer the checkpoint's.
        cycle(ended(20, 5004, T0 + 7250, 100), at=T0 + 9000, update=update_usage)
        assert cycle(ended(21, 5001, T0 + 9050, 5), at=T0 + 10800) != []
        # No job since: the last checkpoint is kept at the new position, its mark alone.
        assert cycle(at=T0 + 12600) == []
        rows = skips.conn.rows("SELECT DISTINCT position FROM fairshare_checkpoints")
        assert len(rows) >= 3
    finally:
        reads_back.close()
        skips.close()
