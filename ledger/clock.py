"""The one real clock, and times as people write them: epoch seconds (fractions allowed), ISO
8601, or a moment some duration before the ledger's now (`AsOf`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from ledger import bounds
from ledger.errors import InvalidValue, OutOfRange


def real_now() -> float:
    """The real clock: the one place that reads it for bounds (design: one clock)."""
    return time.time()


def parse_time(text: str) -> float:
    """Epoch seconds for `text`; ISO 8601 without a zone is refused, since a ledger shared by
    sites in several zones must not guess one. A time outside bounds.TIME_MIN..TIME_MAX (or
    NaN) is a TimeOutOfRange: well-formed, so the ledger refuses it (exit 1)."""
    value = str(text).strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = _iso_seconds(text, value)
    try:
        return bounds.check_time("time", seconds)
    except InvalidValue as err:
        raise TimeOutOfRange(str(err)) from None


def _iso_seconds(text: str, value: str) -> float:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidValue(
            f"invalid time: {bounds.printable(repr(text))} (epoch seconds or ISO 8601)"
        ) from None
    if moment.tzinfo is None:
        raise InvalidValue(
            f"invalid time: {bounds.printable(repr(text))} "
            "(ISO 8601 needs a zone, e.g. +00:00 or Z)"
        )
    return moment.timestamp()


class TimeOutOfRange(OutOfRange):
    """A well-formed time the ledger cannot use (before 1970, after year 9999, too far ahead)."""


def parse_requested_now(text: str) -> float:
    """`--now`: a time no later than the real clock + bounds.FUTURE_TOLERANCE."""
    seconds = parse_time(text)
    try:
        return bounds.check_requested_now(seconds, real_now())
    except InvalidValue as err:
        raise TimeOutOfRange(str(err)) from None


def to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def iso(epoch: float) -> str:
    return to_datetime(epoch).isoformat()


@dataclass(frozen=True)
class AsOf:
    """A moment asked about: absolute (epoch seconds) or `ago` seconds before the ledger's now."""

    absolute: float | None = None
    ago: float | None = None

    def resolve(self, now: float) -> float:
        return self.absolute if self.absolute is not None else now - (self.ago or 0.0)
