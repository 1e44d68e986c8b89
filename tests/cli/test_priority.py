"""priority, check-job, export-json and export-payloads through the CLI, on both stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger import limits
from tests.cli.sites import build_weighted_tree_site
from tests.cli.test_fairshare_vectors import UPDATE_AT, build
from tests.conftest import DATA, Store, create_ledger
from tests.templates import built


def priority(store: Store, *args: str) -> int:
    out = store.run("priority", "--json", *args).stdout
    return int(json.loads(out)["priority"])


@pytest.fixture
def site(store: Store) -> Store:
    built(store, _site)
    return store


def _site(ledger_store: Store) -> None:
    create_ledger(ledger_store)
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    for queue, prio in [
        ("expedite", 20000),
        ("gold", 300),
        ("silver", 200),
        ("bronze", 100),
        ("standby", -100),
    ]:
        ledger_store.run("add-queue", queue, "--priority", str(prio))
    ledger_store.run(
        "add-queue",
        "big",
        "--priority",
        "10000",
        "--max-nodes-per-assoc",
        "10",
        "--max-running-jobs",
        "2",
        "--max-sched-jobs",
        "3",
        "-msn",
        "6",
        "-msc",
        "40",
    )
    ledger_store.run("add-project", "climate")
    ledger_store.run(
        "add-user",
        "-u",
        "amy",
        "-B",
        "A",
        "-i",
        "5001",
        "-q",
        "expedite,gold,silver,bronze,standby,big",
        "-P",
        "climate",
        "--max-nodes",
        "8",
        "--max-cores",
        "64",
        "--max-running-jobs",
        "2",
        "--max-active-jobs",
        "4",
        "--max-sched-jobs",
        "3",
    )


def test_priority_vectors(site: Store) -> None:
    # t1013: queue priority 10000, fair-share 0.5 (a new association), default weights.
    assert priority(site, "--username", "amy", "--queue", "big") == 100050000
    assert priority(site, "--username", "amy", "--urgency", "0") == 0
    assert priority(site, "--username", "amy", "--urgency", "31") == 4294967295
    site.run("edit-factor", "--factor", "urgency", "--weight", "1")
    # t1001: fair-share 0.45321 (what-if), urgency weight 1.
    assert priority(site, "--username", "amy", "--fairshare", "0.45321") == 45321
    assert priority(site, "--username", "amy", "--fairshare", "0.45321", "--urgency", "15") == 45320
    # t1056: fair-share weight 0, urgency weight 1000, urgency 17.
    site.run("edit-factor", "--factor", "urgency", "--weight", "1000")
    site.run("edit-factor", "--factor", "fairshare", "--weight", "0")
    assert priority(site, "--username", "amy", "--urgency", "17") == 1000


def test_queue_ordering_t1013(site: Store) -> None:
    order = [
        priority(site, "--username", "amy", "--queue", q)
        for q in ("expedite", "gold", "silver", "bronze", "standby")
    ]
    assert order == sorted(order, reverse=True) and len(set(order)) == 5


def test_priority_breakdown(site: Store) -> None:
    site.run("edit-bank", "A", "--priority", "2")
    site.run("edit-factor", "--factor", "bank", "--weight", "10")
    out = json.loads(
        site.run(
            "priority", "--username", "amy", "--queue", "gold", "--urgency", "20", "--json"
        ).stdout
    )
    assert out["priority"] == 50000 + 3000000 + 20 + 4000
    assert [(f["factor"], f["value"], f["weight"], f["product"]) for f in out["factors"]] == [
        ("fairshare", 0.5, 100000, 50000.0),
        ("queue", 300, 10000, 3000000),
        ("bank", 2.0, 10, 20.0),
        ("urgency", 4, 1000, 4000),
    ]
    table = site.run("priority", "--username", "amy").stdout
    assert table.splitlines()[-1] == "priority: 50020"


def test_priority_bad_input(site: Store) -> None:
    for args, message in {
        ("--username", "nobody"): "user nobody not found in association_table",
        ("--username", "amy", "--bank", "root"): "user amy not found in bank root",
        ("--username", "amy", "--queue", "nope"): "queue nope not found in queue_table",
        ("--username", "amy", "--urgency", "32"): "invalid urgency: 32 (must be 0..31)",
    }.items():
        assert site.run("priority", *args, expect=1).stderr == f"fairledger: {message}\n"


def check(store: Store, *args: str, expect: int) -> str:
    return store.run("check-job", "--username", "amy", *args, expect=expect).stdout.strip()


def test_check_job_rejects_with_the_plugins_messages(site: Store) -> None:
    assert check(site, "--queue", "gold", expect=0) == "accepted"
    assert check(site, "--queue", "gold", "--project", "nope", expect=4) == (
        'rejected: project "nope" not valid for user; valid projects for user: climate,*'
    )
    assert check(site, "--active", "4", expect=4) == "rejected: user has max active jobs"
    assert check(site, "--queue", "big", "--nodes", "11", expect=4) == (
        "rejected: job size (11 node(s)) is greater than max resources limit configured for "
        "queue (10 node(s))"
    )
    assert check(site, "--nodes", "9", "--cores", "9", expect=4) == (
        "rejected: job size (9 node(s), 9 core(s)) is greater than max resources limits "
        "configured for association (8 node(s), 64 core(s))"
    )
    site.run("add-user", "-u", "amy", "-B", "B", expect=1)  # no bank B: an error, exit 1
    site.run("add-bank", "B", "1", "--parent-bank", "root")
    site.run("add-user", "-u", "amy", "-B", "B")
    assert check(site, "--bank", "B", "--queue", "gold", expect=4) == (
        'rejected: queue "gold" not valid for user; valid queues for user:'
    )
    site.run("delete-user", "amy", "B")
    assert check(site, "--bank", "B", expect=4) == ("rejected: " + limits.MSG_DISABLED_ASSOCIATION)
    assert check(site, "--queue", "unknown-q", expect=0) == "accepted"
    site.run("edit-config", "deny_unknown_queues=true")
    assert check(site, "--queue", "unknown-q", expect=4) == (
        'rejected: queue "unknown-q" is unknown to flux-accounting and deny-unknown-queues '
        "is enabled"
    )


def test_check_job_holds_with_the_plugins_dependency_names(site: Store) -> None:
    cases = [
        (("--queue", "big", "--queue-running", "2"), "max-run-jobs-queue"),
        (("--queue", "big", "--queue-sched", "3"), "max-sched-jobs-queue-limit"),
        (
            ("--queue", "big", "--nodes", "2", "--queue-sched-nodes", "5"),
            "max-sched-nodes-queue-limit",
        ),
        (
            ("--queue", "big", "--cores", "8", "--queue-sched-cores", "33"),
            "max-sched-cores-queue-limit",
        ),
        (("--queue", "big", "--nodes", "2", "--queue-nodes", "9"), "max-resources-queue"),
        (
            (
                "--running",
                "2",
            ),
            "max-running-jobs-user-limit",
        ),
        (
            (
                "--sched",
                "3",
            ),
            "max-sched-jobs-user-limit",
        ),
        (("--nodes", "2", "--running-nodes", "7"), "max-resources-user-limit"),
    ]
    for args, dependency in cases:
        assert check(site, *args, expect=3) == f"held: {dependency}", args
    out = json.loads(
        site.run(
            "check-job", "--username", "amy", "--running", "2", "--sched", "3", "--json", expect=3
        ).stdout
    )
    assert out == {
        "status": "held",
        "message": None,
        "dependencies": ["max-running-jobs-user-limit", "max-sched-jobs-user-limit"],
    }


def test_check_job_bad_input(site: Store) -> None:
    assert (
        site.run("check-job", "--username", "nobody", expect=1).stderr
        == "fairledger: user nobody not found in association_table\n"
    )
    assert (
        site.run("check-job", "--username", "amy", "--cores", "-1", expect=1).stderr
        == "fairledger: invalid --cores: -1 (must be >= 0)\n"
    )


@pytest.mark.parametrize("name", ["small_no_tie", "small_tie", "small_tie_all"])
def test_rec_update_matches_sample_payloads(store: Store, name: str) -> None:
    build(store, name)
    sent = json.loads(store.run("export-payloads", now=UPDATE_AT).stdout)
    expected = json.loads((DATA / "sample_payloads" / f"{name}.json").read_text())
    assert sent["rec_update"] == expected


def test_same_fairshare_before_any_update(ledger_store: Store) -> None:
    build_weighted_tree_site(ledger_store, "small_no_tie")
    sent = json.loads(ledger_store.run("export-payloads").stdout)
    expected = json.loads((DATA / "sample_payloads" / "same_fairshare.json").read_text())
    assert sent["rec_update"] == expected


def test_export_payloads_dir_and_export_json(site: Store, tmp_path: Path) -> None:
    out = site.run("export-payloads", "--dir", str(tmp_path / "p")).stdout
    assert out == f"wrote 6 payloads to {tmp_path / 'p'}\n"
    files = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert files == [
        "rec_bank_update.json",
        "rec_config_update.json",
        "rec_fac_update.json",
        "rec_proj_update.json",
        "rec_q_update.json",
        "rec_update.json",
    ]
    queues = json.loads((tmp_path / "p" / "rec_q_update.json").read_text())["data"]
    assert queues[0] == {
        "queue": "big",
        "min_nodes_per_job": 1,
        "max_nodes_per_job": 1,
        "max_time_per_job": 60,
        "priority": 10000,
        "max_running_jobs": 2,
        "max_nodes_per_assoc": 10,
        "max_sched_jobs": 3,
        "max_sched_nodes_per_assoc": 6,
        "max_sched_cores_per_assoc": 40,
    }
    config = json.loads(site.run("export-json").stdout)
    assert sorted(config) == [
        "associations",
        "banks",
        "config",
        "priority_factors",
        "projects",
        "queues",
    ]
    assert config["config"] == {"deny_unknown_queues": False}
    assert config["projects"] == [{"project": "*"}, {"project": "climate"}]
    assert config["priority_factors"][0] == {"factor": "fairshare", "weight": 100000}
    assert config["associations"][0]["userid"] == 5001


def test_flux_commands_without_flux(site: Store) -> None:
    for command in ("priority-update", "fetch-job-records"):
        result = site.run(command, expect=1)
        assert result.stderr.startswith("fairledger: the flux Python module is not importable")
