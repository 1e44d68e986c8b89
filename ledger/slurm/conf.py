"""Read a site's slurm.conf for what multifactor priority needs, as Slurm's parser reads it.

Lines (`src/common/parse_config.c`): a `#` not escaped by `\\` starts a comment; an odd number of
trailing backslashes continues the line on the next one; `\\x` becomes `x`. Each line is a run of
`Key=Value` pairs (`Key = "quoted value"` allowed), keys case-insensitive. `NodeName=` and
`PartitionName=` lines are records whose remaining pairs belong to them; `NodeName=DEFAULT` and
`PartitionName=DEFAULT` set defaults for the records after them. `Include` lines are not followed
(this is pure code, it reads no file): they are reported in `ignored`, as is every key this
module does not use. A line that is not `Key=Value` pairs, or a value Slurm would refuse, raises
InvalidValue naming the line number and text.

Values (`parse_value.c`, `parse_time.c`, `read_config.c`): uint32/uint16 as `strtoul(…, 0)`
(so `0x10` and `010` are 16 and 8), a `k` suffix ×1024 on uint32, `UNLIMITED`/`INFINITE` as
INFINITE, negatives refused; booleans YES/UP/TRUE/1 and NO/DOWN/FALSE/0; times as
`time_str2mins`: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`, seconds rounded *up* to
minutes, and PriorityMaxAge / PriorityDecayHalfLife = minutes × 60 in a uint32 (so UNLIMITED,
INFINITE = −1 minutes, becomes 4294967236 s).

Totals: a partition's TRES are the sums over its nodes (`cpu`, `mem` in MiB, `gres/<name>` and
`gres/<name>:<type>`) and `node` = its node count; the cluster's counts every node once, however
many partitions hold it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ledger.errors import InvalidValue
from ledger.slurm_priority import (
    DEFAULT_PRIORITY_DECAY,
    INFINITE,
    PART_PRIORITY_MAX,
    UINT16_MAX,
    UINT32_MAX,
    ClusterSize,
    PartitionInfo,
    PriorityConfig,
    PriorityFlags,
    PriorityWeights,
    QosInfo,
    parse_priority_flags,
    parse_tres_weights,
)

NO_VAL = 0xFFFFFFFE
INFINITE16 = 0xFFFF
DEFAULT_CALC_PERIOD = 300
RESET_PERIODS = ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")

# The keyvalue_pattern of parse_config.c, in Python syntax.
_PAIR = re.compile(r'\s*([A-Za-z0-9_.]+)\s*([-*+/]?)=\s*(?:"([^"]*)"|(\S+))(?:\s|$)')
_INCLUDE = re.compile(r"^\s*include\s+(\S.*?)\s*$", re.IGNORECASE)

_PRIORITY_KEYS = {
    "prioritytype",
    "priorityweightage",
    "priorityweightassoc",
    "priorityweightfairshare",
    "priorityweightjobsize",
    "priorityweightpartition",
    "priorityweightqos",
    "priorityweighttres",
    "prioritymaxage",
    "priorityfavorsmall",
    "priorityflags",
    "prioritydecayhalflife",
    "priorityusageresetperiod",
    "prioritycalcperiod",
    "fairsharedampeningfactor",
}
_NODE_KEYS = {
    "nodename",
    "cpus",
    "realmemory",
    "gres",
    "boards",
    "socketsperboard",
    "sockets",
    "corespersocket",
    "threadspercore",
}
_PART_KEYS = {
    "partitionname",
    "nodes",
    "priorityjobfactor",
    "prioritytier",
    "priority",
    "tresbillingweights",
    "qos",
    "default",
    "maxtime",
}


@dataclass(frozen=True)
class Ignored:
    """Something of slurm.conf this module does not use: line number, the key (or `Include`)."""

    line: int
    key: str
    text: str


@dataclass(frozen=True)
class Setting:
    """A priority key as the file gave it: its line, the value as written, the line's text (an
    importer names the line it refuses, and keeps a value such as PriorityWeightTRES's `Mem=1G`
    as written)."""

    line: int
    value: str
    text: str


@dataclass(frozen=True)
class NodeConf:
    """One node: CPUs (given, else boards·sockets·cores·threads), RealMemory in MiB, GRES counts
    keyed `gpu` and `gpu:a100` (the untyped key holds the sum of the typed ones)."""

    name: str
    cpus: int
    real_memory: int
    gres: dict[str, int]
    line: int


@dataclass(frozen=True)
class PartitionConf:
    name: str
    nodes: tuple[str, ...]
    priority_job_factor: int
    priority_tier: int
    tres_billing_weights: str | None
    qos: str | None
    default: bool
    max_time: int | None  # minutes; None = UNLIMITED
    tres_totals: dict[str, int]
    line: int

    def info(self) -> PartitionInfo:
        return PartitionInfo(
            name=self.name,
            priority_job_factor=self.priority_job_factor,
            priority_tier=self.priority_tier,
            tres_totals=dict(self.tres_totals),
            max_time=self.max_time,
        )


@dataclass(frozen=True)
class SlurmConf:
    priority_type: str
    priority: PriorityConfig
    decay_half_life: int  # seconds; 0 = no decay
    usage_reset_period: str  # one of RESET_PERIODS
    calc_period: int  # seconds
    dampening_factor: int
    nodes: tuple[NodeConf, ...]
    partitions: tuple[PartitionConf, ...]
    cluster: ClusterSize
    cluster_tres: dict[str, int]
    ignored: tuple[Ignored, ...] = field(default=())
    settings: dict[str, Setting] = field(default_factory=dict)  # by lower-case key

    def partition_infos(self) -> tuple[PartitionInfo, ...]:
        return tuple(part.info() for part in self.partitions)

    @property
    def default_partition(self) -> PartitionConf | None:
        """The last partition with Default=YES (Slurm keeps the last one it reads)."""
        found = None
        for part in self.partitions:
            if part.default:
                found = part
        return found


# --- values -------------------------------------------------------------------------------------


def time_str2secs(text: str) -> int:
    """Slurm's `time_str2secs`: INFINITE for -1/INFINITE/UNLIMITED, NO_VAL if malformed."""
    if not text:
        return NO_VAL
    if text.upper() in ("-1", "INFINITE", "UNLIMITED"):
        return INFINITE
    if not _is_valid_timespec(text):
        return NO_VAL
    days = hours = minutes = seconds = 0
    if "-" in text:
        parts = _scan_ints(text, "-::")
        days, hours, minutes, seconds = (parts + [0, 0, 0, 0])[:4]
        return days * 86400 + hours * 3600 + minutes * 60 + seconds
    parts = _scan_ints(text, "::")
    if len(parts) == 3:
        hours, minutes, seconds = parts
        return hours * 3600 + minutes * 60 + seconds
    # minutes[:seconds]
    minutes, seconds = (parts + [0, 0])[:2]
    return minutes * 60 + seconds


