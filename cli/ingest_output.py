"""How an ingest shows itself, whichever command ran it (ingest, fetch-job-records,
import-flux-accounting, demo): its notes on stderr as they happen, a progress bar on a
terminal, and its one-line summary."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from ledger.usecases.ingest import CHUNK_LINES, Conflict, IngestNotes, IngestResult

if TYPE_CHECKING:
    from ledger.ingest import BadLine


def summary(result: IngestResult) -> None:
    """The one-line summary of an ingest (stdout), and a word on stderr when nothing was new."""
    click.echo(
        f"recorded {result.recorded}, duplicate {result.duplicate}, "
        f"unmatched {result.unmatched}"
        + (f", invalid {result.invalid}" if result.invalid else "")
        + (f", conflicting {result.conflicting}" if result.conflicting else "")
        + _skipped(result.skipped)
    )
    if result.recorded == 0 and result.duplicate:
        click.echo("nothing new: every job was already recorded", err=True)


def _skipped(skipped: dict[str, int]) -> str:
    """`, skipped 5 (steps 3, PENDING 1, RUNNING 1)`: lines read that are no ended job."""
    if not skipped:
        return ""
    kinds = ", ".join(f"{kind} {n}" for kind, n in skipped.items())
    return f", skipped {sum(skipped.values())} ({kinds})"


@contextmanager
def shown_notes(where: str) -> Iterator[IngestNotes]:
    """Notes that print as the ingest runs; `where` names the input before a set-aside line
    ("week1.jsonl: ", "site.db jobs row ")."""
    bar = _ProgressBar()

    def skipped(bad: BadLine) -> None:
        click.echo(f"fairledger: skipped {where}{bad}", err=True)

    try:
        yield IngestNotes(
            skipped=skipped,
            conflict=_conflict,
            progress=bar.update,
        )
    finally:
        bar.close()


def _conflict(conflict: Conflict) -> None:
    cluster, job_id = conflict.key
    where = (
        f"the record at log position {conflict.position}"
        if conflict.position
        else "an earlier line of this input"
    )
    click.echo(
        f"fairledger: conflict: job {job_id} (cluster {cluster}) differs from {where}; "
        "not recorded",
        err=True,
    )


class _ProgressBar:
    """A transient bar on stderr while the jobs are recorded, only on a terminal and only for
    an input of more than one validation chunk (a small ingest ends before it would show)."""

    def __init__(self) -> None:
        self.progress: Any = None
        self.task: Any = None
        self.decided = False

    def update(self, done: int, total: int) -> None:
        if not self.decided:
            self.decided = True
            if sys.stderr.isatty() and total > CHUNK_LINES:
                from rich.progress import Progress  # imported only when a bar shows

                self.progress = Progress(transient=True)
                self.progress.start()
                self.task = self.progress.add_task("ingesting", total=total)
        if self.progress is not None:
            # A file recorded while it is validated grows its total as it is read.
            self.progress.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
