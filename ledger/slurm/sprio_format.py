"""sprio's output, as Slurm's `sprio` prints it (`src/sprio/sprio.c`, `opts.c`, `print.c`,
`sort.c`, SchedMD snapshot 284c3b95f0). Pure string formatting of PriorityResults.

* The formats are Slurm's format strings, read as `parse_format` reads them: an optional prefix,
  then `%[.][width]<code><suffix>` per field; `.` right-justifies; every field is cut to its
  width (its first characters kept) and padded to it; width 0 neither cuts nor pads.
* Default formats (`sprio.c`): plain `%.15i %9r [%.8u] %.10Y %.10S` then `%.10A %.10B %.10F
  %.10J %.10P %.10Q %.20T` for each factor whose weight is non-zero (`%.8u` with -u only);
  -n `%.15i %9r [%.8u] %10y` then `%10a %10b %10f %10j %10p %10q %20t` likewise; -l and -l -n
  print every column, with USER, ACCOUNT, QOSNAME and NICE (Slurm's long formats, verbatim).
* Numbers: weighted factors `%.0f`; normalized ones (weighted / weight) `%.7f`; PRIORITY `%lld`
  of sprio's own sum of the weighted factors (site and nice included, at least 1, *not* capped
  at 2^32 − 1); -n's PRIORITY that sum over 2^32 − 1 in `%16.14f`; SITE and NICE integers; TRES
  `name=%.0f` (-n: `name=%.2f`) per non-zero TRES term, comma-separated.
* -w prints the header and one `Weights` row, and no job: the weights, SITE's 1, and
  PriorityWeightTRES as written (`(null)` when it is unset, as glibc prints a NULL string).
* Sorting (`-S`): Slurm's keys (i r u o n N, and a/A b f/F j/J p/P q/Q t/T y/Y by the weighted
  value), `-` descending; the last key is sorted first, each sort stable, so the first key
  leads. Default `i` (job id ascending). Doubles compare equal within 1e-5 (`fuzzy_equal`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.errors import InvalidValue
from ledger.slurm_priority import UINT32_MAX, PriorityResult

# glibc prints a NULL `%s` argument so; sprio passes NULL for an unset PriorityWeightTRES and a
# job without a QOS.
NULL_TEXT = "(null)"
WEIGHTS_LABEL = "Weights"
FUZZY_EPSILON = 0.00001  # Slurm's macros.h
DEFAULT_SORT = "i"

LONG_FORMAT = (
    "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N %.20T"
)
LONG_NORMALIZED_FORMAT = "%.15i %9r %.8u %.8o %10y %10a %10b %10f %10j %10p %10n %10q %20t"
# (weight name, plain field, -n field), in the order sprio.c appends them.
_FACTOR_FIELDS = (
    ("age", "%.10A", "%10a"),
    ("assoc", "%.10B", "%10b"),
    ("fairshare", "%.10F", "%10f"),
    ("job_size", "%.10J", "%10j"),
    ("partition", "%.10P", "%10p"),
    ("qos", "%.10Q", "%10q"),
)


@dataclass(frozen=True)
class SprioWeights:
    """What sprio reads from slurm.conf: the six PriorityWeight* values and PriorityWeightTRES
    as written (None when unset: the TRES column is then left out)."""

    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    job_size: int = 0
    partition: int = 0
    qos: int = 0
    tres: str | None = None


@dataclass(frozen=True)
class Field:
    """One `%[.][width]<code>` of a format, and the text after it up to the next `%`."""

    code: str
    width: int
    right: bool
    suffix: str


@dataclass(frozen=True)
class Format:
    prefix: str
    fields: tuple[Field, ...]


def default_format(weights: SprioWeights, *, long: bool, normalized: bool, users: bool) -> str:
    """The format sprio picks when not given one (`-o`), as sprio.c builds it."""
    if long:
        return LONG_NORMALIZED_FORMAT if normalized else LONG_FORMAT
    parts = ["%.15i %9r"]
    if users:
        parts.append("%.8u")
    parts.append("%10y" if normalized else "%.10Y %.10S")
    for name, plain, norm in _FACTOR_FIELDS:
        if getattr(weights, name):
            parts.append(norm if normalized else plain)
    if weights.tres:
        parts.append("%20t" if normalized else "%.20T")
    return " ".join(parts)


def parse_format(text: str) -> Format:
    """A format string as `parse_format`/`_parse_token` read it; InvalidValue for a code sprio
    does not know or one not modelled here (%c cluster, %s SLUID: no federation, no SLUIDs)."""
    prefix, sep, rest = text.partition("%")
    if not sep:
        raise InvalidValue(f"sprio format {text!r} has no %field")
    fields = []
    # strtok: runs of `%` are one separator, so `%%` is no literal percent sign.
    for token in (t for t in rest.split("%") if t):
        i = 0
        right = token.startswith(".")
        if right:
            i += 1
        digits = ""
        while i < len(token) and token[i].isdigit():
            digits += token[i]
            i += 1
        code = token[i : i + 1]
        if code not in _CELLS:
            raise InvalidValue(f"invalid sprio format specification: %{token[: i + 1]}")
        fields.append(Field(code, int(digits or "0"), right, token[i + 1 :]))
    return Format(prefix, tuple(fields))


def render(
    results: Sequence[PriorityResult],
    layout: Format,
    weights: SprioWeights,
    *,
    header: bool = True,
    weights_row: bool = False,
) -> list[str]:
    """The lines sprio prints: the header (unless -h), then the Weights row alone (-w) or one
    line per result, in the order given."""
    lines = []
    if header:
        lines.append(_line(layout, lambda code: _HEADERS[code]))
    if weights_row:
        lines.append(_line(layout, lambda code: _weights_cell(code, weights)))
        return lines
    for result in results:
        lines.append(_line(layout, functools.partial(_job_cell, result, weights)))
    return lines


def sprio_priority(result: PriorityResult) -> float:
    """sprio's PRIORITY (`get_priority_from_factors`): the weighted factors summed in sprio's
    order (the TRES terms last, after site and nice), at least 1; no upper clamp."""
    total = 0.0
    for name in ("AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"):
        total += result.factor(name).weighted
    total = total + result.factor("SITE").weighted + result.factor("NICE").weighted
    for term in _tres_rows(result):
        total += term.weighted
    return max(total, 1.0)


def check_sort(spec: str | None) -> None:
    """InvalidValue naming the first key of `spec` that sprio does not sort by."""
    for code in spec or "":
        if code not in ",+-" and code not in _SORT_KEYS:
            raise InvalidValue(f"invalid sort specification: {code}")


def sort_results(results: Sequence[PriorityResult], spec: str | None) -> list[PriorityResult]:
    """`-S`'s order: each key sorted from the last to the first, each sort stable."""
    spec = DEFAULT_SORT if spec is None else spec
    check_sort(spec)
    rows = list(results)
    for i in range(len(spec) - 1, -1, -1):
        code = spec[i]
        if code in ",+-":
            continue
        descending = i > 0 and spec[i - 1] == "-"
        rows.sort(key=_sort_key(code), reverse=descending)
    return rows


