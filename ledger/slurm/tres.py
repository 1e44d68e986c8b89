"""TRES strings as Slurm prints them (`AllocTRES`, `ReqTRES`, `GrpTRES=`...).

`billing=8,cpu=8,mem=16G,node=1,gres/gpu=2,gres/gpu:a100=2`: comma-separated `name=count`.
Slurm prints memory and burst buffer (`mem`, `bb/*`) in MiB converted upwards while exact
(`convert_num_unit(..., UNIT_MEGA, NO_VAL, CONVERT_NUM_UNIT_EXACT)`: `16G`, `3500M`, `2.50G`),
and `fs/*` and `ic/*` from a plain count (`10G` = 10·1024^3). Every other TRES is an integer.
Here every count may carry a unit K/M/G/T/P (either case), scaled to MiB for mem and bb, to 1
for the rest. Names are matched case-insensitively by Slurm and kept lower-cased here.
"""

from __future__ import annotations

import functools
import math
import re

_COUNT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)([KMGTPkmgtp]?)")
_UNITS = "KMGTP"


def tres_base_power(name: str) -> int:
    """The unit a TRES is counted in, as a power of 1024 of `K`=1: 2 (MiB) for mem and bb/*,
    0 (plain) otherwise (`slurmdb_get_tres_base_unit`)."""
    tres_type = name.split("/", 1)[0].lower()
    return 2 if tres_type in ("mem", "bb") else 0


def parse_tres_count(name: str, text: str) -> float:
    """One count, e.g. ('mem', '2.50G') -> 2560.0 (MiB). ValueError if malformed."""
    match = _COUNT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{name}={text!r} is not a count (a number with an optional K/M/G/T/P)")
    number = float(match.group(1))
    if match.group(2):
        number *= 1024.0 ** (_UNITS.index(match.group(2).upper()) + 1 - tres_base_power(name))
    if not math.isfinite(number):
        raise ValueError(f"{name}={text!r} is too large")
    return number


def parse_tres(text: str) -> dict[str, int | float]:
    """A TRES string into {lower-case name: count} (ints where whole); '' gives {}.

    ValueError naming the offending item if one is malformed or a name repeats.
    """
    return dict(_parsed(text))


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> tuple[tuple[str, int | float], ...]:
    """parse_tres's items, once per distinct string: a site's jobs repeat a few node shapes
    (sacct's AllocTRES was a third of reading a line). Immutable, so a caller's dict is its
    own; a refusal is not cached and is raised again."""
    out: dict[str, int | float] = {}
    if not text.strip():
        return ()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip().lower()
        if not sep or not name or any(c.isspace() for c in name):
            raise ValueError(f"TRES item {item!r} is not name=count")
        if name in out:
            raise ValueError(f"TRES {name!r} appears twice in {text!r}")
        count = parse_tres_count(name, value)
        out[name] = int(count) if count.is_integer() else count
    return tuple(out.items())


def format_tres(tres: dict[str, int | float]) -> str:
    """{name: count} back into a TRES string, counts as plain numbers (memory in MiB, no unit)."""
    return ",".join(
        f"{name}={int(count) if float(count).is_integer() else count!r}"
        for name, count in tres.items()
    )
