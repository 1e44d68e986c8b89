"""A job's billing (Slurm's billable TRES) fixed when it is recorded: the `tres` a record may
carry, the queue's billing weights and the billing flags in force (pure, the Site in memory)."""

from __future__ import annotations

from typing import Any

import pytest

import ledger.jobs as jobs_module
from ledger.errors import InvalidValue
from ledger.ingest import job_billing, to_record
from ledger.jobs import JobRecord, validate_job
from ledger.site_usage import record_billing
from tests.unit.site_events import given, queue, refused, then

BASE: dict[str, Any] = {
    "id": 7,
    "username": "amy",
    "t_run": 1000.0,
    "t_inactive": 4600.0,
    "nnodes": 1,
    "ncores": 8,
}
TRES = {"cpu": 8, "mem": 16384, "node": 1, "gres/gpu": 2}
WEIGHTS = "CPU=1.0,Mem=0.25G,GRES/gpu=2.0"


def job(**extra: Any) -> JobRecord:
    return validate_job({**BASE, **extra})


def edit(*pairs: tuple[str, str]):  # type: ignore[no-untyped-def]
    return lambda s, st: s.edit_config(st, list(pairs))


def weighted(name: str = "batch", text: str = WEIGHTS):  # type: ignore[no-untyped-def]
    return lambda s, st: s.add_queue(st, name, {}, text)


# --- the record's tres ---------------------------------------------------------------------------
def test_tres_is_kept_lower_cased_with_numbers() -> None:
    for _ in range(2):  # the second time, from the names already accepted
        assert job(tres={"CPU": 8, "Mem": 1536.5, "gres/gpu": 2}).tres == {
            "cpu": 8,
            "mem": 1536.5,
            "gres/gpu": 2,
        }
    # Two spellings of one name add up, however many of them were seen before.
    assert job(tres={"CPU": 2, "cpu": 1}).tres == {"cpu": 3}


def test_tres_names_past_the_remembered_ones_are_checked_and_keyed_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobs_module, "_TRES_KEYS", {})
    monkeypatch.setattr(jobs_module, "TRES_NAMES_KEPT", 1)
    assert job(tres={"CPU": 1, "Mem": 2, "Node": 1}).tres == {"cpu": 1, "mem": 2, "node": 1}
    assert jobs_module._TRES_KEYS == {"CPU": "cpu"}
    with pytest.raises(InvalidValue, match='TRES name " mem" is not a name'):
        job(tres={"CPU": 1, " mem": 2})


