"""Usage and fair-share: update-usage, update-fshare, clear-usage, view-usage-report."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from cli.params import TIME
from cli.session import change_options, session
from ledger.bounds import printable
from ledger.site import Site, Stamp
from ledger.usecases import updates

if TYPE_CHECKING:
    # The report's module (and the job queries under it) is imported when a report is asked
    # for: update-usage and update-fshare run from a cron, and pay for every import.
    from ledger.usecases.usage_report import ReportType, TimeUnit, UsageReport


@click.command("update-usage")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Say on stderr when the update begins and ends (flux-accounting's INFO lines).",
)
@change_options
@click.pass_context
def update_usage(ctx: click.Context, verbose: int, actor: str | None, reason: str | None) -> None:
    """Recompute every association's decayed usage at the ledger's time."""

    at = updates.update_usage(session(ctx), actor, reason)
    if verbose:
        # flux account-update-usage -v's log lines, stamped with the ledger's time of the
        # update (its scripts grep for "INFO: beginning job-usage update").
        when = at.strftime("%Y-%m-%d %H:%M:%S")
        for line in (
            "beginning job-usage update for flux-accounting DB; slow response times may occur",
            "job-usage update for flux-accounting DB now complete",
        ):
            click.echo(f"{when}: INFO: {line}", err=True)
    click.echo(f"usage updated at {at.isoformat()}")


@click.command("update-fshare")
@change_options
@click.pass_context
def update_fshare(ctx: click.Context, actor: str | None, reason: str | None) -> None:
    """Bring usage up to date and recompute fair-share (the weighted tree walk)."""

    at = updates.update_fairshare(session(ctx), actor, reason)
    click.echo(f"fair-share updated at {at.isoformat()}")


@click.command("clear-usage")
@click.argument("banks", nargs=-1, required=True)
@click.option(
    "--ignore-older-than",
    type=TIME,
    default=None,
    help="Jobs that ended at or before this time stop counting (default: now).",
)
@change_options
@click.pass_context
def clear_usage(
    ctx: click.Context,
    banks: tuple[str, ...],
    ignore_older_than: float | None,
    actor: str | None,
    reason: str | None,
) -> None:
    """Stop counting the past jobs of every association under BANK (recursively)."""

    def command(site: Site, stamp: Stamp) -> None:
        cutoff = stamp.at.timestamp() if ignore_older_than is None else ignore_older_than
        for bank in banks:
            site.clear_usage(stamp, bank, cutoff)

    session(ctx).change(command, reason, actor)


def _size_bins(text: str | None) -> tuple[int, ...] | None:
    """--job-size-bins: parsed before the ledger is read, as click parses every other option."""
    if text is None:
        return None
    if not text[:1].isdigit():
        from ledger.usecases.usage_report import DEFAULT_SIZE_BINS

        return DEFAULT_SIZE_BINS  # flux-accounting: a non-digit first character means these
    try:
        return tuple(sorted(int(v) for v in text.split(",") if v.strip()))
    except ValueError:
        raise click.BadParameter(f"{text!r}: use N,N,...", param_hint="--job-size-bins") from None


@click.command("view-usage-report")
@click.option(
    "-s",
    "--start",
    type=TIME,
    default=None,
    help="From this time (default: yesterday 00:00 local).",
)
@click.option(
    "-e", "--end", type=TIME, default=None, help="Until this time (default: today 00:00 local)."
)
@click.option("-u", "--username", default=None)
@click.option("-b", "--bank", default=None)
@click.option(
    "-r",
    "--report-type",
    type=click.Choice(["byassociation", "bybank", "byuser"]),
    default="byassociation",
    show_default=True,
)
@click.option(
    "-t", "--time-unit", type=click.Choice(["sec", "min", "hour"]), default="sec", show_default=True
)
@click.option(
    "-S",
    "--job-size-bins",
    default=None,
    metavar="N,N,...",
    help="Split usage by job size (nodes); a non-digit value uses 0,2,8,...,8192.",
)
@click.pass_context
def view_usage_report(
    ctx: click.Context,
    start: float | None,
    end: float | None,
    username: str | None,
    bank: str | None,
    report_type: ReportType,
    time_unit: TimeUnit,
    job_size_bins: str | None,
) -> None:
    """Node-time used per association, bank or user between two times (sreport-like)."""
    from ledger.usecases.usage_report import usage_report

    bins = _size_bins(job_size_bins)
    report = usage_report(session(ctx), start, end, username, bank, report_type, time_unit, bins)
    click.echo("\n".join(printable(line) for line in _report_lines(report)))


HEADERS = {"byassociation": "bank:username", "bybank": "bank", "byuser": "username"}


def _report_lines(report: UsageReport) -> list[str]:
    lines = [
        f"{HEADERS[report.report_type]:<26}"
        + "".join(f"{b:>13d}+" for b in report.size_bins)
        + f"{'total':>14}"
    ]
    for row in [*report.rows, report.total]:
        lines.append(f"{row.label:<26}" + "".join(f"{v:>14.2f}" for v in row.values))
    return lines


COMMANDS = [update_usage, update_fshare, clear_usage, view_usage_report]
