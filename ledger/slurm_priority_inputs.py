"""What Slurm's multifactor priority (ledger.slurm_priority) is given, from a ledger's site.

Pure: it reads the site's config, factor weights, queues and QOS as plain values, so that the
`priority` command, `sprio`, explain-job and as-of replays build the same inputs.

* The weights are the factors of a Slurm site (ledger.state.SLURM_FACTOR_DEFAULTS) and
  `priority_weight_tres`; `priority_max_age`, `priority_favor_small` and `priority_flags` the
  rest of PriorityConfig (the algorithm key stands for FAIR_TREE / NO_FAIR_TREE).
* A queue is a partition: PriorityJobFactor, PriorityTier and its totals (`node`, `cpu`, then
  `total_tres`) as the TRES factors' denominators; its MaxTime is not modelled, so a job without
  a time limit under SMALL_RELATIVE_TO_TIME counts as UNLIMITED, as in a partition without one.
* The cluster's size for the job-size factor is `cluster_nodes`/`cluster_cpus` when set (import
  -slurm --conf sets them counting every node once), else the sum over the queues, which is the
  same when no node is in two partitions.
* An association's Priority is its bank's priority, as Slurm's user associations inherit their
  account's at creation; a Slurm Priority is a whole number >= 0, so a fraction is truncated and
  a negative priority (which flux-accounting's banks allow) counts as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ledger.site_config import (
    ALGORITHM_KEY,
    CLASSIC,
    CLUSTER_CPUS_KEY,
    CLUSTER_NODES_KEY,
    CONFIG_DEFAULTS,
    FAVOR_SMALL_KEY,
    MAX_AGE_KEY,
    PRIORITY_FLAGS_KEY,
    SLURM_FACTOR_DEFAULTS,
    TRES_WEIGHTS_KEY,
    csv_items,
)
from ledger.slurm_priority import (
    UINT32_MAX,
    ClusterSize,
    PartitionInfo,
    PriorityConfig,
    PriorityWeights,
    QosInfo,
    parse_priority_flags,
    parse_tres_weights,
)


@dataclass(frozen=True)
class SlurmPriorityInputs:
    """Everything a job's priority depends on besides the job and its fair-share."""

    config: PriorityConfig
    partitions: tuple[PartitionInfo, ...]
    qos: tuple[QosInfo, ...]
    cluster: ClusterSize
    # bank -> its Priority as Slurm reads it; the largest is the ASSOC factor's denominator.
    assoc_priorities: Mapping[str, int]

    @property
    def max_assoc_priority(self) -> int:
        return max(self.assoc_priorities.values(), default=0)


def priority_config(config: Mapping[str, str], factors: Mapping[str, int]) -> PriorityConfig:
    """PriorityConfig from the site's config (missing keys at their defaults) and weights."""

    def setting(key: str) -> str:
        return config.get(key, CONFIG_DEFAULTS[key])

    weight = {
        name: int(factors.get(name, default)) for name, default in SLURM_FACTOR_DEFAULTS.items()
    }
    words = csv_items(setting(PRIORITY_FLAGS_KEY))
    if config.get(ALGORITHM_KEY) == CLASSIC:
        words.append("NO_FAIR_TREE")
    return PriorityConfig(
        weights=PriorityWeights(
            age=weight["age"],
            assoc=weight["assoc"],
            fairshare=weight["fairshare"],
            job_size=weight["jobsize"],
            partition=weight["partition"],
            qos=weight["qos"],
            tres=parse_tres_weights(setting(TRES_WEIGHTS_KEY)),
        ),
        max_age=int(setting(MAX_AGE_KEY)),
        favor_small=setting(FAVOR_SMALL_KEY) == "YES",
        flags=parse_priority_flags(",".join(words)),
    )


def tres_totals(row: Mapping[str, Any]) -> dict[str, int]:
    """A queue's TRES totals keyed as the priority keys them: node, cpu, then total_tres."""
    totals = {"node": int(row["total_nodes"]), "cpu": int(row["total_cpus"])}
    for item in csv_items(str(row["total_tres"])):
        name, _, count = item.partition("=")
        totals[name] = int(count)
    return {name: count for name, count in totals.items() if count}


def partition_info(row: Mapping[str, Any]) -> PartitionInfo:
    return PartitionInfo(
        name=str(row["queue"]),
        priority_job_factor=int(row["priority_job_factor"]),
        priority_tier=int(row["priority_tier"]),
        tres_totals=tres_totals(row),
    )


def cluster_size(config: Mapping[str, str], partitions: Iterable[Mapping[str, Any]]) -> ClusterSize:
    rows = list(partitions)
    nodes = int(config.get(CLUSTER_NODES_KEY, "0")) or sum(int(r["total_nodes"]) for r in rows)
    cpus = int(config.get(CLUSTER_CPUS_KEY, "0")) or sum(int(r["total_cpus"]) for r in rows)
    return ClusterSize(nodes=min(nodes, 2**31 - 1), cpus=min(cpus, UINT32_MAX))


def assoc_priority(bank_priority: float) -> int:
    """A bank's priority as Slurm's association Priority: whole, >= 0, at most uint32 − 2."""
    if not math.isfinite(bank_priority) or bank_priority <= 0:
        return 0
    return min(int(bank_priority), UINT32_MAX - 1)


def slurm_priority_inputs(
    config: Mapping[str, str],
    factors: Mapping[str, int],
    partitions: Iterable[Mapping[str, Any]],
    qos: Iterable[Mapping[str, Any]],
    bank_priorities: Mapping[str, float],
) -> SlurmPriorityInputs:
    """The inputs from rows as the read models hold them (queue_table's partition fields,
    qos_table, bank priorities)."""
    rows = list(partitions)
    return SlurmPriorityInputs(
        config=priority_config(config, factors),
        partitions=tuple(partition_info(r) for r in rows),
        qos=tuple(
            QosInfo(
                name=str(q["qos"]),
                priority=int(q["priority"]),
                usage_factor=float(q["usage_factor"]),
                flags=tuple(csv_items(str(q["flags"]))),
            )
            for q in qos
        ),
        cluster=cluster_size(config, rows),
        assoc_priorities={bank: assoc_priority(p) for bank, p in bank_priorities.items()},
    )
