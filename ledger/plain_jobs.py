"""The common ingest line read in one pydantic-core call, the record model's rules kept.

Nearly every line a site ingests is plain: an integer id, names, times and counts, with no R,
TRES or fields of the site's own. `JobRecord` validates such a line in about 9 µs, most of it
its Python validators; decoding and checking it against the same types in pydantic-core
(`validate_json` of a TypedDict) takes about 1.2 µs, and the rules that need Python (names,
the order of the times, the latest time, a user named) are a few comparisons after it.

`plain_job` accepts a line only when `JobRecord` would accept it and give the same record; for
anything else (another shape, a value either would refuse) it answers None, and the caller
reads the line with `parse_job_line`, whose message names the fault. So a plain line costs
less, and every refusal is worded as before.
"""

from __future__ import annotations

from typing import Annotated, Any, Required, cast

from pydantic import ConfigDict, Field, Strict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from ledger import bounds
from ledger.errors import InvalidValue
from ledger.job_ids import JOB_ID_MAX
from ledger.jobs import NAME_FIELDS, Count, EpochSeconds, JobRecord, Urgency, UserId

# The model's own id field takes strings too (Flux's forms), through a Python validator.
PlainJobId = Annotated[int, Strict(), Field(ge=0, le=JOB_ID_MAX)]
PlainText = Annotated[str, Strict()]


@with_config(ConfigDict(extra="forbid"))
class PlainLine(TypedDict, total=False):
    # JobRecord's fields with the types it checks them against, less R and tres (which need
    # Python to read) and without null (which the model reads as "not given").
    id: Required[PlainJobId]
    userid: UserId
    username: PlainText
    bank: PlainText
    queue: PlainText
    project: PlainText
    t_submit: EpochSeconds
    t_run: Required[EpochSeconds]
    t_inactive: Required[EpochSeconds]
    nnodes: Required[Count]
    ncores: Required[Count]
    ngpus: Count
    urgency: Urgency
    cluster: PlainText
    qos: PlainText


_READ = TypeAdapter(PlainLine)
# A record's attributes in the model's order, each with its default: a template for __dict__.
_TEMPLATE: dict[str, Any] = {
    name: (None if field.is_required() else field.default)
    for name, field in JobRecord.model_fields.items()
}


def plain_job(line: str | bytes, latest: float | None = None) -> JobRecord | None:
    """The line's record as `parse_job_line(line, latest)` gives it, or None when the line is
    not plain or breaks a rule (the caller then reads it the long way, for the message)."""
    try:
        data = cast(dict[str, Any], _READ.validate_json(line))  # a TypedDict is a dict
    except ValidationError:
        return None
    for name in NAME_FIELDS:
        value = data.get(name)
        if value is not None:
            if not value.strip():
                return None  # blank: the model reads it as absent (or, for cluster, refuses)
            try:
                bounds.check_name(name, value)
            except InvalidValue:
                return None
    if "userid" not in data and "username" not in data:
        return None
    t_run = data["t_run"]
    t_inactive = data["t_inactive"]
    t_submit = data.setdefault("t_submit", t_run)  # as the model fills it
    if t_inactive < t_run or t_submit > t_run:
        return None
    if latest is not None and t_inactive > latest:
        return None  # the latest of the three, now that their order is checked
    return _record(data)


def _record(data: dict[str, Any]) -> JobRecord:
    """A JobRecord holding checked values, built as pydantic's own validation leaves one
    (`model_construct` takes 8 µs to do the same)."""
    job = JobRecord.__new__(JobRecord)
    values = dict(_TEMPLATE)
    values.update(data)
    object.__setattr__(job, "__dict__", values)
    object.__setattr__(job, "__pydantic_fields_set__", set(data))
    object.__setattr__(job, "__pydantic_extra__", {})
    object.__setattr__(job, "__pydantic_private__", None)
    return job
