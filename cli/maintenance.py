"""Site-wide maintenance: edit-all-users, sync-userids, scrub-old-jobs."""

from __future__ import annotations

from typing import Any

import click

from cli.params import LIMIT
from cli.session import change_options, session
from cli.users import FAIRSHARE_HELP, association_options
from ledger.errors import InvalidValue
from ledger.usecases import users


@click.command("edit-all-users")
@click.option(
    "--bank",
    default=None,
    help="Refused: flux-accounting moves every association into BANK (an association's bank "
    "is what it is; use add-user and delete-user).",
)
@click.option("--default-bank", default=None, help="Every user's default bank.")
@click.option("--fairshare", default=None, help=FAIRSHARE_HELP)
@association_options(LIMIT)
@change_options
@click.pass_context
def edit_all_users(
    ctx: click.Context,
    bank: str | None,
    default_bank: str | None,
    fairshare: str | None,
    actor: str | None,
    reason: str | None,
    **given: Any,
) -> None:
    """Edit every association at once; -1 or 'unlimited' resets a field to its default."""
    if bank is not None:
        raise InvalidValue(
            f"edit-all-users --bank {bank} would move every association into bank {bank}: "
            "refused (an association's bank cannot be edited; use add-user and delete-user)"
        )
    if all(v is None for v in given.values()) and default_bank is None and fairshare is None:
        raise InvalidValue("no fields provided for update")
    recorded = users.edit_all_users(session(ctx), given, default_bank, fairshare, actor, reason)
    if not recorded:
        click.echo("edit-all-users: nothing to change", err=True)


@click.command("sync-userids")
@change_options
@click.pass_context
def sync_userids(ctx: click.Context, actor: str | None, reason: str | None) -> None:
    """Give each user's associations one userid: that of the user's most recently modified
    association. Usage follows a job's username, so nothing else needs syncing."""
    changed = session(ctx).change(lambda s, st: s.sync_userids(st), reason, actor)
    for username, bank, old, new in changed:
        click.echo(f"sync-userids: {username}/{bank} userid {old} -> {new}", err=True)


@click.command("scrub-old-jobs")
@click.argument("num_weeks", type=click.IntRange(min=0), default=26, required=False)
@click.pass_context
def scrub_old_jobs(ctx: click.Context, num_weeks: int) -> None:
    """Accepted for flux-accounting's scripts; removes nothing. The log is immutable: it keeps
    every job, because time travel, rebuild and verify need them, and a job that ended before
    the usage window already counts for nothing."""
    session(ctx).read()  # the ledger must exist and open
    click.echo(
        f"scrub-old-jobs: nothing removed: jobs older than {num_weeks} weeks stay in the "
        "ledger's immutable log (time travel and verify need them); once past the usage window "
        "they count for nothing",
        err=True,
    )


COMMANDS = [edit_all_users, sync_userids, scrub_old_jobs]
