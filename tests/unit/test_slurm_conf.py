"""slurm.conf reading (`ledger.slurm.conf`): the site file in tests/data/slurm, and each rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.slurm.conf import (
    duration_seconds,
    expand_hostlist,
    parse_qos_dump,
    parse_slurm_conf,
    parse_uint,
    time_str2mins,
    time_str2secs,
)
from ledger.slurm_priority import PriorityFlags, QosInfo

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


@pytest.fixture(scope="module")
def conf():  # type: ignore[no-untyped-def]
    return parse_slurm_conf((DATA / "slurm.conf").read_text())


def test_site_priority_settings(conf) -> None:  # type: ignore[no-untyped-def]
    p = conf.priority
    assert conf.priority_type == "priority/multifactor"
    assert (p.weights.age, p.weights.assoc, p.weights.fairshare) == (1000, 500, 10000)
    assert (p.weights.job_size, p.weights.partition, p.weights.qos) == (1000, 2000, 5000)
    assert p.weights.tres == (("cpu", 500.0), ("mem", 100.0), ("gres/gpu", 3000.0))
    assert p.max_age == 7 * 86400 and p.favor_small is False
    assert p.flags == PriorityFlags.FAIR_TREE | PriorityFlags.MAX_TRES
    assert conf.decay_half_life == 14 * 86400  # key written `priorityDecayHalfLife`
    assert conf.usage_reset_period == "NONE" and conf.calc_period == 300
    assert conf.dampening_factor == 1


def test_site_nodes_and_cluster_count_every_node_once(conf) -> None:  # type: ignore[no-untyped-def]
    # cn 100×64 + bigmem 4×96 + gpu[01-04,07] 5×64 + gpu[08-09] 2×32 = 7168 CPUs on 111 nodes,
    # although the scavenger and debug partitions hold nodes of other partitions too.
    assert conf.cluster.nodes == 111 and conf.cluster.cpus == 7168
    assert conf.cluster_tres == {
        "cpu": 7168,
        "mem": 100 * 257000 + 4 * 1031000 + 5 * 515000 + 2 * 257000,
        "node": 111,
        "gres/gpu": 24,
        "gres/gpu:a100": 20,
        "gres/gpu:v100": 4,
    }
    cn = next(n for n in conf.nodes if n.name == "cn042")
    assert (cn.cpus, cn.real_memory) == (64, 257000)  # from NodeName=DEFAULT: 2·32·1 CPUs
    big = next(n for n in conf.nodes if n.name == "bigmem04")
    assert (big.cpus, big.real_memory) == (96, 1031000)  # continued line
    assert [n.name for n in conf.nodes if n.name.startswith("gpu")] == [
        "gpu01",
        "gpu02",
        "gpu03",
        "gpu04",
        "gpu07",
        "gpu08",
        "gpu09",
    ]


def test_site_partitions(conf) -> None:  # type: ignore[no-untyped-def]
    parts = {p.name: p for p in conf.partitions}
    assert list(parts) == ["cpu", "bigmem", "gpu", "debug", "scavenger"]
    cpu, gpu, debug = parts["cpu"], parts["gpu"], parts["debug"]
    assert cpu.default and conf.default_partition is cpu
    assert cpu.qos == "part_cpu" and cpu.tres_billing_weights == "CPU=1.0,Mem=0.25G"
    assert cpu.tres_totals == {"cpu": 6400, "mem": 25_700_000, "node": 100}
    assert cpu.max_time == 2 * 24 * 60  # PartitionName=DEFAULT MaxTime=2-00:00:00
    assert parts["bigmem"].max_time == 7 * 24 * 60
    assert gpu.tres_totals == {
        "cpu": 384,
        "mem": 3_089_000,
        "node": 7,
        "gres/gpu": 24,
        "gres/gpu:a100": 20,
        "gres/gpu:v100": 4,
    }
    assert debug.nodes == ("cn099", "cn100", "gpu09")
    assert (debug.priority_job_factor, debug.priority_tier, debug.max_time) == (10, 10, 30)
    assert debug.tres_totals["cpu"] == 160 and debug.tres_totals["gres/gpu"] == 2
    assert parts["scavenger"].tres_totals == conf.cluster_tres
    assert parts["scavenger"].priority_job_factor == 0
    info = gpu.info()
    assert info.name == "gpu" and info.priority_job_factor == 4 and info.tres_totals["cpu"] == 384


def test_site_ignored_lines_are_reported(conf) -> None:  # type: ignore[no-untyped-def]
    keys = {(i.line, i.key) for i in conf.ignored}
    assert (12, "Include") in keys
    assert (4, "ClusterName") in keys and (26, "AccountingStorageTRES") in keys
    assert (47, "State") in keys and (49, "Features") in keys  # node keys we do not use
    assert (61, "PreemptMode") in keys


def test_qos_dump_lines() -> None:
    qos = parse_qos_dump((DATA / "qos.cfg").read_text())
    assert qos == (
        QosInfo("normal", 0, 1.0),
        QosInfo("high", 100, 2.0, ("DenyOnLimit",)),
        QosInfo("low", 10, 0.5),
        QosInfo("part_cpu", 0, 1.0),
    )
    with pytest.raises(InvalidValue, match="line 1"):
        parse_qos_dump("QOS - 'x':Priority=-3")


# --- lines ----------------------------------------------------------------------------------------


def test_comments_continuations_escapes_and_case() -> None:
    c = parse_slurm_conf(
        "PRIORITYWEIGHTAGE=10   # a comment\n"
        "priorityweightqos=\\\n"
        "  20\n"
        "PriorityWeightFairshare=3 PriorityWeightJobSize=4\n"  # several pairs on a line
        'PriorityFlags="NO_NORMAL_QOS, ACCRUE_ALWAYS"\n'
        "\n# only a comment\n"
    )
    w = c.priority.weights
    assert (w.age, w.qos, w.fairshare, w.job_size) == (10, 20, 3, 4)
    assert PriorityFlags.NO_NORMAL_QOS in c.priority.flags
    assert PriorityFlags.ACCRUE_ALWAYS in c.priority.flags


def test_later_value_wins_and_defaults_apply() -> None:
    c = parse_slurm_conf("PriorityWeightAge=1\nPriorityWeightAge=2\n")
    assert c.priority.weights.age == 2
    d = parse_slurm_conf("")
    assert d.priority.max_age == 604800 and d.decay_half_life == 604800
    assert d.priority.flags == PriorityFlags.FAIR_TREE and d.cluster.nodes == 0


def test_malformed_lines_name_the_line() -> None:
    with pytest.raises(InvalidValue, match=r"line 2: 'this is not a pair'"):
        parse_slurm_conf("PriorityWeightAge=1\nthis is not a pair\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*less than zero"):
        parse_slurm_conf("PriorityWeightAge=-5\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*greater than 4294967295"):
        parse_slurm_conf("PriorityWeightQOS=4294967296\n")
    with pytest.raises(InvalidValue, match=r"line 3: .*PriorityMaxAge"):
        parse_slurm_conf("\n\nPriorityMaxAge=abc\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*PriorityUsageResetPeriod"):
        parse_slurm_conf("PriorityUsageResetPeriod=HOURLY\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*not a valid option"):
        parse_slurm_conf("PriorityFavorSmall=maybe\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*TRES weight"):
        parse_slurm_conf("PriorityWeightTRES=CPU\n")


def test_zero_half_life_needs_a_reset_period() -> None:
    with pytest.raises(InvalidValue, match="PriorityUsageResetPeriod"):
        parse_slurm_conf("PriorityDecayHalfLife=0\n")
    c = parse_slurm_conf("PriorityDecayHalfLife=0\nPriorityUsageResetPeriod=monthly\n")
    assert c.decay_half_life == 0 and c.usage_reset_period == "MONTHLY"


def test_node_and_partition_errors_name_the_line() -> None:
    with pytest.raises(InvalidValue, match=r"line 2: .*n02 is defined twice"):
        parse_slurm_conf("NodeName=n[01-02]\nNodeName=n02\n")
    with pytest.raises(InvalidValue, match=r"line 2: .*unknown node x1"):
        parse_slurm_conf("NodeName=n1\nPartitionName=p Nodes=n1,x1\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*runs backwards"):
        parse_slurm_conf("NodeName=n[05-01]\n")
    with pytest.raises(InvalidValue, match=r"line 2: .*greater than 65533"):
        parse_slurm_conf("NodeName=n1\nPartitionName=p Nodes=n1 PriorityJobFactor=65534\n")
    with pytest.raises(InvalidValue, match=r"line 1: .*Gres"):
        parse_slurm_conf("NodeName=n1 Gres=gpu:a:b:c\n")


def test_node_cpus_memory_and_gres_forms() -> None:
    c = parse_slurm_conf(
        "NodeName=a Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=1000\n"
        "NodeName=b Gres=gpu:a100:2(S:0-1),gpu:v100:1,mps:100\n"
        "NodeName=c CPUs=0x10 Gres=gpu:3\n"
        "PartitionName=p Nodes=a,b,c Priority=7\n"
    )
    nodes = {n.name: n for n in c.nodes}
    assert (nodes["a"].cpus, nodes["a"].real_memory) == (32, 1000)
    assert (nodes["b"].cpus, nodes["b"].real_memory) == (1, 1)  # Slurm's defaults
    assert nodes["b"].gres == {"gpu": 3, "gpu:a100": 2, "gpu:v100": 1, "mps": 100}
    assert nodes["c"].cpus == 16  # strtoul base 0
    part = c.partitions[0]
    assert (part.priority_job_factor, part.priority_tier) == (7, 7)  # legacy Priority=
    assert part.tres_totals == {
        "cpu": 49,
        "mem": 1002,
        "node": 3,
        "gres/gpu": 6,
        "gres/gpu:a100": 2,
        "gres/gpu:v100": 1,
        "gres/mps": 100,
    }
    assert part.max_time is None  # no MaxTime: UNLIMITED


# --- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds", "minutes"),
    [
        ("10", 600, 10),
        ("5:30", 330, 6),  # M:S, rounded up to minutes
        ("1:00:00", 3600, 60),
        ("2-12", 2 * 86400 + 12 * 3600, 3600),
        ("2-12:30", 2 * 86400 + 12 * 3600 + 1800, 3630),
        ("1-0:0:1", 86401, 1441),
        ("0", 0, 0),
    ],
)
def test_slurm_time_formats(text: str, seconds: int, minutes: int) -> None:
    assert time_str2secs(text) == seconds
    assert time_str2mins(text) == minutes
    assert duration_seconds("PriorityMaxAge", text) == minutes * 60


def test_unlimited_and_bad_durations() -> None:
    for text in ("UNLIMITED", "infinite", "-1"):
        assert time_str2mins(text) == 0xFFFFFFFF
        # minutes × 60 in a uint32, as read_config.c stores it
        assert duration_seconds("PriorityMaxAge", text) == 4294967236
    for text in ("", "abc", "1:2:3:4", "1-2-3", "5:", "1h", "-5"):
        with pytest.raises(InvalidValue):
            duration_seconds("PriorityMaxAge", text)


def test_slurm_integers() -> None:
    assert parse_uint("k", "010") == 8 and parse_uint("k", "0x1F") == 31
    assert parse_uint("k", "2k") == 2048 and parse_uint("k", "unlimited") == 0xFFFFFFFF
    assert parse_uint("k", "65535", bits=16) == 65535
    for bad in ("-1", "1.5", "x", "4294967296"):
        with pytest.raises(InvalidValue):
            parse_uint("k", bad)
    with pytest.raises(InvalidValue):
        parse_uint("k", "65536", bits=16)


def test_hostlists() -> None:
    assert expand_hostlist("n[001-003]") == ("n001", "n002", "n003")
    assert expand_hostlist("gpu[01-04,07]") == ("gpu01", "gpu02", "gpu03", "gpu04", "gpu07")
    assert expand_hostlist("r[1-2]-c[8-9],login") == ("r1-c8", "r1-c9", "r2-c8", "r2-c9", "login")
    assert expand_hostlist("n[8-10]") == ("n8", "n9", "n10")
    for bad in ("n[1-2", "n1-2]", "n[a-b]", "n[1-2],,m", "n[[1]]"):
        with pytest.raises(InvalidValue):
            expand_hostlist(bad)


@given(low=st.integers(0, 500), span=st.integers(0, 50), width=st.integers(1, 4))
def test_hostlist_range_size_and_padding(low: int, span: int, width: int) -> None:
    text = f"n[{str(low).zfill(width)}-{low + span}]"
    hosts = expand_hostlist(text)
    assert len(hosts) == span + 1 and len(set(hosts)) == span + 1
    assert hosts[0] == "n" + str(low).zfill(width)
