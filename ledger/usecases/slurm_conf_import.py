"""import-slurm --conf: a site's slurm.conf recorded as ordinary Site events, in one transaction.

The file is the site's whole multifactor setup: a key it does not set takes Slurm's default
(a PriorityWeight* 0, PriorityMaxAge and PriorityDecayHalfLife 7-0, no PriorityFlags, ...), so
that the ledger prices jobs as the controller reading that file does. In order:

1. the fair-share algorithm: `NO_FAIR_TREE` in PriorityFlags is classic, otherwise Fair Tree
   (Slurm's default); first, so that the Slurm factor names and fields below are accepted;
2. config: priority_flags (the multifactor and billing words), priority_weight_tres (as written,
   so that it reads back to the doubles Slurm parses, `Mem=1G` included), priority_max_age,
   priority_favor_small, priority_decay_half_life, priority_usage_reset_period,
   fairshare_dampening_factor, and cluster_nodes/cluster_cpus (every node once);
3. the six PriorityWeight* as the factors age, assoc, fairshare, jobsize, partition, qos;
4. each PartitionName a queue (added, or edited when the ledger has it): PriorityJobFactor,
   PriorityTier, TRESBillingWeights and its nodes' totals (CPUs, RealMemory in MiB, GRES).

Each setting is an edit that records only a change: importing the same file again records
nothing, and an edited file records just what differs (decided over a sha256 mark, which would
skip a file whose settings were changed by hand since and must be put back).

Refused, naming the line, with nothing recorded: what the parser refuses (ledger.slurm.conf),
a PriorityType other than priority/multifactor, an unknown PriorityFlags word, and
DEPTH_OBLIVIOUS: that is a third fair-share algorithm the ledger does not compute, and importing
the file as Fair Tree or classic would rank associations otherwise than the cluster does,
silently. What the ledger does not model (every other key, Include lines, PriorityCalcPeriod,
a partition's MaxTime, QOS and Default) is listed as ignored, by line.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from ledger.errors import InvalidValue, LedgerError
from ledger.site import PRIORITY_FLAGS, Site, Stamp, normalise_config_value
from ledger.site_config import (
    ALGORITHM_KEY,
    BILLING_WEIGHTS,
    CLASSIC,
    CLUSTER_CPUS_KEY,
    CLUSTER_NODES_KEY,
    CONFIG_DEFAULTS,
    DAMPENING_KEY,
    FAIR_TREE,
    FAVOR_SMALL_KEY,
    HALF_LIFE_KEY,
    MAX_AGE_KEY,
    PARTITION_DEFAULTS,
    PRIORITY_FLAGS_KEY,
    RESET_PERIOD_KEY,
    SLURM_FACTOR_DEFAULTS,
    TRES_WEIGHTS_KEY,
)
from ledger.slurm.conf import PartitionConf, SlurmConf, parse_slurm_conf
from ledger.usecases.session import Session

COMMAND = "import-slurm --conf"
MULTIFACTOR = "priority/multifactor"
# slurm.conf's PriorityWeight* keys (lower-cased, as the parser keys them) -> the ledger's factor.
WEIGHT_KEYS = {
    "priorityweightage": "age",
    "priorityweightassoc": "assoc",
    "priorityweightfairshare": "fairshare",
    "priorityweightjobsize": "jobsize",
    "priorityweightpartition": "partition",
    "priorityweightqos": "qos",
}
# The PriorityFlags words that choose the fair-share algorithm rather than a priority_flags word.
NO_FAIR_TREE, FAIR_TREE_WORD, DEPTH_OBLIVIOUS = "NO_FAIR_TREE", "FAIR_TREE", "DEPTH_OBLIVIOUS"
# The config keys a slurm.conf sets, in the order they are recorded.
CONF_KEYS = (
    ALGORITHM_KEY,
    PRIORITY_FLAGS_KEY,
    TRES_WEIGHTS_KEY,
    MAX_AGE_KEY,
    FAVOR_SMALL_KEY,
    HALF_LIFE_KEY,
    RESET_PERIOD_KEY,
    DAMPENING_KEY,
    CLUSTER_NODES_KEY,
    CLUSTER_CPUS_KEY,
)
# A partition's keys the parser reads that the ledger does not keep.
_UNKEPT_PARTITION_KEYS = ("MaxTime", "QOS", "Default")


@dataclass(frozen=True)
class ConfSource:
    """A slurm.conf read, parsed and checked, before anything is recorded."""

    path: str
    conf: SlurmConf
    sha256: str
    algorithm: str  # fair-tree or classic, as PriorityFlags says
    flags: str  # the priority_flags value: PriorityFlags without the algorithm's words

    @property
    def file(self) -> str:
        return os.path.basename(self.path)


@dataclass(frozen=True)
class ConfImported:
    """What the import changed (`report`, JSON-ready); `changes` 0: the ledger had it all."""

    report: dict[str, Any]

    @property
    def changes(self) -> int:
        return int(self.report["changes"])


def read_conf(path: str, data: bytes) -> ConfSource:
    """`data`, the file at `path`, parsed and checked; InvalidValue naming the file and line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InvalidValue(f"{path}: line {line}: not UTF-8 ({err.reason})") from None
    try:
        conf = parse_slurm_conf(text)
    except InvalidValue as err:
        raise InvalidValue(f"{path}: {err}") from None
    _check_priority_type(path, conf)
    algorithm, flags = _algorithm_and_flags(path, conf)
    return ConfSource(path, conf, hashlib.sha256(data).hexdigest(), algorithm, flags)


