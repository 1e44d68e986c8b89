"""The limits of every value that may enter the ledger, stated once (issue 10).

Events are immutable: a value recorded that a read model cannot hold, or that sends a
calculation into an endless loop, wedges the ledger for good (every later command must first
project it, and fails). So every command checks its values against these limits *before* it
records anything, and a refused value costs one line on stderr and exit 1.

Pure: no I/O and no clock (the present is always an argument).

Integers: the narrowest column a value lands in decides its range.
  - PostgreSQL INTEGER is 32-bit, BIGINT and SQLite INTEGER are 64-bit. Shares, limits, queue
    fields, factor weights, bank and project ids, job node/core/GPU counts: 32-bit signed
    (INT32_MAX = 2147483647 is also flux-accounting's "unlimited" and the width of the
    mf_priority plugin's fields, so anything larger could never reach the scheduler intact).
    Queue priorities and factor weights may be negative (a site ranks a queue last that way);
    everything else is >= 0. User ids are Flux's 32-bit unsigned uid_t.
  - Charges are summed as integers of 1e-5 (CHARGE_UNITS) in BIGINT columns. A job's charge is
    at most JOB_CHARGE_MAX (1e12 resource-seconds: 100,000 nodes for 115 days), and ingest
    refuses a job that would take one job identity's total past ASSOCIATION_CHARGE_UNITS_MAX,
    the most BIGINT can hold (9.2e13 resource-seconds), so every sum of charges (per period,
    after a half-life change regroups periods, in an as-of query) fits.

Floats: never NaN or infinite (JSON cannot carry them, SQL compares them oddly, and one of them
poisons every sum). Bank priorities keep to the queue priority range; resource weights to
[0, CHARGE_WEIGHT_MAX], so weight x count x seconds stays finite before the charge bound
refuses it.

Times (epoch seconds): not before 1970-01-01 (TIME_MIN). A recorded job cannot have ended in the
future: its times are at most the real present + FUTURE_TOLERANCE (one day, for clocks that
disagree across a site and time zones misread once). `--now` keeps to the same bound: the
ledger's clock never runs backwards, so a `--now` ahead of the real clock would stop every later
command that uses the real clock until it caught up. Both are measured against the *real* clock,
not `--now`: an import replaying a past year with `--now` still records jobs up to today. Times
parsed for reading (`--as-of`, `--since`) only need to be printable: TIME_MIN..TIME_MAX.

Decay settings: the half-life is at least HALF_LIFE_MIN (one minute: the accounting cron runs
every few minutes, so shorter periods never hold a job), durations at most DURATION_MAX (a
century), and the past bins B = reset period / half-life at most PAST_BINS_MAX: every usage
update builds B + 1 bins per association, so B is the work an update does and must stay small.
The decay factor lies in (0, 1].

Text: names (bank, user, queue, project, cluster) are 1..NAME_MAX_LENGTH characters; names,
reasons and actors contain no control character (C0 including NUL, newline and ESC; DEL; C1),
no line or paragraph separator, no bidirectional override and no lone surrogate: they would
forge table rows, drive the terminal, or be refused by PostgreSQL or by UTF-8 itself. Such text
is refused on input; `printable()` escapes it on output for ledgers written before these checks.

Exit codes: a value that is not even of the right type (`--shares abc`) is click's usage error,
exit 2; a well-formed value outside these limits is refused by the ledger with a message
`<field> <value> is out of range (<low>..<high>)` (or naming the rule), exit 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from ledger.errors import InvalidValue, OutOfRange

# --- integers ------------------------------------------------------------------------------------
INT32_MIN = -(2**31)  # PostgreSQL INTEGER
INT32_MAX = 2**31 - 1  # PostgreSQL INTEGER; flux-accounting's "unlimited" (limits.UNLIMITED)
INT64_MIN = -(2**63)  # PostgreSQL BIGINT, SQLite INTEGER
INT64_MAX = 2**63 - 1
UINT32_MAX = 2**32 - 1  # Flux user ids

SHARES_MAX = INT32_MAX
LIMIT_MAX = INT32_MAX  # association and queue limits; INT32_MAX itself reads "unlimited"
PRIORITY_MIN, PRIORITY_MAX = INT32_MIN, INT32_MAX  # queue and bank priorities
FACTOR_WEIGHT_MIN, FACTOR_WEIGHT_MAX = INT32_MIN, INT32_MAX
# Slurm's PriorityWeight* and counts such as the cluster's CPUs are uint32.
SLURM_WEIGHT_MAX = UINT32_MAX
ID_MAX = INT32_MAX  # bank_id, project_id: INTEGER columns
USERID_MAX = UINT32_MAX
COUNT_MAX = INT32_MAX  # a job's nnodes, ncores, ngpus
# A Slurm QOS's Priority is a uint32 whose top value is INFINITE (unset): 0..2^32-2, as
# ledger.slurm_priority.QosInfo takes it. BIGINT holds it.
QOS_PRIORITY_MAX = UINT32_MAX - 1

# --- charges -------------------------------------------------------------------------------------
CHARGE_UNITS = 100000  # charges are rounded to 5 decimals and summed as integers of 1e-5
CHARGE_WEIGHT_MAX = 1e6  # node_weight, core_weight, gpu_weight
# A QOS's UsageFactor (a double in Slurm) multiplies a job's charge and billing: kept to the
# resource weights' range, so the product stays finite before the charge bound refuses it.
USAGE_FACTOR_MAX = CHARGE_WEIGHT_MAX
JOB_CHARGE_MAX = 1e12  # one job's charge, in weighted resource-seconds
ASSOCIATION_CHARGE_UNITS_MAX = INT64_MAX  # all of one job identity's charges, in 1e-5 units

# --- times ---------------------------------------------------------------------------------------
TIME_MIN = 0.0  # 1970-01-01T00:00:00Z
TIME_MAX = 253402300799.0  # 9999-12-31T23:59:59Z, the last second a datetime can print
FUTURE_TOLERANCE = 86400.0  # one day ahead of the real clock, for job times and --now

# --- decay settings ------------------------------------------------------------------------------
HALF_LIFE_MIN = 60.0
DURATION_MAX = 100 * 365.25 * 86400.0  # a century, for the half-life and the reset period
PAST_BINS_MAX = 1000

# --- text ----------------------------------------------------------------------------------------
NAME_MAX_LENGTH = 255
TEXT_MAX_LENGTH = 4096  # --reason, --actor
# C0 (NUL, newline, ESC, ...), DEL and C1; line and paragraph separators; bidirectional
# embeddings, overrides and isolates; lone surrogates (UTF-8 cannot encode them).
_REFUSED = "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_NUL_OR_SURROGATE = "[\x00\ud800-\udfff]"


@cache
def _pattern(chars: str) -> re.Pattern[str]:
    """Compiled when first needed: a class spanning the surrogates takes milliseconds to compile,
    paid at every start-up otherwise, and ASCII text never needs it (has_control)."""
    return re.compile(chars)


EXTRA_DEPTH_MAX = 32  # nesting of a job record's unknown fields


def out_of_range(field: str, value: Any, low: Any, high: Any) -> OutOfRange:
    return OutOfRange(f"{field} {value} is out of range ({low}..{high})")


def check_int(field: str, value: Any, low: int, high: int) -> int:
    """`value` as an int within [low, high]; bools and floats with a fraction are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(f"{field} {value!r} is not an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidValue(f"{field} {value!r} is not an integer")
        value = int(value)
    if not low <= value <= high:
        raise out_of_range(field, value, low, high)
    return value


def check_float(field: str, value: Any, low: float, high: float) -> float:
    """`value` as a finite float within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidValue(f"{field} {value!r} is not a number")
    if isinstance(value, int) and not low <= value <= high:
        raise out_of_range(field, value, _number(low), _number(high))
    number = float(value)
    if not math.isfinite(number):
        raise OutOfRange(f"{field} {value} is not a finite number")
    if not low <= number <= high:
        raise out_of_range(field, value, _number(low), _number(high))
    return number


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else str(value)


# --- times ---------------------------------------------------------------------------------------
def latest_time(real_now: float) -> float:
    """The latest time anything may be said to have happened, given the real clock."""
    return real_now + FUTURE_TOLERANCE


def check_time(field: str, value: Any, latest: float | None = None) -> float:
    """A time in [TIME_MIN, TIME_MAX], and with `latest` (latest_time() of the real clock) no
    later than that."""
    seconds = check_float(field, value, -math.inf, math.inf)
    if seconds < TIME_MIN:
        raise OutOfRange(f"{field} {value} is before 1970-01-01 (epoch seconds must be >= 0)")
    if seconds > TIME_MAX:
        raise out_of_range(field, value, _number(TIME_MIN), _number(TIME_MAX))
    if latest is not None and seconds > latest:
        raise OutOfRange(
            f"{field} {value} is in the future (later than {latest_description(latest)})"
        )
    return seconds


def check_requested_now(value: float, real_now: float) -> float:
    """`--now`: the ledger's clock may be set back for imports and tests, but not ahead of the
    real clock, which could then never catch up."""
    return check_time("--now", value, latest_time(real_now))


def latest_description(latest: float) -> str:
    """`latest` as the user reads it: an ISO time, said to be the real clock's tolerance."""
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(min(latest, TIME_MAX), tz=UTC).replace(microsecond=0)
    return f"{moment.isoformat()}, now + {int(FUTURE_TOLERANCE)} s"


# --- charges -------------------------------------------------------------------------------------
def charge_units(charge: float) -> int:
    """A charge as the integer of CHARGE_UNITS that the totals sum."""
    return round(charge * CHARGE_UNITS)


def check_charge(charge: float) -> float:
    if not (math.isfinite(charge) and 0 <= charge <= JOB_CHARGE_MAX):
        raise out_of_range("charge", charge, 0, f"{JOB_CHARGE_MAX:g}")
    return charge


# --- decay settings ------------------------------------------------------------------------------
def check_decay(half_life: float, reset_period: float, decay_factor: float) -> None:
    check_float("priority_decay_half_life", half_life, HALF_LIFE_MIN, DURATION_MAX)
    check_float("priority_usage_reset_period", reset_period, 0.0, DURATION_MAX)
    if reset_period / half_life > PAST_BINS_MAX:
        raise OutOfRange(
            f"priority_usage_reset_period {_number(reset_period)} is more than {PAST_BINS_MAX} "
            f"half-lives ({_number(half_life)} s): too many usage periods to keep"
        )
    if not (math.isfinite(decay_factor) and 0.0 < decay_factor <= 1.0):
        raise OutOfRange(f"invalid decay_factor: {decay_factor} (must be in (0, 1])")


# --- text ----------------------------------------------------------------------------------------
def has_control(text: str) -> bool:
    if text.isascii():  # the refused ASCII characters are exactly those not printable
        return not text.isprintable()
    return _pattern(_REFUSED).search(text) is not None


# Names check_name accepted, whatever their kind (the rules do not depend on it): an ingest
# checks four or more names a job, nearly all of them seen before. Bounded, for a stream of
# names that never repeat.
_ACCEPTED_NAMES: set[str] = set()
ACCEPTED_NAMES_KEPT = 65_536


def check_name(kind: str, name: Any) -> str:
    """A bank, user, queue, project or cluster name: printable, 1..NAME_MAX_LENGTH long."""
    if type(name) is str and name in _ACCEPTED_NAMES:
        return name
    if not isinstance(name, str):
        raise InvalidValue(f"invalid {kind} name: {name!r}")
    if has_control(name):
        raise InvalidValue(f"invalid {kind} name: {printable(repr(name))} (control character)")
    if not 1 <= len(name) <= NAME_MAX_LENGTH:
        raise InvalidValue(
            f"invalid {kind} name: {printable(repr(name[:40]))}{'...' if len(name) > 40 else ''} "
            f"(1 to {NAME_MAX_LENGTH} characters)"
        )
    if type(name) is str and len(_ACCEPTED_NAMES) < ACCEPTED_NAMES_KEPT:
        _ACCEPTED_NAMES.add(name)
    return name


def check_text(kind: str, text: str) -> str:
    """A reason or an actor: one printable line of at most TEXT_MAX_LENGTH characters."""
    if has_control(text):
        raise InvalidValue(f"invalid {kind}: {printable(repr(text[:60]))} (control character)")
    if len(text) > TEXT_MAX_LENGTH:
        raise InvalidValue(f"invalid {kind}: {len(text)} characters (at most {TEXT_MAX_LENGTH})")
    return text


def printable(text: str) -> str:
    """`text` with every character check_name() refuses escaped (`\\x1b`, `\\n`, `\\u202e`),
    so text recorded before these checks cannot drive the terminal or forge a line."""
    if not has_control(text):
        return text
    return _pattern(_REFUSED).sub(_escape, text)


def printable_lines(text: str) -> str:
    """printable() of each line of a multi-line text, keeping its line breaks."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if char in named:
        return named[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# --- a job record's unknown fields ---------------------------------------------------------------
def plain_json_scalar(value: Any) -> bool:
    """Whether check_json_value passes `value` without looking further: None, a bool, an int
    within 64 bits, a finite float, or ASCII text without NUL (a lone surrogate is not ASCII).
    What sacct's records keep beside the counts (a state, a time, a priority) nearly always is."""
    kind = type(value)
    if kind is str:
        return bool(value.isascii()) and "\x00" not in value
    if kind is int:
        return bool(INT64_MIN <= value <= INT64_MAX)
    if kind is float:
        return math.isfinite(value)
    return value is None or kind is bool


def check_json_value(field: str, value: Any) -> None:
    """Unknown fields of a job record are kept in the event and the jobs table as JSON: every
    number finite and within 64 bits, every string free of NUL and lone surrogates (which
    PostgreSQL and UTF-8 refuse), nested at most EXTRA_DEPTH_MAX deep."""
    stack: list[tuple[str, Any, int]] = [(field, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        if depth > EXTRA_DEPTH_MAX:
            raise InvalidValue(f"{where}: nested more than {EXTRA_DEPTH_MAX} deep")
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                raise out_of_range(where, item, INT64_MIN, INT64_MAX)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidValue(f"{where}: {item} is not a finite number")
        elif isinstance(item, str):
            _check_json_string(where, item)
        elif isinstance(item, Mapping):
            for key, child in item.items():
                _check_json_string(where, str(key))
                stack.append((f"{where}.{printable(str(key))[:40]}", child, depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((f"{where}[{n}]", child, depth + 1) for n, child in enumerate(item))
        else:
            raise InvalidValue(f"{where}: {type(item).__name__} is not a JSON value")


def _check_json_string(where: str, text: str) -> None:
    if _pattern(_NUL_OR_SURROGATE).search(text):
        raise InvalidValue(f"{where}: {printable(repr(text[:40]))} holds NUL or a lone surrogate")
