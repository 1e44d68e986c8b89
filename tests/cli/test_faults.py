"""Faults, on both stores: `kill -9` at a random moment then the same command again, a full
disk (SQLite), exactly-once that does not lean on a read model, and temporary files that never
outlive a process."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import ledger.usecases.ingest as ingest_usecase
from ledger.store.connections import event_table_exists, parse_store_url
from tests.cli.test_ingest import _fresh, all_tables, job, recorded_in_log, site, write
from tests.conftest import PG_URL, REQUIRE_PG, T0, Store, _pg_reachable

ROOT = Path(__file__).resolve().parents[2]
NOW = T0 + 100  # every command of these tests runs at this ledger time
USERIDS = (5001, 5002, 7777)  # alice, bob, and a user the site does not know

# --- helpers ------------------------------------------------------------------------------------


def generated_jobs(path: Path, first_id: int, count: int, seed: int) -> str:
    """`count` jobs with ids from `first_id`, of alice, bob and an unknown user, as JSON lines."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as out:
        for job_id in range(first_id, first_id + count):
            duration = rng.randint(1, 7200)
            end = T0 - rng.randint(0, 7 * 86400)
            record = job(job_id, end=end, duration=duration, userid=rng.choice(USERIDS))
            record["nnodes"] = rng.randint(1, 4)
            out.write(json.dumps(record) + "\n")
    return str(path)


def subprocess_env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


# The killed processes record KILL_RECORD_LINES jobs per transaction instead of the real 25,000,
# so a few thousand jobs span several transactions (a kill can land between two) without the
# minute that twelve thousand took.
KILL_RECORD_LINES = 700
LAUNCH = (
    "import sys\n"
    "import ledger.usecases.ingest as ingest\n"
    "ingest.RECORD_LINES = int(sys.argv.pop(1))\n"
    "from cli.main import main\n"
    "main()\n"
)


def fairledger(url: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCH, str(KILL_RECORD_LINES), "--db", url, "--now", str(NOW)]
        + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def run_to_end(url: str, *args: str, env: dict[str, str]) -> str:
    proc = fairledger(url, *args, env=env)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, f"fairledger {' '.join(args)} exited {proc.returncode}: {err}"
    return out


def kill_after(proc: subprocess.Popen[str], delay: float) -> bool:
    """SIGKILL `proc` after `delay` seconds unless it finished first; whether it was killed."""
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        return True
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    return False


def timed(store: Store, *args: str) -> float:
    started = time.perf_counter()
    store.run(*args, now=NOW)
    return time.perf_counter() - started


def job_rows(store: Store) -> list[dict[str, Any]]:
    rows = all_tables(store)["jobs"]
    for row in rows:
        del row["position"]  # which event recorded a job depends on where a kill cut the input
    return rows


def values(store: Store) -> tuple[Any, str]:
    """What an admin reads: every association's usage and fair-share, and the bank tree."""
    users = json.loads(store.run("list-users", "--json", now=NOW).stdout)
    return users, store.run("view-bank", "root", "-t", now=NOW).stdout


def spool_leftovers(tmpdir: Path) -> list[str]:
    return sorted(name for name in os.listdir(tmpdir) if name.startswith("fairledger-"))


# --- kill -9 ------------------------------------------------------------------------------------

KILL_FILES = 2  # one killed ingest per file, each file on top of the ones before
KILL_JOBS = 2_000  # per file: three record transactions of KILL_RECORD_LINES
KILL_TRIALS = 2  # killed runs of update-usage, update-fshare and rebuild each
KILLED_COMMANDS = ("update-usage", "update-fshare", "rebuild")


@cache
def startup_seconds() -> float:
    """What a fairledger process spends importing before it does anything: the group, and the
    modules of the commands killed here (the group imports a command's module when it runs)."""
    started = time.perf_counter()
    code = "import cli.main, cli.jobs, cli.usage, cli.admin"
    subprocess.run([sys.executable, "-c", code], env=subprocess_env(), cwd=ROOT, check=True)
    return time.perf_counter() - started


