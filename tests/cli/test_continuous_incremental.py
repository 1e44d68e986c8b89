"""A Slurm site's usage carried forward (projections.writers.continuous_state): an update adds
only the jobs recorded since the last one, and those still running then, to the anchored sums
it stored. Its numbers must be, to the bit, those a whole recomputation gives: each cycle runs
beside a twin ledger that records a harmless site event (a config key of the site's own)
before every update, which makes the twin read every job again. Each cycle also counts the
whole readings the ledger under test made, so a carried-forward update that silently fell
back to a whole reading fails."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from projections.writers import continuous_state
from tests.cli.test_cron import CREATED, _site, twin  # noqa: F401 (a fixture)
from tests.cli.test_cron_incremental import listed, rebuilt_alike, store_calls
from tests.cli.test_ingest import job, write
from tests.conftest import T0, Store

HALF_LIFE = 604800.0  # PriorityDecayHalfLife's default, 7 days
MIDNIGHT = 1_700_006_400.0  # 2023-11-15 00:00 UTC, the first DAILY reset after T0


@pytest.fixture
def whole_readings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The store URL of every whole reading (continuous_state.read_at) made while it runs."""
    yield store_calls(monkeypatch, continuous_state, "read_at")


class Pair:
    """The ledger under test and its twin, which reads every job at every update."""

    def __init__(self, fast: Store, full: Store, tmp_path: Path, readings: list[str]) -> None:
        self.fast, self.full, self.tmp_path, self.readings = fast, full, tmp_path, readings
        self.files = 0

    def ingest(self, now: float, *jobs: dict[str, Any]) -> None:
        self.files += 1
        path = write(self.tmp_path / f"jobs{self.files}.jsonl", *jobs)
        for store in (self.fast, self.full):
            store.run("ingest", path, now=now)

    def update(self, now: float, whole: bool, *command: str) -> None:
        """`command` (cron by default) on both; `whole`: the ledger under test must read every
        job again (a site event, a reset), else carry its sums forward."""
        self.readings.clear()
        self.fast.run(*(command or ("cron",)), now=now)
        assert len(self.readings) == (1 if whole else 0), self.readings
        self.files += 1
        self.full.run("add-config", f"twin{self.files}=x", now=now)
        self.full.run(*(command or ("cron",)), now=now)
        assert _shown(self.fast, now) == _shown(self.full, now)


def _shown(store: Store, now: float) -> dict[str, Any]:
    users = json.loads(store.run("list-users", "--json", now=now).stdout)
    return {
        "users": {(r["username"], r["bank"]): (r["job_usage"], r["fairshare"]) for r in users},
        "sshare": store.run("sshare", "-l", now=now).stdout,
    }


def _slurm_site(store: Store) -> None:
    _site(store)
    store.run("edit-config", "fairshare_algorithm=fair-tree", now=CREATED)


def _decayed(ncores: float, start: float, end: float, at: float) -> float:
    """One job's continuous usage at `at`, straight from the integral (docs/semantics.md)."""
    k = math.log(2.0) / HALF_LIFE
    return ncores / k * (math.exp(-(at - end) * k) - math.exp(-(at - start) * k))


def _usage(store: Store, now: float) -> dict[tuple[str, str], float]:
    return listed(store, now, "job_usage")


