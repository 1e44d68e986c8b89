"""The priority audit of a Slurm site: what we compute for a recorded job beside what Slurm
recorded (sacct's Priority), and which factor explains a difference.

A job is priced twice, each time with the site as it stood then: at its eligible time (Eligible,
else Submit: age 0 unless ACCRUE_ALWAYS) and at its start. "As it stood" is the site state at
the last event at or before that moment (weights, partitions, QOS, bank priorities) and the
association's fair-share in force at that log position (projections.queries.as_of), so weights
edited after the job change nothing. No read model is materialised per job: the site state is
loaded once per site version and the fair-share read from the snapshots' checkpoints.

Slurm's recorded Priority is the one slurmctld computed at its last recalculation before the job
started (every PriorityCalcPeriod, 5 minutes by default, not recorded in the ledger): ours at
start may be ahead of it by the age of up to that period. A difference is explained by:
* AGE, when ours somewhere in that window equals the recorded value (only the age moved);
* else the factor that alone could account for it with a value in its range, the heaviest
  weight first (the smallest change of its value); Slurm's value of it is given;
* else nothing the ledger holds: the job's Nice and site factor, which sacct does not report,
  a priority set by hand, or several factors differing at once.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import asdict, astuple, dataclass, field
from typing import Any, NamedTuple

from ledger.clock import iso
from ledger.errors import InvalidValue, LedgerError, NotFound
from ledger.site_usage import AssociationResolver, AssocKey
from ledger.slurm.conf import DEFAULT_CALC_PERIOD
from ledger.slurm_priority_inputs import SlurmPriorityInputs, slurm_priority_inputs
from ledger.spill import Spill
from ledger.state import SiteState
from ledger.store.application import Ledger
from ledger.store.connections import Connection
from ledger.usecases.session import Session
from ledger.usecases.slurm_priority import PricedJob, SitePricing, SlurmJob
from projections.queries import site as queries
from projections.queries.as_of import Moment, Snapshots, fairshare_value, site_state_at
from projections.queries.explain import SlurmRecord, log_moments, slurm_record, slurm_records

NOT_SLURM = (
    "the priority audit compares Slurm's multifactor priority: it needs a Slurm site "
    "(fairshare_algorithm fair-tree or classic); this one ranks by weighted-walk"
)
UNEXPLAINED = (
    "unexplained: the ledger lacks the job's Nice and site factor (sacct reports neither), "
    "or the priority was set by hand, or several factors differ"
)
# What a difference can be explained by, besides AGE: the factors the ledger's site sets.
SITE_FACTORS = ("FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "ASSOC")


class NotSlurmThen(InvalidValue):
    """The job's moment came before the site ranked as Slurm does (it changed its
    fairshare_algorithm since): Slurm's formula did not price it then."""


@dataclass(frozen=True)
class Difference:
    """Recorded − ours at start, and what explains it: `factor` (AGE, FAIRSHARE, ...) or None
    when nothing the ledger holds does; `slurm_value` the factor's value that would give the
    recorded priority; `text` says it in a line."""

    value: int
    factor: str | None
    slurm_value: float | None
    text: str


@dataclass(frozen=True)
class JobAudit:
    job: SlurmRecord
    association: AssocKey
    eligible: Moment  # the log position the eligible-time pricing read the site at
    start: Moment
    at_eligible: PricedJob
    at_start: PricedJob
    difference: Difference | None  # None: no recorded Priority to compare


@dataclass(frozen=True)
class Unpriced:
    job: SlurmRecord
    reason: str


@dataclass(frozen=True)
class AuditReport:
    since: float | None
    until: float | None
    tolerance: int
    differing: list[JobAudit]  # |difference| > tolerance, the largest first
    audited: int  # jobs with a recorded Priority that were priced
    without_priority: int  # jobs in the window whose record has no Priority: not audited
    unpriced: list[Unpriced] = field(default_factory=list)


class SiteThenState(NamedTuple):
    """One site version: its state, the formula's inputs and its association resolver."""

    state: SiteState
    inputs: SlurmPriorityInputs
    resolver: AssociationResolver


