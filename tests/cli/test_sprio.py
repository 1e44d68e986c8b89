"""sprio through the CLI on both stores: pending jobs as JSON lines and as `squeue --json`, the
priorities computed by hand in the comments, and the refusals."""

from __future__ import annotations

import json

import pytest

from tests.conftest import T0, Store
from tests.templates import built

DAY = 86400


@pytest.fixture
def site(store: Store) -> Store:
    built(store, _site)
    return store


def _site(store: Store) -> None:
    """A Fair Tree site: physics and chem under root (amy, bob); partition batch (factor 1,
    10 nodes, 400 CPUs) and gpu (factor 4, tier 2, 2 nodes, 80 CPUs, 8 GPUs); QOS normal (10)
    and high (100); a 12-node, 480-CPU cluster; PriorityMaxAge 1 day."""
    store.run("create-db", "--fairshare-algorithm", "fair-tree")
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", "1", "--parent-bank", "root")
    store.run("add-bank", "chem", "1", "--parent-bank", "root")
    store.run("add-qos", "normal", "--priority", "10")
    store.run("add-qos", "high", "--priority", "100")
    store.run("add-user", "--username", "amy", "--userid", "5001", "--bank", "physics")
    store.run("add-user", "--username", "bob", "--userid", "5002", "--bank", "chem")
    store.run(
        "add-queue", "batch", "--priority-job-factor", "1", "--total-nodes", "10",
        "--total-cpus", "400",
    )  # fmt: skip
    store.run(
        "add-queue", "gpu", "--priority-job-factor", "4", "--priority-tier", "2",
        "--total-nodes", "2", "--total-cpus", "80", "--total-tres", "gres/gpu=8",
    )  # fmt: skip
    for factor, weight in [
        ("age", 1000),
        ("fairshare", 10000),
        ("jobsize", 500),
        ("partition", 2000),
        ("qos", 3000),
    ]:
        store.run("edit-factor", "--factor", factor, "--weight", str(weight))
    store.run(
        "edit-config",
        "priority_weight_tres=CPU=500,GRES/gpu=3000",
        "priority_max_age=1d",
        "cluster_nodes=12",
        "cluster_cpus=480",
    )
    # No usage yet: Fair Tree ranks every association tied at the top, fair-share 1.0.
    store.run("update-fshare")


def line(**fields: object) -> str:
    return json.dumps(fields) + "\n"


JOBS = (
    # 12 h waiting of 24: age 0.5 · 1000 = 500; fair-share 10000; size (1/12 + 40/480) / 2 ·
    # 500 = 41.67; partition 1/4 · 2000 = 500; QOS 10/100 · 3000 = 300; cpu 40/400 · 500 = 50.
    # 11391.67 -> 11391.
    line(
        job_id=101, user="amy", partition="batch", qos="normal", submit_time=T0 - DAY // 2,
        cpus=40,
    )
    # Age 10000/86400 · 1000 = 115.74; size (1/12 + 8/480) / 2 · 500 = 25; QOS 3000; nice 100.
    # In gpu (tier 2, first): partition 2000, cpu 8/80 · 500 = 50, GPU 2/8 · 3000 = 750:
    # 15840.74 -> 15840. In batch: partition 500, cpu 8/400 · 500 = 10, no GPU there: 13550.74.
    + line(
        job_id=102, username="bob", queue="batch,gpu", qos="high", submit_time=T0 - 10000,
        cpus=8, tres={"gres/gpu": 2}, nice=100,
    )
    # Eligible in an hour: not listed yet (sprio lists jobs whose begin time has come).
    + line(
        job_id=103, user="amy", partition="batch", submit_time=T0 - 60, eligible_time=T0 + 3600
    )
)  # fmt: skip

HEADER = (
    "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE"
    "  PARTITION        QOS                 TRES"
)
ROWS = [
    "            101 batch          11391          0        500      10000         42"
    "        500        300               cpu=50",
    "            102 gpu            15840          0        116      10000         25"
    "       2000       3000  cpu=50,gres/gpu=750",
    "            102 batch          13550          0        116      10000         25"
    "        500       3000               cpu=10",
]


def test_sprio_of_json_lines(site: Store) -> None:
    out = site.run("sprio", "--jobs", "-", input=JOBS)
    assert out.stdout.splitlines() == [HEADER, *ROWS]
    assert out.stderr == "fairledger: sprio: skipped 1 not eligible yet\n"
    # An hour later job 103 is listed, its age 0 (it accrues from its eligible time); size
    # 1/12 · 500 = 41.67 without a CPU count; partition 500; no QOS, no TRES: 10541.67.
    later = site.run("sprio", "--jobs", "-", "-j", "103", "-h", input=JOBS, now=T0 + 3600)
    assert later.stdout.splitlines() == [
        "            103 batch          10541          0          0      10000         42"
        "        500          0                     ",
    ]


def test_long_normalized_and_filters(site: Store) -> None:
    out = site.run("sprio", "--jobs", "-", "-l", "-u", "bob", "-p", "gpu", input=JOBS)
    assert out.stdout.splitlines() == [
        "          JOBID PARTITION     USER  ACCOUNT   PRIORITY       SITE        AGE      ASSOC"
        "  FAIRSHARE    JOBSIZE  PARTITION    QOSNAME        QOS        NICE                 TRES",
        "            102 gpu            bob     chem      15840          0        116          0"
        "      10000         25       2000       high       3000         100  cpu=50,gres/gpu=750",
    ]
    norm = site.run("sprio", "--jobs", "-", "-n", "-j", "101", input=JOBS)
    # 11391.67 / (2^32 - 1) = 0.0000026523...
    assert norm.stdout.splitlines()[1] == (
        "            101 batch     0.00000265 0.5000000  1.0000000  0.0833333  0.2500000 "
        " 0.1000000  cpu=0.10            "
    )


