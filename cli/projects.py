"""Project commands: add-project, delete-project, view-project, list-projects."""

from __future__ import annotations

import click

from cli.output import NO_RESULTS, Output, output_options
from cli.params import AsOf, as_of_option
from cli.session import change_options, session
from projections.queries import site as queries
from projections.writers.schema import PROJECT_COLUMNS


@click.command("add-project")
@click.argument("project")
@change_options
@click.pass_context
def add_project(ctx: click.Context, project: str, actor: str | None, reason: str | None) -> None:
    """Add PROJECT."""
    session(ctx).change(lambda s, st: s.add_project(st, project), reason, actor)


@click.command("delete-project")
@click.argument("project")
@change_options
@click.pass_context
def delete_project(ctx: click.Context, project: str, actor: str | None, reason: str | None) -> None:
    """Remove PROJECT."""
    users = session(ctx).change(lambda s, st: s.delete_project(st, project), reason, actor)
    if users:
        # flux-accounting's warning, on stdout as it prints it (its scripts grep for it); the
        # associations concerned follow on stderr.
        click.echo(
            "WARNING: user(s) in the association_table still reference this project. Make sure "
            "to edit user rows to account for this deleted project."
        )
        click.echo(
            f"fairledger: associations listing project {project}: {', '.join(users)}", err=True
        )


@click.command("view-project")
@click.argument("project")
@output_options(parsable=True)
@as_of_option
@click.pass_context
def view_project(
    ctx: click.Context,
    as_of: AsOf | None,
    project: str,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
    parsable: bool,
) -> None:
    """Show PROJECT (JSON; a table with --parsable)."""
    row = queries.project(session(ctx).read(as_of), project)
    click.echo(
        Output(as_json, fmt, fields, parsable).render([row], PROJECT_COLUMNS, default="json")
    )


@click.command("list-projects")
@output_options
@as_of_option
@click.pass_context
def list_projects(
    ctx: click.Context, as_of: AsOf | None, as_json: bool, fmt: str | None, fields: str | None
) -> None:
    """List projects."""
    rows = queries.projects(session(ctx).read(as_of))
    click.echo(Output(as_json, fmt, fields).render(rows, PROJECT_COLUMNS, empty=NO_RESULTS))


COMMANDS = [add_project, delete_project, view_project, list_projects]
