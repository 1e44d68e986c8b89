"""Slurm QOS and the associations' QOS lists, in memory: given events, a command, then events
or a refusal. The ranges are Slurm's (research slurm.md §3.3, §4.2): Priority a uint32 whose
top value means unset, UsageFactor a double >= 0 (0: the QOS's jobs add no usage)."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import AlreadyExists, InvalidValue, LedgerError, NotFound
from tests.unit.site_events import Command, bank, given, refused, then, user

DEFAULTS = {"priority": 0, "usage_factor": 1.0, "flags": "", "description": ""}


def qos(name: str, **fields: Any) -> Command:
    return lambda s, st: s.add_qos(st, name, fields)


def test_add_qos_records_slurms_defaults() -> None:
    assert then(given(), qos("normal")) == [("QosAdded", {"qos": "normal", "fields": DEFAULTS})]


def test_add_qos_records_what_is_given_with_flags_as_slurm_spells_them() -> None:
    command = qos(
        "high",
        priority=4294967294,
        usage_factor=2.5,
        flags="usagefactorsafe, NODECAY,NoDecay",
        description="paid allocations",
    )
    assert then(given(), command) == [
        (
            "QosAdded",
            {
                "qos": "high",
                "fields": {
                    "priority": 4294967294,
                    "usage_factor": 2.5,
                    # each once, in Slurm's order of the flags, whatever the order given
                    "flags": "NoDecay,UsageFactorSafe",
                    "description": "paid allocations",
                },
            },
        )
    ]


def test_every_flag_the_brief_names_is_known() -> None:
    names = (
        "NoDecay,DenyOnLimit,NoReserve,PartitionMaxNodes,PartitionMinNodes,PartitionTimeLimit,"
        "OverPartQOS,UsageFactorSafe,RequiresReservation"
    )
    ((_, payload),) = then(given(), qos("all", flags=names))
    assert payload["fields"]["flags"] == (
        "DenyOnLimit,NoDecay,NoReserve,OverPartQOS,PartitionMaxNodes,PartitionMinNodes,"
        "PartitionTimeLimit,RequiresReservation,UsageFactorSafe"
    )


def test_edit_qos_records_old_and_new_of_what_changed_only() -> None:
    site = given(qos("high", priority=100, usage_factor=2.0, flags="NoDecay"))
    edit = {"priority": 100, "usage_factor": 0.0, "flags": "", "description": None}
    assert then(site, lambda s, st: s.edit_qos(st, "high", edit)) == [
        (
            "QosEdited",
            {"qos": "high", "changes": {"usage_factor": [2.0, 0.0], "flags": ["NoDecay", ""]}},
        )
    ]


def test_edit_qos_with_nothing_new_records_nothing() -> None:
    site = given(qos("high", priority=100))
    assert then(site, lambda s, st: s.edit_qos(st, "high", {"priority": 100})) == []


def test_delete_qos() -> None:
    site = given(qos("high"))
    assert then(site, lambda s, st: s.delete_qos(st, "high")) == [("QosRemoved", {"qos": "high"})]


@pytest.mark.parametrize(
    ("command", "kind", "message"),
    [
        (qos("normal"), AlreadyExists, "QOS normal already exists"),
        (lambda s, st: s.edit_qos(st, "nope", {"priority": 1}), NotFound, "QOS nope not found"),
        (lambda s, st: s.delete_qos(st, "nope"), NotFound, "QOS nope not found"),
        (qos("x", priority=-1), InvalidValue, "QOS priority -1 is out of range (0..4294967294)"),
        (
            qos("x", priority=4294967295),
            InvalidValue,
            "QOS priority 4294967295 is out of range (0..4294967294)",
        ),
        (qos("x", usage_factor=-0.5), InvalidValue, "invalid usage factor: -0.5 (must be >= 0)"),
        (
            qos("x", usage_factor=float("nan")),
            InvalidValue,
            "usage factor nan is not a finite number",
        ),
        (
            qos("x", usage_factor=float("inf")),
            InvalidValue,
            "usage factor inf is not a finite number",
        ),
        (
            qos("x", usage_factor=1e7),
            InvalidValue,
            "usage factor 10000000.0 is out of range (0..1000000)",
        ),
        (
            qos("x", flags="NoDecay,Fast"),
            InvalidValue,
            "invalid QOS flag: 'Fast' (known: DenyOnLimit, EnforceUsageThreshold, NoDecay, "
            "NoReserve, OverPartQOS, PartitionMaxNodes, PartitionMinNodes, PartitionTimeLimit, "
            "Relative, RequiresReservation, UsageFactorSafe)",
        ),
        (qos("a,b"), InvalidValue, "invalid QOS name: 'a,b'"),
        (
            qos("x", description="two\nlines"),
            InvalidValue,
            "invalid QOS description: 'two\\nlines' (control character)",
        ),
    ],
)
def test_qos_refusals(command: Command, kind: type[LedgerError], message: str) -> None:
    assert refused(given(qos("normal")), command, kind) == message


# --- associations' QOS ---------------------------------------------------------------------------
def test_an_association_takes_a_qos_list_and_a_default_among_them() -> None:
    site = given(bank("root"), qos("normal"), qos("high"))
    ((name, payload),) = then(
        site, user("amy", "root", 5001, qos="high, normal", default_qos="normal")
    )
    assert name == "AssociationAdded"
    assert (payload["fields"]["qos"], payload["fields"]["default_qos"]) == ("high,normal", "normal")


def test_an_association_without_qos_records_no_qos_field() -> None:
    # A Flux site's AssociationAdded keeps the shape it always had.
    site = given(bank("root"))
    ((_, payload),) = then(site, user("amy", "root", 5001))
    assert "qos" not in payload["fields"] and "default_qos" not in payload["fields"]


def test_edit_user_changes_the_list_and_default_with_old_and_new() -> None:
    site = given(
        bank("root"),
        qos("normal"),
        qos("high"),
        user("amy", "root", 5001, qos="normal", default_qos="normal"),
    )
    changes = {"qos": "normal,high", "default_qos": "high"}
    assert then(site, lambda s, st: s.edit_user(st, "amy", None, changes)) == [
        (
            "AssociationEdited",
            {
                "username": "amy",
                "bank": "root",
                "changes": {"qos": ["normal", "normal,high"], "default_qos": ["normal", "high"]},
            },
        )
    ]


def test_minus_one_clears_the_list_and_default() -> None:
    site = given(
        bank("root"), qos("normal"), user("amy", "root", 5001, qos="normal", default_qos="normal")
    )
    command = lambda s, st: s.edit_user(st, "amy", None, {"qos": "-1", "default_qos": "-1"})  # noqa: E731
    ((_, payload),) = then(site, command)
    assert payload["changes"] == {"qos": ["normal", ""], "default_qos": ["normal", ""]}


@pytest.mark.parametrize(
    ("command", "kind", "message"),
    [
        (user("bob", "root", 1, qos="normal,gold"), NotFound, "QOS gold not found"),
        (user("bob", "root", 1, default_qos="gold"), NotFound, "QOS gold not found"),
        (
            user("bob", "root", 1, qos="normal", default_qos="high"),
            InvalidValue,
            "default QOS high is not in the association's QOS list normal",
        ),
        (
            user("bob", "root", 1, default_qos="high"),
            InvalidValue,
            "default QOS high is not in the association's QOS list (none)",
        ),
        (
            # the list edited without the default the association has
            lambda s, st: s.edit_user(st, "amy", None, {"qos": "high"}),
            InvalidValue,
            "default QOS normal is not in the association's QOS list high",
        ),
        (
            lambda s, st: s.delete_qos(st, "normal"),
            InvalidValue,
            "QOS normal is used by associations amy/root: edit them first",
        ),
    ],
)
def test_association_qos_refusals(command: Command, kind: type[LedgerError], message: str) -> None:
    site = given(
        bank("root"),
        qos("normal"),
        qos("high"),
        user("amy", "root", 5001, qos="normal", default_qos="normal"),
    )
    assert refused(site, command, kind) == message


def test_a_qos_no_association_uses_any_more_can_be_deleted() -> None:
    site = given(
        bank("root"),
        qos("normal"),
        user("amy", "root", 5001, qos="normal"),
        lambda s, st: s.edit_user(st, "amy", None, {"qos": ""}),
    )
    assert then(site, lambda s, st: s.delete_qos(st, "normal")) == [
        ("QosRemoved", {"qos": "normal"})
    ]
