"""Audit history: which events touched an object, as data (when, who, why, old and new).

The pure part turns one event into an `Entry` (what it did to which object, its changes as
{field: [old, new]}, and what it cascaded to); events already carry old and new values, so
nothing is replayed. `read_history` is the one function with I/O: it reads the log in order,
with each event's log position. The CLI renders an entry as one line (cli/audit_text.py).

Which events touch what (a `Selector`):
  bank B         its own events: added, edited, deactivated, reactivated, removed, usage
                 cleared; and being part of a deactivated/removed subtree or of a clear-usage
  user U [B]     its associations' events (in bank B), its default-bank changes, and being
                 deactivated/removed with a bank or listed by a clear-usage
  queue Q        queue added, edited, removed
  qos Q          QOS added, edited, removed
  project P      project added, removed
  config         create-db (the initial config and factor weights), edit-config, add-config,
                 delete-config, edit-factor, and a queue's billing weights (add/edit-queue)
  all            every Site event, the usage/fair-share markers, and each ingest's job batches
                 summarized as one "recorded N jobs" line
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from eventsourcing.utils import get_topic

from ledger import events as ev
from ledger.clock import iso
from ledger.errors import NotFound
from ledger.joblog import JobLog
from ledger.site_config import ALGORITHM_KEY, BILLING_WEIGHTS, WEIGHTED_WALK
from ledger.store.application import Ledger
from ledger.store.connections import Connection

PAGE_SIZE = 50  # events a read holds at once: 50 job batches are 50,000 jobs, tens of MB
SITE_EVENT_CLASSES: tuple[type[Any], ...] = (ev.LedgerCreated,) + tuple(
    cls
    for cls in vars(ev).values()
    if isinstance(cls, type) and issubclass(cls, ev.SiteEvent) and cls is not ev.SiteEvent
)
MARKERS: tuple[type[Any], ...] = (ev.UsageUpdated, ev.FairshareUpdated)
SELECTOR_KINDS = ("bank", "user", "queue", "qos", "project", "config", "all")


@dataclass(frozen=True)
class Entry:
    """What one event (or one ingest's job batches) did, as an audit line's data."""

    position: int
    time: float
    actor: str
    reason: str
    source: dict[str, Any]
    event: str  # the event's class name
    action: str  # the command-like verb: add-bank, edit-user, ...
    kind: str  # bank | association | user | queue | qos | project | config | factor | ledger | jobs
    name: str | None  # "A", "alice/A", "gold", "decay_factor"; None for ledger-wide events
    changes: dict[str, list[Any]] = field(default_factory=dict)  # field -> [old, new]
    # Cascades and counts: banks / associations ([username, bank] pairs) / default_banks
    # ({username: [old, new]}) deactivated or removed with a bank; jobs / batches of an ingest.
    details: dict[str, Any] = field(default_factory=dict)
    username: str | None = None  # for association and user entries
    bank: str | None = None  # for association entries
    # Shares of 2147483647 are Slurm's Fairshare=parent: a Slurm algorithm was in force when
    # the event was recorded (the weighted walk reads them as flux-accounting's "unlimited").
    parent_shares: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "position": self.position,
            "time": iso(self.time),
            "timestamp": self.time,
            "actor": self.actor,
            "reason": self.reason,
            "event": self.event,
            "action": self.action,
            "kind": self.kind,
            "name": self.name,
        }
        if self.username is not None:
            out["username"] = self.username
        if self.bank is not None:
            out["bank"] = self.bank
        out["changes"] = {k: list(v) for k, v in self.changes.items()}
        if self.details:
            out["details"] = self.details
        out["source"] = self.source
        return out


@dataclass(frozen=True)
class Selector:
    kind: str  # one of SELECTOR_KINDS
    name: str | None = None
    bank: str | None = None  # with kind "user": only that user's association in this bank

    def describe(self) -> str:
        if self.kind == "user" and self.bank is not None:
            return f"user {self.name} in bank {self.bank}"
        if self.kind in ("config", "all"):
            return "the config" if self.kind == "config" else "the ledger"
        return f"{self.kind} {self.name}"


# --- event -> entry (pure) -----------------------------------------------------------------------
def _added(values: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: [None, v] for k, v in values.items()}


def _with_default(
    changes: dict[str, list[Any]], default_bank: list[str | None] | None
) -> dict[str, list[Any]]:
    if default_bank and default_bank[0] != default_bank[1]:  # (a reactivation may re-set it)
        changes = dict(changes, default_bank=list(default_bank))
    return changes


def _cascade(event: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    others = [b for b in event.banks if b != event.bank]
    if others:
        details["banks"] = others
    if event.associations:
        details["associations"] = [list(p) for p in event.associations]
    if event.default_banks:
        details["default_banks"] = {u: list(c) for u, c in sorted(event.default_banks.items())}
    return details


def entry_of(event: Any, position: int) -> Entry:
    """The audit data of one Site event (LedgerCreated or a SiteEvent subclass)."""
    base: dict[str, Any] = {
        "position": position,
        "time": float(event.timestamp.timestamp()),
        "actor": str(getattr(event, "actor", "") or ""),
        "reason": str(getattr(event, "reason", "") or ""),
        "source": dict(getattr(event, "source", {}) or {}),
        "event": type(event).__name__,
    }

    def make(action: str, kind: str, name: str | None, **rest: Any) -> Entry:
        return Entry(action=action, kind=kind, name=name, **base, **rest)

    def assoc(action: str, changes: dict[str, list[Any]]) -> Entry:
        return make(
            action,
            "association",
            f"{event.username}/{event.bank}",
            changes=changes,
            username=event.username,
            bank=event.bank,
        )

    match event:
        case ev.LedgerCreated():
            changes: dict[str, list[Any]] = {"epoch": [None, event.epoch]}
            changes.update({f"config.{k}": [None, v] for k, v in event.config.items()})
            changes.update({f"factor.{k}": [None, v] for k, v in event.factors.items()})
            return make("create-db", "ledger", None, changes=changes)
        case ev.ConfigChanged():
            # Every core key exists from create-db on: a key without an old value was added.
            action = "edit-config" if event.old is not None else "add-config"
            return make(action, "config", event.key, changes={"value": [event.old, event.new]})
        case ev.ConfigRemoved():
            return make("delete-config", "config", event.key, changes={"value": [event.old, None]})
        case ev.FairshareSet():
            return assoc("edit-user", {"fairshare": [event.old, event.new]})
        case ev.FactorWeightChanged():
            return make(
                "edit-factor", "factor", event.factor, changes={"weight": [event.old, event.new]}
            )
        case ev.BankAdded():
            values = {
                "parent_bank": event.parent_bank,
                "shares": event.shares,
                "priority": event.priority,
            }
            return make("add-bank", "bank", event.bank, changes=_added(values))
        case ev.BankEdited():
            return make("edit-bank", "bank", event.bank, changes=dict(event.changes))
        case ev.BankReactivated():
            changes = {"active": [False, True], **event.changes}
            return make("reactivate-bank", "bank", event.bank, changes=changes)
        case ev.BankDeactivated():
            return make(
                "deactivate-bank",
                "bank",
                event.bank,
                changes={"active": [True, False]},
                details=_cascade(event),
            )
        case ev.BankRemoved():
            return make("remove-bank", "bank", event.bank, details=_cascade(event))
        case ev.AssociationAdded():
            values = {"userid": event.userid, **event.fields}
            return assoc("add-user", _with_default(_added(values), event.default_bank))
        case ev.AssociationEdited():
            return assoc("edit-user", dict(event.changes))
        case ev.AssociationDeactivated():
            return assoc(
                "deactivate-user", _with_default({"active": [True, False]}, event.default_bank)
            )
        case ev.AssociationReactivated():
            changes = {"active": [False, True], **event.changes}
            return assoc("reactivate-user", _with_default(changes, event.default_bank))
        case ev.AssociationRemoved():
            return assoc("remove-user", _with_default({}, event.default_bank))
        case ev.DefaultBankChanged():
            return make(
                "edit-user",
                "user",
                event.username,
                changes={"default_bank": [event.old, event.new]},
                username=event.username,
            )
        case ev.QueueAdded():
            return make("add-queue", "queue", event.queue, changes=_added(dict(event.fields)))
        case ev.QueueEdited():
            return make("edit-queue", "queue", event.queue, changes=dict(event.changes))
        case ev.QueueRemoved():
            return make("delete-queue", "queue", event.queue)
        case ev.QosAdded():
            return make("add-qos", "qos", event.qos, changes=_added(dict(event.fields)))
        case ev.QosEdited():
            return make("edit-qos", "qos", event.qos, changes=dict(event.changes))
        case ev.QosRemoved():
            return make("delete-qos", "qos", event.qos)
        case ev.ProjectAdded():
            return make("add-project", "project", event.project)
        case ev.ProjectRemoved():
            return make("delete-project", "project", event.project)
        case ev.UsageCleared():
            details = {"associations": [list(p) for p in event.associations]}
            return make(
                "clear-usage",
                "bank",
                event.bank,
                changes={"ignore_older_than": [None, event.ignore_older_than]},
                details=details if event.associations else {},
            )
        case ev.UsageUpdated():
            return make("update-usage", "ledger", None)
        case ev.FairshareUpdated():
            return make("update-fshare", "ledger", None)
        case ev.EventNeutralized():
            jobs = {"jobs": [list(key) for key in event.jobs]} if event.jobs else {}
            return make(
                "neutralize",
                "ledger",
                None,
                details={"position": event.position, "event": event.summary, **jobs},
            )
    raise TypeError(f"no audit line for {type(event).__name__}")


@dataclass
class _Ingest:
    """One ingest's job batches (JobsRecorded events of one stamp) as they are read: the first
    batch, for its stamp, and counts; the records of the others are not kept (one ingest of a
    million jobs is a thousand batches)."""

    first: Any
    position: int
    jobs: int = 0
    batches: int = 0

    def add(self, event: Any) -> None:
        self.jobs += len(event.records)
        self.batches += 1

    def entry(self) -> Entry:
        first = self.first
        return Entry(
            position=self.position,
            time=float(first.timestamp.timestamp()),
            actor=str(first.actor or ""),
            reason=str(first.reason or ""),
            source=dict(first.source or {}),
            event=type(first).__name__,
            action="ingest",
            kind="jobs",
            name=None,
            details={"jobs": self.jobs, "batches": self.batches},
        )


def entries_of(events: Iterable[tuple[Any, int]]) -> Iterator[Entry]:
    """Entries of (event, position) pairs in log order; consecutive job batches recorded with
    one stamp (one ingest) become one entry, and the job log's opening is left out."""
    pending: _Ingest | None = None
    for event, position in events:
        if isinstance(event, JobLog.JobsRecorded):
            if pending is not None and _stamp(pending.first) != _stamp(event):
                yield pending.entry()
                pending = None
            if pending is None:
                pending = _Ingest(event, position)
            pending.add(event)
            continue
        if pending is not None:
            yield pending.entry()
            pending = None
        if isinstance(event, JobLog.Opened):
            continue
        yield entry_of(event, position)
    if pending is not None:
        yield pending.entry()


def _stamp(event: Any) -> tuple[Any, ...]:
    return (event.timestamp, event.actor, event.reason, json.dumps(event.source, sort_keys=True))


# --- which entries touch what (pure) -------------------------------------------------------------
def touches(entry: Entry, selector: Selector) -> bool:
    kind, name, bank = selector.kind, selector.name, selector.bank
    if kind == "all":
        return True
    if kind == "config":
        # A queue's billing weights are policy too (issue 13: the billing formula and weights
        # show beside the algorithm, usage model and reset in history --config).
        billing = entry.kind == "queue" and BILLING_WEIGHTS in entry.changes
        return billing or entry.kind in ("config", "factor") or entry.event == "LedgerCreated"
    if kind in ("queue", "qos", "project"):
        return entry.kind == kind and entry.name == name
    pairs = [tuple(p) for p in entry.details.get("associations", [])]
    if kind == "bank":
        return entry.kind == "bank" and (
            entry.name == name
            or name in entry.details.get("banks", [])
            or any(b == name for _, b in pairs)
        )
    if kind == "user":
        if entry.kind == "association":
            return entry.username == name and (bank is None or entry.bank == bank)
        if entry.kind == "user":
            return entry.username == name and (
                bank is None or bank in entry.changes.get("default_bank", [])
            )
        if entry.kind == "bank":
            if any(u == name and (bank is None or b == bank) for u, b in pairs):
                return True
            change = entry.details.get("default_banks", {}).get(name)
            return change is not None and (bank is None or bank in change)
    return False


def select(
    entries: Iterable[Entry],
    selector: Selector,
    since: float | None = None,
    until: float | None = None,
) -> list[Entry]:
    """The entries touching `selector` within [since, until] (inclusive). An object that no
    event ever touched is an error (a removed object still has its history)."""
    touching = [e for e in entries if touches(e, selector)]
    if not touching and selector.kind not in ("all", "config"):
        raise NotFound(f"{selector.describe()} not found in the ledger's history")
    return [
        e
        for e in touching
        if (since is None or e.time >= since) and (until is None or e.time <= until)
    ]


# --- reading the log -----------------------------------------------------------------------------
def topics(selector: Selector) -> list[str]:
    """The stored topics worth decoding for `selector`: markers and job batches only for all."""
    classes = [c for c in SITE_EVENT_CLASSES if selector.kind == "all" or c not in MARKERS]
    if selector.kind == "all":
        classes.append(JobLog.JobsRecorded)
    return [get_topic(c) for c in classes]


def position_bounds(
    conn: Connection, since: float | None, until: float | None
) -> tuple[int | None, int | None]:
    """The log positions that hold events of [since, until] (time is monotone in log order);
    needs the log index caught up."""
    start = stop = None
    if since is not None:
        rows = conn.query("SELECT MIN(position) AS p FROM log_index WHERE at >= ?", (since,))
        start = rows[0]["p"] if rows and rows[0]["p"] is not None else -1
    if until is not None:
        rows = conn.query("SELECT MAX(position) AS p FROM log_index WHERE at <= ?", (until,))
        stop = rows[0]["p"] if rows and rows[0]["p"] is not None else -1
    return (None if start is None else int(start)), (None if stop is None else int(stop))


def read_events(
    ledger: Ledger, topic_names: Sequence[str], start: int | None = None, stop: int | None = None
) -> Iterator[tuple[Any, int]]:
    """(event, log position) for the events of these topics, in log order, from `start` to
    `stop` inclusive."""
    if (start is not None and start < 0) or (stop is not None and stop < 0):
        return
    head = ledger.recorder.max_notification_id() or 0
    stop = head if stop is None else min(stop, head)
    position = 1 if start is None else max(start, 1)
    inclusive = True
    while position <= stop:
        page = ledger.recorder.select_notifications(
            start=position,
            limit=PAGE_SIZE,
            stop=stop,
            topics=list(topic_names),
            inclusive_of_start=inclusive,
        )
        if not page:
            return
        for notification in page:
            yield ledger.mapper.to_domain_event(notification), int(notification.id)
        position = int(page[-1].id)
        inclusive = False


def read_history(
    ledger: Ledger,
    conn: Connection,
    selector: Selector,
    since: float | None = None,
    until: float | None = None,
) -> list[Entry]:
    """The audit entries touching `selector`, in log order. For one object every event is read
    (to tell "never existed" from "nothing in that window"); `all` reads only the window."""
    start = stop = None
    if selector.kind == "all":
        start, stop = position_bounds(conn, since, until)
    events = read_events(ledger, topics(selector), start, stop)
    entries = select(entries_of(events), selector, since, until)
    if not entries:
        return entries
    switches = algorithm_switches(ledger, entries[-1].position)
    starts = [position for position, _ in switches]

    def in_force(position: int) -> str:
        index = bisect.bisect_right(starts, position) - 1
        return switches[index][1] if index >= 0 else WEIGHTED_WALK

    return [
        replace(e, parent_shares=True) if in_force(e.position) != WEIGHTED_WALK else e
        for e in entries
    ]


def algorithm_switches(ledger: Ledger, stop: int) -> list[tuple[int, str]]:
    """(log position, fair-share algorithm in force from it) for the ledger's creation and each
    change of the algorithm up to `stop`: the few config events, read apart from a windowed
    history so that its first entries know the algorithm too."""
    out: list[tuple[int, str]] = []
    config_topics = [get_topic(c) for c in (ev.LedgerCreated, ev.ConfigChanged, ev.ConfigRemoved)]
    for event, position in read_events(ledger, config_topics, None, stop):
        if isinstance(event, ev.LedgerCreated):
            out.append((position, event.config.get(ALGORITHM_KEY, WEIGHTED_WALK)))
        elif event.key == ALGORITHM_KEY:
            new = getattr(event, "new", None)
            out.append((position, str(new) if new is not None else WEIGHTED_WALK))
    return out
