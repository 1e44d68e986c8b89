"""Ingest of completed jobs through the CLI, on both stores: counts, exactly-once, bad input,
unmatched jobs, concurrent ingesters, flux-accounting databases, and view-job-records."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import job_record
from tests.conftest import DATA, PG_URL, T0, Store

ROOT = Path(__file__).resolve().parents[2]
F58_ID = "ƒ2Wbqh5Wo"
F58_VALUE = 3334843392912  # the same job ID in decimal
R_2_NODES_8_CORES = {
    "version": 1,
    "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-3"}}]},
}


def site(store: Store) -> None:
    store.run("add-bank", "root", "1")
    for bank in ("physics", "chemistry"):
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    store.run("add-project", "climate")
    store.run("add-user", "-u", "alice", "-i", "5001", "-B", "physics")
    store.run("add-user", "-u", "alice", "-B", "chemistry")
    store.run("add-user", "-u", "bob", "-i", "5002", "-B", "chemistry")


def job(job_id: Any, end: float = T0, duration: float = 10, **fields: Any) -> dict[str, Any]:
    """A completed job of alice (userid 5001) on 1 node: charge = duration."""
    fields = {"userid": 5001, "submit": end - duration - 5, **fields}
    return job_record(job_id, end=end, seconds=duration, **fields)


def write(path: Path, *lines: dict[str, Any] | str) -> str:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return str(path)


def all_tables(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Store.tables() plus every other read model (jobs, period_totals, job_usage_bins, the
    fair-share checkpoints, the continuous sums, the usage scopes), which Store.tables() leaves
    out: it lists projections.writers.schema.TABLES only."""
    from ledger.store.connections import Connection, parse_store_url
    from projections.writers import runner, schema

    out = store.tables()
    conn = Connection(parse_store_url(store.url))
    try:
        for name in [name for name in runner.all_tables() if name not in schema.TABLES]:
            rows = conn.query(f"SELECT * FROM {name}")
            out[name] = sorted(rows, key=lambda r: repr(sorted(r.items())))
    finally:
        conn.close()
    return out


def jobs(store: Store) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["cluster"], r["id"]): r for r in all_tables(store)["jobs"]}


def counts(recorded: int, duplicate: int = 0, unmatched: int = 0) -> str:
    return f"recorded {recorded}, duplicate {duplicate}, unmatched {unmatched}\n"


# --- counts and exactly-once --------------------------------------------------------------------