@dataclass
class KillTrials:
    """One kind of store: a ledger whose commands are killed at random moments and then run
    again, and the in-process timings of the same commands on a reference ledger."""

    ledger: Store
    rng: random.Random
    env: dict[str, str]
    spool_dir: Path
    seconds: dict[str, float] = field(default_factory=dict)  # a whole run's, as last seen
    kills: Counter[str] = field(default_factory=Counter)
    trials: Counter[str] = field(default_factory=Counter)

    def expect(self, command: str, work_seconds: float) -> None:
        self.seconds.setdefault(command, startup_seconds() + work_seconds)

    def run(self, *args: str) -> None:
        """Kill the command at a random moment of a run's expected duration, then run it
        again to the end; `trials` times."""
        command = args[0]
        for _ in range(KILL_TRIALS if command in KILLED_COMMANDS else 1):
            delay = self.rng.uniform(0.3, 1.0) * self.seconds[command]
            self.trials[command] += 1
            self.kills[command] += kill_after(
                fairledger(self.ledger.url, *args, env=self.env), delay
            )
            assert spool_leftovers(self.spool_dir) == []
            started = time.perf_counter()
            run_to_end(self.ledger.url, *args, env=self.env)
            if command != "ingest":  # a re-run ingest has only the rest to record
                self.seconds[command] = time.perf_counter() - started


@pytest.fixture
def kill_trials(store: Store, tmp_path: Path) -> Iterator[list[KillTrials]]:
    """KillTrials on `store` and on a PostgreSQL schema beside it when `store` is SQLite: both
    run at once (each waits on its own subprocesses), which halves the test's time on two cores.
    Only the SQLite instance runs it; the other's ledger is verified here."""
    if store.kind != "sqlite":
        pytest.skip("runs on both stores at once in the [sqlite] instance")
    stores, drops = [store], []
    problem = _pg_reachable()
    if problem is None:
        other, drop = _fresh("postgres", tmp_path)
        stores.append(other)
        drops.append(drop)
    elif REQUIRE_PG:
        pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
    out = []
    for n, ledger in enumerate(stores):
        spool_dir = tmp_path / f"tmp-{ledger.kind}"
        spool_dir.mkdir()
        env = subprocess_env(TMPDIR=str(spool_dir))
        out.append(KillTrials(ledger, random.Random(10 + n), env, spool_dir))
    try:
        yield out
        for other in stores[1:]:  # `store` itself: the fixture verifies it
            if not event_table_exists(parse_store_url(other.url)):
                continue
            result = other.run("verify", now=None, expect=None)
            assert result.exit_code == 0, result.stderr
    finally:
        for drop in drops:
            drop()


def at_once(trials: list[KillTrials], step: Callable[[KillTrials], None]) -> None:
    with ThreadPoolExecutor(max_workers=len(trials)) as pool:
        list(pool.map(step, trials))


def reference_run(
    kind: str, tmp_path: Path, files: list[str], trials: KillTrials
) -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
    """The same commands, run once in-process on a new ledger: the jobs after each file, and
    what an admin reads after each command; their timings placed in `trials`."""
    reference, drop = _fresh(kind, tmp_path)
    try:
        reference.run("create-db")
        site(reference)
        jobs_after = []
        for path in files:
            trials.expect("ingest", timed(reference, "ingest", path))
            jobs_after.append(job_rows(reference))
        values_after = {}
        for command in KILLED_COMMANDS:
            trials.expect(command, timed(reference, command))
            values_after[command] = values(reference)
        return jobs_after, values_after
    finally:
        drop()


