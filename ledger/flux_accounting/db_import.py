"""Bringing a flux-accounting site over: read its database (any schema version, from the v0
legacy layout to v38), check it against the ledger's rules, and turn it into Site commands.

One reader copes with every version (flux-accounting's schema history): columns that a
version lacks take flux-accounting's defaults, renamed ones are mapped (`deleted` -> `active`),
usage bins come from `job_usage_per_association_table` (v0.59+) or the older
`usage_factor_period_N` columns, and columns with no meaning here (admin_level, max_jobs, qos,
max_wall_pj, ...) are listed in the report as ignored, as flux-accounting's own migration drops
them.

The plan (`plan_import`) is pure: it lists every row that breaks a rule of ours, and either
refuses (`ImportRefused`, one line per offending row, nothing written) or applies the fixes the
caller asked for, each one stated and recorded in the reason and source of the events it
changes. `apply_import` runs the plan as Site commands inside one Ledger.execute, so the whole
site, its opening balance and the import marker are saved atomically.

The opening balance (ledger.import_events.UsageBalanceImported). flux-accounting stores bins
already decayed: bin k holds D^k x the raw usage of the period k half-lives before its current
one, and job_usage = sum of the bins. Bin k becomes the raw charge bin_k / D^k placed in our
period c - k - m, where c is the period of the import time and m the half-life periods that
passed since the source's last update-usage (t_half_life_period_table: m = floor((import time
- end_half_life_period) / H), at least 0). So at the import our usage is D^m x job_usage: the
source's own value when it is up to date, decayed as it would have been when it is stale, and
it keeps decaying from there. A source without bins (the legacy layout) has its job_usage in
bin 0. The source's stored job_usage and fairshare are shown until the next update-usage /
update-fshare.

Jobs. The source's jobs are recorded through ingest's path. A job counts toward our usage only
if flux-accounting's next update-usage would have charged it: its (userid, bank) has a
job_usage_factor_table row and it ended after that row's last_job_timestamp, its bank's
ignore_older_than and the config's reconfigure_time. Every other job is already inside the
opening balance (or flux-accounting never charged it): it is recorded with `in_balance`, and
counts nothing.
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.errors import InvalidValue, LedgerError, NotFound, ProblemList
from ledger.flux_accounting.columns import FLUX_CONFIG_DEFAULTS, TABLE_COLUMNS
from ledger.flux_accounting.tables import (
    AssociationRow,
    BankRow,
    Checked,
    Problem,
    Row,
    read_association,
    read_bank,
    read_factor,
    read_project,
    read_queue,
)
from ledger.site import Site, Stamp, check_decay_config, normalise_config_value
from ledger.site_config import CONFIG_KEYS, FACTOR_DEFAULTS
from ledger.site_usage import usage_params
from ledger.usage import period_of, period_start

FIXES: dict[str, str] = {
    "rename-duplicates": "a bank name used by several rows: the first row keeps it and each "
    "later one is renamed NAME_BANKID (sub-banks and associations that name it stay with the "
    "first); a project listed twice: the later rows are left out",
    "attach-to-root": "a bank whose parent does not exist, a second root bank, or banks in a "
    "cycle: the bank (in a cycle, the member with the lowest bank_id) is attached under the "
    "root bank",
    "move-users": "associations in a bank that also has sub-banks: they move into a new "
    "sub-bank NAME_users under it, whose shares are the sum of theirs",
    "drop-orphans": "an association in a bank that does not exist is left out, with its usage; "
    "a queue or project an association names that does not exist is removed from its lists",
    "zero-negative-shares": "a negative share count becomes 0",
}
OBJECT_TABLES = (*TABLE_COLUMNS, "job_usage_factor_table", "job_usage_per_association_table")
# Tables whose whole content we understand (or know to be derived); others are reported.
KNOWN_TABLES = (*OBJECT_TABLES, "t_half_life_period_table", "jobs", "sqlite_sequence")
# Columns read under another name (schemas before v0.18 had `deleted`, not `active`).
MAPPED_COLUMNS = {"association_table": {"deleted"}}


class ImportRefused(ProblemList):
    """The source breaks rules of ours that no requested fix repairs: nothing was written."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        fixable = sorted({p.fix for p in problems if p.fix})
        lines = [f"{file} breaks the ledger's rules ({len(problems)} problems); nothing imported:"]
        lines += [f"  {p.line()}" for p in problems]
        if fixable:
            lines.append(
                "import again with --fix NAME (or --fix all) to apply the fixes in brackets; "
                "each is recorded with the events it changes:"
            )
            lines += [f"  --fix {name}: {FIXES[name]}" for name in fixable]
        if any(p.fix is None for p in problems):
            lines.append("rows without a fix in brackets must be corrected in the source")
        super().__init__("\n".join(lines))
        self.problems = problems


