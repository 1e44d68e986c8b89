"""fetch-job-records: the jobs a running Flux instance finished since the last fetch, recorded
through ingest's exactly-once path."""

from __future__ import annotations

from ledger.flux_accounting.transport import JobSource, fetch_records
from ledger.usecases.ingest import IngestNotes, IngestResult, ingest
from ledger.usecases.session import Session
from projections.queries import jobs as job_queries

# Re-reading the last hour costs little (recording is exactly-once) and, unlike
# flux-accounting's `since = MAX(t_inactive)`, never drops jobs that ended at the same second.
OVERLAP_SECONDS = 3600.0
SOURCE_NAME = "fetch-job-records"  # how the records' input is named in the log and in notes


def fetch_jobs(
    s: Session,
    source: JobSource,
    since: float | None = None,
    actor: str | None = None,
    reason: str | None = None,
    notes: IngestNotes | None = None,
) -> IngestResult:
    """Record the jobs `source` finished since `since` (default: an hour before the newest
    recorded job; every job when none is). Validated and recorded like an ingested file,
    straight from memory: no temporary file that a killed process could leave behind."""
    if since is None:
        newest = job_queries.newest_t_inactive(s.read())
        since = max(0.0, newest - OVERLAP_SECONDS) if newest is not None else 0.0
    records = fetch_records(source, since)
    return ingest(
        s, iter(records), SOURCE_NAME, "jsonl", False, actor, reason or SOURCE_NAME, notes
    )
