"""pop-db and export-db: flux-accounting's tables as CSV files, one file per table named after
it (`bank_table.csv`, ...), the first line holding column names, as its own export-db and
pop-db have them (flux-accounting's pop-db and export-db).

pop-db loads rows through the ledger's normal validated commands, each row one event (a bank
row that is inactive also records its deactivation; association rows with usage or fair-share
values add one opening balance). Unlike flux-accounting's raw INSERTs, a row that breaks a rule
is refused with its line, and then nothing at all is written. An empty cell, or a column the
file lacks, takes flux-accounting's column default. Columns we keep derived values in
(bank_table.job_usage, project_table.usage) are not loaded; association_table's job_usage and
fairshare come over as an opening balance (job_usage in the current period).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger.errors import InvalidValue, LedgerError, ProblemList
from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.flux_accounting.columns import TABLE_COLUMNS, TABLE_ORDER
from ledger.flux_accounting.db_import import AssociationPlan, event_order
from ledger.flux_accounting.tables import (
    BankRow,
    Checked,
    Row,
    read_association,
    read_bank,
    read_factor,
    read_project,
    read_queue,
)
from ledger.site import Site, Stamp
from ledger.site_config import EDITABLE_CONFIG_KEYS


@dataclass
class CsvTable:
    table: str
    path: str
    columns: list[str]
    rows: list[Row]


def read_csv_tables(paths: Sequence[str], fields: str | None = None) -> list[CsvTable]:
    """The files, each a table of ours, in dependency order (banks before associations...).
    `fields`: only these columns are read (the others take their defaults)."""
    wanted = [f.strip() for f in fields.split(",") if f.strip()] if fields else None
    out: dict[str, CsvTable] = {}
    for path in paths:
        table = os.path.basename(path).removesuffix(".csv")
        if table not in TABLE_COLUMNS:
            raise InvalidValue(
                f'pop-db: table "{table}" does not exist in the database ({path}: the tables '
                f"are {', '.join(TABLE_COLUMNS)})"
            )
        if table in out:
            raise InvalidValue(f"pop-db: {table} given twice ({out[table].path}, {path})")
        if not os.path.isfile(path):
            raise InvalidValue(f"pop-db: no such file: {path}")
        with open(path, newline="", encoding="utf-8") as handle:
            lines = list(csv.reader(handle))
        if not lines:
            raise InvalidValue(f"pop-db: {path} is empty (the first line names the columns)")
        header = [c.strip() for c in lines[0]]
        unknown = [c for c in header if c not in TABLE_COLUMNS[table]]
        if unknown:
            raise InvalidValue(
                f"pop-db: {path}: unknown column(s) {', '.join(unknown)} for {table} "
                f"(columns: {', '.join(TABLE_COLUMNS[table])})"
            )
        rows = []
        name = os.path.basename(path)
        for number, values in enumerate(lines[1:], start=2):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise InvalidValue(
                    f"pop-db: {name} line {number}: {len(values)} values for {len(header)} columns"
                )
            rows.append(
                Row(
                    f"{name} line {number}",
                    {
                        column: value
                        for column, value in zip(header, values, strict=True)
                        if value != "" and (wanted is None or column in wanted)
                    },
                )
            )
        out[table] = CsvTable(table, path, header, rows)
    return [out[t] for t in TABLE_ORDER if t in out]


@dataclass
class Loaded:
    """Rows loaded per file, and the notes to show."""

    rows: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def load_tables(site: Site, stamp: Stamp, tables: list[CsvTable]) -> Loaded:
    """Every row through the Site's commands; InvalidValue listing every refused row (the
    caller's Ledger.execute then saves nothing)."""
    loader = _Loader(site, stamp)
    for table in tables:
        getattr(loader, table.table)(table)
        loader.loaded.rows[os.path.basename(table.path)] = len(table.rows)
    loader.finish()
    return loader.loaded


