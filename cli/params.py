"""click parameter types: a malformed value is click's usage error (exit 2) naming the value;
a well-formed one beyond ledger.bounds is the ledger's refusal (OutOfRange, exit 1)."""

from __future__ import annotations

from typing import Any

import click

from cli.session import Session
from ledger.clock import AsOf, TimeSpec, parse_time_spec
from ledger.durations import parse_duration
from ledger.errors import InvalidValue, OutOfRange
from ledger.slurm_parent import PARENT, PARENT_TEXT

__all__ = [
    "AS_OF",
    "DURATION",
    "LIMIT",
    "SHARES",
    "SHARE_LIMIT",
    "TIME",
    "AsOf",
    "TimeSpec",
    "as_of_option",
]

# Every time option's help names the forms once (ledger.clock has the rules).
TIME_FORMS = (
    "epoch seconds, ISO 8601, a date such as 2024-12-01, 12/01/24 or 'Jan 1, 1990 8am' "
    "(no zone: the site's timezone config), or a duration ago (3d, 12h ago)"
)


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


class SharesType(click.types.IntParamType):
    """Shares: an integer, or `parent` (Slurm's Fairshare=parent, stored as PARENT) for a Fair
    Tree or classic site, as sacctmgr takes it."""

    # The name stays click's "integer", so a bad value reads as argparse's "invalid int value"
    # (cli/usage_errors.py), as flux-accounting's add-bank says it.

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if str(value).strip().lower() == PARENT_TEXT:
            return PARENT
        return int(super().convert(value, param, ctx))


class ShareLimitType(LimitType):
    """An association's shares: LimitType's forms, or `parent`."""

    name = "INTEGER|unlimited|parent"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
        if str(value).strip().lower() == PARENT_TEXT:
            return PARENT
        return super().convert(value, param, ctx)


class TimeSpecType(click.ParamType):
    """A time as typed (ledger.clock), parsed but not yet resolved: the command resolves it
    with the site's zone and the ledger's now (Session.when, Session.moment)."""

    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> TimeSpec:
        if isinstance(value, TimeSpec):
            return value
        try:
            return parse_time_spec(value)
        except OutOfRange:
            raise
        except InvalidValue as err:
            self.fail(str(err), param, ctx)


class TimeType(click.ParamType):
    """A time as epoch seconds. A zone-less time or a duration ago is resolved here with the
    command's session (the site's `timezone`, the ledger's now), so a command body and its use
    case receive a plain number; an absolute time opens nothing."""

    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        spec = AS_OF.convert(value, param, ctx)
        if spec.absolute is not None:
            return spec.absolute
        session = ctx.find_object(Session) if ctx is not None else None
        return session.when(spec) if session is not None else spec.resolve()


DURATION = DurationType()
LIMIT = LimitType()
SHARES = SharesType()
SHARE_LIMIT = ShareLimitType()
AS_OF = TimeSpecType()  # resolved by the use case: --as-of checks it against the ledger's clock
TIME = TimeType()  # epoch seconds, resolved at parse time (add-bank --ignore-older-than uses it)


def as_of_option(func: Any) -> Any:
    return click.option(
        "--as-of",
        "as_of",
        type=AS_OF,
        default=None,
        help=f"Answer as the ledger stood then, no later than the ledger's now: {TIME_FORMS}.",
    )(func)
