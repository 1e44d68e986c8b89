"""Ledgers written before the modules moved still open, rebuild and give the same answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, Store

LEDGERS = DATA / "ledgers"
COMMANDS = {
    "listusers_json": ("list-users", "--json"),
    "listbanks_json": ("list-banks", "--json"),
    "viewbank_root_t": ("view-bank", "root", "-t"),
    "history_all": ("history", "--all"),
    "exportjson": ("export-json",),
    "viewjobrecords_json": ("view-job-records", "--json"),
}


def answers(store: Store) -> dict[str, str]:
    return {name: store.run(*args, now=None).stdout for name, args in COMMANDS.items()}


def expected(ledger: str) -> dict[str, str]:
    return {name: (LEDGERS / "expected" / f"{ledger}.{name}.txt").read_text() for name in COMMANDS}


@pytest.mark.parametrize("ledger", ["every-event", "neutralized"])
def test_an_old_ledger_opens_rebuilds_and_answers_the_same(ledger: str, tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    shutil.copyfile(LEDGERS / f"{ledger}.db", path)
    store = Store("sqlite", f"sqlite:///{path}")
    assert answers(store) == expected(ledger)
    store.run("rebuild", now=None)
    assert answers(store) == expected(ledger)
    assert "tables equal a rebuild from the log" in store.run("verify", now=None).stdout
