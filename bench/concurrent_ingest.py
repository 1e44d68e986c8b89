"""Four ingesters at once on PostgreSQL, one per cluster, against one ingester of the same jobs.

    .venv/bin/python -m bench.concurrent_ingest [--jobs N] [--associations A] [--ingesters K]
                                                [--pg-url URL] [--separate]

Each run gets a fresh schema (create-db, the bank tree and the associations through the API, as
bench.run builds them). The same N generated jobs are split by job order into K files, each
naming its own cluster (a site with one cluster per file, as a site ingests each cluster's
sacct or Flux output); first one `fairledger ingest` records them all from one file, then on a
second fresh ledger K `fairledger ingest` processes start together, one file each. Each rate is
N over the wall time until the last ingester ends, and each ledger is then counted: N jobs in
the log's key index and in the jobs table, none lost and none twice.

With --separate (always in bench.run's row), the K files then go at once into K fresh ledgers,
one each, which share no lock, stream, chain, table or index: the rate a stream per cluster
could reach at best on this machine, beside what the one stream gives.

With --timeline, each ingester runs under bench.lock_timeline, and each run prints when each
ingester first asked for the writers' lock (its validation done), how long it held it, and the
CPU it and its server backend took: the recording chain the K share, against what each does
alone. With --stagger N, ingester k of the K runs at `nice` N·(k - 1): the first to start takes
the CPUs first, an order that ingesters started together cannot agree on by themselves, which
shows what staging them could give at best.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from bench.busy import machine_busy_seconds
from bench.generate import EPOCH, WEEK, SiteSpec, populate, site_spec, write_jobs
from bench.lock_timeline import TIMELINE_FILE, Timeline, timelines
from bench.pg_schemas import drop_schema, with_schema
from bench.source import fairledger, measure_this_tree
from bench.targets import DEFAULT_PG_URL
from ledger.store.connections import Connection, parse_store_url

NOW = EPOCH + WEEK + 3600.0  # after every generated job's end
MOST_NICE = 19  # the lowest priority `nice` gives


@dataclass(frozen=True)
class Run:
    wall: float
    busy: float  # seconds the machine's CPUs were busy meanwhile (its server's included)
    jobs: int  # what the ledger holds after it: job keys and jobs rows, which must agree
    rows: int
    timelines: list[Timeline] = field(default_factory=list)  # with Launch.timeline

    def shown(self, jobs: int) -> str:
        """Its rate, and what bounds it: how busy it kept the CPUs, and the CPU a job took."""
        cpus = os.cpu_count() or 1
        return (
            f"{jobs / self.wall:,.0f} jobs/s, the {cpus} CPUs "
            f"{100 * self.busy / (cpus * self.wall):.0f}% busy, "
            f"{1e6 * self.busy / jobs:.1f} µs of CPU a job"
        )


def _fairledger(url: str, *args: str, now: float = NOW) -> list[str]:
    return fairledger(url, *args, now=now)


@dataclass(frozen=True)
class Launch:
    """How the ingesters are started: ingester k at `nice` stagger·k (k from 0), and, with
    `timeline`, each under bench.lock_timeline."""

    stagger: int = 0
    timeline: bool = False

    def command(self, k: int, url: str, path: str) -> list[str]:
        niced = ["nice", "-n", str(self.stagger * k)] if self.stagger else []
        watched = [sys.executable, "-m", "bench.lock_timeline"] if self.timeline else None
        return [*niced, *fairledger(url, "ingest", path, now=NOW, command=watched)]


def _at_once(
    ingests: list[tuple[str, str]], launch: Launch = Launch()
) -> tuple[float, float, list[Timeline]]:
    """`fairledger ingest PATH` into each (ledger URL, PATH), all started together: (wall
    seconds until the last ends, the machine's busy CPU seconds meanwhile, each ingester's
    timeline with launch.timeline). Every ingester is waited for before the first failure is
    raised: a ledger is dropped only once nothing writes to it any more, and no ingester is
    left running."""
    with tempfile.TemporaryDirectory(prefix="fairledger-timeline-") as folder:
        started, busy = time.perf_counter(), machine_busy_seconds()
        procs = []
        for k, (url, path) in enumerate(ingests):
            timeline = {TIMELINE_FILE: os.path.join(folder, str(k))} if launch.timeline else {}
            procs.append(
                subprocess.Popen(
                    launch.command(k, url, path),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env={**os.environ, **timeline},
                )
            )
        failures = []
        for proc in procs:
            _out, err = proc.communicate()
            if proc.returncode != 0:
                failures.append(err.decode(errors="replace").strip())
        wall, used = time.perf_counter() - started, machine_busy_seconds() - busy
        if failures:
            raise RuntimeError(f"an ingester failed: {failures[0]}")
        return wall, used, timelines(folder) if launch.timeline else []


def _fresh_ledger(base: str, spec: SiteSpec) -> tuple[str, str]:
    schema = f"bench_{secrets.token_hex(4)}"
    url = with_schema(base, schema)
    subprocess.run(_fairledger(url, "create-db", now=EPOCH), check=True, capture_output=True)
    populate(url, spec)
    return url, schema


def _counted(url: str) -> tuple[int, int]:
    conn = Connection(parse_store_url(url))
    try:
        keys = conn.query("SELECT count(*) AS n FROM job_keys")[0]["n"]
        rows = conn.query("SELECT count(*) AS n FROM jobs")[0]["n"]
        return int(keys), int(rows)
    finally:
        conn.close()


def split_by_cluster(path: str, folder: str, ingesters: int) -> list[str]:
    """The generated jobs in `ingesters` files of consecutive jobs, file k's on cluster ck."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.readlines()
    size = -(-len(lines) // ingesters)
    paths = []
    for k in range(ingesters):
        part = os.path.join(folder, f"cluster{k + 1}.jsonl")
        with open(part, "w", encoding="utf-8") as out:
            for line in lines[k * size : (k + 1) * size]:
                out.write(line.replace('{"id":', f'{{"cluster":"c{k + 1}","id":', 1))
        paths.append(part)
    return paths


def one_ingester(
    base: str, spec: SiteSpec, paths: list[str], folder: str, launch: Launch = Launch()
) -> Run:
    """The K files' jobs, in one file, by one ingester."""
    together = os.path.join(folder, "all-clusters.jsonl")
    with open(together, "w", encoding="utf-8") as out:
        for path in paths:
            with open(path, encoding="utf-8") as part:
                out.write(part.read())
    url, schema = _fresh_ledger(base, spec)
    try:
        wall, busy, watched = _at_once([(url, together)], launch)
        return Run(wall, busy, *_counted(url), watched)
    finally:
        drop_schema(base, schema)


def concurrent_ingesters(
    base: str, spec: SiteSpec, paths: list[str], launch: Launch = Launch()
) -> Run:
    url, schema = _fresh_ledger(base, spec)
    try:
        wall, busy, watched = _at_once([(url, path) for path in paths], launch)
        return Run(wall, busy, *_counted(url), watched)
    finally:
        drop_schema(base, schema)


def separate_ledgers(base: str, spec: SiteSpec, paths: list[str], launch: Launch = Launch()) -> Run:
    """The K files at once, each into a ledger of its own: no lock, stream, chain, table or
    index shared between them. No design that keeps one ledger per site shares less, so this
    rate is the bound a stream per cluster (each with its own lock) could reach here."""
    ledgers: list[tuple[str, str]] = []
    try:
        for _path in paths:
            ledgers.append(_fresh_ledger(base, spec))
        wall, busy, watched = _at_once(
            [(url, path) for (url, _schema), path in zip(ledgers, paths, strict=True)], launch
        )
        counts = [_counted(url) for url, _schema in ledgers]
        return Run(
            wall,
            busy,
            sum(keys for keys, _rows in counts),
            sum(rows for _keys, rows in counts),
            watched,
        )
    finally:
        for _url, schema in ledgers:
            drop_schema(base, schema)


def covered(spans: list[tuple[float, float]]) -> float:
    """How long at least one of the (start, end) `spans`, sorted by start, lasted."""
    total, reach = 0.0, float("-inf")
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def timeline_lines(watched: list[Timeline]) -> list[str]:
    """Each ingester's time as bench.lock_timeline told it, in seconds from the first start,
    and the writers' lock over all of them: the recording chain the ingesters share."""
    if not watched:
        return []
    zero = min(t.started for t in watched)
    lines = []
    for k, t in enumerate(watched, start=1):
        asked = "never" if t.first_tried is None else f"at {t.first_tried - zero:.2f} s"
        server = "" if t.server_cpu < 0 else f", its server backend {t.server_cpu:.2f} s"
        ended = "?" if t.ended is None else f"{t.ended - zero:.2f}"
        lines.append(
            f"  ingester {k}: first asked for the lock {asked}, held it {t.held_seconds:.2f} s "
            f"in {len(t.held)} transactions, ended at {ended} s; CPU: its process "
            f"{t.cpu:.2f} s{server}"
        )
    spans = sorted(span for t in watched for span in t.held)
    if spans:
        first, last = spans[0][0], max(end for _, end in spans)
        lines.append(
            f"  the writers' lock: held {sum(end - start for start, end in spans):.2f} s in all; "
            f"from the first take at {first - zero:.2f} s to the last commit at "
            f"{last - zero:.2f} s, a ledger's lock was held {covered(spans):.2f} s of "
            f"{last - first:.2f}"
        )
    return lines


CONCURRENT_JOBS = 400_000  # enough that start-up is a small part of each ingester's time


def row(ingesters: int = 4) -> tuple[str, str, str]:
    """bench.run's row: (key, label, target)."""
    return (
        "concurrent-ingest",
        f"{ingesters} concurrent ingesters (one per cluster) vs 1, same jobs",
        "≥ 1.00× one ingester's rate, none lost or doubled",
    )


def measure(pg_url: str, spec: SiteSpec, jobs: int, ingesters: int = 4) -> tuple[str, bool]:
    """bench.run's cell: the ratio of the two rates and each rate, checked ✓ when the K
    ingesters are at least as fast and the ledger holds every job once."""
    base = pg_url.split("?")[0]
    with tempfile.TemporaryDirectory(prefix="fairledger-concurrent-") as folder:
        whole = os.path.join(folder, "jobs.jsonl")
        write_jobs([whole], spec, jobs, 1, EPOCH, EPOCH + WEEK)
        paths = split_by_cluster(whole, folder, ingesters)
        single = one_ingester(base, spec, paths, folder)
        together = concurrent_ingesters(base, spec, paths)
        apart = separate_ledgers(base, spec, paths)
    whole_count = all(run.jobs == run.rows == jobs for run in (single, together, apart))
    text = (
        f"{single.wall / together.wall:.2f}× ({together.shown(jobs)}; one: {single.shown(jobs)}; "
        f"the bound of a stream per cluster, each into a ledger of its own: "
        f"{single.wall / apart.wall:.2f}×, {apart.shown(jobs)}"
        f"{'' if whole_count else '; WRONG COUNT'})"
    )
    return text, whole_count and together.wall <= single.wall


def main(argv: list[str] | None = None) -> int:
    measure_this_tree()
    parser = argparse.ArgumentParser(prog="python -m bench.concurrent_ingest", description=__doc__)
    parser.add_argument("--jobs", type=int, default=CONCURRENT_JOBS)
    parser.add_argument("--associations", type=int, default=10_000)
    parser.add_argument("--ingesters", type=int, default=4)
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    parser.add_argument(
        "--separate",
        action="store_true",
        help="also the K files at once into K ledgers of their own: the bound a stream per "
        "cluster could reach on this machine",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="time each ingester's transactions under the writers' lock (bench.lock_timeline)",
    )
    parser.add_argument(
        "--stagger",
        type=int,
        default=0,
        metavar="N",
        help="run ingester k (from 0) at nice N·k: the first started takes the CPUs first",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.stagger * (args.ingesters - 1) <= MOST_NICE:
        parser.error(f"--stagger {args.stagger}: N·(K - 1) must be within 0..{MOST_NICE}")
    base = args.pg_url.split("?")[0]
    spec = site_spec(args.associations)
    launch = Launch(args.stagger, args.timeline)
    with tempfile.TemporaryDirectory(prefix="fairledger-concurrent-") as folder:
        whole = os.path.join(folder, "jobs.jsonl")
        write_jobs([whole], spec, args.jobs, 1, EPOCH, EPOCH + WEEK)
        paths = split_by_cluster(whole, folder, args.ingesters)
        single = one_ingester(base, spec, paths, folder, launch)
        together = concurrent_ingesters(base, spec, paths, launch)
        apart = separate_ledgers(base, spec, paths, launch) if args.separate else None
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs = [("1 ingester", single), (f"{args.ingesters} ingesters", together)]
    if apart is not None:
        runs.append((f"{args.ingesters} ingesters into {args.ingesters} ledgers", apart))
    for label, run in runs:
        whole_count = run.jobs == run.rows == args.jobs
        print(
            f"{label}: {args.jobs:,} jobs in {run.wall:.2f} s = {run.shown(args.jobs)}; "
            f"the ledger holds {run.jobs:,} job keys and {run.rows:,} jobs rows "
            f"({'none lost or doubled' if whole_count else 'WRONG COUNT'})"
        )
        for line in timeline_lines(run.timelines):
            print(line)
    ok = together.wall <= single.wall and together.jobs == together.rows == args.jobs
    print(
        f"{args.ingesters} concurrent ingesters reach {single.wall / together.wall:.2f}× one "
        f"ingester's rate: target ≥ 1.00× {'✓' if ok else '✗'}"
    )
    if apart is not None:
        print(
            f"{args.ingesters} ingesters into ledgers of their own reach "
            f"{single.wall / apart.wall:.2f}× one ingester's rate: the bound of a stream per "
            "cluster here"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
