"""The fairledger benchmark: one command, one table.

    .venv/bin/python -m bench.run [--quick] [--jobs N] [--associations A]
                                  [--stores sqlite,postgres] [--pg-url URL] [--profile DIR]

For each store it builds a site (create-db, then the bank tree and the associations through the
Python API), ingests N generated jobs ending over 8 weeks with the real CLI in a subprocess, one
run per week at the week's end followed by update-usage + update-fshare (a weekly cron; the
last week's update is the cold one, after the full load), ingests 10,000 more jobs and updates
again, rebuilds the read models, and asks view-bank root -t --as-of three past moments. Then
the same N jobs are ingested in one run into a fresh ledger of the same site, as a site
backfills its history. Every CLI step is timed by wall clock and its peak RSS
taken (/usr/bin/time -f %M, else the child's own rusage from os.wait4). A step whose processes
use no CPU, while no PostgreSQL backend works for it, for --stall-seconds is killed and
reported as hung (with what pg_stat_activity showed). The table goes to stdout and to
bench/results/latest.txt. Exit status: 0 all targets met, 1 a target missed, 2 a step failed.

PostgreSQL: the ledger lives in a fresh schema bench_<random>, dropped afterwards (--keep keeps
it). --pg-db-functions runs the CLI with POSTGRES_ENABLE_DB_FUNCTIONS=y, so eventsourcing inserts
events through its SQL function instead of a psycopg pipeline (a diagnostic: that path does not
take the table lock that orders concurrent writers, so it is not a production setting).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import math
import os
import platform
import random
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import concurrent_ingest, cron_bench, ingest_ceiling, startup
from bench.busy import machine_busy_seconds, read_stolen_and_total_ticks, stolen_share_text
from bench.generate import (
    EPOCH,
    WEEK,
    SiteSpec,
    populate,
    site_spec,
    write_jobs,
    write_sacct_jobs,
)
from bench.pg_schemas import drop_schema, with_schema
from bench.process_cpu import OwnCpu, children, cpu_ticks
from bench.source import fairledger_command, measure_this_tree
from bench.targets import DEFAULT_PG_URL, INGEST_TARGET
from ledger.store.connections import Connection, parse_store_url

RESULTS = Path(__file__).resolve().parent / "results"
WEEKS = 8
EXTRA_JOBS = 10_000
# --scale: how each figure grows from the default size (docs/architecture.md, "Scale").
SCALE_JOBS, SCALE_ASSOCIATIONS = 10_000_000, 50_000
SACCT_CLUSTER = "slurm"  # the sacct jobs' cluster: their ids never meet the JSON jobs'
MIB = 1024 * 1024

# Targets (the project's).
UPDATE_COLD_TARGET = 5.0
UPDATE_WARM_TARGET = 0.5
REBUILD_TARGET = 60.0
RSS_TARGET_MIB = 1024.0

STORE_TITLES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}

log_console = Console(stderr=True)


def log(message: str) -> None:
    log_console.print(f"[dim]{datetime.now().strftime('%H:%M:%S')}[/dim] {message}")


# --- running the CLI ---------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    wall: float
    rss_kib: int | None
    stdout: str
    stderr: str
    cpu: float = 0.0  # the command's processes: user + system seconds
    machine_cpu: float = 0.0  # every CPU of the machine, busy seconds over the same wall
    own_cpu: float | None = None  # the command's own process, its helpers left out (process_cpu)

    @property
    def rss_mib(self) -> float | None:
        return None if self.rss_kib is None else self.rss_kib / 1024


class CliFailed(RuntimeError):
    short = "failed"


class CliHung(CliFailed):
    short = "HUNG"


class PgActivity:
    """What the PostgreSQL backends of one CLI run are doing, found by application_name (the
    CLI's libpq connections take it from PGAPPNAME). A backend "active" and not waiting for the
    client is the server working for us; "active" but waiting in ClientRead is a client that
    stopped sending mid-message."""

    def __init__(self, url: str, app_name: str) -> None:
        self.url = url.split("?")[0]
        self.app_name = app_name
        self._conn: Any = None

    def _rows(self) -> list[tuple[Any, ...]]:
        import psycopg

        if self._conn is None:
            self._conn = psycopg.connect(self.url, autocommit=True)
        return list(
            self._conn.execute(
                "SELECT pid, state, wait_event_type, wait_event, "
                "round(extract(epoch FROM now() - query_start)::numeric, 1), "
                "left(regexp_replace(query, '\\s+', ' ', 'g'), 90) "
                "FROM pg_stat_activity WHERE application_name = %s",
                (self.app_name,),
            ).fetchall()
        )

    def busy(self) -> bool:
        try:
            return any(r[1] == "active" and r[3] != "ClientRead" for r in self._rows())
        except Exception:  # noqa: BLE001 - the watchdog must not die
            return False

    def describe(self) -> str:
        try:
            rows = self._rows()
        except Exception as err:  # noqa: BLE001
            return f"(pg_stat_activity unavailable: {err})"
        return "; ".join(
            f"backend {pid} {state} wait={etype}/{event} for {secs}s: {query}"
            for pid, state, etype, event, secs, query in rows
            if state != "idle"
        )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Cli:
    """Runs `fairledger --db URL --now T ...` in a subprocess: wall time and peak RSS."""

    def __init__(
        self,
        url: str,
        label: str,
        profile_dir: Path | None = None,
        stall_seconds: float = 120.0,
        extra_env: dict[str, str] | None = None,
        profiler: str = "cprofile",
        server: PgActivity | None = None,
    ) -> None:
        self.url = url
        self.server = server
        self.label = label
        self.profile_dir = profile_dir
        self.profiler = profiler
        self.stall_seconds = stall_seconds
        self.time_bin = shutil.which("time", path="/usr/bin:/bin")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRLEDGER_")}
        self.env.update(extra_env or {})
        if server is not None:
            self.env["PGAPPNAME"] = server.app_name

    def _argv(self, name: str, args: list[str], now: float | None) -> list[str]:
        if self.profile_dir is not None and self.profiler == "pyinstrument":
            out = self.profile_dir / f"{self.label}-{name}.txt"
            base = [sys.executable, "-m", "pyinstrument", "-r", "text", "--no-color"]
            base += ["-o", str(out), "-m", "cli.main"]
        elif self.profile_dir is not None:
            out = self.profile_dir / f"{self.label}-{name}.prof"
            base = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "cli.main"]
        else:
            base = fairledger_command()
        argv = [*base, "--db", self.url]
        if now is not None:
            argv += ["--now", f"{now:.3f}"]
        return argv + args

    def run(self, name: str, args: list[str], now: float | None) -> Step:
        argv = self._argv(name, args, now)
        with tempfile.TemporaryDirectory(prefix="fairledger-bench-") as tmp:
            out_path, err_path, rss_path = Path(tmp, "out"), Path(tmp, "err"), Path(tmp, "rss")
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                timed = argv
                if self.time_bin:
                    timed = [self.time_bin, "-f", "%M", "-o", str(rss_path), *argv]
                busy_before = machine_busy_seconds()
                started = time.perf_counter()
                popen = subprocess.Popen(
                    timed, stdout=out, stderr=err, env=self.env, start_new_session=True
                )
                # Under /usr/bin/time (timed is then another list) the command is its child.
                own = OwnCpu(popen.pid, wrapped=timed is not argv).start()
                usage, stalled = self._wait(popen)
                wall = time.perf_counter() - started
                own_cpu = own.stop()
                machine_cpu = machine_busy_seconds() - busy_before
            rss = _read_time_rss(rss_path) if self.time_bin else int(usage.ru_maxrss)
            stdout = out_path.read_text(errors="replace")
            stderr = err_path.read_text(errors="replace")
        if stalled is not None:
            raise CliHung(
                f"{name}: hung: client and server idle for {self.stall_seconds:.0f} s, killed "
                f"after {wall:.0f} s" + (f"; {stalled}" if stalled else "")
            )
        if popen.returncode != 0:
            raise CliFailed(
                f"{' '.join(argv)} exited {popen.returncode}\n"
                f"stdout: {stdout.strip()}\nstderr: {stderr.strip()}"
            )
        cpu = usage.ru_utime + usage.ru_stime  # os.wait4's: the child and what it reaped
        return Step(name, wall, rss, stdout, stderr, cpu, machine_cpu, own_cpu)

    def _wait(self, popen: subprocess.Popen[bytes]) -> tuple[Any, str | None]:
        """Wait for the child (os.wait4: its own rusage) while a watchdog thread kills it if
        its process tree uses no CPU, and no PostgreSQL backend works for it, for
        `stall_seconds`. Returns the rusage and, if killed, what the server showed."""
        done = threading.Event()
        stalled: list[str] = []

        # A client blocked on a socket still wakes up now and then (psycopg polls every
        # 100 ms, the pool has worker threads): "stalled" is under 1% of a CPU for the window.
        ticks_per_second = os.sysconf("SC_CLK_TCK")
        allowed = 0.01 * self.stall_seconds * ticks_per_second

        def watch() -> None:
            samples: deque[tuple[float, float]] = deque()
            server_work = 0.0  # a busy backend counts as progress
            while not done.wait(1.0):
                if self.server is not None and self.server.busy():
                    server_work += allowed + 1
                now, cpu = time.monotonic(), _tree_cpu_ticks(popen.pid) + server_work
                samples.append((now, cpu))
                while len(samples) > 1 and now - samples[1][0] >= self.stall_seconds:
                    samples.popleft()
                first_at, first_cpu = samples[0]
                if now - first_at >= self.stall_seconds and cpu - first_cpu <= allowed:
                    stalled.append(self.server.describe() if self.server is not None else "")
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(popen.pid, signal.SIGKILL)
                    return

        watchdog = threading.Thread(target=watch, daemon=True)
        watchdog.start()
        try:
            _pid, status, usage = os.wait4(popen.pid, 0)
        finally:
            done.set()
            watchdog.join()
        popen.returncode = os.waitstatus_to_exitcode(status)
        if self.server is not None:
            self.server.close()
        return usage, (stalled[0] if stalled else None)


def _tree_cpu_ticks(pid: int) -> int:
    """The CPU a process and its descendants have taken (Linux /proc), those that ended
    included: without them, an ingest whose helpers ended after validating a 10M-job backfill
    fell back by their minutes of CPU, and the watchdog killed it as hung while it recorded."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        ticks = cpu_ticks(current, reaped=True)
        if ticks is None:
            continue
        total += ticks
        todo.extend(children(current))
    return total


def cpu_per_job(steps: list[Step], jobs: int, cpus: int) -> str:
    """The CPU an ingest took per job, its command's and the rest of the machine's (on
    PostgreSQL, mostly its server; the bench's own watchdog is a little of it), and the rate
    that CPU would allow if every CPU were kept busy: the bound that no overlap of client and
    server can pass. Where the command's own process was read (process_cpu), its CPU is split
    into the process's and its helpers', and the process's and the rest's together are set
    against the wall: they are the recording chain, the process and its server taking turns
    on one transaction while the helpers validate beside them, so where they fill the wall,
    that chain is what bounds the ingest."""
    client = sum(step.cpu for step in steps) / jobs
    rest = max(0.0, sum(step.machine_cpu for step in steps) / jobs - client)
    bound = cpus / (client + rest) if client + rest > 0 else math.inf
    allowed = f"(≤ {bound:,.0f} jobs/s on {cpus} CPUs)"
    owns = [step.own_cpu for step in steps if step.own_cpu is not None]
    if len(owns) < len(steps):
        return f"{client * 1e6:.1f} + {rest * 1e6:.1f} µs {allowed}"
    own = sum(owns) / jobs
    helpers = max(0.0, client - own)
    wall = sum(step.wall for step in steps) / jobs
    return (
        f"{own * 1e6:.1f} (its process) + {helpers * 1e6:.1f} (its helpers) + {rest * 1e6:.1f} µs "
        f"{allowed}; the process and the rest: {(own + rest) * 1e6:.1f} µs against a wall of "
        f"{wall * 1e6:.1f} µs"
    )


def _read_time_rss(path: Path) -> int | None:
    try:
        lines = path.read_text().strip().splitlines()
    except OSError:
        return None
    for line in reversed(lines):  # "Command terminated by signal 9" may come first
        if line.strip().isdigit():
            return int(line.strip())
    return None


# --- measures ----------------------------------------------------------------------------------


@dataclass
class Cell:
    text: str
    ok: bool | None = None  # None: no target

    def render(self) -> str:
        mark = "" if self.ok is None else (" [green]✓[/green]" if self.ok else " [red]✗[/red]")
        return self.text + mark


@dataclass
class StoreResult:
    store: str
    cells: dict[str, Cell] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    error: str | None = None
    current: str = ""  # the measure being taken (marked failed if a step fails)

    def add(self, key: str, text: str, ok: bool | None = None) -> None:
        self.cells[key] = Cell(text, ok)


def _secs(value: float) -> str:
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def _mib(step: Step) -> tuple[str, bool | None]:
    if step.rss_mib is None:
        return "n/a", None
    return f"{step.rss_mib:,.0f} MiB", step.rss_mib <= RSS_TARGET_MIB


_COUNTS = re.compile(r"recorded (\d+), duplicate (\d+), unmatched (\d+)")


def _ingest_counts(step: Step, expected: int | None) -> tuple[int, int]:
    match = _COUNTS.search(step.stdout)
    if match is None:
        raise CliFailed(f"unexpected ingest output: {step.stdout!r}")
    recorded, _duplicate, unmatched = (int(g) for g in match.groups())
    if expected is not None and recorded != expected:
        raise CliFailed(f"ingest recorded {recorded} of {expected} jobs: {step.stdout.strip()}")
    return recorded, unmatched


def _usage_snapshot(url: str) -> dict[tuple[str, str], tuple[float, float]]:
    conn = Connection(parse_store_url(url))
    try:
        rows = conn.query("SELECT username, bank, job_usage, fairshare FROM association_table")
    finally:
        conn.close()
    return {(r["username"], r["bank"]): (r["job_usage"], r["fairshare"]) for r in rows}


def _checkpoint_rows(url: str) -> tuple[int, int]:
    """Rows the fair-share checkpoints store, and how many snapshots they hold."""
    conn = Connection(parse_store_url(url))
    try:
        rows = int(conn.query("SELECT COUNT(*) AS n FROM fairshare_checkpoints")[0]["n"])
        marks = int(conn.query("SELECT COUNT(*) AS n FROM fairshare_checkpoint_marks")[0]["n"])
        return rows, marks
    finally:
        conn.close()


def _count_jobs(url: str) -> int:
    conn = Connection(parse_store_url(url))
    try:
        return int(conn.query("SELECT COUNT(*) AS n FROM jobs")[0]["n"])
    finally:
        conn.close()


@dataclass
class Data:
    spec: SiteSpec
    jobs_paths: list[str]  # one file per week, ingested at the week's end
    extra_path: str
    n_jobs: int
    n_extra: int
    sacct_path: str  # a week's worth of jobs as sacct prints them, on a cluster of their own
    n_sacct: int
    backfill_path: str  # the weekly files' jobs in one file: a site's history in one ingest


def _update_pair(cli: Cli, result: StoreResult, label: str, now: float) -> tuple[Step, Step]:
    """The accounting cron's pair: update-usage, then update-fshare."""
    usage = cli.run(f"update-usage-{label}", ["update-usage"], now=now)
    fshare = cli.run(f"update-fshare-{label}", ["update-fshare"], now=now)
    result.steps += [usage, fshare]
    return usage, fshare


def measure_store(result: StoreResult, url: str, data: Data, cli: Cli) -> None:
    title = STORE_TITLES[result.store]
    t_full = EPOCH + WEEKS * WEEK  # the full load is ingested, then updated, at this time
    t_more = t_full + 3600.0  # the extra jobs end in the hour after it
    t_sacct = t_more + 3600.0  # the sacct jobs end in the hour after that

    # 1. Site set-up: create-db (CLI), then banks and associations through the Python API.
    log(f"{title}: create-db")
    result.current = "create-db"
    step = cli.run("create-db", ["create-db"], now=EPOCH)
    result.steps.append(step)
    result.add("create-db", _secs(step.wall))
    log(f"{title}: {len(data.spec.banks)} banks + {len(data.spec.associations):,} associations")
    result.current = "setup"
    started = time.perf_counter()
    transactions, _zone = populate(url, data.spec)
    setup = time.perf_counter() - started
    result.add("setup", f"{_secs(setup)} ({transactions} transactions)")

    # 2. Ingest the full load as a weekly cron would: each week's jobs at the week's end, then
    # update-usage + update-fshare (so the history has a fair-share snapshot every week).
    weeks = len(data.jobs_paths)
    log(f"{title}: ingest {data.n_jobs:,} jobs in {weeks} weekly runs")
    result.current = "ingest-rate"
    recorded = unmatched = 0
    ingests: list[Step] = []
    cron = 0.0
    for week, path in enumerate(data.jobs_paths):
        at = EPOCH + (week + 1) * WEEK
        step = cli.run(f"ingest-week{week + 1}", ["ingest", path], now=at)
        ingests.append(step)
        week_recorded, week_unmatched = _ingest_counts(step, None)
        recorded += week_recorded
        unmatched += week_unmatched
        if week < weeks - 1:  # the last week's update is the cold one, timed below
            usage, fshare = _update_pair(cli, result, f"week{week + 1}", at)
            cron += usage.wall + fshare.wall
    if recorded != data.n_jobs:
        raise CliFailed(f"ingest recorded {recorded} of {data.n_jobs} jobs")
    result.steps += ingests
    wall = sum(step.wall for step in ingests)
    rate = recorded / wall
    result.add("ingest-time", f"{_secs(wall)} ({weeks} runs, {unmatched} unmatched)")
    result.add("ingest-rate", f"{rate:,.0f} jobs/s", rate >= INGEST_TARGET[result.store])
    result.add("ingest-cpu", cpu_per_job(ingests, recorded, os.cpu_count() or 1))
    result.add("rss-ingest", *_mib(max(ingests, key=lambda s: s.rss_kib or 0)))
    result.add("weekly-updates", f"{_secs(cron)} ({weeks - 1} × 2 runs)")
    log(f"{title}: {rate:,.0f} jobs/s ({wall:.1f} s)")
    # The same machine, minutes apart: whether the target is within the stack's reach here.
    log(f"{title}: the ingest ceiling, {ingest_ceiling.BENCH_JOBS:,} jobs")
    result.current = "ingest-ceiling"
    for key, cell in ingest_ceiling.measure(result.store, url).items():
        result.add(key, *cell)

    # 3. update-usage + update-fshare, cold after the full load...
    log(f"{title}: update-usage + update-fshare after the full load")
    result.current = "update-cold"
    usage, fshare = _update_pair(cli, result, "cold", t_full)
    total = usage.wall + fshare.wall
    result.add(
        "update-cold",
        f"{_secs(total)} ({usage.wall:.2f} + {fshare.wall:.2f})",
        total <= UPDATE_COLD_TARGET,
    )
    rss = max(usage, fshare, key=lambda s: s.rss_kib or 0)
    result.add("rss-update", *_mib(rss))

    # ... then after the extra jobs.
    log(f"{title}: ingest {data.n_extra:,} more jobs, update again")
    result.current = "ingest-more"
    step = cli.run("ingest-more", ["ingest", data.extra_path], now=t_more)
    result.steps.append(step)
    recorded, _unmatched = _ingest_counts(step, data.n_extra)
    result.add("ingest-more", f"{_secs(step.wall)} ({recorded / step.wall:,.0f} jobs/s)")
    result.current = "update-warm"
    usage, fshare = _update_pair(cli, result, "warm", t_more)
    total = usage.wall + fshare.wall
    result.add(
        "update-warm",
        f"{_secs(total)} ({usage.wall:.2f} + {fshare.wall:.2f})",
        total <= UPDATE_WARM_TARGET,
    )

    # 4. Full rebuild; it must reproduce the read models it replaced.
    before = _usage_snapshot(url)
    log(f"{title}: rebuild")
    result.current = "rebuild"
    step = cli.run("rebuild", ["rebuild"], now=t_more)
    result.steps.append(step)
    result.add("rebuild", _secs(step.wall), step.wall <= REBUILD_TARGET)
    result.add("rss-rebuild", *_mib(step))
    result.current = "rebuild-same"
    after = _usage_snapshot(url)
    jobs = _count_jobs(url)
    same = before == after and jobs == data.n_jobs + data.n_extra
    result.add(
        "rebuild-same",
        f"{len(after):,} associations, {jobs:,} jobs" + ("" if same else " DIFFER"),
        same,
    )

    # 5. Time travel: the tree at past moments: two in the weekly history (usage from the jobs
    # recorded by then, the week's snapshot in force) and one in the hour after the full load
    # (an older snapshot in force than the newest).
    rng = random.Random(result.store)
    moments = sorted(rng.uniform(EPOCH + WEEK, t_full) for _ in range(2))
    moments.append(t_full + rng.uniform(1.0, 3599.0))
    result.current = "as-of"
    walls = []
    for n, asked in enumerate(moments):
        log(f"{title}: view-bank root -t --as-of {asked:.0f}")
        args = ["view-bank", "root", "-t", "--as-of", f"{asked:.3f}"]
        step = cli.run(f"as-of-{n + 1}", args, now=t_more)
        result.steps.append(step)
        walls.append(step.wall)
    each = ", ".join(f"{wall:.2f}" for wall in walls)
    result.add(
        "as-of", f"{_secs(max(walls))} (max of {each})", max(walls) <= cron_bench.AS_OF_TARGET
    )

    # The audit reads on the same history: one association's fair-share at every
    # snapshot, and why a job of the last week got its priority.
    first = data.spec.associations[0]
    result.current = "report"
    args = ["report", "fairshare-history", "--user", first.username, "--bank", first.bank]
    step = cli.run("report", args, now=t_more)
    result.steps.append(step)
    result.add("report", _secs(step.wall))
    result.current = "explain"
    step = cli.run("explain-job", ["explain-job", str(data.n_jobs)], now=t_more)
    result.steps.append(step)
    result.add("explain", _secs(step.wall))
    rows, snapshots = _checkpoint_rows(url)
    full = snapshots * len(data.spec.associations)
    result.add("checkpoints", f"{rows:,} of {full:,} ({snapshots} snapshots)")

    # 6. A Slurm site's ingest: sacct's output, at the JSON rate. Last, on a cluster of its
    # own, so that the measures above see the same ledger with or without it.
    log(f"{title}: ingest --format sacct, {data.n_sacct:,} jobs")
    result.current = "ingest-sacct"
    step = cli.run("ingest-sacct", ["ingest", "--format", "sacct", data.sacct_path], now=t_sacct)
    result.steps.append(step)
    recorded, _unmatched = _ingest_counts(step, data.n_sacct)
    sacct_rate = recorded / step.wall
    result.add(
        "ingest-sacct",
        f"{sacct_rate:,.0f} jobs/s ({_secs(step.wall)}, 1 run)",
        sacct_rate >= INGEST_TARGET[result.store],
    )
    result.current = "cron"  # last: its Fair Tree row switches the site's algorithm
    first_id = data.n_jobs + data.n_extra + 1
    cells = cron_bench.measure(cli, url, data.spec, first_id, t_sacct, result.steps)
    for key, (text, ok) in cells.items():
        result.add(key, text, ok)
    if result.store == "postgres":  # on two fresh ledgers of its own
        log(f"{title}: 4 concurrent ingesters against 1")
        result.current = "concurrent-ingest"
        jobs = min(data.n_jobs, concurrent_ingest.CONCURRENT_JOBS)
        result.add("concurrent-ingest", *concurrent_ingest.measure(url, data.spec, jobs))
    result.current = ""


def measure_backfill(result: StoreResult, url: str, data: Data, cli: Cli) -> None:
    """The full load in one ingest into a fresh ledger of the same site, as a site backfills
    its history (one transaction): the ingest rate without the weekly runs' fixed costs, which
    each run pays whatever its size (start-up, the site's load, the helpers' first piece, the
    period totals, ANALYZE: 0.91 s of a 125,000-job run's 3.25 s at stop 51)."""
    title = STORE_TITLES[result.store]
    log(f"{title}: backfill, {data.n_jobs:,} jobs in one ingest into a fresh ledger")
    result.current = "ingest-backfill"
    result.steps.append(cli.run("backfill-create-db", ["create-db"], now=EPOCH))
    populate(url, data.spec)
    step = cli.run("ingest-backfill", ["ingest", data.backfill_path], now=EPOCH + WEEKS * WEEK)
    result.steps.append(step)
    recorded, _unmatched = _ingest_counts(step, data.n_jobs)
    rate = recorded / step.wall
    rss, _ok = _mib(step)
    result.add(
        "ingest-backfill",
        f"{rate:,.0f} jobs/s ({_secs(step.wall)}, peak RSS {rss})",
        rate >= INGEST_TARGET[result.store],
    )
    result.add("backfill-cpu", cpu_per_job([step], recorded, os.cpu_count() or 1))
    result.current = ""


# --- stores ------------------------------------------------------------------------------------


def _server_versions(pg_url: str, stores: list[str]) -> str:
    parts = [f"SQLite {sqlite3.sqlite_version}"]
    if "postgres" in stores:
        try:
            import psycopg

            with psycopg.connect(pg_url.split("?")[0]) as conn:
                row = conn.execute("SHOW server_version").fetchone()
                parts.append(f"PostgreSQL {row[0] if row else '?'}")
        except Exception as err:  # noqa: BLE001 - only a label
            parts.append(f"PostgreSQL unreachable ({type(err).__name__})")
    return ", ".join(parts)


def run_store(
    store: str, args: argparse.Namespace, data: Data, profile_dir: Path | None
) -> StoreResult:
    started = time.perf_counter()
    result = StoreResult(store)
    extra_env = {}
    if store == "sqlite":
        workdir = tempfile.mkdtemp(prefix="fairledger-bench-sqlite-")
        url = f"sqlite:///{workdir}/ledger.db"
        backfill_url = f"sqlite:///{workdir}/backfill.db"
    else:
        schema = f"bench_{secrets.token_hex(4)}"
        url = with_schema(args.pg_url, schema)
        backfill_url = with_schema(args.pg_url, f"{schema}_backfill")
        if args.pg_db_functions:
            extra_env["POSTGRES_ENABLE_DB_FUNCTIONS"] = "y"

    def cli_for(ledger_url: str, label: str) -> Cli:
        # A PostgreSQL run's backends are told apart by its ledger's schema (PgActivity).
        server = None
        if store == "postgres":
            server = PgActivity(args.pg_url, f"fairledger-{parse_store_url(ledger_url).schema}")
        timeout = args.stall_seconds
        return Cli(ledger_url, label, profile_dir, timeout, extra_env, args.profiler, server)

    cli = cli_for(url, store)
    try:
        measure_store(result, url, data, cli)
        measure_backfill(result, backfill_url, data, cli_for(backfill_url, f"{store}-backfill"))
    except Exception as err:  # noqa: BLE001 - reported in the table
        result.error = f"{type(err).__name__}: {err}"
        short = err.short if isinstance(err, CliFailed) else "error"
        if result.current:
            result.add(result.current, short, False)
        log(f"[red]{STORE_TITLES[store]} failed:[/red] {result.error}")
    finally:
        if args.keep:
            log(f"{STORE_TITLES[store]} ledgers kept at {url} and {backfill_url}")
        elif store == "sqlite":
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            for name in (schema, f"{schema}_backfill"):
                try:
                    drop_schema(args.pg_url, name)
                except Exception as err:  # noqa: BLE001
                    log(f"[red]could not drop schema {name}: {err}[/red]")
    if result.steps:
        peak = max(result.steps, key=lambda s: s.rss_kib or 0)
        text, ok = _mib(peak)
        result.add("rss-peak", f"{text} ({peak.name})", ok)
    result.add("total", _secs(time.perf_counter() - started))
    return result


# --- the table ---------------------------------------------------------------------------------


def rows(n_jobs: int, n_assoc: int, n_extra: int) -> list[tuple[str, str, str]]:
    """(key, measure, target) in table order."""
    rss = f"≤ {RSS_TARGET_MIB:,.0f} MiB"
    rates = f"≥ {INGEST_TARGET['sqlite']:,.0f} /s SQLite, ≥ {INGEST_TARGET['postgres']:,.0f} /s PG"
    cpu_split = "process + helpers + rest (PG: server); process + rest vs wall"
    return [
        *startup.rows(),
        ("create-db", "set-up: create-db (CLI)", ""),
        ("setup", f"set-up: banks + {n_assoc:,} associations (API + catch-up)", ""),
        ("ingest-time", f"ingest {n_jobs:,} jobs (CLI wall)", ""),
        ("ingest-rate", "ingest rate", rates),
        ("ingest-cpu", f"ingest CPU per job: {cpu_split}", ""),
        (
            "ingest-backfill",
            f"ingest {n_jobs:,} jobs in one run (a backfill into a fresh ledger; CLI wall)",
            rates,
        ),
        ("backfill-cpu", f"backfill CPU per job: {cpu_split}", ""),
        *ingest_ceiling.rows(),
        ("weekly-updates", "update-usage + update-fshare after each earlier week", ""),
        ("update-cold", "update-usage + update-fshare, full load", f"≤ {UPDATE_COLD_TARGET} s"),
        ("ingest-more", f"ingest {n_extra:,} more jobs (CLI wall)", ""),
        (
            "update-warm",
            f"update-usage + update-fshare, +{n_extra:,} jobs",
            f"≤ {UPDATE_WARM_TARGET} s",
        ),
        *cron_bench.rows(),
        ("rebuild", "rebuild (CLI wall)", f"≤ {REBUILD_TARGET:.0f} s"),
        ("rebuild-same", "rebuild reproduces usage + fair-share", "identical"),
        (
            "as-of",
            "view-bank root -t --as-of (3 past moments)",
            f"≤ {cron_bench.AS_OF_TARGET:.0f} s",
        ),
        ("report", "report fairshare-history --user U (every snapshot)", ""),
        ("explain", "explain-job (the last job of the load)", ""),
        ("checkpoints", "fair-share checkpoint rows stored (of a full copy each)", ""),
        (
            "ingest-sacct",
            f"ingest --format sacct, {n_jobs // WEEKS:,} jobs (CLI wall)",
            f"as ingest rate: ≥ {INGEST_TARGET['sqlite']:,.0f} / {INGEST_TARGET['postgres']:,.0f}",
        ),
        concurrent_ingest.row(),
        ("rss-ingest", "peak RSS: ingest", rss),
        ("rss-update", "peak RSS: update-usage / update-fshare", rss),
        ("rss-rebuild", "peak RSS: rebuild", rss),
        ("rss-peak", "peak RSS: any CLI subprocess", rss),
        ("total", "benchmark wall time for this store", ""),
    ]


def make_table(
    results: list[StoreResult], n_jobs: int, n_assoc: int, n_extra: int, caption: str
) -> Table:
    table = Table(title="fairledger benchmark", caption=caption, caption_justify="left")
    table.add_column("measure", no_wrap=True)
    for r in results:
        table.add_column(STORE_TITLES[r.store], justify="right")
    table.add_column("target")
    for key, label, target in rows(n_jobs, n_assoc, n_extra):
        cells = []
        for r in results:
            cell = r.cells.get(key)
            cells.append(cell.render() if cell else ("—" if r.error else ""))
        table.add_row(label, *cells, target)
    return table


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description="fairledger benchmark (see bench/run.py)"
    )
    parser.add_argument("--jobs", type=int, default=None, help="jobs in the full load (1,000,000)")
    parser.add_argument("--associations", type=int, default=None, help="associations (10,000)")
    parser.add_argument("--stores", default="sqlite,postgres", help="sqlite,postgres")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1,000 associations, 50,000 jobs"
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="the on-demand size: 50,000 associations, 10,000,000 jobs (about 20 minutes a "
        "store on 2 cores; 1.5 GB of generated JSON)",
    )
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="PostgreSQL database to use")
    parser.add_argument(
        "--pg-db-functions",
        action="store_true",
        help="PostgreSQL: insert events through eventsourcing's SQL function, not a psycopg "
        "pipeline (diagnostic; see the module docstring)",
    )
    parser.add_argument(
        "--stall-seconds",
        type=float,
        default=120.0,
        help="kill a CLI step whose processes use under 1%% of a CPU, with no busy PostgreSQL "
        "backend, for this long (default 120)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="run each CLI step under a profiler, writing DIR/<store>-<step>.prof (cProfile) "
        "or .txt (pyinstrument); the times are then inflated by the profiler",
    )
    parser.add_argument(
        "--profiler",
        choices=["cprofile", "pyinstrument"],
        default="cprofile",
        help="with --profile: cProfile (stdlib) or pyinstrument (sampling; pip install it "
        "into the venv)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the ledgers after the run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--startup-runs",
        type=int,
        default=startup.RUNS,
        help=f"runs of each start-up measure, the fastest kept (default {startup.RUNS})",
    )
    args = parser.parse_args(argv)
    if args.quick and args.scale:
        parser.error("--quick and --scale are two sizes: give one")
    if args.jobs is None:
        args.jobs = 50_000 if args.quick else SCALE_JOBS if args.scale else 1_000_000
    if args.associations is None:
        args.associations = 1_000 if args.quick else SCALE_ASSOCIATIONS if args.scale else 10_000
    stores = [s.strip().lower() for s in args.stores.split(",") if s.strip()]
    stores = ["postgres" if s in ("pg", "postgresql") else s for s in stores]
    if not stores or any(s not in STORE_TITLES for s in stores):
        parser.error(f"--stores: use sqlite and/or postgres (got {args.stores!r})")
    args.stores = stores
    return args


