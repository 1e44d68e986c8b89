"""`sacct -a -X -P --format=...` output: ended jobs with their allocated TRES.

The first non-blank line is the header; columns are found by name (any order, any case).
Needed: JobIDRaw or JobID, User, Account, Partition, Start, End, State, and AllocTRES or NCPUS.
Read when present: Submit, Eligible, QOS, UID, NNodes, Cluster, Priority, Timelimit (minutes;
UNLIMITED and Partition_Limit are none). Other columns are ignored. `-P` lines (`a|b|c`) and
`-p` lines (`a|b|c|`, a trailing delimiter, as the header shows) are both read.

* Times are what `slurm_make_time_str` prints: `%FT%T` in the local time of the machine that
  ran sacct (give its IANA zone; a wall time that does not exist there is an error, and one that
  exists twice in a DST fold is read as the first), or epoch seconds (`SLURM_TIME_FORMAT=%s`).
  `Unknown` (time 0) and `None` (NO_VAL) are no time.
* A job counts if its State is one an ended job has: COMPLETED, FAILED, CANCELLED (also
  `CANCELLED by <uid>`), TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE.
  Other states (PENDING, RUNNING, SUSPENDED, REQUEUED, RESIZING, ...) are skipped and counted
  by state; step lines (`123.batch`, `123.extern`, `123.0`, `123_4.batch`) are skipped and
  counted. An ended job must have an End; a job that never started has Start `Unknown`/`None`
  and `t_start` None.
* AllocTRES is parsed by `ledger.slurm.tres.parse_tres` (memory in MiB).

Errors: InvalidValue with one line per offending line, naming it and its bad value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ledger.continuous_usage import zone_of
from ledger.errors import InvalidValue
from ledger.slurm._lines import LineError, LineErrors, split_parsable
from ledger.slurm.conf import INFINITE, NO_VAL, time_str2mins
from ledger.slurm.tres import parse_tres

ENDED_STATES: frozenset[str] = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
    }
)
"""Base states of a job that has ended (sacct's `job_state_string`)."""

REQUIRED_COLUMNS = ("User", "Account", "Partition", "Start", "End", "State")
OPTIONAL_COLUMNS = (
    "JobIDRaw",
    "JobID",
    "AllocTRES",
    "NCPUS",
    "Submit",
    "Eligible",
    "QOS",
    "UID",
    "NNodes",
    "Cluster",
    "Priority",
    "Timelimit",
)
NO_TIME = frozenset({"Unknown", "None", ""})
SACCT_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"  # slurm_make_time_str's %FT%T, a wall time

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
_EPOCH = re.compile(r"-?\d+")
_EPOCH_WALL = datetime(1970, 1, 1)
_STATE = re.compile(r"([A-Z_]+)(?: by (\d+))?\+?")
_JOB_ID = re.compile(r"\d+(?:_\d+|\+\d+)?")

EpochSeconds = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]


