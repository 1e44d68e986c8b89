"""Audit: history (who changed what, when and why) and diff (what changed between two moments)."""

from __future__ import annotations

import json
from typing import Any

import click

from cli.audit_text import diff_lines, history_line
from cli.params import AS_OF, AsOf
from cli.session import Session, session
from ledger.bounds import printable
from ledger.clock import iso
from projections.queries import as_of as as_of_view
from projections.queries import diff as diff_view
from projections.queries import history as history_view


def _selector(
    bank: str | None,
    user: str | None,
    queue: str | None,
    project: str | None,
    config: bool,
    all_: bool,
) -> history_view.Selector:
    chosen = [
        name
        for name, given in (
            ("--bank", bank is not None and user is None),
            ("--user", user is not None),
            ("--queue", queue is not None),
            ("--project", project is not None),
            ("--config", config),
            ("--all", all_),
        )
        if given
    ]
    if len(chosen) > 1:
        raise click.UsageError(
            f"{' and '.join(chosen)} cannot be combined: choose one of --bank, --user "
            "(optionally with --bank), --queue, --project, --config, --all"
        )
    if user is not None:
        return history_view.Selector("user", user, bank)
    if bank is not None:
        return history_view.Selector("bank", bank)
    if queue is not None:
        return history_view.Selector("queue", queue)
    if project is not None:
        return history_view.Selector("project", project)
    return history_view.Selector("config" if config else "all")


def _now_for(s: Session, *times: AsOf | None) -> float:
    """The ledger's now, to resolve durations ago. Absolute times don't ask the clock, which
    refuses a --now earlier than the newest event."""
    if all(t is None or t.absolute is not None for t in times):
        return 0.0
    return s.ledger.now().timestamp()


@click.command("history")
@click.option("--bank", default=None, metavar="BANK", help="A bank's own events.")
@click.option(
    "--user",
    default=None,
    metavar="USER",
    help="A user's association events (with --bank: that association only).",
)
@click.option("--queue", default=None, metavar="QUEUE", help="A queue's events.")
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
    help="Events at or after this time (ISO 8601 with a zone, epoch seconds, or 3d ago).",
)
@click.option("--until", type=AS_OF, default=None, help="Events at or before this time.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of events.")
@click.pass_context
def history(
    ctx: click.Context,
    bank: str | None,
    user: str | None,
    queue: str | None,
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
    selector = _selector(bank, user, queue, project, config, all_)
    s = session(ctx)
    conn = s.read()
    now = _now_for(s, since, until)
    entries = history_view.read_history(
        s.ledger,
        conn,
        selector,
        since=None if since is None else since.resolve(now),
        until=None if until is None else until.resolve(now),
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
    help="The earlier moment: ISO 8601 with a zone, epoch seconds, or a duration ago (3d).",
)
@click.option("--to", type=AS_OF, default=None, help="The later moment (same forms; default: now).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
def diff(ctx: click.Context, from_: AsOf, to: AsOf | None, as_json: bool) -> None:
    """What changed between two moments: banks, associations, queues, projects, factors,
    config, and fair-share values and ranks. The moments compared are stated on stderr."""
    s = session(ctx)
    conn = s.read()
    to = to if to is not None else AsOf(ago=0.0)
    now = _now_for(s, from_, to)
    start = as_of_view.moment_at(conn, from_.resolve(now))
    end = as_of_view.moment_at(conn, to.resolve(now))
    click.echo(f"from: {start.describe()}", err=True)
    click.echo(f"to: {end.describe()}", err=True)
    before = as_of_view.materialize(s.ledger, conn, start)
    after = as_of_view.materialize(s.ledger, conn, end)
    try:
        result = diff_view.compare(before, after)
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
    for text in diff_lines(result):
        click.echo(printable(text))


COMMANDS: list[click.Command] = [history, diff]
