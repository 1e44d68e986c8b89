"""Slurm's decayed raw usage as a closed form over jobs, and its `PriorityUsageResetPeriod`.

Slurm (`priority_multifactor.c: _decay_thread`) charges every running job each
`PriorityCalcPeriod` and multiplies every association's usage by a decay factor in between. In
the limit of a short calc period and with the exact factor 2^(-1/hl), a job billed `b` per second
from `t_start` to `t_end` contributes, at time T >= t_end,

    b · uf · ∫_{t_start}^{t_end} 2^(-(T-t)/hl) dt
        = b · uf · hl/ln2 · (2^(-(T-t_end)/hl) - 2^(-(T-t_start)/hl))

(`uf` the QOS UsageFactor). Here it is evaluated as

    b · uf · hl/ln2 · exp(-(T-t_end)·ln2/hl) · -expm1(-(t_end-t_start)·ln2/hl)

which is the same number without the cancellation of two nearly equal powers (a short job long
ago). Half-life 0 means no decay: `b · uf · (t_end - t_start)`.

* A job still running at T (t_end > T) counts up to T, as Slurm charges running jobs every
  calc period; a job starting after T counts nothing.
* Resets: only job time after the last reset boundary at or before T counts (t_start is clipped
  to the boundary). `last_reset` gives the boundary: local midnight (DAILY), Sunday 00:00
  (WEEKLY), the 1st of the month (MONTHLY), of Jan/Apr/Jul/Oct (QUARTERLY), Jan 1 (YEARLY), in
  an IANA time zone (default UTC), as Slurm's `_next_reset` works in the controller's local time.
* An opening balance (a RawUsage read at t0) decays as `balance · 2^(-(T-t0)/hl)`, is gone after
  a reset boundary later than t0, and stands for all usage before t0: job time before t0 is not
  counted again.

A job fully in the past at T (t_end <= T) is kept as an *anchored term*, which does not depend
on T, so that a site's usage can be carried forward from one update to the next by adding only
the new jobs, and still equal to the bit what a whole recomputation gives:

    term = b · uf · hl/ln2 · -expm1(-(t_end-t_start)·ln2/hl) · 2^((t_end - A)/hl)

with A the anchor of t_end (a multiple of ANCHOR_HALF_LIVES half-lives at or before it, so the
power stays below 2^ANCHOR_HALF_LIVES). Each term is counted in whole units of 2^-UNIT_BITS
billing-seconds (exact for any term above 2^(53-UNIT_BITS), that is every real job), so an
association's sum per anchor is an integer: the same whatever the order or grouping in which the
jobs are added. Its usage at T is then Σ_A (sum_A · 2^-UNIT_BITS) · 2^(-(T-A)/hl), summed with
`math.fsum` together with the jobs still running at T and the opening balance. This differs from
evaluating each job at T by a few units in the last place (the rounding happens in another
order); every path (updates, as-of, rebuild) uses this form, so they all agree exactly.

Where this differs from Slurm (see docs/slurm-formats.md): Slurm's per-second factor is the
first-order `1 - 0.693/hl` and it decays a whole calc period's charge at once; its DAILY and
WEEKLY resets add 86400 s to a local midnight, so they drift by an hour across DST changes.
Here the decay is exact and every boundary is a local midnight.

Pure: no I/O, no clock; the time asked about is always an argument.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ledger.errors import InvalidValue

DEFAULT_HALF_LIFE: float = 604800.0
"""`PriorityDecayHalfLife` default: 7-0 (seven days), in seconds."""

_LN2 = math.log(2.0)


class ResetPeriod(StrEnum):
    """`PriorityUsageResetPeriod` (NOW is a one-off at controller start: not a period)."""

    NONE = "NONE"
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    QUARTERLY = "QUARTERLY"
    YEARLY = "YEARLY"

    @classmethod
    def parse(cls, text: str) -> ResetPeriod:
        """Slurm's names, case-insensitive (`read_config.c` uses strcasecmp)."""
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise InvalidValue(
                f"PriorityUsageResetPeriod {text!r} is not one of {', '.join(cls)}"
            ) from None


