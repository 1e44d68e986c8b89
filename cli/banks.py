"""Bank commands: add-bank, edit-bank, delete-bank, list-banks, view-bank."""

from __future__ import annotations

from typing import Any

import click

from cli.output import NO_RESULTS, Output, output_options, table
from cli.params import SHARES, TIME, AsOf, as_of_option
from cli.session import change_options, session
from cli.tree import render_tree
from ledger.errors import InvalidValue
from projections.queries import site as queries
from projections.writers.schema import BANK_COLUMNS

IGNORE_OLDER_THAN_HELP = (
    "Jobs under this bank (and the banks below it) that ended at or before this time do not "
    "count toward usage (0: every job counts; default 0)."
)
USER_COLUMNS = ["username", "active", "default_bank", "shares", "job_usage", "fairshare"]


# ignore_unknown_options lets a negative SHARES reach our rule (exit 1 naming the value)
# instead of being taken for an option; a real unknown option still fails as an extra argument.
@click.command("add-bank", context_settings={"ignore_unknown_options": True})
@click.argument("bank")
@click.argument("shares", type=SHARES)
@click.option("--parent-bank", default="", help="The parent bank ('' makes the root).")
@click.option("--priority", type=float, default=None, help="Bank priority factor (default 0.0).")
@click.option("--ignore-older-than", type=TIME, default=None, help=IGNORE_OLDER_THAN_HELP)
@change_options
@click.pass_context
def add_bank(
    ctx: click.Context,
    bank: str,
    shares: int,
    parent_bank: str,
    priority: float | None,
    ignore_older_than: float | None,
    actor: str | None,
    reason: str | None,
) -> None:
    """Add BANK with SHARES under --parent-bank (or reactivate it)."""
    session(ctx).change(
        lambda s, st: s.add_bank(
            st, bank, shares, parent_bank, priority, ignore_older_than=ignore_older_than
        ),
        reason,
        actor,
    )


@click.command("edit-bank")
@click.argument("bank")
@click.option("--shares", type=SHARES, default=None)
@click.option("--parent-bank", default=None, help="Move the bank under another bank.")
@click.option("--priority", type=float, default=None)
@click.option("--ignore-older-than", type=TIME, default=None, help=IGNORE_OLDER_THAN_HELP)
@change_options
@click.pass_context
def edit_bank(
    ctx: click.Context,
    bank: str,
    shares: int | None,
    parent_bank: str | None,
    priority: float | None,
    ignore_older_than: float | None,
    actor: str | None,
    reason: str | None,
) -> None:
    """Edit BANK's shares, parent, priority or usage cutoff."""
    changed = session(ctx).change(
        lambda s, st: s.edit_bank(st, bank, shares, parent_bank, priority, ignore_older_than),
        reason,
        actor,
    )
    if not changed:
        click.echo(f"bank {bank}: nothing to change", err=True)


@click.command("delete-bank")
@click.argument("bank")
@click.option(
    "--force",
    is_flag=True,
    help="Remove the bank, its sub-banks and associations instead of deactivating them.",
)
@change_options
@click.pass_context
def delete_bank(
    ctx: click.Context, bank: str, force: bool, actor: str | None, reason: str | None
) -> None:
    """Deactivate BANK, its sub-banks and their associations (or remove them with --force)."""
    session(ctx).change(lambda s, st: s.delete_bank(st, bank, force), reason, actor)


@click.command("list-banks")
@click.option("--inactive", is_flag=True, help="Include inactive banks.")
@output_options
@as_of_option
@click.pass_context
def list_banks(
    ctx: click.Context,
    as_of: AsOf | None,
    inactive: bool,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """List banks."""
    conn = session(ctx).read(as_of)
    rows = queries.banks(conn, include_inactive=inactive)
    out = Output(as_json, fmt, fields, parent_shares=queries.parent_shares(conn))
    click.echo(out.render(rows, BANK_COLUMNS, empty=NO_RESULTS))


@click.command("view-bank")
@click.argument("bank")
@click.option("-t", "--tree", is_flag=True, help="Print the hierarchy below BANK.")
@click.option("-u", "--users", is_flag=True, help="Also list the bank's associations.")
@click.option("-P", "--parsable", is_flag=True, help="With -t: '|'-delimited output.")
@click.option(
    "-c",
    "--concise",
    is_flag=True,
    help="With -t or -u: only associations with a job usage above 0.",
)
@click.option(
    "-A", "--active", "active_only", is_flag=True, help="With -t or -u: active associations only."
)
@output_options
@as_of_option
@click.pass_context
def view_bank(
    ctx: click.Context,
    as_of: AsOf | None,
    bank: str,
    tree: bool,
    users: bool,
    parsable: bool,
    concise: bool,
    active_only: bool,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """Show BANK: its row as JSON, its associations with -u, its hierarchy with -t."""
    # flux-accounting's refusals, in its order and words (its scripts grep for them).
    if tree and fields is not None:
        raise InvalidValue("--tree option does not support custom formatting")
    if parsable and not tree:
        raise InvalidValue("-P/--parsable can only be passed with -t/--tree")
    conn = session(ctx).read(as_of)
    parent = queries.parent_shares(conn)
    out = Output(as_json, fmt, fields, parent_shares=parent)
    columns = out.select(BANK_COLUMNS)
    row = queries.bank(conn, bank)
    if out.fmt is not None:
        click.echo(out.render([row], columns))
        return
    if tree:
        banks = queries.subtree_banks(conn, bank)
        members = _shown(queries.users_in(conn, [b["bank"] for b in banks]), concise, active_only)
        if as_json:
            click.echo(
                Output(True, None, None, parent_shares=parent).render(
                    _tree_rows(bank, banks, members), TREE_COLUMNS
                )
            )
            return
        click.echo(render_tree(bank, banks, members, parsable, parent))
        return
    if not users:
        click.echo(out.render([row], columns, default="json"))
        return
    members = _shown(queries.users_in(conn, [bank]), concise, active_only)
    if as_json:
        click.echo(
            Output(True, None, None, parent_shares=parent).render(
                members, USER_COLUMNS, empty=f"no users under {bank}"
            )
        )
        return
    click.echo(out.render([row], columns))
    click.echo()
    click.echo(table(members, USER_COLUMNS, parent) if members else f"no users under {bank}")


TREE_COLUMNS = ["bank", "parent_bank", "username", "active", "shares", "job_usage", "fairshare"]


def _shown(members: list[dict[str, Any]], concise: bool, active_only: bool) -> list[dict[str, Any]]:
    """-c and -A filter associations only: flux-accounting lists every bank of the tree."""
    return [
        m
        for m in members
        if (not concise or m["job_usage"] > 0) and (not active_only or m["active"])
    ]


def _tree_rows(
    top: str, banks: list[dict[str, Any]], members: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    rows = [
        {
            "bank": b["bank"],
            "parent_bank": b["parent_bank"],
            "username": None,
            "active": b["active"],
            "shares": b["shares"],
            "job_usage": b["job_usage"],
            "fairshare": None,
        }
        for b in banks
    ]
    rows += [
        {
            "bank": m["bank"],
            "parent_bank": m["bank"],
            "username": m["username"],
            "active": m["active"],
            "shares": m["shares"],
            "job_usage": m["job_usage"],
            "fairshare": m["fairshare"],
        }
        for m in members
    ]
    return rows


COMMANDS = [add_bank, edit_bank, delete_bank, list_banks, view_bank]