def _where(path: str, conf: SlurmConf, key: str) -> str:
    given = conf.settings[key]
    return f"{path}: line {given.line}: {given.text!r}"


def _check_priority_type(path: str, conf: SlurmConf) -> None:
    if conf.priority_type.lower() != MULTIFACTOR:
        raise InvalidValue(
            f"{_where(path, conf, 'prioritytype')}: only {MULTIFACTOR} is modelled (the ledger"
            " computes Slurm's multifactor priority)"
        )


def _algorithm_and_flags(path: str, conf: SlurmConf) -> tuple[str, str]:
    """PriorityFlags word by word: NO_FAIR_TREE is classic, FAIR_TREE (an old spelling of the
    default) Fair Tree; the rest must be words priority_flags knows. Slurm itself matches
    substrings and ignores an unknown word, which would hide a typo such as MAX_TRSE."""
    given = conf.settings.get("priorityflags")
    if given is None:
        return FAIR_TREE, ""
    words = [word.strip().upper() for word in given.value.split(",") if word.strip()]
    if DEPTH_OBLIVIOUS in words:
        raise InvalidValue(
            f"{_where(path, conf, 'priorityflags')}: DEPTH_OBLIVIOUS is not modelled (the ledger"
            " computes Fair Tree, or classic with NO_FAIR_TREE); ranking this site by either"
            " would differ from the cluster's"
        )
    unknown = [w for w in words if w not in (*PRIORITY_FLAGS, NO_FAIR_TREE, FAIR_TREE_WORD)]
    if unknown:
        raise InvalidValue(
            f"{_where(path, conf, 'priorityflags')}: unknown PriorityFlags {unknown[0]} (known:"
            f" {', '.join((*PRIORITY_FLAGS, FAIR_TREE_WORD, NO_FAIR_TREE, DEPTH_OBLIVIOUS))})"
        )
    algorithm = CLASSIC if NO_FAIR_TREE in words else FAIR_TREE
    kept = [w for w in words if w not in (NO_FAIR_TREE, FAIR_TREE_WORD)]
    return algorithm, ",".join(dict.fromkeys(kept))


def import_conf(
    s: Session,
    path: str,
    data: bytes,
    actor: str | None = None,
    reason: str | None = None,
) -> ConfImported:
    """The slurm.conf `data` (read from `path`) applied to the ledger's site in one transaction."""
    source = read_conf(path, data)
    return s.change(
        lambda site, stamp: ConfImported(apply_conf(site, stamp, source)),
        reason or f"{COMMAND} {source.file}",
        actor,
        source={"import": source.path, "sha256": source.sha256},
    )


