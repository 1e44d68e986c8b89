"""Rendering rows the way flux-accounting's formatter does: a table by default, `--json`,
`-o/--format` (str.format with column names) and `--fields`, from one decorator."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import click

from ledger.bounds import printable
from ledger.errors import InvalidValue
from ledger.limits import is_unlimited

UNLIMITED_TEXT = "unlimited"  # how a limit at ledger.limits.UNLIMITED is shown and exported


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    @click.option("--json", "as_json", is_flag=True, help="Print JSON (rows keyed by column).")
    @click.option(
        "-o",
        "--format",
        "fmt",
        default=None,
        metavar="FMT",
        help="Python str.format string over column names, e.g. '{username:<10}'.",
    )
    @click.option(
        "--fields",
        default=None,
        metavar="A,B",
        help="Comma-separated columns to show, in that order.",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


class Output:
    """How the user asked to see rows; `columns` is the full column list of the object kind."""

    def __init__(self, as_json: bool, fmt: str | None, fields: str | None) -> None:
        self.as_json = as_json
        self.fmt = fmt
        self.fields = fields

    def select(self, columns: Sequence[str]) -> list[str]:
        if not self.fields:
            return list(columns)
        wanted = [f.strip() for f in self.fields.split(",") if f.strip()]
        unknown = [f for f in wanted if f not in columns]
        if unknown:
            raise InvalidValue(
                f"invalid fields: {', '.join(unknown)} (available: {', '.join(columns)})"
            )
        return wanted

    def render(
        self, rows: Sequence[dict[str, Any]], columns: Sequence[str], single: bool = False
    ) -> str:
        chosen = self.select(columns)
        picked = [{c: row[c] for c in chosen} for row in rows]
        if self.as_json:
            data = [json_row(r) for r in picked]
            if single:
                return json.dumps(data[0] if data else {}, indent=2)
            return json.dumps(data, indent=2)
        if self.fmt is not None:
            return format_rows(picked, chosen, self.fmt)
        return table(picked, chosen)


def display_value(column: str, value: Any) -> str:
    if column == "active":
        return "true" if value else "false"
    if is_unlimited(value):
        return UNLIMITED_TEXT
    # Names written before ledger.bounds refused control characters must not drive the
    # terminal or forge a row: they are shown escaped.
    return printable(str(value))


def json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (UNLIMITED_TEXT if is_unlimited(v) else v) for k, v in row.items()}


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    cells = [[display_value(c, row[c]) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = [
        " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)),
        "-+-".join("-" * w for w in widths),
    ]
    lines += [" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def _printable_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: printable(v) if isinstance(v, str) else v for k, v in row.items()}


def format_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str) -> str:
    try:
        header = fmt.format(**{c: c for c in columns})
        lines = [header] + [fmt.format(**_printable_row(row)) for row in rows]
    except KeyError as err:
        raise InvalidValue(
            f"Invalid column name in format string: {err.args[0]}. "
            f"Available columns: {', '.join(columns)}"
        ) from None
    except (ValueError, IndexError) as err:
        raise InvalidValue(f"invalid format string {fmt!r}: {err}") from None
    return "\n".join(lines)
