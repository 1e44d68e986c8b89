"""The fair-share policy through the CLI, on both stores: create-db --fairshare-algorithm,
edit-config of the policy keys, list-configs, history --config and the refusals."""

from __future__ import annotations

import json

import pytest

from tests.builders import job_line
from tests.conftest import T0, Store, refusal


def config_values(store: Store, *extra: str) -> dict[str, str]:
    rows = json.loads(store.run("list-configs", "--json", *extra).stdout)
    return {r["key"]: r["value"] for r in rows}


def test_a_new_ledger_shows_the_policy_in_force(ledger_store: Store) -> None:
    """view-config answers for every policy key; list-configs on a weighted-walk site lists
    what is recorded, as flux-accounting's does, and on a Slurm site the policy in force."""
    shown = {
        key: json.loads(ledger_store.run("view-config", key, "--json").stdout)[0]["value"]
        for key in ("fairshare_algorithm", "usage_model", "fairshare_dampening_factor")
    }
    assert shown == {
        "fairshare_algorithm": "weighted-walk",
        "usage_model": "periods",
        "fairshare_dampening_factor": "1",
    }
    assert "fairshare_algorithm" not in config_values(ledger_store)
    ledger_store.run("edit-config", "fairshare_algorithm=classic")
    values = config_values(ledger_store)
    assert {k: values[k] for k in ("fairshare_algorithm", "usage_model", "timezone")} == {
        "fairshare_algorithm": "classic",
        "usage_model": "continuous",
        "timezone": "UTC",
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
    assert result.stderr.endswith(
        "error: argument --fairshare-algorithm: invalid choice: 'fairtree' (choose from"
        " 'weighted-walk', 'fair-tree', 'classic')\n"
    )


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
    # --as-of before the switch: the old policy (a weighted-walk site lists only what was
    # recorded, as flux-accounting does; view-config answers for a default)
    before = {
        key: json.loads(
            ledger_store.run(
                "view-config", key, "--json", "--as-of", str(T0 + 5), now=T0 + 10
            ).stdout
        )[0]["value"]
        for key in ("fairshare_algorithm", "usage_model")
    }
    assert before == {"fairshare_algorithm": "weighted-walk", "usage_model": "periods"}
    listed = ledger_store.run("list-configs", "--json", "--as-of", str(T0 + 5), now=T0 + 10)
    assert "fairshare_algorithm" not in {r["key"] for r in json.loads(listed.stdout)}


def test_policy_refusals_write_nothing(ledger_store: Store) -> None:
    position = ledger_store.log_position()
    for pair, message in [
        (
            "fairshare_algorithm=fair_tree",
            "invalid fairshare_algorithm: 'fair_tree' (must be one of weighted-walk, fair-tree, "
            "classic)",
        ),
        (
            "priority_flags=MAX_TRES,SMALL_RELATIVE",
            "invalid priority_flags: unknown flag 'SMALL_RELATIVE' (known: MAX_TRES, "
            "MAX_TRES_GRES, ACCRUE_ALWAYS, SMALL_RELATIVE_TO_TIME, CALCULATE_RUNNING, INCR_ONLY, "
            "NO_NORMAL_ASSOC, NO_NORMAL_PART, NO_NORMAL_QOS, NO_NORMAL_TRES, NO_NORMAL_ALL)",
        ),
        (
            "priority_flags=DEPTH_OBLIVIOUS",
            "invalid priority_flags: DEPTH_OBLIVIOUS is chosen with fairshare_algorithm "
            "(weighted-walk, fair-tree, classic)",
        ),
        (
            "priority_weight_tres=CPU=abc",
            "invalid priority_weight_tres: invalid TRES weight 'CPU=abc' in 'CPU=abc'",
        ),
        (
            "priority_max_age=7x",
            "invalid Flux standard duration: '7x' (use e.g. 30s, 5m, 2h, 7d, 1w or seconds)",
        ),
        ("priority_favor_small=maybe", "invalid priority_favor_small: 'maybe' (must be YES or NO)"),
        ("cluster_cpus=-4", "invalid cluster_cpus: '-4' (must be a whole number >= 0)"),
        (
            "priority_usage_reset_period=YEARLY",
            "priority_usage_reset_period YEARLY needs usage_model continuous: the periods model "
            "resets after a duration (such as 4w)",
        ),
    ]:
        result = ledger_store.run("edit-config", "core_weight=2", pair, expect=1)
        assert result.stderr == refusal("edit-config", message)
    assert ledger_store.log_position() == position


def test_users_beside_sub_banks_on_every_algorithm(ledger_store: Store) -> None:
    """Issue 13: a bank holds users and sub-banks together on every algorithm (flux-accounting
    refuses it, its t1079; a deliberate difference). The weighted walk weighs them as siblings:
    under root, u1 (1 share, all 100 s of usage) and bank a (1 share, no usage, so the highest
    weight); a's u2 is visited first and gets 2/2, u1 then 1/2."""
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "a", "1", "--parent-bank", "root")
    ledger_store.run("add-user", "-u", "u1", "-i", "6001", "-B", "root")
    ledger_store.run("add-user", "-u", "u2", "-i", "6002", "-B", "a")
    job = job_line(1, user="u1", bank="root", end=T0 + 5, seconds=100)
    ledger_store.run("ingest", "-", input=job + "\n", now=T0 + 10)
    ledger_store.run("update-fshare", now=T0 + 20)
    rows = json.loads(ledger_store.run("list-users", "--json", now=T0 + 20).stdout)
    assert {r["username"]: r["fairshare"] for r in rows} == {"u1": 0.5, "u2": 1.0}
    for algorithm in ("fair-tree", "classic", "weighted-walk"):  # and it switches either way
        ledger_store.run("edit-config", f"fairshare_algorithm={algorithm}", now=T0 + 30)


