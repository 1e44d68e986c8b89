"""sacct's lines against the same jobs as JSON lines: what `ingest --format sacct` costs beyond
the content it carries.

    .venv/bin/python -m bench.sacct_parity [--jobs N] [--rounds R]

`make bench` compares sacct's rate with the bench's JSON lines, but those carry fewer fields
(no UID, partition, GPU count, cluster, QOS, TRES or state), so its two rows ingest different
jobs. Here one SQLite ledger of the bench site (10,000 associations) is copied before each run,
and three inputs are ingested into the copies, alternated for R rounds: N jobs as sacct prints
them; the same N jobs as JSON lines carrying every field sacct's reader gives them; and N jobs
of the bench's own JSON lines, for reference. Each run's wall time, and the CPU it took (the
command and its helpers), per job. Equal rates for the first two say that reading sacct costs
nothing beyond the content.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from bench.generate import (
    EPOCH,
    WEEK,
    SiteSpec,
    populate,
    site_spec,
    write_jobs,
    write_sacct_jobs,
)
from bench.source import fairledger, measure_this_tree
from ledger.slurm.sacct_jobs import SacctRecords

NOW = EPOCH + 2 * WEEK + 3600.0  # after every generated job's end


@dataclass(frozen=True)
class Input:
    label: str
    path: str
    fmt: str


def _site_ledger(path: str, spec: SiteSpec) -> str:
    """A SQLite ledger of the bench site at `path`; the zone its sacct times are read in."""
    url = f"sqlite:///{path}"
    subprocess.run(fairledger(url, "create-db", now=EPOCH), check=True, capture_output=True)
    _transactions, timezone = populate(url, spec)
    return timezone


def sacct_as_json(sacct_path: str, timezone: str, out_path: str) -> int:
    """The jobs of a sacct file as JSON lines of the records sacct's reader makes of them."""
    with open(sacct_path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    reader, rest = SacctRecords(lines, timezone, sacct_path).split()
    items, _skipped = reader.items(list(rest), 1)
    records = [item for item in items if isinstance(item, dict)]
    with open(out_path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(record) + "\n" for record in records)
    return len(records)


def _ingest(base: str, folder: str, item: Input, jobs: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its helpers) of one ingest of `item`
    into a fresh copy of the site ledger."""
    copy = os.path.join(folder, "run.db")
    shutil.copyfile(base, copy)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        fairledger(f"sqlite:///{copy}", "ingest", "--format", item.fmt, item.path, now=NOW),
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    expected = f"recorded {jobs}, duplicate 0, unmatched 0"
    if done.returncode != 0 or done.stdout.strip() != expected:
        raise RuntimeError(f"{item.label}: {done.stdout.strip()} {done.stderr.strip()}")
    os.remove(copy)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    measure_this_tree()
    parser = argparse.ArgumentParser(prog="python -m bench.sacct_parity", description=__doc__)
    parser.add_argument("--jobs", type=int, default=125_000)
    parser.add_argument("--associations", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    spec = site_spec(args.associations)
    with tempfile.TemporaryDirectory(prefix="fairledger-sacct-parity-") as folder:
        base = os.path.join(folder, "site.db")
        timezone = _site_ledger(base, spec)
        sacct = os.path.join(folder, "jobs.sacct")
        write_sacct_jobs(sacct, spec, args.jobs, 1, EPOCH + WEEK, EPOCH + 2 * WEEK, "slurm")
        as_json = os.path.join(folder, "sacct-jobs.jsonl")
        if sacct_as_json(sacct, timezone, as_json) != args.jobs:
            raise RuntimeError("the sacct file's jobs were not all read")
        plain = os.path.join(folder, "jobs.jsonl")
        write_jobs([plain], spec, args.jobs, 1, EPOCH + WEEK, EPOCH + 2 * WEEK)
        inputs = [
            Input("sacct's lines (--format sacct)", sacct, "sacct"),
            Input("the same jobs as JSON lines", as_json, "jsonl"),
            Input("the bench's own JSON lines (fewer fields)", plain, "jsonl"),
        ]
        runs: dict[str, list[tuple[float, float]]] = {item.label: [] for item in inputs}
        for _ in range(args.rounds):
            for item in inputs:
                runs[item.label].append(_ingest(base, folder, item, args.jobs))
    table = Table(
        title=f"{args.jobs:,} jobs into a SQLite ledger of {args.associations:,} associations, "
        f"{args.rounds} alternated rounds"
    )
    table.add_column("input")
    table.add_column("wall, each round", justify="right")
    table.add_column("jobs/s, fastest", justify="right")
    table.add_column("CPU a job, least", justify="right")
    for item in inputs:
        walls = [wall for wall, _ in runs[item.label]]
        least_cpu = min(cpu for _, cpu in runs[item.label])
        table.add_row(
            item.label,
            " / ".join(f"{wall:.2f} s" for wall in walls),
            f"{args.jobs / min(walls):,.0f}",
            f"{1e6 * least_cpu / args.jobs:.1f} µs",
        )
    Console(width=120).print(table)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