# --- the source ---------------------------------------------------------------------------------
@dataclass
class FluxSource:
    """A flux-accounting database as read: rows of the tables we import, by table."""

    path: str
    sha256: str
    user_version: int
    columns: dict[str, list[str]]
    rows: dict[str, list[Row]]
    end_half_life_period: float | None
    jobs: int

    @property
    def file(self) -> str:
        return os.path.basename(self.path)

    @property
    def schema(self) -> str:
        legacy = "userid" not in self.columns.get("association_table", [])
        return f"user_version {self.user_version}" + (" (legacy v0 layout)" if legacy else "")

    def count(self, table: str) -> int:
        return len(self.rows.get(table, []))

    def ignored(self) -> list[str]:
        """Columns and tables of the source that have no meaning in the ledger."""
        out = []
        for table, columns in sorted(self.columns.items()):
            if table not in KNOWN_TABLES:
                out.append(f"table {table}")
                continue
            if table in TABLE_COLUMNS:  # the other known tables are read whole, or derived
                known = set(TABLE_COLUMNS[table]) | MAPPED_COLUMNS.get(table, set())
                out += [f"{table}.{c}" for c in columns if c not in known]
        return out


def _legacy_bin(column: str) -> int | None:
    prefix = "usage_factor_period_"
    if column.startswith(prefix) and column[len(prefix) :].isdigit():
        return int(column[len(prefix) :])
    return None


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_source(path: str) -> FluxSource:
    """Every table we import, read-only, from a flux-accounting database of any version."""
    if not os.path.isfile(path):
        raise NotFound(f"no such file: {path}")
    sha = sha256_of(path)
    uri = Path(path).absolute().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as err:
        raise InvalidValue(f"{path}: cannot open as SQLite ({err})") from None
    conn.row_factory = sqlite3.Row
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        if "bank_table" not in tables or "association_table" not in tables:
            raise InvalidValue(
                f"{path}: not a flux-accounting database (no bank_table and association_table)"
            )
        columns = {
            t: [c[1] for c in conn.execute(f'PRAGMA table_info("{t}")')]
            for t in tables
            if t != "sqlite_sequence"
        }
        rows: dict[str, list[Row]] = {}
        for table in OBJECT_TABLES:
            if table in tables:
                found = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
                rows[table] = [
                    Row(f"{table} row {n}", dict(r)) for n, r in enumerate(found, start=1)
                ]
        end = None
        if "t_half_life_period_table" in tables:
            found = conn.execute(
                "SELECT end_half_life_period FROM t_half_life_period_table ORDER BY rowid"
            ).fetchone()
            if found is not None and found[0] is not None:
                end = float(found[0])
        jobs = 0
        if "jobs" in tables:
            jobs = int(conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])
        user_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as err:
        raise InvalidValue(f"{path}: not a flux-accounting database ({err})") from None
    finally:
        conn.close()
    return FluxSource(
        path=os.path.abspath(path),
        sha256=sha,
        user_version=user_version,
        columns=columns,
        rows=rows,
        end_half_life_period=end,
        jobs=jobs,
    )


# --- the plan -----------------------------------------------------------------------------------
@dataclass
class BankPlan:
    where: str
    bank_id: int
    name: str
    parent: str
    shares: int
    priority: float
    active: bool
    fixes: list[str] = field(default_factory=list)


@dataclass
class AssociationPlan:
    where: str
    username: str
    bank: str
    source_bank: str
    userid: int
    given: dict[str, Any]
    active: bool
    creation_time: float
    mod_time: float
    job_usage: float
    fairshare: float
    bins: list[float]
    default_bank: str | None  # the source's default_bank column (None: no such column)
    fixes: list[str] = field(default_factory=list)


