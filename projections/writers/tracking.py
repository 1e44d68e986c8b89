"""The projector's bookmarks: projection_tracking, a number per name, read and moved in the
transaction that folds the log into the read models.

Apart from the projector so that a small read can check them (projections.queries.freshness)
without importing the projector and the domain under it: this module needs only a connection.
"""

from __future__ import annotations

from collections.abc import Mapping

from ledger.store.connections import Connection

# The last log position folded into the read models.
PROJECTION = "ledger"
# The Site aggregate's version they reflect.
SITE_VERSION = "ledger:site_version"
# The log position of the last usage update whose columns the read models hold: an
# update-usage's, an update-fshare's, or an idle update-fshare's repeat. A fold that meets an
# update-usage and, right after it, another update writes the usage once, at the second
# (runner._Folder.apply); so while a replay runs the row may name an earlier update than the
# live ledger's did, but once the fold ends it names the log's last update either way, and a
# rebuild gives the same row.
USAGE_WRITTEN = "ledger:usage_written"
# The jobs folded since the period totals were last copied (projections.writers.totals_snapshots):
# a count of jobs, not a log position.
JOBS_SINCE_TOTALS_SNAPSHOT = "ledger:jobs_since_totals_snapshot"
# The layout they were built with (READ_MODEL_VERSION).
READ_MODEL_KEY = "__read_model_version__"
# The read models' layout (projections.writers.schema's tables), here so that a small read checks
# it without importing the tables.
# 22: job_usage_bins holds each association's bins as bytes, each bin's binary64 in turn
# (projections.writers.bins), not as the JSON text of the list;
# 21: a fair-share checkpoint whose changes reach half the site is written whole
# (projections.writers.checkpoints), and a copy of the totals also holds the periods of the
# moments nearer to it than to the copy before (projections.writers.totals_snapshots): the rows
# a rebuild now writes, so that verify's comparison with a rebuild holds for a ledger the release
# before wrote;
# 20: on SQLite the period totals' index by period holds their charge (usage_tables.indexes; an
# index step, projections.writers.runner.index_steps: no rebuild);
# 19: period_totals_snapshots and their marks, copies of the totals every so many jobs for
# as-of reads (projections.writers.totals_snapshots); 18: fairshare_checkpoints without its
# index by association (a key lookup per checkpoint instead: projections.writers.checkpoints);
# 17: projection_tracking's ledger:usage_written (tracking.USAGE_WRITTEN), the last usage
# update written, so that an update-fshare after an update-usage starts from it; 16: on SQLite
# the tables of small rows keyed by their primary key are WITHOUT ROWID
# (projections.writers.runner.KEY_ORDERED_TABLES); 15: on PostgreSQL the tables every update
# rewrites keep half of each page free (projections.writers.runner.HOT_UPDATED_TABLES); 14:
# log_index kinds "policy" and "users" for a change that moves no usage or only some users'
# (ledger.usage_effects; usage_scope names them), and job_usage_bins without its per-row time;
# 13: continuous_sums and continuous_mark (a Slurm site's usage carried forward); 12: a queue's
# Slurm partition fields (priority_job_factor, ..., total_tres); 11: qos_table, an
# association's qos and default_qos, a job's qos; 10 (on main): clear-usage's 0.5 indexed as a
# stored fair-share; 9: a queue's billing_weights
READ_MODEL_VERSION = 22
# The bookmarks that count log positions, each 0 in a new ledger.
POSITIONS = (PROJECTION, SITE_VERSION, USAGE_WRITTEN)


def position(conn: Connection, name: str, lock: bool = False) -> int:
    """The bookmark `name`; with `lock`, its row locked for this transaction on PostgreSQL
    (SQLite's writer holds the whole file already)."""
    suffix = " FOR UPDATE" if lock and conn.config.is_postgres else ""
    rows = conn.rows(f"SELECT position FROM projection_tracking WHERE name = ?{suffix}", (name,))
    return int(rows[0][0])


def positions(conn: Connection, names: tuple[str, ...]) -> dict[str, int]:
    """The bookmarks of `names` that the table holds."""
    marks = ", ".join("?" * len(names))
    rows = conn.rows(
        f"SELECT name, position FROM projection_tracking WHERE name IN ({marks})", names
    )
    return {str(name): int(value) for name, value in rows}


def move(conn: Connection, name: str, value: int) -> None:
    conn.execute("UPDATE projection_tracking SET position = ? WHERE name = ?", (value, name))


def add_missing(conn: Connection, wanted: Mapping[str, int]) -> None:
    """The bookmarks of `wanted` that the table lacks, with their starting values."""
    held = {str(name) for (name,) in conn.rows("SELECT name FROM projection_tracking")}
    conn.executemany(
        "INSERT INTO projection_tracking VALUES (?, ?)",
        [(name, value) for name, value in wanted.items() if name not in held],
    )
