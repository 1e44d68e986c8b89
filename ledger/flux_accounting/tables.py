"""flux-accounting's tables as rows: the columns we read from each, their defaults, and value
checks that name the offending row. Shared by import-flux-accounting (a database of any schema
version, flux-accounting's schema) and pop-db (the CSV files export-db writes).

Pure: no I/O. A row is a dict of column -> value as the source holds it; a column that is
missing, NULL or an empty CSV cell takes flux-accounting's column default, as its own INSERTs
(`ON CONFLICT REPLACE DEFAULT`) and pop-db do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.flux_accounting.columns import DEFAULT_USERID
from ledger.limit_fields import ASSOCIATION_LIMIT_FIELDS
from ledger.site_config import ASSOCIATION_DEFAULTS, FACTOR_DEFAULTS, QUEUE_DEFAULTS, csv_items


@dataclass(frozen=True)
class Problem:
    """One row that breaks a rule of ours; `fix` names the --fix that would repair it."""

    where: str
    message: str
    fix: str | None = None

    def line(self) -> str:
        return f"{self.where}: {self.message}" + (f" [--fix {self.fix}]" if self.fix else "")


@dataclass
class Row:
    """One source row: where it is ("bank_table row 3", "bank_table.csv line 4") and its
    values by column name."""

    where: str
    values: dict[str, Any]

    def present(self, column: str) -> bool:
        value = self.values.get(column)
        return value is not None and not (isinstance(value, str) and value == "")

    def get(self, column: str, default: Any = None) -> Any:
        return self.values[column] if self.present(column) else default


@dataclass
class Checked:
    """Problems found while reading rows (errors) and what was adjusted on the way (notes)."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def problem(self, row: Row, message: str, fix: str | None = None) -> None:
        self.problems.append(Problem(row.where, message, fix))

    def integer(self, row: Row, column: str, default: int | None) -> int | None:
        value = row.get(column)
        if value is None:
            return default
        number = _as_integer(value)
        if number is None:
            self.problem(row, f"{column} {value!r} is not an integer")
            return default
        return number

    def number(self, row: Row, column: str, default: float) -> float:
        value = row.get(column)
        if value is None:
            return default
        try:
            return float(value)
        except (TypeError, ValueError):
            self.problem(row, f"{column} {value!r} is not a number")
            return default

    def text(self, row: Row, column: str, default: str = "") -> str:
        value = row.get(column)
        return default if value is None else str(value)

    def name(self, row: Row, column: str, kind: str) -> str | None:
        """A bank, user, queue or project name, checked as our commands check them."""
        value = row.get(column)
        if value is None:
            self.problem(row, f"{column} is missing")
            return None
        text = str(value)
        if text != text.strip() or "," in text:
            self.problem(row, f"invalid {kind} name {text!r} (no commas, no outer spaces)")
            return None
        return text


def _as_integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    try:
        text = str(value).strip()
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if number.is_integer() else None


# --- one row of each table, with flux-accounting's defaults ----------------------------------
@dataclass
class BankRow:
    row: Row
    bank_id: int
    name: str
    parent: str
    shares: int
    priority: float
    active: bool
    job_usage: float
    ignore_older_than: float


def read_bank(row: Row, checked: Checked, fallback_id: int) -> BankRow | None:
    name = checked.name(row, "bank", "bank")
    bank_id = checked.integer(row, "bank_id", fallback_id)
    shares = checked.integer(row, "shares", 1)
    if name is None or bank_id is None or shares is None:
        return None
    return BankRow(
        row=row,
        bank_id=bank_id,
        name=name,
        parent=checked.text(row, "parent_bank", ""),
        shares=shares,
        priority=checked.number(row, "priority", 0.0),
        active=bool(checked.integer(row, "active", 1)),
        job_usage=checked.number(row, "job_usage", 0.0),
        ignore_older_than=checked.number(row, "ignore_older_than", 0.0),
    )


@dataclass
class AssociationRow:
    row: Row
    username: str
    bank: str
    userid: int
    default_bank: str | None
    active: bool
    creation_time: float
    mod_time: float
    shares: int
    limits: dict[str, int]
    queues: list[str]
    projects: list[str]
    default_project: str
    job_usage: float
    fairshare: float


def read_association(row: Row, checked: Checked) -> AssociationRow | None:
    username = checked.name(row, "username", "user")
    bank = checked.name(row, "bank", "bank")
    userid = checked.integer(row, "userid", DEFAULT_USERID)
    shares = checked.integer(row, "shares", 1)
    if row.present("active"):
        active = bool(checked.integer(row, "active", 1))
    else:  # schemas before v0.18 had `deleted` instead
        active = not checked.integer(row, "deleted", 0)
    limits = {}
    for column in ASSOCIATION_LIMIT_FIELDS:
        value = checked.integer(row, column, int(ASSOCIATION_DEFAULTS[column]))
        if value is not None and value < 0:
            checked.problem(row, f"{column} {value} is negative")
        limits[column] = int(ASSOCIATION_DEFAULTS[column]) if value is None else value
    if userid is not None and userid < 0:
        checked.problem(row, f"userid {userid} is negative")
    creation_time = checked.number(row, "creation_time", 0.0)
    if username is None or bank is None or userid is None or shares is None:
        return None
    return AssociationRow(
        row=row,
        username=username,
        bank=bank,
        userid=userid,
        default_bank=row.get("default_bank"),
        active=active,
        creation_time=creation_time,
        mod_time=checked.number(row, "mod_time", creation_time),
        shares=shares,
        limits=limits,
        queues=csv_items(checked.text(row, "queues", "")),
        projects=csv_items(checked.text(row, "projects", "*")),
        default_project=checked.text(row, "default_project", "*"),
        job_usage=checked.number(row, "job_usage", 0.0),
        fairshare=checked.number(row, "fairshare", NEW_ASSOCIATION_FAIRSHARE),
    )


def read_queue(row: Row, checked: Checked) -> tuple[str, dict[str, int]] | None:
    name = checked.name(row, "queue", "queue")
    fields: dict[str, int] = {}
    for column, default in QUEUE_DEFAULTS.items():
        value = checked.integer(row, column, default)
        value = default if value is None else value
        if value < 0 and column != "priority":
            checked.problem(row, f"{column} {value} is negative")
        fields[column] = value
    return None if name is None else (name, fields)


def read_project(row: Row, checked: Checked) -> tuple[str, int | None] | None:
    name = checked.name(row, "project", "project")
    project_id = checked.integer(row, "project_id", None)
    return None if name is None else (name, project_id)


def read_factor(row: Row, checked: Checked) -> tuple[str, int] | None:
    factor = checked.text(row, "factor")
    weight = checked.integer(row, "weight", None)
    if factor not in FACTOR_DEFAULTS:
        checked.notes.append(f"{row.where}: factor {factor!r} is not one of ours; ignored")
        return None
    if weight is None:
        checked.problem(row, "weight is missing")
        return None
    return factor, weight