@dataclass
class ImportPlan:
    file: str
    sha256: str
    schema: str
    config: list[tuple[str, str]]
    factors: list[tuple[str, int]]
    queues: list[tuple[str, str, dict[str, int]]]
    projects: list[tuple[str, str, int | None]]
    banks: list[BankPlan]
    associations: list[AssociationPlan]
    deactivate: list[tuple[str, str]]  # (where, bank): the topmost inactive banks
    end_half_life_period: float | None
    # (userid, bank) -> the time after which flux-accounting would still charge a job
    counted_after: dict[tuple[int, str], float]
    moved: dict[tuple[int, str], str]  # (userid, source bank) -> bank (move-users)
    fixes: list[str]
    notes: list[str]
    ignored: list[str]
    source_counts: dict[str, int]


def plan_import(source: FluxSource, fixes: Collection[str] = ()) -> ImportPlan:
    """The ledger's view of `source`, with the requested fixes applied; ImportRefused when a
    row breaks a rule no requested fix repairs (every such row is listed)."""
    unknown = set(fixes) - set(FIXES)
    if unknown:
        raise InvalidValue(f"unknown fix: {', '.join(sorted(unknown))}")
    p = _Planner(source, set(fixes))
    return p.run()


class _Planner:
    def __init__(self, source: FluxSource, fixes: set[str]) -> None:
        self.source = source
        self.fixes = fixes
        self.checked = Checked()
        self.applied: list[str] = []

    def rows(self, table: str) -> list[Row]:
        return self.source.rows.get(table, [])

    def fix(self, row: Row, message: str, name: str, done: str) -> bool:
        """A rule broken by `row`: fixed (True, `done` recorded) if `name` was asked for."""
        if name in self.fixes:
            self.applied.append(f"{row.where}: {message}: {done} (--fix {name})")
            return True
        self.checked.problem(row, message, name)
        return False

    def run(self) -> ImportPlan:
        config, reconfigure_time = self.config()
        factors = self.factors()
        queues = self.queues()
        projects = self.projects()
        banks, by_name = self.banks()
        associations, moved = self.associations(banks, by_name, queues, projects)
        root = next((b for b in banks if not b.parent), None)
        ordered = _tree_order(banks, root)
        deactivate = self.inactive(ordered, associations)
        counted_after = self.counted_after(by_name, reconfigure_time)
        if self.checked.problems:
            raise ImportRefused(self.source.file, self.checked.problems)
        source = self.source
        return ImportPlan(
            file=source.path,
            sha256=source.sha256,
            schema=source.schema,
            config=config,
            factors=factors,
            queues=[(w, n, f) for w, (n, f) in queues.items()],
            projects=[(w, n, i) for w, (n, i) in projects.items()],
            banks=ordered,
            associations=event_order(associations, self.checked),
            deactivate=deactivate,
            end_half_life_period=source.end_half_life_period,
            counted_after=counted_after,
            moved=moved,
            fixes=self.applied,
            notes=self.checked.notes,
            ignored=source.ignored(),
            source_counts={t: source.count(t) for t in TABLE_COLUMNS},
        )

    # --- config, factors, queues, projects ----------------------------------------------------
    def config(self) -> tuple[list[tuple[str, str]], float]:
        values = dict(FLUX_CONFIG_DEFAULTS)
        where: dict[str, Row] = {}
        reconfigure_time = 0.0
        for row in self.rows("config_table"):
            key = self.checked.text(row, "key")
            value = self.checked.text(row, "value")
            if key == "reconfigure_time":
                reconfigure_time = self.checked.number(row, "value", 0.0)
                self.checked.notes.append(
                    f"{row.where}: reconfigure_time {value}: jobs that ended before it are "
                    "not charged again (flux-accounting excluded them)"
                )
            elif key not in CONFIG_KEYS:
                self.checked.notes.append(f"{row.where}: key {key!r} is not one of ours; ignored")
            else:
                values[key] = value
                where[key] = row
        pairs = []
        for key in CONFIG_KEYS:
            try:
                pairs.append((key, normalise_config_value(key, values[key])))
            except LedgerError as err:
                self.checked.problems.append(
                    Problem(where[key].where if key in where else "config_table", str(err))
                )
        if len(pairs) == len(CONFIG_KEYS):
            try:
                check_decay_config(dict(pairs))
            except LedgerError as err:
                self.checked.problems.append(Problem("config_table", str(err)))
        return pairs, reconfigure_time

    def factors(self) -> list[tuple[str, int]]:
        weights = dict(FACTOR_DEFAULTS)
        for row in self.rows("priority_factor_weight_table"):
            found = read_factor(row, self.checked)
            if found is not None:
                weights[found[0]] = found[1]
        return list(weights.items())

    def queues(self) -> dict[str, tuple[str, dict[str, int]]]:
        out: dict[str, tuple[str, dict[str, int]]] = {}
        seen: dict[str, Row] = {}
        for row in self.rows("queue_table"):
            found = read_queue(row, self.checked)
            if found is None:
                continue
            if found[0] in seen:
                first = seen[found[0]].where
                self.checked.problem(row, f'duplicate queue "{found[0]}" (also {first})')
                continue
            seen[found[0]] = row
            out[row.where] = found
        return out

    def projects(self) -> dict[str, tuple[str, int | None]]:
        out: dict[str, tuple[str, int | None]] = {}
        seen: dict[str, Row] = {}
        for row in self.rows("project_table"):
            found = read_project(row, self.checked)
            if found is None:
                continue
            first = seen.get(found[0])
            if first is not None:
                self.fix(
                    row,
                    f'duplicate project "{found[0]}" (also {first.where})',
                    "rename-duplicates",
                    "left out",
                )
                continue
            seen[found[0]] = row
            out[row.where] = found
        return out

    # --- banks --------------------------------------------------------------------------------
    def banks(self) -> tuple[list[BankPlan], dict[str, BankPlan]]:
        rows = [
            r
            for n, row in enumerate(self.rows("bank_table"), start=1)
            if (r := read_bank(row, self.checked, n)) is not None
        ]
        taken = {r.name for r in rows}
        plans: list[BankPlan] = []
        by_name: dict[str, BankPlan] = {}
        for r in rows:
            plan = BankPlan(
                r.row.where, r.bank_id, r.name, r.parent, r.shares, r.priority, r.active
            )
            if r.shares < 0 and self.fix(
                r.row, f"negative shares {r.shares}", "zero-negative-shares", "shares 0"
            ):
                plan.shares = 0
                plan.fixes.append(f"negative shares {r.shares} -> 0")
            first = by_name.get(r.name)
            if first is not None:
                new = _unique(f"{r.name}_{r.bank_id}", taken)
                message = f'duplicate bank name "{r.name}" (also {first.where})'
                if not self.fix(r.row, message, "rename-duplicates", f'renamed "{new}"'):
                    continue
                taken.add(new)
                plan.name = new
                plan.fixes.append(f'duplicate bank name "{r.name}" renamed "{new}"')
            by_name[plan.name] = plan
            plans.append(plan)
        self._attach(plans, by_name, {r.row.where: r for r in rows})
        return plans, by_name

    def _attach(
        self, plans: list[BankPlan], by_name: dict[str, BankPlan], rows: dict[str, BankRow]
    ) -> None:
        """One root; every parent exists; no cycles."""
        roots = [b for b in plans if not b.parent]
        if plans and not roots:
            self.checked.problems.append(
                Problem("bank_table", "no root bank (a bank whose parent_bank is empty)")
            )
        root = roots[0] if roots else None
        fix = "attach-to-root" if root is not None else None
        root_name = root.name if root is not None else ""

        def attach(bank: BankPlan, message: str) -> None:
            row = rows[bank.where].row
            if fix is None:
                self.checked.problem(row, message)
            elif self.fix(row, message, fix, f'attached under "{root_name}"'):
                bank.fixes.append(f'{message}: attached under "{root_name}"')
                bank.parent = root_name

        for extra in roots[1:]:
            attach(extra, f'a second root bank (the root is "{root_name}")')
        for bank in plans:
            if bank.parent and bank.parent not in by_name:
                attach(bank, f'parent bank "{bank.parent}" not found')
        reached = {b.name for b in _tree_order(plans, root)}
        seen: set[str] = set()
        for bank in plans:
            path: list[BankPlan] = []
            current: BankPlan | None = bank
            while current is not None and current.name not in reached | seen:
                seen.add(current.name)
                path.append(current)
                current = by_name.get(current.parent) if current.parent else None
            if current is not None and current in path:
                cycle = path[path.index(current) :]
                shown = " -> ".join(b.name for b in [*cycle, cycle[0]])
                breaker = min(cycle, key=lambda b: b.bank_id)
                for member in cycle:
                    message = f'bank "{member.name}" is in a cycle of banks ({shown})'
                    if member is breaker:
                        attach(member, message)
                    elif fix is None or fix not in self.fixes:
                        self.checked.problem(rows[member.where].row, message, fix)

    # --- associations -------------------------------------------------------------------------
    def associations(
        self,
        banks: list[BankPlan],
        by_name: dict[str, BankPlan],
        queues: dict[str, tuple[str, dict[str, int]]],
        projects: dict[str, tuple[str, int | None]],
    ) -> tuple[list[AssociationPlan], dict[tuple[int, str], str]]:
        queue_names = {name for name, _fields in queues.values()}
        project_names = {name for name, _id in projects.values()} | {"*"}
        bins = self.bins()
        out: list[AssociationPlan] = []
        seen: dict[tuple[str, str], str] = {}
        for row in self.rows("association_table"):
            a = read_association(row, self.checked)
            if a is None:
                continue
            first = seen.get((a.username, a.bank))
            if first is not None:
                self.checked.problem(
                    row, f"duplicate association {a.username}/{a.bank} (also {first})"
                )
                continue
            seen[(a.username, a.bank)] = row.where
            plan = self._association(a, by_name, queue_names, project_names, bins)
            if plan is not None:
                out.append(plan)
        for key, values in sorted(bins.items()):
            if key not in seen and any(values):
                self.checked.notes.append(
                    f"usage bins of {key[0]}/{key[1]} have no association: left out"
                )
        moved = self._move_users(banks, by_name, out)
        return out, moved

    def _known(
        self, row: Row, kind: str, names: list[str], known: set[str], fixes: list[str]
    ) -> list[str]:
        """The names of `kind` (queue, project) the site defines; an unknown one is a problem,
        or with --fix drop-orphans is removed (and said in `fixes`)."""
        kept = []
        for name in names:
            if name in known:
                kept.append(name)
            elif self.fix(row, f'{kind} "{name}" not found', "drop-orphans", "removed"):
                fixes.append(f'unknown {kind} "{name}" removed')
        return kept

    def _association(
        self,
        a: AssociationRow,
        by_name: dict[str, BankPlan],
        queue_names: set[str],
        project_names: set[str],
        bins: dict[tuple[str, str], list[float]],
    ) -> AssociationPlan | None:
        row = a.row
        fixes: list[str] = []
        shares = a.shares
        if shares < 0 and self.fix(
            row, f"negative shares {shares}", "zero-negative-shares", "shares 0"
        ):
            fixes.append(f"negative shares {shares} -> 0")
            shares = 0
        if a.bank not in by_name:
            usage = f" (its job_usage {a.job_usage} with it)" if a.job_usage else ""
            self.fix(row, f'bank "{a.bank}" not found', "drop-orphans", f"left out{usage}")
            return None
        queues = self._known(row, "queue", a.queues, queue_names, fixes)
        projects = self._known(row, "project", a.projects, project_names, fixes)
        default_project = a.default_project
        if default_project not in project_names:
            message = f'default project "{default_project}" not found'
            if self.fix(row, message, "drop-orphans", 'default project "*"'):
                fixes.append(f'{message}: default project "*"')
                default_project = "*"
        source_bins = bins.get((a.username, a.bank), [])
        return AssociationPlan(
            where=row.where,
            username=a.username,
            bank=a.bank,
            source_bank=a.bank,
            userid=a.userid,
            given={
                "shares": shares,
                **a.limits,
                "queues": ",".join(queues),
                "projects": ",".join(projects),
                "default_project": default_project,
            },
            active=a.active,
            creation_time=a.creation_time,
            mod_time=a.mod_time,
            job_usage=a.job_usage,
            fairshare=a.fairshare,
            bins=self._balance_bins(a, source_bins),
            default_bank=None if not a.default_bank else str(a.default_bank),
            fixes=fixes,
        )

    def _balance_bins(self, a: AssociationRow, source_bins: list[float]) -> list[float]:
        """The decayed bins to bring over: the source's bins, or its job_usage in bin 0."""
        kept = []
        for k, value in enumerate(source_bins):
            if value < 0:
                self.checked.notes.append(
                    f"{a.row.where}: usage bin {k} of {a.username}/{a.bank} is negative "
                    f"({value}): left out"
                )
                value = 0.0
            kept.append(value)
        if any(kept):
            total = math.fsum(kept)
            if not math.isclose(total, a.job_usage, rel_tol=1e-9, abs_tol=1e-6):
                self.checked.notes.append(
                    f"{a.row.where}: job_usage {a.job_usage} of {a.username}/{a.bank} is not "
                    f"the sum of its usage bins ({total}): the bins are brought over, "
                    "job_usage is shown until the next update-usage"
                )
            return kept
        if a.job_usage > 0:
            return [a.job_usage]
        if a.job_usage < 0:
            self.checked.notes.append(
                f"{a.row.where}: job_usage of {a.username}/{a.bank} is negative "
                f"({a.job_usage}): no usage brought over"
            )
        return []

    def bins(self) -> dict[tuple[str, str], list[float]]:
        """(username, bank) -> bins, newest first: v0.59+ rows per period, or the older
        usage_factor_period_N columns of job_usage_factor_table."""
        out: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
        for row in self.rows("job_usage_per_association_table"):
            period = self.checked.integer(row, "period", None)
            if period is None or period < 0:
                continue
            key = (self.checked.text(row, "username"), self.checked.text(row, "bank"))
            out[key][period] = self.checked.number(row, "value", 0.0)
        if not out:
            for row in self.rows("job_usage_factor_table"):
                key = (self.checked.text(row, "username"), self.checked.text(row, "bank"))
                for column in row.values:
                    k = _legacy_bin(column)
                    if k is not None:
                        out[key][k] = self.checked.number(row, column, 0.0)
        return {
            key: [periods.get(k, 0.0) for k in range(max(periods) + 1)]
            for key, periods in out.items()
            if periods
        }

    def _move_users(
        self, banks: list[BankPlan], by_name: dict[str, BankPlan], assocs: list[AssociationPlan]
    ) -> dict[tuple[int, str], str]:
        """Associations beside sub-banks: refused, or moved into a new sub-bank."""
        has_children = {b.parent for b in banks if b.parent}
        mixed: dict[str, list[AssociationPlan]] = defaultdict(list)
        for a in assocs:
            if a.bank in has_children:
                mixed[a.bank].append(a)
        moved: dict[tuple[int, str], str] = {}
        taken = set(by_name)
        next_id = max((b.bank_id for b in banks), default=0) + 1
        for bank, members in mixed.items():
            subs = ", ".join(sorted(b.name for b in banks if b.parent == bank))
            new = _unique(f"{bank}_users", taken)
            fixed = [
                self.fix(
                    Row(a.where, {}),
                    f'user "{a.username}" is in bank "{bank}", which also has sub-banks ({subs})',
                    "move-users",
                    f'moved into new bank "{new}"',
                )
                for a in members
            ]
            if not all(fixed):
                continue
            taken.add(new)
            parent = by_name[bank]
            shares = sum(int(a.given["shares"]) for a in members)
            banks.append(
                BankPlan(
                    where=f"{parent.where} (new sub-bank)",
                    bank_id=next_id,
                    name=new,
                    parent=bank,
                    shares=shares,
                    priority=0.0,
                    active=parent.active,
                    fixes=[
                        f'new bank for the associations of "{bank}", which also has sub-banks '
                        f"(shares {shares}: the sum of theirs)"
                    ],
                )
            )
            next_id += 1
            for a in members:
                a.bank = new
                a.fixes.append(f'moved from bank "{bank}" (it also has sub-banks) into "{new}"')
                moved[(a.userid, bank)] = new
        return moved

    # --- inactive objects and jobs ------------------------------------------------------------
    def inactive(
        self, ordered: list[BankPlan], assocs: list[AssociationPlan]
    ) -> list[tuple[str, str]]:
        """The topmost inactive banks: deactivating them deactivates what is under them."""
        by_name = {b.name: b for b in ordered}
        out = []
        inactive: set[str] = set()
        for bank in ordered:
            parent = by_name.get(bank.parent)
            if parent is not None and parent.name in inactive:
                if bank.active:
                    self.checked.notes.append(
                        f'{bank.where}: bank "{bank.name}" is active under inactive bank '
                        f'"{parent.name}": deactivated with it'
                    )
                inactive.add(bank.name)
            elif not bank.active:
                inactive.add(bank.name)
                out.append((bank.where, bank.name))
        for a in assocs:
            if a.active and a.bank in inactive:
                self.checked.notes.append(
                    f"{a.where}: association {a.username}/{a.bank} is active in an inactive "
                    "bank: deactivated with it"
                )
        return out

    def counted_after(
        self, by_name: dict[str, BankPlan], reconfigure_time: float
    ) -> dict[tuple[int, str], float]:
        ignore = {}
        for row in self.rows("bank_table"):
            name = row.get("bank")
            if name is not None and name not in ignore:
                ignore[str(name)] = self.checked.number(row, "ignore_older_than", 0.0)
        out = {}
        for row in self.rows("job_usage_factor_table"):
            userid = self.checked.integer(row, "userid", None)
            bank = self.checked.text(row, "bank")
            if userid is None:
                continue
            last = self.checked.number(row, "last_job_timestamp", 0.0)
            out[(userid, bank)] = max(last, ignore.get(bank, 0.0), reconfigure_time)
        return out


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _tree_order(banks: list[BankPlan], root: BankPlan | None) -> list[BankPlan]:
    """Parents before children, siblings by bank_id; banks the root does not reach are left
    out (the planner has reported them)."""
    if root is None:
        return []
    children: dict[str, list[BankPlan]] = defaultdict(list)
    for bank in banks:
        if bank.parent:
            children[bank.parent].append(bank)
    out, todo = [], [root]
    seen = {root.name}
    while todo:
        bank = todo.pop(0)
        out.append(bank)
        for child in sorted(children[bank.name], key=lambda b: b.bank_id):
            if child.name not in seen:
                seen.add(child.name)
                todo.append(child)
    return out


