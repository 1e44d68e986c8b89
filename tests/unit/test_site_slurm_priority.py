"""A Slurm site's multifactor settings, in memory: given events, a command, then events or a
refusal. Partitions are queues with Slurm's PriorityJobFactor, PriorityTier and sizes; the
weights are Slurm's six PriorityWeight factors on a Slurm site and flux-accounting's four on a
Flux one; the remaining settings are config keys (research slurm.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import InvalidValue, LedgerError
from tests.unit.site_events import Command, given, refused, then

FLUX_QUEUE = {
    "min_nodes_per_job": 1,
    "max_nodes_per_job": 1,
    "max_time_per_job": 60,
    "priority": 0,
    "max_running_jobs": 100,
    "max_nodes_per_assoc": 2147483647,
    "max_sched_jobs": 2147483647,
    "max_sched_nodes_per_assoc": 2147483647,
    "max_sched_cores_per_assoc": 2147483647,
    "max_nodes": 2147483647,
    "max_cores": 2147483647,
}


def slurm_site() -> Command:
    return lambda s, st: s.edit_config(st, [("fairshare_algorithm", "fair-tree")])


def partition(name: str, **fields: Any) -> Command:
    return lambda s, st: s.add_queue(st, name, {}, None, fields)


def edit_partition(name: str, **fields: Any) -> Command:
    return lambda s, st: s.edit_queue(st, name, {}, None, fields)


def factor(name: str, weight: int) -> Command:
    return lambda s, st: s.edit_factor(st, name, weight)


def config(**pairs: str) -> Command:
    return lambda s, st: s.edit_config(st, list(pairs.items()))


def test_a_queue_without_partition_fields_records_what_flux_accountings_queues_record() -> None:
    assert then(given(), partition("batch")) == [
        ("QueueAdded", {"queue": "batch", "fields": FLUX_QUEUE})
    ]


def test_partition_fields_are_recorded_when_they_differ_from_slurms_defaults() -> None:
    command = partition(
        "gpu",
        priority_job_factor=10,
        priority_tier=1,  # Slurm's default: not recorded
        total_nodes=8,
        total_cpus=512,
        total_tres="Mem=2048000, GRES/gpu=32",
    )
    assert then(given(), command) == [
        (
            "QueueAdded",
            {
                "queue": "gpu",
                "fields": {
                    **FLUX_QUEUE,
                    "priority_job_factor": 10,
                    "total_nodes": 8,
                    "total_cpus": 512,
                    # TRES types keyed as Slurm compares them: lower-cased before the '/'
                    "total_tres": "mem=2048000,gres/gpu=32",
                },
            },
        )
    ]


def test_edit_queue_records_only_the_partition_fields_that_change() -> None:
    site = given(partition("gpu", priority_job_factor=10, total_tres="gres/gpu=4"))
    assert then(site, edit_partition("gpu", priority_job_factor=10, total_tres="")) == [
        ("QueueEdited", {"queue": "gpu", "changes": {"total_tres": ["gres/gpu=4", ""]}})
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"priority_job_factor": 65534}, "invalid priority-job-factor: 65534 (must be 0..65533)"),
        ({"priority_tier": -1}, "invalid priority-tier: -1 (must be 0..65533)"),
        ({"total_cpus": 2**32}, "invalid total-cpus: 4294967296 (must be 0..4294967295)"),
        ({"total_tres": "gpu"}, "invalid TRES total 'gpu' (use e.g. mem=256000,gres/gpu=8)"),
        (
            {"total_tres": "mem=1.5"},
            "invalid TRES total 'mem=1.5' (use e.g. mem=256000,gres/gpu=8)",
        ),
        (
            {"total_tres": "cpu=64"},
            "invalid TRES total 'cpu=64': a queue's cpu count is --total-cpus",
        ),
    ],
)
def test_bad_partition_fields_are_refused(fields: dict[str, Any], message: str) -> None:
    assert refused(given(), partition("p", **fields), InvalidValue) == message


def test_a_flux_site_weighs_flux_accountings_four_factors() -> None:
    message = refused(given(), factor("age", 1000), InvalidValue)
    assert message == (
        "factor age not found in priority_factor_weight_table; available factors are "
        "fairshare,queue,bank,urgency"
    )


def test_a_slurm_site_weighs_slurms_six_factors() -> None:
    site = given(slurm_site())
    assert then(site, factor("jobsize", 500)) == [
        ("FactorWeightChanged", {"factor": "jobsize", "old": 0, "new": 500})
    ]
    message = refused(site, factor("urgency", 1), InvalidValue)
    assert message == (
        "factor urgency not found in priority_factor_weight_table; available factors are "
        "age,assoc,fairshare,jobsize,partition,qos"
    )


def test_slurm_weights_are_uint32() -> None:
    site = given(slurm_site())
    assert refused(site, factor("qos", -1), InvalidValue) == (
        "invalid weight: -1 (Slurm's PriorityWeightQos must be >= 0)"
    )
    assert refused(site, factor("qos", 2**32), LedgerError).startswith("weight 4294967296")


def test_reset_factors_on_a_slurm_site_resets_slurms_weights() -> None:
    site = given(slurm_site(), factor("age", 10), factor("fairshare", 7))
    assert then(site, lambda s, st: s.reset_factors(st)) == [
        ("FactorWeightChanged", {"factor": "age", "old": 10, "new": 0}),
        ("FactorWeightChanged", {"factor": "fairshare", "old": 7, "new": 100000}),
    ]


def test_multifactor_settings_are_stored_in_one_form() -> None:
    site = given(slurm_site())
    recorded = then(
        site,
        config(
            priority_weight_tres="CPU=500,Mem=100,GRES/gpu=3000",
            priority_max_age="2d",
            priority_favor_small="yes",
            priority_flags="small_relative_to_time,NO_NORMAL_QOS,MAX_TRES",
            cluster_nodes="104",
            cluster_cpus="3328",
        ),
    )
    assert [(p["key"], p["old"], p["new"]) for _, p in recorded] == [
        ("priority_weight_tres", "", "CPU=500,Mem=100,GRES/gpu=3000"),
        ("priority_max_age", "604800", "172800"),
        ("priority_favor_small", "NO", "YES"),
        ("priority_flags", "", "SMALL_RELATIVE_TO_TIME,NO_NORMAL_QOS,MAX_TRES"),
        ("cluster_nodes", "0", "104"),
        ("cluster_cpus", "0", "3328"),
    ]


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (
            {"priority_weight_tres": "CPU=inf"},
            "invalid priority_weight_tres: invalid TRES weight 'CPU=inf' in 'CPU=inf'",
        ),
        (
            {"priority_max_age": "0.5"},
            "invalid priority_max_age: 0.5 (whole seconds, 0..4294967295)",
        ),
        (
            {"priority_flags": "INCR_ONLY,FAIR_TREE"},
            "invalid priority_flags: FAIR_TREE is chosen with fairshare_algorithm "
            "(weighted-walk, fair-tree, classic)",
        ),
        ({"cluster_nodes": "many"}, "invalid cluster_nodes: 'many' (must be a whole number >= 0)"),
    ],
)
def test_bad_multifactor_settings_are_refused(pairs: dict[str, str], message: str) -> None:
    assert refused(given(slurm_site()), config(**pairs), InvalidValue) == message
