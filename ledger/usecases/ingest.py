"""Recording completed jobs, from any source (a JSON-lines file, sacct's output, Flux, a
flux-accounting database): validate every line first, then record exactly once per (cluster,
job id).

Pass 1 validates the input in chunks of CHUNK_LINES into a private spool, so that a bad line
records nothing and a million-line input never sits in memory; pass 2 records the spool in
transactions of RECORD_LINES jobs. A pass-2 failure after some transactions committed says
how many jobs are recorded: running the same command again completes the input.

A file validated by helper processes is recorded while they validate it: each piece as it
comes back, in one transaction that commits only once every line has passed, so that a bad
line still records nothing (up to HELD_LINES jobs; the rest goes through the spool). While
another writer holds the ledger, its pieces go into the spool until the ledger is free, and
that transaction records them first."""

from __future__ import annotations

import itertools
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ledger import bounds
from ledger.clock import real_now
from ledger.errors import Interrupted, InvalidValue, LedgerError, WriteFailed, WritersBusy
from ledger.machine import MAX_HELPERS, idle_cpus
from ledger.site_usage import AssociationResolver
from ledger.slurm.sacct_jobs import SacctLines, SacctRecords, skipped_shown
from ledger.store.application import Conflict, Ledger, LogSpan, Recorded
from ledger.usecases.charge_bound import (
    Charge,
    ChargeTotals,
    input_charges_only,
    recorded_charges,
)
from ledger.usecases.session import Session
from ledger.usecases.spool import records_of, spool_file, spooled
from ledger.usecases.validation import Helpers, Terms, Validated, validate_chunk

if TYPE_CHECKING:
    from ledger.ingest import BadLine

CHUNK_LINES = 50_000  # lines validated at a time: bounds memory on million-job files
# Pass 1 of an input longer than a chunk runs in helper processes, at most one per idle CPU and
# ledger.machine.MAX_HELPERS, each given HELPER_LINES lines at a time (pieces small enough to
# share the chunks evenly among them); CHUNKS_AHEAD chunks read ahead bound the memory.
HELPER_LINES = 5_000
CHUNKS_AHEAD = 3
# Jobs recorded per transaction: 25 events of 1,000 jobs. Each commit writes every index page
# its jobs touched, and the jobs' user index is touched at random: on SQLite, 5,000 jobs a
# transaction spent 15 µs a job committing, and 125,000 jobs into a 1.2M-job ledger took 8.5 s
# against 6.9 s at 25,000 (PostgreSQL 8.1-8.2 s against 7.6 s; larger gained nothing more).
# (5,000 was kept while the library's pipelined insert of 50 events could hang PostgreSQL;
# the log's own tables insert one event a statement since.)
RECORD_LINES = 25_000
# A file validated by helpers is recorded piece by piece while they validate the rest, in one
# transaction: pass 2 no longer waits for pass 1, which it outlasts (125,000 jobs on SQLite:
# 1.4 s of validating before 2.5 s of recording). The transaction holds the writers' lock
# meanwhile, so only a file is read so (a pipe could keep the ledger locked as long as its
# writer runs), and only its first HELD_LINES jobs: past them, the rest is validated into
# the spool, the transaction commits, and the spool is recorded as pass 2 records it. (SQLite's
# write-ahead log grows to about what the transaction writes: 543 MB for 1M jobs.)
HELD_LINES = 1_000_000
# Jobs recorded by one run from which the tables' planner statistics are refreshed (PostgreSQL's
# ANALYZE, ~0.1-0.3 s): a load this large changes the row counts the next commands plan with.
BULK_LOAD_JOBS = 50_000
# The read models a load grows (projections.writers.usage_tables).
LOADED_READ_MODELS = ("jobs", "period_totals")
SACCT = "sacct"  # the format of `sacct -a -X -P` output (ledger.slurm.sacct_jobs)

__all__ = ["Conflict", "IngestNotes", "IngestResult", "ingest", "record_input"]

Mark = Callable[[dict[str, Any]], dict[str, Any]]


def _ignore(*_: Any) -> None:
    """Where an ingest's notes go when its caller shows none."""


