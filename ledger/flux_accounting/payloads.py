"""What Flux's mf_priority plugin loads: the `export-json` config and the RPC payloads of
flux-accounting's priority-update, built from read-model rows.

Pure: rows in, JSON-ready dicts out; the same shapes the plugin unpacks, field for field."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ledger.errors import InvalidValue
from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.limit_fields import UNLIMITED

Row = Mapping[str, Any]
QUEUE_FIELDS = (
    "min_nodes_per_job",
    "max_nodes_per_job",
    "max_time_per_job",
    "priority",
    "max_running_jobs",
    "max_nodes_per_assoc",
    "max_sched_jobs",
    "max_sched_nodes_per_assoc",
    "max_sched_cores_per_assoc",
)
PAYLOAD_NAMES = (
    "rec_update",
    "rec_q_update",
    "rec_proj_update",
    "rec_bank_update",
    "rec_fac_update",
    "rec_config_update",
)
OWNER_LIMIT = 1000000  # what priority-update grants the instance owner


def association_entry(row: Row) -> dict[str, Any]:
    return {
        "userid": int(row["userid"]),
        "bank": row["bank"],
        "def_bank": row["default_bank"],
        "fairshare": float(row["fairshare"]),
        "max_running_jobs": int(row["max_running_jobs"]),
        "max_active_jobs": int(row["max_active_jobs"]),
        "max_nodes": int(row["max_nodes"]),
        "max_cores": int(row["max_cores"]),
        "queues": row["queues"],
        "active": int(row["active"]),
        "projects": row["projects"],
        "def_project": row["default_project"],
        "max_sched_jobs": int(row["max_sched_jobs"]),
    }


def queue_entry(row: Row) -> dict[str, Any]:
    return {"queue": row["queue"], **{name: int(row[name]) for name in QUEUE_FIELDS}}


def owner_entry(userid: int, username: str) -> dict[str, Any]:
    """The instance owner's association, as priority-update appends it."""
    return {
        "userid": userid,
        "bank": username,
        "def_bank": username,
        "fairshare": NEW_ASSOCIATION_FAIRSHARE,
        "max_running_jobs": OWNER_LIMIT,
        "max_active_jobs": OWNER_LIMIT,
        "max_nodes": OWNER_LIMIT,
        "max_cores": OWNER_LIMIT,
        "queues": "",
        "active": 1,
        "projects": "*",
        "def_project": "*",
        "max_sched_jobs": UNLIMITED,
    }


def payloads(
    associations: Sequence[Row],
    queues: Sequence[Row],
    projects: Sequence[Row],
    banks: Sequence[Row],
    factors: Sequence[Row],
    config: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """Every payload keyed by name, each as the RPC sends it: {"data": ...}."""
    return {
        "rec_update": {"data": [association_entry(r) for r in associations]},
        "rec_q_update": {"data": [queue_entry(r) for r in queues]},
        "rec_proj_update": {"data": [{"project": r["project"]} for r in projects]},
        "rec_bank_update": {
            "data": [{"bank": r["bank"], "priority": float(r["priority"])} for r in banks]
        },
        "rec_fac_update": {
            "data": [{"factor": r["factor"], "weight": int(r["weight"])} for r in factors]
        },
        "rec_config_update": {
            "data": {"deny_unknown_queues": config.get("deny_unknown_queues", "false") == "true"}
        },
    }


def strict_json(data: Any, indent: int | None = None) -> str:
    """JSON the plugin can parse: a NaN or an infinity (which json.dumps writes as the
    non-JSON `NaN`/`Infinity`) is refused. ledger.bounds keeps them out of new ledgers; a
    ledger written before could still hold one."""
    try:
        return json.dumps(data, indent=indent, allow_nan=False)
    except ValueError:
        raise InvalidValue(
            "the payload holds a value that is not a finite number (NaN or infinity), which "
            "JSON cannot carry; find it with list-banks / list-users --json"
        ) from None


def plugin_config(sent: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """`export-json`: the config the plugin takes at load (`config=$(... export-json)`)."""
    return {
        "associations": sent["rec_update"]["data"],
        "queues": sent["rec_q_update"]["data"],
        "projects": sent["rec_proj_update"]["data"],
        "banks": sent["rec_bank_update"]["data"],
        "config": sent["rec_config_update"]["data"],
        "priority_factors": sent["rec_fac_update"]["data"],
    }