def event_order(assocs: list[AssociationPlan], checked: Checked) -> list[AssociationPlan]:
    """Associations in creation order, each user's default bank first: a user's default bank is
    the bank of their first association, so the source's default comes over without an extra
    event. The default is the source's when it is one of the user's active associations (else
    their earliest active one, as flux-accounting moves it)."""
    ordered = sorted(enumerate(assocs), key=lambda item: (item[1].creation_time, item[0]))
    by_user: dict[str, list[AssociationPlan]] = defaultdict(list)
    for _n, a in ordered:
        by_user[a.username].append(a)
    first: dict[str, AssociationPlan] = {}
    for username, rows in by_user.items():
        wanted = next((a.default_bank for a in rows if a.default_bank), None)
        moved = {a.source_bank: a.bank for a in rows}
        wanted = moved.get(wanted, wanted) if wanted else None
        active = [a for a in rows if a.active]
        pool = active or rows
        chosen = next((a for a in pool if a.bank == wanted), pool[0])
        if wanted is not None and chosen.bank != wanted:
            checked.notes.append(
                f'{rows[0].where}: default bank "{wanted}" of {username} is not one of their '
                f'{"active " if active else ""}associations: their default is "{chosen.bank}"'
            )
        first[username] = chosen
    out: list[AssociationPlan] = []
    emitted: set[int] = set()
    for _n, a in ordered:
        for candidate in (first[a.username], a):
            if id(candidate) not in emitted:
                emitted.add(id(candidate))
                out.append(candidate)
    return out


