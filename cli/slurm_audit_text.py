"""How explain-job's Slurm part and `report priority-audit` show a recorded job's priority: ours
at its eligible time and at its start as sprio's factor|value|weight|product tables, beside the
Priority Slurm recorded (ledger.usecases.priority_audit gives the data)."""

from __future__ import annotations

from typing import Any

from cli.output import table
from ledger.clock import iso
from ledger.usecases.priority_audit import AuditReport, Difference, JobAudit, Unpriced
from ledger.usecases.slurm_priority import PricedJob
from projections.queries.as_of import Moment
from projections.queries.explain import SlurmRecord

FACTOR_COLUMNS = ["factor", "value", "weight", "product"]
AUDIT_COLUMNS = [
    "jobid",
    "user",
    "account",
    "partition",
    "qos",
    "recorded",
    "ours",
    "difference",
    "factor",
]
NO_PRIORITY = "none (the record has no Priority: add Priority to sacct's --format)"


def _shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """12 significant digits hide a product's binary noise; --json keeps the exact values."""
    return [
        {k: float(f"{v:.12g}") if isinstance(v, float) else v for k, v in row.items()}
        for row in rows
    ]


def _jobid(job: SlurmRecord) -> str:
    return str(job.id)


def _when(label: str, at: float, moment: Moment) -> str:
    return (
        f"at {label} {iso(at)} (the site at log position {moment.position}, event of "
        f"{iso(moment.event_time)}):"
    )


def difference_line(audit: JobAudit) -> str:
    ours = audit.at_start.result.priority
    d = audit.difference
    if d is None:
        return f"recorded by Slurm: {NO_PRIORITY}; ours at start: {ours}"
    line = f"recorded by Slurm: {audit.job.recorded}, ours at start: {ours}, difference: {d.value}"
    return line if d.value == 0 else f"{line} (explained by: {d.text})"


def audit_text(audit: JobAudit) -> list[str]:
    """explain-job's Slurm part, after its header lines."""
    job = audit.job
    user, bank = audit.association
    qos = audit.at_start.qos or "none"
    limit = "none" if job.time_limit is None else f"{job.time_limit} min"
    eligible = job.submit if job.eligible is None else job.eligible
    return [
        f"Slurm job {_jobid(job)} (cluster {job.cluster}): {user} in account {bank}, partition "
        f"{audit.at_start.queue or '(none)'}, QOS {qos}, {job.nodes} node(s), {job.cpus} CPU(s), "
        f"time limit {limit}",
        f"submitted {iso(job.submit)}, eligible {iso(eligible)}"
        + ("" if job.eligible is not None else " (no Eligible recorded: taken as submitted)")
        + f", started {iso(job.start)}",
        "",
        _when("eligible", eligible, audit.eligible),
        table(_shown(audit.at_eligible.factor_rows()), FACTOR_COLUMNS),
        f"priority: {audit.at_eligible.result.priority}",
        "",
        _when("start", job.start, audit.start),
        table(_shown(audit.at_start.factor_rows()), FACTOR_COLUMNS),
        f"priority: {audit.at_start.result.priority}",
        "",
        difference_line(audit),
    ]


def _priced_json(priced: PricedJob, moment: Moment) -> dict[str, Any]:
    return {
        "at": priced.at,
        "time": iso(priced.at),
        "position": moment.position,
        "event_time": moment.event_time,
        "priority": priced.result.priority,
        "factors": priced.factor_rows(),
    }


def _difference_json(d: Difference | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"value": d.value, "factor": d.factor, "slurm_value": d.slurm_value, "text": d.text}


def _job_columns(audit: JobAudit) -> dict[str, Any]:
    """The job and where it ran: the first columns of both the JSON and the report's row."""
    return {
        "jobid": _jobid(audit.job),
        "cluster": audit.job.cluster,
        "user": audit.association[0],
        "account": audit.association[1],
        "partition": audit.at_start.queue,
        "qos": audit.at_start.qos,
    }


def audit_json(audit: JobAudit) -> dict[str, Any]:
    job = audit.job
    return {
        **_job_columns(audit),
        "nodes": job.nodes,
        "cpus": job.cpus,
        "time_limit": job.time_limit,
        "t_submit": job.submit,
        "t_eligible": job.eligible,
        "t_start": job.start,
        "recorded": job.recorded,
        "at_eligible": _priced_json(audit.at_eligible, audit.eligible),
        "at_start": _priced_json(audit.at_start, audit.start),
        "difference": _difference_json(audit.difference),
    }


def _factor_cell(d: Difference | None) -> str:
    if d is None:
        return ""
    return d.factor or "unexplained"


def audit_row(audit: JobAudit) -> dict[str, Any]:
    job = audit.job
    d = audit.difference
    return {
        **_job_columns(audit),
        "t_start": job.start,
        "start": iso(job.start),
        "recorded": job.recorded,
        "ours": audit.at_start.result.priority,
        "difference": d.value if d is not None else None,
        "factor": _factor_cell(d),
        "slurm_value": d.slurm_value if d is not None else None,
        "explanation": d.text if d is not None else None,
    }


def _unpriced_json(u: Unpriced) -> dict[str, Any]:
    return {"jobid": _jobid(u.job), "cluster": u.job.cluster, "reason": u.reason}


def report_json(report: AuditReport) -> dict[str, Any]:
    return {
        "since": report.since,
        "until": report.until,
        "tolerance": report.tolerance,
        "audited": report.audited,
        "differing": len(report.differing),
        "without_priority": report.without_priority,
        "unpriced": [_unpriced_json(u) for u in report.unpriced],
        "jobs": [audit_row(a) for a in report.differing],
    }


def report_text(report: AuditReport) -> str:
    rows = [{**audit_row(a), "qos": a.at_start.qos or ""} for a in report.differing]
    return table(rows, AUDIT_COLUMNS)


def report_notes(report: AuditReport) -> list[str]:
    """What stderr says besides the table: the counts, and each job that could not be priced."""
    notes = [
        f"{report.audited} job(s) audited, {len(report.differing)} differ by more than "
        f"{report.tolerance}"
    ]
    if report.without_priority:
        notes.append(
            f"{report.without_priority} job(s) without a recorded Priority not audited "
            "(add Priority to sacct's --format)"
        )
    notes += [
        f"job {_jobid(u.job)} (cluster {u.job.cluster}) not priced: {u.reason}"
        for u in report.unpriced
    ]
    return notes
