"""click parameter types: a malformed value is click's usage error (exit 2) naming the value."""

from __future__ import annotations

from typing import Any

import click

from ledger.clock import parse_time
from ledger.durations import parse_duration
from ledger.errors import InvalidValue


class DurationType(click.ParamType):
    name = "DURATION"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            return parse_duration(value)
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
        except InvalidValue as err:
            self.fail(str(err), param, ctx)


DURATION = DurationType()
LIMIT = LimitType()
TIME = TimeType()
