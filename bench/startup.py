"""Start-up: how long `fairledger --help` and a small read take, each the fastest of N runs (the
floor a cron run or a scheduler's call pays before any work; the minimum filters out the other
processes of a shared machine). Part of `python -m bench.run`; alone:

    .venv/bin/python -m bench.startup [--runs N] [--pg-url URL | --no-postgres]

The small reads are on a ledger of two banks and one association, its read models current
(what a site's cron or scheduler finds between two changes): on SQLite, and on PostgreSQL
(--pg-url, the bench's server by default) in a schema made for the run, where the driver's own
import is part of the start-up."""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.table import Table

from bench.pg_schemas import drop_schema, with_schema
from bench.source import fairledger_command, measure_this_tree
from bench.targets import DEFAULT_PG_URL

STARTUP_TARGET = 0.15  # seconds, issue 15
RUNS = 10
# (key, what is run, the command line after `fairledger --db URL`)
READS = (
    ("startup-help", "start-up: fairledger --help (fastest run)", ["--help"]),
    ("startup-view-bank", "start-up: view-bank root, small SQLite", ["view-bank", "root"]),
    ("startup-list-users", "start-up: list-users, small SQLite", ["list-users"]),
)
# PostgreSQL's small read, measured when a server is given: (key, what is run, the command).
POSTGRES_READ = (
    "startup-view-bank-pg",
    "start-up: view-bank root, small PostgreSQL",
    ["view-bank", "root"],
)
POSTGRES_KEYS = (POSTGRES_READ[0],)
SITE = (
    ["create-db"],
    ["add-bank", "root", "1"],
    ["add-bank", "physics", "50", "--parent-bank", "root"],
    ["add-user", "--username", "alice", "--userid", "5001", "--bank", "physics"],
)


def _env() -> dict[str, str]:
    """The environment without FAIRLEDGER_ settings, and with bytecode written: an installed
    fairledger has its modules compiled (pip does it), while PYTHONDONTWRITEBYTECODE would make
    every run recompile each module changed since its last .pyc."""
    skipped = ("PYTHONDONTWRITEBYTECODE",)
    return {
        k: v for k, v in os.environ.items() if not k.startswith("FAIRLEDGER_") and k not in skipped
    }


def _fastest(argv: list[str], runs: int, env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=True)
        best = min(best, time.perf_counter() - started)
    return best


def measure(runs: int = RUNS, pg_url: str | None = None) -> dict[str, tuple[str, bool]]:
    """key: (the fastest of `runs`, as text with the runs counted; whether it meets the
    target). `pg_url`: a PostgreSQL database to measure POSTGRES_READ in too."""
    env = _env()
    folder = tempfile.mkdtemp(prefix="fairledger-bench-startup-")
    try:
        out = _reads(f"sqlite:///{folder}/small.db", READS, runs, env)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if pg_url is not None:
        schema = f"bench_startup_{secrets.token_hex(4)}"
        try:
            out |= _reads(with_schema(pg_url, schema), (POSTGRES_READ,), runs, env)
        except Exception as err:  # noqa: BLE001 - a server that fails is a row that says so
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            out[POSTGRES_READ[0]] = (f"failed: {first}", False)
        finally:
            with contextlib.suppress(Exception):  # nothing to drop where nothing was made
                drop_schema(pg_url, schema)
    return out


def _reads(
    url: str, reads: tuple[tuple[str, str, list[str]], ...], runs: int, env: dict[str, str]
) -> dict[str, tuple[str, bool]]:
    """`reads` on a new small ledger at `url`."""
    head = [*fairledger_command(), "--db", url]
    for args in SITE:  # also writes the bytecode of the modules a read imports
        subprocess.run([*head, *args], capture_output=True, env=env, check=True)
    out = {}
    for key, _label, args in reads:
        subprocess.run([*head, *args], capture_output=True, env=env, check=True)  # its .pyc
        wall = _fastest([*head, *args], runs, env)
        out[key] = (f"{wall:.3f} s", wall <= STARTUP_TARGET)
    return out


def rows() -> list[tuple[str, str, str]]:
    """(key, measure, target) for bench.run's table."""
    return [(key, label, f"≤ {STARTUP_TARGET} s") for key, label, _args in (*READS, POSTGRES_READ)]


def main(argv: list[str] | None = None) -> int:
    measure_this_tree()
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs of each (default {RUNS})")
    parser.add_argument(
        "--pg-url", default=DEFAULT_PG_URL, help="PostgreSQL database for its small read"
    )
    parser.add_argument("--no-postgres", action="store_true", help="SQLite's reads alone")
    args = parser.parse_args(argv)
    measured = measure(args.runs, None if args.no_postgres else args.pg_url)
    table = Table(title="fairledger start-up")
    table.add_column("measure", no_wrap=True)
    table.add_column("wall", justify="right")
    table.add_column("target")
    for key, label, target in rows():
        if key not in measured:
            continue
        text, ok = measured[key]
        table.add_row(label, text + (" [green]✓[/green]" if ok else " [red]✗[/red]"), target)
    Console().print(table)
    return 0 if all(ok for _text, ok in measured.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
