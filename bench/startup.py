"""Start-up: how long `fairledger --help` and a small read take, each the fastest of N runs (the
floor a cron run or a scheduler's call pays before any work; the minimum filters out the other
processes of a shared machine). Part of `python -m bench.run`; alone:

    .venv/bin/python -m bench.startup [--runs N]

The small read is on a SQLite ledger of two banks and one association, its read models current
(what a site's cron or scheduler finds between two changes)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.table import Table

from bench.source import fairledger_command, measure_this_tree

STARTUP_TARGET = 0.15  # seconds, issue 15
RUNS = 10
# (key, what is run, the command line after `fairledger --db URL`)
READS = (
    ("startup-help", "start-up: fairledger --help (fastest run)", ["--help"]),
    ("startup-view-bank", "start-up: view-bank root, small SQLite", ["view-bank", "root"]),
    ("startup-list-users", "start-up: list-users, small SQLite", ["list-users"]),
)
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


def measure(runs: int = RUNS) -> dict[str, tuple[str, bool]]:
    """key: (the fastest of `runs`, as text with the runs counted; whether it meets the
    target)."""
    env = _env()
    folder = tempfile.mkdtemp(prefix="fairledger-bench-startup-")
    try:
        head = [*fairledger_command(), "--db", f"sqlite:///{folder}/small.db"]
        for args in SITE:  # also writes the bytecode of the modules a read imports
            subprocess.run([*head, *args], capture_output=True, env=env, check=True)
        out = {}
        for key, _label, args in READS:
            subprocess.run([*head, *args], capture_output=True, env=env, check=True)  # its .pyc
            wall = _fastest([*head, *args], runs, env)
            out[key] = (f"{wall:.3f} s", wall <= STARTUP_TARGET)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def rows() -> list[tuple[str, str, str]]:
    """(key, measure, target) for bench.run's table."""
    return [(key, label, f"≤ {STARTUP_TARGET} s") for key, label, _args in READS]


def main(argv: list[str] | None = None) -> int:
    measure_this_tree()
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs of each (default {RUNS})")
    args = parser.parse_args(argv)
    measured = measure(args.runs)
    table = Table(title="fairledger start-up")
    table.add_column("measure", no_wrap=True)
    table.add_column("wall", justify="right")
    table.add_column("target")
    for key, label, target in rows():
        text, ok = measured[key]
        table.add_row(label, text + (" [green]✓[/green]" if ok else " [red]✗[/red]"), target)
    Console().print(table)
    return 0 if all(ok for _text, ok in measured.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
