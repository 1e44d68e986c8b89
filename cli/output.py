"""Rendering rows as flux-accounting's formatter does: a table, JSON (a list of row objects),
`-o/--format` (str.format with column names) and `--fields`, from one decorator. Which of
table and JSON a command prints by default is the command's (flux-accounting's view-* commands
print JSON, its list-* commands a table)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import click

from ledger.bounds import printable
from ledger.errors import InvalidValue, NotFound
from ledger.limit_fields import is_unlimited
from ledger.slurm_parent import PARENT, PARENT_TEXT
from ledger.spill import Spill

UNLIMITED_TEXT = "unlimited"  # how a limit at ledger.limit_fields.UNLIMITED is shown and exported
SHARES_COLUMN = "shares"  # the one column where PARENT can mean Slurm's Fairshare=parent
# flux-accounting refuses an empty result rather than printing nothing; scripts test for it.
NO_RESULTS = "no results found in query"

Style = Literal["table", "json"]


def output_options(
    func: Callable[..., Any] | None = None,
    *,
    short_json: bool = False,
    short_fields: bool = False,
    parsable: bool = False,
) -> Any:
    """--json, -o/--format and --fields (and --parsable when asked). `short_json`/`short_fields`
    add flux-accounting's `-j`/`-f` where its command has them (list-users)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @click.option(
            *(["-j"] if short_json else []),
            "--json",
            "as_json",
            is_flag=True,
            help="Print JSON: a list of row objects.",
        )
        @click.option(
            "-o",
            "--format",
            "fmt",
            default=None,
            metavar="FMT",
            help="Python str.format string over column names, e.g. '{username:<10}'.",
        )
        @click.option(
            *(["-f"] if short_fields else []),
            "--fields",
            default=None,
            metavar="A,B",
            help="Comma-separated columns to show, in that order.",
        )
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

        if parsable:
            return click.option("--parsable", is_flag=True, help="Print a table instead of JSON.")(
                wrapper
            )
        return wrapper

    return decorate(func) if func is not None else decorate


class Output:
    """How the user asked to see rows; `columns` is the full column list of the object kind."""

    def __init__(
        self,
        as_json: bool,
        fmt: str | None,
        fields: str | None,
        parsable: bool = False,
        parent_shares: bool = False,
    ) -> None:
        self.as_json = as_json
        self.fmt = fmt or None  # flux-accounting: an empty -o means no format
        self.fields = fields
        self.parsable = parsable
        # On a Fair Tree or classic site shares of PARENT are Fairshare=parent, shown `parent`
        # (projections.queries.site.parent_shares); elsewhere flux-accounting's "unlimited".
        self.parent_shares = parent_shares

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
        self,
        rows: Sequence[dict[str, Any]],
        columns: Sequence[str],
        default: Style = "table",
        empty: str | None = None,
    ) -> str:
        """`-o` wins, then --json, then --parsable (a table), then the command's default.
        `empty`: the error no rows is (flux-accounting's listings refuse an empty result,
        usually with NO_RESULTS); None prints the empty listing."""
        chosen = self.select(columns)
        if not rows and empty is not None:
            raise NotFound(empty)
        picked = [{c: row[c] for c in chosen} for row in rows]
        if self.fmt is not None:
            return format_rows(picked, chosen, self.fmt)
        if self.as_json or (default == "json" and not self.parsable):
            return json.dumps([json_row(r, self.parent_shares) for r in picked], indent=2)
        return table(picked, chosen, self.parent_shares)

    def spooled(self, rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> Iterator[str]:
        """render()'s lines (--json, else a table) for a listing too long to hold: the rows
        are read once and held on disk, and the first line comes after the last row is read,
        so that a listing that fails prints nothing."""
        chosen = self.select(columns)  # refused before anything is read
        picked = ({c: row[c] for c in chosen} for row in rows)
        if self.as_json:
            return _spooled_json(json_row(r, self.parent_shares) for r in picked)
        return _spooled_table(picked, chosen, self.parent_shares)


def _spooled_json(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """json.dumps(list(rows), indent=2), a row at a time."""
    with Spill() as spill:
        for row in rows:
            spill.add(json.dumps(row, indent=2).replace("\n", "\n  "))
        if not spill.count:
            yield "[]"
            return
        yield "["
        last = spill.count - 1
        for i, text in enumerate(spill.replay()):
            yield f"  {text}," if i < last else f"  {text}"
        yield "]"


def _spooled_table(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], parent_shares: bool
) -> Iterator[str]:
    widths = [len(c) for c in columns]
    with Spill() as spill:
        for row in rows:
            cells = tuple(display_value(c, row[c], parent_shares) for c in columns)
            widths = [max(w, len(cell)) for w, cell in zip(widths, cells, strict=True)]
            spill.add(cells)
        yield from _table_head(columns, widths)
        for cells in spill.replay():
            yield _table_line(cells, widths)


def is_parent_shares(column: str, value: Any, parent_shares: bool) -> bool:
    """Whether `value` in `column` is Slurm's Fairshare=parent (on a site where it means that)."""
    return parent_shares and column == SHARES_COLUMN and type(value) is int and value == PARENT


def display_value(column: str, value: Any, parent_shares: bool = False) -> str:
    if column == "active":
        return "true" if value else "false"
    if is_parent_shares(column, value, parent_shares):
        return PARENT_TEXT
    if is_unlimited(value):
        return UNLIMITED_TEXT
    # Names written before ledger.bounds refused control characters must not drive the
    # terminal or forge a row: they are shown escaped.
    return printable(str(value))


def json_row(row: dict[str, Any], parent_shares: bool = False) -> dict[str, Any]:
    return {k: _json_value(k, v, parent_shares) for k, v in row.items()}


def _json_value(column: str, value: Any, parent_shares: bool) -> Any:
    if is_parent_shares(column, value, parent_shares):
        return PARENT_TEXT
    return UNLIMITED_TEXT if is_unlimited(value) else value


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], parent_shares: bool = False
) -> str:
    cells = [[display_value(c, row[c], parent_shares) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = _table_head(columns, widths) + [_table_line(r, widths) for r in cells]
    return "\n".join(lines)


def _table_head(columns: Sequence[str], widths: Sequence[int]) -> list[str]:
    return [_table_line(columns, widths), "-+-".join("-" * w for w in widths)]


def _table_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return " | ".join(v.ljust(w) for v, w in zip(cells, widths, strict=True))


def _printable_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: printable(v) if isinstance(v, str) else v for k, v in row.items()}


def format_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str) -> str:
    try:
        header = fmt.format(**{c: c for c in columns})
        lines = [header] + [fmt.format(**_printable_row(row)) for row in rows]
    except KeyError as err:
        raise InvalidValue(
            f"Invalid column name in format string: {err.args[0]}. "
            f"Available columns: {','.join(columns)}"
        ) from None
    except (ValueError, IndexError) as err:
        raise InvalidValue(f"invalid format string {fmt!r}: {err}") from None
    return "\n".join(lines)