class SacctJob(BaseModel):
    """One ended job as sacct reports it. Times are epoch seconds; `tres` is AllocTRES with
    lower-case names and memory in MiB."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """JobIDRaw if given (`123`), else JobID (`123`, `123_4` for an array task, `123+0` for a
    heterogeneous job's component)."""
    jobid: str | None = None
    """JobID as sacct prints it (`123_4`), when that column is there."""
    cluster: str | None = None
    user: str = Field(min_length=1)
    uid: Count | None = None
    account: str = Field(min_length=1)
    partition: str | None = None
    qos: str | None = None
    t_submit: EpochSeconds | None = None
    t_eligible: EpochSeconds | None = None
    t_start: EpochSeconds | None = None
    t_end: EpochSeconds
    state: str
    cancelled_by: Count | None = None
    tres: dict[str, int | float] = Field(default_factory=dict)
    nnodes: Count
    ncpus: Count
    priority: Count | None = None
    time_limit: Count | None = None
    """Timelimit in minutes; None when unlimited, the partition's, or not given."""

    @model_validator(mode="after")
    def _times_in_order(self) -> SacctJob:
        if self.t_start is not None and self.t_end < self.t_start:
            raise ValueError(f"End {self.t_end:g} is before Start {self.t_start:g}")
        if self.state not in ENDED_STATES:
            raise ValueError(f"State {self.state!r} is not an ended state")
        for name, count in self.tres.items():
            if not math.isfinite(count) or count < 0:
                raise ValueError(f"AllocTRES {name}={count!r} is not a count")
        return self

    @property
    def elapsed(self) -> float:
        """Seconds from Start to End; 0 for a job that never started."""
        return 0.0 if self.t_start is None else self.t_end - self.t_start


@dataclass(frozen=True)
class SacctResult:
    """The ended jobs, in input order, and what was skipped."""

    jobs: tuple[SacctJob, ...]
    skipped_steps: int = 0
    skipped_unfinished: Mapping[str, int] = field(default_factory=dict)
    """Jobs whose State is not an ended one, counted by State (`RUNNING`: 3, ...)."""
    columns: tuple[str, ...] = ()

    @property
    def unfinished(self) -> int:
        return sum(self.skipped_unfinished.values())


def parse_sacct(text: str, timezone: str = "UTC", delimiter: str = "|") -> SacctResult:
    """Parse sacct's parsable output (see the module docstring). `timezone`: the IANA zone
    sacct printed its times in."""
    reader = SacctReader(timezone, delimiter)
    errors = LineErrors("sacct")
    jobs: list[SacctJob] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            job = reader.read(number, line)
        except LineError as exc:
            errors.add(number, str(exc))
            continue
        if job is not None:
            jobs.append(job)
    if reader.header is None:
        raise InvalidValue(f"sacct: {NO_HEADER}")
    errors.raise_if_any()
    return SacctResult(tuple(jobs), reader.steps, dict(reader.unfinished), reader.header)


NO_HEADER = "no header line (run sacct with -P and without -n)"


class SacctHeaderError(InvalidValue):
    """The header line cannot be read (a column missing or repeated): nothing of the input
    can be, so this stops the whole parse, whatever else is wrong."""

    def __init__(self, number: int, reason: str) -> None:
        super().__init__(f"sacct line {number}: {reason}")
        self.number = number
        self.reason = reason


class SacctReader:
    """sacct's lines read one at a time, so that a large input is never held whole: the first
    non-blank line is the header, each later one a job, a step or a job not ended yet (these
    two are counted in `steps` and `unfinished`)."""

    def __init__(self, timezone: str = "UTC", delimiter: str = "|") -> None:
        self.zone = zone_of(timezone)
        self.delimiter = delimiter
        self.header: tuple[str, ...] | None = None
        self.trailing = False
        self.index: dict[str, int] = {}
        self.steps = 0
        self.unfinished: Counter[str] = Counter()

    def read(self, number: int, line: str) -> SacctJob | None:
        """The ended job on line `number`; None for a blank line, the header, a step or an
        unfinished job. SacctHeaderError for a bad header, LineError for a bad job line."""
        line = line.rstrip("\r\n")
        if not line.strip():
            return None
        if self.header is None:
            self.trailing = line.endswith(self.delimiter)
            header = [h.strip() for h in split_parsable(line, self.delimiter, self.trailing)]
            self.index = _column_index(header, number)
            self.header = tuple(header)
            return None
        values = split_parsable(line, self.delimiter, self.trailing)
        if len(values) != len(self.header):
            raise LineError(f"{len(values)} fields for {len(self.header)} columns: {line!r}")
        row = {name: values[i].strip() for name, i in self.index.items()}
        job_id = row.get("JobIDRaw") or row.get("JobID") or ""
        if "." in job_id:
            self.steps += 1
            return None
        state, cancelled_by = _state(row["State"])
        if state not in ENDED_STATES:
            self.unfinished[state] += 1
            return None
        return _job(row, job_id, state, cancelled_by, self.zone)


def _column_index(header: list[str], number: int) -> dict[str, int]:
    known = {name.lower(): name for name in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS)}
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        canonical = known.get(name.lower())
        if canonical is None:
            continue
        if canonical in index:
            raise SacctHeaderError(number, f"column {name!r} appears twice")
        index[canonical] = i
    missing = [c for c in REQUIRED_COLUMNS if c not in index]
    if "JobIDRaw" not in index and "JobID" not in index:
        missing.insert(0, "JobIDRaw or JobID")
    if "AllocTRES" not in index and "NCPUS" not in index:
        missing.append("AllocTRES or NCPUS")
    if missing:
        raise SacctHeaderError(
            number, f"the header lacks {', '.join(missing)} (columns: {'|'.join(header)})"
        )
    return index


