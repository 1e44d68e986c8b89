"""The site's configuration as the ledger keeps it: the config keys and their defaults, the
defaults of flux-accounting's association and queue columns, the fair-share algorithms and usage
models, and how a config value reads.

Apart from the state's dataclasses (ledger.state) so that a small read, which needs these names
but no state, does not build the dataclasses as it starts (about 10 ms on a 2-core machine).
"""

from __future__ import annotations

from typing import Any

from ledger.limit_fields import UNLIMITED
from ledger.usage import DEFAULT_HALF_LIFE as DEFAULT_PERIODS_HALF_LIFE
from ledger.usage import DEFAULT_RESET_PERIOD as DEFAULT_PERIODS_RESET

# Defaults of flux-accounting's association_table and queue_table (its create_db.py).
ASSOCIATION_DEFAULTS: dict[str, Any] = {
    "shares": 1,
    "max_running_jobs": 5,
    "max_active_jobs": 7,
    "max_nodes": UNLIMITED,
    "max_cores": UNLIMITED,
    "queues": "",
    "projects": "*",
    "default_project": "*",
    "max_sched_jobs": UNLIMITED,
}
# A queue's Slurm TRESBillingWeights: a field beyond flux-accounting's queue_table, kept only
# when a queue has weights.
BILLING_WEIGHTS = "billing_weights"
# A queue's Slurm partition fields for multifactor priority (research slurm.md §4.2), beyond
# flux-accounting's queue_table and kept only when given: PriorityJobFactor, PriorityTier, and the
# partition's size (nodes, CPUs, and other TRES totals as `mem=256000,gres/gpu=8`, mem in MiB),
# the denominators of the TRES factors.
PARTITION_DEFAULTS: dict[str, int | str] = {
    "priority_job_factor": 1,
    "priority_tier": 1,
    "total_nodes": 0,
    "total_cpus": 0,
    "total_tres": "",
}