@pytest.mark.slow
def test_kill_9_then_the_same_command_again_is_an_uninterrupted_run(
    kill_trials: list[KillTrials], tmp_path: Path
) -> None:
    """ingest, update-usage, update-fshare and rebuild, each SIGKILLed after a seeded random
    delay and then run again, leave what the same commands run once leave: the same jobs (each
    once in the log), usage, fair-share and bank tree; no spool file is left behind."""
    files = [
        generated_jobs(tmp_path / f"jobs{n}.jsonl", 1 + n * KILL_JOBS, KILL_JOBS, seed=n)
        for n in range(KILL_FILES)
    ]
    expected = {
        trials.ledger.kind: reference_run(trials.ledger.kind, tmp_path, files, trials)
        for trials in kill_trials
    }
    for trials in kill_trials:
        trials.ledger.run("create-db")
        site(trials.ledger)
    for n, path in enumerate(files):
        at_once(kill_trials, lambda trials, path=path: trials.run("ingest", path))
        for trials in kill_trials:
            wanted = expected[trials.ledger.kind][0][n]
            assert job_rows(trials.ledger) == wanted
            in_log = recorded_in_log(trials.ledger)
            assert len(in_log) == len(set(in_log)) == len(wanted)
    for command in KILLED_COMMANDS:
        at_once(kill_trials, lambda trials, command=command: trials.run(command))
        for trials in kill_trials:
            assert values(trials.ledger) == expected[trials.ledger.kind][1][command]
    for trials in kill_trials:
        assert job_rows(trials.ledger) == expected[trials.ledger.kind][0][-1]
        print(
            f"kill -9 on {trials.ledger.kind}: trials {dict(trials.trials)}, "
            f"killed mid-run {dict(trials.kills)}"
        )
        assert sum(trials.kills.values()) > 0  # kills that all came too late would prove little


# --- a full disk (SQLite) -----------------------------------------------------------------------


