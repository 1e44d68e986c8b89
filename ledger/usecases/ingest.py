"""Recording completed jobs, from any source (a JSON-lines file, sacct's output, Flux, a
flux-accounting database): validate every line first, then record exactly once per (cluster,
job id).

Pass 1 validates the input in chunks of CHUNK_LINES into a private spool, so that a bad line
records nothing and a million-line input never sits in memory; pass 2 records the spool in
transactions of RECORD_LINES jobs. A pass-2 failure after some transactions committed says
how many jobs are recorded: running the same command again completes the input."""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ledger import bounds
from ledger.clock import real_now
from ledger.errors import Interrupted, InvalidValue, LedgerError, WriteFailed
from ledger.machine import MAX_HELPERS, idle_cpus
from ledger.site_usage import AssociationResolver
from ledger.slurm.sacct_jobs import SacctLines, SacctRecords, skipped_shown
from ledger.store.application import Conflict
from ledger.usecases.charge_bound import ChargeTotals, input_charges_only, recorded_charges
from ledger.usecases.session import Session
from ledger.usecases.spool import spool_file, spooled
from ledger.usecases.validation import Helpers, Terms, Validated, validate_chunk

if TYPE_CHECKING:
    from ledger.ingest import BadLine
    from ledger.state import SiteState
    from ledger.store.connections import StoreConfig

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
    as its transaction commits; and progress, (jobs through pass 2, lines in the input)."""

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
) -> IngestResult:
    """Validate `lines` of `name`, then record them with `origin` as the events' source.
    `rerun`: the command that completes an interrupted run. `mark` may amend each record
    (import-flux-accounting marks the jobs its opening balance already holds).
    `against_recorded`: the charge bound counts what the ledger holds (an import into an empty
    ledger counts its input alone)."""
    notes = notes or IngestNotes()
    ledger = s.ledger
    ledger.actor = actor or s.actor
    state = ledger.state()
    charged = recorded_charges(s.read()) if against_recorded else input_charges_only()
    with spool_file() as spool:
        result = IngestResult()
        # `mark` is this process's own (a closure over the import's balances): it amends the
        # records where they are validated, so an input it marks is validated here.
        helpers = _helpers(ledger.store) if mark is None else 0
        terms = Terms(bounds.latest_time(real_now()), state, read_lines)
        result.bad, result.lines, skipped = _validate_to_spool(
            lines, skip_invalid, name, spool, terms, charged, mark, helpers
        )
        result.skipped = skipped_shown(skipped)
        for line in result.bad:
            notes.skipped(line)
        _record_spool(s, spool, result, reason, origin, state, rerun, notes)
    if result.recorded >= BULK_LOAD_JOBS:
        ledger.refresh_statistics(LOADED_READ_MODELS)
    s.read()
    return result


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _validate_to_spool(
    lines: Iterator[Any],
    skip_invalid: bool,
    shown: str,
    spool: IO[bytes],
    terms: Terms,
    charged: ChargeTotals,
    mark: Mark | None,
    helpers: int,
) -> tuple[list[BadLine], int, Counter[str]]:
    """Pass 1: validate every line, so that a bad one records nothing, and spool the valid
    ones as primitive records (charged with the weights in force), so that recording needs no
    second validation. Returns the bad lines, the number of lines read and the lines that
    are no ended job, by kind."""
    from ledger.ingest import check_no_bad_lines

    bad: list[BadLine] = []
    read = 0
    skipped: Counter[str] = Counter()
    try:
        for size, validated in _validated(lines, terms, helpers, mark):
            read += size
            if validated.bad and not skip_invalid:
                check_no_bad_lines(validated.bad, shown)
            bad.extend(validated.bad)
            skipped += validated.skipped
            for data in validated.spooled:
                spool.write(data)
            charged.add_charges(validated.charges)
    except UnicodeDecodeError as err:
        raise _not_utf8(shown, err) from None
    return bad, read, skipped


def _not_utf8(shown: str, err: UnicodeDecodeError) -> InvalidValue:
    return InvalidValue(f"{shown}: not UTF-8 ({err.reason}); nothing recorded")


def _validated(
    lines: Iterator[Any], terms: Terms, helpers: int, mark: Mark | None
) -> Iterator[tuple[int, Validated]]:
    """Each chunk of CHUNK_LINES lines, in order, with its size and what validating it gave.
    An input of one chunk is validated in this process; a longer one by `helpers` helper
    processes (none if fewer than two; `mark`, which amends each record, needs none), in
    pieces of HELPER_LINES, while this one reads ahead (up to CHUNKS_AHEAD chunks) and
    spools. Either way a chunk's answer is the one validating it whole gives, and an error
    reading the input (not UTF-8, say) is raised after every chunk read before it, as reading
    one chunk at a time raises it."""
    chunks = _errors_last(_chunks(lines, CHUNK_LINES))
    first = next(chunks, None)
    ahead = next(chunks, None) if helpers > 1 and isinstance(first, list) else None
    if not isinstance(ahead, list):  # one chunk, or one CPU: this process alone
        line = 1
        for chunk in itertools.chain(
            [] if first is None else [first], [] if ahead is None else [ahead], chunks
        ):
            if isinstance(chunk, Exception):
                raise chunk
            yield len(chunk), validate_chunk(chunk, line, terms, mark)
            line += len(chunk)
        return
    assert isinstance(first, list) and mark is None
    pool = Helpers(helpers, terms)
    try:
        pending: deque[tuple[int, int]] = deque()  # (lines, pieces) of each chunk given
        line = 1

        def give(chunk: list[Any]) -> None:
            nonlocal line
            for at in range(0, len(chunk), HELPER_LINES):
                pool.give(chunk[at : at + HELPER_LINES], line + at)
            pending.append((len(chunk), len(range(0, len(chunk), HELPER_LINES))))
            line += len(chunk)

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
            size, pieces = pending.popleft()
            yield size, Validated.joined([pool.take() for _ in range(pieces)])
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


def _helpers(store: StoreConfig) -> int:
    """How many helper processes pass 1 may use: the idle CPUs as it starts, at most
    MAX_HELPERS. None for a PostgreSQL server on this machine, which needs the CPUs while
    other ingesters record: with helpers there, one ingester of 1M jobs in `make bench` gains
    12% (20,006 -> 22,455 jobs/s, at stop 34), but four at once gain nothing, and fall from
    1.16x to 0.94x one ingester's rate (docs/architecture.md, "Ingest speed")."""
    if store.server_here:
        return 0
    return min(idle_cpus(), MAX_HELPERS)


