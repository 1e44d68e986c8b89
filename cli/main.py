"""The `fairledger` command group: global options, error handling and command registration."""

from __future__ import annotations

from typing import Any

import click

from cli import (
    admin,
    audit,
    bank_info,
    banks,
    demo,
    fairshare_emulate,
    fetch,
    jobs,
    live_jobs,
    maintenance,
    migrate,
    priority,
    projects,
    qos,
    queues,
    reports,
    settings,
    show_usage,
    slurm,
    sshare,
    usage,
    users,
)
from cli.option_prefixes import PrefixGroup
from cli.session import Session, warn
from ledger.bounds import printable, printable_lines
from ledger.clock import parse_time_spec
from ledger.errors import LedgerError, OutOfRange


class LedgerGroup(PrefixGroup):
    """Turns a broken ledger rule into one line on stderr and exit 1 (usage errors stay exit 2)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LedgerError as err:
            # One line, whatever the message quotes (a name with a newline or ESC in it).
            shown = printable_lines(str(err)) if err.multiline else printable(str(err))
            click.echo(f"fairledger: {shown}", err=True)
            ctx.exit(1)
        except OverflowError as err:
            # A ledger written before ledger.bounds may hold a value no read model can (issue
            # 10): say so in one line rather than a traceback; repairing it is another tool's.
            click.echo(
                f"fairledger: a value too large to store ({err}); a ledger written before "
                "values were bounded may hold one in its log",
                err=True,
            )
            ctx.exit(1)
        except UnicodeEncodeError as err:
            # Bytes that are not UTF-8 in an argument reach us as lone surrogates
            # (surrogateescape); no store can hold them.
            bad = printable(str(err.object[err.start : err.end]))
            click.echo(f"fairledger: invalid text: {bad} is not valid UTF-8", err=True)
            ctx.exit(1)
        except _infrastructure_errors() as err:
            message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            click.echo(f"fairledger: database error: {printable(message)}", err=True)
            ctx.exit(1)


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`fairledger --version`: the installed distribution's version, so that it cannot drift
    from what pip installed (a source tree run without installing says so)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        shown = version("fairledger")
    except PackageNotFoundError:
        shown = "unknown (not installed: pip install -e .)"
    click.echo(f"fairledger {shown}")
    ctx.exit(0)


def _infrastructure_errors() -> tuple[type[BaseException], ...]:
    import sqlite3

    import psycopg
    from eventsourcing.persistence import OperationalError, ProgrammingError

    return (sqlite3.Error, psycopg.Error, OperationalError, ProgrammingError)


# show_default: every command's --help shows its defaults (the context setting is inherited).
@click.group(
    cls=LedgerGroup,
    context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Print the installed version and exit.",
)
@click.option(
    "--db",
    envvar="FAIRLEDGER_DB",
    default=None,
    metavar="URL",
    help="sqlite:///PATH (default ./fairledger.db) or "
    "postgresql://user@host:port/db[?schema=name]. Env: FAIRLEDGER_DB.",
)
@click.option(
    "--now",
    envvar="FAIRLEDGER_NOW",
    default=None,
    metavar="TIME",
    help="The ledger's time for this command: epoch seconds, ISO 8601, a date such as "
    "12/01/24 (no zone: the site's timezone config), or a duration before the real clock (3d); "
    "never earlier than the newest event. Env: FAIRLEDGER_NOW.",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None, now: str | None) -> None:
    """fairledger: an event-sourced fair-share accounting ledger for shared compute clusters.

    Every change is an event with who, when and why; every table is rebuilt from them.
    """
    ctx.obj = Session(db, None, warn=warn)  # a bad --db is one line and exit 1 (LedgerGroup.invoke)
    ctx.call_on_close(ctx.obj.close)
    try:
        # A well-formed time out of bounds is OutOfRange (exit 1); a malformed one exit 2.
        ctx.obj.set_now(parse_time_spec(now) if now else None)
    except OutOfRange:
        raise
    except LedgerError as err:
        raise click.BadParameter(str(err)) from None


for module in (
    admin,
    banks,
    users,
    queues,
    qos,
    projects,
    settings,
    jobs,
    usage,
    maintenance,
    priority,
    fetch,
    migrate,
    audit,
    reports,
    demo,
    bank_info,
    show_usage,
    fairshare_emulate,
    live_jobs,
    slurm,
    sshare,
):
    for command in module.COMMANDS:
        cli.add_command(command)


def main() -> None:
    cli.main(prog_name="fairledger")


if __name__ == "__main__":
    main()
