"""Association commands: add-user, edit-user, delete-user, view-user, list-users."""

from __future__ import annotations

from typing import Any

import click

from cli.output import Output, output_options
from cli.params import LIMIT, AsOf, as_of_option
from cli.session import change_options, session
from ledger.bounds import printable
from ledger.limits import ASSOCIATION_LIMIT_FIELDS
from ledger.usecases import users
from projections.queries import site as queries
from projections.writers.schema import ASSOCIATION_COLUMNS

BIN_COLUMNS = ["username", "bank", "job_usage", "bins"]
FAIRSHARE_HELP = (
    "Set the fair-share (0 to 1; -1 resets to 0.5), in force until the next update-fshare "
    "ranks the association."
)


def association_options(limit_type: Any) -> Any:
    def decorate(func: Any) -> Any:
        for option in reversed(
            [
                click.option("--shares", type=limit_type, default=None),
                click.option("--max-running-jobs", type=limit_type, default=None),
                click.option("--max-active-jobs", type=limit_type, default=None),
                click.option("-N", "--max-nodes", type=limit_type, default=None),
                click.option("-c", "--max-cores", type=limit_type, default=None),
                click.option("-q", "--queues", default=None, help="Comma-separated queue list."),
                click.option(
                    "-P", "--projects", default=None, help="Comma-separated project list."
                ),
                click.option("--default-project", default=None),
                click.option("--max-sched-jobs", type=limit_type, default=None),
            ]
        ):
            func = option(func)
        return func

    return decorate


@click.command("add-user")
@click.option("-u", "--username", required=True)
@click.option("-B", "--bank", required=True)
@click.option(
    "-i",
    "--userid",
    type=int,
    default=None,
    help="Numeric user id (default: the user's existing one, else the system's).",
)
@association_options(int)
@click.option(
    "--fairshare",
    default=None,
    help="Start with this fair-share (0 to 1) instead of 0.5, until the next update-fshare "
    "ranks the association.",
)
@change_options
@click.pass_context
def add_user(
    ctx: click.Context,
    username: str,
    bank: str,
    userid: int | None,
    fairshare: str | None,
    actor: str | None,
    reason: str | None,
    **given: Any,
) -> None:
    """Add an association (USERNAME in BANK), or reactivate it with the values given."""
    users.add_user(session(ctx), username, bank, userid, given, actor, reason, fairshare)


@click.command("edit-user")
@click.argument("username")
@click.option("-B", "--bank", default=None, help="Edit only this association (default: all).")
@click.option("-i", "--userid", type=int, default=None)
@click.option("--default-bank", default=None)
@click.option("--add-queue", multiple=True, help="Add a queue (repeatable).")
@click.option("--delete-queue", multiple=True, help="Remove a queue (repeatable).")
@association_options(LIMIT)
@click.option("--fairshare", default=None, help=FAIRSHARE_HELP)
@change_options
@click.pass_context
def edit_user(
    ctx: click.Context,
    username: str,
    bank: str | None,
    userid: int | None,
    default_bank: str | None,
    add_queue: tuple[str, ...],
    delete_queue: tuple[str, ...],
    fairshare: str | None,
    actor: str | None,
    reason: str | None,
    **given: Any,
) -> None:
    """Edit USERNAME's associations; -1 or 'unlimited' resets a field to its default."""
    given["userid"] = userid
    recorded = users.edit_user(
        session(ctx),
        username,
        bank,
        given,
        list(add_queue),
        list(delete_queue),
        default_bank,
        fairshare,
        actor,
        reason,
    )
    if not recorded:
        click.echo(f"user {username}: nothing to change", err=True)


@click.command("delete-user")
@click.argument("username")
@click.argument("bank")
@click.option("--force", is_flag=True, help="Remove the association instead of deactivating.")
@change_options
@click.pass_context
def delete_user(
    ctx: click.Context, username: str, bank: str, force: bool, actor: str | None, reason: str | None
) -> None:
    """Deactivate USERNAME's association in BANK (remove it with --force)."""
    session(ctx).change(lambda s, st: s.delete_user(st, username, bank, force), reason, actor)


@click.command("view-user")
@click.argument("username")
@click.option("--list-banks", is_flag=True, help="Print the user's banks, one per line.")
@click.option(
    "-J",
    "--job-usage",
    is_flag=True,
    help="Usage bins per association, current period first (as of the last update).",
)
@output_options
@as_of_option
@click.pass_context
def view_user(
    ctx: click.Context,
    as_of: AsOf | None,
    username: str,
    list_banks: bool,
    job_usage: bool,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """Show USERNAME's associations."""
    conn = session(ctx).read(as_of)
    rows = queries.user_rows(conn, username)
    if job_usage:
        bins = queries.usage_bins(conn, username)
        click.echo(Output(as_json, fmt, fields).render(bins, BIN_COLUMNS))
        return
    if list_banks:
        click.echo("\n".join(printable(r["bank"]) for r in rows))
        return
    click.echo(Output(as_json, fmt, fields).render(rows, ASSOCIATION_COLUMNS))


@click.command("list-users")
@click.option(
    "--active",
    type=click.Choice(["0", "1"]),
    default=None,
    help="1: active associations only; 0: inactive only.",
)
@click.option("-B", "--bank", default=None, help="Bank name(s), comma-separated.")
@click.option("--username", default=None, help="User name(s), comma-separated.")
@click.option("--shares", default=None)
@click.option("--max-running-jobs", default=None)
@click.option("--max-active-jobs", default=None)
@click.option("-N", "--max-nodes", default=None)
@click.option("-c", "--max-cores", default=None)
@click.option("-q", "--queues", default=None)
@click.option("-P", "--projects", default=None)
@click.option("--default-project", default=None)
@click.option("--max-sched-jobs", default=None)
@output_options
@as_of_option
@click.pass_context
def list_users(
    ctx: click.Context,
    as_of: AsOf | None,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
    **filters: Any,
) -> None:
    """List associations, filtered (filters are ANDed; a comma list matches any value)."""
    for name in ("shares", *ASSOCIATION_LIMIT_FIELDS):
        value = filters.get(name)
        if value is not None:
            for item in str(value).split(","):
                if not item.strip().lstrip("-").isdigit():
                    raise click.BadParameter(
                        f"{item!r} is not an integer", param_hint=f"--{name.replace('_', '-')}"
                    )
    rows = queries.associations(session(ctx).read(as_of), filters)
    click.echo(Output(as_json, fmt, fields).render(rows, ASSOCIATION_COLUMNS))


COMMANDS = [add_user, edit_user, delete_user, view_user, list_users]