def _state(text: str) -> tuple[str, int | None]:
    match = _STATE.fullmatch(text.strip())
    if match is None:
        raise LineError(f"State {text!r} is not a job state")
    by = match.group(2)
    return match.group(1), int(by) if by is not None else None


def _job(
    row: Mapping[str, str], job_id: str, state: str, cancelled_by: int | None, zone: Any
) -> SacctJob:
    if not _JOB_ID.fullmatch(job_id):
        raise LineError(f"job ID {job_id!r} is not a job ID")
    tres: dict[str, int | float] = {}
    if "AllocTRES" in row:
        try:
            tres = parse_tres(row["AllocTRES"])
        except ValueError as exc:
            raise LineError(f"AllocTRES: {exc}") from None
    ncpus = _int(row, "NCPUS")
    if ncpus is None:
        ncpus = int(tres.get("cpu", 0))
    nnodes = _int(row, "NNodes")
    if nnodes is None:
        nnodes = int(tres.get("node", 0))
    end = _time(row, "End", zone)
    if end is None:
        raise LineError(f"End {row['End']!r}: an ended job ({state}) needs an End time")
    data: dict[str, Any] = {
        "id": job_id,
        "jobid": row.get("JobID") or None,
        "cluster": row.get("Cluster") or None,
        "user": row["User"],
        "uid": _int(row, "UID"),
        "account": row["Account"],
        "partition": row["Partition"] or None,
        "qos": row.get("QOS") or None,
        "t_submit": _time(row, "Submit", zone),
        "t_eligible": _time(row, "Eligible", zone),
        "t_start": _time(row, "Start", zone),
        "t_end": end,
        "state": state,
        "cancelled_by": cancelled_by,
        "tres": tres,
        "nnodes": nnodes,
        "ncpus": ncpus,
        "priority": _int(row, "Priority"),
        "time_limit": _minutes(row, "Timelimit"),
    }
    try:
        return SacctJob.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        value = data.get(str(first["loc"][0]), "") if first["loc"] else ""
        label = f"{where} {value!r}: " if where else ""
        raise LineError(f"job {job_id}: {label}{first['msg']}") from None


def _int(row: Mapping[str, str], column: str) -> int | None:
    text = row.get(column)
    if text is None or text == "":
        return None
    if not text.isdecimal():  # isdigit() admits "²", which int() refuses
        raise LineError(f"{column} {text!r} is not a whole number >= 0")
    return int(text)


def _minutes(row: Mapping[str, str], column: str) -> int | None:
    text = row.get(column)
    if text is None or text in ("", "UNLIMITED", "Partition_Limit"):
        return None
    minutes = time_str2mins(text)
    if minutes in (INFINITE, NO_VAL):
        raise LineError(f"{column} {text!r} is not a time limit ([D-]HH:MM:SS or UNLIMITED)")
    return minutes


def _not_a_time(column: str, text: str) -> LineError:
    return LineError(
        f"{column} {text!r} is not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown or None)"
    )


def _time(row: Mapping[str, str], column: str, zone: Any) -> float | None:
    text = row.get(column)
    if text is None or text in NO_TIME:
        return None
    if _EPOCH.fullmatch(text):
        try:
            return float(int(text))
        except OverflowError:  # more digits than a float holds: no time at all
            raise _not_a_time(column, text) from None
    if not _ISO.fullmatch(text):
        raise _not_a_time(column, text)
    try:
        wall = _wall_time(text)
    except ValueError:
        raise LineError(f"{column} {text!r} is not a valid date and time") from None
    if zone.key == "UTC":  # no gap to look for: the seconds since the epoch, as timestamp() does
        return (wall - _EPOCH_WALL).total_seconds()
    local = wall.replace(tzinfo=zone)
    stamp = local.timestamp()
    if datetime.fromtimestamp(stamp, zone).replace(tzinfo=None) != wall:
        raise LineError(f"{column} {text!r} does not exist in time zone {zone.key} (a DST gap)")
    return stamp


def _wall_time(text: str) -> datetime:
    """A time _ISO lets through, as strptime(SACCT_TIME_FORMAT) reads it. fromisoformat reads
    the ASCII-digit form at a tenth of the cost and gives the same wall time; whatever it
    refuses (a day out of range, digits of another script, which _ISO's \\d lets through) is
    left to strptime, so the answer is strptime's either way."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return datetime.strptime(text, SACCT_TIME_FORMAT)
