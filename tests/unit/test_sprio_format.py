"""sprio's output (ledger.slurm.sprio_format) against lines written by hand from Slurm's format
codes (src/sprio/sprio.c, print.c): `%.15i` is the job id right-justified in 15 columns, `%9r`
the partition left-justified in 9, every field cut to its width, numbers `%.0f`, `%.7f`,
`%16.14f`. The results are built by hand too: the factors below are not computed here."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.errors import InvalidValue
from ledger.slurm.sprio_format import (
    LONG_FORMAT,
    LONG_NORMALIZED_FORMAT,
    SprioWeights,
    check_sort,
    default_format,
    parse_format,
    render,
    sort_results,
    sprio_priority,
)
from ledger.slurm_priority import PriorityFactor, PriorityResult

WEIGHTS = SprioWeights(
    age=1000, fairshare=10000, job_size=500, partition=2000, qos=3000, tres="CPU=500,GRES/gpu=3000"
)


def result(
    job_id: int,
    partition: str = "batch",
    *,
    user: str = "amy",
    account: str = "physics",
    qos: str | None = "normal",
    age: float = 0.0,
    fairshare: float = 0.0,
    job_size: float = 0.0,
    part: float = 0.0,
    qos_factor: float = 0.0,
    site: int = 0,
    nice: int = 0,
    tres: tuple[tuple[str, float, float], ...] = (),
) -> PriorityResult:
    """A result with these factor values (unweighted) and WEIGHTS' weights."""
    rows = [
        PriorityFactor("SITE", float(site), 1, float(site)),
        PriorityFactor("AGE", age, 1000, age * 1000),
        PriorityFactor("ASSOC", 0.0, 0, 0.0),
        PriorityFactor("FAIRSHARE", fairshare, 10000, fairshare * 10000),
        PriorityFactor("JOBSIZE", job_size, 500, job_size * 500),
        PriorityFactor("PARTITION", part, 2000, part * 2000),
        PriorityFactor("QOS", qos_factor, 3000, qos_factor * 3000),
        PriorityFactor("NICE", float(nice), 1, -float(nice)),
        *(PriorityFactor(f"TRES:{n}", v, w, v * w) for n, v, w in tres),
    ]
    return PriorityResult(job_id, partition, qos, user, account, 0, 0.0, tuple(rows))


# Job 101: age 0.5, fair-share 1, job size 1/12, partition 1/4, QOS 1/10, 40 of 400 CPUs.
# Weighted: 500, 10000, 41.67, 500, 300 and cpu 50: sprio's sum is 11391.67, PRIORITY 11391.
JOB_101 = result(
    101,
    age=0.5,
    fairshare=1.0,
    job_size=1 / 12,
    part=0.25,
    qos_factor=0.1,
    tres=(("cpu", 0.1, 500.0), ("gres/gpu", 0.0, 3000.0)),
)
# Job 102 in gpu: age 10000 s of 1 day, nice 100, 8 of 80 CPUs and 2 of 8 GPUs.
# Weighted: 115.74, 10000, 25, 2000, 3000, cpu 50, gpu 750, minus 100: 15840.74.
JOB_102 = result(
    102,
    "gpu",
    user="bob",
    account="chem",
    qos="high",
    age=10000 / 86400,
    fairshare=1.0,
    job_size=0.05,
    part=1.0,
    qos_factor=1.0,
    nice=100,
    tres=(("cpu", 0.1, 500.0), ("gres/gpu", 0.25, 3000.0)),
)


def weighted(base: PriorityResult, **values: float) -> PriorityResult:
    """`base` with these factors' weighted values set exactly (AGE=2.5, ...)."""
    rows = tuple(
        PriorityFactor(f.name, f.value, f.weight, values.get(f.name, f.weighted))
        for f in base.factors
    )
    return dataclasses.replace(base, factors=rows)


def lines(results: list[PriorityResult], fmt: str, **kw: bool) -> list[str]:
    return render(results, parse_format(fmt), WEIGHTS, **kw)


def test_default_formats_drop_the_factors_weighted_zero() -> None:
    # ASSOC's weight is 0: %.10B and %10b are left out; the rest in sprio.c's order.
    assert default_format(WEIGHTS, long=False, normalized=False, users=False) == (
        "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.20T"
    )
    assert default_format(WEIGHTS, long=False, normalized=True, users=True) == (
        "%.15i %9r %.8u %10y %10a %10f %10j %10p %10q %20t"
    )
    only_fs = SprioWeights(fairshare=1)
    assert default_format(only_fs, long=False, normalized=False, users=False) == (
        "%.15i %9r %.10Y %.10S %.10F"
    )
    assert default_format(only_fs, long=True, normalized=False, users=False) == LONG_FORMAT
    assert default_format(only_fs, long=True, normalized=True, users=False) == (
        LONG_NORMALIZED_FORMAT
    )


def test_plain_sprio() -> None:
    fmt = default_format(WEIGHTS, long=False, normalized=False, users=False)
    assert lines([JOB_101, JOB_102], fmt) == [
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE"
        "  PARTITION        QOS                 TRES",
        "            101 batch          11391          0        500      10000         42"
        "        500        300               cpu=50",
        "            102 gpu            15840          0        116      10000         25"
        "       2000       3000  cpu=50,gres/gpu=750",
    ]
    assert lines([JOB_101], fmt, header=False) == [
        "            101 batch          11391          0        500      10000         42"
        "        500        300               cpu=50",
    ]


