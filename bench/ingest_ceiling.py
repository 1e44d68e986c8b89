"""The ceiling over ingest: how fast the stack can ingest the bench's JSON lines on this machine
with every CPU at work, stripped to what the issue requires and no more.

    .venv/bin/python -m bench.ingest_ceiling [--jobs N] [--stores sqlite,postgres]

`bench.ingest_floor` adds up the steps on one CPU. This one runs them as a pipeline over all
CPUs, the most an ingest could overlap, and times it. Every shortcut below makes it faster than
any ingest the product could ship, so its rate is an upper bound, not a design:
- validation is one pydantic-core call over a piece of 5,000 lines (`validate_json` of the
  product's own plain-line TypedDict, `ledger.plain_jobs.PlainLine`: the JSON decoded and
  checked in Rust), with the order of the times checked in Python after it; no R, TRES or name
  checks, no error messages;
- the job's digest is a sha256 of its line's bytes, not of a canonical encoding;
- the event is the piece's lines as they came (no re-encoding), one event per piece;
- the association is found in a dict; the charge is the product's (`job_charge`) under its
  default weights;
- helper processes (a fork pool, one per CPU) do all of that and hand back rows ready for the
  store: tuples for SQLite's `executemany`, or SQLite files the writer copies in SQL; `COPY`
  text for PostgreSQL, which the writer passes on without looking at;
- exactly-once is the `job_keys` primary key alone (no lookup before the insert); the period
  totals are summed from `jobs` in SQL, as the product does;
- no read model beyond `jobs` and `period_totals`, no projector, no fair-share.

A second form keeps all of that but the first two shortcuts (`PRODUCT_STEPS`): each line goes
through the product's own per-job steps, as its helpers run them (`ledger.usecases.validation`):
validated with the record model's rules and messages (`ledger.ingest.parse_lines`), made into
the record the log stores with its charge (`to_record`), and given that record's canonical
digest (`ledger.chain.record_digest`, which two encodings of one job share). Its rate bounds
any ingest that keeps those steps, whatever else it strips.

The tables are the product's own (`jobs` with its indexes, `job_keys`, `period_totals`), in a
fresh SQLite file or a scratch PostgreSQL schema dropped after. It prints, per store, the rate
of the writer alone (every row prepared ahead: what the store itself allows, one writer) and of
the whole pipeline, against the issue's targets.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from rich.console import Console
from rich.table import Table

from bench.busy import machine_busy_seconds
from bench.generate import site_spec, write_jobs
from bench.targets import DEFAULT_PG_URL, INGEST_TARGET
from ledger import bounds
from ledger.jobs import job_charge
from ledger.plain_jobs import PlainLine
from ledger.state import SiteState
from ledger.store import log_tables
from ledger.store.connections import Connection, parse_store_url
from ledger.usage import UsageParams, period_of
from ledger.usecases.ingest import HELPER_LINES, RECORD_LINES
from ledger.usecases.validation import Terms, digested_records
from projections.writers import usage_tables

SCHEMA = "bench_ceiling"
CLUSTER = "bench"
EPOCH = 1.7e9
# make bench's row: enough jobs that the pool's start is a small part of a run
BENCH_JOBS, BENCH_ASSOCIATIONS = 250_000, 10_000
PARAMS = UsageParams(epoch=EPOCH)

# The product's own schema for a plain line (ledger.plain_jobs), over a piece at a time.
PIECE = TypeAdapter(list[PlainLine])

JOB_COLUMNS = (
    "cluster, id, userid, username, bank, t_submit, t_run, t_inactive, nnodes, ncores, ngpus,"
    " charge, charge_units, period, position"
)
JOB_MARKS = ", ".join("?" * len(JOB_COLUMNS.split(",")))
KEY_COLUMNS = ", ".join(log_tables.JOB_KEY_COLUMNS)


@dataclass(frozen=True)
class Site:
    """Who is who, as the helpers resolve a record's association."""

    user_of: dict[int, str]  # userid -> username
    userid_of: dict[str, int]
    default_bank: dict[str, str]


@dataclass(frozen=True)
class Prepared:
    """One piece, ready for the store: its event's text and its rows."""

    position: int
    event: bytes
    jobs: Any  # tuples, COPY text, or the path of a SQLite file holding jobs and keys
    keys: Any
    count: int


