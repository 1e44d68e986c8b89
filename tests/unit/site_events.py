"""Given events, a command, then events: the Site aggregate in memory, no store.

`given(...)` runs set-up commands on a new Site and rebuilds a fresh aggregate from nothing but
the events they recorded, so what a test states is the log the rule is checked against. `then`
runs one command and returns what it recorded, as (event name, payload) pairs without the
metadata every event carries; `refused` runs it and returns the refusal, checking that nothing
was recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from ledger.errors import LedgerError
from ledger.site import Site, Stamp, default_config

T0 = 1_700_000_000
STAMP = Stamp(at=datetime.fromtimestamp(T0, UTC), actor="t")
# Every event's metadata: who, when, why, where from, and its place in the stream.
METADATA = {"originator_id", "originator_version", "timestamp", "actor", "reason", "source"}
HALF_LIFE, RESET_PERIOD, DECAY_FACTOR = 604800.0, 2419200.0, 0.5

Command = Callable[[Site, Stamp], Any]


def new_site() -> Site:
    return Site.create(
        STAMP, epoch=float(T0), config=default_config(HALF_LIFE, RESET_PERIOD, DECAY_FACTOR)
    )


def given(*commands: Command) -> Site:
    """A Site rebuilt from the events of creation and `commands`, with nothing pending."""
    site = new_site()
    for command in commands:
        command(site, STAMP)
    rebuilt: Any = None
    for event in site.collect_events():
        rebuilt = event.mutate(rebuilt)
    assert isinstance(rebuilt, Site)
    return rebuilt


def payload(event: Any) -> tuple[str, dict[str, Any]]:
    return type(event).__name__, {k: v for k, v in vars(event).items() if k not in METADATA}


def then(site: Site, command: Command) -> list[tuple[str, dict[str, Any]]]:
    """The events `command` records on `site`."""
    command(site, STAMP)
    return [payload(e) for e in site.collect_events()]


def refused(site: Site, command: Command, kind: type[LedgerError] = LedgerError) -> str:
    """The message of `command`'s refusal (of type `kind`); nothing may be recorded."""
    before = site.version
    with pytest.raises(kind) as caught:
        command(site, STAMP)
    assert site.collect_events() == []
    assert site.version == before
    return str(caught.value)


# --- set-up steps, as an administrator's commands ---------------------------------------------
def bank(name: str, parent: str = "", shares: int = 1) -> Command:
    return lambda s, st: s.add_bank(st, name, shares, parent, None)


def user(name: str, bank_name: str, userid: int | None = None, **given: Any) -> Command:
    return lambda s, st: s.add_user(st, name, bank_name, userid, given)


def queue(name: str, **given: Any) -> Command:
    return lambda s, st: s.add_queue(st, name, given)


def project(name: str) -> Command:
    return lambda s, st: s.add_project(st, name)


def flux_account_tree() -> list[Command]:
    """flux-accounting's t/expected/flux_account hierarchy: root; A, B, C, D; E and F under D;
    user5011 and user5012 in A, user5013 in B, user5014 in C."""
    steps = [bank("root")] + [bank(b, "root") for b in "ABCD"] + [bank("E", "D"), bank("F", "D")]
    for name, bank_name in [("user5011", "A"), ("user5012", "A"), ("user5013", "B")]:
        steps.append(user(name, bank_name, int(name[4:])))
    steps.append(user("user5014", "C", 5014))
    return steps
