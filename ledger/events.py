"""The site's events, past tense. Each carries who made the change (actor), why (reason) and
where it came from (source: a file imported, a command), and edits carry old -> new values so
that an audit line can read "shares 10 -> 50" without replaying anything.

Event classes are stored by topic (module:QualName): never rename or move one without an
upcaster/register_topic (tests pin the topics).
"""

from __future__ import annotations

from typing import Any, Protocol

from eventsourcing.domain import Aggregate


class _Folds(Protocol):
    def fold(self, event: Any) -> None: ...


class SiteEvent(Aggregate.Event):
    actor: str
    reason: str
    source: dict[str, Any]

    def apply(self, aggregate: Any) -> None:
        # The pure reducers live in ledger.reducers; the aggregate forwards to them so that
        # SQL projections and as-of replays fold exactly the same way.
        aggregate.fold(self)


class LedgerCreated(Aggregate.Created):
    actor: str
    reason: str
    source: dict[str, Any]
    epoch: float
    config: dict[str, str]
    factors: dict[str, int]

    def apply(self, aggregate: Any) -> None:
        aggregate.fold(self)


class ConfigChanged(SiteEvent):
    key: str
    old: str | None
    new: str


class FactorWeightChanged(SiteEvent):
    factor: str
    old: int | None
    new: int


class BankAdded(SiteEvent):
    bank: str
    parent_bank: str
    shares: int
    priority: float
    bank_id: int


class BankEdited(SiteEvent):
    bank: str
    changes: dict[str, list[Any]]  # field -> [old, new]


class BankDeactivated(SiteEvent):
    bank: str
    banks: list[str]  # the whole subtree, parents first
    associations: list[list[str]]  # [username, bank] pairs deactivated with it
    default_banks: dict[str, list[str | None]]  # username -> [old, new]


class BankReactivated(SiteEvent):
    bank: str
    changes: dict[str, list[Any]]


class BankRemoved(SiteEvent):
    bank: str
    banks: list[str]
    associations: list[list[str]]
    default_banks: dict[str, list[str | None]]


class AssociationAdded(SiteEvent):
    username: str
    bank: str
    userid: int
    fields: dict[str, Any]
    default_bank: list[str | None] | None  # [old, new] when this changes the user's default


class AssociationEdited(SiteEvent):
    username: str
    bank: str
    changes: dict[str, list[Any]]


class AssociationDeactivated(SiteEvent):
    username: str
    bank: str
    default_bank: list[str | None] | None


class AssociationReactivated(SiteEvent):
    username: str
    bank: str
    changes: dict[str, list[Any]]
    default_bank: list[str | None] | None


class AssociationRemoved(SiteEvent):
    username: str
    bank: str
    default_bank: list[str | None] | None


class DefaultBankChanged(SiteEvent):
    username: str
    old: str | None
    new: str


class QueueAdded(SiteEvent):
    queue: str
    fields: dict[str, int | str]  # the limits, and billing_weights (text) when given


class QueueEdited(SiteEvent):
    queue: str
    changes: dict[str, list[int]]


class QueueRemoved(SiteEvent):
    queue: str


class QosAdded(SiteEvent):
    qos: str
    fields: dict[str, Any]  # priority, usage_factor, flags, description


class QosEdited(SiteEvent):
    qos: str
    changes: dict[str, list[Any]]  # field -> [old, new]


class QosRemoved(SiteEvent):
    qos: str


class ProjectAdded(SiteEvent):
    project: str
    project_id: int


class ProjectRemoved(SiteEvent):
    project: str


class UsageCleared(SiteEvent):
    bank: str
    associations: list[list[str]]
    ignore_older_than: float


class UsageUpdated(SiteEvent):
    """A marker: usage was recomputed at this event's time (values derived, never stored)."""


class FairshareUpdated(SiteEvent):
    """A marker: fair-share was recomputed at this event's time (the snapshot now in force)."""


# The markers: their fold sets the state's own update times and nothing else (ledger.reducers).
MARKERS = (UsageUpdated, FairshareUpdated)


class EventNeutralized(SiteEvent):
    """An event already in the log that its read models cannot apply (recorded by a release
    that appended before projecting), set aside: folds and the Site aggregate skip it (a Site
    event), or the named job records of it (a job batch: `jobs` holds their [cluster, id]);
    the event itself stays in the log. `site_version` is the neutralized Site event's version
    (None for a job batch); `summary` says what it was, for history."""

    position: int
    site_version: int | None
    jobs: list[list[str]]
    summary: str


class FairshareSet(SiteEvent):
    """An association's fair-share set by hand (add-user/edit-user --fairshare): in force from
    here until the next update-fshare whose walk ranks the association (as an opening
    balance's stored value is; ledger.fairshare_in_force). `old` is the value it showed."""

    username: str
    bank: str
    old: float | None
    new: float


class ConfigRemoved(SiteEvent):
    """delete-config: a key added by add-config taken out (the core keys cannot be)."""

    key: str
    old: str