def _code_version() -> str:
    """The commit measured, and whether the working tree differs from it (read-only git)."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # never refresh (write) the index
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' + uncommitted changes' if changed else ''}"


def _source_digest() -> str:
    """A digest of the measured code (ledger/, projections/, cli/): if it differs between the
    start and the end of a run, someone changed the code under it and the figures mix versions."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in ("ledger", "projections", "cli"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            with contextlib.suppress(OSError):
                digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


REFERENCE_LOOP = 10_000_000


def _reference_loop() -> float:
    """Seconds of a plain CPython loop, the fastest of 3: machines of the same kind differ
    (one ran this 2.5 times slower than another), and every figure here is CPython's."""
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for step in range(REFERENCE_LOOP):
            total += step
        best = min(best, time.perf_counter() - started)
    return best


def reference_loops() -> dict[int, float]:
    """The reference loop on each CPU this process may run on, pinned to it in turn (CPU ->
    seconds): a virtual machine's CPUs can run at different speeds at the same minute (0.17
    against 0.25 s seen here), and each step ran on whichever the scheduler chose. One
    unpinned figure (key -1) where a process cannot be pinned."""
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return {-1: _reference_loop()}
    loops: dict[int, float] = {}
    try:
        for cpu in sorted(allowed):
            os.sched_setaffinity(0, {cpu})
            loops[cpu] = _reference_loop()
    except OSError:
        loops = {}  # measured unpinned below, once the process is free again
    finally:
        os.sched_setaffinity(0, allowed)
    return loops or {-1: _reference_loop()}


