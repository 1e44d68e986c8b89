"""Queues, projects, factor weights and config through the CLI, on both stores."""

from __future__ import annotations

import json

from tests.conftest import Store, refusal


def test_queues(ledger_store: Store) -> None:
    ledger_store.run("add-queue", "standby", "--priority", "-10")
    ledger_store.run("add-queue", "gold", "-P", "300", "--max-running-jobs", "20", "-msn", "40")
    rows = json.loads(ledger_store.run("list-queues", "--json").stdout)
    assert rows[0] == {
        "queue": "gold",
        "min_nodes_per_job": 1,
        "max_nodes_per_job": 1,
        "max_time_per_job": 60,
        "priority": 300,
        "max_running_jobs": 20,
        "max_nodes_per_assoc": "unlimited",
        "max_sched_jobs": "unlimited",
        "max_sched_nodes_per_assoc": 40,
        "max_sched_cores_per_assoc": "unlimited",
        "max_nodes": "unlimited",
        "max_cores": "unlimited",
    }
    assert rows[1]["priority"] == -10
    ledger_store.run("edit-queue", "gold", "--priority", "-5", "--max-running-jobs", "-1")
    (row,) = json.loads(ledger_store.run("view-queue", "gold").stdout)
    assert (row["priority"], row["max_running_jobs"]) == (-5, 100)
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "-u", "amy", "-B", "root", "-q", "gold")
    result = ledger_store.run("delete-queue", "gold")
    assert result.stdout == (
        "WARNING: user(s) in the association_table still reference this queue. Make sure to "
        "edit user rows to account for this deleted queue.\n"
    )
    assert result.stderr == "fairledger: associations listing queue gold: amy/root\n"
    assert [r["queue"] for r in json.loads(ledger_store.run("list-queues", "--json").stdout)] == [
        "standby"
    ]
    before = ledger_store.log_position()
    assert ledger_store.run("add-queue", "standby", expect=1).stderr == refusal(
        "add-queue", "queue standby already exists in queue_table", "IntegrityError"
    )
    assert ledger_store.run("edit-queue", "nope", "-P", "1", expect=1).stderr == refusal(
        "edit-queue", "queue nope not found in queue_table"
    )
    ledger_store.run("add-queue", "x", "--max-nodes", "many", expect=2)
    assert ledger_store.log_position() == before


def test_projects(ledger_store: Store) -> None:
    assert json.loads(ledger_store.run("list-projects", "--json").stdout) == [
        {"project_id": 1, "project": "*", "usage": 0.0}
    ]
    ledger_store.run("add-project", "climate")
    assert json.loads(ledger_store.run("view-project", "climate").stdout) == [
        {"project_id": 2, "project": "climate", "usage": 0.0}
    ]
    assert ledger_store.run("add-project", "climate", expect=1).stderr == refusal(
        "add-project", "project climate already exists in project_table", "IntegrityError"
    )
    assert ledger_store.run("delete-project", "*", expect=1).stderr == refusal(
        "delete-project", "project * cannot be deleted: every association may use it"
    )
    ledger_store.run("delete-project", "climate")
    ledger_store.run("view-project", "climate", expect=1)


def test_factors(ledger_store: Store) -> None:
    assert json.loads(ledger_store.run("list-factors", "--json").stdout) == [
        {"factor": "fairshare", "weight": 100000},
        {"factor": "queue", "weight": 10000},
        {"factor": "bank", "weight": 0},
        {"factor": "urgency", "weight": 1000},
    ]
    ledger_store.run("edit-factor", "--factor", "bank", "--weight", "50")
    assert json.loads(ledger_store.run("view-factor", "bank", "--json").stdout) == [
        {"factor": "bank", "weight": 50}
    ]
    assert ledger_store.run(
        "edit-factor", "--factor", "age", "--weight", "1", expect=1
    ).stderr == refusal(
        "edit-factor",
        "factor age not found in priority_factor_weight_table; available factors are "
        "fairshare,queue,bank,urgency",
    )
    ledger_store.run("edit-factor", "--factor", "bank", "--weight", "x", expect=2)
    ledger_store.run("reset-factors")
    assert json.loads(ledger_store.run("view-factor", "bank", "--json").stdout)[0]["weight"] == 0


def test_list_configs_of_the_key_alone_sorts_as_flux_accounting_does(ledger_store: Store) -> None:
    """flux-accounting's `SELECT key FROM config_table` is answered from the key's index, so
    `--fields=key` lists the keys sorted (its t1093), while whole rows keep the table's order."""
    ledger_store.run("add-config", "key2=foo2")
    ledger_store.run("add-config", "key1=foo1")
    assert ledger_store.run("list-configs", "--fields=key").stdout == (
        "key                        \n"
        "---------------------------\n"
        "core_weight                \n"
        "decay_factor               \n"
        "deny_unknown_queues        \n"
        "gpu_weight                 \n"
        "key1                       \n"
        "key2                       \n"
        "node_weight                \n"
        "priority_decay_half_life   \n"
        "priority_usage_reset_period\n"
    )
    listed = ledger_store.run("list-configs", "-o", "{key}").stdout.split()
    assert listed[:2] == ["key", "priority_usage_reset_period"]
    assert listed[-2:] == ["key2", "key1"]
    fields = ledger_store.run("list-configs", "--fields=value,key").stdout.splitlines()
    assert fields[2].split() == ["2419200", "|", "priority_usage_reset_period"]


def test_config(ledger_store: Store) -> None:
    rows = json.loads(ledger_store.run("list-configs", "--json").stdout)
    assert rows == [
        {"key": "priority_usage_reset_period", "value": "2419200"},
        {"key": "priority_decay_half_life", "value": "604800"},
        {"key": "decay_factor", "value": "0.5"},
        {"key": "node_weight", "value": "1.0"},
        {"key": "core_weight", "value": "0.0"},
        {"key": "gpu_weight", "value": "0.0"},
        {"key": "deny_unknown_queues", "value": "false"},
        # flux-accounting's seven keys only (its t1093 compares the listing): fairledger's own
        # keys are listed once recorded, or on a Slurm site (test_slurm_policy)
    ]
    assert json.loads(ledger_store.run("view-config", "timezone", "--json").stdout) == [
        {"key": "timezone", "value": "UTC"}
    ]
    ledger_store.run(
        "edit-config", "core_weight=2", "priority_decay_half_life=2w", "deny_unknown_queues=TRUE"
    )
    values = {
        r["key"]: r["value"] for r in json.loads(ledger_store.run("list-configs", "--json").stdout)
    }
    assert (
        values["core_weight"],
        values["priority_decay_half_life"],
        values["deny_unknown_queues"],
    ) == ("2.0", "1209600", "true")
    before = ledger_store.log_position()
    for args, message in {
        ("edit-config", "colour=red"): "key colour not found in config_table",
        # flux-accounting's message (config_subcommands.py), then the value.
        ("edit-config", "node_weight"): 'key-value string must contain exactly one "=": '
        "'node_weight'",
        ("add-config", "bad=format=foo"): 'key-value string must contain exactly one "=": '
        "'bad=format=foo'",
    }.items():
        assert ledger_store.run(*args, expect=1).stderr == refusal(args[0], message), args
    assert ledger_store.log_position() == before
    assert json.loads(ledger_store.run("view-config", "core_weight", "--json").stdout) == [
        {"key": "core_weight", "value": "2.0"}
    ]
