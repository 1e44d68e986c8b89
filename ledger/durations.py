"""Flux Standard Duration: `30s`, `5m`, `2h`, `7d`, `1w`, or plain seconds (fractions allowed)."""

import math
import re

from ledger.bounds import DURATION_MAX, printable
from ledger.errors import InvalidValue, OutOfRange

_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_FSD = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d|w)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds in an FSD string; `ms` is accepted because Flux accepts it."""
    match = _FSD.match(str(text))
    if not match:
        raise InvalidValue(
            # "invalid Flux standard duration" is flux-accounting's message (its t1093 greps it).
            f"invalid Flux standard duration: {printable(repr(text))} "
            "(use e.g. 30s, 5m, 2h, 7d, 1w or seconds)"
        )
    number, unit = float(match.group(1)), match.group(2) or ""
    seconds = number / 1000.0 if unit == "ms" else number * _UNIT_SECONDS[unit]
    if not (math.isfinite(seconds) and seconds <= DURATION_MAX):
        raise OutOfRange(
            f"duration {printable(str(text).strip())} is out of range (0..{DURATION_MAX:.0f} s)"
        )
    return seconds


def format_seconds(seconds: float) -> str:
    """Whole seconds print as an int, as flux-accounting stores them at create-db."""
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)
