"""Job limits as flux-accounting's mf_priority plugin applies them (docs/semantics.md, "Limits").

A submitted job first meets the hard limits, in the plugin's `validate_cb` order: the first one
that fails rejects it with the plugin's exact message. A job that passes then meets the soft
limits, in the plugin's `job.state.depend` order: every one that fails adds a dependency with the
plugin's exact name, and the job is held until they clear.

Pure: the caller supplies the association, its current counters and the ledger's queues and
projects. Finding the association is the caller's job (see `unknown_association_message`).
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

# Named in ledger/limit_fields.py, which a read imports without the checks below; re-exported
# (`as`), as the checks' callers and the Site import them from here.
from ledger.limit_fields import ASSOCIATION_LIMIT_FIELDS as ASSOCIATION_LIMIT_FIELDS
from ledger.limit_fields import UNLIMITED as UNLIMITED
from ledger.limit_fields import is_unlimited as is_unlimited

# Reject messages, printf-style and byte for byte as the plugin sends them.
MSG_UNKNOWN_ASSOCIATION = "cannot find user/bank or user/default bank entry for uid: %i"
MSG_DISABLED_ASSOCIATION = "user/bank entry has been disabled from flux-accounting DB"
MSG_UNKNOWN_QUEUE = 'queue "%s" is unknown to flux-accounting and deny-unknown-queues is enabled'
MSG_INVALID_QUEUE = 'queue "%s" not valid for user; valid queues for user: %s'
MSG_INVALID_PROJECT = 'project "%s" not valid for user; valid projects for user: %s'
MSG_MAX_ACTIVE_JOBS = "user has max active jobs"
MSG_QUEUE_MAX_RESOURCES = (
    "job size (%i node(s)) is greater than max resources limit configured for queue (%i node(s))"
)
MSG_ASSOCIATION_MAX_RESOURCES = (
    "job size (%i node(s), %i core(s)) is greater than max resources limits "
    "configured for association (%i node(s), %i core(s))"
)

# Dependency names, exactly as the plugin adds them in job.state.depend.
DEP_QUEUE_MAX_RUN_JOBS = "max-run-jobs-queue"
DEP_QUEUE_MAX_SCHED_JOBS = "max-sched-jobs-queue-limit"
DEP_QUEUE_MAX_SCHED_NODES = "max-sched-nodes-queue-limit"
DEP_QUEUE_MAX_SCHED_CORES = "max-sched-cores-queue-limit"
DEP_QUEUE_MAX_RESOURCES = "max-resources-queue"
DEP_ASSOCIATION_MAX_RUN_JOBS = "max-running-jobs-user-limit"
DEP_ASSOCIATION_MAX_SCHED_JOBS = "max-sched-jobs-user-limit"
DEP_ASSOCIATION_MAX_RESOURCES = "max-resources-user-limit"

# The plugin counts a job without a queue under this key of queue_usage.
NO_QUEUE = ""

Status = Literal["accepted", "held", "rejected"]


@dataclass(frozen=True)
class AssociationLimits:
    """What the plugin knows of one association; the defaults are flux-accounting's add-user ones.

    `queues` may be empty (flux's `queues=''`): such an association may use no queue the ledger
    knows, only unknown ones. `projects` always holds `*` in flux-accounting.
    """

    userid: int
    active: bool = True
    queues: tuple[str, ...] = ()
    projects: tuple[str, ...] = ("*",)
    max_running_jobs: int = 5
    max_active_jobs: int = 7
    max_nodes: int = UNLIMITED
    max_cores: int = UNLIMITED
    max_sched_jobs: int = UNLIMITED


@dataclass(frozen=True)
class QueueLimits:
    """A queue the ledger knows; the defaults are flux-accounting's add-queue ones."""

    priority: int = 0
    max_running_jobs: int = 100
    max_nodes_per_assoc: int = UNLIMITED
    max_sched_jobs: int = UNLIMITED
    max_sched_nodes_per_assoc: int = UNLIMITED
    max_sched_cores_per_assoc: int = UNLIMITED


@dataclass(frozen=True)
class QueueCounters:
    """An association's jobs in one queue: running (jobs, nodes), scheduled (jobs, nodes, cores)."""

    cur_run_jobs: int = 0
    cur_nodes: int = 0
    cur_sched_jobs: int = 0
    cur_sched_nodes: int = 0
    cur_sched_cores: int = 0


@dataclass(frozen=True)
class AssociationCounters:
    """An association's live jobs, not counting the one being evaluated.

    Nodes and cores are those of running jobs only, as in the plugin. `queue_usage` is keyed by
    queue name, with `NO_QUEUE` for jobs submitted without one; a missing key counts as zero.
    """

    cur_active_jobs: int = 0
    cur_run_jobs: int = 0
    cur_sched_jobs: int = 0
    cur_nodes: int = 0
    cur_cores: int = 0
    queue_usage: Mapping[str, QueueCounters] = field(default_factory=dict)

    def in_queue(self, queue: str | None) -> QueueCounters:
        return self.queue_usage.get(NO_QUEUE if queue is None else queue, QueueCounters())


@dataclass(frozen=True)
class JobRequest:
    """A submitted job as the plugin sees it: requested nodes and cores (from jobspec)."""

    nnodes: int
    ncores: int
    queue: str | None = None
    project: str | None = None

    def __post_init__(self) -> None:
        if self.nnodes < 0 or self.ncores < 0:
            raise ValueError(
                f"job size cannot be negative: {self.nnodes} node(s), {self.ncores} core(s)"
            )


@dataclass(frozen=True)
class LimitsPolicy:
    """The ledger-wide facts the checks need: known queues, known projects, config."""

    queues: Mapping[str, QueueLimits] = field(default_factory=dict)
    projects: Collection[str] = ("*",)
    deny_unknown_queues: bool = False


@dataclass(frozen=True)
class JobDecision:
    """Accepted, held on dependencies (soft limits), or rejected with a message (hard limits)."""

    status: Status
    message: str | None = None
    dependencies: tuple[str, ...] = ()

    @classmethod
    def accepted(cls) -> "JobDecision":
        return cls("accepted")

    @classmethod
    def held(cls, dependencies: tuple[str, ...]) -> "JobDecision":
        return cls("held", dependencies=dependencies)

    @classmethod
    def rejected(cls, message: str) -> "JobDecision":
        return cls("rejected", message=message)


def unknown_association_message(userid: int) -> str:
    """The plugin's reject text when no association (or default bank) matches the submitter."""
    return MSG_UNKNOWN_ASSOCIATION % userid


def evaluate_job(
    job: JobRequest,
    association: AssociationLimits,
    counters: AssociationCounters,
    policy: LimitsPolicy,
) -> JobDecision:
    """The plugin's verdict on a submitted job: hard limits first, then soft limits."""
    message = hard_limit_violation(job, association, counters, policy)
    if message is not None:
        return JobDecision.rejected(message)
    dependencies = soft_limit_dependencies(job, association, counters, policy)
    if dependencies:
        return JobDecision.held(dependencies)
    return JobDecision.accepted()


def hard_limit_violation(
    job: JobRequest,
    association: AssociationLimits,
    counters: AssociationCounters,
    policy: LimitsPolicy,
) -> str | None:
    """The reject message of the first hard limit the job breaks, in validate_cb's order."""
    checks = (
        _disabled_association(association),
        _unknown_queue(job, policy),
        _queue_not_permitted(job, association, policy),
        _project_not_permitted(job, association, policy),
        _at_max_active_jobs(association, counters),
        _larger_than_queue_allows(job, policy),
        _larger_than_association_allows(job, association),
    )
    return next((message for message in checks if message is not None), None)


def soft_limit_dependencies(
    job: JobRequest,
    association: AssociationLimits,
    counters: AssociationCounters,
    policy: LimitsPolicy,
) -> tuple[str, ...]:
    """One dependency per soft limit the job would exceed now, in job.state.depend's order."""
    queue = _known_queue(job, policy)
    queue_dependencies = () if queue is None else _queue_dependencies(job, queue, counters)
    return queue_dependencies + _association_dependencies(job, association, counters)


# --- hard limits (validate_cb) -------------------------------------------------------------------


def _disabled_association(association: AssociationLimits) -> str | None:
    return None if association.active else MSG_DISABLED_ASSOCIATION


def _unknown_queue(job: JobRequest, policy: LimitsPolicy) -> str | None:
    # Unknown queues are allowed unless the site opted into deny-unknown-queues: the queue may be
    # a flux-core queue the ledger has no accounting rules for.
    if job.queue is None or not policy.deny_unknown_queues or job.queue in policy.queues:
        return None
    return MSG_UNKNOWN_QUEUE % job.queue


def _queue_not_permitted(
    job: JobRequest, association: AssociationLimits, policy: LimitsPolicy
) -> str | None:
    # Only known queues need permission, and an association with no queues listed has permission
    # for none of them (the plugin looks the queue up in an empty list).
    # The plugin also mistakes a queue whose priority is -6 for its INVALID_QUEUE sentinel and
    # rejects it; we look permission up directly and do not copy that.
    if job.queue is None or job.queue not in policy.queues or job.queue in association.queues:
        return None
    return MSG_INVALID_QUEUE % (job.queue, ",".join(association.queues))


def _project_not_permitted(
    job: JobRequest, association: AssociationLimits, policy: LimitsPolicy
) -> str | None:
    # A project must be known to the ledger and listed for the association; both failures read
    # the same, as in the plugin.
    if job.project is None:
        return None
    if job.project in policy.projects and job.project in association.projects:
        return None
    return MSG_INVALID_PROJECT % (job.project, ",".join(association.projects))


def _at_max_active_jobs(
    association: AssociationLimits, counters: AssociationCounters
) -> str | None:
    # A limit <= 0 means unlimited (the plugin's rule for max_active_jobs).
    if association.max_active_jobs <= 0:
        return None
    if counters.cur_active_jobs < association.max_active_jobs:
        return None
    return MSG_MAX_ACTIVE_JOBS


def _larger_than_queue_allows(job: JobRequest, policy: LimitsPolicy) -> str | None:
    queue = _known_queue(job, policy)
    if queue is None or job.nnodes <= queue.max_nodes_per_assoc:
        return None
    return MSG_QUEUE_MAX_RESOURCES % (job.nnodes, queue.max_nodes_per_assoc)


def _larger_than_association_allows(job: JobRequest, association: AssociationLimits) -> str | None:
    # A job that could never fit, even with nothing else running, is rejected rather than held
    # forever. A limit of 0 is a real limit here, as in the plugin (the default is UNLIMITED).
    if job.nnodes <= association.max_nodes and job.ncores <= association.max_cores:
        return None
    return MSG_ASSOCIATION_MAX_RESOURCES % (
        job.nnodes,
        job.ncores,
        association.max_nodes,
        association.max_cores,
    )


# --- soft limits (job.state.depend) --------------------------------------------------------------


def _known_queue(job: JobRequest, policy: LimitsPolicy) -> QueueLimits | None:
    # Queue limits apply only to queues the ledger knows; the plugin skips unknown queues (or, for
    # max-run-jobs-queue, compares against a default of UNLIMITED, which comes to the same).
    return None if job.queue is None else policy.queues.get(job.queue)


def _queue_dependencies(
    job: JobRequest, queue: QueueLimits, counters: AssociationCounters
) -> tuple[str, ...]:
    in_queue = counters.in_queue(job.queue)
    # Running and scheduled nodes both count against max_nodes_per_assoc (the plugin's rule
    # since #937); the sched limits count scheduled jobs only.
    committed_nodes = in_queue.cur_nodes + in_queue.cur_sched_nodes
    exceeded = (
        (DEP_QUEUE_MAX_RUN_JOBS, in_queue.cur_run_jobs >= queue.max_running_jobs),
        (DEP_QUEUE_MAX_SCHED_JOBS, in_queue.cur_sched_jobs >= queue.max_sched_jobs),
        (
            DEP_QUEUE_MAX_SCHED_NODES,
            in_queue.cur_sched_nodes + job.nnodes > queue.max_sched_nodes_per_assoc,
        ),
        (
            DEP_QUEUE_MAX_SCHED_CORES,
            in_queue.cur_sched_cores + job.ncores > queue.max_sched_cores_per_assoc,
        ),
        (DEP_QUEUE_MAX_RESOURCES, committed_nodes + job.nnodes > queue.max_nodes_per_assoc),
    )
    return tuple(name for name, is_exceeded in exceeded if is_exceeded)


def _association_dependencies(
    job: JobRequest, association: AssociationLimits, counters: AssociationCounters
) -> tuple[str, ...]:
    exceeded = (
        (DEP_ASSOCIATION_MAX_RUN_JOBS, _run_jobs_full(association, counters)),
        (DEP_ASSOCIATION_MAX_SCHED_JOBS, counters.cur_sched_jobs >= association.max_sched_jobs),
        (DEP_ASSOCIATION_MAX_RESOURCES, _resources_full(job, association, counters)),
    )
    return tuple(name for name, is_exceeded in exceeded if is_exceeded)


def _run_jobs_full(association: AssociationLimits, counters: AssociationCounters) -> bool:
    # max_running_jobs = 0 means unlimited, like max_active_jobs; the plugin holds such jobs
    # forever, a bug we don't copy (docs/semantics.md, "Limits").
    if association.max_running_jobs <= 0:
        return False
    return counters.cur_run_jobs >= association.max_running_jobs


def _resources_full(
    job: JobRequest, association: AssociationLimits, counters: AssociationCounters
) -> bool:
    # The plugin's rule, kept: a node or core limit <= 0 holds every job; only running jobs count.
    if association.max_nodes <= 0 or association.max_cores <= 0:
        return True
    nodes_fit = counters.cur_nodes + job.nnodes <= association.max_nodes
    cores_fit = counters.cur_cores + job.ncores <= association.max_cores
    return not (nodes_fit and cores_fit)
