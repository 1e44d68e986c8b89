"""Associations through the CLI, on both stores."""

from __future__ import annotations

import json

from tests.conftest import Store, refusal


def site(store: Store) -> None:
    store.run("add-bank", "root", "1")
    for bank in ("physics", "chemistry"):
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    for queue in ("batch", "debug", "gpu"):
        store.run("add-queue", queue)
    store.run("add-project", "climate")


def users(store: Store, *filters: str) -> list[dict]:
    return json.loads(store.run("list-users", *filters, "--json").stdout)


def test_add_user_defaults_and_fields(ledger_store: Store) -> None:
    site(ledger_store)
    ledger_store.run(
        "add-user",
        "-u",
        "alice",
        "-B",
        "physics",
        "-i",
        "5001",
        "--shares",
        "10",
        "--max-running-jobs",
        "3",
        "-q",
        "batch,debug",
        "-P",
        "climate",
    )
    (row,) = users(ledger_store)
    assert row == {
        "creation_time": 1700000000,
        "mod_time": 1700000000,
        "active": 1,
        "username": "alice",
        "userid": 5001,
        "bank": "physics",
        "default_bank": "physics",
        "shares": 10,
        "job_usage": 0.0,
        "fairshare": 0.5,
        "max_running_jobs": 3,
        "max_active_jobs": 7,
        "max_nodes": "unlimited",
        "max_cores": "unlimited",
        "queues": "batch,debug",
        "projects": "climate,*",
        "default_project": "climate",
        "max_sched_jobs": "unlimited",
    }


def test_edit_user_options_reach_the_site(ledger_store: Store) -> None:
    """The options' parsing (unlimited, -1, repeated --add-queue) and the tables; the rules
    (resets, queue order, the default bank) are tests/unit/test_site_users.py's."""
    site(ledger_store)
    ledger_store.run("add-user", "-u", "bob", "-B", "physics", "-q", "batch")
    ledger_store.run("add-user", "-u", "bob", "-B", "chemistry", "-q", "batch")
    ledger_store.run("edit-user", "bob", "--max-nodes", "4", "--shares", "3")
    assert [(r["max_nodes"], r["shares"]) for r in users(ledger_store)] == [(4, 3), (4, 3)]
    ledger_store.run(
        "edit-user",
        "bob",
        "-B",
        "physics",
        "--max-nodes",
        "unlimited",
        "--shares",
        "-1",
        "--add-queue",
        "gpu",
        "--add-queue",
        "debug",
    )
    ledger_store.run("edit-user", "bob", "-B", "physics", "--delete-queue", "batch")
    rows = {r["bank"]: r for r in users(ledger_store)}
    assert (rows["physics"]["max_nodes"], rows["physics"]["shares"]) == ("unlimited", 1)
    assert rows["physics"]["queues"] == "gpu,debug"
    assert rows["chemistry"]["queues"] == "batch"
    ledger_store.run("edit-user", "bob", "--default-bank", "chemistry")
    assert {r["default_bank"] for r in users(ledger_store)} == {"chemistry"}
    assert ledger_store.run("view-user", "bob", "--list-banks").stdout == "chemistry\nphysics\n"
    result = ledger_store.run("edit-user", "bob", "--shares", "3", "-B", "chemistry")
    assert "nothing to change" in result.stderr


def test_add_and_edit_user_refusals_write_nothing(ledger_store: Store) -> None:
    """One refusal per command, and the usage errors of the limit options."""
    site(ledger_store)
    ledger_store.run("add-user", "-u", "bob", "-B", "physics")
    before = ledger_store.log_position()
    cases = {
        ("add-user", "-u", "bob", "-B", "physics"): (
            "association bob,physics already active in association_table"
        ),
        (
            "edit-user",
            "bob",
            "--default-bank",
            "chemistry",
        ): "user bob has no active association in bank chemistry",
        ("delete-user", "bob", "chemistry"): "user bob not found in bank chemistry",
    }
    for args, message in cases.items():
        result = ledger_store.run(*args, expect=1)
        kind = "IntegrityError" if "already active" in message else "ValueError"
        assert result.stderr == refusal(args[0], message, kind), args
        assert result.stdout == ""
    assert (
        ledger_store.run("edit-user", "bob", "--max-nodes", "lots", expect=2).stderr.count(
            "'lots' is not an integer or 'unlimited'"
        )
        == 1
    )
    ledger_store.run("add-user", "-u", "eve", "-B", "physics", "--max-cores", "x", expect=2)
    assert ledger_store.log_position() == before


def test_delete_and_reactivate_user(ledger_store: Store) -> None:
    site(ledger_store)
    ledger_store.run("add-user", "-u", "bob", "-B", "physics", "--max-nodes", "8")
    ledger_store.run("add-user", "-u", "bob", "-B", "chemistry")
    ledger_store.run("delete-user", "bob", "physics")
    rows = {r["bank"]: r for r in users(ledger_store)}
    assert rows["physics"]["active"] == 0
    assert rows["chemistry"]["default_bank"] == "chemistry"
    assert users(ledger_store, "--active", "1")[0]["bank"] == "chemistry"
    ledger_store.run("add-user", "-u", "bob", "-B", "physics", "--shares", "9")
    rows = {r["bank"]: r for r in users(ledger_store)}
    # Reactivation applies the arguments given and keeps the rest.
    assert (rows["physics"]["active"], rows["physics"]["shares"], rows["physics"]["max_nodes"]) == (
        1,
        9,
        8,
    )
    ledger_store.run("delete-user", "bob", "physics", "--force")
    assert [r["bank"] for r in users(ledger_store)] == ["chemistry"]


def test_list_users_filters_and_view_user(ledger_store: Store) -> None:
    site(ledger_store)
    ledger_store.run("add-user", "-u", "alice", "-B", "physics", "-q", "batch,gpu")
    ledger_store.run("add-user", "-u", "bob", "-B", "chemistry", "-q", "debug")
    ledger_store.run("add-user", "-u", "carol", "-B", "physics", "--shares", "5")
    assert [r["username"] for r in users(ledger_store, "-B", "physics")] == ["alice", "carol"]
    assert [r["username"] for r in users(ledger_store, "-q", "gpu,debug")] == ["alice", "bob"]
    assert [r["username"] for r in users(ledger_store, "--shares", "5")] == ["carol"]
    assert [r["username"] for r in users(ledger_store, "-B", "physics", "--shares", "1")] == [
        "alice"
    ]
    out = ledger_store.run("list-users", "--fields", "username,bank").stdout
    assert out.splitlines() == [
        "username | bank     ",
        "---------+----------",
        "alice    | physics  ",
        "bob      | chemistry",
        "carol    | physics  ",
    ]
    out = ledger_store.run("view-user", "bob", "-o", "{username}:{bank}:{queues}").stdout
    assert out == "username:bank:queues\nbob:chemistry:debug\n"
    assert ledger_store.run("view-user", "nobody", expect=1).stderr == refusal(
        "view-user", "user nobody not found in association_table"
    )
    ledger_store.run("list-users", "--shares", "x", expect=2)
