"""jobs: a user's live jobs and how their priority was made, as flux-accounting shows them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from cli.params import TIME
from cli.session import session
from ledger.errors import InvalidValue, LedgerError
from ledger.flux_accounting.transport import FluxUnavailable, LiveJobQuery, connect
from ledger.job_ids import parse_job_id
from ledger.usecases.live_jobs import JOB_PRIORITY_COLUMNS, JobPriority, job_priorities

# flux-accounting's column widths (left-aligned, no separator).
WIDTHS = [15, 9, 8, 10, 10, 8, 7, 7, 10, 10, 8, 8, 8]
URGENCY_DEFAULT = 16  # Flux's default urgency: the urgency factor counts from it


def table(jobs: Sequence[JobPriority]) -> str:
    def line(values: Sequence[Any]) -> str:
        return "".join(f"{v:<{w}}" for v, w in zip(values, WIDTHS, strict=True))

    header = line(JOB_PRIORITY_COLUMNS)
    rows = [line([job.row[c] for c in JOB_PRIORITY_COLUMNS]) for job in jobs]
    return f"{header}\n" + "\n".join(rows)


def formatted(jobs: Sequence[JobPriority], fmt: str) -> str:
    try:
        header = fmt.format(**{c: c for c in JOB_PRIORITY_COLUMNS})
        rows = [fmt.format(**job.row) for job in jobs]
    except KeyError as err:
        raise InvalidValue(
            f"Invalid column name in format string: {err.args[0]}. "
            f"Available columns: {', '.join(JOB_PRIORITY_COLUMNS)}"
        ) from None
    except (ValueError, IndexError, AttributeError, TypeError) as err:
        raise InvalidValue(f"invalid format string {fmt!r}: {err}") from None
    return "\n".join([header, *rows])


def calculation(job: JobPriority) -> str:
    """flux-accounting's -v: the priority formula with this job's numbers."""
    r = job.row
    fairshare = r["FAIRSHARE"] * r["FSFACTOR"] if r["FAIRSHARE"] != "" else 0
    parts = [
        fairshare,
        r["QPRIO"] * r["QFACT"],
        r["BANKPRIO"] * r["BANKFACT"],
        r["URGFACT"] * (job.urgency - URGENCY_DEFAULT),
    ]
    return (
        f"{r['JOBID']}\n"
        "= (FAIRSHARE * FAIRSHARE_WEIGHT) + (QUEUE_PRIORITY * QUEUE_WEIGHT) + "
        "(BANK_PRIORITY * BANK_WEIGHT) + (URGENCY_WEIGHT * (URGENCY - 16))\n"
        f"= ({r['FAIRSHARE']} * {r['FSFACTOR']}) + ({r['QPRIO']} * {r['QFACT']}) + "
        f"({r['BANKPRIO']} * {r['BANKFACT']}) + ({r['URGFACT']} * ({job.urgency} - 16))\n"
        f"= {' + '.join(str(p) for p in parts)}\n"
        f"= {r['PRIORITY']}\n"
    )


@click.command("jobs")
@click.argument("username")
@click.option("--bank", default=None, help="Only jobs under BANK.")
@click.option("--queue", default=None, help="Only jobs in QUEUE.")
@click.option("-o", "--format", "fmt", default="", metavar="FORMAT", help="Python str.format.")
@click.option(
    "-f",
    "--filter",
    "states",
    default=None,
    metavar="STATES|RESULTS",
    help="Comma-separated job states or results (e.g. pending,running).",
)
@click.option(
    "-c",
    "--count",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="At most N jobs (0: all).",
)
@click.option(
    "--since",
    type=TIME,
    default=0.0,
    show_default=True,
    help="Also jobs that became inactive since WHEN.",
)
@click.option(
    "-j", "--jobids", multiple=True, metavar="JOBID", help="Only these jobs (repeatable)."
)
@click.option("-v", "--verbose", is_flag=True, help="Show each job's priority calculation.")
@click.pass_context
def jobs(
    ctx: click.Context,
    username: str,
    bank: str | None,
    queue: str | None,
    fmt: str,
    states: str | None,
    count: int,
    since: float,
    jobids: tuple[str, ...],
    verbose: bool,
) -> None:
    """USERNAME's jobs in a running Flux instance with their priority's factors: the
    fair-share the priority plugin used, and the ledger's bank and queue priorities and
    current factor weights."""
    ids = []
    for text in jobids:
        try:
            ids.append(parse_job_id(text))
        except InvalidValue as err:
            raise click.BadParameter(str(err), param_hint="--jobids") from None
    filters = tuple(f.strip() for f in (states or "").split(",") if f.strip())
    query = LiveJobQuery(username, queue, since, count, tuple(ids), filters)
    try:
        source = connect()
    except FluxUnavailable as err:
        raise LedgerError(str(err)) from None
    shown = job_priorities(session(ctx), source, query, bank)
    if verbose:
        # Each calculation ends in a newline and flux-accounting print()s them: a blank line ends.
        click.echo("".join(calculation(job) for job in shown))
    elif fmt:
        click.echo(formatted(shown, fmt))
    else:
        click.echo(table(shown))


COMMANDS = [jobs]
