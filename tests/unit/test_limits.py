"""mf_priority's limits: hard limits reject (exact text), soft limits hold (exact names)."""

from dataclasses import fields, replace

import pytest

from ledger.flux_accounting.columns import ASSOCIATION_COLUMNS
from ledger.limits import (
    ASSOCIATION_LIMIT_FIELDS,
    NO_QUEUE,
    UNLIMITED,
    AssociationCounters,
    AssociationLimits,
    JobDecision,
    JobRequest,
    LimitsPolicy,
    QueueCounters,
    QueueLimits,
    evaluate_job,
    hard_limit_violation,
    is_unlimited,
    soft_limit_dependencies,
    unknown_association_message,
)
from ledger.state import Association

ALICE = AssociationLimits(
    userid=5001,
    queues=("gold", "silver"),
    projects=("chem", "*"),
    max_running_jobs=5,
    max_active_jobs=7,
    max_nodes=8,
    max_cores=64,
    max_sched_jobs=10,
)
POLICY = LimitsPolicy(
    queues={
        "gold": QueueLimits(priority=200, max_running_jobs=2, max_nodes_per_assoc=4),
        "silver": QueueLimits(
            priority=100,
            max_sched_jobs=3,
            max_sched_nodes_per_assoc=6,
            max_sched_cores_per_assoc=24,
            max_nodes_per_assoc=10,
        ),
        "bronze": QueueLimits(priority=0),
    },
    projects=("chem", "bio", "*"),
)
IDLE = AssociationCounters()
SMALL_JOB = JobRequest(nnodes=1, ncores=4)


def decide(
    job: JobRequest = SMALL_JOB,
    association: AssociationLimits = ALICE,
    counters: AssociationCounters = IDLE,
    policy: LimitsPolicy = POLICY,
) -> JobDecision:
    return evaluate_job(job, association, counters, policy)


def rejected_with(message: str) -> JobDecision:
    return JobDecision(status="rejected", message=message)


def held_on(*dependencies: str) -> JobDecision:
    return JobDecision(status="held", dependencies=dependencies)


# --- a job within every limit --------------------------------------------------------------------


def test_a_job_within_every_limit_is_accepted() -> None:
    job = JobRequest(nnodes=2, ncores=8, queue="gold", project="chem")
    assert decide(job) == JobDecision(status="accepted")


def test_a_job_without_queue_or_project_is_accepted() -> None:
    assert decide() == JobDecision.accepted()


# --- hard limits: one test per message -----------------------------------------------------------


def test_unknown_association_message_is_the_plugins() -> None:
    assert (
        unknown_association_message(5001)
        == "cannot find user/bank or user/default bank entry for uid: 5001"
    )


def test_disabled_association_is_rejected() -> None:
    assert decide(association=replace(ALICE, active=False)) == rejected_with(
        "user/bank entry has been disabled from flux-accounting DB"
    )


def test_unknown_queue_is_rejected_when_deny_unknown_queues() -> None:
    policy = replace(POLICY, deny_unknown_queues=True)
    assert decide(JobRequest(1, 4, queue="debug"), policy=policy) == rejected_with(
        'queue "debug" is unknown to flux-accounting and deny-unknown-queues is enabled'
    )


def test_queue_not_listed_for_the_association_is_rejected() -> None:
    assert decide(JobRequest(1, 4, queue="bronze")) == rejected_with(
        'queue "bronze" not valid for user; valid queues for user: gold,silver'
    )


def test_project_not_listed_for_the_association_is_rejected() -> None:
    assert decide(JobRequest(1, 4, project="bio")) == rejected_with(
        'project "bio" not valid for user; valid projects for user: chem,*'
    )


def test_project_unknown_to_the_ledger_is_rejected_even_if_listed() -> None:
    association = replace(ALICE, projects=("ghost", "*"))
    assert decide(JobRequest(1, 4, project="ghost"), association=association) == rejected_with(
        'project "ghost" not valid for user; valid projects for user: ghost,*'
    )


