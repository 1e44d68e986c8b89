"""Decayed usage as docs/semantics.md ("Usage") documents it (pure, no database)."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.jobs import job_charge
from ledger.usage import (
    UsageParams,
    bin_count,
    charges_by_period,
    decayed_usage,
    period_of,
    period_start,
    usage_at,
    usage_bins,
)

HOUR = 3600.0
DAY = 24 * HOUR
WEEK = 7 * DAY
EPOCH = 1_700_000_000.0
H = 100.0  # a short half-life keeps the arithmetic readable

PARAMS = UsageParams(epoch=EPOCH, half_life=H, reset_period=4 * H, decay_factor=0.5)


def at(period: int, offset: float = 0.5) -> float:
    """A time inside `period` (by default its middle)."""
    return EPOCH + (period + offset) * H


# --- parameters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reset_period", "half_life", "bins"),
    [
        (42 * DAY, 14 * DAY, 3),  # t1018
        (16 * HOUR, 8 * HOUR, 2),  # t1018
        (4 * WEEK, WEEK, 4),  # the default
        (HOUR, 15 * 60.0, 4),  # t1018 gets 4 through ceil; floor agrees here
        (30 * DAY, 7 * DAY, 4),  # floor, where flux's reconfigure ceils to 5
        (DAY, WEEK, 1),  # reset shorter than the half-life: still one past bin
        (0.0, WEEK, 1),
    ],
)
def test_bin_count(reset_period: float, half_life: float, bins: int) -> None:
    params = UsageParams(epoch=0.0, half_life=half_life, reset_period=reset_period)
    assert bin_count(params) == bins


def test_defaults_are_flux_accountings() -> None:
    params = UsageParams(epoch=0.0)
    assert (params.half_life, params.reset_period, params.decay_factor) == (WEEK, 4 * WEEK, 0.5)
    assert bin_count(params) == 4


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"half_life": 0.0}, "half-life must be a positive duration"),
        ({"half_life": -1.0}, "half-life"),
        ({"half_life": math.inf}, "half-life"),
        ({"reset_period": -1.0}, "reset period"),
        ({"decay_factor": 1.5}, "decay factor must be in"),
        ({"decay_factor": -0.1}, "decay factor"),
        ({"decay_factor": math.nan}, "decay factor"),
        ({"epoch": math.nan}, "epoch"),
    ],
)
def test_params_refuse_nonsense(changes: dict[str, float], message: str) -> None:
    values = {"epoch": 0.0, "half_life": H, "reset_period": 4 * H, "decay_factor": 0.5}
    values.update(changes)
    with pytest.raises(InvalidValue, match=message):
        UsageParams(**values)


# --- periods -------------------------------------------------------------------------------------


def test_periods_are_aligned_to_the_epoch() -> None:
    assert period_of(EPOCH, PARAMS) == 0
    assert period_of(EPOCH + H - 0.001, PARAMS) == 0
    assert period_of(EPOCH + H, PARAMS) == 1  # a boundary opens the new period
    assert period_of(EPOCH + 16 * H + 1, PARAMS) == 16
    assert period_start(16, PARAMS) == EPOCH + 16 * H


def test_times_before_the_epoch_have_negative_periods() -> None:
    assert period_of(EPOCH - 0.001, PARAMS) == -1
    assert period_of(EPOCH - H, PARAMS) == -1
    assert period_of(EPOCH - H - 0.001, PARAMS) == -2


@given(
    st.floats(min_value=-1e9, max_value=1e9),
    st.floats(min_value=0.001, max_value=1e7),
    st.floats(min_value=0.0, max_value=1e10),
)
def test_period_of_agrees_with_period_start(epoch: float, half_life: float, t: float) -> None:
    params = UsageParams(epoch=epoch, half_life=half_life)
    period = period_of(t, params)
    assert period_start(period, params) <= t < period_start(period + 1, params)


# --- usage ---------------------------------------------------------------------------------------


def test_seed_example() -> None:
    # docs/semantics.md's example: current 16000, past bins [128, 64, 64, 16]
    # -> 16000 + 64 + 16 + 8 + 1
    charges = {20: 16000.0, 19: 128.0, 18: 64.0, 17: 64.0, 16: 16.0}
    assert decayed_usage(charges, 20, PARAMS) == 16089.0
    assert usage_bins(charges, 20, PARAMS) == [16000.0, 128.0, 64.0, 64.0, 16.0]
    assert usage_at(at(20), charges, PARAMS) == 16089.0


def test_usage_halves_at_every_boundary_until_it_leaves_the_window() -> None:
    # t1015_issue815.py (100 -> 50 -> 25 -> 12.5), run here with the default 4 past bins
    charges = {0: 100.0}
    assert [decayed_usage(charges, c, PARAMS) for c in range(7)] == [
        100.0,
        50.0,
        25.0,
        12.5,
        6.25,
        0.0,
        0.0,
    ]


def test_every_boundary_is_applied_after_an_outage() -> None:
    # flux-accounting needs one run per missed boundary; here time alone decides
    charges = {0: 100.0}
    assert usage_at(at(3), charges, PARAMS) == 12.5


def test_jobs_older_than_the_window_no_longer_count() -> None:
    charges = {10: 1.0, 5: 1000.0}
    assert usage_bins(charges, 10, PARAMS) == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert decayed_usage(charges, 10, PARAMS) == 1.0
    assert decayed_usage(charges, 9, PARAMS) == 1000.0 * 0.5**4


def test_periods_after_the_current_one_are_ignored() -> None:
    charges = {3: 40.0, 4: 8.0, 5: 1e6}
    assert usage_bins(charges, 4, PARAMS)[0] == 8.0
    assert decayed_usage(charges, 4, PARAMS) == 8.0 + 20.0


def test_nothing_is_counted_twice() -> None:
    # t1006's bin-0 bug: bins [8196, 256, 32, 16] plus a 200 job after a roll gave 4442 and,
    # one period later, 4334. Here the past stays in its own bins.
    charges = {10: 8196.0, 9: 256.0, 8: 32.0, 7: 16.0, 11: 200.0}
    assert usage_bins(charges, 11, PARAMS) == [200.0, 8196.0, 256.0, 32.0, 16.0]
    assert decayed_usage(charges, 11, PARAMS) == 200 + 4098 + 64 + 4 + 1
    assert decayed_usage(charges, 12, PARAMS) == 100 + 2049 + 32 + 2


def test_a_late_job_lands_in_its_own_period() -> None:
    # the job ended in period 2 but was first seen in period 5: it has already decayed 3 times
    charges = charges_by_period([(at(2), 80.0)], PARAMS)
    assert charges == {2: 80.0}
    assert usage_at(at(5), charges, PARAMS) == 10.0
    assert usage_bins(charges, 5, PARAMS) == [0.0, 0.0, 0.0, 80.0, 0.0]


def test_a_job_that_ran_earlier_but_ended_later_counts() -> None:
    # t1016_issue853.py: 1000 node-seconds, then a job with an earlier t_run and later end
    first = (3000.0, job_charge(1, 4, 1, 2000.0, 3000.0))
    second = (5000.0, job_charge(1, 4, 1, 1000.0, 5000.0))
    params = UsageParams(epoch=0.0)
    charges = charges_by_period([first, second], params)
    assert usage_at(5000.0, charges, params) == 5000.0


def test_changed_parameters_rebin_the_stored_jobs() -> None:
    # t1019 wiped every bin on reconfigure; here the same jobs are re-read with the new settings
    jobs = [(950.0, 100.0), (2400.0, 1000.0)]
    old = UsageParams(epoch=0.0, half_life=900.0, reset_period=3600.0)
    new = UsageParams(epoch=0.0, half_life=400.0, reset_period=1200.0)
    assert usage_at(2500.0, charges_by_period(jobs, old), old) == 1000.0 + 100.0 * 0.5
    # the first job is now 4 periods back, outside the new window of 3
    assert usage_at(2500.0, charges_by_period(jobs, new), new) == 1000.0
    assert usage_at(3600.0, charges_by_period(jobs, new), new) == 1000.0 * 0.5**3


def test_decay_factor_extremes() -> None:
    charges = {0: 10.0, 1: 1.0}
    no_memory = UsageParams(epoch=EPOCH, half_life=H, reset_period=4 * H, decay_factor=0.0)
    no_decay = UsageParams(epoch=EPOCH, half_life=H, reset_period=4 * H, decay_factor=1.0)
    assert decayed_usage(charges, 1, no_memory) == 1.0
    assert decayed_usage(charges, 1, no_decay) == 11.0


# --- properties ----------------------------------------------------------------------------------

charge_values = st.floats(min_value=0.0, max_value=1e9).map(lambda x: round(x, 5))
period_charges = st.dictionaries(st.integers(min_value=-20, max_value=20), charge_values)
param_sets = st.builds(
    UsageParams,
    epoch=st.just(EPOCH),
    half_life=st.just(H),
    reset_period=st.sampled_from([0.0, H, 2 * H, 4 * H, 7 * H]),
    decay_factor=st.floats(min_value=0.0, max_value=1.0),
)


@given(period_charges, st.integers(min_value=-25, max_value=25), param_sets)
def test_without_new_jobs_usage_falls_by_the_decay_factor(
    charges: dict[int, float], current: int, params: UsageParams
) -> None:
    # no job in the next period: usage(c+1) = D * (usage(c) - D**B * R_{c-B}), the oldest
    # bin leaving the window
    quiet = {period: value for period, value in charges.items() if period != current + 1}
    leaving = quiet.get(current - bin_count(params), 0.0)
    expected = params.decay_factor * (
        decayed_usage(quiet, current, params) - params.decay_factor ** bin_count(params) * leaving
    )
    # fsum is exact-rounded but the subtraction above is not: allow rounding of the total
    scale = 1.0 + math.fsum(usage_bins(quiet, current, params))
    assert decayed_usage(quiet, current + 1, params) == pytest.approx(expected, abs=1e-12 * scale)


@given(period_charges, st.integers(min_value=-25, max_value=25), param_sets)
def test_usage_is_the_decayed_sum_of_the_shown_bins(
    charges: dict[int, float], current: int, params: UsageParams
) -> None:
    bins = usage_bins(charges, current, params)
    assert len(bins) == bin_count(params) + 1
    assert decayed_usage(charges, current, params) == math.fsum(
        params.decay_factor**age * value for age, value in enumerate(bins)
    )
    assert 0.0 <= decayed_usage(charges, current, params) <= math.fsum(bins)


@given(
    st.lists(
        st.tuples(st.floats(min_value=EPOCH - 5 * H, max_value=EPOCH + 30 * H), charge_values),
        max_size=40,
    ),
    st.randoms(use_true_random=False),
    st.floats(min_value=EPOCH, max_value=EPOCH + 30 * H),
)
def test_ingest_order_never_changes_the_result(
    jobs: list[tuple[float, float]], rng: random.Random, t: float
) -> None:
    shuffled = list(jobs)
    rng.shuffle(shuffled)
    in_order = charges_by_period(jobs, PARAMS)
    reordered = charges_by_period(shuffled, PARAMS)
    assert in_order == reordered  # exactly, not approximately
    assert usage_at(t, in_order, PARAMS) == usage_at(t, reordered, PARAMS)
