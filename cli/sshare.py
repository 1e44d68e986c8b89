"""sshare: Slurm's fair-share columns of the site's tree, printed as Slurm's sshare prints them
(`src/sshare/process.c`, `src/common/print_fields.c`): its widths, `%f`, blanks, `inf`,
`parent`, the Account column indented by depth, `-p`'s trailing `|`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import click

from cli.params import AsOf, as_of_option
from cli.session import session
from ledger.bounds import printable
from ledger.site_config import ALGORITHMS, FAIR_TREE
from ledger.slurm_shares import PARENT_TEXT
from ledger.sshare_format import format_double
from ledger.usecases.sshare import SshareRequest, sshare
from projections.queries.sshare import SshareLine

# sshare's field widths: negative is left-aligned (print_fields_t.len).
WIDTHS = {
    "Account": -20,
    "User": 10,
    "RawShares": 10,
    "NormShares": 11,
    "RawUsage": 11,
    "NormUsage": 11,
    "EffectvUsage": 13,
    "FairShare": 10,
    "LevelFS": 10,
    "GrpTRESMins": 30,
    "TRESRunMins": 30,
}
SHORT = ["Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage", "FairShare"]
LONG_CLASSIC = [
    "Account",
    "User",
    "RawShares",
    "NormShares",
    "RawUsage",
    "NormUsage",
    "EffectvUsage",
    "FairShare",
    "GrpTRESMins",
    "TRESRunMins",
]
LONG_FAIR_TREE = [*LONG_CLASSIC[:8], "LevelFS", *LONG_CLASSIC[8:]]
NO_RUNNING_JOBS = "cpu=0"  # the ledger holds completed jobs: nothing is running


def columns(algorithm: str, long: bool) -> list[str]:
    if not long:
        return SHORT
    return LONG_FAIR_TREE if algorithm == FAIR_TREE else LONG_CLASSIC


def _raw_shares(line: SshareLine) -> str:
    if line.uses_parent:
        return PARENT_TEXT
    return "" if line.raw_shares is None else str(line.raw_shares)


def _level_fs(line: SshareLine) -> float | None:
    return None if line.uses_parent else line.level_fs


# Each column's text (None: sshare's blank) and its JSON value.
_TEXT: dict[str, Callable[[SshareLine], str | None]] = {
    "User": lambda x: x.user,
    "RawShares": lambda x: _raw_shares(x) or None,
    "NormShares": lambda x: format_double(x.norm_shares),
    "RawUsage": lambda x: str(int(x.raw_usage)),
    "NormUsage": lambda x: format_double(x.norm_usage) or None,
    "EffectvUsage": lambda x: format_double(x.effective_usage),
    "FairShare": lambda x: format_double(x.fair_share) or None,
    "LevelFS": lambda x: format_double(_level_fs(x)) or None,
    "GrpTRESMins": lambda x: None,
    "TRESRunMins": lambda x: NO_RUNNING_JOBS,
}


def _number(value: float | None) -> Any:
    if value is None:
        return None
    return "inf" if math.isinf(value) else value


_JSON: dict[str, Callable[[SshareLine], Any]] = {
    "Account": lambda x: x.account,
    "User": lambda x: x.user,
    "RawShares": lambda x: PARENT_TEXT if x.uses_parent else x.raw_shares,
    "NormShares": lambda x: _number(x.norm_shares),
    "RawUsage": lambda x: _number(x.raw_usage),
    "NormUsage": lambda x: _number(x.norm_usage),
    "EffectvUsage": lambda x: _number(x.effective_usage),
    "FairShare": lambda x: _number(x.fair_share),
    "LevelFS": lambda x: _number(_level_fs(x)),
    "GrpTRESMins": lambda x: None,
    "TRESRunMins": lambda x: NO_RUNNING_JOBS,
}


def account_text(line: SshareLine) -> str:
    """The Account column: indented one space per level, a user row at its own depth."""
    return " " * line.depth + printable(line.account)


def cell(name: str, text: str | None, width: int) -> str:
    """A fixed-width field and its trailing space; one longer than the field ends in `+`."""
    size = abs(width)
    shown = text or ""
    if len(shown) > size:
        shown = shown[: size - 1] + "+"
    return (f"{shown:<{size}}" if width < 0 else f"{shown:>{size}}") + " "


def render(lines: list[SshareLine], names: list[str], parsable: str | None, header: bool) -> str:
    out = []
    if parsable:
        end = "|" if parsable == "p" else ""
        if header:
            out.append("|".join(names) + end)
        for line in lines:
            fields = [account_text(line)] + [printable(_TEXT[n](line) or "") for n in names[1:]]
            out.append("|".join(fields) + end)
        return "\n".join(out)
    if header:
        out.append("".join(cell(n, n, WIDTHS[n]) for n in names))
        out.append("".join(cell(n, "-" * abs(WIDTHS[n]), WIDTHS[n]) for n in names))
    for line in lines:
        texts: list[str | None] = [account_text(line)]
        texts += [_TEXT[n](line) for n in names[1:]]
        out.append("".join(cell(n, t, WIDTHS[n]) for n, t in zip(names, texts, strict=True)))
    return "\n".join(out)


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (text or "").split(",") if item.strip())


@click.command("sshare")
@click.option("-a", "--all", "all_users", is_flag=True, help="Every user's rows.")
@click.option("-l", "--long", "long_format", is_flag=True, help="Slurm's long format.")
@click.option(
    "-p", "--parsable", "parsable", flag_value="p", help="'|'-delimited, with a trailing '|'."
)
@click.option(
    "-P", "--parsable2", "parsable", flag_value="P", help="'|'-delimited, no trailing '|'."
)
@click.option("-n", "--noheader", is_flag=True, help="Leave out the header.")
@click.option("-A", "--accounts", metavar="LIST", default=None, help="Only these accounts (banks).")
@click.option("-u", "--users", metavar="LIST", default=None, help="These users' rows.")
@click.option("-U", "--Users", "users_only", is_flag=True, help="User rows only.")
@click.option("--json", "as_json", is_flag=True, help="Row objects keyed by column name.")
@click.option(
    "--algorithm",
    type=click.Choice(ALGORITHMS),
    default=None,
    help="Preview: the same usage ranked by another algorithm (recorded nowhere).",
)
@as_of_option
@click.pass_context
def sshare_command(
    ctx: click.Context,
    as_of: AsOf | None,
    all_users: bool,
    long_format: bool,
    parsable: str | None,
    noheader: bool,
    accounts: str | None,
    users: str | None,
    users_only: bool,
    as_json: bool,
    algorithm: str | None,
) -> None:
    """Slurm's sshare of the site's tree: every account row and your own user rows (-a: all
    users), with the fair-share of the algorithm in force (or --algorithm's, as a preview)."""
    asked = SshareRequest(all_users, _names(accounts), _names(users), users_only, algorithm)
    answer = sshare(session(ctx), asked, as_of)
    names = columns(answer.algorithm, long_format)
    if as_json:
        rows = [{n: _JSON[n](line) for n in names} for line in answer.lines]
        click.echo(json.dumps(rows, indent=2, allow_nan=False))
        return
    text = render(answer.lines, names, parsable, header=not noheader)
    if text:
        click.echo(text)


COMMANDS = [sshare_command]
