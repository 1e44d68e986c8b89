"""fairshare-emulate: flux-accounting's what-if fair-share, from the ledger or a file, in its
output formats (a table, -j JSON, -o format, -P pipes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from cli.params import AsOf, as_of_option
from cli.session import session
from ledger.bounds import printable
from ledger.errors import InvalidValue
from ledger.fairshare_emulation import EmulatedShare, UsageChange
from ledger.usecases.fairshare_emulate import emulate_file, emulate_ledger

PARSABLE_FORMAT = "{username}|{bank}|{shares}|{usage}|{fairshare}"
TABLE_HEADERS = ["Username", "Bank", "Shares", "Usage", "FairShare"]


def _fields(share: EmulatedShare) -> dict[str, Any]:
    return {
        "username": printable(share.username),
        "bank": printable(share.bank),
        "shares": share.shares,
        "usage": share.usage,
        "fairshare": share.fairshare,
    }


def render(shares: Sequence[EmulatedShare], as_json: bool, fmt: str) -> str:
    """flux-accounting's emulator output: JSON wins over a format, a format over the table."""
    if as_json:
        return json.dumps([_fields(s) for s in shares], indent=2)
    if fmt:
        try:
            return "\n".join(fmt.format(**_fields(s)) for s in shares)
        except KeyError as err:
            raise InvalidValue(f"Invalid format string key: {err}") from None
        except (ValueError, IndexError, AttributeError, TypeError) as err:
            raise InvalidValue(f"invalid format string {fmt!r}: {err}") from None
    rows = [
        [printable(s.username), printable(s.bank), s.shares, round(s.usage, 2), s.fairshare]
        for s in shares
    ]
    widths = [
        max(len(header), *(len(str(row[i])) for row in rows))
        for i, header in enumerate(TABLE_HEADERS)
    ]

    def line(values: Sequence[Any]) -> str:
        return " | ".join(str(v).ljust(w) for v, w in zip(values, widths, strict=True))

    separator = "-+-".join("-" * w for w in widths)
    return "\n".join([line(TABLE_HEADERS), separator, *(line(row) for row in rows)])


def _usage_value(text: str, option: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a number", param_hint=option) from None


@click.command("fairshare-emulate")
@click.option(
    "-i",
    "--input",
    "input_file",
    metavar="FILE",
    default=None,
    help="A tree in export-db -F's JSON (default: the ledger's active tree and usage).",
)
@click.option(
    "--set-usage",
    nargs=3,
    multiple=True,
    metavar="USER BANK USAGE",
    help="Emulate the association (USER, BANK) with this usage (repeatable).",
)
@click.option(
    "--add-usage",
    nargs=3,
    multiple=True,
    metavar="USER BANK DELTA",
    help="Emulate the association (USER, BANK) with DELTA more usage (repeatable).",
)
@click.option("-j", "--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("-o", "--format", "fmt", default="", metavar="FMT", help="Python format string.")
@click.option("-P", "--parsable", is_flag=True, help="'|'-delimited output.")
@as_of_option
@click.pass_context
def fairshare_emulate(
    ctx: click.Context,
    as_of: AsOf | None,
    input_file: str | None,
    set_usage: tuple[tuple[str, str, str], ...],
    add_usage: tuple[tuple[str, str, str], ...],
    as_json: bool,
    fmt: str,
    parsable: bool,
) -> None:
    """Fair-share of every association as update-fshare would compute it with some usage
    changed: nothing is recorded. Changes apply in order, --set-usage ones first.

    Fields for -o: username, bank, shares, usage, fairshare."""
    changes = [
        UsageChange(user, bank, _usage_value(value, "--set-usage"))
        for user, bank, value in set_usage
    ]
    changes += [
        UsageChange(user, bank, _usage_value(value, "--add-usage"), add=True)
        for user, bank, value in add_usage
    ]
    if input_file is not None and as_of is not None:
        raise click.UsageError("--as-of reads the ledger: it cannot be combined with -i/--input")
    if input_file is not None:
        shares = emulate_file(input_file, changes)
    else:
        shares = emulate_ledger(session(ctx), changes, as_of)
    click.echo(render(shares, as_json, PARSABLE_FORMAT if parsable else fmt))


COMMANDS = [fairshare_emulate]
