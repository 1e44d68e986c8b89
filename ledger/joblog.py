"""The job log: completed jobs recorded in batches (batches keep one stored event small; see docs/architecture.md).

One stream for all batches: its version is the ingest's optimistic-concurrency guard. An
ingester reads the head version, drops the jobs the read model already knows, and appends at
head+1; a concurrent ingester that appended first makes that write conflict, and the loser
re-checks against the jobs it recorded. So a job is recorded once per (cluster, id), even with
two ingesters at once. The aggregate's state is never loaded: the read model is the state.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

JOBLOG_ID = uuid5(NAMESPACE_URL, "fairledger:joblog")
BATCH_SIZE = 1000  # jobs per event: keeps one stored event well under a few hundred KB


class JobLog(Aggregate):
    class Opened(Aggregate.Created):
        actor: str
        reason: str
        source: dict[str, Any]

    class JobsRecorded(Aggregate.Event):
        """A batch of completed jobs, each a primitive record (see ledger.ingest.to_record)."""

        actor: str
        reason: str
        source: dict[str, Any]
        records: list[dict[str, Any]]

    @classmethod
    def open(cls, **stamp: Any) -> JobLog:
        return cls._create(cls.Opened, id=JOBLOG_ID, **stamp)


def job_key(record: dict[str, Any]) -> tuple[str, str]:
    """(cluster, decimal job id): what makes a job the same job."""
    return (str(record["cluster"]), str(record["id"]))