def switch_algorithm(site: Site, stamp: Stamp, source: ConfSource) -> list[str] | None:
    """The algorithm the file says, recorded before anything that needs a Slurm site;
    [old, new] when it changed."""
    old = site.state.fairshare_algorithm
    if old == source.algorithm:
        return None
    try:
        site.edit_config(stamp, [(ALGORITHM_KEY, source.algorithm)])
    except LedgerError as err:
        raise InvalidValue(
            f"{source.path}: fairshare_algorithm {source.algorithm}: {err}"
        ) from None
    return [old, source.algorithm]


def apply_conf(site: Site, stamp: Stamp, source: ConfSource) -> dict[str, Any]:
    """Every setting of the file as Site commands (see the module docstring); a refused one
    raises InvalidValue naming its line, and the caller's transaction records nothing."""
    conf = source.conf
    state = site.state
    config_before = {k: state.config.get(k, CONFIG_DEFAULTS.get(k)) for k in CONF_KEYS}
    factors_before = dict(state.factors)
    queues_before = {name: _queue_fields(state.queues[name]) for name in state.queues}
    algorithm = switch_algorithm(site, stamp, source)
    _apply_config(site, stamp, source)
    for key, factor in WEIGHT_KEYS.items():
        weight = getattr(conf.priority.weights, "job_size" if factor == "jobsize" else factor)
        if state.factors.get(factor, SLURM_FACTOR_DEFAULTS[factor]) == weight:
            continue  # a default never recorded is no change either
        try:
            site.edit_factor(stamp, factor, weight)
        except LedgerError as err:
            raise InvalidValue(f"{_place(source, key)}: {err}") from None
    for part in conf.partitions:
        _apply_partition(site, stamp, source, part)
    state = site.state  # what the commands made of it
    config_after = {k: state.config.get(k, CONFIG_DEFAULTS.get(k)) for k in CONF_KEYS}
    added = [name for name in state.queues if name not in queues_before]
    edited = [
        name
        for name in state.queues
        if name in queues_before and _queue_fields(state.queues[name]) != queues_before[name]
    ]
    factors = {}
    for name, default in SLURM_FACTOR_DEFAULTS.items():
        old, new = factors_before.get(name, default), state.factors.get(name, default)
        if old != new:
            factors[name] = [old, new]
    config = {
        key: [config_before[key], config_after[key]]
        for key in CONF_KEYS
        if key != ALGORITHM_KEY and config_after[key] != config_before[key]
    }
    return {
        "conf": source.path,
        "sha256": source.sha256,
        "fairshare_algorithm": algorithm,
        "config": config,
        "factors": factors,
        "queues_added": added,
        "queues_edited": edited,
        "changes": (algorithm is not None) + len(config) + len(factors) + len(added) + len(edited),
        "ignored": ignored_lines(conf),
    }


def _place(source: ConfSource, key: str) -> str:
    """Where a setting came from: its line, or Slurm's default when the file has no such key."""
    if key in source.conf.settings:
        return _where(source.path, source.conf, key)
    return f"{source.path}: {key} (Slurm's default)"


