"""Continuous decayed usage (`ledger.continuous_usage`): hand-computed values, resets in local
time across DST, and properties of the integral."""

from __future__ import annotations

import math
import random
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.continuous_usage import (
    Charge,
    DecayParams,
    OpeningBalance,
    ResetPeriod,
    anchor_of,
    anchored_parts,
    charge_usage,
    decay_weight,
    interval_usage,
    last_reset,
    reset_boundaries,
    settled_units,
    usage_at,
)
from ledger.errors import InvalidValue

HOUR = 3600.0
DAY = 86400.0
WEEK = 7 * DAY
LN2 = math.log(2)


def ts(text: str, zone: str = "UTC") -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


# --- hand-computed values ------------------------------------------------------------------


def test_one_half_life_long_job_just_ended() -> None:
    # 2 billing for one half-life, asked at its end: 2 · hl/ln2 · (1 - 1/2) = hl/ln2.
    assert charge_usage(Charge(2.0, 0.0, HOUR), HOUR, HOUR) == pytest.approx(HOUR / LN2, rel=1e-15)


def test_job_one_half_life_ago_is_worth_half() -> None:
    now = charge_usage(Charge(4.0, 0.0, 600.0), 600.0, WEEK)
    later = charge_usage(Charge(4.0, 0.0, 600.0), 600.0 + WEEK, WEEK)
    assert later == pytest.approx(now / 2, rel=1e-14)


def test_short_job_long_ago_keeps_its_precision() -> None:
    # 1 s of 1 billing, 100 half-lives ago: 2^-100 · hl/ln2 · (1 - 2^(-1/hl)).
    hl = 60.0
    value = charge_usage(Charge(1.0, 0.0, 1.0), 1.0 + 100 * hl, hl)
    exact = 2.0**-100 * hl / LN2 * -math.expm1(-LN2 / hl)
    assert value == pytest.approx(exact, rel=1e-13)
    assert value > 0
    # The naive difference of two powers, 1 - 2^(-1e-10), keeps about 6 digits; expm1 all.
    tiny = charge_usage(Charge(1.0, 0.0, 1e-3), 1e-3, 1e7)
    assert tiny == pytest.approx(1e-3 * (1 - 0.5e-3 * LN2 / 1e7), rel=1e-14)


def test_no_decay_is_billing_times_elapsed() -> None:
    assert charge_usage(Charge(8.0, 100.0, 1100.0), 5e6, 0.0) == 8000.0


def test_usage_factor_multiplies_and_zero_adds_nothing() -> None:
    base = charge_usage(Charge(3.0, 0.0, 100.0), 100.0, 0.0)
    assert charge_usage(Charge(3.0, 0.0, 100.0, usage_factor=1.5), 100.0, 0.0) == 1.5 * base
    assert charge_usage(Charge(3.0, 0.0, 100.0, usage_factor=0.0), 100.0, 0.0) == 0.0


def test_running_job_counts_up_to_t_and_future_job_nothing() -> None:
    running = Charge(1.0, 0.0, 1000.0)
    assert charge_usage(running, 400.0, 0.0) == 400.0
    assert charge_usage(Charge(1.0, 500.0, 600.0), 400.0, 0.0) == 0.0


def test_opening_balance_decays_and_stands_for_earlier_job_time() -> None:
    params = DecayParams(half_life=DAY)
    opening = OpeningBalance(1000.0, at=DAY)
    job = Charge(1.0, 0.0, 2 * DAY)  # half of it before the opening balance
    got = usage_at(3 * DAY, [job], params, opening)
    expected = 1000.0 * 0.25 + charge_usage(Charge(1.0, DAY, 2 * DAY), 3 * DAY, DAY)
    assert got == pytest.approx(expected, rel=1e-15)


def test_opening_balance_after_t_is_refused() -> None:
    with pytest.raises(InvalidValue, match="after the time asked about"):
        usage_at(10.0, [], DecayParams(), OpeningBalance(5.0, at=20.0))


