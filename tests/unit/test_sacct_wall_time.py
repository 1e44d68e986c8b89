"""sacct's wall times are read by fromisoformat where it can, and must read as strptime with
sacct's format reads them: the same time, or the same refusal."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from ledger.slurm.sacct import _ISO, SACCT_TIME_FORMAT, _time, _wall_time


def _read(read: object, text: str) -> datetime | str:
    try:
        return read(text)  # type: ignore[operator, no-any-return]
    except ValueError:
        return "refused"


def _strptime(text: str) -> datetime:
    return datetime.strptime(text, SACCT_TIME_FORMAT)


@given(
    st.tuples(
        st.integers(0, 9999),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
    )
)
def test_a_wall_time_reads_as_strptime_reads_it(parts: tuple[int, ...]) -> None:
    year, month, day, hour, minute, second = parts
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    assert _ISO.fullmatch(text)
    assert _read(_wall_time, text) == _read(_strptime, text)


def test_digits_of_another_script_are_left_to_strptime() -> None:
    text = "٢٠٢٦-01-02T03:04:05"  # Arabic-Indic digits: _ISO's \d takes them, strptime too
    assert _ISO.fullmatch(text)
    assert _wall_time(text) == datetime(2026, 1, 2, 3, 4, 5) == _strptime(text)
    assert _read(_wall_time, "2026-02-30T00:00:00") == "refused"


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
def test_a_utc_time_is_the_seconds_its_zone_aware_form_gives(wall: datetime) -> None:
    """In UTC `_time` skips the DST-gap check (UTC has none) and subtracts the epoch: the same
    number as the zone-aware timestamp() the other zones go through."""
    wall = wall.replace(microsecond=0)
    text = wall.isoformat()
    expected = wall.replace(tzinfo=ZoneInfo("UTC")).timestamp()
    assert _time({"End": text}, "End", ZoneInfo("UTC")) == expected
    # Through the general path (a zone of the same offset whose key is not "UTC"):
    assert _time({"End": text}, "End", ZoneInfo("Etc/GMT")) == expected
