"""fetch-job-records: pull newly inactive jobs from a running Flux instance and record them
through the same exactly-once path as `ingest`."""

from __future__ import annotations

import click

from cli import jobs
from cli.params import TIME
from cli.session import change_options, session
from ledger.errors import LedgerError
from ledger.flux_accounting.transport import FluxUnavailable, JobSource, connect, fetch_records
from projections.queries import jobs as job_queries

# Re-reading the last hour costs little (recording is exactly-once) and, unlike
# flux-accounting's `since = MAX(t_inactive)`, never drops jobs that ended at the same second.
OVERLAP_SECONDS = 3600.0


def record_fetched(
    ctx: click.Context,
    source: JobSource,
    since: float | None,
    actor: str | None,
    reason: str | None,
) -> None:
    s = session(ctx)
    if since is None:
        newest = job_queries.newest_t_inactive(s.read())
        since = max(0.0, newest - OVERLAP_SECONDS) if newest is not None else 0.0
    records = fetch_records(source, since)
    # Validated and recorded like an ingested file, straight from memory: no temporary file
    # that a killed process could leave behind.
    counts = jobs.ingest_lines(
        s, "fetch-job-records", iter(records), "jsonl", False, actor, reason or "fetch-job-records"
    )
    jobs.report(counts)


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
    record_fetched(ctx, source, since, actor, reason)


COMMANDS = [fetch_job_records]