def test_reset_cuts_job_time_and_opening_balance() -> None:
    params = DecayParams(half_life=0.0, reset_period=ResetPeriod.DAILY)
    t = ts("2024-03-05T06:00:00")
    midnight = ts("2024-03-05T00:00:00")
    job = Charge(2.0, midnight - 2 * HOUR, midnight + 3 * HOUR)
    opening = OpeningBalance(500.0, at=midnight - HOUR)
    assert usage_at(t, [job], params, opening) == 2.0 * 3 * HOUR
    # Asked before the boundary, both count in full (no decay).
    assert usage_at(midnight - 1, [job], params, opening) == 500.0 + 2.0 * (HOUR - 1)
    # A balance recorded exactly at the boundary survives it.
    assert usage_at(t, [], params, OpeningBalance(7.0, at=midnight)) == 7.0


def test_params_validation() -> None:
    with pytest.raises(InvalidValue, match="half-life 0"):
        DecayParams(half_life=0.0)
    with pytest.raises(InvalidValue, match="time zone"):
        DecayParams(timezone="Mars/Olympus")
    with pytest.raises(InvalidValue, match="before t_start"):
        Charge(1.0, 10.0, 5.0)
    with pytest.raises(InvalidValue, match="usage_factor"):
        Charge(1.0, 0.0, 5.0, usage_factor=-1.0)
    with pytest.raises(InvalidValue, match="not one of"):
        ResetPeriod.parse("HOURLY")
    assert ResetPeriod.parse(" weekly ") is ResetPeriod.WEEKLY


# --- reset boundaries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "at", "boundary"),
    [
        (ResetPeriod.DAILY, "2024-05-15T13:14:15", "2024-05-15T00:00:00"),
        (ResetPeriod.DAILY, "2024-05-15T00:00:00", "2024-05-15T00:00:00"),
        (ResetPeriod.WEEKLY, "2024-05-15T13:00:00", "2024-05-12T00:00:00"),  # Wed -> Sun
        (ResetPeriod.WEEKLY, "2024-05-12T00:00:01", "2024-05-12T00:00:00"),  # a Sunday
        (ResetPeriod.WEEKLY, "2024-05-11T23:59:59", "2024-05-05T00:00:00"),  # a Saturday
        (ResetPeriod.MONTHLY, "2024-02-29T23:00:00", "2024-02-01T00:00:00"),
        (ResetPeriod.QUARTERLY, "2024-06-30T23:59:59", "2024-04-01T00:00:00"),
        (ResetPeriod.QUARTERLY, "2024-10-01T00:00:00", "2024-10-01T00:00:00"),
        (ResetPeriod.QUARTERLY, "2024-03-31T12:00:00", "2024-01-01T00:00:00"),
        (ResetPeriod.YEARLY, "2024-12-31T23:59:59", "2024-01-01T00:00:00"),
    ],
)
def test_last_reset_in_utc(period: ResetPeriod, at: str, boundary: str) -> None:
    assert last_reset(ts(at), period) == ts(boundary)


def test_no_reset_period_has_no_boundary() -> None:
    assert last_reset(1e9, ResetPeriod.NONE) is None
    assert reset_boundaries(0.0, 1e9, ResetPeriod.NONE) == []


def test_local_time_zone_moves_the_boundary() -> None:
    # 03:00 UTC on May 15 is still May 14 in New York (EDT, UTC-4): midnight is 04:00 UTC May 14.
    at = ts("2024-05-15T03:00:00")
    assert last_reset(at, ResetPeriod.DAILY, "America/New_York") == ts("2024-05-14T04:00:00")


def test_daily_resets_across_dst_are_local_midnights() -> None:
    zone = "Europe/Berlin"
    # Spring forward on 2024-03-31 (23-hour day), fall back on 2024-10-27 (25-hour day).
    spring = reset_boundaries(
        ts("2024-03-30T12:00:00", zone), ts("2024-04-01T12:00:00", zone), ResetPeriod.DAILY, zone
    )
    assert spring == [ts("2024-03-31T00:00:00", zone), ts("2024-04-01T00:00:00", zone)]
    assert spring[1] - spring[0] == 23 * HOUR
    autumn = reset_boundaries(
        ts("2024-10-26T12:00:00", zone), ts("2024-10-28T12:00:00", zone), ResetPeriod.DAILY, zone
    )
    assert autumn[1] - autumn[0] == 25 * HOUR
    # Inside the repeated hour (02:30 happens twice), the day is still the 27th.
    second_0230 = datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=ZoneInfo(zone)).timestamp()
    assert last_reset(second_0230, ResetPeriod.DAILY, zone) == ts("2024-10-27T00:00:00", zone)


