"""The ingest use case called directly, without the CLI, on a real SQLite ledger: what it
records, what it returns, and what it tells its notes as it runs."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger import bounds
from ledger.errors import Interrupted, InvalidValue, WriteFailed
from ledger.usecases import ingest as ingest_usecase
from ledger.usecases.charge_bound import ChargeTotals, charges_of
from ledger.usecases.ingest import IngestNotes, ingest
from ledger.usecases.job_records import JobFilter, view_job_records
from ledger.usecases.job_sources import input_lines, stream_lines
from ledger.usecases.session import Session
from tests.cli.test_ingest import job
from tests.conftest import T0


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    """A new ledger with bank A under root and alice (userid 5001) in it."""
    s = Session(f"sqlite:///{tmp_path / 'ledger.db'}", str(T0 + 100))
    s.create_ledger(86400, 4 * 86400, 0.5, now=T0, actor="test", reason="test ledger")

    def site(site: Any, stamp: Any) -> None:
        site.add_bank(stamp, "root", 1, "", None)
        site.add_bank(stamp, "A", 1, "root", None)
        site.add_user(stamp, "alice", "A", 5001, {})

    s.change(site)
    try:
        yield s
    finally:
        s.close()


def lines(*records: dict[str, Any] | str) -> Iterator[str]:
    return iter([r if isinstance(r, str) else json.dumps(r) for r in records])


def recorded_ids(s: Session) -> list[str]:
    with view_job_records(s, JobFilter()) as rows:
        return [row["id"] for row in rows]


def test_records_each_job_once_and_counts_the_unmatched(session: Session) -> None:
    first = ingest(session, lines(job(1), job(2), job(3, userid=7777)), "a.jsonl", "jsonl")
    assert (first.recorded, first.duplicate, first.unmatched) == (3, 0, 1)
    assert (first.invalid, first.conflicting, first.lines) == (0, 0, 3)
    again = ingest(session, lines(job(2), job(3, userid=7777), job(4)), "b.jsonl", "jsonl")
    assert (again.recorded, again.duplicate, again.unmatched) == (1, 2, 0)
    assert recorded_ids(session) == ["1", "2", "3", "4"]


def test_one_bad_line_records_nothing(session: Session) -> None:
    with pytest.raises(InvalidValue, match=r"a.jsonl: line 2: .*nothing recorded"):
        ingest(session, lines(job(1), "{not json", job(3)), "a.jsonl", "jsonl")
    assert recorded_ids(session) == []


def test_skip_invalid_sets_bad_lines_aside_and_tells_the_notes(session: Session) -> None:
    heard: list[str] = []
    notes = IngestNotes(skipped=lambda bad: heard.append(str(bad)))
    result = ingest(
        session,
        lines(job(1), "{not json", job(3)),
        "a.jsonl",
        "jsonl",
        skip_invalid=True,
        notes=notes,
    )
    assert result.recorded == 2
    assert [bad.line for bad in result.bad] == [2] and result.invalid == 1
    assert heard == [str(result.bad[0])] and heard[0].startswith("line 2: ")
    assert recorded_ids(session) == ["1", "3"]


def test_a_conflicting_job_is_returned_and_noted_not_recorded(session: Session) -> None:
    ingest(session, lines(job(1, duration=10)), "a.jsonl", "jsonl")
    heard: list[tuple[tuple[str, str], int]] = []
    notes = IngestNotes(conflict=lambda c: heard.append((c.key, c.position)))
    result = ingest(
        session,
        lines(job(1, duration=20), job(2), job(2, duration=30)),
        "b.jsonl",
        "jsonl",
        notes=notes,
    )
    assert (result.recorded, result.duplicate, result.conflicting) == (1, 0, 2)
    # the first conflicts with the log (a position in it), the second with an earlier line
    assert [position > 0 for _, position in heard] == [True, False]
    assert [key[1] for key, _ in heard] == ["1", "2"]
    assert [(c.key, c.position) for c in result.conflicts] == heard


def test_a_repeat_in_a_later_transaction_is_an_earlier_line_only_where_this_input_logged_it(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer records job 9 between this input's two transactions: this input's
    repeat of its own job 1 conflicts with an earlier line of it, its job 9 with the other
    writer's record, at its log position."""
    from ledger.store.application import Ledger
    from tests.usecases.ledgers import record

    monkeypatch.setattr(ingest_usecase, "RECORD_LINES", 2)
    real = Ledger.record_jobs
    others: list[int] = []

    def another_writer_after_the_first(self: Ledger, *args: Any, **kw: Any) -> Any:
        outcome = real(self, *args, **kw)
        if not others:
            others.append(0)
            record(session, job(9, duration=5))
            others[0] = self.recorder.max_notification_id()
        return outcome

    monkeypatch.setattr(Ledger, "record_jobs", another_writer_after_the_first)
    heard: list[tuple[str, int]] = []
    result = ingest(
        session,
        lines(job(1), job(2), job(1, duration=99), job(9), job(3)),
        "a.jsonl",
        "jsonl",
        notes=IngestNotes(conflict=lambda c: heard.append((c.key[1], c.position))),
    )
    assert (result.recorded, result.conflicting) == (3, 2)
    assert heard == [("1", 0), ("9", others[0])]
    # Where this input's jobs went: either side of the other writer's, so not one span.
    first, last = result.spans
    assert first[1] < others[0] < last[0]


def test_records_in_transactions_and_reports_progress(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_usecase, "RECORD_LINES", 2)
    progress: list[tuple[int, int]] = []
    result = ingest(
        session,
        lines(*(job(n) for n in range(1, 6))),
        "a.jsonl",
        "jsonl",
        notes=IngestNotes(progress=lambda done, total: progress.append((done, total))),
    )
    assert result.recorded == 5
    assert progress == [(0, 5), (2, 5), (4, 5), (5, 5)]


