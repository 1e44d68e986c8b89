"""Slurm QOS through the CLI, on both stores: add-qos, edit-qos, delete-qos, view-qos, list-qos,
their history, the associations' --qos/--default-qos, and a job's charge scaled by its QOS's
UsageFactor when it is recorded (research slurm.md §3.3). Goldens in tests/data/qos/ are typed
by hand; charges are worked by hand beside each assertion."""

from __future__ import annotations

import json

import pytest

from tests.builders import job_line
from tests.cli.test_history import lines
from tests.conftest import DATA, T0, Store, refusal

QOS_DATA = DATA / "qos"
OPS = ("--actor", "ops")


def high_and_normal(store: Store) -> None:
    store.run("add-qos", "normal", *OPS)
    store.run(
        "add-qos",
        "high",
        "--priority",
        "100",
        "--usage-factor",
        "2",
        "--flags",
        "nodecay,DenyOnLimit",
        "--description",
        "paid allocations",
        "--reason",
        "grant 7",
        *OPS,
        now=T0 + 100,
    )


def test_list_and_view_qos_print_flux_accountings_layouts(ledger_store: Store) -> None:
    high_and_normal(ledger_store)
    assert ledger_store.run("list-qos").stdout == (QOS_DATA / "list_qos.expected").read_text()
    view = ledger_store.run("view-qos", "high").stdout
    assert view == (QOS_DATA / "view_qos_high.expected").read_text()
    assert json.loads(ledger_store.run("list-qos", "--json").stdout) == [
        json.loads(view)[0],
        {"qos": "normal", "priority": 0, "usage_factor": 1.0, "flags": "", "description": ""},
    ]
    assert ledger_store.run("view-qos", "high", "-o", "{qos}:{usage_factor}").stdout == (
        "qos:usage_factor\nhigh:2.0\n"
    )


def test_edits_show_old_to_new_in_history_and_as_of_reads_the_old(ledger_store: Store) -> None:
    high_and_normal(ledger_store)
    ledger_store.run("edit-qos", "high", "--usage-factor", "0.5", "--flags", "", *OPS, now=T0 + 200)
    assert lines(ledger_store, "--qos", "high", now=T0 + 300) == [
        "2023-11-14T22:15:00+00:00  ops  add-qos high: priority 100, usage_factor 2.0, flags "
        "DenyOnLimit,NoDecay, description paid allocations  (grant 7)",
        "2023-11-14T22:16:40+00:00  ops  edit-qos high: usage_factor 2.0 → 0.5, flags "
        'DenyOnLimit,NoDecay → ""',
    ]
    # --all shows them too; an unchanged edit records nothing.
    everything = ledger_store.run("history", "--all", now=T0 + 300).stdout
    assert "add-qos normal" in everything and "edit-qos high" in everything
    same = ledger_store.run("edit-qos", "high", "--priority", "100", now=T0 + 300)
    assert same.stderr == "QOS high: nothing to change\n"
    before = ledger_store.run("view-qos", "high", "--as-of", str(T0 + 150), now=T0 + 300)
    assert json.loads(before.stdout)[0]["usage_factor"] == 2.0
    now = json.loads(ledger_store.run("view-qos", "high", now=T0 + 300).stdout)[0]
    assert (now["usage_factor"], now["flags"]) == (0.5, "")
    ledger_store.run("delete-qos", "normal", *OPS, now=T0 + 300)
    listed = json.loads(ledger_store.run("list-qos", "--json", now=T0 + 300).stdout)
    assert [r["qos"] for r in listed] == ["high"]
    assert lines(ledger_store, "--qos", "normal", now=T0 + 300) == [
        "2023-11-14T22:13:20+00:00  ops  add-qos normal",
        "2023-11-14T22:18:20+00:00  ops  delete-qos normal",
    ]
    ledger_store.run("delete-qos", "high", *OPS, now=T0 + 300)
    empty = ledger_store.run("list-qos", now=T0 + 300, expect=1)
    assert empty.stderr == "fairledger: no results found in query\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add-qos", "high"), "QOS high already exists"),
        (("edit-qos", "gold", "--priority", "1"), "QOS gold not found"),
        (("delete-qos", "gold"), "QOS gold not found"),
        (("view-qos", "gold"), "QOS gold not found"),
        (
            ("add-qos", "x", "--priority", "4294967295"),
            "QOS priority 4294967295 is out of range (0..4294967294)",
        ),
        (("add-qos", "x", "--usage-factor", "-1"), "invalid usage factor: -1.0 (must be >= 0)"),
        (("add-qos", "x", "--usage-factor", "inf"), "usage factor inf is not a finite number"),
        (
            ("add-qos", "x", "--flags", "NoDecay,Turbo"),
            "invalid QOS flag: 'Turbo' (known: DenyOnLimit, EnforceUsageThreshold, NoDecay, "
            "NoReserve, OverPartQOS, PartitionMaxNodes, PartitionMinNodes, PartitionTimeLimit, "
            "Relative, RequiresReservation, UsageFactorSafe)",
        ),
        (("add-user", "-u", "amy", "-B", "root", "--qos", "gold"), "QOS gold not found"),
        (
            ("add-user", "-u", "amy", "-B", "root", "--qos", "normal", "--default-qos", "high"),
            "default QOS high is not in the association's QOS list normal",
        ),
    ],
)
def test_refusals_are_one_line_and_write_nothing(
    ledger_store: Store, args: tuple[str, ...], message: str
) -> None:
    high_and_normal(ledger_store)
    ledger_store.run("add-bank", "root", "1", now=T0 + 100)
    position = ledger_store.log_position()
    result = ledger_store.run(*args, now=T0 + 100, expect=1)
    # flux-accounting's commands carry its exception type (cli/flux_errors.py); the QOS
    # commands are Slurm's and print the message alone.
    expected = refusal(args[0], message) if args[0] == "add-user" else f"fairledger: {message}\n"
    assert result.stderr == expected
    assert ledger_store.log_position() == position


