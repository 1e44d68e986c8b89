"""On both stores: a cron cycle whose walk ranks everyone and moves at least half the columns
writes the checkpoint a ledger that reads the last one back writes, without reading it
(checkpoints.whole_without_previous, usage_tables._moved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.store.connections import Connection, parse_store_url
from projections.writers import checkpoints
from tests.cli.test_cron import FIRST, SECOND, _jobs, _site, twin  # noqa: F401 (a fixture)
from tests.cli.test_cron_incremental import store_calls
from tests.cli.test_ingest import job, write
from tests.conftest import Store


def _checkpoints(store: Store) -> tuple[list[Any], list[Any]]:
    """Every checkpoint row and mark, in key order."""
    conn = Connection(parse_store_url(store.url))
    try:
        return (
            conn.rows("SELECT * FROM fairshare_checkpoints ORDER BY position, username, bank"),
            conn.rows("SELECT * FROM fairshare_checkpoint_marks ORDER BY position"),
        )
    finally:
        conn.close()


def test_a_cycle_that_moves_most_columns_reads_no_checkpoint_and_writes_the_same(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = store_calls(monkeypatch, checkpoints, "read")
    whole_without_previous = checkpoints.whole_without_previous
    for ledger in (store, twin):
        _site(ledger)

    def cycle(path: str, at: float) -> list[str]:
        """`cron --ingest path` on both; the checkpoint reads of `store`'s cycle."""
        monkeypatch.setattr(checkpoints, "whole_without_previous", lambda *args: False)
        twin.run("cron", "--ingest", path, now=at)
        monkeypatch.setattr(checkpoints, "whole_without_previous", whole_without_previous)
        reads.clear()
        store.run("cron", "--ingest", path, now=at)
        assert _checkpoints(store) == _checkpoints(twin)
        return list(reads)

    assert cycle(_jobs(tmp_path, "first.jsonl", FIRST - 60, 1), FIRST) == []
    # alice's and bob's new jobs move two of the three associations' columns.
    assert cycle(_jobs(tmp_path, "second.jsonl", SECOND - 60, 10), SECOND) == []
    # Only alice in physics: one of three moves, the checkpoint is written as changes.
    path = write(tmp_path / "third.jsonl", job(20, end=SECOND + 3000, duration=5))
    assert cycle(path, SECOND + 3600) != []
    rows, marks = _checkpoints(store)
    assert len({row[0] for row in rows}) == 3
    position, base, chain_rows = marks[-1]
    assert base != position and chain_rows > 0  # changes over the whole one before
