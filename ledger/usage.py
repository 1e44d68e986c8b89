"""Decayed usage, as docs/semantics.md ("Usage") documents it: not flux-accounting's code.

Time is cut into periods of one half-life H, aligned to the ledger's epoch (its create-db time):
period k = [epoch + k*H, epoch + (k+1)*H). A job's charge belongs to the period holding its
t_inactive, whenever the job was ingested. At time T, in period c, with B past bins and decay
factor D:

    usage(T) = R_c + sum_{j=1..B} D**j * R_{c-j}

where R_p is the sum of the association's charges in period p. So every boundary is applied
(flux-accounting applies at most one per run), nothing is counted twice (it adds the whole
total into bin 0 after a roll), and a late job lands in its own period (it lands in whatever
bin is current when it is first seen).

Pure: no I/O, no clock; the time asked about is always an argument.
"""

from __future__ import annotations

import functools
import math
import operator
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ledger.errors import InvalidValue

DEFAULT_HALF_LIFE = 604800.0  # 1 week, flux-accounting's priority_decay_half_life
DEFAULT_RESET_PERIOD = 2419200.0  # 4 weeks, its priority_usage_reset_period
DEFAULT_DECAY_FACTOR = 0.5


@dataclass(frozen=True)
class UsageParams:
    """The decay settings in force: the ledger epoch and the three config values, in seconds."""

    epoch: float
    half_life: float = DEFAULT_HALF_LIFE
    reset_period: float = DEFAULT_RESET_PERIOD
    decay_factor: float = DEFAULT_DECAY_FACTOR

    def __post_init__(self) -> None:
        if not math.isfinite(self.epoch):
            raise InvalidValue(f"epoch must be a finite time, got {self.epoch!r}")
        if not (math.isfinite(self.half_life) and self.half_life > 0):
            raise InvalidValue(f"half-life must be a positive duration, got {self.half_life!r}")
        if not (math.isfinite(self.reset_period) and self.reset_period >= 0):
            raise InvalidValue(
                f"reset period must be a duration of 0 or more, got {self.reset_period!r}"
            )
        if not 0 <= self.decay_factor <= 1:  # also refuses NaN
            raise InvalidValue(f"decay factor must be in [0, 1], got {self.decay_factor!r}")


def bin_count(params: UsageParams) -> int:
    """B, the number of past periods that still count: floor(reset / half-life), at least 1.

    Always floor: flux-accounting floors in add-user but ceils on reconfigure (4 vs 5 bins for
    30d/7d), so one site could hold both; we don't copy that.
    """
    return max(1, math.floor(params.reset_period / params.half_life))


def period_start(period: int, params: UsageParams) -> float:
    """The time at which a period begins."""
    return params.epoch + period * params.half_life


def period_of(t: float, params: UsageParams) -> int:
    """The period that contains time t: floor((t - epoch) / H).

    Negative for times before the epoch (jobs imported from before create-db); they decay like
    any other. The estimate is corrected against period_start() so that a time exactly on a
    boundary always opens the new period, whatever the division rounded to. The division is
    off by at most one period, so one step each way suffices; the correction is bounded because
    for a time so large that one period is below a float's resolution (t ~ 1e28 s with a week's
    half-life) period_start() cannot tell neighbouring periods apart, and an unbounded loop
    would never end.
    """
    period = math.floor((t - params.epoch) / params.half_life)
    for _step in range(_CORRECTION_STEPS):
        if period_start(period, params) > t:
            period -= 1
        elif period_start(period + 1, params) <= t:
            period += 1
        else:
            break
    return period


_CORRECTION_STEPS = 4  # the quotient's rounding moves it by at most one period


def charges_by_period(
    charges: Iterable[tuple[float, float]], params: UsageParams
) -> dict[int, float]:
    """R_p for each period p, from (t_inactive, charge) pairs.

    math.fsum is correctly rounded, so the totals are the same whatever order jobs were
    ingested in (a running float sum is not).
    """
    grouped: defaultdict[int, list[float]] = defaultdict(list)
    for t_inactive, charge in charges:
        grouped[period_of(t_inactive, params)].append(charge)
    return {period: math.fsum(values) for period, values in grouped.items()}


def usage_bins(
    period_charges: Mapping[int, float], current_period: int, params: UsageParams
) -> list[float]:
    """The B+1 raw period totals shown to users, newest first: [R_c, R_{c-1}, ..., R_{c-B}].

    Periods after the current one are not looked at: at time T, a job that ends later than T
    has not happened yet (as-of queries ask about the past with today's records).
    """
    return [
        float(period_charges.get(current_period - age, 0.0)) for age in range(bin_count(params) + 1)
    ]


def decayed_usage(
    period_charges: Mapping[int, float], current_period: int, params: UsageParams
) -> float:
    """usage = R_c + sum_{j=1..B} D**j * R_{c-j}; older periods no longer count."""
    return decay_bins(usage_bins(period_charges, current_period, params), params)


def decay_bins(bins: list[float], params: UsageParams) -> float:
    """The decayed usage of usage_bins()' result."""
    # Each term is one product; fsum adds them correctly rounded, so the result depends on
    # the values only, never on how they were gathered.
    return math.fsum(map(operator.mul, _decay_weights(params.decay_factor, len(bins)), bins))


@functools.lru_cache(maxsize=16)
def _decay_weights(decay_factor: float, count: int) -> tuple[float, ...]:
    """D**age for each bin, worked out once: an update decays a bin list per association
    (10,000 at a large site), and the powers were half of it."""
    return tuple(decay_factor**age for age in range(count))


def usage_at(t: float, period_charges: Mapping[int, float], params: UsageParams) -> float:
    """Decayed usage at time t."""
    return decayed_usage(period_charges, period_of(t, params), params)