def _record_spool(
    s: Session,
    spool: IO[bytes],
    result: IngestResult,
    reason: str,
    origin: dict[str, Any],
    state: SiteState,
    rerun: str,
    notes: IngestNotes,
) -> None:
    """Pass 2: record in chunks, each one transaction; re-running after a crash is safe
    because recording is exactly-once."""
    resolver = AssociationResolver(state)
    done = 0
    notes.progress(done, result.lines)
    for chunk in _chunks(spooled(spool), RECORD_LINES):
        try:
            outcome = s.ledger.record_jobs(
                [record for record, _ in chunk],
                reason=reason,
                source=origin,
                digests=[digest for _, digest in chunk],
            )
        except LedgerError as err:
            if not result.recorded:
                raise
            problem = err.problem if isinstance(err, WriteFailed) else str(err)
            raise Interrupted(
                f"{problem} after recording {result.recorded} jobs; re-run the same "
                f"{rerun} to complete it: recording is exactly-once"
            ) from err
        result.duplicate += outcome.duplicate
        for conflict in outcome.conflicts:
            result.conflicts.append(conflict)
            notes.conflict(conflict)
        result.recorded += len(outcome.recorded)
        result.unmatched += sum(
            1
            for r in outcome.recorded
            if resolver.resolve(r.get("userid"), r.get("username"), r.get("bank")) is None
        )
        done += len(chunk)
        notes.progress(done, result.lines)
