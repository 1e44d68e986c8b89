"""ledger.clock: one time syntax, parsed without a clock or a zone, resolved with both."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import bounds
from ledger.clock import (
    AfterTheClock,
    TimeOutOfRange,
    TimeSpec,
    check_not_after_clock,
    parse_time,
    parse_time_spec,
    zone_named,
)
from ledger.errors import InvalidValue, OutOfRange

BERLIN = ZoneInfo("Europe/Berlin")
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def utc(*fields: int) -> float:
    return datetime(*fields, tzinfo=UTC).timestamp()  # type: ignore[misc]


# The forms issue 12 names, each with the instant it means when the site's zone is UTC,
# written out independently of the parser.
FORMS = {
    "1700000000": 1_700_000_000.0,
    "1700000000.25": 1_700_000_000.25,
    "0": 0.0,
    "2023-11-14T22:13:20+00:00": 1_700_000_000.0,
    "2023-11-14T22:13:20Z": 1_700_000_000.0,
    "2023-11-14 23:13:20+01:00": 1_700_000_000.0,
    "2023-11-14T22:13:20": 1_700_000_000.0,  # no zone: the site's
    "2024-12-01": utc(2024, 12, 1),  # a bare date: midnight
    "12/01/24": utc(2024, 12, 1),  # month first, as flux-accounting (US) reads it
    "1/1/1970": 0.0,
    "Jan 1, 1990 8am": utc(1990, 1, 1, 8),
    "1970-01-01 08:00:00": 8 * 3600.0,
    "2024-01-01 08:00 UTC": utc(2024, 1, 1, 8),
    "2024-01-01 08:00 GMT": utc(2024, 1, 1, 8),
    "2024-01-01 08:00 -05:00": utc(2024, 1, 1, 13),
}


@pytest.mark.parametrize("text", FORMS)
def test_every_form_reads_as_its_instant_in_utc(text: str) -> None:
    assert parse_time(text) == FORMS[text]


def test_a_zone_less_time_is_a_wall_clock_time_in_the_zone_given() -> None:
    # Berlin is UTC+1 in winter, UTC+2 in summer.
    assert parse_time("1/2/1970", BERLIN) == 86400.0 - 3600.0
    assert parse_time("2024-01-01 08:00", BERLIN) == utc(2024, 1, 1, 7)
    assert parse_time("Jul 1, 2024 8am", BERLIN) == utc(2024, 7, 1, 6)
    # A time with a zone or an epoch does not move with the site's zone.
    assert parse_time("2024-01-01T08:00:00Z", BERLIN) == utc(2024, 1, 1, 8)
    assert parse_time("1700000000", BERLIN) == NOW


def test_parsing_reads_no_zone_and_no_clock() -> None:
    wall = parse_time_spec("12/01/24 8am")
    assert wall == TimeSpec(wall=datetime(2024, 12, 1, 8), text="12/01/24 8am")
    assert wall.needs_zone and not wall.needs_now
    ago = parse_time_spec("3d")
    assert ago.ago == 3 * 86400 and ago.needs_now and not ago.needs_zone
    assert parse_time_spec("1700000000") == TimeSpec(absolute=NOW, text="1700000000")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("3d", 3 * 86400), ("12h ago", 12 * 3600), ("-1w", 7 * 86400), ("90m", 5400), ("0s", 0)],
)
def test_a_duration_is_that_long_before_the_ledgers_now(text: str, seconds: float) -> None:
    assert parse_time(text, now=NOW) == NOW - seconds


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("8am", "give a year, a month and a day"),  # dateutil would take today's date
        ("Jan 1", "give a year, a month and a day"),
        ("March", "give a year, a month and a day"),
        ("2024-01-01 08:00 EST", "zone EST is ambiguous"),
        ("yesterday", "epoch seconds, ISO 8601"),
        ("last tuesday", "epoch seconds, ISO 8601"),
        ("2024-13-01", "epoch seconds, ISO 8601"),
        ("2024-01-01 25:00", "epoch seconds, ISO 8601"),
        ("3x", "epoch seconds, ISO 8601"),
        ("", "epoch seconds, ISO 8601"),
    ],
)
def test_malformed_times_are_usage_errors_naming_the_text(text: str, why: str) -> None:
    with pytest.raises(InvalidValue) as err:
        parse_time_spec(text)
    assert not isinstance(err.value, OutOfRange)
    assert str(err.value).startswith(f"invalid time: {text!r} (")
    assert why in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text", ["1700000000000", "1.7e12", "100000000000", "253402300799000"])
def test_epoch_milliseconds_are_refused_saying_so(text: str) -> None:
    with pytest.raises(TimeOutOfRange, match="looks like epoch milliseconds"):
        parse_time_spec(text)


def test_the_milliseconds_message_gives_the_seconds_meant() -> None:
    with pytest.raises(TimeOutOfRange) as err:
        parse_time_spec("1700000000500")
    assert str(err.value) == (
        "time 1700000000500 looks like epoch milliseconds: give epoch seconds "
        "(below 1e11, the year 5138), e.g. 1700000000.5"
    )


@pytest.mark.parametrize(
    "text",
    [
        "-5",
        "1e300",
        "nan",
        "inf",
        "1969-12-31T23:59:59Z",
        "0001-01-01",
        "9999-12-31 23:59:59 -05:00",
    ],
)
def test_times_out_of_range_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(TimeOutOfRange) as err:
        parse_time(text)
    assert text in str(err.value)


def test_range_is_checked_after_the_zone_is_applied() -> None:
    # The last second UTC can print, as a wall-clock time west of UTC, is past it.
    spec = parse_time_spec("9999-12-31 23:59:59")
    assert spec.resolve(zone=UTC) == bounds.TIME_MAX
    with pytest.raises(TimeOutOfRange):
        spec.resolve(zone=ZoneInfo("America/New_York"))
    with pytest.raises(TimeOutOfRange):
        parse_time_spec("1970-01-01").resolve(zone=BERLIN)  # 1969-12-31T23:00Z
    with pytest.raises(TimeOutOfRange):
        parse_time_spec("1w").resolve(now=100.0)


def test_a_moment_after_the_clock_is_refused() -> None:
    spec = parse_time_spec("2023-11-15")
    assert check_not_after_clock("--as-of", spec, NOW, NOW) == NOW
    with pytest.raises(AfterTheClock) as err:
        check_not_after_clock("--as-of", spec, utc(2023, 11, 15), NOW)
    assert str(err.value) == (
        "--as-of 2023-11-15 (2023-11-15T00:00:00+00:00) is after the ledger's clock "
        "(2023-11-14T22:13:20+00:00): its answer could still change"
    )


def test_zones_are_iana_names() -> None:
    assert zone_named("Europe/Berlin") == BERLIN
    assert zone_named("UTC") == ZoneInfo("UTC")
    for bad in ("Mars/Base", "europe/berlin", "", "localtime", "../etc/passwd", "+01:00"):
        with pytest.raises(InvalidValue, match="invalid timezone"):
            zone_named(bad)


@given(st.integers(min_value=0, max_value=int(bounds.TIME_MAX)))
def test_epoch_seconds_and_their_iso_form_agree(seconds: int) -> None:
    iso_text = datetime.fromtimestamp(seconds, tz=UTC).isoformat()
    if seconds < 1e11:
        assert parse_time(str(seconds)) == seconds
    assert parse_time(iso_text, BERLIN) == seconds
    assert parse_time(iso_text.removesuffix("+00:00")) == seconds  # zone-less, site zone UTC
