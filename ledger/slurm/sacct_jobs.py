"""sacct's ended jobs as ingest records (`ingest --format sacct`).

One item per input line, in the input's order, so that ingest's validation numbers every
refused line as the file does: a record for an ended job, "" for the header, a blank line, a
step or a job not ended yet (counted by kind: `steps`, and each unfinished state), and a
`RejectedLine` for a line sacct's reader or the record refuses.

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

import functools
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from ledger.errors import InvalidValue
from ledger.ingest import RejectedLine
from ledger.slurm._lines import LineError
from ledger.slurm.sacct import (
    _STATE,
    ENDED_STATES,
    NO_HEADER,
    NO_TIME,
    SacctHeaderError,
    SacctJob,
    SacctReader,
    _minutes,
    _time,
)
from ledger.slurm.tres import parse_tres

GPU_TRES = "gres/gpu"  # the untyped GPU count; typed ones (gres/gpu:a100) are part of it
STEPS = "steps"  # the kind of skipped line a job step is counted as, beside each unfinished state

Item = dict[str, Any] | str | RejectedLine


class SacctRecords:
    """`lines` of sacct output (times in `timezone`) read from `name`: the header (and any
    blank line before it) read by SacctReader, each later line by SacctLines."""

    def __init__(self, lines: Iterable[str], timezone: str, name: str) -> None:
        self.lines = lines
        self.reader = SacctReader(timezone)
        self.name = name

    def split(self) -> tuple[SacctLines, Iterator[str]]:
        """Read the input up to its header, the first line that is not blank: what reads each
        line into its item, and every line of the input (those read so far as "", the rest
        as they come). The whole input is refused, even with --skip-invalid, for a header that
        is bad or missing: without it no line can be read."""
        lines = iter(self.lines)
        for number, line in enumerate(lines, start=1):
            try:
                self.reader.read(number, line)
            except SacctHeaderError as err:
                raise InvalidValue(
                    f"{self.name}: line {err.number}: {err.reason}; nothing recorded"
                ) from None
            if self.reader.header is not None:
                return SacctLines(self.reader, number), itertools.chain([""] * number, lines)
        raise InvalidValue(f"{self.name}: {NO_HEADER}; nothing recorded")


class SacctLines:
    """The items of the lines after a sacct header, read by `reader` (which has read the header
    on line `header_line`; its counters count the steps and unfinished jobs).

    A line is first offered to `_FastLines`, which builds the record of an ordinary ended job,
    step or unfinished job directly; any line it does not vouch for is read by SacctReader and
    ingest_record, whose record or error stands. Picklable, so that ingest's helper processes
    read their own pieces of a long input (each with its copy, its counters starting where the
    header left them)."""

    def __init__(self, reader: SacctReader, header_line: int) -> None:
        self.reader = reader
        self.header_line = header_line
        self.fast = _FastLines(reader)

    def item(self, number: int, line: str) -> Item:
        """Line `number`'s item: a record, "" (the header or a blank line before it, a blank
        line, a step, a job not ended: the last two counted), or the line refused."""
        if number <= self.header_line:
            return ""
        try:
            item: Item | None = self.fast.record(line)
        except Exception:
            item = None  # not a line the fast path vouches for: the reader proper decides
        if item is not None:
            return item
        try:
            job = self.reader.read(number, line)
            return "" if job is None else ingest_record(job)
        except LineError as err:
            return RejectedLine(str(err))

    def items(self, lines: list[str], first_line: int) -> tuple[list[Item], Counter[str]]:
        """The items of `lines`, the first numbered `first_line`, and what they skipped:
        "steps" and each unfinished state, with their counts."""
        steps, unfinished = self.reader.steps, self.reader.unfinished.copy()
        items = [self.item(number, line) for number, line in enumerate(lines, start=first_line)]
        skipped = self.reader.unfinished - unfinished
        if self.reader.steps > steps:
            skipped[STEPS] = self.reader.steps - steps
        return items, skipped


def skipped_shown(skipped: Counter[str]) -> dict[str, int]:
    """What an ingest skipped, in the order it is told: steps first, then each state."""
    return {kind: skipped[kind] for kind in sorted(skipped, key=lambda k: (k != STEPS, k))}


def ingest_record(job: SacctJob) -> dict[str, Any]:
    """The ingest record of one ended job (see the module docstring); LineError for a job
    whose id is not a number (an array task or a heterogeneous component without JobIDRaw)."""
    if not job.id.isdecimal():
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


class _Doubt(Exception):
    """A line the fast path does not read: the reader proper reads or refuses it."""


class _FastLines:
    """The ingest records of the ordinary lines of one sacct file, several times faster than
    SacctReader.read and ingest_record (which build and validate a SacctJob per line).

    Exact by construction: it returns what those return for a line only when the line holds
    nothing it has not checked, and raises on anything else (a refused value, a job that is not
    a plain number, a field it cannot vouch for), so that SacctLines hands that line to the
    reader proper, whose record or error stands. It changes the reader's counters only when it
    returns. The header's columns are looked up once, as positions; repeated values (states,
    AllocTRES, time limits, a wall time's day, minute and second) are converted once each."""

    def __init__(self, reader: SacctReader) -> None:
        index = reader.index
        self.reader = reader
        self.width = len(reader.header or ())
        self.delimiter = reader.delimiter
        self.trailing = reader.trailing
        self.job_id = [index[c] for c in ("JobIDRaw", "JobID") if c in index]
        self.jobid = index.get("JobID")
        self.user, self.account = index["User"], index["Account"]
        self.partition, self.state = index["Partition"], index["State"]
        self.start, self.end = index["Start"], index["End"]
        self.tres = index.get("AllocTRES")
        self.ncpus, self.nnodes = index.get("NCPUS"), index.get("NNodes")
        self.submit, self.eligible = index.get("Submit"), index.get("Eligible")
        self.uid, self.priority = index.get("UID"), index.get("Priority")
        self.qos, self.cluster = index.get("QOS"), index.get("Cluster")
        self.limit = index.get("Timelimit")
        self.utc = reader.zone.key == "UTC"
        # UTC wall times, "YYYY-MM-DDTHH:MM:SS", as day + minute + second, each read once by
        # the reader's own _time and kept only when the three add up to its answer.
        self.days: dict[str, float] = {}
        self.minutes: dict[str, float] = {}
        self.seconds: dict[str, float] = {}

    def record(self, line: str) -> Item:
        """The line's ingest record, or "" for a step or a job not ended (counted)."""
        line = line.rstrip("\r\n")
        if self.trailing:
            if not line.endswith(self.delimiter):
                raise _Doubt
            line = line[: -len(self.delimiter)]
        values = line.split(self.delimiter)
        if len(values) != self.width:
            raise _Doubt
        job_id = ""
        for i in self.job_id:
            job_id = values[i].strip()
            if job_id:
                break
        if "." in job_id:
            self.reader.steps += 1
            return ""
        state, cancelled_by = _state_of(values[self.state])
        if state not in ENDED_STATES:
            self.reader.unfinished[state] += 1
            return ""
        if not job_id.isdecimal():  # an array task, a het component, a bad id: the reader's
            raise _Doubt
        if self.tres is None:
            tres: tuple[tuple[str, int | float], ...] = ()
            cpu = node = gpus = 0
        else:
            tres, cpu, node, gpus = _tres_of(values[self.tres].strip())
        ncpus = _count(values, self.ncpus)
        nnodes = _count(values, self.nnodes)
        end = self._time(values[self.end].strip())
        start = self._time(values[self.start].strip())
        user = values[self.user].strip()
        account = values[self.account].strip()
        if end is None or not user or not account or (start is not None and end < start):
            raise _Doubt
        limit = None if self.limit is None else _limit_of(values[self.limit].strip())
        jobid = None if self.jobid is None else values[self.jobid].strip() or None
        record: dict[str, Any] = {
            "id": job_id,
            "userid": _count(values, self.uid),
            "username": user,
            "bank": account,
            "queue": values[self.partition].strip() or None,
            "t_submit": None if self.submit is None else self._time(values[self.submit].strip()),
            "t_run": end if start is None else start,
            "t_inactive": end,
            "nnodes": node if nnodes is None else nnodes,
            "ncores": cpu if ncpus is None else ncpus,
            "ngpus": gpus,
            "cluster": None if self.cluster is None else values[self.cluster].strip() or None,
            "qos": None if self.qos is None else values[self.qos].strip() or None,
            "tres": dict(tres) if tres else None,
            "state": state if cancelled_by is None else f"{state} by {cancelled_by}",
            "t_eligible": (
                None if self.eligible is None else self._time(values[self.eligible].strip())
            ),
            "priority": _count(values, self.priority),
            "time_limit": limit,
            "jobid": jobid if jobid != job_id else None,
        }
        return {key: value for key, value in record.items() if value is not None}

    def _time(self, text: str) -> float | None:
        if text in NO_TIME:
            return None
        if self.utc:
            day = self.days.get(text[:11])
            minute = self.minutes.get(text[11:17])
            second = self.seconds.get(text[17:])
            if day is not None and minute is not None and second is not None:
                return day + minute + second
        if text.isdecimal() and len(text) <= 12:
            return float(int(text))
        value = _time({"t": text}, "t", self.reader.zone)
        if value is None:
            raise _Doubt
        if self.utc and len(text) == 19 and text[10] == "T" and text.isascii():
            self._learn(text, value)
        return value

    def _learn(self, text: str, value: float) -> None:
        """Keep the parts of a wall time the reader read as `value`: each is read alone by
        the reader, and kept only if they add up to its answer."""
        if len(self.days) >= _MAX_DAYS:
            return
        zone = self.reader.zone
        day = _time({"t": text[:11] + "00:00:00"}, "t", zone)
        minute = _time({"t": "1970-01-01T" + text[11:17] + "00"}, "t", zone)
        second = _time({"t": "1970-01-01T00:00:" + text[17:]}, "t", zone)
        if day is None or minute is None or second is None or day + minute + second != value:
            return
        self.days[text[:11]] = day
        self.minutes[text[11:17]] = minute
        self.seconds[text[17:]] = second


