"""The site's administrative state: what the reducers fold events into.

Plain dataclasses with no behaviour beyond lookups, so that the Site aggregate, the SQL
projections and as-of replays all share one representation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar

from ledger.limit_fields import UNLIMITED
from ledger.site_config import (
    ALGORITHM_KEY,
    CONFIG_DEFAULTS,
    DAMPENING_KEY,
    DEFAULT_TIMEZONE,
    PRIORITY_FLAGS_KEY,
    TIMEZONE_KEY,
    WEIGHTED_WALK,
    csv_items,
    usage_model_of,
)


@dataclass
class Bank:
    bank_id: int
    bank: str
    parent_bank: str
    shares: int
    priority: float = 0.0
    active: bool = True
    # add-bank/edit-bank/clear-usage --ignore-older-than: jobs under this bank (and the banks
    # below it) that ended at or before this time do not count (0: none).
    ignore_older_than: float = 0.0


@dataclass
class Association:
    username: str
    bank: str
    userid: int
    creation_time: float
    mod_time: float
    active: bool = True
    shares: int = 1
    max_running_jobs: int = 5
    max_active_jobs: int = 7
    max_nodes: int = UNLIMITED
    max_cores: int = UNLIMITED
    queues: str = ""
    projects: str = "*"
    default_project: str = "*"
    max_sched_jobs: int = UNLIMITED
    # clear-usage: jobs of this association that ended at or before this time stop counting.
    ignore_older_than: float = 0.0
    # Slurm's QOS= and DefaultQOS= of the association (a comma list of QOS names; "": none).
    qos: str = ""
    default_qos: str = ""


@dataclass
class Queue:
    queue: str
    min_nodes_per_job: int = 1
    max_nodes_per_job: int = 1
    max_time_per_job: int = 60
    priority: int = 0
    max_running_jobs: int = 100
    max_nodes_per_assoc: int = UNLIMITED
    max_sched_jobs: int = UNLIMITED
    max_sched_nodes_per_assoc: int = UNLIMITED
    max_sched_cores_per_assoc: int = UNLIMITED
    max_nodes: int = UNLIMITED
    max_cores: int = UNLIMITED
    # Slurm's partition TRESBillingWeights (ledger.billing), as given; "": billing = CPUs.
    billing_weights: str = ""
    # PARTITION_DEFAULTS: the partition's priority fields and size (the table's column order).
    priority_job_factor: int = 1
    priority_tier: int = 1
    total_nodes: int = 0
    total_cpus: int = 0
    total_tres: str = ""


@dataclass
class Qos:
    qos: str
    priority: int = 0
    usage_factor: float = 1.0
    flags: str = ""  # a comma list of QOS_FLAGS, in that order
    description: str = ""


@dataclass
class Project:
    project_id: int
    project: str


@dataclass
class SiteState:
    epoch: float = 0.0
    config: dict[str, str] = field(default_factory=dict)
    factors: dict[str, int] = field(default_factory=dict)
    banks: dict[str, Bank] = field(default_factory=dict)
    # username -> bank -> association: nested so that the state stays JSON-transcodable.
    associations: dict[str, dict[str, Association]] = field(default_factory=dict)
    default_banks: dict[str, str] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    projects: dict[str, Project] = field(default_factory=dict)
    qos: dict[str, Qos] = field(default_factory=dict)
    next_bank_id: int = 1
    next_project_id: int = 1
    last_usage_update: float | None = None
    last_fairshare_update: float | None = None
    # Sites imported from flux-accounting: sha256 of the source -> {"file", "at"}.
    imports: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def timezone(self) -> str:
        return self.config.get(TIMEZONE_KEY, DEFAULT_TIMEZONE)

    @property
    def fairshare_algorithm(self) -> str:
        return self.config.get(ALGORITHM_KEY, WEIGHTED_WALK)

    @property
    def usage_model(self) -> str:
        return usage_model_of(self.config)

    @property
    def dampening_factor(self) -> int:
        return int(self.config.get(DAMPENING_KEY, CONFIG_DEFAULTS[DAMPENING_KEY]))

    @property
    def slurm_site(self) -> bool:
        """Ranked by a Slurm algorithm: Slurm's factors, priority and parent shares apply."""
        return self.fairshare_algorithm != WEIGHTED_WALK

    @property
    def priority_flags(self) -> list[str]:
        return csv_items(self.config.get(PRIORITY_FLAGS_KEY, ""))

    def usage_factor(self, qos: str | None) -> float:
        """The UsageFactor a job of `qos` is charged with: its QOS's, or 1 for no QOS or one
        the ledger does not know (Slurm's default)."""
        found = self.qos.get(qos) if qos else None
        return found.usage_factor if found is not None else 1.0

    # --- lookups -------------------------------------------------------------------------------
    def root_bank(self) -> Bank | None:
        return next((b for b in self.banks.values() if b.parent_bank == ""), None)

    def subtree(self, name: str) -> list[Bank]:
        """The bank and every bank below it, parents before children (breadth first, each
        bank's children by name). The children are grouped once: asking each bank's children
        in turn scanned every bank per bank, 271,000 steps at 521 banks on every update."""
        children: dict[str, list[Bank]] = {}
        for bank in sorted(self.banks.values(), key=lambda b: b.bank):
            children.setdefault(bank.parent_bank, []).append(bank)
        out, todo = [], deque([self.banks[name]])
        while todo:
            bank = todo.popleft()
            out.append(bank)
            todo.extend(children.get(bank.bank, []))
        return out

    def associations_in(self, bank: str) -> list[Association]:
        rows = [a for banks in self.associations.values() for b, a in banks.items() if b == bank]
        return sorted(rows, key=lambda a: a.username)

    def association(self, username: str, bank: str) -> Association | None:
        return self.associations.get(username, {}).get(bank)

    def all_associations(self) -> list[Association]:
        return [a for banks in self.associations.values() for a in banks.values()]

    def usage_cutoff(self, assoc: Association) -> float:
        """The time at or before which the association's jobs stop counting: the latest of
        its own clear-usage cutoff and the ignore_older_than of its bank and every bank above
        (a bank's cutoff covers its whole subtree; 0: every job counts)."""
        # Up the parents without a list of them: a Slurm site's update asks this of every
        # association with new jobs (5,165 after 10,000 jobs: 12.5 -> 5.2 ms for 10,000).
        cutoff = assoc.ignore_older_than
        bank = self.banks.get(assoc.bank)
        while bank is not None:
            if bank.ignore_older_than > cutoff:
                cutoff = bank.ignore_older_than
            bank = self.banks.get(bank.parent_bank) if bank.parent_bank else None
        return cutoff

    def ancestors(self, name: str) -> list[str]:
        """Names from the bank's parent up to the root."""
        out, bank = [], self.banks.get(name)
        while bank is not None and bank.parent_bank:
            out.append(bank.parent_bank)
            bank = self.banks.get(bank.parent_bank)
        return out