class SiteThen:
    """The site at any past moment, read once per site version; the fair-share in force read
    from the snapshots. One per command: its caches hold the log's past, which never changes."""

    def __init__(self, ledger: Ledger, conn: Connection) -> None:
        self.ledger = ledger
        self.conn = conn
        self.snapshots = Snapshots(ledger, conn)
        self._log = log_moments(conn)
        self._times = [at for at, _, _ in self._log]  # time is monotone in log order
        self._states: dict[int, SiteThenState] = {}
        self._tres: dict[int, dict[tuple[str, str], dict[str, int]]] = {}

    def moment(self, at: float) -> Moment:
        index = bisect_right(self._times, at) - 1
        if index < 0:
            first = f": the ledger was created at {iso(self._times[0])}" if self._times else ""
            raise InvalidValue(f"no ledger at {iso(at)}{first}")
        event_at, position, version = self._log[index]
        return Moment(at, position, event_at, version)

    def state(self, moment: Moment) -> SiteThenState:
        found = self._states.get(moment.site_version)
        if found is None:
            state = site_state_at(self.ledger, moment.site_version)
            found = SiteThenState(state, _inputs(state), AssociationResolver(state))
            self._states[moment.site_version] = found
        return found

    def tres(self, job: SlurmRecord) -> dict[str, int]:
        """The job's AllocTRES, which the jobs table does not keep: from the batch that
        recorded it, each batch decoded once."""
        position = job.position
        batch = self._tres.get(position)
        if batch is None:
            (notification,) = self.ledger.recorder.select_notifications(start=position, limit=1)
            event: Any = self.ledger.mapper.to_domain_event(notification)
            batch = {
                (str(r["cluster"]), str(r["id"])): {k: int(v) for k, v in r["tres"].items()}
                for r in getattr(event, "records", ())
                if r.get("tres")
            }
            self._tres[position] = batch
        return batch.get((job.cluster, str(job.id)), {})

    def price(self, job: SlurmRecord, at: float, moment: Moment) -> tuple[AssocKey, PricedJob]:
        """The job priced at `at` with the site as it stood at `moment`."""
        state, inputs, resolver = self.state(moment)
        when = iso(moment.asked)
        if not state.slurm_site:
            raise NotSlurmThen(f"the site ranked by weighted-walk at {when}, not as Slurm does")
        key = resolver.resolve_cached(job.userid, job.username, job.bank)
        who = job.username or f"userid {job.userid}"
        if key is None:
            raise NotFound(f"{who} had no association in bank {job.bank or '(default)'} at {when}")
        assoc = state.association(*key)
        assert assoc is not None  # the resolver found it
        if job.qos is not None and job.qos not in state.qos:
            raise NotFound(f"QOS {job.qos} was unknown to the ledger at {when}")
        if job.queue is not None and job.queue not in state.queues:
            raise NotFound(f"queue {job.queue} was unknown to the ledger at {when}")
        if job.queue is None and len(state.queues) > 1:
            raise InvalidValue(
                f"the record names no partition and the site had {len(state.queues)}"
            )
        fairshare = fairshare_value(self.snapshots, key, moment.position).value
        # Slurm ran the job in this QOS, so the association was allowed it then: the ledger's
        # list of its QOS is not checked again.
        row = {"username": key[0], "bank": key[1], "qos": "", "default_qos": assoc.default_qos}
        pricing = SitePricing(inputs, {key: row}, {key[0]: key[1]})
        slurm_job = SlurmJob(
            username=key[0],
            bank=key[1],
            queue=job.queue,
            qos=job.qos,
            nodes=job.nodes,
            cpus=job.cpus,
            time_limit=job.time_limit,
            submit=job.submit,
            eligible=job.submit if job.eligible is None else job.eligible,
            tres=self.tres(job),
            fairshare=fairshare,
            job_id=job.id,
        )
        return key, pricing.price(slurm_job, at)


def _inputs(state: SiteState) -> SlurmPriorityInputs:
    queues = [asdict(state.queues[name]) for name in sorted(state.queues)]
    return slurm_priority_inputs(
        state.config,
        state.factors,
        queues,
        [asdict(state.qos[name]) for name in sorted(state.qos)],
        {name: float(bank.priority) for name, bank in state.banks.items()},
    )


def audit_job(site: SiteThen, job: SlurmRecord) -> JobAudit:
    """The job priced at its eligible time and at its start, each with the site of then, and
    the difference from Slurm's recorded Priority."""
    became_eligible = job.submit if job.eligible is None else job.eligible
    eligible = site.moment(became_eligible)
    start = site.moment(job.start)
    _, at_eligible = site.price(job, became_eligible, eligible)
    key, at_start = site.price(job, job.start, start)
    difference = None
    if job.recorded is not None:
        # Slurm's last recalculation was at most a period before start, and not before submit.
        earliest = max(job.start - DEFAULT_CALC_PERIOD, job.submit)
        _, window_start = site.price(job, earliest, start)
        difference = explain_difference(job.recorded, at_start, window_start)
    return JobAudit(job, key, eligible, start, at_eligible, at_start, difference)


