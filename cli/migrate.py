"""Bringing a flux-accounting site over, and taking it back out: import-flux-accounting,
export-db, pop-db."""

from __future__ import annotations

import csv
import json
import os
import time
from typing import Any

import click

from cli.params import AsOf, as_of_option
from cli.session import Session, change_options, session
from ledger.clock import iso
from ledger.errors import AlreadyExists, LedgerMissing
from ledger.flux_accounting.csv_files import load_tables, read_csv_tables
from ledger.flux_accounting.db_import import (
    FIXES,
    FluxSource,
    ImportPlan,
    apply_import,
    job_marker,
    plan_import,
    read_source,
)
from ledger.flux_accounting.tables import TABLE_COLUMNS
from ledger.store.application import Ledger
from projections.queries import site as queries

FIX_HELP = "; ".join(f"{name}: {text}" for name, text in FIXES.items())


@click.command("import-flux-accounting")
@click.argument("path", metavar="PATH.db")
@click.option(
    "--fix",
    "fixes",
    multiple=True,
    type=click.Choice([*FIXES, "all"]),
    help="Apply a stated fix to rows that break the ledger's rules (repeatable; each fix is "
    f"recorded with the events it changes). {FIX_HELP}.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@change_options
@click.pass_context
def import_flux_accounting(
    ctx: click.Context,
    path: str,
    fixes: tuple[str, ...],
    as_json: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Bring a flux-accounting site over from its database PATH.db (any schema version): banks
    in tree order, associations with their limits, queues, projects, factor weights, config,
    the stored usage as an opening balance, and the job records. Into an empty ledger (created
    with the source's decay settings when --db holds none); a second import of the same file
    adds nothing. A source that breaks a rule of ours is refused row by row unless --fix."""
    started = time.perf_counter()
    s = session(ctx)
    source = read_source(path)
    chosen = set(FIXES) if "all" in fixes else set(fixes)
    ledger = _ledger(s)
    imported = ledger.state().imports.get(source.sha256) if ledger is not None else None
    if imported is not None:
        # Already here: its jobs are re-offered (exactly-once: nothing new unless an earlier
        # import stopped before recording them), with the marks of the plan it had.
        plan = plan_import(source, FIXES)
        jobs = _import_jobs(s, source, plan, reason, actor)
        click.echo(
            f"{source.file} was already imported ({iso(imported['at'])}, sha256 "
            f"{source.sha256[:12]}): nothing new; jobs: {jobs['recorded']} recorded, "
            f"{jobs['duplicate']} already there"
        )
        return
    plan = plan_import(source, chosen)
    if ledger is None:
        ledger = _create(s, plan, actor, reason)
    elif _holds(ledger, plan):
        click.echo(
            f"the ledger already holds the banks and associations of {source.file}: nothing "
            "imported (new jobs: fairledger ingest --format flux-accounting-db)"
        )
        return
    counts = s.change(
        lambda site, stamp: apply_import(site, stamp, plan),
        reason or f"import-flux-accounting {source.file}",
        actor,
        source={"import": source.path, "sha256": source.sha256},
    )
    if counts is None:  # another import of the same file got there first
        click.echo(f"{source.file} was already imported: nothing new")
        return
    jobs = _import_jobs(s, source, plan, reason, actor)
    report = _report(source, plan, counts, jobs, time.perf_counter() - started)
    click.echo(json.dumps(report, indent=2) if as_json else _render(report))


def _ledger(s: Session) -> Ledger | None:
    try:
        return s.ledger
    except LedgerMissing:
        return None


def _create(s: Session, plan: ImportPlan, actor: str | None, reason: str | None) -> Ledger:
    """A new ledger with the source's decay settings (so its periods are cut as the source's)."""
    config = dict(plan.config)
    ledger = s.create_ledger(
        float(config["priority_decay_half_life"]),
        float(config["priority_usage_reset_period"]),
        float(config["decay_factor"]),
        now=s.now,
        actor=actor or s.actor,
        reason=reason or f"import-flux-accounting {os.path.basename(plan.file)}",
    )
    click.echo(f"created ledger at {s.store.describe()}", err=True)
    return ledger


def _holds(ledger: Ledger, plan: ImportPlan) -> bool:
    """Whether the ledger already has objects; True when it has every bank and association of
    the plan (the site came over already); AlreadyExists when it holds another site."""
    state = ledger.state()
    if not state.banks and not state.associations:
        return False
    if all(b.name in state.banks for b in plan.banks) and all(
        state.association(a.username, a.bank) is not None for a in plan.associations
    ):
        return True
    root = state.root_bank()
    raise AlreadyExists(
        f"the ledger already holds a site (root bank {root.bank if root else '?'}); "
        "import-flux-accounting brings a site into an empty ledger"
    )


def _import_jobs(
    s: Session, source: FluxSource, plan: ImportPlan, reason: str | None, actor: str | None
) -> dict[str, int]:
    """The source's jobs, through ingest's path (validated, spooled, exactly-once)."""
    from cli.jobs import _flux_rows, _record_spool, _validate_to_spool, spool_file

    counts = {"source": source.jobs, "recorded": 0, "duplicate": 0, "unmatched": 0}
    counts.update({"matched": 0, "in_balance": 0, "invalid": 0})
    if not source.jobs:
        return counts
    s.ledger.actor = actor or s.actor
    state = s.ledger.state()
    marker = job_marker(plan)

    def mark(record: dict[str, Any]) -> dict[str, Any]:
        marked = marker(record)
        counts["in_balance"] += bool(marked.get("in_balance"))
        return marked

    with spool_file() as spool:
        bad, total = _validate_to_spool(
            _flux_rows(source.path), True, source.file, spool, state, mark=mark
        )
        for line in bad:
            click.echo(f"fairledger: skipped {source.file} jobs row {line}", err=True)
        recorded = _record_spool(
            s,
            spool,
            total,
            reason or f"import-flux-accounting {source.file}",
            {"import": source.path, "sha256": source.sha256, "format": "flux-accounting-db"},
            state,
            "import-flux-accounting",
        )
    if not recorded["conflicting"]:
        del recorded["conflicting"]  # the report names conflicts only when there are some
    counts.update(recorded)
    counts["invalid"] = len(bad)
    counts["matched"] = counts["recorded"] - counts["unmatched"]
    s.read()
    return counts


def _report(
    source: FluxSource,
    plan: ImportPlan,
    counts: dict[str, int],
    jobs: dict[str, int],
    seconds: float,
) -> dict[str, Any]:
    return {
        "file": source.path,
        "sha256": source.sha256,
        "schema": source.schema,
        "seconds": round(seconds, 3),
        "objects": {
            "banks": [source.count("bank_table"), counts["banks"], counts["inactive_banks"]],
            "associations": [
                source.count("association_table"),
                counts["associations"],
                counts["inactive_associations"],
            ],
            "queues": [source.count("queue_table"), counts["queues"], 0],
            "projects": [source.count("project_table"), counts["projects"], 0],
            "factor weights": [
                source.count("priority_factor_weight_table"),
                counts["factors"],
                0,
            ],
            "config keys": [source.count("config_table"), counts["config"], 0],
        },
        "balance": {
            "associations": counts["balance_associations"],
            "entries": counts["balance_entries"],
            "periods_elapsed": counts["periods_elapsed"],
        },
        "jobs": jobs,
        "ignored": plan.ignored,
        "fixes": plan.fixes,
        "notes": plan.notes,
    }


def _render(report: dict[str, Any]) -> str:
    lines = [
        f"imported {report['file']} ({report['schema']}, sha256 {report['sha256'][:12]}) "
        f"in {report['seconds']:.2f}s",
        f"{'object':<16}{'source':>8}{'ledger':>8}{'inactive':>10}",
    ]
    for name, (found, made, inactive) in report["objects"].items():
        lines.append(f"{name:<16}{found:>8}{made:>8}{inactive:>10}")
    balance = report["balance"]
    lines.append(
        f"opening balance: {balance['entries']} period entries for {balance['associations']} "
        f"associations ({balance['periods_elapsed']} half-life periods since the source's "
        "last update-usage)"
    )
    jobs = report["jobs"]
    lines.append(
        f"jobs: {jobs['source']} in the source, {jobs['recorded']} recorded ({jobs['matched']} "
        f"matched, {jobs['unmatched']} unmatched; {jobs['in_balance']} already in the opening "
        f"balance), {jobs['duplicate']} duplicate, {jobs['invalid']} invalid"
    )
    for title, key in (("ignored", "ignored"), ("fixes applied", "fixes"), ("notes", "notes")):
        if report[key]:
            lines.append(f"{title}:")
            lines += [f"  {item}" for item in report[key]]
    return "\n".join(lines)


# --- export-db and pop-db -----------------------------------------------------------------------
_EXPORT_ORDER = {
    "bank_table": "bank_id",
    "association_table": "creation_time, username, bank",
    "queue_table": "queue",
    "project_table": "project_id",
}


@click.command("export-db")
@click.option(
    "--dir",
    "directory",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where to write the CSV files.",
)
@as_of_option
@click.pass_context
def export_db(ctx: click.Context, directory: str, as_of: AsOf | None) -> None:
    """Write one CSV file per table (bank_table.csv, association_table.csv, queue_table.csv,
    project_table.csv, priority_factor_weight_table.csv, config_table.csv) in flux-accounting's
    column layout, for its pop-db or ours."""
    conn = session(ctx).read(as_of)
    os.makedirs(directory, exist_ok=True)
    for table, columns in TABLE_COLUMNS.items():
        if table == "priority_factor_weight_table":
            rows = queries.factors(conn)
        elif table == "config_table":
            rows = queries.configs(conn)
        else:
            rows = conn.query(
                f"SELECT {', '.join(columns)} FROM {table} ORDER BY {_EXPORT_ORDER[table]}"
            )
        path = os.path.join(directory, f"{table}.csv")
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)  # flux-accounting's export-db: csv's default dialect
            writer.writerow(columns)
            writer.writerows([row[c] for c in columns] for row in rows)
        click.echo(f"wrote {path} ({len(rows)} rows)")


@click.command("pop-db")
@click.option(
    "-c",
    "--csv-file",
    "files",
    multiple=True,
    required=True,
    metavar="FILE.csv",
    help="A table's CSV file, named after the table (repeatable).",
)
@click.option(
    "-f",
    "--fields",
    default=None,
    metavar="A,B",
    help="Load only these columns (the others take their defaults).",
)
@change_options
@click.pass_context
def pop_db(
    ctx: click.Context,
    files: tuple[str, ...],
    fields: str | None,
    actor: str | None,
    reason: str | None,
) -> None:
    """Load CSV files in flux-accounting's layout through the normal validated commands, each
    row one event; a refused row (listed) writes nothing at all."""
    tables = read_csv_tables(files, fields)
    names = ", ".join(os.path.basename(t.path) for t in tables)
    loaded = session(ctx).change(
        lambda site, stamp: load_tables(site, stamp, tables),
        reason or f"pop-db {names}",
        actor,
        source={"pop-db": [os.path.abspath(t.path) for t in tables]},
    )
    for note in loaded.notes:
        click.echo(f"fairledger: {note}", err=True)
    for name, count in loaded.rows.items():
        click.echo(f"{name}: {count} rows loaded")


COMMANDS = [import_flux_accounting, export_db, pop_db]
