"""Would the plugin accept, hold or reject a job? The site's limits as the read models hold them,
the association's live jobs as the caller counts them, and the plugin's rules (ledger.limits)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ledger import bounds
from ledger.clock import AsOf
from ledger.errors import InvalidValue
from ledger.limits import (
    AssociationCounters,
    AssociationLimits,
    JobDecision,
    JobRequest,
    LimitsPolicy,
    QueueCounters,
    QueueLimits,
    evaluate_job,
)
from ledger.site_config import csv_items
from ledger.store.connections import Connection
from ledger.usecases.associations import Row, association_row, check_names
from ledger.usecases.session import Session
from projections.queries import site as queries


@dataclass(frozen=True)
class JobToCheck:
    username: str
    bank: str | None = None  # None: the user's default bank
    queue: str | None = None
    project: str | None = None
    nodes: int = 1
    cores: int = 1


@dataclass(frozen=True)
class LiveJobs:
    """The association's jobs in the scheduler now, not counting the one checked: what the
    plugin counts and the ledger does not know."""

    active: int = 0
    running: int = 0
    sched: int = 0
    running_nodes: int = 0  # nodes its running jobs hold
    running_cores: int = 0
    queue_running: int = 0  # its running jobs in the checked job's queue
    queue_nodes: int = 0
    queue_sched: int = 0
    queue_sched_nodes: int = 0
    queue_sched_cores: int = 0

    def counters(self, queue: str | None) -> AssociationCounters:
        in_queue = QueueCounters(
            cur_run_jobs=self.queue_running,
            cur_nodes=self.queue_nodes,
            cur_sched_jobs=self.queue_sched,
            cur_sched_nodes=self.queue_sched_nodes,
            cur_sched_cores=self.queue_sched_cores,
        )
        return AssociationCounters(
            cur_active_jobs=self.active,
            cur_run_jobs=self.running,
            cur_sched_jobs=self.sched,
            cur_nodes=self.running_nodes,
            cur_cores=self.running_cores,
            queue_usage={queue or "": in_queue},
        )


def check_job(
    session: Session, job: JobToCheck, live: LiveJobs, as_of: AsOf | None = None
) -> JobDecision:
    """The plugin's verdict on `job` now (or at `as_of`), given the association's `live` jobs."""
    _check_counts(job, live)
    check_names(username=job.username, bank=job.bank, queue=job.queue, project=job.project)
    conn = session.read(as_of)
    # Unknown queues and projects are not errors here: the plugin's own rules decide
    # (an unknown queue passes unless deny_unknown_queues; a project must be listed).
    assoc = association_row(conn, job.username, job.bank)
    return evaluate_job(
        JobRequest(nnodes=job.nodes, ncores=job.cores, queue=job.queue, project=job.project),
        association_limits(assoc),
        live.counters(job.queue),
        limits_policy(conn),
    )


def _check_counts(job: JobToCheck, live: LiveJobs) -> None:
    """Every size and count is a non-negative count the plugin could hold; named as the
    command-line option that gives it."""
    counts = {"nodes": job.nodes, "cores": job.cores}
    counts.update({f.name: getattr(live, f.name) for f in fields(live)})
    for name, value in counts.items():
        option = "--" + name.replace("_", "-")
        if value < 0:
            raise InvalidValue(f"invalid {option}: {value} (must be >= 0)")
        bounds.check_int(option, value, 0, bounds.COUNT_MAX)


def association_limits(row: Row) -> AssociationLimits:
    return AssociationLimits(
        userid=int(row["userid"]),
        active=bool(row["active"]),
        queues=tuple(csv_items(row["queues"])),
        projects=tuple(csv_items(row["projects"])),
        max_running_jobs=int(row["max_running_jobs"]),
        max_active_jobs=int(row["max_active_jobs"]),
        max_nodes=int(row["max_nodes"]),
        max_cores=int(row["max_cores"]),
        max_sched_jobs=int(row["max_sched_jobs"]),
    )


def queue_limits(row: Row) -> QueueLimits:
    return QueueLimits(
        priority=int(row["priority"]),
        max_running_jobs=int(row["max_running_jobs"]),
        max_nodes_per_assoc=int(row["max_nodes_per_assoc"]),
        max_sched_jobs=int(row["max_sched_jobs"]),
        max_sched_nodes_per_assoc=int(row["max_sched_nodes_per_assoc"]),
        max_sched_cores_per_assoc=int(row["max_sched_cores_per_assoc"]),
    )


def limits_policy(conn: Connection) -> LimitsPolicy:
    """The site-wide facts the plugin's checks need: known queues, known projects, config."""
    return LimitsPolicy(
        queues={q["queue"]: queue_limits(q) for q in queries.queues(conn)},
        projects=tuple(p["project"] for p in queries.projects(conn)),
        deny_unknown_queues=queries.config(conn, "deny_unknown_queues")["value"] == "true",
    )
