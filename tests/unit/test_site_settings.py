"""Queues, projects, factor weights and config, in memory: given events, a command, then events
or a refusal."""

from __future__ import annotations

import pytest

from ledger.errors import AlreadyExists, InvalidValue, LedgerError, NotFound
from ledger.limits import UNLIMITED
from ledger.site_config import QUEUE_DEFAULTS
from tests.unit.site_events import (
    Command,
    bank,
    given,
    new_site,
    project,
    queue,
    refused,
    then,
    user,
)

NEGATIVE = "(value must be a non-negative integer or -1 to reset to default)"  # theirs
UNKNOWN_FACTOR = (
    "factor age not found in priority_factor_weight_table; available factors are "
    "fairshare,queue,bank,urgency"
)


# --- queues --------------------------------------------------------------------------------------
def test_add_queue_fills_defaults_and_takes_a_negative_priority() -> None:
    fields = {"priority": -10, "max_running_jobs": 20, "max_sched_nodes_per_assoc": 40}
    assert then(given(), lambda s, st: s.add_queue(st, "gold", fields)) == [
        ("QueueAdded", {"queue": "gold", "fields": {**QUEUE_DEFAULTS, **fields}})
    ]


def test_edit_queue_resets_a_limit_with_minus_one_but_not_the_priority() -> None:
    site = given(queue("gold", priority=300, max_running_jobs=20))
    changes = {"priority": -1, "max_running_jobs": -1}
    assert then(site, lambda s, st: s.edit_queue(st, "gold", changes)) == [
        (
            "QueueEdited",
            {"queue": "gold", "changes": {"priority": [300, -1], "max_running_jobs": [20, 100]}},
        )
    ]


def test_delete_queue_names_the_associations_that_still_list_it() -> None:
    site = given(bank("root"), queue("gold"), user("amy", "root", queues="gold"))
    listed: list[list[str]] = []
    assert then(site, lambda s, st: listed.append(s.delete_queue(st, "gold"))) == [
        ("QueueRemoved", {"queue": "gold"})
    ]
    assert listed == [["amy/root"]]


@pytest.mark.parametrize(
    ("command", "kind", "message"),
    [
        (
            lambda s, st: s.add_queue(st, "standby", {}),
            AlreadyExists,
            "queue standby already exists in queue_table",
        ),
        (
            lambda s, st: s.edit_queue(st, "nope", {"priority": 1}),
            NotFound,
            "queue nope not found in queue_table",
        ),
        (lambda s, st: s.delete_queue(st, "nope"), NotFound, "queue nope not found in queue_table"),
        (
            lambda s, st: s.edit_queue(st, "standby", {"max_running_jobs": -7}),
            InvalidValue,
            f"invalid max_running_jobs: -7 {NEGATIVE}",
        ),
        (
            lambda s, st: s.add_queue(st, "q", {"max_nodes": -2}),
            InvalidValue,
            f"invalid max_nodes: -2 {NEGATIVE}",
        ),
    ],
)
def test_queue_refusals(command: Command, kind: type[LedgerError], message: str) -> None:
    assert refused(given(queue("standby")), command, kind) == message


# --- projects ------------------------------------------------------------------------------------
def test_a_new_site_has_the_catch_all_project_and_projects_number_on() -> None:
    assert list(new_site().state.projects) == ["*"]
    assert then(given(), lambda s, st: s.add_project(st, "climate")) == [
        ("ProjectAdded", {"project": "climate", "project_id": 2})
    ]


def test_delete_project_names_the_associations_that_still_list_it() -> None:
    site = given(bank("root"), project("climate"), user("amy", "root", projects="climate"))
    listed: list[list[str]] = []
    assert then(site, lambda s, st: listed.append(s.delete_project(st, "climate"))) == [
        ("ProjectRemoved", {"project": "climate"})
    ]
    assert listed == [["amy/root"]]


