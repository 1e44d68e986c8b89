"""Associations' rules, in memory: given events, a command, then events or a refusal."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import AlreadyExists, InvalidValue, NotFound
from ledger.limits import UNLIMITED
from ledger.site_config import ASSOCIATION_DEFAULTS
from tests.unit.site_events import Command, bank, given, project, queue, refused, then, user

NEGATIVE = "(value must be a non-negative integer or -1 to reset to default)"  # theirs
ACTIVE_AGAIN = "association bob,physics already active in association_table"


def site_steps() -> list[Command]:
    """root with two leaves, three queues and a project."""
    return [
        bank("root"),
        bank("physics", "root"),
        bank("chemistry", "root"),
        queue("batch"),
        queue("debug"),
        queue("gpu"),
        project("climate"),
    ]


def test_add_user_fills_defaults_and_makes_the_first_bank_the_default() -> None:
    site = given(*site_steps())
    given_fields: dict[str, Any] = {
        "shares": 10,
        "max_running_jobs": 3,
        "queues": "batch,debug",
        "projects": "climate",
    }
    assert then(site, lambda s, st: s.add_user(st, "alice", "physics", 5001, given_fields)) == [
        (
            "AssociationAdded",
            {
                "username": "alice",
                "bank": "physics",
                "userid": 5001,
                "fields": {
                    **ASSOCIATION_DEFAULTS,
                    "shares": 10,
                    "max_running_jobs": 3,
                    "queues": "batch,debug",
                    "projects": "climate,*",  # the catch-all project, always
                    "default_project": "climate",
                },
                "default_bank": [None, "physics"],
            },
        )
    ]


def test_a_second_association_keeps_the_default_bank_and_the_userid() -> None:
    site = given(*site_steps(), user("alice", "physics", 5001))
    ((name, body),) = then(site, lambda s, st: s.add_user(st, "alice", "chemistry", None, {}))
    assert (name, body["userid"], body["default_bank"]) == ("AssociationAdded", 5001, None)
    assert site.state.default_banks["alice"] == "physics"


def test_userid_falls_back_to_the_os_then_to_nobody() -> None:
    site = given(*site_steps())
    then(site, lambda s, st: s.add_user(st, "os", "physics", None, {}, os_userid=4242))
    then(site, lambda s, st: s.add_user(st, "nobody", "physics", None, {}))
    assert site.state.associations["os"]["physics"].userid == 4242
    assert site.state.associations["nobody"]["physics"].userid == 65534


@pytest.mark.parametrize(
    ("username", "bank_name", "fields", "kind", "message"),
    [
        ("bob", "physics", {}, AlreadyExists, ACTIVE_AGAIN),
        ("eve", "nope", {}, NotFound, "Bank nope does not exist in bank_table"),
        (
            "eve",
            "physics",
            {"shares": -2},
            InvalidValue,
            "invalid shares: -2 (shares must be >= 0)",
        ),
        (
            "eve",
            "physics",
            {"queues": "batch,nope"},
            NotFound,
            "queue nope does not exist in queue_table",
        ),
        (
            "eve",
            "physics",
            {"projects": "nope"},
            NotFound,
            "project nope does not exist in project_table",
        ),
        (
            "eve",
            "physics",
            {"max_cores": -5},
            InvalidValue,
            f"invalid max_cores: -5 {NEGATIVE}",
        ),
        ("a,b", "physics", {}, InvalidValue, "invalid username name: 'a,b'"),
    ],
)
def test_add_user_refusals(
    username: str, bank_name: str, fields: dict[str, Any], kind: type[Exception], message: str
) -> None:
    site = given(*site_steps(), user("bob", "physics"))
    command = lambda s, st: s.add_user(st, username, bank_name, None, fields)  # noqa: E731
    assert refused(site, command, kind) == message


def test_add_user_to_an_inactive_bank_is_refused() -> None:
    site = given(*site_steps(), lambda s, st: s.delete_bank(st, "physics", False))
    assert (
        refused(site, lambda s, st: s.add_user(st, "eve", "physics", None, {}))
        == "bank physics is inactive"
    )


def test_edit_user_changes_every_association_unless_a_bank_is_named() -> None:
    site = given(*site_steps(), user("bob", "physics", queues="batch"), user("bob", "chemistry"))
    assert then(
        site, lambda s, st: s.edit_user(st, "bob", None, {"max_nodes": 4, "shares": 3})
    ) == [
        (
            "AssociationEdited",
            {
                "username": "bob",
                "bank": bank_name,
                "changes": {"max_nodes": [UNLIMITED, 4], "shares": [1, 3]},
            },
        )
        for bank_name in ("chemistry", "physics")
    ]
    # Nothing to change: nothing recorded (the CLI says so).
    assert then(site, lambda s, st: s.edit_user(st, "bob", "chemistry", {"shares": 3})) == []


@pytest.mark.parametrize("reset", [-1, "-1", "unlimited"])
def test_limits_reset_to_their_defaults(reset: Any) -> None:
    site = given(*site_steps(), user("bob", "physics", max_nodes=8, shares=5, max_running_jobs=2))
    fields = {"max_nodes": reset, "shares": reset, "max_running_jobs": reset}
    ((_name, body),) = then(site, lambda s, st: s.edit_user(st, "bob", "physics", fields))
    assert body["changes"] == {
        "max_nodes": [8, UNLIMITED],
        "shares": [5, 1],
        "max_running_jobs": [2, 5],
    }


def test_queues_added_and_deleted_keep_their_order() -> None:
    site = given(*site_steps(), user("bob", "physics", queues="batch"))
    then(site, lambda s, st: s.edit_user(st, "bob", "physics", {}, ["gpu", "debug"]))
    then(site, lambda s, st: s.edit_user(st, "bob", "physics", {}, None, ["batch"]))
    assert site.state.associations["bob"]["physics"].queues == "gpu,debug"


def test_a_default_project_is_appended_to_the_projects() -> None:
    """After the others, as flux-accounting stores it."""
    site = given(*site_steps(), user("bob", "physics"))
    ((_name, body),) = then(
        site, lambda s, st: s.edit_user(st, "bob", "physics", {"default_project": "climate"})
    )
    assert body["changes"] == {"default_project": ["*", "climate"], "projects": ["*", "*,climate"]}


def test_default_bank_is_among_active_associations() -> None:
    site = given(*site_steps(), user("bob", "physics"), user("bob", "chemistry"))
    assert then(site, lambda s, st: s.edit_user(st, "bob", None, {}, default_bank="chemistry")) == [
        ("DefaultBankChanged", {"username": "bob", "old": "physics", "new": "chemistry"})
    ]
    then(site, lambda s, st: s.delete_user(st, "bob", "physics", False))
    assert (
        refused(site, lambda s, st: s.edit_user(st, "bob", None, {}, default_bank="physics"))
        == "user bob has no active association in bank physics"
    )
    assert (
        refused(site, lambda s, st: s.edit_user(st, "bob", None, {}, default_bank="-1"))
        == "default bank cannot be reset with -1"
    )


@pytest.mark.parametrize(
    ("username", "bank_name", "fields", "extra", "message"),
    [
        ("nobody", None, {"shares": 2}, {}, "user nobody not found in association_table"),
        ("bob", "chemistry", {"shares": 2}, {}, "user bob not found in bank chemistry"),
        (
            "bob",
            None,
            {},
            {"default_bank": "chemistry"},
            "user bob has no active association in bank chemistry",
        ),
        ("bob", None, {}, {"add_queues": ["nope"]}, "queue nope does not exist in queue_table"),
        (
            "bob",
            None,
            {"queues": "batch"},
            {"add_queues": ["gpu"]},
            "--queues cannot be combined with --add-queue/--delete-queue",
        ),
        (
            "bob",
            None,
            {"max_active_jobs": -4},
            {},
            f"invalid max_active_jobs: -4 {NEGATIVE}",
        ),
        ("bob", None, {"projects": "nope"}, {}, "project nope does not exist in project_table"),
        (
            "bob",
            None,
            {"default_project": "nope"},
            {},
            "project nope does not exist in project_table",
        ),
        ("bob", None, {"userid": -1}, {}, f"invalid userid: -1 {NEGATIVE}"),
    ],
)
def test_edit_user_refusals(
    username: str,
    bank_name: str | None,
    fields: dict[str, Any],
    extra: dict[str, Any],
    message: str,
) -> None:
    site = given(*site_steps(), user("bob", "physics"))
    command = lambda s, st: s.edit_user(st, username, bank_name, fields, **extra)  # noqa: E731
    assert refused(site, command) == message


def test_delete_user_moves_the_default_bank_to_the_earliest_association_left() -> None:
    site = given(*site_steps(), user("bob", "physics", max_nodes=8), user("bob", "chemistry"))
    assert then(site, lambda s, st: s.delete_user(st, "bob", "physics", False)) == [
        (
            "AssociationDeactivated",
            {"username": "bob", "bank": "physics", "default_bank": ["physics", "chemistry"]},
        )
    ]
    assert (
        refused(site, lambda s, st: s.delete_user(st, "bob", "physics", False))
        == "user bob in bank physics is already inactive (use --force to remove it)"
    )


def test_re_adding_an_inactive_association_reactivates_it_with_the_values_given() -> None:
    site = given(
        *site_steps(),
        user("bob", "physics", max_nodes=8),
        user("bob", "chemistry"),
        lambda s, st: s.delete_user(st, "bob", "physics", False),
    )
    assert then(site, lambda s, st: s.add_user(st, "bob", "physics", None, {"shares": 9})) == [
        (
            "AssociationReactivated",
            {
                "username": "bob",
                "bank": "physics",
                "changes": {"shares": [1, 9]},
                "default_bank": None,
            },
        )
    ]
    found = site.state.association("bob", "physics")
    assert found is not None and (found.active, found.shares, found.max_nodes) == (True, 9, 8)


def test_reactivating_a_users_only_association_makes_it_the_default_again() -> None:
    site = given(*site_steps(), user("bob", "physics"))
    then(site, lambda s, st: s.delete_user(st, "bob", "physics", False))
    ((_name, body),) = then(site, lambda s, st: s.add_user(st, "bob", "physics", None, {}))
    assert body["default_bank"] == ["physics", "physics"]


def test_force_removes_an_association_and_then_it_is_not_found() -> None:
    site = given(*site_steps(), user("bob", "physics"), user("bob", "chemistry"))
    assert then(site, lambda s, st: s.delete_user(st, "bob", "physics", True)) == [
        (
            "AssociationRemoved",
            {"username": "bob", "bank": "physics", "default_bank": ["physics", "chemistry"]},
        )
    ]
    assert sorted(site.state.associations["bob"]) == ["chemistry"]
    assert (
        refused(site, lambda s, st: s.delete_user(st, "bob", "physics", False), NotFound)
        == "user bob not found in bank physics"
    )
