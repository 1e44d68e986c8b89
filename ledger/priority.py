"""Job priority as flux-accounting's mf_priority plugin computes it (docs/semantics.md, "Priority").

P = round(W_fs·fairshare + W_q·queue_priority + W_b·bank_priority + W_u·(urgency − 16)),
clamped to [0, 4294967295]. Urgency 0 (hold) and 31 (expedite) short-circuit everything.
Pure: no clock, no I/O; the caller supplies the fair-share snapshot and the weights in force.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

# flux-core's job priority range (FLUX_JOB_PRIORITY_MIN/MAX).
PRIORITY_MIN = 0
PRIORITY_MAX = 4294967295

# flux-core's urgency range: 0 holds the job, 16 is the default, 31 expedites it.
URGENCY_HOLD = 0
URGENCY_DEFAULT = 16
URGENCY_EXPEDITE = 31


@dataclass(frozen=True)
class PriorityWeights:
    """Factor weights; the defaults are flux-accounting's priority_factor_weight_table rows.

    Integers because the plugin keeps them in a map<string, int>.
    """

    fairshare: int = 100000
    queue: int = 10000
    bank: int = 0
    urgency: int = 1000


class PriorityFactor(NamedTuple):
    """One row of a priority explanation: product = weight · value."""

    name: str
    value: float
    weight: int
    product: float


@dataclass(frozen=True)
class PriorityBreakdown:
    """The priority a job gets and the factor rows it was made of (for `explain-job`).

    The rows are present even when urgency 0 or 31 decided the priority, so an explanation can
    show what the formula would have given; `priority` is always the value that applies.
    """

    priority: int
    factors: tuple[PriorityFactor, ...]


def queue_factor(queue: str | None, queue_priorities: Mapping[str, int]) -> int:
    """The job's own queue priority: 0 if no queue was given or the ledger does not know it.

    The plugin stores this factor on the association, so every job of an association gets the
    factor of its most recently submitted job; we evaluate it per job (docs/semantics.md).
    """
    if queue is None:
        return 0
    return queue_priorities.get(queue, 0)


def job_priority(
    fairshare: float,
    queue_priority: int,
    bank_priority: float,
    urgency: int,
    weights: PriorityWeights | None = None,
) -> PriorityBreakdown:
    """The mf_priority plugin's priority for one job, factor by factor."""
    _check_urgency(urgency)
    weights = weights or PriorityWeights()
    factors = _factor_rows(fairshare, queue_priority, bank_priority, urgency, weights)
    # Urgency decides before the formula, as in the plugin: a held job is 0 whatever its
    # fair-share, an expedited one is the maximum.
    if urgency == URGENCY_HOLD:
        return PriorityBreakdown(PRIORITY_MIN, factors)
    if urgency == URGENCY_EXPEDITE:
        return PriorityBreakdown(PRIORITY_MAX, factors)
    return PriorityBreakdown(_clamp(_round_half_away_from_zero(_sum_products(factors))), factors)


def _check_urgency(urgency: int) -> None:
    if not URGENCY_HOLD <= urgency <= URGENCY_EXPEDITE:
        raise ValueError(f"urgency {urgency} is out of range ({URGENCY_HOLD}..{URGENCY_EXPEDITE})")


def _factor_rows(
    fairshare: float,
    queue_priority: int,
    bank_priority: float,
    urgency: int,
    weights: PriorityWeights,
) -> tuple[PriorityFactor, ...]:
    urgency_value = urgency - URGENCY_DEFAULT
    return (
        PriorityFactor("fairshare", fairshare, weights.fairshare, weights.fairshare * fairshare),
        # Python ints: the plugin's int×int queue product can overflow; ours cannot.
        PriorityFactor("queue", queue_priority, weights.queue, weights.queue * queue_priority),
        PriorityFactor("bank", bank_priority, weights.bank, weights.bank * bank_priority),
        PriorityFactor("urgency", urgency_value, weights.urgency, weights.urgency * urgency_value),
    )


def _sum_products(factors: tuple[PriorityFactor, ...]) -> float:
    # Left to right, in the plugin's order, so the double rounding matches its C++ sum.
    total = 0.0
    for factor in factors:
        total += factor.product
    return total


def _round_half_away_from_zero(x: float) -> int:
    """C++ std::round, which the plugin calls: halves go away from zero (2.5 → 3, −2.5 → −3).

    Python's round() would give 2 (banker's rounding), so it cannot be used here. `x − floor(x)`
    is exact for a double, so 0.49999999999999994 stays below the half (floor(x + 0.5) would not).
    """
    magnitude = abs(x)
    whole = math.floor(magnitude)
    if magnitude - whole >= 0.5:
        whole += 1
    return whole if x >= 0 else -whole


def _clamp(priority: int) -> int:
    # The plugin only floors at 0; flux-core's range also has a ceiling, which we apply.
    return max(PRIORITY_MIN, min(PRIORITY_MAX, priority))
