"""A ledger for use-case tests: a real SQLite file, built and read through the use-case layer
alone (no CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.ingest import to_record, weights
from ledger.jobs import validate_job
from ledger.site import Site, Stamp
from ledger.usecases import admin
from ledger.usecases.session import Session
from tests.conftest import T0

WEEK = 7 * 86400.0


def new_ledger(path: Path, now: float = T0, half_life: float = WEEK) -> Session:
    """A session on a new, empty SQLite ledger created at `now`."""
    session = Session(f"sqlite:///{path / 'ledger.db'}", str(now))
    admin.create_ledger(session, half_life, 4 * half_life, 0.5, False, "tester", "a test")
    return session


def change(session: Session, command: Any) -> Any:
    """Run a Site command (site, stamp) -> result at the session's time."""

    def typed(site: Site, stamp: Stamp) -> Any:
        return command(site, stamp)

    return session.change(typed, reason="a test")


def record(session: Session, *jobs: dict[str, Any]) -> None:
    """Record completed jobs, priced with the weights in force, as ingest records them."""
    node_w, core_w, gpu_w = weights(session.ledger.state())
    session.ledger.record_jobs(
        [to_record(validate_job(job), node_w, core_w, gpu_w) for job in jobs]
    )


def ended(job_id: int, userid: int, end: float, seconds: float, nnodes: int = 1) -> dict[str, Any]:
    """A job of `userid` that ran `seconds` on `nnodes` nodes and ended at `end`."""
    return {
        "id": job_id,
        "userid": userid,
        "t_submit": end - seconds,
        "t_run": end - seconds,
        "t_inactive": end,
        "nnodes": nnodes,
        "ncores": nnodes,
    }