# How the helpers hand their rows to the writer.
TUPLES = "tuples"  # pickled, for SQLite's executemany
COPY_TEXT = "copy"  # PostgreSQL's COPY text, which the writer passes on unread
PIECE_FILE = "file"  # a SQLite file of the piece's rows, which the writer copies in SQL


# What each line goes through: the shortcuts above, or the product's own per-job steps.
STRIPPED_STEPS = "stripped"
PRODUCT_STEPS = "product"

_SITE: Site | None = None  # the helpers' copy, set before the pool forks

Task = tuple[int, list[bytes], str, str, str]  # position, lines, form, folder, steps


def prepare(task: Task) -> Prepared:
    """A piece validated, resolved, charged and digested into the store's rows."""
    position, lines, form, folder, steps = task
    site = _SITE
    assert site is not None
    records: list[dict[str, Any]] | list[PlainLine]
    if steps == PRODUCT_STEPS:
        records, digests = product_steps(lines)
    else:
        records = PIECE.validate_json(b"[" + b",".join(lines) + b"]")
        digests = [hashlib.sha256(line).hexdigest() for line in lines]
    jobs: list[tuple[Any, ...]] = []
    keys: list[tuple[Any, ...]] = []
    for record, digest in zip(records, digests, strict=True):
        t_run = record["t_run"]
        t_inactive = record["t_inactive"]
        t_submit = record.get("t_submit", t_run)
        if t_inactive < t_run or t_submit > t_run:
            raise ValueError(f"job {record['id']}: times out of order")
        username = record.get("username")
        userid = record.get("userid")
        if username is None:
            username = site.user_of[userid]  # type: ignore[index]
        elif userid is None:
            userid = site.userid_of[username]
        bank = record.get("bank") or site.default_bank[username]
        nnodes, ncores, ngpus = record["nnodes"], record["ncores"], record.get("ngpus", 0)
        charge = record.get("charge")  # the product's record holds its own
        if charge is None:
            charge = job_charge(nnodes, ncores, ngpus, t_run, t_inactive)
        job_id = str(record["id"])
        jobs.append(
            (
                CLUSTER,
                job_id,
                userid,
                username,
                bank,
                t_submit,
                t_run,
                t_inactive,
                nnodes,
                ncores,
                ngpus,
                charge,
                bounds.charge_units(charge),
                period_of(t_inactive, PARAMS),
                position,
            )
        )
        keys.append((CLUSTER, job_id, digest, position))
    event = b"[" + b",".join(line.rstrip(b"\n") for line in lines) + b"]"
    if form == COPY_TEXT:
        # Names are validated printable (no tab, no newline); a backslash would need doubling,
        # which the bench's names never hold.
        return Prepared(position, event, _copy_text(jobs), _copy_text(keys), len(jobs))
    if form == PIECE_FILE:
        path = _piece_file(folder, position, jobs, keys)
        return Prepared(position, event, path, path, len(jobs))
    return Prepared(position, event, jobs, keys, len(jobs))


def product_steps(lines: list[bytes]) -> tuple[list[dict[str, Any]], list[str]]:
    """The product's per-job steps over a piece, as its helpers run them
    (ledger.usecases.validation.digested_records, which validate_chunk calls before the spool's
    encoding): the records the log would store, under a new site's weights, and their
    digests."""
    terms = Terms(bounds.latest_time(time.time()), SiteState())
    digested, bad = digested_records([line.decode("utf-8") for line in lines], 1, terms)
    if bad:
        raise ValueError(f"a piece's {bad[0]}")
    return [record for record, _ in digested], [digest for _, digest in digested]


def _piece_file(folder: str, position: int, jobs: list[Any], keys: list[Any]) -> str:
    """The piece's rows in a SQLite file of their own: no index, no journal."""
    path = os.path.join(folder, f"piece-{position}.db")
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("BEGIN")
        db.execute(f"CREATE TABLE jobs ({JOB_COLUMNS})")
        db.execute(f"CREATE TABLE job_keys ({KEY_COLUMNS})")
        db.executemany(f"INSERT INTO jobs VALUES ({JOB_MARKS})", jobs)
        db.executemany("INSERT INTO job_keys VALUES (?, ?, ?, ?)", keys)
        db.execute("COMMIT")
    finally:
        db.close()
    return path


def _copy_text(rows: list[tuple[Any, ...]]) -> bytes:
    return "".join("\t".join(map(str, row)) + "\n" for row in rows).encode("utf-8")


