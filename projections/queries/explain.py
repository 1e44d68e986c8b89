"""explain-job: the priority a recorded job had at its submission time, factor by factor, and
the usage behind the fair-share it was given (docs/semantics.md, "Priority" and "Time travel").

The moment is the job's t_submit: the site state at the last event at or before it gives the
association, the queue's and the bank's priority and the factor weights; the fair-share is the
snapshot in force then (the latest FairshareUpdated at or before that log position), recomputed
from the jobs recorded up to the snapshot's own position. Events recorded later change nothing.

On a Slurm site the priority audit (ledger.usecases.priority_audit) reads recorded jobs as sacct
gave them (SlurmRecord: Slurm's Priority, Eligible, Timelimit kept in the record) from here.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ledger import events as ev
from ledger.clock import iso
from ledger.errors import InvalidValue, NotFound
from ledger.priority import (
    URGENCY_DEFAULT,
    PriorityBreakdown,
    PriorityWeights,
    job_priority,
    queue_factor,
)
from ledger.site_usage import AssociationResolver, AssocKey, usage_params
from ledger.state import SiteState
from ledger.store.application import Ledger
from ledger.store.connections import Connection
from ledger.usage import bin_count, period_of, period_start
from projections.queries.as_of import (
    Moment,
    Snapshot,
    Snapshots,
    fairshare_value,
    marker_at_position,
    moment_at,
    site_state_at,
)
from projections.queries.jobs import by_id

TOP_JOBS = 5


@dataclass(frozen=True)
class RecordedJob:
    cluster: str
    id: int
    userid: int | None
    username: str | None
    bank: str | None
    queue: str | None
    t_submit: float
    t_inactive: float
    urgency: int | None
    charge: float


@dataclass(frozen=True)
class Bin:
    """One period's raw total in the usage: `decayed` = `total` · `decay` (= D^age)."""

    age: int
    period: int
    start: float
    total: float
    decay: float
    decayed: float


@dataclass(frozen=True)
class Contribution:
    """One job's part in the usage: `weight` = `charge` · `decay` (= D^age of its period)."""

    cluster: str
    id: int
    period: int
    t_inactive: float
    charge: float
    decay: float
    weight: float


@dataclass(frozen=True)
class UsageBehind:
    """The association's usage at a snapshot: its B+1 bins and the jobs that weigh most."""

    at: float
    position: int
    job_usage: float
    decay_factor: float
    half_life: float
    bins: list[Bin]
    top_jobs: list[Contribution]
    contributing_jobs: int


@dataclass(frozen=True)
class Explanation:
    job: RecordedJob
    association: AssocKey
    active: bool  # the association at submission time
    submitted: Moment  # the log position of t_submit
    snapshot: Moment | None  # the FairshareUpdated in force then (None: before any)
    source: Moment | None  # the snapshot that computed the value (an inactive one kept it)
    imported: Moment | None  # the opening balance that brought the value over, or a --fairshare
    set_by: str | None  # who set it by hand (--fairshare); None when an import brought it
    cleared_by: str | None  # who ran the clear-usage that put it back at 0.5
    fairshare: float
    rank: int | None
    ranked: int | None  # N at the source snapshot
    queue_priority: int
    queue_known: bool
    bank_priority: float
    urgency: int
    weights: PriorityWeights
    breakdown: PriorityBreakdown
    usage: UsageBehind | None


def find_job(conn: Connection, job_id: int, cluster: str | None, shown: str) -> RecordedJob:
    """The recorded job with this id (on `cluster`, or on the only cluster that has it)."""
    if cluster is not None:
        clause, params = "cluster = ? AND id = ?", [cluster, str(job_id)]
    else:
        clause, params = by_id(conn, str(job_id))
    rows = conn.query(
        "SELECT cluster, id, userid, username, bank, queue, t_submit, t_inactive, urgency, "
        f"charge FROM jobs WHERE {clause} ORDER BY cluster",
        params,
    )
    where = f" on cluster {cluster}" if cluster is not None else ""
    if not rows:
        raise NotFound(f"job {shown} not found{where}")
    if len(rows) > 1:
        clusters = ", ".join(r["cluster"] for r in rows)
        raise InvalidValue(f"job {shown} is recorded on clusters {clusters}: give --cluster")
    r = rows[0]
    return RecordedJob(
        cluster=r["cluster"],
        id=int(r["id"]),
        userid=None if r["userid"] is None else int(r["userid"]),
        username=r["username"],
        bank=r["bank"],
        queue=r["queue"],
        t_submit=float(r["t_submit"]),
        t_inactive=float(r["t_inactive"]),
        urgency=None if r["urgency"] is None else int(r["urgency"]),
        charge=float(r["charge"]),
    )


def _stored_by(ledger: Ledger, position: int | None) -> tuple[str | None, str | None]:
    """Who stored the value in force at `position`, as (set by hand with --fairshare, ran the
    clear-usage that put it back at 0.5); both None for an import's opening balance, or when no
    stored value is in force. All three are in force the same way; the explanation differs."""
    if position is None:
        return None, None
    (notification,) = ledger.recorder.select_notifications(start=position, limit=1)
    event: Any = ledger.mapper.to_domain_event(notification)
    actor = str(event.actor) or "-"
    return (
        actor if isinstance(event, ev.FairshareSet) else None,
        actor if isinstance(event, ev.UsageCleared) else None,
    )


