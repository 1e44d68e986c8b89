"""Slurm's billable TRES: `TRESBillingWeights` and the billing of a job's allocated TRES.

Reproduces `_tres_weight_item` / `slurm_get_tres_weight_array` (`slurm_protocol_api.c`) and
`assoc_mgr_tres_weighted` (`assoc_mgr.c`) as Slurm 25.05 has them.

Weights (`CPU=1.0,Mem=0.25G,GRES/gpu=2.0`):

* Items are separated by `,` (empty items skipped, as strtok does); each is `type=weight` or
  `type/name=weight`. Type and name are matched case-insensitively, as Slurm's TRES lookup does
  (`xstrcasecmp`), so they are kept lower-cased here: `GRES/GPU` is `gres/gpu`.
* The weight is a decimal number optionally followed by one unit letter K, M, G, T or P (either
  case). The unit rescales the weight from per-unit to per-base-unit: the base unit is MiB for
  `mem` and `bb` (so `Mem=0.25G` is 0.25 per GiB = 0.25/1024 per MiB) and 1 for every other
  TRES (`CPU=2K` is 2/1024 per CPU). A unit at or below the base leaves the weight unchanged
  (`Mem=1M` and, as in Slurm, `Mem=1K`: `get_convert_unit_val` returns 0 then).
* A later item for the same TRES replaces an earlier one.

Billing of a job with allocated TRES counts `{tres: count}` (memory in MiB; the `billing` TRES
itself excluded), each `v = count · weight` (0 for a TRES without weight):

* no weights: the job's CPUs;
* SUM (default): Σ v;
* MAX_TRES: max(v over cpu, mem, node and every gres/*) + Σ v over the rest (licenses, bb, ...);
* MAX_TRES_GRES: Σ v over gres/* + max(v over cpu, mem, node) + Σ v over the rest.

Deliberate differences from Slurm: a weight that is negative, not finite, written in hex, or
followed by more than one unit letter is refused (Slurm's strtod takes `inf`, `0x1p3`, `-2`,
and ignores text after the unit letter); a TRES is not checked against the cluster's configured
TRES (`AccountingStorageTRES`), which this pure code does not know; spaces around items and
around `=` are allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ledger.errors import InvalidValue

UNITS = "KMGTP"
"""Slurm's unit letters, in order: 1024^1 .. 1024^5 of the base unit."""

_MEBI_BASED = frozenset({"mem", "bb"})
_NODE_TRES = frozenset({"cpu", "mem", "node"})
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TRES_TYPE = re.compile(r"[^\s=,/]+")
_TRES_NAME = re.compile(r"[^\s=,]+")


class BillingMode(StrEnum):
    """How weighted TRES combine: `PriorityFlags` MAX_TRES / MAX_TRES_GRES, or neither."""

    SUM = "SUM"
    MAX_TRES = "MAX_TRES"
    MAX_TRES_GRES = "MAX_TRES_GRES"


@dataclass(frozen=True)
class BillingWeights:
    """Weights per TRES, keyed by lower-case `type` or `type/name`, per base unit (MiB for
    memory). `text` is what they were parsed from."""

    weights: Mapping[str, float] = field(default_factory=dict)
    text: str = ""

    def weight(self, tres: str) -> float:
        return self.weights.get(tres.lower(), 0.0)


def parse_billing_weights(text: str | None) -> BillingWeights | None:
    """A partition's `TRESBillingWeights`; None when unset or empty (billing = CPUs).

    Raises InvalidValue with one line naming the first malformed item.
    """
    if text is None or not text.strip():
        return None
    weights: dict[str, float] = {}
    for raw_item in text.split(","):
        item = raw_item.strip()
        if not item:
            continue
        key, weight = _parse_item(item)
        weights[key] = weight
    if not weights:
        return None
    return BillingWeights(weights, text)


def _parse_item(item: str) -> tuple[str, float]:
    def bad(reason: str) -> InvalidValue:
        return InvalidValue(f"TRESBillingWeights: bad weight {item!r}: {reason}")

    name_part, sep, value = item.partition("=")
    name_part, value = name_part.strip(), value.strip()
    if not sep or not name_part:
        raise bad("expected TRES=weight, e.g. CPU=1.0 or GRES/gpu=2.0")
    if not value:
        raise bad("no weight after '='")
    tres_type, slash, tres_name = name_part.partition("/")
    if not _TRES_TYPE.fullmatch(tres_type) or (slash and not _TRES_NAME.fullmatch(tres_name)):
        raise bad(f"{name_part!r} is not a TRES name (type or type/name)")
    key = name_part.lower()
    match = _NUMBER.match(value)
    if match is None:
        raise bad(f"{value!r} is not a number")
    number = float(match.group())
    unit = value[match.end() :]
    if not math.isfinite(number) or number < 0:
        raise bad("the weight must be a finite number >= 0")
    if unit:
        if len(unit) != 1 or unit.upper() not in UNITS:
            raise bad(f"unit {unit!r} is not one of K, M, G, T, P")
        base = 2 if tres_type.lower() in _MEBI_BASED else 0
        power = UNITS.index(unit.upper()) + 1 - base
        if power > 0:
            number /= 1024.0**power
    return key, number


def billable_tres(
    alloc: Mapping[str, float],
    weights: BillingWeights | None,
    mode: BillingMode = BillingMode.SUM,
) -> float:
    """Slurm's `billable_tres` of a job: `alloc` is its allocated TRES (`{"cpu": 8, "mem":
    16384, "node": 1, "gres/gpu": 2}`, memory in MiB; keys in any case). Without weights it is
    the job's CPUs (`alloc["cpu"]`, 0 if absent). The result is the untruncated double that
    fair-share usage uses (Slurm stores `tres_alloc[billing]` truncated)."""
    counts: dict[str, float] = {}
    for key, count in alloc.items():
        if isinstance(count, bool) or not isinstance(count, int | float):
            raise InvalidValue(f"TRES {key!r}: count must be a number, got {count!r}")
        if not math.isfinite(count) or count < 0:
            raise InvalidValue(f"TRES {key!r}: count must be finite and >= 0, got {count!r}")
        counts[key.lower()] = counts.get(key.lower(), 0.0) + float(count)
    if weights is None:
        return counts.get("cpu", 0.0)
    if not isinstance(mode, BillingMode):
        raise InvalidValue(f"billing mode must be a BillingMode, got {mode!r}")
    node_max = 0.0
    gres_sum = 0.0
    global_sum = 0.0
    for key, count in counts.items():
        if key == "billing":
            continue
        value = count * weights.weight(key)
        is_gres = key.split("/", 1)[0] == "gres"
        if mode is not BillingMode.SUM and (key in _NODE_TRES or is_gres):
            if mode is BillingMode.MAX_TRES_GRES and is_gres:
                gres_sum += value
            else:
                node_max = max(node_max, value)
        else:
            global_sum += value
    return node_max + gres_sum + global_sum
