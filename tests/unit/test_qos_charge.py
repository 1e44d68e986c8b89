"""A job's QOS UsageFactor scales its charge and billing when it is recorded (research
slurm.md §3.3: billable × UsageFactor; 0 adds no usage; only the job's own QOS counts): pure,
the Site in memory. Expected values are worked by hand beside each assertion."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.chain import record_digest
from ledger.errors import InvalidValue
from ledger.ingest import job_billing, to_record
from ledger.jobs import JobRecord, validate_job
from ledger.site_usage import record_billing
from tests.unit.site_events import Command, given

# One node, 8 cores, 3600 s: under the default weights (node 1, core 0, GPU 0) its charge is
# 1 · 3600 = 3600 node-seconds, and its billing without weights its 8 CPUs.
BASE: dict[str, Any] = {
    "id": 7,
    "username": "amy",
    "t_run": 1000.0,
    "t_inactive": 4600.0,
    "nnodes": 1,
    "ncores": 8,
}
DEFAULT_WEIGHTS = (1.0, 0.0, 0.0)


def job(**extra: Any) -> JobRecord:
    return validate_job({**BASE, **extra})


def qos(name: str, factor: float) -> Command:
    return lambda s, st: s.add_qos(st, name, {"usage_factor": factor})


def recorded(record_job: JobRecord, *steps: Command) -> dict[str, Any]:
    state = given(*steps).state
    billing = job_billing(record_job, state)
    return to_record(record_job, *DEFAULT_WEIGHTS, billing, state.usage_factor(record_job.qos))


def test_the_record_names_its_qos() -> None:
    assert job(qos="high").qos == "high"
    assert recorded(job(qos="high"))["qos"] == "high"
    assert "extra" not in recorded(job(qos="high"))


def test_a_factor_scales_the_charge_and_the_billing() -> None:
    record = recorded(job(qos="high"), qos("high", 2.5))
    assert record["charge"] == 9000.0  # 3600 · 2.5
    assert record["billing"] == 20.0  # 8 CPUs · 2.5
    assert record["usage_factor"] == 2.5


def test_factor_zero_charges_nothing() -> None:
    record = recorded(job(qos="standby"), qos("standby", 0.0))
    assert (record["charge"], record["billing"]) == (0.0, 0.0)


@pytest.mark.parametrize("named", [None, "unknown"])
def test_no_qos_or_one_the_ledger_does_not_know_is_factor_one(named: str | None) -> None:
    record = recorded(job(qos=named), qos("high", 2.5))
    assert record["charge"] == 3600.0
    assert "billing" not in record and "usage_factor" not in record
    assert record_billing(record) == 8.0


def test_the_factor_multiplies_the_weighted_billing() -> None:
    # CPU=1.0,Mem=0.25G,GRES/gpu=2.0 on 8 CPUs, 16 GiB, 2 GPUs: 8 + 4 + 4 = 16;
    # times 0.5: 8.
    weights: Command = lambda s, st: s.add_queue(st, "batch", {}, "CPU=1.0,Mem=0.25G,GRES/gpu=2.0")  # noqa: E731
    tres = {"cpu": 8, "mem": 16384, "node": 1, "gres/gpu": 2}
    record = recorded(job(queue="batch", tres=tres, qos="low"), weights, qos("low", 0.5))
    assert record["billing"] == 8.0
    assert record["charge"] == 1800.0  # 3600 · 0.5


def test_a_charge_the_factor_takes_past_the_bound_is_refused() -> None:
    # 2000 nodes for 1e6 s is 2e9 node-seconds; times 1e6 it is 2e15, past 1e12.
    big = job(nnodes=2000, ncores=2000, t_run=0.0, t_inactive=1e6, qos="huge")
    with pytest.raises(InvalidValue) as caught:
        recorded(big, qos("huge", 1e6))
    assert "is out of range (0..1e+12)" in str(caught.value)


def test_the_factor_is_not_part_of_what_the_job_said() -> None:
    # The same sacct line read again after the factor changed is the same job, not a conflict.
    before = recorded(job(qos="high"), qos("high", 2.5))
    after = recorded(job(qos="high"), qos("high", 4.0))
    assert before["charge"] != after["charge"]
    assert record_digest(before) == record_digest(after)


def test_a_record_that_kept_its_qos_under_extra_says_the_same() -> None:
    # Recorded before the record named the QOS (sacct ingest kept it as an extra field).
    now = recorded(job(qos="high"))
    then = {k: v for k, v in now.items() if k != "qos"}
    then["extra"] = {"qos": "high"}
    assert record_digest(now) == record_digest(then)