def pieces(
    lines: list[bytes], form: str, folder: str, steps: str = STRIPPED_STEPS
) -> Iterator[Task]:
    for n, start in enumerate(range(0, len(lines), HELPER_LINES)):
        yield n + 1, lines[start : start + HELPER_LINES], form, folder, steps


class Writer:
    """The one writer: events, job rows, keys and totals, a transaction per RECORD_LINES jobs."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.postgres = conn.config.is_postgres
        self.in_transaction = 0
        self.attached: list[tuple[str, str]] = []  # (schema name, path) of piece files

    def write(self, piece: Prepared) -> None:
        raw = self.conn.raw
        if self.in_transaction == 0:
            raw.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
        if self.postgres:
            with raw.cursor() as cur:
                cur.execute(
                    "INSERT INTO events (position, state) VALUES (%s, %s)",
                    (piece.position, piece.event),
                )
                with cur.copy(f"COPY jobs ({JOB_COLUMNS}) FROM STDIN") as copy:
                    copy.write(piece.jobs)
                with cur.copy(f"COPY job_keys ({KEY_COLUMNS}) FROM STDIN") as copy:
                    copy.write(piece.keys)
                cur.execute(
                    usage_tables.ADD_TOTALS.replace("?", "%s"), (piece.position, piece.position)
                )
        else:
            raw.execute(
                "INSERT INTO events (position, state) VALUES (?, ?)",
                (piece.position, piece.event),
            )
            if isinstance(piece.jobs, str):
                # A file attached stays attached until the transaction ends (SQLite refuses
                # DETACH before).
                name = f"piece{len(self.attached)}"
                raw.execute(f"ATTACH ? AS {name}", (piece.jobs,))
                self.attached.append((name, piece.jobs))
                raw.execute(f"INSERT INTO jobs ({JOB_COLUMNS}) SELECT * FROM {name}.jobs")
                raw.execute(f"INSERT INTO job_keys ({KEY_COLUMNS}) SELECT * FROM {name}.job_keys")
            else:
                raw.executemany(
                    f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({JOB_MARKS})", piece.jobs
                )
                raw.executemany(
                    f"INSERT INTO job_keys ({KEY_COLUMNS}) VALUES (?, ?, ?, ?)", piece.keys
                )
            raw.execute(usage_tables.ADD_TOTALS, (piece.position, piece.position))
        self.in_transaction += piece.count
        if self.in_transaction >= RECORD_LINES:
            self.commit()

    def commit(self) -> None:
        if self.in_transaction:
            self.conn.raw.execute("COMMIT")
            self.in_transaction = 0
        for name, path in self.attached:
            self.conn.raw.execute(f"DETACH {name}")
            os.remove(path)
        self.attached = []


def write_all(conn: Connection, prepared: Iterable[Prepared]) -> None:
    """Every piece through one writer, the last transaction committed."""
    writer = Writer(conn)
    for piece in prepared:
        writer.write(piece)
    writer.commit()


def open_store(store: str, folder: str, pg_url: str = DEFAULT_PG_URL) -> Connection:
    """A fresh store holding the product's tables for jobs, keys and totals."""
    if store == "postgres":
        conn = Connection(parse_store_url(f"{pg_url.split('?')[0]}?schema={SCHEMA}"))
        conn.raw.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.raw.execute(f"CREATE SCHEMA {SCHEMA}")
        state = "BYTEA"
    else:
        conn = Connection(
            parse_store_url("sqlite:///" + os.path.join(folder, f"ceiling-{time.time_ns()}.db"))
        )
        conn.raw.execute("PRAGMA journal_mode = WAL")
        state = "BLOB"
    conn.run_statements(
        [
            f"CREATE TABLE events (position BIGINT PRIMARY KEY, state {state} NOT NULL)",
            usage_tables.TABLES["jobs"],
            usage_tables.TABLES["period_totals"],
            *usage_tables.indexes(conn.config.is_postgres),
        ]
    )
    log_tables.create_tables(conn, [log_tables.JOB_KEYS])
    return conn


def check_recorded(conn: Connection, jobs: int) -> None:
    """Every job written once, as a row, a key and in the totals: a pipeline that lost rows
    would report a rate it did not earn."""
    found = conn.raw.execute(
        "SELECT (SELECT COUNT(*) FROM jobs), (SELECT COUNT(*) FROM job_keys),"
        " (SELECT SUM(njobs) FROM period_totals)"
    ).fetchone()
    if tuple(found) != (jobs, jobs, jobs):
        raise SystemExit(
            f"the ceiling's store holds {tuple(found)} jobs, keys and totals of {jobs}"
        )