# --- transcoding (snapshots store the state as JSON) --------------------------------------------
def state_to_dict(state: SiteState) -> dict[str, Any]:
    return asdict(state)


def copy_state(state: SiteState) -> SiteState:
    """A copy of `state` that no later fold of `state` changes, and the reverse. The reducers
    only assign (into the state's dicts, and to its objects' fields: `setattr`, never an
    in-place change of a field's value), so new dicts of copied objects are enough: a third of
    decoding the state again from its snapshot (ledger.store.application's before_command)."""
    out = _clone(state)
    out.config = dict(state.config)
    out.factors = dict(state.factors)
    out.banks = {k: _clone(v) for k, v in state.banks.items()}
    out.associations = {
        user: {bank: _clone(a) for bank, a in banks.items()}
        for user, banks in state.associations.items()
    }
    out.default_banks = dict(state.default_banks)
    out.queues = {k: _clone(v) for k, v in state.queues.items()}
    out.projects = {k: _clone(v) for k, v in state.projects.items()}
    out.qos = {k: _clone(v) for k, v in state.qos.items()}
    out.imports = {k: dict(v) for k, v in state.imports.items()}
    return out


def copy_for_markers(state: SiteState) -> SiteState:
    """A copy of `state` that a fold of markers alone (ledger.events.MARKERS) leaves apart from
    it: those set the state's own update times, so its own fields are copied and its tables
    shared (copy_state's copy of 10,000 associations took 12-28 ms of a cron cycle)."""
    return _clone(state)


_T = TypeVar("_T")


def _clone(obj: _T) -> _T:
    """A shallow copy of one of the state's (dict-backed) dataclasses: copy.copy's generic
    path costs several times this for 10,000 associations. The copied dict is assigned, not
    update()d into the new object's empty one (which grows it step by step): 0.6 of the time."""
    new = object.__new__(type(obj))
    new.__dict__ = obj.__dict__.copy()
    return new


def state_from_dict(data: dict[str, Any]) -> SiteState:
    """The state a snapshot's dict form (ledger.store.application's older transcodings) holds.
    `data` is the decoder's own, fresh from the JSON parser: the objects take its row dicts as
    their own instead of copying them."""
    state = SiteState(**{f.name: data[f.name] for f in fields(SiteState) if f.name in data})
    state.banks = {k: _from_row(Bank, v) for k, v in data["banks"].items()}
    state.associations = {
        user: {bank: _from_row(Association, row) for bank, row in banks.items()}
        for user, banks in data["associations"].items()
    }
    state.queues = {k: _from_row(Queue, v) for k, v in data["queues"].items()}
    state.projects = {k: _from_row(Project, v) for k, v in data["projects"].items()}
    state.qos = {k: _from_row(Qos, v) for k, v in data.get("qos", {}).items()}
    state.config = dict(data["config"])
    state.factors = dict(data["factors"])
    state.default_banks = dict(data["default_banks"])
    state.imports = dict(data.get("imports", {}))
    return state


