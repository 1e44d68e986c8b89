"""Completed jobs: the ingest record, Flux job IDs, resource counts from R, and the job charge.

Pure: no I/O, no clock. One JSON line of `fairledger ingest` becomes one `JobRecord`
(docs/semantics.md, "Completed jobs and their charge"), which its charge follows too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from ledger import bounds
from ledger.bounds import COUNT_MAX, USERID_MAX
from ledger.errors import InvalidValue
from ledger.job_ids import (  # noqa: F401 - re-exported: the record's module names them too
    JOB_ID_MAX,
    JobIdError,
    check_job_id_range,
    decode_f58,
    format_f58,
    parse_job_id,
)

URGENCY_MAX = 31  # Flux urgency runs 0 (held) .. 31 (expedite)
DEFAULT_CLUSTER = "cluster"  # flux-accounting hard-codes this name

_IDSET_ELEMENT = re.compile(r"([0-9]+)(?:-([0-9]+))?")


class IdsetError(InvalidValue, ValueError):
    """A malformed Flux idset string such as "0-3,5"."""


class ResourceSetError(InvalidValue, ValueError):
    """An R object we cannot count resources from."""


class JobRecordError(InvalidValue, ValueError):
    """One ingest line that is not a valid completed-job record; the message is one line
    naming the field and its value, and the caller prefixes the line number."""


# --- idsets and R -------------------------------------------------------------------------------


def parse_idset(text: str) -> list[tuple[int, int]]:
    """The ids of a Flux idset ("0-3,5,7-8", brackets optional) as merged, sorted
    inclusive ranges; overlaps count once because an idset is a set."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    if body == "":
        return []
    ranges: list[tuple[int, int]] = []
    for element in body.split(","):
        match = _IDSET_ELEMENT.fullmatch(element.strip())
        if match is None:
            raise IdsetError(f"invalid idset {text!r} (bad element {element!r})")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise IdsetError(f"invalid idset {text!r} (range {element!r} runs backwards)")
        ranges.append((first, last))
    return _merge_ranges(ranges)


def count_idset(text: str) -> int:
    """How many ids an idset names: count_idset("0-3,5") == 5."""
    return _count_ranges(parse_idset(text))


def _merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _count_ranges(ranges: Iterable[tuple[int, int]]) -> int:
    return sum(last - first + 1 for first, last in ranges)


@dataclass(frozen=True)
class ResourceCounts:
    """What a job was actually allocated, as the charge formula needs it."""

    nnodes: int
    ncores: int
    ngpus: int