class _Loader:
    def __init__(self, site: Site, stamp: Stamp) -> None:
        self.site = site
        self.stamp = stamp
        self.checked = Checked()
        self.errors: list[str] = []
        self.loaded = Loaded()
        self.deactivate: list[tuple[Row, str]] = []
        self.shown: list[list[Any]] = []
        self.entries: list[list[Any]] = []

    def at(self, row: Row, extra: dict[str, Any] | None = None) -> Stamp:
        source = {**self.stamp.source, "row": row.where, **(extra or {})}
        return Stamp(
            at=self.stamp.at, actor=self.stamp.actor, reason=self.stamp.reason, source=source
        )

    def attempt(self, row: Row, command: Any, *args: Any, **kwargs: Any) -> bool:
        try:
            command(*args, **kwargs)
        except LedgerError as err:
            self.errors.append(f"{row.where}: {err}")
            return False
        return True

    # --- one method per table ----------------------------------------------------------------
    def config_table(self, table: CsvTable) -> None:
        for row in table.rows:
            key, value = self.checked.text(row, "key"), self.checked.text(row, "value")
            if key not in EDITABLE_CONFIG_KEYS:
                self.loaded.notes.append(f"{row.where}: key {key!r} is not one of ours; ignored")
                continue
            self.attempt(row, self.site.edit_config, self.at(row), [(key, value)])

    def priority_factor_weight_table(self, table: CsvTable) -> None:
        for row in table.rows:
            found = read_factor(row, self.checked)
            if found is not None:
                self.attempt(row, self.site.edit_factor, self.at(row), *found)

    def queue_table(self, table: CsvTable) -> None:
        for row in table.rows:
            found = read_queue(row, self.checked)
            if found is not None:
                self.attempt(row, self.site.add_queue, self.at(row), found[0], dict(found[1]))

    def project_table(self, table: CsvTable) -> None:
        projects = self.site.state.projects
        for row in table.rows:
            found = read_project(row, self.checked)
            if found is None:
                continue
            name, project_id = found
            existing = projects.get(name)
            if existing is not None and project_id in (None, existing.project_id):
                continue  # already there, as the catch-all project "*" is from create-db
            self.attempt(row, self.site.add_project, self.at(row), name, project_id)

    def bank_table(self, table: CsvTable) -> None:
        banks = [
            b
            for n, row in enumerate(table.rows, start=1)
            if (b := read_bank(row, self.checked, n)) is not None
        ]
        for bank in _parents_first(banks, set(self.site.state.banks)):
            bank_id = bank.bank_id if bank.row.present("bank_id") else None
            added = self.attempt(
                bank.row,
                self.site.add_bank,
                self.at(bank.row),
                bank.name,
                bank.shares,
                bank.parent,
                bank.priority,
                bank_id=bank_id,
                # flux-accounting's 0 is "no cutoff"; a set one is kept on the bank.
                ignore_older_than=bank.ignore_older_than or None,
            )
            if added and not bank.active:
                self.deactivate.append((bank.row, bank.name))

    def association_table(self, table: CsvTable) -> None:
        plans = []
        for row in table.rows:
            a = read_association(row, self.checked)
            if a is None:
                continue
            plans.append(
                AssociationPlan(
                    where=row.where,
                    username=a.username,
                    bank=a.bank,
                    source_bank=a.bank,
                    userid=a.userid,
                    given={
                        "shares": a.shares,
                        **a.limits,
                        "queues": ",".join(a.queues),
                        "projects": ",".join(a.projects),
                        "default_project": a.default_project,
                    },
                    active=a.active,
                    creation_time=a.creation_time,
                    mod_time=a.mod_time,
                    job_usage=a.job_usage,
                    fairshare=a.fairshare,
                    bins=[a.job_usage] if a.job_usage > 0 else [],
                    default_bank=a.default_bank,
                )
            )
            if row.present("job_usage") or row.present("fairshare"):
                self.shown.append([a.username, a.bank, a.job_usage, a.fairshare])
        rows = {row.where: row for row in table.rows}
        for plan in event_order(plans, self.checked):
            row = rows[plan.where]
            times = {}
            if row.present("creation_time"):
                times = {"creation_time": plan.creation_time, "mod_time": plan.mod_time}
            self.attempt(
                row,
                self.site.add_user,
                self.at(row, times),
                plan.username,
                plan.bank,
                plan.userid if row.present("userid") else None,
                dict(plan.given),
                active=plan.active,
            )
            if plan.bins:
                self.entries.append(
                    [plan.username, plan.bank, self.stamp.at.timestamp(), plan.job_usage]
                )

    def finish(self) -> None:
        state = self.site.state
        for row, name in self.deactivate:
            bank = state.banks.get(name)
            if bank is not None and bank.active:
                self.attempt(row, self.site.delete_bank, self.at(row), name, False)
        self.errors += [p.line() for p in self.checked.problems]
        if self.errors:
            raise ProblemList(
                f"pop-db: {len(self.errors)} row(s) refused; nothing written:\n  "
                + "\n  ".join(self.errors)
            )
        self.loaded.notes += self.checked.notes
        if any(
            job_usage != 0.0 or fairshare != NEW_ASSOCIATION_FAIRSHARE
            for _u, _b, job_usage, fairshare in self.shown
        ):
            self.site.import_usage_balance(self.stamp, self.entries, self.shown)


def _parents_first(banks: list[BankRow], existing: set[str]) -> list[BankRow]:
    """Each bank after its parent, else in file order (a missing parent is then reported by
    add-bank, on that row)."""
    out: list[BankRow] = []
    placed = set(existing)
    todo = list(banks)
    while todo:
        ready = [b for b in todo if not b.parent or b.parent in placed]
        if not ready:
            return out + todo
        for bank in ready:
            out.append(bank)
            placed.add(bank.name)
        todo = [b for b in todo if b not in ready]
    return out