@dataclass
class IngestNotes:
    """What a front end may show while an ingest runs (the result holds the same facts at its
    end): a bad line set aside (with skip_invalid), once validation is done; a conflicting job,
    as its transaction commits; and progress, (jobs recorded, lines in the input: for a file
    recorded while it is validated, the lines read so far)."""

    skipped: Callable[[BadLine], None] = _ignore
    conflict: Callable[[Conflict], None] = _ignore
    progress: Callable[[int, int], None] = _ignore


@dataclass
class IngestResult:
    recorded: int = 0
    duplicate: int = 0
    unmatched: int = 0  # recorded, but no association holds them yet
    conflicts: list[Conflict] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)  # set aside (skip_invalid)
    lines: int = 0
    # Lines that are no completed job, by kind (sacct: "steps", and each state of a job not
    # ended yet, "RUNNING"...): read, not recorded, and not an error.
    skipped: dict[str, int] = field(default_factory=dict)
    # Where the recorded jobs went in the log, a span per transaction (spans one after the
    # other merged): a later transaction tells a repeat of a job logged there as one of an
    # earlier line of the input.
    spans: list[LogSpan] = field(default_factory=list)

    @property
    def invalid(self) -> int:
        return len(self.bad)

    @property
    def conflicting(self) -> int:
        return len(self.conflicts)


def ingest(
    s: Session,
    lines: Iterator[Any],
    name: str,
    fmt: str,
    skip_invalid: bool = False,
    actor: str | None = None,
    reason: str | None = None,
    notes: IngestNotes | None = None,
) -> IngestResult:
    """Record the jobs of `lines` (JSON texts or decoded objects; for "sacct", the lines of
    sacct's output) read from `name` in format `fmt`: `fairledger ingest`. Without
    skip_invalid, one bad line records nothing."""
    read_lines = None
    if fmt == SACCT:
        # sacct prints local times without a zone: the site's, like every zone-less time. Its
        # header is read here; each later line is read where it is validated.
        sacct = SacctRecords(lines, s.ledger.state().timezone, name)
        try:
            read_lines, lines = sacct.split()
        except UnicodeDecodeError as err:
            raise _not_utf8(name, err) from None
    return record_input(
        s,
        lines,
        name,
        origin={"input": name, "format": fmt},
        skip_invalid=skip_invalid,
        actor=actor,
        reason=reason or "",
        rerun="ingest",
        notes=notes,
        read_lines=read_lines,
        from_file=name != "-" and os.path.isfile(name),
    )


def record_input(
    s: Session,
    lines: Iterator[Any],
    name: str,
    origin: dict[str, Any],
    skip_invalid: bool,
    actor: str | None,
    reason: str,
    rerun: str,
    mark: Mark | None = None,
    against_recorded: bool = True,
    notes: IngestNotes | None = None,
    read_lines: SacctLines | None = None,
    from_file: bool = False,
) -> IngestResult:
    """Validate `lines` of `name`, then record them with `origin` as the events' source.
    `rerun`: the command that completes an interrupted run. `mark` may amend each record
    (import-flux-accounting marks the jobs its opening balance already holds).
    `against_recorded`: the charge bound counts what the ledger holds (an import into an empty
    ledger counts its input alone). `from_file`: `lines` come from a file (not a pipe), so
    they may be recorded while they are validated (HELD_LINES)."""
    notes = notes or IngestNotes()
    ledger = s.ledger
    ledger.actor = actor or s.actor
    state = ledger.state()
    charged = recorded_charges(s.read()) if against_recorded else input_charges_only()
    with spool_file() as spool:
        result = IngestResult()
        # `mark` is this process's own (a closure over the import's balances): it amends the
        # records where they are validated, so an input it marks is validated here.
        helpers = _helpers if mark is None else _no_helpers
        terms = Terms(bounds.latest_time(real_now()), state, read_lines)
        pass1 = _Pass1(lines, skip_invalid, name, terms, charged, mark, helpers)
        resolver = AssociationResolver(state)
        parts = pass1.parts()
        if from_file:
            # Spooled while this process validates alone; from the first part helpers give
            # (by then pass 1 has read far enough to know whether the input is long enough for
            # them, and has counted the idle CPUs), recorded while they validate the rest,
            # what was spooled first.
            for part in parts:
                if pass1.reading.helpers > 0:
                    for tally in _record_while_validated(
                        ledger,
                        pass1,
                        itertools.chain([part], parts),
                        spool,
                        notes,
                        reason,
                        origin,
                        resolver,
                    ):
                        tally.add_to(result, notes)
                    break
                pass1.to_spool([part], spool)
        pass1.to_spool(parts, spool)
        result.bad, result.lines = pass1.bad, pass1.read
        result.skipped = skipped_shown(pass1.skipped)
        for line in result.bad:
            notes.skipped(line)
        _record_spool(s, spool, result, reason, origin, resolver, rerun, notes, pass1.held)
    if result.recorded >= BULK_LOAD_JOBS:
        ledger.refresh_statistics(LOADED_READ_MODELS)
    s.read()
    return result