def loops_text(before: dict[int, float], after: dict[int, float]) -> str:
    """The caption's line for the reference loops taken before and after the run."""

    def one(loops: dict[int, float]) -> str:
        if list(loops) == [-1]:
            return f"{loops[-1]:.2f} s (on no CPU in particular)"
        return ", ".join(f"CPU {cpu} {seconds:.2f} s" for cpu, seconds in sorted(loops.items()))

    return (
        f"This machine's CPython: a {REFERENCE_LOOP:,}-step loop (the fastest of 3 on each CPU) "
        f"took {one(before)} before the run and {one(after)} after it; compare it before "
        "comparing figures of two runs or two machines."
    )


def _load() -> str:
    one, five, _fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


def main(argv: list[str] | None = None) -> int:
    measure_this_tree()
    args = parse_args(argv)
    command = "python -m bench.run " + " ".join(sys.argv[1:] if argv is None else argv)
    profile_dir = args.profile.resolve() if args.profile else None
    if profile_dir:
        profile_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_before = _load()
    loops_before = reference_loops()
    stolen_before = read_stolen_and_total_ticks()
    code, digest = _code_version(), _source_digest()
    data_dir = tempfile.mkdtemp(prefix="fairledger-bench-data-")
    try:
        log(f"generating {args.associations:,} associations, {args.jobs:,} + {EXTRA_JOBS:,} jobs")
        t0 = time.perf_counter()
        spec = site_spec(args.associations, seed=args.seed)
        jobs_paths = [os.path.join(data_dir, f"jobs-week{w + 1}.jsonl") for w in range(WEEKS)]
        extra_path = os.path.join(data_dir, "more-jobs.jsonl")
        t_full = EPOCH + WEEKS * WEEK
        size = write_jobs(jobs_paths, spec, args.jobs, 1, EPOCH, t_full, seed=args.seed + 1)
        write_jobs(
            [extra_path],
            spec,
            EXTRA_JOBS,
            args.jobs + 1,
            t_full,
            t_full + 3600.0,
            seed=args.seed + 2,
        )
        sacct_path = os.path.join(data_dir, "sacct-jobs.txt")
        n_sacct = args.jobs // WEEKS
        t_more = t_full + 3600.0
        write_sacct_jobs(
            sacct_path, spec, n_sacct, 1, t_more, t_more + 3600.0, SACCT_CLUSTER, args.seed + 3
        )
        backfill_path = os.path.join(data_dir, "all-weeks.jsonl")
        with open(backfill_path, "wb") as whole:
            for path in jobs_paths:
                with open(path, "rb") as week:
                    shutil.copyfileobj(week, whole)
        gen_time = time.perf_counter() - t0
        log(f"generated in {gen_time:.1f} s ({size / MIB:,.0f} MiB of JSON lines)")
        data = Data(
            spec, jobs_paths, extra_path, args.jobs, EXTRA_JOBS, sacct_path, n_sacct, backfill_path
        )

        log(f"start-up: --help and small reads, the fastest of {args.startup_runs} each")
        pg_url = args.pg_url if "postgres" in args.stores else None
        startup_cells = startup.measure(args.startup_runs, pg_url)

        results = []
        for store in args.stores:
            result = run_store(store, args, data, profile_dir)
            for key, (text, ok) in startup_cells.items():
                # One process start, any store; a PostgreSQL read's only in its column.
                if store == "postgres" or key not in startup.POSTGRES_KEYS:
                    result.add(key, text, ok)
            results.append(result)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)

    caption = [
        f"{args.associations:,} associations ({spec.top_banks} banks, {spec.leaf_banks} leaf "
        f"banks), {args.jobs:,} jobs over {WEEKS} weeks ({size / MIB:,.0f} MiB JSON lines).",
        f"{os.cpu_count()} CPUs, load avg (1/5 min) {load_before} before, {_load()} after; "
        f"Python {platform.python_version()}, {_server_versions(args.pg_url, args.stores)}.",
        f"Code: {code}, sources {digest}.",
        loops_text(loops_before, reference_loops()),
        stolen_share_text(stolen_before, read_stolen_and_total_ticks()),
    ]
    if _source_digest() != digest:
        caption.append(
            f"WARNING: the code changed during the run (sources now {_source_digest()}): "
            "the figures may mix versions."
        )
    if args.pg_db_functions and "postgres" in args.stores:
        caption.append("PostgreSQL with POSTGRES_ENABLE_DB_FUNCTIONS=y (diagnostic).")
    if profile_dir:
        caption.append(f"Under {args.profiler} (times inflated); profiles in {profile_dir}.")
    table = make_table(results, args.jobs, args.associations, EXTRA_JOBS, "\n".join(caption))
    errors = [f"{STORE_TITLES[r.store]}: {r.error}" for r in results if r.error]

    out = Console(width=None if sys.stdout.isatty() else 150)
    out.print(table)
    for line in errors:
        out.print(f"[red]{line}[/red]")

    buffer = io.StringIO()
    report = Console(file=buffer, width=150, no_color=True, force_terminal=False)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    report.print(
        f"{command}\n{stamp}; data generated in {gen_time:.1f} s; "
        f"whole run {time.perf_counter() - started:.0f} s"
    )
    report.print(table)
    for line in errors:
        report.print(line)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.txt").write_text(buffer.getvalue(), encoding="utf-8")
    log(f"table written to {RESULTS / 'latest.txt'}")
    missed = any(c.ok is False for r in results for c in r.cells.values())
    return 2 if errors else (1 if missed else 0)


if __name__ == "__main__":
    sys.exit(main())