# --- cells ---------------------------------------------------------------------------------------


def _line(layout: Format, text_of: Callable[[str], str]) -> str:
    out = [layout.prefix]
    for f in layout.fields:
        out.append(_fit(text_of(f.code), f.width, f.right))
        out.append(f.suffix)
    return "".join(out)


def _fit(text: str, width: int, right: bool) -> str:
    """`_print_str`: cut to `width` (the first characters kept), then padded to it."""
    if not width:
        return text
    text = text[:width]
    return text.rjust(width) if right else text.ljust(width)


def _int(value: float) -> str:
    return f"{value:.0f}"  # `%.0f`: correctly rounded, ties to even, as glibc


def _norm(value: float) -> str:
    return f"{value:.7f}"


_FACTOR_OF = {
    "a": "AGE",
    "b": "ASSOC",
    "f": "FAIRSHARE",
    "j": "JOBSIZE",
    "p": "PARTITION",
    "q": "QOS",
}
_WEIGHT_OF = {
    "a": "age",
    "b": "assoc",
    "f": "fairshare",
    "j": "job_size",
    "p": "partition",
    "q": "qos",
}
_HEADERS = {
    "i": "JOBID",
    "r": "PARTITION",
    "u": "USER",
    "o": "ACCOUNT",
    "n": "QOSNAME",
    "N": "NICE",
    "S": "SITE",
    "y": "PRIORITY",
    "Y": "PRIORITY",
    "t": "TRES",
    "T": "TRES",
    **{code: name for code, name in _FACTOR_OF.items()},
    **{code.upper(): name for code, name in _FACTOR_OF.items()},
}
_CELLS = frozenset(_HEADERS)


