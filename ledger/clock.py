"""Reading times given on the command line: epoch seconds (fractions allowed) or ISO 8601."""

from __future__ import annotations

from datetime import UTC, datetime

from ledger.errors import InvalidValue


def parse_time(text: str) -> float:
    """Epoch seconds for `text`; ISO 8601 without a zone is refused, since a ledger shared by
    sites in several zones must not guess one."""
    value = str(text).strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidValue(f"invalid time: {text!r} (epoch seconds or ISO 8601)") from None
    if moment.tzinfo is None:
        raise InvalidValue(f"invalid time: {text!r} (ISO 8601 needs a zone, e.g. +00:00 or Z)")
    return moment.timestamp()


def to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def iso(epoch: float) -> str:
    return to_datetime(epoch).isoformat()