_Row = TypeVar("_Row", Bank, Association, Queue, Qos, Project)
# Each row type's field names, as a set: a row with exactly these keys is the whole object.
_FIELD_SETS: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in fields(cls)) for cls in (Bank, Association, Queue, Qos, Project)
}


def _from_row(cls: type[_Row], row: dict[str, Any]) -> _Row:
    """`cls(**row)`, without the generated `__init__` when the row has every field (it would
    only assign them): 10,000 associations in ~0.007 s instead of ~0.05 s. Their attributes
    read a little slower (a dict of its own, not __init__'s key-sharing one): a cost paid only
    while a ledger's newest snapshot is of an older form, until the next one is taken in the
    columnar form. A row from before a field existed goes through `__init__`, which gives the
    field its default."""
    if row.keys() != _FIELD_SETS[cls]:
        return cls(**row)
    obj: _Row = object.__new__(cls)
    obj.__dict__ = row
    return obj


# --- the columnar form: the snapshot form written now (ledger.store.application) ----------------
# The state's maps of objects, with the fields each object is filed under in its map: an
# association under its username, then its bank.
_TABLES: dict[str, tuple[type[Any], tuple[str, ...]]] = {
    "banks": (Bank, ("bank",)),
    "associations": (Association, ("username", "bank")),
    "queues": (Queue, ("queue",)),
    "projects": (Project, ("project",)),
    "qos": (Qos, ("qos",)),
}
_PLAIN = tuple(f.name for f in fields(SiteState) if f.name not in _TABLES)
_FIELD_NAMES: dict[type, list[str]] = {
    cls: [f.name for f in fields(cls)] for cls, _key in _TABLES.values()
}


def state_to_columns(state: SiteState) -> dict[str, Any]:
    """The state with each map of objects as one table: its field names once and a list of
    values per object, which the JSON parser reads several times faster than an object per row
    (a third of the text for 10,000 associations). A table's "keys" (the path each object is
    filed under) are written only when some path is not the object's own key fields."""
    out: dict[str, Any] = {name: getattr(state, name) for name in _PLAIN}
    for name, (cls, key_fields) in _TABLES.items():
        paths, objects = _flatten(getattr(state, name), len(key_fields))
        names = _FIELD_NAMES[cls]
        # An object's own path: its one key field, or a tuple of them (as _flatten's paths).
        values, own_path = attrgetter(*names), attrgetter(*key_fields)
        table: dict[str, Any] = {"fields": names, "rows": [values(obj) for obj in objects]}
        if any(path != own_path(obj) for path, obj in zip(paths, objects, strict=True)):
            table["keys"] = paths
        out[name] = table
    return out


def state_from_columns(data: dict[str, Any]) -> SiteState:
    """The state state_to_columns wrote, from `data` as the JSON parser gives it back. A table
    written before one of its class's fields existed (its "fields" are not the class's) gives
    that field its default."""
    state = SiteState(**{name: data[name] for name in _PLAIN if name in data})
    for name, (cls, key_fields) in _TABLES.items():
        table = data[name]
        objects = _objects(cls, table["fields"], table["rows"])
        keys = table.get("keys")
        paths: Iterable[Any] = keys if keys is not None else map(attrgetter(*key_fields), objects)
        setattr(state, name, _nest(paths, objects, len(key_fields)))
    return state


def _flatten(mapping: dict[str, Any], depth: int) -> tuple[list[Any], list[Any]]:
    """The objects of a map `depth` keys deep, in order, each with its path of keys."""
    if depth == 1:
        return list(mapping), list(mapping.values())
    paths, objects = [], []
    for outer, inner in mapping.items():
        for key, obj in inner.items():
            paths.append((outer, key))
            objects.append(obj)
    return paths, objects


def _nest(paths: Iterable[Any], objects: list[Any], depth: int) -> dict[str, Any]:
    """The map _flatten took apart, in the same order."""
    if depth == 1:
        return dict(zip(paths, objects, strict=True))
    nested: dict[str, dict[str, Any]] = {}
    for (outer, key), obj in zip(paths, objects, strict=True):
        inner = nested.get(outer)
        if inner is None:
            inner = nested[outer] = {}
        inner[key] = obj
    return nested


def _objects(cls: type[Any], names: list[str], rows: list[list[Any]]) -> list[Any]:
    """One `cls` per row of values for `names`."""
    width = len(names)
    if any(len(row) != width for row in rows):
        raise ValueError(f"a {cls.__name__} row of the snapshot is not {width} values long")
    if names == _FIELD_NAMES[cls]:
        # Positional: a fifth of the cost of keywords for 10,000 associations, and unlike an
        # object made without __init__ (state_from_dict) its attributes read at full speed.
        return [cls(*row) for row in rows]
    return [cls(**dict(zip(names, row, strict=True))) for row in rows]