@pytest.mark.parametrize(
    ("command", "kind", "message"),
    [
        (
            lambda s, st: s.add_project(st, "climate"),
            AlreadyExists,
            "project climate already exists in project_table",
        ),
        (
            lambda s, st: s.delete_project(st, "*"),
            InvalidValue,
            "project * cannot be deleted: every association may use it",
        ),
        (
            lambda s, st: s.delete_project(st, "nope"),
            NotFound,
            "project nope not found in project_table",
        ),
        (
            lambda s, st: s.add_project(st, "x", project_id=2),
            AlreadyExists,
            "project_id 2 is already used by climate",
        ),
        (
            lambda s, st: s.add_project(st, "x", project_id=0),
            InvalidValue,
            "invalid project_id: 0 (must be >= 1)",
        ),
    ],
)
def test_project_refusals(command: Command, kind: type[LedgerError], message: str) -> None:
    assert refused(given(project("climate")), command, kind) == message


# --- factor weights ------------------------------------------------------------------------------
def test_edit_factor_records_old_and_new_and_reset_only_what_differs() -> None:
    site = given()
    assert then(site, lambda s, st: s.edit_factor(st, "bank", 50)) == [
        ("FactorWeightChanged", {"factor": "bank", "old": 0, "new": 50})
    ]
    assert then(site, lambda s, st: s.edit_factor(st, "bank", 50)) == []
    assert then(site, lambda s, st: s.reset_factors(st)) == [
        ("FactorWeightChanged", {"factor": "bank", "old": 50, "new": 0})
    ]


@pytest.mark.parametrize(
    ("factor", "weight", "message"),
    [
        ("age", 1, UNKNOWN_FACTOR),
        ("queue", 2**31, "weight 2147483648 is out of range (-2147483648..2147483647)"),
    ],
)
def test_factor_refusals(factor: str, weight: int, message: str) -> None:
    assert refused(given(), lambda s, st: s.edit_factor(st, factor, weight)) == message


# --- config --------------------------------------------------------------------------------------
def test_edit_config_stores_the_normal_form_and_records_only_changes() -> None:
    site = given()
    pairs = [
        ("core_weight", "2"),
        ("priority_decay_half_life", "2w"),
        ("deny_unknown_queues", "TRUE"),
    ]
    assert then(site, lambda s, st: s.edit_config(st, pairs)) == [
        ("ConfigChanged", {"key": "core_weight", "old": "0.0", "new": "2.0"}),
        ("ConfigChanged", {"key": "priority_decay_half_life", "old": "604800", "new": "1209600"}),
        ("ConfigChanged", {"key": "deny_unknown_queues", "old": "false", "new": "true"}),
    ]
    assert then(site, lambda s, st: s.edit_config(st, [("core_weight", "2.0")])) == []


@pytest.mark.parametrize(
    ("pairs", "kind", "message"),
    [
        ([("colour", "red")], NotFound, "key colour not found in config_table"),
        (
            # one bad pair refuses them all
            [("core_weight", "1"), ("decay_factor", "2")],
            InvalidValue,
            "invalid decay_factor: 2.0 (must be in (0, 1])",
        ),
        (
            [("priority_decay_half_life", "soon")],
            InvalidValue,
            "invalid Flux standard duration: 'soon' (use e.g. 30s, 5m, 2h, 7d, 1w or seconds)",
        ),
        ([("node_weight", "-1")], InvalidValue, "invalid node_weight: -1 (must be >= 0)"),
        ([("gpu_weight", "x")], InvalidValue, "invalid gpu_weight: 'x' (must be a number)"),
        ([("decay_factor", "x")], InvalidValue, "invalid decay_factor: 'x' (must be a number)"),
        (
            [("deny_unknown_queues", "maybe")],
            InvalidValue,
            "invalid deny_unknown_queues: 'maybe' (must be true or false)",
        ),
        (
            [("priority_usage_reset_period", "0")],
            InvalidValue,
            "invalid priority_usage_reset_period: 0 (must be > 0)",
        ),
    ],
)
def test_config_refusals(
    pairs: list[tuple[str, str]], kind: type[LedgerError], message: str
) -> None:
    assert refused(given(), lambda s, st: s.edit_config(st, pairs), kind) == message


def test_an_unlimited_word_is_not_a_queue_limit_value_but_its_default() -> None:
    site = given(queue("gold", max_nodes=4))
    ((_name, body),) = then(site, lambda s, st: s.edit_queue(st, "gold", {"max_nodes": -1}))
    assert body["changes"] == {"max_nodes": [4, UNLIMITED]}