def test_daily_reset_where_dst_skips_midnight() -> None:
    # America/Santiago springs forward at 24:00 -> 01:00 (2024-09-08): the day starts at the change.
    zone = "America/Santiago"
    at = ts("2024-09-08T12:00:00", zone)
    boundary = last_reset(at, ResetPeriod.DAILY, zone)
    assert boundary is not None
    local = datetime.fromtimestamp(boundary, ZoneInfo(zone))
    assert (local.date().isoformat(), local.hour) == ("2024-09-08", 1)
    assert datetime.fromtimestamp(boundary - 1, ZoneInfo(zone)).date().isoformat() == "2024-09-07"


def test_usage_with_daily_reset_in_dst_zone() -> None:
    zone = "America/New_York"
    params = DecayParams(half_life=0.0, reset_period=ResetPeriod.DAILY, timezone=zone)
    # A job over the fall-back night 2024-11-03: only time after local midnight counts.
    job = Charge(1.0, ts("2024-11-02T22:00:00", zone), ts("2024-11-03T03:00:00", zone))
    # 00:00 EDT -> 03:00 EST is 4 hours of real time.
    assert usage_at(job.t_end, [job], params) == 4 * HOUR


# --- properties ----------------------------------------------------------------------------

times = st.floats(min_value=0.0, max_value=1e8, allow_nan=False)
half_lives = st.floats(min_value=1.0, max_value=1e7)
billings = st.floats(min_value=0.0, max_value=1e4)
charges = st.builds(
    lambda b, s, d: Charge(b, s, s + d), billings, times, st.floats(min_value=0.0, max_value=1e6)
)


@given(
    st.lists(charges, max_size=6),
    half_lives,
    st.floats(min_value=0.0, max_value=1e7),
    st.floats(min_value=0.0, max_value=1e7),
)
def test_non_increasing_after_the_last_job(
    jobs: list[Charge], hl: float, gap: float, more: float
) -> None:
    params = DecayParams(half_life=hl)
    end = max((c.t_end for c in jobs), default=0.0) + gap
    assert usage_at(end + more, jobs, params) <= usage_at(end, jobs, params) * (1 + 1e-12)


@given(st.lists(charges, max_size=6), half_lives, times)
def test_additive_over_jobs(jobs: list[Charge], hl: float, at: float) -> None:
    params = DecayParams(half_life=hl)
    total = usage_at(at, jobs, params)
    parts = math.fsum(usage_at(at, [c], params) for c in jobs)
    assert total == pytest.approx(parts, rel=1e-12, abs=1e-9)


@given(charges, st.floats(min_value=0.0, max_value=1.0), half_lives, st.floats(0.0, 1e7))
def test_splitting_a_job_changes_nothing(job: Charge, cut: float, hl: float, after: float) -> None:
    middle = job.t_start + cut * (job.t_end - job.t_start)
    pieces = [Charge(job.billing, job.t_start, middle), Charge(job.billing, middle, job.t_end)]
    at = job.t_end + after
    whole = charge_usage(job, at, hl)
    split = math.fsum(charge_usage(p, at, hl) for p in pieces)
    assert split == pytest.approx(whole, rel=1e-9, abs=1e-9)


@given(charges)
def test_long_half_life_approaches_no_decay(job: Charge) -> None:
    at = job.t_end
    no_decay = charge_usage(job, at, 0.0)
    assert charge_usage(job, at, 1e15) == pytest.approx(no_decay, rel=1e-6, abs=1e-9)


