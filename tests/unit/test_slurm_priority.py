"""Slurm's multifactor priority (`ledger.slurm_priority`): each factor, each flag, the clamp.

Expected values are worked out by hand in the comments; where the C arithmetic is a chain of
doubles, the test writes the same chain so the comparison is exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.slurm.conf import parse_qos_dump, parse_slurm_conf
from ledger.slurm_priority import (
    NO_NORMAL_ALL,
    ClusterSize,
    PartitionInfo,
    PendingJob,
    PriorityConfig,
    PriorityFlags,
    PriorityWeights,
    QosInfo,
    parse_priority_flags,
    parse_tres_weights,
    slurm_job_priority,
)

NOW = 1_700_000_000
DAY = 86400
MAX = 4294967295
DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"

PARTS = (
    PartitionInfo(
        "batch", priority_job_factor=1, tres_totals={"cpu": 100, "mem": 1000, "node": 10}
    ),
    PartitionInfo("prio", priority_job_factor=4, tres_totals={"cpu": 40, "gres/gpu": 8}),
    PartitionInfo("zero", priority_job_factor=0, tres_totals={"cpu": 100}),
)
QOS = (QosInfo("normal", 0), QosInfo("high", 50), QosInfo("top", 200))
CLUSTER = ClusterSize(nodes=10, cpus=100)


def job(**kw: object) -> PendingJob:
    base: dict[str, object] = {
        "job_id": 1,
        "partition": "batch",
        "submit_time": NOW - DAY,
        "eligible_time": NOW - DAY,
    }
    base.update(kw)
    return PendingJob(**base)  # type: ignore[arg-type]


def prio(j: PendingJob, weights: PriorityWeights | None = None, **kw: object):  # type: ignore[no-untyped-def]
    config = kw.pop("config", None) or PriorityConfig(
        weights=weights or PriorityWeights(),
        flags=kw.pop("flags", PriorityFlags.FAIR_TREE),  # type: ignore[arg-type]
        max_age=kw.pop("max_age", 7 * DAY),  # type: ignore[arg-type]
        favor_small=kw.pop("favor_small", False),  # type: ignore[arg-type]
    )
    return slurm_job_priority(
        j,
        now=kw.pop("now", NOW),
        config=config,
        partitions=PARTS,
        qos=QOS,  # type: ignore[arg-type]
        cluster=CLUSTER,
        **kw,  # type: ignore[arg-type]
    )


# --- age ------------------------------------------------------------------------------------------


def test_age_is_wait_since_eligible_over_max_age() -> None:
    # 1 day of 7: 86400/604800 = 0.142857…; × 7000 = 1000.0 (exactly: 86400·7000/604800)
    r = prio(job(), PriorityWeights(age=7000))
    assert r.factor("AGE").value == 86400 / 604800
    # in doubles 0.14285714285714285 · 7000 rounds to exactly 1000.0
    assert r.priority == int((86400 / 604800) * 7000.0) == 1000


def test_age_counts_from_eligible_not_submit() -> None:
    # submitted 3 days ago, eligible (dependency met) 1 hour ago: 3600/604800 · 604800 = 3600
    r = prio(job(submit_time=NOW - 3 * DAY, eligible_time=NOW - 3600), PriorityWeights(age=604800))
    assert r.priority == 3600


def test_age_is_zero_until_eligible_and_for_a_future_begin_time() -> None:
    w = PriorityWeights(age=1000)
    assert prio(job(eligible_time=None), w).factor("AGE").value == 0.0
    assert prio(job(eligible_time=NOW + 60), w).factor("AGE").value == 0.0


def test_age_saturates_at_max_age() -> None:
    w = PriorityWeights(age=1000)
    assert prio(job(eligible_time=NOW - 7 * DAY), w).factor("AGE").value == 1.0
    assert prio(job(eligible_time=NOW - 30 * DAY), w).factor("AGE").value == 1.0
    assert prio(job(eligible_time=NOW - 7 * DAY + 1), w).factor("AGE").value < 1.0


def test_max_age_zero_gives_full_age_as_in_slurm() -> None:
    # `diff < max_age` is never true for max_age 0, so the factor is 1.0 even at diff 0.
    r = prio(job(eligible_time=NOW), PriorityWeights(age=1000), max_age=0)
    assert r.factor("AGE").value == 1.0


def test_accrue_always_counts_from_submit_even_when_not_eligible() -> None:
    # ACCRUE_ALWAYS: accrue_time = submit_time (2 days): 172800/604800 · 604800 = 172800
    j = job(submit_time=NOW - 2 * DAY, eligible_time=None)
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.ACCRUE_ALWAYS
    assert prio(j, PriorityWeights(age=604800), flags=flags).priority == 172800
    assert prio(j, PriorityWeights(age=604800)).priority == 1  # age 0 → sum 0 → 1


# --- fair-share, association, partition, QOS ------------------------------------------------------


def test_fairshare_is_the_given_factor_times_its_weight() -> None:
    r = prio(job(fairshare=0.25), PriorityWeights(fairshare=10000))
    assert r.factor("FAIRSHARE").weighted == 2500.0
    assert r.priority == 2500


def test_assoc_priority_is_normalized_by_the_cluster_maximum() -> None:
    # 30 / 120 = 0.25 · 400 = 100
    r = prio(job(assoc_priority=30), PriorityWeights(assoc=400), max_assoc_priority=120)
    assert r.factor("ASSOC").value == 0.25 and r.priority == 100
    # no association has a Priority: factor 0
    assert prio(job(), PriorityWeights(assoc=400)).factor("ASSOC").value == 0.0
    with pytest.raises(InvalidValue, match="exceeds"):
        prio(job(assoc_priority=200), PriorityWeights(assoc=400), max_assoc_priority=120)


def test_no_normal_assoc_uses_the_raw_priority() -> None:
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.NO_NORMAL_ASSOC
    r = prio(
        job(assoc_priority=30), PriorityWeights(assoc=400), max_assoc_priority=120, flags=flags
    )
    assert r.factor("ASSOC").value == 30.0 and r.priority == 12000


def test_partition_factor_is_job_factor_over_largest() -> None:
    # batch 1/4 · 2000 = 500; prio 4/4 · 2000 = 2000; zero: PriorityJobFactor 0 → no term
    w = PriorityWeights(partition=2000)
    assert prio(job(), w).priority == 500
    assert prio(job(partition="prio"), w).priority == 2000
    assert prio(job(partition="zero"), w).factor("PARTITION").value == 0.0


def test_partition_maximum_is_at_least_one() -> None:
    # DEF_PART_MAX_PRIORITY = 1: with every partition at 0 the max stays 1 (no division by 0)
    parts = (PartitionInfo("a", priority_job_factor=0),)
    r = slurm_job_priority(
        job(partition="a"),
        now=NOW,
        config=PriorityConfig(PriorityWeights(partition=10)),
        partitions=parts,
        cluster=CLUSTER,
    )
    assert r.factor("PARTITION").value == 0.0 and r.priority == 1


def test_no_normal_part_uses_the_raw_job_factor() -> None:
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.NO_NORMAL_PART
    assert prio(job(partition="prio"), PriorityWeights(partition=10), flags=flags).priority == 40


def test_qos_factor_is_priority_over_largest_qos_priority() -> None:
    # high: 50/200 = 0.25 · 5000 = 1250; normal (priority 0) and no QOS: no term
    w = PriorityWeights(qos=5000)
    assert prio(job(qos="high"), w).priority == 1250
    assert prio(job(qos="normal"), w).factor("QOS").value == 0.0
    assert prio(job(qos=None), w).factor("QOS").value == 0.0
    with pytest.raises(InvalidValue, match="unknown QOS 'nope'"):
        prio(job(qos="nope"), w)


def test_no_normal_qos_uses_the_raw_priority() -> None:
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.NO_NORMAL_QOS
    assert prio(job(qos="high"), PriorityWeights(qos=3), flags=flags).priority == 150


def test_unknown_partition_is_refused() -> None:
    with pytest.raises(InvalidValue, match="unknown partition 'gone'"):
        prio(job(partition="gone"), PriorityWeights(age=1))


# --- job size -------------------------------------------------------------------------------------


def test_job_size_favor_large() -> None:
    # (min_nodes/N + cpus/C) / 2 = (2/10 + 30/100) / 2 = 0.25 → · 1000 = 250
    r = prio(job(min_nodes=2, cpus=30), PriorityWeights(job_size=1000))
    assert r.factor("JOBSIZE").value == (2 / 10 + 30 / 100) / 2
    assert r.priority == 250
    # without a CPU count only the node term, not halved: 2/10 · 1000 = 200
    assert prio(job(min_nodes=2, cpus=0), PriorityWeights(job_size=1000)).priority == 200


def test_job_size_favor_small() -> None:
    # ((N − n)/N + (C − c)/C) / 2 = (8/10 + 70/100) / 2 = 0.75 → 750
    r = prio(job(min_nodes=2, cpus=30), PriorityWeights(job_size=1000), favor_small=True)
    assert r.priority == 750
    # more nodes than the cluster: node term 0; CPUs term (100 − 50)/100 → (0 + 0.5)/2 → 250
    r = prio(job(min_nodes=12, cpus=50), PriorityWeights(job_size=1000), favor_small=True)
    assert r.priority == 250


def test_job_size_favor_small_uint32_wraparound_is_reproduced() -> None:
    # cpus 150 > C 100: (uint32)(100 − 150) = 4294967246; /100 → huge; clamped to 1.0
    r = prio(job(min_nodes=1, cpus=150), PriorityWeights(job_size=1000), favor_small=True)
    assert r.factor("JOBSIZE").value == 1.0


def test_job_size_is_clamped_to_one() -> None:
    # favor large, 20 nodes of 10 and 300 CPUs of 100: (2 + 3)/2 → 1.0
    assert prio(job(min_nodes=20, cpus=300), PriorityWeights(job_size=10)).priority == 10


def test_job_size_small_relative_to_time() -> None:
    # max(min_nodes·C/N, cpus) / time_limit / C = max(1·100/10, 20) / 60 / 100 = 20/6000
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.SMALL_RELATIVE_TO_TIME
    j = job(min_nodes=1, cpus=20, time_limit=60)
    r = prio(j, PriorityWeights(job_size=600000), flags=flags)
    assert r.factor("JOBSIZE").value == 20.0 / 60 / 100
    assert r.priority == int((20.0 / 60 / 100) * 600000.0)  # 600000·(20/6000) in doubles
    # with PriorityFavorSmall: 1 − 20/6000
    r = prio(j, PriorityWeights(job_size=600000), flags=flags, favor_small=True)
    assert r.factor("JOBSIZE").value == 1.0 - 20.0 / 60 / 100


def test_small_relative_to_time_falls_back_to_partition_max_time() -> None:
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.SMALL_RELATIVE_TO_TIME
    parts = (PartitionInfo("p", max_time=120),)
    r = slurm_job_priority(
        job(partition="p", cpus=50),
        now=NOW,
        partitions=parts,
        cluster=CLUSTER,
        config=PriorityConfig(PriorityWeights(job_size=1), flags=flags),
    )
    assert r.factor("JOBSIZE").value == 50.0 / 120 / 100


def test_job_size_needs_a_cluster() -> None:
    r = slurm_job_priority(
        job(cpus=4),
        now=NOW,
        partitions=PARTS,
        cluster=ClusterSize(0, 0),
        config=PriorityConfig(PriorityWeights(job_size=1000)),
    )
    assert r.factor("JOBSIZE").value == 0.0


# --- TRES -----------------------------------------------------------------------------------------


def test_tres_factors_are_job_over_partition_totals() -> None:
    # cpu 20/100 · 500 = 100; mem 250/1000 · 100 = 25; gpu: batch has none → 0
    w = PriorityWeights(tres=parse_tres_weights("CPU=500,Mem=100,GRES/gpu=3000"))
    r = prio(job(tres={"cpu": 20, "mem": 250, "gres/gpu": 2}), w)
    assert [(f.name, f.weighted) for f in r.factors[8:]] == [
        ("TRES:cpu", 100.0),
        ("TRES:mem", 25.0),
        ("TRES:gres/gpu", 0.0),
    ]
    assert r.priority == 125
    # in prio: cpu 20/40 · 500 = 250; gpu 2/8 · 3000 = 750 → 1000
    assert prio(job(partition="prio", tres={"cpu": 20, "GRES/gpu": 2}), w).priority == 1000


def test_no_normal_tres_uses_raw_counts_and_negative_tres_weights_are_allowed() -> None:
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.NO_NORMAL_TRES
    w = PriorityWeights(fairshare=1000, tres=parse_tres_weights("cpu=-2,node=1.5"))
    # 1000·1.0 + (−2·20) + 1.5·2 = 963
    r = prio(job(fairshare=1.0, tres={"cpu": 20, "node": 2}), w, flags=flags)
    assert r.priority == 963


def test_tres_weight_units() -> None:
    # Mem=1G: per MiB, so 1/1024; cpu=2K: 2/1024 (base unit none); Mem=5M unchanged
    assert dict(parse_tres_weights("Mem=1G,cpu=2K")) == {"mem": 1 / 1024, "cpu": 2 / 1024}
    assert dict(parse_tres_weights("Mem=5M,Mem=7K")) == {"mem": 7.0}
    for bad in ("cpu", "cpu=", "cpu=x", "cpu=1Q", "cpu=inf"):
        with pytest.raises(InvalidValue):
            parse_tres_weights(bad)


# --- site, nice, clamp, truncation ----------------------------------------------------------------


def test_site_factor_adds_and_nice_subtracts() -> None:
    r = prio(job(fairshare=0.5, site_factor=300, nice=100), PriorityWeights(fairshare=1000))
    # 500 + 300 − 100
    assert r.priority == 700
    assert r.factor("SITE").weighted == 300.0 and r.factor("NICE").weighted == -100.0


def test_nice_and_site_bounds() -> None:
    for value in (2147483645, -2147483645):
        job(nice=value)
        job(site_factor=value)
    for value in (2147483646, -2147483646, 2**40):
        with pytest.raises(InvalidValue, match=f"nice {value} is out of range"):
            job(nice=value)
        with pytest.raises(InvalidValue, match=f"site factor {value}"):
            job(site_factor=value)


def test_clamp_at_the_bottom() -> None:
    assert prio(job()).priority == 1  # nothing weighted: 0 → 1 (0 is a held job)
    assert prio(job(fairshare=0.05), PriorityWeights(fairshare=10)).priority == 1  # 0.5 → 1
    assert prio(job(fairshare=0.19), PriorityWeights(fairshare=10)).priority == 1  # 1.9 → 1
    assert prio(job(nice=2147483645), PriorityWeights(fairshare=10)).priority == 1  # negative
    assert prio(job(site_factor=2), PriorityWeights()).priority == 2


def _raw_qos(value: int, site: int = 0, fs: float = 0.0) -> int:
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.NO_NORMAL_QOS
    qos = (QosInfo("q", value),)
    return slurm_job_priority(
        job(qos="q", site_factor=site, fairshare=fs),
        now=NOW,
        partitions=PARTS,
        qos=qos,
        cluster=CLUSTER,
        config=PriorityConfig(PriorityWeights(qos=1, fairshare=1), flags=flags),
    ).priority


def test_clamp_and_truncation_at_the_top() -> None:
    assert _raw_qos(2147483650, site=2147483645) == MAX  # exactly 2^32 − 1
    assert _raw_qos(2147483649, site=2147483645) == MAX - 1
    assert _raw_qos(2147483649, site=2147483645, fs=0.7) == MAX - 1  # 4294967294.7 truncated
    assert _raw_qos(2147483651, site=2147483645) == MAX  # 2^32 → clamped
    assert _raw_qos(4294967294, site=2147483645) == MAX  # far beyond


def test_overflowing_weights_clamp_to_the_maximum() -> None:
    w = PriorityWeights(age=MAX, fairshare=MAX, qos=MAX, partition=MAX)
    r = prio(job(fairshare=1.0, qos="top", partition="prio", eligible_time=NOW - 8 * DAY), w)
    assert r.total == 4.0 * MAX and r.priority == MAX
    assert w.total == 4 * MAX


def test_weights_refuse_negatives_and_values_beyond_uint32() -> None:
    for field in ("age", "assoc", "fairshare", "job_size", "partition", "qos"):
        with pytest.raises(InvalidValue, match="-1 is out of range"):
            PriorityWeights(**{field: -1})
        with pytest.raises(InvalidValue):
            PriorityWeights(**{field: MAX + 1})
    with pytest.raises(InvalidValue):
        PriorityConfig(max_age=-1)


def test_incr_only_keeps_a_higher_current_priority() -> None:
    w = PriorityWeights(fairshare=1000)
    flags = PriorityFlags.FAIR_TREE | PriorityFlags.INCR_ONLY
    assert prio(job(fairshare=0.5), w, flags=flags, current_priority=900).priority == 900
    assert prio(job(fairshare=0.5), w, flags=flags, current_priority=100).priority == 500
    assert prio(job(fairshare=0.5), w, current_priority=900).priority == 500


def test_billing_and_fairshare_flags_do_not_change_the_sum() -> None:
    w = PriorityWeights(fairshare=1000, qos=10)
    base = prio(job(fairshare=0.3, qos="high"), w).priority
    words = ("MAX_TRES", "MAX_TRES_GRES", "NO_FAIR_TREE", "DEPTH_OBLIVIOUS", "CALCULATE_RUNNING")
    for text in words:
        flags = parse_priority_flags(text)
        assert prio(job(fairshare=0.3, qos="high"), w, flags=flags).priority == base


def test_priority_flags_are_substring_matches() -> None:
    f = parse_priority_flags("max_tres_gres,NO_NORMAL_ALL")
    assert PriorityFlags.MAX_TRES_GRES in f and PriorityFlags.MAX_TRES not in f
    assert NO_NORMAL_ALL in f and PriorityFlags.FAIR_TREE in f
    f = parse_priority_flags("DEPTH_OBLIVIOUS,NO_FAIR_TREE")
    assert PriorityFlags.FAIR_TREE not in f and PriorityFlags.DEPTH_OBLIVIOUS in f
    assert PriorityFlags.FAIR_TREE not in parse_priority_flags("NO_FAIR_TREE")
    assert parse_priority_flags(None) == PriorityFlags.FAIR_TREE
    assert parse_priority_flags("SMALL_RELATIVE_TO_TIME,accrue_always,INCR_ONLY") == (
        PriorityFlags.FAIR_TREE
        | PriorityFlags.SMALL_RELATIVE_TO_TIME
        | PriorityFlags.ACCRUE_ALWAYS
        | PriorityFlags.INCR_ONLY
    )


def test_factor_rows_are_in_sprio_long_column_order() -> None:
    w = PriorityWeights(1, 1, 1, 1, 1, 1, parse_tres_weights("cpu=1"))
    names = [f.name for f in prio(job(), w).factors]
    assert names == [
        "SITE",
        "AGE",
        "ASSOC",
        "FAIRSHARE",
        "JOBSIZE",
        "PARTITION",
        "QOS",
        "NICE",
        "TRES:cpu",
    ]


def test_zero_weight_factors_are_not_computed() -> None:
    r = prio(job(fairshare=0.9, min_nodes=5, cpus=50), PriorityWeights(age=1))
    assert r.factor("FAIRSHARE").value == 0.0 and r.factor("JOBSIZE").value == 0.0


# --- a site's configuration, priorities by hand ---------------------------------------------------


@pytest.fixture(scope="module")
def site():  # type: ignore[no-untyped-def]
    conf = parse_slurm_conf((DATA / "slurm.conf").read_text())
    qos = parse_qos_dump((DATA / "qos.cfg").read_text())
    return conf, qos


def _site_prio(site, j: PendingJob):  # type: ignore[no-untyped-def]
    conf, qos = site
    return slurm_job_priority(
        j,
        now=NOW,
        config=conf.priority,
        partitions=conf.partition_infos(),
        qos=qos,
        cluster=conf.cluster,
        max_assoc_priority=200,
    )


def test_site_job_in_cpu_partition(site) -> None:  # type: ignore[no-untyped-def]
    # Weights: Age 1000, Assoc 500, Fairshare 10000, JobSize 1000, Partition 2000, QOS 5000,
    # TRES CPU=500,Mem=100,GRES/gpu=3000. Cluster: 111 nodes, 7168 CPUs. MaxAge 7-0.
    # Partition cpu: 6400 CPUs, 25,700,000 MiB, PriorityJobFactor 1 of max 10 (debug).
    j = PendingJob(
        job_id=101,
        partition="cpu",
        qos="normal",
        submit_time=NOW - 3 * DAY,
        eligible_time=NOW - 3 * DAY,
        fairshare=0.5,
        assoc_priority=100,
        min_nodes=2,
        cpus=128,
        tres={"cpu": 128, "mem": 128 * 3900, "node": 2},
    )
    # age       259200/604800 = 0.4285714…         · 1000  =  428.5714…
    # assoc     100/200 = 0.5                      ·  500  =  250
    # fairshare 0.5                                · 10000 = 5000
    # jobsize   (2/111 + 128/7168)/2 = 0.0179376…  · 1000  =   17.9376…
    # partition 1/10 = 0.1                         · 2000  =  200
    # qos       normal has Priority 0              → 0
    # tres      cpu 128/6400 = 0.02 · 500 = 10; mem 499200/25700000 = 0.0194241 · 100 = 1.94241
    # total ≈ 5908.451 → 5908
    r = _site_prio(site, j)
    assert r.priority == 5908
    assert r.factor("PARTITION").value == 0.1
    assert r.factor("JOBSIZE").value == (2 / 111 + 128 / 7168) / 2
    assert r.factor("TRES:cpu").weighted == 10.0
    assert r.total == pytest.approx(5908.4514, abs=1e-3)


def test_site_job_in_gpu_partition(site) -> None:  # type: ignore[no-untyped-def]
    # gpu partition: gpu[01-04,07] (64 CPUs, 515000 MiB, 4 a100) + gpu[08-09] (32, 257000, 2 v100)
    #   → 384 CPUs, 3,089,000 MiB, 24 GPUs, 7 nodes; PriorityJobFactor 4.
    j = PendingJob(
        job_id=102,
        partition="gpu",
        qos="high",
        submit_time=NOW - 10 * DAY,
        eligible_time=NOW - 10 * DAY,
        fairshare=0.25,
        assoc_priority=200,
        min_nodes=1,
        cpus=16,
        tres={"cpu": 16, "mem": 64000, "gres/gpu": 2, "node": 1},
    )
    # age       10 days > 7 → 1.0                  · 1000  = 1000
    # assoc     200/200 = 1                        ·  500  =  500
    # fairshare 0.25                               · 10000 = 2500
    # jobsize   (1/111 + 16/7168)/2 = 0.0056206    · 1000  =    5.6206
    # partition 4/10                               · 2000  =  800
    # qos       high 100/100                       · 5000  = 5000
    # tres      cpu 16/384 · 500 = 20.8333; mem 64000/3089000 · 100 = 2.0719; gpu 2/24 · 3000 = 250
    # total ≈ 10078.526 → 10078
    r = _site_prio(site, j)
    assert r.priority == 10078
    assert r.factor("TRES:gres/gpu").weighted == 250.0


def test_site_job_in_debug_partition_with_nice_and_site_factor(site) -> None:  # type: ignore[no-untyped-def]
    # debug: cn099, cn100 (64 CPUs, 257000 MiB each), gpu09 (32, 257000) → 160 CPUs, 771000 MiB.
    j = PendingJob(
        job_id=103,
        partition="debug",
        qos="low",
        submit_time=NOW - 3600,
        eligible_time=NOW - 600,
        fairshare=0.9,
        min_nodes=1,
        cpus=4,
        nice=1000,
        site_factor=50,
        tres={"cpu": 4, "mem": 8000, "node": 1},
    )
    # age       600/604800 = 0.000992              · 1000  =    0.9921
    # assoc     0                                  → 0
    # fairshare 0.9                                · 10000 = 9000
    # jobsize   (1/111 + 4/7168)/2 = 0.0047835     · 1000  =    4.7835
    # partition 10/10                              · 2000  = 2000
    # qos       low 10/100 = 0.1                   · 5000  =  500
    # tres      cpu 4/160 · 500 = 12.5; mem 8000/771000 · 100 = 1.0376
    # + site 50 − nice 1000
    # total ≈ 10569.313 → 10569
    r = _site_prio(site, j)
    assert r.priority == 10569


def test_site_scavenger_job_with_large_nice_clamps_to_one(site) -> None:  # type: ignore[no-untyped-def]
    # scavenger: PriorityJobFactor 0 → no partition term; nice 100000 outweighs everything.
    j = PendingJob(
        job_id=104,
        partition="scavenger",
        submit_time=NOW,
        eligible_time=NOW,
        fairshare=1.0,
        nice=100000,
        cpus=1,
        tres={"cpu": 1},
    )
    assert _site_prio(site, j).priority == 1


# --- properties -----------------------------------------------------------------------------------

WEIGHTS = PriorityWeights(
    age=1000,
    assoc=500,
    fairshare=10000,
    job_size=1000,
    partition=2000,
    qos=5000,
    tres=parse_tres_weights("cpu=500,mem=100,gres/gpu=3000"),
)


@given(
    waits=st.lists(st.integers(0, 8 * DAY), min_size=2, max_size=6),
    fs=st.floats(0, 1),
)
def test_priority_is_monotone_in_age(waits: list[int], fs: float) -> None:
    results = [prio(job(eligible_time=NOW - wait, fairshare=fs), WEIGHTS) for wait in sorted(waits)]
    ages = [r.factor("AGE").value for r in results]
    assert ages == sorted(ages) and all(0.0 <= a <= 1.0 for a in ages)
    priorities = [r.priority for r in results]
    assert priorities == sorted(priorities)


@given(fss=st.lists(st.floats(0, 1), min_size=2, max_size=6))
def test_priority_is_monotone_in_fairshare(fss: list[float]) -> None:
    priorities = [prio(job(fairshare=fs), WEIGHTS).priority for fs in sorted(fss)]
    assert priorities == sorted(priorities)


@given(
    nice=st.integers(-2147483645, 2147483645),
    site=st.integers(-2147483645, 2147483645),
    fs=st.floats(0, 1),
    cpus=st.integers(0, 500),
    nodes=st.integers(0, 30),
    wait=st.integers(-DAY, 30 * DAY),
    qos=st.sampled_from([None, "normal", "high", "top"]),
    part=st.sampled_from(["batch", "prio", "zero"]),
    flags=st.sampled_from(["", "SMALL_RELATIVE_TO_TIME", "ACCRUE_ALWAYS"]),
    favor_small=st.booleans(),
)
def test_normalized_factors_stay_in_unit_interval_and_priority_in_uint32(
    nice: int,
    site: int,
    fs: float,
    cpus: int,
    nodes: int,
    wait: int,
    qos: str | None,
    part: str,
    flags: str,
    favor_small: bool,
) -> None:
    j = job(
        nice=nice,
        site_factor=site,
        fairshare=fs,
        cpus=cpus,
        min_nodes=nodes,
        qos=qos,
        partition=part,
        eligible_time=NOW - wait,
        time_limit=60,
        tres={"cpu": cpus, "mem": 10 * cpus, "gres/gpu": nodes},
    )
    r = prio(j, WEIGHTS, flags=parse_priority_flags(flags), favor_small=favor_small)
    assert 1 <= r.priority <= MAX
    for row in r.factors:
        if row.name in ("SITE", "NICE") or row.name.startswith("TRES"):
            continue
        assert 0.0 <= row.value <= 1.0, row
    if 1 < r.priority < MAX:
        assert r.priority == int(r.total)


@given(nice_a=st.integers(-(10**6), 10**6), nice_b=st.integers(-(10**6), 10**6))
def test_priority_is_antitone_in_nice(nice_a: int, nice_b: int) -> None:
    low, high = sorted((nice_a, nice_b))
    assert (
        prio(job(nice=low, fairshare=0.5), WEIGHTS).priority
        >= prio(job(nice=high, fairshare=0.5), WEIGHTS).priority
    )


def test_qos_usage_factor_is_carried_but_unused() -> None:
    assert QosInfo("x", 1, usage_factor=0.0).usage_factor == 0.0
    with pytest.raises(InvalidValue):
        QosInfo("x", 1, usage_factor=-1.0)
