"""show-usage: flux-accounting's horizontal bar chart of the largest usages."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

import click

from cli.params import AsOf, as_of_option
from cli.session import session
from ledger.bounds import printable
from ledger.usecases.usage_chart import KINDS, top_usage_of

BAR = "█"
ASCII_BAR = "#"  # where the terminal's encoding cannot show the block
MIN_BAR_WIDTH = 10


def bar_chart(rows: Sequence[tuple[str, float]], width: int, bar: str) -> str:
    """flux-accounting's layout: labels padded to the longest, bars scaled so the largest
    fills what the terminal leaves (at least 10 columns), then the value with two decimals."""
    if not rows:
        return "no data to display"
    labels = [printable(label) for label, _ in rows]
    values = [value for _, value in rows]
    longest = max(len(label) for label in labels)
    reserved = longest + 10 + max(len(f"{v:.2f}") for v in values)
    bar_width = max(width - reserved, MIN_BAR_WIDTH)
    scale = 0 if max(values) == 0 else bar_width / max(values)
    return "\n".join(
        f"{label:<{longest}} | {bar * int(value * scale):<{bar_width}} {value: .2f}"
        for label, value in zip(labels, values, strict=True)
    )


def _bar_character() -> str:
    try:
        BAR.encode(sys.stdout.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_BAR
    return BAR


@click.command("show-usage")
@click.argument("table", type=click.Choice(KINDS))
@click.option(
    "-n",
    "--limit",
    type=int,
    default=10,
    show_default=True,
    metavar="LIMIT",
    help="How many rows to chart.",
)
@as_of_option
@click.pass_context
def show_usage(ctx: click.Context, as_of: AsOf | None, table: str, limit: int) -> None:
    """Chart the decayed usage of the associations or banks (the root left out) that used the
    most, largest first, scaled to the terminal's width."""
    rows = top_usage_of(session(ctx), table, limit, as_of)
    click.echo(bar_chart(rows, shutil.get_terminal_size().columns, _bar_character()))


COMMANDS = [show_usage]
