"""Audit: history (who changed what, when and why) and diff (what changed between two moments)."""

from __future__ import annotations

import json
from typing import Any

import click

from cli.audit_text import diff_lines, history_line
from cli.params import AS_OF, TIME_FORMS, AsOf
from cli.session import session
from ledger.bounds import printable
from ledger.clock import iso
from ledger.errors import InvalidValue
from projections.queries import as_of as as_of_view
from projections.queries import diff as diff_view
from projections.queries import history as history_view
from projections.queries import site as site_queries


def _selector(
    bank: str | None,
    user: str | None,
    queue: str | None,
    project: str | None,
    config: bool,
    all_: bool,
    qos: str | None = None,
) -> history_view.Selector:
    chosen = [
        name
        for name, given in (
            ("--bank", bank is not None and user is None),
            ("--user", user is not None),
            ("--queue", queue is not None),
            ("--qos", qos is not None),
            ("--project", project is not None),
            ("--config", config),
            ("--all", all_),
        )
        if given
    ]
    if len(chosen) > 1:
        raise click.UsageError(
            f"{' and '.join(chosen)} cannot be combined: choose one of --bank, --user "
            "(optionally with --bank), --queue, --qos, --project, --config, --all"
        )
    if user is not None:
        return history_view.Selector("user", user, bank)
    if bank is not None:
        return history_view.Selector("bank", bank)
    if queue is not None:
        return history_view.Selector("queue", queue)
    if qos is not None:
        return history_view.Selector("qos", qos)
    if project is not None:
        return history_view.Selector("project", project)
    return history_view.Selector("config" if config else "all")


@click.command("history")
@click.option("--bank", default=None, metavar="BANK", help="A bank's own events.")
@click.option(
    "--user",
    default=None,
    metavar="USER",
    help="A user's association events (with --bank: that association only).",
)
@click.option("--queue", default=None, metavar="QUEUE", help="A queue's events.")
@click.option("--qos", default=None, metavar="QOS", help="A QOS's events.")
@click.option("--project", default=None, metavar="PROJECT", help="A project's events.")
@click.option("--config", is_flag=True, help="create-db, edit-config and edit-factor events.")
@click.option(
    "--all",
    "all_",
    is_flag=True,
    help="Every event, with usage/fair-share updates and job batches (the default).",
)
@click.option(
    "--since",
    type=AS_OF,
    default=None,
    help=f"Events at or after this time: {TIME_FORMS}.",
)
@click.option(
    "--until", type=AS_OF, default=None, help="Events at or before this time (same forms)."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of events.")
@click.pass_context
def history(
    ctx: click.Context,
    bank: str | None,
    user: str | None,
    queue: str | None,
    qos: str | None,
    project: str | None,
    config: bool,
    all_: bool,
    since: AsOf | None,
    until: AsOf | None,
    as_json: bool,
) -> None:
    """Who changed what, when and why: one line per event, old → new, in log order.

    Line: TIME  ACTOR  ACTION OBJECT: FIELD OLD → NEW, ...  (REASON)
    """
    selector = _selector(bank, user, queue, project, config, all_, qos)
    s = session(ctx)
    conn = s.read()
    entries = history_view.read_history(
        s.ledger,
        conn,
        selector,
        since=None if since is None else s.when(since),
        until=None if until is None else s.when(until),
    )
    if as_json:
        click.echo(json.dumps([e.to_json() for e in entries], indent=2, ensure_ascii=False))
        return
    if not entries:
        click.echo(f"no events for {selector.describe()}", err=True)
        return
    for entry in entries:
        click.echo(history_line(entry))


def _moment_json(moment: as_of_view.Moment) -> dict[str, Any]:
    return {
        "asked": iso(moment.asked),
        "position": moment.position,
        "event_time": iso(moment.event_time),
    }


@click.command("diff")
@click.option(
    "--from",
    "from_",
    type=AS_OF,
    required=True,
    help=f"The earlier moment, no later than --to: {TIME_FORMS}.",
)
@click.option(
    "--to",
    type=AS_OF,
    default=None,
    help="The later moment, no later than the ledger's now (same forms; default: now).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def diff(ctx: click.Context, from_: AsOf, to: AsOf | None, as_json: bool) -> None:
    """What changed between two moments: banks, associations, queues, projects, factors,
    config, and fair-share values and ranks. The moments compared are stated on stderr."""
    s = session(ctx)
    conn = s.read()
    to = to if to is not None else AsOf(ago=0.0, text="now")
    earlier, later = s.past(from_, "--from"), s.past(to, "--to")
    if earlier > later:
        # Not a reversed diff: a reversed pair is almost always a typo.
        raise InvalidValue(
            f"--from {from_.described()} ({iso(earlier)}) is after "
            f"--to {to.described()} ({iso(later)})"
        )
    start = as_of_view.moment_at(conn, earlier)
    end = as_of_view.moment_at(conn, later)
    click.echo(f"from: {start.describe()}", err=True)
    click.echo(f"to: {end.describe()}", err=True)
    before = as_of_view.materialize(s.ledger, conn, start)
    after = as_of_view.materialize(s.ledger, conn, end)
    try:
        result = diff_view.compare(before, after)
        # shares read as the later moment's algorithm reads them (Fairshare=parent, or not)
        parent_shares = site_queries.parent_shares(after)
    finally:
        before.close()
        after.close()
    if as_json:
        data = {"from": _moment_json(start), "to": _moment_json(end), **result.to_json()}
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if not result:
        click.echo("no changes", err=True)
        return
    for text in diff_lines(result, parent_shares):
        click.echo(printable(text))


COMMANDS: list[click.Command] = [history, diff]
