"""The usage report (flux-accounting's view-usage-report, sreport-like): node-time used per
association, bank or user between two times, optionally split by job size."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from ledger.clock import iso
from ledger.errors import InvalidValue
from ledger.site_usage import AssociationResolver
from ledger.usecases.session import Session
from projections.queries import jobs as job_queries

ReportType = Literal["byassociation", "bybank", "byuser"]
TimeUnit = Literal["sec", "min", "hour"]

# flux-accounting's job-size bins (nodes), used when the bins asked for are not numbers.
DEFAULT_SIZE_BINS = (0, 2, 8, 32, 128, 512, 2048, 8192)
SECONDS_PER_UNIT: dict[str, float] = {"sec": 1.0, "min": 60.0, "hour": 3600.0}


@dataclass(frozen=True)
class UsageRow:
    label: str  # bank:username, bank or username, as the report type says
    values: tuple[float, ...]  # one per size bin (when there are bins), then the total

    @property
    def total(self) -> float:
        return self.values[-1]


@dataclass(frozen=True)
class UsageReport:
    start: float
    end: float
    report_type: ReportType
    size_bins: tuple[int, ...]  # () when not split by size
    rows: list[UsageRow]  # largest total first, then by label
    total: UsageRow  # labelled TOTAL


def usage_report(
    session: Session,
    start: float | None = None,
    end: float | None = None,
    username: str | None = None,
    bank: str | None = None,
    report_type: ReportType = "byassociation",
    time_unit: TimeUnit = "sec",
    size_bins: tuple[int, ...] | None = None,
) -> UsageReport:
    """Node-time (nodes × run time) of the jobs that ended in [start, end], in `time_unit`s.
    The default window is yesterday, midnight to midnight in the site's `timezone`, at the
    ledger's time (flux-accounting used the machine's local zone).
    A job counts for the association it resolves to now, like usage does."""
    conn = session.read()
    midnight = datetime.fromtimestamp(session.ledger.now().timestamp(), tz=session.zone()).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    end = midnight.timestamp() if end is None else end
    start = (midnight - timedelta(days=1)).timestamp() if start is None else start
    if end < start:
        raise InvalidValue(f"invalid range: end {iso(end)} is before start {iso(start)}")
    divisor = SECONDS_PER_UNIT[time_unit]
    bins = size_bins or ()
    resolver = AssociationResolver(session.ledger.state())
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0] * (len(bins) + 1))
    with job_queries.usage_report_jobs(conn, start, end) as jobs:
        for job in jobs:
            key = resolver.resolve(job["userid"], job["username"], job["bank"])
            user, job_bank = (
                key if key else (job["username"] or str(job["userid"]), job["bank"] or "")
            )
            if (username and user != username) or (bank and job_bank != bank):
                continue
            label = {"byassociation": f"{job_bank}:{user}", "bybank": job_bank, "byuser": user}[
                report_type
            ]
            value = job["nnodes"] * (job["t_inactive"] - job["t_run"]) / divisor
            sums = totals[label]
            if bins:
                # The largest bin the job reaches; a job smaller than the first bin counts in it.
                slot = max((i for i, b in enumerate(bins) if b <= job["nnodes"]), default=0)
                sums[slot] += value
            sums[-1] += value
    rows = [
        UsageRow(label, tuple(values))
        for label, values in sorted(totals.items(), key=lambda item: (-item[1][-1], item[0]))
    ]
    grand = [0.0] * (len(bins) + 1)
    for row in rows:
        grand = [a + b for a, b in zip(grand, row.values, strict=True)]
    return UsageReport(start, end, report_type, bins, rows, UsageRow("TOTAL", tuple(grand)))
