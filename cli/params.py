"""click parameter types: a malformed value is click's usage error (exit 2) naming the value;
a well-formed one beyond ledger.bounds is the ledger's refusal (OutOfRange, exit 1)."""

from __future__ import annotations

from typing import Any

import click

from ledger.clock import AsOf, parse_time
from ledger.durations import parse_duration
from ledger.errors import InvalidValue, OutOfRange


class DurationType(click.ParamType):
    name = "DURATION"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            return parse_duration(value)
        except OutOfRange:
            raise
        except InvalidValue as err:
            self.fail(str(err), param, ctx)


class LimitType(click.ParamType):
    """An integer, or -1/`unlimited` to reset the field to its default."""

    name = "INTEGER|unlimited"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
        text = str(value).strip()
        if text.lower() == "unlimited":
            return "unlimited"
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r} is not an integer or 'unlimited'", param, ctx)


class TimeType(click.ParamType):
    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            return parse_time(value)
        except OutOfRange:
            raise
        except InvalidValue as err:
            self.fail(str(err), param, ctx)


DURATION = DurationType()
LIMIT = LimitType()
TIME = TimeType()


class AsOfType(click.ParamType):
    """ISO 8601 with a zone, epoch seconds, or a duration ago: `3d`, `12h ago`, `-1w`."""

    name = "TIME|DURATION-ago"

    def convert(self, value: Any, param: Any, ctx: Any) -> AsOf:
        if isinstance(value, AsOf):
            return value
        text = str(value).strip()
        relative = text.removesuffix("ago").strip().removeprefix("-")
        if relative and relative[-1:] in "smhdw" and relative[:1].isdigit():
            try:
                return AsOf(ago=parse_duration(relative))
            except OutOfRange:
                raise
            except InvalidValue as err:
                self.fail(str(err), param, ctx)
        try:
            return AsOf(absolute=parse_time(text))
        except OutOfRange:
            raise
        except InvalidValue as err:
            self.fail(str(err), param, ctx)


AS_OF = AsOfType()


def as_of_option(func: Any) -> Any:
    return click.option(
        "--as-of",
        "as_of",
        type=AS_OF,
        default=None,
        help="Answer as the ledger stood then: ISO 8601 with a zone, epoch seconds, or a "
        "duration ago (3d, 12h).",
    )(func)
