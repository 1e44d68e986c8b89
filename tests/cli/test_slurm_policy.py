"""The fair-share policy through the CLI, on both stores: create-db --fairshare-algorithm,
edit-config of the policy keys, list-configs, history --config and the refusals."""

from __future__ import annotations

import json

from tests.conftest import T0, Store


def config_values(store: Store, *extra: str) -> dict[str, str]:
    rows = json.loads(store.run("list-configs", "--json", *extra).stdout)
    return {r["key"]: r["value"] for r in rows}


def test_a_new_ledger_shows_the_policy_in_force(ledger_store: Store) -> None:
    values = config_values(ledger_store)
    assert {k: values[k] for k in ("fairshare_algorithm", "usage_model")} == {
        "fairshare_algorithm": "weighted-walk",
        "usage_model": "periods",
    }
    assert (values["fairshare_dampening_factor"], values["priority_flags"]) == ("1", "")


def test_create_db_takes_the_algorithm(store: Store) -> None:
    store.run("create-db", "--fairshare-algorithm", "fair-tree")
    values = config_values(store)
    assert (values["fairshare_algorithm"], values["usage_model"]) == ("fair-tree", "continuous")
    (row,) = json.loads(store.run("view-config", "usage_model", "--json").stdout)
    assert row == {"key": "usage_model", "value": "continuous"}


def test_create_db_refuses_an_unknown_algorithm(store: Store) -> None:
    result = store.run("create-db", "--fairshare-algorithm", "fairtree", expect=2)
    assert "'fairtree' is not one of 'weighted-walk', 'fair-tree', 'classic'" in result.stderr


def test_edit_config_records_the_policy_and_history_shows_old_to_new(ledger_store: Store) -> None:
    ledger_store.run(
        "edit-config",
        "fairshare_algorithm=classic",
        "fairshare_dampening_factor=3",
        "priority_flags=max_tres",
        "priority_usage_reset_period=monthly",
        "--reason",
        "moving to Slurm",
        now=T0 + 10,
    )
    entries = json.loads(ledger_store.run("history", "--config", "--json", now=T0 + 10).stdout)
    assert [e["changes"] for e in entries[-4:]] == [
        {"value": ["weighted-walk", "classic"]},
        {"value": ["1", "3"]},
        {"value": ["", "MAX_TRES"]},
        {"value": ["2419200", "MONTHLY"]},
    ]
    assert {e["reason"] for e in entries[-4:]} == {"moving to Slurm"}
    values = json.loads(ledger_store.run("list-configs", "--json", now=T0 + 10).stdout)
    assert {"key": "usage_model", "value": "continuous"} in values
    # --as-of before the switch: the old policy
    rows = ledger_store.run("list-configs", "--json", "--as-of", str(T0 + 5), now=T0 + 10)
    before = {r["key"]: r["value"] for r in json.loads(rows.stdout)}
    assert (before["fairshare_algorithm"], before["usage_model"]) == ("weighted-walk", "periods")


def test_policy_refusals_write_nothing(ledger_store: Store) -> None:
    position = ledger_store.log_position()
    for pair, message in [
        (
            "fairshare_algorithm=fair_tree",
            "invalid fairshare_algorithm: 'fair_tree' (must be one of weighted-walk, fair-tree, "
            "classic)",
        ),
        (
            "priority_flags=MAX_TRES,SMALL_RELATIVE_TO_TIME",
            "invalid priority_flags: unknown flag 'SMALL_RELATIVE_TO_TIME' (known: MAX_TRES, "
            "MAX_TRES_GRES)",
        ),
        (
            "priority_usage_reset_period=YEARLY",
            "priority_usage_reset_period YEARLY needs usage_model continuous: the periods model "
            "resets after a duration (such as 4w)",
        ),
    ]:
        result = ledger_store.run("edit-config", "core_weight=2", pair, expect=1)
        assert result.stderr == f"fairledger: {message}\n"
    assert ledger_store.log_position() == position


def test_users_beside_sub_banks_follow_the_algorithm(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "a", "1", "--parent-bank", "root")
    refusal = ledger_store.run("add-user", "-u", "u1", "-B", "root", expect=1).stderr
    assert refusal == (
        "fairledger: associations cannot be added to the same parent bank as a sub-bank: root\n"
    )
    ledger_store.run("edit-config", "fairshare_algorithm=fair-tree")
    ledger_store.run("add-user", "-u", "u1", "-B", "root")
    refusal = ledger_store.run("edit-config", "fairshare_algorithm=weighted-walk", expect=1)
    assert refusal.stderr == (
        "fairledger: fairshare_algorithm weighted-walk: bank root holds users and sub-banks, "
        "which the weighted walk cannot rank (use fair-tree or classic)\n"
    )