@pytest.mark.parametrize(
    ("tres", "fragment"),
    [
        ({"cpu": -1}, "cpu: -1 is not a count >= 0"),
        ({"cpu": True}, "cpu: true is not a count >= 0"),
        ({"cpu": "8"}, 'cpu: "8" is not a count >= 0'),
        ({"mem": float("inf")}, "mem: Infinity is not a count >= 0"),
        ({" cpu": 1}, 'TRES name " cpu" is not a name'),
        ({"cpu": 2**31}, "cpu: 2147483648 is more than 2147483647"),
        ([1, 2], "tres"),
    ],
)
def test_bad_tres_is_refused_naming_the_value(tres: Any, fragment: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        job(tres=tres)
    assert fragment in str(caught.value)


# --- billing at recording ---------------------------------------------------------------------
def test_no_weights_and_no_tres_is_the_cpus_and_nothing_is_stored() -> None:
    state = given(queue("batch")).state
    assert job_billing(job(queue="batch"), state) is None
    record = to_record(job(queue="batch"), 1.0, 0.0, 0.0, None)
    assert "billing" not in record
    assert record_billing(record) == 8.0  # the continuous model reads ncores


def test_no_weights_with_tres_is_the_tres_cpus() -> None:
    state = given(queue("batch")).state
    assert job_billing(job(queue="batch", tres={**TRES, "cpu": 6}), state) == 6.0


def test_sum_of_weighted_tres_by_default() -> None:
    # Slurm's TRESBillingWeights: mem=0.25G on 16 GiB is 4; 8 CPUs at 1.0 and 2 GPUs at 2.0:
    # 8 + 4 + 4
    state = given(weighted()).state
    assert job_billing(job(queue="batch", tres=TRES), state) == 16.0


def test_max_tres_and_max_tres_gres_flags() -> None:
    state = given(weighted(), edit(("priority_flags", "MAX_TRES"))).state
    assert job_billing(job(queue="batch", tres=TRES), state) == 8.0  # max(8, 4, 0, 4)
    state = given(weighted(), edit(("priority_flags", "MAX_TRES,MAX_TRES_GRES"))).state
    assert job_billing(job(queue="batch", tres=TRES), state) == 12.0  # 4 (gres) + max(8, 4, 0)


def test_a_flux_record_on_a_weighted_queue_is_priced_from_its_counts() -> None:
    state = given(weighted(text="CPU=0.5,Node=10,GRES/gpu=3")).state
    # 8 cores · 0.5 + 1 node · 10 + 2 GPUs · 3
    assert job_billing(job(queue="batch", ngpus=2), state) == 20.0


def test_the_billing_is_stored_and_is_not_part_of_what_the_job_said() -> None:
    from ledger.chain import record_digest

    record = to_record(job(queue="batch", tres=TRES), 1.0, 0.0, 0.0, 16.0)
    assert (record["billing"], record["tres"]) == (16.0, TRES)
    repriced = to_record(job(queue="batch", tres=TRES), 1.0, 0.0, 0.0, 8.0)
    assert record_digest(record) == record_digest(repriced)


def test_a_job_on_an_unknown_queue_bills_its_cpus() -> None:
    assert job_billing(job(queue="nowhere", tres=TRES), given().state) == 8.0


# --- the queue's weights ----------------------------------------------------------------------
def test_add_queue_records_the_weights_as_given() -> None:
    ((name, body),) = then(given(), weighted())
    assert name == "QueueAdded"
    assert body["fields"]["billing_weights"] == WEIGHTS


def test_edit_queue_changes_and_clears_the_weights() -> None:
    site = given(weighted())
    assert then(site, lambda s, st: s.edit_queue(st, "batch", {}, "CPU=2")) == [
        ("QueueEdited", {"queue": "batch", "changes": {"billing_weights": [WEIGHTS, "CPU=2"]}})
    ]
    assert then(site, lambda s, st: s.edit_queue(st, "batch", {}, "")) == [
        ("QueueEdited", {"queue": "batch", "changes": {"billing_weights": ["CPU=2", ""]}})
    ]


def test_a_malformed_weight_is_refused_with_one_line() -> None:
    assert refused(given(), weighted(text="CPU=1.0,Mem=lots"), InvalidValue) == (
        "TRESBillingWeights: bad weight 'Mem=lots': 'lots' is not a number"
    )
    assert refused(
        given(weighted()), lambda s, st: s.edit_queue(st, "batch", {}, "GPU"), InvalidValue
    ) == (
        "TRESBillingWeights: bad weight 'GPU': expected TRES=weight, e.g. CPU=1.0 or GRES/gpu=2.0"
    )


def test_a_counted_tres_is_not_mistaken_for_an_equal_one_of_another_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TRES already counted are kept by their items: 1, 1.0 and True are equal keys, but not
    the same count (an int and a float are stored as they came; a bool is refused)."""
    monkeypatch.setattr(jobs_module, "_TRES_COUNTED", {})
    first = job(tres={"CPU": 1}).tres
    assert first is not None and repr(first) == "{'cpu': 1}"
    first["cpu"] = 99  # each record's own copy
    assert repr(job(tres={"CPU": 1}).tres) == "{'cpu': 1}"
    assert repr(job(tres={"CPU": 1.0}).tres) == "{'cpu': 1.0}"
    with pytest.raises(InvalidValue, match="CPU: true is not a count >= 0"):
        job(tres={"CPU": True})
    assert list(jobs_module._TRES_COUNTED) == [(("CPU", 1),)]


def test_tres_past_the_counted_ones_are_counted_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_module, "_TRES_COUNTED", {})
    monkeypatch.setattr(jobs_module, "TRES_COUNTED_KEPT", 1)
    assert job(tres={"cpu": 2, "Mem": 5}).tres == {"cpu": 2, "mem": 5}
    assert job(tres={"cpu": 3}).tres == {"cpu": 3}
    assert job(tres={"cpu": 2, "Mem": 5}).tres == {"cpu": 2, "mem": 5}
    assert list(jobs_module._TRES_COUNTED) == [(("cpu", 2), ("Mem", 5))]