def page_count(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def sqlite_ledger(tmp_path: Path) -> Iterator[tuple[Store, Path]]:
    """A SQLite ledger with a site, verified once the test is done (the full-disk knob is
    SQLite's)."""
    path = tmp_path / "full.db"
    ledger = Store("sqlite", f"sqlite:///{path}")
    ledger.run("create-db")
    site(ledger)
    yield ledger, path
    result = ledger.run("verify", now=None, expect=None)
    assert result.exit_code == 0, result.stderr


def test_a_full_disk_records_nothing_and_says_so(
    sqlite_ledger: tuple[Store, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, path = sqlite_ledger
    jobs = generated_jobs(tmp_path / "few.jsonl", 1, 50, seed=1)
    before, tables = ledger.log_position(), all_tables(ledger)
    monkeypatch.setenv("FAIRLEDGER_SQLITE_MAX_PAGES", str(page_count(path)))
    full = "fairledger: database error: database or disk is full; nothing recorded\n"
    result = ledger.run("ingest", jobs, now=NOW, expect=1)
    assert (result.stdout, result.stderr) == ("", full)
    assert ledger.log_position() == before
    assert all_tables(ledger) == tables
    monkeypatch.delenv("FAIRLEDGER_SQLITE_MAX_PAGES")
    assert ledger.run("ingest", jobs, now=NOW).stdout.startswith("recorded 50, duplicate 0,")


def test_a_disk_full_mid_ingest_says_how_many_were_recorded(
    sqlite_ledger: tuple[Store, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room for the first of two record transactions: the error says it is recorded, and the
    same ingest, once there is room, records the rest."""
    ledger, path = sqlite_ledger
    # Transactions of 5,000 jobs, a fifth of SQLite's, keep the input small.
    monkeypatch.setattr(ingest_usecase, "RECORD_LINES", 5_000)
    jobs = generated_jobs(tmp_path / "two-chunks.jsonl", 1, 10_000, seed=2)
    # How much one chunk of 5,000 jobs grows the file, measured on a copy.
    copy = tmp_path / "copy.db"
    source, target = sqlite3.connect(path), sqlite3.connect(copy)
    source.backup(target)
    source.close(), target.close()
    base = page_count(copy)
    first_half = generated_jobs(tmp_path / "half.jsonl", 1, 5_000, seed=2)
    Store("sqlite", f"sqlite:///{copy}").run("ingest", first_half, now=NOW)
    one_chunk = page_count(copy) - base
    monkeypatch.setenv("FAIRLEDGER_SQLITE_MAX_PAGES", str(base + one_chunk + one_chunk // 2))
    result = ledger.run("ingest", jobs, now=NOW, expect=1)
    assert (result.stdout, result.stderr) == (
        "",
        "fairledger: database error: database or disk is full after recording 5000 jobs; "
        "re-run the same ingest to complete it: recording is exactly-once\n",
    )
    assert len(job_rows(ledger)) == 5_000
    monkeypatch.delenv("FAIRLEDGER_SQLITE_MAX_PAGES")
    assert ledger.run("ingest", jobs, now=NOW).stdout.startswith("recorded 5000, duplicate 5000,")
    in_log = recorded_in_log(ledger)
    assert len(in_log) == len(set(in_log)) == 10_000


def test_the_full_disk_knob_must_be_a_number(
    sqlite_ledger: tuple[Store, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, _ = sqlite_ledger
    monkeypatch.setenv("FAIRLEDGER_SQLITE_MAX_PAGES", "lots")
    result = ledger.run("list-users", expect=1)
    assert result.stderr == (
        "fairledger: FAIRLEDGER_SQLITE_MAX_PAGES='lots': not a number of pages\n"
    )


def test_input_that_is_not_utf8_is_one_line(ledger_store: Store, tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(job(1)).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    for args, given in (((str(path),), None), (("-",), path.read_bytes())):
        result = ledger_store.run("ingest", *args, input=given, expect=1)
        assert result.stderr == (
            f"fairledger: {args[0]}: line 2: not UTF-8 (invalid continuation byte); "
            "nothing recorded\n"
        )
    assert recorded_in_log(ledger_store) == []


# --- exactly-once from the log, not a read model ------------------------------------------------


def delete_job_row(store: Store, job_id: str) -> None:
    from ledger.store.connections import Connection

    conn = Connection(parse_store_url(store.url))
    try:
        conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
    finally:
        conn.close()


def test_a_lost_read_model_row_does_not_let_a_job_be_recorded_twice(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    path = write(tmp_path / "jobs.jsonl", *(job(i) for i in (1, 2, 3)))
    ledger_store.run("ingest", path)
    delete_job_row(ledger_store, "2")
    result = ledger_store.run("ingest", path)
    assert result.stdout == "recorded 0, duplicate 3, unmatched 0\n"
    assert sorted(recorded_in_log(ledger_store)) == [("cluster", str(i)) for i in (1, 2, 3)]
    assert sorted(int(r["id"]) for r in job_rows(ledger_store)) == [1, 3]
    ledger_store.run("rebuild")  # the row comes back from the log
    assert sorted(int(r["id"]) for r in job_rows(ledger_store)) == [1, 2, 3]


def test_a_job_saying_something_else_is_a_conflict_not_recorded(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    ledger_store.run("ingest", write(tmp_path / "a.jsonl", job(1, duration=10)))
    position = ledger_store.log_position()
    result = ledger_store.run("ingest", write(tmp_path / "b.jsonl", job(1, duration=20), job(2)))
    assert result.stdout == "recorded 1, duplicate 0, unmatched 0, conflicting 1\n"
    assert result.stderr == (
        f"fairledger: conflict: job 1 (cluster cluster) differs from the record at log position "
        f"{position}; not recorded\n"
    )
    # Within one input: the first line of a job stands, a different repeat is a conflict.
    result = ledger_store.run("ingest", write(tmp_path / "c.jsonl", job(3), job(3, duration=5)))
    assert result.stdout == "recorded 1, duplicate 0, unmatched 0, conflicting 1\n"
    assert result.stderr == (
        "fairledger: conflict: job 3 (cluster cluster) differs from an earlier line of this "
        "input; not recorded\n"
    )
    durations = {int(r["id"]): r["t_inactive"] - r["t_run"] for r in job_rows(ledger_store)}
    assert durations == {1: 10, 2: 10, 3: 10}
    assert sorted(recorded_in_log(ledger_store)) == [("cluster", str(i)) for i in (1, 2, 3)]


def test_a_job_again_after_a_weight_change_is_a_duplicate(
    ledger_store: Store, tmp_path: Path
) -> None:
    """The charge is fixed with the weights in force when a job is first recorded: the same job
    priced under other weights is the same job."""
    site(ledger_store)
    path = write(tmp_path / "jobs.jsonl", job(1), job(2))
    ledger_store.run("ingest", path)
    ledger_store.run("edit-config", "node_weight=2")
    result = ledger_store.run("ingest", path)
    assert (result.stdout, result.stderr) == (
        "recorded 0, duplicate 2, unmatched 0\n",
        "nothing new: every job was already recorded\n",
    )