@dataclass(frozen=True)
class Charge:
    """One job's billed interval: `billing` per second (Slurm's billable TRES) from `t_start`
    to `t_end` (epoch seconds), times the job QOS's `usage_factor` (0 charges nothing)."""

    billing: float
    t_start: float
    t_end: float
    usage_factor: float = 1.0

    def __post_init__(self) -> None:
        _check_number(self.billing, "billing", minimum=0.0)
        _check_number(self.t_start, "t_start")
        _check_number(self.t_end, "t_end")
        _check_number(self.usage_factor, "usage_factor", minimum=0.0)
        if self.t_end < self.t_start:
            raise InvalidValue(f"t_end {self.t_end!r} is before t_start {self.t_start!r}")


@dataclass(frozen=True)
class OpeningBalance:
    """A raw usage (billing-seconds, Slurm's `usage_raw`) as it stood at time `at`."""

    raw_usage: float
    at: float

    def __post_init__(self) -> None:
        _check_number(self.raw_usage, "opening raw usage", minimum=0.0)
        _check_number(self.at, "opening balance time")


@dataclass(frozen=True)
class DecayParams:
    """`PriorityDecayHalfLife` in seconds (0 = no decay), `PriorityUsageResetPeriod`, and the
    IANA zone the controller's local time is in. As in Slurm's `read_config.c`, half-life 0
    with no reset period is refused: usage would only grow."""

    half_life: float = DEFAULT_HALF_LIFE
    reset_period: ResetPeriod = ResetPeriod.NONE
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        _check_number(self.half_life, "half-life", minimum=0.0)
        if not isinstance(self.reset_period, ResetPeriod):
            raise InvalidValue(f"reset period must be a ResetPeriod, got {self.reset_period!r}")
        zone_of(self.timezone)
        if self.half_life == 0 and self.reset_period is ResetPeriod.NONE:
            raise InvalidValue(
                "half-life 0 (no decay) needs a reset period other than NONE,"
                " or usage only grows (Slurm refuses this configuration too)"
            )


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone `name`; InvalidValue if there is no such zone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise InvalidValue(f"unknown time zone {name!r}") from None


def decay_weight(age: float, half_life: float) -> float:
    """2^(-age/hl): the worth now of one unit of usage recorded `age` s ago (1 if hl is 0)."""
    if half_life == 0:
        return 1.0
    return math.exp(-age * _LN2 / half_life)


def interval_usage(rate: float, t_start: float, t_end: float, at: float, half_life: float) -> float:
    """∫ rate · 2^(-(at-t)/hl) dt over [t_start, t_end] ∩ (-inf, at]; `rate · elapsed` if hl
    is 0. Stable for short intervals long ago (expm1)."""
    end = min(t_end, at)
    if end <= t_start or rate == 0:
        return 0.0
    elapsed = end - t_start
    if half_life == 0:
        return rate * elapsed
    k = _LN2 / half_life
    return rate / k * math.exp(-(at - end) * k) * -math.expm1(-elapsed * k)


ANCHOR_HALF_LIVES = 256
"""Anchors are this many half-lives apart: a term's power 2^((t_end - A)/hl) stays below 2^256,
far from float overflow (2^1024) for any billing rate, and most sites have one anchor."""

UNIT_BITS = 64
"""Anchored terms are counted in units of 2^-64 billing-seconds (an integer: exact sums)."""

_UNITS_PER_SECOND = float(2**UNIT_BITS)
_UNIT_DIVISOR = 2**UNIT_BITS


def anchor_of(t_end: float, half_life: float) -> float:
    """The anchor of a job that ended at `t_end`: the multiple of ANCHOR_HALF_LIVES half-lives
    at or before it (0 with no decay: one anchor)."""
    return Settler(half_life).settle(0.0, t_end, t_end)[0]