def test_a_wrong_type_is_a_usage_error(ledger_store: Store) -> None:
    result = ledger_store.run("add-qos", "x", "--priority", "high", expect=2)
    assert result.stderr.endswith("error: argument --priority: invalid int value: 'high'\n")


def test_associations_take_a_qos_list_and_default(ledger_store: Store) -> None:
    high_and_normal(ledger_store)
    store = ledger_store
    store.run("add-bank", "root", "1", now=T0 + 100)
    store.run("add-user", "-u", "amy", "-B", "root", "-i", "5001", *OPS, now=T0 + 100)
    # A site whose associations name no QOS prints flux-accounting's columns only.
    (row,) = json.loads(store.run("view-user", "amy", now=T0 + 100).stdout)
    assert "qos" not in row and "default_qos" not in row
    # ... unless asked for by name.
    named = store.run("view-user", "amy", "--fields", "username,qos", now=T0 + 100).stdout
    assert json.loads(named) == [{"username": "amy", "qos": ""}]
    listed = store.run("list-users", "-o", "{username}:{default_qos}", now=T0 + 100).stdout
    assert listed == "username:default_qos\namy:\n"
    store.run(
        "edit-user", "amy", "--qos", "normal,high", "--default-qos", "normal", *OPS, now=T0 + 200
    )
    (row,) = json.loads(store.run("view-user", "amy", now=T0 + 200).stdout)
    assert (row["qos"], row["default_qos"]) == ("normal,high", "normal")
    (listed,) = json.loads(store.run("list-users", "--json", now=T0 + 200).stdout)
    assert (listed["qos"], listed["default_qos"]) == ("normal,high", "normal")
    header = store.run("list-users", now=T0 + 200).stdout.splitlines()[0]
    assert header.endswith("| qos         | default_qos")
    assert lines(store, "--user", "amy", now=T0 + 200)[-1] == (
        '2023-11-14T22:16:40+00:00  ops  edit-user amy/root: qos "" → normal,high, '
        'default_qos "" → normal'
    )
    refused = store.run("delete-qos", "high", now=T0 + 200, expect=1)
    assert refused.stderr == (
        "fairledger: QOS high is used by associations amy/root: edit them first\n"
    )
    store.run("add-user", "-u", "bob", "-B", "root", "-i", "5002", "--qos", "high", now=T0 + 200)
    (bob,) = json.loads(store.run("view-user", "bob", now=T0 + 200).stdout)
    assert (bob["qos"], bob["default_qos"]) == ("high", "")


# --- the charge --------------------------------------------------------------------------------
def job(job_id: int, start: float, qos: str | None) -> str:
    extra = {"qos": qos} if qos is not None else {}
    return (
        job_line(job_id, user="amy", userid=5001, end=start + 100, seconds=100, ncores=4, **extra)
        + "\n"
    )


