"""`ingest --format sacct`, on both stores: `sacct -a -X -P` output read with the site's
timezone, steps and jobs not ended skipped and counted, exactly once, and a malformed file
refused in one line with nothing recorded.

tests/data/slurm/sacct_chicago.txt is written by hand; its expected records
(sacct_chicago.expected) were computed by hand from the wall times in America/Chicago, CST
(UTC-6) in January: 2024-01-15T00:00:00Z is 1705276800, so 08:00:00 local is 14:00:00Z,
1705327200. The charge is nnodes x seconds (the default weights: node 1, core 0, gpu 0).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.conftest import DATA, Store

SACCT = DATA / "slurm" / "sacct_chicago.txt"
NOW = 1705400000  # after every job of the file
ZONE = "America/Chicago"
RECORDS_FORMAT = (
    "{id} {cluster} {username} {userid} {bank} {queue} {t_submit:.0f} {t_run:.0f} "
    "{t_inactive:.0f} {nnodes} {ncores} {ngpus} {charge}"
)
FIRST_REPORT = "recorded 4, duplicate 0, unmatched 1, skipped 6 (steps 4, PENDING 1, RUNNING 1)\n"


def slurm_site(store: Store) -> None:
    """alice and bob have associations; carol (job 127) has none, so her job is unmatched."""
    store.run("create-db", now=NOW)
    store.run("edit-config", f"timezone={ZONE}", now=NOW)
    store.run("add-bank", "root", "1", now=NOW)
    for bank in ("chemistry", "physics"):
        store.run("add-bank", bank, "1", "--parent-bank", "root", now=NOW)
    store.run("add-user", "--username", "alice", "--userid", "1001", "-B", "chemistry", now=NOW)
    store.run("add-user", "--username", "bob", "--userid", "1002", "-B", "physics", now=NOW)


def logged_records(store: Store) -> dict[str, dict[str, Any]]:
    """Every job record of the log by id, as JobsRecorded holds it."""
    from ledger.joblog import JOBLOG_ID, JobLog
    from ledger.store.application import Ledger
    from ledger.store.connections import parse_store_url

    ledger = Ledger(parse_store_url(store.url))
    try:
        return {
            r["id"]: r
            for event in ledger.events.get(JOBLOG_ID)
            if isinstance(event, JobLog.JobsRecorded)
            for r in event.records
        }
    finally:
        ledger.close()


def shown_records(store: Store) -> str:
    return store.run("view-job-records", "-o", RECORDS_FORMAT, now=NOW).stdout


def test_sacct_jobs_become_records_in_the_sites_timezone(store: Store) -> None:
    slurm_site(store)
    result = store.run("ingest", "--format", "sacct", str(SACCT), now=NOW)
    assert result.stdout == FIRST_REPORT
    # flux-accounting's listing ends with a blank line (see view-job-records).
    assert shown_records(store) == (DATA / "slurm" / "sacct_chicago.expected").read_text() + "\n"


def test_what_sacct_says_beside_the_counts_is_kept(store: Store) -> None:
    slurm_site(store)
    store.run("ingest", "--format", "sacct", str(SACCT), now=NOW)
    records = logged_records(store)
    gpu = records["502"]
    # The QOS is a field of the record (its UsageFactor prices the job); the rest is kept.
    assert gpu["qos"] == "high"
    assert gpu["extra"] == {"state": "TIMEOUT", "t_eligible": 1705331400.0}
    # 250G is 256000 MiB; the typed GPUs are kept beside the untyped count, and Slurm's own
    # billing TRES too (ours is fixed from the queue's weights: none here, so the CPUs).
    assert gpu["tres"] == {
        "billing": 72,
        "cpu": 64,
        "mem": 256000,
        "node": 2,
        "gres/gpu": 4,
        "gres/gpu:a100": 4,
    }
    assert gpu["billing"] == 64
    # An array task is recorded under its own JobIDRaw, its JobID kept beside it.
    assert records["127"]["extra"]["jobid"] == "123_4"
    assert records["127"]["tres"] == {"billing": 2, "cpu": 2, "mem": 2560, "node": 1}
    # Cancelled by root before it started: it ran no time and has no AllocTRES.
    cancelled = records["503"]
    assert cancelled["qos"] == "normal"
    assert cancelled["extra"] == {
        "state": "CANCELLED by 0",
        "t_eligible": 1705334400.0,
    }
    assert (cancelled["t_run"], cancelled["t_inactive"], cancelled["charge"]) == (
        1705336200.0,
        1705336200.0,
        0.0,
    )
    assert sorted(records) == ["127", "501", "502", "503"]  # no step, nothing running or pending


def test_the_same_sacct_output_twice_adds_nothing(store: Store, tmp_path: Path) -> None:
    slurm_site(store)
    store.run("ingest", "--format", "sacct", str(SACCT), now=NOW)
    position = store.log_position()
    again = store.run("ingest", "--format", "sacct", str(SACCT), now=NOW)
    assert again.stdout == (
        "recorded 0, duplicate 4, unmatched 0, skipped 6 (steps 4, PENDING 1, RUNNING 1)\n"
    )
    assert again.stderr == "nothing new: every job was already recorded\n"
    # Gzip-compressed on standard input: the same jobs, still nothing new.
    piped = store.run(
        "ingest", "--format", "sacct", "-", input=gzip.compress(SACCT.read_bytes()), now=NOW
    )
    assert piped.stdout.startswith("recorded 0, duplicate 4,")
    assert store.log_position() == position


def test_a_gzip_file_reads_as_its_text(store: Store, tmp_path: Path) -> None:
    slurm_site(store)
    packed = tmp_path / "sacct.txt.gz"
    packed.write_bytes(gzip.compress(SACCT.read_bytes()))
    assert store.run("ingest", "--format", "sacct", str(packed), now=NOW).stdout == FIRST_REPORT


def test_a_malformed_line_is_one_line_naming_it_and_nothing_is_recorded(
    store: Store, tmp_path: Path
) -> None:
    slurm_site(store)
    lines = SACCT.read_text().splitlines()
    lines[6] = lines[6].replace("2024-01-15T10:30:00", "half past ten")  # job 503's End
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    position = store.log_position()
    result = store.run("ingest", "--format", "sacct", str(bad), now=NOW, expect=1)
    assert result.stderr == (
        f"fairledger: {bad}: line 7: End 'half past ten' is not a time (YYYY-MM-DDTHH:MM:SS,"
        " epoch seconds, Unknown or None); nothing recorded\n"
    )
    assert result.stdout == ""
    assert store.log_position() == position
    assert logged_records(store) == {}
    # --skip-invalid records the rest and names the line it set aside.
    skipped = store.run("ingest", "--format", "sacct", "--skip-invalid", str(bad), now=NOW)
    assert skipped.stdout == (
        "recorded 3, duplicate 0, unmatched 1, invalid 1, skipped 6 (steps 4, PENDING 1,"
        " RUNNING 1)\n"
    )
    assert skipped.stderr.startswith(f"fairledger: skipped {bad}: line 7: End 'half past ten'")
    assert sorted(logged_records(store)) == ["127", "501", "502"]


def test_a_header_without_a_needed_column_refuses_the_file(store: Store, tmp_path: Path) -> None:
    slurm_site(store)
    text = SACCT.read_text().replace("|State|", "|Status|", 1)
    bad = tmp_path / "no-state.txt"
    bad.write_text(text)
    position = store.log_position()
    for args in (("--skip-invalid", str(bad)), (str(bad),)):
        result = store.run("ingest", "--format", "sacct", *args, now=NOW, expect=1)
        assert result.stderr == (
            f"fairledger: {bad}: line 1: the header lacks State (columns: JobID|JobIDRaw|"
            "Cluster|Partition|Account|User|UID|QOS|Status|Submit|Eligible|Start|End|NNodes|"
            "NCPUS|AllocTRES); nothing recorded\n"
        )
    assert store.log_position() == position


def test_an_array_task_without_jobidraw_is_refused_naming_it(store: Store, tmp_path: Path) -> None:
    slurm_site(store)
    text = "JobID|User|Account|Partition|Start|End|State|NCPUS\n"
    text += "77|alice|chemistry|batch|1705327200|1705330800|COMPLETED|1\n"
    text += "123_4|alice|chemistry|batch|1705327200|1705330800|COMPLETED|1\n"
    path = tmp_path / "jobid-only.txt"
    path.write_text(text)
    result = store.run("ingest", "--format", "sacct", str(path), now=NOW, expect=1)
    assert result.stderr == (
        f"fairledger: {path}: line 3: job ID '123_4' is not a number: add JobIDRaw to sacct's"
        " --format (an array task's or a heterogeneous job's own id); nothing recorded\n"
    )
    assert logged_records(store) == {}


def test_epoch_seconds_need_no_zone_and_an_empty_file_is_refused(
    store: Store, tmp_path: Path
) -> None:
    slurm_site(store)
    text = "JobIDRaw|User|Account|Partition|Start|End|State|NCPUS\n"
    text += "77|alice|chemistry|batch|1705327200|1705330800|COMPLETED|1\n"
    path = tmp_path / "epoch.txt"
    path.write_text(text)
    store.run("ingest", "--format", "sacct", str(path), now=NOW)
    record = logged_records(store)["77"]
    assert (record["t_run"], record["t_inactive"], record["cluster"]) == (
        1705327200.0,
        1705330800.0,
        "cluster",  # no Cluster column: the ledger's default cluster name
    )
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    result = store.run("ingest", "--format", "sacct", str(empty), now=NOW, expect=1)
    assert result.stderr == (
        f"fairledger: {empty}: no header line (run sacct with -P and without -n);"
        " nothing recorded\n"
    )
    # Without a UID column the job names its user by name alone.
    (shown,) = json.loads(store.run("view-job-records", "--json", now=NOW).stdout)
    assert (shown["username"], shown["userid"]) == ("alice", None)
