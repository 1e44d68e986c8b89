"""The one real clock, and times as people write them.

One syntax for every time option (`--now`, `--as-of`, `--since/--until`, `--from/--to`,
`view-usage-report -s/-e`, `--ignore-older-than`, `view-job-records -a/-b`, ...):

  - epoch seconds, fractions allowed: `1700000000`, `1700000000.25`. A number of 1e11 or more
    is refused: as seconds it is after the year 5138, so it is almost surely milliseconds;
  - ISO 8601: `2023-11-14T22:13:20Z`, `2023-11-14 22:13:20+01:00`, `2023-11-14`;
  - the forms people (and flux-accounting's tests) type, read by python-dateutil month first as
    flux-accounting reads them: `12/01/24` is 1 December 2024, `1/1/1970`, `Jan 1, 1990 8am`,
    `1970-01-01 08:00:00`. A text that leaves out the year, month or day (`8am`, `Jan 1`) is
    refused rather than completed from today's date, which would read the real clock;
  - a duration ago, before the ledger's now: `3d`, `12h ago`, `-1w`.

A time without a zone is a wall-clock time in the site's `timezone` config (default UTC). So a
text parses to a `TimeSpec` at once (a typo is a usage error before anything is opened), and
resolves to epoch seconds once the ledger's zone and now are known (`TimeSpec.resolve`).
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import cache
from typing import TYPE_CHECKING

from ledger import bounds
from ledger.durations import parse_duration
from ledger.errors import InvalidValue, OutOfRange

if TYPE_CHECKING:  # the tz database is read when a zone is named, not at every start-up
    from zoneinfo import ZoneInfo

# Epoch seconds of 1e11 are in the year 5138; epoch milliseconds of today are ~1.7e12. A number
# this large was meant as milliseconds (JavaScript's Date.now(), Java's currentTimeMillis()).
EPOCH_MILLISECONDS_FROM = 1e11

# A duration ago: an FSD with its unit (a bare number is epoch seconds), then `ago` or led by `-`.
_AGO = re.compile(r"^(?:-\s*)?(?P<fsd>(?:\d+(?:\.\d*)?|\.\d+)\s*(?:ms|s|m|h|d|w))(?:\s+ago)?$")

# Zone names dateutil may find in a text that mean UTC everywhere. Any other abbreviation (EST,
# CET, IST...) is ambiguous across the world and is refused rather than guessed.
_UTC_NAMES = frozenset({"UTC", "GMT", "Z", "UT"})

# Two defaults differing in every date field: a text parsed the same with both gave them all.
_DEFAULTS = (datetime(2000, 1, 1), datetime(2001, 2, 2))

FORMS = "epoch seconds, ISO 8601, a date such as 12/01/24 or 'Jan 1, 1990 8am', or 3d ago"


def real_now() -> float:
    """The real clock: the one place that reads it (design: one clock)."""
    return time.time()


class TimeOutOfRange(OutOfRange):
    """A well-formed time the ledger cannot use (before 1970, after year 9999, too far ahead,
    epoch milliseconds)."""


class AfterTheClock(OutOfRange):
    """A past moment asked about that is later than the ledger's now: its answer could still
    change, so it is not given."""


@dataclass(frozen=True)
class TimeSpec:
    """A time as typed, parsed: exactly one of `absolute` (epoch seconds: an epoch or a text
    with a zone), `ago` (seconds before the ledger's now) or `wall` (a naive datetime: a
    wall-clock time in the site's zone). `text` is what was typed, for messages."""

    absolute: float | None = None
    ago: float | None = None
    wall: datetime | None = None
    text: str = ""

    @property
    def needs_zone(self) -> bool:
        return self.wall is not None

    @property
    def needs_now(self) -> bool:
        return self.ago is not None

    def resolve(self, now: float | None = None, zone: tzinfo = UTC) -> float:
        """Epoch seconds: a duration ago before `now` (the ledger's; the real clock if None), a
        wall-clock time in `zone`. Outside TIME_MIN..TIME_MAX is a TimeOutOfRange."""
        if self.absolute is not None:
            return self.absolute
        if self.wall is not None:
            try:
                seconds = self.wall.replace(tzinfo=zone).timestamp()
            except (OverflowError, ValueError):
                seconds = math.inf if self.wall.year > 1970 else -math.inf
            return _checked(self.described(), seconds)
        base = real_now() if now is None else now
        return _checked(self.described(), base - (self.ago or 0.0))

    def described(self) -> str:
        if self.text:
            return bounds.printable(self.text)
        if self.absolute is not None:
            return iso(self.absolute)
        if self.wall is not None:
            return self.wall.isoformat()
        return f"{bounds.printable(str(self.ago))}s ago"


# Its former name: every `--as-of` option and use case speaks of an AsOf.
AsOf = TimeSpec


def parse_time_spec(text: str) -> TimeSpec:
    """Parse `text` without a zone or a clock. A malformed text is an InvalidValue (a usage
    error); a well-formed time out of range (or in epoch milliseconds) a TimeOutOfRange."""
    value = str(text).strip()
    try:
        number = float(value)
    except ValueError:
        pass
    else:
        return TimeSpec(absolute=_epoch_seconds(value, number), text=value)
    relative = _AGO.match(value)
    if relative:
        return TimeSpec(ago=parse_duration(relative.group("fsd")), text=value)
    moment = _parse_datetime(text, value)
    if moment.tzinfo is None:
        return TimeSpec(wall=moment, text=value)
    try:
        seconds = moment.timestamp()
    except (OverflowError, ValueError):
        seconds = math.inf if moment.year > 1970 else -math.inf
    return TimeSpec(absolute=_checked(value, seconds), text=value)


def parse_time(text: str, zone: tzinfo = UTC, now: float | None = None) -> float:
    """Epoch seconds for `text`, a zone-less time read in `zone`, a duration ago before `now`
    (the real clock if None)."""
    return parse_time_spec(text).resolve(now, zone)


def parse_requested_now(text: str, zone: tzinfo = UTC) -> float:
    """`--now`: a time no later than the real clock + bounds.FUTURE_TOLERANCE; a duration ago
    is before the real clock (the ledger's clock is what --now sets)."""
    return check_requested_now(parse_time_spec(text), zone)


def check_requested_now(spec: TimeSpec, zone: tzinfo) -> float:
    real = real_now()
    try:
        return bounds.check_requested_now(spec.resolve(real, zone), real)
    except TimeOutOfRange:
        raise
    except InvalidValue as err:
        raise TimeOutOfRange(str(err)) from None


def check_not_after_clock(field: str, spec: TimeSpec, at: float, now: float) -> float:
    """A moment asked about in the past (`--as-of`, `diff --from/--to`) must not be later than
    the ledger's now: the log may still grow before it, so its answer could still change."""
    if at > now:
        raise AfterTheClock(
            f"{field} {spec.described()} ({iso(at)}) is after the ledger's clock ({iso(now)}): "
            "its answer could still change"
        )
    return at


def _epoch_seconds(value: str, number: float) -> float:
    if math.isfinite(number) and EPOCH_MILLISECONDS_FROM <= number <= bounds.TIME_MAX * 1000:
        seconds = f"{number / 1000:.3f}".rstrip("0").rstrip(".")
        raise TimeOutOfRange(
            f"time {bounds.printable(value)} looks like epoch milliseconds: give epoch seconds "
            f"(below 1e11, the year 5138), e.g. {seconds}"
        )
    return _checked(value, number)


def _checked(value: str, seconds: float) -> float:
    try:
        return bounds.check_time("time", seconds)
    except InvalidValue as err:
        # Name the text as typed, not the number it became.
        message = str(err).replace(f"time {seconds}", f"time {bounds.printable(value)}", 1)
        raise TimeOutOfRange(message) from None


class _ZoneRefused(Exception):
    """A zone abbreviation dateutil found that is not UTC: raised through dateutil's parse."""


def _known_zone(name: str | None, offset: int | None) -> tzinfo | None:
    """dateutil's `tzinfos`: an explicit offset as written, UTC by name; anything else (EST,
    CET) is ambiguous, and the local machine's zone must not decide it."""
    if offset is not None:
        return timezone(timedelta(seconds=offset))
    if name is None:
        return None
    if name.upper() in _UTC_NAMES:
        return UTC
    raise _ZoneRefused(name)


def _parse_datetime(text: str, value: str) -> datetime:
    shown = bounds.printable(repr(text))
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        pass
    if not value or len(value) > 100:
        raise InvalidValue(f"invalid time: {shown} ({FORMS})")
    # Imported here: ISO 8601 and epoch seconds (every script's form) need no dateutil, and
    # its import is a tenth of the CLI's start-up.
    from dateutil import parser as dateutil_parser

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # dateutil warns (and guesses) on what it doubts
            readings = [
                dateutil_parser.parse(value, default=default, tzinfos=_known_zone)
                for default in _DEFAULTS
            ]
    except _ZoneRefused as err:
        raise InvalidValue(
            f"invalid time: {shown} (zone {bounds.printable(str(err))} is ambiguous: "
            "give an offset such as -05:00, or leave it out for the site's timezone)"
        ) from None
    except (ValueError, OverflowError, ArithmeticError, LookupError, TypeError, Warning):
        raise InvalidValue(f"invalid time: {shown} ({FORMS})") from None
    if readings[0] != readings[1]:
        raise InvalidValue(f"invalid time: {shown} (give a year, a month and a day)")
    return readings[0]


def zone_named(name: str) -> ZoneInfo:
    """The IANA zone `name` (`UTC`, `Europe/Berlin`); one unknown here is an InvalidValue."""
    if name not in _zone_names():
        raise InvalidValue(
            f"invalid timezone: {bounds.printable(repr(name))} (an IANA zone name such as UTC "
            "or Europe/Berlin)"
        )
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


@cache
def _zone_names() -> frozenset[str]:
    # The zones the tz database lists, but not `localtime` (a system's link to its own zone):
    # a ledger's times must not change meaning with the machine that reads them.
    from zoneinfo import available_timezones

    return frozenset(available_timezones()) - {"localtime"}


def to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def iso(epoch: float) -> str:
    return to_datetime(epoch).isoformat()
