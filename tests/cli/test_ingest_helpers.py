"""Ingest's pass 1 in helper processes: an input longer than a chunk is validated by them, a
piece at a time, and must give what validating it in the command's own process gives: the
same jobs recorded, the same bad lines refused or set aside with the same numbers and
messages, and a read error raised after the chunks before it, as one process raises it.

The chunks and pieces are made tiny here, so that a few dozen lines span many of each."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from click.testing import Result

from ledger.machine import MAX_HELPERS
from ledger.usecases import ingest as ingest_use_case
from tests.cli.test_ingest import counts, job, jobs, site, write
from tests.conftest import T0, Store

CHUNK = 6  # lines a chunk: a bad line is reported with the count of the others in its chunk
PIECE = 2  # lines a helper validates at a time
NOT_JSON = "not valid JSON: Expecting property name enclosed in double quotes (column 2)"


def in_processes(monkeypatch: pytest.MonkeyPatch, helpers: int) -> None:
    """Tiny chunks and pieces, and pass 1 in `helpers` helper processes (0: in the command's
    own process, the reference), whatever the machine's CPUs and wherever the store's
    server. A file is recorded while they validate it; a pipe is validated first."""
    monkeypatch.setattr(ingest_use_case, "CHUNK_LINES", CHUNK)
    monkeypatch.setattr(ingest_use_case, "HELPER_LINES", PIECE)
    monkeypatch.setattr(ingest_use_case, "_helpers", lambda: helpers)


def both_ways(
    store: Store, monkeypatch: pytest.MonkeyPatch, *args: str, expect: int = 0
) -> tuple[str, str]:
    """(stdout, stderr) of `ingest ARGS` in one process, having checked that the helpers give
    the same, one or two of them."""
    runs = []
    for helpers in (0, 1, 2):
        in_processes(monkeypatch, helpers)
        result = store.run("ingest", *args, expect=expect)
        runs.append((result.stdout, result.stderr))
    assert runs[1:] == [runs[0], runs[0]]
    return runs[0]


def test_only_an_input_longer_than_a_chunk_counts_the_idle_cpus(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting them may wait a moment (ledger.machine.IDLE_WINDOW): a short input, which no
    helper would validate, never does; a longer one counts them once."""
    site(ledger_store)
    in_processes(monkeypatch, 0)
    asked: list[int] = []
    monkeypatch.setattr(ingest_use_case, "_helpers", lambda: asked.append(1) or 0)
    short = write(tmp_path / "short.jsonl", *(job(n, end=T0 - n) for n in range(1, CHUNK + 1)))
    assert ledger_store.run("ingest", short).stdout == counts(CHUNK)
    assert asked == []
    longer = write(
        tmp_path / "longer.jsonl", *(job(n, end=T0 - n) for n in range(101, 102 + CHUNK))
    )
    assert ledger_store.run("ingest", longer).stdout == counts(CHUNK + 1)
    assert asked == [1]


