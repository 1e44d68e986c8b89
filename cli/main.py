"""The `fairledger` command group: global options, error handling and command registration.

Start-up is part of every cron run and every scheduler call: this module imports nothing heavy,
and a command's module (with the ledger, the store and the projections it needs) is imported
only when that command runs (cli/commands.py names them)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import click

from cli.commands import INDEX
from cli.flux_errors import flux_prefix
from cli.option_prefixes import PrefixGroup
from cli.usage_errors import ArgparseUsageError, argparse_message
from ledger.bounds import printable, printable_lines
from ledger.errors import LedgerError, OutOfRange

_RAW_ARGS = "fairledger.raw_args"


class LedgerGroup(PrefixGroup):
    """Turns a broken ledger rule into one line on stderr and exit 1 (usage errors stay exit 2).
    Its commands are loaded when named (cli/commands.py lists them and their help lines)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(INDEX)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in INDEX:
            return None
        module = import_module(f"cli.{INDEX[cmd_name][0]}")
        return next(c for c in module.COMMANDS if c.name == cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, from the table's lines instead of imported commands: a stand-in
        command with the same first sentence shortens to the same width as the real one."""
        limit = formatter.width - 6 - max(len(name) for name in INDEX)
        rows = [
            (name, click.Command(name, help=text).get_short_help_str(limit))
            for name, (_module, text) in sorted(INDEX.items())
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except ArgparseUsageError:
            raise
        except click.UsageError as err:
            # The group's own options (`--bogus`, `--db` without a value), in the same words.
            message = argparse_message(err, self, args)
            raise ArgparseUsageError(message, err.ctx, ctx.command_path) from None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except ArgparseUsageError:
            raise
        except click.UsageError as err:
            # An ambiguous option prefix of a known command: that command's error, as argparse.
            if not args or self.get_command(ctx, args[0]) is None:
                raise
            prog = f"{ctx.command_path} {args[0]}"
            raise ArgparseUsageError(err.format_message(), None, prog) from None
        ctx.meta[_RAW_ARGS] = list(rest)  # for argparse's "unrecognized arguments: --foo=bar"
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ArgparseUsageError:
            raise
        except click.UsageError as err:
            name = ctx.invoked_subcommand
            command = self.get_command(ctx, name) if name else None
            message = argparse_message(err, command, ctx.meta.get(_RAW_ARGS, []))
            prog = f"{ctx.command_path} {name}" if name else ctx.command_path
            raise ArgparseUsageError(message, err.ctx, prog) from None
        except LedgerError as err:
            # One line, whatever the message quotes (a name with a newline or ESC in it).
            shown = printable_lines(str(err)) if err.multiline else printable(str(err))
            prefix = flux_prefix(ctx.invoked_subcommand, err)
            click.echo(f"fairledger: {prefix}{shown}", err=True)
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
    from cli.session import Session, warn

    ctx.obj = Session(db, None, warn=warn)  # a bad --db is one line and exit 1 (LedgerGroup.invoke)
    ctx.call_on_close(ctx.obj.close)
    try:
        # A well-formed time out of bounds is OutOfRange (exit 1); a malformed one exit 2.
        ctx.obj.set_typed_now(now)
    except OutOfRange:
        raise
    except LedgerError as err:
        raise click.BadParameter(str(err)) from None


def main() -> None:
    cli.main(prog_name="fairledger")


if __name__ == "__main__":
    main()
