"""The priority audit of recorded Slurm jobs, on both stores: explain-job on a Slurm site prices a
job at its eligible time and at its start with the site of then, beside the Priority Slurm
recorded; `report priority-audit` lists the jobs whose recorded Priority differs, by how much,
and the factor that explains it.

The site (every change at T0 = 1700000000 unless said): fair-tree; partitions batch
(PriorityJobFactor 1) and big (4), so PARTITION = 1/4 = 0.25 and 4/4 = 1; QOS normal (Priority
0) and high (100), so QOS = 0 and 1; weights age 1000, fairshare 10000, partition 2000, qos
5000 (jobsize and assoc 0); PriorityMaxAge 10000 s, so AGE = seconds eligible / 10000. No
update-fshare ran: every association's fair-share is a new one's, 0.5, so FAIRSHARE weighs
0.5 × 10000 = 5000. At T0+6000 the partition weight becomes 8000; the sacct file
(tests/data/slurm/audit_sacct.txt, epoch times) is ingested at T0+7000.

Ours at start, by hand (age + fairshare + partition + qos):
* 101 alice batch normal, eligible +1000, start +3000: 0.2·1000 + 5000 + 0.25·2000 + 0 = 5700;
  recorded 5700.
* 102 bob big high, eligible +2000, start +4000: 0.2·1000 + 5000 + 1·2000 + 1·5000 = 12200;
  recorded 12170 = Slurm's last recalculation 300 s before start (age 0.17 → 170): AGE.
* 103 alice big normal, eligible +4000, start +5000, before the weight change: 0.1·1000 + 5000
  + 1·2000 + 0 = 7100; recorded 7100 (with today's partition weight it would be 13100).
* 104 bob batch normal, eligible +2000, start +2500: 0.05·1000 + 5000 + 0.25·2000 = 5550;
  recorded 8050, 2500 more. AGE would need 2550 > 1000, PARTITION 3000 > 2000; FAIRSHARE
  (7500 / 10000 = 0.75) and QOS (2500 / 5000 = 0.5) could: the heavier, FAIRSHARE, is named.
* 105: no Priority in the record: not audited.
* 106 alice, as 104: 5550; recorded 50000, 44450 more: no single factor reaches it.
"""

from __future__ import annotations

import json

import pytest

import ledger.spill
from tests.conftest import DATA, Store
from tests.templates import built

T0 = 1_700_000_000
CHANGED = T0 + 6000
NOW = T0 + 7000
SACCT = DATA / "slurm" / "audit_sacct.txt"


def slurm_site(store: Store, update_fshare_at: int | None = None) -> Store:
    store.run("create-db", "--fairshare-algorithm", "fair-tree", now=T0)
    store.run("add-bank", "root", "1", now=T0)
    for bank in ("chem", "phys"):
        store.run("add-bank", bank, "1", "--parent-bank", "root", now=T0)
    store.run("add-user", "--username", "alice", "--userid", "1001", "--bank", "chem", now=T0)
    store.run("add-user", "--username", "bob", "--userid", "1002", "--bank", "phys", now=T0)
    store.run("add-queue", "batch", "--priority-job-factor", "1", now=T0)
    store.run("add-queue", "big", "--priority-job-factor", "4", now=T0)
    store.run("add-qos", "normal", now=T0)
    store.run("add-qos", "high", "--priority", "100", now=T0)
    for factor, weight in (("age", 1000), ("fairshare", 10000), ("partition", 2000), ("qos", 5000)):
        store.run("edit-factor", "--factor", factor, "--weight", str(weight), now=T0)
    store.run("edit-config", "priority_max_age=10000", now=T0)
    if update_fshare_at is not None:
        store.run("update-fshare", now=update_fshare_at)
    store.run("edit-factor", "--factor", "partition", "--weight", "8000", now=CHANGED)
    store.run("ingest", "--format", "sacct", str(SACCT), now=NOW)
    return store


def _slurm_site(store: Store) -> None:
    slurm_site(store)


@pytest.fixture
def site(store: Store) -> Store:
    built(store, _slurm_site)
    return store


def audit(site: Store, *args: str) -> dict:
    return json.loads(site.run("report", "priority-audit", "--json", *args, now=NOW).stdout)


@pytest.mark.parametrize("batch", [ledger.spill.BATCH, 1])
def test_the_audit_lists_differences_largest_first_with_the_factor(
    site: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger.spill, "BATCH", batch)  # 1: each job to disk and back
    result = site.run("report", "priority-audit", now=NOW)
    lines = result.stdout.splitlines()
    assert [line.split(" | ")[0].strip() for line in lines[2:]] == ["106", "104", "102"]
    cells = [c.strip() for c in lines[4].split(" | ")]
    assert cells == ["102", "bob", "phys", "big", "high", "12170", "12200", "-30", "AGE"]
    assert [c.strip() for c in lines[3].split(" | ")][-4:] == ["8050", "5550", "2500", "FAIRSHARE"]
    assert [c.strip() for c in lines[2].split(" | ")][-3:] == ["5550", "44450", "unexplained"]
    assert "5 job(s) audited, 3 differ by more than 0" in result.stderr
    assert "1 job(s) without a recorded Priority not audited" in result.stderr


