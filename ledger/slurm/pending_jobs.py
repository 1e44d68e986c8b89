"""Pending jobs for `sprio`: JSON lines, or the JSON `squeue --json` prints.

Told apart by their shape: a document that is one JSON object with a `jobs` list is squeue's;
anything else is read one JSON object per line (blank lines skipped).

**JSON lines**, one pending job each (unknown fields are refused, to catch typos):

* `job_id` (required, 1..4294967294), `user` (or `username`, required), `account` (or
  `bank`; default: the user's default bank), `partition` (or `queue`; a comma list prices the
  job in each, as Slurm does a multi-partition job; default: the site's only queue), `qos`
  (a comma list likewise; default: the association's DefaultQOS);
* `submit_time` (required), `eligible_time` (Slurm's begin time; default `submit_time`),
  `accrue_time` (when age starts counting; default `eligible_time`): epoch seconds;
* `nodes` (or `min_nodes`, default 1), `cpus` (default 0: none given), `time_limit`
  (minutes; default none), `nice` and `site_factor` (default 0, within ±2147483645);
* `tres`: requested TRES as an object (`{"mem": 8000, "gres/gpu": 2}`) or a string
  (`"cpu=4,mem=8G"`), memory in MiB (a K/M/G/T/P suffix is converted).

**squeue --json** (data_parser v0.0.40 and later; `{"set", "infinite", "number"}` objects or
plain numbers): `job_id`, `user_name`, `account`, `partition`, `qos`, `submit_time`,
`eligible_time`, `accrue_time`, `node_count`, `cpus`, `time_limit`, `nice`, `tres_req_str`,
`job_state`, `priority`/`hold`. Jobs whose state is not PENDING are skipped and counted by
state; so are held ones (priority 0, as sprio skips them). An unset `eligible_time` or
`accrue_time` is 0, Slurm's "not yet": the job is not eligible, or does not accrue age. squeue
carries no SiteFactor: it counts as 0. Other fields are ignored.

Errors: InvalidValue naming the line (JSON lines) or the job's index and id (squeue), the field
and the value.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from ledger import bounds
from ledger.errors import InvalidValue
from ledger.jobs import describe_validation_error
from ledger.site_config import csv_items
from ledger.slurm.tres import parse_tres
from ledger.slurm_priority import NICE_LIMIT, UINT32_MAX, tres_key

PENDING = "PENDING"
HELD = "held"  # the skipped count of held pending jobs, beside the states
JSON_LINES = "JSON lines"
SQUEUE_JSON = "squeue --json"

JobId = Annotated[int, Strict(), Field(ge=1, le=UINT32_MAX - 1)]
Epoch = Annotated[int, Strict(), Field(ge=0, le=int(bounds.TIME_MAX))]
Count = Annotated[int, Strict(), Field(ge=0, le=UINT32_MAX - 1)]
Signed = Annotated[int, Strict(), Field(ge=-NICE_LIMIT, le=NICE_LIMIT)]
Name = Annotated[str, Field(min_length=1)]


@dataclass(frozen=True)
class PendingJobInput:
    """One pending job as given. `eligible` None: not eligible yet; `accrue` None: not
    accruing age; `partitions`/`qos` empty: the defaults; `where` names it in errors."""

    job_id: int
    user: str
    account: str | None
    partitions: tuple[str, ...]
    qos: tuple[str, ...]
    submit: int
    eligible: int | None
    accrue: int | None
    nodes: int = 1
    cpus: int = 0
    time_limit: int | None = None
    nice: int = 0
    site_factor: int = 0
    tres: Mapping[str, int] = field(default_factory=dict)
    where: str = ""


@dataclass(frozen=True)
class PendingJobs:
    """The pending jobs in input order, and the jobs skipped, counted by state (`held` too)."""

    jobs: tuple[PendingJobInput, ...]
    skipped: Mapping[str, int]
    source: str


def parse_pending_jobs(text: str) -> PendingJobs:
    """Read JSON lines or squeue's JSON (see the module docstring)."""
    document = _whole_document(text)
    if isinstance(document, dict) and "jobs" in document:
        return _squeue(document)
    jobs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            jobs.append(_json_line(line, f"jobs line {number}"))
    return PendingJobs(tuple(jobs), {}, JSON_LINES)