def test_reingest_and_overlap_record_each_job_once(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    first = write(tmp_path / "a.jsonl", *(job(i) for i in (1, 2, 3)))
    result = ledger_store.run("ingest", first)
    assert (result.stdout, result.stderr) == (counts(3), "")
    assert set(jobs(ledger_store)) == {("cluster", "1"), ("cluster", "2"), ("cluster", "3")}

    position, tables = ledger_store.log_position(), all_tables(ledger_store)
    again = ledger_store.run("ingest", first)
    assert again.stdout == counts(0, duplicate=3)
    assert again.stderr == "nothing new: every job was already recorded\n"
    assert ledger_store.log_position() == position
    assert all_tables(ledger_store) == tables

    overlap = write(tmp_path / "b.jsonl", *(job(i) for i in (2, 3, 4, 5)))
    assert ledger_store.run("ingest", overlap).stdout == counts(2, duplicate=2)
    assert sorted(int(k[1]) for k in jobs(ledger_store)) == [1, 2, 3, 4, 5]
    assert sorted(int(k[1]) for k in recorded_in_log(ledger_store)) == [1, 2, 3, 4, 5]


def test_duplicates_inside_one_file_count_once(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = write(
        tmp_path / "dup.jsonl",
        job(1, duration=10),
        job(2, duration=20),
        job(1, duration=10),
        job(1, duration=10),
        job(1, duration=10, cluster="other"),  # same id on another cluster: another job
    )
    assert ledger_store.run("ingest", path).stdout == counts(3, duplicate=2)
    rows = jobs(ledger_store)
    assert sorted(rows) == [("cluster", "1"), ("cluster", "2"), ("other", "1")]
    period_totals = all_tables(ledger_store)["period_totals"]
    assert sum(r["njobs"] for r in period_totals) == 3
    assert sum(r["charge_units"] for r in period_totals) == 40 * 100000


def test_resources_counted_from_R(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = write(
        tmp_path / "r.jsonl",
        {k: v for k, v in job(1, duration=10, R=R_2_NODES_8_CORES).items() if k != "ncores"}
        | {"nnodes": 2},  # counts given beside R must agree with it
        # Flux stores R as JSON text: accepted as well.
        {k: v for k, v in job(2, duration=10).items() if k not in ("nnodes", "ncores")}
        | {"R": json.dumps(R_2_NODES_8_CORES), "ngpus": 0},
    )
    assert ledger_store.run("ingest", path).stdout == counts(2)
    for key in (("cluster", "1"), ("cluster", "2")):
        row = jobs(ledger_store)[key]
        assert (row["nnodes"], row["ncores"], row["ngpus"], row["charge"]) == (2, 8, 0, 20.0)

    gpus = {
        "version": 1,
        "execution": {"R_lite": [{"rank": "3", "children": {"core": "0-3", "gpu": "0-1"}}]},
    }
    three = {k: v for k, v in job(3).items() if k not in ("nnodes", "ncores")} | {"R": gpus}
    ledger_store.run("ingest", write(tmp_path / "g.jsonl", three))
    row = jobs(ledger_store)[("cluster", "3")]
    assert (row["nnodes"], row["ncores"], row["ngpus"]) == (1, 4, 2)

    position = ledger_store.log_position()
    bad = write(tmp_path / "bad.jsonl", {**job(4), "R": R_2_NODES_8_CORES, "nnodes": 3})
    result = ledger_store.run("ingest", bad, expect=1)
    assert result.stderr == (
        f"fairledger: {bad}: line 1: nnodes: value 3: disagrees with R, which has 2; "
        "nothing recorded\n"
    )
    assert ledger_store.log_position() == position


def test_f58_job_ids_are_the_same_job_as_their_decimal(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    assert ledger_store.run("ingest", write(tmp_path / "f.jsonl", job(F58_ID))).stdout == counts(1)
    assert set(jobs(ledger_store)) == {("cluster", str(F58_VALUE))}
    same = write(tmp_path / "g.jsonl", job(F58_VALUE), job("f2Wbqh5Wo"), job(str(F58_VALUE)))
    assert ledger_store.run("ingest", same).stdout == counts(0, duplicate=3)
    shown = json.loads(ledger_store.run("view-job-records", "-j", F58_ID, "--json").stdout)
    assert [r["jobid"] for r in shown] == [F58_ID]


def test_ingest_reads_standard_input(ledger_store: Store) -> None:
    site(ledger_store)
    text = "".join(json.dumps(job(i)) + "\n" for i in (7, 8))
    result = ledger_store.run("ingest", "-", input=text)
    assert (result.stdout, result.stderr) == (counts(2), "")
    assert set(jobs(ledger_store)) == {("cluster", "7"), ("cluster", "8")}
    assert ledger_store.run("ingest", "-", input=text).stdout == counts(0, duplicate=2)


def test_ingest_reads_standard_input_as_utf8_whatever_the_locale(ledger_store: Store) -> None:
    """JSON lines are UTF-8: an f58 ID read from a pipe is the same job as read from a file,
    even where Python would decode standard input in another encoding."""
    site(ledger_store)
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "--db", ledger_store.url, "--now", str(T0)]
        + ["ingest", "-"],
        input=(json.dumps(job(F58_ID), ensure_ascii=False) + "\n").encode("utf-8"),
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="latin-1"),
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout.decode()) == (0, counts(1)), result.stderr
    assert set(jobs(ledger_store)) == {("cluster", str(F58_VALUE))}


# --- bad input ----------------------------------------------------------------------------------

BAD_LINES = {
    "{not json": "line 2: not valid JSON",
    json.dumps({k: v for k, v in job(9).items() if k != "t_inactive"}): (
        "line 2: t_inactive: required field is missing"
    ),
    json.dumps(job(9) | {"t_run": T0 - 50, "t_inactive": T0 - 60, "t_submit": T0 - 70}): (
        "line 2: t_inactive: value 1699999940: earlier than t_run 1699999950.0"
    ),
    json.dumps(job(9, nnodes=-2)): "line 2: nnodes: value -2:",
}


def test_a_bad_line_records_nothing(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    position = ledger_store.log_position()
    for n, (bad, message) in enumerate(BAD_LINES.items()):
        path = write(tmp_path / f"bad{n}.jsonl", job(1), bad, job(3))
        result = ledger_store.run("ingest", path, expect=1)
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"fairledger: {path}: {message}"), result.stderr
        assert result.stderr.endswith("; nothing recorded\n")
        assert ledger_store.log_position() == position
    assert jobs(ledger_store) == {}


def test_skip_invalid_records_the_valid_lines(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = write(
        tmp_path / "mixed.jsonl",
        job(1),
        "{not json",
        job(2),
        "",  # blank lines are skipped, but still numbered
        job(3, nnodes=-1),
        job(4),
    )
    assert ledger_store.run("ingest", path, expect=1).stderr.startswith(
        f"fairledger: {path}: line 2: not valid JSON"
    )
    assert (
        "(and 1 more bad lines); nothing recorded"
        in ledger_store.run("ingest", path, expect=1).stderr
    )
    result = ledger_store.run("ingest", path, "--skip-invalid")
    assert result.stdout == "recorded 3, duplicate 0, unmatched 0, invalid 2\n"
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"fairledger: skipped {path}: line 2: not valid JSON")
    assert lines[1].startswith(f"fairledger: skipped {path}: line 5: nnodes: value -1:")
    assert sorted(int(k[1]) for k in jobs(ledger_store)) == [1, 2, 4]


def test_missing_file_is_an_error(ledger_store: Store, tmp_path: Path) -> None:
    result = ledger_store.run("ingest", str(tmp_path / "nope.jsonl"), expect=1)
    assert result.stderr == f"fairledger: no such file: {tmp_path / 'nope.jsonl'}\n"


# --- unmatched jobs -----------------------------------------------------------------------------


def users(store: Store, now: float) -> dict[tuple[str, str], float]:
    rows = json.loads(store.run("list-users", "--json", now=now).stdout)
    return {(r["username"], r["bank"]): r["job_usage"] for r in rows}


def test_unmatched_jobs_are_kept_and_count_once_matched(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    path = write(
        tmp_path / "u.jsonl",
        job(1, duration=10),  # alice, default bank physics
        job(2, duration=20, username="carol", userid=None),  # unknown user
        job(3, duration=40, bank="biology"),  # alice in an unknown bank
        job(4, duration=80, userid=7777),  # unknown userid
        job(5, duration=160, userid=5002, bank="physics"),  # bob has no physics association
    )
    assert ledger_store.run("ingest", path).stdout == counts(5, unmatched=4)
    assert len(jobs(ledger_store)) == 5
    ledger_store.run("update-usage")
    assert users(ledger_store, T0) == {
        ("alice", "physics"): 10.0,
        ("alice", "chemistry"): 0.0,
        ("bob", "chemistry"): 0.0,
    }
    ledger_store.run("add-bank", "biology", "1", "--parent-bank", "root")
    ledger_store.run("add-user", "-u", "carol", "-B", "biology")
    ledger_store.run("add-user", "-u", "alice", "-B", "biology")
    ledger_store.run("add-user", "-u", "dave", "-i", "7777", "-B", "biology")
    ledger_store.run("add-user", "-u", "bob", "-B", "physics")
    ledger_store.run("update-usage")
    assert users(ledger_store, T0) == {
        ("alice", "physics"): 10.0,
        ("alice", "chemistry"): 0.0,
        ("alice", "biology"): 40.0,
        ("bob", "chemistry"): 0.0,
        ("bob", "physics"): 160.0,
        ("carol", "biology"): 20.0,
        ("dave", "biology"): 80.0,
    }
    # Now matched, the same jobs again are plain duplicates.
    assert ledger_store.run("ingest", path).stdout == counts(0, duplicate=5)


# --- concurrent ingesters -----------------------------------------------------------------------


def recorded_in_log(store: Store) -> list[tuple[str, str]]:
    """Every (cluster, id) of every JobsRecorded event: the jobs table's primary key would hide
    a job recorded twice in the log, so exactly-once is checked here."""
    from ledger.joblog import JOBLOG_ID, JobLog
    from ledger.store.application import Ledger
    from ledger.store.connections import parse_store_url

    ledger = Ledger(parse_store_url(store.url))
    try:
        return [
            (r["cluster"], r["id"])
            for event in ledger.events.get(JOBLOG_ID)
            if isinstance(event, JobLog.JobsRecorded)
            for r in event.records
        ]
    finally:
        ledger.close()


def _ingest_in_subprocess(url: str, path: str, now: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "--db", url, "--now", str(now), "ingest", path],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_concurrent_ingesters_cannot_double_record(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    # Four processes at once over jobs 0..49: three files of 30 overlapping their neighbours by
    # two thirds, and one of every even job.
    windows = [range(n * 10, n * 10 + 30) for n in range(3)] + [range(0, 50, 2)]
    files = [
        write(tmp_path / f"c{n}.jsonl", *(job(i, duration=i + 1) for i in ids))
        for n, ids in enumerate(windows)
    ]
    now = T0 + 10
    with ThreadPoolExecutor(max_workers=len(files)) as pool:
        results = list(pool.map(lambda p: _ingest_in_subprocess(ledger_store.url, p, now), files))
    assert [r.returncode for r in results] == [0] * len(files), [r.stderr for r in results]
    recorded = [int(r.stdout.split(",")[0].split()[1]) for r in results]
    duplicate = [int(r.stdout.split(",")[1].split()[1]) for r in results]
    assert sum(recorded) == 50
    assert sum(duplicate) == sum(len(ids) for ids in windows) - 50
    rows = all_tables(ledger_store)["jobs"]
    assert sorted(int(r["id"]) for r in rows) == list(range(50))
    assert sorted(int(key[1]) for key in recorded_in_log(ledger_store)) == list(range(50))
    ledger_store.run("update-usage", now=now)
    assert users(ledger_store, now)[("alice", "physics")] == sum(range(1, 51))


# --- flux-accounting databases ------------------------------------------------------------------

FLUX_DBS = DATA / "test_dbs"


def _flux_db(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> str:
    """A copy of a real flux-accounting DB (whose jobs table is empty) with `rows` added."""
    path = tmp_path / name
    shutil.copyfile(FLUX_DBS / name, path)
    conn = sqlite3.connect(path)
    columns = {r[1] for r in conn.execute("PRAGMA table_info(jobs)")}
    for row in rows:
        row = {k: v for k, v in row.items() if k in columns}
        conn.execute(
            f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            list(row.values()),
        )
    conn.commit()
    conn.close()
    return str(path)


def _flux_row(job_id: int, userid: int, end: float, R: dict[str, Any], **system: str) -> dict:
    return {
        "id": job_id,
        "userid": userid,
        "t_submit": end - 100,
        "t_run": end - 50,
        "t_inactive": end,
        "ranks": "0",
        "R": json.dumps(R),
        "jobspec": json.dumps({"attributes": {"system": dict(system)}}),
        "project": system.get("project"),
        "bank": system.get("bank"),
    }


@pytest.mark.parametrize("name", ["FluxAccountingv0-37-0.db", "FluxAccountingv0-60-0.db"])
def test_ingest_a_flux_accounting_database(ledger_store: Store, tmp_path: Path, name: str) -> None:
    site(ledger_store)
    empty = str(tmp_path / f"empty-{name}")
    shutil.copyfile(FLUX_DBS / name, empty)
    result = ledger_store.run("ingest", "--format", "flux-accounting-db", empty)
    assert result.stdout == counts(0)

    one_node = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}]}}
    path = _flux_db(
        tmp_path,
        name,
        [
            _flux_row(101, 5001, T0, R_2_NODES_8_CORES, bank="chemistry", project="climate"),
            _flux_row(102, 5002, T0, one_node),
            _flux_row(103, 6000, T0, one_node, bank="physics"),
        ],
    )
    result = ledger_store.run("ingest", "--format", "flux-accounting-db", path)
    assert result.stdout == counts(3, unmatched=1)
    rows = jobs(ledger_store)
    got = {
        key[1]: (r["userid"], r["bank"], r["project"], r["nnodes"], r["ncores"], r["charge"])
        for key, r in rows.items()
    }
    assert got == {
        "101": (5001, "chemistry", "climate", 2, 8, 100.0),
        "102": (5002, None, None, 1, 1, 50.0),
        "103": (6000, "physics", None, 1, 1, 50.0),
    }
    again = ledger_store.run("ingest", "--format", "flux-accounting-db", path)
    assert again.stdout == counts(0, duplicate=3)
    ledger_store.run("update-usage")
    assert users(ledger_store, T0) == {
        ("alice", "physics"): 0.0,
        ("alice", "chemistry"): 100.0,
        ("bob", "chemistry"): 50.0,
    }


