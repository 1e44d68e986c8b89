"""explain-job on both stores: the priority a recorded job had when it was submitted."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import job_line
from tests.conftest import T0, Store

LATER = T0 + 400  # every explanation asked long after the fact must not have moved


def job(
    job_id: int,
    user: str,
    submit: float,
    end: float,
    seconds: float,
    **extra: Any,
) -> str:
    return job_line(job_id, user=user, submit=T0 + submit, end=T0 + end, seconds=seconds, **extra)


def lines(*jobs: str) -> str:
    return "\n".join(jobs) + "\n"


def history(store: Store) -> dict[str, Any]:
    """Periods of 100 s from T0 (4 past bins, D = 0.5). Banks A and B under root, 1 share each;
    alice in A, bob and carol in B; queue gold at priority 100.

    T0+100  jobs of period 0 (alice 80+40+4, bob 10; dave's two have no association yet)
    T0+150  update-fshare S1: usage alice 62, bob 5, carol 0 -> carol 1.0, bob 2/3, alice 1/3
    T0+200  alice's jobs of period 1 (25, 30); `explain-job 3` asked now; then A's shares 1 ->
            100 and gold's priority 100 -> 5
    T0+240  alice's job of period 2 (12)
    T0+250  update-fshare S2: usage alice 12 + 55/2 + 124/4 = 70.5, bob 2.5 -> alice 1.0
    T0+300  alice's job 8 (submitted after S2); dave gets an association
    """
    store.run(
        "create-db", "--priority-decay-half-life", "100", "--priority-usage-reset-period", "400"
    )
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    store.run("add-bank", "B", "1", "--parent-bank", "root")
    store.run("add-queue", "gold", "--priority", "100")
    store.run("add-user", "-u", "alice", "-B", "A", "-i", "1001")
    store.run("add-user", "-u", "bob", "-B", "B", "-i", "1002")
    store.run("add-user", "-u", "carol", "-B", "B", "-i", "1003")
    setup = store.log_position()
    store.run(
        "ingest",
        "-",
        input=lines(
            job(1, "alice", 1, 90, 80, queue="gold"),
            job(4, "alice", 2, 95, 40),
            job(7, "alice", 3, 80, 4),
            job(2, "bob", 4, 60, 10),
            # The same id on another cluster: explain-job 3 needs --cluster.
            job(3, "bob", 5, 90, 0, cluster="c2"),
            job(9, "dave", 30, 70, 10, bank="B"),  # dave has no association before T0+300
            job(10, "dave", -50, -30, 10, bank="B"),  # submitted before the ledger existed
        ),
        now=T0 + 100,
    )
    store.run("update-fshare", now=T0 + 150)
    s1 = store.log_position()
    store.run(
        "ingest",
        "-",
        input=lines(job(3, "alice", 160, 195, 25, urgency=20), job(5, "alice", 110, 150, 30)),
        now=T0 + 200,
    )
    early = {
        "text": store.run("explain-job", "3", "--cluster", "cluster", now=T0 + 200).stdout,
        "json": store.run(
            "explain-job", "3", "--cluster", "cluster", "--json", now=T0 + 200
        ).stdout,
    }
    store.run("edit-bank", "A", "--shares", "100", "--reason", "grant", now=T0 + 200)
    store.run("edit-queue", "gold", "--priority", "5", now=T0 + 200)
    store.run("ingest", "-", input=lines(job(6, "alice", 190, 220, 12)), now=T0 + 240)
    store.run("update-fshare", now=T0 + 250)
    s2 = store.log_position()
    store.run("ingest", "-", input=lines(job(8, "alice", 260, 290, 20, queue="gold")), now=T0 + 300)
    store.run("add-user", "-u", "dave", "-B", "B", "-i", "1004", now=T0 + 300)
    return {"setup": setup, "s1": s1, "s2": s2, "early": early}


def explain(store: Store, *args: str, now: float = LATER) -> dict[str, Any]:
    return json.loads(store.run("explain-job", *args, "--json", now=now).stdout)


def factors(found: dict[str, Any]) -> list[tuple[str, float, int, float]]:
    return [(f["factor"], f["value"], f["weight"], f["product"]) for f in found["factors"]]


def test_priority_at_submission_time(store: Store) -> None:
    at = history(store)

    # Job 1 (ƒ2): submitted at T0+1, before any update-fshare: 0.5 as a new association;
    # gold's priority was still 100.
    first = explain(store, "ƒ2")
    assert (first["jobid"], first["id"], first["username"], first["bank"]) == (
        "ƒ2",
        1,
        "alice",
        "A",
    )
    assert first["submitted"]["position"] == at["setup"]
    assert first["snapshot"] is None and first["usage"] is None
    assert (first["fairshare"], first["rank"], first["ranked"]) == (0.5, None, None)
    assert factors(first) == [
        ("fairshare", 0.5, 100000, 50000.0),
        ("queue", 100, 10000, 1000000),
        ("bank", 0.0, 0, 0.0),
        ("urgency", 0, 1000, 0),
    ]
    assert first["priority"] == 1050000
    text = store.run("explain-job", "1", now=LATER).stdout
    assert "fair-share 0.5: no fair-share snapshot yet (a new association has 0.5)" in text
    assert text.rstrip().endswith("priority: 1050000")

    # Job 3: submitted at T0+160, after S1 (alice 1/3, rank 1 of 3), urgency 20, no queue.
    third = explain(store, "3", "--cluster", "cluster")
    assert third["snapshot"] == {
        "at": T0 + 150.0,
        "time": "2023-11-14T22:15:50+00:00",
        "position": at["s1"],
    }
    assert third["fairshare_from"] == third["snapshot"]
    assert third["submitted"]["position"] == at["s1"]
    assert (third["fairshare"], third["rank"], third["ranked"]) == (0.333333, 1, 3)
    assert (third["queue"], third["urgency"]) == (None, 20)
    assert factors(third) == [
        ("fairshare", 0.333333, 100000, 100000 * 0.333333),
        ("queue", 0, 10000, 0),
        ("bank", 0.0, 0, 0.0),
        ("urgency", 4, 1000, 4000),
    ]
    assert third["priority"] == 37333  # round(33333.3 + 4000)
    usage = third["usage"]
    assert (usage["position"], usage["job_usage"], usage["contributing_jobs"]) == (
        at["s1"],
        62.0,
        3,
    )
    assert [(b["period"], b["total"], b["decay"], b["decayed"]) for b in usage["bins"]] == [
        (1, 0.0, 1.0, 0.0),
        (0, 124.0, 0.5, 62.0),
        (-1, 0.0, 0.25, 0.0),
        (-2, 0.0, 0.125, 0.0),
        (-3, 0.0, 0.0625, 0.0),
    ]
    assert [(j["id"], j["weight"]) for j in usage["top_jobs"]] == [(1, 40.0), (4, 20.0), (7, 2.0)]

    # The same as `priority --as-of` the submission time says.
    asked = store.run(
        "priority",
        "--username",
        "alice",
        "--urgency",
        "20",
        "--json",
        "--as-of",
        str(T0 + 160),
        now=LATER,
    )
    assert json.loads(asked.stdout)["priority"] == 37333

    # A later shares edit, queue edit, snapshot and jobs change nothing about job 3.
    assert (
        store.run("explain-job", "3", "--cluster", "cluster", now=LATER).stdout
        == at["early"]["text"]
    )
    assert (
        store.run("explain-job", "3", "--cluster", "cluster", "--json", now=LATER).stdout
        == at["early"]["json"]
    )

    # Job 8: submitted at T0+260, after S2 (A has 100 shares: alice 1.0, rank 3 of 3); gold is 5.
    eighth = explain(store, "ƒ9")
    assert eighth["snapshot"]["position"] == at["s2"]
    assert (eighth["fairshare"], eighth["rank"], eighth["ranked"]) == (1.0, 3, 3)
    assert factors(eighth) == [
        ("fairshare", 1.0, 100000, 100000.0),
        ("queue", 5, 10000, 50000),
        ("bank", 0.0, 0, 0.0),
        ("urgency", 0, 1000, 0),
    ]
    assert eighth["priority"] == 150000


def test_usage_behind_the_fairshare_across_period_boundaries(store: Store) -> None:
    at = history(store)
    usage = explain(store, "8")["usage"]
    # S2 at T0+250 is in period 2: period 2 counts whole, 1 half, 0 a quarter.
    assert (usage["at"], usage["position"], usage["job_usage"]) == (T0 + 250.0, at["s2"], 70.5)
    assert (usage["decay_factor"], usage["half_life"]) == (0.5, 100.0)
    assert [
        (b["age"], b["period"], b["start"], b["total"], b["decay"], b["decayed"])
        for b in usage["bins"]
    ] == [
        (0, 2, T0 + 200.0, 12.0, 1.0, 12.0),
        (1, 1, T0 + 100.0, 55.0, 0.5, 27.5),
        (2, 0, T0 + 0.0, 124.0, 0.25, 31.0),
        (3, -1, T0 - 100.0, 0.0, 0.125, 0.0),
        (4, -2, T0 - 200.0, 0.0, 0.0625, 0.0),
    ]
    # Six jobs counted; the five heaviest by charge × D^age, periods interleaved. Job 8 itself
    # (recorded after S2) and bob's jobs are not among them.
    assert usage["contributing_jobs"] == 6
    assert [
        (j["jobid"], j["id"], j["period"], j["charge"], j["decay"], j["weight"])
        for j in usage["top_jobs"]
    ] == [
        ("ƒ2", 1, 0, 80.0, 0.25, 20.0),
        ("ƒ6", 5, 1, 30.0, 0.5, 15.0),
        ("ƒ4", 3, 1, 25.0, 0.5, 12.5),
        ("ƒ7", 6, 2, 12.0, 1.0, 12.0),
        ("ƒ5", 4, 0, 40.0, 0.25, 10.0),
    ]
    text = store.run("explain-job", "8", now=LATER).stdout
    assert text.splitlines()[:3] == [
        "job ƒ9 (id 8, cluster cluster): alice in bank A, queue gold (priority 5), urgency 16",
        f"submitted 2023-11-14T22:17:40+00:00: log position {at['s2']} "
        "(event of 2023-11-14T22:17:30+00:00)",
        f"fair-share 1.0: the snapshot of 2023-11-14T22:17:30+00:00 (log position {at['s2']}), "
        "rank 3 of 3",
    ]
    assert "usage of alice/A at that snapshot: 70.5 (decay factor 0.5, periods of 100s" in text
    assert "top 5 of 6 jobs counted" in text
    assert "ƒ6    | cluster | 2023-11-14T22:15:50+00:00 | 1      | 30.0   | 0.5   | 15.0" in text


def test_errors(store: Store) -> None:
    history(store)
    missing = store.run("explain-job", "99", now=LATER, expect=1)
    assert missing.stderr == "fairledger: job 99 not found\n"
    assert store.run("explain-job", "8", "--cluster", "c2", now=LATER, expect=1).stderr == (
        "fairledger: job 8 not found on cluster c2\n"
    )
    assert store.run("explain-job", "3", now=LATER, expect=1).stderr == (
        "fairledger: job 3 is recorded on clusters c2, cluster: give --cluster\n"
    )
    assert explain(store, "3", "--cluster", "c2")["username"] == "bob"
    # dave's association was added at T0+300; his job 9 was submitted at T0+30.
    assert store.run("explain-job", "9", now=LATER, expect=1).stderr == (
        "fairledger: job 9: association of dave (B) unknown at its submission "
        "(2023-11-14T22:13:50+00:00): user dave did not exist yet\n"
    )
    early = store.run("explain-job", "10", now=LATER, expect=1).stderr
    assert early.startswith("fairledger: job 10 was submitted before the ledger existed: no ledger")
    assert len(early.splitlines()) == 1
    store.run("explain-job", "not-a-job", now=LATER, expect=2)
