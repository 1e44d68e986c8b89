"""The completed-job record, Flux job IDs, R counting and the job charge (pure, no database)."""

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.jobs import (
    JOB_ID_MAX,
    IdsetError,
    JobIdError,
    JobRecord,
    JobRecordError,
    ResourceSetError,
    count_idset,
    count_resources,
    decode_f58,
    format_f58,
    job_charge,
    parse_idset,
    parse_job_id,
    parse_job_line,
)


def R_of(*entries: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """A Flux R version 1 with the given (rank idset, children) entries."""
    return {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": rank, "children": children} for rank, children in entries],
            "starttime": 0,
            "expiration": 0,
            "nodelist": ["node[0-15]"],
        },
    }


ONE_NODE_R = R_of(("0", {"core": "0-3"}))


def line(**fields: Any) -> str:
    """An ingest line: a valid record with `fields` changed; `...` leaves a field out."""
    record: dict[str, Any] = {
        "id": 1,
        "userid": 50001,
        "t_run": 1000.0,
        "t_inactive": 1100.0,
        "nnodes": 1,
        "ncores": 4,
    }
    record.update(fields)
    return json.dumps({key: value for key, value in record.items() if value is not ...})


# --- Flux job IDs --------------------------------------------------------------------------------

# flux-core's own vectors (src/common/libutil/test/fluid.c)
FLUX_F58 = [
    (0, "ƒ1"),
    (1, "ƒ2"),
    (57, "ƒz"),
    (58, "ƒ21"),
    (1234, "ƒNH"),
    (1888, "ƒZZ"),
    (3363, "ƒzz"),
    (3364, "ƒ211"),
    (4369, "ƒ2JL"),
    (65535, "ƒLUv"),
    (4294967295, "ƒ7YXq9G"),
    (633528662, "ƒxyzzy"),
    (6731191091817518, "ƒuZZybuNNy"),
    (18446744073709551614, "ƒjpXCZedGfVP"),
    (18446744073709551615, "ƒjpXCZedGfVQ"),
]


@pytest.mark.parametrize(("job_id", "f58"), FLUX_F58)
def test_f58_matches_flux(job_id: int, f58: str) -> None:
    assert format_f58(job_id) == f58
    assert decode_f58(f58) == job_id
    assert parse_job_id(f58) == job_id
    assert parse_job_id("f" + f58[1:]) == job_id  # the ASCII prefix Flux prints in a C locale


def test_f58_ascii_prefix_on_request() -> None:
    assert format_f58(1234, ascii_prefix=True) == "fNH"


def test_f58_leading_zero_digits_decode() -> None:
    assert decode_f58("f111") == 0


@given(st.integers(min_value=0, max_value=JOB_ID_MAX))
def test_f58_round_trip(job_id: int) -> None:
    assert parse_job_id(format_f58(job_id)) == job_id
    assert parse_job_id(format_f58(job_id, ascii_prefix=True)) == job_id


@pytest.mark.parametrize(
    ("text", "job_id"),
    [
        ("1234", 1234),
        (" 18446744073709551615 ", JOB_ID_MAX),
        ("0x0", 0),
        ("0x4d2", 1234),
        ("0xffffffffffffffff", JOB_ID_MAX),
        ("0000.0000.0000.04d2", 1234),
        ("ffff.ffff.ffff.ffff", JOB_ID_MAX),
    ],
)
def test_parse_job_id_other_forms(text: str, job_id: int) -> None:
    assert parse_job_id(text) == job_id


@pytest.mark.parametrize(
    "text",
    [
        "",
        "f",
        "flux",
        "f1230",
        "x1",
        "-1",
        "1_000",
        "²",
        "0x",
        "0xg",
        "18446744073709551616",
        "ƒjpXCZedGfVR",
        "f111111111111",
        "1.2.3",
    ],
)
def test_parse_job_id_refuses(text: str) -> None:
    with pytest.raises(JobIdError, match="invalid job ID"):
        parse_job_id(text)


def test_job_id_errors_are_ledger_errors() -> None:
    # the CLI turns InvalidValue into one line and exit 1
    with pytest.raises(InvalidValue):
        parse_job_id("nope")


def test_format_f58_refuses_out_of_range() -> None:
    with pytest.raises(JobIdError):
        format_f58(-1)
    with pytest.raises(JobIdError):
        format_f58(JOB_ID_MAX + 1)


# --- idsets and R --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("idset", "count"),
    [
        ("0-3,5", 5),
        ("0-3,5,7-8", 7),
        ("0", 1),
        ("", 0),
        ("[0-3]", 4),
        ("0-3,2-5", 6),
        ("3,1,2", 3),
        ("0-1023", 1024),
    ],
)
def test_count_idset(idset: str, count: int) -> None:
    assert count_idset(idset) == count