def _record_while_validated(
    ledger: Ledger,
    pass1: _Pass1,
    parts: Iterator[list[bytes]],
    spool: IO[bytes],
    notes: IngestNotes,
    reason: str,
    origin: dict[str, Any],
    resolver: AssociationResolver,
) -> list[_Tally]:
    """A file that helpers validate, recorded while they do, in one transaction under the
    writers' lock. Its first part is validated before the lock is taken: the helpers' start
    and their first answer are not waited for under it. While another writer holds the lock
    (another ingester recording its own file, say), each part goes into the spool as it is
    validated and the lock is tried again after it, rather than waited for idle: ingesters
    started together then validate beside the one recording, and the next to have the lock
    records its spooled parts first. Once HELD_LINES lines are read it stops trying: what
    `parts` still holds is spooled by the caller, and the spool recorded as a pipe's is."""
    for part in parts:
        try:
            return ledger.record_job_chunks(
                itertools.chain(
                    pass1.taken_back(spool), pass1.held_parts([part], parts, spool, notes)
                ),
                lambda outcome: _Tally.of(outcome, resolver),
                reason=reason,
                source=origin,
                wait=False,
            )
        except WritersBusy:
            for data in part:
                spool.write(data)
            if pass1.read >= HELD_LINES:
                break
    return []


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Pass1:
    """Pass 1 over `lines`: every line validated, a chunk at a time, so that a bad one records
    nothing (with skip_invalid, set aside), each chunk's records (charged with the weights in
    force) kept as primitive records, so that recording needs no second validation."""

    def __init__(
        self,
        lines: Iterator[Any],
        skip_invalid: bool,
        shown: str,
        terms: Terms,
        charged: ChargeTotals,
        mark: Mark | None,
        helpers: Callable[[], int],
    ) -> None:
        self.reading = _Reading()
        self.validated = _validated(lines, terms, helpers, mark, self.reading)
        self.skip_invalid = skip_invalid
        self.shown = shown
        self.charged = charged
        self.bad: list[BadLine] = []
        self.read = 0  # lines validated
        self.skipped: Counter[str] = Counter()  # lines that are no ended job, by kind
        self.held = 0  # records taken by taken_back and held_parts

    def parts(self) -> Iterator[list[bytes]]:
        """Each part's records as the spool holds them, in order, as it is validated. A
        chunk's bad lines are refused, and its charges counted, once the whole chunk is
        validated, as one process validating it whole would do: its parts are not recorded
        for good before then (the spool, or the transaction, is given up)."""
        from ledger.ingest import check_no_bad_lines

        bad: list[BadLine] = []
        charges: list[Charge] = []
        try:
            for size, validated, ends_chunk in self.validated:
                self.read += size
                bad.extend(validated.bad)
                charges.extend(validated.charges)
                self.skipped += validated.skipped
                yield validated.spooled
                if ends_chunk:
                    if bad and not self.skip_invalid:
                        check_no_bad_lines(bad, self.shown)
                    self.bad.extend(bad)
                    self.charged.add_charges(charges)
                    bad, charges = [], []
        except UnicodeDecodeError as err:
            raise _not_utf8(self.shown, err) from None

    @staticmethod
    def to_spool(parts: Iterable[list[bytes]], spool: IO[bytes]) -> None:
        """Every part (of `parts()`) not taken yet into `spool`."""
        for part in parts:
            for data in part:
                spool.write(data)

    def taken_back(self, spool: IO[bytes]) -> Iterator[tuple[list[dict[str, Any]], list[str]]]:
        """(records, digests) of the parts spooled while another writer held the ledger, a
        piece at a time; the spool is left empty for what follows HELD_LINES."""
        for piece in _chunks(spooled(spool), HELPER_LINES):
            yield [record for record, _ in piece], [digest for _, digest in piece]
            self.held += len(piece)
        spool.seek(0)
        spool.truncate()

    def held_parts(
        self,
        first: list[list[bytes]],
        parts: Iterator[list[bytes]],
        spool: IO[bytes],
        notes: IngestNotes,
    ) -> Iterator[tuple[list[dict[str, Any]], list[str]]]:
        """(records, digests) of `first`, then of each of `parts` (of `parts()`), to record
        while the rest is validated, up to HELD_LINES records; the parts after them go into
        `spool`, and this ends only once every line has passed."""
        for part in itertools.chain(first, parts):
            if self.held >= HELD_LINES:
                for data in part:
                    spool.write(data)
                continue
            records = [item for data in part for item in records_of(data)]
            yield [record for record, _ in records], [digest for _, digest in records]
            self.held += len(records)
            notes.progress(self.held, self.reading.lines)


