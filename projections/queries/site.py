"""Reads of the read models, returning rows keyed by flux-accounting's column names."""

from __future__ import annotations

from typing import Any

from ledger.errors import NotFound
from ledger.site_config import (
    ALGORITHM_KEY,
    BILLING_WEIGHTS,
    CONFIG_DEFAULTS,
    EDITABLE_CONFIG_KEYS,
    FACTOR_DEFAULTS,
    PARTITION_DEFAULTS,
    RESET_PERIOD_KEY,
    SLURM_FACTOR_DEFAULTS,
    USAGE_MODEL_KEY,
    WEIGHTED_WALK,
    periods_half_life,
    reset_period_seconds,
    usage_model_of,
)
from ledger.store.connections import Connection
from ledger.usage import DEFAULT_RESET_PERIOD, UsageParams, bin_count
from projections.writers.bins import bins_of_blob
from projections.writers.schema import (
    ASSOCIATION_COLUMNS,
    ASSOCIATION_QOS_COLUMNS,
    BANK_COLUMNS,
    CONFIG_COLUMNS,
    FACTOR_COLUMNS,
    PROJECT_COLUMNS,
    QOS_COLUMNS,
    QUEUE_COLUMNS,
)

Row = dict[str, Any]


def _select(columns: list[str], table: str) -> str:
    return f"SELECT {', '.join(columns)} FROM {table}"


def banks(conn: Connection, include_inactive: bool = False) -> list[Row]:
    where = "" if include_inactive else " WHERE active = 1"
    return conn.query(_select(BANK_COLUMNS, "bank_table") + where + " ORDER BY bank_id")


def bank(conn: Connection, name: str) -> Row:
    rows = conn.query(_select(BANK_COLUMNS, "bank_table") + " WHERE bank = ?", (name,))
    if not rows:
        raise NotFound(f"bank {name} not found in bank_table")
    return rows[0]


def subtree_banks(conn: Connection, top: str) -> list[Row]:
    everything = banks(conn, include_inactive=True)
    by_parent: dict[str, list[Row]] = {}
    for row in everything:
        by_parent.setdefault(row["parent_bank"], []).append(row)
    out = [bank(conn, top)]
    index = 0
    while index < len(out):
        out.extend(by_parent.get(out[index]["bank"], []))
        index += 1
    return out


def associations(
    conn: Connection, filters: dict[str, Any] | None = None, with_qos: bool = False
) -> list[Row]:
    """flux-accounting's list-users filters: ANDed; a comma list means IN (...); queues,
    projects and default_project match any listed item as a whole CSV element. `with_qos`:
    the rows also hold the association's Slurm QOS columns (ASSOCIATION_QOS_COLUMNS)."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (filters or {}).items():
        if value is None:
            continue
        if column == "active":
            clauses.append("active = ?")
            params.append(int(value))
            continue
        items = [v.strip() for v in str(value).split(",") if v.strip()]
        if column in ("queues", "projects", "default_project"):
            ors = []
            for item in items:
                ors.append(f"(',' || {column} || ',') LIKE ?")
                params.append(f"%,{item},%")
            clauses.append("(" + " OR ".join(ors) + ")")
        else:
            clauses.append(f"{column} IN ({', '.join('?' * len(items))})")
            params.extend(items)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    columns = [*ASSOCIATION_COLUMNS, *(ASSOCIATION_QOS_COLUMNS if with_qos else [])]
    return conn.query(
        _select(columns, "association_table") + where + " ORDER BY username, bank", params
    )


def user_rows(conn: Connection, username: str, with_qos: bool = False) -> list[Row]:
    rows = associations(conn, {"username": username}, with_qos)
    if not rows:
        raise NotFound(f"user {username} not found in association_table")
    return rows


def users_in(conn: Connection, bank_names: list[str]) -> list[Row]:
    if not bank_names:
        return []
    marks = ", ".join("?" * len(bank_names))
    return conn.query(
        _select(ASSOCIATION_COLUMNS, "association_table") + f" WHERE bank IN ({marks})"
        " ORDER BY username",
        bank_names,
    )


def queues(conn: Connection) -> list[Row]:
    return conn.query(_select(QUEUE_COLUMNS, "queue_table") + " ORDER BY queue")


def queue(conn: Connection, name: str) -> Row:
    """flux-accounting's row, with the queue's billing_weights and Slurm partition fields when
    they are not the defaults: a Flux site's view-queue prints what it always did."""
    extra = [BILLING_WEIGHTS, *PARTITION_DEFAULTS]
    rows = conn.query(
        _select([*QUEUE_COLUMNS, *extra], "queue_table") + " WHERE queue = ?", (name,)
    )
    if not rows:
        raise NotFound(f"queue {name} not found in queue_table")
    row = rows[0]
    defaults: dict[str, Any] = {BILLING_WEIGHTS: "", **PARTITION_DEFAULTS}
    for column in extra:
        if row[column] == defaults[column]:
            del row[column]
    return row


def partitions(conn: Connection) -> list[Row]:
    """Every queue as a Slurm partition: its name, priority (flux-accounting's), billing
    weights and PARTITION_DEFAULTS fields."""
    return conn.query(
        _select(["queue", BILLING_WEIGHTS, *PARTITION_DEFAULTS], "queue_table") + " ORDER BY queue"
    )


def qos_rows(conn: Connection) -> list[Row]:
    return conn.query(_select(QOS_COLUMNS, "qos_table") + " ORDER BY qos")