def load_R(R: Mapping[str, Any] | str) -> dict[str, Any]:
    """R as a dict: ingest lines may carry it as an object or as the JSON text Flux stores."""
    if isinstance(R, str):
        try:
            R = json.loads(R)
        except json.JSONDecodeError as exc:
            raise ResourceSetError(f"not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise ResourceSetError("not valid JSON: nested too deep") from None
    if not isinstance(R, Mapping):
        raise ResourceSetError(f"must be a JSON object, got {type(R).__name__}")
    return dict(R)


def count_resources(R: Mapping[str, Any] | str) -> ResourceCounts:
    """Nodes, cores and GPUs of a Flux R version 1: nodes are the distinct ranks; cores and
    GPUs are, per R_lite entry, (ranks in the entry) x (ids in children.core / .gpu)."""
    R = load_R(R)
    if "version" not in R:
        raise ResourceSetError("missing 'version' (expected 1)")
    if R["version"] != 1:
        raise ResourceSetError(f"unsupported version {R['version']!r} (expected 1)")
    execution = R.get("execution")
    if not isinstance(execution, Mapping):
        raise ResourceSetError("missing 'execution' object")
    entries = execution.get("R_lite")
    if not isinstance(entries, list):
        raise ResourceSetError("missing 'execution.R_lite' list")
    all_ranks: list[tuple[int, int]] = []
    ncores = ngpus = 0
    for index, entry in enumerate(entries):
        where = f"execution.R_lite[{index}]"
        ranks = _entry_idset(entry, "rank", where)
        children = entry.get("children", {})
        if not isinstance(children, Mapping):
            raise ResourceSetError(f"{where}.children must be an object")
        nranks = _count_ranges(ranks)
        ncores += nranks * _count_ranges(_entry_idset(children, "core", f"{where}.children"))
        ngpus += nranks * _count_ranges(_entry_idset(children, "gpu", f"{where}.children"))
        all_ranks.extend(ranks)
    return ResourceCounts(_count_ranges(_merge_ranges(all_ranks)), ncores, ngpus)


def _entry_idset(entry: object, key: str, where: str) -> list[tuple[int, int]]:
    """An idset member of an R_lite entry; an absent child resource counts as none."""
    if not isinstance(entry, Mapping):
        raise ResourceSetError(f"{where} must be an object")
    if key not in entry and key != "rank":
        return []
    value = entry.get(key)
    if not isinstance(value, str):
        raise ResourceSetError(f"{where}.{key} must be an idset string, got {value!r}")
    try:
        return parse_idset(value)
    except IdsetError as exc:
        raise ResourceSetError(f"{where}.{key}: {exc}") from None


# --- the charge ---------------------------------------------------------------------------------


def job_charge(
    nnodes: int,
    ncores: int,
    ngpus: int,
    t_run: float,
    t_inactive: float,
    node_weight: float = 1.0,
    core_weight: float = 0.0,
    gpu_weight: float = 0.0,
) -> float:
    """Weighted resource-seconds, rounded to 5 decimals as flux-accounting rounds them, so
    charges imported from it and charges computed here agree to the last digit."""
    weighted = nnodes * node_weight + ncores * core_weight + ngpus * gpu_weight
    return round(weighted * (t_inactive - t_run), 5)


# --- the ingest record --------------------------------------------------------------------------

# Strict: true/false and 1.5 are not counts. The bounds are ledger.bounds' (issue 10).
Count = Annotated[int, Strict(), Field(ge=0, le=COUNT_MAX)]
EpochSeconds = Annotated[
    float, Strict(), Field(allow_inf_nan=False, ge=bounds.TIME_MIN, le=bounds.TIME_MAX)
]
UserId = Annotated[int, Strict(), Field(ge=0, le=USERID_MAX)]
Urgency = Annotated[int, Strict(), Field(ge=0, le=URGENCY_MAX)]
# The fields holding names, which must be printable (bounds.check_name).
NAME_FIELDS = ("username", "bank", "queue", "project", "cluster")
LATEST_TIME = "latest_time"  # validation context: the latest time a job may have ended


# TRES names already accepted, each with its key (lowercase): a sacct job names four or more,
# nearly always the same few. Bounded, for names that never repeat.
_TRES_KEYS: dict[str, str] = {}
TRES_NAMES_KEPT = 4_096
# TRES given as whole numbers, already counted: a site's jobs repeat a few hundred allocations
# (AllocTRES of a million sacct jobs), each counted once. Keyed by items whose counts are all
# ints (not bools): 1, 1.0 and True are equal keys but not the same count. Bounded likewise.
_TRES_COUNTED: dict[tuple[tuple[str, int], ...], dict[str, float]] = {}
TRES_COUNTED_KEPT = 4_096


def _check_tres_name(name: Any) -> None:
    """Refuse a TRES name that is not a name; remember one that is."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"TRES name {_show(name)} is not a name (e.g. cpu, gres/gpu)")
    try:
        bounds.check_name("TRES name", name)
    except InvalidValue as exc:
        raise ValueError(str(exc)) from None
    if type(name) is str and len(_TRES_KEYS) < TRES_NAMES_KEPT:
        _TRES_KEYS[name] = name.lower()


class JobRecord(BaseModel):
    """One completed job. Fields not named here are kept (extra="allow"), so whatever a site
    adds to its ingest lines survives in the recorded event."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: int
    userid: UserId | None = None
    username: str | None = None
    bank: str | None = None
    queue: str | None = None
    project: str | None = None
    # t_run comes first so that t_inactive and t_submit can be checked against it.
    t_run: EpochSeconds
    t_inactive: EpochSeconds
    t_submit: EpochSeconds
    nnodes: Count
    ncores: Count
    ngpus: Count = 0
    urgency: Urgency | None = None
    cluster: str = DEFAULT_CLUSTER
    R: dict[str, Any] | None = None
    # Slurm's allocated TRES ({"cpu": 8, "mem": 16384, "node": 1, "gres/gpu": 2}, mem in MiB):
    # what the queue's billing weights price (ledger.billing).
    tres: dict[str, Any] | None = None
    # Slurm's QOS of the job (sacct's QOS column): its UsageFactor scales the charge and the
    # billing when the job is recorded (ledger.ingest.job_billing).
    qos: str | None = None

    @field_validator("tres")
    @classmethod
    def _tres_counts(cls, value: dict[str, Any] | None) -> dict[str, float] | None:
        if value is None:
            return None
        items = tuple(value.items())
        whole = all(type(name) is str and type(count) is int for name, count in items)
        if whole and (known := _TRES_COUNTED.get(items)) is not None:
            return dict(known)
        counts: dict[str, float] = {}
        for name, count in items:
            if name not in _TRES_KEYS:
                _check_tres_name(name)
            if not _is_number(count) or not math.isfinite(count) or count < 0:
                raise ValueError(f"{printable_field(name)}: {_show(count)} is not a count >= 0")
            if count > COUNT_MAX:
                raise ValueError(
                    f"{printable_field(name)}: {_show(count)} is more than {COUNT_MAX}"
                )
            key = _TRES_KEYS.get(name) or name.lower()
            counts[key] = counts.get(key, 0) + count
        if whole and len(_TRES_COUNTED) < TRES_COUNTED_KEPT:
            _TRES_COUNTED[items] = dict(counts)
        return counts

    @model_validator(mode="before")
    @classmethod
    def _fill_derived_fields(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data  # pydantic reports the wrong type
        filled = dict(data)
        if filled.get("R") is not None:
            _fill_counts_from_R(filled)
        # A record without t_submit was submitted no later than it ran; t_run is the one
        # value that keeps the record consistent without inventing a time.
        if filled.get("t_submit") is None and _is_number(filled.get("t_run")):
            filled["t_submit"] = filled["t_run"]
        return filled

    @field_validator("id", mode="before")
    @classmethod
    def _normalise_job_id(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError("must be an integer or a Flux job ID string")
        try:
            if isinstance(value, str):
                return parse_job_id(value)
            return check_job_id_range(value, value)
        except JobIdError as exc:
            raise ValueError(exc.reason) from None

    @field_validator("username", "bank", "queue", "project", mode="before")
    @classmethod
    def _blank_means_absent(cls, value: Any) -> Any:
        # flux-accounting's jobs table stores '' for "no bank"; treat it as not given.
        if isinstance(value, str) and value.strip() == "":
            return None
        return value

    @field_validator("cluster")
    @classmethod
    def _cluster_named(cls, value: str) -> str:
        if value.strip() == "":
            raise ValueError("must not be empty")
        return value

    @field_validator(*NAME_FIELDS)
    @classmethod
    def _printable_name(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            try:
                bounds.check_name(str(info.field_name), value)
            except InvalidValue as exc:
                raise ValueError(_reason(exc)) from None
        return value

    @field_validator("t_run", "t_inactive", "t_submit")
    @classmethod
    def _not_in_the_future(cls, value: float, info: ValidationInfo) -> float:
        latest = (info.context or {}).get(LATEST_TIME)
        if latest is not None and value > latest:
            raise ValueError(f"in the future (later than {bounds.latest_description(latest)})")
        return value

    @field_validator("t_inactive")
    @classmethod
    def _ended_after_start(cls, value: float, info: ValidationInfo) -> float:
        t_run = info.data.get("t_run")
        if t_run is not None and value < t_run:
            raise ValueError(f"earlier than t_run {t_run!r}")
        return value

    @field_validator("t_submit")
    @classmethod
    def _submitted_before_start(cls, value: float, info: ValidationInfo) -> float:
        t_run = info.data.get("t_run")
        if t_run is not None and value > t_run:
            raise ValueError(f"later than t_run {t_run!r}")
        return value

    @model_validator(mode="after")
    def _names_a_user(self) -> JobRecord:
        if self.userid is None and self.username is None:
            raise ValueError("userid: missing; give userid and/or username")
        return self

    @model_validator(mode="after")
    def _extra_is_json(self) -> JobRecord:
        for name, value in (self.model_extra or {}).items():
            if bounds.plain_json_scalar(value):
                continue  # no need of the field's printable name, made only for a message
            try:
                bounds.check_json_value(printable_field(name), value)
            except InvalidValue as exc:
                raise ValueError(str(exc)) from None
        return self

    def charge(
        self, node_weight: float = 1.0, core_weight: float = 0.0, gpu_weight: float = 0.0
    ) -> float:
        """This job's charge under the given weights (docs/semantics.md, "Completed jobs and
        their charge")."""
        return job_charge(
            self.nnodes,
            self.ncores,
            self.ngpus,
            self.t_run,
            self.t_inactive,
            node_weight,
            core_weight,
            gpu_weight,
        )


def _fill_counts_from_R(data: dict[str, Any]) -> None:
    """Counts come from R when it is given: it is the actual allocation. Counts given beside
    it must agree, because a record that contradicts itself cannot be charged honestly."""
    try:
        data["R"] = load_R(data["R"])
        counts = count_resources(data["R"])
    except ResourceSetError as exc:
        raise ValueError(f"R: {exc}") from None
    for field, counted in (
        ("nnodes", counts.nnodes),
        ("ncores", counts.ncores),
        ("ngpus", counts.ngpus),
    ):
        given = data.get(field)
        if given is None:
            data[field] = counted
        elif _is_number(given) and given != counted:  # other types: pydantic names them
            raise ValueError(
                f"{field}: value {_show(given)}: disagrees with R, which has {counted}"
            )


def _reason(exc: InvalidValue) -> str:
    """A bounds message without the field name pydantic's report already starts with."""
    text = str(exc)
    return text.split(": ", 1)[1] if ": " in text else text


def printable_field(name: str) -> str:
    return bounds.printable(name[:40])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- one ingest line ----------------------------------------------------------------------------


def parse_job_line(line: str, latest: float | None = None) -> JobRecord:
    """One JSON line of `fairledger ingest` as a JobRecord, or a JobRecordError whose
    one-line message names the field and value at fault. `latest`: the latest time a job may
    have ended (bounds.latest_time of the real clock)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise JobRecordError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise JobRecordError("not valid JSON: nested too deep") from None
    if not isinstance(data, dict):
        raise JobRecordError(f"a job record must be a JSON object, got {type(data).__name__}")
    return validate_job(data, latest)


def validate_job(data: Any, latest: float | None = None) -> JobRecord:
    """A decoded record as a JobRecord, or a JobRecordError naming the field at fault."""
    try:
        return JobRecord.model_validate(data, context={LATEST_TIME: latest})
    except ValidationError as exc:
        raise JobRecordError(describe_validation_error(exc)) from None


def describe_validation_error(error: ValidationError) -> str:
    """The first problem of a record, in one line; the count of any others after it."""
    problems = error.errors(include_url=False)
    message = _describe(problems[0])
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return message


_COUNT_HINT = {"nnodes": " (or give R)", "ncores": " (or give R)"}


def _describe(problem: ErrorDetails) -> str:
    field = printable_field(".".join(str(part) for part in problem["loc"]))
    reason = problem["msg"].removeprefix("Value error, ")
    if problem["type"] == "missing":
        return f"{field}: required field is missing{_COUNT_HINT.get(field, '')}"
    if not field:
        return reason  # a whole-record rule; its message already starts with the field name
    return f"{field}: value {_show(problem['input'])}: {reason}"


def _show(value: Any, limit: int = 60) -> str:
    """A value as the user typed it, cut short so that one bad R cannot flood the terminal."""
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(value)
    except RecursionError:
        shown = "(nested too deep)"
    shown = bounds.printable(shown if len(shown) <= limit else shown[: limit - 3] + "...")
    return shown
