"""A Slurm site's `priority`: Slurm's multifactor formula (research slurm.md §4.1) over the
partitions, QOS, weights and fair-share the ledger holds, on both stores.

The site: banks physics (priority 20) and chem (priority 5) under root; alice in physics, bob in
chem with QOS normal only; partitions batch (PriorityJobFactor 10; 100 nodes, 3,200 CPUs,
32 GPUs) and debug (PriorityJobFactor 100; 4 nodes, 128 CPUs); QOS high (100) and normal (10);
weights age 1000, assoc 400, fairshare 10000, jobsize 500, partition 2000, qos 3000,
TRES CPU=500 and GRES/gpu=3000, PriorityMaxAge 1 day. bob has used the cluster and alice has
not, so Fair Tree ranks alice first: of 2 users alice's factor is 2/2 and bob's 1/2.
"""

from __future__ import annotations

import json

import pytest

from tests.builders import job_line
from tests.conftest import T0, Store
from tests.templates import built

BUILT, SUBMIT = T0 + 10, T0 + 20
HALF_DAY_LATER = SUBMIT + 43200  # age = 43200 / 86400 = 0.5


@pytest.fixture
def site(store: Store) -> Store:
    built(store, _site)
    return store


def _site(s: Store) -> None:
    s.run("create-db")
    s.run("edit-config", "fairshare_algorithm=fair-tree", now=BUILT)
    s.run("add-bank", "root", "1", now=BUILT)
    s.run("add-bank", "physics", "1", "--parent-bank", "root", "--priority", "20", now=BUILT)
    s.run("add-bank", "chem", "1", "--parent-bank", "root", "--priority", "5", now=BUILT)
    s.run("add-qos", "high", "--priority", "100", now=BUILT)
    s.run("add-qos", "normal", "--priority", "10", now=BUILT)
    s.run("add-user", "--username", "alice", "--userid", "5001", "--bank", "physics", now=BUILT)
    s.run(
        "add-user",
        *("--username", "bob", "--userid", "5002", "--bank", "chem"),
        *("--qos", "normal", "--default-qos", "normal"),
        now=BUILT,
    )
    s.run(
        "add-queue",
        "batch",
        *("--priority-job-factor", "10", "--total-nodes", "100", "--total-cpus", "3200"),
        *("--total-tres", "mem=25600000,gres/gpu=32"),
        now=BUILT,
    )
    s.run(
        "add-queue",
        "debug",
        *("--priority-job-factor", "100", "--total-nodes", "4", "--total-cpus", "128"),
        now=BUILT,
    )
    for name, weight in [
        ("age", 1000),
        ("assoc", 400),
        ("fairshare", 10000),
        ("jobsize", 500),
        ("partition", 2000),
        ("qos", 3000),
    ]:
        s.run("edit-factor", "--factor", name, "--weight", str(weight), now=BUILT)
    s.run(
        "edit-config",
        "priority_weight_tres=CPU=500,GRES/gpu=3000",
        "priority_max_age=1d",
        now=BUILT,
    )
    job = job_line(1, user="bob", bank="chem", end=T0 + 15, seconds=5, queue="debug")
    s.run("ingest", "-", input=job + "\n", now=T0 + 16)
    s.run("update-fshare", now=SUBMIT)


def price(store: Store, *args: str, now: float = HALF_DAY_LATER) -> dict[str, object]:
    out = store.run("priority", "--json", "--submit", str(SUBMIT), *args, now=now).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def weighted(answer: dict[str, object]) -> dict[str, float]:
    return {row["factor"]: row["product"] for row in answer["factors"]}  # type: ignore[attr-defined,index]


