"""Slurm's multifactor job priority (priority/multifactor), as pure code.

Reproduces `_get_priority_internal` and `set_priority_factors` of Slurm's
`src/plugins/priority/multifactor/priority_multifactor.c` (SchedMD snapshot 284c3b95f0) for one
pending job in one (partition, QOS):

    prio = Wage·age + Wassoc·assoc + Wfs·fs + Wjs·js + Wpart·part + Wqos·qos + Σ Wtres[i]·tres[i]
           + site − nice
    prio = max(prio, 1)                # 0 is reserved for held jobs
    prio = min(prio, 2^32 − 1)         # Slurm logs "exceeds 32 bits"
    priority = (uint32) prio           # truncated toward zero, not rounded

Types and order, as Slurm has them:

* the six scalar weights are uint32; every factor is a C double; each weighted term is
  `factor * (double) weight`; the TRES weights are doubles (negatives allowed);
* the sum is one double expression evaluated left to right in the order above; the site factor and
  nice are integers stored with `NICE_OFFSET` (2^31) added, and enter the sum as
  `(double)((int64) stored − NICE_OFFSET)`, i.e. exactly;
* the clamp compares the double with 1, then the value truncated to uint64 with 2^32 − 1; the
  result is the double truncated to uint32.

A factor whose weight is 0 is not computed at all (Slurm skips it), so it shows as 0.0 in the
result, as it does in `sprio -n`. Everything is pure: time enters as `now` (Unix seconds).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ledger.bounds import INT32_MAX
from ledger.errors import InvalidValue

NICE_OFFSET = 0x80000000
# Slurm refuses |nice| and |SiteFactor| above NICE_OFFSET − 3 (slurm_opt.c, scontrol).
NICE_LIMIT = NICE_OFFSET - 3
UINT16_MAX = 0xFFFF
UINT32_MAX = 0xFFFFFFFF
INFINITE = UINT32_MAX  # Slurm's INFINITE (unset limit, UNLIMITED time)
PRIORITY_MAX = UINT32_MAX
PRIORITY_MIN = 1  # 0 is a held job
# Partition PriorityJobFactor is a uint16 whose top values are reserved (docs/slurm-priority.md).
PART_PRIORITY_MAX = 65533
# PriorityMaxAge/PriorityDecayHalfLife default: 7-0, in seconds.
DEFAULT_PRIORITY_DECAY = 604800

# The fixed TRES of Slurm's TRES array (TRES_ARRAY_CPU .. TRES_ARRAY_PAGES), in array order: the
# TRES terms are summed in this order, then every other TRES in the order its weight was given.
STATIC_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")
# Base unit of a TRES weight's K/M/G/T/P suffix: memory and burst buffers count in MiB.
_UNIT_INDEX = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_MEGA_BASED_TYPES = ("mem", "bb")


class PriorityFlags(enum.Flag):
    """`PriorityFlags` of slurm.conf (`PRIORITY_FLAGS_*`); FAIR_TREE is set by default."""

    NONE = 0
    ACCRUE_ALWAYS = enum.auto()
    SMALL_RELATIVE_TO_TIME = enum.auto()  # Slurm's PRIORITY_FLAGS_SIZE_RELATIVE
    CALCULATE_RUNNING = enum.auto()
    DEPTH_OBLIVIOUS = enum.auto()
    FAIR_TREE = enum.auto()
    INCR_ONLY = enum.auto()
    MAX_TRES = enum.auto()
    MAX_TRES_GRES = enum.auto()
    NO_NORMAL_ASSOC = enum.auto()
    NO_NORMAL_PART = enum.auto()
    NO_NORMAL_QOS = enum.auto()
    NO_NORMAL_TRES = enum.auto()


NO_NORMAL_ALL = (
    PriorityFlags.NO_NORMAL_ASSOC
    | PriorityFlags.NO_NORMAL_PART
    | PriorityFlags.NO_NORMAL_QOS
    | PriorityFlags.NO_NORMAL_TRES
)


def parse_priority_flags(text: str | None) -> PriorityFlags:
    """`PriorityFlags=` as read_config.c reads it: case-insensitive *substring* tests.

    So `MAX_TRES_GRES` is tested before `MAX_TRES`, `DEPTH_OBLIVIOUS` clears FAIR_TREE (and wins
    over NO_FAIR_TREE), and unknown words are silently ignored, as in Slurm. No value (None)
    gives the default, FAIR_TREE alone.
    """
    flags = PriorityFlags.FAIR_TREE
    if text is None:
        return flags
    upper = text.upper()
    for word, flag in (
        ("ACCRUE_ALWAYS", PriorityFlags.ACCRUE_ALWAYS),
        ("SMALL_RELATIVE_TO_TIME", PriorityFlags.SMALL_RELATIVE_TO_TIME),
        ("CALCULATE_RUNNING", PriorityFlags.CALCULATE_RUNNING),
    ):
        if word in upper:
            flags |= flag
    if "DEPTH_OBLIVIOUS" in upper:
        flags = (flags | PriorityFlags.DEPTH_OBLIVIOUS) & ~PriorityFlags.FAIR_TREE
    elif "NO_FAIR_TREE" in upper:
        flags &= ~PriorityFlags.FAIR_TREE
    if "INCR_ONLY" in upper:
        flags |= PriorityFlags.INCR_ONLY
    if "MAX_TRES_GRES" in upper:
        flags |= PriorityFlags.MAX_TRES_GRES
    elif "MAX_TRES" in upper:
        flags |= PriorityFlags.MAX_TRES
    if "NO_NORMAL_ALL" in upper:
        flags |= NO_NORMAL_ALL
    for word, flag in (
        ("NO_NORMAL_ASSOC", PriorityFlags.NO_NORMAL_ASSOC),
        ("NO_NORMAL_PART", PriorityFlags.NO_NORMAL_PART),
        ("NO_NORMAL_QOS", PriorityFlags.NO_NORMAL_QOS),
        ("NO_NORMAL_TRES", PriorityFlags.NO_NORMAL_TRES),
    ):
        if word in upper:
            flags |= flag
    return flags


def tres_key(name: str) -> str:
    """A TRES name as the ledger keys it: the type lower-cased (`GRES/gpu` → `gres/gpu`).

    Slurm compares TRES types case-insensitively; the name after `/` is kept as written.
    """
    text = name.strip()
    if "/" in text:
        kind, _, rest = text.partition("/")
        return f"{kind.lower()}/{rest}"
    return text.lower()


_WEIGHT_VALUE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S?)")


def parse_tres_weights(text: str) -> tuple[tuple[str, float], ...]:
    """`PriorityWeightTRES=CPU=500,Mem=100,GRES/gpu=3000` → (("cpu", 500.0), ...), in order.

    As `_tres_weight_item`: each value is a double (negatives allowed); a K/M/G/T/P suffix
    divides it by 1024 per step above the TRES's base unit (MiB for mem and bb, none for the
    rest), so `Mem=1G` is 1/1024 per MiB; a suffix at or below the base unit changes nothing.
    Non-finite values (`inf`, `nan`), which strtod would accept, are refused here.
    """
    weights: dict[str, float] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        match = _WEIGHT_VALUE.match(value)
        if not sep or not name.strip() or not match:
            raise InvalidValue(f"invalid TRES weight {item!r} in {text!r}")
        key = tres_key(name)
        weight = float(match.group(1))
        unit = match.group(2).upper()
        if unit:
            if unit not in _UNIT_INDEX:
                raise InvalidValue(f"invalid unit {unit!r} in TRES weight {item!r}")
            base = 2 if key.split("/")[0] in _MEGA_BASED_TYPES else 0
            steps = _UNIT_INDEX[unit] - base
            if steps > 0:
                weight /= float(1024**steps)
        if not math.isfinite(weight):
            raise InvalidValue(f"TRES weight {item!r} is not a finite number")
        weights[key] = weight
    return tuple(weights.items())


@dataclass(frozen=True)
class PriorityWeights:
    """The `PriorityWeight*` values of slurm.conf: uint32 each (Slurm refuses negatives), 0 by
    default; `tres` is `PriorityWeightTRES` as ordered (name, double weight) pairs."""

    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    job_size: int = 0
    partition: int = 0
    qos: int = 0
    tres: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        for name in ("age", "assoc", "fairshare", "job_size", "partition", "qos"):
            _check_uint(f"PriorityWeight {name}", getattr(self, name), UINT32_MAX)
        for name, weight in self.tres:
            if not math.isfinite(weight):
                raise InvalidValue(f"TRES weight {name}={weight} is not a finite number")

    @property
    def total(self) -> int:
        """Σ of the six scalar weights; Slurm logs an error at start-up when it exceeds 2^32−1."""
        return self.age + self.assoc + self.fairshare + self.job_size + self.partition + self.qos


@dataclass(frozen=True)
class PriorityConfig:
    """The multifactor settings of slurm.conf that a job's priority depends on.

    `max_age` is PriorityMaxAge in seconds, a uint32 (Slurm stores minutes × 60; UNLIMITED
    becomes 4294967236). `flags` carries every PriorityFlags bit, including the billing
    (MAX_TRES, MAX_TRES_GRES) and fair-share (FAIR_TREE, DEPTH_OBLIVIOUS) ones, which do not change
    this computation but travel with the config.
    """

    weights: PriorityWeights = field(default_factory=PriorityWeights)
    max_age: int = DEFAULT_PRIORITY_DECAY
    favor_small: bool = False
    flags: PriorityFlags = PriorityFlags.FAIR_TREE

    def __post_init__(self) -> None:
        _check_uint("PriorityMaxAge", self.max_age, UINT32_MAX)


@dataclass(frozen=True)
class PartitionInfo:
    """A partition as the priority sees it.

    `tres_totals` are the partition's TRES counts (cpu, mem in MiB, node, gres/gpu, ...), the
    denominators of the TRES factors. `max_time` is MaxTime in minutes, None for UNLIMITED; it is
    the job's time limit under SMALL_RELATIVE_TO_TIME when the job gives none. `priority_tier`
    is a scheduling sort key before priority, not a priority term; it is carried, not used.
    """

    name: str
    priority_job_factor: int = 1
    priority_tier: int = 1
    tres_totals: Mapping[str, int] = field(default_factory=dict)
    max_time: int | None = None

    def __post_init__(self) -> None:
        _check_uint(
            f"partition {self.name} PriorityJobFactor", self.priority_job_factor, PART_PRIORITY_MAX
        )
        _check_uint(f"partition {self.name} PriorityTier", self.priority_tier, PART_PRIORITY_MAX)
        if self.max_time is not None:
            _check_uint(f"partition {self.name} MaxTime", self.max_time, UINT32_MAX - 1, low=1)
        for name, count in self.tres_totals.items():
            _check_uint(f"partition {self.name} TRES {name}", count, 2**64 - 1)


@dataclass(frozen=True)
class QosInfo:
    """A QOS: its Priority (uint32) normalizes against the largest; UsageFactor is carried for
    usage charging (Slurm's default 1; 0 adds no usage); it plays no part in priority."""

    name: str
    priority: int = 0
    usage_factor: float = 1.0
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_uint(f"QOS {self.name} Priority", self.priority, UINT32_MAX - 1)
        if not math.isfinite(self.usage_factor) or self.usage_factor < 0:
            raise InvalidValue(f"QOS {self.name} UsageFactor {self.usage_factor} is invalid")


@dataclass(frozen=True)
class ClusterSize:
    """Slurm's `active_node_record_count` and `cluster_cpus`: every configured node once."""

    nodes: int
    cpus: int

    def __post_init__(self) -> None:
        _check_uint("cluster node count", self.nodes, INT32_MAX)  # an int in Slurm
        _check_uint("cluster CPU count", self.cpus, UINT32_MAX)


@dataclass(frozen=True)
class PendingJob:
    """A pending job in one partition and QOS.

    * `submit_time`, `eligible_time`: Unix seconds. `eligible_time` is when the job became
      eligible (begin time reached, no hold, no dependency, accrue limits permitting) — Slurm's
      `accrue_time` — or None if it is not eligible yet. Under ACCRUE_ALWAYS age counts from
      `submit_time` regardless.
    * `fairshare`: the association's fair-share factor (Fair Tree rank/N or classic 2^(−U/S)).
    * `assoc_priority`: the association's Priority (unset = 0).
    * `cpus`: the CPU count Slurm sizes the job by: total_cpus, else max_cpus, else min_cpus.
    * `time_limit`: minutes; None = not given (the partition's MaxTime is used).
    * `tres`: requested TRES counts, keyed like the partition totals (`cpu`, `mem` in MiB,
      `node`, `gres/gpu`).
    * `nice`, `site_factor`: signed, within ±2147483645.
    """

    job_id: int
    partition: str
    submit_time: int
    eligible_time: int | None = None
    qos: str | None = None
    user: str = ""
    account: str = ""
    fairshare: float = 0.0
    assoc_priority: int = 0
    min_nodes: int = 1
    cpus: int = 0
    time_limit: int | None = None
    tres: Mapping[str, int] = field(default_factory=dict)
    nice: int = 0
    site_factor: int = 0

    def __post_init__(self) -> None:
        if not -NICE_LIMIT <= self.nice <= NICE_LIMIT:
            raise InvalidValue(f"nice {self.nice} is out of range (-{NICE_LIMIT}..{NICE_LIMIT})")
        if not -NICE_LIMIT <= self.site_factor <= NICE_LIMIT:
            raise InvalidValue(
                f"site factor {self.site_factor} is out of range (-{NICE_LIMIT}..{NICE_LIMIT})"
            )
        if not math.isfinite(self.fairshare) or self.fairshare < 0:
            raise InvalidValue(f"fair-share factor {self.fairshare} is not a number >= 0")
        # A job not submitted yet (priority's what-if) has no ID: its values are named alone.
        job = f"job {self.job_id} " if self.job_id else "the job's "
        _check_uint(f"{job}association priority", self.assoc_priority, UINT32_MAX - 1)
        _check_uint(f"{job}min_nodes", self.min_nodes, UINT32_MAX - 1)
        _check_uint(f"{job}cpus", self.cpus, UINT32_MAX - 1)
        if self.time_limit is not None:
            _check_uint(f"{job}time limit", self.time_limit, UINT32_MAX - 1, low=1)
        for name, count in self.tres.items():
            _check_uint(f"{job}TRES {name}", count, 2**64 - 1)


@dataclass(frozen=True)
class PriorityFactor:
    """One column of `sprio -l -n -w`: value is the factor (`-n`), weight the `Weights` row,
    weighted = value · weight (the plain `sprio` column, which prints it with `%.0f`)."""

    name: str
    value: float
    weight: float
    weighted: float


@dataclass(frozen=True)
class PriorityResult:
    """A job's priority and the factors it was made of.

    `factors` are in sprio's long column order: SITE, AGE, ASSOC, FAIRSHARE, JOBSIZE, PARTITION,
    QOS, NICE, then one `TRES:<name>` row per weighted TRES (sprio's TRES column). SITE and NICE
    are unweighted integers (weight 1; NICE's weighted value is −nice, as it is subtracted).
    `total` is the double sum before clamping; `priority` is what Slurm stores.
    """

    job_id: int
    partition: str
    qos: str | None
    user: str
    account: str
    priority: int
    total: float
    factors: tuple[PriorityFactor, ...]

    def factor(self, name: str) -> PriorityFactor:
        for row in self.factors:
            if row.name == name:
                return row
        raise KeyError(name)

    @property
    def normalized_priority(self) -> float:
        """sprio -n's PRIORITY column: the priority over 2^32 − 1."""
        return self.priority / float(UINT32_MAX)


def age_factor(job: PendingJob, now: int, config: PriorityConfig) -> float:
    """`min(1, (now − accrue_time) / PriorityMaxAge)`, with Slurm's integer types.

    accrue_time is `submit_time` under ACCRUE_ALWAYS, else the eligible time; a job without one
    gets 0. The elapsed time is a uint32 and 0 if accrue_time is in the future; it is compared
    with max_age as integers (so PriorityMaxAge=0 gives 1.0), then divided as doubles.
    """
    if PriorityFlags.ACCRUE_ALWAYS in config.flags:
        accrue_time: int | None = job.submit_time
    else:
        accrue_time = job.eligible_time
    if not accrue_time:  # Slurm tests `accrue_time` for non-zero: 0 means never eligible
        return 0.0
    diff = (now - accrue_time) & UINT32_MAX if now > accrue_time else 0
    if diff < config.max_age:
        return float(diff) / float(config.max_age)
    return 1.0


def job_size_factor(
    job: PendingJob, partition: PartitionInfo, cluster: ClusterSize, config: PriorityConfig
) -> float:
    """The job size factor, as `set_priority_factors` computes it (doubles, uint32 CPU counts).

    * SMALL_RELATIVE_TO_TIME: max(min_nodes·C/N, cpus) / time_limit / C, and 1 − that with
      PriorityFavorSmall; the time limit is the job's, else the partition's MaxTime (UNLIMITED is
      INFINITE = 2^32 − 1 minutes, as in Slurm).
    * PriorityFavorSmall: ((N − min_nodes)/N if N > min_nodes else 0 [+ (C − cpus)/C]) [/ 2]; the
      `C − cpus` is a uint32 subtraction, so a job asking for more CPUs than the cluster has wraps
      around to a huge value and gets 1.0 — Slurm's behaviour, reproduced.
    * otherwise: (min_nodes/N [+ cpus/C]) [/ 2].

    The bracketed terms apply only when the job has a CPU count. The result is clamped to [0, 1].
    N or C of 0 gives 0 (Slurm skips the factor).
    """
    nodes, cpus_total = cluster.nodes, cluster.cpus
    if not nodes or not cpus_total:
        return 0.0
    cpu_cnt, min_nodes = job.cpus, job.min_nodes
    if PriorityFlags.SMALL_RELATIVE_TO_TIME in config.flags:
        js = float(min_nodes) * float(cpus_total) / float(nodes)
        if cpu_cnt > js:
            js = float(cpu_cnt)
        if job.time_limit is not None:
            time_limit = job.time_limit
        elif partition.max_time is not None:
            time_limit = partition.max_time
        else:
            time_limit = INFINITE
        js /= float(time_limit)
        js /= float(cpus_total)
        if config.favor_small:
            js = 1.0 - js
    elif config.favor_small:
        js = float(nodes - min_nodes) / float(nodes) if nodes > min_nodes else 0.0
        if cpu_cnt:
            js += float((cpus_total - cpu_cnt) & UINT32_MAX) / float(cpus_total)
            js /= 2
    else:
        js = float(min_nodes) / float(nodes)
        if cpu_cnt:
            js += float(cpu_cnt) / float(cpus_total)
            js /= 2
    if js < 0.0:
        return 0.0
    if js > 1.0:
        return 1.0
    return js


def tres_factors(
    job: PendingJob, partition: PartitionInfo, config: PriorityConfig
) -> tuple[tuple[str, float, float], ...]:
    """(name, factor, weight) per weighted TRES, in Slurm's summation order.

    factor = the job's count / the partition's total (as doubles), 0 if either is 0; with
    NO_NORMAL_TRES the raw count.
    """
    weights = dict(config.weights.tres)
    order = [name for name in STATIC_TRES if name in weights]
    order += [name for name in weights if name not in STATIC_TRES]
    job_tres = {tres_key(k): v for k, v in job.tres.items()}
    totals = {tres_key(k): v for k, v in partition.tres_totals.items()}
    rows = []
    for name in order:
        value = job_tres.get(name, 0)
        if PriorityFlags.NO_NORMAL_TRES in config.flags:
            factor = float(value)
        elif value and totals.get(name):
            factor = value / float(totals[name])
        else:
            factor = 0.0
        rows.append((name, factor, weights[name]))
    return tuple(rows)


def slurm_job_priority(
    job: PendingJob,
    *,
    now: int,
    config: PriorityConfig,
    partitions: Sequence[PartitionInfo],
    qos: Sequence[QosInfo] = (),
    cluster: ClusterSize,
    max_assoc_priority: int = 0,
    current_priority: int | None = None,
) -> PriorityResult:
    """The priority Slurm gives `job` at time `now`, factor by factor.

    `partitions` and `qos` are *all* of the cluster's partitions and QOS: the partition factor is
    PriorityJobFactor over the largest one (and at least 1, Slurm's DEF_PART_MAX_PRIORITY), the
    QOS factor the QOS Priority over the largest QOS Priority. `max_assoc_priority` is the largest
    association Priority on the cluster (0: the association factor is 0).
    `current_priority` is the job's priority before this recalculation; with INCR_ONLY a lower
    new value does not replace it.
    """
    flags = config.flags
    weights = config.weights
    part = _find_partition(partitions, job.partition)
    qos_info = _find_qos(qos, job.qos)
    _check_uint("max association priority", max_assoc_priority, UINT32_MAX - 1)
    if job.assoc_priority > max_assoc_priority:
        raise InvalidValue(
            f"job {job.job_id} association priority {job.assoc_priority} exceeds the"
            f" cluster's maximum {max_assoc_priority}"
        )

    age = age_factor(job, now, config) if weights.age else 0.0
    fs = job.fairshare if weights.fairshare else 0.0
    js = job_size_factor(job, part, cluster, config) if weights.job_size else 0.0

    part_value = 0.0
    if part.priority_job_factor and weights.partition:
        if PriorityFlags.NO_NORMAL_PART in flags:
            part_value = float(part.priority_job_factor)
        else:
            part_max = max([1, *(p.priority_job_factor for p in partitions)])
            part_value = float(part.priority_job_factor) / float(part_max)

    assoc = 0.0
    if weights.assoc:
        if PriorityFlags.NO_NORMAL_ASSOC in flags:
            assoc = float(job.assoc_priority)
        elif max_assoc_priority:
            assoc = float(job.assoc_priority) / float(max_assoc_priority)

    qos_value = 0.0
    if qos_info is not None and qos_info.priority and weights.qos:
        if PriorityFlags.NO_NORMAL_QOS in flags:
            qos_value = float(qos_info.priority)
        else:
            qos_max = max(q.priority for q in qos)
            qos_value = float(qos_info.priority) / float(qos_max)

    tres_rows = tres_factors(job, part, config) if weights.tres else ()

    w_age = age * float(weights.age)
    w_assoc = assoc * float(weights.assoc)
    w_fs = fs * float(weights.fairshare)
    w_js = js * float(weights.job_size)
    w_part = part_value * float(weights.partition)
    w_qos = qos_value * float(weights.qos)
    weighted_tres = [factor * weight for _, factor, weight in tres_rows]
    tmp_tres = 0.0
    for term in weighted_tres:  # _get_tres_prio_weighted: a running double sum
        tmp_tres += term

    # One C expression, evaluated left to right in double.
    total = (
        w_age
        + w_assoc
        + w_fs
        + w_js
        + w_part
        + w_qos
        + tmp_tres
        + float(job.site_factor)
        - float(job.nice)
    )
    priority = _clamp_to_uint32(total)
    if (
        PriorityFlags.INCR_ONLY in flags
        and current_priority is not None
        and current_priority >= priority
    ):
        priority = current_priority

    factors = (
        PriorityFactor("SITE", float(job.site_factor), 1, float(job.site_factor)),
        PriorityFactor("AGE", age, weights.age, w_age),
        PriorityFactor("ASSOC", assoc, weights.assoc, w_assoc),
        PriorityFactor("FAIRSHARE", fs, weights.fairshare, w_fs),
        PriorityFactor("JOBSIZE", js, weights.job_size, w_js),
        PriorityFactor("PARTITION", part_value, weights.partition, w_part),
        PriorityFactor("QOS", qos_value, weights.qos, w_qos),
        PriorityFactor("NICE", float(job.nice), 1, -float(job.nice)),
        *(
            PriorityFactor(f"TRES:{name}", factor, weight, w)
            for (name, factor, weight), w in zip(tres_rows, weighted_tres, strict=True)
        ),
    )
    return PriorityResult(
        job_id=job.job_id,
        partition=part.name,
        qos=job.qos,
        user=job.user,
        account=job.account,
        priority=priority,
        total=total,
        factors=factors,
    )


def _clamp_to_uint32(total: float) -> int:
    """`if (p < 1) p = 1; if ((uint64) p > 0xffffffff) p = 0xffffffff; return (uint32) p;`

    Truncation toward zero: 1.9 → 1, 4294967295.9 → 4294967295. A sum that is +inf or NaN,
    whose uint64 conversion is undefined in C (x86-64 gives 2^63), clamps to the maximum.
    """
    if total < 1:
        return PRIORITY_MIN
    if not math.isfinite(total) or total >= float(PRIORITY_MAX) + 1.0:
        return PRIORITY_MAX
    return int(total)


def _find_partition(partitions: Sequence[PartitionInfo], name: str) -> PartitionInfo:
    for part in partitions:
        if part.name == name:
            return part
    raise InvalidValue(f"unknown partition {name!r}")


def _find_qos(qos: Sequence[QosInfo], name: str | None) -> QosInfo | None:
    if name is None:
        return None
    for entry in qos:
        if entry.name == name:
            return entry
    raise InvalidValue(f"unknown QOS {name!r}")


def _check_uint(what: str, value: int, high: int, low: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"{what} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise InvalidValue(f"{what} {value} is out of range ({low}..{high})")
