"""Usage through the CLI, on both stores (docs/semantics.md, "Usage"): periods of one
half-life from the ledger epoch, B past bins decayed by D, late jobs, config changes, bank
sums, clear-usage, rebuild, and view-usage-report."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_ingest import all_tables, job, write
from tests.conftest import T0, Store
from tests.templates import built

H = 100  # half-life: period k = [T0 + 100k, T0 + 100k + 100)
RESET = 400  # B = 4 past bins


def period(k: int, offset: float = 50) -> float:
    """A time inside period k."""
    return T0 + k * H + offset


def charged(job_id: int, charge: int, end: float, userid: int = 5001, **fields: Any) -> dict:
    """A job whose charge under the default weights (1 node-second per node) is `charge`."""
    return job(job_id, end=end, duration=1, nnodes=charge, ncores=charge, userid=userid, **fields)


@pytest.fixture
def usage_store(store: Store) -> Store:
    """A ledger created at T0 with H = 100 s and a reset period of 400 s (4 past bins):
    root -> A (alice 5001, bob 5002), B (carol 5003)."""
    built(store, _usage_site)
    return store


def _usage_site(store: Store) -> None:
    store.run(
        "create-db",
        "--priority-decay-half-life",
        str(H),
        "--priority-usage-reset-period",
        str(RESET),
    )
    store.run("add-bank", "root", "1")
    for bank in ("A", "B"):
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    store.run("add-user", "-u", "alice", "-i", "5001", "-B", "A")
    store.run("add-user", "-u", "bob", "-i", "5002", "-B", "A")
    store.run("add-user", "-u", "carol", "-i", "5003", "-B", "B")


def ingest(store: Store, tmp_path: Path, now: float, *jobs: dict[str, Any]) -> str:
    path = write(tmp_path / f"{uuid.uuid4().hex}.jsonl", *jobs)
    return store.run("ingest", path, now=now).stdout


def update(store: Store, now: float) -> None:
    store.run("update-usage", now=now)


def bins(store: Store, user: str, now: float) -> dict[str, tuple[float, list[float]]]:
    """Per bank: the association's job_usage (view-user) and its periods, newest first
    (view-user -J: flux-accounting's job_usage_per_association_table rows)."""
    usage = {
        r["bank"]: r["job_usage"] for r in json.loads(store.run("view-user", user, now=now).stdout)
    }
    periods: dict[str, list[float]] = {}
    for r in json.loads(store.run("view-user", user, "-J", now=now).stdout):
        assert r["period"] == len(periods.setdefault(r["bank"], []))
        periods[r["bank"]].append(r["value"])
    return {bank: (usage[bank], periods[bank]) for bank in periods}


def usage(store: Store, now: float, *filters: str) -> dict[tuple[str, str], float]:
    rows = json.loads(store.run("list-users", *filters, "--json", now=now).stdout)
    return {(r["username"], r["bank"]): r["job_usage"] for r in rows}


def bank_usage(store: Store, now: float) -> dict[str, float]:
    rows = json.loads(store.run("list-banks", "--inactive", "--json", now=now).stdout)
    return {r["bank"]: r["job_usage"] for r in rows}


# --- the formula --------------------------------------------------------------------------------


def test_seed_example(usage_store: Store, tmp_path: Path) -> None:
    now = period(4, 60)
    out = ingest(
        usage_store,
        tmp_path,
        now,
        charged(1, 16000, period(4)),
        charged(2, 128, period(3)),
        charged(3, 64, period(2)),
        charged(4, 64, period(1)),
        charged(5, 16, period(0)),
        charged(6, 1000, period(-1)),  # older than B periods: no longer counts
    )
    assert out == "recorded 6, duplicate 0, unmatched 0\n"
    assert (
        usage_store.run("update-usage", now=now).stdout
        == "usage updated at 2023-11-14T22:21:00+00:00\n"
    )
    assert bins(usage_store, "alice", now) == {"A": (16089.0, [16000.0, 128.0, 64.0, 64.0, 16.0])}
    assert usage(usage_store, now) == {
        ("alice", "A"): 16089.0,
        ("bob", "A"): 0.0,
        ("carol", "B"): 0.0,
    }
    assert bank_usage(usage_store, now) == {"root": 16089.0, "A": 16089.0, "B": 0.0}


def test_usage_halves_at_every_boundary(usage_store: Store, tmp_path: Path) -> None:
    ingest(usage_store, tmp_path, period(0, 60), charged(1, 1600, period(0)))
    update(usage_store, period(0, 60))
    assert bins(usage_store, "alice", period(0, 60)) == {
        "A": (1600.0, [1600.0, 0.0, 0.0, 0.0, 0.0])
    }
    update(usage_store, period(1, 0))  # exactly on the boundary: the new period has begun
    assert bins(usage_store, "alice", period(1, 0)) == {"A": (800.0, [0.0, 1600.0, 0.0, 0.0, 0.0])}
    # Two boundaries crossed since the last update: both are applied.
    update(usage_store, period(3, 99))
    assert bins(usage_store, "alice", period(3, 99)) == {"A": (200.0, [0.0, 0.0, 0.0, 1600.0, 0.0])}
    # Until the next update, the values are those of the last one.
    assert usage(usage_store, period(4, 50))[("alice", "A")] == 200.0
    # update-fshare brings usage up to date first, at its own time.
    out = usage_store.run("update-fshare", now=period(4, 50)).stdout
    assert out == "fair-share updated at 2023-11-14T22:20:50+00:00\n"
    assert bins(usage_store, "alice", period(4, 50)) == {"A": (100.0, [0.0, 0.0, 0.0, 0.0, 1600.0])}
    # Older than B = 4 periods: the job no longer counts.
    update(usage_store, period(5, 0))
    assert bins(usage_store, "alice", period(5, 0)) == {"A": (0.0, [0.0] * 5)}
    assert bank_usage(usage_store, period(5, 0))["A"] == 0.0
    assert len(all_tables(usage_store)["jobs"]) == 1  # the job itself is kept


def test_skipping_many_periods_at_once(usage_store: Store, tmp_path: Path) -> None:
    jobs = [charged(i + 1, 2 ** (10 - i), period(i)) for i in range(4)]  # 1024, 512, 256, 128
    ingest(usage_store, tmp_path, period(3, 60), *jobs)
    update(usage_store, period(3, 60))
    assert bins(usage_store, "alice", period(3, 60)) == {
        "A": (128 + 128 + 128 + 128.0, [128.0, 256.0, 512.0, 1024.0, 0.0])
    }
    update(usage_store, period(6, 10))  # three boundaries at once
    assert bins(usage_store, "alice", period(6, 10)) == {
        "A": (128 / 8 + 256 / 16, [0.0, 0.0, 0.0, 128.0, 256.0])
    }


def test_late_job_lands_in_its_own_period(usage_store: Store, tmp_path: Path) -> None:
    ingest(usage_store, tmp_path, period(3, 40), charged(1, 10, period(3, 30)))
    update(usage_store, period(3, 40))
    assert bins(usage_store, "alice", period(3, 40)) == {"A": (10.0, [10.0, 0.0, 0.0, 0.0, 0.0])}
    # A job that ended in period 1, first seen in period 3.
    ingest(usage_store, tmp_path, period(3, 50), charged(2, 400, period(1)))
    update(usage_store, period(3, 50))
    assert bins(usage_store, "alice", period(3, 50)) == {"A": (110.0, [10.0, 0.0, 400.0, 0.0, 0.0])}
    update(usage_store, period(4, 50))
    assert bins(usage_store, "alice", period(4, 50)) == {"A": (55.0, [0.0, 10.0, 0.0, 400.0, 0.0])}


def test_jobs_count_for_their_own_association(usage_store: Store, tmp_path: Path) -> None:
    usage_store.run("add-user", "-u", "alice", "-B", "B")  # alice's default bank stays A
    now = period(0, 60)
    ingest(
        usage_store,
        tmp_path,
        now,
        charged(1, 100, period(0)),  # default bank
        charged(2, 20, period(0), bank="B"),
        charged(3, 3, period(0), userid=None, username="bob"),
        charged(4, 7, period(0), userid=5003),
    )
    update(usage_store, now)
    assert usage(usage_store, now) == {
        ("alice", "A"): 100.0,
        ("alice", "B"): 20.0,
        ("bob", "A"): 3.0,
        ("carol", "B"): 7.0,
    }
    assert bank_usage(usage_store, now) == {"root": 130.0, "A": 103.0, "B": 27.0}


# --- configuration changes ----------------------------------------------------------------------


def test_core_weight_reprices_only_jobs_recorded_after_it(
    usage_store: Store, tmp_path: Path
) -> None:
    R = {"version": 1, "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-3"}}]}}

    def two_nodes_eight_cores(job_id: int) -> dict[str, Any]:
        record = job(job_id, end=period(0, 20), duration=10, R=R)
        del record["nnodes"], record["ncores"]
        return record

    now = period(0, 30)
    ingest(usage_store, tmp_path, now, two_nodes_eight_cores(1))
    usage_store.run("edit-config", "core_weight=1", now=now)
    ingest(usage_store, tmp_path, now, two_nodes_eight_cores(2))
    # The first job again, now that cores cost something: a duplicate, not re-priced.
    out = ingest(usage_store, tmp_path, now, two_nodes_eight_cores(1))
    assert out == "recorded 0, duplicate 1, unmatched 0\n"
    charges = {r["id"]: r["charge"] for r in all_tables(usage_store)["jobs"]}
    assert charges == {"1": 20.0, "2": 100.0}  # (2 + 0*8) * 10 and (2 + 1*8) * 10
    update(usage_store, now)
    assert usage(usage_store, now)[("alice", "A")] == 120.0
    usage_store.run("rebuild", now=now)
    assert {r["id"]: r["charge"] for r in all_tables(usage_store)["jobs"]} == charges


