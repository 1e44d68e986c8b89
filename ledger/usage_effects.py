"""Which site changes can move an association's usage, whose, and which only the fair-share or
priority.

Usage is computed from the jobs recorded (their charge and billing fixed when they were
recorded) and from the site state in three ways only: which association a job resolves to (the
associations, the users' userids and default banks), the cutoffs before which jobs stop
counting (clear-usage, an association's or a bank's ignore_older_than, over the bank tree
above it) and the decay settings (config). A change that touches none of these leaves every
association's usage as it was, so the usage already computed still holds after it: the
next update need not read every job again (projections.writers.usage_tables.settled_position,
continuous_state). It still changes what the walk or Fair Tree makes of that usage (shares, an
empty bank beside others), so the fair-share is computed anew.

A change that can move usage moves only some users' usage when all it changes is which of a
user's associations that user's jobs resolve to: a new association (its user's jobs may now
resolve to it, and a userid it shares with another user then names no one alone), a new
default bank. `usage_scope` names them; the next update recomputes those users' usage from all
their jobs and carries the rest. Every other such change (a removal, a new userid, a cutoff, a
decay setting...) recomputes every association.

A whitelist: a field or event added later counts as moving usage until it is listed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger import events as ev
from ledger.limit_fields import ASSOCIATION_LIMIT_FIELDS

# Events that touch nothing a job resolves to, no cutoff and no decay setting. A new bank holds
# no association yet, so no job resolves under it and no cutoff of its applies to anyone.
_NEUTRAL_EVENTS: tuple[type[Any], ...] = (
    ev.FactorWeightChanged,
    ev.QueueAdded,
    ev.QueueEdited,
    ev.QueueRemoved,
    ev.QosAdded,
    ev.QosEdited,
    ev.QosRemoved,
    ev.ProjectAdded,
    ev.ProjectRemoved,
    ev.BankAdded,
)

# Edited fields that only weigh or limit an association: not its userid, not its cutoff.
NEUTRAL_ASSOCIATION_FIELDS = frozenset(
    {
        "shares",
        *ASSOCIATION_LIMIT_FIELDS,
        "queues",
        "projects",
        "default_project",
        "qos",
        "default_qos",
    }
)

# Edited fields of a bank that do not move it in the tree nor set its cutoff.
NEUTRAL_BANK_FIELDS = frozenset({"shares", "priority"})


def moves_usage(event: Any) -> bool:
    """Whether recording `event` can change any association's usage (see the module)."""
    if isinstance(event, _NEUTRAL_EVENTS):
        return False
    if isinstance(event, ev.AssociationEdited):
        return not set(event.changes) <= NEUTRAL_ASSOCIATION_FIELDS
    if isinstance(event, ev.BankEdited):
        return not set(event.changes) <= NEUTRAL_BANK_FIELDS
    return True


@dataclass(frozen=True)
class UsageScope:
    """The users whose usage a change can move: those named, and every user holding one of
    `userids` (a job that names only its userid resolves to the one user holding it)."""

    usernames: frozenset[str]
    userids: frozenset[int]


def usage_scope(event: Any) -> UsageScope | None:
    """The users whose usage `event` alone can move; None when it can move anyone's (or no
    one's: moves_usage says which)."""
    if isinstance(event, ev.AssociationAdded):
        return UsageScope(frozenset({event.username}), frozenset({event.userid}))
    if isinstance(event, ev.DefaultBankChanged):
        return UsageScope(frozenset({event.username}), frozenset())
    return None
