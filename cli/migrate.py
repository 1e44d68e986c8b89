"""Bringing a flux-accounting site over, and taking it back out: import-flux-accounting,
export-db, pop-db."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from cli.ingest_output import shown_notes
from cli.params import AsOf, as_of_option
from cli.session import change_options, session
from ledger.clock import iso
from ledger.flux_accounting.db_import import FIXES
from ledger.usecases import flux_import
from ledger.usecases.emulator_export import export_emulator_tree
from ledger.usecases.flux_tables import export_tables, load_csv_files

FIX_HELP = "; ".join(f"{name}: {text}" for name, text in FIXES.items())


@click.command("import-flux-accounting")
@click.argument("path", metavar="PATH.db")
@click.option(
    "--fix",
    "fixes",
    multiple=True,
    type=click.Choice([*FIXES, flux_import.ALL_FIXES]),
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

    def created(where: str) -> None:
        click.echo(f"created ledger at {where}", err=True)

    # A set-aside row is named as the report names its source: by the file's name.
    with shown_notes(f"{os.path.basename(path)} jobs row ") as notes:
        outcome = flux_import.import_flux_accounting(
            session(ctx), path, fixes, actor, reason, created, notes
        )
    if isinstance(outcome, flux_import.AlreadyImported):
        jobs = outcome.jobs
        click.echo(
            f"{outcome.file} was already imported ({iso(outcome.at)}, sha256 "
            f"{outcome.sha256[:12]}): nothing new; jobs: {jobs['recorded']} recorded, "
            f"{jobs['duplicate']} already there"
        )
    elif isinstance(outcome, flux_import.SiteAlreadyHeld):
        click.echo(
            f"the ledger already holds the banks and associations of {outcome.file}: nothing "
            "imported (new jobs: fairledger ingest --format flux-accounting-db)"
        )
    elif isinstance(outcome, flux_import.ImportedMeanwhile):
        click.echo(f"{outcome.file} was already imported: nothing new")
    else:
        report = outcome.report
        click.echo(json.dumps(report, indent=2) if as_json else _render(report))


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


@click.command("export-db")
@click.option(
    "--dir",
    "directory",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where to write the CSV files.",
)
@click.option(
    "-F",
    "--fairshare-emulate",
    is_flag=True,
    help="Print the bank tree with shares and usage as JSON for fairshare-emulate instead "
    "of writing CSV files.",
)
@as_of_option
@click.pass_context
def export_db(
    ctx: click.Context, directory: str, fairshare_emulate: bool, as_of: AsOf | None
) -> None:
    """Write one CSV file per table (bank_table.csv, association_table.csv, queue_table.csv,
    project_table.csv, priority_factor_weight_table.csv, config_table.csv) in flux-accounting's
    column layout, for its pop-db or ours; with -F, print the tree as JSON instead."""
    if fairshare_emulate:
        click.echo(json.dumps(export_emulator_tree(session(ctx), as_of), indent=2))
        return
    for written in export_tables(session(ctx), directory, as_of):
        click.echo(f"wrote {written.path} ({written.rows} rows)")


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
    loaded = load_csv_files(session(ctx), files, fields, actor, reason)
    for note in loaded.notes:
        click.echo(f"fairledger: {note}", err=True)
    for name, count in loaded.rows.items():
        click.echo(f"{name}: {count} rows loaded")


COMMANDS = [import_flux_accounting, export_db, pop_db]
