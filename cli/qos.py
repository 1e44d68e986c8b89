"""Slurm QOS commands: add-qos, edit-qos, delete-qos, view-qos, list-qos."""

from __future__ import annotations

from typing import Any

import click

from cli.output import NO_RESULTS, Output, output_options
from cli.params import AsOf, as_of_option
from cli.session import change_options, session
from ledger.site_config import QOS_FLAGS
from projections.queries import site as queries
from projections.writers.schema import QOS_COLUMNS


def qos_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--priority",
                type=int,
                default=None,
                help="Slurm's QOS Priority (0 to 4294967294; default 0).",
            ),
            click.option(
                "--usage-factor",
                type=float,
                default=None,
                help="Multiplies the charge of the QOS's jobs, fixed when a job is recorded "
                "(default 1; 0 charges nothing).",
            ),
            click.option(
                "--flags",
                default=None,
                metavar="FLAG,...",
                help=f"Slurm's QOS flags, any case ({', '.join(QOS_FLAGS)}); '' clears them.",
            ),
            click.option("--description", default=None, help="Free text."),
        ]
    ):
        func = option(func)
    return func


@click.command("add-qos")
@click.argument("qos")
@qos_options
@change_options
@click.pass_context
def add_qos(
    ctx: click.Context, qos: str, actor: str | None, reason: str | None, **given: Any
) -> None:
    """Add the QOS named QOS (Slurm's quality of service)."""
    session(ctx).change(lambda s, st: s.add_qos(st, qos, given), reason, actor)


@click.command("edit-qos")
@click.argument("qos")
@qos_options
@change_options
@click.pass_context
def edit_qos(
    ctx: click.Context, qos: str, actor: str | None, reason: str | None, **given: Any
) -> None:
    """Edit QOS; jobs already recorded keep the usage factor they were charged with."""
    changed = session(ctx).change(lambda s, st: s.edit_qos(st, qos, given), reason, actor)
    if not changed:
        click.echo(f"QOS {qos}: nothing to change", err=True)


@click.command("delete-qos")
@click.argument("qos")
@change_options
@click.pass_context
def delete_qos(ctx: click.Context, qos: str, actor: str | None, reason: str | None) -> None:
    """Remove QOS (refused while an association lists it)."""
    session(ctx).change(lambda s, st: s.delete_qos(st, qos), reason, actor)


@click.command("view-qos")
@click.argument("qos")
@output_options(parsable=True)
@as_of_option
@click.pass_context
def view_qos(
    ctx: click.Context,
    as_of: AsOf | None,
    qos: str,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
    parsable: bool,
) -> None:
    """Show QOS (JSON; a table with --parsable)."""
    row = queries.qos(session(ctx).read(as_of), qos)
    click.echo(Output(as_json, fmt, fields, parsable).render([row], QOS_COLUMNS, default="json"))


@click.command("list-qos")
@output_options
@as_of_option
@click.pass_context
def list_qos(
    ctx: click.Context, as_of: AsOf | None, as_json: bool, fmt: str | None, fields: str | None
) -> None:
    """List QOS."""
    rows = queries.qos_rows(session(ctx).read(as_of))
    click.echo(Output(as_json, fmt, fields).render(rows, QOS_COLUMNS, empty=NO_RESULTS))


COMMANDS = [add_qos, edit_qos, delete_qos, view_qos, list_qos]