def _tres_rows(result: PriorityResult) -> list[_TresTerm]:
    return [
        _TresTerm(f.name.removeprefix("TRES:"), f.weighted, f.weight)
        for f in result.factors
        if f.name.startswith("TRES:") and f.weighted  # sprio skips a zero term
    ]


@dataclass(frozen=True)
class _TresTerm:
    name: str
    weighted: float
    weight: float


def _job_cell(result: PriorityResult, weights: SprioWeights, code: str) -> str:
    if code in _FACTOR_OF:
        weight = getattr(weights, _WEIGHT_OF[code])
        weighted = result.factor(_FACTOR_OF[code]).weighted
        return _norm(weighted / float(weight) if weight else 0.0)
    if code.lower() in _FACTOR_OF:
        return _int(result.factor(_FACTOR_OF[code.lower()]).weighted)
    if code == "i":
        return str(result.job_id)
    if code == "r":
        return result.partition
    if code == "u":
        return result.user
    if code == "o":
        return result.account
    if code == "n":
        return NULL_TEXT if result.qos is None else result.qos
    if code == "S":
        return _int(result.factor("SITE").weighted)
    if code == "N":
        return _int(result.factor("NICE").value)
    if code == "Y":
        return str(math.trunc(sprio_priority(result)))  # `%lld` of (long long) double
    if code == "y":
        return f"{sprio_priority(result) / float(UINT32_MAX):16.14f}"
    if code == "T":
        return ",".join(f"{t.name}={t.weighted:.0f}" for t in _tres_rows(result))
    assert code == "t"
    return ",".join(f"{t.name}={t.weighted / t.weight:.2f}" for t in _tres_rows(result))


def _weights_cell(code: str, weights: SprioWeights) -> str:
    if code.lower() in _WEIGHT_OF:
        return _int(getattr(weights, _WEIGHT_OF[code.lower()]))
    if code == "i":
        return WEIGHTS_LABEL
    if code == "S":
        return "1"
    if code == "T":
        return NULL_TEXT if weights.tres is None else weights.tres
    return ""


# --- sort keys -----------------------------------------------------------------------------------

_SortKey = Callable[[PriorityResult], "float | int | str"]


def _tres_sum(result: PriorityResult) -> float:
    return sum((f.weighted for f in result.factors if f.name.startswith("TRES:")), 0.0)


def _weighted(name: str) -> _SortKey:
    return lambda r: r.factor(name).weighted


_SORT_KEYS: dict[str, _SortKey] = {
    "i": lambda r: r.job_id,
    "N": lambda r: r.factor("NICE").value,
    "n": lambda r: r.qos or "",
    "o": lambda r: r.account,
    "r": lambda r: r.partition,
    "u": lambda r: r.user,
    **{code: _weighted(name) for code, name in _FACTOR_OF.items() if code != "b"},
    **{code.upper(): _weighted(name) for code, name in _FACTOR_OF.items() if code != "b"},
    "t": _tres_sum,
    "T": _tres_sum,
    "y": sprio_priority,
    "Y": sprio_priority,
}
_TEXT_SORTS = frozenset("inoruN")


def _sort_key(code: str) -> Any:
    key = _SORT_KEYS[code]
    compare = _compare_plain if code in _TEXT_SORTS else _compare_numbers

    def by(a: PriorityResult, b: PriorityResult) -> int:
        return compare(key(a), key(b))

    return functools.cmp_to_key(by)


def _compare_plain(a: float | int | str, b: float | int | str) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


def _compare_numbers(a: float | int | str, b: float | int | str) -> int:
    x, y = float(a), float(b)
    if -FUZZY_EPSILON < x - y < FUZZY_EPSILON:
        return 0
    return -1 if x < y else 1
