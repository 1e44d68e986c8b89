"""Usage and fair-share: update-usage, update-fshare, clear-usage, view-usage-report."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

import click

from cli.params import TIME
from cli.session import change_options, session
from ledger.bounds import printable
from ledger.clock import iso
from ledger.errors import InvalidValue
from ledger.site import Site, Stamp
from ledger.site_usage import AssociationResolver
from projections.queries import jobs as job_queries

DEFAULT_SIZE_BINS = (0, 2, 8, 32, 128, 512, 2048, 8192)


@click.command("update-usage")
@change_options
@click.pass_context
def update_usage(ctx: click.Context, actor: str | None, reason: str | None) -> None:
    """Recompute every association's decayed usage at the ledger's time."""

    def mark(site: Site, stamp: Stamp) -> datetime:
        site.mark_usage_updated(stamp)
        return stamp.at

    click.echo(f"usage updated at {session(ctx).change(mark, reason, actor).isoformat()}")


@click.command("update-fshare")
@change_options
@click.pass_context
def update_fshare(ctx: click.Context, actor: str | None, reason: str | None) -> None:
    """Bring usage up to date and recompute fair-share (the weighted tree walk)."""

    def mark(site: Site, stamp: Stamp) -> datetime:
        site.mark_fairshare_updated(stamp)
        return stamp.at

    click.echo(f"fair-share updated at {session(ctx).change(mark, reason, actor).isoformat()}")


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
    s = session(ctx)

    def command(site, stamp):  # type: ignore[no-untyped-def]
        cutoff = stamp.at.timestamp() if ignore_older_than is None else ignore_older_than
        for bank in banks:
            site.clear_usage(stamp, bank, cutoff)

    s.change(command, reason, actor)


def _size_bins(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    if not text[:1].isdigit():
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
    report_type: str,
    time_unit: str,
    job_size_bins: str | None,
) -> None:
    """Node-time used per association, bank or user between two times (sreport-like)."""
    s = session(ctx)
    conn = s.read()
    midnight = datetime.fromtimestamp(s.ledger.now().timestamp()).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    end = midnight.timestamp() if end is None else end
    start = (midnight - timedelta(days=1)).timestamp() if start is None else start
    if end < start:
        raise InvalidValue(f"invalid range: end {iso(end)} is before start {iso(start)}")
    divisor = {"sec": 1.0, "min": 60.0, "hour": 3600.0}[time_unit]
    bins = _size_bins(job_size_bins)
    resolver = AssociationResolver(s.ledger.state())
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0] * (len(bins or ()) + 1))
    for job in job_queries.usage_report_jobs(conn, start, end):
        key = resolver.resolve(job["userid"], job["username"], job["bank"])
        user, job_bank = key if key else (job["username"] or str(job["userid"]), job["bank"] or "")
        if (username and user != username) or (bank and job_bank != bank):
            continue
        label = {"byassociation": f"{job_bank}:{user}", "bybank": job_bank, "byuser": user}[
            report_type
        ]
        value = job["nnodes"] * (job["t_inactive"] - job["t_run"]) / divisor
        row = totals[label]
        if bins:
            slot = max((i for i, b in enumerate(bins) if b <= job["nnodes"]), default=0)
            row[slot] += value
        row[-1] += value
    header = {"byassociation": "bank:username", "bybank": "bank", "byuser": "username"}
    lines = [
        f"{header[report_type]:<26}" + "".join(f"{b:>13d}+" for b in bins or ()) + f"{'total':>14}"
    ]
    grand = [0.0] * (len(bins or ()) + 1)
    for label, row in sorted(totals.items(), key=lambda item: (-item[1][-1], item[0])):
        lines.append(f"{label:<26}" + "".join(f"{v:>14.2f}" for v in row))
        grand = [a + b for a, b in zip(grand, row, strict=True)]
    lines.append(f"{'TOTAL':<26}" + "".join(f"{v:>14.2f}" for v in grand))
    click.echo("\n".join(printable(line) for line in lines))


COMMANDS = [update_usage, update_fshare, clear_usage, view_usage_report]