# --- applying the plan --------------------------------------------------------------------------
def balance_entries(
    plan_assocs: list[AssociationPlan],
    site: Site,
    at: float,
    end_half_life_period: float | None,
) -> tuple[list[list[Any]], int]:
    """The opening balance's entries [username, bank, time, raw charge], and m, the half-life
    periods that passed since the source's last update-usage (see the module's docstring)."""
    params = usage_params(site.state)
    half_life, factor = params.half_life, params.decay_factor
    elapsed = 0
    if end_half_life_period is not None and at > end_half_life_period:
        elapsed = math.floor((at - end_half_life_period) / half_life)
    current = period_of(at, params)
    entries: list[list[Any]] = []
    for a in plan_assocs:
        for k, value in enumerate(a.bins):
            if value <= 0:
                continue
            age = k + elapsed
            # The current period at the import's own time; an older one at its midpoint, so
            # that the entry sits squarely inside it.
            when = at if age == 0 else period_start(current - age, params) + half_life / 2
            entries.append([a.username, a.bank, when, round(value / factor**k, 5)])
    return entries, elapsed


def apply_import(site: Site, stamp: Stamp, plan: ImportPlan) -> dict[str, int] | None:
    """The plan as Site commands (one Ledger.execute: one atomic save). Returns the counts
    recorded with the import marker; None when this source was already imported."""
    state = site.state
    if not site.may_import(plan.sha256, "import-flux-accounting"):
        return None
    base = {"import": plan.file, "sha256": plan.sha256}

    def at_row(
        where: str, extra: dict[str, Any] | None = None, fixes: list[str] | None = None
    ) -> Stamp:
        reason = stamp.reason
        source = {**base, "row": where, **(extra or {})}
        if fixes:
            reason = "; ".join([*([reason] if reason else []), *(f"fix: {f}" for f in fixes)])
            source["fixes"] = list(fixes)
        return Stamp(at=stamp.at, actor=stamp.actor, reason=reason, source=source)

    site.edit_config(at_row("config_table"), plan.config)
    for factor, weight in plan.factors:
        site.edit_factor(at_row("priority_factor_weight_table"), factor, weight)
    for where, name, fields in plan.queues:
        site.add_queue(at_row(where), name, dict(fields))
    for where, name, project_id in plan.projects:
        if name in state.projects:
            continue  # the catch-all project "*", seeded at create-db
        taken = {p.project_id for p in state.projects.values()}
        site.add_project(at_row(where), name, None if project_id in taken else project_id)
    for bank in plan.banks:
        site.add_bank(
            at_row(bank.where, fixes=bank.fixes),
            bank.name,
            bank.shares,
            bank.parent,
            bank.priority,
            bank_id=bank.bank_id,
        )
    for a in plan.associations:
        times = {"creation_time": a.creation_time, "mod_time": a.mod_time}
        site.add_user(
            at_row(a.where, times, a.fixes),
            a.username,
            a.bank,
            a.userid,
            dict(a.given),
            active=a.active,
        )
    for where, name in plan.deactivate:
        site.delete_bank(at_row(where), name, force=False)
    entries, elapsed = balance_entries(
        plan.associations, site, stamp.at.timestamp(), plan.end_half_life_period
    )
    shown = [[a.username, a.bank, a.job_usage, a.fairshare] for a in plan.associations]
    site.import_usage_balance(
        at_row("association_table", {"periods_elapsed": elapsed}), entries, shown
    )
    counts = {
        "banks": len(plan.banks),
        "inactive_banks": sum(not b.active for b in site.state.banks.values()),
        "associations": len(plan.associations),
        "inactive_associations": sum(not a.active for a in site.state.all_associations()),
        "queues": len(plan.queues),
        "projects": len(site.state.projects),
        "factors": len(plan.factors),
        "config": len(plan.config),
        "balance_associations": len({(e[0], e[1]) for e in entries}),
        "balance_entries": len(entries),
        "periods_elapsed": elapsed,
    }
    site.mark_imported(
        at_row("import"),
        plan.file,
        plan.sha256,
        plan.schema,
        counts,
        plan.fixes,
        plan.notes,
    )
    return counts


def job_marker(plan: ImportPlan) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What import-flux-accounting does to each of the source's job records before recording:
    mark those the opening balance already holds; follow associations the move-users fix moved."""

    def mark(record: dict[str, Any]) -> dict[str, Any]:
        key = (int(record.get("userid", -1)), str(record.get("bank", "")))
        moved = plan.moved.get(key)
        if moved is not None:
            record["bank"] = moved
            record["extra"] = {**(record.get("extra") or {}), "source_bank": key[1]}
        cutoff = plan.counted_after.get(key)
        if cutoff is None or record["t_inactive"] <= cutoff:
            record["in_balance"] = True
        return record

    return mark
