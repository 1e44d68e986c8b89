"""ledger.bounds: the limits every value must keep to enter the ledger (issue 10)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger import bounds
from ledger.clock import parse_requested_now, parse_time
from ledger.durations import parse_duration
from ledger.errors import InvalidValue, OutOfRange
from ledger.jobs import JobRecord, JobRecordError, parse_job_line, validate_job
from ledger.usage import UsageParams, period_of, period_start

NOW = 1_800_000_000.0
JOB = {"id": 1, "username": "alice", "t_run": 10.0, "t_inactive": 20.0, "nnodes": 1, "ncores": 1}


# --- the limits follow the columns ---------------------------------------------------------------
def test_integer_limits_match_the_columns() -> None:
    assert bounds.INT32_MAX == 2147483647  # PostgreSQL INTEGER
    assert bounds.INT64_MAX == 9223372036854775807  # BIGINT, SQLite INTEGER
    for limit in (bounds.SHARES_MAX, bounds.LIMIT_MAX, bounds.ID_MAX, bounds.COUNT_MAX):
        assert limit == bounds.INT32_MAX
    assert bounds.USERID_MAX == 2**32 - 1


def test_the_largest_charges_still_sum_in_a_bigint() -> None:
    # one job's largest charge, in units, fits many times over
    assert round(bounds.JOB_CHARGE_MAX * bounds.CHARGE_UNITS) * 90 < bounds.INT64_MAX
    assert bounds.ASSOCIATION_CHARGE_UNITS_MAX <= bounds.INT64_MAX
    # the largest weighted job before the charge bound stays finite
    largest = 3 * bounds.COUNT_MAX * bounds.CHARGE_WEIGHT_MAX * bounds.TIME_MAX
    assert math.isfinite(largest)


def test_decay_limits_bound_the_work_of_an_update() -> None:
    # periods since 1970 at the shortest half-life fit a BIGINT
    assert bounds.TIME_MAX / bounds.HALF_LIFE_MIN < bounds.INT64_MAX
    bounds.check_decay(60.0, 60.0 * bounds.PAST_BINS_MAX, 0.5)
    with pytest.raises(OutOfRange, match="priority_decay_half_life 1e-06 is out of range"):
        bounds.check_decay(0.000001, 2419200.0, 0.5)
    with pytest.raises(OutOfRange, match="more than 1000 half-lives"):
        bounds.check_decay(60.0, 60.0 * bounds.PAST_BINS_MAX + 60, 0.5)
    for factor in (0.0, -0.1, 1.5, math.nan, math.inf):
        with pytest.raises(OutOfRange, match="decay_factor"):
            bounds.check_decay(604800.0, 2419200.0, factor)


# --- numbers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [2**31, 2**53, 2**63, 2**64, -(2**31) - 1])
def test_check_int_names_the_value_and_the_range(value: int) -> None:
    with pytest.raises(OutOfRange) as err:
        bounds.check_int("shares", value, 0, bounds.SHARES_MAX) if value > 0 else bounds.check_int(
            "priority", value, bounds.PRIORITY_MIN, bounds.PRIORITY_MAX
        )
    assert str(value) in str(err.value) and "is out of range (" in str(err.value)


def test_check_int_refuses_bools_and_fractions() -> None:
    for value in (True, 1.5, "3"):
        with pytest.raises(InvalidValue):
            bounds.check_int("shares", value, 0, 10)
    assert bounds.check_int("shares", 3.0, 0, 10) == 3


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1e308, -1e308])
def test_check_float_refuses_non_finite_and_huge(value: float) -> None:
    with pytest.raises(OutOfRange):
        bounds.check_float("priority", value, bounds.PRIORITY_MIN, bounds.PRIORITY_MAX)


def test_check_float_keeps_negative_zero_as_zero() -> None:
    assert bounds.check_float("priority", -0.0, -1.0, 1.0) == 0.0


# --- times ---------------------------------------------------------------------------------------
def test_times_before_1970_or_beyond_year_9999_are_refused() -> None:
    assert bounds.check_time("t", 0) == 0.0
    for value in (-1, -0.5, 1e15 * 1e3, math.nan, math.inf):
        with pytest.raises(OutOfRange):
            bounds.check_time("t", value)


def test_future_tolerance_is_one_day_of_the_real_clock() -> None:
    latest = bounds.latest_time(NOW)
    assert bounds.check_requested_now(latest, NOW) == latest
    with pytest.raises(OutOfRange, match="in the future"):
        bounds.check_requested_now(latest + 1, NOW)
    with pytest.raises(OutOfRange, match="in the future"):
        bounds.check_requested_now(NOW + 365 * 86400, NOW)


def test_parse_time_refuses_well_formed_times_out_of_range() -> None:
    for text in ("nan", "inf", "-5", "1e300", "-1e308"):
        with pytest.raises(OutOfRange):
            parse_time(text)
    with pytest.raises(InvalidValue) as err:
        parse_time("yesterday\x1b[31m")
    assert not isinstance(err.value, OutOfRange) and "\x1b" not in str(err.value)


def test_requested_now_a_year_ahead_is_refused() -> None:
    import time

    with pytest.raises(OutOfRange, match="--now"):
        parse_requested_now(str(time.time() + 365 * 86400))
    assert parse_requested_now("1700000000") == 1700000000.0


def test_durations_are_bounded() -> None:
    assert parse_duration("100w") == 100 * 604800.0
    with pytest.raises(OutOfRange):
        parse_duration("99999999999w")


# --- periods -------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", [1e15, 1e28, 1.7e308, -1e28])
def test_period_of_ends_for_any_finite_time(t: float) -> None:
    params = UsageParams(epoch=1_700_000_000.0, half_life=604800.0)
    period = period_of(t, params)  # used to loop forever at ~1e28
    assert isinstance(period, int)


@settings(deadline=None, derandomize=True)
@given(
    st.floats(min_value=0.0, max_value=bounds.TIME_MAX), st.floats(min_value=60.0, max_value=1e9)
)
def test_period_of_is_exact_within_bounds(t: float, half_life: float) -> None:
    params = UsageParams(epoch=1_700_000_000.0, half_life=half_life)
    p = period_of(t, params)
    assert period_start(p, params) <= t < period_start(p + 1, params)


# --- text ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["a\x00b", "a\nb", "a\rb", "\x1b[31mred", "a\x7fb", "a\x9bb", "a\u2028b", "a\u202eb", "\ud800"],
)
def test_names_with_control_characters_are_refused(name: str) -> None:
    with pytest.raises(InvalidValue, match="control character") as err:
        bounds.check_name("bank", name)
    assert not bounds.has_control(str(err.value))


def test_names_have_a_length_limit_and_keep_unicode() -> None:
    assert bounds.check_name("bank", "physique-é✓日本") == "physique-é✓日本"
    bounds.check_name("bank", "x" * bounds.NAME_MAX_LENGTH)
    for name in ("", "x" * (bounds.NAME_MAX_LENGTH + 1)):
        with pytest.raises(InvalidValue, match="characters"):
            bounds.check_name("bank", name)


def test_a_name_accepted_once_is_accepted_again_and_the_memory_of_them_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bounds, "_ACCEPTED_NAMES", set())
    monkeypatch.setattr(bounds, "ACCEPTED_NAMES_KEPT", 3)
    for name in ("a", "b", "c", "d", "e"):
        assert bounds.check_name("bank", name) == name
        assert bounds.check_name("user", name) == name  # as often as it comes
    assert {"a", "b", "c"} == bounds._ACCEPTED_NAMES
    # Refused names are never remembered, whatever came before.
    for name in ("a\x00b", "", "x" * (bounds.NAME_MAX_LENGTH + 1)):
        for _ in range(2):
            with pytest.raises(InvalidValue):
                bounds.check_name("bank", name)
    assert {"a", "b", "c"} == bounds._ACCEPTED_NAMES


def test_reasons_are_one_printable_line() -> None:
    assert bounds.check_text("reason", "grant #12 — approved") == "grant #12 — approved"
    for text in ("a\nb", "\x1b]0;title\x07", "a\x00"):
        with pytest.raises(InvalidValue):
            bounds.check_text("reason", text)
    with pytest.raises(InvalidValue):
        bounds.check_text("reason", "x" * (bounds.TEXT_MAX_LENGTH + 1))


@given(st.text())
@settings(derandomize=True)
def test_printable_leaves_nothing_that_drives_a_terminal(text: str) -> None:
    shown = bounds.printable(text)
    assert not bounds.has_control(shown)
    assert "\n" not in shown and "\x1b" not in shown
    if not bounds.has_control(text):
        assert shown == text


def test_printable_escapes_readably() -> None:
    assert bounds.printable("a\nb\x1b[31m\x00\u202e") == "a\\nb\\x1b[31m\\x00\\u202e"


# --- a job record's unknown fields ---------------------------------------------------------------
@pytest.mark.parametrize(
    "extra",
    [math.nan, math.inf, 2**64, "a\x00b", "\ud800", {"k\x00": 1}, [[[[[[[1]]]]]]] * 1],
)
def test_extra_fields_must_be_storable_json(extra: object) -> None:
    deep: object = extra
    if isinstance(extra, list):
        deep = 1
        for _ in range(bounds.EXTRA_DEPTH_MAX + 2):
            deep = [deep]
    with pytest.raises(InvalidValue):
        bounds.check_json_value("x", deep)


def test_extra_fields_within_bounds_are_kept() -> None:
    bounds.check_json_value("x", {"a": [1, 2.5, "é\n", None, True, -(2**63)]})


# --- the job record ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("t_inactive", 1e15),
        ("t_inactive", 1.8e308),
        ("t_inactive", 1e28),
        ("t_run", -1.0),
        ("nnodes", 2**31),
        ("ncores", 2**31),
        ("ngpus", 2**31),
        ("ngpus", 2**63),
        ("userid", 2**32),
        ("username", "al\x00ice"),
        ("bank", "b\nb"),
        ("queue", "\x1b[31mq"),
        ("project", "p\x9b"),
        ("cluster", "c\u2028"),
        ("extra_field", math.nan),
    ],
)
def test_job_records_out_of_bounds_are_refused(field: str, value: object) -> None:
    data = dict(JOB, **{field: value})
    if field == "t_inactive":
        data["t_inactive"] = value
    with pytest.raises(JobRecordError) as err:
        validate_job(data)
    assert not bounds.has_control(str(err.value))


def test_job_times_in_the_future_are_refused_against_the_real_clock() -> None:
    latest = bounds.latest_time(NOW)
    assert validate_job(dict(JOB, t_inactive=latest), latest).t_inactive == latest
    with pytest.raises(JobRecordError, match="t_inactive: .* in the future"):
        validate_job(dict(JOB, t_inactive=latest + 1), latest)


def test_deeply_nested_json_lines_are_refused() -> None:
    line = '{"id": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(JobRecordError, match="nested"):
        parse_job_line(line)


def test_job_charge_bound() -> None:
    from ledger.ingest import check_job_charge

    big = JobRecord.model_validate(dict(JOB, nnodes=bounds.COUNT_MAX, t_inactive=1e9))
    with pytest.raises(JobRecordError, match="charge"):
        check_job_charge(big, (1.0, 0.0, 0.0))
    check_job_charge(big, (0.0, 0.0, 0.0))


# --- output of text recorded before these checks -------------------------------------------------
def test_tables_and_trees_escape_control_characters() -> None:
    from cli.output import Output, table
    from cli.tree import render_tree

    rows = [{"username": "eve\n  | forged", "bank": "\x1b[31mA"}]
    for text in (
        table(rows, ["username", "bank"]),
        Output(False, "{username} {bank}", None).render(rows, ["username", "bank"]),
    ):
        assert "\x1b" not in text and "forged" in text
        assert len(text.splitlines()) == len(rows) + (2 if "|" in text.splitlines()[0] else 1)
    bank = {"bank": "r\x1bt", "parent_bank": "", "active": 1, "shares": 1, "job_usage": 0.0}
    user = {"bank": "r\x1bt", "username": "u\nv", "active": 1, "shares": 1}
    tree = render_tree("r\x1bt", [bank], [dict(user, job_usage=0.0, fairshare=0.5)])
    assert "\x1b" not in tree and len(tree.splitlines()) == 3


def test_history_lines_escape_control_characters() -> None:
    from cli.audit_text import history_line
    from projections.queries.history import Entry

    entry = Entry(
        position=1,
        time=1_700_000_000.0,
        actor="ops\x1b[2J",
        reason="a\nb",
        source={},
        event="BankEdited",
        action="edit-bank",
        kind="bank",
        name="A\x1b]0;t\x07",
        changes={"shares": [1, 10]},
    )
    text = history_line(entry)
    assert "\x1b" not in text and "\n" not in text
    assert text.startswith("2023-11-14T22:13:20+00:00  ops\\x1b[2J  edit-bank A\\x1b]0;t\\x07")


@given(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(),
        st.text(alphabet=st.sampled_from(["a", "\x00", "\ud800", "é", "\udfff"])),
    )
)
def test_a_plain_json_scalar_passes_the_whole_check(value: object) -> None:
    """plain_json_scalar lets the record's extra fields skip check_json_value: only for values
    that check passes."""
    if bounds.plain_json_scalar(value):
        bounds.check_json_value("field", value)


@pytest.mark.parametrize(
    "value", ["a\x00b", "caf\udce9", 2**63, -(2**63) - 1, math.inf, math.nan, [1], {"a": 1}]
)
def test_what_is_not_plain_is_checked_whole(value: object) -> None:
    assert not bounds.plain_json_scalar(value)