def test_a_job_in_a_big_partition_with_a_high_qos(site: Store) -> None:
    answer = price(
        site,
        *("--username", "alice", "--queue", "batch", "--qos", "high"),
        *("--nodes", "2", "--cpus", "64", "--tres", "gres/gpu=4"),
    )
    assert weighted(answer) == pytest.approx(
        {
            "SITE": 0.0,
            "AGE": 500.0,  # 0.5 × 1000
            "ASSOC": 400.0,  # physics' 20 over the largest bank priority, 20
            "FAIRSHARE": 10000.0,  # 2/2 × 10000
            # (2 nodes / 104 + 64 CPUs / 3,328) / 2 = 1/52 of 500; the cluster is the two queues
            "JOBSIZE": 500 / 52,
            "PARTITION": 200.0,  # 10 / 100 × 2000
            "QOS": 3000.0,  # 100 / 100 × 3000
            "NICE": 0.0,
            "TRES:cpu": 10.0,  # 64 / 3200 × 500
            "TRES:gres/gpu": 375.0,  # 4 / 32 × 3000
        }
    )
    # 500 + 400 + 10000 + 9.615... + 200 + 3000 + 10 + 375 = 14494.615..., truncated
    assert answer["priority"] == 14494
    assert (answer["bank"], answer["queue"], answer["qos"]) == ("physics", "batch", "high")


def test_default_qos_nice_and_a_job_without_a_cpu_count(site: Store) -> None:
    answer = price(site, "--username", "bob", "--queue", "debug", "--nice", "100")
    assert answer["qos"] == "normal"  # bob's DefaultQOS
    assert weighted(answer) == pytest.approx(
        {
            "SITE": 0.0,
            "AGE": 500.0,
            "ASSOC": 100.0,  # 5 / 20 × 400
            "FAIRSHARE": 5000.0,  # 1/2 × 10000
            "JOBSIZE": 500 / 104,  # 1 node of 104 and no CPU count: not halved
            "PARTITION": 2000.0,  # 100 / 100
            "QOS": 300.0,  # 10 / 100 × 3000
            "NICE": -100.0,
            "TRES:cpu": 0.0,
            "TRES:gres/gpu": 0.0,
        }
    )
    # 500 + 100 + 5000 + 4.807... + 2000 + 300 − 100 = 7804.807...
    assert answer["priority"] == 7804


def test_the_table_reads_like_sprio_long(site: Store) -> None:
    out = site.run(
        "priority",
        *("--username", "bob", "--queue", "debug", "--site-factor", "7", "--submit", str(SUBMIT)),
        now=HALF_DAY_LATER,
    ).stdout
    lines = out.splitlines()
    assert lines[0].split("|")[0].strip() == "factor"
    assert [line.split("|")[0].strip() for line in lines[2:-1]] == [
        "SITE",
        "AGE",
        "ASSOC",
        "FAIRSHARE",
        "JOBSIZE",
        "PARTITION",
        "QOS",
        "NICE",
        "TRES:cpu",
        "TRES:gres/gpu",
    ]
    assert lines[-1] == "priority: 7911"  # 7804.807... + 100 (no nice) + 7


def test_a_huge_nice_clamps_to_one(site: Store) -> None:
    answer = price(site, "--username", "bob", "--queue", "debug", "--nice", "2147483645")
    assert answer["priority"] == 1


def test_as_of_prices_with_the_weights_then(site: Store) -> None:
    site.run("edit-factor", "--factor", "qos", "--weight", "0", now=T0 + 50000)
    args = ("--username", "alice", "--queue", "batch", "--qos", "high", "--nodes", "2")
    args += ("--cpus", "64", "--tres", "gres/gpu=4")
    then = price(site, *args, "--as-of", str(HALF_DAY_LATER), now=T0 + 60000)
    assert then["priority"] == 14494
    now = price(site, *args, now=T0 + 60000)
    # age (60000 − 20) / 86400 × 1000 = 694.212...; no QOS term:
    # 694.212 + 400 + 10000 + 9.615 + 200 + 10 + 375 = 11688.83
    assert weighted(now)["QOS"] == 0.0
    assert now["priority"] == 11688