def settled_units(rate: float, t_start: float, t_end: float, half_life: float) -> int:
    """A job fully in the past: `rate` per second from `t_start` to `t_end` as its anchored
    term, in whole units of 2^-UNIT_BITS billing-seconds (truncated: below 2^-11 only)."""
    return Settler(half_life).settle(rate, t_start, t_end)[1]


class Settler:
    """settled_units and anchor_of for one half-life, with its constants worked out once: a
    Slurm site's whole reading settles a million jobs."""

    def __init__(self, half_life: float) -> None:
        self.half_life = half_life
        self.k = _LN2 / half_life if half_life else 0.0
        self.width = ANCHOR_HALF_LIVES * half_life

    def settle(self, rate: float, t_start: float, t_end: float) -> tuple[float, int]:
        """(the anchor of `t_end`, the job's anchored term in units): see settled_units."""
        if not self.half_life:
            elapsed = t_end - t_start
            return 0.0, int(rate * elapsed * _UNITS_PER_SECOND) if elapsed > 0 else 0
        anchor = math.floor(t_end / self.width) * self.width
        elapsed = t_end - t_start
        if elapsed <= 0 or rate == 0:
            return anchor, 0
        k = self.k
        grown = math.exp((t_end - anchor) * k)
        return anchor, int(rate / k * -math.expm1(-elapsed * k) * grown * _UNITS_PER_SECOND)


def anchored_parts(
    sums: Mapping[float, int],
    at: float,
    half_life: float,
    weights: dict[float, float] | None = None,
) -> list[float]:
    """Each anchor's exact sum (settled_units) as its decayed usage at `at`: the parts to add
    with math.fsum. An anchor after `at` holds no settled job, so none is asked about.
    `weights`: each anchor's decay_weight at `at`, as worked out so far for this `at` and
    `half_life` (filled in here): a site's associations share their few anchors, and a
    reading decays 10,000 of them."""
    if weights is None:
        weights = {}
    parts = []
    for anchor, units in sums.items():
        if units:
            weight = weights.get(anchor)
            if weight is None:
                weight = weights[anchor] = decay_weight(at - anchor, half_life)
            parts.append(units / _UNIT_DIVISOR * weight)
    return parts


def charge_usage(charge: Charge, at: float, half_life: float, since: float | None = None) -> float:
    """One job's decayed usage at `at`, counting only its time after `since` (a reset boundary
    or an opening balance's time), if given."""
    _check_number(half_life, "half-life", minimum=0.0)
    start = charge.t_start if since is None else max(charge.t_start, since)
    return interval_usage(charge.billing * charge.usage_factor, start, charge.t_end, at, half_life)


def check_span(billing: float, t_start: float, t_end: float) -> None:
    """Refuses, as a Charge would, a span that is not a job's: cheaply, for a million rows."""
    if not (0.0 <= billing < math.inf and -math.inf < t_start <= t_end < math.inf) or isinstance(
        billing, bool
    ):
        Charge(billing, t_start, t_end)  # raises what charge_usage would


def span_usage(
    billing: float,
    t_start: float,
    t_end: float,
    at: float,
    half_life: float,
    since: float | None = None,
) -> float:
    """charge_usage(Charge(billing, t_start, t_end), at, half_life, since), the same arithmetic
    to the bit, without building a Charge: a Slurm site's update reads every recorded job (a
    million), and checking each as a Charge cost a third of it. A span a Charge would refuse is
    refused the same way."""
    check_span(billing, t_start, t_end)
    start = t_start if since is None else max(t_start, since)
    return interval_usage(billing * 1.0, start, t_end, at, half_life)


