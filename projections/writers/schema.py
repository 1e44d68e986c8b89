"""Read-model tables, named and laid out like flux-accounting's so its users' SQL carries over.

Only portable SQL (SQLite >= 3.24 and PostgreSQL): the same statements run on both stores.
Bump READ_MODEL_VERSION (projections.writers.tracking) when a table changes: opening a ledger then
rebuilds the read models. A change of indexes alone is a step instead
(projections.writers.runner.index_steps): opening a ledger runs its statements, without a rebuild.
"""

from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.flux_accounting.columns import (
    ASSOCIATION_COLUMNS,
    BANK_COLUMNS,
    CONFIG_COLUMNS,
    FACTOR_COLUMNS,
    PROJECT_COLUMNS,
    QUEUE_COLUMNS,
)
from projections.writers.tracking import READ_MODEL_VERSION

TABLES: dict[str, str] = {
    "projection_tracking": """
        CREATE TABLE IF NOT EXISTS projection_tracking (
            name TEXT PRIMARY KEY,
            position BIGINT NOT NULL
        )""",
    "bank_table": """
        CREATE TABLE IF NOT EXISTS bank_table (
            bank_id INTEGER NOT NULL,
            bank TEXT PRIMARY KEY,
            active INTEGER NOT NULL,
            parent_bank TEXT NOT NULL,
            shares BIGINT NOT NULL,
            job_usage DOUBLE PRECISION NOT NULL DEFAULT 0.0,
            priority DOUBLE PRECISION NOT NULL,
            ignore_older_than BIGINT NOT NULL DEFAULT 0
        )""",
    "association_table": f"""
        CREATE TABLE IF NOT EXISTS association_table (
            creation_time BIGINT NOT NULL,
            mod_time BIGINT NOT NULL,
            active INTEGER NOT NULL,
            username TEXT NOT NULL,
            userid BIGINT NOT NULL,
            bank TEXT NOT NULL,
            default_bank TEXT NOT NULL,
            shares BIGINT NOT NULL,
            job_usage DOUBLE PRECISION NOT NULL DEFAULT 0.0,
            fairshare DOUBLE PRECISION NOT NULL DEFAULT {NEW_ASSOCIATION_FAIRSHARE},
            max_running_jobs BIGINT NOT NULL,
            max_active_jobs BIGINT NOT NULL,
            max_nodes BIGINT NOT NULL,
            max_cores BIGINT NOT NULL,
            queues TEXT NOT NULL,
            projects TEXT NOT NULL,
            default_project TEXT NOT NULL,
            max_sched_jobs BIGINT NOT NULL,
            ignore_older_than DOUBLE PRECISION NOT NULL DEFAULT 0,
            qos TEXT NOT NULL DEFAULT '',
            default_qos TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (username, bank)
        )""",
    "queue_table": """
        CREATE TABLE IF NOT EXISTS queue_table (
            queue TEXT PRIMARY KEY,
            min_nodes_per_job BIGINT NOT NULL,
            max_nodes_per_job BIGINT NOT NULL,
            max_time_per_job BIGINT NOT NULL,
            priority BIGINT NOT NULL,
            max_running_jobs BIGINT NOT NULL,
            max_nodes_per_assoc BIGINT NOT NULL,
            max_sched_jobs BIGINT NOT NULL,
            max_sched_nodes_per_assoc BIGINT NOT NULL,
            max_sched_cores_per_assoc BIGINT NOT NULL,
            max_nodes BIGINT NOT NULL,
            max_cores BIGINT NOT NULL,
            billing_weights TEXT NOT NULL DEFAULT '',
            priority_job_factor BIGINT NOT NULL DEFAULT 1,
            priority_tier BIGINT NOT NULL DEFAULT 1,
            total_nodes BIGINT NOT NULL DEFAULT 0,
            total_cpus BIGINT NOT NULL DEFAULT 0,
            total_tres TEXT NOT NULL DEFAULT ''
        )""",
    # Slurm's QOS (sacctmgr's columns, named as our options are).
    "qos_table": """
        CREATE TABLE IF NOT EXISTS qos_table (
            qos TEXT PRIMARY KEY,
            priority BIGINT NOT NULL,
            usage_factor DOUBLE PRECISION NOT NULL,
            flags TEXT NOT NULL,
            description TEXT NOT NULL
        )""",
    "project_table": """
        CREATE TABLE IF NOT EXISTS project_table (
            project_id INTEGER NOT NULL,
            project TEXT PRIMARY KEY,
            usage DOUBLE PRECISION NOT NULL DEFAULT 0.0
        )""",
    "priority_factor_weight_table": """
        CREATE TABLE IF NOT EXISTS priority_factor_weight_table (
            factor TEXT PRIMARY KEY,
            weight BIGINT NOT NULL
        )""",
    # One row per event: time -> log position, the Site version in force, and the kind
    # (as-of queries find "the fair-share snapshot in force at T" here).
    "log_index": """
        CREATE TABLE IF NOT EXISTS log_index (
            position BIGINT PRIMARY KEY,
            at DOUBLE PRECISION NOT NULL,
            kind TEXT NOT NULL,
            site_version BIGINT NOT NULL
        )""",
    "config_table": """
        CREATE TABLE IF NOT EXISTS config_table (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
}

INDEXES: list[str] = [
    "CREATE INDEX IF NOT EXISTS association_bank_idx ON association_table (bank)",
    "CREATE INDEX IF NOT EXISTS bank_parent_idx ON bank_table (parent_bank)",
    "CREATE INDEX IF NOT EXISTS log_index_at_idx ON log_index (at)",
    "CREATE INDEX IF NOT EXISTS log_index_kind_idx ON log_index (kind, position)",
]

QOS_COLUMNS = ["qos", "priority", "usage_factor", "flags", "description"]
# An association's Slurm QOS columns, beyond flux-accounting's association_table.
ASSOCIATION_QOS_COLUMNS = ["qos", "default_qos"]

# Column orders as flux-accounting's tables have them (its `--fields`, `-o` and JSON keys):
# one definition, shared with the importer and export-db.
__all__ = [
    "ASSOCIATION_COLUMNS",
    "ASSOCIATION_QOS_COLUMNS",
    "BANK_COLUMNS",
    "CONFIG_COLUMNS",
    "FACTOR_COLUMNS",
    "INDEXES",
    "PROJECT_COLUMNS",
    "QOS_COLUMNS",
    "QUEUE_COLUMNS",
    "READ_MODEL_VERSION",
    "TABLES",
]
