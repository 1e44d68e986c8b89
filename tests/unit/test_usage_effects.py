"""Which recorded changes can move an association's usage (ledger.usage_effects): the changes
an administrator makes every day to shares, limits, queues, QOS and projects do not, so the
next update need not read every job again; anything that changes which association a job
resolves to, a cutoff or the decay does."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.site import Site
from ledger.usage_effects import UsageScope, moves_usage, usage_scope
from tests.unit.site_events import STAMP, Command, bank, given, queue, user


def recorded(site: Site, command: Command) -> list[Any]:
    command(site, STAMP)
    events = site.collect_events()
    assert events, "the command recorded nothing"
    return list(events)


def _site() -> Site:
    return given(
        bank("root"),
        bank("physics", "root"),
        queue("batch"),
        lambda s, st: s.add_qos(st, "normal", {}),
        lambda s, st: s.add_project(st, "climate"),
        user("alice", "physics", 5001),
    )


NEUTRAL: dict[str, Command] = {
    "a user's shares": lambda s, st: s.edit_user(st, "alice", None, {"shares": 5}),
    "a user's limits": lambda s, st: s.edit_user(
        st, "alice", None, {"max_running_jobs": 9, "max_nodes": 4}
    ),
    "a user's queues": lambda s, st: s.edit_user(st, "alice", None, {"queues": "batch"}),
    "a bank's shares": lambda s, st: s.edit_bank(st, "physics", shares=4),
    "a bank's priority": lambda s, st: s.edit_bank(st, "physics", priority=2.0),
    "a new bank": lambda s, st: s.add_bank(st, "chemistry", 1, "root", None),
    "a new queue": lambda s, st: s.add_queue(st, "debug", {}),
    "a queue's limits": lambda s, st: s.edit_queue(st, "batch", {"priority": 7}),
    "a queue removed": lambda s, st: s.delete_queue(st, "batch"),
    "a new QOS": lambda s, st: s.add_qos(st, "high", {}),
    "a QOS's usage factor": lambda s, st: s.edit_qos(st, "normal", {"usage_factor": 2.0}),
    "a new project": lambda s, st: s.add_project(st, "fusion"),
    "a priority weight": lambda s, st: s.edit_factor(st, "fairshare", 5),
}

MOVING: dict[str, Command] = {
    "a new association": lambda s, st: s.add_user(st, "bob", "physics", 5002, {}),
    "a user's userid": lambda s, st: s.edit_user(st, "alice", None, {"userid": 6001}),
    "a bank's cutoff": lambda s, st: s.edit_bank(st, "physics", ignore_older_than=1.7e9),
    "a bank moved": lambda s, st: (
        s.add_bank(st, "chemistry", 1, "root", None),
        s.edit_bank(st, "physics", parent_bank="chemistry"),
    ),
    "a user removed": lambda s, st: s.delete_user(st, "alice", "physics", True),
    "a decay setting": lambda s, st: s.edit_config(st, [("decay_factor", "0.25")]),
    "a config key of the site's own": lambda s, st: s.add_config(st, "note", "x"),
}


@pytest.mark.parametrize("change", sorted(NEUTRAL))
def test_a_change_to_weights_or_limits_moves_no_usage(change: str) -> None:
    assert [moves_usage(e) for e in recorded(_site(), NEUTRAL[change])] == [False]


@pytest.mark.parametrize("change", sorted(MOVING))
def test_a_change_to_what_a_job_resolves_to_or_counts_from_moves_usage(change: str) -> None:
    assert moves_usage(recorded(_site(), MOVING[change])[-1])


def test_an_edit_that_mixes_both_moves_usage() -> None:
    edit = recorded(
        _site(), lambda s, st: s.edit_user(st, "alice", None, {"shares": 2, "userid": 7})
    )
    assert [moves_usage(e) for e in edit] == [True]


def test_a_new_association_or_default_bank_moves_only_its_users_usage() -> None:
    added = recorded(_site(), lambda s, st: s.add_user(st, "bob", "physics", 5002, {}))
    assert usage_scope(added[-1]) == UsageScope(frozenset({"bob"}), frozenset({5002}))
    site = given(
        bank("root"), bank("physics", "root"), bank("chemistry", "root"), user("alice", "physics")
    )
    site.add_user(STAMP, "alice", "chemistry", None, {})
    site.collect_events()
    default = recorded(
        site, lambda s, st: s.edit_user(st, "alice", None, {}, default_bank="chemistry")
    )
    assert [usage_scope(e) for e in default] == [UsageScope(frozenset({"alice"}), frozenset())]


@pytest.mark.parametrize("change", sorted(set(MOVING) - {"a new association"}))
def test_every_other_change_that_moves_usage_moves_anyones(change: str) -> None:
    assert usage_scope(recorded(_site(), MOVING[change])[-1]) is None