def test_json_shape_and_explanations(site: Store) -> None:
    data = audit(site)
    assert {k: data[k] for k in ("audited", "differing", "without_priority", "unpriced")} == {
        "audited": 5,
        "differing": 3,
        "without_priority": 1,
        "unpriced": [],
    }
    by_id = {row["jobid"]: row for row in data["jobs"]}
    assert set(by_id) == {"102", "104", "106"}
    fair = by_id["104"]
    assert (fair["recorded"], fair["ours"], fair["difference"]) == (8050, 5550, 2500)
    assert fair["factor"] == "FAIRSHARE"
    assert fair["slurm_value"] == pytest.approx(0.75)
    assert by_id["102"]["slurm_value"] == pytest.approx(0.17)  # Slurm's AGE: 1700 s / 10000
    assert by_id["106"]["factor"] == "unexplained"
    assert "Nice" in by_id["106"]["explanation"]
    assert list(by_id["102"]) == [
        "jobid", "cluster", "user", "account", "partition", "qos", "t_start", "start",
        "recorded", "ours", "difference", "factor", "slurm_value", "explanation",
    ]  # fmt: skip


def test_since_until_and_tolerance_filter(site: Store) -> None:
    # Started at or after T0+3500: 102 (+4000) and 103 (+5000); only 102 differs.
    since = audit(site, "--since", str(T0 + 3500))
    assert (since["audited"], [r["jobid"] for r in since["jobs"]]) == (2, ["102"])
    until = audit(site, "--until", str(T0 + 2500))  # 104, 105 (no Priority), 106
    assert (until["audited"], until["without_priority"]) == (2, 1)
    assert [r["jobid"] for r in until["jobs"]] == ["106", "104"]
    tolerant = audit(site, "--tolerance", "30")  # |-30| is not more than 30
    assert [r["jobid"] for r in tolerant["jobs"]] == ["106", "104"]
    quiet = site.run("report", "priority-audit", "--since", str(T0 + 4500), now=NOW)
    assert quiet.stdout == ""
    assert "1 job(s) audited, 0 differ by more than 0" in quiet.stderr


def test_explain_job_shows_both_computations_and_the_recorded_priority(site: Store) -> None:
    text = site.run("explain-job", "102", now=NOW).stdout
    assert "Slurm job 102 (cluster " in text
    assert "partition big, QOS high, 2 node(s), 8 CPU(s), time limit 1440 min" in text
    # At eligible: age 0, so 0 + 5000 + 2000 + 5000 = 12000.
    eligible, start = text.split("at start ")
    assert "at eligible 2023-11-14T22:46:40" in eligible
    assert "priority: 12000" in eligible
    assert "priority: 12200" in start
    assert (
        "recorded by Slurm: 12170, ours at start: 12200, difference: -30 (explained by: AGE: "
        "Slurm last recalculated up to 300s (PriorityCalcPeriod) before the job started)"
    ) in start
    age_row = next(line for line in start.splitlines() if line.startswith("AGE "))
    assert [c.strip() for c in age_row.split("|")] == ["AGE", "0.2", "1000", "200.0"]


def test_explain_job_uses_the_weights_in_force_at_the_jobs_time(site: Store) -> None:
    data = json.loads(site.run("explain-job", "103", "--json", now=NOW).stdout)["slurm"]
    assert data["recorded"] == 7100
    assert data["at_start"]["priority"] == 7100  # partition weight 2000 then, 8000 now
    partition = next(f for f in data["at_start"]["factors"] if f["factor"] == "PARTITION")
    assert (partition["value"], partition["weight"]) == (1.0, 2000)
    assert data["difference"] == {
        "value": 0,
        "factor": None,
        "slurm_value": None,
        "text": "none: Slurm recorded what we compute",
    }
    # The same job today, also 1000 s after its submission, weighs the partition 8000:
    # 100 + 5000 + 8000 = 13100.
    today = site.run(
        "priority", "--username", "alice", "--queue", "big", "--qos", "normal",
        "--submit", str(NOW - 1000), "--json", now=NOW,
    )  # fmt: skip
    assert json.loads(today.stdout)["priority"] == 13100