_MAX_DAYS = 100_000  # distinct days kept: about 270 years of jobs, a bound on hostile input


def _count(values: list[str], column: int | None) -> int | None:
    """A whole-number column; None when absent or blank."""
    if column is None:
        return None
    text = values[column].strip()
    if not text:
        return None
    if not text.isdecimal():
        raise _Doubt
    return int(text)


@functools.lru_cache(maxsize=256)
def _state_of(text: str) -> tuple[str, int | None]:
    match = _STATE.fullmatch(text.strip())
    if match is None:
        raise _Doubt
    by = match.group(2)
    return match.group(1), int(by) if by is not None else None


@functools.lru_cache(maxsize=4096)
def _tres_of(text: str) -> tuple[tuple[tuple[str, int | float], ...], int, int, int]:
    """AllocTRES's items and the cpu, node and untyped GPU counts drawn from them."""
    tres = parse_tres(text)
    if not all(math.isfinite(count) and count >= 0 for count in tres.values()):
        raise _Doubt
    items = tuple(tres.items())
    return items, int(tres.get("cpu", 0)), int(tres.get("node", 0)), int(tres.get(GPU_TRES, 0))


@functools.lru_cache(maxsize=1024)
def _limit_of(text: str) -> int | None:
    minutes = _minutes({"Timelimit": text}, "Timelimit")
    if minutes is not None and minutes < 0:
        raise _Doubt
    return minutes
