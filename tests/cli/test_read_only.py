"""A ledger this user may read but not write, and create-db where it may not write, on both
stores: reads answer (saying when the read models lag the log), writes are refused in one line
with the log unchanged, and a place that cannot be written is one line with nothing created.

Read-only means, on SQLite, a database file (or directory) whose mode forbids writing; on
PostgreSQL, a session whose transactions are read-only (`default_transaction_read_only`, as on
a hot standby). Tests here often run as root, whom file modes do not stop: the commands then
run in a subprocess without the capabilities that bypass file modes (CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH, dropped by util-linux's setpriv), which is what a non-root user is held to.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ledger.store.application import Ledger
from ledger.store.connections import parse_store_url
from tests.conftest import T0, Store

ROOT = Path(__file__).resolve().parents[2]
READ_ONLY_SESSION = "-c default_transaction_read_only=on"


def restricted(store: Store, *args: str) -> subprocess.CompletedProcess[str]:
    """`fairledger --db URL ARGS` as a user who may not write the store."""
    command = [sys.executable, "-m", "cli.main", "--db", store.url, *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if store.kind == "postgres":
        env["PGOPTIONS"] = READ_ONLY_SESSION
    elif os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: file modes cannot stop this user")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


@contextmanager
def read_only(store: Store) -> Iterator[None]:
    """The SQLite file made 0444 for the block (PostgreSQL's read-only session is per command)."""
    if store.kind != "sqlite":
        yield
        return
    path = Path(parse_store_url(store.url).path)
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(0o444)
    try:
        yield
    finally:
        path.chmod(mode)


def lagging_event(store: Store) -> int:
    """An event appended without folding the read models (as a writer that crashed between
    its append and its projection would leave it); returns the log's head."""
    ledger = Ledger.open(parse_store_url(store.url), now=T0 + 100)
    ledger.projector = lambda conn, appended: lambda: None
    try:
        ledger.execute(lambda s, st: s.add_bank(st, "late", 1, "root", None))
        return ledger.recorder.max_notification_id() or 0
    finally:
        ledger.close()


def test_a_read_only_ledger_answers_reads_and_refuses_writes(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    head = lagging_event(ledger_store)
    with read_only(ledger_store):
        read = restricted(ledger_store, "list-banks")
        assert read.returncode == 0, read.stderr
        banks = [line.split("|")[1].strip() for line in read.stdout.splitlines()[2:]]
        assert banks == ["root", "A"]  # "late" is in the log, not yet in the read models
        assert read.stderr == (
            f"fairledger: warning: the read models are at log position {head - 1} of {head} "
            "and this role may not update them; answering from them as they are (a writer's "
            "next command, or 'fairledger rebuild', catches them up)\n"
        )
        for change in (["add-bank", "B", "1", "--parent-bank", "root"], ["update-fshare"]):
            write = restricted(ledger_store, *change)
            assert write.returncode == 1, write.stderr
            assert len(write.stderr.splitlines()) == 1, write.stderr
            assert write.stderr.startswith("fairledger: ")
            assert "Traceback" not in write.stderr + write.stdout
    assert ledger_store.log_position() == head
    assert "late" in ledger_store.run("list-banks").stdout  # a writer's read catches up


def test_a_sqlite_ledger_in_a_read_only_directory_is_one_line(store: Store, tmp_path: Path) -> None:
    if store.kind != "sqlite":
        pytest.skip("a directory's mode is SQLite's concern; PostgreSQL's is the session above")
    store.run("create-db")
    path = Path(parse_store_url(store.url).path)
    assert not Path(f"{path}-wal").exists()  # every connection closed: nothing beside it
    tmp_path.chmod(0o555)
    try:
        with read_only(store):
            result = restricted(store, "list-banks")
    finally:
        tmp_path.chmod(0o755)
    assert result.returncode == 1
    # SQLite reads a WAL-mode file through -wal and -shm files it must create beside it.
    assert result.stderr == (
        f"fairledger: cannot read the ledger at sqlite:///{path}: SQLite must create its -wal "
        f"and -shm files in {tmp_path}, which this user may not write (give the user write "
        "access to the directory)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.db"]


def test_create_db_makes_missing_parent_directories(tmp_path: Path) -> None:
    """As flux-accounting's create-db does (a SQLite path; PostgreSQL's missing schema is
    created likewise, tested with every create-db)."""
    url = f"sqlite:///{tmp_path / 'var' / 'lib' / 'fairledger' / 'ledger.db'}"
    Store("sqlite", url).run("create-db")
    assert (tmp_path / "var" / "lib" / "fairledger" / "ledger.db").is_file()


def test_create_db_where_it_may_not_write_is_one_line(store: Store, tmp_path: Path) -> None:
    if store.kind == "postgres":
        result = restricted(store, "create-db")
        assert result.returncode == 1
        assert result.stderr == (
            "fairledger: database error: cannot execute CREATE SCHEMA in a read-only transaction\n"
        )
        assert "no ledger at" in store.run("list-banks", expect=1).stderr
        return
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        for where, refused in (
            (locked / "ledger.db", locked / "ledger.db"),
            (locked / "sub" / "ledger.db", locked / "sub"),
        ):
            result = restricted(Store("sqlite", f"sqlite:///{where}"), "create-db")
            assert result.returncode == 1
            assert result.stderr == (
                f"fairledger: cannot create the ledger at sqlite:///{where}: {refused}: "
                "Permission denied\n"
            )
    finally:
        locked.chmod(0o755)
    assert list(locked.iterdir()) == []
