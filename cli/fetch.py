"""fetch-job-records: pull newly inactive jobs from a running Flux instance and record them
through the same exactly-once path as `ingest`."""

from __future__ import annotations

import json
import os
import tempfile

import click

from cli import jobs
from cli.params import TIME
from cli.session import change_options, session
from ledger.errors import LedgerError
from ledger.flux_transport import FluxUnavailable, JobSource, connect, fetch_records
from projections import job_queries

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
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    try:
        ctx.invoke(
            jobs.ingest,
            source=handle.name,
            fmt="jsonl",
            skip_invalid=False,
            actor=actor,
            reason=reason or "fetch-job-records",
        )
    finally:
        os.unlink(handle.name)


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