def _whole_document(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None  # JSON lines (or garbage, which the line reader names)


# --- JSON lines ----------------------------------------------------------------------------------

_ALIASES = {"username": "user", "bank": "account", "queue": "partition", "min_nodes": "nodes"}


class PendingJobLine(BaseModel):
    """One JSON line; see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: JobId
    user: Name
    account: Name | None = None
    partition: Name | None = None
    qos: Name | None = None
    submit_time: Epoch
    eligible_time: Epoch | None = None
    accrue_time: Epoch | None = None
    nodes: Annotated[int, Strict(), Field(ge=1, le=UINT32_MAX - 1)] = 1
    cpus: Count = 0
    time_limit: Annotated[int, Strict(), Field(ge=1, le=UINT32_MAX - 1)] | None = None
    nice: Signed = 0
    site_factor: Signed = 0
    tres: dict[str, Count] | str | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for alias, name in _ALIASES.items():
            if alias in out:
                if name in out:
                    raise ValueError(f"give {name} or {alias}, not both")
                out[name] = out.pop(alias)
        return out


def _json_line(line: str, where: str) -> PendingJobInput:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidValue(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise InvalidValue(f"{where}: not valid JSON: nested too deep") from None
    if not isinstance(data, dict):
        raise InvalidValue(f"{where}: a pending job must be a JSON object")
    try:
        job = PendingJobLine.model_validate(data)
    except ValidationError as exc:
        raise InvalidValue(f"{where}: {describe_validation_error(exc)}") from None
    eligible = job.submit_time if job.eligible_time is None else job.eligible_time
    return PendingJobInput(
        job_id=job.job_id,
        user=job.user,
        account=job.account,
        partitions=tuple(csv_items(job.partition or "")),
        qos=tuple(csv_items(job.qos or "")),
        submit=job.submit_time,
        eligible=eligible,
        accrue=eligible if job.accrue_time is None else job.accrue_time,
        nodes=job.nodes,
        cpus=job.cpus,
        time_limit=job.time_limit,
        nice=job.nice,
        site_factor=job.site_factor,
        tres=_tres(job.tres, where),
        where=where,
    )


def _tres(value: Mapping[str, int | float] | str | None, where: str) -> dict[str, int]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            counts = parse_tres(value)
        except ValueError as exc:
            raise InvalidValue(f"{where}: tres: {exc}") from None
    else:
        counts = dict(value)
    out: dict[str, int] = {}
    for name, count in counts.items():
        if not name.strip() or float(count) != int(count):
            raise InvalidValue(f"{where}: tres: {name}={count} is not a whole count")
        out[tres_key(name)] = int(count)
    return out


# --- squeue --json -------------------------------------------------------------------------------


class NoVal(BaseModel):
    """data_parser's `*_NO_VAL` numbers: unset, infinite, or a number."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    set: bool = True
    infinite: bool = False
    number: int = 0


Number = Annotated[int, Strict()] | NoVal | None


class SqueueJob(BaseModel):
    """The fields of one `squeue --json` job that sprio needs."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    job_id: JobId
    user_name: Name
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    job_state: list[str] | str
    submit_time: Number = None
    eligible_time: Number = None
    accrue_time: Number = None
    node_count: Number = None
    cpus: Number = None
    time_limit: Number = None
    priority: Number = None
    hold: bool | None = None
    nice: Signed | None = None
    tres_req_str: str | None = None


def _number(value: Number) -> int | None:
    """An unset number is None; an infinite one (an UNLIMITED time limit) too."""
    if value is None or isinstance(value, int):
        return value
    if not value.set or value.infinite:
        return None
    return value.number


def _squeue(document: Mapping[str, Any]) -> PendingJobs:
    entries = document["jobs"]
    if not isinstance(entries, list):
        raise InvalidValue("squeue --json: 'jobs' is not a list")
    jobs = []
    skipped: Counter[str] = Counter()
    for index, entry in enumerate(entries):
        where = f"squeue jobs[{index}]"
        if isinstance(entry, dict) and "job_id" in entry:
            where += f" (job {bounds.printable(str(entry['job_id'])[:20])})"
        if not isinstance(entry, dict):
            raise InvalidValue(f"{where}: a job must be a JSON object")
        try:
            job = SqueueJob.model_validate(entry)
        except ValidationError as exc:
            raise InvalidValue(f"{where}: {describe_validation_error(exc)}") from None
        states = [job.job_state] if isinstance(job.job_state, str) else job.job_state
        if PENDING not in states:
            skipped[states[0] if states else "UNKNOWN"] += 1
            continue
        if job.hold or _number(job.priority) == 0:
            skipped[HELD] += 1
            continue
        jobs.append(_squeue_job(job, where))
    return PendingJobs(tuple(jobs), dict(skipped), SQUEUE_JSON)


def _squeue_job(job: SqueueJob, where: str) -> PendingJobInput:
    submit = _number(job.submit_time)
    if submit is None:
        raise InvalidValue(f"{where}: submit_time is not set")
    eligible = _number(job.eligible_time) or None  # 0: not eligible yet
    nodes = _number(job.node_count)
    time_limit = _number(job.time_limit)
    try:
        tres = parse_tres(job.tres_req_str or "")
    except ValueError as exc:
        raise InvalidValue(f"{where}: tres_req_str: {exc}") from None
    return PendingJobInput(
        job_id=job.job_id,
        user=job.user_name,
        account=job.account or None,
        partitions=tuple(csv_items(job.partition or "")),
        qos=tuple(csv_items(job.qos or "")),
        submit=submit,
        eligible=eligible,
        accrue=_number(job.accrue_time) or None,
        nodes=nodes if nodes else 1,
        cpus=_number(job.cpus) or 0,
        time_limit=time_limit if time_limit else None,
        nice=job.nice or 0,
        tres=_tres(tres, where),
        where=where,
    )