def usage(store: Store, now: float) -> float:
    store.run("update-usage", now=now)
    (row,) = json.loads(store.run("view-user", "amy", now=now).stdout)
    return float(row["job_usage"])


def test_the_usage_factor_is_fixed_when_a_job_is_recorded(ledger_store: Store) -> None:
    store = ledger_store
    store.run("add-bank", "root", "1")
    store.run("add-user", "-u", "amy", "-B", "root", "-i", "5001")
    store.run("add-qos", "high", "--usage-factor", "2")
    store.run("add-qos", "standby", "--usage-factor", "0")
    # Each job: one node for 100 s, 100 node-seconds under the default weights (node 1).
    jobs = job(1, T0 + 100, "high") + job(2, T0 + 100, "standby") + job(3, T0 + 100, "nope")
    store.run("ingest", "-", input=jobs, now=T0 + 300)
    # high: 100 · 2 = 200; standby: 100 · 0 = 0; an unknown QOS: 100 · 1 = 100
    assert usage(store, T0 + 300) == 300.0
    charges = store.run("view-job-records", "-o", "{id} {charge}", now=T0 + 300).stdout
    assert charges.split("\n")[1:4] == ["1 200.0", "2 0.0", "3 100.0"]
    # A later factor prices later jobs only.
    store.run("edit-qos", "high", "--usage-factor", "5", now=T0 + 400)
    store.run("ingest", "-", input=job(4, T0 + 400, "high"), now=T0 + 600)
    assert usage(store, T0 + 600) == 800.0  # 300 + 100 · 5
    store.run("rebuild", now=T0 + 600)
    assert usage(store, T0 + 600) == 800.0
    # The same jobs again are duplicates, not conflicts, whatever the factor now.
    again = store.run("ingest", "-", input=jobs, now=T0 + 600)
    assert again.stdout.startswith("recorded 0, duplicate 3")


def test_the_usage_factor_scales_continuous_usage(store: Store) -> None:
    # Fair Tree with no decay (half-life 0, a yearly reset): raw usage is billing · seconds.
    store.run("create-db", "--fairshare-algorithm", "fair-tree")
    store.run("edit-config", "priority_usage_reset_period=YEARLY", "priority_decay_half_life=0")
    store.run("add-bank", "root", "1")
    store.run("add-user", "-u", "amy", "-B", "root", "-i", "5001")
    store.run("add-qos", "high", "--usage-factor", "2.5")
    store.run("ingest", "-", input=job(1, T0 + 100, "high") + job(2, T0 + 100, None), now=T0 + 300)
    # 4 CPUs · 2.5 · 100 s + 4 CPUs · 100 s = 1000 + 400
    assert usage(store, T0 + 300) == 1400.0
    store.run("edit-qos", "high", "--usage-factor", "1", now=T0 + 400)
    store.run("rebuild", now=T0 + 400)
    assert usage(store, T0 + 400) == 1400.0


def test_sacct_jobs_of_an_imported_site_are_charged_with_their_qos(store: Store) -> None:
    # The site's dump (tests/data/slurm/site.cfg) defines QOS high with UsageFactor=2.0 and
    # normal (1); no decay and a yearly reset, so raw usage is billing · seconds.
    store.run("create-db", "--fairshare-algorithm", "fair-tree")
    store.run("edit-config", "priority_usage_reset_period=YEARLY", "priority_decay_half_life=0")
    store.run("import-slurm", str(DATA / "slurm" / "site.cfg"))
    sacct = (
        "JobIDRaw|User|Account|Partition|QOS|Start|End|State|NCPUS\n"
        f"1|brian|chemistry|batch|high|{T0 + 100}|{T0 + 200}|COMPLETED|4\n"
        f"2|brian|chemistry|batch|normal|{T0 + 100}|{T0 + 200}|COMPLETED|4\n"
    )
    store.run("ingest", "--format", "sacct", "-", input=sacct, now=T0 + 300)
    store.run("update-usage", now=T0 + 300)
    rows = json.loads(store.run("list-users", "--json", "--username", "brian", now=T0 + 300).stdout)
    # 4 CPUs · 2.0 · 100 s + 4 CPUs · 1.0 · 100 s
    assert [r["job_usage"] for r in rows] == [1200.0]