def test_updates_carry_the_sums_forward_and_give_a_whole_readings_numbers(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    whole_readings: list[str],
) -> None:
    _slurm_site(store)
    _slurm_site(twin)
    pair = Pair(store, twin, tmp_path, whole_readings)
    now = T0 + 600
    pair.ingest(now, job(1, end=T0, duration=100), job(2, end=T0 + 100, duration=60))
    pair.update(now, True)  # the first update after the site's events reads everything

    # bob's job, a late one of alice's, and one of alice's still running at this update
    # (it ends 500 s after it): counted up to now, then settled by the next update.
    now += 600
    pair.ingest(
        now,
        job(3, end=now - 50, duration=40, userid=5002),
        job(4, end=T0 - 3000, duration=30),
        job(5, end=now + 500, duration=700),
    )
    pair.update(now, False)
    pair.update(now + 60, False)  # no new job: the running one is still running
    now += 1000
    pair.update(now, False)  # job 5 has ended: settled from the mark's running jobs

    # By hand: every job has ended; alice's four jobs in physics (her default bank), bob's one.
    expected = {
        ("alice", "physics"): math.fsum(
            _decayed(1, end - duration, end, now)
            for end, duration in ((T0, 100), (T0 + 100, 60), (T0 - 3000, 30), (T0 + 1700, 700))
        ),
        ("bob", "chemistry"): _decayed(1, T0 + 1150 - 40, T0 + 1150, now),
        ("alice", "chemistry"): 0.0,
    }
    assert _usage(store, now) == pytest.approx(expected, rel=1e-12)

    # New shares and a new queue move no usage (ledger.usage_effects): the sums carry, and
    # Fair Tree ranks them under the new shares as the twin, reading every job, does.
    for store_ in (store, twin):
        store_.run("edit-bank", "physics", "--shares", "3", now=now + 10)
        store_.run("add-queue", "debug", now=now + 10)
    pair.update(now + 20, False)

    # The separate commands carry the sums too; clear-usage is a site event: all read again.
    pair.ingest(now + 60, job(6, end=now + 30, duration=7, bank="chemistry"))
    pair.update(now + 60, False, "update-usage")
    pair.update(now + 120, False, "update-fshare")
    for store_ in (store, twin):
        store_.run("clear-usage", "chemistry", now=now + 180)
    pair.ingest(now + 240, job(7, end=now + 200, duration=9, userid=5002))
    pair.update(now + 240, True)

    # The past, asked of both: the same trees and sshare.
    for asked in (T0 + 700, now - 500, now + 200):
        for args in (("view-bank", "root", "-t"), ("sshare", "-l")):
            asked_args = (*args, "--as-of", f"{asked:.3f}")
            later = now + 300
            assert (
                store.run(*asked_args, now=later).stdout == twin.run(*asked_args, now=later).stdout
            )

    rebuilt_alike(store, now + 300)  # the carried sums included