def test_sort_and_weights(site: Store) -> None:
    by_priority = site.run("sprio", "--jobs", "-", "-S", "-y", "-h", input=JOBS)
    assert [r.split()[:2] for r in by_priority.stdout.splitlines()] == [
        ["102", "gpu"],
        ["102", "batch"],
        ["101", "batch"],
    ]
    weights = site.run("sprio", "-w")
    assert weights.stdout.splitlines() == [
        HEADER,
        "        Weights                               1       1000      10000        500"
        "       2000       3000 CPU=500,GRES/gpu=300",
    ]


def test_json(site: Store) -> None:
    out = json.loads(site.run("sprio", "--jobs", "-", "--json", "-j", "101", input=JOBS).stdout)
    assert [(j["job_id"], j["partition"], j["account"], j["priority"]) for j in out["jobs"]] == [
        (101, "batch", "physics", 11391)
    ]
    assert out["skipped"] == {"not eligible yet": 1} and out["input"] == "JSON lines"
    assert {f["factor"]: f["product"] for f in out["jobs"][0]["factors"]}["QOS"] == 300.0


def squeue_job(job_id: int, state: str, **extra: object) -> dict[str, object]:
    def no_val(number: int, is_set: bool = True) -> dict[str, object]:
        return {"set": is_set, "infinite": False, "number": number}

    job: dict[str, object] = {
        "job_id": job_id,
        "user_name": "amy",
        "account": "physics",
        "partition": "batch",
        "qos": "normal",
        "job_state": [state],
        "submit_time": no_val(T0 - DAY),
        "eligible_time": no_val(T0 - DAY),
        "accrue_time": no_val(T0 - DAY // 4),
        "node_count": no_val(2),
        "cpus": no_val(80),
        "time_limit": {"set": True, "infinite": True, "number": 0},
        "priority": no_val(1234),
        "nice": 0,
        "tres_req_str": "cpu=80,mem=64G,node=2,billing=80",
        "name": "ignored",
    }
    job.update(extra)
    return job


def test_squeue_json(site: Store) -> None:
    document = {
        "jobs": [
            # Age counts from accrue_time: 6 h of 24, 250; size (2/12 + 80/480) / 2 · 500 =
            # 83.33; partition 500; QOS 300; cpu 80/400 · 500 = 100; fair-share 10000:
            # 11233.33 -> 11233.
            squeue_job(201, "PENDING"),
            squeue_job(202, "RUNNING"),
            squeue_job(203, "PENDING", priority={"set": True, "infinite": False, "number": 0}),
            squeue_job(
                204, "PENDING", eligible_time={"set": False, "infinite": False, "number": 0}
            ),
        ],
        "warnings": [],
        "errors": [],
    }
    out = site.run("sprio", "--jobs", "-", "-h", input=json.dumps(document, indent=2))
    assert out.stdout.splitlines() == [
        "            201 batch          11233          0        250      10000         83"
        "        500        300              cpu=100",
    ]
    assert out.stderr == ("fairledger: sprio: skipped 1 RUNNING, 1 held, 1 not eligible yet\n")
    # -j of a job that is not pending: sprio's own words, exit 0.
    none = site.run("sprio", "--jobs", "-", "-j", "202", input=json.dumps({"jobs": []}))
    assert none.stdout == "Unable to find jobs matching user/id(s) specified\n"


@pytest.mark.parametrize(
    ("jobs", "args", "message"),
    [
        (line(job_id=1, user="nobody", submit_time=T0), (), "jobs line 1: user nobody not found"),
        (
            JOBS + line(job_id=9, submit_time=T0),
            (),
            "jobs line 4: user: required field is missing",
        ),
        (
            line(job_id=1, user="amy", partition="nope", submit_time=T0),
            (),
            "jobs line 1: queue nope not found in queue_table",
        ),
        (
            line(job_id=1, user="amy", partition="batch", qos="gold", submit_time=T0),
            (),
            "jobs line 1: QOS gold not found",
        ),
        (
            line(job_id=1, user="amy", partition="batch", submit_time=T0, nice=2147483646),
            (),
            "jobs line 1: nice: value 2147483646: Input should be less than or equal to",
        ),
        ("{not json\n", (), "jobs line 1: not valid JSON"),
        (
            json.dumps({"jobs": [squeue_job(7, "PENDING", node_count="two")]}),
            (),
            "squeue jobs[0] (job 7): node_count",
        ),
        (JOBS, ("-S", "B"), "invalid sort specification: B"),
        (JOBS, ("-o", "%.10Z"), "invalid sprio format specification: %.10Z"),
        (JOBS, ("-j", "x1"), "invalid job id: x1"),
    ],
)
def test_refusals(site: Store, jobs: str, args: tuple[str, ...], message: str) -> None:
    out = site.run("sprio", "--jobs", "-", *args, input=jobs, expect=1)
    assert out.stdout == ""
    assert out.stderr.startswith(f"fairledger: {message}")
    assert len(out.stderr.splitlines()) == 1


def test_usage_errors_and_flux_sites(store: Store) -> None:
    store.run("create-db")
    store.run("add-bank", "root", "1")
    assert store.run("sprio", expect=2).stderr.endswith(
        "--jobs FILE|- is needed: the pending jobs to price (-w: none)\n"
    )
    assert "mutually exclusive" in store.run("sprio", "-w", "-l", "-o", "%i", expect=2).stderr
    flux = store.run("sprio", "-w", expect=1)
    assert flux.stderr.startswith("fairledger: Slurm's multifactor priority needs a Slurm site")
