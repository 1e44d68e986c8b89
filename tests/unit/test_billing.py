"""TRESBillingWeights and billable TRES (`ledger.billing`), against Slurm's rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.billing import BillingMode, billable_tres, parse_billing_weights
from ledger.errors import InvalidValue

JOB = {"cpu": 8, "mem": 16384, "node": 1, "gres/gpu": 2}


def test_research_example_mem_quarter_per_gib() -> None:
    # `Mem=0.25G` on 8 GiB gives 2 (memory counted in MiB).
    weights = parse_billing_weights("Mem=0.25G")
    assert weights is not None
    assert billable_tres({"mem": 8192}, weights) == 2.0


def test_weights_parsed_case_insensitively_and_rescaled() -> None:
    weights = parse_billing_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0")
    assert weights is not None
    assert dict(weights.weights) == {"cpu": 1.0, "mem": 0.25 / 1024, "gres/gpu": 2.0}
    assert weights.weight("GRES/GPU") == 2.0


@pytest.mark.parametrize(
    ("text", "key", "weight"),
    [
        ("Mem=1M", "mem", 1.0),  # the base unit: unchanged
        ("Mem=1K", "mem", 1.0),  # below the base: Slurm leaves it unchanged too
        ("mem=3t", "mem", 3.0 / 1024**2),
        ("Mem=1P", "mem", 1.0 / 1024**3),
        ("CPU=2K", "cpu", 2.0 / 1024),
        ("bb/datawarp=1G", "bb/datawarp", 1.0 / 1024),
        ("license/matlab=5", "license/matlab", 5.0),
        ("GRES/gpu:a100=3.5", "gres/gpu:a100", 3.5),
        ("cpu=.5", "cpu", 0.5),
        ("cpu=1e1", "cpu", 10.0),
    ],
)
def test_weight_units(text: str, key: str, weight: float) -> None:
    parsed = parse_billing_weights(text)
    assert parsed is not None
    assert parsed.weights[key] == pytest.approx(weight, rel=1e-15)


def test_empty_and_repeated() -> None:
    assert parse_billing_weights(None) is None
    assert parse_billing_weights("  ") is None
    assert parse_billing_weights(",,") is None
    parsed = parse_billing_weights("CPU=1,,cpu=3, Mem = 2G ,")
    assert parsed is not None
    assert dict(parsed.weights) == {"cpu": 3.0, "mem": 2.0 / 1024}


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("CPU", "'CPU'"),
        ("CPU=", "'CPU='"),
        ("=2", "'=2'"),
        ("CPU=abc", "'CPU=abc'"),
        ("CPU=1.0,Mem=0.25X", "'Mem=0.25X'"),
        ("Mem=0.25GB", "'Mem=0.25GB'"),
        ("CPU=-1", "'CPU=-1'"),
        ("CPU=inf", "'CPU=inf'"),
        ("GRES/=2", "'GRES/=2'"),
        ("C PU=2", "'C PU=2'"),
    ],
)
def test_malformed_weight_is_one_line_naming_it(text: str, bad: str) -> None:
    with pytest.raises(InvalidValue) as err:
        parse_billing_weights(text)
    message = str(err.value)
    assert "\n" not in message
    assert bad in message


def test_no_weights_bills_cpus() -> None:
    assert billable_tres(JOB, None) == 8.0
    assert billable_tres({"mem": 100}, None) == 0.0


def test_sum_max_tres_and_max_tres_gres() -> None:
    weights = parse_billing_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0")
    # v: cpu 8, mem 16 GiB * 0.25 = 4, node 0 (no weight), gpu 4.
    assert billable_tres(JOB, weights) == 16.0
    assert billable_tres(JOB, weights, BillingMode.MAX_TRES) == 8.0
    assert billable_tres(JOB, weights, BillingMode.MAX_TRES_GRES) == 4.0 + 8.0


def test_max_tres_counts_gres_in_the_max_and_globals_on_top() -> None:
    weights = parse_billing_weights("CPU=1,Mem=1G,Node=2,GRES/gpu=10,License/matlab=3,bb/cray=1G")
    job = {"cpu": 4, "mem": 4096, "node": 1, "gres/gpu": 1, "license/matlab": 2, "bb/cray": 2048}
    # v: cpu 4, mem 4, node 2, gpu 10, license 6, bb 2.
    assert billable_tres(job, weights) == 28.0
    assert billable_tres(job, weights, BillingMode.MAX_TRES) == 10.0 + 6.0 + 2.0
    assert billable_tres(job, weights, BillingMode.MAX_TRES_GRES) == 10.0 + 4.0 + 6.0 + 2.0


def test_billing_tres_itself_and_unweighted_tres_count_nothing() -> None:
    weights = parse_billing_weights("CPU=0.5,billing=100")
    job = {"billing": 99, "cpu": 9, "gres/gpu:a100": 4, "energy": 1000}
    assert billable_tres(job, weights) == 4.5  # untruncated: Slurm's fair-share uses the double


def test_typed_gres_has_its_own_weight() -> None:
    weights = parse_billing_weights("GRES/gpu=1,GRES/gpu:a100=3")
    job = {"gres/gpu": 2, "gres/gpu:a100": 2}
    assert billable_tres(job, weights) == 8.0
    assert billable_tres(job, weights, BillingMode.MAX_TRES) == 6.0
    assert billable_tres(job, weights, BillingMode.MAX_TRES_GRES) == 8.0


def test_job_keys_in_any_case() -> None:
    weights = parse_billing_weights("cpu=2")
    assert billable_tres({"CPU": 3}, weights) == 6.0


def test_bad_counts() -> None:
    with pytest.raises(InvalidValue, match="'cpu'"):
        billable_tres({"cpu": -1}, None)
    with pytest.raises(InvalidValue, match="'mem'"):
        billable_tres({"mem": float("nan")}, None)


counts = st.dictionaries(
    st.sampled_from(["cpu", "mem", "node", "gres/gpu", "license/x", "bb/y"]),
    st.integers(min_value=0, max_value=10**6),
)


@given(counts)
def test_max_never_exceeds_sum(job: dict[str, int]) -> None:
    weights = parse_billing_weights("CPU=1,Mem=0.25G,Node=3,GRES/gpu=2,License/x=1,bb/y=1M")
    total = billable_tres(job, weights)
    max_tres = billable_tres(job, weights, BillingMode.MAX_TRES)
    max_gres = billable_tres(job, weights, BillingMode.MAX_TRES_GRES)
    assert max_tres <= max_gres <= total * (1 + 1e-12)
