"""Completed jobs as flux-accounting keeps them: rows of its `jobs` table (R and jobspec as
JSON text; bank, project and queue from the jobspec) turned into ingest records."""

from __future__ import annotations

import json
from typing import Any


def record_from_flux_row(row: dict[str, Any]) -> dict[str, Any]:
    """One `jobs` row as an ingest record (a dict for JobRecord to validate)."""
    try:
        jobspec = json.loads(row.get("jobspec") or "{}")
    except json.JSONDecodeError:
        jobspec = {}
    system = (
        (jobspec.get("attributes") or {}).get("system") or {} if isinstance(jobspec, dict) else {}
    )
    record: dict[str, Any] = {
        "id": int(row["id"]),
        "userid": int(row["userid"]),
        "t_submit": float(row["t_submit"]),
        "t_run": float(row["t_run"]),
        "t_inactive": float(row["t_inactive"]),
        "R": row["R"],
    }
    bank = row.get("bank") or system.get("bank")
    project = row.get("project") or system.get("project")
    for name, value in (("bank", bank), ("project", project), ("queue", system.get("queue"))):
        if value:
            record[name] = value
    if system.get("duration"):
        record["requested_duration"] = float(system["duration"])
    return record
