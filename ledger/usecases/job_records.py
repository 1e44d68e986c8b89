"""view-job-records: the recorded jobs a filter selects, as flux-accounting lists them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ledger.clock import AsOf
from ledger.job_ids import format_f58
from ledger.site_usage import AssociationResolver
from ledger.usecases.session import Session
from projections.queries import jobs as job_queries

Comparison = tuple[str, float]  # ("<", 3600.0): an operator of <, <=, =, >=, > and seconds


@dataclass(frozen=True)
class JobFilter:
    """flux-accounting's view-job-records filters; a None (or empty) one selects every job."""

    user: str | None = None  # a username, or a numeric userid
    job_id: int | None = None
    after_start: float | None = None  # t_run > this
    before_end: float | None = None  # t_inactive < this
    project: str | None = None
    bank: str | None = None
    requested: list[Comparison] = field(default_factory=list)  # requested duration
    actual: list[Comparison] = field(default_factory=list)  # t_inactive - t_run
    delta: list[Comparison] = field(default_factory=list)  # requested - actual


@contextmanager
def view_job_records(
    s: Session, selected: JobFilter, as_of: AsOf | None = None
) -> Iterator[Iterator[dict[str, Any]]]:
    """The jobs `selected` (recorded by the moment `as_of` names, if given), in the order they
    ended, each with its `jobid` as its scheduler writes it (Flux's F58; a Slurm site's
    decimal, as sacct and squeue print it) and its owner's name: streamed, so that a listing
    of millions of jobs holds one batch at a time."""
    conn = s.read()
    max_position = s.moment(as_of).position if as_of is not None else None
    state = s.ledger.state()  # before the stream: nothing else may use the connection in it
    owners = AssociationResolver(state).user_of_uid
    shown = str if state.slurm_site else format_f58
    with job_queries.job_records(
        conn,
        max_position=max_position,
        user=selected.user,
        job_id=selected.job_id,
        after_start=selected.after_start,
        before_end=selected.before_end,
        project=selected.project,
        bank=selected.bank,
        requested=selected.requested,
        actual=selected.actual,
        delta=selected.delta,
    ) as rows:
        yield _named(rows, owners, shown)


def _named(
    rows: Iterator[dict[str, Any]], owners: dict[int, str], shown: Callable[[int], str]
) -> Iterator[dict[str, Any]]:
    for row in rows:
        row["jobid"] = shown(int(row["id"]))
        if row["username"] is None and row["userid"] is not None:
            row["username"] = owners.get(row["userid"])  # named, as flux-accounting does
        yield row