def test_helpers_record_a_long_input_once(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site(ledger_store)
    in_processes(monkeypatch, 2)
    path = write(tmp_path / "long.jsonl", *(job(n, end=T0 - n, duration=n) for n in range(1, 41)))
    assert ledger_store.run("ingest", path).stdout == counts(40)
    recorded = jobs(ledger_store)
    assert sorted(int(job_id) for _, job_id in recorded) == list(range(1, 41))
    assert {job_id: row["charge"] for (_, job_id), row in recorded.items()} == {
        str(n): float(n) for n in range(1, 41)
    }
    assert ledger_store.run("ingest", path).stdout == counts(0, duplicate=40)


def test_helpers_the_cpus_let_in_later_validate_the_rest_and_it_is_recorded_meanwhile(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPUs are counted again before each chunk that has another after it: a first look
    that found them busy (a server's checkpoint for a moment) leaves only the first chunks to
    this process. From the first part the helpers give, the file is recorded while they
    validate it, the chunks spooled before them first, in one transaction."""
    site(ledger_store)
    in_processes(monkeypatch, 0)
    looks = iter([0, 0, 2])
    asked: list[int] = []

    def helpers() -> int:
        asked.append(next(looks, 2))
        return asked[-1]

    monkeypatch.setattr(ingest_use_case, "_helpers", helpers)
    calls = spy_transactions(monkeypatch)
    # Seven chunks: the first two validated here and spooled, the rest by the helpers.
    path = write(tmp_path / "long.jsonl", *(job(n, end=T0 - n, duration=n) for n in range(1, 41)))
    assert ledger_store.run("ingest", path).stdout == counts(40)
    assert asked == [0, 0, 2]
    assert calls == ["record_job_chunks"]
    assert {job_id: row["charge"] for (_, job_id), row in jobs(ledger_store).items()} == {
        str(n): float(n) for n in range(1, 41)
    }


@pytest.mark.parametrize(
    ("bad_at", "message"),
    [
        # Two bad lines in the third chunk (lines 13-18), in two of its pieces.
        ((14, 17), f"line 14: {NOT_JSON} (and 1 more bad lines); nothing recorded"),
        # One in the second chunk and one in the fourth: the first chunk with one is reported.
        ((9, 20), f"line 9: {NOT_JSON}; nothing recorded"),
    ],
)
def test_helpers_refuse_bad_lines_as_one_process_does(
    ledger_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bad_at: tuple[int, ...],
    message: str,
) -> None:
    site(ledger_store)
    position = ledger_store.log_position()
    lines = [job(n) if n not in bad_at else "{not json" for n in range(1, 25)]
    path = write(tmp_path / "bad.jsonl", *lines)
    stdout, stderr = both_ways(ledger_store, monkeypatch, path, expect=1)
    assert (stdout, stderr) == ("", f"fairledger: {path}: {message}\n")
    assert ledger_store.log_position() == position


def test_helpers_set_aside_the_same_lines(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site(ledger_store)
    lines = [job(n) if n not in (3, 8, 15) else job(n, nnodes=-1) for n in range(1, 21)]
    path = write(tmp_path / "mixed.jsonl", *lines)
    in_processes(monkeypatch, 2)
    by_helpers = ledger_store.run("ingest", path, "--skip-invalid")
    assert by_helpers.stdout == "recorded 17, duplicate 0, unmatched 0, invalid 3\n"
    assert [line.split(": nnodes")[0] for line in by_helpers.stderr.splitlines()] == [
        f"fairledger: skipped {path}: line {n}" for n in (3, 8, 15)
    ]
    in_processes(monkeypatch, 0)
    alone = ledger_store.run("ingest", path, "--skip-invalid")
    assert alone.stdout == "recorded 0, duplicate 17, unmatched 0, invalid 3\n"
    assert alone.stderr == by_helpers.stderr + "nothing new: every job was already recorded\n"


@pytest.mark.parametrize(
    ("bad_json_at", "latin1_at", "message"),
    [
        # The bad line's chunk (the first) comes before the text that is not UTF-8 (the third,
        # which helpers have read ahead): the bad line is refused.
        (3, 14, f"line 3: {NOT_JSON}"),
        # The text that is not UTF-8 (the third chunk) comes before the bad line (the fourth):
        # reading stops there, once the chunks before it passed.
        (21, 16, "line 16: not UTF-8 (invalid continuation byte)"),
    ],
)
def test_helpers_meet_a_read_error_where_one_process_does(
    ledger_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bad_json_at: int,
    latin1_at: int,
    message: str,
) -> None:
    site(ledger_store)
    path = tmp_path / "latin1.jsonl"
    write(path, *(job(n) if n != bad_json_at else "{not json" for n in range(1, 25)))
    lines = path.read_bytes().splitlines(keepends=True)
    lines[latin1_at - 1] = b'{"id": "caf\xe9"}\n'
    path.write_bytes(b"".join(lines))
    stdout, stderr = both_ways(ledger_store, monkeypatch, str(path), expect=1)
    assert (stdout, stderr) == ("", f"fairledger: {path}: {message}; nothing recorded\n")


@pytest.mark.parametrize(("idle", "helpers"), [(1, 0), (2, 2), (64, MAX_HELPERS)])
def test_helpers_take_the_idle_cpus_but_one_alone(
    monkeypatch: pytest.MonkeyPatch, idle: int, helpers: int
) -> None:
    """One helper on one CPU would only take the place of the command's own process. A
    PostgreSQL server on this machine counts as any other process: the idle CPUs are counted."""
    monkeypatch.setattr(ingest_use_case, "idle_cpus", lambda: idle)
    assert ingest_use_case._helpers() == helpers


def sacct_line(n: int) -> str:
    """Line n of a sacct file (after its header): mostly alice's ended jobs (the charge is
    n nodes-seconds), with a step, a job still running, one pending, and an array task sacct
    printed without JobIDRaw (refused) among them."""
    kind = n % 7
    job_id, state = str(n), "COMPLETED"
    if kind == 2:
        job_id = f"{n - 1}.batch"
    elif kind == 4:
        state = "RUNNING" if n % 2 else "PENDING"
    elif n == 12:
        job_id = "11_3"
    return f"{job_id}|alice|5001|physics|batch|{T0 - 100 - n}|{T0 - n}|1|1|{state}"


def test_helpers_read_sacct_lines_as_one_process_does(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each helper reads its own pieces of a sacct file with its copy of the header's reader:
    the same jobs, the same refused line by its number, and the steps and unfinished jobs of
    every piece counted once."""
    site(ledger_store)
    header = "JobID|User|UID|Account|Partition|Start|End|NNodes|NCPUS|State"
    path = tmp_path / "sacct.txt"
    # A blank line before the header: the first chunk holds both, and the numbers count it.
    path.write_text("\n".join(["", header, *(sacct_line(n) for n in range(1, 41))]) + "\n")
    args = ("ingest", "--format", "sacct", "--skip-invalid", str(path))
    in_processes(monkeypatch, 2)
    by_helpers = ledger_store.run(*args)
    # Lines 2..41 hold n = 1..40: 6 steps (n = 2, 9, ..., 37), 3 pending (4, 18, 32), 3 running
    # (11, 25, 39) and one refused (n = 12, line 14): 27 recorded.
    assert by_helpers.stdout == (
        "recorded 27, duplicate 0, unmatched 0, invalid 1, "
        "skipped 12 (steps 6, PENDING 3, RUNNING 3)\n"
    )
    assert by_helpers.stderr.startswith(f"fairledger: skipped {path}: line 14: job ID '11_3'")
    recorded = jobs(ledger_store)
    assert sorted(int(job_id) for _, job_id in recorded) == [
        n for n in range(1, 41) if n % 7 not in (2, 4) and n != 12
    ]
    in_processes(monkeypatch, 0)
    alone = ledger_store.run(*args)
    assert alone.stdout == by_helpers.stdout.replace(
        "recorded 27, duplicate 0", "recorded 0, duplicate 27"
    )
    assert alone.stderr == by_helpers.stderr + "nothing new: every job was already recorded\n"


@pytest.mark.parametrize(
    ("helper", "status"),
    [
        ("exit 3", 3),  # ends before answering
        (r"printf '\200\005\225'; exit 4", 4),  # ends in the middle of its answer
    ],
)
def test_a_helper_that_ends_is_one_line_and_nothing_is_recorded(
    ledger_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    helper: str,
    status: int,
) -> None:
    site(ledger_store)
    position = ledger_store.log_position()
    path = write(tmp_path / "long.jsonl", *(job(n) for n in range(1, 25)))
    # The helpers are started as `sys.executable -m ledger.usecases.validation`: here, a
    # script that ignores its arguments and its input, and ends as `helper` says.
    fake = tmp_path / "helper.sh"
    fake.write_text(f"#!/bin/sh\n{helper}\n")
    fake.chmod(0o755)
    in_processes(monkeypatch, 2)
    monkeypatch.setattr(sys, "executable", str(fake))
    result = ledger_store.run("ingest", path, expect=1)
    assert (result.stdout, result.stderr) == (
        "",
        f"fairledger: a helper process validating the input ended (exit status {status})\n",
    )
    assert ledger_store.log_position() == position


def test_the_digests_made_in_the_helpers_are_those_of_the_records_logged(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 1 digests each record; the log's key index must hold the digest of the record as
    the log holds it, which is what a ledger written before the index was built gets."""
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.utils import get_topic

    from ledger.chain import record_digest
    from ledger.joblog import JobLog, job_key
    from ledger.store import log_tables
    from ledger.store.application import Ledger
    from ledger.store.connections import parse_store_url

    site(ledger_store)
    in_processes(monkeypatch, 2)
    path = write(tmp_path / "long.jsonl", *(job(n, end=T0 - n, duration=n) for n in range(1, 21)))
    ledger_store.run("ingest", path)
    ledger = Ledger(parse_store_url(ledger_store.url))
    try:
        conn = ledger.conn
        topic = get_topic(JobLog.JobsRecorded)
        logged = {}
        for _, originator, version, row_topic, state in log_tables.stored_after(conn, 0, topic):
            event = ledger.mapper.to_domain_event(
                StoredEvent(
                    originator_id=UUID(originator),
                    originator_version=version,
                    topic=row_topic,
                    state=state,
                )
            )
            logged.update({job_key(r): record_digest(r) for r in event.records})
        indexed = {
            (row["cluster"], row["id"]): row["digest"]
            for row in conn.query(f"SELECT cluster, id, digest FROM {log_tables.JOB_KEYS}")
        }
    finally:
        ledger.close()
    assert len(logged) == 20
    assert indexed == logged


# --- a file recorded while it is validated -----------------------------------------------------


def test_a_pipe_is_validated_first_by_two_helpers(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard input may be a pipe whose writer runs for minutes: the ledger is not locked
    while it is read. It is validated by two helpers into the spool, then recorded, and a bad
    line in its last chunk still records nothing."""
    site(ledger_store)
    position = ledger_store.log_position()
    good = "".join(json.dumps(job(n, end=T0 - n, duration=n)) + "\n" for n in range(1, 31))
    calls = spy_transactions(monkeypatch)
    in_processes(monkeypatch, 2)
    refused = ledger_store.run("ingest", "-", input=good + "{not json\n", expect=1)
    assert refused.stderr == f"fairledger: -: line 31: {NOT_JSON}; nothing recorded\n"
    assert ledger_store.log_position() == position
    assert calls == []  # refused before any transaction began
    assert ledger_store.run("ingest", "-", input=good).stdout == counts(30)
    assert calls == ["record_jobs"]  # the spool, in one transaction of RECORD_LINES
    assert sorted(int(job_id) for _, job_id in jobs(ledger_store)) == list(range(1, 31))


def test_a_file_is_recorded_in_one_transaction_while_it_is_validated(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site(ledger_store)
    calls = spy_transactions(monkeypatch)
    in_processes(monkeypatch, 2)
    path = write(tmp_path / "long.jsonl", *(job(n, end=T0 - n, duration=n) for n in range(1, 31)))
    assert ledger_store.run("ingest", path).stdout == counts(30)
    assert calls == ["record_job_chunks"]
    assert {job_id: row["charge"] for (_, job_id), row in jobs(ledger_store).items()} == {
        str(n): float(n) for n in range(1, 31)
    }


def ingest_beside_another_writer(
    store: Store, path: str, until: threading.Event, ended: threading.Event | None = None
) -> Any:
    """`ingest PATH` while another writer holds the writers' lock: taken before the ingest
    starts, let go once `until` is set (at the latest when the ingest ends, or after 20 s),
    and then `ended` set."""
    from tests.cli.test_ledger import writers_lock_held

    taken = threading.Event()

    def other_writer() -> None:
        with writers_lock_held(store):
            taken.set()
            until.wait(timeout=20)
        if ended is not None:
            ended.set()

    holder = threading.Thread(target=other_writer)
    holder.start()
    try:
        assert taken.wait(timeout=20)
        return store.run("ingest", path)
    finally:
        until.set()
        holder.join()


def test_a_file_that_finds_the_ledger_taken_is_validated_meanwhile_and_recorded_after(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingesters started together: the one that takes the ledger records its file while its
    helpers validate it. Another, finding the ledger taken, does not wait for it idle: its
    pieces go into the spool as they are validated, the lock is tried again after each, and
    once every line has passed its spool is recorded as a pipe's is. Here another writer
    holds the lock until the ingest asks for it to record its spool."""
    from ledger.store.application import Ledger

    site(ledger_store)
    in_processes(monkeypatch, 2)
    path = write(tmp_path / "long.jsonl", *(job(n, end=T0 - n, duration=n) for n in range(1, 31)))
    calls = spy_transactions(monkeypatch)
    asked = threading.Event()
    real = Ledger.record_jobs

    def asking(self: Ledger, *args: Any, **kw: Any) -> Any:
        asked.set()
        return real(self, *args, **kw)

    monkeypatch.setattr(Ledger, "record_jobs", asking)
    result = ingest_beside_another_writer(ledger_store, path, until=asked)
    assert result.stdout == counts(30)
    # Tried after each of its 15 pieces, then recorded from the spool.
    assert calls == ["record_job_chunks"] * 15 + ["record_jobs"]
    assert {job_id: row["charge"] for (_, job_id), row in jobs(ledger_store).items()} == {
        str(n): float(n) for n in range(1, 31)
    }


def test_a_file_whose_ingest_finds_the_ledger_free_part_way_records_what_it_spooled_first(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other writer ends while the ingest is validating: at its next try the ingest takes
    the ledger and records, in the one transaction, the pieces it spooled while waiting, then
    the rest as it is validated."""
    from ledger.store.application import Ledger

    site(ledger_store)
    in_processes(monkeypatch, 2)
    path = write(tmp_path / "long.jsonl", *(job(n, end=T0 - n, duration=n) for n in range(1, 31)))
    tries: list[str] = []
    third_try, ended = threading.Event(), threading.Event()
    real = Ledger.record_job_chunks

    def trying(self: Ledger, *args: Any, **kw: Any) -> Any:
        tries.append("record_job_chunks")
        if len(tries) == 3:
            third_try.set()
            assert ended.wait(timeout=20)  # the other writer has ended meanwhile
        return real(self, *args, **kw)

    monkeypatch.setattr(Ledger, "record_job_chunks", trying)
    calls = spy_transactions(monkeypatch)
    result = ingest_beside_another_writer(ledger_store, path, until=third_try, ended=ended)
    assert result.stdout == counts(30)
    assert len(tries) == 3  # refused twice, then had the ledger
    assert calls.count("record_jobs") == 0  # nothing left for the spool's transactions
    assert sorted(int(job_id) for _, job_id in jobs(ledger_store)) == list(range(1, 31))


def test_the_ledger_is_locked_only_once_the_first_piece_is_validated(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helpers start, and answer for the first piece, before the transaction begins: a
    helper that ends before its first answer is refused without one."""
    site(ledger_store)
    calls = spy_transactions(monkeypatch)
    path = write(tmp_path / "long.jsonl", *(job(n) for n in range(1, 25)))
    fake = tmp_path / "helper.sh"  # started as `sys.executable -m ...`: ends at once
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    in_processes(monkeypatch, 2)
    monkeypatch.setattr(sys, "executable", str(fake))
    result = ledger_store.run("ingest", path, expect=1)
    assert result.stderr == (
        "fairledger: a helper process validating the input ended (exit status 3)\n"
    )
    assert calls == []


def job_1_in_the_log_and_job_5_repeated(position: int) -> str:
    """The conflicts told of an input whose job 1 says otherwise than the log's (at
    `position`) and whose job 5 comes again later, saying otherwise."""
    return (
        f"fairledger: conflict: job 1 (cluster cluster) differs from the record at log position "
        f"{position}; not recorded\n"
        "fairledger: conflict: job 5 (cluster cluster) differs from an earlier line of this "
        "input; not recorded\n"
    )


@pytest.mark.parametrize("helpers", [0, 1, 2])
def test_repeats_and_conflicts_across_pieces_are_told_as_one_process_tells_them(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helpers: int
) -> None:
    """A job repeated in a later piece of the same transaction is a duplicate, and one that
    says otherwise a conflict with the earlier line (not with the position the transaction
    gave it); a job the log held before is a conflict with its record there."""
    site(ledger_store)
    ledger_store.run("ingest", write(tmp_path / "first.jsonl", job(1)))
    position = ledger_store.log_position()  # job 1's batch
    lines = [job(n) for n in range(1, 21)]
    lines[0] = job(1, duration=99)  # saying otherwise than the log
    lines[15] = job(3)  # line 16: job 3 again, the same
    lines[17] = job(5, duration=50)  # line 18: job 5 again, saying otherwise
    in_processes(monkeypatch, helpers)
    result = ledger_store.run("ingest", write(tmp_path / "jobs.jsonl", *lines))
    # jobs 2-20 but 16 and 18 (their lines repeat 3 and 5): 17 recorded
    assert result.stdout == "recorded 17, duplicate 1, unmatched 0, conflicting 2\n"
    assert result.stderr == job_1_in_the_log_and_job_5_repeated(position)


def in_small_transactions(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    lines: list[dict[str, Any]],
) -> Result:
    """`ingest` of `lines` in transactions of 10 jobs: from a pipe (validated first in the
    command's process, then recorded RECORD_LINES at a time) or from a file (its first
    HELD_LINES, 8, recorded while two helpers validate them, the rest as a pipe's)."""
    in_processes(monkeypatch, 0 if source == "pipe" else 2)
    monkeypatch.setattr(ingest_use_case, "HELD_LINES", 8)
    monkeypatch.setattr(ingest_use_case, "RECORD_LINES", 10)
    if source == "pipe":
        text = "".join(json.dumps(line) + "\n" for line in lines)
        return store.run("ingest", "-", input=text)
    return store.run("ingest", write(tmp_path / "jobs.jsonl", *lines))


@pytest.mark.parametrize("source", ["pipe", "file"])
def test_a_repeat_in_a_later_transaction_is_told_as_one_transaction_tells_it(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """A pipe is recorded in transactions of RECORD_LINES; a file past HELD_LINES too, after
    its held transaction. A job repeated, saying otherwise, in a later transaction of the
    same input is a conflict with an earlier line of it, as it is within one transaction;
    a job the log held before the input is a conflict with its record there."""
    site(ledger_store)
    ledger_store.run("ingest", write(tmp_path / "first.jsonl", job(1)))
    position = ledger_store.log_position()  # job 1's batch
    lines = [job(n) for n in range(1, 41)]
    lines[0] = job(1, duration=99)  # saying otherwise than the log
    lines[35] = job(5, duration=50)  # line 36: job 5 (line 5) again, saying otherwise
    calls = spy_transactions(monkeypatch)
    result = in_small_transactions(ledger_store, tmp_path, monkeypatch, source, lines)
    assert result.stdout == "recorded 38, duplicate 0, unmatched 0, conflicting 2\n"
    assert result.stderr == job_1_in_the_log_and_job_5_repeated(position)
    # Job 5 and its repeat are in different transactions.
    assert calls == (
        ["record_jobs"] * 4 if source == "pipe" else ["record_job_chunks"] + ["record_jobs"] * 4
    )


@pytest.mark.parametrize("source", ["pipe", "file"])
def test_a_logged_job_in_a_later_chunk_is_told_as_in_the_first(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """A chunk after one holding no logged job is written without looking its jobs up on
    PostgreSQL: one that then holds a logged job, the same or saying otherwise, is told as
    a looked-up chunk tells it, and nothing of it is written twice."""
    site(ledger_store)
    ledger_store.run("ingest", write(tmp_path / "first.jsonl", job(30), job(33)))
    position = ledger_store.log_position()  # jobs 30 and 33's batch
    lines = [job(n) for n in range(1, 41)]
    lines[29] = job(30, duration=99)  # line 30: saying otherwise than the log
    result = in_small_transactions(ledger_store, tmp_path, monkeypatch, source, lines)
    assert result.stdout == "recorded 38, duplicate 1, unmatched 0, conflicting 1\n"
    assert result.stderr == (
        f"fairledger: conflict: job 30 (cluster cluster) differs from the record at log "
        f"position {position}; not recorded\n"
    )
    again = ledger_store.run("ingest", write(tmp_path / "again.jsonl", *lines))
    assert again.stdout == "recorded 0, duplicate 39, unmatched 0, conflicting 1\n"


def test_a_write_failing_part_way_through_a_file_records_nothing(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pieces recorded before the failure are in the same transaction: rolled back with
    it, so the message is the store's own, not how far the ingest got."""
    from ledger.errors import WriteFailed
    from ledger.store.application import Ledger

    site(ledger_store)
    position = ledger_store.log_position()
    real = Ledger._record_fresh
    pieces = {"n": 0}

    def failing_fourth(self: Ledger, *args: Any) -> Any:
        pieces["n"] += 1
        if pieces["n"] == 4:
            raise WriteFailed("disk full")
        return real(self, *args)

    monkeypatch.setattr(Ledger, "_record_fresh", failing_fourth)
    in_processes(monkeypatch, 2)
    path = write(tmp_path / "long.jsonl", *(job(n) for n in range(1, 25)))
    result = ledger_store.run("ingest", path, expect=1)
    assert (result.stdout, result.stderr) == ("", "fairledger: disk full; nothing recorded\n")
    assert pieces["n"] == 4
    assert ledger_store.log_position() == position


def test_past_held_lines_the_rest_is_validated_before_anything_commits(
    ledger_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first HELD_LINES lines are recorded while the rest is validated into the spool;
    the transaction commits only once every line passed, and the spool is then recorded in
    transactions of RECORD_LINES."""
    site(ledger_store)
    position = ledger_store.log_position()
    calls = spy_transactions(monkeypatch)
    in_processes(monkeypatch, 2)
    monkeypatch.setattr(ingest_use_case, "HELD_LINES", 8)
    monkeypatch.setattr(ingest_use_case, "RECORD_LINES", 10)
    lines = [job(n, end=T0 - n, duration=n) for n in range(1, 41)]
    path = write(tmp_path / "bad.jsonl", *lines, "{not json")
    refused = ledger_store.run("ingest", path, expect=1)
    assert refused.stderr == f"fairledger: {path}: line 41: {NOT_JSON}; nothing recorded\n"
    assert ledger_store.log_position() == position
    path = write(tmp_path / "good.jsonl", *lines)
    assert ledger_store.run("ingest", path).stdout == counts(40)
    # 8 lines held (4 pieces of 2), then 32 in transactions of 10
    assert calls == ["record_job_chunks"] * 2 + ["record_jobs"] * 4
    assert {job_id: row["charge"] for (_, job_id), row in jobs(ledger_store).items()} == {
        str(n): float(n) for n in range(1, 41)
    }


def spy_transactions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the Ledger's job-recording transactions, as they begin."""
    from ledger.store.application import Ledger

    calls: list[str] = []
    for name in ("record_jobs", "record_job_chunks"):
        real = getattr(Ledger, name)

        def spy(self: Ledger, *args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            calls.append(_name)
            return _real(self, *args, **kw)

        monkeypatch.setattr(Ledger, name, spy)
    return calls
