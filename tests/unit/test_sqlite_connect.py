"""What every SQLite connection of a command is opened with."""

from __future__ import annotations

from pathlib import Path

from ledger.store.connections import SQLITE_CACHE_KIB, sqlite_connect


def test_a_connection_keeps_the_larger_page_cache(tmp_path: Path) -> None:
    raw = sqlite_connect(str(tmp_path / "ledger.db"))
    try:
        assert raw.execute("PRAGMA cache_size").fetchone()[0] == -SQLITE_CACHE_KIB
    finally:
        raw.close()
