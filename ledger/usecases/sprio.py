"""sprio: the priorities of pending jobs given as input, as Slurm's sprio lists them.

The site is read once (ledger.usecases.slurm_priority.site_pricing) and every job priced at the
same moment, now or `--as-of`. As `priority_p_get_priority_factors_list` does, a job is listed
only once it may accrue (its eligible time, or its submit time under ACCRUE_ALWAYS, has come);
a job is one row per (partition, QOS), the partitions by PriorityTier (highest first) and the
QOS by Priority (highest first), as slurmctld orders a job's lists. The filters (-j, -u, -p)
come before pricing, so a job filtered out is not checked against the ledger."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ledger.clock import AsOf
from ledger.errors import InvalidValue, LedgerError
from ledger.site_config import TRES_WEIGHTS_KEY
from ledger.slurm.pending_jobs import PendingJobInput, parse_pending_jobs
from ledger.slurm.sprio_format import SprioWeights
from ledger.slurm_priority import PriorityFlags
from ledger.usecases.priority import priority_view
from ledger.usecases.session import Session
from ledger.usecases.slurm_priority import PricedJob, SitePricing, SlurmJob, site_pricing
from projections.queries import site as queries

NOT_ELIGIBLE = "not eligible yet"  # the skipped count of jobs that do not accrue yet


@dataclass(frozen=True)
class SprioRequest:
    """`jobs_text`: the pending jobs (None with -w, which lists none); the filters: job ids
    (-j), users (-u), partitions (-p), each empty for all."""

    jobs_text: str | None = None
    job_ids: tuple[int, ...] = ()
    users: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()


@dataclass(frozen=True)
class SprioAnswer:
    """The priced rows in input order, the weights sprio shows, the jobs skipped (by state,
    held, not eligible yet) and `listed`, how many jobs sprio would have had before filtering
    (none: with -j, Slurm says it found no job)."""

    rows: list[PricedJob]
    weights: SprioWeights
    at: float
    skipped: Mapping[str, int] = field(default_factory=dict)
    listed: int = 0
    source: str = ""


def sprio(session: Session, asked: SprioRequest, as_of: AsOf | None = None) -> SprioAnswer:
    view = priority_view(session, as_of)
    pricing = site_pricing(view.conn)
    config = {str(r["key"]): str(r["value"]) for r in queries.configs(view.conn)}
    weights = _weights(pricing, config.get(TRES_WEIGHTS_KEY, ""))
    if asked.jobs_text is None:
        return SprioAnswer([], weights, view.at)
    given = parse_pending_jobs(asked.jobs_text)
    skipped: Counter[str] = Counter(given.skipped)
    accruing = []
    for job in given.jobs:
        if _may_accrue(job, view.at, pricing.inputs.config.flags):
            accruing.append(job)
        else:
            skipped[NOT_ELIGIBLE] += 1
    rows = []
    for job in accruing:
        if asked.job_ids and job.job_id not in asked.job_ids:
            continue
        if asked.users and job.user not in asked.users:
            continue
        for partition, qos in _rows_of(job, pricing):
            if asked.partitions and partition not in asked.partitions:
                continue
            rows.append(_price(pricing, job, partition, qos, view.at))
    return SprioAnswer(rows, weights, view.at, dict(skipped), len(accruing), given.source)


def _weights(pricing: SitePricing, tres_text: str) -> SprioWeights:
    w = pricing.inputs.config.weights
    return SprioWeights(
        age=w.age,
        assoc=w.assoc,
        fairshare=w.fairshare,
        job_size=w.job_size,
        partition=w.partition,
        qos=w.qos,
        tres=tres_text or None,
    )


def _may_accrue(job: PendingJobInput, at: float, flags: PriorityFlags) -> bool:
    """sprio lists a job whose begin time (its submit time under ACCRUE_ALWAYS) has come."""
    start = job.submit if PriorityFlags.ACCRUE_ALWAYS in flags else job.eligible
    return start is not None and 0 < start <= at


def _rows_of(job: PendingJobInput, pricing: SitePricing) -> list[tuple[str | None, str | None]]:
    """(partition, QOS) per row: each list without repeats, in slurmctld's order (stable)."""
    tiers = {p.name: p.priority_tier for p in pricing.inputs.partitions}
    priorities = {q.name: q.priority for q in pricing.inputs.qos}
    partitions: list[str | None] = [None]
    qos: list[str | None] = [None]
    if job.partitions:
        partitions = [*sorted(dict.fromkeys(job.partitions), key=lambda p: -tiers.get(p, 0))]
    if job.qos:
        qos = [*sorted(dict.fromkeys(job.qos), key=lambda q: -priorities.get(q, 0))]
    return [(p, q) for p in partitions for q in qos]


def _price(
    pricing: SitePricing, job: PendingJobInput, partition: str | None, qos: str | None, at: float
) -> PricedJob:
    slurm_job = SlurmJob(
        username=job.user,
        bank=job.account,
        queue=partition,
        qos=qos,
        nodes=job.nodes,
        cpus=job.cpus,
        time_limit=job.time_limit,
        submit=job.submit,
        # The age counts from the accrue time; 0 is Slurm's "not accruing": age 0.
        eligible=job.accrue or 0,
        nice=job.nice,
        site_factor=job.site_factor,
        tres=job.tres,
        job_id=job.job_id,
    )
    try:
        return pricing.price(slurm_job, at)
    except LedgerError as exc:
        raise InvalidValue(f"{job.where}: {exc}") from None