def _not_utf8(shown: str, err: UnicodeDecodeError) -> InvalidValue:
    return InvalidValue(f"{shown}: not UTF-8 ({err.reason}); nothing recorded")


@dataclass
class _Reading:
    lines: int = 0  # lines read from the input so far (validated or being validated)
    helpers: int = 0  # the helper processes validating them


def _validated(
    lines: Iterator[Any],
    terms: Terms,
    helpers: Callable[[], int],
    mark: Mark | None,
    reading: _Reading,
) -> Iterator[tuple[int, Validated, bool]]:
    """What validating the lines gave, in order, a part at a time: (its lines, what it gave,
    whether it ends a chunk of CHUNK_LINES lines). A chunk is validated in this process, whole,
    until `helpers()` gives helper processes (asked before each chunk that has another after
    it, so that a short input never waits for the CPUs to be counted, and CPUs that one look
    found busy are looked at again; `mark`, which amends each record, has none); then the rest
    by them, in parts of HELPER_LINES, while this process reads ahead (up to CHUNKS_AHEAD
    chunks) and records or spools. Either way a chunk's parts give what validating it whole
    gives, and an error reading the input (not UTF-8, say) is raised after every chunk read
    before it, as reading one chunk at a time raises it."""
    chunks = _errors_last(_chunks(lines, CHUNK_LINES))
    line = 1
    current = next(chunks, None)
    while current is not None:
        if isinstance(current, Exception):
            raise current
        ahead = next(chunks, None)
        if isinstance(ahead, list):
            # Asked again before each chunk: one look may find a CPU busy for a moment (a
            # server's checkpoint), and the whole rest of a long file would go without them.
            reading.helpers = helpers()
            if reading.helpers > 0:
                assert mark is None
                yield from _by_helpers(current, ahead, chunks, line, terms, reading)
                return
        reading.lines += len(current)
        yield len(current), validate_chunk(current, line, terms, mark), True
        line += len(current)
        current = ahead


