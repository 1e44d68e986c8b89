"""`fairledger doctor`: the events of the log its read models cannot apply, and their repair.

An earlier release (0.1.0) appended an event before projecting it; when the projection failed
the event stayed, and every later command failed on it too. The doctor folds the whole log
into scratch read models (a temporary SQLite file), one event at a time with a write after
each, so a failure is pinned to its position; a job batch is tried record by record to name
the failing jobs.
Each finding is then folded as set aside, so the fold goes on and names the next one: an
event that needs one set aside (a user added to a bank whose adding is set aside) is named
too. Checks of values against the input's bounds can be added to EVENT_CHECKS and
RECORD_CHECKS (the fold itself does not need them).

`neutralize` records an EventNeutralized per named position, in one transaction, so the
append's own fold (which must get through every pending event) already skips them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ledger import events as ev
from ledger.errors import InvalidValue
from ledger.joblog import JobLog, job_key
from ledger.neutralizations import Neutralizations, in_log
from ledger.site import Site, Stamp
from ledger.site_usage import usage_params
from ledger.store.application import UNPROJECTABLE, Ledger, _first_line
from ledger.store.connections import Connection, scratch_sqlite
from projections.queries.history import entry_of
from projections.writers import runner
from projections.writers.usage_tables import JOB_COLUMNS, insert_jobs, job_row

PAGE_SIZE = 500
INT64 = (-(2**63), 2**63 - 1)  # what an INTEGER / BIGINT column of either store holds
META_FIELDS = {"originator_id", "originator_version", "timestamp", "actor", "reason", "source"}
UNFIT = " does not fit the read models"
# What folding a Site event raises: a value no column holds, or a reference to something gone.
FOLD_FAILURES: tuple[type[BaseException], ...] = (*UNPROJECTABLE, KeyError)

# Extra checks, e.g. the input's bounds: an event (or a job record) -> what is wrong, or None.
EVENT_CHECKS: list[Callable[[Any], str | None]] = []
RECORD_CHECKS: list[Callable[[dict[str, Any]], str | None]] = []


@dataclass(frozen=True)
class Finding:
    """An event the read models cannot apply: what it is, and what fails."""

    position: int
    at: float
    event: str  # its class name
    subject: str  # the bank, user/bank, ... it is about ("" for a job batch)
    actor: str
    problem: str
    jobs: tuple[tuple[str, str], ...] = ()  # a job batch's failing records (cluster, id)
    site_version: int | None = None  # a Site event's version

    @property
    def summary(self) -> str:
        return f"{self.event} {self.subject}".rstrip()


def diagnose(ledger: Ledger) -> list[Finding]:
    """Every event of the log (not already neutralized) its read models cannot apply, in log
    order. Reads the log only."""
    recorded = in_log(ledger)
    found: dict[int, Finding] = {}
    while (failed := _fold_once(ledger, recorded, found)) is not None:
        # It changed the scratch state before its write failed: fold again without it.
        found[failed.position] = failed
    return [found[p] for p in sorted(found)]


def neutralize(ledger: Ledger, positions: Sequence[int], reason: str) -> list[Finding]:
    """Record a neutralization of each of `positions` (each one the doctor names, and all of
    them: the append folds every pending event), with `reason`; the findings neutralized."""
    wanted = sorted(set(positions))
    before = runner.tracked_position(ledger.conn)

    def command(site: Site, stamp: Stamp) -> list[Finding]:
        findings = {f.position: f for f in diagnose(ledger)}
        if not findings:
            raise InvalidValue("no poisoned events: nothing to neutralize")
        for position in wanted:
            if position not in findings:
                raise InvalidValue(
                    f"position {position} is not an event the doctor names: "
                    f"poisoned are {_positions(findings)}"
                )
        left = [p for p in findings if p not in wanted]
        if left:
            raise InvalidValue(
                f"position {_positions(left)} must be neutralized too, in the same command: "
                "the read models cannot get past it"
            )
        for position in wanted:
            f = findings[position]
            jobs = [list(key) for key in f.jobs]
            site.neutralize(stamp, position, f.site_version, jobs, f.summary)
        return [findings[p] for p in wanted]

    done = ledger.execute(command, reason=reason)
    if wanted[0] <= before:  # an event the read models had applied (an extra check's finding)
        runner.rebuild(ledger, ledger.conn)
    return done


def _positions(positions: Any) -> str:
    return ", ".join(str(p) for p in sorted(positions))


def _log(ledger: Ledger) -> Iterator[tuple[int, Any]]:
    start = 0
    while page := ledger.recorder.select_notifications(
        start=start, limit=PAGE_SIZE, inclusive_of_start=False
    ):
        for notification in page:
            yield notification.id, ledger.mapper.to_domain_event(notification)
        start = page[-1].id


class _Gone:
    """Banks and associations whose adding is set aside: what a later event may still need."""

    def __init__(self) -> None:
        self.banks: set[str] = set()
        self.associations: set[tuple[str, str]] = set()

    def note(self, event: Any) -> None:
        if isinstance(event, ev.BankAdded):
            self.banks.add(event.bank)
        elif isinstance(event, ev.AssociationAdded):
            self.associations.add((event.username, event.bank))

    def needed_by(self, state: Any, username: Any, bank: Any, creates: bool = False) -> str | None:
        """Why an event (or job record) about `username` in `bank` needs something set aside;
        `creates`: it adds that association itself (so only the bank must exist)."""
        if bank in self.banks and bank not in state.banks:
            return f"bank {bank} does not exist: the event that added it is set aside"
        pair = (username, bank)
        if not creates and pair in self.associations and state.association(*pair) is None:
            return f"user {username} in bank {bank} does not exist: its adding is set aside"
        return None


def _fold_once(
    ledger: Ledger, recorded: Neutralizations, found: dict[int, Finding]
) -> Finding | None:
    """Fold the log into a scratch read model with `recorded` and `found` set aside, adding to
    `found` what else must be; a Site event whose fold failed (start again without it)."""
    skip = Neutralizations({*recorded.whole}, {p: set(k) for p, k in recorded.jobs.items()})
    for f in found.values():
        skip.add(f.position, f.jobs)
    with scratch_sqlite("doctor") as scratch:
        runner.create_tables(scratch)
        folder = runner.scratch_folder(scratch, skip)
        gone = _Gone()
        for position, event in _log(ledger):
            folder.finish()  # a failure is this event's, not an earlier one's pending write
            if isinstance(event, JobLog.JobsRecorded):
                _fold_jobs(folder, scratch, skip, gone, found, position, event)
                continue
            if skip.skips(position):
                gone.note(event)
                folder.apply(event, position)
                continue
            problem = _needs(event, folder.state, gone)
            if problem is not None:
                found[position] = _finding(position, event, problem)
                skip.add(position)
                gone.note(event)
                folder.apply(event, position)
                continue
            try:
                folder.apply(event, position)
                folder.finish()
            except FOLD_FAILURES as err:
                return _finding(position, event, _why(event, err))
        folder.finish()
        return None


def _fold_jobs(
    folder: Any,
    memory: Connection,
    skip: Neutralizations,
    gone: _Gone,
    found: dict[int, Finding],
    position: int,
    event: Any,
) -> None:
    """Apply a job batch without its failing records, naming them."""
    state = folder.state
    bad: dict[tuple[str, str], str] = {}
    kept = skip.kept(position, event.records)
    for record in kept:
        problem = gone.needed_by(state, record.get("username"), record.get("bank"))
        problem = problem or _first(check(record) for check in RECORD_CHECKS)
        if problem is not None:
            bad[job_key(record)] = problem
    if not _fits(memory, state, [r for r in kept if job_key(r) not in bad], position):
        for record in kept:
            if job_key(record) not in bad and not _fits(memory, state, [record], position):
                bad[job_key(record)] = _record_unfit(record, state, position)
    if bad:
        skip.add(position, bad)
        problems = "; ".join(f"job {i} (cluster {c}): {p}" for (c, i), p in bad.items())
        found[position] = _finding(position, event, problems, tuple(bad))
    folder.apply(event, position)


def _fits(memory: Connection, state: Any, records: list[dict[str, Any]], position: int) -> bool:
    """Whether the read models take these records (tried, then undone)."""
    memory.execute("SAVEPOINT trial")
    try:
        insert_jobs(memory, state, records, position)
        return True
    except UNPROJECTABLE:
        return False
    finally:
        memory.execute("ROLLBACK TO trial")
        memory.execute("RELEASE trial")


def _needs(event: Any, state: Any, gone: _Gone) -> str | None:
    """What a Site event needs that is set aside, or an extra check's complaint."""
    if isinstance(event, ev.BankAdded):
        problem = gone.needed_by(state, None, event.parent_bank, creates=True)
    elif hasattr(event, "bank"):
        username = getattr(event, "username", None)
        creates = isinstance(event, ev.AssociationAdded)
        problem = gone.needed_by(state, username, event.bank, creates=creates)
    else:
        problem = None
    return problem or _first(check(event) for check in EVENT_CHECKS)


