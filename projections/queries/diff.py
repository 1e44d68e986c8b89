"""What changed between two moments: compare the read tables materialized at each.

`compare(before, after)` takes two connections holding the read-model tables (as
projections.queries.as_of.materialize builds them) and returns a `Diff`: per object kind the
rows added, removed and changed (field -> [old, new]), and the fair-share of every association
present at both moments whose value or rank changed. Usage columns are not compared (they move
with time itself); fair-share is, since it is what the scheduler was told.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger.limit_fields import ASSOCIATION_LIMIT_FIELDS
from ledger.site_config import BILLING_WEIGHTS, PARTITION_DEFAULTS
from ledger.store.connections import Connection

Row = dict[str, Any]

# kind -> (table, key columns, compared columns): usage, ids and timestamps are left out.
SECTIONS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "banks": (
        "bank_table",
        ("bank",),
        ("parent_bank", "shares", "priority", "active", "ignore_older_than"),
    ),
    "associations": (
        "association_table",
        ("username", "bank"),
        (
            "active",
            "userid",
            "default_bank",
            "shares",
            *ASSOCIATION_LIMIT_FIELDS,
            "queues",
            "projects",
            "default_project",
            "ignore_older_than",
            "qos",
            "default_qos",
        ),
    ),
    "queues": (
        "queue_table",
        ("queue",),
        (
            "priority",
            "min_nodes_per_job",
            "max_nodes_per_job",
            "max_time_per_job",
            "max_running_jobs",
            "max_nodes_per_assoc",
            "max_sched_jobs",
            "max_sched_nodes_per_assoc",
            "max_sched_cores_per_assoc",
            "max_nodes",
            "max_cores",
            BILLING_WEIGHTS,
            *PARTITION_DEFAULTS,
        ),
    ),
    "qos": ("qos_table", ("qos",), ("priority", "usage_factor", "flags", "description")),
    "projects": ("project_table", ("project",), ()),
    "factors": ("priority_factor_weight_table", ("factor",), ("weight",)),
    "config": ("config_table", ("key",), ("value",)),
}


@dataclass
class Section:
    added: list[Row] = field(default_factory=list)  # key columns + compared columns
    removed: list[Row] = field(default_factory=list)
    changed: list[Row] = field(default_factory=list)  # key columns + "changes"

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, list[Row]]:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


@dataclass
class Diff:
    sections: dict[str, Section]
    # username, bank, fairshare [old, new], rank [old, new] (rank None when inactive)
    fairshare: list[Row]

    def __bool__(self) -> bool:
        return any(self.sections.values()) or bool(self.fairshare)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: s.to_json() for k, s in self.sections.items()}
        out["fairshare"] = self.fairshare
        return out


def _value(column: str, value: Any) -> Any:
    return bool(value) if column == "active" else value


def _rows(
    conn: Connection, table: str, keys: tuple[str, ...], columns: tuple[str, ...]
) -> dict[tuple[Any, ...], Row]:
    selected = list(keys) + list(columns)
    rows = conn.query(f"SELECT {', '.join(selected)} FROM {table}")
    return {tuple(r[k] for k in keys): {c: _value(c, r[c]) for c in selected} for r in rows}


def compare_section(before: Connection, after: Connection, name: str) -> Section:
    table, keys, columns = SECTIONS[name]
    old, new = _rows(before, table, keys, columns), _rows(after, table, keys, columns)
    section = Section()
    for key in sorted(new.keys() - old.keys()):
        section.added.append(new[key])
    for key in sorted(old.keys() - new.keys()):
        section.removed.append(old[key])
    for key in sorted(old.keys() & new.keys()):
        changes = {c: [old[key][c], new[key][c]] for c in columns if old[key][c] != new[key][c]}
        if changes:
            section.changed.append({**dict(zip(keys, key, strict=True)), "changes": changes})
    return section


def ranks(conn: Connection) -> dict[tuple[str, str], tuple[float, int | None]]:
    """Each association's fair-share and rank among the active ones: 1 + the number of active
    associations with a strictly higher fair-share (ties share a rank); None when inactive."""
    rows = conn.query("SELECT username, bank, active, fairshare FROM association_table")
    active = sorted((float(r["fairshare"]) for r in rows if r["active"]), reverse=True)
    out: dict[tuple[str, str], tuple[float, int | None]] = {}
    for r in rows:
        value = float(r["fairshare"])
        rank = 1 + sum(1 for v in active if v > value) if r["active"] else None
        out[(r["username"], r["bank"])] = (value, rank)
    return out


def compare_fairshare(before: Connection, after: Connection) -> list[Row]:
    old, new = ranks(before), ranks(after)
    out = []
    for key in sorted(old.keys() & new.keys()):
        if old[key] != new[key]:
            out.append(
                {
                    "username": key[0],
                    "bank": key[1],
                    "fairshare": [old[key][0], new[key][0]],
                    "rank": [old[key][1], new[key][1]],
                }
            )
    return out


def compare(before: Connection, after: Connection) -> Diff:
    return Diff(
        {name: compare_section(before, after, name) for name in SECTIONS},
        compare_fairshare(before, after),
    )
