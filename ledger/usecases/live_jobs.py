"""jobs: a user's live jobs from a running Flux instance, with the factors of their priority:
the fair-share the priority plugin used (its annotation), and the ledger's current bank and
queue priorities and factor weights, as flux-accounting's `jobs` shows them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.errors import InvalidValue, NotFound
from ledger.flux_accounting.transport import LiveJobQuery, LiveJobSource
from ledger.job_ids import format_f58
from ledger.usecases.associations import check_names
from ledger.usecases.session import Session
from projections.queries import site as queries

# flux-accounting's columns, in order (`-o` names them).
JOB_PRIORITY_COLUMNS = [
    "JOBID",
    "USER",
    "BANK",
    "BANKPRIO",
    "BANKFACT",
    "QUEUE",
    "QPRIO",
    "QFACT",
    "FAIRSHARE",
    "FSFACTOR",
    "URGENCY",
    "URGFACT",
    "PRIORITY",
]


@dataclass(frozen=True)
class JobPriority:
    """One job's row, keyed by JOB_PRIORITY_COLUMNS, and its urgency as a number."""

    row: dict[str, Any]
    urgency: int


def job_priorities(
    s: Session, source: LiveJobSource, query: LiveJobQuery, bank: str | None = None
) -> list[JobPriority]:
    """The jobs `query` selects (in `bank` only, if given), each with its priority's factors.
    Refuses a user (or user and bank) the ledger has no association for, and a `since` after
    the ledger's now."""
    check_names(username=query.username, bank=bank, queue=query.queue)
    if query.since > s.ledger.now().timestamp():
        raise InvalidValue(f"--since appears to be in the future: {query.since}")
    conn = s.read()
    associations = queries.associations(conn, {"username": query.username, "bank": bank})
    if not associations:
        raise NotFound(f"could not find entry for {query.username} in association_table")
    bank_priority = {
        row["bank"]: row["priority"]
        for row in queries.banks(conn, include_inactive=True)
        if bank is None or row["bank"] == bank
    }
    if not bank_priority:
        raise NotFound(f"could not find entry for {bank} in bank_table")
    queue_priority = {row["queue"]: row["priority"] for row in queries.queues(conn)}
    weights = {row["factor"]: row["weight"] for row in queries.factors(conn)}
    out = []
    for job in source.live_jobs(query):
        # job-list does not filter by bank; flux-accounting filters here too.
        if bank is not None and job["bank"] != bank:
            continue
        row = {
            "JOBID": format_f58(int(job["id"])),
            "USER": job["username"],
            "BANK": job["bank"],
            "BANKPRIO": bank_priority.get(job["bank"], 0.0),
            "BANKFACT": weights.get("bank", 0),
            "QUEUE": job["queue"] or "",
            # Without queues in the ledger a job's queue adds nothing to its priority.
            "QPRIO": queue_priority.get(job["queue"], 0),
            "QFACT": weights.get("queue", 0),
            "FAIRSHARE": job["fairshare"],
            "FSFACTOR": weights.get("fairshare", 0),
            "URGENCY": job["urgency"],
            "URGFACT": weights.get("urgency", 0),
            "PRIORITY": job["priority"],
        }
        out.append(JobPriority(row, int(job["urgency"])))
    return out