def time_str2mins(text: str) -> int:
    """Slurm's `time_str2mins`: seconds rounded up to whole minutes (INFINITE, NO_VAL kept)."""
    secs = time_str2secs(text)
    if secs in (INFINITE, NO_VAL):
        return secs
    return _c_div(secs + 59, 60)


def duration_seconds(key: str, text: str) -> int:
    """PriorityMaxAge / PriorityDecayHalfLife: `time_str2mins(text) * 60` stored in a uint32."""
    minutes = _as_c_int(time_str2mins(text))
    if minutes < 0 and minutes != -1:
        raise InvalidValue(f'Bad value "{text}" for {key}')
    return (minutes * 60) & UINT32_MAX


def parse_uint(key: str, text: str, bits: int = 32) -> int:
    """`s_p_handle_uint32` / `_uint16`: strtoul base 0, `k` suffix (uint32 only), UNLIMITED."""
    high = UINT32_MAX if bits == 32 else UINT16_MAX
    value = text.strip()
    number, rest = _strtoul(value)
    if bits == 32 and rest[:1] in ("k", "K"):
        number = None if number is None else number * 1024
        rest = rest[1:]
    if number is None or rest:
        if value.upper() in ("UNLIMITED", "INFINITE"):
            return INFINITE if bits == 32 else INFINITE16
        raise InvalidValue(f"{key} value ({text}) is not a valid number")
    if value.startswith("-"):
        raise InvalidValue(f"{key} value ({text}) is less than zero")
    if number > high:
        raise InvalidValue(f"{key} value ({text}) is greater than {high}")
    return number


