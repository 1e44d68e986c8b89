"""Reports: explain-job, report fairshare-history and report priority-audit."""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any

import click

from cli.option_prefixes import PrefixGroup
from cli.output import table
from cli.params import TIME
from cli.session import session
from cli.slurm_audit_text import audit_json, audit_text, report_json, report_notes, report_text
from ledger.bounds import printable_lines
from ledger.clock import iso, to_datetime
from ledger.errors import InvalidValue
from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.job_ids import format_f58, parse_job_id
from ledger.priority import URGENCY_EXPEDITE, URGENCY_HOLD
from ledger.usecases.priority_audit import JobAudit, priority_audit
from ledger.usecases.reports import explain, explain_slurm, fairshare_history_of
from projections.queries.as_of import Moment
from projections.queries.explain import Explanation, UsageBehind
from projections.queries.fairshare_history import HistoryRow

# --- explain-job ---------------------------------------------------------------------------------


@click.command("explain-job")
@click.argument("jobid")
@click.option("--cluster", default=None, help="The job's cluster (needed if several have it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def explain_job_command(ctx: click.Context, jobid: str, cluster: str | None, as_json: bool) -> None:
    """The priority recorded job JOBID had at its submission time, factor by factor, and the
    usage behind the fair-share it was given.

    JOBID in any Flux form (ƒ2Wbqh5Wo, decimal, 0x hex). The fair-share is the snapshot in
    force when the job was submitted (the last update-fshare before it; 0.5 before any);
    queue and bank priority and the factor weights are those of that moment.

    On a Slurm site (fair-tree or classic) the job is priced with Slurm's multifactor formula
    at its eligible time and at its start, each with the site as it stood then, beside the
    Priority Slurm recorded (sacct's), with the difference and the factor that explains it.
    """
    try:
        job_id = parse_job_id(jobid)
    except InvalidValue as err:
        raise click.BadParameter(str(err), param_hint="JOBID") from None
    s = session(ctx)
    found = explain(s, job_id, cluster, shown=jobid)
    slurm = explain_slurm(s, found)
    if as_json:
        data = _explanation_json(found)
        if isinstance(slurm, JobAudit):
            data["slurm"] = audit_json(slurm)
        elif slurm is not None:
            data["slurm"] = {"refused": slurm}
        else:
            data["slurm"] = None
        click.echo(json.dumps(data, indent=2))
    elif isinstance(slurm, JobAudit):
        click.echo(printable_lines(slurm_explanation_text(found, slurm)))
    else:
        text = _explanation_text(found)
        click.echo(printable_lines(text if slurm is None else f"{text}\n\n{slurm}"))


def slurm_explanation_text(e: Explanation, audit: JobAudit) -> str:
    """A Slurm site's explain-job: Slurm's priority at eligible time and at start, then the
    fair-share in force at submission and the usage behind it."""
    lines = [*audit_text(audit), "", _fairshare_line(e)]
    if e.usage is not None:
        lines += ["", *_usage_text(e, e.usage)]
    return "\n".join(lines)


def _moment_json(moment: Moment | None) -> dict[str, Any] | None:
    if moment is None:
        return None
    return {"at": moment.event_time, "time": iso(moment.event_time), "position": moment.position}


def _usage_json(usage: UsageBehind | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "at": usage.at,
        "time": iso(usage.at),
        "position": usage.position,
        "job_usage": usage.job_usage,
        "decay_factor": usage.decay_factor,
        "half_life": usage.half_life,
        "bins": [
            {
                "age": b.age,
                "period": b.period,
                "start": b.start,
                "total": b.total,
                "decay": b.decay,
                "decayed": b.decayed,
            }
            for b in usage.bins
        ],
        "contributing_jobs": usage.contributing_jobs,
        "top_jobs": [
            {
                "jobid": format_f58(j.id),
                "id": j.id,
                "cluster": j.cluster,
                "period": j.period,
                "t_inactive": j.t_inactive,
                "charge": j.charge,
                "decay": j.decay,
                "weight": j.weight,
            }
            for j in usage.top_jobs
        ],
    }


def _explanation_json(e: Explanation) -> dict[str, Any]:
    job = e.job
    return {
        "jobid": format_f58(job.id),
        "id": job.id,
        "cluster": job.cluster,
        "username": e.association[0],
        "bank": e.association[1],
        "active": e.active,
        "queue": job.queue,
        "urgency": e.urgency,
        "t_submit": job.t_submit,
        "submitted": {
            "at": job.t_submit,
            "time": iso(job.t_submit),
            "position": e.submitted.position,
            "event_time": e.submitted.event_time,
        },
        "snapshot": _moment_json(e.snapshot),
        "fairshare_from": _moment_json(e.source),
        "fairshare_imported": _moment_json(e.imported),
        "fairshare_set_by": e.set_by,
        "fairshare_cleared_by": e.cleared_by,
        "fairshare": e.fairshare,
        "rank": e.rank,
        "ranked": e.ranked,
        "queue_priority": e.queue_priority,
        "bank_priority": e.bank_priority,
        "weights": {
            "fairshare": e.weights.fairshare,
            "queue": e.weights.queue,
            "bank": e.weights.bank,
            "urgency": e.weights.urgency,
        },
        "factors": _factor_rows(e),
        "priority": e.breakdown.priority,
        "usage": _usage_json(e.usage),
    }


def _factor_rows(e: Explanation) -> list[dict[str, Any]]:
    return [
        {"factor": f.name, "value": f.value, "weight": f.weight, "product": f.product}
        for f in e.breakdown.factors
    ]


def _shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Floats for reading: 12 significant digits hide the binary noise of a product
    (33333.299999999996 reads 33333.3); --json keeps the exact values."""
    return [
        {k: float(f"{v:.12g}") if isinstance(v, float) else v for k, v in row.items()}
        for row in rows
    ]


def _explanation_text(e: Explanation) -> str:
    job = e.job
    user, bank = e.association
    if job.queue is None:
        queue = "no queue"
    elif e.queue_known:
        queue = f"queue {job.queue} (priority {e.queue_priority})"
    else:
        queue = f"queue {job.queue} (unknown then: factor 0)"
    inactive = "" if e.active else " (inactive then)"
    lines = [
        f"job {format_f58(job.id)} (id {job.id}, cluster {job.cluster}): {user} in bank "
        f"{bank}{inactive}, {queue}, urgency {e.urgency}",
        f"submitted {iso(job.t_submit)}: log position {e.submitted.position} "
        f"(event of {iso(e.submitted.event_time)})",
        _fairshare_line(e),
        "",
        table(_shown(_factor_rows(e)), ["factor", "value", "weight", "product"]),
    ]
    if e.urgency == URGENCY_HOLD:
        lines.append(f"priority: {e.breakdown.priority} (urgency 0: held)")
    elif e.urgency == URGENCY_EXPEDITE:
        lines.append(f"priority: {e.breakdown.priority} (urgency 31: expedited)")
    else:
        lines.append(f"priority: {e.breakdown.priority}")
    if e.usage is not None:
        lines += ["", *_usage_text(e, e.usage)]
    return "\n".join(lines)


def _fairshare_line(e: Explanation) -> str:
    user, bank = e.association
    if e.imported is not None and e.set_by is not None:
        return (
            f"fair-share {e.fairshare}: set by hand (--fairshare) by {e.set_by} at "
            f"{iso(e.imported.event_time)} (log position {e.imported.position}); "
            "in force until an update-fshare ranks it"
        )
    if e.imported is not None and e.cleared_by is not None:
        return (
            f"fair-share {e.fairshare}: put back at a new association's value by the clear-usage"
            f" of {e.cleared_by} at {iso(e.imported.event_time)} (log position"
            f" {e.imported.position}); in force until an update-fshare ranks it"
        )
    if e.imported is not None:
        return (
            f"fair-share {e.fairshare}: the value flux-accounting had stored, brought over by "
            f"the import of {iso(e.imported.event_time)} (log position {e.imported.position}); "
            "in force until an update-fshare ranks it"
        )
    if e.snapshot is None:
        new = NEW_ASSOCIATION_FAIRSHARE
        return f"fair-share {e.fairshare}: no fair-share snapshot yet (a new association has {new})"
    at = f"the snapshot of {iso(e.snapshot.event_time)} (log position {e.snapshot.position})"
    if e.source is None:
        new = NEW_ASSOCIATION_FAIRSHARE
        return f"fair-share {e.fairshare}: {user}/{bank} is newer than {at}, so it has {new}"
    rank = f"rank {e.rank} of {e.ranked}"
    if e.source.position == e.snapshot.position:
        return f"fair-share {e.fairshare}: {at}, {rank}"
    return (
        f"fair-share {e.fairshare}: {at} left {user}/{bank} out (inactive); it kept the value "
        f"of the snapshot of {iso(e.source.event_time)} (log position {e.source.position}), "
        f"{rank}"
    )


def _usage_text(e: Explanation, usage: UsageBehind) -> list[str]:
    user, bank = e.association
    bins = [
        {
            "age": b.age,
            "period": b.period,
            "start": iso(b.start),
            "total": b.total,
            "decay": b.decay,
            "decayed": b.decayed,
        }
        for b in usage.bins
    ]
    jobs = [
        {
            "jobid": format_f58(j.id),
            "cluster": j.cluster,
            "t_inactive": iso(j.t_inactive),
            "period": j.period,
            "charge": j.charge,
            "decay": j.decay,
            "weight": j.weight,
        }
        for j in usage.top_jobs
    ]
    lines = [
        f"usage of {user}/{bank} at that snapshot: {usage.job_usage} "
        f"(decay factor {usage.decay_factor}, periods of {usage.half_life:g}s, newest first)",
        table(_shown(bins), ["age", "period", "start", "total", "decay", "decayed"]),
        "",
    ]
    if not jobs:
        lines.append("no jobs counted in that usage")
        return lines
    lines.append(
        f"top {len(jobs)} of {usage.contributing_jobs} jobs counted "
        "(weight = charge × decay of its period):"
    )
    lines.append(
        table(
            _shown(jobs), ["jobid", "cluster", "t_inactive", "period", "charge", "decay", "weight"]
        )
    )
    return lines


# --- report fairshare-history --------------------------------------------------------------------


@click.group("report", cls=PrefixGroup)
def report() -> None:
    """Reports over the ledger's history."""


HISTORY_COLUMNS = ["time", "position", "job_usage", "fairshare", "rank"]


@report.command("fairshare-history")
@click.option("--user", "username", required=True, help="The association's user.")
@click.option("--bank", default=None, help="Default: the user's default bank.")
@click.option("--from", "start", type=TIME, default=None, help="First time (default: the start).")
@click.option("--to", "end", type=TIME, default=None, help="Last time (default: now).")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE.png",
    help="Also draw fair-share and usage over time as a PNG line chart.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a list of row objects.")