# --- billing -------------------------------------------------------------------------------------
WEIGHTS = "CPU=1.0,Mem=0.25G,GRES/gpu=2.0"


def billings(store: Store) -> dict[str, float]:
    from ledger.store.connections import Connection, parse_store_url

    conn = Connection(parse_store_url(store.url))
    try:
        return {r["id"]: r["billing"] for r in conn.query("SELECT id, billing FROM jobs")}
    finally:
        conn.close()


def test_a_queue_prices_jobs_with_the_weights_in_force_when_they_are_recorded(
    ledger_store: Store,
) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "-u", "amy", "-B", "root")
    ledger_store.run("add-queue", "gpu", "--billing-weights", WEIGHTS)
    ledger_store.run("add-queue", "batch")
    (row,) = json.loads(ledger_store.run("view-queue", "gpu").stdout)
    assert row["billing_weights"] == WEIGHTS
    (row,) = json.loads(ledger_store.run("view-queue", "batch").stdout)
    assert "billing_weights" not in row  # a Flux queue's row is flux-accounting's
    base = {"username": "amy", "t_run": T0 - 3600, "t_inactive": T0 - 60, "nnodes": 1}
    tres = {"cpu": 8, "mem": 16384, "node": 1, "gres/gpu": 2}
    lines = [
        {**base, "id": 1, "ncores": 8, "queue": "gpu", "tres": tres},
        {**base, "id": 2, "ncores": 4, "queue": "batch"},
        {**base, "id": 3, "ncores": 8, "queue": "batch", "tres": {**tres, "cpu": 6}},
    ]
    ledger_store.run("ingest", "-", input="\n".join(json.dumps(x) for x in lines))
    ledger_store.run("edit-queue", "gpu", "--billing-weights", "CPU=3")
    ledger_store.run("edit-config", "priority_flags=MAX_TRES")
    line = {**base, "id": 4, "ncores": 8, "queue": "gpu", "tres": tres}
    ledger_store.run("ingest", "-", input=json.dumps(line))
    # 8·1 + 16 GiB·0.25 + 2·2 = 16; 4 CPUs; the tres CPUs; then max(8·3) = 24 under MAX_TRES
    assert billings(ledger_store) == {"1": 16.0, "2": 4.0, "3": 6.0, "4": 24.0}
    ledger_store.run("rebuild")
    assert billings(ledger_store) == {"1": 16.0, "2": 4.0, "3": 6.0, "4": 24.0}


def test_bad_billing_input_is_one_line_and_writes_nothing(ledger_store: Store) -> None:
    position = ledger_store.log_position()
    result = ledger_store.run("add-queue", "gpu", "--billing-weights", "CPU=1,Mem=2X", expect=1)
    assert result.stderr == refusal(
        "add-queue", "TRESBillingWeights: bad weight 'Mem=2X': unit 'X' is not one of K, M, G, T, P"
    )
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "-u", "amy", "-B", "root")
    position = ledger_store.log_position()
    line = {"id": 1, "username": "amy", "t_run": 1, "t_inactive": 2, "nnodes": 1, "ncores": 1}
    result = ledger_store.run(
        "ingest", "-", input=json.dumps({**line, "tres": {"cpu": -2}}), expect=1
    )
    assert result.stderr == (
        'fairledger: -: line 1: tres: value {"cpu": -2}: cpu: -2 is not a count >= 0; '
        "nothing recorded\n"
    )
    assert ledger_store.log_position() == position


# --- continuous usage ----------------------------------------------------------------------------
def decayed(billing: float, t_start: float, t_end: float, at: float, hl: float) -> float:
    """The issue's formula: billing · hl/ln2 · (2^(−(T−t_end)/hl) − 2^(−(T−t_start)/hl))."""
    import math

    return billing * hl / math.log(2) * (2 ** (-(at - t_end) / hl) - 2 ** (-(at - t_start) / hl))


def job_usage(store: Store, now: float, *args: str) -> dict[str, float]:
    rows = json.loads(store.run("list-users", "--json", *args, now=now).stdout)
    return {r["username"]: r["job_usage"] for r in rows}


