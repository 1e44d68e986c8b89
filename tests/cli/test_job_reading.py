"""A Slurm site's whole reading in parts, read at once by helper processes
(projections.writers.job_reading): the same numbers to the bit as one process reading every
job, whatever the parts, on both stores; a helper that fails has its part read by the command;
and no helper reads while the command's own transaction holds job rows others cannot see.

The parts are forced here (a site of a few dozen jobs is far below the size that starts
helpers): every update runs beside a twin ledger that reads in one process."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.store.connections import Connection, StoreConfig, parse_store_url
from projections.writers import job_reading
from tests.cli.test_continuous_incremental import _shown, _slurm_site
from tests.cli.test_cron import twin  # noqa: F401 (a fixture)
from tests.cli.test_ingest import job, write
from tests.conftest import T0, Store


class Helpers:
    """How many helpers a reading starts (0: one process), and what they did."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.started = 0
        self.answered = 0
        monkeypatch.setattr(job_reading, "HELPER_MIN_ROWS", 1)
        monkeypatch.setattr(job_reading, "_helper_count", lambda store: self.count)
        real_init, real_answer = job_reading._Helper.__init__, job_reading._Helper.answer

        def init(helper: Any, part: job_reading.Part) -> None:
            self.started += 1
            real_init(helper, part)

        def answer(helper: Any) -> Any:
            found = real_answer(helper)
            self.answered += found is not None
            return found

        monkeypatch.setattr(job_reading._Helper, "__init__", init)
        monkeypatch.setattr(job_reading._Helper, "answer", answer)


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Helpers]:
    yield Helpers(monkeypatch)


JOBS = 3 * 11 + 1  # the jobs _jobs records


def _jobs(tmp_path: Path, now: float) -> list[str]:
    """Three inputs (so three log positions to split): alice's jobs in her default bank and in
    chemistry, bob's by userid alone, a job of nobody's (it counts nowhere), and one of
    alice's still running at `now`, which counts only its part up to it."""
    files = []
    for n in range(3):
        base = 100 * n
        lines = [job(base + k, end=T0 - 500 * k - n, duration=30 + k) for k in range(1, 9)]
        lines += [
            job(base + 10, end=T0 - n, duration=77, bank="chemistry"),
            job(base + 11, end=T0 - 40 - n, duration=50, userid=5002),
            job(base + 12, end=T0 - 60, duration=20, userid=9999, username="nobody"),
        ]
        files.append(write(tmp_path / f"jobs{n}.jsonl", *lines))
    files.append(write(tmp_path / "running.jsonl", job(999, end=now + 500, duration=900)))
    return files


def _whole_reading(store: Store, tmp_path: Path, now: float) -> dict[str, Any]:
    """A Slurm site with the jobs of _jobs, then a site event and an update: a whole reading."""
    _slurm_site(store)
    for path in _jobs(tmp_path / store.kind, now):
        store.run("ingest", path, now=now - 100)
    store.run("add-config", "site_note=x", now=now)
    store.run("update-fshare", now=now)
    return _shown(store, now)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_parts_read_by_helpers_give_one_processs_numbers(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    helpers: Helpers,
    count: int,
) -> None:
    (tmp_path / store.kind).mkdir()
    now = T0 + 600
    helpers.count = count
    shown = _whole_reading(store, tmp_path, now)
    assert (helpers.started, helpers.answered) == (count, count)
    # Two whole readings more: the update after a site event, and a past moment before it.
    past = _later_past(store, tmp_path, now)
    assert (helpers.started, helpers.answered) == (3 * count, 3 * count)
    helpers.count = 0
    assert shown == _whole_reading(twin, tmp_path, now)
    assert past == _later_past(twin, tmp_path, now)
    assert helpers.started == 3 * count
    assert shown["users"][("alice", "physics")][0] > 0  # the reading counted jobs


def _later_past(store: Store, tmp_path: Path, now: float) -> str:
    """More jobs, a site event and an update after `now`, then the tree as of just after
    `now`: with a site event between, the moment reads every job recorded by then (up to its
    log position), and none after."""
    # Running at the moment, but recorded after it: it must not count.
    later = write(tmp_path / store.kind / "later.jsonl", job(5000, end=now + 50, duration=100))
    store.run("ingest", later, now=now + 100)
    store.run("add-config", "later_note=y", now=now + 200)
    store.run("update-fshare", now=now + 300)
    return store.run("view-bank", "root", "-t", "--as-of", str(now + 1), now=now + 400).stdout