def test_association_at_max_active_jobs_is_rejected() -> None:
    counters = AssociationCounters(cur_active_jobs=7)
    assert decide(counters=counters) == rejected_with("user has max active jobs")


def test_job_larger_than_the_queue_allows_per_association_is_rejected() -> None:
    assert decide(JobRequest(5, 5, queue="gold")) == rejected_with(
        "job size (5 node(s)) is greater than max resources limit configured for queue (4 node(s))"
    )


def test_job_with_more_nodes_than_the_association_allows_is_rejected() -> None:
    assert decide(JobRequest(9, 9)) == rejected_with(
        "job size (9 node(s), 9 core(s)) is greater than max resources limits configured for "
        "association (8 node(s), 64 core(s))"
    )


def test_job_with_more_cores_than_the_association_allows_is_rejected() -> None:
    assert decide(JobRequest(1, 65)).message == (
        "job size (1 node(s), 65 core(s)) is greater than max resources limits configured for "
        "association (8 node(s), 64 core(s))"
    )


# --- hard limits: the plugin's order, first failure wins -----------------------------------------


def test_hard_limits_fail_in_the_plugins_order() -> None:
    """Break every hard limit at once, then mend them one at a time from the first."""
    policy = replace(POLICY, deny_unknown_queues=True)
    association = replace(ALICE, active=False)
    counters = AssociationCounters(cur_active_jobs=7)
    job = JobRequest(nnodes=9, ncores=100, queue="debug", project="bio")

    def message() -> str | None:
        return hard_limit_violation(job, association, counters, policy)

    assert message() == "user/bank entry has been disabled from flux-accounting DB"
    association = replace(association, active=True)
    assert message() == (
        'queue "debug" is unknown to flux-accounting and deny-unknown-queues is enabled'
    )
    job = replace(job, queue="bronze")
    assert message() == 'queue "bronze" not valid for user; valid queues for user: gold,silver'
    job = replace(job, queue="gold")
    assert message() == 'project "bio" not valid for user; valid projects for user: chem,*'
    job = replace(job, project="chem")
    assert message() == "user has max active jobs"
    counters = IDLE
    assert message() == (
        "job size (9 node(s)) is greater than max resources limit configured for queue (4 node(s))"
    )
    job = replace(job, queue=None)
    assert message() == (
        "job size (9 node(s), 100 core(s)) is greater than max resources limits configured for "
        "association (8 node(s), 64 core(s))"
    )
    job = replace(job, nnodes=1, ncores=1)
    assert message() is None


def test_a_rejected_job_gets_no_dependencies() -> None:
    counters = AssociationCounters(cur_active_jobs=7, cur_run_jobs=5)
    decision = decide(counters=counters)
    assert decision.status == "rejected"
    assert decision.dependencies == ()


# --- hard limits: queue and project quirks kept from the plugin ----------------------------------


def test_unknown_queue_is_allowed_by_default() -> None:
    assert decide(JobRequest(1, 4, queue="debug")) == JobDecision.accepted()


def test_association_without_queues_may_use_no_known_queue() -> None:
    association = replace(ALICE, queues=())
    assert decide(JobRequest(1, 4, queue="gold"), association=association) == rejected_with(
        'queue "gold" not valid for user; valid queues for user: '
    )


def test_association_without_queues_may_use_unknown_queues_and_none() -> None:
    association = replace(ALICE, queues=())
    assert decide(JobRequest(1, 4, queue="debug"), association=association).status == "accepted"
    assert decide(association=association).status == "accepted"


def test_queue_priority_minus_6_is_not_mistaken_for_invalid() -> None:
    # The plugin's INVALID_QUEUE sentinel is -6; a real queue priority of -6 must still work.
    policy = replace(POLICY, queues={**POLICY.queues, "gold": QueueLimits(priority=-6)})
    assert decide(JobRequest(1, 4, queue="gold"), policy=policy).status == "accepted"


def test_deny_unknown_queues_does_not_apply_to_jobs_without_a_queue() -> None:
    policy = replace(POLICY, deny_unknown_queues=True)
    assert decide(policy=policy).status == "accepted"