def explain_job(
    ledger: Ledger,
    conn: Connection,
    job_id: int,
    cluster: str | None = None,
    shown: str | None = None,
    top: int = TOP_JOBS,
) -> Explanation:
    """Why the job got the priority it had when it was submitted. `shown`: the ID as the
    user wrote it, for messages."""
    shown = shown or str(job_id)
    job = find_job(conn, job_id, cluster, shown)
    try:
        submitted = moment_at(conn, job.t_submit)
    except InvalidValue as err:
        raise InvalidValue(f"job {shown} was submitted before the ledger existed: {err}") from None
    state = site_state_at(ledger, submitted.site_version)
    key = _association_of(job, state, shown)
    snapshots = Snapshots(ledger, conn)
    in_force = snapshots.in_force(submitted.position)
    value = fairshare_value(snapshots, key, submitted.position)
    fairshare, source = value.value, snapshots.source(value)
    queue_priorities = {name: q.priority for name, q in state.queues.items()}
    queue_priority = queue_factor(job.queue, queue_priorities)
    bank_priority = float(state.banks[key[1]].priority)
    urgency = URGENCY_DEFAULT if job.urgency is None else job.urgency
    weights = weights_of(state)
    assoc = state.association(*key)
    assert assoc is not None  # the resolver found it
    set_by, cleared_by = _stored_by(ledger, value.imported)
    return Explanation(
        job=job,
        association=key,
        active=assoc.active,
        submitted=submitted,
        snapshot=in_force.marker if in_force is not None else None,
        source=source.marker if source is not None else None,
        imported=marker_at_position(conn, value.imported) if value.imported is not None else None,
        set_by=set_by,
        cleared_by=cleared_by,
        fairshare=fairshare,
        rank=source.rank(key) if source is not None else None,
        ranked=source.ranked if source is not None else None,
        queue_priority=queue_priority,
        queue_known=job.queue is not None and job.queue in queue_priorities,
        bank_priority=bank_priority,
        urgency=urgency,
        weights=weights,
        breakdown=job_priority(fairshare, queue_priority, bank_priority, urgency, weights),
        usage=usage_behind(conn, source, key, top) if source is not None else None,
    )


def weights_of(state: SiteState) -> PriorityWeights:
    names = ("fairshare", "queue", "bank", "urgency")
    return PriorityWeights(**{n: int(state.factors[n]) for n in names if n in state.factors})


def _association_of(job: RecordedJob, state: SiteState, shown: str) -> AssocKey:
    key = AssociationResolver(state).resolve(job.userid, job.username, job.bank)
    if key is not None:
        return key
    when = iso(job.t_submit)
    who = job.username or f"userid {job.userid}"
    if job.username is None and not any(a.userid == job.userid for a in state.all_associations()):
        reason = f"no user had userid {job.userid}"
    elif job.username is None:
        reason = f"userid {job.userid} did not name exactly one user with that bank"
    elif job.username not in state.associations:
        reason = f"user {job.username} did not exist yet"
    elif job.bank is None:
        reason = f"user {job.username} had no default bank"
    else:
        reason = f"user {job.username} had no association in bank {job.bank}"
    bank = job.bank or "default bank"
    raise NotFound(
        f"job {shown}: association of {who} ({bank}) unknown at its submission ({when}): {reason}"
    )


def usage_behind(conn: Connection, snapshot: Snapshot, key: AssocKey, top: int) -> UsageBehind:
    """The association's bins at the snapshot and the jobs that weigh most in its usage: the
    jobs recorded up to the snapshot's position, in the periods that counted then."""
    state = snapshot.state
    params = usage_params(state)
    current = period_of(snapshot.marker.event_time, params)
    first = current - bin_count(params)
    usage = snapshot.usage_of(key)
    bins = [
        Bin(
            age=age,
            period=current - age,
            start=period_start(current - age, params),
            total=total,
            decay=params.decay_factor**age,
            decayed=total * params.decay_factor**age,
        )
        for age, total in enumerate(usage.bins)
    ]
    jobs, counted = contributions(conn, snapshot, key, first, current, top)
    return UsageBehind(
        at=snapshot.marker.event_time,
        position=snapshot.marker.position,
        job_usage=usage.usage,
        decay_factor=params.decay_factor,
        half_life=params.half_life,
        bins=bins,
        top_jobs=jobs,
        contributing_jobs=counted,
    )