def test_a_file_is_recorded_while_it_is_read_and_its_progress_counts_what_was_read(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With helpers, a file's pieces are recorded as they come back, before
    the rest of it is read: each progress report counts the lines read so far (3 chunks of 6
    ahead, a piece of 2 recorded at a time)."""
    monkeypatch.setattr(ingest_usecase, "CHUNK_LINES", 6)
    monkeypatch.setattr(ingest_usecase, "HELPER_LINES", 2)
    monkeypatch.setattr(ingest_usecase, "_helpers", lambda: 2)
    path = tmp_path / "jobs.jsonl"
    path.write_text("".join(json.dumps(job(n)) + "\n" for n in range(1, 31)))
    progress: list[tuple[int, int]] = []
    result = ingest(
        session,
        input_lines(str(path), "jsonl"),
        str(path),
        "jsonl",
        notes=IngestNotes(progress=lambda done, total: progress.append((done, total))),
    )
    assert (result.recorded, result.lines) == (30, 30)
    assert progress[:7] == [(2, 18), (4, 18), (6, 18), (8, 24), (10, 24), (12, 24), (14, 30)]
    assert progress[-2:] == [(30, 30), (30, 30)]  # the last piece, then the (empty) spool's
    assert recorded_ids(session) == [str(n) for n in range(1, 31)]


def test_a_failure_after_some_transactions_says_how_far_and_rerunning_completes(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_usecase, "RECORD_LINES", 2)
    ledger = session.ledger
    real_record = ledger.record_jobs
    calls = {"n": 0}

    def failing_second_time(records: list[dict[str, Any]], **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise WriteFailed("disk full")
        return real_record(records, **kwargs)

    monkeypatch.setattr(ledger, "record_jobs", failing_second_time)
    jobs = [job(n) for n in range(1, 6)]
    with pytest.raises(Interrupted) as stopped:
        ingest(session, lines(*jobs), "a.jsonl", "jsonl")
    assert str(stopped.value) == (
        "disk full after recording 2 jobs; re-run the same ingest to complete it: "
        "recording is exactly-once"
    )
    monkeypatch.setattr(ledger, "record_jobs", real_record)
    rerun = ingest(session, lines(*jobs), "a.jsonl", "jsonl")
    assert (rerun.recorded, rerun.duplicate) == (3, 2)
    assert recorded_ids(session) == ["1", "2", "3", "4", "5"]


def test_a_failure_in_the_first_transaction_is_the_error_itself(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(records: list[dict[str, Any]], **kwargs: Any) -> Any:
        raise WriteFailed("disk full")

    monkeypatch.setattr(session.ledger, "record_jobs", failing)
    with pytest.raises(WriteFailed, match="^disk full; nothing recorded$"):
        ingest(session, lines(job(1)), "a.jsonl", "jsonl")


def test_the_events_name_the_input_the_reason_and_the_actor(session: Session) -> None:
    ingest(session, lines(job(1)), "a.jsonl", "jsonl", actor="cron", reason="nightly")
    batch = [
        e
        for e in session.ledger.recorder.select_notifications(start=1, limit=100)
        if e.topic.endswith("JobsRecorded")
    ]
    assert len(batch) == 1
    stored = json.loads(batch[0].state)
    assert stored["reason"] == "nightly" and stored["actor"] == "cron"
    assert stored["source"] == {"input": "a.jsonl", "format": "jsonl"}


def test_input_that_is_not_utf8_records_nothing(session: Session) -> None:
    stream = io.BytesIO(json.dumps(job(1)).encode() + b"\n\xff\xfe\n")
    with pytest.raises(InvalidValue, match=r"^-: line 2: not UTF-8 \(.*\); nothing recorded$"):
        ingest(session, stream_lines(stream), "-", "jsonl")
    assert recorded_ids(session) == []


def test_a_missing_input_file_is_not_found_before_anything_is_read(tmp_path: Path) -> None:
    for fmt in ("jsonl", "flux-accounting-db"):
        with pytest.raises(Exception, match="no such file: "):
            input_lines(str(tmp_path / "missing"), fmt)


def test_the_charge_bound_refuses_an_identity_past_it() -> None:
    """Far from the bound the per-identity totals are never read; near it they are, and an
    identity that would pass it is refused, naming it."""
    loads = {"n": 0}

    def recorded() -> dict[tuple[int, str, str], int]:
        loads["n"] += 1
        return {(5001, "", "A"): bounds.ASSOCIATION_CHARGE_UNITS_MAX - 2 * bounds.CHARGE_UNITS}

    far = ChargeTotals(10, recorded)
    far.add_charges(charges_of([{"id": "1", "userid": 5001, "bank": "A", "charge": 5.0}]))
    assert loads["n"] == 0
    near = ChargeTotals(bounds.ASSOCIATION_CHARGE_UNITS_MAX - 2 * bounds.CHARGE_UNITS, recorded)
    near.add_charges(
        charges_of([{"id": "1", "userid": 5001, "bank": "B", "charge": 5.0}])
    )  # another identity
    assert loads["n"] == 1
    near.add_charges(
        charges_of([{"id": "2", "userid": 5001, "bank": "A", "charge": 1.0, "in_balance": True}])
    )
    with pytest.raises(InvalidValue, match=r"^job 3: the charges of 5001/A would total "):
        near.add_charges(charges_of([{"id": "3", "userid": 5001, "bank": "A", "charge": 3.0}]))