def test_continuous_usage_decays_billed_job_time_and_resets(store: Store) -> None:
    hl = 3600.0
    # 2023-11-14 22:13:20 UTC is T0: midnight of the 15th comes 6400 s later
    store.run("create-db", "--fairshare-algorithm", "fair-tree", "--priority-decay-half-life", "1h")
    store.run("add-bank", "root", "1")
    store.run("add-bank", "a", "1", "--parent-bank", "root")
    store.run("add-user", "-u", "amy", "-B", "a")
    store.run("add-user", "-u", "bob", "-B", "root")  # beside a sub-bank: fair-tree allows it
    store.run("add-queue", "gpu", "--billing-weights", "CPU=1,GRES/gpu=10")
    jobs = [
        {
            "id": 1,
            "username": "amy",
            "queue": "gpu",
            "t_run": T0 - 7200,
            "t_inactive": T0 - 3600,
            "nnodes": 1,
            "ncores": 4,
            "ngpus": 2,
        },
        {
            "id": 2,
            "username": "bob",
            "t_run": T0 - 1800,
            "t_inactive": T0,
            "nnodes": 1,
            "ncores": 16,
        },
    ]
    store.run("ingest", "-", input="\n".join(json.dumps(j) for j in jobs))
    at = T0 + 1000
    store.run("update-usage", now=at)
    usage = job_usage(store, at)
    assert usage["amy"] == pytest.approx(decayed(24, T0 - 7200, T0 - 3600, at, hl), rel=1e-12)
    assert usage["bob"] == pytest.approx(decayed(16, T0 - 1800, T0, at, hl), rel=1e-12)
    # a daily reset at the next midnight: only job time after it counts (none)
    store.run("edit-config", "priority_usage_reset_period=DAILY", now=at)
    midnight = T0 + 6400
    store.run("update-usage", now=midnight + 60)
    assert job_usage(store, midnight + 60) == {"amy": 0.0, "bob": 0.0}
    # before the reset, as of then: the decayed usage
    before = job_usage(store, midnight + 60, "--as-of", str(midnight - 1))
    assert before["bob"] == pytest.approx(decayed(16, T0 - 1800, T0, midnight - 1, hl), rel=1e-12)


def test_view_bank_tree_shows_users_beside_sub_banks_first(store: Store) -> None:
    store.run("create-db", "--fairshare-algorithm", "fair-tree")
    store.run("add-bank", "root", "1")
    store.run("add-bank", "a", "1", "--parent-bank", "root")
    store.run("add-user", "-u", "amy", "-B", "a")
    store.run("add-user", "-u", "bob", "-B", "root")
    store.run("update-fshare")
    names = [line.split()[:2] for line in store.run("view-bank", "root", "-t").stdout.splitlines()]
    assert names[1:] == [["root", "true"], ["root", "bob"], ["a", "true"], ["a", "amy"], []]


def test_parent_is_a_share_value_but_not_the_roots(store: Store) -> None:
    """`parent` is taken where Slurm takes it (an account's or a user's Fairshare) and refused
    for the root bank, which has no parent to take shares from, with nothing written."""
    store.run("create-db", "--fairshare-algorithm", "fair-tree")
    message = (
        "invalid shares for the root bank root: 2147483647 is Fairshare=parent, and "
        "the root has no parent to take its shares from"
    )
    for shares in ("parent", "2147483647"):
        position = store.log_position()
        assert store.run("add-bank", "root", shares, expect=1).stderr == refusal(
            "add-bank", message
        )
        assert store.log_position() == position
    store.run("add-bank", "root", "1")
    position = store.log_position()
    refused = store.run("edit-bank", "root", "--shares", "parent", expect=1).stderr
    assert refused == refusal("edit-bank", message)
    assert store.log_position() == position
    store.run("add-bank", "physics", "PARENT", "--parent-bank", "root")
    store.run("add-user", "-u", "ann", "-B", "physics", "--shares", "parent")
    store.run("add-user", "-u", "bo", "-B", "physics", "--shares", "3")
    store.run("edit-user", "bo", "--shares", "parent")
    banks = {r["bank"]: r["shares"] for r in json.loads(store.run("list-banks", "--json").stdout)}
    assert banks == {"root": 1, "physics": "parent"}
    users = {
        r["username"]: r["shares"] for r in json.loads(store.run("list-users", "--json").stdout)
    }
    assert users == {"ann": "parent", "bo": "parent"}


def test_history_config_shows_the_billing_weights(ledger_store: Store) -> None:
    ledger_store.run("add-queue", "gpu", "--billing-weights", "CPU=1.0,GRES/gpu=2.0")
    ledger_store.run("edit-queue", "gpu", "--billing-weights", "CPU=2.0", now=T0 + 10)
    ledger_store.run("edit-queue", "gpu", "--priority", "5", now=T0 + 20)  # not policy
    lines = ledger_store.run("history", "--config", now=T0 + 30).stdout.splitlines()
    queue_lines = [line for line in lines if "queue gpu" in line]
    assert len(queue_lines) == 2, lines
    assert "CPU=1.0,GRES/gpu=2.0" in queue_lines[0]
    assert "CPU=1.0,GRES/gpu=2.0 → CPU=2.0" in queue_lines[1]