def _first(problems: Iterator[str | None]) -> str | None:
    return next((p for p in problems if p is not None), None)


def _finding(
    position: int, event: Any, problem: str, jobs: tuple[tuple[str, str], ...] = ()
) -> Finding:
    try:
        subject = entry_of(event, position).name or ""
    except TypeError:  # not a Site event (a job batch, an import)
        subject = ""
    is_site = isinstance(event, ev.SiteEvent | ev.LedgerCreated)
    return Finding(
        position=position,
        at=float(event.timestamp.timestamp()),
        event=type(event).__name__,
        subject=subject,
        actor=str(getattr(event, "actor", "") or ""),
        problem=problem,
        jobs=jobs,
        site_version=event.originator_version if is_site else None,
    )


def _why(event: Any, err: BaseException) -> str:
    if isinstance(err, KeyError):
        return f"{err.args[0]} does not exist (an event it needs is set aside)"
    fields = {k: v for k, v in vars(event).items() if k not in META_FIELDS}
    culprit = _unfit_value(fields)
    return culprit + UNFIT if culprit else f"does not fit the read models ({_first_line(err)})"


def _record_unfit(record: dict[str, Any], state: Any, position: int) -> str:
    row = dict(zip(JOB_COLUMNS, job_row(record, usage_params(state), position), strict=True))
    culprit = _unfit_value(row) or "it"
    return f"{culprit}{UNFIT} (charge {record['charge']:g}, t_inactive {record['t_inactive']:g})"


def _unfit_value(values: dict[str, Any]) -> str | None:
    """`name value` of the first value no column can hold (nested: by its innermost name)."""
    for name, value in values.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            return f"{name} {value}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{name} {value}"
        if isinstance(value, dict):
            inner = _unfit_value(value)
            if inner:
                return inner
        if isinstance(value, list):
            for item in value:
                inner = _unfit_value({name: item})
                if inner:
                    return inner
    return None