def test_ingest_flux_format_refuses_other_files(ledger_store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "jobs.jsonl", job(1))
    result = ledger_store.run("ingest", "--format", "flux-accounting-db", path, expect=1)
    assert result.stderr.startswith(f"fairledger: {path}: not a flux-accounting database")
    assert result.stderr.count("\n") == 1


# --- view-job-records ---------------------------------------------------------------------------


def test_a_job_id_is_found_on_every_cluster_that_has_it(
    ledger_store: Store, tmp_path: Path
) -> None:
    """-j looks the id up on each cluster (a key lookup each, not a scan of every job)."""
    site(ledger_store)
    ledger_store.run(
        "ingest",
        write(
            tmp_path / "clusters.jsonl",
            job(7, end=T0 - 300, cluster="alpha"),
            job(7, end=T0 - 200, cluster="gamma"),
            job(8, end=T0 - 100, cluster="beta"),
            job(7, end=T0 - 50, cluster="zeta"),
        ),
    )

    def clusters(job_id: str) -> list[str]:
        shown = ledger_store.run("view-job-records", "-j", job_id, "--fields", "cluster", "--json")
        return [r["cluster"] for r in json.loads(shown.stdout)]

    assert clusters("7") == ["alpha", "gamma", "zeta"]
    assert clusters("8") == ["beta"]
    assert clusters("9") == []


