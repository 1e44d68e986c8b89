"""Under the continuous model every association's bins are empty: an update that carries the
sums forward with the same associations neither reads nor writes them, and one after a new
association gives it its row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.usecases.updates import update_fairshare
from projections.writers import usage_tables
from tests.conftest import T0
from tests.usecases.ledgers import change, ended, new_ledger, record


def _bins(session: Any) -> dict[tuple[str, str], bytes]:
    return {
        (username, bank): bytes(bins)
        for username, bank, bins in session.conn.rows(
            "SELECT username, bank, bins FROM job_usage_bins"
        )
    }


def test_a_carried_update_reads_no_bins_until_an_association_is_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    stored = usage_tables._stored_bins

    def counted(conn: Any) -> Any:
        reads.append(1)
        return stored(conn)

    monkeypatch.setattr(usage_tables, "_stored_bins", counted)
    session = new_ledger(tmp_path)
    try:

        def site(site: Any, stamp: Any) -> None:
            site.add_bank(stamp, "root", 1, "", None)
            site.add_bank(stamp, "A", 1, "root", None)
            site.add_user(stamp, "alice", "A", 5001, {})
            site.edit_config(stamp, [("fairshare_algorithm", "fair-tree")])

        change(session, site)
        record(session, ended(1, 5001, T0 + 50, 30))
        update_fairshare(session)  # the first: every job read, every row written
        assert _bins(session) == {("alice", "A"): b""}
        reads.clear()
        record(session, ended(2, 5001, T0 + 55, 10))
        update_fairshare(session)  # carried forward, the same associations
        assert reads == []
        assert _bins(session) == {("alice", "A"): b""}
        change(session, lambda site, stamp: site.add_user(stamp, "bob", "A", 5002, {}))
        record(session, ended(3, 5002, T0 + 60, 5))
        update_fairshare(session)  # carried, bob's sums started: his row is new
        assert reads
        assert _bins(session) == {("alice", "A"): b"", ("bob", "A"): b""}
    finally:
        session.close()