@click.pass_context
def fairshare_history_command(
    ctx: click.Context,
    username: str,
    bank: str | None,
    start: float | None,
    end: float | None,
    plot: str | None,
    as_json: bool,
) -> None:
    """Fair-share and usage of one association at every update-fshare from --from to --to,
    each recomputed exactly as it was then: usage at that time from the jobs recorded by then,
    fair-share = rank / N of the weighted walk over the site as it stood."""
    if start is not None and end is not None and start > end:
        raise click.BadParameter(f"--from {iso(start)} is after --to {iso(end)}")
    if plot is not None and not _matplotlib_installed():
        # Checked before any work: matplotlib is an extra (fairledger[plot]), not a dependency.
        click.echo(f"fairledger: --plot needs matplotlib: {PLOT_EXTRA}", err=True)
        ctx.exit(1)
    history = fairshare_history_of(session(ctx), username, bank, start, end)
    rows = history.rows
    shown = [_history_row(row) for row in rows]
    if not rows:
        span = f"from {iso(start) if start is not None else 'the start'} to " + (
            iso(end) if end is not None else "now"
        )
        click.echo(f"no fair-share snapshot of {history.username}/{history.bank} {span}", err=True)
    if as_json:
        click.echo(json.dumps(shown, indent=2))
    else:
        text = [{**r, "rank": _rank_text(r)} for r in _shown(shown)]
        click.echo(table(text, HISTORY_COLUMNS))
    if plot is not None:
        if not rows:
            click.echo(f"nothing to plot: {plot} not written", err=True)
            return
        try:
            _plot(rows, f"{history.username}/{history.bank}", plot)
        except OSError as err:
            raise click.FileError(plot, hint=err.strerror or str(err)) from None
        click.echo(f"wrote {plot}", err=True)


