"""A Slurm site's job priority: Slurm's multifactor formula (ledger.slurm_priority) on the inputs
the ledger holds (ledger.slurm_priority_inputs) and each association's fair-share in force.

`priority` asks it for one job described on the command line; `sprio` and explain-job for many
jobs at once: the site is read once per call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger import bounds
from ledger.clock import AsOf
from ledger.errors import InvalidValue, NotFound
from ledger.site_config import csv_items
from ledger.slurm_priority import PartitionInfo, PendingJob, PriorityResult, slurm_job_priority
from ledger.slurm_priority_inputs import SlurmPriorityInputs, slurm_priority_inputs
from ledger.store.connections import Connection
from ledger.usecases.associations import Row, check_names
from ledger.usecases.priority import PriorityView, priority_view
from ledger.usecases.session import Session
from projections.queries import site as queries

# A site with no queue still prices jobs: Slurm always has a partition, here one with the
# defaults (PriorityJobFactor 1, no TRES totals).
NO_QUEUE = ""


@dataclass(frozen=True)
class SlurmJob:
    """A job to price, as `priority`'s options or a pending job's record give it.

    `submit`/`eligible` are epoch seconds (None: submitted now; eligible at submission); `qos`
    None takes the association's DefaultQOS; `cpus` 0 means the job gave no CPU count;
    `time_limit` is in minutes (None: none given); `tres` maps TRES names to requested counts.
    `fairshare` replaces the association's (a what-if); `job_id` is only carried to the result.
    """

    username: str
    bank: str | None = None
    queue: str | None = None
    qos: str | None = None
    nodes: int = 1
    cpus: int = 0
    time_limit: int | None = None
    submit: float | None = None
    eligible: float | None = None
    nice: int = 0
    site_factor: int = 0
    tres: Mapping[str, int] = field(default_factory=dict)
    fairshare: float | None = None
    job_id: int = 0


@dataclass(frozen=True)
class PricedJob:
    """A job's priority and factors, with what the ledger resolved: the association's bank, the
    queue and QOS used, and the moment (`at`) the age was measured at."""

    job: SlurmJob
    bank: str
    queue: str
    qos: str | None
    at: float
    result: PriorityResult

    def factor_rows(self) -> list[Row]:
        return [
            {"factor": f.name, "value": f.value, "weight": f.weight, "product": f.weighted}
            for f in self.result.factors
        ]


@dataclass(frozen=True)
class SitePricing:
    """The site read once: the formula's inputs and the associations by (user, bank)."""

    inputs: SlurmPriorityInputs
    associations: Mapping[tuple[str, str], Row]
    default_banks: Mapping[str, str]

    def price(self, job: SlurmJob, at: float) -> PricedJob:
        check_names(username=job.username, bank=job.bank, queue=job.queue)
        assoc = self._association(job.username, job.bank)
        queue = self._queue(job.queue)
        qos = self._qos(job.qos, assoc)
        fairshare = float(assoc["fairshare"]) if job.fairshare is None else job.fairshare
        submit = int(at if job.submit is None else job.submit)
        eligible = submit if job.eligible is None else int(job.eligible)
        pending = PendingJob(
            job_id=job.job_id,
            partition=queue,
            submit_time=submit,
            eligible_time=eligible,
            qos=qos,
            user=job.username,
            account=str(assoc["bank"]),
            fairshare=fairshare,
            assoc_priority=self.inputs.assoc_priorities.get(str(assoc["bank"]), 0),
            min_nodes=job.nodes,
            cpus=job.cpus,
            time_limit=job.time_limit,
            tres=requested_tres(job),
            nice=job.nice,
            site_factor=job.site_factor,
        )
        partitions = self.inputs.partitions or (PartitionInfo(NO_QUEUE),)
        result = slurm_job_priority(
            pending,
            now=int(at),
            config=self.inputs.config,
            partitions=partitions,
            qos=self.inputs.qos,
            cluster=self.inputs.cluster,
            max_assoc_priority=self.inputs.max_assoc_priority,
        )
        return PricedJob(job, str(assoc["bank"]), queue, qos, at, result)

    def _association(self, username: str, bank: str | None) -> Row:
        if username not in self.default_banks:
            raise NotFound(f"user {username} not found in association_table")
        wanted = bank or self.default_banks[username]
        found = self.associations.get((username, wanted))
        if found is None:
            raise NotFound(f"user {username} not found in bank {wanted}")
        return found

    def _queue(self, queue: str | None) -> str:
        names = [p.name for p in self.inputs.partitions]
        if queue is None:
            if len(names) > 1:
                raise InvalidValue(
                    f"--queue is needed: the site has {len(names)} queues ({', '.join(names)})"
                )
            return names[0] if names else NO_QUEUE
        if queue not in names:
            raise NotFound(f"queue {queue} not found in queue_table")
        return queue

    def _qos(self, qos: str | None, assoc: Row) -> str | None:
        """The job's QOS: the one asked for, which the association must be allowed (Slurm
        refuses the job otherwise), or the association's DefaultQOS."""
        allowed = csv_items(str(assoc.get("qos", "")))
        if qos is None:
            return str(assoc.get("default_qos", "")) or None
        if qos not in {q.name for q in self.inputs.qos}:
            raise NotFound(f"QOS {qos} not found")
        if allowed and qos not in allowed:
            raise InvalidValue(
                f"user {assoc['username']} in bank {assoc['bank']} may not use QOS {qos} "
                f"(its QOS: {', '.join(allowed)})"
            )
        return qos