def test_each_pricing_takes_the_fair_share_in_force_then(store: Store) -> None:
    """An update-fshare at T0+3500, between job 102's eligible time (+2000) and its start
    (+4000), with no usage yet: fair-tree ties alice and bob, who share the higher rank, 2 of
    2, so 1.0. At eligible the new associations' 0.5 was in force: 0 + 5000 + 2000 + 5000 =
    12000; at start 1.0: 200 + 10000 + 2000 + 5000 = 17200."""
    slurm_site(store, update_fshare_at=T0 + 3500)
    data = json.loads(store.run("explain-job", "102", "--json", now=NOW).stdout)["slurm"]
    fairshare = [
        next(f["value"] for f in data[at]["factors"] if f["factor"] == "FAIRSHARE")
        for at in ("at_eligible", "at_start")
    ]
    assert fairshare == [0.5, 1.0]
    assert (data["at_eligible"]["priority"], data["at_start"]["priority"]) == (12000, 17200)
    assert data["difference"]["value"] == 12170 - 17200
    assert data["difference"]["factor"] == "FAIRSHARE"


def test_explain_job_without_a_recorded_priority(site: Store) -> None:
    text = site.run("explain-job", "105", now=NOW).stdout
    assert "recorded by Slurm: none (the record has no Priority" in text
    assert "ours at start: 5550" in text


def test_refused_on_a_weighted_walk_site(store: Store) -> None:
    store.run("create-db", now=T0)
    store.run("add-bank", "root", "1", now=T0)
    for bank in ("chem", "phys"):
        store.run("add-bank", bank, "1", "--parent-bank", "root", now=T0)
    store.run("add-user", "--username", "alice", "--userid", "1001", "--bank", "chem", now=T0)
    store.run("add-user", "--username", "bob", "--userid", "1002", "--bank", "phys", now=T0)
    store.run("ingest", "--format", "sacct", str(SACCT), now=NOW)
    refused = store.run("report", "priority-audit", now=NOW, expect=1)
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert "needs a Slurm site" in refused.stderr and "weighted-walk" in refused.stderr
    explained = store.run("explain-job", "101", now=NOW).stdout
    assert (
        explained.rstrip()
        .splitlines()[-1]
        .startswith("recorded by Slurm: 5700; not compared: the priority audit")
    )
    data = json.loads(store.run("explain-job", "101", "--json", now=NOW).stdout)
    assert "weighted-walk" in data["slurm"]["refused"]
    # The site turns to Slurm's ranking later: a job of its weighted-walk days is still
    # explained as it was ranked then, with the reason Slurm's formula is not applied.
    store.run("edit-config", "fairshare_algorithm=fair-tree", now=NOW + 100)
    later = store.run("explain-job", "101", now=NOW + 200).stdout
    assert later.startswith(explained.rstrip().rsplit("\n", 1)[0])
    assert later.rstrip().splitlines()[-1] == (
        "not compared with Slurm's formula: the site ranked by weighted-walk at "
        "2023-11-14T22:30:00+00:00, not as Slurm does"
    )
    data = json.loads(store.run("explain-job", "101", "--json", now=NOW + 200).stdout)
    assert data["slurm"] == {"refused": later.rstrip().splitlines()[-1]}
    audited = store.run("report", "priority-audit", now=NOW + 200)
    assert (
        "job 101 (cluster cluster) not priced: the site ranked by weighted-walk at "
        "2023-11-14T22:30:00+00:00, not as Slurm does"
    ) in audited.stderr


@pytest.mark.parametrize("batch", [ledger.spill.BATCH, 1])
def test_a_job_the_ledger_cannot_price_is_named_not_audited(
    site: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Job 201 ran in partition debug, which the ledger never had."""
    monkeypatch.setattr(ledger.spill, "BATCH", batch)
    site.run("ingest", "--format", "sacct", str(DATA / "slurm" / "audit_unknown.txt"), now=NOW)
    result = site.run("report", "priority-audit", now=NOW)
    assert "5 job(s) audited, 3 differ by more than 0" in result.stderr
    assert (
        "job 201 (cluster cluster) not priced: queue debug was unknown to the ledger at "
        "2023-11-14T23:03:20+00:00"  # its eligible time, T0+3000, priced first
    ) in result.stderr
    assert "201" not in result.stdout
    refused = site.run("explain-job", "201", now=NOW, expect=1)
    assert refused.stderr == (
        "fairledger: queue debug was unknown to the ledger at 2023-11-14T23:03:20+00:00\n"
    )


def test_bad_window_is_one_line(site: Store) -> None:
    bad = site.run(
        "report", "priority-audit", "--since", str(T0 + 5000), "--until", str(T0 + 1000),
        now=NOW, expect=1,
    )  # fmt: skip
    assert bad.stderr.startswith("fairledger: --since 2023-11-14T23:36:40")
    assert bad.stderr.count("\n") == 1