def test_wildcard_project_is_accepted() -> None:
    assert decide(JobRequest(1, 4, project="*")).status == "accepted"


# --- max_active_jobs -----------------------------------------------------------------------------


def test_one_below_max_active_jobs_is_accepted() -> None:
    assert decide(counters=AssociationCounters(cur_active_jobs=6)).status == "accepted"


@pytest.mark.parametrize("limit", [0, -1])
def test_max_active_jobs_zero_or_less_is_unlimited(limit: int) -> None:
    association = replace(ALICE, max_active_jobs=limit)
    counters = AssociationCounters(cur_active_jobs=10**6)
    assert decide(association=association, counters=counters).status == "accepted"


# --- soft limits: one test per dependency name ---------------------------------------------------


def in_queue(queue: str, **counts: int) -> AssociationCounters:
    return AssociationCounters(queue_usage={queue: QueueCounters(**counts)})


def test_queue_max_running_jobs_holds() -> None:
    job = JobRequest(1, 4, queue="gold")
    assert decide(job, counters=in_queue("gold", cur_run_jobs=2)) == held_on("max-run-jobs-queue")


def test_queue_max_sched_jobs_holds() -> None:
    job = JobRequest(1, 4, queue="silver")
    counters = in_queue("silver", cur_sched_jobs=3)
    assert decide(job, counters=counters) == held_on("max-sched-jobs-queue-limit")


def test_queue_max_sched_nodes_holds() -> None:
    job = JobRequest(2, 2, queue="silver")
    counters = in_queue("silver", cur_sched_nodes=5)
    assert decide(job, counters=counters) == held_on("max-sched-nodes-queue-limit")


def test_queue_max_sched_cores_holds() -> None:
    job = JobRequest(1, 8, queue="silver")
    counters = in_queue("silver", cur_sched_cores=20)
    assert decide(job, counters=counters) == held_on("max-sched-cores-queue-limit")


def test_queue_max_nodes_per_association_holds_counting_running_and_scheduled() -> None:
    job = JobRequest(2, 2, queue="gold")
    counters = in_queue("gold", cur_nodes=1, cur_sched_nodes=2)
    assert decide(job, counters=counters) == held_on("max-resources-queue")


def test_association_max_running_jobs_holds() -> None:
    counters = AssociationCounters(cur_run_jobs=5)
    assert decide(counters=counters) == held_on("max-running-jobs-user-limit")


def test_association_max_sched_jobs_holds() -> None:
    counters = AssociationCounters(cur_sched_jobs=10)
    assert decide(counters=counters) == held_on("max-sched-jobs-user-limit")


def test_association_max_nodes_holds_counting_running_jobs() -> None:
    counters = AssociationCounters(cur_nodes=7)
    assert decide(JobRequest(2, 2), counters=counters) == held_on("max-resources-user-limit")


def test_association_max_cores_holds_counting_running_jobs() -> None:
    counters = AssociationCounters(cur_cores=60)
    assert decide(JobRequest(1, 8), counters=counters) == held_on("max-resources-user-limit")


# --- soft limits: boundaries, order, scope -------------------------------------------------------


def test_job_exactly_filling_a_limit_is_not_held() -> None:
    counters = AssociationCounters(
        cur_run_jobs=4,
        cur_sched_jobs=9,
        cur_nodes=6,
        cur_cores=56,
        queue_usage={
            "silver": QueueCounters(cur_sched_jobs=2, cur_sched_nodes=2, cur_sched_cores=16)
        },
    )
    job = JobRequest(2, 8, queue="silver")
    assert decide(job, counters=counters) == JobDecision.accepted()


