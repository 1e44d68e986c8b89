"""The bank tree's rules, in memory: given events, a command, then events or a refusal."""

from __future__ import annotations

import pytest

from ledger.errors import AlreadyExists, InvalidValue, NotFound
from tests.unit.site_events import Command, bank, flux_account_tree, given, refused, then, user


def test_add_bank_records_the_next_id_and_a_zero_priority() -> None:
    site = given(bank("root"))
    assert then(site, lambda s, st: s.add_bank(st, "A", 7, "root", None)) == [
        (
            "BankAdded",
            {"bank": "A", "parent_bank": "root", "shares": 7, "priority": 0.0, "bank_id": 2},
        )
    ]


def test_a_second_root_is_refused() -> None:
    site = given(bank("root"))
    assert (
        refused(site, lambda s, st: s.add_bank(st, "X", 1, "", None), AlreadyExists)
        == "bank_table already has a root bank: root"
    )


@pytest.mark.parametrize(
    ("name", "shares", "parent", "kind", "message"),
    [
        ("A", 1, "root", AlreadyExists, "bank A already exists"),
        ("X", 1, "nope", NotFound, "parent bank nope not found in bank_table"),
        ("X", -3, "root", InvalidValue, "invalid shares: -3 (shares must be >= 0)"),
        ("a,b", 1, "root", InvalidValue, "invalid bank name: 'a,b'"),
        (" A", 1, "root", InvalidValue, "invalid bank name: ' A'"),
    ],
)
def test_add_bank_refusals(
    name: str, shares: int, parent: str, kind: type[Exception], message: str
) -> None:
    site = given(*flux_account_tree())
    assert refused(site, lambda s, st: s.add_bank(st, name, shares, parent, None), kind) == message


def test_a_bank_under_an_inactive_parent_is_refused() -> None:
    site = given(bank("root"), bank("A", "root"), lambda s, st: s.delete_bank(st, "A", False))
    assert (
        refused(site, lambda s, st: s.add_bank(st, "X", 1, "A", None))
        == "parent bank A is inactive"
    )


def test_edit_bank_records_old_and_new() -> None:
    site = given(*flux_account_tree())
    assert then(site, lambda s, st: s.edit_bank(st, "F", shares=5, parent_bank="root")) == [
        ("BankEdited", {"bank": "F", "changes": {"shares": [1, 5], "parent_bank": ["D", "root"]}})
    ]
    assert then(site, lambda s, st: s.edit_bank(st, "F", shares=5)) == []  # nothing to change


@pytest.mark.parametrize(
    ("bank_name", "parent", "message"),
    [
        ("D", "E", "moving bank D under E would make a cycle in the bank tree"),
        ("D", "D", "moving bank D under D would make a cycle in the bank tree"),
        ("root", "A", "bank root is the root bank and cannot be moved"),
        ("D", "nope", "parent bank nope not found in bank_table"),
    ],
)
def test_a_bank_move_keeps_a_tree(bank_name: str, parent: str, message: str) -> None:
    site = given(*flux_account_tree())
    assert refused(site, lambda s, st: s.edit_bank(st, bank_name, parent_bank=parent)) == message


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (lambda s, st: s.edit_bank(st, "nope", shares=2), "bank nope not found in bank_table"),
        (lambda s, st: s.edit_bank(st, "A", shares=-1), "invalid shares: -1 (shares must be >= 0)"),
        (lambda s, st: s.delete_bank(st, "nope", False), "bank nope not found in bank_table"),
    ],
)
def test_edit_and_delete_bank_refusals(command: Command, message: str) -> None:
    assert refused(given(*flux_account_tree()), command) == message


def test_delete_bank_deactivates_its_subtree_and_moves_default_banks() -> None:
    site = given(*flux_account_tree(), user("user5011", "E"), user("user5030", "E", 5030))
    assert then(site, lambda s, st: s.delete_bank(st, "A", False)) == [
        (
            "BankDeactivated",
            {
                "bank": "A",
                "banks": ["A"],
                "associations": [["user5011", "A"], ["user5012", "A"]],
                # user5011's default moves to the association left; user5012 has none left.
                "default_banks": {"user5011": ["A", "E"]},
            },
        )
    ]
    assert then(site, lambda s, st: s.delete_bank(st, "D", False)) == [
        (
            "BankDeactivated",
            {
                "bank": "D",
                "banks": ["D", "E", "F"],
                "associations": [["user5011", "E"], ["user5030", "E"]],
                "default_banks": {},
            },
        )
    ]
    state = site.state
    assert [b.bank for b in state.banks.values() if b.active] == ["root", "B", "C"]
    assert not state.associations["user5030"]["E"].active


def test_delete_bank_twice_needs_force_and_force_removes() -> None:
    site = given(*flux_account_tree(), lambda s, st: s.delete_bank(st, "A", False))
    assert (
        refused(site, lambda s, st: s.delete_bank(st, "A", False))
        == "bank A is already inactive (use --force to remove it)"
    )
    ((name, body),) = then(site, lambda s, st: s.delete_bank(st, "A", True))
    assert (name, body["associations"]) == (
        "BankRemoved",
        [["user5011", "A"], ["user5012", "A"]],  # inactive ones too: they go with it
    )
    assert "A" not in site.state.banks


def test_force_removes_an_active_subtree_with_its_associations() -> None:
    site = given(*flux_account_tree(), user("user5030", "E", 5030))
    then(site, lambda s, st: s.delete_bank(st, "D", True))
    assert sorted(site.state.banks) == ["A", "B", "C", "root"]
    assert "user5030" not in site.state.associations


def test_re_adding_an_inactive_bank_reactivates_it_with_the_arguments_given() -> None:
    site = given(bank("root"), bank("A", "root"), lambda s, st: s.delete_bank(st, "A", False))
    assert then(site, lambda s, st: s.add_bank(st, "A", 40, "root", 3.0)) == [
        ("BankReactivated", {"bank": "A", "changes": {"shares": [1, 40], "priority": [0.0, 3.0]}})
    ]
    found = site.state.banks["A"]
    assert (found.active, found.shares, found.priority) == (True, 40, 3.0)
