"""Association commands: add-user, edit-user, delete-user, view-user, list-users."""

from __future__ import annotations

from typing import Any

import click

from cli.output import NO_RESULTS, Output, output_options
from cli.params import LIMIT, SHARE_LIMIT, SHARES, AsOf, as_of_option
from cli.session import change_options, session
from ledger.bounds import printable
from ledger.errors import InvalidValue
from ledger.limit_fields import ASSOCIATION_LIMIT_FIELDS
from ledger.usecases import users
from projections.queries import site as queries
from projections.writers.schema import ASSOCIATION_COLUMNS, ASSOCIATION_QOS_COLUMNS

# view-user -J: the rows of flux-accounting's job_usage_per_association_table.
PERIOD_COLUMNS = ["username", "userid", "bank", "period", "value"]
FAIRSHARE_HELP = (
    "Set the fair-share (0 to 1; -1 resets to 0.5), in force until the next update-fshare "
    "ranks the association."
)


def association_options(limit_type: Any) -> Any:
    def decorate(func: Any) -> Any:
        for option in reversed(
            [
                click.option(
                    "--shares", type=SHARE_LIMIT if limit_type is LIMIT else SHARES, default=None
                ),
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
                click.option(
                    "--qos",
                    default=None,
                    metavar="QOS,...",
                    help="Slurm's QOS list of the association (each an existing QOS).",
                ),
                click.option(
                    "--default-qos",
                    default=None,
                    metavar="QOS",
                    help="The association's default QOS (one of its --qos list).",
                ),
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
    _check_queue_edits(given.get("queues"), add_queue, delete_queue)
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


def _check_queue_edits(
    queues: str | None, add_queue: tuple[str, ...], delete_queue: tuple[str, ...]
) -> None:
    """flux-accounting's refusals, in its words: a full list and a change to it, or a queue
    both added and removed, leave the intended list unclear."""
    if queues is not None and (add_queue or delete_queue):
        raise InvalidValue(
            "cannot specify --queues with --add-queue or --delete-queue; use either full "
            "replacement (--queues) or incremental operations (--add-queue/--delete-queue)"
        )
    both = [q for q in add_queue if q in delete_queue]
    if both:
        raise InvalidValue(
            f"cannot pass queue to both --add-queue and --delete-queue: {', '.join(both)}"
        )


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
    help="Usage per period (raw, newest first: period 0 is the current one) of each of the "
    "user's associations, as of the last update. Not with --fields.",
)
@output_options(parsable=True)
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
    parsable: bool,
) -> None:
    """Show USERNAME's associations (JSON; a table with --parsable)."""
    if job_usage and fields is not None:
        # argparse's words: flux-accounting declares the two mutually exclusive.
        raise click.UsageError("argument -J/--job-usage: not allowed with argument --fields")
    conn = session(ctx).read(as_of)
    out = Output(as_json, fmt, fields, parsable, parent_shares=queries.parent_shares(conn))
    if job_usage:
        periods = queries.usage_periods(conn, username)
        click.echo(out.render(periods, PERIOD_COLUMNS, default="json", empty=NO_RESULTS))
        return
    rows = queries.user_rows(conn, username, with_qos=True)
    columns = out.select(association_columns(rows, out))
    if list_banks and out.fmt is None:
        click.echo("\n".join(printable(r["bank"]) for r in rows))
        return
    click.echo(out.render(rows, columns, default="json"))


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
@output_options(short_json=True, short_fields=True)
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
    conn = session(ctx).read(as_of)
    rows = queries.associations(conn, filters, with_qos=True)
    out = Output(as_json, fmt, fields, parent_shares=queries.parent_shares(conn))
    click.echo(out.render(rows, association_columns(rows, out), empty=NO_RESULTS))


def association_columns(rows: list[dict[str, Any]], out: Output) -> list[str]:
    """flux-accounting's columns, then the Slurm QOS columns when a row has a QOS or --fields
    or -o names one: a Flux site's output (and its errors' column lists) stays
    flux-accounting's."""
    asked = f"{out.fields or ''} {out.fmt or ''}"
    if "qos" in asked or any(row[c] for row in rows for c in ASSOCIATION_QOS_COLUMNS):
        return [*ASSOCIATION_COLUMNS, *ASSOCIATION_QOS_COLUMNS]
    return list(ASSOCIATION_COLUMNS)


COMMANDS = [add_user, edit_user, delete_user, view_user, list_users]