def close_store(conn: Connection) -> None:
    if conn.config.is_postgres:
        conn.raw.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    conn.close()


@dataclass(frozen=True)
class Run:
    """One timed run: its wall seconds, the writer's CPU and the whole machine's."""

    wall: float
    writer_cpu: float
    machine_cpu: float


class Timer:
    def __enter__(self) -> Timer:
        self.started = (time.perf_counter(), time.process_time(), machine_busy_seconds())
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu, machine = self.started
        self.run = Run(
            time.perf_counter() - wall,
            time.process_time() - cpu,
            machine_busy_seconds() - machine,
        )


def writer_alone(
    store: str, folder: str, lines: list[bytes], site: Site, pg_url: str = DEFAULT_PG_URL
) -> Run:
    """The writer with every piece prepared ahead (not timed)."""
    global _SITE
    _SITE = site
    form = COPY_TEXT if store == "postgres" else TUPLES
    prepared = [prepare(task) for task in pieces(lines, form, folder)]
    conn = open_store(store, folder, pg_url)
    try:
        with Timer() as timer:
            write_all(conn, prepared)
        check_recorded(conn, len(lines))
        return timer.run
    finally:
        close_store(conn)


def pipeline(
    store: str,
    folder: str,
    lines: list[bytes],
    site: Site,
    helpers: int,
    form: str,
    piece_folder: str = "",
    pg_url: str = DEFAULT_PG_URL,
    steps: str = STRIPPED_STEPS,
) -> Run:
    """The whole ingest: helpers prepare pieces while the writer writes (the pieces' files, if
    any, in `piece_folder`)."""
    global _SITE
    _SITE = site
    conn = open_store(store, folder, pg_url)
    try:
        context = multiprocessing.get_context("fork")
        with Timer() as timer, context.Pool(helpers) as pool:
            write_all(conn, pool.imap(prepare, pieces(lines, form, piece_folder, steps)))
        check_recorded(conn, len(lines))
        return timer.run
    finally:
        close_store(conn)


def fastest_pipeline(
    store: str,
    folder: str,
    lines: list[bytes],
    site: Site,
    pg_url: str = DEFAULT_PG_URL,
    steps: str = STRIPPED_STEPS,
) -> Run:
    """The pipeline's fastest form on `store`, a helper per CPU: rows handed over as SQLite
    files for SQLite (the writer copies them in C, where tuples cost it their unpickling),
    COPY text for PostgreSQL (already passed on unread)."""
    cpus = os.cpu_count() or 1
    if store == "postgres":
        return pipeline(store, folder, lines, site, cpus, COPY_TEXT, pg_url=pg_url, steps=steps)
    with _piece_folder(folder) as pieces_in:
        return pipeline(store, folder, lines, site, cpus, PIECE_FILE, pieces_in, steps=steps)


CEILING_ROW = "ingest-ceiling"
STEPS_ROW = "ingest-ceiling-steps"
_REACH = "above the ingest rate's target, or that target is out of this machine's reach"


def rows() -> list[tuple[str, str, str]]:
    """bench.run's rows: (key, label, target)."""
    return [
        (
            CEILING_ROW,
            f"ingest ceiling: the stack stripped to what the issue asks, {BENCH_JOBS:,} jobs "
            "(bench.ingest_ceiling)",
            _REACH,
        ),
        (
            STEPS_ROW,
            "ingest ceiling, the same with the product's per-job steps (validation, record, "
            "digest)",
            _REACH.replace("this machine's", "those steps'"),
        ),
    ]