def test_decay_settings_rebin_from_the_stored_jobs(usage_store: Store, tmp_path: Path) -> None:
    now = period(2, 60)
    ingest(
        usage_store,
        tmp_path,
        now,
        charged(1, 400, period(0)),
        charged(2, 200, period(1)),
        charged(3, 100, period(2)),
    )
    update(usage_store, now)
    before = bins(usage_store, "alice", now)
    assert before == {"A": (300.0, [100.0, 200.0, 400.0, 0.0, 0.0])}

    # H = 200: periods [T0, T0+200) and [T0+200, T0+400); B = floor(400/200) = 2.
    usage_store.run("edit-config", "priority_decay_half_life=200", now=now)
    update(usage_store, now)
    assert bins(usage_store, "alice", now) == {"A": (100 + 600 / 2, [100.0, 600.0, 0.0])}
    assert sorted(r["period"] for r in all_tables(usage_store)["jobs"]) == [0, 0, 1]

    # Back to H = 100: the same bins as before, nothing was lost.
    usage_store.run("edit-config", "priority_decay_half_life=100", now=now)
    update(usage_store, now)
    assert bins(usage_store, "alice", now) == before

    usage_store.run("edit-config", "decay_factor=0.25", now=now)
    update(usage_store, now)
    assert bins(usage_store, "alice", now) == {
        "A": (100 + 50 + 25.0, [100.0, 200.0, 400.0, 0.0, 0.0])
    }

    usage_store.run("edit-config", "priority_usage_reset_period=100", "decay_factor=0.5", now=now)
    update(usage_store, now)
    assert bins(usage_store, "alice", now) == {"A": (200.0, [100.0, 200.0])}  # B = 1
    assert len(all_tables(usage_store)["jobs"]) == 3