def _history_row(row: HistoryRow) -> dict[str, Any]:
    return {
        "time": iso(row.at),
        "at": row.at,
        "position": row.position,
        "job_usage": row.job_usage,
        "fairshare": row.fairshare,
        "rank": row.rank,
        "of": row.ranked,
        "active": row.active,
    }


def _rank_text(row: dict[str, Any]) -> str:
    if row["rank"] is None:
        return f"- of {row['of']} (inactive)" if not row["active"] else f"- of {row['of']}"
    return f"{row['rank']} of {row['of']}"


PLOT_EXTRA = "pip install 'fairledger[plot]'"


def _matplotlib_installed() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plot(rows: list[HistoryRow], name: str, path: str) -> None:
    """A PNG line chart: fair-share (a step: it holds until the next snapshot) on the left axis,
    usage at each snapshot on the right one. Agg renders without a display."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import date2num
    from matplotlib.figure import Figure

    times = date2num([to_datetime(r.at) for r in rows])
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    left = figure.add_subplot()
    share = left.plot(
        times,
        [r.fairshare for r in rows],
        drawstyle="steps-post",
        marker="o",
        color="tab:blue",
        label="fair-share",
    )
    left.xaxis_date(tz=UTC)
    left.set_ylabel("fair-share")
    left.set_ylim(0, 1.05)
    right = left.twinx()
    used = right.plot(
        times,
        [r.job_usage for r in rows],
        marker="s",
        linestyle="--",
        color="tab:orange",
        label="job_usage",
    )
    right.set_ylabel("job_usage (decayed)")
    right.set_ylim(bottom=0)
    figure.suptitle(f"fair-share history of {name}")
    left.set_xlabel("time (UTC)")
    left.legend(
        handles=[*share, *used], loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False
    )
    figure.autofmt_xdate()
    figure.tight_layout()
    figure.savefig(path, format="png")


# --- report priority-audit ----------------------------------------------------------------------


@report.command("priority-audit")
@click.option("--since", type=TIME, default=None, help="Jobs started at or after this time.")
@click.option("--until", type=TIME, default=None, help="Jobs started at or before this time.")
@click.option(
    "--tolerance",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="List only jobs whose difference is larger than this.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def priority_audit_command(
    ctx: click.Context,
    since: float | None,
    until: float | None,
    tolerance: int,
    as_json: bool,
) -> None:
    """Recorded Slurm jobs whose recorded Priority differs from the one we compute at their
    start, the largest difference first, with the factor that explains it.

    Each job is priced with the site as it stood at its start (weights, partitions, QOS, the
    fair-share in force then). A job whose record has no Priority (sacct run without it) is
    not audited. Needs a Slurm site (fair-tree or classic).
    """
    found = priority_audit(session(ctx), since, until, tolerance)
    for note in report_notes(found):
        click.echo(printable_lines(note), err=True)
    if as_json:
        click.echo(json.dumps(report_json(found), indent=2))
    elif found.differing:
        click.echo(printable_lines(report_text(found)))


COMMANDS: list[click.Command] = [explain_job_command, report]