QUEUE_DEFAULTS: dict[str, int] = {
    "min_nodes_per_job": 1,
    "max_nodes_per_job": 1,
    "max_time_per_job": 60,
    "priority": 0,
    "max_running_jobs": 100,
    "max_nodes_per_assoc": UNLIMITED,
    "max_sched_jobs": UNLIMITED,
    "max_sched_nodes_per_assoc": UNLIMITED,
    "max_sched_cores_per_assoc": UNLIMITED,
    "max_nodes": UNLIMITED,
    "max_cores": UNLIMITED,
}
# A Slurm QOS (sacctmgr's): priority for the multifactor QOS factor, UsageFactor scaling the
# charge of its jobs (research slurm.md §3.3), Flags and a Description.
QOS_DEFAULTS: dict[str, Any] = {"priority": 0, "usage_factor": 1.0, "flags": "", "description": ""}
# Slurm's QOS flag names (sacctmgr), spelled as Slurm prints them; input is matched in any case.
QOS_FLAGS = (
    "DenyOnLimit",
    "EnforceUsageThreshold",
    "NoDecay",
    "NoReserve",
    "OverPartQOS",
    "PartitionMaxNodes",
    "PartitionMinNodes",
    "PartitionTimeLimit",
    "Relative",
    "RequiresReservation",
    "UsageFactorSafe",
)
FACTOR_DEFAULTS: dict[str, int] = {"fairshare": 100000, "queue": 10000, "bank": 0, "urgency": 1000}
# Slurm's PriorityWeight* (slurm.md §4.1: uint32, 0 by default), the factors of a Slurm site. The
# fair-share weight is one fact for both families: its default stays flux-accounting's.
SLURM_FACTOR_DEFAULTS: dict[str, int] = {
    "age": 0,
    "assoc": 0,
    "fairshare": FACTOR_DEFAULTS["fairshare"],
    "jobsize": 0,
    "partition": 0,
    "qos": 0,
}
CONFIG_KEYS = (
    "priority_usage_reset_period",
    "priority_decay_half_life",
    "decay_factor",
    "node_weight",
    "core_weight",
    "gpu_weight",
    "deny_unknown_queues",
)
# fairledger's own config keys, with the value in force until edit-config records one. Not
# recorded at create-db (ledgers made before a key existed read the same default), not in
# flux-accounting's config_table, and none triggers a usage rebin.
TIMEZONE_KEY = "timezone"  # the IANA zone of a time typed without one (ledger.clock)
DEFAULT_TIMEZONE = "UTC"
# The fair-share policy (docs/semantics.md, "The fair-share policy"): which algorithm ranks
# associations, how usage is counted, classic's dampening and Slurm's PriorityFlags (the
# billing flags for now).
ALGORITHM_KEY = "fairshare_algorithm"
WEIGHTED_WALK, FAIR_TREE, CLASSIC = "weighted-walk", "fair-tree", "classic"
ALGORITHMS = (WEIGHTED_WALK, FAIR_TREE, CLASSIC)
USAGE_MODEL_KEY = "usage_model"
PERIODS, CONTINUOUS = "periods", "continuous"
USAGE_MODELS = (PERIODS, CONTINUOUS)
DAMPENING_KEY = "fairshare_dampening_factor"
PRIORITY_FLAGS_KEY = "priority_flags"
# Slurm's multifactor settings beyond the weights (research slurm.md §4): PriorityWeightTRES,
# PriorityMaxAge (seconds), PriorityFavorSmall, and the cluster's size for the job-size factor
# (every node counted once; 0: the sum over the queues' totals).
TRES_WEIGHTS_KEY = "priority_weight_tres"
MAX_AGE_KEY = "priority_max_age"
FAVOR_SMALL_KEY = "priority_favor_small"
CLUSTER_NODES_KEY = "cluster_nodes"
CLUSTER_CPUS_KEY = "cluster_cpus"
RESET_PERIOD_KEY = "priority_usage_reset_period"
HALF_LIFE_KEY = "priority_decay_half_life"
CONFIG_DEFAULTS: dict[str, str] = {
    ALGORITHM_KEY: WEIGHTED_WALK,
    DAMPENING_KEY: "1",
    PRIORITY_FLAGS_KEY: "",
    TIMEZONE_KEY: DEFAULT_TIMEZONE,
    TRES_WEIGHTS_KEY: "",
    MAX_AGE_KEY: "604800",  # Slurm's default PriorityMaxAge, 7-0
    FAVOR_SMALL_KEY: "NO",
    CLUSTER_NODES_KEY: "0",
    CLUSTER_CPUS_KEY: "0",
}
# usage_model has no fixed default: unset, it follows the algorithm (default_usage_model).
EDITABLE_CONFIG_KEYS = (*CONFIG_KEYS, USAGE_MODEL_KEY, *CONFIG_DEFAULTS)


def default_usage_model(algorithm: str) -> str:
    """Slurm's algorithms count usage as Slurm does; flux-accounting's walk keeps its periods."""
    return PERIODS if algorithm == WEIGHTED_WALK else CONTINUOUS


def usage_model_of(config: dict[str, str]) -> str:
    """The usage model in force under `config`: the recorded one, else the algorithm's."""
    recorded = config.get(USAGE_MODEL_KEY)
    return recorded or default_usage_model(config.get(ALGORITHM_KEY, WEIGHTED_WALK))


def periods_half_life(config: dict[str, str]) -> float:
    """The periods model's half-life. 0 (no decay, the continuous model only) has no periods;
    the periods tables the projector keeps anyway are cut by flux-accounting's default."""
    half_life = float(config.get(HALF_LIFE_KEY, DEFAULT_PERIODS_HALF_LIFE))
    return half_life if half_life > 0 else DEFAULT_PERIODS_HALF_LIFE


def reset_period_seconds(config: dict[str, str]) -> float:
    """The periods model's reset period in seconds. A Slurm reset name (MONTHLY, ...) has no
    length in periods; the Site refuses it under the periods model, so the periods tables the
    projector keeps anyway (a switch back must find them current) use flux-accounting's
    default."""
    text = config.get(RESET_PERIOD_KEY, "")
    try:
        return float(text)
    except ValueError:
        return DEFAULT_PERIODS_RESET


def csv_items(text: str) -> list[str]:
    """The items of a comma list, as an association's `queues` and `projects` hold them:
    blanks around an item are dropped, and so are empty items ("a,,b " is a and b)."""
    return [item for item in (part.strip() for part in text.split(",")) if item]
