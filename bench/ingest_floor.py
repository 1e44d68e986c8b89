"""The floor under ingest: what the steps every ingest must take cost in CPython, one by one,
without any of fairledger's code, beside what fairledger's own steps cost.

    .venv/bin/python -m bench.ingest_floor [--jobs N]

The issue's targets (100k jobs/s on SQLite, 50k on PostgreSQL) leave 10 µs (20 µs) of one core
per job. Whatever the implementation, a job read from JSON lines into a validated, exactly-once,
append-only log must at least be decoded, given an identity digest, encoded into its event and
written as rows. This measures those four with the standard library alone (json, hashlib,
sqlite3), on the bench's own job lines, so the table shows how much of the budget the
interpreter takes before any validation, and how much fairledger's steps add. It prints µs per
job, the fastest of three runs of each step (the machine may be shared).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.generate import site_spec, write_jobs
from ledger.chain import record_digest
from ledger.ingest import parse_lines, to_record

RUNS = 3
SQLITE_BUDGET_US = 10.0  # 100k jobs/s on one core
POSTGRES_BUDGET_US = 20.0  # 50k jobs/s


def best_of(work: Callable[[], object], n_jobs: int) -> float:
    """µs per job of `work` over all the jobs, the fastest of RUNS."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times) / n_jobs * 1e6


def _digest(record: dict[str, Any]) -> str:
    # The least an identity digest costs: one canonical encoding and one sha256.
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sqlite_rows(rows: list[tuple[Any, ...]], events: list[str]) -> None:
    """One transaction: the event rows (a batch of jobs each) and one key row per job, in a
    fresh file, with the key's unique index the exactly-once check needs."""
    with tempfile.TemporaryDirectory(prefix="fairledger-floor-") as folder:
        conn = sqlite3.connect(os.path.join(folder, "floor.sqlite"))
        conn.execute("CREATE TABLE events (position INTEGER PRIMARY KEY, state TEXT)")
        conn.execute(
            "CREATE TABLE keys (cluster TEXT, id TEXT, digest TEXT, position INTEGER,"
            " PRIMARY KEY (cluster, id))"
        )
        with conn:
            conn.executemany("INSERT INTO events (state) VALUES (?)", [(e,) for e in events])
            conn.executemany("INSERT INTO keys VALUES (?, ?, ?, ?)", rows)
        conn.close()


def measure(lines: list[str]) -> list[tuple[str, float]]:
    """(step, µs per job) for the floor's steps and fairledger's."""
    n = len(lines)
    decoded = [json.loads(line) for line in lines]
    batch = 1000
    rows = [("c", str(d["id"]), _digest(d), i // batch) for i, d in enumerate(decoded)]
    events = [
        json.dumps({"records": decoded[i : i + batch]}, separators=(",", ":"))
        for i in range(0, n, batch)
    ]
    floor = [
        ("json.loads of each line", best_of(lambda: [json.loads(x) for x in lines], n)),
        ("sha256 of a sorted-keys encoding", best_of(lambda: [_digest(d) for d in decoded], n)),
        (
            "json.dumps of the events (1,000 jobs each)",
            best_of(
                lambda: [
                    json.dumps({"records": decoded[i : i + batch]}, separators=(",", ":"))
                    for i in range(0, n, batch)
                ],
                n,
            ),
        ),
        (
            "SQLite: event rows + a keyed row per job",
            best_of(lambda: _sqlite_rows(rows, events), n),
        ),
    ]
    parsed = parse_lines(lines)
    if parsed.bad:  # the generator's lines are valid: anything else is a broken bench
        raise SystemExit(f"bench lines refused: {parsed.bad[0]}")
    records = [to_record(job, 1.0, 0.0, 0.0) for job in parsed.records]
    ours = [
        ("fairledger: decode + validate (parse_lines)", best_of(lambda: parse_lines(lines), n)),
        (
            "fairledger: record shape + charge (to_record)",
            best_of(lambda: [to_record(j, 1.0, 0.0, 0.0) for j in parsed.records], n),
        ),
        ("fairledger: record digest", best_of(lambda: [record_digest(r) for r in records], n)),
    ]
    return floor + ours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest_floor", description=__doc__)
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args(argv)
    spec = site_spec(1_000, seed=1)
    with tempfile.TemporaryDirectory(prefix="fairledger-floor-data-") as folder:
        path = os.path.join(folder, "jobs.jsonl")
        write_jobs([path], spec, args.jobs, 1, 1.7e9, 1.7e9 + 7 * 86400.0)
        with open(path, encoding="utf-8") as handle:
            lines = handle.readlines()
    steps = measure(lines)
    table = Table(title=f"ingest floor, {len(lines):,} jobs (µs per job, fastest of {RUNS})")
    table.add_column("step")
    table.add_column("µs/job", justify="right")
    floor_total = 0.0
    for name, micros in steps:
        if not name.startswith("fairledger"):
            floor_total += micros
        table.add_row(name, f"{micros:.2f}")
    table.add_row("[b]floor: the four standard-library steps[/b]", f"[b]{floor_total:.2f}[/b]")
    table.add_row("budget at 100k jobs/s (SQLite)", f"{SQLITE_BUDGET_US:.2f}")
    table.add_row("budget at 50k jobs/s (PostgreSQL)", f"{POSTGRES_BUDGET_US:.2f}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    Console().print(table)
    print(f"load average {load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