def test_reads_take_the_last_updates_sums_as_a_whole_reading_would(
    store: Store, tmp_path: Path, whole_readings: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read at a moment since the last update (sshare and view-bank now, an as-of) adds the
    jobs recorded since to that update's sums; a moment before it takes from them the jobs
    it had not seen (recorded later, or ended later; one running then counts its part); a
    moment with a site event between it and the update reads every job. Each answer is the
    whole reading's, to the bit."""
    _slurm_site(store)

    def answers(reads: dict[str, tuple[str, ...]], now: float) -> dict[str, Any]:
        """Each read's output and how many whole readings it made, then the same reads with
        every job read (the two must agree)."""
        out: dict[str, Any] = {}
        for name, args in reads.items():
            whole_readings.clear()
            out[name] = (store.run(*args, now=now).output, len(whole_readings))
        with monkeypatch.context() as patched:
            patched.setattr(continuous_state, "carried", lambda *args: None)
            patched.setattr(continuous_state, "subtracted", lambda *args: None)
            for name, args in reads.items():
                assert store.run(*args, now=now).output == out[name][0], name
        return {name: readings for name, (_output, readings) in out.items()}

    def as_of(moment: float) -> tuple[str, ...]:
        return ("view-bank", "root", "-t", "--as-of", f"{moment:.3f}")

    store.run("ingest", write(tmp_path / "a.jsonl", job(1, end=T0, duration=100)), now=T0 + 600)
    store.run("cron", now=T0 + 600)
    # bob's job, and one of alice's that runs from T0 + 1000 to T0 + 1700.
    late = (job(2, end=T0 + 1150, duration=40, userid=5002), job(3, end=T0 + 1700, duration=700))
    store.run("ingest", write(tmp_path / "b.jsonl", *late), now=T0 + 1200)
    store.run("cron", now=T0 + 1260)  # job 3 running: not in the sums
    store.run("cron", now=T0 + 1800)  # job 3 ended: in the sums
    now = T0 + 1860
    assert answers(
        {
            "sshare": ("sshare", "-a", "--json"),
            "tree now": ("view-bank", "root", "-t"),
            "before bob's job": as_of(T0 + 900),
            "job 3 running": as_of(T0 + 1230),
            "since the update": as_of(T0 + 1830),
        },
        now,
    ) == {
        "sshare": 0,
        "tree now": 0,
        "before bob's job": 0,
        "job 3 running": 0,
        "since the update": 0,
    }
    sshare = json.loads(store.run("sshare", "-a", "--json", now=now).stdout)
    assert [r["RawUsage"] > 0 for r in sshare if r["User"] == "bob"] == [True]

    # A config key of the site's own can move anyone's usage: a moment before it and the next
    # update reads every job; one after it is taken from that update's sums.
    store.run("add-config", "note=x", now=T0 + 1900)
    store.run("cron", now=T0 + 1960)
    assert answers(
        {"before the change": as_of(T0 + 1230), "after the change": as_of(T0 + 1930)},
        T0 + 2000,
    ) == {"before the change": 1, "after the change": 0}


def test_a_reset_boundary_restarts_the_sums(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    whole_readings: list[str],
) -> None:
    for ledger in (store, twin):
        _slurm_site(ledger)
        ledger.run("edit-config", "priority_usage_reset_period=DAILY", now=CREATED)
    pair = Pair(store, twin, tmp_path, whole_readings)
    now = MIDNIGHT - 1200
    pair.ingest(now, job(1, end=now - 100, duration=300))
    pair.update(now, True)
    # A job across midnight, recorded before it: only its time after midnight counts then.
    pair.ingest(now + 600, job(2, end=MIDNIGHT + 400, duration=1000))
    pair.update(now + 600, False)
    pair.update(MIDNIGHT + 600, True)  # the reset: every sum starts again
    assert _usage(store, MIDNIGHT + 600)[("alice", "physics")] == pytest.approx(
        _decayed(1, MIDNIGHT, MIDNIGHT + 400, MIDNIGHT + 600), rel=1e-12
    )
    pair.ingest(MIDNIGHT + 900, job(3, end=MIDNIGHT + 800, duration=50, userid=5002))
    pair.update(MIDNIGHT + 900, False)


def test_a_new_association_or_default_bank_restarts_its_users_sums_alone(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    whole_readings: list[str],
) -> None:
    """A new association and a new default bank move only their users' usage: their sums
    start again from every job of theirs (carol's job recorded before she existed, bob's job
    naming only the userid dave now shares, alice's jobs without a bank), the others carry,
    and no whole reading is made; the twin, reading everything, shows the same to the bit."""
    _slurm_site(store)
    _slurm_site(twin)
    pair = Pair(store, twin, tmp_path, whole_readings)
    now = T0 + 600
    pair.ingest(
        now,
        job(1, end=T0, duration=100),  # alice by userid, her default bank
        job(2, end=T0 + 50, duration=40, userid=5002),  # bob by userid alone
        job(3, end=T0 + 60, duration=25, user="carol", userid=5003),  # no carol yet
        job(4, end=T0 + 70, duration=30, userid=5002, user="bob", bank="chemistry"),
        job(5, end=now + 300, duration=500),  # alice, still running at the first update
    )
    pair.update(now, True)
    for ledger in (store, twin):
        ledger.run("add-user", "-u", "carol", "-i", "5003", "-B", "physics", now=now + 30)
        ledger.run("add-user", "-u", "dave", "-i", "5002", "-B", "physics", now=now + 30)
        ledger.run("edit-user", "alice", "--default-bank", "chemistry", now=now + 30)
    pair.update(now + 60, False)
    usage = _usage(store, now + 60)
    assert usage[("carol", "physics")] == pytest.approx(_decayed(1, T0 + 35, T0 + 60, now + 60))
    assert usage[("bob", "chemistry")] == pytest.approx(_decayed(1, T0 + 40, T0 + 70, now + 60))
    assert usage[("alice", "physics")] == 0.0
    pair.ingest(now + 120, job(6, end=now + 100, duration=9, user="carol"))
    pair.update(now + 400, False)  # alice's running job ends in chemistry
    rebuilt_alike(store, now + 400)