def qos(conn: Connection, name: str) -> Row:
    rows = conn.query(_select(QOS_COLUMNS, "qos_table") + " WHERE qos = ?", (name,))
    if not rows:
        raise NotFound(f"QOS {name} not found")
    return rows[0]


def projects(conn: Connection) -> list[Row]:
    return conn.query(_select(PROJECT_COLUMNS, "project_table") + " ORDER BY project_id")


def project(conn: Connection, name: str) -> Row:
    rows = conn.query(_select(PROJECT_COLUMNS, "project_table") + " WHERE project = ?", (name,))
    if not rows:
        raise NotFound(f"project {name} not found in project_table")
    return rows[0]


def factors(conn: Connection) -> list[Row]:
    """The weights of the site's family of factors, in their order: flux-accounting's four, or
    on a Slurm site Slurm's six (a weight not recorded yet is at its default)."""
    defaults = _factor_defaults(conn)
    recorded = {
        r["factor"]: r["weight"]
        for r in conn.query(_select(FACTOR_COLUMNS, "priority_factor_weight_table"))
    }
    return [
        {"factor": name, "weight": recorded.get(name, default)}
        for name, default in defaults.items()
    ]


def factor(conn: Connection, name: str) -> Row:
    for row in factors(conn):
        if row["factor"] == name:
            return row
    raise NotFound(f"factor {name} not found in priority_factor_weight_table")


def _factor_defaults(conn: Connection) -> dict[str, int]:
    return SLURM_FACTOR_DEFAULTS if parent_shares(conn) else FACTOR_DEFAULTS


def configs(conn: Connection, in_force: bool = False, keys_only: bool = False) -> list[Row]:
    """The recorded config rows; with `in_force` (list-configs), on a Slurm site (fair-tree or
    classic) also fairledger's own keys not yet recorded, at their defaults, so the policy in
    force shows. A weighted-walk site lists what was recorded, as flux-accounting's config_table
    does (its admins' scripts and its tests compare the listing; view-config KEY still answers
    for a default). export-db and the plugin's config carry what was recorded.

    `keys_only` (list-configs --fields=key): sorted by key, the order flux-accounting lists them
    in then, since SQLite answers its `SELECT key FROM config_table` from the key's unique index
    (its t1093 compares the listing)."""
    rows = conn.query(_select(CONFIG_COLUMNS, "config_table"))
    recorded = {r["key"]: r["value"] for r in rows}
    if in_force and recorded.get(ALGORITHM_KEY, WEIGHTED_WALK) != WEIGHTED_WALK:
        rows += [{"key": k, "value": v} for k, v in CONFIG_DEFAULTS.items() if k not in recorded]
        if USAGE_MODEL_KEY not in recorded:  # follows the algorithm until set
            rows.append({"key": USAGE_MODEL_KEY, "value": usage_model_of(recorded)})
    if keys_only:
        return sorted(rows, key=lambda r: str(r["key"]).encode("utf-8"))  # SQLite's BINARY order
    order = list(EDITABLE_CONFIG_KEYS)
    return sorted(rows, key=lambda r: order.index(r["key"]) if r["key"] in order else 99)


def config(conn: Connection, key: str) -> Row:
    rows = conn.query(_select(CONFIG_COLUMNS, "config_table") + " WHERE key = ?", (key,))
    if not rows and key in CONFIG_DEFAULTS:
        return {"key": key, "value": CONFIG_DEFAULTS[key]}  # in force, not yet recorded
    if not rows and key == USAGE_MODEL_KEY:
        return {"key": key, "value": usage_model_of({r["key"]: r["value"] for r in configs(conn)})}
    if not rows:
        raise NotFound(f"key {key} not found in config_table")
    return rows[0]


def parent_shares(conn: Connection) -> bool:
    """Whether shares of 2147483647 (ledger.slurm_shares.PARENT) are Slurm's Fairshare=parent
    in these read models: under fair-tree or classic, whose trees read them so. Under the
    weighted walk they are a number of shares, which flux-accounting's output prints as its
    "unlimited"."""
    return config(conn, ALGORITHM_KEY)["value"] != WEIGHTED_WALK


def usage_periods(conn: Connection, username: str) -> list[Row]:
    """The user's usage per period, as flux-accounting's job_usage_per_association_table
    rows (username, userid, bank, period, value): period 0 is the current one, each value the
    raw charges of that period, for each of the user's associations in bank order. An
    association no update-usage has reached yet shows zero periods, as flux-accounting's
    add-user creates them."""
    rows = conn.query(
        "SELECT a.username, a.userid, a.bank, b.bins FROM association_table a "
        "LEFT JOIN job_usage_bins b ON a.username = b.username AND a.bank = b.bank "
        "WHERE a.username = ? ORDER BY a.bank",
        (username,),
    )
    return [
        {
            "username": row["username"],
            "userid": row["userid"],
            "bank": row["bank"],
            "period": period,
            "value": value,
        }
        for row in rows
        for period, value in enumerate(
            bins_of_blob(row["bins"])
            if row["bins"] is not None
            else [0.0] * (_past_periods(conn) + 1)
        )
    ]


def _past_periods(conn: Connection) -> int:
    values = {r["key"]: r["value"] for r in configs(conn)}
    params = UsageParams(
        epoch=0.0,
        half_life=periods_half_life(values),
        reset_period=reset_period_seconds(values)
        if RESET_PERIOD_KEY in values
        else DEFAULT_RESET_PERIOD,
    )
    return bin_count(params)
