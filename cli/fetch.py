"""fetch-job-records: pull newly inactive jobs from a running Flux instance and record them
through the same exactly-once path as `ingest`."""

from __future__ import annotations

import click

from cli.ingest_output import shown_notes, summary
from cli.params import TIME
from cli.session import change_options, session
from ledger.errors import LedgerError
from ledger.flux_accounting.transport import FluxUnavailable, connect
from ledger.usecases.fetch import SOURCE_NAME, fetch_jobs


@click.command("fetch-job-records")
@click.option(
    "--since",
    type=TIME,
    default=None,
    help="Jobs inactive since this time (default: an hour before the newest recorded job).",
)
@change_options
@click.pass_context
def fetch_job_records(
    ctx: click.Context, since: float | None, actor: str | None, reason: str | None
) -> None:
    """Record the jobs a running Flux instance finished since the last fetch."""
    try:
        source = connect()
    except FluxUnavailable as err:
        raise LedgerError(str(err)) from None
    with shown_notes(f"{SOURCE_NAME}: ") as notes:
        result = fetch_jobs(session(ctx), source, since, actor, reason, notes)
    summary(result)


COMMANDS = [fetch_job_records]
