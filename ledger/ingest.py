"""Reading completed-job input: JSON lines validated into primitive records for the log.

Pure apart from iterating the lines it is given: parsing, per-line errors with line numbers,
the charge under the weights in force, and the record shape stored in JobsRecorded events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ledger import bounds
from ledger.billing import BillingMode, billable_tres, parse_billing_weights
from ledger.errors import InvalidValue
from ledger.jobs import JobRecord, JobRecordError, parse_job_line, validate_job
from ledger.plain_jobs import plain_job
from ledger.state import SiteState

# Fields stored in every record; anything else a site sends is kept under "extra".
_KNOWN = {
    "id",
    "userid",
    "username",
    "bank",
    "queue",
    "project",
    "t_submit",
    "t_run",
    "t_inactive",
    "nnodes",
    "ncores",
    "ngpus",
    "urgency",
    "cluster",
    "R",
    "tres",
    "qos",
}


@dataclass
class BadLine:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class RejectedLine:
    """A line its source format's reader refused (sacct's, say) before it became a record:
    it stands in that line's place, so the line is refused with its number as a bad JSON
    line is (`--skip-invalid` sets it aside)."""

    message: str


@dataclass
class ParsedInput:
    records: list[JobRecord] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    lines: int = 0


def parse_lines(
    lines: Iterable[str | dict[str, Any] | RejectedLine],
    first_line: int = 1,
    latest: float | None = None,
    charge_weights: tuple[float, float, float] | None = None,
) -> ParsedInput:
    """Every non-blank line (a JSON text, an already decoded object, or a line its format's
    reader refused) parsed; the bad ones collected with their line numbers. `latest`: the
    latest time a job may have ended (bounds.latest_time of the real clock); `charge_weights`:
    the weights in force, whose charge must stay within bounds.JOB_CHARGE_MAX."""
    out = ParsedInput()
    for number, line in enumerate(lines, start=first_line):
        out.lines = number
        if isinstance(line, RejectedLine):
            out.bad.append(BadLine(number, line.message))
            continue
        try:
            if isinstance(line, dict):
                job = parse_job_object(line, latest)
            elif line.strip():
                plain = plain_job(line, latest)
                job = plain if plain is not None else parse_job_line(line, latest)
            else:
                continue
            if charge_weights is not None:
                check_job_charge(job, charge_weights)
            out.records.append(job)
        except JobRecordError as err:
            out.bad.append(BadLine(number, str(err)))
    return out


def parse_job_object(data: dict[str, Any], latest: float | None = None) -> JobRecord:
    return validate_job(data, latest)


def check_job_charge(job: JobRecord, charge_weights: tuple[float, float, float]) -> None:
    try:
        bounds.check_charge(job.charge(*charge_weights))
    except InvalidValue as err:
        raise JobRecordError(f"{err} under the weights in force {charge_weights}") from None


def weights(state: SiteState) -> tuple[float, float, float]:
    config = state.config
    return (
        float(config.get("node_weight", 1.0)),
        float(config.get("core_weight", 0.0)),
        float(config.get("gpu_weight", 0.0)),
    )


def billing_mode(state: SiteState) -> BillingMode:
    """How weighted TRES combine: MAX_TRES_GRES is tested before MAX_TRES, as Slurm does."""
    flags = state.priority_flags
    for mode in (BillingMode.MAX_TRES_GRES, BillingMode.MAX_TRES):
        if mode in flags:
            return mode
    return BillingMode.SUM


def job_billing(job: JobRecord, state: SiteState) -> float | None:
    """The job's billing (Slurm's billable TRES per second) under its queue's weights and the
    priority_flags in force, times its QOS's UsageFactor (research slurm.md §3.3: 0 adds no
    usage; no QOS, or one the ledger does not know, is 1); None when it is just the job's CPUs
    (no weights, no `tres`, factor 1), which the continuous usage model reads from ncores
    (ledger.site_usage.record_billing)."""
    factor = state.usage_factor(job.qos)
    queue = state.queues.get(job.queue) if job.queue else None
    weights = parse_billing_weights(queue.billing_weights) if queue is not None else None
    if weights is None and job.tres is None and factor == 1.0:
        return None
    alloc = job.tres if job.tres is not None else allocated_tres(job)
    if weights is None:
        billing = float(alloc.get("cpu", job.ncores))
    else:
        billing = billable_tres(alloc, weights, billing_mode(state))
    billing *= factor
    try:
        bounds.check_charge(billing * (job.t_inactive - job.t_run))
    except InvalidValue as err:
        raise JobRecordError(f"billing {billing:g} per second: {err}") from None
    return billing


def job_charge(
    job: JobRecord, weights: tuple[float, float, float], usage_factor: float = 1.0
) -> float:
    """flux-accounting's charge under the weights in force, times the job's QOS UsageFactor
    (rounded again to 5 decimals, as every charge is), within the charge bound."""
    charge = job.charge(*weights)
    if usage_factor == 1.0:
        return charge
    scaled = round(charge * usage_factor, 5)
    try:
        bounds.check_charge(scaled)
    except InvalidValue as err:
        raise JobRecordError(f"{err} under QOS {job.qos} (usage factor {usage_factor:g})") from None
    return scaled


def allocated_tres(job: JobRecord) -> dict[str, float]:
    """A Flux record's counts as TRES, for a queue with billing weights."""
    return {"cpu": job.ncores, "node": job.nnodes, "gres/gpu": job.ngpus}


def to_record(
    job: JobRecord,
    node_w: float,
    core_w: float,
    gpu_w: float,
    billing: float | None = None,
    usage_factor: float = 1.0,
) -> dict[str, Any]:
    """The primitive record stored in the log. The charge is fixed with the weights and the
    QOS usage factor in force when the job is recorded (docs/semantics.md), so later weight or
    factor changes never re-price history; so is the billing (`job_billing`), kept only where
    it is not just the job's CPUs, and the factor, kept where it is not 1."""
    record: dict[str, Any] = {
        "cluster": job.cluster,
        "id": str(job.id),
        "t_submit": job.t_submit,
        "t_run": job.t_run,
        "t_inactive": job.t_inactive,
        "nnodes": job.nnodes,
        "ncores": job.ncores,
        "ngpus": job.ngpus,
        "charge": job_charge(job, (node_w, core_w, gpu_w), usage_factor),
    }
    if usage_factor != 1.0:
        record["usage_factor"] = usage_factor
    if job.tres is not None:
        record["tres"] = dict(job.tres)
    if billing is not None:
        record["billing"] = billing
    for name in ("userid", "username", "bank", "queue", "project", "urgency", "qos"):
        value = getattr(job, name)
        if value is not None:
            record[name] = value
    extra = {k: v for k, v in (job.model_extra or {}).items() if k not in _KNOWN}
    if extra:
        record["extra"] = extra
    return record


def unique_in_input(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The first record of each (cluster, id) in the input; later repeats are duplicates."""
    seen: set[tuple[str, str]] = set()
    for record in records:
        key = (record["cluster"], record["id"])
        if key not in seen:
            seen.add(key)
            yield record


def check_no_bad_lines(bad: list[BadLine], source: str) -> None:
    if bad:
        first = bad[0]
        more = f" (and {len(bad) - 1} more bad lines)" if len(bad) > 1 else ""
        raise InvalidValue(f"{source}: {first}{more}; nothing recorded")
