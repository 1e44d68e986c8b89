"""`diff --from T1 --to T2` on both stores: what changed between two moments."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.cli.test_history import OPS, build, built_store, job
from tests.conftest import T0, Store


def build_more(store: Store) -> None:
    """build()'s history, then: T0+700 dave joins A; T0+750 a long job of carol's;
    T0+800 fair-share; T0+850 dave deactivated."""
    build(store)
    store.run("add-user", "-u", "dave", "-B", "A", "-i", "1004", *OPS, now=T0 + 700)
    store.run("ingest", "-", input=job(3, "carol", "A", T0 + 740, 200) + "\n", now=T0 + 750)
    store.run("update-fshare", now=T0 + 800)
    store.run("delete-user", "dave", "A", *OPS, now=T0 + 850)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    yield from built_store(request, tmp_path_factory, build_more)


def diff(store: Store, start: float | str, end: float | str, *more: str) -> tuple[str, str]:
    result = store.run("diff", "--from", str(start), "--to", str(end), *more, now=T0 + 900)
    return result.stdout, result.stderr


def test_diff_of_a_known_history(site: Store) -> None:
    out, err = diff(site, T0 + 150, T0 + 600)
    assert out.splitlines() == [
        "banks:",
        "  - bank B",
        # clear-usage A left its cutoff on the bank too, as flux-accounting's bank_table has it
        "  bank A: shares 1 → 10, ignore_older_than (none) → 2023-11-14T22:14:10+00:00",
        "associations:",
        "  + user carol in A",
        "  - user bob in B",
        "  user alice in A: ignore_older_than (none) → 2023-11-14T22:14:10+00:00",
        "queues:",
        "  queue gold: priority 100 → 5",
        "projects:",
        "  - project p1",
        "factors:",
        "  factor queue: weight 10000 → 500",
        "config:",
        "  config decay_factor: value 0.5 → 0.25",
        # No fair-share line: clear-usage A at T0+550 put alice/A (and carol/A) back at 0.5
        # until the next walk, as flux-accounting does, so every association is 0.5, rank 1.
    ]
    lines = err.splitlines()
    assert lines[0].startswith("from: as of 2023-11-14T22:15:50+00:00: log position ")
    assert lines[0].endswith(" (event of 2023-11-14T22:15:00+00:00)")
    assert lines[1].startswith("to: as of 2023-11-14T22:23:20+00:00: log position ")
    # Mid-way: alice joined B (her default bank stays A), before B was removed.
    assert diff(site, T0 + 250, T0 + 350)[0].splitlines() == [
        "banks:",
        "  bank A: shares 1 → 10",
        "associations:",
        "  + user alice in B",
        "queues:",
        "  queue gold: priority 100 → 5",
        "factors:",
        "  factor queue: weight 10000 → 500",
        "config:",
        "  config decay_factor: value 0.5 → 0.25",
    ]
    # Backwards is refused (issue 12): a reversed pair is a typo, not a question.
    backwards = site.run(
        "diff", "--from", str(T0 + 600), "--to", str(T0 + 150), now=T0 + 900, expect=1
    )
    assert backwards.stdout == ""
    assert backwards.stderr == (
        "fairledger: --from 1700000600 (2023-11-14T22:23:20+00:00) is after "
        "--to 1700000150 (2023-11-14T22:15:50+00:00)\n"
    )


def test_fairshare_values_and_ranks(site: Store) -> None:
    # New fair-share at T0+800: dave (no usage) first, alice (80) second, carol (200) last;
    # before it, clear-usage A (T0+550) had put alice and carol back at 0.5, both rank 1.
    assert diff(site, T0 + 600, T0 + 800)[0].splitlines() == [
        "associations:",
        "  + user dave in A",
        "fair-share:",
        "  fair-share alice/A: 0.5 → 0.666667 (rank 1 → 2)",
        "  fair-share carol/A: 0.5 → 0.333333 (rank 1 → 3)",
    ]
    # dave deactivated: values stay until the next update-fshare, ranks move at once.
    assert diff(site, T0 + 800, T0 + 900)[0].splitlines() == [
        "associations:",
        "  user dave in A: active true → false",
        "fair-share:",
        "  fair-share alice/A: 0.666667 (rank 2 → 1)",
        "  fair-share carol/A: 0.333333 (rank 3 → 2)",
        "  fair-share dave/A: 1.0 (rank 1 → inactive)",
    ]


def test_json(site: Store) -> None:
    data = json.loads(diff(site, T0 + 600, T0 + 900, "--json")[0])
    assert data["from"]["asked"] == "2023-11-14T22:23:20+00:00"
    assert data["to"]["asked"] == "2023-11-14T22:28:20+00:00"
    assert data["to"]["position"] > data["from"]["position"]
    assert data["associations"]["added"] == [
        {
            "username": "dave",
            "bank": "A",
            "active": False,
            "userid": 1004,
            "default_bank": "A",
            "shares": 1,
            "max_running_jobs": 5,
            "max_active_jobs": 7,
            "max_nodes": 2147483647,
            "max_cores": 2147483647,
            "max_sched_jobs": 2147483647,
            "queues": "",
            "projects": "*",
            "default_project": "*",
            "ignore_older_than": 0.0,
            "qos": "",
            "default_qos": "",
        }
    ]
    assert data["associations"]["removed"] == data["associations"]["changed"] == []
    assert data["banks"] == {"added": [], "removed": [], "changed": []}
    assert data["fairshare"] == [
        {"username": "alice", "bank": "A", "fairshare": [0.5, 0.666667], "rank": [1, 1]},
        {"username": "carol", "bank": "A", "fairshare": [0.5, 0.333333], "rank": [1, 2]},
    ]
    early = json.loads(diff(site, T0 + 150, T0 + 600, "--json")[0])
    assert early["banks"]["changed"] == [
        {"bank": "A", "changes": {"shares": [1, 10], "ignore_older_than": [0, T0 + 50]}}
    ]
    assert early["projects"]["removed"] == [{"project": "p1"}]
    assert early["config"]["changed"] == [
        {"key": "decay_factor", "changes": {"value": ["0.5", "0.25"]}}
    ]


def test_no_changes_relative_times_and_errors(site: Store) -> None:
    out, err = diff(site, T0 + 10, T0 + 90)
    assert out == "" and err.endswith("\nno changes\n")
    empty = json.loads(diff(site, T0 + 10, T0 + 90, "--json")[0])
    assert empty["fairshare"] == [] and empty["banks"]["changed"] == []
    # Durations mean that long before the ledger's now (--now T0+900); --to defaults to now.
    assert diff(site, "10m", "5m") == diff(site, T0 + 300, T0 + 600)
    now = site.run("diff", "--from", str(T0 + 600), now=T0 + 900)
    assert now.stdout == diff(site, T0 + 600, T0 + 900)[0]
    before = site.run("diff", "--from", str(T0 - 10), "--to", str(T0 + 10), now=T0 + 900, expect=1)
    assert before.stderr == (
        "fairledger: no ledger at 2023-11-14T22:13:10+00:00: the ledger was created at "
        "2023-11-14T22:13:20+00:00\n"
    )
    site.run("diff", "--to", str(T0 + 10), expect=2)
    site.run("diff", "--from", "last tuesday", expect=2)


def test_qos_partitions_and_association_qos_are_compared(ledger_store: Store) -> None:
    s = ledger_store
    s.run("add-bank", "root", "1", now=T0 + 10)
    s.run("add-user", "--username", "u", "--userid", "1", "--bank", "root", now=T0 + 10)
    s.run("add-queue", "batch", now=T0 + 10)
    s.run("add-qos", "high", "--priority", "10", now=T0 + 20)
    s.run("edit-qos", "high", "--priority", "50", now=T0 + 30)
    s.run("edit-queue", "batch", "--priority-job-factor", "5", now=T0 + 30)
    s.run("edit-user", "u", "--qos", "high", now=T0 + 30)
    out = s.run("diff", "--from", str(T0 + 25), "--to", str(T0 + 35), now=T0 + 40).stdout
    assert out == (
        "associations:\n"
        '  user u in root: qos "" → high\n'
        "queues:\n"
        "  queue batch: priority_job_factor 1 → 5\n"
        "QOS:\n"
        "  QOS high: priority 10 → 50\n"
    )
    data = json.loads(
        s.run("diff", "--from", str(T0 + 15), "--to", str(T0 + 25), "--json", now=T0 + 40).stdout
    )
    assert data["qos"]["added"] == [
        {"qos": "high", "priority": 10, "usage_factor": 1.0, "flags": "", "description": ""}
    ]
