"""The job log: completed jobs recorded in batches of at most BATCH_SIZE, one stream for all.

A batch keeps one stored event small (a job per event would make a million events, a whole
ingest in one event would not fit a transaction). Exactly-once does not rest on this stream's
version nor on a read model: the writers' lock serializes appends, and the log's own key index
(`job_keys`, ledger.store.log_tables) holds every recorded (cluster, id) with the digest of what it
said. The aggregate's state is never loaded.
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