def contributions(
    conn: Connection, snapshot: Snapshot, key: AssocKey, first: int, current: int, top: int
) -> tuple[list[Contribution], int]:
    """The `top` heaviest jobs counted in the association's usage at the snapshot (heaviest
    first), and how many were counted.

    The same jobs usage_at summed: recorded by the snapshot's position, ending in a period of
    the window, resolved to this association with the state of then, and not cleared
    (clear-usage drops the jobs that ended at or before the association's cutoff). Streamed,
    keeping only the heaviest: a busy user's window holds hundreds of thousands of jobs (on
    the 4M-job bench ledger, a list of them all took explain-job to 731 MB)."""
    state = snapshot.state
    params = usage_params(state)
    assoc = state.association(*key)
    assert assoc is not None
    resolver = AssociationResolver(state)
    cutoff = state.usage_cutoff(assoc)
    counted = 0

    def counted_jobs(rows: Iterator[tuple[Any, ...]]) -> Iterator[Contribution]:
        nonlocal counted
        for cluster, id_, userid, username, bank, t_inactive, charge in rows:
            period = period_of(float(t_inactive), params)
            if not first <= period <= current or float(t_inactive) <= cutoff:
                continue
            if resolver.resolve(userid, username, bank) != key:
                continue
            counted += 1
            decay = params.decay_factor ** (current - period)
            yield Contribution(
                cluster,
                int(id_),
                period,
                float(t_inactive),
                float(charge),
                decay,
                float(charge) * decay,
            )

    with conn.stream_rows(
        "SELECT cluster, id, userid, username, bank, t_inactive, charge FROM jobs "
        "WHERE position <= ? AND t_inactive >= ? AND t_inactive < ? AND in_balance = 0 "
        "AND (username = ? OR (username IS NULL AND userid = ?))",  # balance-held jobs: 0
        (
            snapshot.marker.position,
            period_start(first, params),
            period_start(current + 1, params),
            key[0],
            assoc.userid,
        ),
    ) as rows:
        jobs = counted_jobs(rows)
        heaviest = heapq.nsmallest(top, jobs, key=lambda c: (-c.weight, c.cluster, c.id))
        for _rest in jobs:  # counted too when `top` asks for none (nsmallest reads nothing)
            pass
    return heaviest, counted


# --- Slurm's recorded priority (the priority audit, ledger.usecases.priority_audit) -------------

_SLURM_COLUMNS = (
    "cluster, id, userid, username, bank, queue, qos, t_submit, t_run, nnodes, ncores, "
    "position, extra"
)


@dataclass(frozen=True)
class SlurmRecord:
    """A recorded job as sacct gave it: `recorded` is Slurm's Priority (None: not in the
    record), `eligible` its Eligible (None: not in the record), `start` its Start, `time_limit`
    minutes (None: unlimited or not given), `position` the batch that recorded it. AllocTRES is
    not in the jobs table: the audit reads it from that batch."""

    cluster: str
    id: int
    userid: int | None
    username: str | None
    bank: str | None
    queue: str | None
    qos: str | None
    submit: float
    eligible: float | None
    start: float
    nodes: int
    cpus: int
    time_limit: int | None
    recorded: int | None
    position: int


def _slurm_record(row: dict[str, Any]) -> SlurmRecord:
    extra = json.loads(row["extra"]) if row["extra"] else {}
    eligible, recorded, limit = (extra.get(k) for k in ("t_eligible", "priority", "time_limit"))
    return SlurmRecord(
        cluster=str(row["cluster"]),
        id=int(row["id"]),
        userid=None if row["userid"] is None else int(row["userid"]),
        username=row["username"],
        bank=row["bank"],
        queue=row["queue"],
        qos=row["qos"],
        submit=float(row["t_submit"]),
        eligible=None if eligible is None else float(eligible),
        start=float(row["t_run"]),
        nodes=int(row["nnodes"]),
        cpus=int(row["ncores"]),
        time_limit=None if limit is None else int(limit),
        recorded=None if recorded is None else int(recorded),
        position=int(row["position"]),
    )


def slurm_record(conn: Connection, cluster: str, job_id: int) -> SlurmRecord:
    rows = conn.query(
        f"SELECT {_SLURM_COLUMNS} FROM jobs WHERE cluster = ? AND id = ?", (cluster, str(job_id))
    )
    if not rows:
        raise NotFound(f"job {job_id} not found on cluster {cluster}")
    return _slurm_record(rows[0])


@contextmanager
def slurm_records(
    conn: Connection, since: float | None = None, until: float | None = None
) -> Iterator[Iterator[SlurmRecord]]:
    """The recorded jobs that started from `since` to `until`, in order of start, streamed
    from the store; use the connection for nothing else inside the block."""
    clauses, params = [], []
    if since is not None:
        clauses.append("t_run >= ?")
        params.append(since)
    if until is not None:
        clauses.append("t_run <= ?")
        params.append(until)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    order = "t_run, cluster, position, LENGTH(id), id"  # decimal ids: numeric order
    sql = f"SELECT {_SLURM_COLUMNS} FROM jobs{where} ORDER BY {order}"
    with conn.stream_query(sql, params) as rows:
        yield (_slurm_record(row) for row in rows)


def log_moments(conn: Connection) -> list[tuple[float, int, int]]:
    """Every log position as (time, position, site version), in log order (time is monotone in
    it): the moments a report over many jobs looks up without a query per job."""
    rows = conn.query("SELECT position, at, site_version FROM log_index ORDER BY position")
    return [(float(r["at"]), int(r["position"]), int(r["site_version"])) for r in rows]