def _apply_config(site: Site, stamp: Stamp, source: ConfSource) -> None:
    conf = source.conf
    weights = conf.settings.get("priorityweighttres")
    pairs: list[tuple[str, str, str]] = [
        (PRIORITY_FLAGS_KEY, source.flags, _place(source, "priorityflags")),
        (TRES_WEIGHTS_KEY, weights.value if weights else "", _place(source, "priorityweighttres")),
        (MAX_AGE_KEY, str(conf.priority.max_age), _place(source, "prioritymaxage")),
        (
            FAVOR_SMALL_KEY,
            "YES" if conf.priority.favor_small else "NO",
            _place(source, "priorityfavorsmall"),
        ),
        (HALF_LIFE_KEY, str(conf.decay_half_life), _place(source, "prioritydecayhalflife")),
        (RESET_PERIOD_KEY, conf.usage_reset_period, _place(source, "priorityusageresetperiod")),
        (DAMPENING_KEY, str(conf.dampening_factor), _place(source, "fairsharedampeningfactor")),
        (CLUSTER_NODES_KEY, str(conf.cluster.nodes), f"{source.path}: the nodes' count"),
        (CLUSTER_CPUS_KEY, str(conf.cluster.cpus), f"{source.path}: the nodes' CPUs"),
    ]
    for key, value, where in pairs:  # each value alone first, to name the line that is refused
        try:
            normalise_config_value(key, value)
        except LedgerError as err:
            raise InvalidValue(f"{where}: {err}") from None
    try:
        site.edit_config(stamp, [(key, value) for key, value, _ in pairs])
    except LedgerError as err:  # values fine alone, refused together: the decay and reset
        keys = ("prioritydecayhalflife", "priorityusageresetperiod")
        lines = [str(conf.settings[key].line) for key in keys if key in conf.settings]
        where = f"{source.path}: line{'s' if len(lines) > 1 else ''} {', '.join(lines)}"
        raise InvalidValue(f"{where if lines else source.path}: {err}") from None


def partition_fields(part: PartitionConf) -> dict[str, int | str | None]:
    """A partition's fields as a queue keeps them; its TRES totals beyond CPUs and nodes as
    `mem=...,gres/gpu=...` (mem in MiB), a zero total left out as a queue without it has none."""
    extra = {
        name: count
        for name, count in part.tres_totals.items()
        if name not in ("cpu", "node") and count
    }
    return {
        "priority_job_factor": part.priority_job_factor,
        "priority_tier": part.priority_tier,
        "total_nodes": part.tres_totals.get("node", 0),
        "total_cpus": part.tres_totals.get("cpu", 0),
        "total_tres": ",".join(f"{name}={count}" for name, count in extra.items()),
    }


def _apply_partition(site: Site, stamp: Stamp, source: ConfSource, part: PartitionConf) -> None:
    weights = part.tres_billing_weights or ""
    fields = partition_fields(part)
    try:
        if part.name in site.state.queues:
            site.edit_queue(stamp, part.name, {}, weights, fields)
        else:
            site.add_queue(stamp, part.name, {}, weights or None, fields)
    except LedgerError as err:
        raise InvalidValue(
            f"{source.path}: line {part.line}: partition {part.name}: {err}"
        ) from None


def _queue_fields(queue: Any) -> tuple[Any, ...]:
    return tuple(getattr(queue, name) for name in (BILLING_WEIGHTS, *PARTITION_DEFAULTS))


def ignored_lines(conf: SlurmConf) -> list[str]:
    """What the file holds that the ledger does not model, one entry per line of the file."""
    by_line: dict[int, tuple[str, list[str]]] = {}
    for item in conf.ignored:
        is_record = item.text.lower().startswith(("nodename", "partitionname"))
        record = item.text.split()[0] if is_record else ""
        keys = by_line.setdefault(item.line, (record, []))[1]
        keys.append(f"{item.text} (not followed)" if item.key == "Include" else item.key)
    calc = conf.settings.get("prioritycalcperiod")
    if calc is not None:
        by_line.setdefault(calc.line, ("", []))[1].append("PriorityCalcPeriod")
    for part in conf.partitions:
        unkept = [
            key
            for key, given in zip(
                _UNKEPT_PARTITION_KEYS,
                (part.max_time is not None, part.qos is not None, part.default),
                strict=True,
            )
            if given
        ]
        if unkept:
            keys = by_line.setdefault(part.line, (f"PartitionName={part.name}", []))[1]
            keys.extend(unkept)
    out = []
    for line in sorted(by_line):
        record, keys = by_line[line]
        shown = ", ".join(dict.fromkeys(keys))
        out.append(f"line {line}: {record}: {shown}" if record else f"line {line}: {shown}")
    return out


__all__ = [
    "ConfImported",
    "ConfSource",
    "apply_conf",
    "ignored_lines",
    "import_conf",
    "partition_fields",
    "read_conf",
    "switch_algorithm",
]