@given(
    st.floats(min_value=0.0, max_value=4e9),
    st.sampled_from([p for p in ResetPeriod if p is not ResetPeriod.NONE]),
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]),
)
def test_last_reset_is_a_period_start_at_or_before(
    at: float, period: ResetPeriod, zone: str
) -> None:
    boundary = last_reset(at, period, zone)
    assert boundary is not None and boundary <= at
    assert last_reset(boundary, period, zone) == boundary  # a fixed point
    local = datetime.fromtimestamp(boundary, ZoneInfo(zone))
    assert datetime.fromtimestamp(boundary - 1, ZoneInfo(zone)).date() < local.date()
    if period is ResetPeriod.WEEKLY:
        assert local.weekday() == 6
    if period in (ResetPeriod.MONTHLY, ResetPeriod.QUARTERLY, ResetPeriod.YEARLY):
        assert local.day == 1


def test_decay_weight() -> None:
    assert decay_weight(WEEK, WEEK) == pytest.approx(0.5, rel=1e-15)
    assert decay_weight(123.0, 0.0) == 1.0


# --- the anchored form: jobs that ended, as exact sums that do not depend on the moment ------


def test_anchors_are_256_half_lives_apart() -> None:
    assert anchor_of(5.0 * 256 * WEEK + 3.0, WEEK) == 5.0 * 256 * WEEK
    assert anchor_of(5.0 * 256 * WEEK - 1.0, WEEK) == 4.0 * 256 * WEEK
    assert anchor_of(123456.0, 0.0) == 0.0  # no decay: one anchor


def test_a_job_ended_at_its_anchor_is_its_usage_then_in_units_of_2_to_the_minus_64() -> None:
    # 2 per second for one half-life, ended at the anchor 0: 2 · hl/ln2 · (1 - 1/2) = hl/ln2.
    units = settled_units(2.0, -WEEK, 0.0, WEEK)
    assert units / 2**64 == pytest.approx(WEEK / LN2, rel=1e-15)
    # No decay: 3 per second for 10 s is 30 billing-seconds, exactly.
    assert settled_units(3.0, 0.0, 10.0, 0.0) == 30 * 2**64


def test_a_job_ended_half_lives_after_its_anchor_is_grown_by_as_many_doublings() -> None:
    # The same job ending 3 half-lives after the anchor: its term is 2^3 times its usage then,
    # and read 3 half-lives later (at the anchor + 6 hl) it is worth 2^-3 of that usage.
    at_anchor = settled_units(2.0, -WEEK, 0.0, WEEK)
    later = settled_units(2.0, 2 * WEEK, 3 * WEEK, WEEK)
    assert later / at_anchor == pytest.approx(8.0, rel=1e-14)
    [part] = anchored_parts({0.0: later}, 6 * WEEK, WEEK)
    assert part == pytest.approx(WEEK / LN2 / 8, rel=1e-14)


@given(st.lists(charges, min_size=1, max_size=8), half_lives, st.randoms())
def test_the_sum_of_ended_jobs_is_the_same_in_any_order(
    jobs: list[Charge], hl: float, rng: random.Random
) -> None:
    params = DecayParams(half_life=hl)
    at = max(c.t_end for c in jobs) + 1.0
    shuffled = list(jobs)
    rng.shuffle(shuffled)
    # Exactly equal, not approximately: the carried-forward update depends on it.
    assert usage_at(at, shuffled, params) == usage_at(at, jobs, params)


@given(st.lists(charges, min_size=1, max_size=6), half_lives, st.floats(0.0, 1e8))
def test_the_anchored_form_is_the_integral(jobs: list[Charge], hl: float, after: float) -> None:
    at = max(c.t_end for c in jobs) + after
    direct = math.fsum(interval_usage(c.billing, c.t_start, c.t_end, at, hl) for c in jobs)
    assert usage_at(at, jobs, DecayParams(half_life=hl)) == pytest.approx(
        direct, rel=1e-12, abs=1e-9
    )


def test_jobs_across_anchors_each_count_from_their_own() -> None:
    # Two one-second jobs at 1 per second, ending on either side of the anchor 256 hl, read
    # at 300 hl: each is worth about 2^-(300 hl - end)/hl.
    hl = 100.0
    width = 256 * hl
    jobs = [Charge(1.0, width - 2.0, width - 1.0), Charge(1.0, width, width + 1.0)]
    at = 300 * hl
    expected = math.fsum(interval_usage(1.0, c.t_start, c.t_end, at, hl) for c in jobs)
    assert usage_at(at, jobs, DecayParams(half_life=hl)) == pytest.approx(expected, rel=1e-12)