def test_a_what_if_fairshare(site: Store) -> None:
    answer = price(site, "--username", "bob", "--queue", "debug", "--fairshare", "1")
    # bob's job of the test above, without its nice of 100, at fair-share 1 instead of 1/2:
    # 7804.807... + 100 + 5000
    assert answer["priority"] == 12904


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--queue", "nope"), "queue nope not found in queue_table"),
        (("--queue", "debug", "--qos", "gold"), "QOS gold not found"),
        (
            ("--queue", "debug", "--qos", "high"),
            "user bob in bank chem may not use QOS high (its QOS: normal)",
        ),
        ((), "--queue is needed: the site has 2 queues (batch, debug)"),
        (
            ("--queue", "debug", "--nice", "2147483646"),
            "nice 2147483646 is out of range (-2147483645..2147483645)",
        ),
        (("--queue", "debug", "--cpus", "-1"), "the job's cpus -1 is out of range (0..4294967294)"),
        (
            ("--queue", "debug", "--time-limit", "0"),
            "the job's time limit 0 is out of range (1..4294967294)",
        ),
        (
            ("--queue", "debug", "--tres", "gpu"),
            "invalid TRES request 'gpu' (use e.g. cpu=4,mem=8000,gres/gpu=2)",
        ),
    ],
)
def test_refusals_are_one_line(site: Store, args: tuple[str, ...], message: str) -> None:
    result = site.run("priority", "--username", "bob", *args, now=HALF_DAY_LATER, expect=1)
    assert result.stderr == f"fairledger: {message}\n"


def test_urgency_is_flux_only_and_slurm_options_are_slurm_only(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-user", "--username", "u", "--userid", "1", "--bank", "root")
    result = ledger_store.run(
        "priority", "--username", "u", "--qos", "high", "--nice", "5", expect=2
    )
    assert result.stderr.splitlines()[-1] == (
        "fairledger priority: error: --qos, --nice: Slurm sites only (this site is a Flux one)"
    )
    ledger_store.run("edit-config", "fairshare_algorithm=fair-tree")
    result = ledger_store.run("priority", "--username", "u", "--urgency", "3", expect=2)
    assert result.stderr.splitlines()[-1] == (
        "fairledger priority: error: --urgency is Flux's; a Slurm site's job takes --nice"
    )


def test_partitions_and_weights_show_as_a_slurm_admin_set_them(site: Store) -> None:
    row = json.loads(site.run("view-queue", "debug").stdout)[0]
    assert {k: row[k] for k in ("priority_job_factor", "total_nodes", "total_cpus")} == {
        "priority_job_factor": 100,
        "total_nodes": 4,
        "total_cpus": 128,
    }
    assert "priority_tier" not in row and "total_tres" not in row  # at Slurm's defaults
    factors = json.loads(site.run("list-factors", "--json").stdout)
    assert [(r["factor"], r["weight"]) for r in factors] == [
        ("age", 1000),
        ("assoc", 400),
        ("fairshare", 10000),
        ("jobsize", 500),
        ("partition", 2000),
        ("qos", 3000),
    ]


def test_a_flux_sites_queue_shows_flux_accountings_row(ledger_store: Store) -> None:
    ledger_store.run("add-queue", "q")
    row = json.loads(ledger_store.run("view-queue", "q").stdout)[0]
    assert "priority_job_factor" not in row and "billing_weights" not in row


def test_a_tres_request_reads_as_slurm_prints_tres() -> None:
    from ledger.errors import InvalidValue
    from ledger.usecases.slurm_priority import parse_tres_request

    # mem in MiB: 8G is 8 × 1024; a type is matched in any case
    assert parse_tres_request("cpu=4,mem=8G,GRES/gpu=2") == {"cpu": 4, "mem": 8192, "gres/gpu": 2}
    for bad in ("gres/gpu=1.5", "gpu", "mem=-5", "cpu=4,,=3"):
        with pytest.raises(InvalidValue, match="invalid TRES request"):
            parse_tres_request(bad)
