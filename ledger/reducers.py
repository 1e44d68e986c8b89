"""Pure reducers: fold one site event into SiteState and say which rows it touched.

The Site aggregate applies these on replay; the SQL projection uses the returned `Touched`
keys to rewrite just those rows. No I/O, no clock: the event's own timestamp is the time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch
from typing import Any

from ledger import events as ev
from ledger import import_events as iev
from ledger.state import Association, Bank, Project, Qos, Queue, SiteState


@dataclass
class Touched:
    banks: set[str] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    queues: set[str] = field(default_factory=set)
    projects: set[str] = field(default_factory=set)
    qos: set[str] = field(default_factory=set)
    factors: bool = False
    config: bool = False

    def update(self, other: Touched) -> None:
        self.banks |= other.banks
        self.users |= other.users
        self.queues |= other.queues
        self.projects |= other.projects
        self.qos |= other.qos
        self.factors |= other.factors
        self.config |= other.config


def fold(state: SiteState, event: Any) -> Touched:
    return _fold(event, state)


def _when(event: Any) -> float:
    return float(event.timestamp.timestamp())


def _set_default_bank(state: SiteState, username: str, change: list[str | None] | None) -> None:
    if not change:
        return
    new = change[1]
    if new:
        state.default_banks[username] = new
    else:
        state.default_banks.pop(username, None)


@singledispatch
def _fold(event: Any, state: SiteState) -> Touched:
    raise TypeError(f"no reducer for {type(event).__name__}")


@_fold.register
def _(event: ev.LedgerCreated, state: SiteState) -> Touched:
    state.epoch = event.epoch
    state.config = dict(event.config)
    state.factors = dict(event.factors)
    return Touched(factors=True, config=True)


@_fold.register
def _(event: ev.ConfigChanged, state: SiteState) -> Touched:
    state.config[event.key] = event.new
    return Touched(config=True)


@_fold.register
def _(event: ev.ConfigRemoved, state: SiteState) -> Touched:
    state.config.pop(event.key, None)
    return Touched(config=True)


@_fold.register
def _(event: ev.FairshareSet, state: SiteState) -> Touched:
    # The value lives in the usage read models (association_table.fairshare, and as-of's
    # fair-share in force), not in the site state.
    return Touched()


@_fold.register
def _(event: ev.FactorWeightChanged, state: SiteState) -> Touched:
    state.factors[event.factor] = event.new
    return Touched(factors=True)


@_fold.register
def _(event: ev.BankAdded, state: SiteState) -> Touched:
    state.banks[event.bank] = Bank(
        bank_id=event.bank_id,
        bank=event.bank,
        parent_bank=event.parent_bank,
        shares=event.shares,
        priority=event.priority,
    )
    state.next_bank_id = max(state.next_bank_id, event.bank_id + 1)
    return Touched(banks={event.bank})


def _edit_bank(state: SiteState, name: str, changes: dict[str, list[Any]]) -> Touched:
    bank = state.banks[name]
    for field_name, (_old, new) in changes.items():
        setattr(bank, field_name, new)
    touched = Touched(banks={name})
    if "ignore_older_than" in changes:
        # flux-accounting keeps one cutoff per bank, which clear-usage also sets: setting it
        # (back to 0, say) replaces the cutoff clear-usage left on the associations below, so
        # their older jobs count again.
        new = changes["ignore_older_than"][1]
        below = {b.bank for b in state.subtree(name)}
        for assoc in state.all_associations():
            if assoc.bank in below and assoc.ignore_older_than != new:
                assoc.ignore_older_than = new
                touched.users.add(assoc.username)
    return touched


@_fold.register
def _(event: ev.BankEdited, state: SiteState) -> Touched:
    return _edit_bank(state, event.bank, event.changes)


def _deactivate_subtree(
    state: SiteState, banks: list[str], assocs: list[list[str]], defaults: dict[str, Any], at: float
) -> Touched:
    touched = Touched(banks=set(banks))
    for name in banks:
        state.banks[name].active = False
    for username, bank in assocs:
        assoc = state.associations[username][bank]
        assoc.active = False
        assoc.mod_time = at
        touched.users.add(username)
    for username, change in defaults.items():
        _set_default_bank(state, username, change)
        touched.users.add(username)
    return touched


@_fold.register
def _(event: ev.BankDeactivated, state: SiteState) -> Touched:
    return _deactivate_subtree(
        state, event.banks, event.associations, event.default_banks, _when(event)
    )


@_fold.register
def _(event: ev.BankReactivated, state: SiteState) -> Touched:
    state.banks[event.bank].active = True
    return _edit_bank(state, event.bank, event.changes)


@_fold.register
def _(event: ev.BankRemoved, state: SiteState) -> Touched:
    touched = Touched(banks=set(event.banks))
    for username, bank in event.associations:
        del state.associations[username][bank]
        if not state.associations[username]:
            del state.associations[username]
        touched.users.add(username)
    for username, change in event.default_banks.items():
        _set_default_bank(state, username, change)
        touched.users.add(username)
    for name in event.banks:
        del state.banks[name]
    return touched


@_fold.register
def _(event: ev.AssociationAdded, state: SiteState) -> Touched:
    at = _when(event)
    # An association brought over from another system (import, pop-db) keeps the creation
    # and modification times it had there; its event's source carries them.
    state.associations.setdefault(event.username, {})[event.bank] = Association(
        username=event.username,
        bank=event.bank,
        userid=event.userid,
        creation_time=float(event.source.get("creation_time", at)),
        mod_time=float(event.source.get("mod_time", at)),
        **event.fields,
    )
    _set_default_bank(state, event.username, event.default_bank)
    return Touched(users={event.username})


def _apply_changes(assoc: Association, changes: dict[str, list[Any]], at: float) -> None:
    for name, (_old, new) in changes.items():
        setattr(assoc, name, new)
    assoc.mod_time = at


@_fold.register
def _(event: ev.AssociationEdited, state: SiteState) -> Touched:
    _apply_changes(state.associations[event.username][event.bank], event.changes, _when(event))
    return Touched(users={event.username})


@_fold.register
def _(event: ev.AssociationDeactivated, state: SiteState) -> Touched:
    assoc = state.associations[event.username][event.bank]
    assoc.active = False
    assoc.mod_time = _when(event)
    _set_default_bank(state, event.username, event.default_bank)
    return Touched(users={event.username})


@_fold.register
def _(event: ev.AssociationReactivated, state: SiteState) -> Touched:
    assoc = state.associations[event.username][event.bank]
    assoc.active = True
    _apply_changes(assoc, event.changes, _when(event))
    _set_default_bank(state, event.username, event.default_bank)
    return Touched(users={event.username})


@_fold.register
def _(event: ev.AssociationRemoved, state: SiteState) -> Touched:
    del state.associations[event.username][event.bank]
    if not state.associations[event.username]:
        del state.associations[event.username]
    _set_default_bank(state, event.username, event.default_bank)
    return Touched(users={event.username})


@_fold.register
def _(event: ev.DefaultBankChanged, state: SiteState) -> Touched:
    state.default_banks[event.username] = event.new
    for assoc in state.associations.get(event.username, {}).values():
        assoc.mod_time = _when(event)
    return Touched(users={event.username})


@_fold.register
def _(event: ev.QueueAdded, state: SiteState) -> Touched:
    state.queues[event.queue] = Queue(queue=event.queue, **event.fields)  # type: ignore[arg-type]
    return Touched(queues={event.queue})


@_fold.register
def _(event: ev.QueueEdited, state: SiteState) -> Touched:
    queue = state.queues[event.queue]
    for name, (_old, new) in event.changes.items():
        setattr(queue, name, new)
    return Touched(queues={event.queue})


@_fold.register
def _(event: ev.QueueRemoved, state: SiteState) -> Touched:
    del state.queues[event.queue]
    return Touched(queues={event.queue})


@_fold.register
def _(event: ev.QosAdded, state: SiteState) -> Touched:
    state.qos[event.qos] = Qos(qos=event.qos, **event.fields)
    return Touched(qos={event.qos})


@_fold.register
def _(event: ev.QosEdited, state: SiteState) -> Touched:
    qos = state.qos[event.qos]
    for name, (_old, new) in event.changes.items():
        setattr(qos, name, new)
    return Touched(qos={event.qos})


@_fold.register
def _(event: ev.QosRemoved, state: SiteState) -> Touched:
    del state.qos[event.qos]
    return Touched(qos={event.qos})


@_fold.register
def _(event: ev.ProjectAdded, state: SiteState) -> Touched:
    state.projects[event.project] = Project(project_id=event.project_id, project=event.project)
    state.next_project_id = max(state.next_project_id, event.project_id + 1)
    return Touched(projects={event.project})


@_fold.register
def _(event: ev.ProjectRemoved, state: SiteState) -> Touched:
    del state.projects[event.project]
    return Touched(projects={event.project})


@_fold.register
def _(event: ev.UsageCleared, state: SiteState) -> Touched:
    touched = Touched()
    for username, bank in event.associations:
        state.associations[username][bank].ignore_older_than = event.ignore_older_than
        touched.users.add(username)
    # The cleared bank keeps the cutoff, as flux-accounting's bank_table does: view-bank and
    # export-db show it, and an association added below it later does not count older jobs.
    cleared = state.banks.get(event.bank)
    if cleared is not None:
        cleared.ignore_older_than = event.ignore_older_than
        touched.banks.add(event.bank)
    return touched


@_fold.register
def _(event: ev.UsageUpdated, state: SiteState) -> Touched:
    state.last_usage_update = _when(event)
    return Touched()


@_fold.register
def _(event: ev.FairshareUpdated, state: SiteState) -> Touched:
    state.last_fairshare_update = _when(event)
    state.last_usage_update = _when(event)
    return Touched()


@_fold.register
def _(event: ev.EventNeutralized, state: SiteState) -> Touched:
    # Honoured by whoever replays (projections.writers.runner, ledger.store.site_repository),
    # which skip the neutralized event; the state itself does not change.
    return Touched()


@_fold.register
def _(event: iev.UsageBalanceImported, state: SiteState) -> Touched:
    # The balance lives in the usage read models (period totals), not in the site state.
    return Touched()


@_fold.register
def _(event: iev.SiteImported, state: SiteState) -> Touched:
    state.imports[event.sha256] = {"file": event.file, "at": _when(event)}
    return Touched()
