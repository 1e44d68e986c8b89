"""flux-accounting's tables as its schema lays them out: the columns of each table export-db
writes, the order they are loaded in, and the defaults of its config table and userid column.

Apart from the rows' checks (ledger.flux_accounting.tables) so that a small read, which names
these columns but checks no row, does not build the checks' dataclasses as it starts.
"""

from __future__ import annotations

from ledger.site_config import QUEUE_DEFAULTS

# The layout of flux-accounting's current schema (v38), the columns export-db writes.
BANK_COLUMNS = [
    "bank_id",
    "bank",
    "active",
    "parent_bank",
    "shares",
    "job_usage",
    "priority",
    "ignore_older_than",
]
ASSOCIATION_COLUMNS = [
    "creation_time",
    "mod_time",
    "active",
    "username",
    "userid",
    "bank",
    "default_bank",
    "shares",
    "job_usage",
    "fairshare",
    "max_running_jobs",
    "max_active_jobs",
    "max_nodes",
    "max_cores",
    "queues",
    "projects",
    "default_project",
    "max_sched_jobs",
]
QUEUE_COLUMNS = ["queue", *QUEUE_DEFAULTS]
PROJECT_COLUMNS = ["project_id", "project", "usage"]
FACTOR_COLUMNS = ["factor", "weight"]
CONFIG_COLUMNS = ["key", "value"]
TABLE_COLUMNS: dict[str, list[str]] = {
    "bank_table": BANK_COLUMNS,
    "association_table": ASSOCIATION_COLUMNS,
    "queue_table": QUEUE_COLUMNS,
    "project_table": PROJECT_COLUMNS,
    "priority_factor_weight_table": FACTOR_COLUMNS,
    "config_table": CONFIG_COLUMNS,
}
# Dependency order: a row may name objects of the tables before its own.
TABLE_ORDER = [
    "config_table",
    "priority_factor_weight_table",
    "queue_table",
    "project_table",
    "bank_table",
    "association_table",
]

# flux-accounting's defaults for its config_table (create-db), used when a schema predates it.
FLUX_CONFIG_DEFAULTS: dict[str, str] = {
    "priority_usage_reset_period": "2419200",
    "priority_decay_half_life": "604800",
    "decay_factor": "0.5",
    "node_weight": "1.0",
    "core_weight": "0.0",
    "gpu_weight": "0.0",
    "deny_unknown_queues": "false",
}
DEFAULT_USERID = 65534  # association_table.userid's column default