def test_normalized_sprio() -> None:
    # -n: the weighted factor over its weight in %.7f, left-justified in 10; PRIORITY is
    # 11391.67 / (2^32 - 1) = 0.0000026523... in %16.14f, cut to 10 characters; TRES %.2f.
    fmt = default_format(WEIGHTS, long=False, normalized=True, users=False)
    assert lines([JOB_101, JOB_102], fmt) == [
        "          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  JOBSIZE    PARTITION "
        " QOS        TRES                ",
        "            101 batch     0.00000265 0.5000000  1.0000000  0.0833333  0.2500000 "
        " 0.1000000  cpu=0.10            ",
        "            102 gpu       0.00000368 0.1157407  1.0000000  0.0500000  1.0000000 "
        " 1.0000000  cpu=0.10,gres/gpu=0.",
    ]


def test_long_sprio() -> None:
    # -l: USER and ACCOUNT cut to 8, QOSNAME, NICE; a job without a QOS prints glibc's (null).
    long_name = result(7, "verylongpartition", user="bartholomew", qos=None, site=-5, nice=-20)
    assert lines([JOB_102, long_name], LONG_FORMAT) == [
        "          JOBID PARTITION     USER  ACCOUNT   PRIORITY       SITE        AGE      ASSOC"
        "  FAIRSHARE    JOBSIZE  PARTITION    QOSNAME        QOS        NICE                 TRES",
        "            102 gpu            bob     chem      15840          0        116          0"
        "      10000         25       2000       high       3000         100  cpu=50,gres/gpu=750",
        # -5 + 20: 15. Nothing weighted: the TRES column is empty.
        "              7 verylongp bartholo  physics         15         -5          0          0"
        "          0          0          0     (null)          0         -20                     ",
    ]


def test_weights_row() -> None:
    fmt = default_format(WEIGHTS, long=False, normalized=False, users=False)
    assert lines([JOB_101], fmt, weights_row=True) == [
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE"
        "  PARTITION        QOS                 TRES",
        # PriorityWeightTRES as written, cut to 20; SITE's weight is 1; no job row.
        "        Weights                               1       1000      10000        500"
        "       2000       3000 CPU=500,GRES/gpu=300",
    ]
    unset = SprioWeights(fairshare=5)
    assert render([], parse_format("%.15i %.8u %.10F %.20T"), unset, weights_row=True)[1] == (
        "        Weights                   5               (null)"
    )


def test_priority_is_sprios_own_sum() -> None:
    # At least 1 (site -1000 alone), no cap at 2^32 - 1, then %lld cut to %.10Y's 10 columns.
    assert sprio_priority(result(1, site=-1000)) == 1.0
    big = weighted(result(2, site=2147483645), FAIRSHARE=4294967295.0)
    assert sprio_priority(big) == 6442450940.0
    huge = result(3, tres=(("cpu", 1.0, 12345678901234.0),))
    assert lines([huge], "%.10Y|%T", header=False) == ["1234567890|cpu=12345678901234"]


def test_rounding_is_printf_s() -> None:
    # %.0f rounds ties to even, as glibc does: 2.5 -> 2, 3.5 -> 4.
    ties = weighted(result(1), AGE=2.5, FAIRSHARE=3.5, QOS=0.5)
    assert lines([ties], "%A %F %Q %Y", header=False) == ["2 4 0 6"]


def test_format_prefix_and_suffixes() -> None:
    # The text before the first % starts every line; a field's suffix follows it; width 0
    # neither cuts nor pads.
    assert lines([JOB_101], "id=%i|%r|%.3u!", header=True) == [
        "id=JOBID|PARTITION|USE!",
        "id=101|batch|amy!",
    ]


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("%.10Z", "invalid sprio format specification: %.10Z"),
        ("%c", "invalid sprio format specification: %c"),
        ("plain", "sprio format 'plain' has no %field"),
    ],
)
def test_bad_formats(fmt: str, message: str) -> None:
    with pytest.raises(InvalidValue, match=f"^{message}$"):
        parse_format(fmt)


def test_sorting() -> None:
    a = result(3, "batch", user="cy", fairshare=0.5)  # 5000
    b = result(1, "gpu", user="al", fairshare=0.9)  # 9000
    c = result(2, "batch", user="bo", fairshare=0.7)  # 7000
    ids = lambda rows: [r.job_id for r in rows]  # noqa: E731
    assert ids(sort_results([a, b, c], None)) == [1, 2, 3]
    assert ids(sort_results([a, b, c], "-y")) == [1, 2, 3]
    assert ids(sort_results([a, b, c], "y")) == [3, 2, 1]
    assert ids(sort_results([a, b, c], "-i")) == [3, 2, 1]
    assert ids(sort_results([a, b, c], "u")) == [1, 2, 3]
    # The first key leads: by partition, then by priority descending within one.
    assert ids(sort_results([a, b, c], "r,-Y")) == [2, 3, 1]
    # Doubles within 1e-5 are equal: the later key decides nothing, the stable order stays.
    d = result(4, fairshare=0.5 + 1e-10)
    assert ids(sort_results([d, a], "F")) == [4, 3]


def test_sort_keys_sprio_refuses() -> None:
    # sort.c has no key for ASSOC or SITE.
    for spec in ("B", "i,S"):
        with pytest.raises(InvalidValue, match="^invalid sort specification: [BS]$"):
            check_sort(spec)