def _by_helpers(
    first: list[Any],
    ahead: list[Any],
    chunks: Iterator[list[Any] | Exception],
    line: int,
    terms: Terms,
    reading: _Reading,
) -> Iterator[tuple[int, Validated, bool]]:
    """_validated's parts from the chunk `first` (its first line numbered `line`), `ahead` and
    `chunks` on, by reading.helpers helper processes."""
    pool = Helpers(reading.helpers, terms)
    try:
        pending: deque[list[int]] = deque()  # the sizes of the pieces of each chunk given

        def give(chunk: list[Any]) -> None:
            nonlocal line
            for at in range(0, len(chunk), HELPER_LINES):
                pool.give(chunk[at : at + HELPER_LINES], line + at)
            pending.append(
                [len(chunk[at : at + HELPER_LINES]) for at in range(0, len(chunk), HELPER_LINES)]
            )
            line += len(chunk)
            reading.lines += len(chunk)

        give(first)
        give(ahead)
        failed: Exception | None = None
        while pending:
            while failed is None and len(pending) < CHUNKS_AHEAD:
                more = next(chunks, None)
                if more is None:
                    break
                if isinstance(more, Exception):
                    failed = more
                else:
                    give(more)
            pieces = pending.popleft()
            for n, size in enumerate(pieces, start=1):
                yield size, pool.take(), n == len(pieces)
        if failed is not None:
            raise failed
    finally:
        pool.close()


def _errors_last(chunks: Iterator[list[Any]]) -> Iterator[list[Any] | Exception]:
    """The chunks, then, if reading them failed, the error as the last item."""
    try:
        yield from chunks
    except Exception as err:  # noqa: BLE001 - raised again by the one reading the items
        yield err


def _no_helpers() -> int:
    return 0


def _helpers() -> int:
    """How many helper processes pass 1 may use: the idle CPUs once the input proves longer
    than a chunk (two chunks read; ledger.machine.idle_cpus), at most
    MAX_HELPERS, and none on one CPU (a helper would only take the place of this process).
    Beside a PostgreSQL server on this machine too: the helpers run below the command's
    priority, and an ingester that finds another recording validates beside it rather than
    wait (_record_while_validated), so that ingesters started together overlap their work."""
    cpus = min(idle_cpus(), MAX_HELPERS)
    return cpus if cpus > 1 else 0


def _record_spool(
    s: Session,
    spool: IO[bytes],
    result: IngestResult,
    reason: str,
    origin: dict[str, Any],
    resolver: AssociationResolver,
    rerun: str,
    notes: IngestNotes,
    done: int,
) -> None:
    """Pass 2: record in chunks, each one transaction; re-running after a crash is safe
    because recording is exactly-once. `done`: the records recorded before the spool's."""
    notes.progress(done, result.lines)
    expect_fresh = False  # the first chunk is looked up: a re-run repeats its start
    for chunk in _chunks(spooled(spool), RECORD_LINES):
        try:
            outcome = s.ledger.record_jobs(
                [record for record, _ in chunk],
                reason=reason,
                source=origin,
                digests=[digest for _, digest in chunk],
                input_spans=result.spans,
                expect_fresh=expect_fresh,
            )
        except LedgerError as err:
            if not result.recorded:
                raise
            problem = err.problem if isinstance(err, WriteFailed) else str(err)
            raise Interrupted(
                f"{problem} after recording {result.recorded} jobs; re-run the same "
                f"{rerun} to complete it: recording is exactly-once"
            ) from err
        expect_fresh = outcome.fresh
        _Tally.of(outcome, resolver).add_to(result, notes)
        done += len(chunk)
        notes.progress(done, result.lines)


@dataclass
class _Tally:
    """What a transaction recorded, as the result counts it."""

    recorded: int
    unmatched: int  # recorded, but no association holds them yet
    duplicate: int
    conflicts: list[Conflict]
    span: LogSpan | None

    @classmethod
    def of(cls, outcome: Recorded, resolver: AssociationResolver) -> _Tally:
        return cls(
            len(outcome.recorded),
            sum(
                1
                for r in outcome.recorded
                if resolver.resolve(r.get("userid"), r.get("username"), r.get("bank")) is None
            ),
            outcome.duplicate,
            outcome.conflicts,
            outcome.span,
        )

    def add_to(self, result: IngestResult, notes: IngestNotes) -> None:
        """Once committed: into the result, each conflict noted."""
        result.recorded += self.recorded
        result.unmatched += self.unmatched
        result.duplicate += self.duplicate
        if self.span is not None:
            spans = result.spans
            if spans and spans[-1][1] + 1 == self.span[0]:
                spans[-1] = (spans[-1][0], self.span[1])
            else:
                spans.append(self.span)
        for conflict in self.conflicts:
            result.conflicts.append(conflict)
            notes.conflict(conflict)