def usage_at(
    at: float,
    charges: Iterable[Charge],
    params: DecayParams,
    opening: OpeningBalance | None = None,
) -> float:
    """Raw usage at time `at`: the opening balance (if any, decayed, and zero once a reset
    boundary lies after it) plus every charge's decayed usage after the later of the last
    reset boundary and the opening balance's time, the charges that ended by `at` in the
    anchored form (the module's docstring). Summed with `math.fsum`."""
    _check_number(at, "time")
    boundary = last_reset(at, params.reset_period, params.timezone)
    since = boundary
    parts: list[float] = []
    if opening is not None:
        if opening.at > at:
            raise InvalidValue(
                f"the opening balance is at {opening.at!r}, after the time asked about {at!r}"
            )
        since = opening.at if boundary is None else max(boundary, opening.at)
        if boundary is None or opening.at >= boundary:
            parts.append(opening.raw_usage * decay_weight(at - opening.at, params.half_life))
    half_life = params.half_life
    _check_number(half_life, "half-life", minimum=0.0)
    sums: dict[float, int] = {}
    settle = Settler(half_life).settle
    for c in charges:
        start = c.t_start if since is None else max(c.t_start, since)
        rate = c.billing * c.usage_factor
        if c.t_end > at:  # still running: counted up to `at`, settled by a later reading
            parts.append(interval_usage(rate, start, c.t_end, at, half_life))
        else:
            anchor, units = settle(rate, start, c.t_end)
            sums[anchor] = sums.get(anchor, 0) + units
    parts.extend(anchored_parts(sums, at, half_life))
    return math.fsum(parts)


def last_reset(at: float, period: ResetPeriod, timezone: str = "UTC") -> float | None:
    """The last reset boundary at or before `at` (epoch seconds), None for NONE.

    Boundaries are the first instant of a local day in `timezone`: every day (DAILY), Sundays
    (WEEKLY), the 1st of each month (MONTHLY), Jan/Apr/Jul/Oct 1 (QUARTERLY), Jan 1 (YEARLY).
    Where a DST change skips local midnight, the day starts at the change.
    """
    _check_number(at, "time")
    if period is ResetPeriod.NONE:
        return None
    zone = zone_of(timezone)
    day = datetime.fromtimestamp(at, zone).date()
    first = _period_start(day, period)
    boundary = _day_start(first, zone)
    if boundary > at:  # only where midnight repeats in a DST fold: take the period before
        first = _period_start(first - timedelta(days=1), period)
        boundary = _day_start(first, zone)
    return boundary


def reset_boundaries(
    start: float, end: float, period: ResetPeriod, timezone: str = "UTC"
) -> list[float]:
    """Every reset boundary b with start < b <= end, in order (empty for NONE)."""
    out: list[float] = []
    b = last_reset(end, period, timezone)
    while b is not None and b > start:
        out.append(b)
        b = last_reset(b - 1e-3, period, timezone)
    return out[::-1]


def _period_start(day: date, period: ResetPeriod) -> date:
    if period is ResetPeriod.DAILY:
        return day
    if period is ResetPeriod.WEEKLY:
        return day - timedelta(days=(day.weekday() + 1) % 7)  # back to Sunday
    if period is ResetPeriod.MONTHLY:
        return day.replace(day=1)
    if period is ResetPeriod.QUARTERLY:
        return date(day.year, (day.month - 1) // 3 * 3 + 1, 1)
    if period is ResetPeriod.YEARLY:
        return date(day.year, 1, 1)
    raise InvalidValue(f"reset period {period!r} has no boundaries")


def _day_start(day: date, zone: ZoneInfo) -> float:
    """The first instant of local `day`: midnight, or the DST change that skipped it (fold=0
    gives a skipped wall time the offset before the change, which is the change itself)."""
    midnight = datetime(day.year, day.month, day.day, tzinfo=zone)
    return midnight.timestamp()


def _check_number(value: float, what: str, minimum: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise InvalidValue(f"{what} must be finite, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidValue(f"{what} must be >= {minimum:g}, got {value!r}")