def test_view_job_records_on_an_empty_ledger(ledger_store: Store) -> None:
    site(ledger_store)
    assert ledger_store.run("view-job-records", "-j", "7", "--json").stdout.strip() == "[]"


def test_view_job_records_filters(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = write(
        tmp_path / "v.jsonl",
        job(1, end=T0 - 900, duration=100, bank="physics", project="climate")
        | {"requested_duration": 200},
        job(2, end=T0 - 480, duration=20, bank="chemistry", requested_duration=10.5),
        # Kept as sent; read as 0.0 (not a number of seconds), never an error.
        job(3, end=T0 - 200, duration=100, userid=5002, bank="physics", project="climate")
        | {"requested_duration": None},
        job(4, end=T0 - 40, duration=60, userid=None, username="bob", bank="chemistry")
        | {"requested_duration": "1h"},
    )
    ledger_store.run("ingest", path)

    def ids(*args: str) -> list[int]:
        rows = json.loads(ledger_store.run("view-job-records", *args, "--json").stdout)
        return [int(r["jobid"][1:]) - 1 for r in rows]  # ƒ2 is job 1, ƒ5 is job 4

    assert ids() == [1, 2, 3, 4]
    assert ids("-u", "alice") == [1, 2]
    assert ids("-u", "bob") == [3, 4]
    assert ids("-u", "5002") == [3]
    assert ids("-j", "ƒ4") == [3]
    assert ids("-j", "3") == [3]
    assert ids("-a", str(T0 - 400)) == [3, 4]
    assert ids("-b", str(T0 - 450)) == [1, 2]
    assert ids("-B", "physics") == [1, 3]
    assert ids("--project", "climate") == [1, 3]
    assert ids("-e", "> 50") == [1, 3, 4]
    assert ids("-e", "<= 20") == [2]
    assert ids("-e", "> 50", "-e", "< 100") == [4]
    assert ids("-u", "alice", "-e", "> 50") == [1]
    assert ids("-B", "chemistry", "-a", str(T0 - 1000)) == [2, 4]
    assert ids("-d", "> 0") == [1, 2]
    assert ids("-d", "= 10.5") == [2]
    assert ids("-D", ">= 0") == [1]
    assert ids("-D", "< 0") == [2, 3, 4]
    assert ids("-u", "²") == []  # a digit, but not a number: a (non-existent) username

    (row,) = json.loads(ledger_store.run("view-job-records", "-j", "ƒ4", "--json").stdout)
    assert row == {
        "jobid": "ƒ4",
        "username": "bob",  # recorded by userid only; named from the associations
        "userid": 5002,
        "t_submit": T0 - 305.0,
        "t_run": T0 - 300.0,
        "t_inactive": T0 - 200.0,
        "nnodes": 1,
        "project": "climate",
        "bank": "physics",
        "requested_duration": 0.0,
        "actual_duration": 100.0,
        "duration_delta": -100.0,
    }
    table = ledger_store.run("view-job-records", "-j", "ƒ4").stdout.splitlines()
    assert table[0].split(" | ")[0] == "jobid"
    assert table[1].split("|")[0].strip() == "ƒ4"  # no rule line: flux-accounting prints none
    bad = ledger_store.run("view-job-records", "-e", "50", expect=2)
    assert "expression expects one operator and one value" in bad.stderr  # flux-accounting's


# --- order, splits and duplicates do not matter -------------------------------------------------

PROPERTY_JOBS = [
    job(i, end=T0 + 5 + 7 * i, duration=3 + i, userid=[5001, 5002, 7777][i % 3]) for i in range(12)
]


def _fresh(kind: str, base: Path) -> tuple[Store, Any]:
    """A new, empty store of the same kind, and a function that drops it."""
    if kind == "sqlite":
        path = base / f"{uuid.uuid4().hex}.db"
        return Store("sqlite", f"sqlite:///{path}"), lambda: path.unlink(missing_ok=True)
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"

    def drop() -> None:
        with psycopg.connect(PG_URL.split("?")[0], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    return Store("postgres", f"{PG_URL.split('?')[0]}?schema={schema}"), drop


def _ingested_tables(store: Store, base: Path, files: list[list[dict[str, Any]]]) -> dict:
    store.run("create-db")
    site(store)
    for n, lines in enumerate(files):
        store.run("ingest", write(base / f"{uuid.uuid4().hex}-{n}.jsonl", *lines), now=T0 + 100)
    store.run("update-usage", now=T0 + 100)
    tables = all_tables(store)
    for row in tables["jobs"]:
        del row["position"]  # which event recorded a job depends on the file split
    del tables["log_index"]  # so do the log's positions and length
    return tables


@pytest.fixture
def reference_tables(store: Store, tmp_path: Path) -> dict:
    return _ingested_tables(store, tmp_path, [PROPERTY_JOBS])


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_order_splits_and_duplicates_do_not_change_tables(
    store: Store, tmp_path: Path, reference_tables: dict, data: st.DataObject
) -> None:
    """The same jobs in another order, cut into other files, some of them repeated (within a
    file and across files), give the same tables."""
    repeats = data.draw(st.lists(st.sampled_from(range(len(PROPERTY_JOBS))), max_size=5))
    order = data.draw(st.permutations([*range(len(PROPERTY_JOBS)), *repeats]))
    cuts = data.draw(st.lists(st.integers(0, len(order)), max_size=3))
    lines = [PROPERTY_JOBS[i] for i in order]
    bounds = [0, *sorted(cuts), len(lines)]
    files = [lines[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    fresh, drop = _fresh(store.kind, tmp_path)
    try:
        assert _ingested_tables(fresh, tmp_path, files) == reference_tables
    finally:
        drop()