def requested_tres(job: SlurmJob) -> dict[str, int]:
    """The TRES a pending job requests, as Slurm counts them for the TRES factors: its nodes,
    its CPUs when it gave a count, then what `tres` names (which wins)."""
    counts = {"node": job.nodes}
    if job.cpus:
        counts["cpu"] = job.cpus
    counts.update(job.tres)
    return counts


def site_pricing(conn: Connection) -> SitePricing:
    """The site as the read models `conn` holds it, ready to price jobs."""
    if not queries.parent_shares(conn):
        raise InvalidValue(
            "Slurm's multifactor priority needs a Slurm site (fairshare_algorithm fair-tree or "
            "classic); this one ranks by weighted-walk"
        )
    config = {r["key"]: r["value"] for r in queries.configs(conn)}
    factors = {r["factor"]: int(r["weight"]) for r in queries.factors(conn)}
    banks = queries.banks(conn, include_inactive=True)
    inputs = slurm_priority_inputs(
        config,
        factors,
        queries.partitions(conn),
        queries.qos_rows(conn),
        {str(b["bank"]): float(b["priority"]) for b in banks},
    )
    rows = [r for r in queries.associations(conn, with_qos=True) if int(r["active"])]
    return SitePricing(
        inputs=inputs,
        associations={(str(r["username"]), str(r["bank"])): r for r in rows},
        default_banks={str(r["username"]): str(r["default_bank"]) for r in rows},
    )


def slurm_priority_of(
    session: Session,
    job: SlurmJob,
    as_of: AsOf | None = None,
    view: PriorityView | None = None,
) -> PricedJob:
    """The priority a job would get now (or at `as_of`, or in `view`) on this Slurm site."""
    if job.fairshare is not None:
        bounds.check_float("--fairshare", job.fairshare, 0.0, 1.0)
    view = view or priority_view(session, as_of)
    return site_pricing(view.conn).price(job, view.at)


def slurm_priorities(
    session: Session, jobs: Sequence[SlurmJob], as_of: AsOf | None = None
) -> list[PricedJob]:
    """Many jobs priced against one reading of the site (sprio)."""
    view = priority_view(session, as_of)
    pricing = site_pricing(view.conn)
    return [pricing.price(job, view.at) for job in jobs]


def parse_tres_request(text: str | None) -> dict[str, int]:
    """`--tres cpu=4,mem=8000,gres/gpu=2` as the priority keys TRES: each item read as Slurm
    prints TRES (ledger.slurm.tres: a K/M/G/T/P unit allowed, mem counted in MiB), and whole."""
    from ledger.slurm.tres import parse_tres
    from ledger.slurm_priority import tres_key

    counts: dict[str, int] = {}
    for item in csv_items(text or ""):
        try:
            ((name, count),) = parse_tres(item).items()
        except ValueError:
            count = -1
        if not isinstance(count, int) or count < 0:
            raise InvalidValue(
                f"invalid TRES request {bounds.printable(repr(item))} (use e.g. "
                "cpu=4,mem=8000,gres/gpu=2)"
            )
        counts[tres_key(name)] = count
    return counts


def answer_json(priced: PricedJob) -> dict[str, Any]:
    return {
        "priority": priced.result.priority,
        "username": priced.job.username,
        "bank": priced.bank,
        "queue": priced.queue,
        "qos": priced.qos,
        "factors": priced.factor_rows(),
    }
