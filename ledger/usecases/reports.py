"""Reports over the ledger's history: why a recorded job got its priority (on a Slurm site also
Slurm's multifactor priority beside the one Slurm recorded), and one association's fair-share at
every update-fshare."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.errors import NotFound
from ledger.usecases.priority_audit import (
    NOT_SLURM,
    JobAudit,
    NotSlurmThen,
    audit_recorded_job,
    is_slurm_site,
)
from ledger.usecases.session import Session
from projections.queries.as_of import Snapshots
from projections.queries.explain import Explanation, explain_job, slurm_record
from projections.queries.fairshare_history import HistoryRow, fairshare_history


def explain(
    session: Session, job_id: int, cluster: str | None = None, shown: str | None = None
) -> Explanation:
    """The priority recorded job `job_id` had at its submission, factor by factor, and the usage
    behind its fair-share. `shown`: the ID as the user wrote it, for messages."""
    return explain_job(session.ledger, session.read(), job_id, cluster, shown=shown)


def explain_slurm(session: Session, explanation: Explanation) -> JobAudit | str | None:
    """explain-job's Slurm part: on a Slurm site the job priced at its eligible time and at its
    start beside the Priority Slurm recorded; elsewhere, for a job that carries a Slurm
    Priority, the one line why it is not compared; None for any other job."""
    job = explanation.job
    if is_slurm_site(session):
        try:
            return audit_recorded_job(session, job.cluster, job.id)
        except NotSlurmThen as err:
            # A job of the site's weighted-walk days: explained as it was ranked then.
            return f"not compared with Slurm's formula: {err}"
    recorded = slurm_record(session.read(), job.cluster, job.id).recorded
    if recorded is None:
        return None
    return f"recorded by Slurm: {recorded}; not compared: {NOT_SLURM}"


@dataclass(frozen=True)
class FairshareHistory:
    username: str
    bank: str  # the one asked for, or the user's default bank
    rows: list[HistoryRow]  # oldest first; empty when no snapshot falls in the window


def fairshare_history_of(
    session: Session,
    username: str,
    bank: str | None = None,
    start: float | None = None,
    end: float | None = None,
) -> FairshareHistory:
    """The association's usage and fair-share at every snapshot from `start` to `end`, each as
    it was then. An association that exists now but has no snapshot in the window has no rows;
    one that never existed is NotFound."""
    conn = session.read()
    current = session.ledger.state()
    if bank is None:
        bank = current.default_banks.get(username)
        if bank is None:
            raise NotFound(f"user {username} not found in association_table")
    rows = fairshare_history(Snapshots(session.ledger, conn), (username, bank), start, end)
    if not rows and current.association(username, bank) is None:
        raise NotFound(f"user {username} not found in bank {bank}")
    return FairshareHistory(username, bank, rows)
