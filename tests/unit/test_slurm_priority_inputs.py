"""What Slurm's formula is given from a ledger's rows (ledger.slurm_priority_inputs)."""

from __future__ import annotations

from typing import Any

from ledger.slurm_priority import ClusterSize, PriorityFlags
from ledger.slurm_priority_inputs import (
    assoc_priority,
    cluster_size,
    priority_config,
    slurm_priority_inputs,
    tres_totals,
)


def queue_row(name: str, nodes: int = 0, cpus: int = 0, tres: str = "", **more: Any) -> dict:
    row = {
        "queue": name,
        "billing_weights": "",
        "priority_job_factor": 1,
        "priority_tier": 1,
        "total_nodes": nodes,
        "total_cpus": cpus,
        "total_tres": tres,
    }
    row.update(more)
    return row


def test_unset_settings_are_slurms_defaults() -> None:
    config = priority_config({}, {})
    assert config.max_age == 604800  # 7-0
    assert config.favor_small is False
    assert config.flags == PriorityFlags.FAIR_TREE
    assert config.weights.tres == ()
    assert (config.weights.age, config.weights.job_size) == (0, 0)
    assert config.weights.fairshare == 100000  # shared with flux-accounting's default


def test_settings_and_weights_are_read_from_the_config_and_factors() -> None:
    config = priority_config(
        {
            "fairshare_algorithm": "classic",
            "priority_weight_tres": "CPU=500,Mem=1G",
            "priority_max_age": "3600",
            "priority_favor_small": "YES",
            "priority_flags": "NO_NORMAL_QOS,ACCRUE_ALWAYS",
        },
        {"age": 1, "assoc": 2, "fairshare": 3, "jobsize": 4, "partition": 5, "qos": 6},
    )
    weights = config.weights
    assert (weights.age, weights.assoc, weights.fairshare) == (1, 2, 3)
    assert (weights.job_size, weights.partition, weights.qos) == (4, 5, 6)
    assert weights.tres == (("cpu", 500.0), ("mem", 1 / 1024))  # 1 per GiB = 1/1024 per MiB
    assert (config.max_age, config.favor_small) == (3600, True)
    # classic is Slurm's NO_FAIR_TREE
    assert config.flags == PriorityFlags.NO_NORMAL_QOS | PriorityFlags.ACCRUE_ALWAYS


def test_a_queues_totals_are_its_nodes_cpus_and_other_tres() -> None:
    row = queue_row("gpu", nodes=8, cpus=512, tres="mem=2048000,gres/gpu=32")
    assert tres_totals(row) == {"node": 8, "cpu": 512, "mem": 2048000, "gres/gpu": 32}
    assert tres_totals(queue_row("empty")) == {}


def test_the_cluster_is_the_configured_size_else_the_queues_sum() -> None:
    rows = [queue_row("a", 10, 320), queue_row("b", 4, 128)]
    assert cluster_size({}, rows) == ClusterSize(nodes=14, cpus=448)
    # a node in two partitions counts once when the site says how big it is
    assert cluster_size({"cluster_nodes": "10", "cluster_cpus": "320"}, rows) == ClusterSize(
        nodes=10, cpus=320
    )


def test_a_banks_priority_as_slurms_association_priority() -> None:
    assert assoc_priority(20.9) == 20
    assert assoc_priority(-3.0) == 0  # flux-accounting allows negative bank priorities
    assert assoc_priority(float("nan")) == 0
    assert assoc_priority(1e12) == 4294967294


def test_inputs_gather_partitions_qos_and_the_largest_association_priority() -> None:
    inputs = slurm_priority_inputs(
        {},
        {},
        [queue_row("batch", 2, 64, priority_job_factor=10, priority_tier=3)],
        [{"qos": "high", "priority": 100, "usage_factor": 2.0, "flags": "NoDecay"}],
        {"root": 0.0, "physics": 20.0, "chem": 5.5},
    )
    (part,) = inputs.partitions
    assert (part.name, part.priority_job_factor, part.priority_tier) == ("batch", 10, 3)
    (qos,) = inputs.qos
    assert (qos.name, qos.priority, qos.usage_factor, qos.flags) == ("high", 100, 2.0, ("NoDecay",))
    assert inputs.assoc_priorities == {"root": 0, "physics": 20, "chem": 5}
    assert inputs.max_assoc_priority == 20