def measure(store: str, ledger_url: str) -> dict[str, tuple[str, bool]]:
    """bench.run's cells: the fastest pipeline's rate and the writer's alone, checked ✓ when
    the faster of the two reaches the store's ingest target (✗: no ingest of the product's
    could, on this machine as it runs now); then the fastest pipeline with the product's own
    per-job steps (✗: no ingest that keeps them could). `ledger_url`: the bench's ledger; on
    PostgreSQL the ceiling uses its database, in a schema of its own."""
    pg_url = ledger_url if store == "postgres" else DEFAULT_PG_URL
    lines = bench_lines(BENCH_JOBS, BENCH_ASSOCIATIONS)
    site = site_of(BENCH_ASSOCIATIONS)
    target = INGEST_TARGET[store]
    with tempfile.TemporaryDirectory(prefix="fairledger-ceiling-") as folder:
        alone = writer_alone(store, folder, lines, site, pg_url)
        piped = fastest_pipeline(store, folder, lines, site, pg_url)
        stepped = fastest_pipeline(store, folder, lines, site, pg_url, PRODUCT_STEPS)
    best = max(len(lines) / piped.wall, len(lines) / alone.wall)
    return {
        CEILING_ROW: (
            f"{_shown(piped, len(lines))} (the writer alone, every row made ahead: "
            f"{_shown(alone, len(lines))})",
            best >= target,
        ),
        STEPS_ROW: (
            f"{_shown(stepped, len(lines))}; at {target:,.0f} jobs/s, "
            f"{_cpus_needed(stepped, len(lines), target)}",
            len(lines) / stepped.wall >= target,
        ),
    }


def _cpus_needed(run: Run, jobs: int, rate: float) -> str:
    """How many of this machine's CPUs `run`'s CPU per job would keep busy at `rate`: more
    than it has, and no overlap could reach that rate."""
    return f"{rate * run.machine_cpu / jobs:.2f} of {os.cpu_count() or 1} CPUs busy"


def _shown(run: Run, jobs: int) -> str:
    """The rate, then the writer's CPU and the machine's, in µs per job."""
    per_job = 1e6 / jobs
    return (
        f"{jobs / run.wall:,.0f} jobs/s, {run.writer_cpu * per_job:.1f} / "
        f"{run.machine_cpu * per_job:.1f} µs"
    )


def _piece_folder(folder: str) -> tempfile.TemporaryDirectory[str]:
    """Memory-backed where Linux offers it (the pieces are written once and read once); the
    ledger's own file stays on disk."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return tempfile.TemporaryDirectory(prefix="fairledger-ceiling-", dir=shm)
    return tempfile.TemporaryDirectory(prefix="fairledger-ceiling-pieces-", dir=folder)


def site_of(n_associations: int) -> Site:
    spec = site_spec(n_associations, seed=1)
    default_bank: dict[str, str] = {}
    for a in spec.associations:
        default_bank.setdefault(a.username, a.bank)
    return Site(
        user_of={a.userid: a.username for a in spec.associations},
        userid_of={a.username: a.userid for a in spec.associations},
        default_bank=default_bank,
    )


def bench_lines(n_jobs: int, n_associations: int) -> list[bytes]:
    spec = site_spec(n_associations, seed=1)
    with tempfile.TemporaryDirectory(prefix="fairledger-ceiling-data-") as folder:
        path = os.path.join(folder, "jobs.jsonl")
        write_jobs([path], spec, n_jobs, 1, EPOCH, EPOCH + 7 * 86400.0)
        with open(path, "rb") as handle:
            return handle.readlines()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest_ceiling", description=__doc__)
    parser.add_argument("--jobs", type=int, default=500_000)
    parser.add_argument("--associations", type=int, default=10_000)
    parser.add_argument("--stores", default="sqlite,postgres")
    args = parser.parse_args(argv)
    lines = bench_lines(args.jobs, args.associations)
    site = site_of(args.associations)
    cpus = os.cpu_count() or 1
    table = Table(
        title=f"ingest ceiling, {len(lines):,} jobs, {cpus} CPUs: jobs/s, then CPU per job"
        " (the writer's / the whole machine's)"
    )
    for column in (
        "store",
        "writer alone",
        "pipeline, 1 helper",
        f"pipeline, {cpus} helpers",
        f"{cpus} helpers, rows in files",
        f"{cpus} helpers, the product's steps",
        "target",
    ):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory(prefix="fairledger-ceiling-") as folder:
        for store in args.stores.split(","):
            form = COPY_TEXT if store == "postgres" else TUPLES
            runs = [writer_alone(store, folder, lines, site)]
            runs += [pipeline(store, folder, lines, site, n, form) for n in (1, cpus)]
            shown = [_shown(run, len(lines)) for run in runs]
            if store == "sqlite":
                shown.append(_shown(fastest_pipeline(store, folder, lines, site), len(lines)))
            else:
                shown.append("(as COPY text)")
            stepped = fastest_pipeline(store, folder, lines, site, steps=PRODUCT_STEPS)
            shown.append(_shown(stepped, len(lines)))
            table.add_row(store, *shown, f"{INGEST_TARGET[store]:,.0f}")
    Console().print(table)
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