def test_every_dependency_is_listed_in_the_plugins_order() -> None:
    policy = replace(
        POLICY,
        queues={
            "gold": QueueLimits(
                max_running_jobs=1,
                max_sched_jobs=1,
                max_sched_nodes_per_assoc=2,
                max_sched_cores_per_assoc=2,
                max_nodes_per_assoc=2,
            )
        },
    )
    counters = AssociationCounters(
        cur_run_jobs=5,
        cur_sched_jobs=10,
        cur_nodes=8,
        cur_cores=8,
        queue_usage={
            "gold": QueueCounters(
                cur_run_jobs=1, cur_nodes=1, cur_sched_jobs=1, cur_sched_nodes=1, cur_sched_cores=1
            )
        },
    )
    job = JobRequest(2, 2, queue="gold")
    assert soft_limit_dependencies(job, ALICE, counters, policy) == (
        "max-run-jobs-queue",
        "max-sched-jobs-queue-limit",
        "max-sched-nodes-queue-limit",
        "max-sched-cores-queue-limit",
        "max-resources-queue",
        "max-running-jobs-user-limit",
        "max-sched-jobs-user-limit",
        "max-resources-user-limit",
    )
    assert decide(job, counters=counters, policy=policy).status == "held"


def test_queue_limits_use_the_jobs_own_queue_counters() -> None:
    counters = in_queue("gold", cur_run_jobs=2)
    assert decide(JobRequest(1, 4, queue="silver"), counters=counters).status == "accepted"


def test_queue_limits_do_not_apply_to_unknown_queues_or_no_queue() -> None:
    busy = QueueCounters(cur_run_jobs=10**6, cur_sched_jobs=10**6, cur_sched_nodes=10**6)
    counters = AssociationCounters(queue_usage={"debug": busy, NO_QUEUE: busy})
    assert decide(JobRequest(1, 4, queue="debug"), counters=counters).status == "accepted"
    assert decide(counters=counters).status == "accepted"


# --- unlimited semantics -------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, -1])
def test_max_running_jobs_zero_or_less_is_unlimited(limit: int) -> None:
    # The plugin holds every job of such an association forever; docs/semantics.md ("Limits")
    # says unlimited.
    association = replace(ALICE, max_running_jobs=limit)
    counters = AssociationCounters(cur_run_jobs=10**6)
    assert decide(association=association, counters=counters).status == "accepted"


def test_default_limits_are_flux_accountings() -> None:
    association = AssociationLimits(userid=1)
    assert (association.max_running_jobs, association.max_active_jobs) == (5, 7)
    assert association.max_nodes == association.max_cores == association.max_sched_jobs == UNLIMITED
    assert association.projects == ("*",)
    assert QueueLimits() == QueueLimits(
        priority=0,
        max_running_jobs=100,
        max_nodes_per_assoc=UNLIMITED,
        max_sched_jobs=UNLIMITED,
        max_sched_nodes_per_assoc=UNLIMITED,
        max_sched_cores_per_assoc=UNLIMITED,
    )


def test_default_limits_accept_a_big_job() -> None:
    job = JobRequest(nnodes=10**6, ncores=10**8, queue="bronze")
    association = AssociationLimits(userid=1, queues=("bronze",))
    assert decide(job, association=association) == JobDecision.accepted()


def test_negative_job_size_is_refused() -> None:
    with pytest.raises(ValueError, match="-1 node"):
        JobRequest(nnodes=-1, ncores=1)


# --- the names of the limits, stated once ---------------------------------------------------------
def test_the_association_limit_fields_are_every_limit_an_association_has() -> None:
    limits_of_an_association = {f.name for f in fields(Association) if f.name.startswith("max_")}
    assert set(ASSOCIATION_LIMIT_FIELDS) == limits_of_an_association
    assert set(ASSOCIATION_LIMIT_FIELDS) <= {f.name for f in fields(AssociationLimits)}
    assert list(ASSOCIATION_LIMIT_FIELDS) == [  # flux-accounting's column order
        c for c in ASSOCIATION_COLUMNS if c in limits_of_an_association
    ]


def test_only_an_integer_at_the_bound_reads_unlimited() -> None:
    assert UNLIMITED == 2147483647
    assert is_unlimited(UNLIMITED)
    assert not is_unlimited(UNLIMITED - 1)
    assert not is_unlimited(float(UNLIMITED))
    assert not is_unlimited(str(UNLIMITED))
