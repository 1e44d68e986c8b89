"""Completed jobs: ingest and view-job-records."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click

from cli.echo import echo_lines
from cli.ingest_output import shown_notes, summary
from cli.output import Output, output_options
from cli.params import TIME, AsOf, as_of_option
from cli.record_format import RecordFormat
from cli.session import change_options, session
from ledger.bounds import printable
from ledger.errors import InvalidValue
from ledger.job_ids import parse_job_id
from ledger.spill import Spill
from ledger.usecases import job_records
from ledger.usecases.ingest import ingest as ingest_jobs
from ledger.usecases.job_records import Comparison, JobFilter
from ledger.usecases.job_sources import FORMATS, TEXT_FORMATS, input_lines, stream_lines


@click.command("ingest")
@click.argument("source", metavar="FILE|-")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="jsonl",
    show_default=True,
    help="JSON lines, a flux-accounting DB, or `sacct -a -X -P` output (its header line "
    "naming the columns; times in the site's timezone).",
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Record the valid lines and report each bad one (default: record nothing).",
)
@change_options
@click.pass_context
def ingest(
    ctx: click.Context,
    source: str,
    fmt: str,
    skip_invalid: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Record completed jobs, exactly once per (cluster, job id)."""
    s = session(ctx)
    lines = source_lines(source, fmt)
    with shown_notes(f"{source}: ") as notes:
        result = ingest_jobs(s, lines, source, fmt, skip_invalid, actor, reason, notes)
    summary(result)


def source_lines(source: str, fmt: str) -> Iterator[Any]:
    """The input FILE|- of ingest and cron --ingest, in format `fmt`."""
    return _stdin_lines() if fmt in TEXT_FORMATS and source == "-" else input_lines(source, fmt)


def _stdin_lines() -> Iterator[str]:
    """Standard input as UTF-8 whatever the locale's encoding: JSON lines are UTF-8, and so
    is what we read of sacct's output."""
    stdin = getattr(sys.stdin, "buffer", None)
    return iter(sys.stdin) if stdin is None else stream_lines(stdin)


JOB_COLUMNS = [
    "jobid",
    "username",
    "userid",
    "t_submit",
    "t_run",
    "t_inactive",
    "nnodes",
    "project",
    "bank",
    "requested_duration",
    "actual_duration",
    "duration_delta",
]
ALL_JOB_COLUMNS = JOB_COLUMNS + ["id", "cluster", "queue", "ncores", "ngpus", "charge"]
# Shown with two decimals in the default listing (flux-accounting's JOB_RECORD_FLOAT_FIELDS).
FLOAT_JOB_COLUMNS = {
    "t_submit",
    "t_run",
    "t_inactive",
    "requested_duration",
    "actual_duration",
    "duration_delta",
}


def _default_listing(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """flux-accounting's default listing is itself a format: each column left-aligned to its
    widest value (floats with two decimals), joined by " | ". What that format prints, cell by
    cell: each value's text (`{c:<w}` is the text padded, `{c:<w.2f}` the `.2f` text padded)
    is made as the row is read, and padded once every width is known; the cells are held on
    disk between the two passes (ledger.spill). A width is measured before names are escaped
    (ledger.bounds.printable), as the format's widths were."""
    widths = {column: len(column) for column in JOB_COLUMNS}
    with Spill() as spill:
        for row in rows:
            cells = []
            for column in JOB_COLUMNS:
                value = "" if row[column] is None else row[column]
                if column in FLOAT_JOB_COLUMNS:
                    text = measured = _two_decimals(row, column, value)
                elif column == "jobid" or not isinstance(value, str):
                    text = measured = str(value)
                else:
                    text, measured = printable(value), value
                widths[column] = max(widths[column], len(measured))
                cells.append(text)
            spill.add(tuple(cells))
        ordered = [widths[c] for c in JOB_COLUMNS]
        yield " | ".join(c.ljust(w) for c, w in zip(JOB_COLUMNS, ordered, strict=True))
        for cells in spill.replay():
            yield " | ".join(c.ljust(w) for c, w in zip(cells, ordered, strict=True))


def _two_decimals(row: dict[str, Any], column: str, value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidValue(f"job {row['jobid']}: {column} {value!r} is not a number")
    return f"{value:.2f}"


def _duration_filter(exprs: tuple[str, ...], name: str) -> list[Comparison]:
    """`<op> <number>` expressions, refused in flux-accounting's words and in its order (the
    count of parts, then the operator, then the number): its tests and admins grep them."""
    out = []
    for expr in exprs:
        parts = expr.split()
        if len(parts) != 2:
            refusal = "expression expects one operator and one value"
        elif parts[0] not in ("<", "<=", "=", ">=", ">"):
            refusal = "expression must start with <, <=, =, >=, or >"
        else:
            try:
                out.append((parts[0], float(parts[1])))
                continue
            except ValueError:
                refusal = "expression expects to be compared with a number"
        raise click.BadParameter(f"{expr!r}: {refusal}", param_hint=name)
    return out


@click.command("view-job-records")
@click.option("-u", "--user", default=None, help="Username (or numeric userid).")
@click.option("-j", "--jobid", default=None, help="A job ID in any Flux form.")
@click.option("-a", "--after-start-time", type=TIME, default=None, help="Jobs with t_run > T.")
@click.option("-b", "--before-end-time", type=TIME, default=None, help="Jobs with t_inactive < T.")
@click.option("--project", default=None)
@click.option("-B", "--bank", default=None)
@click.option("-d", "--requested-duration", multiple=True, metavar="'OP N'")
@click.option("-e", "--actual-duration", multiple=True, metavar="'OP N'")
@click.option("-D", "--duration-delta", multiple=True, metavar="'OP N'")
@output_options
@as_of_option
@click.pass_context
def view_job_records(
    ctx: click.Context,
    as_of: AsOf | None,
    user: str | None,
    jobid: str | None,
    after_start_time: float | None,
    before_end_time: float | None,
    project: str | None,
    bank: str | None,
    requested_duration: tuple[str, ...],
    actual_duration: tuple[str, ...],
    duration_delta: tuple[str, ...],
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """List recorded jobs, filtered as flux-accounting's view-job-records does."""
    job_id = None
    if jobid is not None:
        try:
            job_id = parse_job_id(jobid)
        except InvalidValue as err:
            raise click.BadParameter(str(err), param_hint="--jobid") from None
    selected = JobFilter(
        user=user,
        job_id=job_id,
        after_start=after_start_time,
        before_end=before_end_time,
        project=project,
        bank=bank,
        requested=_duration_filter(requested_duration, "--requested-duration"),
        actual=_duration_filter(actual_duration, "--actual-duration"),
        delta=_duration_filter(duration_delta, "--duration-delta"),
    )
    if fmt and (as_json or fields):
        raise click.UsageError("-o/--format cannot be combined with --json or --fields")
    # Checked before the read, so a bad format is refused even when no job matches.
    chosen = RecordFormat(fmt, ALL_JOB_COLUMNS) if fmt else None
    with job_records.view_job_records(session(ctx), selected, as_of) as rows:
        if as_json or fields:
            echo_lines(
                Output(as_json, None, fields).spooled(
                    rows, ALL_JOB_COLUMNS if fields else JOB_COLUMNS
                )
            )
            return
        echo_lines(chosen.spooled(rows) if chosen is not None else _default_listing(rows))
    # flux-accounting prints its table, which ends in a newline, with print(): a blank line
    # ends the output, and scripts that compare it byte for byte expect it.
    click.echo("")


COMMANDS = [ingest, view_job_records]
