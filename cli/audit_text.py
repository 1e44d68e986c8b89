"""The audit's text: `history`'s one line per event and `diff`'s lines per change.

projections.queries.history and projections.queries.diff give the data (entries, diffs as
plain values); this is how a terminal shows them: when, who, what (field old → new), why.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cli.output import UNLIMITED_TEXT, is_parent_shares
from ledger.bounds import printable
from ledger.clock import iso
from ledger.fairshare import FAIRSHARE_DECIMALS
from ledger.limit_fields import is_unlimited
from ledger.site import ON_BEHALF_OF
from ledger.site_config import ASSOCIATION_DEFAULTS, QOS_DEFAULTS, QUEUE_DEFAULTS
from ledger.slurm_parent import PARENT_TEXT
from projections.queries.diff import SECTIONS, Diff, Row, Section
from projections.queries.history import Entry

ARROW = "→"
TIME_FIELDS = ("epoch", "ignore_older_than")  # shown as ISO times, 0 as "(none)"


# --- history ------------------------------------------------------------------------------------
def show(field_name: str, value: Any, parent_shares: bool = False) -> str:
    """One value as an audit line shows it; with `parent_shares`, shares of PARENT as Slurm's
    `parent`."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if field_name.split(".")[-1] in TIME_FIELDS and isinstance(value, int | float):
        return iso(float(value)) if value else "(none)"
    if is_parent_shares(field_name, value, parent_shares):
        return PARENT_TEXT
    if is_unlimited(value):
        return UNLIMITED_TEXT
    if value == "":
        return '""'
    return str(value)


def show_changes(changes: dict[str, list[Any]], parent_shares: bool = False) -> str:
    """`field old → new`, or `field new` for a value set for the first time (old is None)."""
    parts = []
    for name, (old, new) in changes.items():
        shown_new = show(name, new, parent_shares)
        if old is None:
            parts.append(f"{name} {shown_new}")
        else:
            parts.append(f"{name} {show(name, old, parent_shares)} {ARROW} {shown_new}")
    return ", ".join(parts)


def _summary_changes(entry: Entry) -> dict[str, list[Any]]:
    """The changes a line shows: an added association or queue shows the values that differ
    from the defaults (JSON has them all)."""
    if entry.event == "AssociationAdded":
        keep = ("userid", "shares", "default_bank")
        return {
            k: v
            for k, v in entry.changes.items()
            if k in keep or ASSOCIATION_DEFAULTS.get(k, object()) != v[1]
        }
    if entry.event in ("QueueAdded", "QosAdded"):
        defaults = QUEUE_DEFAULTS if entry.event == "QueueAdded" else QOS_DEFAULTS
        return {k: v for k, v in entry.changes.items() if defaults.get(k) != v[1]}
    return entry.changes


def _pairs(pairs: list[list[str]]) -> str:
    return ", ".join(f"{u}/{b}" for u, b in pairs)


def describe(entry: Entry) -> str:
    """What happened, without when/who/why: `edit-bank A: shares 1 → 10`."""
    head = entry.action if entry.name is None else f"{entry.action} {entry.name}"
    parts: list[str] = []
    if entry.kind == "jobs":
        jobs = entry.details["jobs"]
        parts.append(f"recorded {jobs} job{'' if jobs == 1 else 's'}")
    elif entry.action == "neutralize":
        details = entry.details
        what = ", ".join(f"job {i} (cluster {c})" for c, i in details.get("jobs", []))
        parts.append(f"set aside position {details['position']} ({what or details['event']})")
    else:
        changes = show_changes(_summary_changes(entry), entry.parent_shares)
        if changes:
            parts.append(changes)
        details = entry.details
        if details.get("banks"):
            parts.append("banks " + ", ".join(details["banks"]))
        if details.get("associations"):
            parts.append("users " + _pairs(details["associations"]))
        if details.get("default_banks"):
            parts.append(
                "default_bank "
                + ", ".join(
                    f"{u} {show('', c[0])} {ARROW} {show('', c[1])}"
                    for u, c in details["default_banks"].items()
                )
            )
    return head + (": " + "; ".join(parts) if parts else "")


def who(entry: Entry) -> str:
    """The actor; on PostgreSQL the database role, with the --actor it acted for, if any."""
    behalf = entry.source.get(ON_BEHALF_OF)
    actor = entry.actor or "-"
    return f"{actor} (on behalf of {behalf})" if behalf else actor


def history_line(entry: Entry) -> str:
    """`2026-11-20T10:00:00+00:00  ops  edit-bank A: shares 1 → 10  (grant #12)`: the time to
    the second in UTC, the actor ("-" if none), what happened, and the reason if one was given."""
    when = datetime.fromtimestamp(entry.time, tz=UTC).replace(microsecond=0).isoformat()
    text = f"{when}  {who(entry)}  {describe(entry)}"
    text = f"{text}  ({entry.reason})" if entry.reason else text
    # One line per entry, whatever a name or reason recorded before ledger.bounds holds.
    return printable(text)


# --- diff ---------------------------------------------------------------------------------------
TITLES = {
    "banks": "banks",
    "associations": "associations",
    "queues": "queues",
    "qos": "QOS",
    "projects": "projects",
    "factors": "factors",
    "config": "config",
    "fairshare": "fair-share",
}


def _object(name: str, row: Row) -> str:
    if name == "associations":
        return f"user {row['username']} in {row['bank']}"
    if name == "banks":
        return f"bank {row['bank']}"
    if name == "factors":
        return f"factor {row['factor']}"
    if name == "config":
        return f"config {row['key']}"
    if name == "qos":
        return f"QOS {row['qos']}"
    return f"{name[:-1]} {row[SECTIONS[name][1][0]]}"


def _added(name: str, row: Row) -> str:
    text = "+ " + _object(name, row)
    if name == "banks" and row["parent_bank"]:
        text += f" under {row['parent_bank']}"
    return text


def _share(value: float) -> str:
    return repr(round(value, FAIRSHARE_DECIMALS))


def section_lines(name: str, section: Section, parent_shares: bool = False) -> list[str]:
    lines = [_added(name, r) for r in section.added]
    lines += ["- " + _object(name, r) for r in section.removed]
    lines += [
        f"{_object(name, r)}: {show_changes(r['changes'], parent_shares)}" for r in section.changed
    ]
    return lines


def _rank(rank: int | None) -> str:
    return "inactive" if rank is None else str(rank)


def fairshare_line(row: Row) -> str:
    (old, new), (old_rank, new_rank) = row["fairshare"], row["rank"]
    value = _share(old) if old == new else f"{_share(old)} {ARROW} {_share(new)}"
    text = f"fair-share {row['username']}/{row['bank']}: {value}"
    if old_rank != new_rank:
        text += f" (rank {_rank(old_rank)} {ARROW} {_rank(new_rank)})"
    return text


def diff_lines(diff: Diff, parent_shares: bool = False) -> list[str]:
    """Sections in a fixed order, each a title line and one indented line per change; within a
    section: added, removed, then changed, each sorted by key. Empty sections are left out."""
    out: list[str] = []
    for name, section in diff.sections.items():
        if section:
            out.append(f"{TITLES[name]}:")
            out += ["  " + text for text in section_lines(name, section, parent_shares)]
    if diff.fairshare:
        out.append(f"{TITLES['fairshare']}:")
        out += ["  " + fairshare_line(row) for row in diff.fairshare]
    return out