@pytest.mark.parametrize("how", ["a statement per period", "jobs in batches"])
def test_a_new_half_life_cuts_each_job_into_the_period_its_end_falls_in(
    usage_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A job that ends exactly on a period's start opens it, just before stays in the one
    before, whichever way the periods are cut (ranges over the end times, or, for more
    periods than usage_tables.PERIOD_RANGES_MAX, the jobs a batch at a time in key order)."""
    from projections.writers import usage_tables

    if how == "jobs in batches":
        monkeypatch.setattr(usage_tables, "PERIOD_RANGES_MAX", 0)
        monkeypatch.setattr(usage_tables, "REBIN_BATCH", 2)
    ends = {
        ("cluster", "1"): T0 + 199.5,
        ("cluster", "2"): T0 + 200,  # H = 200: the start of period 1
        ("other", "1"): T0 + 200.25,
        ("other", "2"): T0 + 400,  # period 2
        ("other", "10"): T0 - 0.5,  # before the epoch: period -1
    }
    ingest(
        usage_store,
        tmp_path,
        period(4),
        *[charged(int(i), 1, end, cluster=cluster) for (cluster, i), end in ends.items()],
    )
    usage_store.run("edit-config", "priority_decay_half_life=200", now=period(4))
    periods = {(r["cluster"], r["id"]): r["period"] for r in all_tables(usage_store)["jobs"]}
    assert periods == {
        ("cluster", "1"): 0,
        ("cluster", "2"): 1,
        ("other", "1"): 1,
        ("other", "2"): 2,
        ("other", "10"): -1,
    }


# --- banks and clear-usage ----------------------------------------------------------------------


def test_bank_usage_is_the_sum_of_its_active_associations(
    usage_store: Store, tmp_path: Path
) -> None:
    now = period(0, 60)
    ingest(
        usage_store,
        tmp_path,
        now,
        charged(1, 100, period(0)),
        charged(2, 50, period(0), userid=5002),
        charged(3, 30, period(0), userid=5003),
    )
    update(usage_store, now)
    assert bank_usage(usage_store, now) == {"root": 180.0, "A": 150.0, "B": 30.0}
    usage_store.run("delete-user", "bob", "A", now=now)
    update(usage_store, now)
    assert bank_usage(usage_store, now) == {"root": 130.0, "A": 100.0, "B": 30.0}
    # The inactive association keeps its own usage, listed separately.
    assert usage(usage_store, now, "--active", "0") == {("bob", "A"): 50.0}
    assert usage(usage_store, now, "--active", "1") == {("alice", "A"): 100.0, ("carol", "B"): 30.0}


def test_clear_usage_applies_to_the_banks_below(store: Store, tmp_path: Path) -> None:
    store.run(
        "create-db", "--priority-decay-half-life", "100", "--priority-usage-reset-period", "400"
    )
    store.run("add-bank", "root", "1")
    for bank, parent in [("A", "root"), ("D", "root"), ("E", "D"), ("F", "D")]:
        store.run("add-bank", bank, "1", "--parent-bank", parent)
    for user, uid, bank in [("alice", 5001, "A"), ("carol", 5003, "E"), ("dave", 5004, "F")]:
        store.run("add-user", "-u", user, "-i", str(uid), "-B", bank)
    jobs = []
    for n, uid in enumerate((5001, 5003, 5004)):
        jobs.append(charged(10 * n + 1, 100, period(0, 20), userid=uid))
        jobs.append(charged(10 * n + 2, 10, period(0, 60), userid=uid))
    now = period(0, 70)
    ingest(store, tmp_path, now, *jobs)
    update(store, now)
    assert usage(store, now) == {("alice", "A"): 110.0, ("carol", "E"): 110.0, ("dave", "F"): 110.0}

    store.run("clear-usage", "D", "--ignore-older-than", str(period(0, 40)), now=now)
    # Shown as zero at once; the next update counts the jobs after the cutoff.
    assert usage(store, now) == {("alice", "A"): 110.0, ("carol", "E"): 0.0, ("dave", "F"): 0.0}
    update(store, now)
    assert usage(store, now) == {("alice", "A"): 110.0, ("carol", "E"): 10.0, ("dave", "F"): 10.0}
    assert bank_usage(store, now) == {"root": 130.0, "A": 110.0, "D": 20.0, "E": 10.0, "F": 10.0}
    # A job that ended before the cutoff but arrives later does not count either.
    ingest(store, tmp_path, now, charged(31, 1000, period(0, 30), userid=5003))
    update(store, now)
    assert usage(store, now)[("carol", "E")] == 10.0

    # Without --ignore-older-than: everything up to now.
    later = period(0, 80)
    store.run("clear-usage", "A", now=later)
    update(store, later)
    assert usage(store, later)[("alice", "A")] == 0.0
    ingest(store, tmp_path, period(0, 95), charged(4, 5, period(0, 90)))
    update(store, period(0, 95))
    assert usage(store, period(0, 95)) == {
        ("alice", "A"): 5.0,
        ("carol", "E"): 10.0,
        ("dave", "F"): 10.0,
    }
    assert store.run("clear-usage", "nope", now=later + 20, expect=1).stderr.startswith(
        "fairledger: "
    )


def test_clear_usage_shows_bank_usage_consistent_with_its_associations(
    usage_store: Store, tmp_path: Path
) -> None:
    now = period(0, 60)
    ingest(
        usage_store,
        tmp_path,
        now,
        charged(1, 100, period(0)),
        charged(2, 30, period(0), userid=5003),
    )
    update(usage_store, now)
    usage_store.run("clear-usage", "A", now=now)
    assert usage(usage_store, now)[("alice", "A")] == 0.0
    assert bank_usage(usage_store, now) == {"root": 30.0, "A": 0.0, "B": 30.0}


# --- rebuild ------------------------------------------------------------------------------------


def test_rebuild_gives_the_same_tables(usage_store: Store, tmp_path: Path) -> None:
    s = usage_store
    ingest(
        s,
        tmp_path,
        period(1, 10),
        charged(1, 100, period(0)),
        charged(2, 50, period(1, 5), userid=5002),
        charged(3, 30, period(0), userid=5003),
        charged(4, 9, period(0), username="erin", userid=None),  # unmatched for now
    )
    update(s, period(1, 10))
    s.run("edit-config", "core_weight=0.5", now=period(1, 20))
    ingest(s, tmp_path, period(1, 30), charged(5, 7, period(1, 25)), charged(1, 100, period(0)))
    s.run("edit-config", "priority_decay_half_life=200", now=period(1, 40))
    s.run("add-user", "-u", "erin", "-B", "B", now=period(1, 40))
    s.run("clear-usage", "A", "--ignore-older-than", str(period(0, 60)), now=period(1, 50))
    s.run("delete-user", "bob", "A", now=period(1, 50))
    s.run("update-fshare", now=period(2, 10))
    ingest(s, tmp_path, period(3, 0), charged(6, 3, period(2, 90), userid=5003))
    update(s, period(3, 0))
    before = all_tables(s)
    assert len(before["jobs"]) == 6
    position = s.log_position()
    s.run("rebuild", now=period(3, 0))
    assert all_tables(s) == before
    assert s.log_position() == position


# --- view-usage-report --------------------------------------------------------------------------


def test_view_usage_report_totals(usage_store: Store, tmp_path: Path) -> None:
    now = T0 + 9100
    ingest(
        usage_store,
        tmp_path,
        now,
        job(1, end=T0 + 7200, duration=3600, nnodes=1),  # alice: 1 node-hour
        job(2, end=T0 + 7200, duration=1800, nnodes=4),  # alice: 2 node-hours
        job(3, end=T0 + 7000, duration=900, nnodes=16, userid=5002),  # bob: 4 node-hours
        job(4, end=T0 + 7100, duration=3600, nnodes=2, userid=5003),  # carol: 2 node-hours
        job(5, end=T0 + 9000, duration=100, nnodes=1),  # ends after --end
        job(6, end=T0 + 50, duration=10, nnodes=1, userid=5002),  # ends before --start
    )
    window = ["-s", str(T0 + 100), "-e", str(T0 + 8000)]

    def report(*args: str) -> list[str]:
        return usage_store.run("view-usage-report", *window, *args, now=now).stdout.splitlines()

    def line(label: str, *values: float) -> str:
        return f"{label:<26}" + "".join(f"{v:>14.2f}" for v in values)

    total = f"{'total':>14}"
    assert report("-t", "hour") == [
        f"{'bank:username':<26}{total}",
        line("A:bob", 4),
        line("A:alice", 3),
        line("B:carol", 2),
        line("TOTAL", 9),
    ]
    assert report("-t", "hour", "-r", "bybank") == [
        f"{'bank':<26}{total}",
        line("A", 7),
        line("B", 2),
        line("TOTAL", 9),
    ]
    assert report("-t", "min", "-r", "byuser") == [
        f"{'username':<26}{total}",
        line("bob", 240),
        line("alice", 180),
        line("carol", 120),
        line("TOTAL", 540),
    ]
    assert report("-u", "alice") == [
        f"{'bank:username':<26}{total}",
        line("A:alice", 10800),
        line("TOTAL", 10800),
    ]
    assert report("-b", "B", "-r", "bybank", "-t", "hour") == [
        f"{'bank':<26}{total}",
        line("B", 2),
        line("TOTAL", 2),
    ]
    bins_header = f"{'bank:username':<26}" + "".join(f"{b:>13d}+" for b in (0, 2, 8)) + total
    assert report("-t", "hour", "-S", "0,2,8") == [
        bins_header,
        line("A:bob", 0, 0, 4, 4),
        line("A:alice", 1, 2, 0, 3),
        line("B:carol", 0, 2, 0, 2),
        line("TOTAL", 1, 4, 4, 9),
    ]
    default_bins = report("-t", "hour", "-S", "x", "-r", "bybank")
    assert (
        default_bins[0]
        == f"{'bank':<26}"
        + "".join(f"{b:>13d}+" for b in (0, 2, 8, 32, 128, 512, 2048, 8192))
        + total
    )
    assert default_bins[1] == line("A", 1, 2, 4, 0, 0, 0, 0, 0, 7)
    bad = usage_store.run(
        "view-usage-report", "-s", str(T0 + 200), "-e", str(T0 + 100), now=now, expect=1
    )
    assert bad.stderr.startswith("fairledger: view-usage-report: ValueError: invalid range: end ")
