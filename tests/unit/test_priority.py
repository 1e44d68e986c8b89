"""The mf_priority formula: flux-accounting's sharness vectors (t1001, t1013, t1056) and rules."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.priority import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    PriorityFactor,
    PriorityWeights,
    _round_half_away_from_zero,
    job_priority,
    queue_factor,
)

# --- t1001: fair-share 0.45321, urgency weight 1 -------------------------------------------------

T1001_WEIGHTS = PriorityWeights(urgency=1)


def test_t1001_default_urgency_gives_fairshare_times_weight() -> None:
    assert job_priority(0.45321, 0, 0.0, 16, T1001_WEIGHTS).priority == 45321


def test_t1001_urgency_15_lowers_by_the_urgency_weight() -> None:
    assert job_priority(0.45321, 0, 0.0, 15, T1001_WEIGHTS).priority == 45320


def test_t1001_urgency_0_holds_the_job() -> None:
    assert job_priority(0.45321, 0, 0.0, 0, T1001_WEIGHTS).priority == 0


def test_t1001_urgency_31_expedites_the_job() -> None:
    assert job_priority(0.45321, 0, 0.0, 31, T1001_WEIGHTS).priority == 4294967295


# --- t1013: queue priorities ---------------------------------------------------------------------


def test_t1013_queue_priority_10000_with_fairshare_half() -> None:
    assert job_priority(0.5, 10000, 0.0, 16).priority == 100050000


def test_t1013_queues_order_a_users_jobs() -> None:
    queue_priorities = {"expedite": 20000, "gold": 200, "silver": 100, "bronze": 0, "standby": -10}
    ranked = [
        job_priority(0.5, queue_factor(name, queue_priorities), 0.0, 16).priority
        for name in ("expedite", "gold", "silver", "bronze", "standby")
    ]
    assert ranked == sorted(ranked, reverse=True)
    assert len(set(ranked)) == len(ranked)
    assert ranked == [200050000, 2050000, 1050000, 50000, 0]


# --- t1056: urgency alone ------------------------------------------------------------------------


def test_t1056_urgency_17_with_fairshare_weight_0() -> None:
    weights = PriorityWeights(fairshare=0, urgency=1000)
    assert job_priority(0.5, 0, 0.0, 17, weights).priority == 1000


# --- the formula's parts -------------------------------------------------------------------------


def test_default_weights_are_flux_accountings() -> None:
    assert PriorityWeights() == PriorityWeights(fairshare=100000, queue=10000, bank=0, urgency=1000)


def test_breakdown_lists_the_four_factors_in_order() -> None:
    weights = PriorityWeights(bank=10)
    breakdown = job_priority(0.5, 3, 2.5, 18, weights)
    assert breakdown.factors == (
        PriorityFactor("fairshare", 0.5, 100000, 50000.0),
        PriorityFactor("queue", 3, 10000, 30000),
        PriorityFactor("bank", 2.5, 10, 25.0),
        PriorityFactor("urgency", 2, 1000, 2000),
    )
    assert breakdown.priority == 50000 + 30000 + 25 + 2000


def test_breakdown_rows_unpack_as_name_value_weight_product() -> None:
    name, value, weight, product = job_priority(0.5, 0, 0.0, 14).factors[3]
    assert (name, value, weight, product) == ("urgency", -2, 1000, -2000)


def test_held_and_expedited_jobs_still_show_their_factors() -> None:
    assert len(job_priority(0.5, 0, 0.0, 0).factors) == 4
    assert len(job_priority(0.5, 0, 0.0, 31).factors) == 4


def test_bank_priority_counts_with_its_weight() -> None:
    weights = PriorityWeights(fairshare=0, bank=100)
    assert job_priority(0.0, 0, 1.25, 16, weights).priority == 125


def test_half_rounds_away_from_zero_like_cpp_round() -> None:
    # 5 · 0.5 = 2.5 exactly: std::round gives 3 where Python's round() gives 2.
    weights = PriorityWeights(fairshare=5, urgency=0)
    assert job_priority(0.5, 0, 0.0, 16, weights).priority == 3
    assert job_priority(0.5, 0, 0.0, 16, PriorityWeights(fairshare=1)).priority == 1


def test_rounding_helper_on_halves_and_near_halves() -> None:
    assert _round_half_away_from_zero(2.5) == 3
    assert _round_half_away_from_zero(-2.5) == -3
    assert _round_half_away_from_zero(0.49999999999999994) == 0
    assert _round_half_away_from_zero(2.4999) == 2
    assert _round_half_away_from_zero(-0.4) == 0


def test_negative_sum_is_floored_at_zero() -> None:
    assert job_priority(0.0, -1, 0.0, 16).priority == PRIORITY_MIN
    assert job_priority(0.1, 0, 0.0, 1).priority == PRIORITY_MIN


def test_huge_sum_is_capped_at_the_maximum() -> None:
    # The plugin's int×int queue product would overflow here; we cap instead.
    assert job_priority(1.0, 10**6, 0.0, 16).priority == PRIORITY_MAX


def test_urgency_decides_before_the_formula() -> None:
    # Even a priority that would be negative becomes the maximum when expedited.
    assert job_priority(0.0, -(10**6), 0.0, 31).priority == PRIORITY_MAX
    assert job_priority(1.0, 10**6, 0.0, 0).priority == PRIORITY_MIN


@pytest.mark.parametrize("urgency", [-1, 32, 1000])
def test_urgency_outside_0_to_31_is_refused(urgency: int) -> None:
    with pytest.raises(ValueError, match=f"urgency {urgency} "):
        job_priority(0.5, 0, 0.0, urgency)


def test_queue_factor_is_zero_without_a_queue_or_for_an_unknown_one() -> None:
    priorities = {"gold": 200}
    assert queue_factor("gold", priorities) == 200
    assert queue_factor("nowhere", priorities) == 0
    assert queue_factor(None, priorities) == 0


# --- properties ----------------------------------------------------------------------------------

fairshares = st.floats(min_value=0.0, max_value=1.0)
urgencies = st.integers(min_value=1, max_value=30)
queue_priorities = st.integers(min_value=-(10**6), max_value=10**6)


@given(fairshares, queue_priorities, urgencies)
def test_priority_stays_in_fluxs_range(fairshare: float, qprio: int, urgency: int) -> None:
    assert PRIORITY_MIN <= job_priority(fairshare, qprio, 0.0, urgency).priority <= PRIORITY_MAX


@given(fairshares, fairshares, queue_priorities, urgencies)
def test_more_fairshare_never_lowers_priority(
    low: float, high: float, qprio: int, urgency: int
) -> None:
    low, high = sorted((low, high))
    assert (
        job_priority(low, qprio, 0.0, urgency).priority
        <= job_priority(high, qprio, 0.0, urgency).priority
    )
