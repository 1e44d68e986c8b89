"""The accounting cron in one command: cron [--ingest FILE|-] [--export-json PATH]."""

from __future__ import annotations

import click

from cli.session import change_options, session
from ledger.usecases.cron import JobInput, cron
from ledger.usecases.job_sources import FORMATS

DEFAULT_FORMAT = "jsonl"


@click.command("cron")
@click.option(
    "--ingest",
    "source",
    metavar="FILE|-",
    default=None,
    help="First record the completed jobs of FILE (- reads stdin), as ingest does.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="--ingest's format: JSON lines, a flux-accounting DB, or sacct -a -X -P output "
    f"(default: {DEFAULT_FORMAT}).",
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="With --ingest: record the valid lines and report each bad one (default: record "
    "nothing and update nothing).",
)
@click.option(
    "--export-json",
    "export_json",
    metavar="PATH",
    default=None,
    help="Last, write the config Flux's mf_priority plugin loads (what export-json prints) to "
    "PATH, replaced whole.",
)
@change_options
@click.pass_context
def cron_command(
    ctx: click.Context,
    source: str | None,
    fmt: str | None,
    skip_invalid: bool,
    export_json: str | None,
    actor: str | None,
    reason: str | None,
) -> None:
    """Ingest new jobs, update usage and fair-share, and write the scheduler's config: ingest,
    update-usage, update-fshare and export-json in one process."""
    if source is None and (fmt is not None or skip_invalid):
        raise click.UsageError("--format and --skip-invalid apply to --ingest FILE|-", ctx)
    if source is None:
        # A cycle without new jobs imports nothing of ingest (its parsing and validation):
        # that start-up is most of what a cron run every minute would pay.
        result = cron(session(ctx), None, export_json, actor, reason)
    else:
        from cli.ingest_output import shown_notes, summary
        from cli.jobs import source_lines

        chosen = fmt or DEFAULT_FORMAT
        jobs = JobInput(source_lines(source, chosen), source, chosen, skip_invalid)
        with shown_notes(f"{source}: ") as notes:
            result = cron(session(ctx), jobs, export_json, actor, reason, notes)
        if result.ingested is not None:
            summary(result.ingested)
    at = result.updated_at.isoformat()
    click.echo(f"usage updated at {at}")
    click.echo(f"fair-share updated at {at}")
    if result.exported_to is not None:
        click.echo(f"wrote {result.exported_to}")


COMMANDS = [cron_command]
