"""check-job's verdicts from the use case itself: the site's limits read from the read models,
the association's live jobs as given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger import limits
from ledger.clock import AsOf
from ledger.errors import InvalidValue, NotFound
from ledger.usecases import users
from ledger.usecases.check_job import JobToCheck, LiveJobs, check_job
from ledger.usecases.session import Session
from tests.conftest import T0
from tests.usecases.ledgers import change, new_ledger


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Session]:
    """root -> A; queues gold and big (2 running, 10 nodes per association); project climate;
    amy in A with 8 nodes, 64 cores, 2 running, 4 active."""
    session = new_ledger(tmp_path)
    change(session, lambda s, st: s.add_bank(st, "root", 1, "", None))
    change(session, lambda s, st: s.add_bank(st, "A", 1, "root", None))
    change(session, lambda s, st: s.add_queue(st, "gold", {"priority": 300}))
    change(
        session,
        lambda s, st: s.add_queue(
            st, "big", {"max_running_jobs": 2, "max_nodes_per_assoc": 10, "max_sched_jobs": 3}
        ),
    )
    change(session, lambda s, st: s.add_project(st, "climate"))
    users.add_user(
        session,
        "amy",
        "A",
        5001,
        {
            "queues": "gold,big",
            "projects": "climate",
            "max_nodes": 8,
            "max_cores": 64,
            "max_running_jobs": 2,
            "max_active_jobs": 4,
        },
    )
    yield session
    session.close()


def amy(**fields: object) -> JobToCheck:
    return JobToCheck("amy", **fields)  # type: ignore[arg-type]


def test_a_job_within_every_limit_is_accepted(site: Session) -> None:
    assert check_job(site, amy(queue="gold"), LiveJobs()) == limits.JobDecision.accepted()


def test_hard_limits_reject_with_the_plugins_messages(site: Session) -> None:
    assert check_job(site, amy(nodes=9, cores=9), LiveJobs()) == limits.JobDecision.rejected(
        "job size (9 node(s), 9 core(s)) is greater than max resources limits configured for "
        "association (8 node(s), 64 core(s))"
    )
    assert check_job(site, amy(queue="big", nodes=11), LiveJobs()).message == (
        "job size (11 node(s)) is greater than max resources limit configured for queue "
        "(10 node(s))"
    )
    assert check_job(site, amy(), LiveJobs(active=4)).message == "user has max active jobs"
    assert check_job(site, amy(project="nope"), LiveJobs()).message == (
        'project "nope" not valid for user; valid projects for user: climate,*'
    )


def test_soft_limits_hold_on_the_live_jobs_given(site: Session) -> None:
    held = check_job(site, amy(), LiveJobs(running=2))
    assert (held.status, held.dependencies) == ("held", ("max-running-jobs-user-limit",))
    # The queue counters count in the checked job's queue only.
    in_big = check_job(site, amy(queue="big"), LiveJobs(queue_running=2))
    assert in_big.dependencies == ("max-run-jobs-queue",)
    assert check_job(site, amy(queue="gold"), LiveJobs(queue_running=2)).status == "accepted"


def test_an_unknown_queue_passes_until_the_config_denies_it(site: Session) -> None:
    assert check_job(site, amy(queue="elsewhere"), LiveJobs()).status == "accepted"
    change(site, lambda s, st: s.edit_config(st, [("deny_unknown_queues", "true")]))
    assert check_job(site, amy(queue="elsewhere"), LiveJobs()).message == (
        'queue "elsewhere" is unknown to flux-accounting and deny-unknown-queues is enabled'
    )


def test_the_limits_are_those_in_force_at_as_of(site: Session) -> None:
    site.set_now(T0 + 100)
    change(site, lambda s, st: s.edit_user(st, "amy", "A", {"max_nodes": 16}))
    nine_nodes = amy(nodes=9, cores=9)
    assert check_job(site, nine_nodes, LiveJobs()).status == "accepted"
    then = check_job(site, nine_nodes, LiveJobs(), as_of=AsOf(absolute=T0 + 50))
    assert then.status == "rejected"


def test_bad_input_is_refused_before_reading(site: Session) -> None:
    with pytest.raises(InvalidValue, match=r"^invalid --queue-sched-cores: -1 \(must be >= 0\)$"):
        check_job(site, amy(), LiveJobs(queue_sched_cores=-1))
    with pytest.raises(NotFound, match="user nobody not found in association_table"):
        check_job(site, JobToCheck("nobody"), LiveJobs())
    with pytest.raises(NotFound, match="user amy not found in bank root"):
        check_job(site, amy(bank="root"), LiveJobs())
