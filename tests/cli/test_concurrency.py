"""Writers at once, on both stores: four ingesters on overlapping files and four admins editing
in loops, as separate processes on the system clock. Every process finishes (none gives up on
the writers' lock), each job is recorded once, no admin's edit is lost, and the log's times
never decrease."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_faults import ROOT, generated_jobs, subprocess_env
from tests.cli.test_ingest import recorded_in_log, site
from tests.conftest import Store

INGESTERS = 4
JOBS_PER_FILE = 1_500  # each file overlaps the next by half: 3,750 distinct jobs in all
ADMINS = 4
ROUNDS = 3  # per admin: a queue, a user with it, and the queue on the shared association

# One admin: its own queues and users, and the shared association's queues, edited in a loop;
# in-process commands, one after another, as a script would run them.
ADMIN_LOOP = """
import sys
from click.testing import CliRunner
from cli.main import cli

url, me, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for n in range(rounds):
    for args in (
        ["add-queue", f"{me}-q{n}"],
        ["add-user", "-u", f"{me}-u{n}", "-B", "physics"],
        ["edit-user", f"{me}-u{n}", "--add-queue", f"{me}-q{n}"],
        ["edit-user", "shared", "--add-queue", f"{me}-q{n}"],
    ):
        result = CliRunner().invoke(cli, ["--db", url, *args], prog_name="fairledger")
        if result.exit_code:
            sys.exit(f"{' '.join(args)}: exit {result.exit_code}: {result.stderr}")
"""


def _process(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=ROOT,
        timeout=300,
        check=False,
    )


def log_times(store: Store) -> list[float]:
    """Every event's time, in log order."""
    from ledger.store.application import Ledger
    from ledger.store.connections import parse_store_url

    ledger = Ledger(parse_store_url(store.url))
    try:
        times: list[float] = []
        start = 0
        while page := ledger.recorder.select_notifications(
            start=start, limit=500, inclusive_of_start=False
        ):
            for notification in page:
                event: Any = ledger.mapper.to_domain_event(notification)
                times.append(event.timestamp.timestamp())
            start = page[-1].id
        return times
    finally:
        ledger.close()


@pytest.mark.slow
def test_ingesters_and_admins_at_once(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    ledger_store.run("add-user", "-u", "shared", "-B", "physics")
    step = JOBS_PER_FILE // 2
    files = [
        generated_jobs(tmp_path / f"jobs{n}.jsonl", 1 + n * step, JOBS_PER_FILE, seed=0)
        for n in range(INGESTERS)
    ]
    ingest = [["-m", "cli.main", "--db", ledger_store.url, "ingest", path] for path in files]
    admin = [["-c", ADMIN_LOOP, ledger_store.url, f"a{n}", str(ROUNDS)] for n in range(ADMINS)]
    with ThreadPoolExecutor(max_workers=INGESTERS + ADMINS) as pool:
        results = list(pool.map(_process, ingest + admin))
    assert [r.returncode for r in results] == [0] * len(results), [r.stderr for r in results]

    distinct = INGESTERS * step + step
    recorded = [int(r.stdout.split(",")[0].split()[1]) for r in results[:INGESTERS]]
    assert sum(recorded) == distinct
    in_log = recorded_in_log(ledger_store)
    assert len(in_log) == len(set(in_log)) == distinct

    users = {
        (row["username"], row["bank"]): row
        for row in json.loads(ledger_store.run("list-users", "--json", now=None).stdout)
    }
    queues = [f"a{a}-q{n}" for a in range(ADMINS) for n in range(ROUNDS)]
    assert sorted(users[("shared", "physics")]["queues"].split(",")) == sorted(queues)
    for a in range(ADMINS):
        for n in range(ROUNDS):
            assert users[(f"a{a}-u{n}", "physics")]["queues"] == f"a{a}-q{n}"

    times = log_times(ledger_store)
    assert times == sorted(times)
