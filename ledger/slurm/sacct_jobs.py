"""sacct's ended jobs as ingest records (`ingest --format sacct`).

One item per input line, in the input's order, so that ingest's validation numbers every
refused line as the file does: a record for an ended job, "" for the header, a blank line, a
step or a job not ended yet (counted in `steps` and `unfinished`), and a `RejectedLine` for a
line sacct's reader or the record refuses.

A job becomes the record JSON ingest reads: `id` (JobIDRaw, else JobID), `cluster` (when the
column is there), `userid` (UID), `username` (User), `bank` (Account), `queue` (Partition),
`t_submit` (Submit), `t_run` (Start; End for a job that never started: it ran no time),
`t_inactive` (End), `nnodes`, `ncores` (NCPUS, else AllocTRES cpu), `ngpus` (AllocTRES
gres/gpu), and kept beside them `qos`, `tres` (AllocTRES, memory in MiB), `state`
(`CANCELLED by 0` as sacct prints it), `t_eligible`, `priority` (Slurm's recorded Priority),
`time_limit` (Timelimit, minutes) and `jobid` (JobID as printed, when it is not the id: an array
task's `123_4`): the priority audit (ledger.usecases.priority_audit) prices the job from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from ledger.errors import InvalidValue
from ledger.ingest import RejectedLine
from ledger.slurm._lines import LineError
from ledger.slurm.sacct import NO_HEADER, SacctHeaderError, SacctJob, SacctReader

GPU_TRES = "gres/gpu"  # the untyped GPU count; typed ones (gres/gpu:a100) are part of it

Item = dict[str, Any] | str | RejectedLine


class SacctRecords:
    """Iterate once over `lines` of sacct output (times in `timezone`) read from `name`."""

    def __init__(self, lines: Iterable[str], timezone: str, name: str) -> None:
        self.lines = lines
        self.reader = SacctReader(timezone)
        self.name = name

    @property
    def steps(self) -> int:
        return self.reader.steps

    @property
    def unfinished(self) -> Counter[str]:
        return self.reader.unfinished

    def __iter__(self) -> Iterator[Item]:
        for number, line in enumerate(self.lines, start=1):
            try:
                job = self.reader.read(number, line)
                yield "" if job is None else ingest_record(job)
            except SacctHeaderError as err:
                # Without its header no line can be read: the whole input is refused, even
                # with --skip-invalid.
                raise InvalidValue(
                    f"{self.name}: line {err.number}: {err.reason}; nothing recorded"
                ) from None
            except LineError as err:
                yield RejectedLine(str(err))
        if self.reader.header is None:
            raise InvalidValue(f"{self.name}: {NO_HEADER}; nothing recorded")


def ingest_record(job: SacctJob) -> dict[str, Any]:
    """The ingest record of one ended job (see the module docstring); LineError for a job
    whose id is not a number (an array task or a heterogeneous component without JobIDRaw)."""
    if not job.id.isdigit():
        raise LineError(
            f"job ID {job.id!r} is not a number: add JobIDRaw to sacct's --format"
            " (an array task's or a heterogeneous job's own id)"
        )
    record: dict[str, Any] = {
        "id": job.id,
        "userid": job.uid,
        "username": job.user,
        "bank": job.account,
        "queue": job.partition,
        "t_submit": job.t_submit,
        # A job cancelled before it started has no Start: it ran no time, so it costs nothing.
        "t_run": job.t_end if job.t_start is None else job.t_start,
        "t_inactive": job.t_end,
        "nnodes": job.nnodes,
        "ncores": job.ncpus,
        "ngpus": int(job.tres.get(GPU_TRES, 0)),
        "cluster": job.cluster,
        "qos": job.qos,
        "tres": dict(job.tres) if job.tres else None,
        "state": job.state if job.cancelled_by is None else f"{job.state} by {job.cancelled_by}",
        "t_eligible": job.t_eligible,
        "priority": job.priority,
        "time_limit": job.time_limit,
        "jobid": job.jobid if job.jobid != job.id else None,
    }
    return {key: value for key, value in record.items() if value is not None}
