"""import-slurm --conf, on both stores: a site's slurm.conf (tests/data/slurm/site.conf, the
cluster of site.cfg) recorded as ordinary events, with DUMPFILE or alone; `priority` then prices
jobs as the arithmetic in the comments, done by hand from the file, says; re-importing records
only what differs; a refused file is one line and records nothing.

What site.conf gives, by hand:
* nodes: c[001-100] 2 sockets x 24 cores = 48 CPUs, RealMemory 192000 each; g[01-08] 64 CPUs,
  512000 MiB, 4 a100 GPUs each; m[01-02] 96 CPUs, 1536000 MiB each.
  Cluster: 100 + 8 + 2 = 110 nodes, 4800 + 512 + 192 = 5504 CPUs.
* partitions: batch = c[001-100]: 100 nodes, 4800 CPUs, mem 19200000; gpu = g[01-08]: 8 nodes,
  512 CPUs, mem 4096000, 32 GPUs; debug = c099, c100, g08: 3 nodes, 48+48+64 = 160 CPUs,
  mem 192000+192000+512000 = 896000, 4 GPUs. PriorityJobFactor max = 100 (debug).
* weights: age 2000, assoc 1000, fairshare 100000, jobsize 4000, partition 10000, qos 20000;
  TRES cpu 1000, mem 2048 per GiB = 2 per MiB, gres/gpu 8000. PriorityMaxAge 14 days.
* QOS (site.cfg): high Priority 1000 (the largest), normal 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, T0, Store, refusal

SLURM = DATA / "slurm"
CONF = SLURM / "site.conf"
DAY = 86400


def priority(store: Store, *args: str) -> int:
    out = store.run("priority", "--json", *args).stdout
    return int(json.loads(out)["priority"])


def configs(store: Store) -> dict[str, str]:
    return {r["key"]: r["value"] for r in json.loads(store.run("list-configs", "--json").stdout)}


def factors(store: Store) -> dict[str, int]:
    rows = json.loads(store.run("list-factors", "--json").stdout)
    return {r["factor"]: int(r["weight"]) for r in rows}


def queue(store: Store, name: str) -> dict[str, Any]:
    row: dict[str, Any] = json.loads(store.run("view-queue", name, "--json").stdout)[0]
    return row


def edited(tmp_path: Path, *changes: tuple[str, str]) -> Path:
    """site.conf with each (old, new) text replaced once, as a site edits its file."""
    text = CONF.read_text()
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "edited.conf"
    path.write_text(text)
    return path


def test_a_site_conf_comes_over_and_prices_jobs_as_slurm_does(ledger_store: Store) -> None:
    result = ledger_store.run(
        "import-slurm", str(SLURM / "site.cfg"), "--conf", str(CONF), "--json"
    )
    report = json.loads(result.stdout)
    conf = report["conf"]
    assert report["fairshare_algorithm"] == ["weighted-walk", "fair-tree"]
    assert conf["queues_added"] == ["batch", "gpu", "bigmem", "debug", "preempt"]
    assert conf["factors"] == {
        "age": [0, 2000],
        "assoc": [0, 1000],
        "jobsize": [0, 4000],
        "partition": [0, 10000],
        "qos": [0, 20000],
    }  # fairshare's 100000 is the ledger's default already
    shown = configs(ledger_store)
    assert {k: shown[k] for k in conf["config"]} == {
        "priority_flags": "ACCRUE_ALWAYS,MAX_TRES",
        "priority_weight_tres": "CPU=1000,Mem=2048G,GRES/gpu=8000",  # as written
        "priority_max_age": str(14 * DAY),
        "priority_usage_reset_period": "NONE",
        "cluster_nodes": "110",
        "cluster_cpus": "5504",
    }
    assert shown["priority_decay_half_life"] == str(7 * DAY)
    assert factors(ledger_store) == {
        "age": 2000,
        "assoc": 1000,
        "fairshare": 100000,
        "jobsize": 4000,
        "partition": 10000,
        "qos": 20000,
    }
    gpu = queue(ledger_store, "gpu")
    assert {k: gpu[k] for k in gpu if k.startswith(("priority_", "total_", "billing"))} == {
        "billing_weights": "CPU=1.0,Mem=0.25G,GRES/gpu=16.0",
        "priority_job_factor": 40,
        "priority_tier": 2,
        "total_nodes": 8,
        "total_cpus": 512,
        "total_tres": "mem=4096000,gres/gpu=32,gres/gpu:a100=32",
    }
    debug = queue(ledger_store, "debug")
    assert (debug["total_nodes"], debug["total_cpus"], debug["total_tres"]) == (
        3,
        160,
        "mem=896000,gres/gpu=4,gres/gpu:a100=4",
    )
    # What is not modelled is listed on stderr, one entry per line of the file.
    ignored = result.stderr.splitlines()
    assert ignored[0] == f"ignored {len(ignored) - 1} lines of {CONF} (not modelled):"
    for entry in (
        "  line 5: ClusterName",
        "  line 12: Include /etc/slurm/local.conf (not followed)",
        "  line 30: PriorityCalcPeriod",
        "  line 47: NodeName=g[01-08]: Feature, Weight",  # a continued line, by its first line
        "  line 53: PartitionName=batch: MaxTime, Default",
        "  line 54: PartitionName=gpu: MaxTime, QOS",
    ):
        assert entry in ignored
    # The association factor is the bank's priority over the largest: chemistry 2 of 8.
    ledger_store.run("edit-bank", "chemistry", "--priority", "2")
    ledger_store.run("edit-bank", "physics", "--priority", "8")
    brian = priority(
        ledger_store,
        *("--username", "brian", "--queue", "gpu", "--qos", "high"),
        *("--nodes", "2", "--cpus", "64", "--tres", "gres/gpu=8,mem=256000"),
        *("--fairshare", "0.25", "--submit", str(T0 - 7 * DAY), "--eligible", str(T0 - DAY)),
    )
    # age: ACCRUE_ALWAYS counts from submit: 7 of 14 days = 0.5 * 2000      = 1000
    # assoc: 2/8 = 0.25 * 1000                                                =  250
    # fairshare: 0.25 * 100000                                                = 25000
    # jobsize: (2/110 + 64/5504) / 2 = (1/55 + 1/86) / 2 = 141/9460; * 4000 = 59.62
    # partition: 40/100 * 10000                                               = 4000
    # qos: 1000/1000 * 20000                                                  = 20000
    # TRES: cpu 64/512 * 1000 = 125; mem 256000/4096000 * 2 = 0.125; gpu 8/32 * 8000 = 2000
    # sum 52434.74, truncated
    assert brian == 52434
    erin = priority(
        ledger_store,
        *("--username", "erin", "--queue", "batch", "--qos", "normal", "--cpus", "48"),
        *("--fairshare", "0.8", "--submit", str(T0 - 28 * DAY), "--nice", "100"),
    )
    # age: 28 days > PriorityMaxAge: 1.0 * 2000 = 2000; assoc: optics' priority 0 = 0
    # fairshare 0.8 * 100000 = 80000; jobsize (1/110 + 48/5504) / 2 = 337/37840; * 4000 = 35.62
    # partition 10/100 * 10000 = 1000; qos normal's Priority 0 = 0
    # TRES: cpu 48/4800 * 1000 = 10; no mem, no GPU asked; nice -100
    # sum 82945.62, truncated
    assert erin == 82945


def test_conf_alone_records_only_what_differs(ledger_store: Store, tmp_path: Path) -> None:
    ledger_store.run("import-slurm", str(SLURM / "site.cfg"))
    first = json.loads(ledger_store.run("import-slurm", "--conf", str(CONF), "--json").stdout)
    assert first["fairshare_algorithm"] is None  # the dump import chose fair-tree already
    assert first["changes"] == 16  # 6 config keys, 5 factors, 5 queues
    position = ledger_store.log_position()
    again = ledger_store.run("import-slurm", "--conf", str(CONF))
    assert again.stdout.startswith(f"{CONF}: nothing changed (sha256 ")
    assert ledger_store.log_position() == position
    # A hand edit since is put back; an edited file records just its differences.
    ledger_store.run("edit-factor", "--factor", "age", "--weight", "7")
    path = edited(
        tmp_path,
        (
            "PriorityFlags=ACCRUE_ALWAYS,MAX_TRES",
            "PriorityFlags=ACCRUE_ALWAYS,MAX_TRES,NO_FAIR_TREE",
        ),
        ("PriorityWeightQOS=20000", "PriorityWeightQOS=30000"),
        ("PriorityJobFactor=100 PriorityTier=10", "PriorityJobFactor=50 PriorityTier=10"),
    )
    report = json.loads(ledger_store.run("import-slurm", "--conf", str(path), "--json").stdout)
    assert report["fairshare_algorithm"] == ["fair-tree", "classic"]
    assert report["config"] == {}
    assert report["factors"] == {"age": [7, 2000], "qos": [20000, 30000]}
    assert (report["queues_added"], report["queues_edited"]) == ([], ["debug"])
    assert queue(ledger_store, "debug")["priority_job_factor"] == 50
    history = ledger_store.run("history").stdout.splitlines()
    assert sum(f"(import-slurm --conf {path.name})" in line for line in history) == 4


def test_conf_alone_makes_a_weighted_walk_ledger_a_slurm_site(ledger_store: Store) -> None:
    out = ledger_store.run("import-slurm", "--conf", str(CONF)).stdout
    assert "fairshare_algorithm weighted-walk -> fair-tree" in out
    assert configs(ledger_store)["fairshare_algorithm"] == "fair-tree"
    assert queue(ledger_store, "bigmem")["total_cpus"] == 192


def test_dump_and_conf_again_change_nothing(ledger_store: Store) -> None:
    args = ("import-slurm", str(SLURM / "site.cfg"), "--conf", str(CONF))
    ledger_store.run(*args)
    position = ledger_store.log_position()
    assert "was already imported" in ledger_store.run(*args).stdout
    assert ledger_store.log_position() == position


BAD = {
    "malformed": (
        "PriorityWeightAge 1000",
        "line 2: 'PriorityWeightAge 1000' is not Key=Value pairs",
    ),
    "negative weight": (
        "PriorityWeightQOS=-5",
        "line 2: 'PriorityWeightQOS=-5': PriorityWeightQOS value (-5) is less than zero",
    ),
    "unknown flag": (
        "PriorityFlags=MAX_TRES,FAVOR_BIG",
        "line 2: 'PriorityFlags=MAX_TRES,FAVOR_BIG': unknown PriorityFlags FAVOR_BIG (known: "
        "MAX_TRES, MAX_TRES_GRES, ACCRUE_ALWAYS, SMALL_RELATIVE_TO_TIME, CALCULATE_RUNNING, "
        "INCR_ONLY, NO_NORMAL_ASSOC, NO_NORMAL_PART, NO_NORMAL_QOS, NO_NORMAL_TRES, "
        "NO_NORMAL_ALL, FAIR_TREE, NO_FAIR_TREE, DEPTH_OBLIVIOUS)",
    ),
    "depth oblivious": (
        "PriorityFlags=DEPTH_OBLIVIOUS",
        "line 2: 'PriorityFlags=DEPTH_OBLIVIOUS': DEPTH_OBLIVIOUS is not modelled (the ledger "
        "computes Fair Tree, or classic with NO_FAIR_TREE); ranking this site by either would "
        "differ from the cluster's",
    ),
    "basic": (
        "PriorityType=priority/basic",
        "line 2: 'PriorityType=priority/basic': only priority/multifactor is modelled (the "
        "ledger computes Slurm's multifactor priority)",
    ),
    "unknown node": (
        "NodeName=c[1-2] CPUs=4\nPartitionName=p Nodes=c[1-3]",
        "line 3: 'PartitionName=p Nodes=c[1-3]': partition p names unknown node c3",
    ),
    # Refused by the Site once the algorithm switch is recorded in the same transaction.
    "no decay, no reset": (
        "PriorityDecayHalfLife=0\nPriorityUsageResetPeriod=NONE",
        "lines 2, 3: priority_decay_half_life 0 (no decay) needs usage_model continuous and a "
        "priority_usage_reset_period of DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_a_refused_conf_records_nothing(ledger_store: Store, tmp_path: Path, case: str) -> None:
    body, message = BAD[case]
    path = tmp_path / "bad.conf"
    path.write_text(f"# site\n{body}\n")
    position = ledger_store.log_position()
    result = ledger_store.run("import-slurm", "--conf", str(path), expect=1)
    assert result.stderr == f"fairledger: {path}: {message}\n"
    assert ledger_store.log_position() == position
    assert "fairshare_algorithm" not in configs(ledger_store)  # the switch is not kept either


def test_a_conf_refused_after_the_tree_refuses_the_dump_too(
    ledger_store: Store, tmp_path: Path
) -> None:
    """The Site refuses no decay without a reset once the dump's banks, associations and QOS are
    recorded in the same transaction: none of them is kept."""
    path = edited(tmp_path, ("PriorityDecayHalfLife=7-0", "PriorityDecayHalfLife=0"))
    position = ledger_store.log_position()
    result = ledger_store.run(
        "import-slurm", str(SLURM / "site.cfg"), "--conf", str(path), expect=1
    )
    assert result.stderr == (
        f"fairledger: {path}: lines 28, 29: priority_decay_half_life 0 (no decay) needs"
        " usage_model continuous and a priority_usage_reset_period of DAILY, WEEKLY, MONTHLY,"
        " QUARTERLY or YEARLY\n"
    )
    assert ledger_store.log_position() == position
    assert ledger_store.run("list-banks", expect=1).stderr == (
        refusal("list-banks", "no results found in query")
    )


def test_usage_needs_a_dump(ledger_store: Store) -> None:
    result = ledger_store.run("import-slurm", "--usage", str(SLURM / "site.sshare"), expect=2)
    assert "--usage needs DUMPFILE" in result.stderr
    assert "give DUMPFILE, or --conf FILE" in ledger_store.run("import-slurm", expect=2).stderr