def test_parse_idset_merges_ranges() -> None:
    assert parse_idset("7-8,0-3,4,10") == [(0, 4), (7, 8), (10, 10)]


@pytest.mark.parametrize("idset", ["a", "3-1", "0-", "-1", "0,,1", "1.5", "0-3;5"])
def test_count_idset_refuses(idset: str) -> None:
    with pytest.raises(IdsetError, match="invalid idset"):
        count_idset(idset)


# t1022_job_record_ncores_ngpus.py
@pytest.mark.parametrize(
    ("R", "nnodes", "ncores", "ngpus"),
    [
        (R_of(("0", {"core": "0-3", "gpu": "0"})), 1, 4, 1),
        (R_of(("0", {"core": "0-7", "gpu": "0-3"})), 1, 8, 4),
        (R_of(("0", {"core": "0-15"})), 1, 16, 0),
        (R_of(("0", {"core": "0-3", "gpu": "0-1"}), ("1", {"core": "0-3", "gpu": "0-1"})), 2, 8, 4),
        (R_of(("0-3", {"core": "0-7", "gpu": "0-1"}), ("5,7-8", {"core": "0-1"})), 7, 38, 8),
    ],
)
def test_count_resources(R: dict[str, Any], nnodes: int, ncores: int, ngpus: int) -> None:
    counts = count_resources(R)
    assert (counts.nnodes, counts.ncores, counts.ngpus) == (nnodes, ncores, ngpus)
    assert count_resources(json.dumps(R)) == counts  # R as Flux stores it: JSON text