@pytest.mark.parametrize(
    "helper",
    [
        "exit 3",  # ends before answering
        r"printf '\200\005\225'; exit 4",  # ends in the middle of its answer
    ],
)
def test_a_helper_that_fails_has_its_part_read_by_the_command(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    helpers: Helpers,
    monkeypatch: pytest.MonkeyPatch,
    helper: str,
) -> None:
    (tmp_path / store.kind).mkdir()
    now = T0 + 600
    # Helpers are started as `sys.executable -m projections.writers.job_reading`: here, a
    # script that ignores its arguments and its input, and ends as `helper` says.
    fake = tmp_path / "helper.sh"
    fake.write_text(f"#!/bin/sh\n{helper}\n")
    fake.chmod(0o755)
    with monkeypatch.context() as patched:
        patched.setattr(sys, "executable", str(fake))
        helpers.count = 2
        shown = _whole_reading(store, tmp_path, now)
    assert (helpers.started, helpers.answered) == (2, 0)
    helpers.count = 0
    assert shown == _whole_reading(twin, tmp_path, now)


def test_no_helper_reads_while_the_transaction_holds_unseen_jobs(
    store: Store,
    tmp_path: Path,
    helpers: Helpers,
) -> None:
    """A rebuild records every job again in its one transaction, then updates from them:
    other connections still see the rows as they were committed (or none), so its readings
    are made in the command's own process."""
    (tmp_path / store.kind).mkdir()
    now = T0 + 600
    shown = _whole_reading(store, tmp_path, now)
    helpers.count = 2
    store.run("rebuild", now=None)
    assert helpers.started == 0
    assert _shown(store, now) == shown


@pytest.mark.parametrize(("threshold", "started"), [(JOBS, 2), (JOBS + 1, 0)])
def test_helpers_start_only_from_the_threshold(
    store: Store,
    tmp_path: Path,
    helpers: Helpers,
    monkeypatch: pytest.MonkeyPatch,
    threshold: int,
    started: int,
) -> None:
    (tmp_path / store.kind).mkdir()
    monkeypatch.setattr(job_reading, "HELPER_MIN_ROWS", threshold)
    helpers.count = 2
    _whole_reading(store, tmp_path, T0 + 600)
    assert helpers.started == started


def test_a_transaction_knows_the_tables_it_inserted_into(tmp_path: Path) -> None:
    conn = Connection(StoreConfig(kind="sqlite", path=str(tmp_path / "t.db")))
    try:
        conn.execute("CREATE TABLE jobs (id INTEGER)")
        with conn.transaction():
            conn.insert_rows("jobs", ("id",), [])
            assert conn.inserted == set()  # no row, nothing unseen
            conn.insert_rows("jobs", ("id",), [(1,)])
            assert conn.inserted == {"jobs"}
        assert conn.inserted == set()
        with pytest.raises(ZeroDivisionError), conn.transaction():
            conn.insert_rows("jobs", ("id",), [(2,)])
            assert conn.inserted == {"jobs"}
            raise ZeroDivisionError
        assert conn.inserted == set()
        assert conn.rows("SELECT id FROM jobs") == [(1,)]
    finally:
        conn.close()


def test_rows_are_inserted_from_a_generator(store: Store) -> None:
    """insert_rows takes rows made as they are sent (insert_jobs hands it a generator): each
    is stored, an empty generator stores nothing and marks no table, and an error raised
    midway is the one raised, with none of its rows left (the COPY is abandoned)."""
    store.run("create-db")
    conn = Connection(parse_store_url(store.url))
    try:
        with conn.transaction():
            conn.execute("CREATE TABLE made (n INTEGER, label TEXT)")
        with conn.transaction():
            conn.insert_rows("made", ("n", "label"), (row for row in ()))
            assert conn.inserted == set()
            conn.insert_rows("made", ("n", "label"), ((n, f"r{n}") for n in range(3)))
            assert conn.inserted == {"made"}

        def breaking() -> Iterator[tuple[int, str]]:
            yield (10, "sent before the error")
            raise ZeroDivisionError

        with pytest.raises(ZeroDivisionError), conn.transaction():
            conn.insert_rows("made", ("n", "label"), breaking())
        assert conn.rows("SELECT n, label FROM made ORDER BY n") == [
            (0, "r0"),
            (1, "r1"),
            (2, "r2"),
        ]
    finally:
        conn.close()