def explain_difference(recorded: int, at_start: PricedJob, earliest: PricedJob) -> Difference:
    """What explains recorded − ours at start (see the module docstring). `earliest`: ours at
    the earliest moment Slurm's last recalculation before start can have been, with the site
    at start (only the age differs)."""
    ours = at_start.result.priority
    value = recorded - ours
    if value == 0:
        return Difference(0, None, None, "none: Slurm recorded what we compute")
    low, high = sorted((earliest.result.priority, ours))
    if low <= recorded <= high:
        age = at_start.result.factor("AGE")
        slurm_age = (age.weighted + value) / age.weight if age.weight else None
        return Difference(
            value,
            "AGE",
            slurm_age,
            f"AGE: Slurm last recalculated up to {DEFAULT_CALC_PERIOD}s (PriorityCalcPeriod) "
            "before the job started",
        )
    total = at_start.result.total
    candidates = []
    for factor in at_start.result.factors:
        if factor.weight <= 0 or (factor.name not in ("AGE", *SITE_FACTORS)):
            continue
        rest = total - factor.weighted
        # the factor's weighted value that gives `recorded` once the sum is truncated
        low_value = (recorded - rest) / factor.weight
        high_value = (recorded + 1 - rest) / factor.weight
        if high_value > 0 and low_value <= 1:
            candidates.append((factor.weight, factor.name, factor.value, max(low_value, 0.0)))
    if not candidates:
        return Difference(value, None, None, UNEXPLAINED)
    order = [f.name for f in at_start.result.factors]
    _, name, ours_value, slurm_value = min(candidates, key=lambda c: (-c[0], order.index(c[1])))
    return Difference(
        value,
        name,
        slurm_value,
        f"{name}: Slurm's would be {slurm_value:.6g}, ours {ours_value:.6g}",
    )


def _refuse_unless_slurm(conn: Connection) -> None:
    if not queries.parent_shares(conn):
        raise InvalidValue(NOT_SLURM)


def audit_recorded_job(session: Session, cluster: str, job_id: int) -> JobAudit:
    """explain-job's Slurm part: one recorded job (found already) priced and compared."""
    conn = session.read()
    _refuse_unless_slurm(conn)
    return audit_job(SiteThen(session.ledger, conn), slurm_record(conn, cluster, job_id))


def is_slurm_site(session: Session) -> bool:
    return queries.parent_shares(session.read())


def priority_audit(
    session: Session,
    since: float | None = None,
    until: float | None = None,
    tolerance: int = 0,
) -> AuditReport:
    """Recorded jobs started from `since` to `until` whose recorded Priority differs from ours
    at their start by more than `tolerance`, the largest difference first."""
    if tolerance < 0:
        raise InvalidValue(f"invalid --tolerance: {tolerance} (must be >= 0)")
    if since is not None and until is not None and since > until:
        raise InvalidValue(f"--since {iso(since)} is after --until {iso(until)}")
    conn = session.read()
    _refuse_unless_slurm(conn)
    site = SiteThen(session.ledger, conn)
    # Pricing a job reads the store, which a stream of the jobs holds: the jobs with a
    # recorded Priority go to disk first (held in memory, 1.2M jobs took 1.3 GB).
    with Spill() as held:
        without = 0
        with slurm_records(conn, since, until) as records:
            for job in records:
                if job.recorded is None:
                    without += 1
                else:
                    held.add(astuple(job))
        differing, unpriced = [], []
        for values in held.replay():
            job = SlurmRecord(*values)
            try:
                audit = audit_job(site, job)
            except LedgerError as err:
                unpriced.append(Unpriced(job, str(err)))
                continue
            if audit.difference and abs(audit.difference.value) > tolerance:
                differing.append(audit)
        audited = held.count - len(unpriced)
    differing.sort(key=lambda a: (-abs(_value(a)), a.job.start, a.job.cluster, a.job.id))
    return AuditReport(since, until, tolerance, differing, audited, without, unpriced)


def _value(audit: JobAudit) -> int:
    return audit.difference.value if audit.difference is not None else 0