@pytest.mark.parametrize(
    ("R", "message"),
    [
        ("not valid json at all", "not valid JSON"),  # t1022 test_05
        ({"execution": {"nodelist": ["node0"]}}, "missing 'version'"),  # t1022 test_06
        ({"version": 2, "execution": {"R_lite": []}}, "unsupported version 2"),
        ({"version": 1}, "missing 'execution'"),
        ({"version": 1, "execution": {}}, "R_lite"),
        (R_of(("0-x", {"core": "0"})), r"R_lite\[0\]\.rank: invalid idset '0-x'"),
        ({"version": 1, "execution": {"R_lite": [{"children": {}}]}}, "rank must be"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_count_resources_refuses(R: Any, message: str) -> None:
    with pytest.raises(ResourceSetError, match=message):
        count_resources(R)


# --- the charge (t1023_weighted_usage.py) ------------------------------------------------------


def test_charge_default_weights_count_nodes_only() -> None:
    assert job_charge(1, 4, 1, 499, 599) == 100.0


def test_charge_core_weight() -> None:
    assert job_charge(1, 4, 0, 1099, 1199, core_weight=1.0) == 500.0


def test_charge_gpu_weight() -> None:
    assert job_charge(1, 4, 2, 2299, 2399, node_weight=1.0, core_weight=0.0, gpu_weight=10.0) == (
        2100.0
    )


def test_charge_mixed_weights() -> None:
    assert job_charge(1, 8, 2, 3499, 3599, 1.0, 0.5, 5.0) == 1500.0


def test_charge_rounds_to_five_decimals() -> None:
    assert job_charge(1, 0, 0, 0.0, 1 / 3) == 0.33333


def test_record_charge_uses_R_counts() -> None:
    record = parse_job_line(
        line(
            nnodes=...,
            ncores=...,
            t_run=3499,
            t_inactive=3599,
            R=R_of(("0", {"core": "0-7", "gpu": "0-1"})),
        )
    )
    assert record.charge(1.0, 0.5, 5.0) == 1500.0


# --- the record ----------------------------------------------------------------------------------


def test_minimal_record() -> None:
    record = parse_job_line(line())
    assert record.id == 1
    assert record.userid == 50001
    assert record.username is None
    assert (record.nnodes, record.ncores, record.ngpus) == (1, 4, 0)
    assert record.cluster == "cluster"
    assert record.urgency is None


def test_job_id_forms_normalise_to_int() -> None:
    assert parse_job_line(line(id="ƒ2Wbqh5Wo")).id == parse_job_id("f2Wbqh5Wo")
    assert parse_job_line(line(id="f2Wbqh5Wo")).id == 3334843392912
    assert parse_job_line(line(id="0x4d2")).id == 1234
    assert parse_job_line(line(id="1234")).id == 1234


def test_t_submit_defaults_to_t_run() -> None:
    assert parse_job_line(line()).t_submit == 1000.0
    assert parse_job_line(line(t_submit=900)).t_submit == 900.0


def test_username_alone_is_enough() -> None:
    record = parse_job_line(line(userid=..., username="alice"))
    assert (record.userid, record.username) == (None, "alice")


def test_blank_names_mean_absent() -> None:
    # flux-accounting's jobs table stores '' when a job had no bank or project
    record = parse_job_line(line(bank="", project="", queue=" "))
    assert (record.bank, record.project, record.queue) == (None, None, None)


def test_R_fills_counts_and_is_kept_as_an_object() -> None:
    R = R_of(("0-3", {"core": "0-7", "gpu": "0-1"}))
    record = parse_job_line(line(nnodes=..., ncores=..., R=json.dumps(R)))
    assert (record.nnodes, record.ncores, record.ngpus) == (4, 32, 8)
    assert record.R == R


def test_counts_that_agree_with_R_are_accepted() -> None:
    record = parse_job_line(
        line(nnodes=1, ncores=4, ngpus=1, R=R_of(("0", {"core": "0-3", "gpu": "0"})))
    )
    assert record.ngpus == 1


def test_unknown_fields_survive() -> None:
    record = parse_job_line(line(ranks="0", jobspec={"tasks": []}, site_tag="x"))
    assert record.model_extra == {"ranks": "0", "jobspec": {"tasks": []}, "site_tag": "x"}
    dumped = record.model_dump(mode="json")
    assert dumped["site_tag"] == "x"
    assert JobRecord.model_validate(dumped) == record  # a recorded job reads back the same


def test_record_is_immutable() -> None:
    record = parse_job_line(line())
    with pytest.raises(ValueError):
        record.nnodes = 2  # type: ignore[misc]


def test_a_late_starting_job_is_valid() -> None:
    # t1016_issue853.py: an earlier t_run with a later t_inactive is an ordinary job
    record = parse_job_line(line(t_submit=100, t_run=1000, t_inactive=5000))
    assert record.charge() == 4000.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"t_inactive": 900.0}, "t_inactive: value 900.0: earlier than t_run 1000.0"),
        ({"t_submit": 1001}, "t_submit: value 1001: later than t_run 1000.0"),
        ({"t_run": "soon"}, 't_run: value "soon": Input should be a valid number'),
        ({"t_run": ...}, "t_run: required field is missing"),
        ({"t_inactive": True}, "t_inactive: value true: Input should be a valid number"),
        ({"nnodes": -1}, "nnodes: value -1: Input should be greater than or equal to 0"),
        ({"ncores": 2.5}, "ncores: value 2.5: Input should be a valid integer"),
        ({"ncores": ...}, r"ncores: required field is missing \(or give R\)"),
        ({"ngpus": "2"}, 'ngpus: value "2": Input should be a valid integer'),
        ({"urgency": 32}, "urgency: value 32: Input should be less than or equal to 31"),
        ({"urgency": -1}, "urgency: value -1: Input should be greater than or equal to 0"),
        ({"id": "xyz"}, 'id: value "xyz": not f58, decimal, 0x hex, dotted hex, words or emoji'),
        ({"id": -5}, "id: value -5: out of range"),
        ({"id": 2**64}, "id: value 18446744073709551616: out of range"),
        ({"id": 1.5}, "id: value 1.5: must be an integer or a Flux job ID string"),
        ({"id": ...}, "id: required field is missing"),
        ({"userid": ...}, "userid: missing; give userid and/or username"),
        ({"userid": -1}, "userid: value -1: Input should be greater than or equal to 0"),
        ({"bank": 7}, "bank: value 7: Input should be a valid string"),
        ({"cluster": ""}, 'cluster: value "": must not be empty'),
        ({"R": "{"}, "R: not valid JSON"),
        ({"nnodes": 2, "R": ONE_NODE_R}, "nnodes: value 2: disagrees with R, which has 1"),
        ({"ngpus": 3, "R": ONE_NODE_R}, "ngpus: value 3: disagrees with R, which has 0"),
    ],
)
def test_invalid_records_name_the_field_and_value(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(JobRecordError, match=message) as caught:
        parse_job_line(line(**fields))
    assert "\n" not in str(caught.value)


def test_several_problems_report_the_first_and_a_count() -> None:
    with pytest.raises(JobRecordError, match=r"^nnodes: .* \(and 1 more\)$"):
        parse_job_line(line(nnodes=-1, ncores=-1))


def test_non_finite_times_are_refused() -> None:
    # Python's json reads NaN and Infinity; a time must still be a real time
    with pytest.raises(JobRecordError, match="t_inactive: value NaN: Input should be a finite"):
        parse_job_line(
            '{"id": 1, "userid": 1, "t_run": 0, "t_inactive": NaN, "nnodes": 1, "ncores": 1}'
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{bad", "not valid JSON"),
        ("[1]", "must be a JSON object, got list"),
        ("", "not valid JSON"),
    ],
)
def test_lines_that_are_not_objects(text: str, message: str) -> None:
    with pytest.raises(JobRecordError, match=message):
        parse_job_line(text)


def test_record_errors_are_value_errors_and_ledger_errors() -> None:
    with pytest.raises(ValueError):
        parse_job_line("{}")
    with pytest.raises(InvalidValue):
        parse_job_line("{}")