def parse_bool(key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in ("yes", "up", "true", "1"):
        return True
    if lowered in ("no", "down", "false", "0"):
        return False
    raise InvalidValue(f'"{text}" is not a valid option for "{key}"')


# --- hostlists ----------------------------------------------------------------------------------


def expand_hostlist(text: str) -> tuple[str, ...]:
    """`n[001-100]`, `gpu[01-04,07]`, `r[1-2]-n[01-02]`, `a,b[1-3]` → host names, in order.

    Zero padding follows the low bound's width (`[08-10]` → 08, 09, 10). Several bracket groups in
    one name expand as their product, the last varying fastest.
    """
    hosts: list[str] = []
    for item in _split_top_level(text):
        if not item:
            raise InvalidValue(f"invalid hostlist {text!r}: empty name")
        hosts.extend(_expand_one(item, text))
    return tuple(hosts)


def _expand_one(item: str, whole: str) -> list[str]:
    start = item.find("[")
    if start < 0:
        if "]" in item:
            raise InvalidValue(f"invalid hostlist {whole!r}: unbalanced ']'")
        return [item]
    end = item.find("]", start)
    if end < 0:
        raise InvalidValue(f"invalid hostlist {whole!r}: unbalanced '['")
    prefix, body, suffix = item[:start], item[start + 1 : end], item[end + 1 :]
    if "]" in prefix or "[" in body:
        raise InvalidValue(f"invalid hostlist {whole!r}")
    tails = _expand_one(suffix, whole) if suffix else [""]
    names: list[str] = []
    for number in _expand_range_body(body, whole):
        names.extend(prefix + number + tail for tail in tails)
    return names


def _expand_range_body(body: str, whole: str) -> Iterator[str]:
    for part in body.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not match:
            raise InvalidValue(f"invalid hostlist {whole!r}: bad range {part!r}")
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = int(high_text) if high_text is not None else low
        if high < low:
            raise InvalidValue(f"invalid hostlist {whole!r}: range {part!r} runs backwards")
        if high - low > 1_000_000:
            raise InvalidValue(f"invalid hostlist {whole!r}: range {part!r} is too large")
        width = len(low_text)
        for number in range(low, high + 1):
            yield str(number).zfill(width)


def _split_top_level(text: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    items.append("".join(current).strip())
    return items


# --- the file -----------------------------------------------------------------------------------


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first physical line number, text) per logical line: comments cut, continuations joined,
    escapes removed — `_get_next_line` of parse_config.c."""
    buffer: list[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not buffer:
            first = number
        line = _strip_comment(raw)
        stripped, continued = _strip_continuation(line)
        buffer.append(stripped)
        if continued:
            continue
        yield first, _strip_escapes("".join(buffer))
        buffer = []
    if buffer:
        yield first, _strip_escapes("".join(buffer))


def parse_slurm_conf(text: str) -> SlurmConf:
    """Everything priority needs from a slurm.conf text; see the module docstring."""
    scalars: dict[str, tuple[int, str, str]] = {}  # key → (line, value, line text)
    ignored: list[Ignored] = []
    node_lines: list[tuple[int, str, list[tuple[str, str]]]] = []
    part_lines: list[tuple[int, str, list[tuple[str, str]]]] = []
    for number, line in logical_lines(text):
        if not line.strip():
            continue
        include = _INCLUDE.match(line)
        if include and "=" not in line.split()[0]:
            ignored.append(Ignored(number, "Include", line.strip()))
            continue
        pairs = _pairs(number, line)
        first = pairs[0][0].lower()
        if first == "nodename":
            node_lines.append((number, line.strip(), pairs))
        elif first == "partitionname":
            part_lines.append((number, line.strip(), pairs))
        else:
            for key, value in pairs:
                if key.lower() in _PRIORITY_KEYS:
                    scalars[key.lower()] = (number, value, line.strip())
                else:
                    ignored.append(Ignored(number, key, line.strip()))
    nodes = _nodes(node_lines, ignored)
    partitions = _partitions(part_lines, nodes, ignored)
    return _assemble(scalars, nodes, partitions, ignored)


def parse_qos_dump(text: str) -> tuple[QosInfo, ...]:
    """The `QOS - 'name':...:Priority=N:UsageFactor=F` lines of a `sacctmgr dump` file.

    Other lines are skipped. Fields are `:`-separated outside quotes, keys case-insensitive;
    Priority (absent = 0), UsageFactor (absent = 1) and Flags are read, the rest ignored.
    """
    found: list[QosInfo] = []
    for number, line in logical_lines(text):
        stripped = line.strip()
        if not re.match(r"(?i)^qos\s*-\s*", stripped):
            continue
        fields = _split_dump_fields(stripped)
        name = _unquote(re.sub(r"(?i)^qos\s*-\s*", "", fields[0]))
        priority, usage_factor = 0, 1.0
        flags: tuple[str, ...] = ()
        for item in fields[1:]:
            key, sep, value = item.partition("=")
            key, value = key.strip().lower(), _unquote(value.strip())
            if not sep:
                raise InvalidValue(f"line {number}: {stripped!r}: field {item!r} has no '='")
            try:
                if key == "priority":
                    priority = parse_uint("Priority", value)
                elif key == "usagefactor":
                    usage_factor = float(value)
                elif key == "flags":
                    flags = tuple(f for f in value.split(",") if f)
            except (InvalidValue, ValueError) as error:
                raise InvalidValue(f"line {number}: {stripped!r}: {error}") from None
        if not name:
            raise InvalidValue(f"line {number}: {stripped!r}: QOS without a name")
        found.append(QosInfo(name, priority, usage_factor, flags))
    return tuple(found)


# --- internals ----------------------------------------------------------------------------------


def _pairs(number: int, line: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    rest = line
    while rest.strip():
        match = _PAIR.match(rest)
        if not match:
            raise InvalidValue(f"line {number}: {line.strip()!r} is not Key=Value pairs")
        if match.group(2):
            raise InvalidValue(
                f"line {number}: {line.strip()!r}: operator '{match.group(2)}='"
                " is not allowed in slurm.conf"
            )
        value = match.group(3) if match.group(3) is not None else match.group(4)
        pairs.append((match.group(1), value))
        rest = rest[match.end() :]
    return pairs


def _nodes(
    lines: list[tuple[int, str, list[tuple[str, str]]]], ignored: list[Ignored]
) -> dict[str, NodeConf]:
    nodes: dict[str, NodeConf] = {}
    defaults: dict[str, str] = {}
    for number, text, pairs in lines:
        values = {k.lower(): v for k, v in pairs}
        for key, _ in pairs:
            if key.lower() not in _NODE_KEYS:
                ignored.append(Ignored(number, key, text))
        names = values["nodename"]
        if names.upper() == "DEFAULT":
            defaults.update({k: v for k, v in values.items() if k != "nodename"})
            continue
        merged = {**defaults, **values}
        try:
            cpus = _node_cpus(merged)
            memory = parse_uint("RealMemory", merged.get("realmemory", "1"))
            gres = _parse_gres(merged.get("gres", ""))
            hosts = expand_hostlist(names)
        except InvalidValue as error:
            raise InvalidValue(f"line {number}: {text!r}: {error}") from None
        for host in hosts:
            if host in nodes:
                raise InvalidValue(f"line {number}: {text!r}: node {host} is defined twice")
            nodes[host] = NodeConf(host, cpus, memory, gres, number)
    return nodes


def _node_cpus(values: dict[str, str]) -> int:
    if "cpus" in values:
        return parse_uint("CPUs", values["cpus"], bits=16)
    product = 1
    for key in ("boards", "sockets", "corespersocket", "threadspercore"):
        if key in values:
            product *= parse_uint(key, values[key], bits=16)
    if "socketsperboard" in values and "sockets" not in values:
        product *= parse_uint("SocketsPerBoard", values["socketsperboard"], bits=16)
    return product


def _parse_gres(text: str) -> dict[str, int]:
    """`gpu:4`, `gpu:a100:4`, `gpu:a100:4(S:0-1)`, `gpu:a100:no_consume:2`, `mps:100`, lists."""
    counts: dict[str, int] = {}
    if not text or text.lower() == "(null)":
        return counts
    for item in _split_top_level(re.sub(r"\([^)]*\)", "", text)):
        fields = [f for f in item.split(":") if f.lower() != "no_consume"]
        if not fields or not fields[0]:
            raise InvalidValue(f"invalid Gres {text!r}")
        name, gtype, count = fields[0], None, 1
        if len(fields) >= 2:
            count_text = fields[-1]
            if re.fullmatch(r"\d+[KMGTP]?", count_text, re.IGNORECASE):
                count = _gres_count(count_text)
                if len(fields) == 3:
                    gtype = fields[1]
                elif len(fields) > 3:
                    raise InvalidValue(f"invalid Gres {item!r}")
            elif len(fields) == 2:
                gtype = fields[1]
            else:
                raise InvalidValue(f"invalid Gres count in {item!r}")
        counts[name] = counts.get(name, 0) + count
        if gtype:
            key = f"{name}:{gtype}"
            counts[key] = counts.get(key, 0) + count
    return counts


def _gres_count(text: str) -> int:
    suffix = text[-1].upper()
    if suffix.isdigit():
        return int(text)
    return int(text[:-1]) * 1024 ** ("KMGTP".index(suffix) + 1)


def _partitions(
    lines: list[tuple[int, str, list[tuple[str, str]]]],
    nodes: dict[str, NodeConf],
    ignored: list[Ignored],
) -> tuple[PartitionConf, ...]:
    parts: dict[str, PartitionConf] = {}
    defaults: dict[str, str] = {}
    for number, text, pairs in lines:
        values = {k.lower(): v for k, v in pairs}
        for key, _ in pairs:
            if key.lower() not in _PART_KEYS:
                ignored.append(Ignored(number, key, text))
        name = values["partitionname"]
        if name.upper() == "DEFAULT":
            defaults.update({k: v for k, v in values.items() if k != "partitionname"})
            continue
        if name in parts:
            raise InvalidValue(f"line {number}: {text!r}: partition {name} is defined twice")
        merged = {**defaults, **values}
        try:
            parts[name] = _partition(name, merged, nodes, number)
        except InvalidValue as error:
            raise InvalidValue(f"line {number}: {text!r}: {error}") from None
    return tuple(parts.values())


def _partition(
    name: str, values: dict[str, str], nodes: dict[str, NodeConf], number: int
) -> PartitionConf:
    node_text = values.get("nodes", "")
    if node_text.upper() == "ALL":
        members = tuple(nodes)
    elif node_text:
        members = expand_hostlist(node_text)
        unknown = [host for host in members if host not in nodes]
        if unknown:
            raise InvalidValue(f"partition {name} names unknown node {unknown[0]}")
        members = tuple(dict.fromkeys(members))
    else:
        members = ()
    # `Priority=` is the old spelling: it sets both PriorityJobFactor and PriorityTier.
    legacy = values.get("priority")
    job_factor = _part_uint16("PriorityJobFactor", values.get("priorityjobfactor", legacy))
    tier = _part_uint16("PriorityTier", values.get("prioritytier", legacy))
    max_time = None
    if "maxtime" in values:
        minutes = time_str2mins(values["maxtime"])
        if minutes == NO_VAL or (minutes != INFINITE and _as_c_int(minutes) < 0):
            raise InvalidValue(f"invalid MaxTime {values['maxtime']!r}")
        max_time = None if minutes == INFINITE else minutes
    return PartitionConf(
        name=name,
        nodes=members,
        priority_job_factor=job_factor,
        priority_tier=tier,
        tres_billing_weights=values.get("tresbillingweights"),
        qos=values.get("qos"),
        default=parse_bool("Default", values["default"]) if "default" in values else False,
        max_time=max_time,
        tres_totals=_tres_totals(nodes[host] for host in members),
        line=number,
    )


def _part_uint16(key: str, text: str | None) -> int:
    if text is None:
        return 1
    value = parse_uint(key, text, bits=16)
    if value > PART_PRIORITY_MAX:
        raise InvalidValue(f"{key} value ({text}) is greater than {PART_PRIORITY_MAX}")
    return value


def _tres_totals(nodes: Iterator[NodeConf] | tuple[NodeConf, ...]) -> dict[str, int]:
    totals = {"cpu": 0, "mem": 0, "node": 0}
    for node in nodes:
        totals["cpu"] += node.cpus
        totals["mem"] += node.real_memory
        totals["node"] += 1
        for gres, count in node.gres.items():
            totals[f"gres/{gres}"] = totals.get(f"gres/{gres}", 0) + count
    return totals


def _assemble(
    scalars: dict[str, tuple[int, str, str]],
    nodes: dict[str, NodeConf],
    partitions: tuple[PartitionConf, ...],
    ignored: list[Ignored],
) -> SlurmConf:
    def get(key: str) -> str | None:
        return scalars[key][1] if key in scalars else None

    def checked(key: str, convert):  # type: ignore[no-untyped-def]
        number, value, text = scalars[key]
        try:
            return convert(value)
        except InvalidValue as error:
            raise InvalidValue(f"line {number}: {text!r}: {error}") from None

    def weight(key: str, name: str) -> int:
        return checked(key, lambda v: parse_uint(name, v)) if key in scalars else 0

    weights = PriorityWeights(
        age=weight("priorityweightage", "PriorityWeightAge"),
        assoc=weight("priorityweightassoc", "PriorityWeightAssoc"),
        fairshare=weight("priorityweightfairshare", "PriorityWeightFairshare"),
        job_size=weight("priorityweightjobsize", "PriorityWeightJobSize"),
        partition=weight("priorityweightpartition", "PriorityWeightPartition"),
        qos=weight("priorityweightqos", "PriorityWeightQOS"),
        tres=checked("priorityweighttres", parse_tres_weights)
        if "priorityweighttres" in scalars
        else (),
    )
    max_age = (
        checked("prioritymaxage", lambda v: duration_seconds("PriorityMaxAge", v))
        if "prioritymaxage" in scalars
        else DEFAULT_PRIORITY_DECAY
    )
    decay = (
        checked("prioritydecayhalflife", lambda v: duration_seconds("PriorityDecayHalfLife", v))
        if "prioritydecayhalflife" in scalars
        else DEFAULT_PRIORITY_DECAY
    )
    calc_period = DEFAULT_CALC_PERIOD
    if "prioritycalcperiod" in scalars:
        calc_period = checked("prioritycalcperiod", _calc_period)
    favor_small = (
        checked("priorityfavorsmall", lambda v: parse_bool("PriorityFavorSmall", v))
        if "priorityfavorsmall" in scalars
        else False
    )
    flags: PriorityFlags = parse_priority_flags(get("priorityflags"))
    reset = "NONE"
    if "priorityusageresetperiod" in scalars:
        reset = checked("priorityusageresetperiod", _reset_period)
    elif decay == 0:
        raise InvalidValue(
            "PriorityDecayHalfLife=0 needs a PriorityUsageResetPeriod, or usage rolls over"
        )
    damp = (
        checked("fairsharedampeningfactor", lambda v: parse_uint("FairShareDampeningFactor", v, 16))
        if "fairsharedampeningfactor" in scalars
        else 1
    )
    all_nodes = tuple(nodes.values())
    cluster_tres = _tres_totals(all_nodes)
    return SlurmConf(
        priority_type=get("prioritytype") or "priority/multifactor",
        priority=PriorityConfig(weights, max_age, favor_small, flags),
        decay_half_life=decay,
        usage_reset_period=reset,
        calc_period=calc_period,
        dampening_factor=damp,
        nodes=all_nodes,
        partitions=partitions,
        cluster=ClusterSize(nodes=len(all_nodes), cpus=cluster_tres["cpu"]),
        cluster_tres=cluster_tres,
        ignored=tuple(sorted(ignored, key=lambda item: item.line)),
        settings={key: Setting(*given) for key, given in scalars.items()},
    )


def _calc_period(text: str) -> int:
    minutes = _as_c_int(time_str2mins(text))
    if minutes < 1:
        raise InvalidValue(f'Bad value "{text}" for PriorityCalcPeriod')
    return minutes * 60


def _reset_period(text: str) -> str:
    if text.upper() not in RESET_PERIODS:
        raise InvalidValue(f'Bad value "{text}" for PriorityUsageResetPeriod')
    return text.upper()


def _strip_comment(line: str) -> str:
    backslashes = 0
    for index, char in enumerate(line):
        if char == "#" and backslashes % 2 == 0:
            return line[:index]
        backslashes = backslashes + 1 if char == "\\" else 0
    return line


def _strip_continuation(line: str) -> tuple[str, bool]:
    body = line.rstrip()
    count = len(body) - len(body.rstrip("\\"))
    if count % 2 == 1:
        return body[:-1], True
    return line, False


def _strip_escapes(line: str) -> str:
    return re.sub(r"\\(.)", r"\1", line).rstrip("\\")


def _strtoul(text: str) -> tuple[int | None, str]:
    """The digits strtoul(…, 0) consumes: 0x… hex, 0… octal, else decimal; (None, text) if none."""
    body = text.lstrip()
    sign = ""
    if body[:1] in "+-" and body:
        sign, body = body[0], body[1:]
    if re.match(r"0[xX][0-9a-fA-F]", body):
        match = re.match(r"0[xX]([0-9a-fA-F]+)", body)
        assert match
        number, rest = int(match.group(1), 16), body[match.end() :]
    elif body.startswith("0"):
        match = re.match(r"0[0-7]*", body)
        assert match
        number, rest = int(match.group(0), 8), body[match.end() :]
    else:
        match = re.match(r"\d+", body)
        if not match:
            return None, text
        number, rest = int(match.group(0)), body[match.end() :]
    if sign == "-" and number:
        number = -number
    return number, rest


def _scan_ints(text: str, separators: str) -> list[int]:
    """sscanf("%d<sep>%d<sep>...") : the integers read before the first mismatch."""
    values: list[int] = []
    rest = text
    for index in range(len(separators) + 1):
        match = re.match(r"\s*([-+]?\d+)", rest)
        if not match:
            break
        values.append(int(match.group(1)))
        rest = rest[match.end() :]
        if index < len(separators):
            if not rest.startswith(separators[index]):
                break
            rest = rest[1:]
    return values


def _is_valid_timespec(text: str) -> bool:
    digit = dash = colon = 0
    in_digits = False
    for char in text:
        if char.isdigit() and char.isascii():
            if not in_digits:
                digit += 1
                in_digits = True
        elif char == "-":
            in_digits = False
            dash += 1
            if colon:
                return False
        elif char == ":":
            in_digits = False
            colon += 1
        else:
            return False
    if not digit or dash > 1 or colon > 2:
        return False
    needed = {1: 3, 2: 4} if dash else {1: 2, 2: 3}
    return not (colon in needed and digit < needed[colon])


def _as_c_int(value: int) -> int:
    """A uint32 read back as a C int (INFINITE → −1, NO_VAL → −2)."""
    value &= UINT32_MAX
    return value - (1 << 32) if value >= 1 << 31 else value


def _c_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def _split_dump_fields(line: str) -> list[str]:
    fields: list[str] = []
    current: list[str] = []
    quote = ""
    for char in line:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == ":":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    fields.append("".join(current))
    return [f.strip() for f in fields]


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


__all__ = [
    "Ignored",
    "NodeConf",
    "PartitionConf",
    "Setting",
    "SlurmConf",
    "duration_seconds",
    "expand_hostlist",
    "logical_lines",
    "parse_bool",
    "parse_qos_dump",
    "parse_slurm_conf",
    "parse_uint",
    "time_str2mins",
    "time_str2secs",
]
