"""Completed jobs as flux-accounting keeps them: rows of its `jobs` table (R and jobspec as
JSON text; bank, project and queue from the jobspec) turned into ingest records."""

from __future__ import annotations

import json
from typing import Any


def record_from_flux_row(row: dict[str, Any]) -> dict[str, Any]:
    """One `jobs` row as an ingest record (a dict for JobRecord to validate)."""
    try:
        jobspec = json.loads(row.get("jobspec") or "{}")
    except (json.JSONDecodeError, RecursionError, TypeError):
        jobspec = {}
    system = _member(_member(jobspec, "attributes"), "system")
    record: dict[str, Any] = {
        "id": _converted(int, row.get("id")),
        "userid": _converted(int, row.get("userid")),
        "t_submit": _converted(float, row.get("t_submit")),
        "t_run": _converted(float, row.get("t_run")),
        "t_inactive": _converted(float, row.get("t_inactive")),
        "R": row.get("R"),
    }
    bank = row.get("bank") or system.get("bank")
    project = row.get("project") or system.get("project")
    for name, value in (("bank", bank), ("project", project), ("queue", system.get("queue"))):
        if value:
            record[name] = value
    if system.get("duration"):
        record["requested_duration"] = _converted(float, system["duration"])
    return record


def _member(obj: Any, key: str) -> dict[str, Any]:
    """obj[key] when both are JSON objects, else {} (a malformed jobspec names nothing)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _converted(kind: type[int] | type[float], value: Any) -> Any:
    """`value` as `kind`, or as stored when it is not one: JobRecord then names the field and
    the value in the line it refuses (a bad row must not stop the whole ingest with a
    traceback)."""
    try:
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        return value
